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


def _utc(value: Lastmod | None) -> dt.datetime | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC) if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
    return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)


def _w3c(value: Lastmod | None) -> str | None:
    return format_w3c(value) if value is not None else None


class UrlBuffer:
    """URL rows held as column lists until they are written as one row group."""

    def __init__(self) -> None:
        self.columns: dict[str, list[Any]] = {name: [] for name in URL_COLUMNS}
        self.rows = 0

    def add(self, site: str, entry: UrlEntry) -> None:
        c = self.columns
        c["site"].append(site)
        c["sitemap"].append(entry.sitemap)
        c["loc"].append(entry.loc)
        lastmod = entry.lastmod
        c["lastmod"].append(format_w3c(lastmod) if lastmod is not None else None)
        c["lastmod_utc"].append(_utc(lastmod) if lastmod is not None else None)
        c["changefreq"].append(entry.changefreq)
        c["priority"].append(entry.priority)
        c["image_count"].append(len(entry.images))
        c["video_count"].append(len(entry.videos))
        c["news_count"].append(0 if entry.news is None else 1)
        c["alternate_count"].append(len(entry.alternates))
        c["images"].append(
            [{name: getattr(i, name) for name in IMAGE_FIELDS} for i in entry.images] if entry.images else []
        )
        c["videos"].append([_video(v) for v in entry.videos] if entry.videos else [])
        news = entry.news
        c["news"].append(
            None
            if news is None
            else {
                **{name: getattr(news, name) for name in NEWS_FIELDS},
                "publication_date": _w3c(news.publication_date),
            }
        )
        c["alternates"].append(
            [{"hreflang": a.hreflang, "href": a.href} for a in entry.alternates] if entry.alternates else []
        )
        self.rows += 1

    def table(self, schema: pa.Schema) -> pa.Table:
        pa = pyarrow()
        arrays = [pa.array(self.columns[f.name], type=f.type) for f in schema]
        return pa.Table.from_arrays(arrays, schema=schema)


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
