"""sitemapkit.publisher.web under real servers: uvicorn for the ASGI app, werkzeug's threaded server for the
WSGI app, both on 127.0.0.1, fetched with httpx and read back with sitemapkit's own reader and validator."""

from __future__ import annotations

import asyncio
import datetime as dt
import gzip
import html
import logging
import re
import socket
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

import sitemapkit
from sitemapkit import Image, UrlEntry, normalize_url
from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.publisher.web import (
    FunctionSource,
    KeysetSource,
    SequenceSource,
    SitemapServer,
    asgi_app,
    wsgi_app,
)

START = dt.datetime(2024, 3, 1, 12, 0, tzinfo=dt.UTC)


# -- real servers -----------------------------------------------------------------------------------


@contextmanager
def serve_asgi(app: Any, **config: Any) -> Iterator[str]:
    """Run `app` under uvicorn in a thread on a free port of 127.0.0.1; yields `http://127.0.0.1:PORT`."""
    uvicorn = pytest.importorskip("uvicorn")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    options: dict[str, Any] = {"log_level": "warning", "access_log": False, "lifespan": "off"}
    server = uvicorn.Server(uvicorn.Config(app, **(options | config)))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(1_000):
            if server.started or not thread.is_alive():
                break
            threading.Event().wait(0.01)
        assert server.started, "uvicorn did not start"
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join()
        sock.close()


