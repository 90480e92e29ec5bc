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

_ALTERNATES_KEY = re.compile(rb"\\u00(?:6[15CEce]|7[234])")
"""What a JSONL file holding an `alternates` key spelled with an escape has (`"\\u0061lternates"`, which JSON
writers never do for a plain letter): an escaped letter of the key (not any escaped ASCII character: Go's
writer escapes every `&`, `<` and `>`). The key as it stands is `_SOME_ALTERNATES`'s."""


_SOME_ALTERNATES = re.compile(rb'"alternates"[ \t\r\n]*+(?::[ \t\r\n]*+(?!\[[ \t\r\n]*\]|null)|\Z)')
"""An `alternates` key whose value is not an empty list or null (which give none, as `sitemapkit parse`
writes for every URL without alternates). A key whose colon or value the end of the bytes read so far cuts
counts as one that gives some (only the last bytes of a block are kept for the next)."""


def jsonl_may_have_alternates(name: str, encoding: str | None = None) -> bool:
    """Whether the JSONL file `name` may give some URL alternates (hreflang), which the writer then completes
    into groups: found by a scan of its bytes for an `alternates` key whose value is not `[]` or `null`;
    True where it cannot be told: standard input or anything
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
                if b'"alternates"' in data and _SOME_ALTERNATES.search(data):
                    return True
                if b"\\u00" in data and _ALTERNATES_KEY.search(data):
                    return True
                tail = block[-11:]  # (a key the block's end cuts: within its last 11 bytes; one cut after
                # its last byte, before its value is known, matched at the block's end above)
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
        block = _templated_rows(lines, first, fields.source, columnar)
        if block is not None:
            if columnar:
                yield block
            else:
                yield from map(block.record, range(len(block.columns[0])))
            continue
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
_OTHER_EXTENSIONS = frozenset({"videos", "news", "alternates"})


def _plain_rows(objs: list[Any], first: int, source: str, columnar: bool) -> JsonBlock | None:
    """A block of JSONL objects (the first on line `first`) read column by column, when each is an object of
    the usual keys with a string `loc` and (with `columnar`) images given by their URLs alone; else None
    (read object by object, by `_jsonl_item`, with the same records)."""
    if set(map(type, objs)) != {dict}:
        return None
    keys = set(itertools.chain.from_iterable(objs))
    if not keys <= _PLAIN_KEYS:  # other extensions, where every line's is empty ([] or null), give none
        empty = keys - _PLAIN_KEYS
        if not empty <= _OTHER_EXTENSIONS or any(obj.get(key) for key in empty for obj in objs):
            return None
    if not columnar and "images" in keys:
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

# -- blocks of lines written alike --------------------------------------------------------------------------
#
# A program writes its JSONL lines alike: the same keys in the same order, the same spacing. When the first
# line of a block is a plain object (see `_plain_rows`: its fields strings, numbers or null, its images
# given by their URLs, its other extensions empty), its layout gives a regular expression for such lines,
# the values its groups; when every line of the block matches it, one `findall` reads the block's columns,
# and the JSON module reads only the first line. A string with an escape, other keys or another order or
# spacing, a line that does not match: the block is read as before (`_objects`, `_plain_rows`), to the same
# records.

_TEXT = r'"([^"\\\x00-\x1f]*)"'
"""A JSON string without escapes (an escape, or a control character, which JSON refuses raw, never
matches), its text the group."""
_VALUE = r'(?:"([^"\\\x00-\x1f]*)"|(null)|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?))'
"""A field's value: a string without escapes, null or a number (the groups: the text, `null`, the number)."""
_IMAGE_URL = r'"[^"\\\x00-\x1f]+"'
_SEPARATORS = ((", ", ": "), (",", ":"), (",", ": "), (", ", ":"))
"""Between items, and between a key and its value: Python's `json.dumps` and others, then the compact form."""
_LAYOUTS: dict[tuple[str, ...], re.Pattern[str]] = {}
_IMAGE_URLS = {pair: re.compile(re.escape(f'"loc"{pair}"') + r'([^"\\\x00-\x1f]+)"') for pair in (": ", ":")}
"""The URLs in the text of an `images` array `_layout` matched (by the separator between key and value)."""
_FIELD_TYPES = frozenset({str, type(None), int, float})


def _layout(keys: tuple[str, ...], item: str, pair: str, one_image: bool = False) -> re.Pattern[str]:
    """The pattern of a line that is an object of `keys` in this order, laid out with these separators (with
    `one_image`, its `images` one image, its URL the group; else the text inside the array is). A key of
    another extension is given with its value, `[]` or `null` (as `videos=[]`): the line must have that."""
    signature = (item, pair, str(one_image), *keys)
    pattern = _LAYOUTS.get(signature)
    if pattern is None:
        parts = []
        for key in keys:
            name, _, empty = key.partition("=")
            if empty:
                value = re.escape(empty)
            elif key == "images" and one_image:
                value = r"\[\{" + re.escape(f'"loc"{pair}') + '"(' + _IMAGE_URL[1:-1] + r')"\}\]'
            elif key == "images":
                image = r"\{" + re.escape(f'"loc"{pair}') + _IMAGE_URL + r"\}"
                value = rf"\[((?:{image}(?:{re.escape(item)}{image})*)?)\]"
            else:
                value = _TEXT if key == "loc" else _VALUE
            parts.append(re.escape(f'"{name}"{pair}') + value)
        pattern = re.compile(r"^\{" + re.escape(item).join(parts) + r"\}$", re.MULTILINE)
        if len(_LAYOUTS) < 64:
            _LAYOUTS[signature] = pattern
    return pattern


