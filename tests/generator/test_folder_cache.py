"""The file cache of folder scans: a rerun over unchanged files reads none of them and gives the same
pages, skips and diagnostics; any change to a file, to the options or to the folder is seen."""

from __future__ import annotations

import itertools
import os
import sqlite3
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from sitemapkit.core.diagnostics import DiagnosticLog
from sitemapkit.generator.run import FolderSource, generate
from sitemapkit.generator.sources.folder import FolderScan, _walk, scan_folder
from sitemapkit.generator.state import StateStore

BASE = "https://example.com/"
HOUR_AGO = time.time_ns() - 3600 * 10**9

# -- watching which files are opened (a real observation: CPython's audit events, no mock) ---------------

_opened: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _opened is not None and isinstance(args[0], (str, bytes, os.PathLike)):
        _opened.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


@contextmanager
def opened(root: Path) -> Iterator[list[str]]:
    """The files under `root` opened inside the block (relative, with `/`)."""
    global _opened
    seen: list[str] = []
    _opened = seen
    result: list[str] = []
    try:
        yield result
    finally:
        _opened = None
        prefix = os.path.realpath(root) + os.sep
        result.extend(sorted({p[len(prefix) :] for p in map(os.path.realpath, seen) if p.startswith(prefix)}))


# -- a site ----------------------------------------------------------------------------------------------


def page(title: str, head: str = "", body: str = "<p>Hello</p>") -> str:
    head = f'<meta charset="utf-8"><title>{title}</title>{head}'
    return f"<!doctype html><html><head>{head}</head><body>{body}</body></html>"


ALTERNATES = (
    '<link rel="alternate" hreflang="en" href="/docs/"><link rel="alternate" hreflang="de" href="/de/docs/">'
)


FILES: dict[str, str | bytes] = {
    "index.html": page("Home", body="<p>Welcome</p><img src='/logo.png'><img src='http://[bad/x.png'>"),
    "about.html": page("About"),
    "docs/index.html": page("Docs", ALTERNATES + '<link rel="alternate" hreflang="fr" href="http://[bad">'),
    "de/docs/index.html": page("Doku", ALTERNATES),
    "docs-old/index.html": page("Old", '<meta http-equiv="refresh" content="0; url=/docs/">'),
    "draft.html": page("Draft", '<meta name="robots" content="noindex">'),
    "copy.html": page("Copy", '<link rel="canonical" href="/about.html">'),
    "v1.html": page("V1", '<link rel="canonical" href="/product?id=1">'),
    "v2.html": page("V2", '<link rel="canonical" href="/product?id=1">'),
    "bad-canonical.html": page("B", '<link rel="canonical" href="http://[x">'),
    "latin.html": "<html><head><title>Grüße</title></head><body><p>Grüße</p></body></html>".encode("cp1252"),
    "empty.html": b"",
    "binary.html": bytes(range(256)) * 4,
    "404.html": page("Not found"),
    "report.pdf": b"%PDF-1.4 binary\x00stuff",
    "style.css": "body{}",
    "a/b/c/deep.html": page("Deep"),
    "a-b/index.html": page("Hyphen"),
    "über.html": page("Umlaut"),
}


def make_site(root: Path, files: dict[str, str | bytes] = FILES, mtime_ns: int = HOUR_AGO) -> None:
    for rel, content in files.items():
        write(root, rel, content, mtime_ns)


def write(root: Path, rel: str, content: str | bytes, mtime_ns: int = HOUR_AGO) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


class Outcome:
    """Everything a scan reports: pages, skips, diagnostics and counts."""

    def __init__(self, scan: FolderScan, pages: list[Any], skips: list[Any], log: DiagnosticLog) -> None:
        self.pages = [(p.entry, p.path, p.mtime, p.content_hash) for p in pages]
        self.skips = skips
        self.diagnostics = list(log)
        self.counts = (scan.files, scan.pages, dict(scan.skipped))
        self.cached = scan.cached

    def same(self, other: Outcome) -> bool:
        return (self.pages, self.skips, self.diagnostics, self.counts) == (
            other.pages,
            other.skips,
            other.diagnostics,
            other.counts,
        )