@contextmanager
def serve_wsgi(app: Any) -> Iterator[str]:
    """Run `app` under werkzeug's threaded server on a free port of 127.0.0.1."""
    serving = pytest.importorskip("werkzeug.serving")

    class QuietHandler(serving.WSGIRequestHandler):  # type: ignore[misc, name-defined]
        def log(self, *args: Any) -> None:
            pass

    server = serving.make_server("127.0.0.1", 0, app, threaded=True, request_handler=QuietHandler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@dataclass
class Served:
    """Starts the sitemap app of one kind (asgi or wsgi) with `base_url` set to where it is served."""

    kind: str
    stack: list[Any]

    def start(self, source: Any, **options: Any) -> str:
        holder: dict[str, Any] = {}
        if self.kind == "asgi":

            async def trampoline(scope: Any, receive: Any, send: Any) -> None:
                await holder["app"](scope, receive, send)

            context = serve_asgi(trampoline)
        else:
            context = serve_wsgi(lambda environ, start_response: holder["app"](environ, start_response))
        base = context.__enter__()
        self.stack.append(context)
        options.setdefault("base_url", base)
        build = asgi_app if self.kind == "asgi" else wsgi_app
        holder["app"] = build(source, **options)
        return base


@pytest.fixture(params=["asgi", "wsgi"])
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    pytest.importorskip("uvicorn" if request.param == "asgi" else "werkzeug")
    s = Served(request.param, [])
    try:
        yield s
    finally:
        for context in reversed(s.stack):
            context.__exit__(None, None, None)


# -- sources ------------------------------------------------------------------------------------------


def make_db(path: Path, n: int) -> Path:
    """A `pages` table of `n` rows with distinct, past lastmods; a few with `&` and non-ASCII in the path."""
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE pages (id INTEGER PRIMARY KEY, path TEXT, updated TEXT, image TEXT)")
        db.executemany(
            "INSERT INTO pages (path, updated, image) VALUES (?, ?, ?)",
            (
                (
                    f"/docs/p{i}" + ("?a=1&b=2" if i % 97 == 0 else "") + ("/über" if i % 101 == 0 else ""),
                    (START + dt.timedelta(minutes=13 * i)).isoformat(),
                    f"/img/{i}.png" if i % 50 == 0 else None,
                )
                for i in range(n)
            ),
        )
    return path


def sqlite_source(path: Path, calls: list[str] | None = None) -> FunctionSource:
    """count + slice over SQLite, a connection per call (the servers call from several threads)."""

    def query(sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        if calls is not None:
            calls.append(sql.split()[1])
        with closing(sqlite3.connect(path)) as db:
            return db.execute(sql, args).fetchall()

    def page(offset: int, limit: int) -> list[UrlEntry | str]:
        rows = query("SELECT path, updated, image FROM pages ORDER BY id LIMIT ? OFFSET ?", (limit, offset))
        out: list[UrlEntry | str] = []
        for i, (loc, updated, image) in enumerate(rows):
            if (offset + i) % 7 == 0:
                out.append(loc)  # plain strings and entries mixed
            else:
                images = (Image(image),) if image else ()
                out.append(UrlEntry(loc, dt.datetime.fromisoformat(updated), images=images))
        return out

    return FunctionSource(lambda: query("SELECT count(*) FROM pages")[0][0], page)


def expected_locs(path: Path, base: str) -> list[str]:
    with closing(sqlite3.connect(path)) as db:
        return [normalize_url(p, base + "/") for (p,) in db.execute("SELECT path FROM pages ORDER BY id")]


def add_change_counter(path: Path) -> Callable[[], int]:
    """A one-row `changes` table that triggers move on every insert, update and delete of `pages`, and a
    `version()` reading it: what a source's version must be (count(*) or max(id) miss a delete plus an
    insert)."""
    with closing(sqlite3.connect(path)) as db, db:
        db.executescript(
            """
            CREATE TABLE changes (n INTEGER NOT NULL);
            INSERT INTO changes VALUES (0);
            CREATE TRIGGER pages_ins AFTER INSERT ON pages BEGIN UPDATE changes SET n = n + 1; END;
            CREATE TRIGGER pages_upd AFTER UPDATE ON pages BEGIN UPDATE changes SET n = n + 1; END;
            CREATE TRIGGER pages_del AFTER DELETE ON pages BEGIN UPDATE changes SET n = n + 1; END;
            """
        )

    def version() -> int:
        with closing(sqlite3.connect(path)) as db:
            return int(db.execute("SELECT n FROM changes").fetchone()[0])

    return version


def clean(report: Any) -> list[str]:
    return [str(d) for d in report]


def locs_in(xml: str) -> list[str]:
    return [html.unescape(loc) for loc in re.findall(r"<loc>([^<]*)</loc>", xml)]


# -- what is served reads back exactly, and validates clean ------------------------------------------


def test_pages_read_back_in_order_and_validate_clean(served: Served, tmp_path: Path) -> None:
    db = make_db(tmp_path / "site.db", 3_500)
    base = served.start(sqlite_source(db), page_size=1_000)
    reader = sitemapkit.read(base + "/sitemap.xml")
    assert [e.loc for e in reader] == expected_locs(db, base)
    assert [node.url for node in reader.tree.children] == [f"{base}/sitemap-{n}.xml" for n in (1, 2, 3, 4)]
    assert [node.url_count for node in reader.tree.children] == [1_000, 1_000, 1_000, 500]
    assert list(reader.diagnostics) == []
    report = sitemapkit.validate(base + "/sitemap.xml")
    assert clean(report) == []
    assert report.summary()["urls"] == 3_500 and report.summary()["files"] == 5


@pytest.mark.slow
def test_default_page_size_serves_120000_urls_from_count_and_slice(tmp_path: Path) -> None:
    class Generated:
        """120,000 URLs computed on demand: count() and slicing, never a list of them all."""

        def __init__(self) -> None:
            self.slices: list[tuple[int, int]] = []

        def count(self) -> int:
            return 120_000

        def __getitem__(self, s: slice) -> list[UrlEntry]:
            self.slices.append((s.start, s.stop))
            stop = min(s.stop, 120_000)
            return [
                UrlEntry(f"{base}/item/{i}", START + dt.timedelta(seconds=i)) for i in range(s.start, stop)
            ]

    source = Generated()
    holder: dict[str, Any] = {}

    async def trampoline(scope: Any, receive: Any, send: Any) -> None:
        await holder["app"](scope, receive, send)

    with serve_asgi(trampoline) as base:
        holder["app"] = asgi_app(source, base_url=base)
        reader = sitemapkit.read(base + "/sitemap.xml")
        assert [e.loc for e in reader] == [f"{base}/item/{i}" for i in range(120_000)]
        assert [n.url_count for n in reader.tree.children] == [50_000, 50_000, 20_000]
        # the first index also checks the first 50 entries against the folder the sitemaps are served from
        assert sorted(source.slices) == [(0, 50), (0, 50_000), (50_000, 100_000), (100_000, 150_000)]
        report = sitemapkit.validate(base + "/sitemap.xml")
        assert clean(report) == [] and report.summary()["urls"] == 120_000


@pytest.mark.parametrize("versioned", [True, False], ids=["version", "no-version"])
def test_keyset_source_pages_through_sqlite(served: Served, tmp_path: Path, versioned: bool) -> None:
    db = make_db(tmp_path / "site.db", 2_345)
    fetches: list[Any] = []

    def fetch(after: int | None, limit: int) -> list[tuple[int, str]]:
        fetches.append((after, limit))
        with closing(sqlite3.connect(db)) as conn:
            rows = conn.execute(
                "SELECT id, path FROM pages WHERE id > ? ORDER BY id LIMIT ?", (after or 0, limit)
            ).fetchall()
        return [(row_id, loc) for row_id, loc in rows]

    version = add_change_counter(db) if versioned else None
    base = served.start(KeysetSource(fetch, batch=1_000, version=version), page_size=1_000)
    # page 3 first: the source walks to it, then the index (a full walk, no count function), then the rest
    third = httpx.get(base + "/sitemap-3.xml")
    assert third.status_code == 200 and third.text.count("<url>") == 345
    reader = sitemapkit.read(base + "/sitemap.xml")
    assert [e.loc for e in reader] == expected_locs(db, base)
    assert [n.url_count for n in reader.tree.children] == [1_000, 1_000, 345]
    assert clean(sitemapkit.validate(base + "/sitemap.xml")) == []
    assert httpx.get(base + "/sitemap-4.xml").status_code == 404
    fetches.clear()
    assert httpx.get(base + "/sitemap-2.xml").status_code == 200
    # at an unchanged version the key that starts page 2 is remembered: one query; without a version
    # nothing can be trusted from an earlier request, so the page walks over page 1's rows first
    assert fetches == ([(1_000, 1_000)] if versioned else [(None, 1_000), (1_000, 1_000)])

    # one row deleted near the start, one added at the end: the count stays the same, every page shifts
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DELETE FROM pages WHERE id = 2")
        conn.execute("INSERT INTO pages (path, updated) VALUES ('/docs/new', ?)", (START.isoformat(),))
    assert httpx.get(base + "/sitemap.xml").text.count("<sitemap>") == 3
    pages = {n: locs_in(httpx.get(f"{base}/sitemap-{n}.xml").text) for n in (3, 2, 1)}  # any order
    assert pages[1] + pages[2] + pages[3] == expected_locs(db, base)  # none lost, none twice
    assert pages[3][-1] == f"{base}/docs/new"


# -- HTTP behaviour ----------------------------------------------------------------------------------


GZIP_CASES = [
    ("gzip", True),
    ("gzip, deflate, br", True),
    ("x-gzip", True),
    ("*", True),
    ("br;q=1.0, gzip;q=0.8, *;q=0.1", True),
    ("identity", False),
    ("gzip;q=0", False),
    ("gzip;q=0.3, identity;q=0.9", False),
    ("*;q=0, identity", False),
    ("deflate", False),
    ("", False),
]


def test_gzip_is_sent_when_the_client_accepts_it(served: Served) -> None:
    urls = [f"/p/{i}" for i in range(50)]
    base = served.start(urls, page_size=20)
    with httpx.Client() as client:
        plain = client.get(base + "/sitemap-1.xml", headers={"Accept-Encoding": "identity"})
        for accept, gzipped in GZIP_CASES:
            with client.stream("GET", base + "/sitemap-1.xml", headers={"Accept-Encoding": accept}) as r:
                raw = b"".join(r.iter_raw())
            assert r.status_code == 200
            assert r.headers["vary"] == "Accept-Encoding"
            assert r.headers.get("content-encoding") == ("gzip" if gzipped else None), accept
            assert int(r.headers["content-length"]) == len(raw)
            assert (gzip.decompress(raw) if gzipped else raw) == plain.content
            assert raw.startswith(b"\x1f\x8b") == gzipped
            assert r.headers["etag"] == plain.headers["etag"][:-1] + ("-gzip" if gzipped else "") + '"'


def test_response_headers(served: Served) -> None:
    base = served.start(
        [UrlEntry(f"/p/{i}", dt.date(2024, 1, 1) + dt.timedelta(days=i)) for i in range(30)],
        page_size=10,
        max_age=120,
    )
    for path in ("/sitemap.xml", "/sitemap-2.xml"):
        r = httpx.get(base + path)
        assert r.status_code == 200
        assert r.headers["content-type"] == "application/xml; charset=utf-8"
        assert r.headers["x-robots-tag"] == "noindex"
        assert r.headers["cache-control"] == "public, max-age=120"
        assert r.headers["etag"].startswith('"') and not r.headers["etag"].startswith("W/")
        assert "last-modified" not in r.headers  # no change time from the source: the ETag alone
    index = httpx.get(base + "/sitemap.xml").text
    assert f"<sitemap><loc>{base}/sitemap-3.xml</loc><lastmod>2024-01-30</lastmod></sitemap>" in index


def test_conditional_requests_answer_304(served: Served) -> None:
    base = served.start(
        [UrlEntry(f"/p/{i}", dt.date(2024, 1, 1) + dt.timedelta(days=i)) for i in range(30)], page_size=10
    )
    url = base + "/sitemap-1.xml"
    with httpx.Client(headers={"Accept-Encoding": "identity"}) as client:
        first = client.get(url)
        etag = first.headers["etag"]
        assert "last-modified" not in first.headers

        def status(**headers: str) -> int:
            r = client.get(url, headers=headers)
            if r.status_code == 304:
                assert r.content == b""
                assert r.headers["etag"] == etag
                assert r.headers["cache-control"] == "public, max-age=3600"
                assert r.headers["vary"] == "Accept-Encoding"
            else:
                assert r.content == first.content
            return r.status_code

        assert status(**{"If-None-Match": etag}) == 304
        assert status(**{"If-None-Match": f'"nope", W/{etag}'}) == 304  # weak comparison
        assert status(**{"If-None-Match": "*"}) == 304
        assert status(**{"If-None-Match": '"nope"'}) == 200
        # no Last-Modified was sent, so a date proves nothing (it would, wrongly, after a removal)
        assert status(**{"If-Modified-Since": "Thu, 11 Jan 2024 08:00:00 GMT"}) == 200
        assert status(**{"If-None-Match": etag, "If-Modified-Since": "not a date"}) == 304
        gz = client.get(url, headers={"Accept-Encoding": "gzip", "If-None-Match": etag})
        assert gz.status_code == 200  # the gzip representation has its own tag
        assert (
            client.get(
                url, headers={"Accept-Encoding": "gzip", "If-None-Match": gz.headers["etag"]}
            ).status_code
            == 304
        )


def test_head_answers_like_get_without_a_body(served: Served) -> None:
    base = served.start([f"/p/{i}" for i in range(30)], page_size=10)
    with httpx.Client() as client:
        for path in ("/sitemap.xml", "/sitemap-3.xml"):
            get = client.get(base + path, headers={"Accept-Encoding": "gzip"})
            head = client.head(base + path, headers={"Accept-Encoding": "gzip"})
            assert head.status_code == 200 and head.content == b""
            for name in ("content-length", "content-type", "etag", "content-encoding", "x-robots-tag"):
                assert head.headers[name] == get.headers[name]
        assert client.head(base + "/sitemap-9.xml").status_code == 404


def test_unknown_paths_404_and_other_methods_405(served: Served) -> None:
    base = served.start([f"/p/{i}" for i in range(30)], page_size=10)
    with httpx.Client() as client:
        for path in (
            "/sitemap-0.xml",
            "/sitemap-4.xml",
            "/sitemap-01.xml",
            "/sitemap-1.xml.gz",
            "/other",
            "/",
        ):
            r = client.get(base + path)
            assert r.status_code == 404, path
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            r = client.request(method, base + "/sitemap.xml")
            assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD"
        assert client.get(base + "/sitemap-3.xml").status_code == 200


def test_failing_source_is_a_500_with_a_short_body(served: Served, caplog: pytest.LogCaptureFixture) -> None:
    def broken_page(offset: int, limit: int) -> list[str]:
        raise sqlite3.OperationalError("no such table: pages")

    base = served.start(FunctionSource(lambda: 10, broken_page))
    with caplog.at_level(logging.ERROR, logger="sitemapkit.web"):
        r = httpx.get(base + "/sitemap-1.xml")
    assert r.status_code == 500
    assert r.text == "Internal Server Error\n"
    assert "Traceback" not in r.text and "pages" not in r.text
    assert r.headers["cache-control"] == "no-store"
    failure = [rec for rec in caplog.records if rec.name == "sitemapkit.web" and rec.exc_info]
    assert len(failure) == 1 and "no such table: pages" in str(failure[0].exc_info[1])
    assert "/sitemap-1.xml" in failure[0].getMessage()
    assert httpx.get(base + "/sitemap.xml").status_code == 200  # the index only counts


@pytest.mark.parametrize("index", ["always", "auto"])
def test_an_empty_source_has_no_sitemap_until_it_has_entries(
    served: Served, index: str, caplog: pytest.LogCaptureFixture
) -> None:
    """No valid sitemap has no URL (the schemas want at least one <sitemap> or <url>), and `generate`
    publishes nothing for no entries: the index is a 404 saying why, not cached, and a warning is logged."""
    items: list[str] = []
    base = served.start(items, index=index)
    with caplog.at_level(logging.WARNING, logger="sitemapkit.web"):
        for _ in range(2):
            r = httpx.get(base + "/sitemap.xml")
            assert r.status_code == 404 and r.text == "Not Found: this sitemap has no URLs yet\n"
            assert r.headers["cache-control"] == "no-store"
        assert httpx.get(base + "/sitemap-1.xml").status_code == 404
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"{base}/sitemap.xml: the sitemap source has no entries, so there is no sitemap to serve (404) "
        "until it has some"
    ]
    items.append("/first")
    assert httpx.get(base + "/sitemap.xml").status_code == 200
    assert clean(sitemapkit.validate(base + "/sitemap.xml")) == []


def test_a_page_of_only_invalid_entries_is_a_500(served: Served, caplog: pytest.LogCaptureFixture) -> None:
    seen: list[Diagnostic] = []
    items = [f"/ok/{i}" for i in range(10)] + ["ftp://example.org/x", "mailto:a@example.org", "no scheme"]
    base = served.start(items, page_size=10, on_diagnostic=seen.append)
    with caplog.at_level(logging.ERROR, logger="sitemapkit.web"):
        assert httpx.get(base + "/sitemap.xml").status_code == 200
        assert httpx.get(base + "/sitemap-1.xml").text.count("<url>") == 10
        r = httpx.get(base + "/sitemap-2.xml")
    assert r.status_code == 500 and "<urlset" not in r.text
    assert [d.line for d in seen] == [11, 12, 13]
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [
        f"{base}/sitemap-2.xml: none of the 3 entries of this sitemap can be served (the diagnostics logged "
        "for them say why), and a sitemap without any URL is not valid"
    ]


def test_invalid_entries_are_left_out_and_reported(served: Served, caplog: pytest.LogCaptureFixture) -> None:
    seen: list[Diagnostic] = []
    entries: list[Any] = [
        "/good/1",
        "ftp://example.org/x",  # not http(s)
        "https://elsewhere.example/x",  # out of scope
        UrlEntry("/good/2", "2024-02-30"),  # type: ignore[arg-type]  # a bad date string: dropped, URL kept
        UrlEntry("/good/3", changefreq="sometimes", priority=1.5),
        "/good/1",  # duplicate
        ("not", "an", "entry"),
        UrlEntry("/good/4", dt.datetime(2024, 5, 1, 10, 0)),  # naive: taken as UTC
        "/" + "x" * 2_100,  # too long
    ]
    base = served.start(entries, on_diagnostic=seen.append)
    with caplog.at_level(logging.WARNING, logger="sitemapkit.web"):
        page = httpx.get(base + "/sitemap-1.xml").text
    assert page.count("<url>") == 4
    assert "<lastmod>2024-05-01T10:00:00+00:00</lastmod>" in page
    assert "sometimes" not in page and "1.5" not in page
    codes = sorted(d.code for d in seen)
    assert codes == sorted(
        [
            "invalid-url",
            "url-not-allowed",
            "invalid-date",
            "invalid-value",
            "invalid-value",
            "duplicate-url",
            "bad-line",
            "naive-datetime",
            "url-too-long",
        ]
    )
    assert all(d.source == base + "/sitemap-1.xml" and d.line for d in seen)
    assert {d.line for d in seen if d.code == "bad-line"} == {7}
    assert len([r for r in caplog.records if r.name == "sitemapkit.web"]) == len(seen)
    assert clean(sitemapkit.validate(base + "/sitemap.xml")) == []
    # the same page again: the same diagnostics, logged at DEBUG this time
    caplog.clear()
    before = len(seen)
    with caplog.at_level(logging.WARNING, logger="sitemapkit.web"):
        httpx.get(base + "/sitemap-1.xml")
    assert [r for r in caplog.records if r.name == "sitemapkit.web"] == []
    assert len(seen) == before + len(codes)


def test_host_header_gives_the_base_url_when_none_is_set(served: Served) -> None:
    base = served.start([f"/p/{i}" for i in range(3)], base_url=None)
    assert f"<loc>{base}/sitemap-1.xml</loc>" in httpx.get(base + "/sitemap.xml").text
    with httpx.Client() as client:
        r = client.get(base + "/sitemap.xml", headers={"Host": "www.example.com"})
        assert "<loc>http://www.example.com/sitemap-1.xml</loc>" in r.text
        page = client.get(base + "/sitemap-1.xml", headers={"Host": "www.example.com"}).text
        assert "<loc>http://www.example.com/p/0</loc>" in page
        assert client.get(base + "/sitemap.xml", headers={"Host": "evil.com/x?"}).status_code == 400


def test_explicit_base_url_ignores_the_host_header(served: Served) -> None:
    base = served.start([f"/p/{i}" for i in range(3)], base_url="https://www.example.com")
    r = httpx.get(base + "/sitemap.xml", headers={"Host": "attacker.example"})
    assert "<loc>https://www.example.com/sitemap-1.xml</loc>" in r.text
    assert "attacker" not in r.text


def test_stylesheet_is_linked_and_served(served: Served) -> None:
    base = served.start([f"/p/{i}" for i in range(3)], xsl="default")
    for path in ("/sitemap.xml", "/sitemap-1.xml"):
        assert '<?xml-stylesheet type="text/xsl" href="sitemap.xsl"?>' in httpx.get(base + path).text
    xsl = httpx.get(base + "/sitemap.xsl")
    assert xsl.status_code == 200 and xsl.headers["content-type"] == "text/xsl; charset=utf-8"
    assert b"<xsl:stylesheet" in xsl.content
    assert clean(sitemapkit.validate(base + "/sitemap.xml")) == []


def test_index_auto_serves_a_single_page_as_the_sitemap(served: Served) -> None:
    base = served.start([f"/p/{i}" for i in range(3)], index="auto")
    r = httpx.get(base + "/sitemap.xml")
    assert "<urlset" in r.text and r.text.count("<url>") == 3
    assert httpx.get(base + "/sitemap-1.xml").text == r.text  # still reachable by number
    assert clean(sitemapkit.validate(base + "/sitemap.xml")) == []


def test_name_changes_the_routes(served: Served) -> None:
    base = served.start([f"/p/{i}" for i in range(3)], name="products")
    assert f"<loc>{base}/products-1.xml</loc>" in httpx.get(base + "/products.xml").text
    assert httpx.get(base + "/sitemap.xml").status_code == 404


def test_oversized_page_is_cut_at_max_bytes_and_reported(served: Served) -> None:
    seen: list[Diagnostic] = []
    long_urls = [f"/page/{i}/" + "x" * 180 for i in range(40)]
    base = served.start(long_urls, page_size=30, max_bytes=4_096, on_diagnostic=seen.append)
    page = httpx.get(base + "/sitemap-1.xml", headers={"Accept-Encoding": "identity"})
    assert len(page.content) <= 4_096
    kept = page.text.count("<url>")
    assert 0 < kept < 30
    assert [d.code for d in seen] == ["file-too-large"]
    assert f"{30 - kept} entries" in seen[0].message and "page_size" in seen[0].message
    assert clean(sitemapkit.validate(base + "/sitemap.xml")) == []


def test_version_source_answers_304_without_reading_entries(served: Served, tmp_path: Path) -> None:
    db = make_db(tmp_path / "site.db", 50)
    calls: list[str] = []
    source = sqlite_source(db, calls)
    source._version = lambda: "v1"
    base = served.start(source, page_size=20)
    first = httpx.get(base + "/sitemap-2.xml", headers={"Accept-Encoding": "identity"})
    assert first.headers["etag"].startswith('"v')
    calls.clear()
    again = httpx.get(
        base + "/sitemap-2.xml",
        headers={"Accept-Encoding": "identity", "If-None-Match": first.headers["etag"]},
    )
    assert again.status_code == 304 and calls == []
    source._version = lambda: "v2"
    changed = httpx.get(
        base + "/sitemap-2.xml",
        headers={"Accept-Encoding": "identity", "If-None-Match": first.headers["etag"]},
    )
    assert changed.status_code == 200 and changed.headers["etag"] != first.headers["etag"]


def utc(hour: int, minute: int = 0, second: float = 0.0) -> dt.datetime:
    return dt.datetime(2024, 6, 1, hour, minute, tzinfo=dt.UTC) + dt.timedelta(seconds=second)


def test_a_page_changed_without_a_newer_lastmod_is_not_answered_304(served: Served) -> None:
    """The newest lastmod of a page or index does not move when an entry is removed, or added with an older
    date. As `Last-Modified`, crawlers revalidating with `If-Modified-Since` would be told "not modified"
    about a changed page; so without a change time from the source there is no `Last-Modified`, a date is
    ignored, and the strong ETag decides."""
    items = [UrlEntry(f"/p{i}", dt.datetime(2024, 1, 1 + i % 20, tzinfo=dt.UTC)) for i in range(25)]
    base = served.start(items, page_size=10)
    later = {"If-Modified-Since": "Sat, 01 Jun 2024 00:00:00 GMT"}  # after every lastmod, before now
    with httpx.Client(headers={"Accept-Encoding": "identity"}) as client:
        before = {p: client.get(base + p) for p in ("/sitemap.xml", "/sitemap-2.xml")}
        assert all("last-modified" not in r.headers for r in before.values())
        items.remove(max(items, key=lambda e: e.lastmod or START))  # /p19, the newest, on page 2
        page = client.get(base + "/sitemap-2.xml", headers=later)
        assert page.status_code == 200 and "/p19<" not in page.text and "/p20<" in page.text
        stale = {"If-None-Match": before["/sitemap-2.xml"].headers["etag"]}
        assert client.get(base + "/sitemap-2.xml", headers=stale).status_code == 200
        for i in range(7):  # entries added with an old date: the index grows to 4 pages
            items.append(UrlEntry(f"/old{i}", dt.datetime(2024, 1, 1, tzinfo=dt.UTC)))
        index = client.get(base + "/sitemap.xml", headers=later)
        assert index.status_code == 200 and index.text.count("<sitemap>") == 4
        stale = {"If-None-Match": before["/sitemap.xml"].headers["etag"]}
        assert client.get(base + "/sitemap.xml", headers=stale).status_code == 200


def test_last_modified_and_if_modified_since_follow_the_sources_change_time(served: Served) -> None:
    """A `version()` that is a datetime (the time of the latest change, removals included) gives
    `Last-Modified`: the later of it and the server's start, once it is a whole second in the past."""
    now = [utc(12).timestamp()]
    changed = [utc(11)]
    items = [UrlEntry(f"/p{i}", dt.date(2024, 1, 1 + i)) for i in range(25)]
    reads: list[int] = []

    def page(offset: int, limit: int) -> list[UrlEntry]:
        reads.append(offset)
        return items[offset : offset + limit]

    source = FunctionSource(lambda: len(items), page, version=lambda: changed[0])
    base = served.start(source, page_size=10, wall_clock=lambda: now[0])
    url = base + "/sitemap-2.xml"
    with httpx.Client(headers={"Accept-Encoding": "identity"}) as client:

        def get(path: str = "/sitemap-2.xml", **headers: str) -> httpx.Response:
            return client.get(base + path, headers=headers)

        now[0] = utc(12, 0, 0.5).timestamp()  # the server started this second: no date can be trusted yet
        assert "last-modified" not in get().headers
        assert get(**{"If-Modified-Since": "Sat, 01 Jun 2024 12:00:00 GMT"}).status_code == 200
        now[0] = utc(13).timestamp()
        # the change (11:00) is older than the server (12:00), whose options may differ from the last one's
        assert get().headers["last-modified"] == "Sat, 01 Jun 2024 12:00:00 GMT"
        changed[0] = utc(12, 30, 0.7)
        first = get()
        assert first.headers["last-modified"] == "Sat, 01 Jun 2024 12:30:00 GMT"
        assert get("/sitemap.xml").headers["last-modified"] == "Sat, 01 Jun 2024 12:30:00 GMT"
        reads.clear()
        not_modified = get(**{"If-Modified-Since": "Sat, 01 Jun 2024 12:30:00 GMT"})
        assert not_modified.status_code == 304 and not_modified.content == b"" and reads == []
        assert not_modified.headers["last-modified"] == first.headers["last-modified"]
        assert not_modified.headers["etag"] == first.headers["etag"]
        assert get(**{"If-Modified-Since": "Sat, 01 Jun 2024 12:29:59 GMT"}).status_code == 200
        assert get(**{"If-Modified-Since": "not a date"}).status_code == 200
        # If-None-Match decides when both are sent
        both = {"If-None-Match": '"nope"', "If-Modified-Since": "Sat, 01 Jun 2024 12:30:00 GMT"}
        assert get(**both).status_code == 200
        # an entry removed: the change time moves, and so does Last-Modified
        del items[3]
        changed[0] = utc(12, 45)
        again = get(**{"If-Modified-Since": "Sat, 01 Jun 2024 12:30:00 GMT"})
        assert again.status_code == 200 and again.content != first.content
        assert again.headers["last-modified"] == "Sat, 01 Jun 2024 12:45:00 GMT"
        # a date later than now proves nothing (a client clock ahead, or a made-up date): ignored
        assert get(**{"If-Modified-Since": "Sat, 01 Jun 2024 14:00:00 GMT"}).status_code == 200
        # a change in the current second: a later change in the same second could not move the date
        changed[0] = utc(13, 0, 0.2)
        now[0] = utc(13, 0, 0.6).timestamp()
        assert "last-modified" not in get().headers
        assert get(**{"If-Modified-Since": "Sat, 01 Jun 2024 13:00:00 GMT"}).status_code == 200
        now[0] = utc(13, 0, 1).timestamp()
        assert get().headers["last-modified"] == "Sat, 01 Jun 2024 13:00:00 GMT"
        changed[0] = dt.datetime(2024, 6, 1, 12, 50)  # naive: UTC
        assert get().headers["last-modified"] == "Sat, 01 Jun 2024 12:50:00 GMT"
    assert url


def test_if_modified_since_in_the_future_is_ignored(served: Served) -> None:
    """RFC 9110 §13.1.3: a date later than the server's clock is not a valid validator; without this a
    client could pin any page to 304 for good."""
    now = [utc(12).timestamp()]
    base = served.start(
        SequenceSource([f"/p{i}" for i in range(5)], version=lambda: utc(9)),
        wall_clock=lambda: now[0],
    )
    now[0] = utc(13).timestamp()
    url = base + "/sitemap-1.xml"
    last_modified = httpx.get(url).headers["last-modified"]
    assert last_modified == "Sat, 01 Jun 2024 12:00:00 GMT"
    assert httpx.get(url, headers={"If-Modified-Since": last_modified}).status_code == 304
    for future in ("Sat, 01 Jun 2024 13:00:01 GMT", "Fri, 01 Jan 2100 00:00:00 GMT"):
        r = httpx.get(url, headers={"If-Modified-Since": future})
        assert r.status_code == 200 and r.text.count("<url>") == 5


def test_cache_renders_each_page_once_per_lifetime(served: Served, tmp_path: Path) -> None:
    db = make_db(tmp_path / "site.db", 50)
    calls: list[str] = []
    now = [1_000.0]
    base = served.start(sqlite_source(db, calls), page_size=20, cache_seconds=60, clock=lambda: now[0])
    bodies = {httpx.get(base + "/sitemap-1.xml").content for _ in range(5)}
    assert len(bodies) == 1 and calls == ["path,"]
    httpx.get(base + "/sitemap.xml")  # the first index also reads the first entries (the scope check)
    httpx.get(base + "/sitemap.xml")
    assert calls == ["path,", "path,", "count(*)"]
    now[0] += 61
    httpx.get(base + "/sitemap-1.xml")
    assert calls == ["path,", "path,", "count(*)", "path,"]


# -- mounted under a prefix --------------------------------------------------------------------------


def test_asgi_app_mounted_under_a_prefix(tmp_path: Path) -> None:
    routing = pytest.importorskip("starlette.routing")
    applications = pytest.importorskip("starlette.applications")
    holder: dict[str, Any] = {}

    async def sitemaps(scope: Any, receive: Any, send: Any) -> None:
        await holder["app"](scope, receive, send)

    app = applications.Starlette(routes=[routing.Mount("/shop", app=sitemaps)])
    with serve_asgi(app) as base:
        holder["app"] = asgi_app([f"/shop/item/{i}" for i in range(25)], base_url=base, page_size=10)
        index = httpx.get(base + "/shop/sitemap.xml")
        assert f"<loc>{base}/shop/sitemap-3.xml</loc>" in index.text
        assert [e.loc for e in sitemapkit.read(base + "/shop/sitemap.xml")] == [
            f"{base}/shop/item/{i}" for i in range(25)
        ]
        assert clean(sitemapkit.validate(base + "/shop/sitemap.xml")) == []
        assert httpx.get(base + "/sitemap.xml").status_code == 404


def test_asgi_app_behind_a_root_path(tmp_path: Path) -> None:
    """uvicorn --root-path: a proxy forwards /api/... stripped, and the app must still write /api/ URLs."""
    holder: dict[str, Any] = {}

    async def trampoline(scope: Any, receive: Any, send: Any) -> None:
        await holder["app"](scope, receive, send)

    with serve_asgi(trampoline, root_path="/api") as base:
        holder["app"] = asgi_app([f"/api/doc/{i}" for i in range(3)], base_url="https://example.com")
        index = httpx.get(base + "/sitemap.xml")  # the proxy has stripped /api
        assert "<loc>https://example.com/api/sitemap-1.xml</loc>" in index.text
        assert httpx.get(base + "/sitemap-1.xml").text.count("<loc>https://example.com/api/doc/") == 3


def test_wsgi_app_mounted_under_a_prefix() -> None:
    middleware = pytest.importorskip("werkzeug.middleware.dispatcher")
    holder: dict[str, Any] = {}

    def not_found(environ: Any, start_response: Any) -> list[bytes]:
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"elsewhere"]

    app = middleware.DispatcherMiddleware(not_found, {"/shop": lambda e, s: holder["app"](e, s)})
    with serve_wsgi(app) as base:
        holder["app"] = wsgi_app([f"/shop/item/{i}" for i in range(25)], base_url=base, page_size=10)
        assert f"<loc>{base}/shop/sitemap-3.xml</loc>" in httpx.get(base + "/shop/sitemap.xml").text
        assert [e.loc for e in sitemapkit.read(base + "/shop/sitemap.xml")] == [
            f"{base}/shop/item/{i}" for i in range(25)
        ]
        assert clean(sitemapkit.validate(base + "/shop/sitemap.xml")) == []
        assert httpx.get(base + "/sitemap.xml").text == "elsewhere"


