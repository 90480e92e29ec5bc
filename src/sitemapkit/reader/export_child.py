"""Writing the reader's output in a child process, on another core: `sitemapkit parse` reads and parses in
its own process and hands the entries over as columns; the child formats them (`write_jsonl`, `write_csv`
or `write_parquet`, the same writers) straight into the output file.

Measured on the 1M-URL tree of `bench_parse_tree.py`: formatting JSONL costs the reading process about
0.35 s a million entries, and Parquet about 0.7 s (Arrow columns, and importing pyarrow); handing a run of
entries over costs about 0.28 s (its columns pickled, dates as their text). The child's work overlaps the
reading, and pyarrow's memory is the child's.

The child is this module run with `python -m`, in its own session (Ctrl-C is the parent's to handle); it
reads pickled payloads from its standard input until the end and writes to a file descriptor it inherits.
A failure in the child (a full disk, a closed pipe) comes back to the parent as the `OSError` it met.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pickle
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Final

from sitemapkit.core.dates import parse_w3c
from sitemapkit.core.errors import UsageError
from sitemapkit.core.model import Lastmod, UrlEntry
from sitemapkit.reader.export import TextCache, chunks, write_csv, write_jsonl
from sitemapkit.reader.runs import UrlRun

FORMATS: Final = ("jsonl", "csv", "parquet")
_PIPE_BUFFER: Final = 1 << 20
"""The depth of the pipe to the child."""
_OUT_BUFFER: Final = 1 << 20
_USAGE: Final = -1
"""What the child reports as the errno of a `UsageError` (pyarrow missing)."""


class ChildWriterError(Exception):
    """The child process could not write the output, for a reason other than an `OSError` (its message is
    one line)."""


_END: Final = None
"""The last payload: without it, the child takes the end of its input for the parent's death."""


def _interpreter_flags() -> list[str]:
    """The parent's flags that decide where modules come from, for the child: -I, -E, -s, -P."""
    flags = sys.flags
    if flags.isolated:
        return ["-I"]
    out = ["-P"]  # no folder of the parent's (its working directory) goes before the package
    if flags.ignore_environment:
        out.append("-E")
    if flags.no_user_site:
        out.append("-s")
    return out


