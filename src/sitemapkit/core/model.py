"""Immutable entry types: the one model that sources, readers, writers and the validator share, and
`new_url_entry` / `new_image`, which make them in a quarter of their constructors' time."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

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


# --- entries made fast (readers and the generator make millions) ----------------------------------------


def _draft_class(cls: type[Any]) -> type[Any] | None:
    """A plain class with the slots of the frozen, slotted dataclass `cls`: an instance of it, filled in
    with ordinary attribute stores, becomes a `cls` by assigning `__class__` (which Python allows between
    classes of the same layout). That skips the frozen `__init__`, which sets each field through
    `object.__setattr__`: the same object in about a quarter of the time. None if `cls` is not as expected.
    """
    names = tuple(f.name for f in dataclasses.fields(cls))
    if getattr(cls, "__slots__", None) != names or hasattr(cls, "__post_init__"):  # pragma: no cover
        return None
    draft = type(f"_Draft{cls.__name__}", (), {"__slots__": names})
    probe = draft()
    for name in names:
        setattr(probe, name, None)
    try:
        probe.__class__ = cls
    except TypeError:  # pragma: no cover - the layouts differ
        return None
    return draft


def _url_entry_maker() -> tuple[Callable[..., UrlEntry], type[Any] | None]:
    """`new(loc, lastmod, changefreq, priority, sitemap, line, images=(), lastmod_text=None, *, videos=(),
    news=None, alternates=())`: a `UrlEntry` made through `_draft_class`, or by its constructor if that is
    not possible; and the draft class (None if not possible)."""

    def plain(
        loc: str,
        lastmod: Lastmod | None,
        changefreq: str | None,
        priority: float | None,
        sitemap: str | None,
        line: int | None,
        images: tuple[Image, ...] = (),
        lastmod_text: str | None = None,
        *,
        videos: tuple[Video, ...] = (),
        news: News | None = None,
        alternates: tuple[Alternate, ...] = (),
    ) -> UrlEntry:
        return UrlEntry(
            loc, lastmod, changefreq, priority, images, videos, news, alternates, sitemap, line, lastmod_text
        )

    draft = _draft_class(UrlEntry)
    if draft is None:  # pragma: no cover - the model changed: stay correct
        return plain, None

    def fast(
        loc: str,
        lastmod: Lastmod | None,
        changefreq: str | None,
        priority: float | None,
        sitemap: str | None,
        line: int | None,
        images: tuple[Image, ...] = (),
        lastmod_text: str | None = None,
        *,
        videos: tuple[Video, ...] = (),
        news: News | None = None,
        alternates: tuple[Alternate, ...] = (),
    ) -> UrlEntry:
        entry = draft()
        entry.loc = loc
        entry.lastmod = lastmod
        entry.changefreq = changefreq
        entry.priority = priority
        entry.images = images
        entry.videos = videos
        entry.news = news
        entry.alternates = alternates
        entry.sitemap = sitemap
        entry.line = line
        entry.lastmod_text = lastmod_text
        entry.__class__ = UrlEntry
        return cast(UrlEntry, entry)

    sample = (
        "https://example.com/",
        dt.date(2024, 5, 1),
        "daily",
        0.5,
        "s",
        7,
        (Image("https://e.com/i"),),
        "2024-05-01",
    )
    made = fast(*sample)
    if made != plain(*sample) or (made.sitemap, made.line, made.lastmod_text) != (*sample[4:6], sample[7]):
        return plain, None  # pragma: no cover
        return plain, None
    return fast, draft


def _image_maker() -> Callable[[str], Image]:
    """`new(loc)`: an `Image` with only a `loc`, made as `_url_entry_maker` makes entries."""
    draft = _draft_class(Image)
    if draft is None or set(draft.__slots__) != {"loc", "caption", "title", "geo_location", "license"}:
        return Image  # pragma: no cover - the model changed: stay correct

    def fast(loc: str) -> Image:
        image = draft()
        image.loc = loc
        image.caption = image.title = image.geo_location = image.license = None
        image.__class__ = Image
        return cast(Image, image)

    if fast("https://e.com/i") != Image("https://e.com/i"):  # pragma: no cover
        return Image
    return fast


new_url_entry, URL_DRAFT = _url_entry_maker()
new_image = _image_maker()
