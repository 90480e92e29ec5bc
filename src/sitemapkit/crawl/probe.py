"""Checking one URL at a time, politely, with the crawler's machinery: its HTTP client options
(`CrawlOptions.fetch_options`), robots.txt rules (`RobotsRules`), per-host pacing and `Retry-After`
(`Pacer`), and the page facts of `sitemapkit.core.page`. The audit checks every URL a sitemap lists with it.

One GET per URL: the headers decide, and the body is read only for an HTML page that answered 200 (its
robots meta, canonical, hreflang links, title and own modification date are needed). A HEAD first would
double the requests to every page, which is the opposite of polite.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from sitemapkit.core.constants import MAX_ROBOTS_BYTES
from sitemapkit.core.dates import parse_w3c
from sitemapkit.core.errors import InvalidUrlError
from sitemapkit.core.model import Lastmod
from sitemapkit.core.page import (
    PageError,
    alternates_of,
    links_of,
    parse_html,
    read_head,
    resolve_link,
)
from sitemapkit.core.urls import normalize_url
from sitemapkit.crawl.engine import CrawlOptions, _http_date
from sitemapkit.crawl.judge import HTML_TYPES, Signals, header_signals, read_signals, text_of
from sitemapkit.crawl.policy import Pacer, RobotsRules, agent_token, fetch_politely, origin_of
from sitemapkit.reader.fetch import Fetcher, FetchError, FetchResponse, Hop


@dataclass(slots=True)
class PageCheck:
    """What one URL answered: status, redirects, content type, and for an HTML page what it says of itself.

    `error` is set when no answer could be had (DNS, connection, timeout, redirect loop; or robots.txt
    itself could not be fetched); `blocked` when robots.txt disallows the URL. Either way nothing more was
    fetched."""

    url: str
    status: int | None = None
    final_url: str | None = None
    redirects: tuple[Hop, ...] = ()
    content_type: str | None = None
    error: str | None = None
    blocked: str | None = None
    """Why robots.txt keeps the URL from being fetched, when it does."""
    elapsed_ms: int | None = None
    body_bytes: int | None = None
    x_robots_tag: tuple[str, ...] = ()
    noindex: str | None = None
    """What says noindex (the header or the meta element), when something does."""
    canonical: str | None = None
    refresh: str | None = None
    title: str | None = None
    h1: str | None = None
    lastmod: Lastmod | None = None
    """The page's own modification date (JSON-LD `dateModified`, `article:modified_time`)."""
    last_modified: Lastmod | None = None
    """The `Last-Modified` header."""
    date: Lastmod | None = None
    """The `Date` header: the server's clock when it answered."""
    alternates: tuple[tuple[str, str], ...] = ()
    links: tuple[str, ...] = ()


class Prober:
    """Checks URLs through `fetcher` as the crawler would fetch them: robots.txt first (fetched once per
    origin), at most `options.rate` requests a second per host (or its `Crawl-delay`), `Retry-After`
    honoured on 429 and 5xx, `options.retries` further attempts. Use `await prober.check(url)`."""

    def __init__(self, options: CrawlOptions, fetcher: Fetcher, *, links: bool = False) -> None:
        self.options = options
        self.fetcher = fetcher
        self.agent = agent_token(options.user_agent)
        self.pacer = Pacer(options.rate)
        self.keep_links = links
        self._robots: dict[str, tuple[RobotsRules, str]] = {}
        self._unreachable: dict[str, str] = {}
        self._lock = asyncio.Lock()

    async def robots(self, origin: str) -> tuple[RobotsRules, str]:
        """The robots.txt rules of `origin` and its text (empty when missing or unreadable)."""
        if (known := self._robots.get(origin)) is not None:
            return known
        async with self._lock:
            if (known := self._robots.get(origin)) is not None:
                return known
            try:
                result = await self.fetcher.get(origin + "/robots.txt", limit=MAX_ROBOTS_BYTES)
                status, text = result.status, result.body.decode("utf-8", "replace") if result.ok else ""
            except FetchError as exc:
                status, text = 599, ""
                self._unreachable[origin] = exc.reason
            rules = RobotsRules(status, text, self.agent)
            self.pacer.set_delay(origin, rules.crawl_delay())
            self._robots[origin] = (rules, text)
            return rules, text

    async def check(self, url: str) -> PageCheck:
        """Fetch `url` once (with retries) unless robots.txt disallows it; what it answered."""
        out = PageCheck(url)
        origin = origin_of(url)
        rules, _ = await self.robots(origin)
        if origin in self._unreachable:
            out.error = f"{origin}/robots.txt could not be fetched ({self._unreachable[origin]})"
            return out
        if not rules.allowed(url):
            out.blocked = (
                f"{origin}/robots.txt answered {rules.status}: search engines fetch nothing from the host"
                if rules.status >= 500
                else f"{origin}/robots.txt disallows it for {self.agent}"
            )
            return out

        async def answer(response: FetchResponse, started: float) -> PageCheck:
            await self._answer(out, response)
            out.elapsed_ms = int((time.monotonic() - started) * 1000)
            return out

        def failed(exc: FetchError, started: float) -> PageCheck:
            out.error = exc.reason
            out.elapsed_ms = int((time.monotonic() - started) * 1000)
            return out

        return await fetch_politely(self.fetcher, self.pacer, url, self.options.retries, answer, failed)

    async def _answer(self, out: PageCheck, response: FetchResponse) -> None:
        headers = response.headers
        out.status = response.status
        out.redirects = response.redirects
        try:
            out.final_url = normalize_url(response.final_url)
        except InvalidUrlError:
            out.final_url = response.final_url
        out.content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower() or None
        out.x_robots_tag = tuple(headers.get_list("x-robots-tag"))
        out.last_modified = _http_date(headers.get("last-modified"))
        out.date = _http_date(headers.get("date"))
        url = out.final_url or out.url
        signals = header_signals(out.x_robots_tag, headers.get_list("link"), url, self.agent)
        out.noindex, out.canonical = signals.noindex, signals.canonical
        if response.status != 200 or out.content_type not in HTML_TYPES:
            return
        limit = self.options.max_page_bytes
        body, truncated = await response.read(limit)
        out.body_bytes = len(body)
        if truncated:
            out.error = f"the page is larger than {limit:,} bytes; it was not read"
            return
        try:
            page_facts(out, body, self.agent, links=self.keep_links, signals=signals)
        except PageError as exc:
            out.error = f"not readable HTML ({exc})"


def page_facts(
    out: PageCheck, body: bytes, agent: str, *, links: bool = False, signals: Signals | None = None
) -> None:
    """Fill `out` with what the HTML page `body` (fetched from `out.final_url`) says about itself, read as
    the crawler reads it (`sitemapkit.crawl.judge.read_signals`); `signals` are the response headers'
    (`header_signals`), when known."""
    root, _ = parse_html(body)
    head = read_head(root)
    url = out.final_url or out.url
    base = resolve_link(head.base, url) or url if head.base else url
    said = signals or Signals(noindex=out.noindex, canonical=out.canonical)
    read_signals(said, root, head, base, agent)
    out.noindex, out.canonical, out.refresh = said.noindex, said.canonical, said.refresh
    out.alternates = alternates_of(head.alternates, base, [])
    out.lastmod = parse_w3c(head.modified) if head.modified is not None else None
    out.title = text_of(root.find(".//title"))
    out.h1 = text_of(root.find(".//h1"))
    if links:
        out.links = tuple(links_of(root, base))


__all__ = ["PageCheck", "Prober", "page_facts"]
