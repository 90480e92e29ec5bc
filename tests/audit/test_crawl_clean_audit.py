"""Issue 23's must-show: a crawl of a site is clean under its own audit. A loopback site with every kind
of page the two judge (Google's header signals, a meta noindex, a canonical elsewhere, a soft 404, a
redirect, a 404 link, a calendar trap) is crawled by `sitemapkit crawl`; its sitemap is then served by
the site and audited by `sitemapkit audit --json`: no listed page gets a finding about the page itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.crawl.test_crawl_signals import FILLER, HTML, page, signals_site
from tests.support.localserver import LocalServer

PAGE_CODES = {
    "url-error",
    "url-redirect",
    "url-noindex",
    "url-canonicalized",
    "url-soft-404",
    "url-blocked",
    "url-trap",
}


def sitemapkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sitemapkit", *args], capture_output=True, text=True, timeout=300
    )


def test_a_crawl_is_clean_under_its_own_audit(server: LocalServer, tmp_path: Path) -> None:
    signals_site(server)
    extra = {
        "/meta-noindex": page("m " + FILLER, head='<meta name="robots" content="noindex">'),
        "/canonical-elsewhere": page("c " + FILLER, head='<link rel="canonical" href="/canonical-target">'),
        "/gone": page("<h1>Sorry</h1>", title="Page not found"),
        "/cal/2026/1": page('<a href="/cal/2026/2">next</a>' + FILLER),
    }
    for month in range(2, 400):
        extra[f"/cal/2026/{month}"] = page(f'<a href="/cal/2026/{month + 1}">next</a>m{month}' + FILLER)
    for i in range(6):
        extra[f"/p{i}"] = page(f"article {i} {FILLER}")
    for path, body in extra.items():
        server.route(path, body, content_type=HTML)
    server.redirect("/old", server.url("/p0"))
    links = " ".join(f'<a href="{p}">x</a>' for p in [*extra, "/old", "/missing"] if "/cal/" not in p)
    home = server.routes["/"].body.decode().replace("<body>", f'<body>{links}<a href="/cal/2026/1">cal</a>')
    server.route("/", home, content_type=HTML)

    out = tmp_path / "out"
    crawled = sitemapkit("crawl", server.url("/"), "--out", str(out), "--no-sitemaps", "--trap-limit", "20")
    assert crawled.returncode == 0, crawled.stderr
    sitemap = (out / "sitemap.xml").read_text()
    listed = [loc.split("</loc>")[0] for loc in sitemap.split("<loc>")[1:]]
    assert server.url("/p0") in listed and server.url("/gone") not in listed
    assert len([u for u in listed if "/cal/" in u]) <= 25  # the trap was cut short, not listed whole
    server.route("/sitemap.xml", sitemap)

    audited = sitemapkit("audit", server.url("/sitemap.xml"), "--json", str(tmp_path / "a.json"))
    assert audited.returncode in (0, 1), audited.stderr
    report = json.loads((tmp_path / "a.json").read_text())
    about_pages = [
        (f["code"], f["url"]) for f in report["findings"] if f["url"] in listed and f["code"] in PAGE_CODES
    ]
    assert about_pages == []
    checked = {row["url"] for row in report["urls"]}
    assert checked == set(listed)
