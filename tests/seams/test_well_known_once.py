"""A site whose robots.txt names no sitemap, with one at a well-known path: discovery sniffs its first bytes
and every wing reads on from that download, so the sitemap is fetched once (counted in a real loopback
server's request log). `read` and `validate` are held to it in tests/reader/test_discover_once.py."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from sitemapkit import audit, crawl, harvest
from sitemapkit.harvest.options import HarvestOptions
from tests.support.localserver import LocalServer
from tests.support.sitemaps import urlset

PAGES = 300  # far more than the 4 KiB discovery sniffs
HTML = "<!doctype html><html><head><title>p</title></head><body><p>a page</p></body></html>"


def site(server: LocalServer) -> None:
    server.route("/robots.txt", "User-agent: *\nAllow: /\n", content_type="text/plain")
    server.route("/sitemap.xml", urlset(*(server.url(f"/page/{i}") for i in range(PAGES))))
    server.route("/", HTML, content_type="text/html")
    for i in range(PAGES):
        server.route(f"/page/{i}", HTML, content_type="text/html")


def gets(server: LocalServer) -> Counter[str]:
    return Counter(r.path for r in server.requests if r.method == "GET")


def test_crawl_reads_a_well_known_sitemap_with_one_request(server: LocalServer, tmp_path: Path) -> None:
    site(server)
    crawl(server.url("/"), tmp_path / "out", allow_private=True, max_pages=3, retries=0)
    asked = gets(server)
    assert asked["/sitemap.xml"] == 1 and asked["/robots.txt"] == 1
    assert sum(n for path, n in asked.items() if path.startswith("/page/")) <= 3


def test_harvest_reads_a_well_known_sitemap_with_one_request(server: LocalServer, tmp_path: Path) -> None:
    site(server)
    summary = harvest(
        [server.base], tmp_path / "ds", workers=1, options=HarvestOptions(allow_private=True, retries=0)
    )
    assert summary["urls"] == PAGES, json.dumps(summary)
    rows = pq.read_table(tmp_path / "ds" / "urls").num_rows
    assert rows == PAGES
    asked = gets(server)
    assert asked["/sitemap.xml"] == 1 and asked["/robots.txt"] == 1
    assert not any(path.startswith("/page/") for path in asked)


def test_audit_reads_a_well_known_sitemap_with_one_request(server: LocalServer) -> None:
    site(server)
    report = audit(server.url("/"), allow_private=True, retries=0, max_urls=2)
    assert report.discovery["via"] == "well-known"
    assert [f["urls"] for f in report.files] == [PAGES]
    asked = gets(server)
    assert asked["/sitemap.xml"] == 1 and asked["/robots.txt"] == 1
