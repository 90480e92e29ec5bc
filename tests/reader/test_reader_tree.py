"""The walk over a sitemap tree on a real local server: order, loops, depth, failures, retries, discovery."""

from __future__ import annotations

import asyncio
import gzip
from pathlib import Path

from sitemapkit.core.model import UrlEntry
from sitemapkit.reader.fetch import FetchOptions
from sitemapkit.reader.polite import Politeness
from sitemapkit.reader.walk import Reader, aread, read
from tests.support.helpers import InFlight, Sleeps, assert_paced
from tests.support.localserver import LocalServer, sequence

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'


def fast(sleeps: Sleeps | None = None) -> FetchOptions:
    sleeps = sleeps or Sleeps()
    return FetchOptions(sleep=sleeps, monotonic=sleeps.monotonic, jitter=lambda: 0.0)


def urlset(*locs: str) -> str:
    body = "".join(f"<url><loc>{loc}</loc></url>\n" for loc in locs)
    return f'{HEAD}<urlset xmlns="{NS}">\n{body}</urlset>\n'


def index(*locs: str, lastmod: str | None = None) -> str:
    extra = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
    body = "".join(f"<sitemap><loc>{loc.replace('&', '&amp;')}</loc>{extra}</sitemap>\n" for loc in locs)
    return f'{HEAD}<sitemapindex xmlns="{NS}">\n{body}</sitemapindex>\n'


def pages(prefix: str, n: int) -> list[str]:
    return [f"https://example.com/{prefix}/{i}" for i in range(n)]


def run(url: str, **kw: object) -> tuple[list[UrlEntry], Reader]:
    kw.setdefault("fetch_options", fast())
    reader = read(url, **kw)  # type: ignore[arg-type]
    return list(reader), reader


def codes(reader: Reader) -> list[str]:
    return [d.code for d in reader.diagnostics]


# -- order and the tree ----------------------------------------------------------------------------


def test_index_children_come_out_in_index_order_even_when_the_first_is_slowest(server: LocalServer) -> None:
    a, b, c = pages("a", 300), pages("b", 5), pages("c", 40)
    server.route("/a.xml", urlset(*a), delay=0.3)
    server.route("/b.xml", gzip.compress(urlset(*b).encode()))
    server.route("/c.xml", urlset(*c))
    url = server.route(
        "/index.xml", index(*(server.url(p) for p in ("/a.xml", "/b.xml", "/c.xml")), lastmod="2024-05-01")
    )
    entries, reader = run(url, concurrency=4)
    assert [e.loc for e in entries] == a + b + c
    assert [e.sitemap for e in entries] == [server.url("/a.xml")] * 300 + [server.url("/b.xml")] * 5 + [
        server.url("/c.xml")
    ] * 40
    root = reader.tree
    assert root is not None and root.kind == "sitemapindex" and root.status == 200
    assert [(n.url, n.kind, n.status, n.url_count, n.depth) for n in root.children] == [
        (server.url("/a.xml"), "urlset", 200, 300, 1),
        (server.url("/b.xml"), "urlset", 200, 5, 1),
        (server.url("/c.xml"), "urlset", 200, 40, 1),
    ]
    assert str(root.children[0].lastmod) == "2024-05-01"
    assert root.children[1].compressed and root.children[1].bytes == len(gzip.compress(urlset(*b).encode()))
    assert [n.url for n in reader.sitemaps] == [url] + [n.url for n in root.children]
    assert not reader.diagnostics


def test_children_are_fetched_concurrently_but_bounded(server: LocalServer) -> None:
    bodies = {f"/c{i}.xml": urlset(f"https://example.com/{i}").encode() for i in range(8)}

    def serve(concurrency: int) -> InFlight:
        flight = InFlight(concurrency, len(bodies), lambda h: (200, {}, bodies[h.path]))
        for path in bodies:
            server.handle(path, flight)
        return flight

    url = server.route("/index.xml", index(*(server.url(p) for p in bodies)))
    flight = serve(3)
    entries, _ = run(url, concurrency=3)
    assert [e.loc for e in entries] == [f"https://example.com/{i}" for i in range(8)]
    assert flight.peak == 3  # held until three were in flight: never fewer, and never more
    flight = serve(1)
    entries, _ = run(url, concurrency=1)
    assert len(entries) == 8 and flight.peak == 1


