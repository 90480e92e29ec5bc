"""Crawler traps against real loopback sites: each must stop by itself within a few hundred pages, with the
reason in the crawl log, and a normal site must be unaffected. Each site would run on without the guards
(the tests give a `max_pages` far above what a guarded crawl fetches, so the old code fails them)."""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from sitemapkit.core.urls import Scope
from sitemapkit.crawl.frontier import Row
from sitemapkit.crawl.policy import CrawlRules, path_problem, url_pattern
from sitemapkit.crawl.run import crawl
from sitemapkit.reader.parser import parse_file
from tests.support.localserver import LocalServer, Route

HTML = "text/html; charset=utf-8"
CEILING = 3000
"""The `max_pages` given to each trap: far above what a guarded crawl fetches."""

Handler = Callable[[BaseHTTPRequestHandler], tuple[int, dict[str, str], bytes]]


def page(body: str = "", head: str = "") -> bytes:
    return f"<!doctype html><html><head><title>t</title>{head}</head><body>{body}</body></html>".encode()


def links(*paths: str) -> str:
    """Links whose text does not repeat their target (as a session id is carried by the href alone)."""
    return " ".join(f'<a href="{p}">a link</a>' for p in paths)


def serve_prefixes(server: LocalServer, handlers: dict[str, Handler]) -> None:
    """Serve every path under each prefix with its handler."""

    class Routes(dict[str, Any]):
        def get(self, path: str, default: Any = None) -> Any:
            for prefix, handler in handlers.items():
                if path.startswith(prefix):
                    return Route(handler=handler)
            return super().get(path, default)

    server.routes = Routes(server.routes)


def token(rng: random.Random, n: int = 10) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(n))


def run(
    server: LocalServer, tmp_path: Path, **kwargs: Any
) -> tuple[set[str], dict[str, Row], list[dict[str, Any]]]:
    """Crawl the server's root: (listed URLs, rows left out by URL, the crawl log's records)."""
    left: dict[str, Row] = {}
    log = tmp_path / "crawl.jsonl"
    kwargs.setdefault("sitemaps", False)
    kwargs.setdefault("max_pages", CEILING)
    crawl(
        server.url("/"),
        tmp_path / "out",
        explain=lambda r: left.__setitem__(r.url, r),
        crawl_log=log,
        **kwargs,
    )
    listed = {e.loc for e in parse_file(tmp_path / "out" / "sitemap.xml")}
    records = [json.loads(line) for line in log.read_text().splitlines()]
    return listed, left, records


def fetched(server: LocalServer, prefix: str) -> int:
    return len([r for r in server.requests if r.path.startswith(prefix)])


