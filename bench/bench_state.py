"""Benchmark: the state store (`sitemapkit.generator.state`) on 1,000,000 URLs, beside a plain SQLite INSERT.

    python bench/bench_state.py [--urls 1000000]

Each contender runs in a fresh Python process (bench/common.py), so its peak RSS (VmHWM) is its own.

- baseline: a plain `executemany` INSERT of the same rows (URL, hash, lastmod, times, run ids) into a table
  of the same shape (WITHOUT ROWID, URL primary key), one transaction, WAL: the floor for writing them.
- first run: `StateRun.observe` for every URL into an empty store (one lookup and one upsert per URL).
- unchanged rerun: the same URLs and hashes again (the common case: every lastmod is kept).
- unchanged rerun, prefetched: the same again, with `StateRun.prefetch` reading the rows of each 1,000 URLs
  in two queries before they are observed (what `generate` does for a site folder).
- rerun, 10% changed: every tenth URL with a new hash, and 1% of the URLs gone (marked removed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import WORK, Result, print_table, run_python

BASELINE = """
import sqlite3
N = {n}
path = {path!r}
conn = sqlite3.connect(path, isolation_level=None)
conn.execute("PRAGMA journal_mode = WAL")
conn.execute("PRAGMA synchronous = FULL")
conn.execute(
    "CREATE TABLE urls (url TEXT PRIMARY KEY, content_hash TEXT, lastmod TEXT, first_seen TEXT NOT NULL,"
    " last_seen TEXT NOT NULL, added_run INTEGER NOT NULL, changed_run INTEGER NOT NULL,"
    " seen_run INTEGER NOT NULL, removed_run INTEGER, removed_at TEXT) WITHOUT ROWID"
)
now = "2024-01-01T00:00:00+00:00"
conn.execute("BEGIN")
batch = []
for i in range(N):
    url = f"https://www.example.com/products/item-{{i}}"
    batch.append((url, f"{{i * 2654435761 % 2**64:016x}}", now, now, now, 1, 1, 1))
    if len(batch) == 10_000:
        conn.executemany("INSERT INTO urls VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)", batch)
        batch.clear()
conn.executemany("INSERT INTO urls VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)", batch)
conn.execute("COMMIT")
conn.close()
result = N
"""

STORE = """
import datetime as dt
from sitemapkit.generator.state import StateStore
N = {n}
day = {day}
change_every = {change_every}
drop_every = {drop_every}
prefetch = {prefetch}
now = dt.datetime(2024, 1, day, tzinfo=dt.UTC)
count = 0
with StateStore({path!r}) as store:
    with store.run(now=now) as run:
        observe = run.observe
        for start in range(0, N, 1000):
            if prefetch:
                urls = range(start, min(N, start + 1000))
                run.prefetch(f"https://www.example.com/products/item-{{i}}" for i in urls)
            for i in range(start, min(N, start + 1000)):
                if drop_every and i % drop_every == 0:
                    continue
                h = f"{{i * 2654435761 % 2**64:016x}}"
                if change_every and i % change_every == 0:
                    h += "x"
                observe(f"https://www.example.com/products/item-{{i}}", content_hash=h)
                count += 1
    s = run.summary()
    print(f"summary added={{s.added}} changed={{s.changed}} unchanged={{s.unchanged}} removed={{s.removed}}")
result = count
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--urls", type=int, default=1_000_000)
    args = ap.parse_args()
    n = args.urls
    WORK.mkdir(exist_ok=True)
    base_db = WORK / "state-baseline.db"
    store_db = WORK / "state.db"
    for db in (base_db, store_db):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
    results: list[Result] = [
        run_python("plain INSERT (baseline)", BASELINE.format(n=n, path=str(base_db))),
        run_python(
            "StateStore first run",
            STORE.format(n=n, path=str(store_db), day=1, change_every=0, drop_every=0, prefetch=False),
            note="all added",
        ),
        run_python(
            "StateStore unchanged rerun",
            STORE.format(n=n, path=str(store_db), day=2, change_every=0, drop_every=0, prefetch=False),
            note="all lastmods kept",
        ),
        run_python(
            "StateStore unchanged rerun, prefetched",
            STORE.format(n=n, path=str(store_db), day=3, change_every=0, drop_every=0, prefetch=True),
            note="rows read 500 at a time",
        ),
        run_python(
            "StateStore rerun, 10% changed",
            STORE.format(n=n, path=str(store_db), day=4, change_every=10, drop_every=100, prefetch=False),
            note="10% new hash, 1% removed",
        ),
    ]
    size = store_db.stat().st_size / 1e6
    print_table(
        f"state store, {n:,} URLs (database {size:,.0f} MB)", results, baseline="plain INSERT (baseline)"
    )


if __name__ == "__main__":
    main()
