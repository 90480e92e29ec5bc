"""The crawl file: the frontier, the seen-set and every URL's outcome in one SQLite database.

Each URL the crawl meets has one row, inserted when it is first found (so the table is the seen-set) and
completed when it is decided: fetched, or left out without a fetch (robots.txt, scope, depth, trap). The
queue is the rows not yet decided, in the order they were found (breadth first). Memory stays flat however
large the site: the crawler holds a batch of queued rows and a bounded cache of recently seen URLs.

Every decided page is committed at once (WAL, `synchronous=NORMAL`), so a crawl killed at any moment
resumes (`--resume`) without fetching again what it has; a page in flight when it stopped is fetched again.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from sitemapkit.core.errors import InputError, UsageError

SCHEMA_VERSION = 1
QUEUED, DONE = 0, 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS robots (origin TEXT PRIMARY KEY, status INTEGER, body TEXT);
CREATE TABLE IF NOT EXISTS urls (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL UNIQUE,
    depth INTEGER NOT NULL,
    chain INTEGER NOT NULL DEFAULT 0,
    found_on TEXT,
    state INTEGER NOT NULL DEFAULT 0,
    status INTEGER,
    final_url TEXT,
    content_type TEXT,
    reason TEXT,
    detail TEXT,
    lastmod TEXT,
    canonical TEXT,
    elapsed_ms INTEGER,
    listed INTEGER NOT NULL DEFAULT 0,
    hash TEXT,
    extra TEXT
);
CREATE INDEX IF NOT EXISTS urls_queued ON urls (id) WHERE state = 0;
"""


@dataclass(frozen=True, slots=True)
class Queued:
    """A URL waiting to be fetched."""

    id: int
    url: str
    depth: int
    chain: int
    found_on: str | None


@dataclass(slots=True)
class Outcome:
    """What became of one URL: listed (`reason` None) or left out for `reason` (see `REASONS`)."""

    status: int | None = None
    final_url: str | None = None
    content_type: str | None = None
    reason: str | None = None
    detail: str | None = None
    lastmod: str | None = None
    canonical: str | None = None
    elapsed_ms: int | None = None
    hash: str | None = None
    alternates: tuple[tuple[str, str], ...] = ()
    images: tuple[str, ...] = ()

    @property
    def listed(self) -> bool:
        return self.reason is None

    def extra(self) -> str | None:
        if not self.alternates and not self.images:
            return None
        return json.dumps([self.alternates, self.images], separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Row:
    """One URL as the crawl log shows it."""

    url: str
    depth: int
    found_on: str | None
    status: int | None
    final_url: str | None
    content_type: str | None
    reason: str | None
    detail: str | None
    lastmod: str | None
    canonical: str | None
    elapsed_ms: int | None
    queued: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "depth": self.depth,
            "status": self.status,
            "final_url": self.final_url,
            "content_type": self.content_type,
            "reason": self.reason,
            "detail": self.detail,
            "lastmod": self.lastmod,
            "canonical": self.canonical,
            "elapsed_ms": self.elapsed_ms,
            "found_on": self.found_on,
        }


@dataclass(frozen=True, slots=True)
class ListedPage:
    url: str
    lastmod: str | None
    hash: str | None
    alternates: tuple[tuple[str, str], ...]
    images: tuple[str, ...]


