"""JSONL sources: objects in the shape `sitemapkit parse` prints (`loc`, `lastmod`, `changefreq`, `priority`,
and the extensions `images`, `videos`, `news`, `alternates`), read a block of lines at a time.

A block whose lines are all plain objects of the usual keys is read column by column into a `JsonBlock` for
the writer's columnar lane (a line whose only extension is images given by their URLs as an
`ImagedRecord`); any other block line by line, each bad line or item reported and the rest kept.
`jsonl_may_have_alternates` tells whether a file may need hreflang completion at all.
"""

from __future__ import annotations

import codecs
import itertools
import json
import os
import re
import stat
import zlib
from collections.abc import Callable, Iterator, Sequence
from operator import itemgetter
from typing import IO, Any, cast

from sitemapkit.core.errors import InputError
from sitemapkit.core.model import Alternate, Image, UrlEntry
from sitemapkit.generator.sources.records import ImagedRecord, TextRecord, entry_from_text, with_extensions
from sitemapkit.generator.sources.textblocks import (
    FIELDS,
    ColumnBlock,
    FieldReporter,
    decoded_blocks,
    open_input,
)
from sitemapkit.reader.export import entry_from_dict

__all__ = ["JsonBlock", "jsonl_may_have_alternates", "read_extension", "read_jsonl"]

_ALTERNATES_KEY = re.compile(rb'"alternates"|\\u00[2-7][0-9A-Fa-f]')
"""What a JSONL file holding an `alternates` key has: the key, or an escaped ASCII character (a key may be
spelled `"\\u0061lternates"`, which JSON writers never do for a plain letter)."""


def jsonl_may_have_alternates(name: str, encoding: str | None = None) -> bool:
    """Whether the JSONL file `name` may give some URL alternates (hreflang), which the writer then completes
    into groups: found by a scan of its bytes; True where it cannot be told: standard input or anything
    else that is not a regular file (a named pipe cannot be read twice), a text encoding other than UTF-8
    (its bytes may spell the key otherwise), a file that cannot be read (reading it reports why)."""
    if name == "-":
        return True
    try:
        if encoding is not None and codecs.lookup(encoding).name not in ("utf-8", "utf-8-sig"):
            return True
        if not stat.S_ISREG(os.stat(name).st_mode):
            return True
        tail = b""
        with open_input(name) as stream:
            while block := stream.read(1 << 20):
                data = tail + block
                if b'"alternates"' in data or (b"\\u00" in data and _ALTERNATES_KEY.search(data)):
                    return True
                tail = block[-11:]  # (a match the block's end cuts: within its last 11 bytes)
    except (OSError, EOFError, zlib.error, InputError, LookupError):
        return True
    return False


class JsonBlock(ColumnBlock):
    """A block of JSONL lines that are all plain objects (see `_plain_rows`) as columns (loc, lastmod,
    changefreq, priority as text, None where a line has none) and each line's image URLs (`images`, None if
    no line has any), for the writer's columnar lane; `record(i)` gives line i's record for the lines the
    lane leaves to the general path."""

    __slots__ = ("_source", "images")

    def __init__(
        self,
        columns: list[Sequence[str | None]],
        images: list[tuple[str, ...]] | None,
        first: int,
        source: str,
    ) -> None:
        super().__init__(columns, set(), "", first, ",", _no_read, escaped=False)
        self.images = images
        self._source = source

    def record(self, index: int) -> TextRecord | ImagedRecord:
        locs, lastmods, changefreqs, priorities = self.columns
        fields = (locs[index], lastmods[index], changefreqs[index], priorities[index], self._source)
        if self.images is None:  # (tuple.__new__: the records without the Python frame of their __new__)
            return _new(TextRecord, (*fields, self.first + index))
        return _new(ImagedRecord, (*fields, self.first + index, self.images[index]))


_new = tuple.__new__


def _no_read(row: list[str], number: int) -> None:  # pragma: no cover - JsonBlock.record reads the rows
    return None


