"""The local engine's worker processes: the sites sharded by host as the Ray engine shards them (`shard`),
one `Worker` process (`child`) per shard, its progress and its end read from a pipe.

A host belongs to one shard, so `per_host` and `Crawl-delay` hold across the processes as they do within
one. Each process writes its own part files and manifest into DATASET; the parent only sums progress and,
once every process ended well, the caller writes the summary. No process outlives the parent: each stops
when its stdin (a pipe from the parent alone) ends, which a dead parent ends too. A process that fails or
dies stops the others (each commits the sites it finished) and the run raises `WorkerFailed`; nothing of
the end (sites.parquet, sitemaps.parquet, summary.json) is written, and `resume=True` finishes the harvest.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final, Protocol

from sitemapkit.core.child import python_command
from sitemapkit.core.errors import InputError, SitemapkitError, UsageError
from sitemapkit.harvest.options import HarvestOptions
from sitemapkit.harvest.store import new_worker_id
from sitemapkit.harvest.worker import every

STOP_GRACE: Final = 30.0
"""Seconds a process told to stop may take to commit what it finished before it is killed."""
_LINE_LIMIT: Final = 1 << 20
_KNOWN: Final[dict[str, type[SitemapkitError]]] = {"InputError": InputError, "UsageError": UsageError}


class WorkerFailed(SitemapkitError):
    """A worker process of the local engine failed or was killed; the others were stopped, the sites
    finished are kept (run again with `resume=True`)."""


class Stoppable(Protocol):
    """What the engine runs: a `Worker` in this process, or a `ProcessPool` of them."""

    def stop(self) -> None: ...

    async def run(self, tick: Callable[[], Awaitable[None]] | None = None) -> dict[str, int]: ...


def sum_counters(parts: list[dict[str, int]]) -> dict[str, int]:
    """Counters of several workers, added up."""
    total: dict[str, int] = {}
    for part in parts:
        for key, value in part.items():
            total[key] = total.get(key, 0) + value
    return total


@dataclasses.dataclass
class _Child:
    number: int
    process: asyncio.subprocess.Process
    counters: dict[str, int] = dataclasses.field(default_factory=dict)
    done: bool = False
    error: dict[str, Any] | None = None

    def stop(self) -> None:
        stdin = self.process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()


class ProcessPool:
    """`shards` read by one worker process each; `concurrency` is shared out between them (the sites the
    run reads at once, in all)."""

    def __init__(
        self, root: str | os.PathLike[str], shards: list[list[str]], options: HarvestOptions
    ) -> None:
        self.root = Path(root)
        self.shards = shards
        share = max(1, -(-options.concurrency // max(1, len(shards))))
        self.options = dataclasses.replace(options, concurrency=share)
        self.children: list[_Child] = []
        self._stopping = False

    def stop(self) -> None:
        """End the run soon: every process is told to stop (it commits the sites it finished)."""
        self._stopping = True
        for child in self.children:
            child.stop()

    def counters(self) -> dict[str, int]:
        return sum_counters([child.counters for child in self.children])

    async def run(self, tick: Callable[[], Awaitable[None]] | None = None) -> dict[str, int]:
        """Start the processes and wait for them; returns the summed counters. Raises `WorkerFailed` (or
        the error a process met, such as `InputError`) once the others have stopped."""
        ticker = asyncio.create_task(every(tick)) if tick is not None else None
        readers: list[asyncio.Task[_Child]] = []
        try:
            for number, sites in enumerate(self.shards):
                if self._stopping:
                    break
                child = await self._start(number, sites)
                readers.append(asyncio.create_task(_read(child)))
            failed: _Child | None = None
            for finished in asyncio.as_completed(readers):
                child = await finished
                if not child.done and failed is None:
                    failed = child
                    self.stop()
            if failed is not None:
                raise self._failure(failed)
            return self.counters()
        finally:
            if ticker is not None:
                ticker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await ticker
            await self._reap(readers)

    async def _start(self, number: int, sites: list[str]) -> _Child:
        process = await asyncio.create_subprocess_exec(
            *python_command("sitemapkit.harvest.child"),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=_LINE_LIMIT,
        )
        child = _Child(number, process)
        self.children.append(child)
        assert process.stdin is not None
        job = {
            "parent": os.getpid(),
            "root": str(self.root),
            "sites": sites,
            "options": dataclasses.asdict(self.options),
            "worker_id": new_worker_id(f"local{number}"),
        }
        process.stdin.write(json.dumps(job).encode() + b"\n")
        with contextlib.suppress(ConnectionError):  # it died at once: its reader says so
            await process.stdin.drain()
        if self._stopping:
            child.stop()
        return child

    async def _reap(self, readers: list[asyncio.Task[_Child]]) -> None:
        """Wait for every process to end, `STOP_GRACE` seconds at most once told to stop, then kill it."""
        running = [task for task in readers if not task.done()]
        if running:
            self.stop()
            try:
                _, late = await asyncio.wait(running, timeout=STOP_GRACE)
            except asyncio.CancelledError:  # cancelled again: no more patience
                self._kill()
                raise
            if late:
                self._kill()
                await asyncio.wait(late)

    def _kill(self) -> None:
        for child in self.children:
            if child.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    child.process.kill()

    def _failure(self, child: _Child) -> BaseException:
        error = child.error or {}
        kind, message = str(error.get("type", "")), str(error.get("message", ""))
        if kind in _KNOWN:
            return _KNOWN[kind](message)
        if error.get("errno") is not None and error.get("strerror"):
            return OSError(error["errno"], error["strerror"], error.get("filename"))
        code = child.process.returncode
        if code is not None and code < 0:
            how = f"was killed by {_signal_name(-code)}"
        elif error:
            how = f"failed: {kind}: {message}"
        else:
            how = f"ended with exit status {code} before it was done"
        return WorkerFailed(
            f"harvest worker {child.number + 1} of {len(self.shards)} (process {child.process.pid}) {how}; "
            "the other workers were stopped and the sites finished are kept: run again with --resume "
            "(resume=True) to finish the harvest"
        )


async def _read(child: _Child) -> _Child:
    stdout = child.process.stdout
    assert stdout is not None
    async for line in stdout:
        with contextlib.suppress(ValueError):
            message = json.loads(line)
            if "counters" in message:
                child.counters = message["counters"]
            elif "done" in message:
                child.counters = message["done"]
                child.done = True
            elif "error" in message:
                child.error = message["error"]
    await child.process.wait()
    child.done = child.done and child.process.returncode == 0
    return child


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
