"""One worker of a harvest: an asyncio loop over a shard of the sites, writing its own part files.

The local engine runs one in the calling process, or one per worker process (`pool`); the Ray engine runs
one per actor.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import os
from collections.abc import Awaitable, Callable, Iterator

from sitemapkit.harvest.options import HarvestOptions
from sitemapkit.harvest.site import Counters, SiteJob
from sitemapkit.harvest.sites import group_by_host
from sitemapkit.harvest.store import PartWriter
from sitemapkit.reader.fetch import Fetcher, FetchOptions

RECYCLE_AFTER = 10_000
"""Sites after which the shared discovery client is replaced (it keeps a little state per host)."""
GC_THRESHOLD = 20_000
"""The cyclic garbage collector's first threshold while a worker runs (Python's default is 700). The row
buffers and the parser's runs are long young lists, which each collection of the youngest generation
scans whole: with the default, collection took 7% of a harvest's CPU; with this, under 1% (measured on
300 loopback sites of 5,000 URLs), at the same peak memory."""


class _Discovery:
    """The discovery client the lanes share, replaced every `RECYCLE_AFTER` sites so that its per-host
    state stays bounded; a replaced client is closed once its last site is done with it."""

    def __init__(self, options: FetchOptions) -> None:
        self.options = options
        self.current: Fetcher | None = None
        self.given = 0
        self.users: dict[Fetcher, int] = {}

    def acquire(self) -> Fetcher:
        if self.current is None or self.given >= RECYCLE_AFTER:
            self.current = Fetcher(self.options)
            self.users[self.current] = 0
            self.given = 0
        self.given += 1
        self.users[self.current] += 1
        return self.current

    async def release(self, fetcher: Fetcher) -> None:
        self.users[fetcher] -= 1
        if not self.users[fetcher] and fetcher is not self.current:
            del self.users[fetcher]
            await fetcher.aclose()

    async def aclose(self) -> None:
        for fetcher in list(self.users):
            await fetcher.aclose()
        self.users.clear()
        self.current = None


class Worker:
    """Reads `sites` with at most `options.concurrency` sites at once, sites of one host one after another."""

    def __init__(
        self, root: str | os.PathLike[str], sites: list[str], options: HarvestOptions, worker_id: str
    ) -> None:
        self.root = root
        self.sites = sites
        self.options = options
        self.worker_id = worker_id
        self.counters = Counters()
        self._stopping = False
        self._lanes: list[asyncio.Task[None]] = []

    def stop(self) -> None:
        """End the run soon: no site is started, those being read are cancelled and left unfinished, the
        sites finished so far are committed. Safe to call again (a cancellation can be lost inside a
        library; the flag is not)."""
        self._stopping = True
        for task in self._lanes:
            task.cancel()

    async def run(self, tick: Callable[[], Awaitable[None]] | None = None) -> dict[str, int]:
        """Read every site; returns the final counters. On any interruption the open part is dropped
        (its sites stay unfinished for `--resume`)."""
        options = self.options
        writer = PartWriter(
            self.root,
            self.worker_id,
            rows_per_file=options.rows_per_file,
            row_group_rows=options.row_group_rows,
            commit_seconds=options.commit_seconds,
        )
        # one politeness layer for every site of this worker: robots.txt once per host, each host paced
        # by its Crawl-delay whichever site's sitemaps lead there, the per-host limit across sites
        politeness = options.politeness()
        fetch_options = dataclasses.replace(options.fetch_options(), politeness=politeness)
        groups = iter(group_by_host(self.sites))
        lanes = max(1, min(options.concurrency, len(self.sites)))
        discovery = _Discovery(
            dataclasses.replace(options.discovery_fetch_options(lanes), politeness=politeness)
        )

        async def lane() -> None:
            for group in groups:
                for site in group:
                    if self._stopping:
                        return
                    fetcher = discovery.acquire()
                    try:
                        job = SiteJob(site, options, fetch_options, fetcher, writer, self.counters)
                        record = await job.run()
                    finally:
                        await discovery.release(fetcher)
                    if self._stopping:  # cut short, whatever it says: read again on --resume
                        return
                    writer.site_done(record)

        ticker = asyncio.create_task(every(tick)) if tick is not None else None
        try:
            with _fewer_collections():
                async with asyncio.TaskGroup() as group:  # one lane failing stops the others
                    self._lanes = [group.create_task(lane()) for _ in range(lanes)]
        except BaseExceptionGroup as failed:
            writer.abandon()
            raise failed.exceptions[0] from None
        except BaseException:
            writer.abandon()
            raise
        finally:
            await discovery.aclose()
            if ticker is not None:
                ticker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticker
        writer.close()
        return self.counters.as_dict()


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """Raise the collector's first threshold to `GC_THRESHOLD` for the block (restored after; left alone
    if it is higher already). Python-wide while it lasts: other threads see it too."""
    previous = gc.get_threshold()
    gc.set_threshold(max(previous[0], GC_THRESHOLD), *previous[1:])
    try:
        yield
    finally:
        gc.set_threshold(*previous)


async def every(tick: Callable[[], Awaitable[None]], seconds: float = 0.5) -> None:
    """Await `tick()` every `seconds`, until cancelled."""
    while True:
        await asyncio.sleep(seconds)
        await tick()
