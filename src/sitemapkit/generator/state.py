"""The state store behind honest `<lastmod>` values: an embedded SQLite database that remembers every URL.

For each URL it keeps when it was first and last seen, a hash of its normalised content, the lastmod it was
given, and the runs in which it was added, changed, last seen and removed. In the default `content` mode a
URL's lastmod moves only when its content hash changes, so a rebuild that merely touches files changes
nothing.

    with StateStore(".sitemapkit/state.db") as store:
        with store.run(now=now) as run:
            for url, digest in pages:
                lastmod = run.observe(url, content_hash=digest)   # the lastmod to publish
                ...
            run.commit_after(writer.close)   # the store commits only if publishing succeeded

A run is one SQLite transaction (`BEGIN IMMEDIATE` ... `COMMIT`): an exception inside it, or a crash,
leaves the database exactly as it was. Writes are batched (`executemany`), and no Python structure grows
with the number of URLs, so runs of millions of URLs take constant memory.

Schema versions: `PRAGMA user_version` holds the version, `schema_migrations` records when each migration
was applied, and `PRAGMA application_id` marks the file as a sitemapkit state database.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeVar

from sitemapkit.core.dates import format_w3c, parse_w3c, sort_key
from sitemapkit.core.errors import InputError, UsageError
from sitemapkit.core.model import Lastmod
from sitemapkit.generator.filecache import CACHE_BATCH, FileCache

T = TypeVar("T")
LastmodMode = Literal["content", "source", "mtime", "git"]
LASTMOD_MODES: tuple[LastmodMode, ...] = ("content", "source", "mtime", "git")
DEFAULT_STATE_PATH = Path(".sitemapkit") / "state.db"
APPLICATION_ID = 0x534D4B31  # "SMK1"
BATCH = 10_000

# Each migration is a list of statements, applied in one transaction with the version bump.
MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE schema_migrations (
            version INTEGER PRIMARY KEY,
            applied_at TEXT NOT NULL
        )""",
        """CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            started_at TEXT NOT NULL,
            lastmod_mode TEXT NOT NULL,
            added INTEGER NOT NULL DEFAULT 0,
            revived INTEGER NOT NULL DEFAULT 0,
            changed INTEGER NOT NULL DEFAULT 0,
            unchanged INTEGER NOT NULL DEFAULT 0,
            removed INTEGER NOT NULL DEFAULT 0
        )""",
        # added_run: the run in which the URL last appeared (first seen or revived); changed_run: the last
        # run that moved its lastmod or content hash (an addition counts); removed_run: set while it is gone.
        """CREATE TABLE urls (
            url TEXT PRIMARY KEY,
            content_hash TEXT,
            lastmod TEXT,
            first_seen TEXT NOT NULL,
            last_seen TEXT NOT NULL,
            added_run INTEGER NOT NULL,
            changed_run INTEGER NOT NULL,
            seen_run INTEGER NOT NULL,
            removed_run INTEGER,
            removed_at TEXT
        ) WITHOUT ROWID""",
        # Named positions in the run history ("indexnow": the last run whose changes were submitted).
        """CREATE TABLE marks (
            name TEXT PRIMARY KEY,
            run_id INTEGER NOT NULL,
            marked_at TEXT NOT NULL
        )""",
    ],
    2: [
        # Small named values that survive between runs, such as a resumable IndexNow submission's progress.
        """CREATE TABLE progress (
            name TEXT PRIMARY KEY,
            value TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )""",
    ],
    3: [
        # The file cache of folder scans (`FileCache`): per scanned folder (its real path, as bytes) the
        # fingerprint of the options its results depend on; per file, its place in the walk (`key`), its
        # stamp when it was read (size, mtime and ctime in ns, inode; mtime_ns NULL: changed too recently
        # to be trusted), and what the scan made of it.
        """CREATE TABLE scan_roots (
            id INTEGER PRIMARY KEY,
            root BLOB NOT NULL UNIQUE,
            fingerprint TEXT NOT NULL
        )""",
        """CREATE TABLE scan_files (
            root_id INTEGER NOT NULL,
            key BLOB NOT NULL,
            size INTEGER NOT NULL,
            mtime_ns INTEGER,
            ctime_ns INTEGER NOT NULL,
            ino INTEGER NOT NULL,
            content_hash TEXT,
            data TEXT,
            PRIMARY KEY (root_id, key)
        ) WITHOUT ROWID""",
    ],
}
SCHEMA_VERSION = max(MIGRATIONS)