_EXTENSIONS = ("images", "videos", "news", "alternates")
_ITEM = {"images": "image", "videos": "video", "alternates": "alternate"}


def read_jsonl(
    stream: IO[bytes], fields: FieldReporter, encoding: str | None = None, *, columnar: bool = False
) -> Iterator[TextRecord | UrlEntry | ImagedRecord | JsonBlock]:
    """JSONL objects in the shape `sitemapkit parse` prints: `loc`, `lastmod`, `changefreq`, `priority`, and
    `images`, `videos`, `news`, `alternates`. A line with extensions becomes a `UrlEntry`; a bad extension
    item (one image, one video, one alternate, the news entry) is reported and dropped, the rest kept.
    `sitemap` (where `parse` found the URL) is ignored. With `columnar`, a line whose only extension is images
    given by their URLs alone (`[{"loc": ...}]`) comes as an `ImagedRecord` (its fields read when written).

    A block of lines that are all plain objects of the usual keys is read column by column (`_plain_rows`),
    and with `columnar` comes as a `JsonBlock`; any other block line by line, as the same records and
    diagnostics."""
    warned: set[str] = set()
    for first, lines, _ in decoded_blocks(stream, fields, encoding):
        objs = _objects(lines)
        if objs is not None:
            block = _plain_rows(objs, first, fields.source, columnar)
            if block is not None and columnar:
                yield block
                continue
            if block is not None:
                yield from map(block.record, range(len(block.columns[0])))
                continue
        for index, text in enumerate(lines):
            number = first + index
            if objs is not None:
                obj = objs[index]
            elif not text.strip():
                continue
            else:
                try:
                    obj = json.loads(text)
                except json.JSONDecodeError as exc:
                    fields.bad_line(
                        f"not valid JSON ({exc.msg} at column {exc.colno}); the line is skipped", number
                    )
                    continue
                except RecursionError:
                    fields.bad_line("not valid JSON (nested too deeply); the line is skipped", number)
                    continue
                except ValueError as exc:  # a number the int type refuses (over 4,300 digits)
                    fields.bad_line(f"not valid JSON ({exc}); the line is skipped", number)
                    continue
            item = _jsonl_item(obj, number, fields, warned, columnar)
            if item is not None:
                yield item


_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _objects(lines: Sequence[str]) -> list[Any] | None:
    """The JSON value of each line, when each line is one value and nothing else (not even whitespace
    around it); else None (the lines are read one by one, which says what is wrong)."""
    try:
        found = [_SCAN(line, 0) for line in lines]
    except (StopIteration, ValueError, RecursionError):
        return None
    if list(map(itemgetter(1), found)) != list(map(len, lines)):
        return None
    return list(map(itemgetter(0), found))


_PLAIN_KEYS = frozenset({"loc", "sitemap", *FIELDS, "images"})


def _plain_rows(objs: list[Any], first: int, source: str, columnar: bool) -> JsonBlock | None:
    """A block of JSONL objects (the first on line `first`) read column by column, when each is an object of
    the usual keys with a string `loc` and (with `columnar`) images given by their URLs alone; else None
    (read object by object, by `_jsonl_item`, with the same records)."""
    if set(map(type, objs)) != {dict}:
        return None
    keys = set(itertools.chain.from_iterable(objs))
    if not keys <= _PLAIN_KEYS or (not columnar and "images" in keys):
        return None
    locs = [obj.get("loc") for obj in objs]
    if set(map(type, locs)) != {str}:
        return None
    columns: list[Sequence[str | None]] = []
    none: list[str | None] = [None] * len(objs)
    for name in FIELDS:
        if name not in keys:
            columns.append(none)
            continue
        column = [obj.get(name) for obj in objs]
        if not set(map(type, column)) <= _TEXT_OR_NONE:
            column = [None if value is None else str(value) for value in column]
        columns.append(column)
    if "images" not in keys:
        return JsonBlock([locs, *columns], None, first, source)
    # (a row without images too: an ImagedRecord gives the entry its TextRecord gives)
    images = [_image_urls(value) if value else () for value in (obj.get("images") for obj in objs)]
    if None in images or not all(loc for loc, urls in zip(locs, images, strict=True) if urls):
        return None  # an image given otherwise, or images of an empty loc: read one by one
    return JsonBlock([locs, *columns], cast("list[tuple[str, ...]]", images), first, source)