def test_session_ids_of_letters_in_the_path(server: LocalServer, tmp_path: Path) -> None:
    """Every page links to the site's three pages under a new session id of random lowercase letters (the
    reproduction: 5,076 pages in 120 s and growing)."""
    rng = random.Random(7)

    def session(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        name = h.path.rsplit("/", 1)[1]
        sid = token(rng)
        return (
            200,
            {"Content-Type": HTML},
            page(f"<h1>{name}</h1>" + links(*(f"/s/{sid}/p{k}" for k in range(3)))),
        )

    serve_prefixes(server, {"/s/": session})
    server.route("/", page("home" + links("/s/abcdefghij/p0")), content_type=HTML)
    listed, left, records = run(server, tmp_path)
    n = fetched(server, "/s/")
    assert n < 300, n  # stopped by itself (measured: 7)
    # the three real pages are listed once each; the copies under other session ids are duplicates
    assert len([u for u in listed if "/s/" in u]) == 3
    dups = [r for r in left.values() if r.reason == "duplicate"]
    assert dups and all("the same content as" in (r.detail or "") for r in dups)
    assert {r["reason"] for r in records if r["reason"]} >= {"duplicate"}


def test_session_ids_fold_into_the_trap_pattern() -> None:
    assert url_pattern("http://h/s/QhXkZmVbTw/about") == url_pattern("http://h/s/PwRtYuIoPq/about")
    assert url_pattern("http://h/s/qxzvbkwmtr/about") == "/s/X/about"
    assert url_pattern("http://h/p/a1b2c3d4e5") == "/p/X"
    assert url_pattern("http://h/blog/introduction") == "/blog/introduction"  # a word stays


def test_random_meta_refresh_chain(server: LocalServer, tmp_path: Path) -> None:
    """Each page refreshes to a new random URL, and says so in its text (no two pages alike): the reproduction
    fetched 4,167 pages in 100 s."""
    rng = random.Random(11)

    def hop(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        nxt = f"/go-{token(rng, 6)}-{token(rng, 6)}"  # letters that read as words to the pattern, mostly
        nxt = nxt if rng.random() < 0.5 else f"/r/{token(rng, 5)}"
        body = page(f"moving on from {h.path}", f'<meta http-equiv="refresh" content="0; url={nxt}">')
        return 200, {"Content-Type": HTML}, body

    serve_prefixes(server, {"/go-": hop, "/r/": hop})
    server.route("/", page("home" + links("/go-start-here")), content_type=HTML)
    _, left, records = run(server, tmp_path, trap_limit=100)
    n = fetched(server, "/go-") + fetched(server, "/r/")
    assert n <= 102, n  # the refresh chain is one run: trap_limit hops (measured: 101)
    traps = [r for r in left.values() if r.reason == "trap" and r.elapsed_ms is None]
    assert len(traps) == 1 and "more than 100 links in a row" in (traps[0].detail or "")
    assert any(r["reason"] == "trap" for r in records)


def test_ever_longer_urls(server: LocalServer, tmp_path: Path) -> None:
    """Each page links to its own URL with one more letter (the reproduction: 2,021 pages up to ~2,026
    characters, all listed in the sitemap)."""

    def grow(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        return 200, {"Content-Type": HTML}, page(f"page {h.path}" + links(h.path + "a"))

    serve_prefixes(server, {"/grow/": grow})
    server.route("/", page("home" + links("/grow/a")), content_type=HTML)
    listed, left, _ = run(server, tmp_path, trap_limit=100)
    n = fetched(server, "/grow/")
    assert n <= 101, n  # measured: 101
    assert [u for u in listed if "/grow/" in u] == []  # the run's pages are not listed either
    unlisted = [r for r in left.values() if r.reason == "trap" and r.elapsed_ms is not None]
    assert len(unlisted) == n


def test_repeated_segments_and_depth(server: LocalServer, tmp_path: Path) -> None:
    """Relative links that resolve deeper every time: `a/` and `b/` from every folder (/a/b/a/b/...), and
    a distinct segment per level (/x1/x2/x3/...): each page has its own text."""

    def rel(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        return 200, {"Content-Type": HTML}, page(f"folder {h.path}" + links("a/", "b/"))

    def deeper(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        level = h.path.count("/")
        return 200, {"Content-Type": HTML}, page(f"level {h.path}" + links(f"y{level}q/"))

    serve_prefixes(server, {"/loop/": rel, "/deep/": deeper})
    server.route("/", page("home" + links("/loop/", "/deep/")), content_type=HTML)
    _, left, _ = run(server, tmp_path)
    n = fetched(server, "/loop/")
    assert n < 100, n  # measured: 19
    repeated = [r for r in left.values() if r.reason == "repeated-path"]
    assert repeated and all("appears 3 times" in (r.detail or "") for r in repeated)
    assert all(r.elapsed_ms is None for r in repeated)  # not fetched
    deep = [r for r in left.values() if r.reason == "too-deep"]
    assert len(deep) == 1 and deep[0].url.count("/") - 3 == 33
    assert fetched(server, "/deep/") == 32


def test_too_long_url_is_not_fetched(server: LocalServer, tmp_path: Path) -> None:
    long_path = "/words/" + "-".join(["segment"] * 300)
    server.route("/", page(links(long_path, "/ok")), content_type=HTML)
    server.route("/ok", page("fine"), content_type=HTML)
    server.route(long_path, page("long"), content_type=HTML)
    listed, left, _ = run(server, tmp_path)
    assert left[server.url(long_path)].reason == "too-long"
    assert fetched(server, "/words/") == 0
    assert listed == {server.url("/"), server.url("/ok")}
    assert path_problem("http://h/" + "a" * 2100) is not None and path_problem("http://h/a") is None


def test_duplicate_content_is_neither_listed_nor_followed(server: LocalServer, tmp_path: Path) -> None:
    server.route("/", page(links("/a", "/copy-of-a")), content_type=HTML)
    server.route("/a", page("the article" + links("/from-a")), content_type=HTML)
    server.route("/from-a", page("linked from a"), content_type=HTML)
    server.route("/copy-of-a", page("the article" + links("/from-copy")), content_type=HTML)
    server.route("/from-copy", page("only the copy links here"), content_type=HTML)
    listed, left, _ = run(server, tmp_path, concurrency=1)
    assert listed == {server.url("/"), server.url("/a"), server.url("/from-a")}
    assert left[server.url("/copy-of-a")].reason == "duplicate"
    assert fetched(server, "/from-copy") == 0


def test_a_normal_site_is_unaffected(server: LocalServer, tmp_path: Path) -> None:
    """A blog: 40 posts with long slugs, 4 pages of archive (/page/N), tags, posts linking to each other and
    to a folder below them; a canonical to itself. Everything is listed, nothing left out."""
    slugs = [f"how-to-write-sitemaps-part-{i}-with-examples" for i in range(40)]
    server.route("/", page("home" + links("/page/2", *(f"/blog/{s}" for s in slugs[:10]))), content_type=HTML)
    for n in range(2, 5):
        nxt = [f"/page/{n + 1}"] if n < 4 else []
        posts = [f"/blog/{s}" for s in slugs[(n - 1) * 10 : n * 10]]
        server.route(f"/page/{n}", page(f"archive {n}" + links(*nxt, *posts)), content_type=HTML)
    for i, s in enumerate(slugs):
        related = [f"/blog/{slugs[(i + 1) % 40]}", f"/blog/{s}/comments", "/tags/sitemaps"]
        canonical = f'<link rel="canonical" href="/blog/{s}">'
        server.route(f"/blog/{s}", page(f"post {i}" + links(*related), canonical), content_type=HTML)
        server.route(f"/blog/{s}/comments", page(f"comments on post {i}"), content_type=HTML)
    server.route("/tags/sitemaps", page("tag sitemaps"), content_type=HTML)
    listed, left, _ = run(server, tmp_path)
    assert left == {}
    assert len(listed) == 1 + 3 + 40 + 40 + 1


def test_chain_rules() -> None:
    rules = CrawlRules(Scope("http://h/"))
    assert rules.chain("http://h/a", "http://h/", 0) == 0  # a folder's child is not a growing URL
    assert rules.chain("http://h/aa", "http://h/a", 4) == 5
    assert rules.chain("http://h/a/b", "http://h/a", 4) == 0
    rules.note_hop("http://h/elsewhere")
    assert rules.chain("http://h/elsewhere", "http://h/r/abc", 7) == 8


def test_script_only_shells_are_not_duplicates(server: LocalServer, tmp_path: Path) -> None:
    """A single-page app crawled without --render serves the same empty shell at every URL (found in its
    sitemap): they show nothing, so they are not copies of each other and stay listed."""
    shell = page("<div id=app></div><script>boot()</script>")
    urls = "".join(f"<url><loc>{server.url(p)}</loc></url>" for p in ("/a", "/b", "/c"))
    server.route(
        "/sitemap.xml", f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
    )
    for p in ("/", "/a", "/b", "/c"):
        server.route(p, shell, content_type=HTML)
    listed, left, _ = run(server, tmp_path, sitemaps=True)
    assert listed == {server.url(p) for p in ("/", "/a", "/b", "/c")} and left == {}


def test_a_page_limit_by_default_and_zero_lifts_it(server: LocalServer, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from sitemapkit import ScopeOptions
    from sitemapkit.cli import main
    from sitemapkit.crawl.policy import DEFAULT_MAX_PAGES

    assert ScopeOptions().max_pages == DEFAULT_MAX_PAGES == 100_000
    help_text = CliRunner().invoke(main, ["crawl", "--help"]).output
    assert "100000" in help_text and "0: no limit" in help_text
    server.route("/", page("home" + links("/a", "/b")), content_type=HTML)
    server.route("/a", page("a"), content_type=HTML)
    server.route("/b", page("b"), content_type=HTML)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main, ["crawl", server.url("/"), "--out", str(out), "--no-sitemaps", "--max-pages", "0"]
    )
    assert result.exit_code == 0, result.output
    assert len(list(parse_file(out / "sitemap.xml"))) == 3
