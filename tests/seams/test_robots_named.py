"""Sitemaps named by a robots.txt are URLs the site chose: crawl, audit and harvest give them the site's
policy (issue 22, items 1 and 8). Checked from the request logs of real loopback servers: the site the user
named on 127.0.0.1, an internal service on another port, another host on 127.0.0.2."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from tests.support.localserver import LocalServer
from tests.support.sitemaps import urlset

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
PAGE = "<!doctype html><html><head><title>{0}</title></head><body><p>{0}</p></body></html>"
LEAK = "http://intranet.example/\nAccessKeyId=AKIAEXAMPLE\nSecretAccessKey=wJalrXUtnFEMI/K7MDENG\n"


def host(address: str, answer: Callable[[str], tuple[int, str]]) -> Iterator[LocalServer]:
    """A server on another loopback address (another host) that answers every path with `answer`."""
    try:
        h = LocalServer(address)
    except OSError:  # pragma: no cover - no such loopback address here
        pytest.skip(f"{address} is not available")

    def serve(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        status, body = answer(handler.path)
        return status, {"Content-Type": "text/plain"}, body.encode()

    h.fallback = serve
    h.start()
    yield h
    h.stop()


@pytest.fixture
def inner() -> Iterator[LocalServer]:
    """The internal service: anything it serves is a secret (a text body whose first line is a URL)."""
    yield from host("127.0.0.1", lambda path: (200, LEAK))


@pytest.fixture
def victim() -> Iterator[LocalServer]:
    """Another site, whose robots.txt keeps every crawler out (and asks 30 s between requests)."""

    def answer(path: str) -> tuple[int, str]:
        if path == "/robots.txt":
            return 200, "User-agent: *\nDisallow: /\nCrawl-delay: 30\n"
        return 200, urlset("http://victim.example/x")

    yield from host("127.0.0.2", answer)


def site_naming(server: LocalServer, lines: list[str]) -> None:
    """The named site: its robots.txt names `lines` and its own sitemap, which lists one page."""
    robots = "User-agent: *\nAllow: /\n" + "".join(f"Sitemap: {line}\n" for line in lines)
    robots += f"Sitemap: {server.url('/sitemap.xml')}\n"
    server.route("/robots.txt", robots, content_type="text/plain")
    server.route("/sitemap.xml", urlset(server.url("/a")))
    server.route("/", PAGE.format("home").replace("<p>", f'<p><a href="{server.url("/a")}">a</a>'))
    server.route("/a", PAGE.format("a"), content_type="text/html")
    server.routes["/"].headers["Content-Type"] = "text/html"


def spellings(server: LocalServer, inner: LocalServer) -> list[str]:
    """Five ways to name an internal address: another port, localhost, another loopback host, IPv6, hex."""
    port, inner_port = server.port, inner.base.rsplit(":", 1)[1]
    return [
        f"{inner.base}/internal.xml",
        f"http://localhost:{port}/via-localhost.xml",
        f"http://127.0.0.2:{port}/other-host.xml",
        f"http://[::1]:{port}/v6.xml",
        f"http://0x7f000001:{inner_port}/hex.xml",
    ]


def other_spellings_asked(server: LocalServer) -> list[str]:
    """Requests that reached the named site under a name other than the one the user typed."""
    named = f"127.0.0.1:{server.port}"
    return [r.path for r in server.requests if r.headers.get("Host") != named]


def run_wing(wing: str, server: LocalServer, tmp_path: Path, **options: object) -> str:
    """Run one wing on the named site; the text it produced (report, crawl log, dataset rows)."""
    if wing == "crawl":
        from sitemapkit.crawl.run import crawl

        log = tmp_path / "crawl.jsonl"
        crawl(server.url("/"), tmp_path / "out", crawl_log=log, crawl_db=tmp_path / "c.db", **options)  # type: ignore[arg-type]
        return log.read_text() + (tmp_path / "out" / "sitemap.xml").read_text()
    if wing == "audit":
        import dataclasses
        import json

        from sitemapkit.audit.run import audit

        report = audit(server.url("/"), **options)  # type: ignore[arg-type]
        rows = [row.url for row in report.rows]
        return json.dumps([dataclasses.asdict(f) for f in report.findings], default=str) + str(rows)
    pq = pytest.importorskip("pyarrow.parquet")
    from sitemapkit.harvest.options import HarvestOptions
    from sitemapkit.harvest.run import harvest

    harvest([server.base], tmp_path / "ds", options=HarvestOptions(**options))  # type: ignore[arg-type]
    table = pq.read_table(tmp_path / "ds" / "urls")
    urls = table.column("loc").to_pylist() if "loc" in table.column_names else []
    return str(pq.read_table(tmp_path / "ds" / "sitemaps.parquet").to_pylist()) + str(urls)


WINGS = ["crawl", "audit", "harvest"]


@pytest.mark.parametrize("wing", WINGS)
def test_robots_sitemap_lines_to_internal_addresses_are_not_fetched(
    wing: str, server: LocalServer, inner: LocalServer, tmp_path: Path
) -> None:
    """The old code fetched all five by each of crawl, audit and harvest, and echoed the body's lines."""
    site_naming(server, spellings(server, inner))
    out = run_wing(wing, server, tmp_path)
    assert [r.path for r in inner.requests] == []
    assert other_spellings_asked(server) == []
    assert "AKIA" not in out and "SecretAccessKey" not in out
    assert "/a" in out  # the site's own sitemap and page were read all the same