_TEXT_OR_NONE = frozenset({str, type(None)})


def _jsonl_item(
    obj: Any, number: int, fields: FieldReporter, warned: set[str], columnar: bool
) -> TextRecord | UrlEntry | ImagedRecord | None:
    """The record of one JSONL object (line `number`), or None for one that is skipped (reported)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("loc"), str):
        fields.bad_line("expected an object with a string 'loc'; the line is skipped", number)
        return None
    for key in obj.keys() - {"loc", "sitemap", *FIELDS, *_EXTENSIONS} - warned:
        warned.add(key)
        fields.bad_line(f"unknown key {key!r} ignored (reported once per file)", number)
    values = {k: str(obj[k]) for k in FIELDS if obj.get(k) is not None}
    record = TextRecord(
        obj["loc"],
        values.get("lastmod"),
        values.get("changefreq"),
        values.get("priority"),
        fields.source,
        number,
    )
    extensions = {k: obj[k] for k in _EXTENSIONS if obj.get(k)}
    if not extensions:
        return record
    if columnar and len(extensions) == 1 and record.loc:
        images = _image_urls(extensions.get("images"))
        if images is not None:
            return ImagedRecord(*record, images)
    entry = entry_from_text(record, fields.report)
    # each extension, and each item of a list, on its own
    found = {key: read_extension(entry.loc, key, value, fields, number) for key, value in extensions.items()}
    return with_extensions(entry, found)


def _image_urls(value: Any) -> tuple[str, ...] | None:
    """The URLs of a JSONL line's `images` when each is given by its URL alone (`{"loc": "..."}`, as
    `read_extension` takes them without a check), else None."""
    if type(value) is not list:
        return None
    if len(value) == 1:  # (the usual case)
        item = value[0]
        if type(item) is dict and len(item) == 1:
            url = item.get("loc")
            if type(url) is str and url:
                return (url,)
        return None
    urls: list[str] = []
    for item in value:
        if type(item) is not dict or len(item) != 1:
            return None
        url = item.get("loc")
        if type(url) is not str or not url:
            return None
        urls.append(url)
    return tuple(urls)


def read_extension(
    loc: str, key: str, value: Any, fields: FieldReporter, number: int, unit: str = "line"
) -> Any:
    """One extension of a record (`images`, `videos`, `news`, `alternates`) at `number` (a JSONL line, a
    Parquet row: `unit`), read item by item: a bad item is reported and dropped, the others kept (a value
    of the wrong kind drops the extension)."""
    if key == "news" or not isinstance(value, list):
        try:
            parsed = entry_from_dict({"loc": loc, key: value})
        except InputError as exc:
            what = f"news entry of this {unit} is" if key == "news" else f"{key} of this {unit} are"
            fields.bad_line(f"{exc}; the {what} dropped", number)
            return None if key == "news" else ()
        return getattr(parsed, key)
    kept: list[Any] = []
    for i, item in enumerate(value):
        if loc and type(item) is dict:  # the common items, as entry_from_dict reads them, without it
            if key == "images" and len(item) == 1:
                image = item.get("loc")
                if type(image) is str and image:
                    kept.append(Image(image))
                    continue
            elif key == "alternates":
                hreflang, href = item.get("hreflang"), item.get("href")
                if type(hreflang) is str and type(href) is str:
                    kept.append(Alternate(hreflang, href))
                    continue
        try:
            parsed = entry_from_dict({"loc": loc, key: [item]})
        except InputError as exc:
            message = str(exc).replace(f"{key}[0]", f"{key}[{i}]")
            fields.bad_line(f"{message}; this {_ITEM[key]} is dropped (the others are kept)", number)
            continue
        kept.append(getattr(parsed, key)[0])
    return tuple(kept)
