"""Sitemap documents for tests: a urlset or an index of the URLs given, as text, written as sites write them
(an XML declaration, one element a line). The URLs go in as given: escape `&` yourself where it matters."""

from __future__ import annotations

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'


def urlset(*locs: str) -> str:
    """A urlset listing `locs`, each a `<url>` with a `<loc>` only."""
    body = "".join(f"<url><loc>{loc}</loc></url>\n" for loc in locs)
    return f'{HEAD}<urlset xmlns="{NS}">\n{body}</urlset>\n'


def index(*locs: str) -> str:
    """A sitemap index listing `locs`."""
    body = "".join(f"<sitemap><loc>{loc}</loc></sitemap>\n" for loc in locs)
    return f'{HEAD}<sitemapindex xmlns="{NS}">\n{body}</sitemapindex>\n'
