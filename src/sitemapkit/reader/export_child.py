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
import errno
import fcntl
import os
import pickle
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any, Final, cast

from sitemapkit.core.child import leaf_workers, python_command
from sitemapkit.core.dates import parse_w3c
from sitemapkit.core.errors import Terminated, UsageError
from sitemapkit.core.model import Lastmod, UrlEntry
from sitemapkit.core.runner import interrupts_held
from sitemapkit.reader.export import TextCache, chunks, write_csv, write_jsonl
from sitemapkit.reader.runs import Part, UrlRun

if TYPE_CHECKING:
    from sitemapkit.reader.walk import Reader

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
        duplicate = errors = None
        ready, told = os.pipe()  # the child's word that it can write the format
        try:
            if fd <= 2:  # the child's standard streams take 0 and 2: hand it a copy of the output above them
                fd = duplicate = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
            errors = tempfile.TemporaryFile()  # noqa: SIM115  # closed by write(); not a pipe, which a child
            # that says much would fill and block on
            process = subprocess.Popen(
                python_command(__name__, fmt, str(fd), str(told)),
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

    def write(self, items: Iterable[UrlEntry | UrlRun | Part]) -> int:
        """Hand `items` over (entries, and runs as `Reader.runs()` yields them), each batch as it comes, and
        wait for the child to have written them all; returns how many entries. Raises the `OSError` the
        child met (a `BrokenPipeError` for a closed output pipe), a `UsageError` (pyarrow missing), or
        `ChildWriterError`; the child is gone either way."""
        process = self.process
        assert process.stdin is not None
        encode = Encoder()
        pipe, flush_each = process.stdin, self._flush_each
        n = 0
        try:
            try:
                for chunk in chunks_and_parts(items):
                    if not self._started():
                        break
                    # a child that has ended (a broken pyarrow, a full disk) is noticed at the next write
                    # to the pipe, not at the end of the walk
                    pipe.write(encode(chunk))
                    if flush_each:
                        pipe.flush()
                    n += len(chunk)
                else:
                    if self._started():
                        pipe.write(pickle.dumps(_END, 5))
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


def write_reader(
    fmt: str,
    reader: Reader,
    out: IO[Any],
    wrap: Callable[[Iterator[UrlEntry | UrlRun | Part]], Iterable[UrlEntry | UrlRun | Part]] | None = None,
    *,
    workers: int | None = None,
) -> int:
    """Write the entries `reader` reads as `fmt` to `out`, as `write_entries` does; with a child process,
    the sitemaps below an index are parsed and formatted by leaf workers meanwhile (`Reader.parts`, their
    part files in a private folder removed here; `workers` as `Reader.parts` takes it). `wrap` sees the
    items on their way (a progress line)."""
    child = ChildWriter.start(fmt, out)
    if child is None:
        runs: Iterator[Any] = reader.runs()
        return _write(fmt, cast("Iterable[UrlEntry | UrlRun]", wrap(runs) if wrap is not None else runs), out)
    n = leaf_workers() if workers is None else workers
    folder = _parts_folder() if n > 0 else None
    try:
        items = reader.parts(fmt, folder, workers=n) if folder is not None else reader.runs()
        return child.write(wrap(items) if wrap is not None else items)
    except BaseException as exc:
        child.kill()
        with interrupts_held() as came:  # a second Ctrl-C waits until the workers are stopped
            reader.close()  # the workers stop before their folder goes
        if came and not isinstance(exc, KeyboardInterrupt | Terminated):
            raise KeyboardInterrupt from exc
        raise
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


_PARTS_PREFIX: Final = "sitemapkit-parts-"


def _parts_folder() -> str:
    """A private folder for the leaf workers' files (mode 0700, this process's id in its name), once the
    folders of runs that died without removing theirs (killed) are gone."""
    temp = tempfile.gettempdir()
    _sweep_stale_parts(temp)
    return tempfile.mkdtemp(prefix=f"{_PARTS_PREFIX}{os.getpid()}-", dir=temp)


def _sweep_stale_parts(temp: str) -> None:
    """Remove the parts folders in `temp` of this user whose process is gone."""
    try:
        names = os.listdir(temp)
    except OSError:
        return
    for name in names:
        pid = name[len(_PARTS_PREFIX) :].partition("-")[0]
        if not name.startswith(_PARTS_PREFIX) or not pid.isdigit():
            continue
        path = os.path.join(temp, name)
        try:
            info = os.lstat(path)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
                continue
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except (OSError, OverflowError):  # alive under another user, or not ours to judge
            continue


def _write(fmt: str, items: Iterable[UrlEntry | UrlRun], out: IO[Any]) -> int:
    if fmt == "parquet":
        from sitemapkit.reader.parquet import write_parquet

        return write_parquet(items, out)
    return (write_csv if fmt == "csv" else write_jsonl)(items, out)


class Encoder:
    """Payloads as the writer child reads them (`pickle`): a list of entries as it is; a run as its
    columns, its dates as their text (pickling a date object costs ten times more) and locs and dates
    joined in one string each (lines that hold no line break); a `Part` as it is."""

    def __init__(self) -> None:
        self._texts = TextCache(quoted=False)

    def __call__(self, chunk: list[UrlEntry] | UrlRun | Part) -> bytes:
        if isinstance(chunk, UrlRun):
            texts = self._texts
            dates, date = texts.dates, texts.date
            payload: object = (
                chunk.sitemap,
                "\n".join(chunk.locs),
                "\n".join([dates.get(d) or date(d) for d in chunk.lastmods]),
                chunk.changefreqs,
                chunk.priorities,
            )
            texts.trim()
            return pickle.dumps(payload, 5)
        return pickle.dumps(chunk, 5)


def chunks_and_parts(items: Iterable[UrlEntry | UrlRun | Part]) -> Iterator[list[UrlEntry] | UrlRun | Part]:
    """`chunks` of `items`, each `Part` among them whole and in its place."""
    it = iter(items)
    part: list[Part] = []

    def until_part() -> Iterator[UrlEntry | UrlRun]:
        for item in it:
            if item.__class__ is Part:
                part.append(item)
                return
            yield cast("UrlEntry | UrlRun", item)

    while True:
        yield from chunks(until_part())
        if not part:
            return
        yield part.pop()


def _payloads(stream: IO[bytes]) -> Iterator[list[UrlEntry] | UrlRun | Part]:
    """What the parent sent, in order: lists of entries, runs rebuilt from their columns, parts. Ends at
    the parent's last payload; the end of the input before it means the parent died."""
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
        if isinstance(payload, list | Part):
            yield payload
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


def _part_payloads(part: Part) -> Iterator[list[UrlEntry] | UrlRun | Part]:
    """The payloads a leaf worker wrote to `part` (for Parquet; it ends them with `_END` too), which is
    removed once open."""
    with open(part.path, "rb") as f:
        os.unlink(part.path)
        yield from _payloads(f)


def _entries(
    payloads: Iterable[list[UrlEntry] | UrlRun | Part], live: IO[Any] | None
) -> Iterator[UrlEntry | UrlRun]:
    """The entries and runs of `payloads`, parts read from their files. `live`: an output someone watches
    (a pipe, a terminal), flushed after each payload the writer has taken."""
    for payload in payloads:
        if isinstance(payload, Part):
            for inner in _part_payloads(payload):
                if isinstance(inner, list):
                    yield from inner
                elif isinstance(inner, UrlRun):
                    yield inner
        elif isinstance(payload, list):
            yield from payload
        else:
            yield payload
        if live is not None:
            live.flush()


def copy_part(part: Part, fd: int) -> None:
    """The bytes of `part` (text in the output's format) to the file descriptor `fd`; `part` is removed."""
    with open(part.path, "rb") as f:
        os.unlink(part.path)
        src = f.fileno()
        size = os.fstat(src).st_size
        offset = 0
        try:
            while offset < size:
                sent = os.sendfile(fd, src, offset, size - offset)
                if not sent:
                    break
                offset += sent
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.ENOSYS) or offset:
                raise
            shutil.copyfileobj(f, os.fdopen(os.dup(fd), "wb", closefd=True))


def _write_text(fmt: str, stream: IO[bytes], text: IO[str], fd: int, live: bool) -> None:
    """The text formats: entries formatted here, parts copied as they are, in order."""
    csv = fmt == "csv"
    texts = TextCache(quoted=not csv)
    if csv:
        write_csv((), text, texts=texts)  # the header
    for payload in _payloads(stream):
        if isinstance(payload, Part):
            text.flush()
            copy_part(payload, fd)
        elif csv:
            write_csv(payload if isinstance(payload, list) else (payload,), text, header=False, texts=texts)
        else:
            write_jsonl(payload if isinstance(payload, list) else (payload,), text, texts=texts)
        if live:
            text.flush()


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
                _write(fmt, _entries(_payloads(sys.stdin.buffer), binary if watched else None), binary)
        else:
            with open(fd, "w", encoding="utf-8", newline="", buffering=_OUT_BUFFER, closefd=False) as text:
                _write_text(fmt, sys.stdin.buffer, text, fd, watched)
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


def main() -> int:
    """The child process (`python_command`): FORMAT FD READY."""
    return _child(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
