"""The crawler: a sitemap for a live site, built by crawling it politely, in bounded memory, resumable.

`crawl` is the entry point (`sitemapkit.crawl(start_url, out_dir, ...)`, `acrawl` its async form);
`options` declares the settings (`NetworkOptions`, `ScopeOptions`, `PublishOptions`), `frontier` keeps the
crawl in SQLite, `policy` decides what is fetched and how fast, `engine` fetches and reads the pages, `run`
feeds the listed pages to the generator's writer (and has `build`, which runs a config file whose sources
may include crawls). The names load on first use, so the option groups import without the crawler.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitemapkit.core.lazy import lazy_exports as _lazy_exports

if TYPE_CHECKING:
    from sitemapkit.crawl.options import NetworkOptions, PublishOptions, ScopeOptions
    from sitemapkit.crawl.run import CrawlSource, abuild, acrawl, build, crawl

_LAZY = {
    "CrawlSource": "sitemapkit.crawl.run",
    "abuild": "sitemapkit.crawl.run",
    "acrawl": "sitemapkit.crawl.run",
    "build": "sitemapkit.crawl.run",
    "crawl": "sitemapkit.crawl.run",
    "NetworkOptions": "sitemapkit.crawl.options",
    "PublishOptions": "sitemapkit.crawl.options",
    "ScopeOptions": "sitemapkit.crawl.options",
}


__getattr__ = _lazy_exports(__name__, _LAZY)


__all__ = [
    "CrawlSource",
    "NetworkOptions",
    "PublishOptions",
    "ScopeOptions",
    "abuild",
    "acrawl",
    "build",
    "crawl",
]