def test_urls_outside_a_prefix_are_out_of_scope() -> None:
    """A sitemap under /shop/ may list only /shop/ URLs (sitemaps.org): the rest is left out, reported."""
    seen: list[Diagnostic] = []
    server = SitemapServer(["/shop/a", "/blog/b"], base_url="https://example.com", on_diagnostic=seen.append)
    at_root = server.respond("GET", "/sitemap-1.xml", {})
    assert at_root.body.count(b"<url>") == 2 and seen == []
    mounted = server.respond("GET", "/sitemap-1.xml", {}, root_path="/shop")
    assert mounted.status == 200 and mounted.body.count(b"<url>") == 1
    assert b"<loc>https://example.com/shop/a</loc>" in mounted.body
    assert [(d.code, d.url) for d in seen] == [("url-not-allowed", "https://example.com/blog/b")]


@pytest.mark.parametrize("kind", ["asgi", "wsgi"])
def test_site_paths_that_lack_the_mount_prefix_fail_loudly(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """`wsgi_app(["/p0", ...])` mounted at /shop: `/p0` is a path on the site, outside /shop/ where the
    sitemaps are served, so every entry would be left out. Instead of an index of empty pages (200s with a
    warning), the index and the pages are 500s, and the log says why and what to write instead."""
    holder: dict[str, Any] = {}
    context: Any
    if kind == "asgi":
        routing = pytest.importorskip("starlette.routing")
        applications = pytest.importorskip("starlette.applications")

        async def sitemaps(scope: Any, receive: Any, send: Any) -> None:
            await holder["app"](scope, receive, send)

        context = serve_asgi(applications.Starlette(routes=[routing.Mount("/shop", app=sitemaps)]))
    else:
        middleware = pytest.importorskip("werkzeug.middleware.dispatcher")

        def root(environ: Any, start_response: Any) -> list[bytes]:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"root"]

        context = serve_wsgi(
            middleware.DispatcherMiddleware(root, {"/shop": lambda e, s: holder["app"](e, s)})
        )
    with context as base:
        build = asgi_app if kind == "asgi" else wsgi_app
        holder["app"] = build([f"/p{i}" for i in range(25)], base_url=base, page_size=10)
        with caplog.at_level(logging.ERROR, logger="sitemapkit.web"):
            index = httpx.get(base + "/shop/sitemap.xml")
            page = httpx.get(base + "/shop/sitemap-2.xml")
        for r in (index, page):
            assert r.status_code == 500 and r.headers["cache-control"] == "no-store"
            assert "<url" not in r.text and "log" in r.text
        errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 2
        assert errors[0].startswith(f"{base}/shop/sitemap.xml: none of the first 10 entries")
        assert errors[1].startswith(f"{base}/shop/sitemap-2.xml: none of the 10 entries of this sitemap")
        for message in errors:
            assert f"served from {base}/shop/" in message
            assert "(/shop/p" in message and "rather than /p" in message  # what to write instead
        # the prefix written into the paths: everything is served
        holder["app"] = build([f"/shop/p{i}" for i in range(25)], base_url=base, page_size=10)
        assert [e.loc for e in sitemapkit.read(base + "/shop/sitemap.xml")] == [
            f"{base}/shop/p{i}" for i in range(25)
        ]


