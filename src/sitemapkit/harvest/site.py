"""One site of a harvest: robots.txt, discovery, every sitemap tree read with the reader, caps, rows."""

from __future__ import annotations

import asyncio
import time
import traceback
from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sitemapkit.core.dates import format_w3c
from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.urls import url_key
from sitemapkit.harvest.rows import COUNTED
from sitemapkit.reader.discover import WELL_KNOWN_PATHS, discover, robots_url
from sitemapkit.reader.export import chunks
from sitemapkit.reader.fetch import Fetcher, FetchOptions, trust_in_this_task
from sitemapkit.reader.walk import AsyncReader, SitemapNode

if TYPE_CHECKING:
    from sitemapkit.harvest.options import HarvestOptions
    from sitemapkit.harvest.store import PartWriter
    from sitemapkit.reader.download import Download

STAT_KEYS = ("urls", *COUNTED)


class Counters:
    """Live totals of one worker, for progress."""

    def __init__(self) -> None:
        self.sites_done = 0
        self.urls = 0
        self.errors = 0
        self.site_errors = 0

    def as_dict(self) -> dict[str, int]:
        return dict(vars(self))


async def _cancel(task: asyncio.Task[None], patience: float = 10.0) -> None:
    """Cancel `task` and wait for it to end, cancelling again while it does not (for `patience` s)."""
    deadline = time.monotonic() + patience
    while not task.done() and time.monotonic() < deadline:
        task.cancel()
        await asyncio.wait({task}, timeout=0.5)
    if task.done() and not task.cancelled():
        task.exception()  # retrieved: a failure while being cancelled is of no interest


def _error_code(node: SitemapNode, reported: str | None) -> str | None:
    """The class of what went wrong with `node`, if anything: the code the reader reported for it, or
    for a child it did not follow, why. A node the reader could not read whole (`truncated`) has the code
    of an error reported for it (a body cut off or damaged: `parse-error`, `compression-error`, ...);
    one the harvest itself stopped reading (a cap, the site's timeout) has none."""
    if node.error is None:
        return reported if node.truncated else None
    if node.error.startswith("not followed"):  # refused when fetched (robots.txt, a blocked redirect ...),
        # with the code reported for it; or a child of an index not followed (the index's diagnostic)
        return reported or ("too-deep" if "max-depth" in node.error else "fetch-loop")
    return reported or "error"