class ChildWriter:
    """A child process that writes entries as `fmt` to the open file descriptor `fd`.

    `start()` gives None where no child can be started (no interpreter to run, a frozen application, no
    POSIX file descriptor passing, or a stream without a descriptor): write in this process then."""

    def __init__(
        self, process: subprocess.Popen[bytes], fmt: str, errors: IO[bytes], ready: int, flush_each: bool
    ) -> None:
        self.process = process
        self.fmt = fmt
        self._errors = errors
        self._ready: int | None = ready
        self._flush_each = flush_each

    def _started(self) -> bool:
        """Wait for the child's word that it can write the format (it has had the time the first batch
        took); False if it ended first (a broken pyarrow: known now, not after the walk)."""
        if self._ready is None:
            return True
        try:
            word = os.read(self._ready, 1)
        finally:
            os.close(self._ready)
            self._ready = None
        return word == b"1"

    @classmethod
    def start(cls, fmt: str, out: IO[Any]) -> ChildWriter | None:
        """Start a child writing `fmt` to `out`'s file descriptor (flushed first), or None."""
        if fmt not in FORMATS or os.name != "posix" or not sys.executable or getattr(sys, "frozen", False):
            return None
        try:
            out.flush()
            fd = out.fileno()
            # output someone watches (a pipe, a terminal) gets each batch as it comes; a file gets them in
            # bigger writes (fewer wake-ups of the child: 0.1 to 0.2 s a million entries)
            watched = not stat.S_ISREG(os.fstat(fd).st_mode)
        except (OSError, ValueError, AttributeError):  # not a file (io.UnsupportedOperation), or closed
            return None
        env = dict(os.environ)
        # Arrow's default allocator (mimalloc) keeps freed pages: with the system one the Parquet child
        # peaks about 14 MB lower on the 1M-URL tree, no slower (a pool the user chose is kept)
        env.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
        # The child imports this very sitemapkit: its folder is on the child's path already when it was
        # installed (site-packages, or an editable install's .pth); else (found through the working
        # directory, which -P leaves out) it goes first on PYTHONPATH.
        package = str(Path(__file__).resolve().parent.parent.parent)
        if package not in {os.path.abspath(p) for p in sys.path[1:] if p}:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (package, env.get("PYTHONPATH")) if p)
        duplicate = errors = None
        ready, told = os.pipe()  # the child's word that it can write the format
        try:
            if fd <= 2:  # the child's standard streams take 0 and 2: hand it a copy of the output above them
                fd = duplicate = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
            errors = tempfile.TemporaryFile()  # noqa: SIM115  # closed by write(); not a pipe, which a child
            # that says much would fill and block on
            process = subprocess.Popen(
                [sys.executable, *_interpreter_flags(), "-m", __name__, fmt, str(fd), str(told)],
                stdin=subprocess.PIPE,
                bufsize=_PIPE_BUFFER,
                stderr=errors,
                pass_fds=(fd, told),
                env=env,
                start_new_session=True,  # Ctrl-C is the parent's: the child ends at the end of its input
            )
        except OSError:
            if errors is not None:
                errors.close()
            os.close(ready)
            return None
        finally:
            os.close(told)  # the child has its own copies
            if duplicate is not None:
                os.close(duplicate)
        if process.stdin is not None and hasattr(fcntl, "F_SETPIPE_SZ"):
            # a deeper pipe (64 KiB by default): the reader goes on while the child builds a batch
            with contextlib.suppress(OSError):
                fcntl.fcntl(process.stdin.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BUFFER)
        return cls(process, fmt, errors, ready, watched)

    def write(self, items: Iterable[UrlEntry | UrlRun]) -> int:
        """Hand `items` over (entries, and runs as `Reader.runs()` yields them), each batch as it comes, and
        wait for the child to have written them all; returns how many entries. Raises the `OSError` the
        child met (a `BrokenPipeError` for a closed output pipe), a `UsageError` (pyarrow missing), or
        `ChildWriterError`; the child is gone either way."""
        process = self.process
        assert process.stdin is not None
        texts = TextCache(quoted=False)
        dates, date = texts.dates, texts.date
        dumps, pipe, flush_each = pickle.dumps, process.stdin, self._flush_each
        n = 0
        try:
            try:
                for chunk in chunks(items):
                    if not self._started():
                        break
                    if isinstance(chunk, UrlRun):
                        # locs and dates (as their text: pickling a date object costs ten times more) in
                        # one string each, lines that hold no line break
                        payload: object = (
                            chunk.sitemap,
                            "\n".join(chunk.locs),
                            "\n".join([dates.get(d) or date(d) for d in chunk.lastmods]),
                            chunk.changefreqs,
                            chunk.priorities,
                        )
                        texts.trim()
                    else:
                        payload = chunk
                    # a child that has ended (a broken pyarrow, a full disk) is noticed at the next write
                    # to the pipe, not at the end of the walk
                    pipe.write(dumps(payload, 5))
                    if flush_each:
                        pipe.flush()
                    n += len(chunk)
                else:
                    if self._started():
                        pipe.write(dumps(_END, 5))
                pipe.close()
            except BrokenPipeError:  # the child ended early: its exit status and message say why
                with contextlib.suppress(OSError):
                    pipe.close()  # what is left in its buffer goes nowhere
            status = process.wait()
        except BaseException:
            self.kill()
            raise
        self._errors.seek(0)
        lines = self._errors.read().decode("utf-8", "replace").strip().splitlines()
        self._errors.close()
        if status:
            last = lines[-1] if lines else ""
            code, tab, text = last.partition("\t")
            if tab and code.isdigit() and int(code) > 0:
                raise OSError(int(code), text)
            if tab and code == str(_USAGE):
                raise UsageError(text)
            raise ChildWriterError(
                (text if tab else last) or f"the {self.fmt} writer process ended with status {status}"
            )
        return n

    def kill(self) -> None:
        """Stop the child at once (the output is left incomplete)."""
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(OSError):
            self.process.wait()
        for stream in (self.process.stdin, self._errors):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if self._ready is not None:
            os.close(self._ready)
            self._ready = None