def test_children_with_query_or_no_extension(server: LocalServer) -> None:
    server.route("/sitemap.xml?page=2", urlset("https://example.com/p2"))
    server.route("/sitemaps/products", urlset("https://example.com/prod"))
    url = server.route(
        "/index.xml", index(server.url("/sitemap.xml?page=2"), server.url("/sitemaps/products"))
    )
    entries, reader = run(url)
    assert [e.loc for e in entries] == ["https://example.com/p2", "https://example.com/prod"]
    assert not reader.diagnostics


def test_nested_index_is_followed_and_reported(server: LocalServer) -> None:
    server.route("/leaf.xml", urlset("https://example.com/leaf"))
    server.route("/inner.xml", index(server.url("/leaf.xml")))
    url = server.route("/outer.xml", index(server.url("/inner.xml")))
    entries, reader = run(url)
    assert [e.loc for e in entries] == ["https://example.com/leaf"]
    assert codes(reader) == ["nested-index"]
    assert [n.depth for n in reader.sitemaps] == [0, 1, 2]


def test_max_depth_stops_the_walk(server: LocalServer) -> None:
    server.route("/leaf.xml", urlset("https://example.com/leaf"))
    server.route("/inner.xml", index(server.url("/leaf.xml")))
    url = server.route("/outer.xml", index(server.url("/inner.xml")))
    entries, reader = run(url, max_depth=1)
    assert entries == []
    assert "too-deep" in codes(reader)
    leaf = reader.sitemaps[-1]
    assert leaf.url == server.url("/leaf.xml") and leaf.kind is None and "max-depth" in (leaf.error or "")
    assert [r.path for r in server.requests] == ["/outer.xml", "/inner.xml"]
    assert run(url, max_depth=0)[0] == []


# -- loops -----------------------------------------------------------------------------------------


def test_index_listing_itself_is_a_fetch_loop(server: LocalServer) -> None:
    server.route("/a.xml", urlset("https://example.com/a"))
    url = server.url("/index.xml")
    server.route("/index.xml", index(url, server.url("/a.xml")))
    entries, reader = run(url)
    assert [e.loc for e in entries] == ["https://example.com/a"]
    loops = [d for d in reader.diagnostics if d.code == "fetch-loop"]
    assert len(loops) == 1 and "lists itself" in loops[0].message and loops[0].source == url
    assert [r.path for r in server.requests].count("/index.xml") == 1


def test_child_index_listing_its_parent_is_a_fetch_loop(server: LocalServer) -> None:
    parent = server.url("/parent.xml")
    server.route("/child.xml", index(parent, server.url("/leaf.xml")))
    server.route("/leaf.xml", urlset("https://example.com/leaf"))
    server.route("/parent.xml", index(server.url("/child.xml")))
    entries, reader = run(parent)
    assert [e.loc for e in entries] == ["https://example.com/leaf"]
    assert any(d.code == "fetch-loop" and "above it" in d.message for d in reader.diagnostics)
    assert [r.path for r in server.requests].count("/parent.xml") == 1


def test_child_redirecting_to_an_ancestor_is_a_fetch_loop(server: LocalServer) -> None:
    root = server.url("/sitemap_index.xml")
    server.redirect("/moved.xml", "/sitemap_index.xml")
    server.route("/a.xml", urlset("https://example.com/a"))
    server.route("/sitemap_index.xml", index(server.url("/moved.xml"), server.url("/a.xml")))
    entries, reader = run(root)
    assert [e.loc for e in entries] == ["https://example.com/a"]
    loop = next(d for d in reader.diagnostics if d.code == "fetch-loop")
    assert loop.source == server.url("/moved.xml") and "redirects to" in loop.message
    moved = reader.sitemaps[1]
    assert moved.redirects == (server.url("/moved.xml"),) and moved.final_url == root and moved.kind is None


def test_redirect_targets_count_as_visited(server: LocalServer) -> None:
    server.redirect("/old.xml", "/new.xml")
    server.route("/new.xml", urlset("https://example.com/n"))
    url = server.route("/index.xml", index(server.url("/old.xml"), server.url("/new.xml")))
    entries, reader = run(url, concurrency=1)
    assert [e.loc for e in entries] == ["https://example.com/n"]
    assert any(d.code == "fetch-loop" for d in reader.diagnostics)