def test_another_host_in_a_mounted_sitemap_is_explained() -> None:
    server = SitemapServer(["https://other.example/a"], base_url="https://example.com")
    assert server.respond("GET", "/sitemap.xml", {}).status == 500
    assert server.respond("GET", "/sitemap-1.xml", {}).status == 500
    allowed = SitemapServer(
        ["https://other.example/a"], base_url="https://example.com", allow_hosts=["other.example"]
    )
    assert allowed.respond("GET", "/sitemap-1.xml", {}).body.count(b"<url>") == 1


# -- fallback: the rest of the app --------------------------------------------------------------------


def test_fallback_apps_get_every_other_path() -> None:
    async def other_asgi(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            message = await receive()
            await send({"type": message["type"] + ".complete"})
            message = await receive()
            await send({"type": message["type"] + ".complete"})
            return
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]}
        )
        await send({"type": "http.response.body", "body": b"app:" + scope["path"].encode()})

    def other_wsgi(environ: Any, start_response: Any) -> list[bytes]:
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"app:" + environ["PATH_INFO"].encode()]

    urls = ["/a", "/b"]
    asgi = asgi_app(urls, base_url="http://x.example", fallback=other_asgi)
    wsgi = wsgi_app(urls, base_url="http://x.example", fallback=other_wsgi)
    with serve_asgi(asgi, lifespan="on") as a, serve_wsgi(wsgi) as w:
        for base in (a, w):
            assert httpx.get(base + "/about").text == "app:/about"
            assert httpx.get(base + "/sitemap-7.xml").status_code == 404  # ours, out of range
            assert "<urlset" in httpx.get(base + "/sitemap-1.xml").text


