"""`audit`: a site's sitemaps against the live site, as one function.

1. Discovery: robots.txt `Sitemap:` lines, else the well-known paths (`sitemap-not-in-robots`).
2. Every sitemap read once, through the validator (every `validate` code is a finding); the URL entries
   are collected on the way (`avalidate(on_entry=...)`).
3. Every listed URL (or a seeded sample, or the first `max_urls`) checked live by the crawler's
   `Prober`: robots.txt, per-host pacing, `Retry-After`, one GET, the page facts of `core/page.py`.
4. With `crawl`, the crawler's engine crawls from the home page: pages no sitemap lists, and listed
   pages no crawled page links to.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import random
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Unpack
from urllib.parse import urlsplit

from sitemapkit.audit.check import Listing, UrlRow, hreflang_mismatch, judge, median, soft_404
from sitemapkit.audit.findings import AUDIT_CODES, Finding, help_for, site_unreachable
from sitemapkit.audit.report import AuditReport, check_baseline, load_baseline, wilson
from sitemapkit.audit.scope import ScopeCheck, listed_by
from sitemapkit.core.dates import format_w3c
from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.errors import InvalidUrlError, UsageError
from sitemapkit.core.model import UrlEntry
from sitemapkit.core.runner import blocking_form
from sitemapkit.core.urls import Scope, normalize_url, url_key
from sitemapkit.crawl.engine import CrawlOptions, CrawlProgress, make_fetcher
from sitemapkit.crawl.frontier import Frontier
from sitemapkit.crawl.judge import SOFT_404_RATIO, is_soft_404
from sitemapkit.crawl.options import NetworkOptions, NetworkSettings, merged, no_more
from sitemapkit.crawl.policy import DEFAULT_MAX_PAGES, CrawlRules
from sitemapkit.crawl.probe import PageCheck, Prober
from sitemapkit.reader.discover import discover, sitemaps_in_robots
from sitemapkit.reader.download import Download

UNREACHABLE = 599
"""The status the prober records for a robots.txt that could not be fetched at all."""


@dataclass
class AuditProgress:
    """Live counts of the URL checks: done of total, and the rate."""

    done: int = 0
    total: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.done / elapsed if elapsed > 0 else 0.0

    @property
    def eta(self) -> float | None:
        """Seconds left at the current rate."""
        rate = self.rate
        return (self.total - self.done) / rate if rate > 0 else None


def _target(url: str) -> tuple[str, str | None]:
    """(site root, sitemap URL or None) of the SITE_OR_SITEMAP_URL argument."""
    try:
        norm = normalize_url(url)
    except InvalidUrlError as exc:
        raise UsageError(
            f"{url!r} is not a usable URL ({exc.reason}); give the site's URL (https://example.com/) or a "
            "sitemap URL"
        ) from None
    parts = urlsplit(norm)
    if parts.scheme not in ("http", "https"):
        raise UsageError(f"{url!r}: give the site's URL (https://example.com/) or a sitemap URL")
    root = f"{parts.scheme}://{parts.netloc}/"
    if parts.path in ("", "/") and not parts.query:
        return root, None
    return root, norm


async def aaudit(
    target: str,
    *,
    crawl: bool = False,
    max_pages: int | None = DEFAULT_MAX_PAGES,
    max_depth: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    max_urls: int | None = None,
    allow_hosts: Iterable[str] = (),
    network: NetworkOptions | None = None,
    now: dt.datetime | None = None,
    baseline: str | os.PathLike[str] | dict[str, Any] | None = None,
    crawl_db: str | os.PathLike[str] | None = None,
    on_progress: Callable[[AuditProgress], None] | None = None,
    on_crawl_progress: Callable[[CrawlProgress], None] | None = None,
    **settings: Unpack[NetworkSettings],
) -> AuditReport:
    """Audit the sitemaps of `target` (a site root, or one sitemap or index URL) against the live site.
    `audit` runs it to its end; `await aaudit(...)` inside a running event loop (cancelling the task stops
    the checks and the crawl: their workers are cancelled and awaited).

    Every sitemap of the tree is validated (each `validate` code is a finding) and every URL it lists is
    checked live: `url-redirect`, `url-error`, `url-unreachable`, `url-noindex`, `url-canonicalized`,
    `url-blocked`, `url-soft-404`, `url-not-html`, `lastmod-future`, `lastmod-stale`, `lastmod-ahead`,
    `url-in-several-sitemaps`, `hreflang-return-missing` (`sitemapkit.audit.findings.AUDIT_CODES`). Only
    `sample` URLs are checked when given (a uniform random sample, reproducible with `seed`; each finding's
    share gets a 95% confidence interval), at most `max_urls` otherwise. The sitemaps may list URLs on
    `allow_hosts` too.

    With `crawl`, the site is crawled from its home page (at most `max_pages` pages, as `crawl`'s
    `ScopeOptions.max_pages`, None or 0: no limit; `max_depth` links): `url-not-in-sitemap` and
    `url-orphan`, and the depth of each page. The crawl file is `crawl_db` (a temporary file by default).

    Polite as `crawl` is, with the same `network` group (`NetworkOptions`, each field also a keyword of its
    own: `audit(site, rate=2)`): robots.txt for `user_agent`, `concurrency` requests at a time per host, at
    most `rate` a second (or the `Crawl-delay`), `Retry-After` honoured, `retries` further attempts.
    `baseline` (a previous report's JSON, or its path) marks findings new or unchanged and lists the fixed
    ones. A bad argument raises `UsageError` before anything is fetched.
    """
    rest = dict(settings)
    net = merged(network, NetworkOptions, rest)
    no_more("audit", rest)
    root, sitemap = _target(target)
    if sample is not None and sample < 1:
        raise UsageError("sample must be at least 1")
    if max_urls is not None and max_urls < 1:
        raise UsageError("max_urls must be at least 1")
    if max_pages is not None and max_pages < 0:
        raise UsageError(f"max_pages must be 0 (no limit) or more (got {max_pages})")
    if max_depth is not None and max_depth < 0:
        raise UsageError(f"max_depth must be 0 or more (got {max_depth})")
    if isinstance(allow_hosts, str):
        raise UsageError(f"allow_hosts takes a list of hosts, not the string {allow_hosts!r}")
    hosts = tuple(h.strip() for h in allow_hosts if h.strip())
    try:
        scope = Scope(root, hosts)
    except InvalidUrlError as exc:
        raise UsageError(f"--allow-host: {exc}") from None
    previous: dict[str, Any] | None
    if baseline is not None and not isinstance(baseline, str | os.PathLike | dict):
        raise UsageError(
            f"baseline: a previous report's JSON (a dict) or its path, not {type(baseline).__name__}"
        )
    if isinstance(baseline, str | os.PathLike):
        baseline_path: str | None = os.fspath(baseline)
        previous = load_baseline(os.fspath(baseline))
    else:
        previous, baseline_path = baseline, None
    if previous is not None:  # a report of another site is refused before anything is fetched
        check_baseline(previous, target, baseline_path)
    options = CrawlOptions(
        root,
        CrawlRules(scope, max_depth=max_depth),
        network=net,
        max_pages=max_pages or None,
        sitemaps=False,
    )
    clock = now or dt.datetime.now(dt.UTC)
    report = AuditReport(target, format_w3c(clock.replace(microsecond=0)))
    run = _Run(options, report, hosts, clock, on_progress)
    await run.check(root, sitemap, sample, seed, max_urls)
    if crawl:
        await _coverage(options, report, run.listings, crawl_db, on_crawl_progress)
    report.sort()
    if previous is not None:
        report.compare(previous)
    return report


audit = blocking_form(aaudit)


class _Run:
    def __init__(
        self,
        options: CrawlOptions,
        report: AuditReport,
        hosts: tuple[str, ...],
        now: dt.datetime,
        on_progress: Callable[[AuditProgress], None] | None,
    ) -> None:
        self.options = options
        self.report = report
        self.hosts = hosts
        self.now = now
        self.on_progress = on_progress
        self.listings: dict[str, Listing] = {}
        self._fetched: set[str] = set()
        self.scope = ScopeCheck(options.start_url)

    def _entry(self, entry: UrlEntry) -> None:
        try:
            normalize_url(entry.loc)
        except InvalidUrlError:
            return
        url = url_key(entry.loc)  # the one identity: `/a` and `/a#x` are one URL, checked once
        listing = self.listings.get(url)
        if listing is None:
            listing = self.listings[url] = Listing(
                url, [], entry.lastmod, tuple((a.hreflang, a.href) for a in entry.alternates)
            )
            listing.media = bool(entry.images or entry.videos)
        listing.places.append((entry.sitemap or "", entry.line))

    def _follow(self, target: str) -> str | None:
        """Whether a listed URL's redirect to `target` is followed: not to a URL the sitemaps list (checked
        on its own) nor to one fetched already (no URL twice)."""
        key = url_key(target)
        if key in self.listings:
            return "listed in the sitemaps, so checked on its own"
        if key in self._fetched:
            return "fetched already in this audit"
        self._fetched.add(key)
        return None

    def _finding(self, d: Diagnostic) -> None:
        if not self.scope.take(d):  # url-not-allowed: one finding per file, after the walk
            self.report.findings.append(Finding.from_diagnostic(d))

    async def check(
        self, root: str, sitemap: str | None, sample: int | None, seed: int, max_urls: int | None
    ) -> None:
        from sitemapkit.validator.run import avalidate

        report = self.report
        # one politeness layer for the whole audit: robots.txt once per host, every request paced (the
        # sitemaps' too), Retry-After waited, each redirect hop judged
        async with make_fetcher(self.options) as fetcher:
            prober = Prober(self.options, fetcher, follow=self._follow)
            robots_url = root + "robots.txt"
            rules = await fetcher.robots(root)
            named = sitemaps_in_robots(rules.text, robots_url) if rules.status < 300 else []
            named_keys = {url_key(u) for u in named}
            via = "robots"
            unreachable: str | None = None
            probe: Download | None = None
            if rules.unavailable and rules.status != UNREACHABLE:  # 5xx or 429, after its retries
                unreachable = (
                    f"robots.txt answered HTTP {rules.status} (after retries): as RFC 9309 asks, nothing "
                    "on the site is fetched until it answers"
                )
            if sitemap is not None:
                sitemaps = [sitemap]
                via = "argument"
                if rules.status == UNREACHABLE:
                    unreachable = rules.error or "no answer"
            elif named:
                sitemaps = named
            elif unreachable is not None:
                sitemaps = []
            else:
                found = await discover(root, fetcher, keep=8)  # a well-known sitemap: read on from it
                probe = found.probe
                sitemaps, via = found.sitemaps, found.via or "well-known"
                unreachable = found.error
                if found.via == "robots":  # robots.txt answered this time
                    named, named_keys = sitemaps, {url_key(u) for u in sitemaps}
                for url in sitemaps if found.via == "well-known" else ():
                    report.findings.append(
                        Finding.make(
                            "sitemap-not-in-robots",
                            None,
                            f"Found at the well-known path {url}, but robots.txt names no sitemap.",
                            sitemap=url,
                            evidence={"robots_url": robots_url, "robots_status": rules.status},
                        )
                    )
            report.discovery = {
                "robots_url": robots_url,
                "robots_status": rules.status,
                "robots_sitemaps": named,
                "via": via if sitemaps else None,
                "sitemaps": sitemaps,
            }
            if unreachable is not None:
                report.discovery["robots_error"] = unreachable
                report.findings.append(site_unreachable(root, robots_url, unreachable, bool(sitemaps)))
            if not sitemaps:
                if unreachable is not None:
                    return
                report.findings.append(
                    Finding(
                        "no-sitemap",
                        help_for("no-sitemap").severity,
                        None,
                        f"No sitemap found for {root}: robots.txt names none and no well-known path answers "
                        "with one. Add a 'Sitemap:' line to robots.txt.",
                        sitemap=robots_url,
                    )
                )
                return

            fetch = fetcher.options  # the sitemaps are read through the same layer as the pages
            validation = await avalidate(
                sitemaps,
                allow_hosts=self.hosts,
                now=self.now,
                fetch_options=fetch,
                on_diagnostic=self._finding,
                on_entry=self._entry,
                user_named=sitemap is not None,  # robots.txt's Sitemap: lines are URLs the site chose
                probe=probe,
            )
            report.files = [f.to_dict() | {"urls": f.urls} for f in validation.files]
            submitted = set(named_keys)
            if sitemap is not None and unreachable is None and url_key(sitemap) not in named_keys:
                submitted |= await listed_by(named, fetch)  # the indexes robots.txt names, one level
                if url_key(sitemap) not in submitted:
                    report.findings.append(
                        Finding.make(
                            "sitemap-not-in-robots",
                            None,
                            f"robots.txt ({rules.status}) names neither {sitemap} in a Sitemap: line nor an "
                            "index that lists it.",
                            sitemap=sitemap,
                            evidence={"robots_url": robots_url, "named": named},
                        )
                    )
            report.findings.extend(self.scope.findings(report.files, submitted))
            report.notes.extend(validation.notes)
            report.listed = len(self.listings)
            self._several()
            chosen = self._choose(sample, seed, max_urls)
            await self._probe(prober, chosen)

    def _several(self) -> None:
        for listing in self.listings.values():
            files = list(dict.fromkeys(s for s, _ in listing.places))
            if len(files) > 1:
                self.report.findings.append(
                    Finding.make(
                        "url-in-several-sitemaps",
                        listing.url,
                        f"Listed in {len(files)} sitemaps: {', '.join(files[:5])}"
                        + (" …" if len(files) > 5 else ""),
                        sitemap=listing.sitemap,
                        line=listing.line,
                        evidence={"sitemaps": files},
                    )
                )

    def _choose(self, sample: int | None, seed: int, max_urls: int | None) -> list[Listing]:
        everything = list(self.listings.values())
        if sample is not None and sample < len(everything):
            picked = set(random.Random(seed).sample(range(len(everything)), sample))
            chosen = [listing for i, listing in enumerate(everything) if i in picked]
            self.report.sample = {"size": sample, "population": len(everything), "seed": seed}
        else:
            chosen = everything
        if max_urls is not None and max_urls < len(chosen):
            self.report.notes.append(
                f"Only the first {max_urls:,} of {len(chosen):,} listed URLs were checked (--max-urls)."
            )
            chosen = chosen[:max_urls]
        return chosen

    async def _probe(self, prober: Prober, chosen: list[Listing]) -> None:
        listed = set(self.listings)
        progress = AuditProgress(total=len(chosen))
        results: list[tuple[Listing, PageCheck] | None] = [None] * len(chosen)
        queue = iter(enumerate(chosen))
        last = 0.0

        async def worker() -> None:
            nonlocal last
            for i, listing in queue:
                results[i] = (listing, await prober.check(listing.url))
                progress.done += 1
                if self.on_progress is not None and (
                    progress.done == progress.total or time.monotonic() - last >= 0.2
                ):
                    last = time.monotonic()
                    self.on_progress(progress)

        workers = max(1, min(64, self.options.network.concurrency * (1 + len(self.hosts))))
        await asyncio.gather(*(worker() for _ in range(workers)))
        rows: list[UrlRow] = []
        checks: dict[str, PageCheck] = {}
        for item in results:
            assert item is not None
            listing, check = item
            row, found = judge(listing, check, listed, self.now)
            rows.append(row)
            self.report.findings.extend(found)
            if row.indexability in ("indexable", "canonicalized", "noindex"):
                checks[listing.url] = check
        self.report.rows = rows
        self._soft_404(checks)
        self._hreflang(checks)
        by_url: dict[str, list[str]] = {}
        for f in self.report.findings:
            if f.url is not None:
                by_url.setdefault(f.url, []).append(f.code)
        for row in rows:
            row.codes = sorted(set(by_url.get(row.url, ())))
        if self.report.sample is not None:
            self._shares(rows)

    def _soft_404(self, checks: dict[str, PageCheck]) -> None:
        sizes = [c.body_bytes for c in checks.values() if c.body_bytes is not None]
        middle = median(sizes)
        rows = {r.url: r for r in self.report.rows}
        for url, check in checks.items():
            said = soft_404(check)
            if not is_soft_404(said, check.body_bytes, middle, len(sizes)):  # as the crawl judges it
                continue
            small = check.body_bytes is not None and check.body_bytes < middle * SOFT_404_RATIO
            listing = self.listings[url]
            self.report.findings.append(
                Finding.make(
                    "url-soft-404",
                    url,
                    f"Answers 200 but says {said!r}"
                    + (
                        f" and is {check.body_bytes:,} bytes against a median of {middle:,.0f}"
                        if small
                        else ""
                    )
                    + ".",
                    sitemap=listing.sitemap,
                    line=listing.line,
                    status=check.status,
                    evidence={"text": said, "bytes": check.body_bytes, "median_bytes": middle},
                )
            )
            rows[url].indexability = (
                "soft-404" if rows[url].indexability == "indexable" else rows[url].indexability
            )

    def _hreflang(self, checks: dict[str, PageCheck]) -> None:
        """A page names alternate B (on the page or in its sitemap entry); B was checked and names
        alternates of its own, but not the page."""

        def named(url: str) -> set[str] | None:
            out: set[str] = set()
            listing = self.listings.get(url)
            if listing is not None:
                out.update(u for _, u in listing.alternates)
            check = checks.get(url)
            if check is not None:
                out.update(u for _, u in check.alternates)
            return out

        for url, check in checks.items():
            listing = self.listings[url]
            if (mismatch := hreflang_mismatch(listing, check)) is not None:
                self.report.findings.append(mismatch)
            mine = {u: h for h, u in listing.alternates} | {u: h for h, u in check.alternates}
            for other, hreflang in mine.items():
                if other == url or other not in checks:
                    continue
                back = named(other)
                if back and url not in back:
                    self.report.findings.append(
                        Finding.make(
                            "hreflang-return-missing",
                            url,
                            f"Names {other} as its {hreflang!r} alternate, but that page does not name it "
                            "back.",
                            sitemap=listing.sitemap,
                            line=listing.line,
                            status=check.status,
                            evidence={
                                "alternate": other,
                                "hreflang": hreflang,
                                "alternate_names": sorted(back or ()),
                            },
                        )
                    )

    def _shares(self, rows: list[UrlRow]) -> None:
        assert self.report.sample is not None
        n = len(rows)
        population = self.report.sample["population"]
        counts: dict[str, int] = {}
        for row in rows:
            for code in row.codes:
                if help_for(code).checked:  # the others are counted over the whole tree, exactly
                    counts[code] = counts.get(code, 0) + 1
        shares = {}
        for code, k in sorted(counts.items(), key=lambda kv: -kv[1]):
            low, high = wilson(k, n)
            shares[code] = {
                "count": k,
                "share": k / n,
                "low": low,
                "high": high,
                "estimate": round(k / n * population),
                "estimate_low": round(low * population),
                "estimate_high": round(high * population),
            }
        self.report.sample.update(checked=n, shares=shares)


async def _coverage(
    options: CrawlOptions,
    report: AuditReport,
    listings: dict[str, Listing],
    crawl_db: str | os.PathLike[str] | None,
    on_progress: Callable[[CrawlProgress], None] | None,
) -> None:
    """Crawl from the home page with the crawler's engine: pages no sitemap lists, listed pages nothing
    links to, and each page's depth."""
    from sitemapkit.crawl.engine import Crawler

    with tempfile.TemporaryDirectory(prefix="sitemapkit-audit-") as tmp:
        path = Path(crawl_db) if crawl_db is not None else Path(tmp) / "crawl.db"
        frontier = Frontier(path, "audit " + options.start_url, fresh=True)
        try:
            crawler = Crawler(options, frontier, on_progress=on_progress)
            await crawler.run()
            rows = {row.url: row for row in frontier.rows()}
            capped = frontier.count("reason = 'max-pages'") > 0
        finally:
            frontier.close()
    linked = set(rows)
    for row in report.rows:
        found = rows.get(row.url)
        if found is not None:
            row.depth = found.depth
    not_listed = 0
    for url, crawled in rows.items():
        if crawled.reason is None and not crawled.queued and crawled.status == 200 and url not in listings:
            not_listed += 1
            depth = crawled.depth
            report.findings.append(
                Finding.make(
                    "url-not-in-sitemap",
                    url,
                    f"An indexable page found {depth} link{'s' if depth != 1 else ''} from the home "
                    "page that no sitemap lists.",
                    status=crawled.status,
                    evidence={"depth": depth, "found_on": crawled.found_on},
                )
            )
    orphans = 0
    for r in report.rows:
        if r.indexability == "indexable" and r.url not in linked:
            orphans += 1
            report.findings.append(
                Finding.make(
                    "url-orphan",
                    r.url,
                    "No page the crawl reached links to this listed page"
                    + (
                        " (the crawl stopped at --max-pages, so it may be linked further on)."
                        if capped
                        else "."
                    ),
                    sitemap=r.sitemap,
                    line=r.line,
                    status=r.status,
                    evidence={"crawl_complete": not capped},
                )
            )
            r.codes = sorted({*r.codes, "url-orphan"})
    depths: dict[str, int] = {}
    for crawled in rows.values():
        if crawled.reason is None and not crawled.queued:
            depths[str(crawled.depth)] = depths.get(str(crawled.depth), 0) + 1
    report.coverage = {
        "crawled": sum(1 for r in rows.values() if r.status is not None),
        "indexable": sum(1 for r in rows.values() if r.reason is None and not r.queued),
        "not_in_sitemap": not_listed,
        "orphans": orphans,
        "complete": not capped,
        "depths": dict(sorted(depths.items(), key=lambda kv: int(kv[0]))),
    }


__all__ = ["AUDIT_CODES", "AuditProgress", "aaudit", "audit"]
