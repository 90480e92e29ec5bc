"""One entry from what several sources say about the same URL (`merge_entries`).

- lastmod: the newest of those given;
- changefreq, priority, news: the first that gives one, in the order `generate` reads its sources
  (single URLs, existing sitemaps, folders, access logs, then URL lists, CSV and JSONL files);
- images, alternates, videos: all of them, each once (images by URL, alternates by hreflang, videos by
  their content or player location), at most 1,000 images.
"""

from __future__ import annotations

from sitemapkit.core.constants import MAX_IMAGES_PER_URL
from sitemapkit.core.dates import sort_key
from sitemapkit.core.model import UrlEntry


def merge_entries(first: UrlEntry, other: UrlEntry) -> UrlEntry:
    """`first` with what `other` adds (see the module docstring); `loc`, `sitemap` and `line` are first's."""
    lastmod = first.lastmod
    if other.lastmod is not None and (lastmod is None or sort_key(other.lastmod) > sort_key(lastmod)):
        lastmod = other.lastmod
    images = first.images
    if other.images:
        seen = {i.loc for i in images}
        images = (*images, *(i for i in other.images if i.loc not in seen))[:MAX_IMAGES_PER_URL]
    videos = first.videos
    if other.videos:
        known = {(v.content_loc, v.player_loc) for v in videos}
        videos = (*videos, *(v for v in other.videos if (v.content_loc, v.player_loc) not in known))
    alternates = first.alternates
    if other.alternates:
        langs = {a.hreflang.lower() for a in alternates}
        alternates = (*alternates, *(a for a in other.alternates if a.hreflang.lower() not in langs))
    return UrlEntry(
        first.loc,
        lastmod,
        first.changefreq if first.changefreq is not None else other.changefreq,
        first.priority if first.priority is not None else other.priority,
        images,
        videos,
        first.news if first.news is not None else other.news,
        alternates,
        first.sitemap,
        first.line,
    )
