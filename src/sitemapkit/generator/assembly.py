"""Assembling finished sitemap files while the next one fills: a sitemap's body spools to a temporary file
until the file is full (its header, which names the extension namespaces the body uses, is known only
then); `Assembler` then writes header, body and footer into the file to publish (an `AtomicFile`), in a
background thread that, for gzip, hands the work to a child process (`deflate.GzipWorker`: compression on
another core, without the GIL), and syncs it to disk.
"""

from __future__ import annotations

import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Final, Literal

from sitemapkit.core.files import AtomicFile
from sitemapkit.generator.deflate import GzipWorker, assemble_gzip, compressor
from sitemapkit.generator.serialize import xml_footer

QUEUED: Final = 2
"""Finished bodies that may wait for the compressor: a slow disk or compressor holds the main loop back
instead of piling up spooled files."""
_COPY_CHUNK: Final = 1 << 20


class Assembler:
    """Assembles finished files in order, one at a time, in one background thread (started with the first
    file); gzip (`level`, None for plain XML) from the second file on in a `GzipWorker` child process.
    A failed file is raised by `submit` (at the next file), or by `wait`."""

    def __init__(self, level: int | None) -> None:
        self.level = level
        self._pool: ThreadPoolExecutor | None = None
        self._jobs: list[Future[None]] = []
        self.worker: GzipWorker | Literal[False] | None = None
        """The gzip child process (None: not started yet; False: none could be started)."""

    def submit(self, out: AtomicFile, header: bytes, spool: Path, *, more: bool = True) -> None:
        """Write `header`, the bytes of `spool` (then removed) and the urlset footer into `out`, synced and
        released (see `AtomicFile.release`) for the set's commit. `more`: more files may follow (then, for
        gzip, the child process is started)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sitemapkit-writer")
        if len(self._jobs) >= QUEUED:
            self._jobs[-QUEUED].result()  # a file that failed fails the run now, not at the end
        if self.level is not None and self.worker is None and more:
            self.worker = GzipWorker.start() or False
        worker = self.worker or None
        self._jobs.append(self._pool.submit(self.assemble, out, header, spool, worker))

    def assemble(self, out: AtomicFile, header: bytes, spool: Path, worker: GzipWorker | None) -> None:
        """One file (in the background thread)."""
        footer = xml_footer("urlset").encode()
        # on disk before the rename (after a power cut a file is whole, old or new): gzip synced by
        # assemble_gzip (here or in the child), plain XML by release()
        if self.level is not None:
            name = compressor()
            if worker is not None:
                worker.run(out.temp, header, str(spool), footer, self.level, name)
            else:
                assemble_gzip(out.temp, header, str(spool), footer, self.level, name)
            out.release(synced=True)
            return
        raw = out.file
        raw.write(header)
        with open(spool, "rb") as body:
            shutil.copyfileobj(body, raw, _COPY_CHUNK)
        raw.write(footer)
        spool.unlink()
        out.release()

    def wait(self) -> None:
        """Wait until every file is assembled; re-raise the first failure."""
        try:
            for job in self._jobs:
                job.result()
        finally:
            self._jobs.clear()

    def close(self) -> None:
        """Let the thread and the child process end (after `wait`)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self.worker:
            self.worker.close()
        self.worker = None
