"""Many real HTTP sites on loopback, one event loop in a thread: each site its own address (127.0.0.2,
127.0.0.3, ...: on Linux all of 127/8 is routable) and its own routes.

Each address keeps a log of its requests and the most it ever had in flight at once (a request counts
from the moment it is read until its answer is handed to the socket, or the client closes the connection
while it waits; a `delay` falls inside that span), which is what politeness tests check. Used by
tests/harvest/test_harvest.py and bench/bench_harvest.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from xml.sax.saxutils import escape


@dataclass
class Page:
    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


Route = Page | Callable[[int], Page]
"""A page, or a function of how many times the path was asked before (0, 1, ...) giving one."""


@dataclass
class Host:
    """What one address saw."""

    in_flight: int = 0
    max_in_flight: int = 0
    log: list[tuple[float, float, str]] = field(default_factory=list)
    """(start, end, path) of every request, in the order they ended."""


class Site:
    """One server: `site.route("/robots.txt", "...")`; `site.base` is `http://ADDRESS:PORT/`."""

    def __init__(self, farm: SiteFarm, address: str) -> None:
        self.farm = farm
        self.address = address
        self.port = 0
        self.routes: dict[str, Route] = {}
        self.asked: dict[str, int] = {}
        self.server: asyncio.Server | None = None

    @property
    def base(self) -> str:
        return f"http://{self.address}:{self.port}/"

    @property
    def host(self) -> Host:
        return self.farm.hosts.setdefault(self.address, Host())

    def url(self, path: str) -> str:
        return f"http://{self.address}:{self.port}{path}"

    def route(self, path: str, body: bytes | str | Route = b"", **kwargs: object) -> str:
        if isinstance(body, Page) or callable(body):
            self.routes[path] = body
        else:
            data = body.encode() if isinstance(body, str) else body
            self.routes[path] = Page(data, **kwargs)  # type: ignore[arg-type]
        return self.url(path)

    def requests(self) -> list[str]:
        """Paths asked of this site (of its address, if shared), in order of answer."""
        return [path for _, _, path in self.host.log]

    async def _answer(self, path: str) -> Page:
        route = self.routes.get(path)
        n = self.asked.get(path, 0)
        self.asked[path] = n + 1
        if route is None:
            return Page(b"not found", 404, {"Content-Type": "text/plain"})
        return route(n) if callable(route) else route

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host = self.host
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                start = time.monotonic()
                host.in_flight += 1
                host.max_in_flight = max(host.max_in_flight, host.in_flight)
                path = "?"
                try:
                    path = head.split(b" ", 2)[1].decode("latin-1")
                    page = await self._answer(path)
                    if page.delay and await _gave_up(reader, page.delay):
                        return  # the client closed the connection (a timeout): no longer in flight
                finally:
                    host.in_flight -= 1
                    host.log.append((start, time.monotonic(), path))
                headers = {"Content-Type": "application/xml", **page.headers}
                headers["Content-Length"] = str(len(page.body))
                lines = [f"HTTP/1.1 {page.status} X"] + [f"{k}: {v}" for k, v in headers.items()]
                writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + page.body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, IndexError):
            pass
        finally:
            writer.close()


async def _gave_up(reader: asyncio.StreamReader, delay: float) -> bool:
    """Wait `delay` seconds, or until the client closes the connection (then True)."""
    closed = asyncio.ensure_future(reader.read(1))
    done, _ = await asyncio.wait({closed}, timeout=delay)
    if done:
        return True
    closed.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await closed  # the read must be over before the next request is read
    return False


class SiteFarm:
    """Sites on loopback addresses, served by one event loop in a daemon thread. Use as a context manager."""

    def __init__(self) -> None:
        self.hosts: dict[str, Host] = {}
        self.sites: list[Site] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

    def add(self, address: str, port: int = 0) -> Site:
        """A new site listening on `address` (on `port`, or a free one)."""
        site = Site(self, address)

        async def start() -> asyncio.Server:
            return await asyncio.start_server(site._serve, address, port, backlog=1024)

        site.server = asyncio.run_coroutine_threadsafe(start(), self._loop).result(10)
        site.port = site.server.sockets[0].getsockname()[1]
        self.sites.append(site)
        return site

    def close(self) -> None:
        async def stop() -> None:
            for site in self.sites:
                if site.server is not None:
                    site.server.close()
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in others:  # answers still waiting on a delay
                task.cancel()
            await asyncio.gather(*others, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def __enter__(self) -> SiteFarm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def address(n: int) -> str:
    """The n-th loopback address from 127.0.0.2 on (n = 0, 1, ...)."""
    n += 2
    return f"127.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"


def urlset(locs: Iterable[str], *, extras: str = "") -> bytes:
    """A urlset of `locs`, each with lastmod, changefreq and priority."""
    parts = [
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        ' xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"'
        ' xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"'
        ' xmlns:video="http://www.google.com/schemas/sitemap-video/1.1"'
        ' xmlns:xhtml="http://www.w3.org/1999/xhtml">\n'
    ]
    for loc in locs:
        parts.append(
            f"<url><loc>{escape(loc)}</loc><lastmod>2024-05-01T10:00:00+02:00</lastmod>"
            "<changefreq>daily</changefreq><priority>0.5</priority></url>\n"
        )
    parts.append(extras)
    parts.append("</urlset>\n")
    return "".join(parts).encode()


def index(locs: Iterable[str]) -> bytes:
    items = "".join(f"<sitemap><loc>{escape(loc)}</loc></sitemap>\n" for loc in locs)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{items}</sitemapindex>\n'
    ).encode()


def gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)
