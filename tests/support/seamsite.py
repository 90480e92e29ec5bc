"""A loopback site that combines the seams of politeness, for every wing to read (see test_politeness.py).

It serves, on its own loopback address (127.0.0.3 by default):

- robots.txt: `Disallow: /private/`, `Crawl-delay: DELAY`, a `Sitemap:` line for the index;
- an index naming `/sm/pages.xml`, `/sm/moved.xml` (a 3-hop redirect chain to `/sm/pages2.xml`) and
  `/sm/blocked.xml` (a 301 into `/private/sitemap.xml`);
- pages: redirects into `/private/` (302 and 307), two redirects to one page (`/r1`, `/r2` -> `/p/common`),
  a 3-hop chain (`/chain1` -> ... -> `/final`), a 429 and a 503 with `Retry-After: 1` (200 the second
  time), and slow pages (so that requests could overlap if the per-host limit did not hold).

Every request is logged with when it started and ended (`time.monotonic`), from the server's side.
"""

from __future__ import annotations

import itertools
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import ClassVar

from tests.support.localserver import LocalServer, Request

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
SLOW = 0.8
"""Seconds a slow page takes to answer (longer than the delay, so requests could overlap)."""


def _page(title: str, links: list[str]) -> bytes:
    anchors = "".join(f'<a href="{href}">{href}</a>' for href in links)
    head = f"<!doctype html><html><head><title>{title}</title></head>"
    return f"{head}<body><h1>{title}</h1><p>{title} is a page of its own.</p>{anchors}</body></html>".encode()


def _urlset(base: str, paths: list[str]) -> bytes:
    items = "".join(f"<url><loc>{base}{p}</loc></url>" for p in paths)
    return f'<?xml version="1.0"?><urlset xmlns="{NS}">{items}</urlset>'.encode()


class SeamSite:
    """Start with `SeamSite().start()`; `site.hits` is the request log; `site.stop()`."""

    PAGES: ClassVar[list[str]] = [
        "/",
        "/a",
        "/old/x",
        "/t307",
        "/r1",
        "/r2",
        "/chain1",
        "/busy429",
        "/busy503",
    ]
    """What /sm/pages.xml lists."""
    INDEXABLE: ClassVar[list[str]] = ["/", "/a", "/b", "/p/common", "/final", "/busy429", "/busy503"]
    """The pages a crawl lists: every 200 HTML page reached, redirect targets included."""

    def __init__(self, host: str = "127.0.0.3", delay: float = 0.3) -> None:
        self.delay = delay
        self._calls: dict[str, int] = {}
        self._lock = threading.Lock()
        self.server = LocalServer(host)
        self.server.fallback = self._serve
        self.base = self.server.base

    @property
    def hits(self) -> list[Request]:
        """The server's request log: path, `at` (started) and `end` (answered)."""
        return self.server.requests

    def _serve(self, handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            n = self._calls[handler.path] = self._calls.get(handler.path, 0) + 1
        status, headers, body, wait = self.answer(handler.path, n)
        if wait:
            time.sleep(wait)
        return status, headers, body

    def start(self) -> SeamSite:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    def url(self, path: str = "/") -> str:
        return self.base + path

    def answer(self, path: str, n: int) -> tuple[int, dict[str, str], bytes, float]:
        b = self.base
        html = {"Content-Type": "text/html; charset=utf-8"}
        xml = {"Content-Type": "application/xml"}

        def moved(to: str, status: int = 301) -> tuple[int, dict[str, str], bytes, float]:
            return status, {"Location": to}, b"", 0.0

        if path == "/robots.txt":
            text = (
                f"User-agent: *\nDisallow: /private/\nCrawl-delay: {self.delay}\n\n"
                f"Sitemap: {b}/sitemap_index.xml\n"
            )
            return 200, {"Content-Type": "text/plain"}, text.encode(), 0.0
        if path == "/sitemap_index.xml":
            items = "".join(
                f"<sitemap><loc>{b}{p}</loc></sitemap>"
                for p in ("/sm/pages.xml", "/sm/moved.xml", "/sm/blocked.xml")
            )
            return (
                200,
                xml,
                f'<?xml version="1.0"?><sitemapindex xmlns="{NS}">{items}</sitemapindex>'.encode(),
                0.0,
            )
        if path == "/sm/pages.xml":
            return 200, xml, _urlset(b, self.PAGES), 0.0
        if path == "/sm/pages2.xml":
            return 200, xml, _urlset(b, ["/b"]), 0.0
        redirects = {
            "/sm/moved.xml": ("/sm/redir.xml", 301),
            "/sm/redir.xml": ("/sm/redir2.xml", 302),
            "/sm/redir2.xml": ("/sm/pages2.xml", 307),
            "/sm/blocked.xml": ("/private/sitemap.xml", 301),
            "/old/x": ("/private/y", 302),
            "/t307": ("/private/z", 307),
            "/r1": ("/p/common", 301),
            "/r2": ("/p/common", 302),
            "/chain1": ("/chain2", 301),
            "/chain2": ("/chain3", 302),
            "/chain3": ("/final", 301),
        }
        if path in redirects:
            to, status = redirects[path]
            return moved(b + to, status)
        if path in ("/busy429", "/busy503") and n == 1:
            status = 429 if path == "/busy429" else 503
            return status, {"Retry-After": "1", "Content-Type": "text/plain"}, b"busy", 0.0
        links = {
            "/": ["/a", "/old/x", "/t307", "/r1", "/r2", "/chain1", "/busy429", "/busy503", "/b"],
            "/a": ["/", "/r2", "/p/common"],
        }
        if path in ("/", "/a", "/b", "/p/common", "/final", "/busy429", "/busy503") or path.startswith(
            "/private/"
        ):
            slow = SLOW if path in ("/a", "/b", "/final", "/p/common") else 0.0
            return 200, html, _page(path, links.get(path, ["/"])), slow
        return 404, {"Content-Type": "text/plain"}, b"not found", 0.0

    # -- what the log shows --------------------------------------------------------------------------

    def paths(self) -> list[str]:
        return [h.path for h in self.hits]

    def gaps(self) -> list[float]:
        """Seconds between the starts of every two requests in a row."""
        starts = sorted(h.at for h in self.hits)
        return [b - a for a, b in itertools.pairwise(starts)]

    def most_in_flight(self) -> int:
        """The most requests the server was answering at once."""
        events = sorted([(h.at, 1) for h in self.hits] + [(h.end or h.at, -1) for h in self.hits])
        now = most = 0
        for _, step in events:
            now += step
            most = max(most, now)
        return most

    def retry_gap(self, path: str) -> float:
        """Seconds between the first request of `path` (answered 429 or 503) and the one after it."""
        starts = [h.at for h in self.hits if h.path == path]
        assert len(starts) == 2, (path, starts)
        return starts[1] - starts[0]
