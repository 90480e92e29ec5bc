"""The crawler: a sitemap for a live site, built by crawling it politely, in bounded memory, resumable.

`crawl` (in `sitemapkit.crawl.run`) is the entry point; `frontier` keeps the crawl in SQLite, `policy`
decides what is fetched and how fast, `engine` fetches and reads the pages."""
