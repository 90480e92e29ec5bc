"""Reading any site's sitemaps: the public `read` / `aread` API, and its options (`ReadOptions`).

The walk itself (depth-first in index order, streaming, fetching ahead) is `reader.tree.TreeWalk`, which
the validator walks too. `read` declares the parameters once; `aread` takes the same (`async_form`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import os
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator
from dataclasses import dataclass, fields, replace
from typing import Any, Final, Literal, ParamSpec, cast, overload

from sitemapkit.core.child import leaf_workers
from sitemapkit.core.constants import DEFAULT_RETRIES
from sitemapkit.core.diagnostics import DiagnosticHandler, DiagnosticLog
from sitemapkit.core.errors import UsageError
from sitemapkit.core.model import UrlEntry
from sitemapkit.reader.discover import classify
from sitemapkit.reader.download import Download
from sitemapkit.reader.fetch import FetchOptions
from sitemapkit.reader.leaves import LeafPool, check_format
from sitemapkit.reader.runs import Part, UrlRun
from sitemapkit.reader.tree import Batch, SitemapNode, TreeWalk, WalkEvents, with_fetch_options

P = ParamSpec("P")

DEFAULT_MAX_DEPTH: Final = 5
DEFAULT_CONCURRENCY: Final = 4
DEFAULT_MAX_BYTES: Final = 100 * 1024 * 1024
DEFAULT_MAX_CHILDREN: Final = 50_000
"""Children of one index taken into the walk (the protocol's limit); the rest are counted, not followed."""
DEFAULT_MAX_SITEMAPS: Final = 50_000
"""Sitemaps one walk records in its tree (followed or not); past it children are counted, not followed."""


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
    retries: int = DEFAULT_RETRIES
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

    def __post_init__(self) -> None:
        """A bad value is a `UsageError`, raised when the options are made (by `read` and `aread` too)."""
        at_least = {
            "max_depth": 0,
            "concurrency": 1,
            "max_download": 1,
            "max_uncompressed": 1,
            "retries": 0,
            "prefetch_buffer": 1,
            "max_children": 0,
            "max_sitemaps": 1,
        }
        for name, low in at_least.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                word = "at least 1" if low else "0 or more"
                raise UsageError(f"{name} must be a whole number, {word} (got {value!r})")
        for name in ("timeout", "connect_timeout", "read_timeout", "max_duration"):
            value = getattr(self, name)
            if value is None and name in ("timeout", "max_duration"):
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise UsageError(f"{name} must be a number of seconds above 0 (got {value!r})")

    def fetch_options(self, base: FetchOptions | None = None) -> FetchOptions:
        """The `FetchOptions` these options imply, over `base` (whose other settings are kept)."""
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
        probe: Download | None = None,
    ) -> None:
        self.source = os.fspath(source)
        self.diagnostics = DiagnosticLog(on_diagnostic)
        """Every problem found so far (the log keeps the first 10,000; its counts are exact)."""
        self._arguments = (source, options, on_diagnostic, fetch_options)
        found = classify(self.source)
        fetch = with_fetch_options(found, options, fetch_options or FetchOptions())
        events = WalkEvents(self.diagnostics.add, options.max_download)
        self._walk = TreeWalk(found, options, fetch, events, probe=probe)
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

    def parts(
        self, fmt: str, folder: str | os.PathLike[str], *, workers: int | None = None
    ) -> Iterator[UrlEntry | UrlRun | Part]:
        """Instead of iterating the reader: `runs()`, with the sitemaps below an index parsed on the other
        cores. Worker processes (`workers`, by default one per core up to 4; with one core, none) fetch
        nothing: the walk fetches each sitemap as before and hands its body to a worker, which parses it
        and writes its entries formatted as `fmt` (`jsonl`, `csv` or `parquet`) to a file in `folder`;
        that sitemap then comes as one `Part`, in its place in the walk. `folder` is the caller's (private,
        removed by the caller); the writers of `reader.export_child` copy parts into the output.
        Diagnostics and the tree are as `runs()` has them, in the same order."""
        check_format(fmt)
        if workers is not None and workers < 0:
            raise UsageError(f"workers must be 0 or more, not {workers}")
        if self._iterator is None:
            n = leaf_workers() if workers is None else workers
            if n > 0:
                walk = self._walk
                walk.leaves = LeafPool(fmt, n, walk.options.max_uncompressed, os.fspath(folder))
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
    """The async face of `Reader`: `async for entry in aread(...)`.

    `probe` is a download of the sitemap `source` a discovery began in this event loop
    (`discover(keep=...)`'s `Discovery.probe`): it is read on from there, not fetched again."""

    def __init__(
        self,
        source: str | os.PathLike[str],
        options: ReadOptions | None = None,
        *,
        on_diagnostic: DiagnosticHandler | None = None,
        fetch_options: FetchOptions | None = None,
        probe: Download | None = None,
    ) -> None:
        super().__init__(source, options or ReadOptions(), on_diagnostic, fetch_options, probe)
        self._iterator: AsyncGenerator[UrlEntry, None] | None = None
        self._batches: AsyncGenerator[Batch, None] | None = None

    @classmethod
    def like(cls, reader: Reader) -> AsyncReader:
        """An `AsyncReader` of what `reader` was made to read, with the same options."""
        source, options, on_diagnostic, fetch_options = reader._arguments
        return cls(source, options, on_diagnostic=on_diagnostic, fetch_options=fetch_options)

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
        await self._walk.drop_probe()  # a probe given, never read: its download stops

    async def __aenter__(self) -> AsyncReader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def read(
    source: str | os.PathLike[str],
    *,
    options: ReadOptions | None = None,
    max_depth: int = DEFAULT_MAX_DEPTH,
    concurrency: int = DEFAULT_CONCURRENCY,
    max_download: int = DEFAULT_MAX_BYTES,
    max_uncompressed: int = DEFAULT_MAX_BYTES,
    timeout: float | None = None,
    connect_timeout: float = 10.0,
    read_timeout: float = 30.0,
    user_agent: str | None = None,
    retries: int = DEFAULT_RETRIES,
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
    do not (redirect limit, backoff, retry budget, and the timing hooks tests use). `options` gives the
    keyword options as one `ReadOptions` instead (then none of them may be given as well).

    The fetch policy (`FetchPolicy`) applies: no private address except on `source`'s own origin
    unless `allow_private`; index children and redirects stay on the site unless `follow_cross_host`.
    `max_duration` bounds one request (connect to last byte); `max_children` and `max_sitemaps`
    bound an index and the whole walk. A local index's children are read
    from its folder (`reader.local.local_child`); those not found there are fetched only with
    `fetch_missing`. Bad arguments raise `UsageError`.

    >>> import sitemapkit, tempfile, os
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "s.txt")
    ...     _ = open(path, "w").write("https://example.com/a\\n")
    ...     [e.loc for e in sitemapkit.reader.walk.read(path)]
    ['https://example.com/a']
    """
    given = ReadOptions(
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
    return Reader(source, _one_of(options, given), on_diagnostic=on_diagnostic, fetch_options=fetch_options)


def _one_of(options: ReadOptions | None, given: ReadOptions) -> ReadOptions:
    """`options` when given (with no keyword option besides), else the keyword options."""
    if options is None:
        return given
    if not isinstance(options, ReadOptions):
        raise UsageError(f"options must be a ReadOptions, not {type(options).__name__}")
    if given != ReadOptions():
        changed = [f.name for f in fields(ReadOptions) if getattr(given, f.name) != f.default]
        raise UsageError(
            f"give either options= or keyword options, not both (also given: {', '.join(changed)})"
        )
    return options


def async_form(sync: Callable[P, Reader]) -> Callable[P, AsyncReader]:
    """The async form of `read`: the same parameters, declared once (on `read`; mypy and
    `inspect.signature` see them), giving an `AsyncReader` instead of a `Reader`."""

    @functools.wraps(sync)
    def aform(*args: P.args, **kwargs: P.kwargs) -> AsyncReader:
        return AsyncReader.like(sync(*args, **kwargs))

    aform.__name__ = aform.__qualname__ = "a" + sync.__name__
    aform.__doc__ = "The async form of `read`: `async for entry in aread(url): ...` (the same parameters)."
    aform.__signature__ = inspect.signature(sync).replace(  # type: ignore[attr-defined]
        return_annotation="AsyncReader"
    )
    return aform


aread = async_form(read)


__all__ = ["AsyncReader", "ReadOptions", "Reader", "SitemapNode", "aread", "read"]
