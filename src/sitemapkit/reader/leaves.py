"""Leaf sitemaps parsed on the other cores: `sitemapkit parse` hands the sitemaps below an index to worker
processes that parse them and format their entries, while the walk goes on.

The walk (`TreeWalk`, in the main process) still fetches every sitemap through the run's one fetch and
politeness layer, and still makes every walk-level decision (visited set, loops, caps, the order of
diagnostics). Only the body changes hands: the walk writes it, piece by piece as it arrives, to a file in
a private folder and tells a worker each piece's length; the worker reads the pieces from that file,
parses them (`SitemapParser`, as the walk would), and writes the entries in the output's format to a
part file. When the sitemap's turn to be written comes (walk order), the walk takes the worker's
result: the parser's diagnostics and what it learned of the document, and the part file (a `Part`) for
the writer, which copies it into the output. The output is the same bytes as when the walk parses
everything itself.

A worker tells the walk the document's kind as soon as its parser knows it: a sitemap index's children
decide what the walk reads next, so for an index the walk waits for the worker's result before going
on; for a urlset it goes on at once to the next sitemap (another worker, or a wait for the oldest).

Messages from the walk to a worker are pickles on its stdin (a job, each piece's length, the end);
a worker answers on its stdout with length-prefixed pickles (the kind, then the result). A worker ends
at the end of its input, which a dead parent ends too; its files are in a folder only this user may
read, removed when the walk ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any, Final

from sitemapkit.core.child import leaf_workers, python_command
from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.errors import SitemapkitError, UsageError
from sitemapkit.core.model import IndexEntry, UrlEntry
from sitemapkit.core.runner import interrupts_held
from sitemapkit.reader.runs import Part, UrlRun

__all__ = ["LeafJob", "LeafPool", "LeafResult", "LeafWorkerError", "check_format", "leaf_workers"]

FORMATS: Final = ("jsonl", "csv", "parquet")
_HEADER: Final = struct.Struct("<I")
_CUT_SHORT: Final = frozenset({"parse-error", "compression-error"})
"""What the parser says about a body that ends early: not reported after `download-too-large` (as
`TreeWalk` does)."""
_WORKER_MODULE: Final = "sitemapkit.reader.leaves"
_STOP_GRACE: Final = 5.0
"""Seconds an idle worker may take to end at the end of its input (it may still be importing)."""
_ROOM: Final = " (run with --workers 1, or set TMPDIR to a folder with room)"
_NEW_FILE: Final = (
    os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)

# how a job's body ended (the walk's word to the worker)
CLOSE: Final = "close"
"""Read to its end, or cut short with its tail to be parsed: the parser is closed."""
LEAVE_OPEN: Final = "open"
"""Cut short, its tail not parsed (`WalkEvents.close_cut_body` False)."""
FAILED: Final = "failed"
"""Could not be read on (a local file's read error): not a sitemap."""


def check_format(fmt: str) -> None:
    """A `UsageError` unless leaf workers can write `fmt`."""
    if fmt not in FORMATS:
        raise UsageError(f"parts are written in a format of {', '.join(FORMATS)}, not {fmt!r}")


class LeafWorkerError(SitemapkitError):
    """A worker process that parses sitemaps ended before finishing its job (killed, or a bug: the
    message says what it said)."""


@dataclass(slots=True)
class LeafResult:
    """What a worker learned of one sitemap: the parser's diagnostics (in a file, those of reading it and
    then those of closing it: `diagnostics()`), the index entries it listed, and the document's facts as
    `SitemapParser` has them."""

    kind: str | None
    ok: bool
    compressed: bool
    uncompressed_bytes: int
    truncated: bool
    count: int
    first_error: str | None
    diagnostics_file: str | None = None
    """The diagnostics, pickled one after the other (None: there were none); streamed, never all held:
    a sitemap may have millions."""
    read_count: int = 0
    """How many of them are of reading the body (the rest are of closing it)."""
    children: list[IndexEntry] = field(default_factory=list)
    part: Part | None = None
    """The entries formatted (None when there are none)."""

    def diagnostics(self) -> Iterator[Diagnostic]:
        """The diagnostics in order, read from their file, which is removed."""
        if self.diagnostics_file is None:
            return
        with open(self.diagnostics_file, "rb") as f:
            os.unlink(self.diagnostics_file)
            load = pickle.load
            while True:
                try:
                    yield load(f)
                except EOFError:
                    return


class LeafJob:
    """One sitemap handed to a worker: `feed` its body, `end` it, then `kind()` and `result()`."""

    def __init__(self, worker: _Worker, number: int, body: int, paths: tuple[str, str]) -> None:
        self._worker = worker
        self.number = number
        self._body: int | None = body
        self._paths = paths
        """The body's and the part's files."""
        self._kind: tuple[str | None] | None = None
        self._result: asyncio.Future[LeafResult] | None = None

    def feed(self, piece: bytes) -> None:
        """The next piece of the body, as downloaded (or read from the file). Raises `LeafWorkerError` if
        it cannot be written (a full temporary folder)."""
        assert self._body is not None
        view = memoryview(piece)
        try:
            while view:
                view = view[os.write(self._body, view) :]
        except OSError as exc:
            where, why = os.path.dirname(self._paths[0]), exc.strerror or exc
            raise LeafWorkerError(
                f"cannot write a sitemap's body for the parse workers in {where}: {why}{_ROOM}"
            ) from None
        self._worker.send(("piece", len(piece)))

    def end(self, how: str, capped: bool) -> None:
        """The body ended (`CLOSE`, `LEAVE_OPEN` or `FAILED`); `capped`: a download cap cut it short."""
        if self._body is not None:
            os.close(self._body)
            self._body = None
        self._worker.send(("end", how, capped))

    async def kind(self) -> str | None:
        """The document's kind, as soon as the worker's parser knows it (after `end` at the latest)."""
        if self._kind is None:
            self._kind = (await self._answer("kind"),)
        return self._kind[0]

    def result(self) -> asyncio.Future[LeafResult]:
        """The worker's result, once it has parsed the whole body (the worker is free again then): one
        future, which the walk may await, or leave and come back to."""
        if self._result is None:
            self._result = asyncio.ensure_future(self._receive())
        return self._result

    async def _receive(self) -> LeafResult:
        await self.kind()
        result: LeafResult = await self._answer("done")
        self._worker.job = None
        return result

    async def _answer(self, what: str) -> Any:
        """The worker's next message about this job, which must be `what` ("kind", "done"); a worker that
        could not write its files ("failed") is said in one line."""
        message = await self._worker.receive()
        if message[0] == "failed":
            self._worker.job = None
            raise LeafWorkerError(f"a parse worker could not write its files: {message[2]}{_ROOM}")
        if message[0] != what or message[1] != self.number:  # pragma: no cover - a bug
            raise LeafWorkerError(f"a parse worker answered out of turn: {message[0]!r}")
        return message[2]

    def drop(self) -> None:
        """The walk stopped before taking the result."""
        if self._result is not None and not self._result.done():
            self._result.cancel()
        if self._body is not None:
            with contextlib.suppress(OSError):
                os.close(self._body)
            self._body = None
        for path in self._paths:  # a worker stopped mid-job may have left either
            with contextlib.suppress(OSError):
                os.unlink(path)


class _Worker:
    """One worker process: its stdin written to at once (small messages the worker reads as it goes), its
    stdout read through the event loop (`stdout`, once connected)."""

    def __init__(self, process: subprocess.Popen[bytes], errors: IO[bytes]) -> None:
        self.process = process
        self.errors = errors
        self.job: LeafJob | None = None
        self.stdout: asyncio.StreamReader | None = None
        self.transport: asyncio.BaseTransport | None = None
        self._alive = True

    def send(self, message: tuple[Any, ...]) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        if not self._alive:  # it died: its result says so
            return
        try:
            stdin.write(pickle.dumps(message, 5))
            stdin.flush()
        except (BrokenPipeError, ValueError):  # ended (or closed by `LeafPool.close`)
            self._alive = False

    async def receive(self) -> tuple[Any, ...]:
        stdout = self.stdout
        assert stdout is not None
        try:
            (size,) = _HEADER.unpack(await stdout.readexactly(_HEADER.size))
            message: tuple[Any, ...] = pickle.loads(await stdout.readexactly(size))
        except asyncio.IncompleteReadError:
            self._alive = False
            raise LeafWorkerError(self._why()) from None
        return message

    def _why(self) -> str:
        self.errors.seek(0)
        lines = self.errors.read().decode("utf-8", "replace").strip().splitlines()
        said = f": {lines[-1]}" if lines else ""
        return f"a parse worker process ended before finishing a sitemap{said}"

    def stop(self) -> None:
        """End it (killed if busy) and wait for it, however the walk ended: no process is left behind,
        not even for a moment after the parent (it is reaped here, not by whoever adopts it)."""
        process = self.process
        if self.job is not None:
            self.job.drop()
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        with contextlib.suppress(OSError, ValueError):
            if process.stdin is not None:
                process.stdin.close()  # an idle worker ends at the end of its input
        try:
            process.wait(_STOP_GRACE)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if self.transport is not None:
            self.transport.close()
        self.errors.close()


class LeafPool:
    """Up to `workers` worker processes that parse sitemaps and write their entries as `fmt` to part
    files in `folder` (started when first needed; `close()` stops them). `max_uncompressed` is the
    reader's cap, which each worker's parser applies.

    `folder` is the caller's, private, and removed by the caller once the writer has copied the parts
    (which it does after the walk has ended); no file is created in it through a symlink."""

    def __init__(self, fmt: str, workers: int, max_uncompressed: int, folder: str) -> None:
        check_format(fmt)
        self.fmt = fmt
        self.max_workers = workers
        self.max_uncompressed = max_uncompressed
        self._workers: list[_Worker] = []
        self._folder = folder
        self._numbers = 0

    @property
    def started(self) -> int:
        """How many worker processes were started."""
        return len(self._workers)

    async def begin(self, name: str) -> LeafJob | None:
        """A job for the sitemap `name` (its diagnostics' source) on an idle worker (the first call starts
        them all); None when every worker is busy (the caller takes the oldest job's result)."""
        if not self._workers:  # all at once: each imports the parser while the first body comes
            for _ in range(self.max_workers):
                await self._start()
        worker = next((w for w in self._workers if w.job is None), None)
        if worker is None:
            return None
        self._numbers += 1
        number = self._numbers
        body_path = os.path.join(self._folder, f"{number}.body")
        part_path = os.path.join(self._folder, f"{number}.{self.fmt}")
        flags = (
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        )
        body = os.open(body_path, flags, 0o600)
        job = LeafJob(worker, number, body, (body_path, part_path))
        worker.job = job
        worker.send(("job", number, name, body_path, part_path, self.fmt, self.max_uncompressed))
        return job

    def pids(self) -> list[int]:
        """The process ids of the workers started."""
        return [worker.process.pid for worker in self._workers]

    async def _start(self) -> _Worker:
        errors = tempfile.TemporaryFile()  # noqa: SIM115  # closed by close()
        # started without awaiting, and known to the pool at once: a Ctrl-C at any moment finds every
        # process it has to stop in `_workers`
        process = subprocess.Popen(
            python_command(_WORKER_MODULE),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            start_new_session=True,  # Ctrl-C is the parent's: a worker ends at the end of its input
        )
        worker = _Worker(process, errors)
        self._workers.append(worker)
        reader = asyncio.StreamReader()
        loop = asyncio.get_running_loop()
        worker.transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), process.stdout
        )
        worker.stdout = reader
        return worker

    async def close(self) -> None:
        """Stop the workers: each ends at the end of its input; a busy one (the walk stopped early) is
        killed. Each is waited for here."""
        workers, self._workers = self._workers, []
        # Ctrl-C is held meanwhile: this runs when the walk ends, which an interrupt may be the reason of
        # (a second Ctrl-C would cut the stopping short and leave processes); one that comes while the
        # walk ends normally is lost, the run being over by then
        with interrupts_held():
            for worker in workers:
                if worker.job is not None:
                    worker.stop()
            for worker in workers:
                if worker.job is None:
                    worker.stop()


