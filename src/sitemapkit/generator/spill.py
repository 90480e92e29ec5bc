"""Temporary SQLite files in the output folder for what a run keeps until `close`, so memory stays flat.

`open_spill` opens one (no journal, no fsync: the file dies with the run, and a killed run's file is removed
by the next run, see `tempfiles`). `HeldEntries` is the store behind `SitemapWriter.add_entry(hold=True)`;
the hreflang group store (`hreflang.HreflangGroups`) is the other user.
"""

from __future__ import annotations

import pickle
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

from sitemapkit.core.model import UrlEntry

_BATCH: Final = 5_000  # entries kept in memory before they are written out in one statement
_CACHE_KIB: Final = 16_384  # SQLite's page cache per file (bounded: it does not grow with the URLs)


def open_spill(path: Path) -> sqlite3.Connection:
    """A new temporary SQLite database at `path`, in one open transaction (never committed)."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    db.execute("PRAGMA temp_store = FILE")
    db.execute(f"PRAGMA cache_size = -{_CACHE_KIB}")
    db.execute("BEGIN")
    return db


class HeldEntries:
    """Entries keyed by URL, read back in the order each URL was first put (`put`, `get`, `entries`).

    At most a batch of entries is in memory; the rest wait on disk, each its URL and a pickled tuple of its
    other constructor arguments (half the bytes and time of pickling the entry itself).

    Putting a URL again replaces its entry in place (a merge is get, merge, put)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = open_spill(path)
        self._db.execute(
            "CREATE TABLE held (seq INTEGER PRIMARY KEY, loc TEXT NOT NULL UNIQUE, data BLOB NOT NULL)"
        )
        self._pending: dict[str, UrlEntry] = {}

    def put(self, entry: UrlEntry) -> None:
        """Keep `entry` under its URL (replacing what was kept for it, which keeps its place)."""
        self._pending[entry.loc] = entry
        if len(self._pending) >= _BATCH:
            self._flush()

    def get(self, loc: str) -> UrlEntry | None:
        """The entry kept for `loc`, if any."""
        pending = self._pending.get(loc)
        if pending is not None:
            return pending
        row = self._db.execute("SELECT data FROM held WHERE loc = ?", (loc,)).fetchone()
        return None if row is None else UrlEntry(loc, *pickle.loads(row[0]))

    def _flush(self) -> None:
        self._db.executemany(
            "INSERT INTO held (loc, data) VALUES (?, ?) ON CONFLICT (loc) DO UPDATE SET data = excluded.data",
            [(loc, _dump(entry)) for loc, entry in self._pending.items()],
        )
        self._pending.clear()

    def entries(self) -> Iterator[UrlEntry]:
        """Every entry kept, in the order its URL was first put, read from disk as they are consumed."""
        self._flush()
        loads = pickle.loads
        for loc, data in self._db.execute("SELECT loc, data FROM held ORDER BY seq"):
            yield UrlEntry(loc, *loads(data))

    def close(self) -> None:
        """Close the database (the writer deletes its file)."""
        self._pending.clear()
        self._db.close()


def _dump(
    e: UrlEntry, dumps: Callable[..., bytes] = pickle.dumps, protocol: int = pickle.HIGHEST_PROTOCOL
) -> bytes:
    """`e`'s constructor arguments after `loc`, pickled (`UrlEntry(loc, *pickle.loads(...))` reads them)."""
    fields = (
        e.lastmod,
        e.changefreq,
        e.priority,
        e.images,
        e.videos,
        e.news,
        e.alternates,
        e.sitemap,
        e.line,
    )
    return dumps(fields, protocol)
