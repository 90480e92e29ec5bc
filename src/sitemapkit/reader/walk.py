"""Reading any site's sitemaps: the walk over a sitemap tree, and the public `read` / `aread` API.

The walk is depth-first in index order, so its output is deterministic. The sitemap being read (the
*head*) streams straight into the parser as bytes arrive; the next few sitemaps of the same walk are
downloaded ahead into small bounded buffers and parsed only when their turn comes. Memory therefore
depends on the concurrency and the buffer size, never on the number of URLs.

Prefetches never hold every connection slot of a host: at most `concurrency - 1` of them are live, so
the head can always get a slot, and a full buffer cannot stall the walk.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import sys
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from typing import Any, Final, Literal, cast, overload

from sitemapkit.core.dates import format_w3c
from sitemapkit.core.diagnostics import Diagnostic, DiagnosticHandler, DiagnosticLog
from sitemapkit.core.errors import UsageError
from sitemapkit.core.model import IndexEntry, Lastmod, UrlEntry
from sitemapkit.core.urls import url_key
from sitemapkit.reader.discover import Source, classify, discover
from sitemapkit.reader.download import Download
from sitemapkit.reader.fetch import (
    CHUNK_SIZE,
    ContentDecodingError,
    DownloadTooLargeError,
    Fetcher,
    FetchError,
    FetchOptions,
    FetchRefusedError,
    FetchResponse,
)
from sitemapkit.reader.parser import SitemapParser
from sitemapkit.reader.polite import Politeness, origin_of
from sitemapkit.reader.runs import UrlRun

DEFAULT_MAX_DEPTH: Final = 5
DEFAULT_CONCURRENCY: Final = 4
DEFAULT_MAX_BYTES: Final = 100 * 1024 * 1024
DEFAULT_MAX_CHILDREN: Final = 50_000
"""Children of one index taken into the walk (the protocol's limit); the rest are counted, not followed."""
DEFAULT_MAX_SITEMAPS: Final = 50_000
"""Sitemaps one walk records in its tree (followed or not); past it children are counted, not followed."""
FILE_CHUNK: Final = 64 * 1024
SITEMAP_KINDS: Final = frozenset({"urlset", "sitemapindex", "text", "rss", "atom"})
_URL_KINDS: Final = frozenset({"urlset", "text", "rss", "atom"})


Batch = list[UrlEntry | UrlRun]
"""Entries of one sitemap, in order; a `UrlRun` only where the walk was asked for runs."""


def _size(batch: Batch) -> int:
    """How many entries `batch` holds (a run counts its entries)."""
    return sum(len(item) if isinstance(item, UrlRun) else 1 for item in batch)


_CUT_SHORT: Final = frozenset({"parse-error", "compression-error"})
"""What the parser says about a body that ends early: not reported again after `download-too-large`."""


@dataclass(eq=False, slots=True)
class SitemapNode:
    """One sitemap of the tree a walk went through, filled in as it is read.

    `kind` is the parser's (`urlset`, `sitemapindex`, `text`, `rss`, `atom`), or `robots` / `site` for
    the root of a discovered site, or None when the document was not read or not a sitemap (see `error`).
    `bytes` counts what was downloaded (compressed, if it was); `lastmod` is what the parent index said.
    """

    url: str
    kind: str | None = None
    status: int | None = None
    url_count: int = 0
    bytes: int = 0
    lastmod: Lastmod | None = None
    children: list[SitemapNode] = field(default_factory=list)
    error: str | None = None
    depth: int = 0
    final_url: str | None = None
    """Where redirects ended, when they did."""
    redirects: tuple[str, ...] = ()
    """The URLs that answered with a redirect, in order."""
    compressed: bool = False
    uncompressed_bytes: int = 0
    truncated: bool = False
    """Reading stopped early (a cap, a broken connection, a cut-off file); complete entries were kept."""
    lastmod_text: str | None = None  # `lastmod` as the parent index wrote it (`IndexEntry.lastmod_text`)

    @property
    def read_ok(self) -> bool:
        """Whether this document was read and recognised as a sitemap (possibly with problems)."""
        return self.kind in SITEMAP_KINDS

    def walk(self) -> Iterator[SitemapNode]:
        """This node and all below it, depth-first in index order."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def to_dict(self) -> dict[str, Any]:
        """The node without its children, as JSON-ready values."""
        return {
            "url": self.url,
            "kind": self.kind,
            "status": self.status,
            "url_count": self.url_count,
            "bytes": self.bytes,
            "lastmod": format_w3c(self.lastmod) if self.lastmod is not None else None,
            "depth": self.depth,
            "children": len(self.children),
            "error": self.error,
            "final_url": self.final_url,
            "compressed": self.compressed,
            "uncompressed_bytes": self.uncompressed_bytes,
            "truncated": self.truncated,
        }


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """Options of a walk; `read` and `aread` take them as keyword arguments."""

    max_depth: int = DEFAULT_MAX_DEPTH
    """How many index levels below the first sitemap are followed (0: only the first)."""
    concurrency: int = DEFAULT_CONCURRENCY
    """Simultaneous downloads per host (the sitemap being read plus those fetched ahead)."""
    max_download: int = DEFAULT_MAX_BYTES
    """Most bytes downloaded for one sitemap; reading stops there, keeping complete entries."""
    max_uncompressed: int = DEFAULT_MAX_BYTES
    """Most bytes one sitemap may decompress to."""
    timeout: float | None = None
    """Sets both the connect and the read timeout, in seconds."""
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    user_agent: str | None = None
    retries: int = 3
    prefetch_buffer: int = 4 * 1024 * 1024
    """Bytes held, at most, for each sitemap fetched ahead of its turn."""
    max_duration: float | None = None
    """Longest one request may take in all, connect to last byte (None: `FetchOptions.max_duration`)."""
    max_children: int = DEFAULT_MAX_CHILDREN
    """Children of one index taken into the walk; the rest are counted and reported, not followed."""
    max_sitemaps: int = DEFAULT_MAX_SITEMAPS
    """Sitemaps one walk records (followed or not); past it children are counted, not followed."""
    allow_private: bool = False
    """Fetch loopback, private, link-local and reserved addresses on any origin (see `FetchPolicy`)."""
    follow_cross_host: bool = False
    """Follow index children and redirects that leave the site."""
    fetch_missing: bool = False
    """For a local index: fetch the children not found next to it (see `reader.local.local_child`);
    by default they are reported (`read-error`) and skipped."""
    user_named: bool = True
    """The source is one the user named: its origin is trusted by the fetch policy (a private address is
    fine there) and exempt from robots.txt. False for a URL a site chose (a robots.txt `Sitemap:` line, a
    link): it gets the site's policy like every other URL."""

    def fetch_options(self, base: FetchOptions | None = None) -> FetchOptions:
        """The `FetchOptions` these options imply, over `base` (whose other settings are kept)."""
        if self.concurrency < 1:
            raise UsageError("concurrency must be at least 1")
        if self.max_depth < 0:
            raise UsageError("max_depth must be 0 or more")
        if self.max_children < 0 or self.max_sitemaps < 1:
            raise UsageError("max_children must be 0 or more and max_sitemaps 1 or more")
        base = base or FetchOptions()
        connect = self.timeout if self.timeout is not None else self.connect_timeout
        read = self.timeout if self.timeout is not None else self.read_timeout
        policy = replace(
            base.policy,
            allow_private=base.policy.allow_private or self.allow_private,
            follow_cross_host=base.policy.follow_cross_host or self.follow_cross_host,
        )
        return replace(
            base,
            user_agent=self.user_agent or base.user_agent,
            connect_timeout=connect,
            read_timeout=read,
            max_download=self.max_download,
            max_decoded=self.max_uncompressed,
            max_duration=self.max_duration if self.max_duration is not None else base.max_duration,
            retries=self.retries,
            per_host=self.concurrency,
            max_connections=max(base.max_connections, self.concurrency),
            policy=policy,
        )


@dataclass(eq=False, slots=True)
class _Item:
    """A sitemap waiting for (or having) its turn in the walk."""

    node: SitemapNode
    ancestors: frozenset[str] = frozenset()
    """Every URL of the index chain above (including redirect hops), for loop detection."""
    parent_is_index: bool = False
    local: bool = False
    download: Download | None = None
    path: str | None = None
    """Where a local index's child is read from (the node keeps its URL)."""


class _Walk:
    """The walk itself, as an async generator of entry batches; state is readable while it runs."""

    def __init__(self, source: Source, options: ReadOptions, log: DiagnosticLog, fetch: FetchOptions) -> None:
        self.source = source
        self.options = options
        self.log = log
        fetch = options.fetch_options(fetch)
        named = source.kind in ("sitemap", "site") and options.user_named
        if named:  # the origin the user named
            fetch = replace(fetch, policy=fetch.policy.trusting(source.location))
        if fetch.politeness is None:  # a walk of its own: robots.txt for the hosts the site chose
            exempt = frozenset({origin_of(source.location)}) if named else frozenset()
            fetch = replace(
                fetch,
                politeness=Politeness(
                    user_agent=fetch.user_agent,
                    robots_exempt=exempt,
                    per_host=fetch.per_host,
                    clock=fetch.monotonic,
                    sleep=fetch.sleep,
                ),
            )
        self.fetch_options = fetch
        self.policy = fetch.policy
        self._recorded = 0
        """Nodes in the tree (bounded by `max_sitemaps`)."""
        self.root: SitemapNode | None = None
        self.current: SitemapNode | None = None
        self.count = 0
        self._pending: deque[_Item] = deque()
        self._visited: set[str] = set()
        self._live: dict[str, int] = {}
        self._live_total = 0
        self._buffer_pieces = max(2, options.prefetch_buffer // CHUNK_SIZE)
        self.runs = False
        """Hand plain entries on as `UrlRun`s (see `SitemapParser`); set before the walk starts."""
        self._size: Callable[[Batch], int] = len

    def _report(self, code: str, message: str, source: str) -> None:
        self.log.add(Diagnostic.make(code, message, source=source))

    async def batches(self) -> AsyncGenerator[Batch, None]:
        size = self._size = _size if self.runs else len
        async with Fetcher(self.fetch_options) as fetcher:
            try:
                await self._plan(fetcher)
                while self._pending:
                    item = self._pending.popleft()
                    if item.download is not None:
                        self._unlive(item.node.url)
                    self._prefetch(fetcher)
                    self.current = item.node
                    # closed at once when the consumer stops, so the node is filled in and the
                    # download cancelled now, not whenever the generator is collected
                    async with contextlib.aclosing(self._read(item, fetcher)) as reading:
                        async for batch in reading:
                            self.count += size(batch)
                            yield batch
                self.current = None
            finally:
                for item in self._pending:
                    if item.download is not None:
                        await item.download.cancel()

    # -- planning the first sitemaps ------------------------------------------------------------

    async def _plan(self, fetcher: Fetcher) -> None:
        src = self.source
        self._recorded = 1  # the root
        if src.kind in ("file", "stdin"):
            self.root = SitemapNode(_shown(src.location))
            self._pending.append(_Item(self.root, local=True, path=src.location))
            return
        if src.kind == "sitemap":
            self.root = SitemapNode(src.location)
            self._visited.add(url_key(src.location))
            self._pending.append(_Item(self.root))
            return
        found = await discover(src.location, fetcher, on_diagnostic=self.log.add)
        if found.via == "well-known":
            self.root = SitemapNode(src.location, kind="site")
        else:
            self.root = SitemapNode(
                found.robots_url, kind="robots", status=found.robots_status, bytes=found.robots_bytes
            )
        if not found.sitemaps:
            robots = (
                f"robots.txt could not be fetched ({found.error})"
                if found.error
                else f"robots.txt (HTTP {found.robots_status}) names no sitemap"
            )
            self.root.error = f"no sitemap found: {robots}, and no well-known path answered with one"
            self._report("no-sitemap", self.root.error, src.location)
            return
        for url in found.sitemaps[: self.options.max_sitemaps - 1]:
            self._recorded += 1
            node = SitemapNode(url)
            self.root.children.append(node)
            self._visited.add(url_key(url))
            self._pending.append(_Item(node))

    # -- fetching ahead ---------------------------------------------------------------------------

    def _prefetch(self, fetcher: Fetcher) -> None:
        per_host = self.options.concurrency - 1
        total = self.fetch_options.max_connections - 1
        if per_host < 1:
            return
        for item in itertools.islice(self._pending, per_host * 2):
            if self._live_total >= total:
                return
            if item.local or item.download is not None:
                continue
            host = origin_of(item.node.url)
            if self._live.get(host, 0) >= per_host:
                continue
            self._live[host] = self._live.get(host, 0) + 1
            self._live_total += 1
            item.download = Download(fetcher, item.node.url, self._buffer_pieces)

    def _unlive(self, url: str) -> None:
        host = origin_of(url)
        self._live[host] -= 1
        self._live_total -= 1

    # -- reading one sitemap ----------------------------------------------------------------------

    async def _read(self, item: _Item, fetcher: Fetcher) -> AsyncGenerator[Batch, None]:
        node = item.node
        if item.local:
            path = item.path or node.url
            pieces = self._file_pieces(node, path)
            async with contextlib.aclosing(self._parse(item, pieces, _shown(path))) as parsing:
                async for batch in parsing:
                    yield batch
            return
        download = item.download or Download(fetcher, node.url, self._buffer_pieces)
        try:
            try:
                response = await download.response()
            except FetchRefusedError as exc:
                node.error = f"not followed: {exc.reason}"
                self._report(exc.code, exc.reason, node.url)
                return
            except FetchError as exc:
                node.error = exc.reason
                self._report("http-error", f"could not fetch: {exc.reason}", node.url)
                return
            node.status = response.status
            if response.redirects:
                node.redirects = tuple(hop.url for hop in response.redirects)
                node.final_url = response.final_url
            if not self._check_redirects(item, response):
                return
            if not response.ok:
                node.error = f"HTTP {response.status}"
                tries = f" (after {response.attempts} attempts)" if response.attempts > 1 else ""
                self._report(
                    "http-error", f"HTTP {response.status} {_reason(response.status)}{tries}", node.url
                )
                return
            async with contextlib.aclosing(
                self._parse(item, download.pieces(), node.url, response)
            ) as parsing:
                async for batch in parsing:
                    yield batch
        finally:
            await download.cancel()

    def _check_redirects(self, item: _Item, response: FetchResponse) -> bool:
        """Record where redirects led; refuse (fetch-loop) one to an ancestor or to a sitemap seen before."""
        node = item.node
        own = url_key(node.url)
        landed = [hop.url for hop in response.redirects[1:]] + [response.final_url]
        for url in landed:
            key = url_key(url)
            if key == own:
                continue
            if key in item.ancestors:
                message = f"redirects to {url}, an index above it; not followed"
            elif key in self._visited:
                message = f"redirects to {url}, which is read elsewhere in this walk; not followed again"
            else:
                continue
            node.error = f"not followed: {message}"
            self._report("fetch-loop", message, node.url)
            return False
        self._visited.update(url_key(url) for url in landed)
        return True

    async def _file_pieces(self, node: SitemapNode, path: str) -> AsyncIterator[bytes]:
        if path == "-":
            stream = sys.stdin.buffer
            while piece := stream.read(FILE_CHUNK):
                node.bytes += len(piece)
                yield piece
            return
        with open(path, "rb") as f:
            while piece := f.read(FILE_CHUNK):
                node.bytes += len(piece)
                yield piece

    async def _parse(
        self,
        item: _Item,
        pieces: AsyncIterator[bytes],
        source: str,
        response: FetchResponse | None = None,
    ) -> AsyncGenerator[Batch, None]:
        node = item.node
        size = self._size
        first_error: list[str] = []
        capped: list[bool] = []  # set once the download cap cut the body off

        def on_diagnostic(d: Diagnostic) -> None:
            if capped and d.code in _CUT_SHORT:
                return  # the end of a body the cap cut off: download-too-large already says so
            if d.is_error and not first_error:
                first_error.append(f"[{d.code}] {d.message}")
            self.log.add(d)

        parser = SitemapParser(
            source,
            on_diagnostic=on_diagnostic,
            max_uncompressed=self.options.max_uncompressed,
            runs=self.runs,
        )
        children = self._plan_children(item)
        finished = False  # read to its end (or to an error that ends it), not left by the consumer
        try:
            try:
                async for piece in pieces:
                    for out in parser.feed_pieces(piece):
                        if out:
                            batch = self._route(out, parser.kind, children)
                            if batch:
                                node.url_count += size(batch)
                                yield batch
                    if response is not None:
                        node.bytes = response.raw_bytes
            except DownloadTooLargeError:
                node.truncated = True
                capped.append(True)
                self._report(
                    "download-too-large",
                    f"more than {self.options.max_download:,} bytes; reading stopped, complete entries kept",
                    source,
                )
            except ContentDecodingError as exc:
                node.truncated = True
                self._report("compression-error", exc.reason, source)
            except FetchError as exc:
                node.truncated = True
                self._report("http-error", exc.reason, source)
            except OSError as exc:
                node.error = f"cannot read: {exc.strerror or exc}"
                self._report("read-error", node.error, source)
                parser.ok = False
                return
            out = parser.close()
            if out:
                batch = self._route(out, parser.kind, children)
                if batch:
                    node.url_count += size(batch)
                    yield batch
            finished = True
        finally:
            # What is known of the document, whether it was read to its end or not: a consumer that
            # stopped early (a cap of its own, an error) leaves it truncated.
            if not finished and node.error is None:
                node.truncated = True
            node.kind = parser.kind if parser.ok else None
            node.compressed = parser.compressed
            node.uncompressed_bytes = parser.uncompressed_bytes
            node.truncated = node.truncated or parser.truncated
            if response is not None:
                node.bytes = response.raw_bytes
        if node.kind is None and node.error is None:
            node.error = first_error[0] if first_error else "not a sitemap"
        if node.kind == "sitemapindex":
            if item.parent_is_index:
                self._report("nested-index", "a sitemap index listed by another sitemap index", source)
            self._schedule(children)

    def _route(self, out: list[UrlEntry | IndexEntry], kind: str | None, children: _Plan) -> Batch:
        if kind in _URL_KINDS:
            return out  # type: ignore[return-value]  # only an index yields IndexEntry
        batch: Batch = []
        for entry in out:
            if isinstance(entry, IndexEntry):
                self._take(children, entry)
            else:
                batch.append(entry)
        return batch

    def _plan_children(self, item: _Item) -> _Plan:
        node = item.node
        own = {url_key(u) for u in (node.url, *node.redirects, node.final_url) if u}
        return _Plan(item, own, item.ancestors | own)

    def _take(self, plan: _Plan, entry: IndexEntry) -> None:
        """Record one child of an index in the tree and queue it, unless a bound, a loop, the depth or
        the fetch policy says no (each reported)."""
        plan.listed += 1
        if plan.listed > self.options.max_children:
            plan.over_index += 1
            return
        if self._recorded >= self.options.max_sitemaps:
            plan.over_walk += 1
            return
        self._recorded += 1
        item = plan.item
        node = item.node
        depth = node.depth + 1
        url = entry.loc
        child = SitemapNode(url, lastmod=entry.lastmod, depth=depth, lastmod_text=entry.lastmod_text)
        node.children.append(child)
        key = url_key(url)
        if key in plan.own:
            reason = "the index lists itself"
        elif key in plan.lineage:
            reason = "the index lists an index above it"
        elif key in self._visited:
            reason = "already listed elsewhere in this walk"
        elif not item.local and (cross := self.policy.cross_host_reason(node.url, url, "lists")) is not None:
            child.error = f"not followed: {cross}"
            self._report("cross-host", cross, node.url)
            return
        elif depth > self.options.max_depth:
            child.error = f"not followed: deeper than --max-depth {self.options.max_depth}"
            self._report(
                "too-deep",
                f"{url} is at index depth {depth}, deeper than the maximum {self.options.max_depth}; "
                "not followed",
                node.url,
            )
            return
        else:
            self._visited.add(key)
            plan.queued.extend(self._child_item(item, child, plan.lineage))
            return
        child.error = f"not followed: {reason}"
        self._report("fetch-loop", f"{reason}: {url}; not followed", node.url)

    def _schedule(self, plan: _Plan) -> None:
        """Queue an index's children at the front of the walk, in index order; report what a bound left."""
        source = plan.item.node.url
        if plan.over_index:
            self._report(
                "walk-limit",
                f"{plan.over_index:,} more children past the first {self.options.max_children:,} of this "
                "index were not followed (--max-children)",
                source,
            )
        if plan.over_walk:
            self._report(
                "walk-limit",
                f"{plan.over_walk:,} children were not followed: the walk already holds "
                f"{self.options.max_sitemaps:,} sitemaps (--max-sitemaps)",
                source,
            )
        self._pending.extendleft(reversed(plan.queued))

    def _child_item(self, parent: _Item, child: SitemapNode, lineage: frozenset[str]) -> list[_Item]:
        """How a child is read: a local index's from the file next to it, else (for a remote index, or with
        `fetch_missing`) from its URL; a local index's child not found is reported and skipped."""
        if not parent.local or parent.node.url == "-":
            return [_Item(child, lineage, parent_is_index=True)]
        from sitemapkit.reader.local import local_child

        found = local_child(parent.path or parent.node.url, child.url)
        if found is not None:
            return [_Item(child, lineage, parent_is_index=True, local=True, path=str(found))]
        if self.options.fetch_missing:
            return [_Item(child, lineage, parent_is_index=True)]
        child.error = "not found next to the index; not fetched"
        self._report(
            "read-error",
            f"{child.url} is not next to the index (looked for its URL path in the index's folder); "
            "not fetched (pass --fetch-missing to fetch it)",
            parent.path or parent.node.url,
        )
        return []


@dataclass(eq=False, slots=True)
class _Plan:
    """The children of one index as they are parsed: what is queued, what a bound left out."""

    item: _Item
    own: set[str]
    lineage: frozenset[str]
    queued: list[_Item] = field(default_factory=list)
    listed: int = 0
    over_index: int = 0
    over_walk: int = 0


def _shown(path: str) -> str:
    """A file path as text any output can hold (the entries' `sitemap`, the tree): bytes of its name that
    are not UTF-8, which `os.fsdecode` keeps as lone surrogates, shown as U+FFFD."""
    try:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a surrogate that stands for no byte
        return path.encode("utf-8", "replace").decode("utf-8")


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _shutdown(loop: asyncio.AbstractEventLoop, batches: AsyncGenerator[Batch, None]) -> None:
    """Cancel what still runs (downloads ahead, a step cut short by Ctrl-C); close the walk and the loop."""
    try:
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        if tasks:
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        with contextlib.suppress(RuntimeError):
            loop.run_until_complete(batches.aclose())
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()


class _ReaderBase:
    def __init__(
        self,
        source: str | os.PathLike[str],
        options: ReadOptions,
        on_diagnostic: DiagnosticHandler | None,
        fetch_options: FetchOptions | None,
    ) -> None:
        self.source = os.fspath(source)
        self.diagnostics = DiagnosticLog(on_diagnostic)
        """Every problem found so far (the log keeps the first 10,000; its counts are exact)."""
        self._walk = _Walk(classify(self.source), options, self.diagnostics, fetch_options or FetchOptions())
        self._started = False

    def _start(self) -> None:
        if self._started:
            raise RuntimeError("a Reader can be iterated only once; call read() again")
        self._started = True

    @property
    def tree(self) -> SitemapNode | None:
        """The root of the sitemap tree (filled in as the walk goes; complete once it has ended)."""
        return self._walk.root

    @property
    def sitemaps(self) -> list[SitemapNode]:
        """Every node of the tree, depth-first in index order."""
        return list(self._walk.root.walk()) if self._walk.root is not None else []

    @property
    def current(self) -> SitemapNode | None:
        """The sitemap being read right now."""
        return self._walk.current

    @property
    def count(self) -> int:
        """URL entries produced so far."""
        return self._walk.count

    @property
    def any_read(self) -> bool:
        """Whether at least one sitemap was fetched and recognised (the walk found something)."""
        return any(node.read_ok for node in self.sitemaps)


class Reader(_ReaderBase):
    """The URL entries of a file, a sitemap URL or a site, read as a stream: iterate it (once).

    Nested indexes are followed; every problem becomes a `Diagnostic` in `diagnostics` (and goes to
    `on_diagnostic`); `tree` tells what was read. Must not be iterated inside a running event loop
    (use `aread` there).
    """

    def __init__(
        self,
        source: str | os.PathLike[str],
        options: ReadOptions | None = None,
        *,
        on_diagnostic: DiagnosticHandler | None = None,
        fetch_options: FetchOptions | None = None,
    ) -> None:
        super().__init__(source, options or ReadOptions(), on_diagnostic, fetch_options)
        self._iterator: Generator[Any, None, None] | None = None

    def __iter__(self) -> Iterator[UrlEntry]:
        return cast("Iterator[UrlEntry]", self._iterate(runs=False))

    def runs(self) -> Iterator[UrlEntry | UrlRun]:
        """Instead of iterating the reader: the same entries, but each stretch of plain `<url>` elements
        that the parser read on its fast path comes as one `UrlRun` (their columns), for a consumer that
        formats many entries at a time (`write_jsonl`, `write_csv` and `write_parquet` take these)."""
        return self._iterate(runs=True)

    def _iterate(self, runs: bool) -> Iterator[UrlEntry | UrlRun]:
        if self._iterator is None:
            self._start()
            self._walk.runs = runs
            self._iterator = iterator = self._entries()
            return iterator
        if self._walk.runs != runs:
            raise RuntimeError("this Reader is read one way: either iterate it, or call runs(), not both")
        return self._iterator

    def _entries(self) -> Generator[UrlEntry | UrlRun, None, None]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise UsageError("read() cannot be iterated inside a running event loop; use aread() there")
        loop = asyncio.new_event_loop()
        batches = self._walk.batches()
        try:
            while True:
                try:
                    batch = loop.run_until_complete(anext(batches))
                except StopAsyncIteration:
                    return
                yield from batch
        finally:
            _shutdown(loop, batches)

    def run(self) -> SitemapNode | None:
        """Read everything, discarding the entries (for the tree and the diagnostics); returns the tree."""
        for _ in self:
            pass
        return self.tree

    def close(self) -> None:
        """Stop reading and release connections (when not iterating to the end)."""
        if self._iterator is not None:
            self._iterator.close()

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncReader(_ReaderBase):
    """The async face of `Reader`: `async for entry in aread(...)`."""

    def __init__(
        self,
        source: str | os.PathLike[str],
        options: ReadOptions | None = None,
        *,
        on_diagnostic: DiagnosticHandler | None = None,
        fetch_options: FetchOptions | None = None,
    ) -> None:
        super().__init__(source, options or ReadOptions(), on_diagnostic, fetch_options)
        self._iterator: AsyncGenerator[UrlEntry, None] | None = None
        self._batches: AsyncGenerator[Batch, None] | None = None

    def __aiter__(self) -> AsyncIterator[UrlEntry]:
        if self._iterator is None:
            self._start()
            self._iterator = iterator = self._entries()
            return iterator
        return self._iterator

    @overload
    def batches(self, *, runs: Literal[False] = ...) -> AsyncIterator[list[UrlEntry]]: ...

    @overload
    def batches(self, *, runs: Literal[True]) -> AsyncIterator[Batch]: ...

    def batches(self, *, runs: bool = False) -> AsyncIterator[Batch] | AsyncIterator[list[UrlEntry]]:
        """The entries in the lists the walk makes, for a consumer that takes many at a time: every
        list is of one sitemap, `current` while the list is handled. Instead of iterating the reader.
        With `runs`, stretches of plain entries come as `UrlRun`s (see `Reader.runs`)."""
        if self._batches is None:
            self._start()
            self._walk.runs = runs
            self._batches = self._walk.batches()
        elif self._walk.runs != runs:
            raise RuntimeError("these batches are taken one way: with runs or without, not both")
        return self._batches

    async def _entries(self) -> AsyncGenerator[UrlEntry, None]:
        batches = self._walk.batches()
        try:
            async for batch in batches:
                for entry in cast("list[UrlEntry]", batch):  # no runs: not asked for
                    yield entry
        finally:
            await batches.aclose()

    async def run(self) -> SitemapNode | None:
        """Read everything, discarding the entries; returns the tree."""
        async for _ in self:
            pass
        return self.tree

    async def aclose(self) -> None:
        """Stop reading and release connections."""
        if self._iterator is not None:
            await self._iterator.aclose()
        if self._batches is not None:
            await self._batches.aclose()

    async def __aenter__(self) -> AsyncReader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def read(
    source: str | os.PathLike[str],
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    concurrency: int = DEFAULT_CONCURRENCY,
    max_download: int = DEFAULT_MAX_BYTES,
    max_uncompressed: int = DEFAULT_MAX_BYTES,
    timeout: float | None = None,
    connect_timeout: float = 10.0,
    read_timeout: float = 30.0,
    user_agent: str | None = None,
    retries: int = 3,
    max_duration: float | None = None,
    max_children: int = DEFAULT_MAX_CHILDREN,
    max_sitemaps: int = DEFAULT_MAX_SITEMAPS,
    allow_private: bool = False,
    follow_cross_host: bool = False,
    fetch_missing: bool = False,
    on_diagnostic: DiagnosticHandler | None = None,
    fetch_options: FetchOptions | None = None,
) -> Reader:
    """Read the URL entries of `source`: a local file (`-` for stdin), a sitemap URL, or a site root
    (`https://example.com/`, whose sitemaps are found through robots.txt or well-known paths).

    Streams: entries come out as bytes arrive, and memory does not grow with the number of URLs.
    Nothing is fetched until the reader is iterated. `fetch_options` sets what the keyword arguments
    do not (redirect limit, backoff, retry budget, and the timing hooks tests use).

    The fetch policy (`FetchPolicy`) applies: no private address except on `source`'s own origin
    unless `allow_private`; index children and redirects stay on the site unless `follow_cross_host`.
    `max_duration` bounds one request (connect to last byte); `max_children` and `max_sitemaps`
    bound an index and the whole walk. A local index's children are read
    from its folder (`reader.local.local_child`); those not found there are fetched only with
    `fetch_missing`.

    >>> import sitemapkit, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "s.txt")
    >>> _ = open(path, "w").write("https://example.com/a\\n")
    >>> [e.loc for e in sitemapkit.reader.walk.read(path)]
    ['https://example.com/a']
    """
    options = ReadOptions(
        max_depth=max_depth,
        concurrency=concurrency,
        max_download=max_download,
        max_uncompressed=max_uncompressed,
        timeout=timeout,
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        user_agent=user_agent,
        retries=retries,
        max_duration=max_duration,
        max_children=max_children,
        max_sitemaps=max_sitemaps,
        allow_private=allow_private,
        follow_cross_host=follow_cross_host,
        fetch_missing=fetch_missing,
    )
    return Reader(source, options, on_diagnostic=on_diagnostic, fetch_options=fetch_options)


def aread(
    source: str | os.PathLike[str],
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    concurrency: int = DEFAULT_CONCURRENCY,
    max_download: int = DEFAULT_MAX_BYTES,
    max_uncompressed: int = DEFAULT_MAX_BYTES,
    timeout: float | None = None,
    connect_timeout: float = 10.0,
    read_timeout: float = 30.0,
    user_agent: str | None = None,
    retries: int = 3,
    max_duration: float | None = None,
    max_children: int = DEFAULT_MAX_CHILDREN,
    max_sitemaps: int = DEFAULT_MAX_SITEMAPS,
    allow_private: bool = False,
    follow_cross_host: bool = False,
    fetch_missing: bool = False,
    on_diagnostic: DiagnosticHandler | None = None,
    fetch_options: FetchOptions | None = None,
) -> AsyncReader:
    """The async form of `read`: `async for entry in aread(url): ...`."""
    options = ReadOptions(
        max_depth=max_depth,
        concurrency=concurrency,
        max_download=max_download,
        max_uncompressed=max_uncompressed,
        timeout=timeout,
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        user_agent=user_agent,
        retries=retries,
        max_duration=max_duration,
        max_children=max_children,
        max_sitemaps=max_sitemaps,
        allow_private=allow_private,
        follow_cross_host=follow_cross_host,
        fetch_missing=fetch_missing,
    )
    return AsyncReader(source, options, on_diagnostic=on_diagnostic, fetch_options=fetch_options)


__all__ = ["AsyncReader", "ReadOptions", "Reader", "SitemapNode", "aread", "read"]