# -- the worker process -------------------------------------------------------------------------------


def _send(out: IO[bytes], message: tuple[Any, ...]) -> None:
    data = pickle.dumps(message, 5)
    out.write(_HEADER.pack(len(data)) + data)
    out.flush()


def _job(
    number: int,
    name: str,
    body_path: str,
    part_path: str,
    fmt: str,
    max_uncompressed: int,
    inbox: IO[bytes],
    out: IO[bytes],
) -> LeafResult:
    from sitemapkit.reader.export import chunks, write_csv, write_jsonl
    from sitemapkit.reader.export_child import Encoder
    from sitemapkit.reader.parser import SitemapParser

    closing: list[bool] = []  # set once the parser is being closed
    capped: list[bool] = []
    counts = [0, 0]  # diagnostics of reading, of closing
    first_error: list[str] = []
    diagnostics_path = part_path + ".diagnostics"
    spool: list[IO[bytes]] = []

    def on_diagnostic(d: Diagnostic) -> None:
        if closing:
            if capped and d.code in _CUT_SHORT:
                return
            counts[1] += 1
        else:
            counts[0] += 1
        if not spool:
            spool.append(open(diagnostics_path, "xb"))  # noqa: SIM115  # closed below
        pickle.dump(d, spool[0], 5)
        if d.is_error and not first_error:
            first_error.append(f"[{d.code}] {d.message}")

    parser = SitemapParser(name, on_diagnostic=on_diagnostic, max_uncompressed=max_uncompressed, runs=True)
    children: list[IndexEntry] = []
    told: list[bool] = []

    def tell_kind() -> None:
        if not told and parser.kind is not None:
            told.append(True)
            _send(out, ("kind", number, parser.kind))

    def route(entries: list[Any]) -> Iterator[UrlEntry | UrlRun]:
        for entry in entries:
            if entry.__class__ is IndexEntry:
                children.append(entry)
            else:
                yield entry

    def entries(body: IO[bytes]) -> Iterator[UrlEntry | UrlRun]:
        load = pickle.load
        while True:
            message = load(inbox)
            if message[0] == "piece":
                piece = body.read(message[1])
                for batch in parser.feed_pieces(piece):
                    tell_kind()
                    if batch:
                        yield from route(batch)
                continue
            _, how, cut = message
            if cut:
                capped.append(True)
            if how == FAILED:
                parser.ok = False
            elif how == CLOSE:
                closing.append(True)
                yield from route(parser.close())
            return

    with open(body_path, "rb") as body, contextlib.ExitStack() as stack:
        stack.callback(lambda: spool and spool[0].close())
        os.unlink(body_path)
        if fmt == "parquet":
            encode = Encoder()
            count = 0
            with open(part_path, "xb") as binary:
                for chunk in chunks(entries(body)):
                    binary.write(encode(chunk))
                    count += len(chunk)
                binary.write(pickle.dumps(None, 5))  # the writer child's end of payloads
        else:
            with open(part_path, "x", encoding="utf-8", newline="") as text:
                if fmt == "csv":
                    count = write_csv(entries(body), text, header=False)
                else:
                    count = write_jsonl(entries(body), text)
    if not told:
        _send(out, ("kind", number, parser.kind))
    part = Part(part_path, count) if count else None
    if part is None:
        os.unlink(part_path)
    return LeafResult(
        kind=parser.kind,
        ok=parser.ok,
        compressed=parser.compressed,
        uncompressed_bytes=parser.uncompressed_bytes,
        truncated=parser.truncated,
        count=count,
        first_error=first_error[0] if first_error else None,
        diagnostics_file=diagnostics_path if spool else None,
        read_count=counts[0],
        children=children,
        part=part,
    )


def main() -> int:
    """A worker process: jobs from stdin, one at a time, until its end."""
    import sitemapkit.reader.export_child
    import sitemapkit.reader.parser  # noqa: F401  # now, while the walk writes the first body

    inbox, out = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            message = pickle.load(inbox)
        except EOFError:
            return 0
        _, number, name, body_path, part_path, fmt, max_uncompressed = message
        try:
            result = _job(number, name, body_path, part_path, fmt, max_uncompressed, inbox, out)
        except OSError as exc:  # its files (a full temporary folder): the walk stops with this message
            _send(out, ("failed", number, f"{exc.strerror or exc}: {exc.filename or part_path}"))
            return 1
        _send(out, ("done", number, result))
