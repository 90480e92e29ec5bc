"""The Ray engine: the same `Worker` in Ray actors, one asyncio loop each over a shard of the sites.

Sites are sharded by host name, so one host is only ever read by one actor and `per_host` holds across
the cluster. Each actor writes its own part files and manifest into DATASET, which must therefore be a
path every node of the cluster sees (a shared file system). The driver polls the actors' counters for
one progress display and writes the summary once they are done.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sitemapkit.core.errors import UsageError
from sitemapkit.harvest.options import HarvestOptions
from sitemapkit.harvest.sites import shard
from sitemapkit.harvest.store import new_worker_id
from sitemapkit.harvest.worker import Worker
from sitemapkit.reader.parquet import arrow_without_pandas

INSTALL_HINT = "--engine ray needs Ray: pip install 'sitemapkit[ray]'"


class HarvestActor:
    """One Ray actor: a `Worker` over its shard (an async actor, so `counters` answers while `run` runs)."""

    def __init__(self, root: str, sites: list[str], options: HarvestOptions, worker_id: str) -> None:
        arrow_without_pandas()  # the actor's process is the harvest's own
        self.worker = Worker(root, sites, options, worker_id)

    async def run(self) -> dict[str, int]:
        return await self.worker.run()

    async def counters(self) -> dict[str, int]:
        return self.worker.counters.as_dict()


def _ray() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise UsageError(INSTALL_HINT) from None


def run_ray(
    root: Path,
    todo: list[str],
    options: HarvestOptions,
    *,
    workers: int | None,
    address: str | None,
    report: Callable[[dict[str, int]], None],
) -> tuple[dict[str, int], int]:
    """Run the harvest on Ray; returns the summed counters and the number of actors used."""
    ray = _ray()
    started_here = False
    if not ray.is_initialized():
        try:
            if address is None:  # a Ray of our own for this run (or the one RAY_ADDRESS names)
                ray.init(include_dashboard=False, log_to_driver=False)
            else:
                ray.init(address=address, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = address or "a local Ray"
            raise UsageError(f"cannot start or reach {where}: {exc}") from None
        started_here = True
    try:
        count = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        shards = [s for s in shard(todo, count) if s] or [[]]
        actor_class = ray.remote(num_cpus=1)(HarvestActor)
        actors = [
            actor_class.remote(str(root), sites, options, new_worker_id(f"ray{i}"))
            for i, sites in enumerate(shards)
        ]
        try:
            pending = [actor.run.remote() for actor in actors]
            refs = list(pending)
            while pending:
                _, pending = ray.wait(pending, num_returns=len(pending), timeout=0.5)
                report(_sum(ray.get([actor.counters.remote() for actor in actors])))
            results = ray.get(refs)
        finally:
            for actor in actors:
                ray.kill(actor)
        return _sum(results), len(actors)
    finally:
        if started_here:
            ray.shutdown()


def _sum(parts: list[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for part in parts:
        for key, value in part.items():
            total[key] = total.get(key, 0) + value
    return total