@pytest.mark.parametrize("wing", WINGS)
def test_the_named_origin_trusts_no_internal_child_or_redirect(
    wing: str, server: LocalServer, inner: LocalServer, tmp_path: Path
) -> None:
    """The site's own index lists a child on the internal service and a child that redirects there:
    trusting the named origin does not extend to where its files point."""
    site_naming(server, [])
    server.route(
        "/sitemap.xml",
        f'<?xml version="1.0"?>\n<sitemapindex xmlns="{NS}">'
        f"<sitemap><loc>{server.url('/pages.xml')}</loc></sitemap>"
        f"<sitemap><loc>{inner.base}/child.xml</loc></sitemap>"
        f"<sitemap><loc>{server.url('/moved.xml')}</loc></sitemap></sitemapindex>\n",
    )
    server.route("/pages.xml", urlset(server.url("/a")))
    server.redirect("/moved.xml", f"{inner.base}/moved.xml", status=301)
    run_wing(wing, server, tmp_path)
    assert [r.path for r in inner.requests] == []
    assert "/pages.xml" in [r.path for r in server.requests]


@pytest.mark.parametrize("wing", WINGS)
def test_a_site_cannot_aim_the_run_at_another_site_past_its_robots_txt(
    wing: str, server: LocalServer, victim: LocalServer, tmp_path: Path
) -> None:
    """3,000 Sitemap: lines naming another host's files: that host's robots.txt (Disallow: /) is asked once
    and obeyed. The old harvest sent 3,000 GETs to it in 9.7 s."""
    site_naming(server, [f"{victim.base}/private/victim-{n}.xml" for n in range(3000)])
    run_wing(
        wing, server, tmp_path, allow_private=True
    )  # loopback hosts are private: let the test reach them
    assert [r.path for r in victim.requests] == ["/robots.txt"]


def test_harvest_counts_every_named_sitemap_against_its_cap(server: LocalServer, tmp_path: Path) -> None:
    """Sitemap: lines that answer 404 still count towards --max-sitemaps-per-site."""
    site_naming(server, [server.url(f"/missing-{n}.xml") for n in range(50)])
    run_wing("harvest", server, tmp_path, max_sitemaps_per_site=10)
    asked = [r.path for r in server.requests if r.path.startswith("/missing-")]
    assert 0 < len(asked) <= 10


def test_ipv6_loopback_is_refused_where_it_exists() -> None:
    """[::1] is only reachable where IPv6 loopback exists; the policy refuses it anyway."""
    from sitemapkit.reader.fetch import FetchPolicy

    if not socket.has_ipv6:  # pragma: no cover
        pytest.skip("no IPv6")
    assert FetchPolicy().connect_problem("localhost", 80, "::1") is not None
