"""sitemapkit.web under real servers: uvicorn for the ASGI app, werkzeug's threaded server for the WSGI app,
both on 127.0.0.1, fetched with httpx and read back with sitemapkit's own reader and validator."""

from __future__ import annotations

import asyncio
import datetime as dt
import gzip
import logging
import socket
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

import sitemapkit
from sitemapkit import Image, UrlEntry, normalize_url
from sitemapkit.diagnostics import Diagnostic
from sitemapkit.web import FunctionSource, KeysetSource, SitemapServer, asgi_app, wsgi_app

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


def clean(report: Any) -> list[str]:
    return [str(d) for d in report]


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
        assert sorted(source.slices) == [(0, 50_000), (50_000, 100_000), (100_000, 150_000)]
        report = sitemapkit.validate(base + "/sitemap.xml")
        assert clean(report) == [] and report.summary()["urls"] == 120_000


def test_keyset_source_pages_through_sqlite(served: Served, tmp_path: Path) -> None:
    db = make_db(tmp_path / "site.db", 2_345)
    fetches: list[Any] = []

    def fetch(after: int | None, limit: int) -> list[tuple[int, str]]:
        fetches.append((after, limit))
        with closing(sqlite3.connect(db)) as conn:
            rows = conn.execute(
                "SELECT id, path FROM pages WHERE id > ? ORDER BY id LIMIT ?", (after or 0, limit)
            ).fetchall()
        return [(row_id, loc) for row_id, loc in rows]

    base = served.start(KeysetSource(fetch, batch=1_000), page_size=1_000)
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
    assert fetches == [(1_000, 1_000)]  # the boundary key is remembered: one query for the page


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
    assert httpx.get(base + "/sitemap-2.xml").headers["last-modified"] == "Sat, 20 Jan 2024 00:00:00 GMT"
    assert httpx.get(base + "/sitemap.xml").headers["last-modified"] == "Tue, 30 Jan 2024 00:00:00 GMT"
    index = httpx.get(base + "/sitemap.xml").text
    assert f"<sitemap><loc>{base}/sitemap-3.xml</loc><lastmod>2024-01-30</lastmod></sitemap>" in index


def test_conditional_requests_answer_304(served: Served) -> None:
    base = served.start(
        [UrlEntry(f"/p/{i}", dt.date(2024, 1, 1) + dt.timedelta(days=i)) for i in range(30)], page_size=10
    )
    url = base + "/sitemap-1.xml"
    with httpx.Client(headers={"Accept-Encoding": "identity"}) as client:
        first = client.get(url)
        etag, last_modified = first.headers["etag"], first.headers["last-modified"]
        assert last_modified == "Wed, 10 Jan 2024 00:00:00 GMT"

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
        assert status(**{"If-Modified-Since": last_modified}) == 304
        assert status(**{"If-Modified-Since": "Thu, 11 Jan 2024 08:00:00 GMT"}) == 304
        assert status(**{"If-Modified-Since": "Tue, 09 Jan 2024 23:59:59 GMT"}) == 200
        assert status(**{"If-Modified-Since": "not a date"}) == 200
        # If-None-Match decides when both are sent
        assert status(**{"If-None-Match": '"nope"', "If-Modified-Since": last_modified}) == 200
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


def test_cache_renders_each_page_once_per_lifetime(served: Served, tmp_path: Path) -> None:
    db = make_db(tmp_path / "site.db", 50)
    calls: list[str] = []
    now = [1_000.0]
    base = served.start(sqlite_source(db, calls), page_size=20, cache_seconds=60, clock=lambda: now[0])
    bodies = {httpx.get(base + "/sitemap-1.xml").content for _ in range(5)}
    assert len(bodies) == 1 and calls == ["path,"]
    httpx.get(base + "/sitemap.xml")
    httpx.get(base + "/sitemap.xml")
    assert calls == ["path,", "count(*)"]
    now[0] += 61
    httpx.get(base + "/sitemap-1.xml")
    assert calls == ["path,", "count(*)", "path,"]


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
