"""Loopback sites for the audit tests and benchmark: one with every problem the audit reports, one clean."""

from __future__ import annotations

from tests.support.localserver import LocalServer

HTML = "text/html; charset=utf-8"
FILLER = "<p>" + "Some words about this page, long enough to look like a real article. " * 30 + "</p>"


def page(
    server: LocalServer,
    path: str,
    *,
    title: str | None = None,
    canonical: str | None = None,
    head: str = "",
    body: str = FILLER,
    links: tuple[str, ...] = (),
    modified: str | None = None,
    headers: dict[str, str] | None = None,
    status: int = 200,
) -> str:
    """Serve an HTML page at `path` (canonical: itself unless given); returns its URL."""
    url = server.url(path)
    ld = f'<script type="application/ld+json">{{"dateModified": "{modified}"}}</script>' if modified else ""
    anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
    html = (
        f"<!doctype html><html><head><title>{title or path}</title>"
        f'<link rel="canonical" href="{canonical or url}">{head}{ld}</head>'
        f"<body><h1>{title or path}</h1>{body}<nav>{anchors}</nav></body></html>"
    )
    server.route(path, html, status=status, content_type=HTML, headers=headers)
    return url


def urlset(entries: list[str]) -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        'xmlns:xhtml="http://www.w3.org/1999/xhtml">\n' + "\n".join(entries) + "\n</urlset>\n"
    )


def entry(loc: str, lastmod: str | None = None, extra: str = "") -> str:
    lm = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
    return f"<url><loc>{loc}</loc>{lm}{extra}</url>"


def index(children: list[str]) -> str:
    items = "".join(f"<sitemap><loc>{c}</loc></sitemap>" for c in children)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{items}</sitemapindex>\n'
    )


def clean_site(server: LocalServer) -> str:
    """A site with no problem at all: robots.txt names the sitemap, every page is listed, linked,
    indexable, its own canonical, with the lastmod it says itself."""
    b = server.url
    server.route(
        "/robots.txt", f"User-agent: *\nAllow: /\nSitemap: {b('/sitemap.xml')}\n", content_type="text/plain"
    )
    page(server, "/", title="Home", links=("/a", "/b"), modified="2026-11-01")
    page(server, "/a", title="A", links=("/",), modified="2026-10-01T10:00:00+00:00")
    page(server, "/b", title="B", links=("/", "/a"), modified="2026-09-15")
    server.route(
        "/sitemap.xml",
        urlset(
            [
                entry(b("/"), "2026-11-01"),
                entry(b("/a"), "2026-10-01T10:00:00+00:00"),
                entry(b("/b"), "2026-09-15"),
            ]
        ),
    )
    return b("/")


def problem_site(server: LocalServer) -> str:
    """A site with each problem the live checks find, in two sitemaps under an index."""
    b = server.url
    server.route(
        "/robots.txt",
        f"User-agent: *\nDisallow: /private/\nSitemap: {b('/sitemap.xml')}\n",
        content_type="text/plain",
    )
    home_links = ("/ok", "/old", "/gone", "/noindex", "/xrobots", "/dup", "/soft", "/stale", "/ahead",
                  "/future", "/en", "/de", "/several", "/unlisted", "/file.pdf", "/slow",
                  "/refresh")  # fmt: skip
    page(server, "/", title="Home", links=home_links, modified="2026-11-01")
    page(server, "/ok", title="OK", links=("/",), modified="2026-10-01")
    server.redirect("/old", b("/ok"))
    server.route("/gone", "gone", status=404, content_type="text/plain")
    page(server, "/private/x", title="Private")
    page(server, "/noindex", title="Hidden", head='<meta name="robots" content="noindex, follow">')
    page(server, "/xrobots", title="Header hidden", headers={"X-Robots-Tag": "noindex"})
    page(server, "/dup", title="Duplicate", canonical=b("/ok"))
    page(server, "/soft", title="Page not found", body="<p>Sorry.</p>")
    page(server, "/stale", title="Stale", modified="2026-06-01T00:00:00+00:00")
    page(server, "/ahead", title="Ahead", modified="2026-01-01")
    page(server, "/future", title="Future")
    page(server, "/en", title="English", head=f'<link rel="alternate" hreflang="de" href="{b("/de")}">')
    page(server, "/de", title="Deutsch", head=f'<link rel="alternate" hreflang="fr" href="{b("/fr")}">')
    page(server, "/several", title="Several")
    page(server, "/unlisted", title="Unlisted", links=("/",))
    page(server, "/orphan", title="Orphan")
    page(server, "/refresh", title="Moved", head=f'<meta http-equiv="refresh" content="0; url={b("/ok")}">')
    server.route("/file.pdf", b"%PDF-1.4", content_type="application/pdf")
    page(server, "/slow", title="Slow")
    server.routes[
        "/slow"
    ].delay = 60.0  # past any audit timeout the tests give (2 s), however busy the machine
    alternates = (
        f'<xhtml:link rel="alternate" hreflang="en" href="{b("/en")}"/>'
        f'<xhtml:link rel="alternate" hreflang="de" href="{b("/de")}"/>'
    )
    server.route(
        "/sitemap-pages.xml",
        urlset(
            [
                entry(b("/"), "2026-11-01"),
                entry(b("/ok"), "2026-10-01"),
                entry(b("/old")),
                entry(b("/gone")),
                entry(b("/private/x")),
                entry(b("/noindex")),
                entry(b("/xrobots")),
                entry(b("/dup")),
                entry(b("/soft")),
                entry(b("/stale"), "2026-01-01"),
                entry(b("/ahead"), "2026-06-01"),
                entry(b("/future"), "2030-01-01"),
                entry(b("/several")),
                entry(b("/orphan")),
                entry(b("/refresh")),
            ]
        ),
    )
    server.route(
        "/sitemap-more.xml",
        urlset(
            [
                entry(b("/en"), extra=alternates),
                entry(b("/de")),
                entry(b("/several")),
                entry(b("/file.pdf")),
                entry(b("/slow")),
            ]
        ),
    )
    server.route("/sitemap.xml", index([b("/sitemap-pages.xml"), b("/sitemap-more.xml")]))
    return b("/")
