"""The one walk over a sitemap tree, behind both `read` and `validate`: `TreeWalk` (what it is made of and
tells, in `reader.walkevents`).

Decided here, once, for every consumer: where each sitemap is read from (a site's discovered sitemaps, a
local index's children next to it, a staging copy judged as its public URL), the order (depth-first in
index order, so the output is deterministic), the depth, loops (an index listing itself, one above it, or
a sitemap read elsewhere in the walk; redirects to any of those), the bounds (`max_children` of one index,
`max_sitemaps` of the walk), the fetch policy across hosts, and what a failed fetch means. Fetching goes
through `Fetcher` and the run's politeness layer as they are.

What the walk meets is told to its `WalkEvents`: the base class reports the reader's diagnostics; the
validator's subclass reports its own, and checks each file through the `SitemapVisit` it opens for it
(the body as it arrives, every entry as parsed, the children it lets the walk follow).

The sitemap being read (the *head*) streams straight into the parser as bytes arrive; the next few
sitemaps of the same walk are downloaded ahead into small bounded buffers and parsed only when their turn
comes. Memory therefore depends on the concurrency and the buffer size, never on the number of URLs.
Prefetches never hold every connection slot of a host: at most `concurrency - 1` of them are live, so the
head can always get a slot, and a full buffer cannot stall the walk.

With leaf workers (`TreeWalk.leaves`, which `Reader.parts` sets; see `reader.leaves`), the body of a
sitemap read while others wait their turn goes to a worker process instead of the parser here, and the
walk goes on to the next one. Each worker's result is taken in walk order (`_settle`): its diagnostics
before anything the walk said meanwhile, the node filled in, its entries as one `Part`. An index's result
is taken at once, since its children come next; results that come in while the walk waits on the
network are taken then, so the output never waits for a slow answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import sys
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast
from urllib.parse import urlsplit

from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.model import IndexEntry, UrlEntry
from sitemapkit.core.urls import folder_of, url_key
from sitemapkit.reader.discover import Source, discover
from sitemapkit.reader.download import Download
from sitemapkit.reader.fetch import (
    CHUNK_SIZE,
    DownloadTooLargeError,
    Fetcher,
    FetchError,
    FetchOptions,
    FetchRefusedError,
    FetchResponse,
)
from sitemapkit.reader.leaves import CLOSE, FAILED, LEAVE_OPEN, LeafJob, LeafPool
from sitemapkit.reader.local import local_child, public_child
from sitemapkit.reader.parser import SitemapParser
from sitemapkit.reader.polite import origin_of
from sitemapkit.reader.runs import Part, UrlRun
from sitemapkit.reader.walkevents import (
    Refusal,
    SitemapNode,
    SitemapVisit,
    WalkEvents,
    WalkItem,
)

if TYPE_CHECKING:
    from sitemapkit.reader.walk import ReadOptions

__all__ = ["Batch", "Refusal", "SitemapNode", "SitemapVisit", "TreeWalk", "WalkEvents", "WalkItem"]

T = TypeVar("T")

FILE_CHUNK: Final = 64 * 1024
URL_KINDS: Final = frozenset({"urlset", "text", "rss", "atom"})
_CUT_SHORT: Final = frozenset({"parse-error", "compression-error"})
"""What the parser says about a body that ends early: not reported again after `download-too-large`."""

Batch = list[UrlEntry | UrlRun]
"""Entries of one sitemap, in order; a `UrlRun` only where the walk was asked for runs, and a `Part` (in
a list of its own) only where it has leaf workers (`TreeWalk.leaves`, which `Reader.parts` sets)."""


def _size(batch: Batch) -> int:
    """How many entries `batch` holds (a run or a part counts its entries)."""
    return sum(len(item) if isinstance(item, UrlRun | Part) else 1 for item in batch)


class TreeWalk:
    """The walk itself, as an async generator of entry batches (`batches`); state is readable while it
    runs. `fetch` are the fetch options as they are to be used (policy and politeness included).

    `public_url` is the public URL of the root (`validate --url`): its folder maps a local root's children
    to files next to it, and a remote root's to the folder it was fetched from (a staging copy).
    `allow_hosts` are hosts an index may list children on as if on its own site. With
    `record_past_depth` False, children deeper than `max_depth` are left out silently (not recorded, not
    reported): the validator reads one level below the root and judges nested indexes itself. `probe` is
    a download of the source sitemap already begun (`Discovery.probe`): the walk reads on from it.
    """

    def __init__(
        self,
        source: Source,
        options: ReadOptions,
        fetch: FetchOptions,
        events: WalkEvents,
        *,
        root_name: str | None = None,
        public_url: str | None = None,
        allow_hosts: frozenset[str] = frozenset(),
        record_past_depth: bool = True,
        probe: Download | None = None,
    ) -> None:
        self.source = source
        self._probe = probe
        self.options = options
        self.events = events
        self.fetch_options = fetch
        self.policy = fetch.policy
        self._root_name = root_name
        self._public_url = public_url
        self._allow_hosts = allow_hosts
        self._record_past_depth = record_past_depth
        self._recorded = 0
        """Nodes in the tree (bounded by `max_sitemaps`)."""
        self.root: SitemapNode | None = None
        self.current: SitemapNode | None = None
        self.count = 0
        self._pending: deque[WalkItem] = deque()
        self._visited: set[str] = set()
        self._roots: dict[str, WalkItem] = {}
        """Discovered sitemaps whose turn has not come, by URL key: an index that lists one takes it."""
        self._live: dict[str, int] = {}
        self._live_total = 0
        self._buffer_pieces = max(2, options.prefetch_buffer // CHUNK_SIZE)
        self.runs = False
        """Hand plain entries on as `UrlRun`s (see `SitemapParser`); set before the walk starts."""
        self.leaves: LeafPool | None = None
        """Worker processes that parse and format the sitemaps below an index while the walk goes on
        (see `reader.leaves`); set before the walk starts, with `runs`, by a consumer that takes `Part`s.
        Only for a walk whose events open no visits (the reader's)."""
        self._handed: deque[_Handed] = deque()
        """Sitemaps handed to the leaf workers whose results are not taken yet, oldest first."""
        self._emit: Callable[[Diagnostic], None] = events.diagnostic
        self._size: Callable[[Batch], int] = len

    async def batches(self, fetcher: Fetcher | None = None) -> AsyncGenerator[Batch, None]:
        """The entries, one list at a time; with its own `Fetcher` unless given one (a run's)."""
        async with contextlib.AsyncExitStack() as stack:
            if fetcher is None:
                fetcher = await stack.enter_async_context(Fetcher(self.fetch_options))
            async with contextlib.aclosing(self._batches(fetcher)) as batches:
                async for batch in batches:
                    yield batch
                    del batch  # (else held while the next is awaited: see _parse)

    async def _batches(self, fetcher: Fetcher) -> AsyncGenerator[Batch, None]:
        size = self._size = _size if self.runs else len
        if self.leaves is not None:
            # while sitemaps are with the workers, what the walk says waits behind their diagnostics
            self.events.diagnostic = self._diagnostic
        try:
            await self._plan(fetcher)
            while self._pending:
                item = self._pending.popleft()
                if item.download is not None:
                    self._unlive(item.location)
                if item.moved:
                    continue  # read where an index lists it
                if item.parent is None and self._roots:
                    self._roots.pop(url_key(item.node.url), None)
                if item.download is None and not item.local and item.refusal is None:
                    # its request first: those fetched ahead queue behind it at the host's pacer
                    item.download = Download(fetcher, item.location, self._buffer_pieces)
                self._prefetch(fetcher)
                self.current = item.node
                if item.refusal is not None:
                    self.events.refused(item, item.refusal, self.options)
                    continue
                # closed at once when the consumer stops, so the node is filled in and the
                # download cancelled now, not whenever the generator is collected
                async with contextlib.aclosing(self._read(item, fetcher)) as reading:
                    async for batch in reading:
                        self.count += size(batch)
                        yield batch
                        del batch
            async with contextlib.aclosing(self._settle()) as settling:
                async for batch in settling:
                    self.count += size(batch)
                    yield batch
            self.current = None
        finally:
            for item in self._pending:
                if item.download is not None:
                    await item.download.cancel()
            if self.leaves is not None:
                self.events.diagnostic = self._emit
                self._handed.clear()
                await self.leaves.close()

    # -- planning the first sitemaps ------------------------------------------------------------

    async def _plan(self, fetcher: Fetcher) -> None:
        src = self.source
        self._recorded = 1  # the root
        public = self._public_url
        folder = folder_of(public) if public is not None else None
        probe, self._probe = self._probe, None
        if probe is not None and (src.kind != "sitemap" or probe.url != src.location):
            await probe.cancel()  # not of this source
            probe = None
        if src.kind in ("file", "stdin"):
            self.root = SitemapNode(self._root_name or shown(src.location))
            self._pending.append(
                WalkItem(
                    self.root,
                    self.root.url,
                    local=True,
                    read=src.location,
                    public=public,
                    public_folder=folder,
                    local_children=src.kind == "file",
                )
            )
            self._seen(public)
            return
        if src.kind == "sitemap":
            self.root = SitemapNode(src.location)
            self._seen(src.location, public)
            item = WalkItem(self.root, src.location, public=public, public_folder=folder, download=probe)
            self._pending.append(item)
            if probe is not None:  # found by a discovery: fetched once
                self._live[origin_of(src.location)] = 1
                self._live_total = 1
            return
        found = await discover(
            src.location, fetcher, on_diagnostic=self.events.diagnostic, keep=self._buffer_pieces
        )
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
            self.events.no_sitemap(found, self.root.error)
            return
        for url in found.sitemaps[: self.options.max_sitemaps - 1]:
            self._recorded += 1
            node = SitemapNode(url)
            self.root.children.append(node)
            self._seen(url)
            self._roots[url_key(url)] = root = WalkItem(node, url)
            self._pending.append(root)
            if found.probe is not None and found.probe.url == url:  # a well-known path: fetched once
                root.download, found.probe = found.probe, None
                host = origin_of(url)
                self._live[host] = self._live.get(host, 0) + 1
                self._live_total += 1
        if found.probe is not None:
            await found.probe.cancel()

    async def drop_probe(self) -> None:
        """Stop the `probe` given, if the walk did not start (and take it)."""
        probe, self._probe = self._probe, None
        if probe is not None:
            await probe.cancel()

    def _seen(self, *urls: str | None) -> None:
        self._visited.update(url_key(url) for url in urls if url)

    # -- fetching ahead ---------------------------------------------------------------------------

    def _prefetch(self, fetcher: Fetcher) -> None:
        per_host = self.options.concurrency - 1
        total = self.fetch_options.max_connections - 1
        if per_host < 1:
            return
        for item in itertools.islice(self._pending, per_host * 2):
            if self._live_total >= total:
                return
            if item.local or item.download is not None or item.refusal is not None or item.moved:
                continue
            host = origin_of(item.location)
            if self._live.get(host, 0) >= per_host:
                continue
            self._live[host] = self._live.get(host, 0) + 1
            self._live_total += 1
            item.download = Download(fetcher, item.location, self._buffer_pieces)

    def _unlive(self, url: str) -> None:
        host = origin_of(url)
        self._live[host] -= 1
        self._live_total -= 1

    # -- reading one sitemap ----------------------------------------------------------------------

    async def _read(self, item: WalkItem, fetcher: Fetcher) -> AsyncGenerator[Batch, None]:
        item.visit = visit = self.events.open(item)
        try:
            async with contextlib.aclosing(self._read_body(item, fetcher)) as reading:
                async for batch in reading:
                    yield batch
                    del batch
        finally:
            if visit is not None:
                visit.close()

    async def _read_body(self, item: WalkItem, fetcher: Fetcher) -> AsyncGenerator[Batch, None]:
        node = item.node
        if item.local:
            pieces = self._file_pieces(node, item.location)
            reading = (
                self._hand(item, pieces)
                if self._hands_off(item) and item.location != "-"
                else self._parse(item, pieces)
            )
            async with contextlib.aclosing(reading) as parsing:
                async for batch in parsing:
                    yield batch
            return
        download = item.download or Download(fetcher, item.location, self._buffer_pieces)
        try:
            try:
                if self._handed:  # the output goes on while the walk waits for this answer
                    got: list[FetchResponse] = []
                    async with contextlib.aclosing(self._awaiting(download.response(), got)) as settling:
                        async for batch in settling:
                            yield batch
                    response = got[0]
                else:
                    response = await download.response()
            except FetchError as exc:
                node.error = (
                    f"not followed: {exc.reason}" if isinstance(exc, FetchRefusedError) else exc.reason
                )
                self.events.fetch_failed(item, exc)
                return
            node.status = response.status
            if response.redirects:
                node.redirects = tuple(hop.url for hop in response.redirects)
                node.final_url = response.final_url
            if not self._check_redirects(item, response):
                return
            if not response.ok:
                node.error = f"HTTP {response.status}"
                self.events.http_status(item, response)
                return
            if item.parent is None and item.public_folder is not None:
                item.read_folder = folder_of(response.final_url)  # a staging copy of the public folder
            elif item.public is None or item.public == item.location:
                item.public = response.final_url
            reading = (
                self._hand(item, download.pieces(), response)
                if self._hands_off(item)
                else self._parse(item, download.pieces(), response)
            )
            async with contextlib.aclosing(reading) as parsing:
                async for batch in parsing:
                    yield batch
                    del batch
        finally:
            await download.cancel()

    def _check_redirects(self, item: WalkItem, response: FetchResponse) -> bool:
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
            self.events.redirect_loop(item, url, message)
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
        self, item: WalkItem, pieces: AsyncIterator[bytes], response: FetchResponse | None = None
    ) -> AsyncGenerator[Batch, None]:
        if self._handed:  # entries of its own come after those of the sitemaps handed before
            async with contextlib.aclosing(self._settle()) as settling:
                async for batch in settling:
                    yield batch
        node = item.node
        visit = item.visit
        size = self._size
        first_error: list[str] = []
        capped: list[bool] = []  # set once the download cap cut the body off
        events = self.events

        def on_diagnostic(d: Diagnostic) -> None:
            if capped and d.code in _CUT_SHORT:
                return  # the end of a body the cap cut off: download-too-large already says so
            if d.is_error and not first_error:
                first_error.append(f"[{d.code}] {d.message}")
            if visit is not None:
                visit.parsed(d)
            else:
                events.parsed(item, d)

        parser = SitemapParser(
            item.name,
            on_diagnostic=on_diagnostic,
            max_uncompressed=self.options.max_uncompressed,
            runs=self.runs,
        )
        children = self._plan_children(item)
        finished = False  # read to its end (or to an error that ends it), not left by the consumer
        complete = True
        if visit is not None:
            visit.body(response)
        try:
            try:
                async for piece in pieces:
                    if visit is not None:
                        visit.piece(piece)
                    for out in parser.feed_pieces(piece):
                        if out:
                            batch = self._route(out, parser.kind, children)
                            del out
                            if batch:
                                node.url_count += size(batch)
                                yield batch
                            del batch
                    if response is not None:
                        node.bytes = response.raw_bytes
                    # a generator's locals live while it waits: the piece and the batch made of it (whose
                    # runs keep the piece's text) would be held, for every sitemap being read, until
                    # the next piece comes
                    del piece
            except FetchError as exc:
                node.truncated = True
                complete = False
                if isinstance(exc, DownloadTooLargeError):
                    capped.append(True)
                events.cut(item, exc)
            except OSError as exc:
                node.error = f"cannot read: {exc.strerror or exc}"
                events.unreadable(item, node.error)
                parser.ok = False
                return
            if complete or events.close_cut_body:
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
            node.record(parser)
            if response is not None:
                node.bytes = response.raw_bytes
        if node.kind is None and node.error is None:
            node.error = first_error[0] if first_error else "not a sitemap"
        if visit is not None:
            visit.finish(parser, complete)
        self._index_read(item, children)

    def _index_read(self, item: WalkItem, children: _Plan) -> None:
        """After a sitemap was read: if it was an index, its children come next (`nested-index` first, if
        an index listed it)."""
        if item.node.kind == "sitemapindex":
            if item.parent is not None:
                self.events.nested_index(item)
            self._schedule(children)

    # -- sitemaps parsed by the leaf workers ------------------------------------------------------

    def _hands_off(self, item: WalkItem) -> bool:
        """Whether `item` goes to a leaf worker: there are workers, and another sitemap to read meanwhile."""
        return self.leaves is not None and item.visit is None and bool(self._pending or self._handed)

    def _diagnostic(self, d: Diagnostic) -> None:
        """What the walk says while leaf workers have sitemaps: after their diagnostics (see `_settle`)."""
        if not self._handed:
            self._emit(d)
            return
        newest = self._handed[-1]
        (newest.after if newest.ended else newest.during).append(d)

    async def _hand(
        self, item: WalkItem, pieces: AsyncIterator[bytes], response: FetchResponse | None = None
    ) -> AsyncGenerator[Batch, None]:
        """Give `item`'s body to a leaf worker as it arrives (waiting for the oldest result when every
        worker is busy); for a sitemap index, take the result at once, as its children come next."""
        leaves = self.leaves
        assert leaves is not None
        node = item.node
        job = await leaves.begin(item.name)
        while job is None:  # every worker busy: the oldest sitemap's turn to be written
            async with contextlib.aclosing(self._settle(self._handed[0])) as settling:
                async for batch in settling:
                    yield batch
            job = await leaves.begin(item.name)
        handed = _Handed(item, job)
        self._handed.append(handed)
        capped = False
        body = aiter(pieces)
        try:
            while True:
                # the output of the sitemaps handed before goes on while this body comes
                got: list[tuple[bytes] | None] = []
                async with contextlib.aclosing(self._awaiting(_next(body), got, handed)) as settling:
                    async for batch in settling:
                        yield batch
                if got[0] is None:
                    break
                job.feed(got[0][0])
                if response is not None:
                    node.bytes = response.raw_bytes
        except FetchError as exc:
            node.truncated = True
            capped = isinstance(exc, DownloadTooLargeError)
            self.events.cut(item, exc)
            handed.how = CLOSE if self.events.close_cut_body else LEAVE_OPEN
        except OSError as exc:
            node.error = f"cannot read: {exc.strerror or exc}"
            self.events.unreadable(item, node.error)
            handed.how = FAILED
        if response is not None:
            node.bytes = response.raw_bytes
        job.end(handed.how, capped)
        handed.ended = True
        if await job.kind() == "sitemapindex":
            async with contextlib.aclosing(self._settle(handed)) as settling:
                async for batch in settling:
                    yield batch

    async def _awaiting(
        self, awaitable: Awaitable[T], got: list[T], before: _Handed | None = None
    ) -> AsyncGenerator[Batch, None]:
        """`awaitable`'s value, into `got` (or its exception); meanwhile the results of the sitemaps
        handed to leaf workers (before `before`, or all) that come in are taken (`_meanwhile`), so that a
        slow answer or body does not hold up the output."""
        waiting = asyncio.ensure_future(awaitable)
        try:
            async with contextlib.aclosing(self._meanwhile(waiting, before)) as settling:
                async for batch in settling:
                    yield batch
            got.append(await waiting)
        finally:
            await _cancelled(waiting)

    async def _meanwhile(
        self, waiting: asyncio.Future[Any], before: _Handed | None = None
    ) -> AsyncGenerator[Batch, None]:
        """The results of the sitemaps handed to leaf workers (before `before`, or all) that come in while
        `waiting` runs, taken in walk order (`_settle`)."""
        while self._handed and self._handed[0] is not before and not waiting.done():
            oldest = self._handed[0]
            result = oldest.job.result()
            await asyncio.wait((waiting, result), return_when=asyncio.FIRST_COMPLETED)
            if result.done():
                async with contextlib.aclosing(self._settle(oldest)) as settling:
                    async for batch in settling:
                        yield batch

    async def _settle(self, last: _Handed | None = None) -> AsyncGenerator[Batch, None]:
        """Take the leaf workers' results in walk order, up to `last` (all by default): their
        diagnostics and those the walk said meanwhile, in order; the nodes filled in; an index's children
        queued; each sitemap's `Part`."""
        emit = self._emit
        while self._handed:
            handed = self._handed[0]
            result = await handed.job.result()
            self._handed.popleft()
            item = handed.item
            node = item.node
            said = result.diagnostics()
            for d in itertools.chain(
                itertools.islice(said, result.read_count), handed.during, said, handed.after
            ):
                emit(d)
            node.record(result)
            node.url_count += result.count
            if handed.how != FAILED:
                if node.kind is None and node.error is None:
                    node.error = result.first_error or "not a sitemap"
                plan = self._plan_children(item)
                for child in result.children:
                    self._take(plan, child)
                self._index_read(item, plan)
            if result.part is not None:
                yield cast(Batch, [result.part])  # only for `Reader.parts`, which takes parts
            if handed is last:
                return

    def _route(self, out: list[UrlEntry | IndexEntry], kind: str | None, children: _Plan) -> Batch:
        visit = children.item.visit
        if visit is not None:
            taken = visit.entries(out)
            if kind in URL_KINDS:
                return out  # type: ignore[return-value]  # only an index yields IndexEntry
            for child in taken:
                self._take(children, child)
            return [entry for entry in out if isinstance(entry, UrlEntry)]
        if kind in URL_KINDS:
            return out  # type: ignore[return-value]  # only an index yields IndexEntry
        batch: Batch = []
        for entry in out:
            if isinstance(entry, IndexEntry):
                self._take(children, entry)
            else:
                batch.append(entry)
        return batch

    def _plan_children(self, item: WalkItem) -> _Plan:
        node = item.node
        urls = (node.url, item.public, *node.redirects, node.final_url)
        own = {url_key(u) for u in urls if u}
        return _Plan(item, own, item.ancestors | own)

    def _take(self, plan: _Plan, entry: IndexEntry) -> None:
        """Record one child of an index in the tree and queue it in its turn: to be read, or refused (a
        loop, the fetch policy, the depth, a local child not next to its index) and reported then."""
        item = plan.item
        node = item.node
        depth = node.depth + 1
        if depth > self.options.max_depth and not self._record_past_depth:
            return
        plan.listed += 1
        if plan.listed > self.options.max_children:
            plan.over_index += 1
            return
        if self._recorded >= self.options.max_sitemaps:
            plan.over_walk += 1
            return
        self._recorded += 1
        url = entry.loc
        child = SitemapNode(url, lastmod=entry.lastmod, depth=depth, lastmod_text=entry.lastmod_text)
        node.children.append(child)
        queued = WalkItem(child, url, plan.lineage, parent=item, line=entry.line, public=url)
        plan.queued.append(queued)
        key = url_key(url)
        root = self._roots.get(key) if self._roots else None
        refusal: Refusal | None
        if key in plan.own:
            refusal = Refusal("fetch-loop", "the index lists itself")
        elif key in plan.lineage:
            refusal = Refusal("fetch-loop", "the index lists an index above it")
        elif key in self._visited and root is None:
            refusal = Refusal("fetch-loop", "already listed elsewhere in this walk")
        else:
            refusal = self._locate(item, queued, depth)
            if refusal is None or refusal.code == "read-error":
                self._visited.add(key)
        if root is not None and refusal is None:
            self._move(root, queued)
        if refusal is not None:
            queued.refusal = refusal
            child.error = (
                "not found next to the index; not fetched"
                if refusal.code == "read-error"
                else f"not followed: {refusal.reason}"
            )

    def _move(self, root: WalkItem, child: WalkItem) -> None:
        """A discovered sitemap whose turn has not come is listed by an index: it is read there instead
        (once, below the index, with what was fetched of it ahead), and leaves the top of the tree."""
        del self._roots[url_key(root.node.url)]
        root.moved = True
        child.download, root.download = root.download, None  # the same URL (a discovered index's child)
        assert self.root is not None
        self.root.children.remove(root.node)
        self._recorded -= 1

    def _locate(self, parent: WalkItem, child: WalkItem, depth: int) -> Refusal | None:
        """Where a child is read from: a local index's from the file next to it (with a public URL, the
        same path below the folder; else its URL path, or a shorter end of it); a staging root's children
        under its public folder from the same path below the folder it was fetched from; else (and with
        `fetch_missing`) from its URL, as far as the fetch policy lets the index lead."""
        url = child.node.url
        if parent.local and parent.local_children:
            required: str | None = None
            if parent.public_folder is not None:
                required = public_child(parent.location, parent.public_folder, url)
                found = required if required is not None and os.path.isfile(required) else None
            else:
                near = local_child(parent.location, url)
                found = str(near) if near is not None else None
            if found is not None or required is not None or not self.options.fetch_missing:
                deeper = self._deeper(depth)
                if deeper is not None:
                    return deeper
                if found is None:
                    return Refusal("read-error", "not next to the index", required)
                child.local, child.read, child.name = True, found, shown(found)
                return None
        elif (
            parent.read_folder is not None
            and parent.public_folder is not None
            and url.startswith(parent.public_folder)
        ):  # a staging copy: its children are read from beside it
            child.read = child.name = parent.read_folder + url[len(parent.public_folder) :]
            return self._deeper(depth)
        cross = self._cross_host(parent, url)
        return cross if cross is not None else self._deeper(depth)

    def _cross_host(self, parent: WalkItem, url: str) -> Refusal | None:
        base = parent.public if parent.public is not None else (None if parent.local else parent.node.url)
        if base is None or origin_host(url) in self._allow_hosts:
            return None
        cross = self.policy.cross_host_reason(base, url, self.events.lists)
        return Refusal("cross-host", cross) if cross is not None else None

    def _deeper(self, depth: int) -> Refusal | None:
        if depth > self.options.max_depth:
            return Refusal("too-deep", f"deeper than --max-depth {self.options.max_depth}")
        return None

    def _schedule(self, plan: _Plan) -> None:
        """Queue an index's children at the front of the walk, in index order; report what a bound left."""
        if plan.over_index or plan.over_walk:
            self.events.over(plan.item, plan.over_index, plan.over_walk, self.options)
        self._pending.extendleft(reversed(plan.queued))