def _is_crawl_file(path: Path) -> bool:
    """Whether `path` is a crawl file (which a new crawl may replace), as opposed to any other file."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            return {"meta", "robots", "urls"} <= tables
    except sqlite3.Error:
        return False


class Frontier:
    """The crawl file at `path`. `fresh=True` starts over (the file is emptied); otherwise it is continued
    and must belong to the same crawl (`key`: the start URL and the options that decide what is fetched)."""

    def __init__(self, path: str | os.PathLike[str], key: str, *, fresh: bool) -> None:
        self.path = Path(path)
        if fresh:
            if self.path.exists() and not _is_crawl_file(self.path):
                raise InputError(f"{self.path}: not a sitemapkit crawl file; refusing to overwrite it")
            try:
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            except OSError as exc:  # its folder is a file, or not ours to change
                raise InputError(
                    f"{self.path}: cannot start the crawl file ({exc.strerror or exc})"
                ) from None
        elif not self.path.exists():
            raise UsageError(f"{self.path}: no crawl to resume (run without --resume to start one)")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise InputError(f"{self.path}: cannot open the crawl file ({exc})") from None
        version = self.meta("schema")
        if version is None:
            self.set_meta("schema", str(SCHEMA_VERSION))
            self.set_meta("key", key)
        elif version != str(SCHEMA_VERSION):
            raise InputError(f"{self.path}: crawl file of another version ({version}); start a new crawl")
        elif self.meta("key") != key:
            raise UsageError(
                f"{self.path}: this crawl file belongs to another crawl ({self.meta('key')}); "
                "start a new one (without --resume) or give another --crawl-db"
            )
        self._last_id = 0
        self._pending = 0
        self._log: TextIO | None = None
        self.db.execute("BEGIN")

    # -- the crawl log ----------------------------------------------------------------------------------

    def stream_log(self, out: TextIO) -> None:
        """Write each URL to `out` as a JSON line (`Row.to_dict`) as soon as it is decided, flushed with each
        commit, so the log can be followed while the crawl runs and holds what was decided when it is
        stopped. The URLs decided before (a resumed crawl) are written first. A URL decided again later
        (a page found to be a soft 404 or part of a trap once the crawl has seen more) has a later line."""
        self._log = out
        for row in self.rows():
            if not row.queued:
                self._write(row)
        out.flush()

    def _write(self, row: Row) -> None:
        if self._log is not None:
            self._log.write(json.dumps(row.to_dict(), separators=(",", ":")) + "\n")

    def _emit(self, url: str) -> None:
        if self._log is None:
            return
        cur = self.db.execute(
            "SELECT url, depth, found_on, status, final_url, content_type, reason, detail, lastmod, "
            "canonical, elapsed_ms, state = 0 FROM urls WHERE url = ?",
            (url,),
        )
        for row in cur:
            self._write(Row(*row))

    # -- metadata ---------------------------------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def robots(self, origin: str) -> tuple[int, str] | None:
        row = self.db.execute("SELECT status, body FROM robots WHERE origin = ?", (origin,)).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def set_robots(self, origin: str, status: int, body: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO robots VALUES (?, ?, ?)", (origin, status, body))

    # -- the queue --------------------------------------------------------------------------------------

    def add(self, rows: Iterable[tuple[str, int, int, str | None]]) -> int:
        """Queue URLs not seen before: (url, depth, chain, found_on); returns how many were new."""
        before = self.db.total_changes
        self.db.executemany(
            "INSERT OR IGNORE INTO urls (url, depth, chain, found_on) VALUES (?, ?, ?, ?)", rows
        )
        return self.db.total_changes - before

    def add_decided(self, url: str, depth: int, found_on: str | None, reason: str, detail: str) -> bool:
        """Record a URL left out without a fetch (scope, robots, depth, trap), unless already seen."""
        cur = self.db.execute(
            "INSERT OR IGNORE INTO urls (url, depth, found_on, state, reason, detail) "
            "VALUES (?, ?, ?, 1, ?, ?)",
            (url, depth, found_on, reason, detail),
        )
        if cur.rowcount > 0:
            self._emit(url)
            return True
        return False

    def take(self, limit: int) -> list[Queued]:
        """The next queued URLs after those already taken, oldest first."""
        rows = self.db.execute(
            "SELECT id, url, depth, chain, found_on FROM urls WHERE state = 0 AND id > ? ORDER BY id LIMIT ?",
            (self._last_id, limit),
        ).fetchall()
        if rows:
            self._last_id = rows[-1][0]
        return [Queued(*row) for row in rows]

    def claim(self, url: str, depth: int, found_on: str | None) -> bool:
        """Take `url` (a redirect's target, fetched already) as decided by this fetch: True unless it was
        decided before (then the fetch answered for a URL already done, and is not recorded twice)."""
        cur = self.db.execute(
            "INSERT OR IGNORE INTO urls (url, depth, found_on, state) VALUES (?, ?, ?, 1)",
            (url, depth, found_on),
        )
        if cur.rowcount:
            return True
        cur = self.db.execute("UPDATE urls SET state = 1 WHERE url = ? AND state = 0", (url,))
        return cur.rowcount > 0

    def decided(self, url: str) -> bool:
        """Whether `url` is decided already (a queued URL a redirect reached first)."""
        row = self.db.execute("SELECT state FROM urls WHERE url = ?", (url,)).fetchone()
        return row is not None and row[0] == DONE

    def decide(self, url: str, outcome: Outcome) -> None:
        self.db.execute(
            "UPDATE urls SET state = 1, status = ?, final_url = ?, content_type = ?, reason = ?, detail = ?, "
            "lastmod = ?, canonical = ?, elapsed_ms = ?, listed = ?, hash = ?, extra = ? WHERE url = ?",
            (
                outcome.status,
                outcome.final_url,
                outcome.content_type,
                outcome.reason,
                outcome.detail,
                outcome.lastmod,
                outcome.canonical,
                outcome.elapsed_ms,
                1 if outcome.listed else 0,
                outcome.hash,
                outcome.extra(),
                url,
            ),
        )
        self._emit(url)

    def commit(self) -> None:
        """Make everything so far durable (a resumed crawl starts from here)."""
        self.db.execute("COMMIT")
        self.db.execute("BEGIN")
        if self._log is not None:
            self._log.flush()

    def leave_queued(self, reason: str, detail: str) -> int:
        """Decide every URL still queued as left out for `reason` (`max-pages`)."""
        queued = [str(r[0]) for r in self.db.execute("SELECT url FROM urls WHERE state = 0 ORDER BY id")]
        cur = self.db.execute(
            "UPDATE urls SET state = 1, reason = ?, detail = ? WHERE state = 0", (reason, detail)
        )
        for url in queued:
            self._emit(url)
        return cur.rowcount

    def unlist(self, url: str, reason: str, detail: str) -> bool:
        """Take a listed page off the list, for `reason` found after it was decided (a soft 404 once the
        median page size is known, a page of a run that became a trap); False when it was not listed."""
        cur = self.db.execute(
            "UPDATE urls SET listed = 0, reason = ?, detail = ? WHERE url = ? AND listed = 1",
            (reason, detail, url),
        )
        if cur.rowcount > 0:
            self._emit(url)
            return True
        return False

    def unlist_trap_runs(self) -> int:
        """Take off the list the pages of every run of links the trap guard stopped: from the page that
        linked to the refused URL back to the run's first page (`chain` 0). Returns how many."""
        traps = self.db.execute(
            "SELECT url, found_on FROM urls WHERE reason = 'trap' AND elapsed_ms IS NULL "
            "AND found_on IS NOT NULL"
        ).fetchall()
        count = 0
        for trap, found_on in traps:
            seen: set[str] = set()
            url: str | None = found_on
            while url is not None and url not in seen:
                seen.add(url)
                row = self.db.execute("SELECT found_on, chain FROM urls WHERE url = ?", (url,)).fetchone()
                if row is None:
                    break
                count += self.unlist(url, "trap", f"in a run of links the trap guard stopped at {trap}")
                if not row[1]:
                    break
                url = row[0]
        return count

    # -- reading back -----------------------------------------------------------------------------------

    def count(self, sql_where: str = "1") -> int:
        return int(self.db.execute(f"SELECT count(*) FROM urls WHERE {sql_where}").fetchone()[0])

    def fetched(self) -> int:
        """URLs fetched (whatever the answer)."""
        return self.count("elapsed_ms IS NOT NULL")

    def reasons(self) -> dict[str, int]:
        rows = self.db.execute(
            "SELECT reason, count(*) FROM urls WHERE state = 1 AND reason IS NOT NULL GROUP BY reason"
        )
        return {str(reason): int(n) for reason, n in rows}

    def rows(self) -> Iterator[Row]:
        cur = self.db.execute(
            "SELECT url, depth, found_on, status, final_url, content_type, reason, detail, lastmod, "
            "canonical, elapsed_ms, state = 0 FROM urls ORDER BY id"
        )
        for row in cur:
            yield Row(*row)

    def listed(self) -> Iterator[ListedPage]:
        cur = self.db.execute("SELECT url, lastmod, hash, extra FROM urls WHERE listed = 1 ORDER BY id")
        for url, lastmod, digest, extra in cur:
            alternates: tuple[tuple[str, str], ...] = ()
            images: tuple[str, ...] = ()
            if extra:
                alt, img = json.loads(extra)
                alternates = tuple((h, u) for h, u in alt)
                images = tuple(img)
            yield ListedPage(url, lastmod, digest, alternates, images)

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.db.execute("COMMIT")
        self.db.close()
