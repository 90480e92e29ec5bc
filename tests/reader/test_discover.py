"""What a SOURCE names; robots.txt `Sitemap:` lines; well-known fallback against a real server."""

from __future__ import annotations

import asyncio
import gzip
from pathlib import Path

import pytest

from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.errors import InputError, UsageError
from sitemapkit.reader.discover import (
    WELL_KNOWN_PATHS,
    Discovery,
    classify,
    discover,
    looks_like_sitemap,
    robots_url,
    sitemaps_in_robots,
)
from sitemapkit.reader.fetch import Fetcher, FetchOptions, FetchPolicy
from tests.support.localserver import LocalServer

URLSET = '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>'
HTML = "<!DOCTYPE html><html><body>Page not found</body></html>"


async def _no_sleep(_: float) -> None:
    pass


def run_discover(site: str, diagnostics: list[Diagnostic] | None = None) -> Discovery:
    async def run() -> Discovery:
        policy = FetchPolicy().trusting(site)  # the site is the one the user named
        async with Fetcher(FetchOptions(sleep=_no_sleep, retries=0, policy=policy)) as f:
            return await discover(
                site, f, on_diagnostic=(diagnostics.append if diagnostics is not None else None)
            )

    return asyncio.run(run())


# -- classify -----------------------------------------------------------------------------------


def test_classify_local_file_and_stdin(tmp_path: Path) -> None:
    f = tmp_path / "sitemap.xml"
    f.write_text(URLSET)
    assert classify(str(f)).kind == "file"
    assert classify(f.as_uri()).kind == "file"
    assert classify("-").kind == "stdin"


@pytest.mark.parametrize(
    ("source", "kind", "location"),
    [
        ("https://example.com", "site", "https://example.com/"),
        ("https://example.com/", "site", "https://example.com/"),
        ("HTTP://Example.com:8080/", "site", "http://Example.com:8080/"),
        ("https://example.com/sitemap.xml", "sitemap", "https://example.com/sitemap.xml"),
        ("https://example.com/sitemap.xml?page=2", "sitemap", "https://example.com/sitemap.xml?page=2"),
        ("https://example.com/sitemaps/products", "sitemap", "https://example.com/sitemaps/products"),
        ("https://example.com/?sitemap=1", "sitemap", "https://example.com/?sitemap=1"),
        ("example.com", "site", "https://example.com/"),
        ("www.Example.com/", "site", "https://www.example.com/"),
    ],
)
def test_classify_urls_and_hosts(source: str, kind: str, location: str) -> None:
    got = classify(source)
    assert (got.kind, got.location) == (kind, location)


def test_classify_refuses_other_schemes_as_usage_errors() -> None:
    with pytest.raises(UsageError, match="scheme 'ftp' is not supported"):
        classify("ftp://example.com/sitemap.xml")
    with pytest.raises(UsageError, match="empty"):
        classify("  ")


def test_classify_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        classify(str(tmp_path / "nope.xml"))
    with pytest.raises(InputError, match="no such file"):
        classify("sitemap.xml")
    with pytest.raises(InputError, match="is a folder"):
        classify(str(tmp_path))


# -- robots.txt ---------------------------------------------------------------------------------


def test_robots_sitemap_lines_any_case_any_group_crlf_bom_relative() -> None:
    robots = (
        "\ufeffSitemap: https://example.com/first.xml\r\n"
        "User-agent: Googlebot\r\n"
        "Disallow: /private\r\n"
        "  sitemap:/relative.xml   \r\n"
        "\r\n"
        "User-agent: *\r\n"
        "SITEMAP : https://cdn.example.net/other.xml.gz # comment\r"
        "sItEmAp: https://example.com/first.xml\n"
        "Sitemaps: https://example.com/not-a-sitemap-line.xml\n"
    ).encode()
    assert sitemaps_in_robots(robots, "https://example.com/robots.txt") == [
        "https://example.com/first.xml",
        "https://example.com/relative.xml",
        "https://cdn.example.net/other.xml.gz",
    ]


def test_robots_sitemap_line_that_is_not_http_is_reported_and_skipped() -> None:
    found: list[Diagnostic] = []
    urls = sitemaps_in_robots(
        "Sitemap: ftp://example.com/s.xml\nSitemap: /ok.xml\n",
        "https://example.com/robots.txt",
        on_diagnostic=found.append,
    )
    assert urls == ["https://example.com/ok.xml"]
    assert [(d.code, d.source, d.line) for d in found] == [
        ("invalid-url", "https://example.com/robots.txt", 1)
    ]


def test_robots_url_of_any_page() -> None:
    assert robots_url("https://example.com:8443/a/b?c") == "https://example.com:8443/robots.txt"


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (gzip.compress(b"anything"), True),
        (URLSET.encode(), True),
        (b"\xef\xbb\xbf\n\n<?xml version='1.0'?>\n<sitemapindex>", True),
        ('<?xml version="1.0" encoding="UTF-16"?><urlset>'.encode("utf-16"), True),
        (b"<rss version='2.0'>", True),
        (b'<feed xmlns="http://www.w3.org/2005/Atom">', True),
        (b"https://example.com/a\nhttps://example.com/b\n", True),
        (HTML.encode(), False),
        (b"Not found", False),
        (b"", False),
    ],
)
def test_looks_like_sitemap(head: bytes, expected: bool) -> None:
    assert looks_like_sitemap(head) is expected


# -- discovery against a server -----------------------------------------------------------------


def test_discover_from_robots_with_mixed_case_relative_and_bom(server: LocalServer) -> None:
    server.route(
        "/robots.txt",
        b"\xef\xbb\xbfUser-agent: *\r\nDisallow:\r\nsitemap: /sitemap_index.xml\r\nSITEMAP: "
        + server.url("/news.xml").encode()
        + b"\r\n",
        content_type="text/plain",
    )
    found = run_discover(server.url("/"))
    assert found.via == "robots" and found.robots_status == 200
    assert found.sitemaps == [server.url("/sitemap_index.xml"), server.url("/news.xml")]


def test_discover_falls_back_to_the_first_well_known_path(server: LocalServer) -> None:
    server.route("/robots.txt", "User-agent: *\nDisallow:\n", content_type="text/plain")
    server.route("/sitemap_index.xml", URLSET)
    server.route("/sitemap.txt", "https://example.com/\n", content_type="text/plain")
    found = run_discover(server.url("/"))
    assert (found.via, found.sitemaps) == ("well-known", [server.url("/sitemap_index.xml")])
    probed = [r.path for r in server.requests]
    assert probed == ["/robots.txt", "/sitemap.xml", "/sitemap_index.xml"]


def test_discover_skips_soft_404_html_and_follows_redirects(server: LocalServer) -> None:
    server.route("/sitemap.xml", HTML, content_type="text/html")  # robots.txt is a real 404
    server.redirect("/sitemap_index.xml", "/wp-sitemap.xml")
    server.route("/wp-sitemap.xml", URLSET)
    found = run_discover(server.url("/"))
    assert found.robots_status == 404
    assert found.sitemaps == [server.url("/sitemap_index.xml")]


def test_discover_finds_nothing(server: LocalServer) -> None:
    found = run_discover(server.url("/"))
    assert (found.via, found.sitemaps, found.robots_status) == (None, [], 404)
    assert len(server.requests) == 1 + len(WELL_KNOWN_PATHS)