@dataclass(eq=False, slots=True)
class _Handed:
    """A sitemap with a leaf worker: what the walk said while its body was handed over (`during`) and
    after (`after`), told after the worker's diagnostics of reading it and of closing it, respectively."""

    item: WalkItem
    job: LeafJob
    how: str = CLOSE
    ended: bool = False
    during: list[Diagnostic] = field(default_factory=list)
    after: list[Diagnostic] = field(default_factory=list)


@dataclass(eq=False, slots=True)
class _Plan:
    """The children of one index as they are parsed: what is queued, what a bound left out."""

    item: WalkItem
    own: set[str]
    lineage: frozenset[str]
    queued: list[WalkItem] = field(default_factory=list)
    listed: int = 0
    over_index: int = 0
    over_walk: int = 0


async def _next(pieces: AsyncIterator[bytes]) -> tuple[bytes] | None:
    """The next piece of a body (in a tuple), or None at its end."""
    try:
        return (await anext(pieces),)
    except StopAsyncIteration:
        return None


async def _cancelled(future: asyncio.Future[Any]) -> None:
    """Cancel `future` if it still runs, and wait for it to end."""
    if not future.done():
        future.cancel()
        with contextlib.suppress(asyncio.CancelledError, FetchError, OSError):
            await future


def origin_host(url: str) -> str:
    """The host of `url`, lower-case, without a trailing dot."""
    return (urlsplit(url).hostname or "").rstrip(".")


def shown(path: str) -> str:
    """A file path as text any output can hold (the entries' `sitemap`, the tree): bytes of its name that
    are not UTF-8, which `os.fsdecode` keeps as lone surrogates, shown as U+FFFD."""
    try:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a surrogate that stands for no byte
        return path.encode("utf-8", "replace").decode("utf-8")


def with_fetch_options(source: Source, options: ReadOptions, base: FetchOptions) -> FetchOptions:
    """The fetch options a reader's walk of `source` uses: `options` over `base`, the named origin trusted
    (when `user_named`), and a politeness layer of its own unless `base` brings the run's."""
    from sitemapkit.reader.polite import Politeness

    fetch = options.fetch_options(base)
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
    return fetch