def test_a_sitemap_listed_twice_is_read_once(server: LocalServer) -> None:
    server.route("/a.xml", urlset("https://example.com/a"))
    url = server.route("/index.xml", index(server.url("/a.xml"), server.url("/a.xml")))
    entries, reader = run(url)
    assert [e.loc for e in entries] == ["https://example.com/a"]
    assert codes(reader) == ["fetch-loop"]


# -- failures do not stop the walk -----------------------------------------------------------------


def test_404_and_corrupt_gzip_children_are_reported_and_the_walk_continues(server: LocalServer) -> None:
    good = gzip.compress(urlset("https://example.com/ok").encode())
    server.route("/corrupt.xml.gz", good[:20] + b"\x00" * 40 + good[60:])
    server.route("/ok.xml.gz", good)
    url = server.route(
        "/index.xml",
        index(server.url("/missing.xml"), server.url("/corrupt.xml.gz"), server.url("/ok.xml.gz")),
    )
    entries, reader = run(url)
    assert [e.loc for e in entries] == ["https://example.com/ok"]
    by_source = {d.source: d.code for d in reader.diagnostics}
    assert by_source[server.url("/missing.xml")] == "http-error"
    assert by_source[server.url("/corrupt.xml.gz")] == "compression-error"
    missing = reader.sitemaps[1]
    assert (missing.status, missing.error, missing.kind) == (404, "HTTP 404", None)
    assert reader.any_read


def test_429_with_retry_after_then_200(server: LocalServer) -> None:
    sleeps = Sleeps()
    server.handle(
        "/a.xml",
        sequence((429, {"Retry-After": "5"}, b""), (200, {}, urlset("https://example.com/a").encode())),
    )
    url = server.route("/index.xml", index(server.url("/a.xml")))
    entries, reader = run(url, fetch_options=fast(sleeps))
    assert [e.loc for e in entries] == ["https://example.com/a"]
    assert sleeps.delays == [5.0] and not reader.diagnostics


def test_503_then_200(server: LocalServer) -> None:
    sleeps = Sleeps()
    url = server.handle(
        "/s.xml", sequence((503, {}, b""), (200, {}, urlset("https://example.com/a").encode()))
    )
    entries, _ = run(url, fetch_options=fast(sleeps))
    assert [e.loc for e in entries] == ["https://example.com/a"] and len(sleeps.delays) == 1


def test_timeout_child_is_reported_and_the_walk_continues(server: LocalServer) -> None:
    # the timeout holds for every request: 2 s, so that the index and /fast.xml (answered in milliseconds)
    # are never near it on a busy machine, and /slow.xml answers only after a minute, never near it either
    server.route("/slow.xml", urlset("https://example.com/slow"), delay=60.0)
    server.route("/fast.xml", urlset("https://example.com/fast"))
    url = server.route("/index.xml", index(server.url("/slow.xml"), server.url("/fast.xml")))
    entries, reader = run(url, timeout=2.0, retries=0)
    assert [e.loc for e in entries] == ["https://example.com/fast"]
    (d,) = reader.diagnostics
    assert (d.code, d.source) == ("http-error", server.url("/slow.xml")) and "timed out" in d.message


def test_unreachable_root_means_nothing_read(server: LocalServer) -> None:
    entries, reader = run(server.url("/nothing.xml"))
    assert entries == [] and not reader.any_read
    assert codes(reader) == ["http-error"]


# -- discovery -------------------------------------------------------------------------------------


def test_site_root_discovers_sitemaps_through_robots(server: LocalServer) -> None:
    server.route(
        "/robots.txt",
        b"\xef\xbb\xbfUser-agent: *\r\nDisallow: /x\r\nsitemap: /sm/a.xml\r\nSITEMAP: "
        + server.url("/sm/b.xml").encode()
        + b"\r\n",
        content_type="text/plain",
    )
    server.route("/sm/a.xml", urlset("https://example.com/a"))
    server.route("/sm/b.xml", urlset("https://example.com/b"))
    entries, reader = run(server.url("/"))
    assert [e.loc for e in entries] == ["https://example.com/a", "https://example.com/b"]
    root = reader.tree
    assert root is not None and (root.kind, root.status, root.url) == (
        "robots",
        200,
        server.url("/robots.txt"),
    )
    assert [c.url for c in root.children] == [server.url("/sm/a.xml"), server.url("/sm/b.xml")]


