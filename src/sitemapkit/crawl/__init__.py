"""The crawler: a sitemap for a live site, built by crawling it politely, in bounded memory, resumable.

`crawl` is the entry point (`sitemapkit.crawl(start_url, out_dir, ...)`, `acrawl` its async form);
`frontier` keeps the crawl in SQLite, `policy` decides what is fetched and how fast, `engine` fetches and
reads the pages, `run` feeds the listed pages to the generator's writer (and has `build`, which runs a
config file whose sources may include crawls)."""

from sitemapkit.crawl.run import CrawlSource, abuild, acrawl, build, crawl

__all__ = ["CrawlSource", "abuild", "acrawl", "build", "crawl"]