def write_entries(fmt: str, items: Iterable[UrlEntry | UrlRun], out: IO[Any]) -> int:
    """Write `items` as `fmt` to `out` (a text stream for jsonl and csv, binary for parquet): in a child
    process when one can start (see `ChildWriter`), else here. Returns how many entries."""
    child = ChildWriter.start(fmt, out)
    if child is not None:
        return child.write(items)
    return _write(fmt, items, out)


def _write(fmt: str, items: Iterable[UrlEntry | UrlRun], out: IO[Any]) -> int:
    if fmt == "parquet":
        from sitemapkit.reader.parquet import write_parquet

        return write_parquet(items, out)
    return (write_csv if fmt == "csv" else write_jsonl)(items, out)


def _received(stream: IO[bytes], live: IO[Any] | None) -> Iterator[UrlEntry | UrlRun]:
    """What the parent sent: entries, and runs rebuilt from their columns. `live`: an output someone
    watches (a pipe, a terminal), flushed after each batch the writer has taken."""
    load = pickle.load
    parsed: dict[str, Lastmod | None] = {"": None}
    while True:
        try:
            payload = load(stream)
        except EOFError:
            # the parent died: end here, unwinding nothing that would finish the output (a Parquet
            # footer, a last buffer), so that it does not look complete
            os._exit(3)
        if payload is _END:
            return
        if isinstance(payload, list):
            yield from payload
        else:
            sitemap, locs, dates, changefreqs, priorities = payload
            lastmods = dates.split("\n")  # a run holds one entry at least: never an empty string
            run = UrlRun(sitemap)
            run.locs = locs.split("\n")
            for text in set(lastmods).difference(parsed):
                parsed[text] = parse_w3c(text)
            run.lastmods = [parsed[text] for text in lastmods]
            if len(parsed) > 4096:
                parsed = {"": None}
            run.changefreqs = changefreqs
            run.priorities = priorities
            yield run
        if live is not None:
            live.flush()


def _child(fmt: str, fd: int, ready: int) -> int:
    """The child's work: returns its exit status, having said on stderr why (one line) when not 0. Once
    it has what the format needs (pyarrow), it says so on the descriptor `ready`."""
    watched = not stat.S_ISREG(os.fstat(fd).st_mode)
    try:
        if fmt == "parquet":
            from sitemapkit.reader.parquet import arrow_without_pandas, require_pyarrow, schema

            require_pyarrow()
            schema()  # imports pyarrow: a UsageError if it cannot be
            arrow_without_pandas()
        os.write(ready, b"1")
        os.close(ready)
        if fmt == "parquet":
            with open(fd, "wb", buffering=_OUT_BUFFER, closefd=False) as binary:
                _write(fmt, _received(sys.stdin.buffer, binary if watched else None), binary)
        else:
            with open(fd, "w", encoding="utf-8", newline="", buffering=_OUT_BUFFER, closefd=False) as text:
                _write(fmt, _received(sys.stdin.buffer, text if watched else None), text)
    except OSError as exc:
        sys.stderr.write(f"\n{exc.errno or 0}\t{exc.strerror or exc}\n")  # on a line of its own
        return 1
    except UsageError as exc:
        sys.stderr.write(f"\n{_USAGE}\t{exc}\n")
        return 2
    except Exception as exc:  # a bug, or a broken install (pyarrow failing at import): say it in one line
        sys.stderr.write("\n" + f"0\t{type(exc).__name__}: {exc}".splitlines()[0] + "\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
