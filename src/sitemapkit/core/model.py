"""Immutable entry types: the one model that sources, readers, writers and the validator share."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

Lastmod = dt.datetime | dt.date
"""A W3C Datetime: a `date`, or a timezone-aware `datetime`."""


@dataclass(frozen=True, slots=True)
class Image:
    """One `<image:image>` of a URL (Google image extension 1.1)."""

    loc: str
    caption: str | None = None
    title: str | None = None
    geo_location: str | None = None
    license: str | None = None


@dataclass(frozen=True, slots=True)
class Video:
    """One `<video:video>` of a URL (Google video extension 1.1)."""

    thumbnail_loc: str | None = None
    title: str | None = None
    description: str | None = None
    content_loc: str | None = None
    player_loc: str | None = None
    duration: int | None = None
    expiration_date: Lastmod | None = None
    rating: float | None = None
    view_count: int | None = None
    publication_date: Lastmod | None = None
    family_friendly: bool | None = None
    restriction: str | None = None
    """Space-separated ISO 3166 country codes; see `restriction_relationship`."""
    restriction_relationship: str | None = None
    """`allow` or `deny`."""
    platform: str | None = None
    """Space-separated `web`, `mobile`, `tv`; see `platform_relationship`."""
    platform_relationship: str | None = None
    requires_subscription: bool | None = None
    uploader: str | None = None
    uploader_info: str | None = None
    live: bool | None = None
    tags: tuple[str, ...] = ()
    category: str | None = None
    """Deprecated by Google in 2022; read, never written by default."""
    gallery_loc: str | None = None
    """Deprecated by Google in 2022; read, never written by default."""


@dataclass(frozen=True, slots=True)
class News:
    """The `<news:news>` block of a URL (Google News extension 0.9)."""

    publication_name: str
    publication_language: str
    publication_date: Lastmod
    title: str
    keywords: str | None = None
    """Comma-separated keywords (no longer used by Google, still in the schema); written when given."""
    stock_tickers: str | None = None
    """Comma-separated tickers such as `NASDAQ:GOOG`, at most 5 (still in the schema); written when given."""


@dataclass(frozen=True, slots=True)
class Alternate:
    """One `<xhtml:link rel="alternate" hreflang=... href=...>` of a URL."""

    hreflang: str
    href: str


@dataclass(frozen=True, slots=True)
class UrlEntry:
    """One `<url>` of a sitemap.

    `sitemap` and `line` say where a reader found the entry; they take no part in equality.
    """

    loc: str
    lastmod: Lastmod | None = None
    changefreq: str | None = None
    priority: float | None = None
    images: tuple[Image, ...] = ()
    videos: tuple[Video, ...] = ()
    news: News | None = None
    alternates: tuple[Alternate, ...] = ()
    sitemap: str | None = field(default=None, compare=False)
    line: int | None = field(default=None, compare=False)
    lastmod_text: str | None = field(default=None, compare=False, repr=False)
    """The `<lastmod>` text as the document wrote it (XML-unescaped, whitespace stripped), even when it is
    not a valid date (`lastmod` is then None); None when there was none, or the entry was not read from a
    document. Like `sitemap` and `line`, no part of equality."""


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One `<sitemap>` of a sitemap index."""

    loc: str
    lastmod: Lastmod | None = None
    sitemap: str | None = field(default=None, compare=False)
    line: int | None = field(default=None, compare=False)
    lastmod_text: str | None = field(default=None, compare=False, repr=False)
    """As `UrlEntry.lastmod_text`."""


def _reduce(self: Any) -> tuple[type, tuple[Any, ...]]:
    """Pickle as the constructor's arguments, faster than dataclasses' generic state for frozen slotted
    classes (entries sent to worker processes, or kept by a user's cache)."""
    return type(self), tuple(getattr(self, name) for name in self.__slots__)


for _cls in (Image, Video, News, Alternate, UrlEntry, IndexEntry):
    _cls.__reduce__ = _reduce  # type: ignore[method-assign]
