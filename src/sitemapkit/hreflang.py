"""hreflang group completion: every page of a group lists every member, itself included.

Google ignores an hreflang annotation that is not confirmed from the other side, so a sitemap whose
English page lists the French one while the French page lists nothing loses both. `HreflangGroups`
takes the entries of a sitemap set in order, joins the pages that name each other (directly or through
other pages) into groups, and hands the entries back, in the same order, with each member's alternates
completed to the whole group (x-default included when any page declares one).

Rules, each reported with a diagnostic where something is left out:

- a group member is a (hreflang, URL) pair that some page declares, and whose URL is a page of this
  sitemap set; an alternate naming a URL outside the set is left out (`hreflang-not-listed`), since no
  `<url>` of ours could link back;
- two URLs claiming one hreflang in a group: the first declared keeps it (`hreflang-conflict`);
- a page that lists alternates but whose own language no page declares cannot be confirmed by the others:
  its alternates are left out (`hreflang-missing-self`);
- a group of one page emits no alternates.

The entries wait in a temporary SQLite file (in the output folder), not in memory: groups are merged on
disk, so memory stays flat however many pages there are.
"""

from __future__ import annotations

import pickle
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from sitemapkit.diagnostics import Diagnostic, DiagnosticLog
from sitemapkit.model import Alternate, UrlEntry

_SCHEMA = (
    "CREATE TABLE spill (seq INTEGER PRIMARY KEY, url TEXT NOT NULL, entry BLOB NOT NULL)",
    "CREATE INDEX spill_url ON spill (url)",
    "CREATE TABLE member (url TEXT PRIMARY KEY, grp INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE INDEX member_grp ON member (grp)",
    # one row per declared (hreflang, href) of a group; `seq` is the first page that declared it
    "CREATE TABLE pair (grp INTEGER NOT NULL, hreflang TEXT NOT NULL, href TEXT NOT NULL, "
    "seq INTEGER NOT NULL, PRIMARY KEY (grp, hreflang, href)) WITHOUT ROWID",
)
_CACHE = 1024  # completed groups kept at once (members of a group usually sit close together)


