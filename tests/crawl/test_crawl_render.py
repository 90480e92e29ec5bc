"""`crawl --render` contained, with a real Chromium against two loopback servers: the site on 127.0.0.1 and
an "internal" server on 127.0.0.2 that a page's scripts try to reach. The internal server's own request log
must stay empty, the crawl log must say what was blocked, and only the page's own DOM is read."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from sitemapkit.crawl.frontier import Row
from sitemapkit.crawl.run import crawl
from sitemapkit.reader.parser import parse_file
from tests.support.localserver import LocalServer

HTML = "text/html; charset=utf-8"


def page(body: str = "", head: str = "") -> str:
    return f"<!doctype html><html><head><title>t</title>{head}</head><body>{body}</body></html>"


@pytest.fixture
def internal() -> Iterator[tuple[str, list[str]]]:
    """A server on 127.0.0.2 (another loopback address than the site's): its base URL and request log."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            seen.append(self.path)
            body = page('ADMIN PANEL <a href="/delete-everything">x</a>').encode()
            self.send_response(200)
            self.send_header("Content-Type", HTML)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    try:
        httpd = ThreadingHTTPServer(("127.0.0.2", 0), Handler)
    except OSError:
        pytest.skip("127.0.0.2 is not usable here")
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.2:{httpd.server_address[1]}", seen
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def chromium() -> None:
    pytest.importorskip("playwright")
    from sitemapkit.crawl.render import find_chromium

    if find_chromium() is None:
        pytest.skip("no Chromium installed (apt-get install chromium)")


def run(server: LocalServer, tmp_path: Path) -> tuple[set[str], dict[str, Row], list[dict[str, Any]]]:
    left: dict[str, Row] = {}
    log = tmp_path / "crawl.jsonl"
    crawl(
        server.url("/"),
        tmp_path / "out",
        sitemaps=False,
        render=True,
        timeout=15,
        explain=lambda r: left.__setitem__(r.url, r),
        crawl_log=log,
    )
    listed = {e.loc for e in parse_file(tmp_path / "out" / "sitemap.xml")}
    return listed, left, [json.loads(line) for line in log.read_text().splitlines()]


def test_a_page_cannot_make_chromium_reach_an_internal_address(
    server: LocalServer, tmp_path: Path, internal: tuple[str, list[str]]
) -> None:
    base, seen = internal
    script = (
        f"<script>fetch('{base}/api').catch(() => {{}});"
        f"setTimeout(() => {{ location.href = '{base}/admin'; }}, 50);</script>"
        f'<iframe src="{base}/frame"></iframe><a href="/ok">ok</a>'
    )
    server.route("/", page("home " + script), content_type=HTML)
    server.route("/ok", page("ok"), content_type=HTML)
    listed, _left, records = run(server, tmp_path)
    assert seen == []  # the internal server was never asked for anything
    assert listed == {server.url("/"), server.url("/ok")}  # the page's own DOM: its link, not the admin's
    blocked = {r["url"]: r for r in records if r["reason"] == "render-blocked"}
    assert set(blocked) == {f"{base}/api", f"{base}/admin", f"{base}/frame"}
    assert all("loopback address" in (r["detail"] or "") for r in blocked.values())
    assert all(r["found_on"] == server.url("/") for r in blocked.values())
    assert "/delete-everything" not in [r.path for r in server.requests]


def test_a_navigation_within_the_site_is_crawled_not_read_as_the_page(
    server: LocalServer, tmp_path: Path
) -> None:
    server.route("/", page("home <script>location.href = '/elsewhere';</script>"), content_type=HTML)
    server.route("/elsewhere", page("elsewhere " + '<a href="/only-from-elsewhere">x</a>'), content_type=HTML)
    server.route("/only-from-elsewhere", page("deep"), content_type=HTML)
    listed, _, _ = run(server, tmp_path)
    # / is read as itself; /elsewhere is crawled as a link of / (fetched by the crawler, not by the browser)
    assert listed == {server.url("/"), server.url("/elsewhere"), server.url("/only-from-elsewhere")}
    assert [r.path for r in server.requests].count("/elsewhere") == 1


def test_a_main_frame_that_moved_is_an_error_not_another_pages_dom(
    server: LocalServer, tmp_path: Path
) -> None:
    server.route(
        "/",
        page('home <a href="/moves">m</a>'),
        content_type=HTML,
    )
    server.route(
        "/moves", page("<script>history.pushState({}, '', '/somewhere-else');</script>"), content_type=HTML
    )
    listed, left, _ = run(server, tmp_path)
    assert listed == {server.url("/")}
    row = left[server.url("/moves")]
    assert row.reason == "error" and "main frame went to" in (row.detail or "")