def test_site_root_falls_back_to_well_known_paths(server: LocalServer) -> None:
    server.route("/sitemap_index.xml", index(server.url("/s1.xml")))
    server.route("/s1.xml", urlset("https://example.com/1"))
    entries, reader = run(server.url("/"))
    assert [e.loc for e in entries] == ["https://example.com/1"]
    assert reader.tree is not None and reader.tree.kind == "site"
    assert reader.tree.children[0].url == server.url("/sitemap_index.xml")


def test_site_without_any_sitemap(server: LocalServer) -> None:
    entries, reader = run(server.url("/"))
    assert entries == [] and not reader.any_read
    assert codes(reader) == ["no-sitemap"]


# -- streaming and closing -------------------------------------------------------------------------


def test_breaking_out_early_releases_everything(server: LocalServer) -> None:
    children = [server.route(f"/c{i}.xml", urlset(*pages(str(i), 200))) for i in range(6)]
    url = server.route("/index.xml", index(*children))
    with read(url, fetch_options=fast()) as reader:
        first = [e.loc for _, e in zip(range(10), reader, strict=False)]
    assert first == pages("0", 10)


def test_local_index_with_http_children(server: LocalServer, tmp_path: Path) -> None:
    server.route("/a.xml", urlset("https://example.com/a"))
    f = tmp_path / "index.xml"
    f.write_text(index(server.url("/a.xml")))
    entries, reader = run(str(f))  # not next to the index, and not fetched unless asked
    assert entries == [] and [d.code for d in reader.diagnostics] == ["read-error"]
    assert "--fetch-missing" in next(iter(reader.diagnostics)).message
    # fetched when asked; a local file names no origin, so a loopback address also needs allow_private
    entries, reader = run(str(f), fetch_missing=True)
    assert entries == [] and codes(reader) == ["private-address"]
    assert server.requests == []
    entries, reader = run(str(f), fetch_missing=True, allow_private=True)
    assert [e.loc for e in entries] == ["https://example.com/a"]
    assert reader.tree is not None and reader.tree.url == str(f)


def test_aread_walks_a_tree(server: LocalServer) -> None:
    server.route("/a.xml", urlset("https://example.com/a"))
    server.route("/b.xml", urlset("https://example.com/b"))
    url = server.route("/index.xml", index(server.url("/a.xml"), server.url("/b.xml")))

    async def collect() -> tuple[list[str], int]:
        async with aread(url, fetch_options=fast()) as reader:
            found = [e.loc async for e in reader]
            return found, len(reader.sitemaps)

    assert asyncio.run(collect()) == (["https://example.com/a", "https://example.com/b"], 3)


def test_retries_exhausted_names_the_status_and_attempts(server: LocalServer) -> None:
    sleeps = Sleeps()
    url = server.handle("/s.xml", sequence((503, {}, b"busy")))
    entries, reader = run(url, retries=2, fetch_options=fast(sleeps))
    assert entries == [] and len(sleeps.delays) == 2
    (d,) = reader.diagnostics
    assert (d.code, d.message) == ("http-error", "HTTP 503 Service Unavailable (after 3 attempts)")


def test_under_a_crawl_delay_the_sitemap_whose_turn_it_is_is_asked_for_first(server: LocalServer) -> None:
    # the downloads fetched ahead queue behind the one the walk reads next: with a Crawl-delay, each is
    # asked for in index order, so none is waited for behind later ones. Real time: the pacer spaces the
    # requests 0.25 s apart, so the server's log shows the order they were let go in
    server.route("/robots.txt", "User-agent: *\nCrawl-delay: 0.25\n", content_type="text/plain")
    children = [f"/s{i}.xml" for i in range(4)]
    for i, path in enumerate(children):
        server.route(path, urlset(f"https://example.com/{i}"))
    url = server.route("/index.xml", index(*(server.url(p) for p in children)))
    options = FetchOptions(politeness=Politeness())  # robots.txt consulted (no origin exempt)
    entries, _ = run(url, concurrency=4, fetch_options=options)
    assert [e.loc for e in entries] == [f"https://example.com/{i}" for i in range(4)]
    assert [r.path for r in server.requests] == ["/robots.txt", "/index.xml", *children]
    assert_paced([r.at for r in server.requests], 0.25)
