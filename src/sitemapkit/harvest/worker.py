"""One worker of a harvest: an asyncio loop over a shard of the sites, writing its own part files.

The local engine runs one worker in the calling process; the Ray engine runs one per actor.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable

from sitemapkit.harvest.options import HarvestOptions
from sitemapkit.harvest.site import Counters, DiscoveryFetcher, SiteJob
from sitemapkit.harvest.sites import group_by_host
from sitemapkit.harvest.store import PartWriter


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
        fetch_options = options.fetch_options()
        groups = iter(group_by_host(self.sites))

        async def lane() -> None:
            for group in groups:
                for site in group:
                    record = await SiteJob(site, options, fetch_options, fetcher, writer, self.counters).run()
                    writer.site_done(record)

        lanes = max(1, min(options.concurrency, len(self.sites)))
        fetcher = DiscoveryFetcher(options.discovery_fetch_options(lanes))
        ticker = asyncio.create_task(_every(tick)) if tick is not None else None
        try:
            async with fetcher:
                await asyncio.gather(*(lane() for _ in range(lanes)))
        except BaseException:
            writer.abandon()
            raise
        finally:
            if ticker is not None:
                ticker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticker
        writer.close()
        return self.counters.as_dict()


async def _every(tick: Callable[[], Awaitable[None]], seconds: float = 0.5) -> None:
    while True:
        await asyncio.sleep(seconds)
        await tick()
