"""sitemapkit.publisher.web in process: source adapters, header parsing, paging, the writer's bytes."""

from __future__ import annotations

import datetime as dt
import gzip
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemapkit import Image, SitemapWriter, UrlEntry
from sitemapkit.publisher.web import (
    CountSliceSource,
    FunctionSource,
    IterableSource,
    KeysetSource,
    SequenceSource,
    SitemapServer,
    as_source,
    wsgi_app,
)
from sitemapkit.publisher.web.headers import accepted_codings, etag_matches, parse_http_date, wants_gzip
from sitemapkit.publisher.web.sources import newest_of

# -- as_source ------------------------------------------------------------------------------------------


class QuerySetLike:
    """Like a Django QuerySet: `count()` runs COUNT(*), slicing runs LIMIT/OFFSET, and `len()` would load
    every row (so it must never be called)."""

    def __init__(self, items: list[str]) -> None:
        self.items = items

    def count(self) -> int:
        return len(self.items)

    def __len__(self) -> int:
        raise AssertionError("len() loads the whole table")

    def __getitem__(self, s: slice) -> list[str]:
        return self.items[s]

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("iterating loads the whole table")


def test_as_source_picks_the_adapter() -> None:
    assert isinstance(as_source(["a"]), SequenceSource)
    assert isinstance(as_source(("a",)), SequenceSource)
    qs = as_source(QuerySetLike(["/a", "/b", "/c"]))
    assert isinstance(qs, CountSliceSource)
    assert qs.count() == 3 and list(qs.entries(1, 5)) == ["/b", "/c"]
    assert isinstance(as_source(lambda: iter(["a"])), IterableSource)
    assert isinstance(as_source({"a", "b"}), IterableSource)
    assert isinstance(as_source({"/a": 1}), IterableSource)
    ready = FunctionSource(lambda: 0, lambda o, n: [])
    assert as_source(ready) is ready


@pytest.mark.parametrize("bad", [iter(["a"]), (x for x in ["a"]), "https://example.com/", b"x", 42])
def test_as_source_refuses_what_cannot_be_read_twice(bad: Any) -> None:
    with pytest.raises(TypeError):
        as_source(bad)


def test_sequence_source_newest_and_mapping() -> None:
    items = [
        {"path": "/a", "day": dt.date(2024, 1, 3)},
        {"path": "/b", "day": dt.date(2024, 1, 9)},
        {"path": "/c", "day": dt.date(2024, 1, 5)},
    ]
    src = SequenceSource(items, to_entry=lambda row: UrlEntry(row["path"], row["day"]))
    assert [e.loc for e in src.entries(0, 10)] == ["/a", "/b", "/c"]  # type: ignore[union-attr]
    assert src.newest(0, 10) == dt.date(2024, 1, 9)
    assert src.newest(2, 10) == dt.date(2024, 1, 5)
    assert SequenceSource(items, lastmods=False).newest(0, 10) is None
    naive = dt.datetime(2024, 1, 9, 12, 0)
    aware = dt.datetime(2024, 1, 9, 11, 0, tzinfo=dt.timezone(dt.timedelta(hours=-2)))  # 13:00 UTC
    assert newest_of(["/x", UrlEntry("/y", naive), UrlEntry("/z", aware)]) == aware


def test_iterable_source_counts_and_slices_by_walking() -> None:
    calls = []

    def rows() -> Iterator[str]:
        calls.append(1)
        return iter(f"/r/{i}" for i in range(25))

    src = IterableSource(rows)
    assert src.count() == 25
    assert list(src.entries(20, 10)) == [f"/r/{i}" for i in range(20, 25)]
    assert len(calls) == 2


# -- KeysetSource ------------------------------------------------------------------------------------


