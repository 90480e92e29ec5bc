"""The crawl loop: workers take queued URLs from the frontier, fetch them politely over the one HTTP stack
(`sitemapkit.reader.fetch`), read each HTML page once (`sitemapkit.core.page`) and record what became of
it; the links found are queued in the frontier."""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections import deque
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from sitemapkit.core.constants import MAX_URL_LENGTH
from sitemapkit.core.dates import format_w3c
from sitemapkit.core.diagnostics import Diagnostic, DiagnosticHandler, Severity
from sitemapkit.core.errors import InvalidUrlError
from sitemapkit.core.model import Lastmod
from sitemapkit.core.page import (
    Note,
    PageError,
    alternates_of,
    hash_tree,
    images_of,
    links_of,
    parse_html,
    read_head,
    resolve_link,
    text_digest,
)
from sitemapkit.core.urls import Scope, normalize_url, url_key
from sitemapkit.crawl.frontier import Frontier, Outcome, Queued
from sitemapkit.crawl.judge import (
    PageMemory,
    header_signals,
    indexability,
    read_signals,
    says_not_found,
    text_of,
)
from sitemapkit.crawl.options import NetworkOptions
from sitemapkit.crawl.policy import (
    CrawlRules,
    path_problem,
)
from sitemapkit.reader.discover import discover
from sitemapkit.reader.fetch import (
    Fetcher,
    FetchError,
    FetchOptions,
    FetchPolicy,
    FetchRefusedError,
    FetchResponse,
)
from sitemapkit.reader.polite import Politeness, RobotsStore, agent_token, origin_of

if TYPE_CHECKING:
    from sitemapkit.crawl.render import Renderer

SEED_PATHS = ("/sitemap.xml", "/sitemap_index.xml")
"""Where sitemaps are looked for when robots.txt names none."""


@dataclass(frozen=True)
class CrawlOptions:
    """How to crawl: what to fetch (`rules`), how (`network`), and what to keep of each page."""

    start_url: str
    rules: CrawlRules
    network: NetworkOptions = field(default_factory=NetworkOptions)
    """Requests in flight and rate per host, User-Agent, timeout, retries, private addresses."""
    max_pages: int | None = None
    max_page_bytes: int = 10 * 1024 * 1024
    sitemaps: bool = True
    """Seed the crawl with the URLs of the site's existing sitemaps."""
    images: bool = False
    hashes: bool = False
    """Record each listed page's content hash (for `--state`)."""
    render: bool = False
    """Run each page's JavaScript in headless Chromium before reading it (`sitemapkit.crawl.render`)."""

    def politeness(self, store: RobotsStore | None = None) -> Politeness:
        """The crawl's politeness layer: robots.txt for the User-Agent (kept in `store`), the rate, the
        `Crawl-delay`, `Retry-After`, `concurrency` requests in flight per host."""
        net = self.network
        return Politeness(user_agent=net.user_agent, rate=net.rate, per_host=net.concurrency, store=store)

    def fetch_options(self, politeness: Politeness | None = None) -> FetchOptions:
        """The HTTP options of every request the crawl makes (pages, robots.txt, sitemaps), through
        `politeness` (the run's one layer; a new one when None)."""
        net = self.network
        return FetchOptions(
            user_agent=net.user_agent,
            read_timeout=net.timeout,
            connect_timeout=net.connect_timeout,
            max_download=self.max_page_bytes,
            max_decoded=self.max_page_bytes,
            max_duration=max(60.0, net.timeout * 4),
            retries=net.retries,
            per_host=net.concurrency,
            politeness=politeness or self.politeness(),
            max_connections=max(16, net.concurrency * 4),
            # the start URL is the origin the user named: a site on a private address may be crawled
            policy=FetchPolicy(allow_private=net.allow_private).trusting(self.start_url),
        )


@dataclass
class CrawlProgress:
    """The live counts: pages fetched, URLs queued, pages listed, URLs left out, errors."""

    fetched: int = 0
    queued: int = 0
    listed: int = 0
    excluded: int = 0
    errors: int = 0
    started: float = field(default_factory=time.monotonic)
    fetched_before: int = 0

    @property
    def rate(self) -> float:
        """Pages fetched a second in this run."""
        elapsed = time.monotonic() - self.started
        return (self.fetched - self.fetched_before) / elapsed if elapsed > 0 else 0.0


def make_fetcher(options: CrawlOptions, politeness: Politeness | None = None) -> Fetcher:
    """The crawl's HTTP client: built here only, so that fetch policies apply to every request it makes."""
    return Fetcher(options.fetch_options(politeness))


