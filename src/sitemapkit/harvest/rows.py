"""The tables of a harvest dataset: Arrow schemas and the rows of URL entries, in column buffers.

pyarrow is imported only here and only when a harvest runs (it is the optional `parquet` extra).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any, Final

from sitemapkit.core.dates import format_w3c
from sitemapkit.core.errors import UsageError
from sitemapkit.core.model import Lastmod, UrlEntry

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


def pyarrow() -> Any:
    """The pyarrow module, or a `UsageError` saying how to install it."""
    try:
        import pyarrow as pa
        import pyarrow.compute
        import pyarrow.parquet
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    return pa


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


class UrlBuffer:
    """URL rows held as column lists until they are written as one row group.

    Extension data is rare, so it is kept only for the rows that have it (row number, value) and laid
    out as Arrow list columns at the end; a date is formatted once however many rows share it.
    """

    __slots__ = (
        "alternates",
        "changefreq",
        "images",
        "lastmod",
        "loc",
        "news",
        "priority",
        "rows",
        "site",
        "sitemap",
        "videos",
    )

    def __init__(self) -> None:
        self.site: list[str] = []
        self.sitemap: list[str | None] = []
        self.loc: list[str] = []
        self.lastmod: list[Lastmod | None] = []
        self.changefreq: list[str | None] = []
        self.priority: list[float | None] = []
        self.images: list[tuple[int, tuple[Any, ...]]] = []
        self.videos: list[tuple[int, tuple[Any, ...]]] = []
        self.news: list[tuple[int, Any]] = []
        self.alternates: list[tuple[int, tuple[Any, ...]]] = []
        self.rows = 0

    def add(self, site: str, entry: UrlEntry) -> None:
        self.site.append(site)
        self.sitemap.append(entry.sitemap)
        self.loc.append(entry.loc)
        self.lastmod.append(entry.lastmod)
        self.changefreq.append(entry.changefreq)
        self.priority.append(entry.priority)
        if entry.images:
            self.images.append((self.rows, entry.images))
        if entry.videos:
            self.videos.append((self.rows, entry.videos))
        if entry.news is not None:
            self.news.append((self.rows, entry.news))
        if entry.alternates:
            self.alternates.append((self.rows, entry.alternates))
        self.rows += 1

    def table(self, schema: pa.Schema) -> pa.Table:
        pa = pyarrow()
        n = self.rows
        texts: dict[Lastmod, tuple[str, dt.datetime]] = {}
        lastmod: list[str | None] = []
        utc: list[dt.datetime | None] = []
        for value in self.lastmod:
            if value is None:
                lastmod.append(None)
                utc.append(None)
                continue
            known = texts.get(value)
            if known is None:
                known = texts[value] = (format_w3c(value), _utc(value))
            lastmod.append(known[0])
            utc.append(known[1])
        news: list[dict[str, Any] | None] = [None] * n
        for row, item in self.news:
            news[row] = {name: getattr(item, name) for name in NEWS_FIELDS}
            news[row]["publication_date"] = _w3c(item.publication_date)  # type: ignore[index]
        columns: dict[str, Any] = {
            "site": self.site,
            "sitemap": self.sitemap,
            "loc": self.loc,
            "lastmod": lastmod,
            "lastmod_utc": utc,
            "changefreq": self.changefreq,
            "priority": self.priority,
            "image_count": _counts(n, self.images),
            "video_count": _counts(n, self.videos),
            "news_count": _counts(n, [(row, (1,)) for row, _ in self.news]),
            "alternate_count": _counts(n, self.alternates),
            "news": news,
        }
        arrays = []
        for f in schema:
            if f.name == "images":
                arrays.append(_lists(pa, f.type, n, self.images, _image))
            elif f.name == "videos":
                arrays.append(_lists(pa, f.type, n, self.videos, _video))
            elif f.name == "alternates":
                arrays.append(_lists(pa, f.type, n, self.alternates, _alternate))
            else:
                arrays.append(pa.array(columns[f.name], type=f.type))
        return pa.Table.from_arrays(arrays, schema=schema)


def _counts(n: int, sparse: list[tuple[int, tuple[Any, ...]]]) -> list[int]:
    counts = [0] * n
    for row, items in sparse:
        counts[row] = len(items)
    return counts


def _lists(pa: Any, list_type: Any, n: int, sparse: list[tuple[int, tuple[Any, ...]]], convert: Any) -> Any:
    """A list column of `n` rows, empty but for the rows in `sparse`."""
    offsets = [0] * (n + 1)
    values: list[dict[str, Any]] = []
    at = 0
    for row, items in sparse:
        for i in range(at, row + 1):
            offsets[i] = len(values)
        values.extend(convert(item) for item in items)
        at = row + 1
    for i in range(at, n + 1):
        offsets[i] = len(values)
    return pa.ListArray.from_arrays(
        pa.array(offsets, type=pa.int32()), pa.array(values, type=list_type.value_type)
    )


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
