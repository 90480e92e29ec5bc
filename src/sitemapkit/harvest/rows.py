"""The tables of a harvest dataset: Arrow schemas and the rows of URL entries, in column buffers.

pyarrow is imported only here and only when a harvest runs (it is the optional `parquet` extra).
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import itertools
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from sitemapkit.core.dates import format_w3c
from sitemapkit.core.errors import UsageError
from sitemapkit.core.model import Lastmod, UrlEntry
from sitemapkit.reader.runs import UrlRun

if TYPE_CHECKING:
    import pyarrow as pa

INSTALL_HINT: Final = "harvest writes Parquet with pyarrow: pip install 'sitemapkit[parquet]'"

IMAGE_FIELDS: Final = ("loc", "caption", "title", "geo_location", "license")
VIDEO_STRINGS: Final = (
    "thumbnail_loc",
    "title",
    "description",
    "content_loc",
    "player_loc",
    "restriction",
    "restriction_relationship",
    "platform",
    "platform_relationship",
    "uploader",
    "uploader_info",
    "category",
    "gallery_loc",
)
VIDEO_DATES: Final = ("expiration_date", "publication_date")
VIDEO_BOOLS: Final = ("family_friendly", "requires_subscription", "live")
NEWS_FIELDS: Final = ("publication_name", "publication_language", "title", "keywords", "stock_tickers")

URL_COLUMNS: Final = (
    "site",
    "sitemap",
    "loc",
    "lastmod",
    "lastmod_utc",
    "changefreq",
    "priority",
    "image_count",
    "video_count",
    "news_count",
    "alternate_count",
    "images",
    "videos",
    "news",
    "alternates",
)

DICTIONARY_COLUMNS: Final = URL_COLUMNS[:2] + URL_COLUMNS[3:11]
"""The URL columns Parquet dictionary-encodes: all the flat ones but `loc`, whose values do not repeat
(trying a dictionary on it and falling back costs about 8% of the CPU of writing, and the files come out
half the size without it)."""


def pyarrow() -> Any:
    """The pyarrow module, or a `UsageError` saying how to install it."""
    try:
        import pyarrow as pa
        import pyarrow.compute
        import pyarrow.parquet
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    return pa


def require_pyarrow() -> None:
    """A `UsageError` saying how to install pyarrow where it is missing, without importing it (a harvest
    whose worker processes write the parts needs it here only at the end)."""
    if "pyarrow" in sys.modules:
        if sys.modules["pyarrow"] is None:  # (a test hiding it)
            raise UsageError(INSTALL_HINT)
        return
    try:
        found = importlib.util.find_spec("pyarrow")
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise UsageError(INSTALL_HINT)


def url_schema() -> pa.Schema:
    pa = pyarrow()
    s = pa.string()
    image = pa.struct([(name, s) for name in IMAGE_FIELDS])
    video = pa.struct(
        [(name, s) for name in VIDEO_STRINGS]
        + [(name, s) for name in VIDEO_DATES]
        + [(name, pa.bool_()) for name in VIDEO_BOOLS]
        + [("duration", pa.int64()), ("rating", pa.float64()), ("view_count", pa.int64())]
        + [("tags", pa.list_(s))]
    )
    news = pa.struct([(name, s) for name in NEWS_FIELDS] + [("publication_date", s)])
    alternate = pa.struct([("hreflang", s), ("href", s)])
    return pa.schema(
        [
            ("site", s),
            ("sitemap", s),
            ("loc", s),
            ("lastmod", s),
            ("lastmod_utc", pa.timestamp("us", tz="UTC")),
            ("changefreq", s),
            ("priority", pa.float64()),
            ("image_count", pa.int32()),
            ("video_count", pa.int32()),
            ("news_count", pa.int32()),
            ("alternate_count", pa.int32()),
            ("images", pa.list_(image)),
            ("videos", pa.list_(video)),
            ("news", news),
            ("alternates", pa.list_(alternate)),
        ]
    )


SITEMAP_COLUMNS: Final = (
    ("site", "string"),
    ("url", "string"),
    ("parent", "string"),
    ("depth", "int32"),
    ("kind", "string"),
    ("status", "int32"),
    ("bytes", "int64"),
    ("uncompressed_bytes", "int64"),
    ("compressed", "bool"),
    ("urls", "int64"),
    ("lastmod", "string"),
    ("final_url", "string"),
    ("truncated", "bool"),
    ("read_seconds", "float64"),
    ("error_code", "string"),
    ("error", "string"),
)
"""One row per sitemap met (read, refused or failed), in the order of the walk."""

SITE_COLUMNS: Final = (
    ("site", "string"),
    ("robots_status", "int32"),
    ("robots_error", "string"),
    ("crawl_delay", "float64"),
    ("via", "string"),
    ("sitemaps_found", "int32"),
    ("sitemaps_read", "int32"),
    ("sitemaps_cut_short", "int32"),
    ("urls", "int64"),
    ("errors", "int64"),
    ("truncated", "bool"),
    ("cap", "string"),
    ("error_code", "string"),
    ("error", "string"),
    ("seconds", "float64"),
)
"""One row per site of SITES."""


def flat_schema(columns: tuple[tuple[str, str], ...]) -> pa.Schema:
    pa = pyarrow()
    return pa.schema([(name, getattr(pa, "bool_" if kind == "bool" else kind)()) for name, kind in columns])


def _utc(value: Lastmod) -> dt.datetime:
    """A W3C Datetime as a UTC instant (a date alone: its midnight UTC)."""
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC) if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
    return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)


def _w3c(value: Lastmod | None) -> str | None:
    return format_w3c(value) if value is not None else None


def _texts(values: list[Lastmod | None], written: list[str | None]) -> list[str | None]:
    """The `lastmod` column of some rows: each text as written, or for a date given without its text
    (an entry not read from a document), the date in W3C form."""
    return [w if w is not None or v is None else format_w3c(v) for v, w in zip(values, written, strict=True)]


COUNTED: Final = ("lastmod", "changefreq", "priority", "images", "videos", "news", "alternates")
"""What `UrlBuffer.add` counts, in the order of the counts it returns."""


class UrlBuffer:
    """URL rows held as column lists until they are written as one row group.

    Rows come a batch at a time and are taken apart a column at a time (a comprehension per field, no
    per-row Python beyond that). Extension data is rare, so it is kept only for the rows that have it
    (row number, value) and laid out as Arrow list columns at the end; a date is formatted once however
    many rows share it.
    """

    __slots__ = (
        "alternates",
        "changefreq",
        "images",
        "lastmod",
        "lastmod_text",
        "loc",
        "news",
        "priority",
        "rows",
        "site_ends",
        "sitemap",
        "sites",
        "videos",
    )

    def __init__(self) -> None:
        self.sites: list[str] = []  # the site column in runs: a site, and the row its run ends at
        self.site_ends: list[int] = []
        self.sitemap: list[str | None] = []
        self.loc: list[str] = []
        self.lastmod: list[Lastmod | None] = []
        self.lastmod_text: list[str | None] = []  # as written: the `lastmod` column
        self.changefreq: list[str | None] = []
        self.priority: list[float | None] = []
        self.images: list[tuple[int, tuple[Any, ...]]] = []
        self.videos: list[tuple[int, tuple[Any, ...]]] = []
        self.news: list[tuple[int, Any]] = []
        self.alternates: list[tuple[int, tuple[Any, ...]]] = []
        self.rows = 0

    def add(self, site: str, entries: Sequence[UrlEntry] | UrlRun) -> tuple[int, ...]:
        """Append the rows of `entries` (or of a run of them), all of `site`; returns how many of them
        have each of `COUNTED`."""
        n = len(entries)
        rows = self.rows
        if self.sites and self.sites[-1] == site:
            self.site_ends[-1] += n
        else:
            self.sites.append(site)
            self.site_ends.append(rows + n)
        if isinstance(entries, UrlRun):  # columns already, and no extension data
            self.sitemap += [entries.sitemap] * n
            self.loc += entries.locs
            self.lastmod += entries.lastmods
            self.lastmod_text += entries.lastmod_texts or _texts(entries.lastmods, [None] * n)
            self.changefreq += entries.changefreqs
            self.priority += entries.priorities
            self.rows = rows + n
            nones = (
                entries.lastmods.count(None),
                entries.changefreqs.count(None),
                entries.priorities.count(None),
            )
            return (*(n - k for k in nones), 0, 0, 0, 0)
        self.sitemap += [e.sitemap for e in entries]
        self.loc += [e.loc for e in entries]
        lastmod = [e.lastmod for e in entries]
        changefreq = [e.changefreq for e in entries]
        priority = [e.priority for e in entries]
        self.lastmod += lastmod
        self.lastmod_text += _texts(lastmod, [e.lastmod_text for e in entries])
        self.changefreq += changefreq
        self.priority += priority
        counts = [n - lastmod.count(None), n - changefreq.count(None), n - priority.count(None)]
        extensions: tuple[tuple[list[Any], list[Any], object], ...] = (
            (self.images, [e.images for e in entries], ()),
            (self.videos, [e.videos for e in entries], ()),
            (self.news, [e.news for e in entries], None),
            (self.alternates, [e.alternates for e in entries], ()),
        )
        for column, values, empty in extensions:
            if values.count(empty) == n:  # the usual case: nothing in this batch
                counts.append(0)
                continue
            found = [(rows + i, v) for i, v in enumerate(values) if (v is not None if empty is None else v)]
            column += found
            counts.append(len(found))
        self.rows = rows + n
        return tuple(counts)

    def table(self, schema: pa.Schema) -> pa.Table:
        pa = pyarrow()
        n = self.rows
        # `lastmod` is the text as written; `lastmod_utc` the instant it means. Dates repeat, and the
        # parser gives equal texts one object: each distinct object is converted once, then laid out with
        # `take` (told apart by identity, not equality, which would merge one instant written with two
        # offsets; hashing them is slow too).
        ids = pa.array(list(map(id, self.lastmod)), type=pa.uint64())
        encoded = ids.dictionary_encode()
        where = encoded.indices
        firsts = pa.compute.index_in(encoded.dictionary, value_set=ids)  # the first row of each
        distinct = [self.lastmod[i] for i in firsts.to_pylist()]
        lastmod = pa.array(self.lastmod_text, type=pa.string())
        utc = pa.array(
            [_utc(v) if v is not None else None for v in distinct], type=schema.field("lastmod_utc").type
        ).take(where)
        sites = pa.RunEndEncodedArray.from_arrays(
            pa.array(self.site_ends, type=pa.int32()), pa.array(self.sites, type=pa.string())
        )
        columns: dict[str, Any] = {
            "sitemap": self.sitemap,
            "loc": self.loc,
            "changefreq": self.changefreq,
            "priority": self.priority,
        }
        counts = {
            "image_count": self.images,
            "video_count": self.videos,
            "news_count": [(row, (1,)) for row, _ in self.news],
            "alternate_count": self.alternates,
        }
        arrays = []
        for f in schema:
            if f.name == "site":
                arrays.append(pa.compute.run_end_decode(sites))
            elif f.name == "lastmod":
                arrays.append(lastmod)
            elif f.name == "lastmod_utc":
                arrays.append(utc)
            elif f.name == "news":
                arrays.append(_news(pa, f.type, n, self.news))
            elif f.name == "images":
                arrays.append(_lists(pa, f.type, n, self.images, _image))
            elif f.name == "videos":
                arrays.append(_lists(pa, f.type, n, self.videos, _video))
            elif f.name == "alternates":
                arrays.append(_lists(pa, f.type, n, self.alternates, _alternate))
            elif f.name in counts:
                arrays.append(_counts(pa, f.type, n, counts[f.name]))
            else:
                arrays.append(pa.array(columns[f.name], type=f.type))
        return pa.Table.from_arrays(arrays, schema=schema)


def _counts(pa: Any, count_type: Any, n: int, sparse: list[tuple[int, tuple[Any, ...]]]) -> Any:
    """A count column of `n` rows, 0 but for the rows in `sparse`."""
    if not sparse:
        return pa.repeat(pa.scalar(0, type=count_type), n)
    counts = [0] * n
    for row, items in sparse:
        counts[row] = len(items)
    return pa.array(counts, type=count_type)


def _news(pa: Any, news_type: Any, n: int, sparse: list[tuple[int, Any]]) -> Any:
    """The news column: null but for the rows in `sparse`."""
    if not sparse:
        return pa.nulls(n, type=news_type)
    news: list[dict[str, Any] | None] = [None] * n
    for row, item in sparse:
        value = {name: getattr(item, name) for name in NEWS_FIELDS}
        value["publication_date"] = _w3c(item.publication_date)
        news[row] = value
    return pa.array(news, type=news_type)


def _lists(pa: Any, list_type: Any, n: int, sparse: list[tuple[int, tuple[Any, ...]]], convert: Any) -> Any:
    """A list column of `n` rows, empty but for the rows in `sparse`."""
    if not sparse:
        offsets = pa.repeat(pa.scalar(0, type=pa.int32()), n + 1)
        return pa.ListArray.from_arrays(offsets, pa.array([], type=list_type.value_type))
    sizes = [0] * n
    values: list[dict[str, Any]] = []
    for row, items in sparse:
        sizes[row] = len(items)
        values.extend(convert(item) for item in items)
    offsets = pa.array([0, *itertools.accumulate(sizes)], type=pa.int32())
    return pa.ListArray.from_arrays(offsets, pa.array(values, type=list_type.value_type))


def _image(i: Any) -> dict[str, Any]:
    return {name: getattr(i, name) for name in IMAGE_FIELDS}


def _alternate(a: Any) -> dict[str, Any]:
    return {"hreflang": a.hreflang, "href": a.href}


def _video(v: Any) -> dict[str, Any]:
    out: dict[str, Any] = {name: getattr(v, name) for name in VIDEO_STRINGS + VIDEO_BOOLS}
    for name in VIDEO_DATES:
        out[name] = _w3c(getattr(v, name))
    out["duration"] = v.duration
    out["rating"] = v.rating
    out["view_count"] = v.view_count
    out["tags"] = list(v.tags)
    return out


def rows_table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """A table of plain dict rows (the sites and sitemaps tables)."""
    pa = pyarrow()
    return pa.Table.from_arrays(
        [pa.array([row.get(f.name) for row in rows], type=f.type) for f in schema], schema=schema
    )