class SiteJob:
    """Reads one site into `writer`; `run()` returns its manifest record (its row, sitemaps and counts)."""

    def __init__(
        self,
        site: str,
        options: HarvestOptions,
        fetch_options: FetchOptions,
        fetcher: Fetcher,
        writer: PartWriter,
        counters: Counters,
    ) -> None:
        self.site = site
        self.options = options
        # the site is the origin the user named (a private address is fine there with the policy's
        # leave); what its robots.txt names is read with the site's policy (`ReadOptions.user_named`)
        self.fetch_options = replace(fetch_options, policy=fetch_options.policy.trusting(site))
        self.fetcher = fetcher
        self.writer = writer
        self.counters = counters
        self.row: dict[str, Any] = {"site": site, "sitemaps_found": 0, "sitemaps_read": 0, "urls": 0}
        self.stats: Counter[str] = Counter()
        self.kinds: Counter[str] = Counter()
        self.codes: Counter[str] = Counter()
        self.warnings: Counter[str] = Counter()
        self.errors = 0
        self.sitemaps: list[dict[str, Any]] = []
        self._code_of: dict[str, str] = {}
        self._seen: set[str] = set()
        self._reader: AsyncReader | None = None
        self._parent: str | None = None
        self._seconds: dict[int, float] = {}
        self._taken: dict[int, int] = {}  # URLs taken from a sitemap a cap cut off, by id of its node
        self._sitemaps_with_urls = 0
        self._truncated = False
        self._abandoned = False

    # -- the record ---------------------------------------------------------------------------------

    async def run(self) -> dict[str, Any]:
        started = time.monotonic()
        # The site runs in its own task, watched from here: a cancellation swallowed somewhere below
        # (libraries do) can delay the site's end, never hold this caller past the timeout.
        inner = asyncio.create_task(self._run())
        try:
            await asyncio.wait({inner}, timeout=self.options.site_timeout)
            if not inner.done():
                await _cancel(inner)
                self._abandoned = True  # should it still run: it writes no more rows
                self._fail(
                    "site-timeout", f"took longer than {self.options.site_timeout:g} s; what was read is kept"
                )
                self._truncated = True
            else:
                inner.result()
        except asyncio.CancelledError:
            inner.cancel()  # the worker is stopping: the site stays unfinished
            self._abandoned = True
            raise
        except OSError:
            raise  # the dataset cannot be written: stop the harvest
        except Exception as exc:  # a bug must cost one site, not the harvest
            detail = "".join(traceback.format_exception_only(exc)).strip()
            self._fail("internal-error", f"sitemapkit failed on this site: {detail}")
            self._truncated = True
        self._collect()
        self.row.update(
            urls=self.stats["urls"],
            errors=self.errors,
            truncated=self._truncated,
            seconds=round(time.monotonic() - started, 3),
        )
        self.counters.sites_done += 1
        if self.row.get("error_code"):
            self.counters.site_errors += 1
        return {
            "site": self.site,
            "row": self.row,
            "sitemaps": self.sitemaps,
            "stats": {
                **{k: self.stats[k] for k in STAT_KEYS},
                "kinds": dict(self.kinds),
                "codes": dict(self.codes),
                "warnings": dict(self.warnings),
            },
        }

    def _fail(self, code: str, message: str) -> None:
        if not self.row.get("error_code"):
            self.row["error_code"] = code
            self.row["error"] = message

    def _diagnostic(self, d: Diagnostic) -> None:
        if not d.is_error:
            self.warnings[d.code] += 1
            return
        self.errors += 1
        self.counters.errors += 1
        self.codes[d.code] += 1
        if d.source and len(self._code_of) < 100_000:
            self._code_of.setdefault(d.source, d.code)

    # -- robots.txt, discovery, the trees -----------------------------------------------------------

    async def _run(self) -> None:
        robots = robots_url(self.site)
        fetcher = self.fetcher
        trust_in_this_task(self.site)  # the worker's shared fetcher trusts this site in this task only
        # robots.txt comes from the worker's one politeness layer (fetched once, cached), which also
        # paces every request to the host by its Crawl-delay and refuses what robots.txt disallows
        rules = await fetcher.robots(self.site)
        self.row["robots_status"] = None if rules.error is not None else rules.status
        if rules.error is not None:
            self.row["robots_error"] = rules.error
            self._fail("unreachable", f"robots.txt could not be fetched: {rules.error}")
            return
        if rules.unavailable:
            self._fail(
                "robots-unavailable",
                f"robots.txt answered HTTP {rules.status} (after retries): nothing is read, as RFC 9309 "
                "asks for 5xx",
            )
            return
        delay = fetcher.politeness.delay(self.site)
        if rules.crawl_delay() is not None:
            self.row["crawl_delay"] = delay
        if not rules.allowed(self.site):
            self._fail("robots-disallowed", f"robots.txt disallows {self.site} for {rules.agent}")
            return
        found = await discover(self.site, fetcher, on_diagnostic=self._diagnostic, well_known=())
        if not found.sitemaps:
            for path in WELL_KNOWN_PATHS:
                if not rules.allowed(self.site.rstrip("/") + path):
                    continue
                found = await discover(self.site, fetcher, well_known=(path,), keep=8)
                if found.sitemaps:
                    break
        self.row["via"] = found.via
        self.row["sitemaps_found"] = len(found.sitemaps)
        self._parent = robots if found.via == "robots" else None
        if not found.sitemaps:
            self._fail("no-sitemap", "robots.txt names no sitemap and no well-known path answered with one")
            return
        cap = self.options.max_sitemaps_per_site
        tried = 0
        probe = found.probe  # a well-known sitemap found, still downloading: read on from there
        try:
            for root in found.sitemaps:
                if self._stopped():
                    break
                if url_key(root) in self._seen:
                    continue
                tried += 1  # each sitemap asked for counts against the cap, whatever it answers
                if cap is not None and tried > cap:
                    self._cap(f"more than {cap:,} sitemaps with URLs")
                    break
                given, probe = (probe, None) if probe is not None and probe.url == root else (None, probe)
                await self._walk(root, given)
        finally:
            if probe is not None:
                await probe.cancel()

    def _stopped(self) -> bool:
        cap = self.options.max_urls_per_site
        return self._truncated or (cap is not None and self.stats["urls"] >= cap)

    async def _walk(self, root: str, probe: Download | None = None) -> None:
        options = self.options
        read = options.read_options()
        if self._parent is not None:  # named by robots.txt: a URL the site chose
            read = replace(read, user_named=False)
        reader = self._reader = AsyncReader(
            root, read, on_diagnostic=self._diagnostic, fetch_options=self.fetch_options, probe=probe
        )
        stats = self.stats
        max_urls = options.max_urls_per_site
        room = max_urls - stats["urls"] if max_urls is not None else -1
        max_sitemaps = options.max_sitemaps_per_site
        current: SitemapNode | None = None
        first = 0
        since = time.monotonic()
        # The reader's batches go to the writer whole (each is of one sitemap: the reader's `current`);
        # the writer takes them apart a column at a time and counts what they hold.
        n = 0
        counts = [0] * len(COUNTED)
        try:
            async with reader:
                stop = False
                async for items in reader.batches(runs=True):  # runs: columns, no object per URL
                    for batch in chunks(items, size=len(items)):  # each run, and the entries between
                        node = reader.current
                        if node is not current:
                            now = time.monotonic()
                            if current is not None:
                                self._seconds[id(current)] = now - since
                            current, since, first = node, now, n
                            self._sitemaps_with_urls += 1
                            if max_sitemaps is not None and self._sitemaps_with_urls > max_sitemaps:
                                self._cap(f"more than {max_sitemaps:,} sitemaps with URLs")
                                self._taken[id(node)] = 0
                                stop = True
                                break
                        capped = 0 <= room < n + len(batch)
                        if capped:
                            batch = batch[: room - n]
                        if batch:
                            if self._abandoned:
                                stop = True
                                break
                            for i, count in enumerate(self.writer.add_batch(self.site, batch)):
                                counts[i] += count
                            n += len(batch)
                            self.counters.urls += len(batch)
                        if capped:
                            self._cap(f"more than {max_urls:,} URLs")
                            if current is not None:  # the row says how many URLs were taken, not read ahead
                                self._taken[id(current)] = n - first
                            stop = True
                            break
                        del batch
                    if stop:
                        break
                    del items  # (else held, with the text of its runs, while the next is awaited)
                if current is not None:
                    self._seconds.setdefault(id(current), time.monotonic() - since)
        finally:
            stats.update(urls=n, **dict(zip(COUNTED, counts, strict=True)))
        self._collect()

    def _cap(self, what: str) -> None:
        self._truncated = True
        self.row.setdefault("cap", what)

    # -- the sitemaps table -------------------------------------------------------------------------

    def _collect(self) -> None:
        """The sitemap rows of the tree just read (or cut short).

        A sitemap the reader could not read whole because its body was cut off or damaged (it is
        `truncated` and an error was reported for it: a cut mid-tag, a corrupt or cut gzip stream, a parse
        error that stopped the reading, a broken connection, the download cap) gets that error's code and
        message, and counts in `sitemaps_cut_short`, not in `sitemaps_read`: the URLs before the damage
        are kept, but it was not read fine.
        """
        reader, self._reader = self._reader, None
        if reader is None or reader.tree is None:
            return
        # why each cut-short sitemap stopped: a transport failure said first, else the last parse error
        # (the reader keeps its first 10,000 diagnostics; past them, the code alone is known)
        causes: dict[str, tuple[int, str, str]] = {}  # source -> (rank, code, message)
        if any(node.truncated and node.error is None for node in reader.tree.walk()):
            rank = {"http-error": 0, "read-error": 0, "download-too-large": 1, "compression-error": 2}
            for d in reader.diagnostics:
                if d.is_error and d.source and (d.code in rank or d.code == "parse-error"):
                    found = (rank.get(d.code, 3), d.code, d.message)
                    known = causes.get(d.source)
                    if known is None or found[0] < known[0] or (found[0] == 3 == known[0]):
                        causes[d.source] = found
        stack: list[tuple[SitemapNode, str | None]] = [(reader.tree, self._parent)]
        while stack:
            node, parent = stack.pop()
            for key in (url_key(node.url), url_key(node.final_url) if node.final_url else None):
                if key:
                    self._seen.add(key)
            code = _error_code(node, self._code_of.get(node.url))
            error = node.error
            if node.truncated and error is None:
                cause = causes.get(node.url) or (causes.get(node.final_url) if node.final_url else None)
                if cause is not None:  # read in part: say why it stopped
                    code, error = cause[1], f"[{cause[1]}] {cause[2]}"
                elif code is not None and id(node) not in self._taken and not self._truncated:
                    error = (
                        f"[{code}] reading stopped before the end; the complete entries before it were kept"
                    )
                elif id(node) in self._taken or self._truncated:
                    code = None  # the harvest's own cap or timeout stopped it: the site row says which
            self.sitemaps.append(self._sitemap_row(node, parent, code, error))
            if node.read_ok:
                if error is None:
                    self.row["sitemaps_read"] += 1
                else:
                    self.row["sitemaps_cut_short"] = self.row.get("sitemaps_cut_short", 0) + 1
                self.kinds[node.kind or "?"] += 1
                if node.compressed:
                    self.kinds["gzip"] += 1
            stack.extend((child, node.url) for child in reversed(node.children))

    def _sitemap_row(
        self, node: SitemapNode, parent: str | None, code: str | None, error: str | None
    ) -> dict[str, Any]:
        seconds = self._seconds.get(id(node))
        return {
            "site": self.site,
            "url": node.url,
            "parent": parent,
            "depth": node.depth,
            "kind": node.kind,
            "status": node.status,
            "bytes": node.bytes,
            "uncompressed_bytes": node.uncompressed_bytes,
            "compressed": node.compressed,
            "urls": self._taken.get(id(node), node.url_count),
            "lastmod": node.lastmod_text
            if node.lastmod_text is not None or node.lastmod is None
            else format_w3c(node.lastmod),  # as the index wrote it
            "final_url": node.final_url,
            "truncated": node.truncated,
            "read_seconds": round(seconds, 4) if seconds is not None else None,
            "error_code": code,
            "error": error,
        }
