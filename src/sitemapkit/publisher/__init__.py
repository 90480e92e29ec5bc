"""Telling the world: robots.txt `Sitemap:` lines, IndexNow, and serving sitemaps from a web app."""
