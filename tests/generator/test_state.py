"""The state store: honest lastmod across runs, transactions, schema versions, and --lastmod git."""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.errors import InputError, UsageError
from sitemapkit.generator import state
from sitemapkit.generator.gitdates import git_last_commit_times
from sitemapkit.generator.state import SCHEMA_VERSION, StateStore

T1 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
T2 = dt.datetime(2024, 2, 1, tzinfo=dt.UTC)
T3 = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)
T4 = dt.datetime(2024, 4, 1, tzinfo=dt.UTC)
T0 = dt.datetime(2023, 12, 1, tzinfo=dt.UTC)
U = "https://example.com/"


def dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, read with a plain connection: the store's whole visible state."""
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in sorted(tables)}
    finally:
        conn.close()


def build(path: Path, now: dt.datetime, pages: dict[str, str | None], **kw: Any) -> dict[str, Any]:
    """One committed run observing `pages` (url -> content hash); returns the lastmods it gave."""
    with StateStore(path) as store, store.run(now=now, **kw) as run:
        return {url: run.observe(U + url, content_hash=h) for url, h in pages.items()}


# -- content mode --------------------------------------------------------------------------------------


def test_content_lastmod_stable_across_unchanged_reruns_and_moves_on_hash_change(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    # the first run has no history: nothing says the pages changed now, so no lastmod is invented
    assert build(db, T1, {"a": "h1", "b": "h1"}) == {"a": None, "b": None}
    assert build(db, T2, {"a": "h1", "b": "h1"}) == {"a": None, "b": None}
    assert build(db, T3, {"a": "h2", "b": "h1", "c": "h1"}) == {"a": T3, "b": None, "c": T3}
    assert build(db, T4, {"a": "h2", "b": "h1", "c": "h1"}) == {"a": T3, "b": None, "c": T3}
    with StateStore(db) as store:
        runs = store.runs()
        assert [(r.added, r.changed, r.unchanged, r.removed) for r in runs] == [
            (2, 0, 0, 0),
            (0, 0, 2, 0),
            (1, 1, 1, 0),
            (0, 0, 3, 0),
        ]
        assert store.diff().empty
        changed = store.diff(since_run=2)
        assert [c.url for c in changed.changed] == [U + "a"] and [c.url for c in changed.added] == [U + "c"]
        assert store.lastmod(U + "a") == T3
        assert len(store) == 3


def test_touched_but_unchanged_files_change_nothing(tmp_path: Path) -> None:
    """Same content, a new mtime (a rebuild touched the file): content mode ignores the mtime."""
    db = tmp_path / "state.db"
    build(db, T0, {})  # history: a new page gets the run's time
    with StateStore(db) as store, store.run(now=T1) as run:
        assert run.observe(U, content_hash="h", mtime=1_700_000_000.5) == T1
    before = dump(db)["urls"]
    with StateStore(db) as store, store.run(now=T2) as run:
        assert run.observe(U, content_hash="h", mtime=1_800_000_000.0) == T1
    assert run.summary().unchanged == 1
    after = dump(db)["urls"]
    # only last_seen and seen_run moved
    assert [r[:4] for r in before] == [r[:4] for r in after]
    with StateStore(db) as store:
        assert store.diff().empty


def test_content_mode_with_source_lastmod(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    src = dt.date(2023, 6, 1)
    with StateStore(db) as store:
        with store.run(now=T1) as run:
            assert run.observe(U + "new", content_hash="h", source_lastmod=src) == src  # new: the source
            assert run.observe(U + "plain", content_hash="h") is None  # new in the first run, no source: none
            assert run.observe(U + "nohash", content_hash=None) is None
        with store.run(now=T2) as run:
            assert run.observe(U + "late", content_hash="h") == T2  # new after the first run: now
            # unchanged content: the stored lastmod even though the source moved
            assert run.observe(U + "new", content_hash="h", source_lastmod=dt.date(2023, 7, 1)) == src
            # a None hash is "unknown": nothing changes
            assert run.observe(U + "nohash", content_hash=None) is None
            # changed content, the source is newer than stored: the source
            later = dt.datetime(2024, 1, 15, tzinfo=dt.UTC)
            assert run.observe(U + "plain", content_hash="h2", source_lastmod=later) == later
        with store.run(now=T3) as run:
            # changed content but a stale source date: now
            assert run.observe(U + "new", content_hash="h2", source_lastmod=src) == T3
            run.observe(U + "plain", content_hash="h2")
            run.observe(U + "nohash", content_hash=None)
        assert [c.url for c in store.diff().changed] == [U + "new"]


def test_removed_and_revived_urls(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    build(db, T1, {"a": "h", "b": "h"})
    build(db, T2, {"a": "h"})
    with StateStore(db) as store:
        d = store.diff()
        assert [c.url for c in d.removed] == [U + "b"] and d.removed[0].when == "2024-02-01T00:00:00+00:00"
        assert not d.added and not d.changed
        assert len(store) == 1
        assert dump(db)["urls"][1][8:] == (2, "2024-02-01T00:00:00+00:00")
    # back with the same content: revived, keeps its lastmod; with new content it would move
    assert build(db, T3, {"a": "h", "b": "h"}) == {"a": None, "b": None}  # the first run gave none
    with StateStore(db) as store:
        last = store.last_run()
        assert last is not None and (last.added, last.revived, last.unchanged) == (1, 1, 1)
        d = store.diff()
        assert [c.url for c in d.added] == [U + "b"] and not d.removed
        # b was there at run 1 and is again, but the gap is not kept: a revival counts as added (documented)
        assert [(c.kind, c.url) for c in store.iter_changes(1)] == [("added", U + "b")]
        assert store.diff(since_run=0).added[0].url == U + "a"
    assert build(db, T4, {"b": "h2"}) == {"b": T4}
    with StateStore(db) as store:
        assert dump(db)["urls"][1][2:4] == ("2024-04-01T00:00:00+00:00", "2024-01-01T00:00:00+00:00")


def test_duplicates_in_a_run_count_once_and_batches_see_pending_rows(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    build(db, T0, {})  # history: a new page gets the run's time
    with StateStore(db) as store:
        with store.run(now=T1, batch_size=2) as run:
            for i in range(5):
                run.observe(f"{U}{i}", content_hash="h")
            assert run.observe(f"{U}4", content_hash="h") == T1  # still pending
            assert run.observe(f"{U}0", content_hash="h") == T1  # already flushed
        assert run.summary().added == 5
        with store.run(now=T2, batch_size=3) as run:
            for i in range(5):
                run.observe(f"{U}{i}", content_hash="h")
            assert run.observe(f"{U}4", content_hash="x") == T2  # changed by its second observation
        s = run.summary()
        assert (s.added, s.changed, s.unchanged, s.removed) == (0, 0, 5, 0)
        assert [c.url for c in store.diff().changed] == [f"{U}4"]


# -- other lastmod modes -------------------------------------------------------------------------------


def test_mtime_mode(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    with StateStore(db) as store:
        with store.run(now=T1, lastmod_mode="mtime") as run:
            assert run.observe(U, content_hash="h", mtime=1_700_000_000.75) == dt.datetime.fromtimestamp(
                1_700_000_000, dt.UTC
            )
            assert run.observe(U + "x", content_hash=None, source_lastmod=dt.date(2020, 1, 1)) == dt.date(
                2020, 1, 1
            )
        with store.run(now=T2, lastmod_mode="mtime") as run:  # touched: mtime mode moves
            assert run.observe(U, content_hash="h", mtime=1_700_000_100) == dt.datetime.fromtimestamp(
                1_700_000_100, dt.UTC
            )
            run.observe(U + "x", content_hash=None, source_lastmod=dt.date(2020, 1, 1))
        assert run.summary().changed == 1
        assert [c.url for c in store.diff().changed] == [U]


def test_source_and_git_modes(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    with StateStore(db) as store:
        with store.run(now=T1, lastmod_mode="source") as run:
            assert run.observe(U, content_hash="h") is None
            assert run.observe(U + "s", content_hash="h", source_lastmod=dt.date(2021, 1, 1)) == dt.date(
                2021, 1, 1
            )
        with store.run(now=T2, lastmod_mode="git") as run:
            assert run.observe(U, content_hash="h", git_time=T1, mtime=5.0) == T1
            assert run.observe(U + "s", content_hash="h", mtime=5.0) == dt.datetime.fromtimestamp(5, dt.UTC)
        with pytest.raises(UsageError):
            store.run(lastmod_mode="bogus")  # type: ignore[arg-type]


# -- transactions --------------------------------------------------------------------------------------


def test_exception_inside_a_run_leaves_the_db_exactly_as_before(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    build(db, T0, {})  # history: new pages get the run's time
    build(db, T1, {"a": "h", "b": "h"})
    before = dump(db)
    with StateStore(db) as store:
        with pytest.raises(RuntimeError), store.run(now=T2, batch_size=1) as run:
            for i in range(10):
                run.observe(f"{U}new{i}", content_hash="h")  # flushed to the DB, inside the transaction
            run.observe(U + "a", content_hash="changed")
            raise RuntimeError("boom")
        assert dump(db) == before
        assert store.lastmod(U + "a") == T1
        # the store is usable afterwards
        with store.run(now=T3) as run:
            run.observe(U + "a", content_hash="h")
        assert [r.id for r in store.runs()] == [1, 2, 3]


def test_failed_publish_leaves_the_store_as_before(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    build(db, T1, {"a": "h", "b": "h"})
    before = dump(db)

    def publish() -> str:
        raise OSError("disk full")

    with StateStore(db) as store:
        with pytest.raises(OSError, match="disk full"), store.run(now=T2) as run:
            run.observe(U + "a", content_hash="h2")
            run.commit_after(publish)
        assert dump(db) == before
        with store.run(now=T2) as run:
            run.observe(U + "a", content_hash="h2")
            assert run.commit_after(lambda: "published") == "published"
            with pytest.raises(UsageError):
                run.observe(U + "b", content_hash="h")
        assert run.summary().removed == 1
        assert store.lastmod(U + "a") == T2


def test_publish_sees_the_finalized_but_uncommitted_run(tmp_path: Path) -> None:
    """Another reader does not see the run while publishing (the transaction is not committed yet)."""
    db = tmp_path / "state.db"
    build(db, T0, {})  # history: new pages get the run's time
    build(db, T1, {"a": "h"})
    seen: list[Any] = []
    with StateStore(db) as store, store.run(now=T2) as run:
        run.observe(U + "a", content_hash="h2")
        run.commit_after(lambda: seen.append(dump(db)["urls"]))
    assert seen[0][0][2] == "2024-01-01T00:00:00+00:00"
    assert dump(db)["urls"][0][2] == "2024-02-01T00:00:00+00:00"


CRASHER = textwrap.dedent(
    """
    import datetime as dt, sys, time
    from sitemapkit.generator.state import StateStore
    store = StateStore(sys.argv[1])
    run = store.run(now=dt.datetime(2024, 5, 1, tzinfo=dt.UTC), batch_size=500)
    run.begin()
    for i in range(5000):
        run.observe(f"https://example.com/{i}", content_hash="new")
    run.finalize()
    print("ready", flush=True)
    time.sleep(60)
    """
)


def test_killed_process_mid_run_leaves_the_db_as_before_and_lock_is_reported(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    build(db, T0, {})  # history: new pages get the run's time
    build(db, T1, {str(i): "old" for i in range(0, 5000, 7)})
    before = dump(db)
    proc = subprocess.Popen(
        [sys.executable, "-c", CRASHER, str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
        # while the run holds the write lock another run is refused with a clear message
        with StateStore(db, timeout=0.05) as other, pytest.raises(InputError, match="locked"):
            other.run(now=T2).begin()
    finally:
        proc.kill()
        proc.wait()
    assert dump(db) == before
    with StateStore(db) as store:
        assert store.lastmod(U + "7") == T1
        assert [r.id for r in store.runs()] == [1, 2]


# -- marks ---------------------------------------------------------------------------------------------


def test_marks_and_changes_since(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    build(db, T1, {"a": "h", "b": "h"})
    with StateStore(db) as store:
        assert {c.url for c in store.changes_since("indexnow")} == {U + "a", U + "b"}  # never set: all
        assert store.mark("indexnow") == 1
        assert store.marker("indexnow") == 1
        assert list(store.changes_since("indexnow")) == []
    build(db, T2, {"a": "h2", "c": "h"})
    build(db, T3, {"a": "h2", "c": "h", "d": "h"})
    with StateStore(db) as store:
        kinds = {(c.kind, c.url) for c in store.changes_since("indexnow")}
        assert kinds == {("changed", U + "a"), ("removed", U + "b"), ("added", U + "c"), ("added", U + "d")}
        store.mark("indexnow")
        assert store.marker("indexnow") == 3
        assert list(store.changes_since("indexnow")) == []
    with StateStore(tmp_path / "empty.db") as empty, pytest.raises(UsageError):
        empty.mark("indexnow")


# -- schema, errors ------------------------------------------------------------------------------------


def test_schema_version_and_migrations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "sub" / "state.db"
    current = SCHEMA_VERSION
    # a file written by the first release (schema version 1)...
    monkeypatch.setattr(state, "MIGRATIONS", {1: state.MIGRATIONS[1]})
    monkeypatch.setattr(state, "SCHEMA_VERSION", 1)
    build(db, T0, {})
    build(db, T1, {"a": "h"})
    with StateStore(db) as store:
        assert store.schema_version == 1
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == state.APPLICATION_ID
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert [r[0] for r in conn.execute("SELECT version FROM schema_migrations")] == [1]
    conn.close()
    # ...is migrated in place by this one, data kept
    monkeypatch.undo()
    with StateStore(db) as store:
        assert store.schema_version == current
        assert store.lastmod(U + "a") == T1
        store.set_progress("job", "half")
        assert store.progress("job") == "half"
        store.set_progress("job", None)
        assert store.progress("job") is None
    conn = sqlite3.connect(db)
    assert [r[0] for r in conn.execute("SELECT version FROM schema_migrations")] == list(
        range(1, current + 1)
    )
    conn.close()
    # a later sitemapkit adds a migration...
    migrations = {**state.MIGRATIONS, current + 1: ["ALTER TABLE urls ADD COLUMN title TEXT"]}
    monkeypatch.setattr(state, "MIGRATIONS", migrations)
    monkeypatch.setattr(state, "SCHEMA_VERSION", current + 1)
    with StateStore(db) as store:
        assert store.schema_version == current + 1
    # ...and this sitemapkit refuses the newer file, naming it
    monkeypatch.setattr(state, "SCHEMA_VERSION", current)
    with pytest.raises(
        InputError, match=rf"state\.db: written by a newer sitemapkit \(schema version {current + 1}"
    ):
        StateStore(db)


def test_corrupt_foreign_and_missing_files(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"this is not SQLite at all\n" * 200)
    with pytest.raises(InputError, match=r"corrupt\.db: not a readable sitemapkit state database"):
        StateStore(corrupt)
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE things (x)")
    conn.commit()
    conn.close()
    with pytest.raises(InputError, match=r"foreign\.db: an SQLite database, but not a sitemapkit"):
        StateStore(foreign)
    with pytest.raises(InputError, match="no state database here"):
        StateStore(tmp_path / "missing.db", create=False)
    assert not (tmp_path / "missing.db").exists()
    with pytest.raises(InputError, match="not a file"):
        StateStore(tmp_path)


def test_run_misuse(tmp_path: Path) -> None:
    with StateStore(tmp_path / "s.db") as store:
        run = store.run(now=T1)
        with pytest.raises(UsageError):
            run.observe(U, content_hash="h")  # not started
        with pytest.raises(UsageError, match="timezone-aware"):
            store.run(now=dt.datetime(2024, 1, 1))
        with run:
            with pytest.raises(UsageError, match="already in progress"):
                store.run(now=T2)
            run.observe(U, content_hash="h")
        assert store.diff().added[0].url == U


# -- property ------------------------------------------------------------------------------------------

observations = st.dictionaries(
    st.text(alphabet="abc/", min_size=1, max_size=4),
    st.tuples(
        st.sampled_from(["h1", "h2", None]),
        st.one_of(st.none(), st.dates(dt.date(2020, 1, 1), dt.date(2025, 1, 1))),
    ),
    max_size=20,
)


@settings(max_examples=40, deadline=None)
@given(first=observations, second=observations)
def test_replaying_the_same_observations_is_a_no_op(
    first: dict[str, tuple[str | None, dt.date | None]], second: dict[str, tuple[str | None, dt.date | None]]
) -> None:
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "state.db"
        with StateStore(db) as store:
            for now, obs in ((T1, first), (T2, second)):
                with store.run(now=now) as run:
                    for url, (h, src) in obs.items():
                        run.observe(U + url, content_hash=h, source_lastmod=src)
            with store.run(now=T3) as run:
                published = {
                    url: run.observe(U + url, content_hash=h, source_lastmod=src)
                    for url, (h, src) in second.items()
                }
            assert store.diff(since_run=2).empty
            with store.run(now=T4) as run:
                again = {
                    url: run.observe(U + url, content_hash=h, source_lastmod=src)
                    for url, (h, src) in second.items()
                }
            assert again == published
            assert store.diff().empty
            assert run.summary().unchanged == len(second)


# -- git -----------------------------------------------------------------------------------------------


def _git(repo: Path, *args: str, date: str | None = None) -> None:
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)


def _lines(tag: str) -> str:
    return "".join(f"{tag} line {i} of a reasonably long file\n" for i in range(20))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    (r / "docs").mkdir(parents=True)
    _git(r, "init", "-q", "-b", "main")
    (r / "a.md").write_text(_lines("a"))
    (r / "b.md").write_text(_lines("b"))
    (r / "d.md").write_text(_lines("d"))
    (r / "dirty.md").write_text(_lines("dirty"))
    _git(r, "add", ".")
    _git(r, "commit", "-q", "-m", "one", date="2024-01-01T00:00:00Z")
    (r / "a.md").write_text(_lines("a") + "more\n")
    _git(r, "commit", "-q", "-am", "two", date="2024-03-01T00:00:00Z")
    _git(r, "mv", "b.md", "docs/c.md")  # a pure rename
    _git(r, "commit", "-q", "-m", "three", date="2024-04-01T00:00:00Z")
    _git(r, "mv", "d.md", "e.md")  # a rename with an edit
    (r / "e.md").write_text(_lines("d") + "edited\n")
    _git(r, "add", "e.md")
    _git(r, "commit", "-q", "-m", "four", date="2024-05-01T00:00:00Z")
    (r / "dirty.md").write_text("changed, not committed\n")
    (r / "new.md").write_text("untracked\n")
    for name in ("dirty.md", "new.md"):
        os.utime(r / name, (1_600_000_000, 1_600_000_000))
    return r


def test_git_last_commit_times(repo: Path) -> None:
    diags: list[Diagnostic] = []
    times = git_last_commit_times(
        repo,
        ["a.md", "docs/c.md", "e.md", "dirty.md", "new.md", "gone.md", repo / "a.md"],
        on_diagnostic=diags.append,
    )
    mtime = dt.datetime.fromtimestamp(1_600_000_000, dt.UTC)
    assert times == {
        "a.md": dt.datetime(2024, 3, 1, tzinfo=dt.UTC),
        str(repo / "a.md"): dt.datetime(2024, 3, 1, tzinfo=dt.UTC),
        "docs/c.md": dt.datetime(2024, 1, 1, tzinfo=dt.UTC),  # renamed unchanged: the content's date
        "e.md": dt.datetime(2024, 5, 1, tzinfo=dt.UTC),  # renamed and edited
        "dirty.md": mtime,
        "new.md": mtime,
    }
    codes = sorted((d.code, d.source) for d in diags)
    assert codes == [
        ("lastmod-fallback", "dirty.md"),
        ("lastmod-fallback", "new.md"),
        ("read-error", "gone.md"),
    ]
    # from a subfolder, relative to it
    assert git_last_commit_times(repo / "docs", ["c.md"]) == {"c.md": dt.datetime(2024, 1, 1, tzinfo=dt.UTC)}


def test_git_errors(tmp_path: Path, repo: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "x.md").write_text("x")
    with pytest.raises(InputError, match="not inside a git repository"):
        git_last_commit_times(plain, ["x.md"])
    with pytest.raises(InputError, match="outside the git repository"):
        git_last_commit_times(repo, [plain / "x.md"])
    empty = tmp_path / "empty"
    empty.mkdir()
    _git(empty, "init", "-q")
    (empty / "x.md").write_text("x")
    os.utime(empty / "x.md", (1_600_000_000, 1_600_000_000))
    assert git_last_commit_times(empty, ["x.md"]) == {
        "x.md": dt.datetime.fromtimestamp(1_600_000_000, dt.UTC)
    }


def test_git_mode_end_to_end(tmp_path: Path, repo: Path) -> None:
    db = tmp_path / "state.db"
    files = {"a.md": U + "a", "docs/c.md": U + "c"}
    times = git_last_commit_times(repo, files)
    with StateStore(db) as store, store.run(now=T4, lastmod_mode="git") as run:
        got = {url: run.observe(url, content_hash=None, git_time=times[f]) for f, url in files.items()}
    assert got == {
        U + "a": dt.datetime(2024, 3, 1, tzinfo=dt.UTC),
        U + "c": dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
    }


def test_a_short_file_that_is_not_sqlite_is_refused_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"x")
    with pytest.raises(InputError, match="not an SQLite file"):
        StateStore(path)
    assert path.read_bytes() == b"x"


# -- the file cache of folder scans ----------------------------------------------------------------------


def cache_table(path: Path) -> dict[bytes, tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT key, size, mtime_ns, ctime_ns, ino, content_hash, data FROM scan_files")
        return {r[0]: r[1:] for r in rows}
    finally:
        conn.close()


@settings(max_examples=40, deadline=None)
@given(
    runs=st.lists(
        st.dictionaries(
            st.binary(min_size=1, max_size=3), st.tuples(st.integers(0, 2), st.booleans()), max_size=25
        ),
        min_size=1,
        max_size=4,
    ),
    batch=st.integers(1, 6),
)
def test_file_cache_merges_its_rows_with_the_walk(
    runs: list[dict[bytes, tuple[int, bool]]], batch: int
) -> None:
    """Each run asks for its files in key order: a file stored trusted with the same size, mtime and ctime
    is a hit (with what was stored), anything else a miss; afterwards the table holds exactly the run's
    files, whatever the batch size."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "state.db"
        stored: dict[bytes, tuple[Any, ...]] = {}
        with StateStore(db) as store:
            for files in runs:
                expected: dict[bytes, tuple[Any, ...]] = {}
                with store.run() as run:
                    cache = run.file_cache(b"/site", "options-1", batch_size=batch)
                    for key in sorted(files):
                        size, trusted = files[key]
                        got = cache.get(key, (size, 7, 9, 11))
                        old = stored.get(key)
                        if old is not None and old[:4] == (size, 7, 9, 11):
                            assert got == (f"hash {size}", f"data {key!r}")
                            expected[key] = old
                        else:
                            assert got is None
                            cache.put(key, (size, 7, 9, 11), f"hash {size}", f"data {key!r}", trusted=trusted)
                            expected[key] = (
                                size,
                                7 if trusted else None,
                                9,
                                11,
                                f"hash {size}",
                                f"data {key!r}",
                            )
                    cache.close()
                    assert cache.hits + cache.misses == len(files)
                stored = cache_table(db)
                assert stored == expected


def test_file_cache_fingerprint_order_and_rollback(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    with StateStore(db) as store:
        with store.run() as run:
            cache = run.file_cache(b"/site", "options-1")
            for key in (b"a", b"b", b"c"):
                assert cache.get(key, (1, 2, 3, 4)) is None
                cache.put(key, (1, 2, 3, 4), "h-" + key.decode(), None)
            cache.close()
        with store.run() as run:
            cache = run.file_cache(b"/site", "options-1")
            assert cache.get(b"b", (1, 2, 3, 4)) == ("h-b", None)
            assert cache.get(b"a", (1, 2, 3, 4)) == ("h-a", None)  # out of order: looked up alone
            assert cache.get(b"c", (1, 2, 3, 5)) is None  # another inode
            cache.put(b"c", (1, 2, 3, 5), "h-c2", "{}")
            # no close (an abandoned walk): nothing is deleted, what was put is kept
        assert cache_table(db) == {
            b"a": (1, 2, 3, 4, "h-a", None),
            b"b": (1, 2, 3, 4, "h-b", None),
            b"c": (1, 2, 3, 5, "h-c2", "{}"),
        }
        before = dump(db)
        with pytest.raises(RuntimeError), store.run() as run:  # a failed run changes nothing
            cache = run.file_cache(b"/site", "options-2")  # other options: emptied...
            assert cache.get(b"a", (1, 2, 3, 4)) is None
            cache.put(b"z", (1, 2, 3, 4), "h-z", None)
            cache.close()
            raise RuntimeError
        assert dump(db) == before
        with store.run() as run:
            cache = run.file_cache(b"/site", "options-2")
            assert cache.get(b"a", (1, 2, 3, 4)) is None
            cache.close()
        assert cache_table(db) == {}
        with store.run() as run:
            run.finalize()
            with pytest.raises(UsageError):
                run.file_cache(b"/site", "options-2")


@settings(max_examples=40, deadline=None)
@given(
    history=st.dictionaries(st.sampled_from("abcdefgh"), st.sampled_from(["h1", "h2"]), max_size=8),
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("observe"), st.sampled_from("abcdefghij"), st.sampled_from(["h1", "h2", None])),
            st.tuples(st.just("prefetch"), st.lists(st.sampled_from("abcdefghij"), max_size=6)),
        ),
        max_size=25,
    ),
    batch=st.integers(1, 4),
)
def test_prefetch_changes_nothing_but_the_queries(
    history: dict[str, str], steps: list[tuple[Any, ...]], batch: int
) -> None:
    """Prefetched rows give the same lastmods and the same database as looking each URL up alone, whatever
    the order of prefetches, repeated URLs and flushes in between."""
    with tempfile.TemporaryDirectory() as tmp:
        results = []
        for use_prefetch in (False, True):
            db = Path(tmp) / f"{use_prefetch}.db"
            build(db, T1, dict(history))
            lastmods = []
            with StateStore(db) as store, store.run(now=T2, batch_size=batch) as run:
                for step in steps:
                    if step[0] == "prefetch":
                        if use_prefetch:
                            run.prefetch(U + u for u in step[1])
                    else:
                        lastmods.append(run.observe(U + step[1], content_hash=step[2]))
                summary = run.finalize()
            tables = dump(db)
            del tables["schema_migrations"]  # when each database was created
            results.append((lastmods, summary, tables))
        assert results[0] == results[1]