def scan(root: Path, store: StateStore | None = None, **kw: Any) -> Outcome:
    skips: list[Any] = []
    log = DiagnosticLog()
    options: dict[str, Any] = {"include": ("*.html", "*.pdf"), "images": True, **kw}
    if store is None:
        s = scan_folder(root, BASE, report=log, explain=skips.append, **options)
        return Outcome(s, list(s), skips, log)
    with store.run() as run:
        s = scan_folder(root, BASE, report=log, explain=skips.append, state=run, **options)
        pages = list(s)
    return Outcome(s, pages, skips, log)


def cache_rows(db: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(
            "SELECT r.root, f.key, f.size, f.mtime_ns, f.ctime_ns, f.ino, f.content_hash, f.data "
            "FROM scan_files f JOIN scan_roots r ON r.id = f.root_id ORDER BY r.root, f.key"
        ).fetchall()
    finally:
        conn.close()


def cached_paths(db: Path) -> list[str]:
    """The files the cache holds, as relative paths."""
    return sorted(
        "/".join(part[1:].decode("utf-8", "surrogatepass") for part in row[1].split(b"\x00"))
        for row in cache_rows(db)
    )


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    make_site(root)
    return root


# -- the tests -------------------------------------------------------------------------------------------


def test_rerun_reads_no_file_and_gives_the_same_result(site: Path, tmp_path: Path) -> None:
    plain = scan(site)
    assert plain.pages and plain.skips and plain.diagnostics  # the site exercises every kind of outcome
    with StateStore(tmp_path / "state.db") as store:
        with opened(site) as first_read:
            first = scan(site, store)
        with opened(site) as second_read:
            second = scan(site, store)
    assert first.same(plain) and second.same(plain)
    read = {"index.html", "about.html", "latin.html", "empty.html", "binary.html", "report.pdf", "über.html"}
    assert read <= set(first_read)  # the first scan read the files...
    assert second_read == []  # ...the second none: everything came from the cache
    assert first.cached == 0 and second.cached == plain.counts[0] - plain.counts[2]["error-page"]
    # the error page is decided by its name, never read nor cached; every other selected file is cached
    assert cached_paths(tmp_path / "state.db") == sorted(
        r for r in FILES if r not in ("404.html", "style.css")
    )


def test_touched_file_is_read_again_and_keeps_its_lastmod(site: Path, tmp_path: Path) -> None:
    out, db = tmp_path / "out", tmp_path / "state.db"
    folder = FolderSource(site, images=True)
    first = generate([], out, BASE, folder=folder, state=db)
    assert first.sources is not None and first.sources["state"]["added"] == 10
    os.utime(site / "about.html", ns=(HOUR_AGO + 10**9, HOUR_AGO + 10**9))  # a rebuild touched it
    with opened(site) as read:
        second = generate([], out, BASE, folder=folder, state=db)
    assert read == ["about.html"]
    assert second.sources is not None
    assert second.sources["state"] == {"added": 0, "revived": 0, "changed": 0, "unchanged": 10, "removed": 0}
    assert set(second.unchanged) == {f.path.name for f in second.files}  # no sitemap rewritten


def test_same_size_and_mtime_but_new_content_is_seen_by_its_ctime(site: Path, tmp_path: Path) -> None:
    with StateStore(tmp_path / "state.db") as store:
        before = scan(site, store)
        path = site / "about.html"
        old = path.read_bytes()
        new = old.replace(b"Hello", b"Howdy")
        assert len(new) == len(old)
        write(site, "about.html", new)  # same size, and the mtime put back: only the ctime moved
        assert path.stat().st_mtime_ns == HOUR_AGO
        with opened(site) as read:
            after = scan(site, store)
    assert read == ["about.html"]
    hashes = {p[1].name: p[3] for p in before.pages}, {p[1].name: p[3] for p in after.pages}
    assert hashes[0]["about.html"] != hashes[1]["about.html"]
    assert {k: v for k, v in hashes[0].items() if k != "about.html"} == {
        k: v for k, v in hashes[1].items() if k != "about.html"
    }


@pytest.mark.parametrize(
    "options",
    [
        {"images": False},
        {"clean_urls": True},
        {"volatile_selectors": ("p",)},
        {"volatile_patterns": ("Hello",)},
        {"allow_hosts": ("cdn.example.net",)},
        {"max_page_bytes": 100},
    ],
)
def test_other_options_read_everything_again(site: Path, tmp_path: Path, options: dict[str, Any]) -> None:
    with StateStore(tmp_path / "state.db") as store:
        scan(site, store)
        with opened(site) as read:
            changed = scan(site, store, **options)
        assert changed.same(scan(site, **options)) and changed.cached == 0  # nothing from the cache
        assert "report.pdf" in read
        with opened(site) as read:
            again = scan(site, store, **options)
        assert read == [] and again.same(changed)


def test_another_base_url_reads_everything_again(site: Path, tmp_path: Path) -> None:
    with StateStore(tmp_path / "state.db") as store:
        with store.run() as run:
            list(scan_folder(site, BASE, report=DiagnosticLog(), state=run))
        with store.run() as run, opened(site) as read:
            pages = list(scan_folder(site, "https://example.com/docs/", report=DiagnosticLog(), state=run))
    assert "about.html" in read
    assert "https://example.com/docs/about.html" in [p.entry.loc for p in pages]


def test_new_and_deleted_files(site: Path, tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    with StateStore(db) as store:
        scan(site, store)
        (site / "about.html").unlink()
        (site / "a" / "b" / "c" / "deep.html").unlink()
        write(site, "a/b/new.html", page("New"))
        write(site, "zzz/last.html", page("Last"))
        with opened(site) as read:
            after = scan(site, store)
    assert read == ["a/b/new.html", "zzz/last.html"]
    assert after.same(scan(site))
    paths = cached_paths(db)
    assert "about.html" not in paths and "a/b/c/deep.html" not in paths
    assert {"a/b/new.html", "zzz/last.html"} <= set(paths)
    # every file gone: the cache empties
    with StateStore(db) as store:
        for rel in [*FILES, "a/b/new.html", "zzz/last.html"]:
            (site / rel).unlink(missing_ok=True)
        assert scan(site, store).pages == []
    assert cache_rows(db) == []


def test_a_recently_modified_file_is_not_trusted(site: Path, tmp_path: Path) -> None:
    # an mtime at (or after) the scan's start could hide a second change within its granularity
    future = time.time_ns() + 3600 * 10**9
    write(site, "about.html", page("About"), future)
    db = tmp_path / "state.db"
    with StateStore(db) as store:
        scan(site, store)
        assert [r[3] for r in cache_rows(db) if r[1] == b"\x02about.html"] == [None]
        with opened(site) as read:
            scan(site, store)
    assert read == ["about.html"]


def test_a_failed_run_leaves_cache_and_store_as_they_were(site: Path, tmp_path: Path) -> None:
    out, db = tmp_path / "out", tmp_path / "state.db"
    folder = FolderSource(site, images=True)
    generate([], out, BASE, folder=folder, state=db)

    def dump() -> list[Any]:
        conn = sqlite3.connect(db)
        try:
            return [
                conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
                for table in ("scan_roots", "scan_files", "urls", "runs")
            ]
        finally:
            conn.close()

    before = dump()
    published = {p.name: p.read_bytes() for p in out.iterdir()}
    (site / "a" / "b" / "c" / "deep.html").unlink()
    write(site, "new.html", page("New"))
    write(site, "docs/index.html", page("Docs, rewritten"))

    class Boom(Exception):
        pass

    seen = 0

    def explode(skip: object) -> None:  # fails in the middle of the walk, after some files were read
        nonlocal seen
        seen += 1
        if seen == 4:
            raise Boom

    with pytest.raises(Boom):
        generate([], out, BASE, folder=folder, state=db, explain=explode)
    assert dump() == before
    assert {p.name: p.read_bytes() for p in out.iterdir()} == published
    # the next run sees the changes as if the failed one had never been
    after = generate([], out, BASE, folder=folder, state=db)
    assert after.sources is not None and after.sources["state"]["removed"] == 1
    assert after.sources["state"]["added"] == 1 and after.sources["state"]["changed"] == 1


def test_caches_of_several_folders(tmp_path: Path) -> None:
    one, two, db = tmp_path / "one", tmp_path / "two", tmp_path / "state.db"
    make_site(one, {"a.html": page("A")})
    make_site(two, {"b.html": page("B")})
    with StateStore(db) as store:
        with store.run() as run:  # two folders in one run keep two caches
            list(scan_folder(one, BASE, report=DiagnosticLog(), state=run))
            list(scan_folder(two, BASE + "two/", report=DiagnosticLog(), state=run))
        assert {r[0] for r in cache_rows(db)} == {os.fsencode(one), os.fsencode(two)}
        with store.run() as run:  # a run that scans only the first forgets the second
            list(scan_folder(one, BASE, report=DiagnosticLog(), state=run))
        assert {r[0] for r in cache_rows(db)} == {os.fsencode(one)}
        with store.run() as run:  # a run that scans no folder leaves the caches alone
            run.observe(BASE, content_hash=None)
        assert {r[0] for r in cache_rows(db)} == {os.fsencode(one)}


def test_symlinked_files_are_read_every_time(tmp_path: Path) -> None:
    root = tmp_path / "site"
    make_site(root, {"real.html": page("Real"), "other.html": page("Other")})
    (root / "link.html").symlink_to(root / "real.html")
    with StateStore(tmp_path / "state.db") as store:
        scan(root, store)
        (root / "link.html").unlink()
        (root / "link.html").symlink_to(root / "other.html")  # a new target, possibly with old times
        with opened(root) as read:
            after = scan(root, store)
    assert read == ["other.html"]
    assert after.same(scan(root))


def test_walk_keys_ascend_in_walk_order(tmp_path: Path) -> None:
    files = [
        "index.html", "index.htm", "index.xhtml", "a.html", "a/index.html", "a/x/y.html", "a-b/index.html",
        "a.b/c.html", "a0/f.html", "A/f.html", "ä.html", "z/f.html", "~x/f.html", "ü/f.html",
        "\U0001f600.html", "\uffff.html", "b/index.html", "b/a.html", "b/index.xhtml", "z/index.html/x.html",
        "z/index.htm",
    ]  # fmt: skip
    for rel in files:
        write(tmp_path, rel, "x")
    if sys.platform.startswith("linux"):  # names that are not UTF-8 (kept as surrogates by Python)
        write(tmp_path, os.fsdecode(b"\xff\xfe.html"), "x")
        write(tmp_path, os.fsdecode(b"caf\xe9/index.html"), "x")
    walked = list(_walk(str(tmp_path), lambda *a: None, lambda *a: None))
    assert sorted(rel for _, rel, _, _ in walked) == sorted(
        [
            *files,
            *(
                [os.fsdecode(b"\xff\xfe.html"), os.fsdecode(b"caf\xe9/index.html")]
                * sys.platform.startswith("linux")
            ),
        ]
    )
    keys = [key for _, _, key, _ in walked]
    assert all(a < b for a, b in itertools.pairwise(keys)), [w[1] for w in walked]
    assert walked[0][1] == "index.htm" and walked[1][1] == "index.html"  # the index pages come first


def test_two_scans_of_one_folder_in_one_run(site: Path, tmp_path: Path) -> None:
    # the first scan is abandoned halfway with rows still to write; the second, with other options,
    # takes over: the cache must end up holding only what the second options give
    with StateStore(tmp_path / "state.db") as store:
        with store.run() as run:
            first = scan_folder(site, BASE, report=DiagnosticLog(), state=run, images=True)
            next(first), next(first), next(first)
            list(scan_folder(site, BASE, report=DiagnosticLog(), state=run, images=False))
            list(first)  # resumed: it no longer reads or writes the cache
        for images in (False, True, True):
            assert scan(site, store, images=images).same(scan(site, images=images))