def test_asgi_app_answers_lifespan_and_refuses_websockets() -> None:
    with serve_asgi(asgi_app(["/a"], base_url="http://x.example"), lifespan="on") as base:
        assert httpx.get(base + "/sitemap-1.xml").status_code == 200


# -- under load ------------------------------------------------------------------------------------------


def test_200_concurrent_conditional_requests(served: Served, tmp_path: Path) -> None:
    db = make_db(tmp_path / "site.db", 1_200)
    base = served.start(sqlite_source(db), page_size=300)
    paths = ["/sitemap.xml"] + [f"/sitemap-{n}.xml" for n in (1, 2, 3, 4)]
    with httpx.Client() as client:
        expected = {p: client.get(base + p, headers={"Accept-Encoding": "identity"}) for p in paths}
        gz_tags = {
            p: client.get(base + p, headers={"Accept-Encoding": "gzip"}).headers["etag"] for p in paths
        }

    async def one(client: httpx.AsyncClient, i: int) -> tuple[int, int, bool]:
        path = paths[i % len(paths)]
        gz = i % 3 == 0
        match = i % 2 == 0
        tag = (gz_tags[path] if gz else expected[path].headers["etag"]) if match else '"stale"'
        headers = {"If-None-Match": tag, "Accept-Encoding": "gzip" if gz else "identity"}
        r = await client.get(base + path, headers=headers)
        if match:
            ok = r.status_code == 304 and r.content == b"" and r.headers["etag"] == tag
        else:
            ok = (
                r.status_code == 200
                and r.content == expected[path].content  # httpx decodes gzip
                and r.headers.get("content-encoding") == ("gzip" if gz else None)
            )
        return i, r.status_code, ok

    async def run() -> list[tuple[int, int, bool]]:
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
        async with httpx.AsyncClient(limits=limits, timeout=60) as client:
            return await asyncio.gather(*(one(client, i) for i in range(200)))

    results = asyncio.run(run())
    assert [r for r in results if not r[2]] == []
    assert sum(1 for _, status, _ in results if status == 304) == 100


