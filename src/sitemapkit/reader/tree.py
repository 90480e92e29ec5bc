"""The one walk over a sitemap tree, behind both `read` and `validate`: `TreeWalk`.

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
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from sitemapkit.core.dates import format_w3c
from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.model import IndexEntry, Lastmod, UrlEntry
from sitemapkit.core.urls import folder_of, url_key
from sitemapkit.reader.discover import Discovery, Source, discover
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
from sitemapkit.reader.local import local_child, public_child
from sitemapkit.reader.parser import SitemapParser
from sitemapkit.reader.polite import origin_of
from sitemapkit.reader.runs import UrlRun

if TYPE_CHECKING:
    from sitemapkit.reader.walk import ReadOptions

__all__ = ["Batch", "Refusal", "SitemapNode", "SitemapVisit", "TreeWalk", "WalkEvents", "WalkItem"]

FILE_CHUNK: Final = 64 * 1024
SITEMAP_KINDS: Final = frozenset({"urlset", "sitemapindex", "text", "rss", "atom"})
URL_KINDS: Final = frozenset({"urlset", "text", "rss", "atom"})
_CUT_SHORT: Final = frozenset({"parse-error", "compression-error"})
"""What the parser says about a body that ends early: not reported again after `download-too-large`."""

Batch = list[UrlEntry | UrlRun]
"""Entries of one sitemap, in order; a `UrlRun` only where the walk was asked for runs."""


def _size(batch: Batch) -> int:
    """How many entries `batch` holds (a run counts its entries)."""
    return sum(len(item) if isinstance(item, UrlRun) else 1 for item in batch)


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
class Refusal:
    """Why the walk does not read a child an index lists (decided when the index is parsed, told when the
    child's turn comes, so reports keep the walk's order).

    `code` is `fetch-loop`, `cross-host`, `too-deep` or `read-error` (a local index's child not next to
    it); `reason` says it in the reader's words; `path` is where a local child had to be, when it had to
    be somewhere (its public URL is under the index's public folder)."""

    code: str
    reason: str
    path: str | None = None


@dataclass(eq=False, slots=True)
class WalkItem:
    """A sitemap waiting for (or having) its turn in the walk: where it is read from, who listed it."""

    node: SitemapNode
    name: str
    """The name its diagnostics use: the URL, or the (shown) path of a local file."""
    ancestors: frozenset[str] = frozenset()
    """Every URL of the index chain above (including redirect hops), for loop detection."""
    parent: WalkItem | None = None
    line: int | None = None
    """The line of the parent index that lists it."""
    local: bool = False
    read: str | None = None
    """Where it is read from when that is not `node.url`: a local path, or a staging copy's URL."""
    public: str | None = None
    """Its public URL, where known (given, listed by its index, or where redirects ended)."""
    public_folder: str | None = None
    """For the root given a public URL (`validate --url`): that URL's folder."""
    read_folder: str | None = None
    """For a remote root given a public URL: the folder it was really fetched from (a staging copy)."""
    local_children: bool = True
    """For a local index: whether its children are looked for next to it (not for standard input)."""
    refusal: Refusal | None = None
    moved: bool = False
    """A discovered sitemap that an index read before its turn lists: read there, in the index's place."""
    download: Download | None = None
    visit: SitemapVisit | None = None

    @property
    def location(self) -> str:
        """The path or URL this sitemap is read from."""
        return self.read or self.node.url


class SitemapVisit:
    """What a consumer does with one sitemap while the walk reads it; the base does nothing.

    `body` is called when the body starts (`response` None for a local file), then `piece` for each piece
    of it (compressed, as it came), `entries` for each list the parser makes; `finish` once the body ended
    (`complete`: not cut short by a cap or the network), and `close` always, last."""

    def body(self, response: FetchResponse | None) -> None:
        """The body starts."""

    def piece(self, data: bytes) -> None:
        """One piece of the body, as read."""

    def parsed(self, diagnostic: Diagnostic) -> None:
        """A diagnostic of the parser about this sitemap."""

    def entries(self, out: list[UrlEntry | IndexEntry]) -> list[IndexEntry]:
        """Entries as parsed; returns the index entries (children) the walk may follow."""
        return [entry for entry in out if isinstance(entry, IndexEntry)]

    def finish(self, parser: SitemapParser, complete: bool) -> None:
        """The body ended (read whole when `complete`)."""

    def close(self) -> None:
        """The sitemap's turn is over, however it went."""


class WalkEvents:
    """What the walk meets, told to its consumer. This base reports the reader's diagnostics through
    `diagnostic`; a subclass (the validator's) reports its own and opens a `SitemapVisit` per sitemap."""

    close_cut_body: bool = True
    """Parse the end of a body that a cap or the network cut short (its last complete entries)."""
    lists: str = "lists"
    """How a cross-host refusal words the index listing a child (`FetchPolicy.cross_host_reason`)."""

    def __init__(self, diagnostic: Callable[[Diagnostic], None], max_download: int) -> None:
        self.diagnostic = diagnostic
        self.max_download = max_download

    def say(self, code: str, message: str, source: str) -> None:
        self.diagnostic(Diagnostic.make(code, message, source=source))

    def open(self, item: WalkItem) -> SitemapVisit | None:
        """A sitemap's turn begins; a visit, to see its body and entries (None: no need)."""
        return None

    def parsed(self, item: WalkItem, d: Diagnostic) -> None:
        """A diagnostic of the parser (when the item has no visit)."""
        self.diagnostic(d)

    def no_sitemap(self, found: Discovery, message: str) -> None:
        self.say("no-sitemap", message, found.site)

    def fetch_failed(self, item: WalkItem, exc: FetchError) -> None:
        """Nothing of the sitemap could be fetched (refused by the policy or robots.txt, or failed)."""
        if isinstance(exc, FetchRefusedError):
            self.say(exc.code, exc.reason, item.node.url)
        else:
            self.say("http-error", f"could not fetch: {exc.reason}", item.node.url)

    def redirect_loop(self, item: WalkItem, url: str, message: str) -> None:
        self.say("fetch-loop", message, item.node.url)

    def http_status(self, item: WalkItem, response: FetchResponse) -> None:
        tries = f" (after {response.attempts} attempts)" if response.attempts > 1 else ""
        self.say(
            "http-error", f"HTTP {response.status} {status_phrase(response.status)}{tries}", item.node.url
        )

    def cut(self, item: WalkItem, exc: FetchError) -> None:
        """The body was cut short: a download cap, a decoding failure, a broken connection."""
        if isinstance(exc, DownloadTooLargeError):
            message = f"more than {self.max_download:,} bytes; reading stopped, complete entries kept"
            self.say("download-too-large", message, item.name)
        elif isinstance(exc, ContentDecodingError):
            self.say("compression-error", exc.reason, item.name)
        else:
            self.say("http-error", exc.reason, item.name)

    def unreadable(self, item: WalkItem, error: str) -> None:
        self.say("read-error", error, item.name)

    def nested_index(self, item: WalkItem) -> None:
        self.say("nested-index", "a sitemap index listed by another sitemap index", item.name)

    def over(self, item: WalkItem, over_index: int, over_walk: int, options: ReadOptions) -> None:
        """Children of `item` a bound left out: past `max_children` of it, past `max_sitemaps` of the walk."""
        if over_index:
            self.say(
                "walk-limit",
                f"{over_index:,} more children past the first {options.max_children:,} of this "
                "index were not followed (--max-children)",
                item.node.url,
            )
        if over_walk:
            self.say(
                "walk-limit",
                f"{over_walk:,} children were not followed: the walk already holds "
                f"{options.max_sitemaps:,} sitemaps (--max-sitemaps)",
                item.node.url,
            )

    def refused(self, item: WalkItem, refusal: Refusal, options: ReadOptions) -> None:
        """A child of `item.parent` is not read (its turn in the walk)."""
        assert item.parent is not None
        parent, url = item.parent, item.node.url
        if refusal.code == "fetch-loop":
            self.say("fetch-loop", f"{refusal.reason}: {url}; not followed", parent.node.url)
        elif refusal.code == "too-deep":
            self.say(
                "too-deep",
                f"{url} is at index depth {item.node.depth}, deeper than the maximum {options.max_depth}; "
                "not followed",
                parent.node.url,
            )
        elif refusal.code == "read-error":
            self.say(
                "read-error",
                f"{url} is not next to the index (looked for its URL path in the index's folder); "
                "not fetched (pass --fetch-missing to fetch it)",
                parent.location,
            )
        else:
            self.say(refusal.code, refusal.reason, parent.node.url)


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
        self._size: Callable[[Batch], int] = len

    async def batches(self, fetcher: Fetcher | None = None) -> AsyncGenerator[Batch, None]:
        """The entries, one list at a time; with its own `Fetcher` unless given one (a run's)."""
        async with contextlib.AsyncExitStack() as stack:
            if fetcher is None:
                fetcher = await stack.enter_async_context(Fetcher(self.fetch_options))
            async with contextlib.aclosing(self._batches(fetcher)) as batches:
                async for batch in batches:
                    yield batch

    async def _batches(self, fetcher: Fetcher) -> AsyncGenerator[Batch, None]:
        size = self._size = _size if self.runs else len
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
            self.current = None
        finally:
            for item in self._pending:
                if item.download is not None:
                    await item.download.cancel()

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
        finally:
            if visit is not None:
                visit.close()

    async def _read_body(self, item: WalkItem, fetcher: Fetcher) -> AsyncGenerator[Batch, None]:
        node = item.node
        if item.local:
            pieces = self._file_pieces(node, item.location)
            async with contextlib.aclosing(self._parse(item, pieces)) as parsing:
                async for batch in parsing:
                    yield batch
            return
        download = item.download or Download(fetcher, item.location, self._buffer_pieces)
        try:
            try:
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
            async with contextlib.aclosing(self._parse(item, download.pieces(), response)) as parsing:
                async for batch in parsing:
                    yield batch
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
                            if batch:
                                node.url_count += size(batch)
                                yield batch
                    if response is not None:
                        node.bytes = response.raw_bytes
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
            node.kind = parser.kind if parser.ok else None
            node.compressed = parser.compressed
            node.uncompressed_bytes = parser.uncompressed_bytes
            node.truncated = node.truncated or parser.truncated
            if response is not None:
                node.bytes = response.raw_bytes
        if node.kind is None and node.error is None:
            node.error = first_error[0] if first_error else "not a sitemap"
        if visit is not None:
            visit.finish(parser, complete)
        if node.kind == "sitemapindex":
            if item.parent is not None:
                events.nested_index(item)
            self._schedule(children)

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
class _Plan:
    """The children of one index as they are parsed: what is queued, what a bound left out."""

    item: WalkItem
    own: set[str]
    lineage: frozenset[str]
    queued: list[WalkItem] = field(default_factory=list)
    listed: int = 0
    over_index: int = 0
    over_walk: int = 0


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


def status_phrase(status: int) -> str:
    """The reason phrase of an HTTP status ('' for one without)."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


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
