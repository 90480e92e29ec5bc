"""Checking one URL at a time, politely, with the crawler's machinery: its HTTP client options
(`CrawlOptions.fetch_options`), robots.txt rules (`RobotsRules`), per-host pacing and `Retry-After`
(`Pacer`), and the page facts of `sitemapkit.core.page`. The audit checks every URL a sitemap lists with it.

One GET per URL: the headers decide, and the body is read only for an HTML page that answered 200 (its
robots meta, canonical, hreflang links, title and own modification date are needed). A HEAD first would
double the requests to every page, which is the opposite of polite.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

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
from sitemapkit.crawl.engine import CrawlOptions, http_date
from sitemapkit.crawl.judge import HTML_TYPES, Signals, header_signals, read_signals, text_of
from sitemapkit.reader.fetch import Fetcher, FetchError, FetchRefusedError, FetchResponse, Hop
from sitemapkit.reader.polite import agent_token, origin_of


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
    """Checks URLs through `fetcher` as the crawler would fetch them: every request through the run's
    politeness layer (robots.txt, `Crawl-delay` or `rate`, `Retry-After`, retries, each redirect hop).
    `follow(target)`, when given, says why a redirect target is not to be fetched (the audit: it is listed,
    so checked on its own, or fetched already). Use `await prober.check(url)`."""

    def __init__(
        self,
        options: CrawlOptions,
        fetcher: Fetcher,
        *,
        links: bool = False,
        follow: Callable[[str], str | None] | None = None,
    ) -> None:
        self.options = options
        self.fetcher = fetcher
        self.agent = agent_token(options.network.user_agent)
        self.keep_links = links
        self.follow = follow

    async def check(self, url: str) -> PageCheck:
        """Fetch `url` once (with retries) unless robots.txt disallows it; what it answered."""
        out = PageCheck(url)
        started = time.monotonic()
        try:
            async with self.fetcher.stream(url, follow=self.follow) as response:
                await self._answer(out, response)
        except FetchRefusedError as exc:
            self._refused(out, exc)
        except FetchError as exc:
            out.error = exc.reason
            out.redirects = exc.redirects
        out.elapsed_ms = int((time.monotonic() - started) * 1000)
        return out

    def _refused(self, out: PageCheck, exc: FetchRefusedError) -> None:
        if exc.code == "robots-disallowed":
            rules = self.fetcher.politeness.known(origin_of(out.url))
            if rules is not None and rules.error is not None:
                out.error = f"{origin_of(out.url)}/robots.txt could not be fetched ({rules.error})"
            else:
                out.blocked = exc.reason.removesuffix("; not fetched")
            return
        out.redirects = exc.redirects
        if not exc.redirects or exc.target is None:
            out.error = exc.reason
            return
        out.final_url = exc.target  # where the chain stopped: not fetched (the status is not known)
        if exc.code == "redirect-blocked":
            out.blocked = exc.reason
        elif exc.code != "redirect-seen":
            out.error = exc.reason

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
        out.last_modified = http_date(headers.get("last-modified"))
        out.date = http_date(headers.get("date"))
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