def _layout_keys(obj: Any, columnar: bool) -> tuple[str, ...] | None:
    """The keys of `_layout` for lines like the object `obj`, or None where `_plain_rows` would not take it
    (or `_layout` could not give its values)."""
    if type(obj) is not dict or type(obj.get("loc")) is not str:
        return None
    keys: list[str] = []
    for key, value in obj.items():
        if key in _OTHER_EXTENSIONS:
            if value is None or value == []:  # (a list, not a tuple: JSON gives lists)
                keys.append(f"{key}={'null' if value is None else '[]'}")
                continue
            return None
        if key == "images":
            if not columnar:
                return None
        elif key not in _PLAIN_KEYS or (key != "loc" and type(value) not in _FIELD_TYPES):
            return None
        keys.append(key)
    return tuple(keys)


def _templated_rows(lines: Sequence[str], first: int, source: str, columnar: bool) -> JsonBlock | None:
    """The block `_plain_rows` gives for `lines`, read by one regular expression made from the layout of the
    first line (see above), or None where that cannot be done."""
    if not lines:
        return None
    try:
        obj = json.loads(lines[0])
    except (ValueError, RecursionError):
        return None
    keys = _layout_keys(obj, columnar)
    if keys is None:
        return None
    head = lines[0]
    for item, pair in _SEPARATORS:
        pattern = _layout(keys, item, pair)
        if pattern.fullmatch(head) is not None:
            break
    else:
        return None  # an escape, a duplicate key, images given otherwise, other spacing
    text = "\n".join(lines)
    n = len(lines)
    one_image = type(obj.get("images")) is list and len(obj["images"]) == 1
    rows = _layout(keys, item, pair, one_image=True).findall(text) if one_image else []
    one_image = len(rows) == n  # an image on every line (else the arrays are read apart)
    if not one_image:
        rows = pattern.findall(text)
        if len(rows) != n:  # (one match a line at most: each is anchored at both ends of a line)
            return None
    cells = list(zip(*rows, strict=True)) if rows and isinstance(rows[0], tuple) else [rows]
    none: list[str | None] = [None] * n
    columns: dict[str, Sequence[str | None]] = {}
    images: list[tuple[str, ...]] | None = None
    at = 0
    for key in keys:
        if key == "loc":
            columns[key] = list(cells[at])
            at += 1
        elif key == "images":
            images = list(zip(cells[at])) if one_image else _images_of(cells[at], _IMAGE_URLS[pair])
            at += 1
        elif "=" not in key:
            column = _field(*cells[at : at + 3])
            if column is None:
                return None
            columns[key] = column
            at += 3
    locs = columns["loc"]
    if images is not None and not all(loc for loc, urls in zip(locs, images, strict=True) if urls):
        return None  # images of an empty loc: read one by one
    return JsonBlock([locs, *(columns.get(name, none) for name in FIELDS)], images, first, source)


def _field(texts: Sequence[str], nulls: Sequence[str], numbers: Sequence[str]) -> list[str | None] | None:
    """A field's column as `_plain_rows` makes it (a number as the text `str` gives its value), from the
    groups of `_VALUE`; None for a number the JSON module refuses (it says why)."""
    if not any(numbers):
        if "null" not in nulls:
            return list(texts)
        return [None if null else text for text, null in zip(texts, nulls, strict=True)]
    decoded: dict[str, str] = {"": ""}
    for number in set(numbers):
        if number not in decoded:
            try:
                decoded[number] = str(json.loads(number))
            except ValueError:  # (an integer of more than 4,300 digits)
                return None
    return [
        decoded[number] if number else None if null else text
        for text, null, number in zip(texts, nulls, numbers, strict=True)
    ]


def _images_of(arrays: Sequence[str], find: re.Pattern[str]) -> list[tuple[str, ...]]:
    """Each line's image URLs, from the text inside its `images` array (matched by `_layout`: items
    `{"loc": "URL"}`, each URL a string without escapes; `find` finds the URLs). (Lines of one image each
    are read by the one-image layout.)"""
    urls = find.findall("\n".join(arrays))
    images: list[tuple[str, ...]] = []
    at = 0
    for text in arrays:
        k = text.count('"loc"')  # (a URL holds no quote)
        images.append(tuple(urls[at : at + k]))
        at += k
    return images


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
