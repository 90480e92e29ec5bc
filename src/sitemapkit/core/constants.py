"""Protocol limits, namespaces and vocabularies, in one place."""

from __future__ import annotations

from typing import Final

MAX_URLS: Final = 50_000
"""Most URLs (or index entries) one sitemap file may hold."""

MAX_BYTES: Final = 52_428_800
"""Most bytes one sitemap file may hold, measured uncompressed."""

MAX_URL_LENGTH: Final = 2_048
"""A `<loc>` must be shorter than this many characters."""

MAX_IMAGES_PER_URL: Final = 1_000
MAX_NEWS_PER_SITEMAP: Final = 1_000
MAX_VIDEO_TAGS: Final = 32
MAX_VIDEO_DESCRIPTION: Final = 2_048
MAX_VIDEO_DURATION: Final = 28_800
MAX_ROBOTS_BYTES: Final = 500 * 1024
MAX_LINE_BYTES: Final = 1 << 20
"""Longest line of a text input (URL list, CSV, JSONL, access log); a longer one is skipped, never held."""

NS_SITEMAP: Final = "http://www.sitemaps.org/schemas/sitemap/0.9"
NS_SITEMAP_LEGACY: Final = "http://www.google.com/schemas/sitemap/0.84"
NS_IMAGE: Final = "http://www.google.com/schemas/sitemap-image/1.1"
NS_VIDEO: Final = "http://www.google.com/schemas/sitemap-video/1.1"
NS_NEWS: Final = "http://www.google.com/schemas/sitemap-news/0.9"
NS_XHTML: Final = "http://www.w3.org/1999/xhtml"
NS_XSI: Final = "http://www.w3.org/2001/XMLSchema-instance"

CHANGEFREQS: Final = frozenset({"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"})

DEFAULT_RETRIES: Final = 2
"""Further attempts of a request answered 429 or 5xx, or that got no answer: the one default of every wing
(`FetchOptions`, `read`, `validate`, `crawl`, `audit`, `harvest`) and of every command's `--retries`."""
USER_AGENT: Final = "sitemapkit/0.1 (+https://github.com/sitemapkit/sitemapkit)"