# -- a source that is also used from code ------------------------------------------------------------


def test_server_respond_in_process() -> None:
    server = SitemapServer(["/a", "/b", "/c"], base_url="https://example.com", page_size=2)
    r = server.respond("GET", "/sitemap.xml", {"accept-encoding": "gzip"})
    assert r.status == 200 and r.header("content-encoding") == "gzip"
    assert b"https://example.com/sitemap-2.xml" in gzip.decompress(r.body)
    assert server.respond("GET", "/sitemap-2.xml", {}).body.count(b"<url>") == 1
    assert server.respond("GET", "/sitemap-3.xml", {}).status == 404
    assert server.respond("OPTIONS", "/sitemap.xml", {}).status == 405
    assert server.respond("HEAD", "/nothing", {}).body == b""
    by_host = SitemapServer(["/a"])
    assert (
        b"http://shop.example:8080/sitemap-1.xml"
        in by_host.respond("GET", "/sitemap.xml", {}, host="shop.example:8080").body
    )
    for bad in ("a..b", "example.com:99999", "x/y", "", None):
        answer = by_host.respond("GET", "/sitemap.xml", {}, host=bad)
        assert answer.status == 400 and answer.header("x-content-type-options") == "nosniff"


@pytest.mark.parametrize(
    "options",
    [
        {"page_size": 0},
        {"page_size": 50_001},
        {"max_bytes": 52_428_801},
        {"index": "never"},
        {"name": "../x"},
        {"base_url": "ftp://example.com"},
        {"base_url": "https://example.com/?q=1"},
        {"gzip_level": 10},
        {"max_age": -1},
    ],
)
def test_bad_options_are_usage_errors(options: dict[str, Any]) -> None:
    with pytest.raises(sitemapkit.UsageError):
        SitemapServer([], **options)