_SELECT = (
    "SELECT content_hash, lastmod, first_seen, added_run, changed_run, seen_run, removed_run "
    "FROM urls WHERE url = ?"
)
_SELECT_MANY = (
    "SELECT url, content_hash, lastmod, first_seen, added_run, changed_run, seen_run, removed_run "
    "FROM urls WHERE url IN ({marks})"
)
_PREFETCH_CHUNK = 500  # URLs a query (SQLite allows 999 parameters before 3.32)
_UNKNOWN: Any = object()  # a URL that was not prefetched
_TOUCH = "UPDATE urls SET last_seen = ?, seen_run = ? WHERE url = ?"
_UPSERT = """
INSERT INTO urls (url, content_hash, lastmod, first_seen, last_seen, added_run, changed_run, seen_run,
                  removed_run, removed_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)
ON CONFLICT (url) DO UPDATE SET
    content_hash = excluded.content_hash, lastmod = excluded.lastmod, last_seen = excluded.last_seen,
    added_run = excluded.added_run, changed_run = excluded.changed_run, seen_run = excluded.seen_run,
    removed_run = NULL, removed_at = NULL
"""


ChangeKind = Literal["added", "changed", "removed"]


@dataclass(frozen=True, slots=True)
class UrlChange:
    """One URL that was added, changed or removed. `lastmod` is the current (or last published) lastmod;
    `when` is when it was removed, for a removed URL, else when it was last seen."""

    kind: ChangeKind
    url: str
    lastmod: Lastmod | None
    when: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "url": self.url,
            "lastmod": format_w3c(self.lastmod) if self.lastmod is not None else None,
            "when": self.when,
        }


@dataclass(frozen=True, slots=True)
class RunInfo:
    """A committed run and its counts (`added` includes `revived`)."""

    id: int
    started_at: str
    lastmod_mode: str
    added: int
    revived: int
    changed: int
    unchanged: int
    removed: int

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True)
class StateDiff:
    """What changed after run `since_run` (0: from the beginning) up to run `to_run`."""

    since_run: int
    to_run: int | None
    added: tuple[UrlChange, ...]
    changed: tuple[UrlChange, ...]
    removed: tuple[UrlChange, ...]

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.removed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "since_run": self.since_run,
            "to_run": self.to_run,
            "added": [c.to_dict() for c in self.added],
            "changed": [c.to_dict() for c in self.changed],
            "removed": [c.to_dict() for c in self.removed],
        }


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> Lastmod:
    return parse_w3c(text)


def _load(text: str | None) -> Lastmod | None:
    return None if text is None else _parse(text)