class HreflangGroups:
    """Collect entries with `add`, then read them back completed with `entries` (once)."""

    def __init__(self, path: Path, log: DiagnosticLog) -> None:
        self.path = path
        self.log = log
        self._db = sqlite3.connect(path, isolation_level=None)
        self._db.execute("PRAGMA journal_mode = OFF")
        self._db.execute("PRAGMA synchronous = OFF")
        self._db.execute("PRAGMA temp_store = FILE")
        self._db.execute("BEGIN")
        for statement in _SCHEMA:
            self._db.execute(statement)
        self._seq = 0
        self._groups = 0
        self._rows: list[tuple[int, str, bytes]] = []
        self.grouped = 0

    def add(self, entry: UrlEntry) -> None:
        """Keep `entry` (already normalised and deduplicated) until `entries` is called."""
        self._seq += 1
        self._rows.append((self._seq, entry.loc, pickle.dumps(entry, pickle.HIGHEST_PROTOCOL)))
        if len(self._rows) >= 5_000:
            self._flush()
        if entry.alternates:
            self._declare(entry)

    def _flush(self) -> None:
        self._db.executemany("INSERT INTO spill VALUES (?, ?, ?)", self._rows)
        self._rows.clear()

    def _declare(self, entry: UrlEntry) -> None:
        db = self._db
        urls = sorted({entry.loc, *(a.href for a in entry.alternates)})
        marks = ",".join("?" * len(urls))
        found = db.execute(f"SELECT url, grp FROM member WHERE url IN ({marks})", urls).fetchall()
        groups = sorted({grp for _, grp in found})
        if groups:
            grp = groups[0]
            for other in groups[1:]:  # this page joins groups that were apart: merge them into the first
                db.execute("UPDATE member SET grp = ? WHERE grp = ?", (grp, other))
                db.execute(
                    "INSERT INTO pair SELECT ?, hreflang, href, seq FROM pair WHERE grp = ? "
                    "ON CONFLICT DO UPDATE SET seq = min(seq, excluded.seq)",
                    (grp, other),
                )
                db.execute("DELETE FROM pair WHERE grp = ?", (other,))
        else:
            self._groups += 1
            grp = self._groups
        known = {url for url, _ in found}
        db.executemany("INSERT INTO member VALUES (?, ?)", [(u, grp) for u in urls if u not in known])
        db.executemany(
            "INSERT INTO pair VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [(grp, a.hreflang, a.href, self._seq) for a in entry.alternates],
        )

    def entries(self) -> Iterator[UrlEntry]:
        """The entries in the order they were added, alternates completed to their whole group."""
        self._flush()
        db = self._db
        cache: dict[int, tuple[Alternate, ...]] = {}
        rows = db.execute(
            "SELECT s.entry, m.grp FROM spill s LEFT JOIN member m ON m.url = s.url ORDER BY s.seq"
        )
        for blob, grp in rows:
            entry: UrlEntry = pickle.loads(blob)
            if grp is None:
                yield entry
                continue
            group = cache.get(grp)
            if group is None:
                if len(cache) >= _CACHE:
                    cache.clear()
                group = cache[grp] = self._complete(grp)
            completed: tuple[Alternate, ...] = ()
            if any(a.href == entry.loc for a in group):
                if len({a.href for a in group}) > 1:  # a group of one page has nothing to say
                    completed = group
            elif any(a.href != entry.loc for a in entry.alternates):
                self.log.add(
                    Diagnostic.make(
                        "hreflang-missing-self",
                        "no page of its hreflang group declares this page's own language, so the others "
                        "cannot link back; its alternates are left out",
                        source=entry.sitemap,
                        line=entry.line,
                        url=entry.loc,
                    )
                )
            if completed:
                self.grouped += 1
            if completed != entry.alternates:
                entry = UrlEntry(
                    entry.loc,
                    entry.lastmod,
                    entry.changefreq,
                    entry.priority,
                    entry.images,
                    entry.videos,
                    entry.news,
                    completed,
                    entry.sitemap,
                    entry.line,
                )
            yield entry

    def _complete(self, grp: int) -> tuple[Alternate, ...]:
        """The group's members: declared pairs whose URL is a page of the set, one URL per hreflang."""
        chosen: dict[str, tuple[str, str]] = {}  # hreflang, compared without case -> (as written, URL)
        rows = self._db.execute(
            "SELECT p.hreflang, p.href, EXISTS (SELECT 1 FROM spill s WHERE s.url = p.href) "
            "FROM pair p WHERE p.grp = ? ORDER BY p.seq, p.hreflang, p.href",
            (grp,),
        )
        for hreflang, href, listed in rows:
            if not listed:
                self.log.once(
                    f"hreflang-not-listed {href}",
                    Diagnostic.make(
                        "hreflang-not-listed",
                        f"the alternate {href} ({hreflang}) is not a page of this sitemap set, so it "
                        "could not link back; it is left out of its group",
                        url=href,
                    ),
                )
                continue
            _, kept = chosen.setdefault(hreflang.lower(), (hreflang, href))
            if kept != href:
                self.log.once(
                    f"hreflang-conflict {hreflang} {href}",
                    Diagnostic.make(
                        "hreflang-conflict",
                        f"{href} and {kept} both claim hreflang {hreflang!r} in one group; {kept} (declared "
                        "first) keeps it",
                        url=href,
                    ),
                )
        ordered = sorted(chosen.items(), key=lambda kv: (kv[0] == "x-default", kv[0]))
        return tuple(Alternate(hreflang, href) for _, (hreflang, href) in ordered)

    def close(self) -> None:
        """Close the temporary database (the writer deletes its file)."""
        self._rows.clear()
        self._db.close()
