"""Writing the reader's output in a child process, on another core: `sitemapkit parse` reads and parses in
its own process and hands the entries over as columns; the child formats them (`write_jsonl`, `write_csv`
or `write_parquet`, the same writers) straight into the output file.

Measured on the 1M-URL tree of `bench_parse_tree.py`: formatting JSONL costs the reading process about
0.35 s a million entries, and Parquet about 0.7 s (Arrow columns, and importing pyarrow); handing a run of
entries over costs about 0.2 s (its columns pickled, dates as their text). The child's work overlaps the
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
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Final

from sitemapkit.core.dates import parse_w3c
from sitemapkit.core.errors import UsageError
from sitemapkit.core.model import Lastmod, UrlEntry
from sitemapkit.reader.export import _Texts, chunks, write_csv, write_jsonl
from sitemapkit.reader.runs import UrlRun

FORMATS: Final = ("jsonl", "csv", "parquet")
_PIPE_BUFFER: Final = 1 << 20
_OUT_BUFFER: Final = 1 << 20
_USAGE: Final = -1
"""What the child reports as the errno of a `UsageError` (pyarrow missing)."""


class ChildWriterError(Exception):
    """The child process could not write the output, for a reason other than an `OSError`."""


class ChildWriter:
    """A child process that writes entries as `fmt` to the open file descriptor `fd`.

    `start()` gives None where no child can be started (no interpreter path, no POSIX file descriptor
    passing, or a stream without a descriptor): write in this process then."""

    def __init__(self, process: subprocess.Popen[bytes], fmt: str) -> None:
        self.process = process
        self.fmt = fmt

    @classmethod
    def start(cls, fmt: str, out: IO[Any]) -> ChildWriter | None:
        """Start a child writing `fmt` to `out`'s file descriptor (flushed first), or None."""
        if fmt not in FORMATS or os.name != "posix" or not sys.executable:
            return None
        try:
            out.flush()
            fd = out.fileno()
        except (OSError, ValueError):  # io.UnsupportedOperation is both: a stream that is not a file
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
        try:
            process = subprocess.Popen(
                # -P: no folder of the parent's (its working directory) goes before the package
                [sys.executable, "-P", "-m", __name__, fmt, str(fd)],
                stdin=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(fd,),
                env=env,
                bufsize=_PIPE_BUFFER,
                start_new_session=True,  # Ctrl-C is the parent's: the child ends at the end of its input
            )
        except OSError:
            return None
        if process.stdin is not None and hasattr(fcntl, "F_SETPIPE_SZ"):
            # a deeper pipe (64 KiB by default): the reader goes on while the child builds a batch
            with contextlib.suppress(OSError):
                fcntl.fcntl(process.stdin.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BUFFER)
        return cls(process, fmt)

    def write(self, items: Iterable[UrlEntry | UrlRun]) -> int:
        """Hand `items` over (entries, and runs as `Reader.runs()` yields them) and wait for the child to
        have written them all; returns how many entries. Raises the `OSError` the child met (a
        `BrokenPipeError` for a closed output pipe), or `ChildWriterError`; the child is gone either way."""
        process = self.process
        assert process.stdin is not None and process.stderr is not None
        texts = _Texts(quoted=False)
        dates, date = texts.dates, texts.date
        dump, pipe = pickle.dump, process.stdin
        n = 0
        try:
            try:
                for chunk in chunks(items):
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
                    dump(payload, pipe, 5)
                    n += len(chunk)
                pipe.close()
            except BrokenPipeError:
                pass  # the child ended early: its exit status and message say why
            status = process.wait()
            message = process.stderr.read().decode("utf-8", "replace").strip()
        except BaseException:
            self.kill()
            raise
        process.stderr.close()
        if status:
            code, _, text = message.partition("\t")
            if code.lstrip("-").isdigit() and int(code) > 0:
                raise OSError(int(code), text)
            if code == str(_USAGE):
                raise UsageError(text)
            raise ChildWriterError(message or f"the {self.fmt} writer process ended with status {status}")
        return n

    def kill(self) -> None:
        """Stop the child at once (the output is left incomplete)."""
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(OSError):
            self.process.wait()
        for pipe in (self.process.stdin, self.process.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


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


def _received(stream: IO[bytes]) -> Iterator[UrlEntry | UrlRun]:
    """What the parent sent: entries, and runs rebuilt from their columns."""
    load = pickle.load
    parsed: dict[str, Lastmod | None] = {"": None}
    while True:
        try:
            payload = load(stream)
        except EOFError:
            return
        if isinstance(payload, list):
            yield from payload
            continue
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


def _child(fmt: str, fd: int) -> int:
    """The child's work: returns its exit status, having said on stderr why when not 0."""
    try:
        if fmt == "parquet":
            with open(fd, "wb", buffering=_OUT_BUFFER, closefd=False) as binary:
                _write(fmt, _received(sys.stdin.buffer), binary)
        else:
            with open(fd, "w", encoding="utf-8", newline="", buffering=_OUT_BUFFER, closefd=False) as text:
                _write(fmt, _received(sys.stdin.buffer), text)
    except OSError as exc:
        sys.stderr.write(f"{exc.errno or 0}\t{exc.strerror or exc}\n")
        return 1
    except UsageError as exc:
        sys.stderr.write(f"{_USAGE}\t{exc}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1], int(sys.argv[2])))
