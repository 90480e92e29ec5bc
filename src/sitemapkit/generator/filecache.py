"""The state store's file cache: what a folder scan made of each file, so that a rerun opens only the files
that changed (see `FileCache`). It lives in the state store's database and in the run's transaction."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from sitemapkit.core.errors import UsageError

if TYPE_CHECKING:
    from sitemapkit.generator.state import StateRun

_FILES_COLUMNS = "key, size, mtime_ns, ctime_ns, ino, content_hash, data"
_FILES_FIRST = f"SELECT {_FILES_COLUMNS} FROM scan_files WHERE root_id = ? ORDER BY key LIMIT ?"
_FILES_NEXT = f"SELECT {_FILES_COLUMNS} FROM scan_files WHERE root_id = ? AND key > ? ORDER BY key LIMIT ?"
_FILES_ONE = f"SELECT {_FILES_COLUMNS} FROM scan_files WHERE root_id = ? AND key = ?"
_FILES_PUT = f"""
INSERT INTO scan_files (root_id, {_FILES_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (root_id, key) DO UPDATE SET
    size = excluded.size, mtime_ns = excluded.mtime_ns, ctime_ns = excluded.ctime_ns, ino = excluded.ino,
    content_hash = excluded.content_hash, data = excluded.data
"""
CACHE_BATCH = 1_000


FileStamp = tuple[int, int, int, int]
"""What identifies a file's content without reading it: size, mtime and ctime (ns), inode."""
CachedFile = tuple[str | None, str | None]
"""What `FileCache.get` returns for a file it knows unchanged: the stored content hash and data."""


def file_stamp(st: os.stat_result) -> FileStamp:
    """The `FileStamp` of a `stat` result. A rewrite changes the mtime and the ctime (which no program
    can set back), a replacement the inode."""
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


class FileCache:
    """What the scans of one folder made of each file, kept in the state store so that a rerun need not
    read a file again while its stamp (size, mtime and ctime in ns, inode) is the one it had when read.

    Create it with `StateRun.file_cache`. Keys are opaque bytes, one per file, that must come to `get` in
    ascending order (`scan_folder` derives them from its sorted walk). The stored rows are read in the
    same order, a batch at a time, beside the walk (a merge join): nothing grows with the number of
    files, and the rows of files the walk no longer meets are deleted as it passes them (the rest by
    `close`). Every write belongs to the run's transaction, so a run that fails leaves the cache as it
    was; one that never calls `close` only keeps some rows it could have deleted."""

    def __init__(self, run: StateRun, root: bytes, fingerprint: str, batch_size: int) -> None:
        self.root = root
        self._conn = run._conn
        self._batch = max(1, batch_size)
        row = self._conn.execute("SELECT id, fingerprint FROM scan_roots WHERE root = ?", (root,)).fetchone()
        if row is None:
            cur = self._conn.execute(
                "INSERT INTO scan_roots (root, fingerprint) VALUES (?, ?)", (root, fingerprint)
            )
            self.root_id = int(cur.lastrowid or 0)
        else:
            self.root_id = int(row[0])
            if row[1] != fingerprint:
                self._conn.execute("DELETE FROM scan_files WHERE root_id = ?", (self.root_id,))
                self._conn.execute(
                    "UPDATE scan_roots SET fingerprint = ? WHERE id = ?", (fingerprint, self.root_id)
                )
        self._rows: list[tuple[Any, ...]] = []
        self._pos = 0
        self._done = False
        self._upto: bytes | None = None  # the last key read from the table
        self._last: bytes | None = None  # the last key asked for
        self._puts: list[tuple[Any, ...]] = []
        self._deletes: list[tuple[int, bytes]] = []
        self.hits = self.misses = 0
        self.closed = False
        self._detached = False

    def get(self, key: bytes, stamp: FileStamp) -> CachedFile | None:
        """The stored `(content_hash, data)` of the file `key` if it was stored, trusted, with this stamp;
        else None."""
        if self._detached:
            return None
        if self._last is not None and key <= self._last:  # out of order: look it up alone
            if (self.root_id, key) in self._deletes:  # passed as gone a moment ago: it is not
                self._deletes.remove((self.root_id, key))
            found = self._conn.execute(_FILES_ONE, (self.root_id, key)).fetchone()
            return self._valid(found, stamp)
        self._last = key
        while True:
            if self._pos >= len(self._rows):
                if self._done:
                    return self._valid(None, stamp)
                self._fetch()
                continue
            row = self._rows[self._pos]
            if row[0] > key:
                return self._valid(None, stamp)
            self._pos += 1
            if row[0] == key:
                return self._valid(row, stamp)
            self._deletes.append((self.root_id, row[0]))  # a file the walk no longer has

    def _valid(self, row: tuple[Any, ...] | None, stamp: FileStamp) -> CachedFile | None:
        if row is not None and row[1:5] == stamp:
            self.hits += 1
            return row[5], row[6]
        self.misses += 1
        return None

    def _fetch(self) -> None:
        self._flush()
        if self._upto is None:
            rows = self._conn.execute(_FILES_FIRST, (self.root_id, self._batch)).fetchall()
        else:
            rows = self._conn.execute(_FILES_NEXT, (self.root_id, self._upto, self._batch)).fetchall()
        self._rows, self._pos = rows, 0
        if rows:
            self._upto = rows[-1][0]
        if len(rows) < self._batch:
            self._done = True

    def put(
        self,
        key: bytes,
        stamp: FileStamp,
        content_hash: str | None,
        data: str | None,
        *,
        trusted: bool = True,
    ) -> None:
        """Remember what the file `key` gave when it had this stamp. `trusted=False` stores it so that a
        later `get` misses: for a file modified too recently to be sure that the content read is the
        content its mtime stands for (the next modification may not move the mtime)."""
        if self.closed:
            raise UsageError("the file cache is closed")
        if self._detached:
            return
        size, mtime_ns, ctime_ns, ino = stamp
        self._puts.append(
            (self.root_id, key, size, mtime_ns if trusted else None, ctime_ns, ino, content_hash, data)
        )
        if len(self._puts) >= self._batch:
            self._flush()

    def detach(self) -> None:
        """Write what is pending and stop: another cache of the same folder takes over (perhaps with
        other options, which empty the table). A detached cache misses and keeps nothing."""
        self._flush()
        self._detached = True
        self._rows, self._pos, self._done = [], 0, True

    def close(self) -> None:
        """End the walk: delete the rows of the files it did not reach, and write what is pending."""
        if self.closed:
            return
        if self._detached:
            self.closed = True
            return
        self.closed = True
        self._deletes.extend((self.root_id, row[0]) for row in self._rows[self._pos :])
        self._rows, self._pos = [], 0
        if not self._done:
            bounds = [k for k in (self._upto, self._last) if k is not None]
            if bounds:
                self._conn.execute(
                    "DELETE FROM scan_files WHERE root_id = ? AND key > ?", (self.root_id, max(bounds))
                )
            else:
                self._conn.execute("DELETE FROM scan_files WHERE root_id = ?", (self.root_id,))
            self._done = True
        self._flush()

    def _flush(self) -> None:
        if self._deletes:
            self._conn.executemany("DELETE FROM scan_files WHERE root_id = ? AND key = ?", self._deletes)
            self._deletes.clear()
        if self._puts:
            self._conn.executemany(_FILES_PUT, self._puts)
            self._puts.clear()
