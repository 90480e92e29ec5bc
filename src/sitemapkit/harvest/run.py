"""`harvest(...)`: read the sitemaps of many sites into a Parquet dataset, locally or on a Ray cluster."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from sitemapkit.core.child import cpus
from sitemapkit.core.errors import UsageError
from sitemapkit.core.runner import blocking_form
from sitemapkit.harvest.options import HarvestOptions
from sitemapkit.harvest.pool import ProcessPool
from sitemapkit.harvest.rows import require_pyarrow
from sitemapkit.harvest.sites import normalize_sites, read_sites, shard
from sitemapkit.harvest.store import new_worker_id, prepare
from sitemapkit.harvest.summary import finish
from sitemapkit.harvest.worker import Worker

Engine = Literal["local", "ray"]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class HarvestProgress:
    """Where a harvest stands, as given to `on_progress` about twice a second."""

    sites_total: int
    """Sites this run reads (those a resumed run had already finished are not counted)."""
    sites_done: int
    urls: int
    errors: int
    """Error diagnostics so far (a site can have many)."""
    site_errors: int
    """Sites that ended with an error (unreachable, no sitemap, ...)."""
    seconds: float

    @property
    def urls_per_second(self) -> float:
        return self.urls / self.seconds if self.seconds > 0 else 0.0

    @property
    def eta(self) -> float | None:
        """Seconds left at the rate of sites so far; None before the first site is done."""
        if not self.sites_done or self.seconds <= 0:
            return None
        return (self.sites_total - self.sites_done) * self.seconds / self.sites_done


ProgressHandler = Callable[[HarvestProgress], None]


async def aharvest(
    sites: str | os.PathLike[str] | Iterable[str],
    out: str | os.PathLike[str],
    *,
    engine: Engine = "local",
    options: HarvestOptions | None = None,
    resume: bool = False,
    workers: int | None = None,
    ray_address: str | None = None,
    on_progress: ProgressHandler | None = None,
) -> dict[str, Any]:
    """Read the sitemaps of every site into the Parquet dataset `out`; returns the summary.

    `sites` is a SITES file (a host or base URL a line, `.gz` allowed) or an iterable of them. `out` gets
    `urls/` (one row per URL), `sites.parquet`, `sitemaps.parquet` and `summary.json`. With `resume`, a
    harvest that was killed is finished: sites already done are kept, the others read again, with no
    duplicate rows. The local engine spreads the sites over `workers` processes (default: one per core
    this process may use; `1`: read in this process), the sites of one host in one of them so that
    `per_host` and `Crawl-delay` hold; `engine="ray"` spreads them over `workers` Ray actors (default: one
    per CPU of the cluster at `ray_address`, or of a local Ray started for the run), in a thread, from
    which `on_progress` is then called. While a worker runs, Python's garbage collector runs less often
    there (`worker.GC_THRESHOLD`; restored after).

    `harvest(...)` is the blocking form, with the same parameters. Cancelling `aharvest` (Ctrl-C in
    `harvest`) stops the harvest: no site is started, the sites finished are committed and the others left
    for `resume=True`; a worker process that fails stops the run with `WorkerFailed`, likewise resumable.
    The process's signal handlers are left alone.
    """
    plan = _Plan(sites, out, engine, options, resume, on_progress)
    if engine == "local":
        counters, used = await _local(plan.root, plan.todo, plan.options, plan.report, workers)
    else:
        from sitemapkit.harvest.ray_engine import run_ray

        stop = threading.Event()
        counters, used = await _stopping(
            asyncio.ensure_future(
                asyncio.to_thread(
                    run_ray,
                    plan.root,
                    plan.todo,
                    plan.options,
                    workers=workers,
                    address=ray_address,
                    report=plan.report,
                    stop=stop,
                )
            ),
            stop.set,
        )
    return plan.finish(counters, used)


harvest = blocking_form(aharvest)


async def _stopping(run: asyncio.Future[T], stop: Callable[[], None]) -> T:
    """The result of `run`; cancelled, `stop()` is called and `run` awaited to its end (however often
    the caller is cancelled meanwhile) before the cancellation goes on."""
    try:
        return await asyncio.shield(run)
    except asyncio.CancelledError:
        stop()
        while not run.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({run})
        if not run.cancelled():
            run.exception()  # retrieved: the cancellation is what the caller hears of
        raise


class _Plan:
    """A harvest's arguments checked, its sites listed and the dataset prepared (before anything is
    fetched); `finish` writes the summary once the engine is done."""

    def __init__(
        self,
        sites: str | os.PathLike[str] | Iterable[str],
        out: str | os.PathLike[str],
        engine: Engine,
        options: HarvestOptions | None,
        resume: bool,
        on_progress: ProgressHandler | None,
    ) -> None:
        self.options = options or HarvestOptions()
        _check(self.options)
        if engine not in ("local", "ray"):
            raise UsageError(f"unknown engine {engine!r}: use local or ray")
        require_pyarrow()  # (imported where needed: here, at the end, with worker processes)
        self.engine = engine
        self.listed = (
            read_sites(sites) if isinstance(sites, str | os.PathLike) else normalize_sites(sites, "<sites>")
        )
        self.root = Path(out).resolve()
        self.done = prepare(self.root, resume=resume)
        self.todo = [site for site in self.listed if site not in self.done]
        self.on_progress = on_progress
        self.started = time.monotonic()

    def report(self, counters: dict[str, int]) -> None:
        if self.on_progress is not None:
            self.on_progress(
                HarvestProgress(
                    len(self.todo),
                    counters.get("sites_done", 0),
                    counters.get("urls", 0),
                    counters.get("errors", 0),
                    counters.get("site_errors", 0),
                    time.monotonic() - self.started,
                )
            )

    def finish(self, counters: dict[str, int], used: int) -> dict[str, Any]:
        self.report(counters)
        run = {
            "engine": self.engine,
            "workers": used,
            "sites_listed": len(self.listed),
            "sites_resumed": len(self.done),
            "sites_this_run": counters.get("sites_done", 0),
            "urls_this_run": counters.get("urls", 0),
            "seconds": round(time.monotonic() - self.started, 3),
        }
        return finish(self.root, run)


async def _local(
    root: Path,
    todo: list[str],
    options: HarvestOptions,
    report: Callable[[dict[str, int]], None],
    workers: int | None,
) -> tuple[dict[str, int], int]:
    """The local engine: the sites sharded by host over `workers` processes (default: one per core), or
    read in this process where there is one shard; returns the counters and the processes used."""
    shards = [s for s in shard(todo, workers or cpus()) if s]
    runner: Worker | ProcessPool
    if len(shards) > 1:
        runner = ProcessPool(root, shards, options)
    else:
        runner = Worker(root, todo, options, new_worker_id("local"))

    async def tick() -> None:
        report(runner.counters() if isinstance(runner, ProcessPool) else runner.counters.as_dict())

    counters = await _stopping(asyncio.ensure_future(runner.run(tick)), runner.stop)
    return counters, max(1, len(shards))


def _check(options: HarvestOptions) -> None:
    for name in ("concurrency", "per_host", "rows_per_file", "row_group_rows"):
        if getattr(options, name) < 1:
            raise UsageError(f"{name} must be at least 1")
    for name in ("max_urls_per_site", "max_sitemaps_per_site"):
        value = getattr(options, name)
        if value is not None and value < 0:
            raise UsageError(f"{name} must be 0 or more")
    if options.max_depth < 0:
        raise UsageError("max_depth must be 0 or more")