def _from_timestamp(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(int(seconds), dt.UTC)


def _sqlite_error(path: Path, exc: sqlite3.Error, timeout: float) -> InputError:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return InputError(
            f"{path}: the state database is locked by another process (waited {timeout:g} s); "
            "is another sitemapkit run using it?"
        )
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return InputError(
            f"{path}: not a readable sitemapkit state database ({text}); move it away to start over"
        )
    return InputError(f"{path}: state database error: {text}")


def _check_header(path: Path) -> None:
    """Refuse a non-empty file that is not SQLite: SQLite itself would take a file shorter than its
    100-byte header for an empty database and overwrite it."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if head and head != b"SQLite format 3\x00":
        raise InputError(
            f"{path}: not a readable sitemapkit state database (not an SQLite file); "
            "move it away to start over"
        )


class StateStore:
    """The state database at `path` (created, with its folder, unless `create` is False).

    Raises `InputError` naming the file when it is missing (`create=False`), corrupt, not a sitemapkit
    database, written by a newer sitemapkit, or locked by another run for longer than `timeout` seconds.
    """

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True, timeout: float = 10.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        if not self.path.exists():
            if not create:
                raise InputError(f"{self.path}: no state database here (run `sitemapkit generate` first)")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise InputError(f"{self.path.parent}: cannot create the folder ({exc.strerror})") from None
        elif not self.path.is_file():
            raise InputError(f"{self.path}: not a file")
        else:
            _check_header(self.path)
        try:
            self._conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        except sqlite3.Error as exc:
            folder = self.path.parent
            if not self.path.exists() and not os.access(folder, os.W_OK):
                raise InputError(
                    f"{self.path}: cannot create the state database (no permission to write in {folder})"
                ) from None
            raise _sqlite_error(self.path, exc, timeout) from None
        self._active: StateRun | None = None
        try:
            self._setup()
        except sqlite3.Error as exc:
            self._conn.close()
            raise _sqlite_error(self.path, exc, timeout) from None
        except BaseException:
            self._conn.close()
            raise

    # -- opening ------------------------------------------------------------------------------------

    def _setup(self) -> None:
        conn = self._conn
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if app_id not in (0, APPLICATION_ID) or (
            app_id == 0
            and conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'urls'").fetchone()[0] == 0
            and conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
        ):
            raise InputError(f"{self.path}: an SQLite database, but not a sitemapkit state database")
        if version > SCHEMA_VERSION:
            raise InputError(
                f"{self.path}: written by a newer sitemapkit (schema version {version}; this version reads "
                f"up to {SCHEMA_VERSION}); upgrade sitemapkit or use another --state file"
            )
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        if version < SCHEMA_VERSION:
            self._migrate()

    def _migrate(self) -> None:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]  # another process may have migrated
            now = format_w3c(dt.datetime.now(dt.UTC).replace(microsecond=0))
            for target in sorted(v for v in MIGRATIONS if v > version):
                for statement in MIGRATIONS[target]:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", (target, now)
                )
                conn.execute(f"PRAGMA user_version = {int(target)}")
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    @property
    def schema_version(self) -> int:
        return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        if self._active is not None and not self._active.closed:
            self._active.rollback()
        self._conn.close()

    def __enter__(self) -> StateStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- runs ---------------------------------------------------------------------------------------

    def run(
        self,
        *,
        now: dt.datetime | None = None,
        lastmod_mode: LastmodMode = "content",
        batch_size: int = BATCH,
    ) -> StateRun:
        """Start a run: one transaction that ends at `commit_after`, or when its `with` block ends
        (committed if normally, rolled back on an exception). `now` (timezone-aware; default the current
        time to the second) is the run's time: first/last seen, and the lastmod of new or changed content."""
        if lastmod_mode not in LASTMOD_MODES:
            raise UsageError(f"lastmod mode must be one of {', '.join(LASTMOD_MODES)} (got {lastmod_mode!r})")
        if now is None:
            now = dt.datetime.now(dt.UTC).replace(microsecond=0)
        elif now.utcoffset() is None:
            raise UsageError("now must be a timezone-aware datetime")
        if self._active is not None and not self._active.closed:
            raise UsageError("a run is already in progress on this state store")
        self._active = StateRun(self, now, lastmod_mode, batch_size)
        return self._active

    def _execute(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Cursor:
        try:
            return self._conn.execute(sql, tuple(params))
        except sqlite3.Error as exc:
            raise _sqlite_error(self.path, exc, self.timeout) from None

    def runs(self) -> list[RunInfo]:
        """Every committed run, oldest first."""
        rows = self._execute(
            "SELECT id, started_at, lastmod_mode, added, revived, changed, unchanged, removed FROM runs "
            "ORDER BY id"
        ).fetchall()
        return [RunInfo(*row) for row in rows]

    def last_run(self) -> RunInfo | None:
        row = self._execute(
            "SELECT id, started_at, lastmod_mode, added, revived, changed, unchanged, removed FROM runs "
            "ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return RunInfo(*row) if row else None

    def lastmod(self, url: str) -> Lastmod | None:
        """The lastmod stored for `url` (None when unknown or without one)."""
        row = self._execute("SELECT lastmod FROM urls WHERE url = ?", (url,)).fetchone()
        return _load(row[0]) if row else None

    def __len__(self) -> int:
        """How many URLs are present (not removed)."""
        return int(self._execute("SELECT count(*) FROM urls WHERE removed_run IS NULL").fetchone()[0])

    # -- changes ------------------------------------------------------------------------------------

    def iter_changes(self, since_run: int) -> Iterator[UrlChange]:
        """Stream the net changes after run `since_run` (0: every present URL is `added`), in URL order:

        - added: present now, and (re)appeared after `since_run`;
        - changed: present now and at `since_run`, with its lastmod or content hash moved since;
        - removed: gone now, removed after `since_run`, and present at `since_run`.

        A URL removed and revived after `since_run` counts as added; one that was seen by `since_run`,
        then revived and removed again after it, counts as removed (even if it happened to be gone at
        `since_run` itself: a removal said twice is harmless, one never said is not)."""
        cursor = self._execute(
            "SELECT url, lastmod, last_seen, added_run, changed_run, removed_run, removed_at FROM urls "
            "WHERE (removed_run IS NULL AND changed_run > ?1) OR (removed_run > ?1 AND (added_run <= ?1 "
            "OR first_seen <= (SELECT started_at FROM runs WHERE id = ?1))) "
            "ORDER BY url",
            (since_run,),
        )
        for url, lastmod, last_seen, added_run, _changed_run, removed_run, removed_at in cursor:
            if removed_run is not None:
                yield UrlChange("removed", url, _load(lastmod), removed_at)
            elif added_run > since_run:
                yield UrlChange("added", url, _load(lastmod), last_seen)
            else:
                yield UrlChange("changed", url, _load(lastmod), last_seen)

    def diff(self, since_run: int | None = None) -> StateDiff:
        """The changes after run `since_run`; by default, what the last run changed (against the run
        before it). With no run recorded, an empty diff with `to_run` None."""
        last = self.last_run()
        if since_run is None:
            if last is None:
                return StateDiff(0, None, (), (), ())
            row = self._execute("SELECT max(id) FROM runs WHERE id < ?", (last.id,)).fetchone()
            since_run = int(row[0] or 0)
        groups: dict[str, list[UrlChange]] = {"added": [], "changed": [], "removed": []}
        for change in self.iter_changes(since_run):
            groups[change.kind].append(change)
        return StateDiff(
            since_run,
            last.id if last else None,
            tuple(groups["added"]),
            tuple(groups["changed"]),
            tuple(groups["removed"]),
        )

    def mark(self, name: str, run_id: int | None = None) -> int:
        """Set the marker `name` at run `run_id` (default: the last run) and return that run's id; for
        example `mark("indexnow")` once the last run's changes were submitted."""
        if run_id is None:
            last = self.last_run()
            if last is None:
                raise UsageError("no run recorded yet: nothing to mark")
            run_id = last.id
        now = format_w3c(dt.datetime.now(dt.UTC).replace(microsecond=0))
        self._execute(
            "INSERT INTO marks (name, run_id, marked_at) VALUES (?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET run_id = excluded.run_id, marked_at = excluded.marked_at",
            (name, run_id, now),
        )
        return run_id

    def marker(self, name: str) -> int | None:
        """The run the marker `name` points at, or None when it was never set."""
        row = self._execute("SELECT run_id FROM marks WHERE name = ?", (name,)).fetchone()
        return int(row[0]) if row else None

    def progress(self, name: str) -> str | None:
        """The value saved under `name` with `set_progress`, or None."""
        row = self._execute("SELECT value FROM progress WHERE name = ?", (name,)).fetchone()
        return str(row[0]) if row else None

    def set_progress(self, name: str, value: str | None) -> None:
        """Save `value` under `name` at once (its own transaction), or delete it when `value` is None.
        For work that must resume after a failure, such as an IndexNow submission in batches."""
        if value is None:
            self._execute("DELETE FROM progress WHERE name = ?", (name,))
            return
        now = format_w3c(dt.datetime.now(dt.UTC).replace(microsecond=0))
        self._execute(
            "INSERT INTO progress (name, value, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            (name, value, now),
        )

    def changes_since(self, marker: str) -> Iterator[UrlChange]:
        """Stream the changes after the run the marker `name` points at (all present URLs, as `added`, if
        the marker was never set). See `iter_changes`."""
        return self.iter_changes(self.marker(marker) or 0)


class StateRun:
    """One run over the state store; create it with `StateStore.run`. Use it as a context manager."""

    def __init__(self, store: StateStore, now: dt.datetime, mode: LastmodMode, batch_size: int) -> None:
        self.store = store
        self.now = now
        self.lastmod_mode: LastmodMode = mode
        self._now_text = format_w3c(now)
        self._batch = max(1, batch_size)
        self._pending: dict[str, tuple[Any, ...]] = {}
        self._prefetched: dict[str, tuple[Any, ...] | None] = {}
        self._conn = store._conn
        self._lookup = self._conn.cursor()
        self._caches: list[FileCache] = []
        self._kept: list[tuple[str, bool]] = []
        self.id = 0
        self.added = self.revived = self.changed = self.unchanged = 0
        self.removed = 0
        self._started = False
        self.first = False
        """True for the store's first run: with no history, a new URL gets no lastmod but its source's."""
        self._finalized = False
        self.closed = False

    # -- transaction --------------------------------------------------------------------------------

    def __enter__(self) -> StateRun:
        self.begin()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.closed:
            return
        if exc_type is not None:
            self.rollback()
        else:
            self.finalize()
            self.commit()

    def begin(self) -> None:
        """Open the transaction (taking the database's write lock) and allocate the run id."""
        if self._started:
            raise UsageError("the run has already started")
        self._started = True
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            self.closed = True
            raise _sqlite_error(self.store.path, exc, self.store.timeout) from None
        try:
            cur = conn.execute(
                "INSERT INTO runs (started_at, lastmod_mode) VALUES (?, ?)",
                (self._now_text, self.lastmod_mode),
            )
            self.id = int(cur.lastrowid or 0)
            self.first = (
                conn.execute("SELECT 1 FROM runs WHERE id < ? LIMIT 1", (self.id,)).fetchone() is None
            )
        except BaseException:
            self.rollback()
            raise

    def rollback(self) -> None:
        """Undo everything this run did. Safe to call more than once."""
        if self.closed:
            return
        self.closed = True
        self._pending.clear()
        self._prefetched.clear()
        with contextlib.suppress(sqlite3.Error):
            self._conn.execute("ROLLBACK")

    def commit(self) -> None:
        """Make the run permanent (call `finalize` first)."""
        if not self._finalized:
            raise UsageError("finalize the run before committing it")
        if self.closed:
            raise UsageError("the run is already closed")
        try:
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self.rollback()
            raise _sqlite_error(self.store.path, exc, self.store.timeout) from None
        self.closed = True

    def finalize(self) -> RunInfo:
        """Write the pending observations, mark the URLs not observed in this run as removed, and record
        the run's counts, all inside the still-open transaction. Nothing can be observed afterwards."""
        self._check_open()
        if not self._finalized:
            try:
                self._flush()
                self._finish_caches()
                for url, below in self._kept:  # not seen, but not known to be gone either
                    self._conn.execute(
                        "UPDATE urls SET seen_run = ?1 WHERE removed_run IS NULL AND seen_run < ?1 AND "
                        + ("substr(url, 1, length(?2)) = ?2" if below else "url = ?2"),
                        (self.id, url),
                    )
                cur = self._conn.execute(
                    "UPDATE urls SET removed_run = ?1, removed_at = ?2 "
                    "WHERE removed_run IS NULL AND seen_run < ?1",
                    (self.id, self._now_text),
                )
                self.removed = cur.rowcount
                self._conn.execute(
                    "UPDATE runs SET added = ?, revived = ?, changed = ?, unchanged = ?, removed = ? "
                    "WHERE id = ?",
                    (self.added, self.revived, self.changed, self.unchanged, self.removed, self.id),
                )
            except sqlite3.Error as exc:
                self.rollback()
                raise _sqlite_error(self.store.path, exc, self.store.timeout) from None
            except BaseException:
                self.rollback()
                raise
            self._finalized = True
        return self.summary()

    def commit_after(self, publish: Callable[[], T]) -> T:
        """Two-phase end of a run: finalize (everything written, but not committed), call `publish` (for
        example `writer.close`, which renames the sitemaps into place), then commit. If `publish` raises,
        the run is rolled back and the exception propagates: the store is left as it was.

        The one window left: a crash after `publish` returned and before the COMMIT (one WAL append and
        fsync) leaves new sitemaps with the old state; the next run then sees the same changes again and
        gives them its own `now`, so lastmods can only come out later than published, never earlier."""
        self.finalize()
        try:
            result = publish()
        except BaseException:
            self.rollback()
            raise
        self.commit()
        return result

    def summary(self) -> RunInfo:
        """The run's counts so far (`removed` is known once finalized)."""
        return RunInfo(
            self.id,
            self._now_text,
            self.lastmod_mode,
            self.added,
            self.revived,
            self.changed,
            self.unchanged,
            self.removed,
        )

    def _check_open(self) -> None:
        if not self._started:
            raise UsageError("the run has not started (use it in a `with` block)")
        if self.closed:
            raise UsageError("the run is closed")

    # -- the file cache -----------------------------------------------------------------------------

    def file_cache(self, root: bytes, fingerprint: str, *, batch_size: int = CACHE_BATCH) -> FileCache:
        """The file cache of the folder `root` (its real path, as bytes) for this run, holding what an
        earlier run's scan made of each file. A different `fingerprint` (the options the results depend
        on) than the stored one empties it. See `FileCache`."""
        self._check_open()
        if self._finalized:
            raise UsageError("the run is finalized; nothing more can be observed")
        for other in self._caches:  # an earlier scan of the folder in this run is over (if not closed)
            if other.root == root:
                other.detach()
        cache = FileCache(self, root, fingerprint, batch_size)
        self._caches.append(cache)
        return cache

    def _finish_caches(self) -> None:
        """Write the caches' pending rows; in a run that scanned folders, forget the caches of the folders
        it did not scan (their files are gone from the sitemaps, as their URLs are)."""
        if not self._caches:
            return
        for cache in self._caches:
            cache._flush()
        used = {c.root_id for c in self._caches}
        for (root_id,) in self._conn.execute("SELECT id FROM scan_roots").fetchall():
            if root_id not in used:
                self._conn.execute("DELETE FROM scan_files WHERE root_id = ?", (root_id,))
                self._conn.execute("DELETE FROM scan_roots WHERE id = ?", (root_id,))

    # -- observing ----------------------------------------------------------------------------------

    def prefetch(self, urls: Iterable[str]) -> None:
        """Read what the store holds for `urls` in a few queries, for the `observe` calls that follow
        (one indexed query per 500 URLs instead of one per URL; each row read serves one `observe`).
        Replaces what an earlier `prefetch` read, so memory stays bounded by the batch given."""
        self._check_open()
        self._prefetched.clear()
        wanted = [u for u in dict.fromkeys(urls) if u not in self._pending]
        for i in range(0, len(wanted), _PREFETCH_CHUNK):
            chunk = wanted[i : i + _PREFETCH_CHUNK]
            self._prefetched.update(dict.fromkeys(chunk))
            sql = _SELECT_MANY.format(marks=",".join("?" * len(chunk)))
            for row in self._conn.execute(sql, chunk):
                self._prefetched[row[0]] = row[1:]

    def keep(self, url: str, *, below: bool = False) -> None:
        """Do not record `url` (with `below`, every URL that starts with it) as removed by this run, though
        it was not observed: its page or folder could not be read, so whether it is gone is not known."""
        self._check_open()
        if self._finalized:
            raise UsageError("the run is finalized; nothing more can be observed")
        self._kept.append((url, below))

    def observe(
        self,
        url: str,
        *,
        content_hash: str | None,
        source_lastmod: Lastmod | None = None,
        mtime: float | None = None,
        git_time: Lastmod | None = None,
    ) -> Lastmod | None:
        """Record that `url` is in this run and return the lastmod to publish for it.

        `url` should be normalised (as the writer publishes it). By mode:

        - `content`: the stored lastmod while `content_hash` is unchanged (a `None` hash is "unknown" and
          changes nothing). A new URL gets `source_lastmod` if given, else the run's `now`, except in the
          store's first run (`first`: with no history, nothing says it changed now) and for a URL whose
          content is unknown (a `None` hash, a list or log entry): those get none. Changed
          content gets `source_lastmod` if given and later than the stored lastmod (the source knows when
          it changed), else `now` (a source date that did not move is stale). A revived URL keeps its old
          lastmod when its content is unchanged.
        - `source`: `source_lastmod` as given.
        - `mtime`: `mtime` (whole seconds, UTC); without it, `source_lastmod`.
        - `git`: `git_time`; without it, `mtime`, then `source_lastmod`.
        """
        if self._finalized:
            raise UsageError("the run is finalized; nothing more can be observed")
        self._check_open()
        row = self._pending.get(url)
        if row is not None:
            stored_hash, stored_text, first_seen, added_run, changed_run, seen_run, removed_run = (
                row[1],
                row[2],
                row[3],
                row[5],
                row[6],
                self.id,  # pending rows were all observed in this run (row[7] is 0 for a "seen only" row)
                None,
            )
        else:
            found = self._prefetched.pop(url, _UNKNOWN)
            if found is _UNKNOWN:
                found = self._lookup.execute(_SELECT, (url,)).fetchone()
            if found is None:
                stored_hash = stored_text = first_seen = removed_run = None
                added_run = changed_run = seen_run = 0
            else:
                stored_hash, stored_text, first_seen, added_run, changed_run, seen_run, removed_run = found
        stored = _load(stored_text)
        is_new = first_seen is None
        revived = removed_run is not None
        hash_changed = content_hash is not None and stored_hash is not None and content_hash != stored_hash
        mode = self.lastmod_mode
        lastmod: Lastmod | None
        if mode == "content":
            if is_new:  # "now" only when the content is known, and not in the first run (nothing changed now)
                invent = source_lastmod is None and not self.first and content_hash is not None
                lastmod = self.now if invent else source_lastmod
            elif hash_changed:
                if source_lastmod is not None and (
                    stored is None or sort_key(source_lastmod) > sort_key(stored)
                ):
                    lastmod = source_lastmod
                else:
                    lastmod = self.now
            else:
                lastmod = stored if stored is not None else source_lastmod
        elif mode == "source":
            lastmod = source_lastmod
        elif mode == "mtime":
            lastmod = _from_timestamp(mtime) if mtime is not None else source_lastmod
        else:
            lastmod = (
                git_time
                if git_time is not None
                else _from_timestamp(mtime)
                if mtime is not None
                else source_lastmod
            )
        if lastmod is None:
            text = None
        elif lastmod is stored:
            text = stored_text
        elif lastmod is self.now:
            text = self._now_text
        else:
            text = format_w3c(lastmod)
        new_hash = content_hash if content_hash is not None else stored_hash
        if seen_run == self.id:  # observed before in this run: update the state, count once
            if text != stored_text or new_hash != stored_hash:
                changed_run = self.id
        elif is_new or revived:
            added_run = changed_run = self.id
            self.added += 1
            self.revived += revived
        elif text != stored_text or hash_changed:
            changed_run = self.id
            self.changed += 1
        else:
            self.unchanged += 1
            if row is None:  # nothing but "seen" changes: a cheaper write
                self._pending[url] = (
                    url,
                    new_hash,
                    text,
                    first_seen,
                    self._now_text,
                    added_run,
                    changed_run,
                    0,
                )
                if len(self._pending) >= self._batch:
                    self._flush()
                return lastmod
        self._pending[url] = (
            url,
            new_hash,
            text,
            first_seen or self._now_text,
            self._now_text,
            added_run,
            changed_run,
            self.id,
        )
        if len(self._pending) >= self._batch:
            self._flush()
        return lastmod

    def _flush(self) -> None:
        if self._pending:
            rows = self._pending.values()
            self._conn.executemany(_UPSERT, (r for r in rows if r[7]))
            self._conn.executemany(_TOUCH, ((self._now_text, self.id, r[0]) for r in rows if not r[7]))
            self._pending.clear()
