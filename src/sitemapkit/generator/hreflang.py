"""hreflang group completion: every page of a group lists every member, itself included.

Google ignores an hreflang annotation that is not confirmed from the other side, so a sitemap whose
English page lists the French one while the French page lists nothing loses both. `HreflangGroups`
takes the entries of a sitemap set in order, joins the pages that name each other (directly or through
other pages) into groups, and hands the entries back, in the same order, with each member's alternates
completed to the whole group (x-default included when any page declares one).

Rules, each reported with a diagnostic where something is left out:

- pages are joined through the language URLs they declare that are pages of this set; a URL outside the
  set joins nothing, and neither does an `x-default` that several groups share (a language picker for
  the whole site: it is listed by each group but cannot list them all back); an `x-default` page that
  only one group names is a member of it;
- a group member is a (hreflang, URL) pair that some page declares, and whose URL is a page of this
  sitemap set; an alternate naming a URL outside the set is left out (`hreflang-not-listed`), since no
  `<url>` of ours could link back;
- two URLs claiming one hreflang in a group: the first declared keeps it (`hreflang-conflict`);
- a page that lists alternates but whose own language no page declares cannot be confirmed by the others:
  its alternates are left out (`hreflang-missing-self`);
- a group of one page emits no alternates.

The entries wait, rendered, in a temporary SQLite file (in the output folder), not in memory: groups are
merged on disk, so memory stays flat however many pages there are. A member's completed alternates are
rendered once per group and put where a `<url>`'s alternates go, last.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from sitemapkit.core.dates import format_w3c
from sitemapkit.core.diagnostics import Diagnostic, DiagnosticLog
from sitemapkit.core.model import Alternate, UrlEntry
from sitemapkit.generator.serialize import render_alternates
from sitemapkit.generator.spill import open_spill

_SCHEMA = (
    # each entry as the writer rendered it, without its alternates (they come last in a <url>)
    "CREATE TABLE spill (seq INTEGER PRIMARY KEY, url TEXT NOT NULL, source TEXT, line INTEGER, "
    "xml TEXT NOT NULL, prefixes TEXT NOT NULL, key TEXT NOT NULL, lastmod TEXT, news INTEGER NOT NULL, "
    "elsewhere INTEGER NOT NULL)",
    "CREATE INDEX spill_url ON spill (url)",
    # every alternate as its page declared it, until the groups are made
    "CREATE TABLE decl (seq INTEGER NOT NULL, hreflang TEXT NOT NULL, href TEXT NOT NULL)",
    "CREATE TABLE member (url TEXT PRIMARY KEY, grp INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE INDEX member_grp ON member (grp)",
    # one row per declared (hreflang, href) of a group; `seq` is the first page that declared it
    "CREATE TABLE picker (url TEXT PRIMARY KEY) WITHOUT ROWID",  # x-default pages several groups share
    "CREATE TABLE pair (grp INTEGER NOT NULL, hreflang TEXT NOT NULL, href TEXT NOT NULL, "
    "seq INTEGER NOT NULL, PRIMARY KEY (grp, hreflang, href)) WITHOUT ROWID",
)
_CACHE = 1024  # completed groups kept at once (members of a group usually sit close together)


class Spilled(NamedTuple):
    """One entry read back from the spill, ready for the writer: its `<url>` bytes and what the writer
    needs to place it (extension prefixes, lastmod sort key and value, where it came from, news or not)."""

    data: bytes
    needs: set[str] | None
    key: str
    lastmod: str | None
    loc: str
    sitemap: str | None
    line: int | None
    news: object | None


class HreflangGroups:
    """Collect entries with `add`, then read them back completed with `entries` (once)."""

    def __init__(self, path: Path, log: DiagnosticLog) -> None:
        self.path = path
        self.log = log
        self._db = open_spill(path)
        for statement in _SCHEMA:
            self._db.execute(statement)
        self._seq = 0
        self._groups = 0
        self._rows: list[tuple[int, str, str | None, int | None, str, str, str, str | None, bool, bool]] = []
        self._decl: list[tuple[int, str, str]] = []

    def add(self, entry: UrlEntry, xml: str, prefixes: set[str] | None, key: str) -> None:
        """Keep `entry` (normalised, deduplicated), rendered as `xml` with extension `prefixes` and
        lastmod sort `key` (as the writer computed them), until `entries` is called."""
        self._seq += 1
        foreign = False
        if entry.alternates:
            xml = xml[: xml.index("<xhtml:link")] + "</url>\n"  # escaped text never holds a raw "<"
            prefixes = (prefixes or set()) - {"xhtml"}
            foreign = any(a.href != entry.loc for a in entry.alternates)
            for a in entry.alternates:
                self._decl.append((self._seq, a.hreflang, a.href))
        lastmod = format_w3c(entry.lastmod) if entry.lastmod is not None else None
        self._rows.append(
            (
                self._seq,
                entry.loc,
                entry.sitemap,
                entry.line,
                xml,
                ",".join(sorted(prefixes or ())),
                key,
                lastmod,
                entry.news is not None,
                foreign,
            )
        )
        if len(self._rows) >= 5_000:
            self._flush()

    def _flush(self) -> None:
        self._db.executemany("INSERT INTO spill VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", self._rows)
        self._db.executemany("INSERT INTO decl VALUES (?, ?, ?)", self._decl)
        self._rows.clear()
        self._decl.clear()

    def _make_groups(self) -> None:
        """Join the pages that name each other into groups. Only a language's URL that is a page of
        the set joins groups: a shared `x-default` (a language picker every group names) or a URL
        outside the set does not, or whole sites would collapse into one group."""
        db = self._db
        rows = db.execute(
            "SELECT d.seq, s.url, d.hreflang, d.href, EXISTS (SELECT 1 FROM spill x WHERE x.url = d.href) "
            "FROM decl d JOIN spill s ON s.seq = d.seq ORDER BY d.seq"
        )
        for (seq, loc), declared in itertools.groupby(rows, key=lambda r: (r[0], r[1])):
            pairs = [(hreflang, href, listed) for _, _, hreflang, href, listed in declared]
            joined = {loc, *(h for code, h, listed in pairs if listed and code.lower() != "x-default")}
            grp = self._join(sorted(joined))
            db.executemany(
                "INSERT INTO pair VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [(grp, code, href, seq) for code, href, _ in pairs],
            )

        # an x-default page that only one group names belongs to that group (and lists it back); one that
        # several groups share is a site-wide language picker and stays outside them all
        db.execute(
            "INSERT INTO picker SELECT p.href FROM pair p LEFT JOIN member m ON m.url = p.href "
            "WHERE lower(p.hreflang) = 'x-default' AND (m.grp IS NULL OR m.grp != p.grp) "
            "GROUP BY p.href HAVING count(DISTINCT p.grp) > 1"
        )
        lone = db.execute(
            "SELECT p.href, min(p.grp) FROM pair p WHERE lower(p.hreflang) = 'x-default' "
            "AND EXISTS (SELECT 1 FROM spill x WHERE x.url = p.href) "
            "AND NOT EXISTS (SELECT 1 FROM member m WHERE m.url = p.href) "
            "AND NOT EXISTS (SELECT 1 FROM picker k WHERE k.url = p.href) GROUP BY p.href"
        ).fetchall()
        db.executemany("INSERT INTO member VALUES (?, ?)", lone)

    def _join(self, urls: list[str]) -> int:
        """The group of `urls`, merging the groups they already belong to (into the oldest)."""
        db = self._db
        marks = ",".join("?" * len(urls))
        found = db.execute(f"SELECT url, grp FROM member WHERE url IN ({marks})", urls).fetchall()
        groups = sorted({grp for _, grp in found})
        if groups:
            grp = int(groups[0])
            for other in groups[1:]:
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
        return grp

    def entries(self) -> Iterator[Spilled]:
        """The entries in the order they were added, rendered, alternates completed to their group."""
        self._flush()
        self._make_groups()
        db = self._db
        cache: dict[int, tuple[tuple[Alternate, ...], str]] = {}
        rows = db.execute(
            "SELECT s.url, s.source, s.line, s.xml, s.prefixes, s.key, s.lastmod, s.news, s.elsewhere, m.grp "
            "FROM spill s LEFT JOIN member m ON m.url = s.url ORDER BY s.seq"
        )
        for loc, source, line, xml, prefixes, key, lastmod, news, foreign, grp in rows:
            needs = set(prefixes.split(",")) if prefixes else None
            if grp is not None:
                cached = cache.get(grp)
                if cached is None:
                    if len(cache) >= _CACHE:
                        cache.clear()
                    group = self._complete(grp)
                    links = render_alternates(group)
                    cached = cache[grp] = (group, links)
                group, links = cached
                if any(a.href == loc for a in group):
                    if len({a.href for a in group}) > 1:  # a group of one page has nothing to say
                        xml = xml[: -len("</url>\n")] + links + "</url>\n"
                        needs = (needs or set()) | {"xhtml"}
                    foreign = False
            if foreign:
                self.log.add(
                    Diagnostic.make(
                        "hreflang-missing-self",
                        "no page of its hreflang group declares this page's own language, so the others "
                        "cannot link back; its alternates are left out",
                        source=source,
                        line=line,
                        url=loc,
                    )
                )
            yield Spilled(xml.encode("utf-8"), needs, key, lastmod, loc, source, line, True if news else None)

    def _complete(self, grp: int) -> tuple[Alternate, ...]:
        """The group's members: declared pairs whose URL is a page of the set, one URL per hreflang."""
        chosen: dict[str, tuple[str, str]] = {}  # hreflang, compared without case -> (as written, URL)
        rows = self._db.execute(
            "SELECT p.hreflang, p.href, EXISTS (SELECT 1 FROM spill x WHERE x.url = p.href), "
            "(SELECT m.grp FROM member m WHERE m.url = p.href), "
            "EXISTS (SELECT 1 FROM picker k WHERE k.url = p.href), "
            "s.url, s.source, s.line FROM pair p JOIN spill s ON s.seq = p.seq "
            "WHERE p.grp = ? ORDER BY p.seq, p.hreflang, p.href",
            (grp,),
        )
        for hreflang, href, listed, href_grp, picker, page, source, line in rows:
            if not listed:
                self.log.once(
                    f"hreflang-not-listed {href}",
                    Diagnostic.make(
                        "hreflang-not-listed",
                        f"the alternate {href} ({hreflang}) is not a page of this sitemap set, so it "
                        "could not link back; it is left out of its group",
                        source=source,
                        line=line,
                        url=page,
                    ),
                )
                continue
            if href_grp != grp and not picker:  # an x-default page that belongs to another group
                self.log.once(
                    f"hreflang-not-reciprocal {grp} {href}",
                    Diagnostic.make(
                        "hreflang-not-reciprocal",
                        f"the x-default {href} belongs to another hreflang group, so it cannot link back; "
                        "it is left out of this one",
                        source=source,
                        line=line,
                        url=page,
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
                        source=source,
                        line=line,
                        url=page,
                    ),
                )
        ordered = sorted(chosen.items(), key=lambda kv: (kv[0] == "x-default", kv[0]))
        return tuple(Alternate(hreflang, href) for _, (hreflang, href) in ordered)

    def close(self) -> None:
        """Close the temporary database (the writer deletes its file)."""
        self._rows.clear()
        self._decl.clear()
        self._db.close()
