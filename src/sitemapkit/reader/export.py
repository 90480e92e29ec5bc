"""Entries as plain data: the JSONL shape (and its inverse), and JSONL and CSV writers.

The JSONL shape of one `UrlEntry` (every top-level key always present):

    {"loc": "https://example.com/a", "lastmod": "2024-05-01" | null, "changefreq": "daily" | null,
     "priority": 0.8 | null, "sitemap": "https://example.com/sitemap.xml" | null,
     "images": [{"loc": ..., "title": ...}], "videos": [{...}], "news": {...} | null,
     "alternates": [{"hreflang": "en", "href": "https://..."}]}

Inside `images`, `videos` and `news`, only the fields that are set appear; dates are W3C Datetime
strings (`dates.format_w3c`); video `tags` is a list.

CSV is flat: `loc, lastmod, changefreq, priority, images, videos, alternates, news, sitemap`, where
`images`, `videos` and `alternates` are counts and `news` is 1 when the URL has a news block, else 0.
Use JSONL for the extension data itself. Its text cells (`loc`, `changefreq`, `sitemap`) go through
`csv_cell`: one a spreadsheet would take as a formula (`=HYPERLINK(...`, a `<loc>` as a site wrote it) is
written with a leading `'`.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import io
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, Any, Final

from sitemapkit.core.dates import format_w3c, parse_w3c
from sitemapkit.core.errors import InputError, InvalidDateError
from sitemapkit.core.escape import csv_cell
from sitemapkit.core.model import Alternate, Image, Lastmod, News, UrlEntry, Video
from sitemapkit.reader.runs import UrlRun

CSV_COLUMNS: Final = (
    "loc",
    "lastmod",
    "changefreq",
    "priority",
    "images",
    "videos",
    "alternates",
    "news",
    "sitemap",
)

_IMAGE_FIELDS: Final = tuple(f.name for f in dataclasses.fields(Image))
_VIDEO_FIELDS: Final = tuple(f.name for f in dataclasses.fields(Video))
_NEWS_FIELDS: Final = tuple(f.name for f in dataclasses.fields(News))
_VIDEO_DATES: Final = frozenset({"expiration_date", "publication_date"})


def _plain(value: object) -> object:
    if isinstance(value, dt.date):  # datetime is a date too
        return format_w3c(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _set_fields(obj: object, names: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names:
        value = getattr(obj, name)
        if value is not None and value != ():
            out[name] = _plain(value)
    return out


def entry_to_dict(entry: UrlEntry) -> dict[str, Any]:
    """The JSONL shape of `entry` (see the module docstring).

    >>> entry_to_dict(UrlEntry("https://example.com/", priority=0.5))["priority"]
    0.5
    """
    return {
        "loc": entry.loc,
        "lastmod": format_w3c(entry.lastmod) if entry.lastmod is not None else None,
        "changefreq": entry.changefreq,
        "priority": entry.priority,
        "sitemap": entry.sitemap,
        "images": [_set_fields(i, _IMAGE_FIELDS) for i in entry.images],
        "videos": [_set_fields(v, _VIDEO_FIELDS) for v in entry.videos],
        "news": _set_fields(entry.news, _NEWS_FIELDS) if entry.news is not None else None,
        "alternates": [{"hreflang": a.hreflang, "href": a.href} for a in entry.alternates],
    }


def _bad(what: str, value: object) -> InputError:
    shown = json.dumps(value, ensure_ascii=False, default=str)  # as the input wrote it, not a Python repr
    return InputError(f"{what}: unexpected value {shown[:200]}")


def _str(d: Mapping[str, Any], key: str, where: str) -> str | None:
    value = d.get(key)
    if value is None or isinstance(value, str):
        return value
    raise _bad(f"{where}.{key}", value)


def _date(d: Mapping[str, Any], key: str, where: str) -> Lastmod | None:
    value = _str(d, key, where)
    if value is None:
        return None
    try:
        return parse_w3c(value)
    except InvalidDateError as exc:
        raise InputError(f"{where}.{key}: {exc}") from None


def _number(d: Mapping[str, Any], key: str, where: str, kind: type[int] | type[float]) -> Any:
    value = d.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(f"{where}.{key}", value)
    if kind is int and not float(value).is_integer():
        raise _bad(f"{where}.{key}", value)
    return kind(value)


def _bool(d: Mapping[str, Any], key: str, where: str) -> bool | None:
    value = d.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise _bad(f"{where}.{key}", value)


def _objects(d: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = d.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise _bad(key, value)
    return value


def _unknown(d: Mapping[str, Any], allowed: Iterable[str], where: str) -> None:
    extra = sorted(set(d) - set(allowed))
    if extra:
        hints = [f"{e} -> {a}" for e in extra for a in allowed if a.endswith("_" + e)]
        hint = f" (did you mean {', '.join(hints)}?)" if hints else ""
        raise InputError(f"{where}: unknown field{'s' if len(extra) > 1 else ''} {', '.join(extra)}{hint}")


def _image(d: Mapping[str, Any], where: str) -> Image:
    _unknown(d, _IMAGE_FIELDS, where)
    loc = _str(d, "loc", where)
    if not loc:
        raise InputError(f"{where}: an image needs a loc")
    return Image(loc, *(_str(d, name, where) for name in _IMAGE_FIELDS[1:]))


def _video(d: Mapping[str, Any], where: str) -> Video:
    _unknown(d, _VIDEO_FIELDS, where)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(Video):
        name = f.name
        if name in _VIDEO_DATES:
            values[name] = _date(d, name, where)
        elif name in ("duration", "view_count"):
            values[name] = _number(d, name, where, int)
        elif name == "rating":
            values[name] = _number(d, name, where, float)
        elif name in ("family_friendly", "requires_subscription", "live"):
            values[name] = _bool(d, name, where)
        elif name == "tags":
            tags = d.get("tags") or []
            if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
                raise _bad(f"{where}.tags", tags)
            values[name] = tuple(tags)
        else:
            values[name] = _str(d, name, where)
    return Video(**values)


def _news(d: Mapping[str, Any]) -> News:
    where = "news"
    _unknown(d, _NEWS_FIELDS, where)
    name, language, title = (_str(d, k, where) for k in ("publication_name", "publication_language", "title"))
    date = _date(d, "publication_date", where)
    if name is None or language is None or title is None or date is None:
        raise InputError("news: needs publication_name, publication_language, publication_date and title")
    return News(name, language, date, title, _str(d, "keywords", where), _str(d, "stock_tickers", where))


def entry_from_dict(d: Mapping[str, Any]) -> UrlEntry:
    """Build a `UrlEntry` from its JSONL shape (the inverse of `entry_to_dict`).

    Missing keys take their defaults; a value of the wrong type or an unknown key raises `InputError`
    naming the field. Values are not validated further (that is the validator's job).

    >>> entry_from_dict({"loc": "https://example.com/", "lastmod": "2024-05-01"}).lastmod
    datetime.date(2024, 5, 1)
    """
    if not isinstance(d, Mapping):
        raise InputError(f"expected a JSON object, got {type(d).__name__}")
    _unknown(
        d,
        ("loc", "lastmod", "changefreq", "priority", "sitemap", "images", "videos", "news", "alternates"),
        "entry",
    )
    loc = _str(d, "loc", "entry")
    if not loc:
        raise InputError("entry: loc is missing or empty")
    news = d.get("news")
    if news is not None and not isinstance(news, Mapping):
        raise _bad("news", news)
    alternates: list[Alternate] = []
    for i, a in enumerate(_objects(d, "alternates")):
        hreflang, href = _str(a, "hreflang", f"alternates[{i}]"), _str(a, "href", f"alternates[{i}]")
        if hreflang is None or href is None:
            raise InputError(f"alternates[{i}]: needs hreflang and href")
        alternates.append(Alternate(hreflang, href))
    return UrlEntry(
        loc=loc,
        lastmod=_date(d, "lastmod", "entry"),
        changefreq=_str(d, "changefreq", "entry"),
        priority=_number(d, "priority", "entry", float),
        images=tuple(_image(i, f"images[{n}]") for n, i in enumerate(_objects(d, "images"))),
        videos=tuple(_video(v, f"videos[{n}]") for n, v in enumerate(_objects(d, "videos"))),
        news=_news(news) if news is not None else None,
        alternates=tuple(alternates),
        sitemap=_str(d, "sitemap", "entry"),
    )


def entry_to_row(entry: UrlEntry) -> list[str]:
    """The CSV row of `entry`, in `CSV_COLUMNS` order; the text cells through `csv_cell`."""
    return [
        csv_cell(entry.loc),
        format_w3c(entry.lastmod) if entry.lastmod is not None else "",
        csv_cell(entry.changefreq or ""),
        "" if entry.priority is None else format(entry.priority, "g"),
        str(len(entry.images)),
        str(len(entry.videos)),
        str(len(entry.alternates)),
        "1" if entry.news is not None else "0",
        csv_cell(entry.sitemap or ""),
    ]


_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_quote: Any = json.encoder.encode_basestring
BATCH: Final = 4096
"""Entries a writer takes at a time (`chunks`); the Parquet writer's batches are as long."""
_CACHED: Final = 4096
"""Most distinct values each text cache of a writer keeps (it starts afresh when full)."""


_UNSAFE: Final = re.compile("[\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
"""Characters JSON may carry raw but a terminal acts on or hides (C1 controls such as CSI, NEL, the bidi
controls, line separators, a BOM): written as `\\uXXXX` escapes, the same JSON value, safe to print."""


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _json_or_null(value: str | None) -> str:
    return "null" if value is None else str(_quote(value))


def entry_to_json(entry: UrlEntry) -> str:
    """`entry_to_dict(entry)` as one compact JSON line (without the newline), non-ASCII kept as is but for
    what a terminal would act on (C1 and bidi controls, line separators: `\\uXXXX`)."""
    text = _entry_to_json(entry)
    return _UNSAFE.sub(_escaped, text) if _UNSAFE.search(text) else text


def _entry_to_json(entry: UrlEntry) -> str:
    if entry.images or entry.videos or entry.news is not None or entry.alternates:
        return _dumps(entry_to_dict(entry))
    # The common case, written directly: the same text as json.dumps, several times faster.
    lastmod = "null" if entry.lastmod is None else '"' + format_w3c(entry.lastmod) + '"'
    priority = "null" if entry.priority is None else _dumps(entry.priority)
    return (
        f'{{"loc":{_quote(entry.loc)},"lastmod":{lastmod},"changefreq":{_json_or_null(entry.changefreq)},'
        f'"priority":{priority},"sitemap":{_json_or_null(entry.sitemap)},'
        '"images":[],"videos":[],"news":null,"alternates":[]}'
    )


def chunks(items: Iterable[UrlEntry | UrlRun], size: int = BATCH) -> Iterator[list[UrlEntry] | UrlRun]:
    """`items` (entries, and runs of them as `Reader.runs()` yields) in order: runs whole, the entries
    between them in lists of up to `size`."""
    batch: list[UrlEntry] = []
    append = batch.append
    for item in items:
        if item.__class__ is UrlRun:
            if batch:
                yield batch
                batch = []
                append = batch.append
            yield item  # a UrlRun
        else:
            append(item)  # type: ignore[arg-type]  # a UrlEntry
            if len(batch) >= size:
                yield batch
                batch = []
                append = batch.append
    if batch:
        yield batch


class TextCache:
    """The text of values that repeat from entry to entry (dates, changefreq, priority, the sitemap URL),
    each computed once: a writer's per-entry work is then a few dictionary look-ups.

    Only values whose text equality decides are cached: `date`s (never date-times, where equal instants
    in different offsets are written differently), strings, and floats other than zero and NaN
    (`1 == 1.0` and `0.0 == -0.0`, but their texts differ)."""

    def __init__(self, quoted: bool) -> None:
        self.null = "null" if quoted else ""
        self.dates: dict[object, str] = {None: self.null}
        self.strings: dict[object, str] = {None: self.null}
        self.numbers: dict[object, str] = {None: self.null}
        self.quoted = quoted

    def trim(self) -> None:
        for cache in (self.dates, self.strings, self.numbers):
            if len(cache) > _CACHED:
                cache.clear()
                cache[None] = self.null

    def date(self, value: Lastmod | None) -> str:
        if value is None:
            return self.null
        text = format_w3c(value)
        if self.quoted:
            text = f'"{text}"'
        if type(value) is dt.date:
            self.dates[value] = text
        return text

    def string(self, value: str | None) -> str:
        if value is None:
            return self.null
        text = str(_quote(value)) if self.quoted else _csv_field(csv_cell(value))
        self.strings[value] = text
        return text

    def number(self, value: float | None) -> str:
        if value is None:
            return self.null
        text = _dumps(value) if self.quoted else format(value, "g")
        if type(value) is float and value and value == value:
            self.numbers[value] = text
        return text


def write_jsonl(entries: Iterable[UrlEntry | UrlRun], out: IO[str], *, texts: TextCache | None = None) -> int:
    """Write one JSON object per line (`entry_to_dict`'s shape, as `entry_to_json` writes it); returns
    how many. Entries are formatted a batch at a time and each batch written with one call; a `UrlRun`
    (see `Reader.runs`) is formatted from its columns, to the same text. `texts`: a cache kept from one
    call to the next (`TextCache(quoted=True)`), for a caller that writes a stream in many calls."""
    texts = texts or TextCache(quoted=True)
    dates, strings, nums = texts.dates, texts.strings, texts.numbers
    date, string, num = texts.date, texts.string, texts.number
    quote, F = _quote, float
    n = 0
    for batch in chunks(entries):
        if isinstance(batch, UrlRun):
            # every loc of a run is JSON-safe as it is, every priority a float or None
            rest = (
                f',"sitemap":{strings.get(batch.sitemap) or string(batch.sitemap)},'
                '"images":[],"videos":[],"news":null,"alternates":[]}\n'
            )
            rest = _UNSAFE.sub(_escaped, rest)  # the locs are plain ASCII; the sitemap's name may not be
            lines = [
                f'{{"loc":"{loc}","lastmod":{dates.get(lastmod) or date(lastmod)},'
                f'"changefreq":{strings.get(changefreq) or string(changefreq)},'
                f'"priority":{nums.get(priority) or num(priority)}{rest}'
                for loc, lastmod, changefreq, priority in zip(
                    batch.locs, batch.lastmods, batch.changefreqs, batch.priorities, strict=True
                )
            ]
            out.write("".join(lines))
            n += len(lines)
            texts.trim()
            continue
        lines = [
            f'{{"loc":{quote(e.loc)},"lastmod":{dates.get(e.lastmod) or date(e.lastmod)},'
            f'"changefreq":{strings.get(e.changefreq) or string(e.changefreq)},'
            f'"priority":{(nums.get(e.priority) if e.priority.__class__ is F else None) or num(e.priority)},'
            f'"sitemap":{strings.get(e.sitemap) or string(e.sitemap)},'
            '"images":[],"videos":[],"news":null,"alternates":[]}\n'
            if not (e.images or e.videos or e.news is not None or e.alternates)
            else _dumps(entry_to_dict(e)) + "\n"
            for e in batch
        ]
        text = "".join(lines)
        out.write(_UNSAFE.sub(_escaped, text) if _UNSAFE.search(text) else text)
        n += len(batch)
        texts.trim()
    return n


def _csv_quoted() -> re.Pattern[str]:
    """The characters that make `csv.writer` (minimal quoting, lines ending in LF) quote a field, found by
    asking it: the set differs between Python versions (whether a lone CR counts)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    special = ""
    for char in ',"\n\r':
        buf.seek(0)
        buf.truncate()
        writer.writerow(["a" + char, "b"])
        if buf.getvalue().startswith('"'):
            special += char
    return re.compile("[" + re.escape(special) + "]")


_CSV_QUOTED: Final = _csv_quoted()


def _csv_field(value: str) -> str:
    """`value` as `csv.writer` writes one field."""
    return '"' + value.replace('"', '""') + '"' if _CSV_QUOTED.search(value) else value


_FORMULA_AFTER_LF: Final = re.compile("\n[=+@\t\r-]")
"""In the locs of a batch joined by LF (and one before): a loc that begins as a formula (see `csv_cell`)."""


def _csv_locs(locs: list[str]) -> list[str]:
    """A batch's locs as CSV fields: as they are (the common case, checked by two searches over the batch),
    else each through `csv_cell` and quoted as `csv.writer` would."""
    if _CSV_QUOTED.search(" ".join(locs)) or _FORMULA_AFTER_LF.search("\n" + "\n".join(locs)):
        return [_csv_field(csv_cell(loc)) for loc in locs]
    return locs


def write_csv(
    entries: Iterable[UrlEntry | UrlRun], out: IO[str], *, header: bool = True, texts: TextCache | None = None
) -> int:
    """Write CSV (`CSV_COLUMNS`, counts for the extensions); returns how many rows, header excluded.

    The text is `csv.writer`'s (minimal quoting), written a batch at a time (a `UrlRun` from its
    columns). `texts`: as `write_jsonl`'s (`TextCache(quoted=False)`)."""
    if header:
        csv.writer(out, lineterminator="\n").writerow(CSV_COLUMNS)
    texts = texts or TextCache(quoted=False)
    dates, strings, nums = texts.dates, texts.strings, texts.numbers
    date, string, num = texts.date, texts.string, texts.number
    field, F = _csv_field, float
    n = 0
    for batch in chunks(entries):
        if isinstance(batch, UrlRun):
            locs = _csv_locs(batch.locs)
            rest = f",0,0,0,0,{strings.get(batch.sitemap) or string(batch.sitemap)}\n"
            lines = [
                f"{loc},{dates.get(lastmod) or date(lastmod)},"
                f"{strings.get(changefreq) or string(changefreq)},{nums.get(priority) or num(priority)}{rest}"
                for loc, lastmod, changefreq, priority in zip(
                    locs, batch.lastmods, batch.changefreqs, batch.priorities, strict=True
                )
            ]
            out.write("".join(lines))
            n += len(lines)
            texts.trim()
            continue
        locs = _csv_locs([e.loc for e in batch])
        lines = [
            f"{loc},{dates.get(e.lastmod) or date(e.lastmod)},"
            f"{strings.get(e.changefreq) or string(e.changefreq)},"
            f"{(nums.get(e.priority) if e.priority.__class__ is F else None) or num(e.priority)},"
            f"0,0,0,0,{strings.get(e.sitemap) or string(e.sitemap)}\n"
            if not (e.images or e.videos or e.news is not None or e.alternates)
            else ",".join(map(field, entry_to_row(e))) + "\n"
            for loc, e in zip(locs, batch, strict=True)
        ]
        out.write("".join(lines))
        n += len(batch)
        texts.trim()
    return n
