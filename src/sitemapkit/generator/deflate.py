"""gzip streams for the writer, compressed by zlib-ng when it is installed, else by the standard `zlib`.

A run that writes several files gzips them in a child process (`GzipWorker`): this file run as a script,
which imports nothing but the standard library and zlib-ng. A thread would compress on another core too,
but it needs the GIL between calls, which the writer's main loop holds almost all the time (measured: a
1M-URL run spent 1.07 s assembling files in a thread, 0.32 s of it compressing).

zlib-ng (the `zlib-ng` package, a wheel on every platform sitemapkit supports) writes the same format
about 2.5 times as fast as zlib at the same level, with output within 1% of zlib's size at level 6. The
output is plain gzip either way: one member, no file name, mtime 0, the header `gzip.GzipFile` writes.
For a given compressor and level the bytes are the same on every run; the two compressors' bytes differ
(both decompress to the same XML). `SITEMAPKIT_DEFLATE=zlib` forces the standard module.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from types import ModuleType
from typing import IO, Any, Final

COMPRESSORS: Final = ("zlib-ng", "zlib")
"""What `compressor()` may return, in order of preference."""
ENV: Final = "SITEMAPKIT_DEFLATE"
_CHUNK: Final = 1 << 20


def _load(name: str) -> ModuleType | None:
    if name == "zlib":
        return zlib
    try:
        from zlib_ng import zlib_ng
    except ImportError:
        return None
    return zlib_ng


def compressor() -> str:
    """The compressor gzip output uses: the first of `COMPRESSORS` that imports, or the one named by the
    environment variable `SITEMAPKIT_DEFLATE` (falling back to zlib if that one is not installed).

    >>> compressor() in COMPRESSORS
    True
    """
    wanted = os.environ.get(ENV, "").strip().lower()
    names = (wanted,) if wanted in COMPRESSORS else COMPRESSORS
    for name in names:
        if _load(name) is not None:
            return name
    return "zlib"


class GzipWriter:
    """A write-only gzip stream onto `raw` (left open): `write` bytes, then `close` for the trailer.

    >>> import gzip, io
    >>> buf = io.BytesIO()
    >>> with GzipWriter(buf, 6) as z:
    ...     _ = z.write(b"<urlset/>")
    >>> gzip.decompress(buf.getvalue())
    b'<urlset/>'
    """

    def __init__(self, raw: IO[bytes], level: int, name: str | None = None) -> None:
        self.name = name or compressor()
        module = _load(self.name) or zlib
        self._raw = raw
        # raw deflate (negative window bits), the header and trailer written here: as gzip.GzipFile does
        self._deflate = module.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS, zlib.DEF_MEM_LEVEL, 0)
        self._crc32 = module.crc32
        self._crc = 0
        self._size = 0
        self._closed = False
        xfl = 2 if level == 9 else 4 if level == 1 else 0
        raw.write(b"\x1f\x8b\x08\x00" + struct.pack("<I", 0) + bytes((xfl, 255)))

    def write(self, data: bytes) -> int:
        """Compress `data`; returns its length."""
        self._crc = self._crc32(data, self._crc)
        self._size += len(data)
        self._raw.write(self._deflate.compress(data))
        return len(data)

    def close(self) -> None:
        """Write the rest of the deflate stream and the trailer (CRC-32, size); `raw` stays open."""
        if self._closed:
            return
        self._closed = True
        self._raw.write(self._deflate.flush())
        self._raw.write(struct.pack("<II", self._crc & 0xFFFFFFFF, self._size & 0xFFFFFFFF))

    def __enter__(self) -> GzipWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def assemble_gzip(temp: str, header: bytes, spool: str, footer: bytes, level: int, name: str) -> None:
    """Write `header`, the bytes of the file `spool` and `footer` to `temp` as one gzip stream, flushed to
    disk (fsync); then remove `spool`. `temp` is the file a `core.files.AtomicFile` made (or a new one),
    truncated: a symbolic link there is not followed (an error, nothing written)."""
    # the body first (a missing one creates nothing)
    with open(spool, "rb") as body, open(temp, "wb", opener=_nofollow) as raw:
        with GzipWriter(raw, level, name) as out:
            out.write(header)
            while chunk := body.read(_CHUNK):
                out.write(chunk)
            out.write(footer)
        raw.flush()
        os.fsync(raw.fileno())
    os.unlink(spool)


def _nofollow(path: str, flags: int) -> int:
    return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o666)


class GzipWorker:
    """A child process that runs `assemble_gzip` jobs one at a time, for one thread of the parent.

    `start()` gives None where no child can be started (no `sys.executable`, this module not a file);
    a failed job raises the `OSError` the child met; a child that died raises `OSError` too.
    """

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process

    @classmethod
    def start(cls) -> GzipWorker | None:
        """Start the child (about 25 ms of the other core), or None if it cannot be."""
        script = Path(__file__)
        if not sys.executable or not script.is_file():
            return None
        try:
            process = subprocess.Popen(
                [sys.executable, "-P", str(script)],  # -P: the script's folder does not shadow modules
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                # Ctrl-C is the parent's to handle (a program may catch it and go on): out of the
                # terminal's process group, the child never gets it; it ends at the end of its input
                start_new_session=os.name == "posix",
                creationflags=getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0),
            )
        except OSError:
            return None
        return cls(process)

    def run(self, temp: str, header: bytes, spool: str, footer: bytes, level: int, name: str) -> None:
        """`assemble_gzip` in the child; returns when the file is on disk."""
        job: dict[str, Any] = {"temp": temp, "header": header.decode("latin-1"), "spool": spool}
        job.update(footer=footer.decode("latin-1"), level=level, name=name)
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(json.dumps(job).encode() + b"\n")
            process.stdin.flush()
            reply = process.stdout.readline()
        except OSError:
            reply = b""
        if not reply:
            code = process.poll()
            raise OSError(f"the gzip process ended unexpectedly (exit code {code})")
        try:
            answer = json.loads(reply)
        except ValueError:
            raise OSError(f"the gzip process answered {reply[:200]!r}, not a result") from None
        if answer.get("ok"):
            return
        raise OSError(answer["errno"], answer["strerror"], answer["filename"])

    def close(self) -> None:
        """Let the child end (it ends at the end of its input); kill it if it does not within 10 s."""
        process = self._process
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def _serve() -> None:
    """The child's loop: one JSON job a line on stdin, one JSON answer a line on stdout."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what an interrupt means
    for line in sys.stdin.buffer:
        job = json.loads(line)
        answer: dict[str, Any]
        try:
            assemble_gzip(
                job["temp"],
                job["header"].encode("latin-1"),
                job["spool"],
                job["footer"].encode("latin-1"),
                job["level"],
                job["name"],
            )
            answer = {"ok": True}
        except OSError as exc:
            answer = {"errno": exc.errno, "strerror": exc.strerror or str(exc), "filename": exc.filename}
        except Exception as exc:  # reported to the parent, which fails the run with it
            answer = {"errno": None, "strerror": f"{type(exc).__name__}: {exc}", "filename": job["temp"]}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _serve()