class Table:
    """Rows by key, with a change counter that every insert and delete moves (what `version=` reads)."""

    def __init__(self, keys: list[int]) -> None:
        self.keys = sorted(set(keys))
        self.fetches = 0
        self.changes = 0

    def fetch(self, after: int | None, limit: int) -> list[tuple[int, str]]:
        self.fetches += 1
        rows = [k for k in self.keys if after is None or k > after][:limit]
        return [(k, f"/k/{k}") for k in rows]

    def replace(self, remove: list[int], add: list[int]) -> None:
        self.keys = sorted((set(self.keys) - set(remove)) | set(add))
        self.changes += 1

    def page(self, n: int, size: int) -> list[str]:
        return [f"/k/{k}" for k in self.keys[n * size : (n + 1) * size]]


def keyset(table: Table, *, versioned: bool, with_count: bool = True, batch: int = 50_000) -> KeysetSource:
    return KeysetSource(
        table.fetch,
        count=(lambda: len(table.keys)) if with_count else None,
        version=(lambda: table.changes) if versioned else None,
        batch=batch,
    )


@settings(max_examples=150, deadline=None)
@given(
    keys=st.lists(st.integers(0, 10_000), max_size=300),
    page=st.integers(1, 60),
    batch=st.integers(1, 100),
    with_count=st.booleans(),
    versioned=st.booleans(),
    order=st.randoms(use_true_random=False),
)
def test_keyset_pages_partition_the_table(
    keys: list[int], page: int, batch: int, with_count: bool, versioned: bool, order: Any
) -> None:
    table = Table(keys)
    src = keyset(table, versioned=versioned, with_count=with_count, batch=batch)
    assert src.count() == len(table.keys)
    pages = -(-len(table.keys) // page)
    numbers = list(range(pages + 2))
    order.shuffle(numbers)  # any order: each page finds its start by walking or from what it remembers
    got = {n: list(src.entries(n * page, page)) for n in numbers}
    assert [loc for n in range(pages) for loc in got[n]] == [f"/k/{k}" for k in table.keys]
    assert got[pages] == [] and got[pages + 1] == []
    table.fetches = 0
    for n in range(pages):
        list(src.entries(n * page, page))
    if versioned:  # every start is known at this version: one fetch a page
        assert table.fetches == pages
    else:  # nothing is trusted across calls: page n walks over the n * page rows before it first
        assert table.fetches == sum(1 + -(-n * page // batch) for n in range(pages))


@settings(max_examples=200, deadline=None)
@given(
    keys=st.lists(st.integers(0, 500), min_size=1, max_size=120, unique=True),
    page=st.integers(1, 25),
    versioned=st.booleans(),
    data=st.data(),
)
def test_keyset_pages_stay_exact_while_rows_come_and_go(
    keys: list[int], page: int, versioned: bool, data: st.DataObject
) -> None:
    """Rows removed and added (often as many as removed, so the count stays the same) between requests
    that two server processes answer in any order: every page served is exactly that slice of the rows as
    they are then, so the pages read at one version hold every row once."""
    table = Table(keys)
    workers = [keyset(table, versioned=versioned, batch=7), keyset(table, versioned=versioned, batch=50)]
    for _ in range(data.draw(st.integers(1, 6), label="rounds")):
        pages = -(-len(table.keys) // page)
        for n in data.draw(st.lists(st.integers(0, pages), max_size=8), label="pages"):
            worker = workers[data.draw(st.integers(0, 1), label="worker")]
            assert list(worker.entries(n * page, page)) == table.page(n, page)
        present = sorted(table.keys)
        remove = (
            data.draw(st.lists(st.sampled_from(present), max_size=3, unique=True), label="remove")
            if present
            else []
        )
        add = data.draw(st.lists(st.integers(0, 500), max_size=3), label="add")
        table.replace(remove, add)
    pages = -(-len(table.keys) // page)
    order = data.draw(st.permutations(range(pages)), label="order")
    got = {n: list(workers[n % 2].entries(n * page, page)) for n in order}
    assert [loc for n in range(pages) for loc in got[n]] == [f"/k/{k}" for k in table.keys]


def test_keyset_same_count_after_a_delete_and_an_insert() -> None:
    """The reviewer's case: keys 1..30, pages of 10; key 2 removed and key 32 added (the count is still 30),
    then pages 3, 2, 1. Boundaries remembered before the change must not be used after it."""
    for versioned in (True, False):
        table = Table(list(range(1, 31)))
        src = keyset(table, versioned=versioned)
        assert src.count() == 30
        assert [list(src.entries(n * 10, 10)) for n in range(3)] == [table.page(n, 10) for n in range(3)]
        table.replace([2], [32])
        assert src.count() == 30
        got = {n: list(src.entries(n * 10, 10)) for n in (2, 1, 0)}
        assert got[0] + got[1] + got[2] == [f"/k/{k}" for k in table.keys]
        assert got[0][-1] == "/k/11" and got[1][0] == "/k/12" and got[2][-1] == "/k/32"


def test_keyset_ignores_boundaries_learned_by_a_request_that_saw_an_older_version() -> None:
    """A slow request that read version 0, then learned keys after the data had moved to version 1, must
    not leave those keys for requests at version 1."""
    table = Table(list(range(0, 100, 2)))
    src = keyset(table, versioned=True)
    assert src._start(0, 40) == (0, None)  # a request at version 0 starts
    table.replace([0, 2, 4], [1, 3, 5, 7])  # the data changes under it
    assert src._start(1, 0) == (0, None)  # a request at version 1 starts afresh
    src._remember(0, {40: 78})  # the slow request finishes: what it learned is dropped
    assert src._start(1, 40) == (0, None)
    assert next(iter(src.entries(40, 10))) == f"/k/{table.keys[40]}"


def test_keyset_over_sqlite(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, url TEXT)")
        conn.executemany(
            "INSERT INTO t (id, url) VALUES (?, ?)", ((i * 3, f"/t/{i}") for i in range(1, 1_001))
        )

    def fetch(after: int | None, limit: int) -> list[tuple[int, str]]:
        with closing(sqlite3.connect(db)) as conn:
            return conn.execute(
                "SELECT id, url FROM t WHERE id > ? ORDER BY id LIMIT ?", (after or 0, limit)
            ).fetchall()

    server = SitemapServer(KeysetSource(fetch, batch=300), base_url="https://example.com", page_size=300)
    index = server.respond("GET", "/sitemap.xml", {}).body
    assert index.count(b"<sitemap>") == 4
    pages = [server.respond("GET", f"/sitemap-{n}.xml", {}).body for n in (4, 2, 1, 3)]
    assert sum(p.count(b"<url>") for p in pages) == 1_000


# -- paging through the WSGI app in process ----------------------------------------------------------


def call_wsgi(
    app: Any, path: str, headers: dict[str, str] | None = None
) -> tuple[str, dict[str, str], bytes]:
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "SCRIPT_NAME": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80",
        "wsgi.url_scheme": "http",
    }
    environ.update({"HTTP_" + k.upper().replace("-", "_"): v for k, v in (headers or {}).items()})
    answer: dict[str, Any] = {}

    def start_response(status: str, response_headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        answer["status"], answer["headers"] = status, dict(response_headers)
        return lambda data: None

    body = b"".join(app(environ, start_response))
    return answer["status"], answer["headers"], body


def locs_of(body: bytes) -> list[str]:
    return [part.split(b"</loc>")[0].decode() for part in body.split(b"<loc>")[1:]]


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 260), page=st.integers(1, 40), auto=st.booleans())
def test_pages_partition_the_source(n: int, page: int, auto: bool) -> None:
    urls = [f"https://example.com/u/{i}" for i in range(n)]
    app = wsgi_app(urls, base_url="https://example.com", page_size=page, index="auto" if auto else "always")
    status, _, index = call_wsgi(app, "/sitemap.xml")
    if n == 0:  # no entries, no sitemap: no valid index or urlset can be empty
        assert status == "404 Not Found"
        return
    assert status == "200 OK"
    pages = -(-n // page)
    if auto and pages <= 1:
        assert locs_of(index) == urls
        return
    assert locs_of(index) == [f"https://example.com/sitemap-{k}.xml" for k in range(1, pages + 1)]
    served: list[str] = []
    for k in range(1, pages + 1):
        status, headers, body = call_wsgi(app, f"/sitemap-{k}.xml", {"accept-encoding": "gzip"})
        assert status == "200 OK" and headers["Content-Encoding"] == "gzip"
        got = locs_of(gzip.decompress(body))
        assert 1 <= len(got) <= page
        served += got
    assert served == urls
    assert call_wsgi(app, f"/sitemap-{pages + 1}.xml")[0] == "404 Not Found"


# -- same bytes as the writer --------------------------------------------------------------------------

paths = st.text(alphabet="abcxyz/-_.~%&'é ", min_size=0, max_size=12).map(lambda s: "/p/" + s)
lastmods = st.one_of(
    st.none(),
    st.dates(dt.date(2000, 1, 1), dt.date(2025, 1, 1)),
    st.datetimes(dt.datetime(2000, 1, 1), dt.datetime(2025, 1, 1), timezones=st.just(dt.UTC)),
)
entries = st.builds(
    UrlEntry,
    paths,
    lastmods,
    st.sampled_from([None, "daily", "weekly", "never"]),
    st.sampled_from([None, 0.0, 0.5, 1.0]),
    st.lists(st.builds(Image, paths.map(lambda p: "https://img.example" + p)), max_size=2).map(tuple),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(entries, min_size=1, max_size=30))
def test_served_sitemaps_are_byte_identical_to_the_writers(items: list[UrlEntry], tmp_path: Path) -> None:
    out = tmp_path / "out"
    with SitemapWriter(out, "https://example.com/", index="always", xsl="/style.xsl") as writer:
        accepted = writer.add_many(items)
    server = SitemapServer(items, base_url="https://example.com", xsl="/style.xsl")
    page = server.respond("GET", "/sitemap-1.xml", {})
    assert page.body == (out / "sitemap-1.xml").read_bytes()
    assert page.body.count(b"<url>") == accepted
    if accepted == len(items):  # the index dates a page by every item of its slice, the writer by those kept
        index = server.respond("GET", "/sitemap.xml", {})
        assert index.body == (out / "sitemap.xml").read_bytes()


# -- headers ---------------------------------------------------------------------------------------------


@given(st.text(max_size=80))
def test_header_parsers_never_fail(text: str) -> None:
    accepted_codings(text)
    wants_gzip(text)
    etag_matches(text, '"abc"')
    parse_http_date(text)


@given(gzip_q=st.sampled_from([None, 0, 0.1, 0.5, 1]), identity_q=st.sampled_from([None, 0, 0.5, 1]))
def test_wants_gzip_follows_q_values(gzip_q: float | None, identity_q: float | None) -> None:
    parts = []
    if gzip_q is not None:
        parts.append(f"gzip;q={gzip_q}")
    if identity_q is not None:
        parts.append(f"identity;q={identity_q}")
    expected = gzip_q is not None and gzip_q > 0 and gzip_q >= (identity_q or 0)
    assert wants_gzip(", ".join(parts)) == expected


@given(
    tags=st.lists(st.text(alphabet="abcdef0123456789-", min_size=1, max_size=8), min_size=1, max_size=5),
    probe=st.text(alphabet="abcdef0123456789-", min_size=1, max_size=8),
    weak=st.booleans(),
)
def test_etag_matches_any_listed_tag(tags: list[str], probe: str, weak: bool) -> None:
    header = " , ".join(("W/" if weak else "") + f'"{t}"' for t in tags)
    assert etag_matches(header, f'"{probe}"') == (probe in tags)
