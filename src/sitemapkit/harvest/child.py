"""One worker process of the local engine (`pool.ProcessPool` starts it): a `Worker` over its shard.

Its job comes as one JSON line on stdin (`pool.job_line`); stdin then stays open, and its end (the parent
closed it, or died: no other process holds that pipe) stops the worker as Ctrl-C stops a harvest: no site
is started, those being read are left unfinished, those finished are committed. It reports on its own
channel (a copy of the stdout it was given; its stdout proper is its stderr, so that nothing else written
there mixes in): `{"counters": ...}` twice a second, then `{"done": ...}`, or `{"error": ...}` and exit
status 1. Ctrl-C is the parent's to handle (it is ignored here); SIGTERM stops the worker like the end of
stdin. On Linux the process also asks for SIGTERM when its parent ends (`PR_SET_PDEATHSIG`), and a worker
still running `EXIT_AFTER` seconds after being told to stop ends at once (its open part is not published).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
import time
import traceback
from typing import IO, Any, Final

from sitemapkit.core.errors import SitemapkitError
from sitemapkit.harvest.options import HarvestOptions
from sitemapkit.harvest.worker import Worker

EXIT_AFTER: Final = 30.0
"""Seconds a worker told to stop may take to commit what it finished before it ends regardless."""
_PR_SET_PDEATHSIG: Final = 1


class _Channel:
    """Messages to the parent, a JSON object a line; a parent gone stops the worker."""

    def __init__(self, stream: IO[str], worker: Worker) -> None:
        self.stream = stream
        self.worker = worker
        self.lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        with self.lock:
            try:
                self.stream.write(json.dumps(message, separators=(",", ":")) + "\n")
                self.stream.flush()
            except (BrokenPipeError, ValueError, OSError):  # the parent is gone
                self.worker.stop()


def _die_with_parent(parent: int) -> None:
    """SIGTERM when the parent ends (Linux); a parent already gone stops the process at once."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):  # a libc without prctl: the end of stdin is enough
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _watch_stdin(loop: asyncio.AbstractEventLoop, worker: Worker) -> None:
    """Wait for the end of stdin, then stop the worker; end the process if it is still there later."""
    with contextlib.suppress(OSError, ValueError):
        while os.read(0, 65536):  # (the raw descriptor: a buffered read would hold a lock at exit)
            pass
    with contextlib.suppress(RuntimeError):  # the loop is closed: the run is over already
        loop.call_soon_threadsafe(worker.stop)
    time.sleep(EXIT_AFTER)
    os._exit(1)


async def _run(worker: Worker, channel: _Channel) -> dict[str, int]:
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGTERM, worker.stop)
    threading.Thread(target=_watch_stdin, args=(loop, worker), daemon=True).start()

    async def tick() -> None:
        channel.send({"counters": worker.counters.as_dict()})

    return await worker.run(tick)


def main() -> int:
    """Run the job read from stdin; the exit status says how it went (0: done)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stream = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    line = sys.stdin.buffer.readline()
    if not line:  # the parent went away before giving a job
        return 1
    job = json.loads(line)
    _die_with_parent(int(job["parent"]))
    # Arrow's own allocator keeps what it freed for a while: each row group's conversion, held again
    # at the next; the system's hands it back (about 15 MB less a process, at the same speed)
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    from sitemapkit.reader.parquet import arrow_without_pandas

    arrow_without_pandas()  # this process is the harvest's own
    worker = Worker(job["root"], list(job["sites"]), HarvestOptions(**job["options"]), str(job["worker_id"]))
    channel = _Channel(stream, worker)
    try:
        counters = asyncio.run(_run(worker, channel))
    except BaseException as exc:  # reported to the parent, which says it in its own words
        error: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
        if not isinstance(exc, SitemapkitError | OSError):  # a bug: its traceback, on stderr
            traceback.print_exc()
        if isinstance(exc, OSError):
            error.update(errno=exc.errno, strerror=exc.strerror, filename=exc.filename)
        channel.send({"error": error})
        if not isinstance(exc, Exception):
            raise
        return 1
    channel.send({"done": counters})
    return 0


if __name__ == "__main__":
    sys.exit(main())