class Crawler:
    """Runs one crawl into `frontier`. Use `await crawler.run()`."""

    def __init__(
        self,
        options: CrawlOptions,
        frontier: Frontier,
        *,
        on_diagnostic: DiagnosticHandler | None = None,
        on_progress: Callable[[CrawlProgress], None] | None = None,
    ) -> None:
        self.options = options
        self.rules = options.rules
        self.frontier = frontier
        self.report = on_diagnostic or (lambda d: None)
        self.on_progress = on_progress
        self.agent = agent_token(options.network.user_agent)
        self.politeness = options.politeness(store=frontier)
        """The run's one politeness layer: every request goes through it (robots.txt, pacing, retries)."""
        self.progress = CrawlProgress()
        self._fetching: set[str] = set()
        """URLs being fetched now (pages and redirect targets): a second redirect to one waits for none."""
        self._warned: set[str] = set()
        self._buffer: deque[Queued] = deque()
        self._inflight = 0
        self._wake = asyncio.Event()
        self._recent: set[str] = set()
        self._claimed = False
        self.renderer: Renderer | None = None
        self._last_progress = 0.0
        self.complete = False

    async def run(self) -> None:
        f = self.frontier
        p = self.progress
        p.fetched = p.fetched_before = f.fetched()
        p.listed = f.count("listed = 1")
        p.excluded = f.count("state = 1 AND reason IS NOT NULL")
        p.errors = f.count("reason = 'error'")
        p.queued = f.count("state = 0")
        async with AsyncExitStack() as stack:
            self.fetcher = await stack.enter_async_context(make_fetcher(self.options, self.politeness))
            if self.options.render:
                from sitemapkit.crawl.render import Renderer

                renderer = Renderer(
                    self.options.network.concurrency,
                    self.options.network.timeout,
                    self.options.network.user_agent,
                    policy=self.fetcher.policy,
                    allowed=self._robots_allow,
                )
                self.renderer = await stack.enter_async_context(renderer)
            if f.meta("seeded") is None:
                await self._seed()
                f.set_meta("seeded", "1")
                f.commit()
            workers = max(
                1, min(64, self.options.network.concurrency * (1 + len(self.rules.scope.allow_hosts)))
            )
            await asyncio.gather(*(self._worker() for _ in range(workers)))
        if self._max_pages_reached():
            f.leave_queued("max-pages", f"--max-pages {self.options.max_pages} reached")
        f.set_meta("complete", "1")
        f.commit()
        self.complete = True
        self._tick(force=True)

    # -- seeds ------------------------------------------------------------------------------------------

    async def _seed(self) -> None:
        start = self.rules.clean(normalize_url(self.options.start_url))
        self._enqueue([start], 0, None, 0)
        if not self.options.sitemaps:
            return
        # the one discovery (robots.txt's Sitemap: lines, else the first well-known path that is one); a
        # well-known sitemap found stays downloading in `found.probe`, read on from there, not fetched again
        found = await discover(start, self.fetcher, on_diagnostic=self.report, well_known=SEED_PATHS, keep=8)
        urls = found.sitemaps
        probe = found.probe
        from sitemapkit.reader.walk import AsyncReader, ReadOptions

        # URLs the site chose: read with the site's policy (not trusted as the start URL is), through the
        # crawl's politeness layer, so their robots.txt, Crawl-delay and Retry-After hold as for pages
        net = self.options.network
        read = ReadOptions(user_named=False, user_agent=net.user_agent, retries=net.retries)
        try:
            for sitemap in urls:
                batch: list[str] = []
                given, probe = (probe, None) if probe is not None and probe.url == sitemap else (None, probe)
                reader = AsyncReader(
                    sitemap, read, on_diagnostic=self.report, fetch_options=self.fetcher.options, probe=given
                )
                async with reader:
                    async for entry in reader:
                        batch.append(self.rules.clean(url_key(entry.loc)))  # `/a#x` is `/a`
                        if len(batch) >= 500:
                            self._enqueue(batch, 0, sitemap, 0)
                            batch = []
                self._enqueue(batch, 0, sitemap, 0)
        finally:
            if probe is not None:  # found but not read (not expected: it is the one sitemap found)
                await probe.cancel()

    # -- the queue --------------------------------------------------------------------------------------

    def _enqueue(self, urls: list[str], depth: int, found_on: str | None, parent_chain: int) -> None:
        """Queue the URLs not seen before, or record why they are not to be fetched."""
        rows = []
        recent = self._recent
        for url in urls:
            if url in recent:
                continue
            if len(recent) > 50_000:
                recent.clear()
            recent.add(url)
            chain = self.rules.chain(url, found_on, parent_chain)
            verdict = self.rules.judge(url, depth, chain)
            if verdict is None:
                rows.append((url, depth, chain, found_on))
            elif self.frontier.add_decided(url, depth, found_on, *verdict):
                self.progress.excluded += 1
        if rows:
            self.frontier.add(rows)

    def _max_pages_reached(self) -> bool:
        m = self.options.max_pages
        return m is not None and self.progress.fetched + self._inflight >= m

    async def _next(self) -> Queued | None:
        while True:
            if self._max_pages_reached():
                return None
            if not self._buffer:
                self._buffer.extend(self.frontier.take(256))
            if self._buffer:
                return self._buffer.popleft()
            if self._inflight == 0:
                self._wake.set()  # the others are done too
                return None
            self._wake.clear()
            await self._wake.wait()

    async def _worker(self) -> None:
        while (item := await self._next()) is not None:
            self._inflight += 1
            try:
                await self._visit(item)
            finally:
                self._inflight -= 1
                self._wake.set()

    def _tick(self, force: bool = False) -> None:
        if self.on_progress is None:
            return
        now = time.monotonic()
        if force or now - self._last_progress >= 0.2:
            self._last_progress = now
            self.progress.queued = self.frontier.count("state = 0")
            self.on_progress(self.progress)

    def _warn(self, url: str, message: str) -> None:
        self.report(Diagnostic.make("http-error", message, url=url, severity=Severity.WARNING))

    # -- one URL ----------------------------------------------------------------------------------------

    async def _visit(self, item: Queued) -> None:
        url = item.url
        if self._claimed and self.frontier.decided(url):
            return  # a redirect reached it while it waited in the buffer
        reached: list[str] = [url]
        self._fetching.add(url)
        started = time.monotonic()
        try:
            async with self.fetcher.stream(url, follow=partial(self._follow, item, reached)) as response:
                await self._answer(item, response, started)
        except FetchRefusedError as exc:
            self._refused(item, exc, started)
        except FetchError as exc:
            self._failed(url, exc, started)
        finally:
            self._fetching.difference_update(reached)

    def _follow(self, item: Queued, reached: list[str], target: str) -> str | None:
        """Whether the redirect of `item` to `target` is followed: not when the target is out of the crawl's
        scope (recorded so), nor when it is fetched or being fetched already (no page twice)."""
        try:
            final = self.rules.clean(normalize_url(target))
        except InvalidUrlError:
            return None  # the fetcher judges it
        if final in reached:
            return None
        verdict = self.rules.judge(final, item.depth, 0)
        if verdict is not None:
            self.frontier.add_decided(final, item.depth, item.url, *verdict)
            return f"not followed ({verdict[0]}: {verdict[1]})"
        if final in self._fetching or self.frontier.decided(final):
            return "fetched already in this crawl; not fetched again"
        reached.append(final)
        self._fetching.add(final)
        return None

    def _refused(self, item: Queued, exc: FetchRefusedError, started: float) -> None:
        """Record why a request of `item` was not made: robots.txt (for the URL, or a redirect hop), or a
        redirect chain that ended (a target out of scope, fetched already, not http(s), refused)."""
        url = item.url
        if exc.code == "robots-disallowed":
            rules = self.politeness.known(origin_of(url))
            if rules is not None and rules.unavailable and (origin := origin_of(url)) not in self._warned:
                self._warned.add(origin)
                self._warn(origin + "/robots.txt", f"{rules.why_not(url)}: nothing on {origin} is crawled")
            self._decide(url, Outcome(reason="robots", detail=exc.reason))
            return
        elapsed = int((time.monotonic() - started) * 1000)
        if exc.code == "redirect-blocked" and exc.target is not None:
            self.frontier.add_decided(exc.target, item.depth, url, "robots", exc.reason)
            self._decide(url, Outcome(reason="redirect-blocked", detail=exc.reason, elapsed_ms=elapsed))
            return
        if exc.url != url or exc.target is not None or exc.code.startswith("redirect"):
            self._decide(url, Outcome(reason="redirect", detail=exc.reason, elapsed_ms=elapsed))
            return
        self._failed(url, exc, started)

    def _failed(self, url: str, exc: FetchError, started: float) -> None:
        # a redirect loop, or a hop the fetch policy refused (its URL is the hop's, not this one)
        hop = exc.url != url
        redirect = hop or "redirect" in exc.reason
        elapsed = int((time.monotonic() - started) * 1000)
        detail = f"redirects to {exc.url}: {exc.reason}" if hop else exc.reason
        outcome = Outcome(reason="redirect" if redirect else "error", detail=detail, elapsed_ms=elapsed)
        self._decide(url, outcome)

    def _decide(self, url: str, outcome: Outcome) -> None:
        self.frontier.decide(url, outcome)
        self.frontier.commit()
        p = self.progress
        if outcome.elapsed_ms is not None:
            p.fetched += 1
        if outcome.listed:
            p.listed += 1
        else:
            p.excluded += 1
            if outcome.reason == "error":
                p.errors += 1
        self._tick()

    async def _answer(self, item: Queued, response: FetchResponse, started: float) -> None:
        url = item.url
        try:
            final = self.rules.clean(normalize_url(response.final_url))
        except InvalidUrlError:
            final = response.final_url
        ctype = response.headers.get("content-type", "").split(";", 1)[0].strip().lower() or None
        if response.redirects and final != url:
            elapsed = int((time.monotonic() - started) * 1000)
            hops = " -> ".join(f"{h.status} {h.url}" for h in response.redirects)
            self.frontier.decide(
                url,
                Outcome(
                    status=response.redirects[0].status,
                    final_url=final,
                    content_type=ctype,
                    reason="redirect",
                    detail=f"{hops} -> {final}",
                    elapsed_ms=elapsed,
                ),
            )
            self.progress.fetched += 1
            self.progress.excluded += 1
            verdict = self.rules.judge(final, item.depth, 0)
            if verdict is not None:
                self.frontier.add_decided(final, item.depth, url, *verdict)
                self.frontier.commit()
                return
            self._claimed = True
            if not self.frontier.claim(final, item.depth, url):
                self.frontier.commit()  # the target was fetched before: nothing more to record
                return
            outcome, links = await self._read(final, response, ctype, started)
            outcome.elapsed_ms = None  # fetched through the redirect, counted once
            self._enqueue(links, item.depth + 1, final, item.chain)
            self._decide(final, outcome)
            return
        outcome, links = await self._read(url, response, ctype, started)
        self._enqueue(links, item.depth + 1, url, item.chain)
        self._decide(url, outcome)

    async def _read(
        self, url: str, response: FetchResponse, ctype: str | None, started: float
    ) -> tuple[Outcome, list[str]]:
        """The outcome for the page `url` answered with `response`, and the links to follow."""
        out = Outcome(status=response.status, final_url=url, content_type=ctype)
        verdict = indexability(url, response.status, ctype, None)  # as the audit judges it
        if verdict is not None:
            out.reason, out.detail = verdict
            out.elapsed_ms = int((time.monotonic() - started) * 1000)
            return out, []
        try:
            body, truncated = await response.read(self.options.max_page_bytes)
        except FetchError as exc:
            out.reason, out.detail = "error", exc.reason
            out.elapsed_ms = int((time.monotonic() - started) * 1000)
            return out, []
        out.elapsed_ms = int((time.monotonic() - started) * 1000)
        if truncated:
            out.reason, out.detail = "error", f"larger than {self.options.max_page_bytes:,} bytes"
            return out, []
        extra: list[str] = []
        if self.renderer is not None:
            from sitemapkit.crawl.render import RenderError

            try:
                rendered = await self.renderer.render(
                    url, body, response.headers.get("content-type", "text/html")
                )
            except RenderError as exc:
                out.reason, out.detail = "error", str(exc)
                return out, []
            body = rendered.html
            extra = self._contained(url, rendered.blocked, rendered.navigations)
        try:
            links = self._analyse(url, body, response.headers, out)
        except PageError as exc:
            out.reason, out.detail = "error", str(exc)
            return out, []
        return out, links + extra

    _memory: PageMemory | None = None

    def pages(self) -> PageMemory:
        """What this crawl remembers of the pages it read: content digests (duplicates), sizes and the
        pages that say they are not there (soft 404s, decided at the end against the median size)."""
        if self._memory is None:
            self._memory = PageMemory()
        return self._memory

    def _analyse(self, url: str, body: bytes, headers: Any, out: Outcome) -> list[str]:
        """Fill `out` from the page (listed, or why not: `sitemapkit.crawl.judge`, as the audit judges) and
        return its links; raises `PageError`."""
        root, _ = parse_html(body)
        head = read_head(root)
        base = url
        if head.base:
            base = resolve_link(head.base, url) or url
        signals = header_signals(headers.get_list("x-robots-tag"), headers.get_list("link"), url, self.agent)
        read_signals(signals, root, head, base, self.agent)
        notes: list[Note] = []
        links = [] if signals.nofollow else links_of(root, base)
        if not signals.nofollow:
            self._too_long(root, base, url)
        alternates = alternates_of(head.alternates, base, notes)
        if not signals.nofollow:
            links.extend(u for _, u in alternates)
        if signals.canonical is not None:
            links.append(signals.canonical)
            signals.canonical = out.canonical = self.rules.clean(signals.canonical)
        if signals.refresh is not None:
            links.append(signals.refresh)
            signals.refresh = self.rules.clean(signals.refresh)
            if signals.refresh != url:
                self.rules.note_hop(signals.refresh)  # a refresh chain is one run for the trap guard
        verdict = indexability(url, out.status, out.content_type, signals)
        memory = self.pages()
        said = says_not_found(text_of(root.find(".//title")), text_of(root.find(".//h1")))
        first = memory.read(url, text_digest(root), len(body), said, listable=verdict is None)
        if first is not None:
            links = []  # a copy of a page already read: its links were followed there
            verdict = verdict or ("duplicate", f"the same content as {first}")
        if verdict is not None:
            out.reason, out.detail = verdict
        else:
            if head.modified is not None:  # the page's own date first, then the server's
                out.lastmod = head.modified
            else:
                served = http_date(headers.get("last-modified"))
                out.lastmod = format_w3c(served) if served is not None else None
            out.alternates = alternates
            if self.options.images:
                out.images = images_of(root, base, self.rules.scope, notes)
            if self.options.hashes:
                out.hash = hash_tree(root, (), ())
        for code, message, severity in notes:
            self.report(
                Diagnostic.make(code, message, url=url, severity=Severity(severity) if severity else None)
            )
        return self._clean_links(links, url)

    def _robots_allow(self, url: str) -> bool:
        """For the renderer: whether robots.txt, as far as this crawl has read it, lets `url` be fetched (an
        origin whose robots.txt the crawl has not read is allowed: its requests are not the crawl's pages)."""
        rules = self.politeness.known(origin_of(url))
        return rules is None or rules.allowed(url)

    def _contained(self, url: str, blocked: list[tuple[str, str]], navigations: list[str]) -> list[str]:
        """Report what the renderer refused for the page `url` (a diagnostic each, and a `render-blocked`
        record in the crawl log); the in-site navigations it aborted, cleaned, as links to crawl."""
        for target, why in blocked:
            code = "private-address" if "address" in why else "cross-host"
            self.report(
                Diagnostic.make(
                    code,
                    f"while rendering {url}: {target} was blocked ({why})",
                    url=url,
                    severity=Severity.WARNING,
                )
            )
            if target.startswith(("http://", "https://")) and target not in self.rules.scope:
                self.frontier.add_decided(target, 0, url, "render-blocked", why)
        return [self.rules.clean(n) for n in navigations]

    def _too_long(self, root: Any, base: str, page: str) -> None:
        """Record the links `links_of` leaves out for their length (a URL a sitemap could not list), so
        the crawl log says why they were not followed."""
        room = MAX_URL_LENGTH - len(base)
        for el in root.iter("a", "area"):
            href = el.get("href")
            if href is None or len(href) < room:
                continue
            joined = urljoin(base, href.strip()).split("#", 1)[0]
            if len(joined) >= MAX_URL_LENGTH and joined.startswith(("http://", "https://")):
                problem = path_problem(joined)
                if problem is not None and joined in self.rules.scope:
                    self.frontier.add_decided(joined, 0, page, *problem)

    def _clean_links(self, links: list[str], page: str) -> list[str]:
        """The links with the query-string rules applied; a link that loses tracking parameters (`utm_*`)
        is recorded as the same page as the plain URL, so that the crawl log has it."""
        out = []
        for link in links:
            clean = self.rules.clean(link)
            if clean != link and clean in self.rules.scope:
                self.frontier.add_decided(
                    link, 0, page, "canonical", f"the same page as {clean}: tracking parameters are dropped"
                )
            out.append(clean)
        return out


def http_date(value: str | None) -> Lastmod | None:
    """An HTTP date (`Last-Modified`, `Date`) as an aware datetime; None when absent, unusable or without a
    timezone."""
    if not value:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return when if when.tzinfo is not None else None


__all__ = ["CrawlOptions", "CrawlProgress", "Crawler", "Scope", "http_date", "make_fetcher"]
