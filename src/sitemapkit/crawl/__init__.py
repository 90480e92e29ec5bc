"""The crawler: a sitemap for a live site, built by crawling it politely, in bounded memory, resumable.

`crawl` is the entry point (`sitemapkit.crawl.crawl(start_url, out_dir, ...)`); `frontier` keeps the crawl
in SQLite, `policy` decides what is fetched and how fast, `engine` fetches and reads the pages, `run` feeds
the listed pages to the generator's writer."""

from sitemapkit.crawl.run import CrawlSource, crawl

__all__ = ["CrawlSource", "crawl"]
