"""`sitemapkit crawl` against a real site on loopback (an in-process HTTP server): what is listed, what is
left out and why, politeness (robots.txt, Crawl-delay, Retry-After, per-host concurrency), traps, query
strings, lastmod, and a killed crawl resumed without fetching anything again."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sitemapkit.cli import main
from sitemapkit.core.errors import PublishError, UsageError
from sitemapkit.core.urls import Scope
from sitemapkit.crawl.frontier import Row
from sitemapkit.crawl.policy import CrawlRules, url_pattern
from sitemapkit.crawl.run import crawl
from sitemapkit.reader.parser import parse_file
from tests.support.helpers import InFlight, assert_paced
from tests.support.localserver import LocalServer, sequence

HTML = "text/html; charset=utf-8"
REPO = Path(__file__).resolve().parents[2]


def page(body: str = "", head: str = "") -> str:
    return f"<!doctype html><html><head><title>t</title>{head}</head><body>{body}</body></html>"


def links(*paths: str) -> str:
    return " ".join(f'<a href="{p}">{p}</a>' for p in paths)


def listed(out: Path) -> dict[str, Any]:
    """The published URLs: loc -> entry."""
    return {e.loc: e for e in parse_file(out / "sitemap.xml")}


def run(server: LocalServer, tmp_path: Path, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Row], Any]:
    """Crawl the server's root; returns (listed entries, rows left out by URL, the result)."""
    left: dict[str, Row] = {}
    kwargs.setdefault("sitemaps", False)
    result = crawl(server.url("/"), tmp_path / "out", explain=lambda r: left.__setitem__(r.url, r), **kwargs)
    return listed(tmp_path / "out"), left, result


def fetched_paths(server: LocalServer) -> list[str]:
    return [r.path for r in server.requests]


def test_listing_rules(server: LocalServer, tmp_path: Path) -> None:
    server.route(
        "/",
        page(
            links(
                "/meta-noindex",
                "/header-noindex",
                "/dup",
                "/self",
                "/r1",
                "/loop1",
                "/gone",
                "/missing",
                "/broken",
                "/doc.pdf",
                "/refresh",
                "mailto:a@example.com",
                "#top",
                "https://elsewhere.example/",
            )
        ),
        content_type=HTML,
    )
    # noindex by meta: not listed, but its links are followed
    server.route(
        "/meta-noindex",
        page(links("/only-from-noindex"), '<meta name="robots" content="noindex, follow">'),
        content_type=HTML,
    )
    server.route("/only-from-noindex", page("x"), content_type=HTML)
    # noindex by header, for all or for sitemapkit; nofollow stops its links
    server.route(
        "/header-noindex",
        page(links("/never-linked")),
        content_type=HTML,
        headers={"X-Robots-Tag": "sitemapkit: noindex, nofollow"},
    )
    server.route("/never-linked", page("x"), content_type=HTML)
    # canonical elsewhere: the target is listed instead, the duplicate is not
    server.route("/dup", page("d", '<link rel="canonical" href="/canonical-target">'), content_type=HTML)
    server.route("/canonical-target", page("c"), content_type=HTML)
    # canonical to itself (absolute, with a tracking parameter the crawler drops): listed
    server.route(
        "/self",
        page("s", f'<link rel="canonical" href="{server.url("/self")}?utm_source=x">'),
        content_type=HTML,
    )
    # a redirect chain lists the final URL only
    server.redirect("/r1", "/r2", 301)
    server.redirect("/r2", "/final", 302)
    server.route("/final", page("f"), content_type=HTML)
    # a redirect loop
    server.redirect("/loop1", "/loop2")
    server.redirect("/loop2", "/loop1")
    server.route("/gone", "gone", status=410, content_type="text/plain")
    server.route("/broken", "oops", status=500, content_type="text/plain")
    server.route("/doc.pdf", b"%PDF-1.4 ...", content_type="application/pdf")
    server.route(
        "/refresh", page("", '<meta http-equiv="refresh" content="0; url=/final">'), content_type=HTML
    )

    urls, left, result = run(server, tmp_path, retries=0)
    u = server.url
    assert set(urls) == {u("/"), u("/only-from-noindex"), u("/canonical-target"), u("/self"), u("/final")}
    reasons = {url.replace(server.base, ""): row.reason for url, row in left.items()}
    assert reasons == {
        "/meta-noindex": "noindex",
        "/header-noindex": "noindex",
        "/dup": "canonical",
        "/r1": "redirect",
        "/loop1": "redirect",
        "/gone": "status-4xx",
        "/missing": "status-4xx",
        "/broken": "status-5xx",
        "/doc.pdf": "not-html",
        "/refresh": "redirect",
        "https://elsewhere.example/": "out-of-scope",
        # the canonical as written, with its tracking parameter: the same page as /self, recorded as such
        "/self?utm_source=x": "canonical",
    }
    assert "tracking parameters" in (left[u("/self?utm_source=x")].detail or "")
    assert "loop" in (left[u("/loop1")].detail or "")
    assert left[u("/r1")].final_url == u("/final")
    assert "/never-linked" not in fetched_paths(server)
    # no URL is fetched twice in a run (the redirect target /final is linked from / and from /refresh too)
    paths = [p for p in fetched_paths(server) if p != "/loop2"]
    assert len(paths) == len(set(paths))
    crawl_summary = result.sources["crawl"]
    assert crawl_summary["listed"] == 5
    assert crawl_summary["excluded"]["status-4xx"] == 2


def test_links_base_area_hreflang_images(server: LocalServer, tmp_path: Path) -> None:
    head = (
        '<base href="/docs/">'
        '<link rel="alternate" hreflang="en" href="/docs/en">'
        '<link rel="alternate" hreflang="de" href="/docs/de">'
    )
    server.route(
        "/",
        page(
            '<a href="en#section">en</a> <map><area href="area-target" alt="x"></map>'
            '<img src="pic.png"> <img src="https://cdn.elsewhere.example/x.png">',
            head,
        ),
        content_type=HTML,
    )
    alternates = (
        '<link rel="alternate" hreflang="en" href="/docs/en">'
        '<link rel="alternate" hreflang="de" href="/docs/de">'
    )
    server.route("/docs/en", page("en", alternates), content_type=HTML)
    server.route(
        "/docs/de", page("de", '<link rel="alternate" hreflang="en" href="/docs/en">'), content_type=HTML
    )
    server.route("/docs/area-target", page("a"), content_type=HTML)
    urls, _, _ = run(server, tmp_path, images=True)
    u = server.url
    assert set(urls) == {u("/"), u("/docs/en"), u("/docs/de"), u("/docs/area-target")}
    assert [i.loc for i in urls[u("/")].images] == [u("/docs/pic.png")]  # in scope only
    # the hreflang group is completed: /docs/de lists itself and /docs/en although its page named only en
    assert {(a.hreflang, a.href) for a in urls[u("/docs/de")].alternates} == {
        ("en", u("/docs/en")),
        ("de", u("/docs/de")),
    }


def test_query_strings(server: LocalServer, tmp_path: Path) -> None:
    server.route(
        "/",
        page(links("/p?id=1&utm_source=news", "/p?id=1", "/p?id=1&sort=asc", "/p?sessionid=abc&id=2")),
        content_type=HTML,
    )
    server.handle("/p", lambda h: (200, {"Content-Type": HTML}, page("p").encode()))
    # LocalServer routes by the whole path, query included: serve each form
    for q in ("?id=1", "?id=1&sort=asc", "?sessionid=abc&id=2", "?id=2", ""):
        server.route("/p" + q, page("p" + q), content_type=HTML)  # each its own content (not a duplicate)
    urls, _, _ = run(server, tmp_path)
    assert {x.replace(server.base, "") for x in urls} == {
        "/",
        "/p?id=1",
        "/p?id=1&sort=asc",
        "/p?sessionid=abc&id=2",
    }
    (tmp_path / "out").rename(tmp_path / "first")
    server.requests.clear()
    urls, _, _ = run(server, tmp_path, keep_query=("id",))
    assert {x.replace(server.base, "") for x in urls} == {"/", "/p?id=1", "/p?id=2"}
    (tmp_path / "out").rename(tmp_path / "second")
    urls, _, _ = run(server, tmp_path, strip_query=True)
    assert {x.replace(server.base, "") for x in urls} == {"/", "/p"}


def test_calendar_trap_is_stopped_and_reported(server: LocalServer, tmp_path: Path) -> None:
    def month(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        year, mon = (int(x) for x in h.path.split("/")[2:4])
        nxt = (year + mon // 12, mon % 12 + 1)
        prev = (year - (mon == 1), (mon - 2) % 12 + 1)
        body = page(links(f"/calendar/{nxt[0]}/{nxt[1]}", f"/calendar/{prev[0]}/{prev[1]}"))
        return 200, {"Content-Type": HTML}, body.encode()

    class Routes(dict[str, Any]):
        def get(self, path: str, default: Any = None) -> Any:
            if path.startswith("/calendar/"):
                from tests.support.localserver import Route

                return Route(handler=month)
            return super().get(path, default)

    server.routes = Routes(server.routes)
    server.route("/", page(links("/calendar/2024/6")), content_type=HTML)
    urls, left, result = run(server, tmp_path, trap_limit=5)
    refused = [r for r in left.values() if r.reason == "trap" and r.elapsed_ms is None]
    assert len(refused) == 2  # one each way
    assert all("/calendar/N/N" in (r.detail or "") for r in refused)
    # 2024/6, then five more each way: 11 months fetched, and nothing past them
    assert len([p for p in fetched_paths(server) if p.startswith("/calendar/")]) == 11
    # the months of the run that became a trap are not listed either (the audit would flag them)
    assert set(urls) == {server.url("/")}
    unlisted = [r for r in left.values() if r.reason == "trap" and r.elapsed_ms is not None]
    assert len(unlisted) == 11 and all("trap guard stopped" in (r.detail or "") for r in unlisted)
    assert result.sources["crawl"]["excluded"] == {"trap": 13}


def test_robots_disallow_and_crawl_delay(server: LocalServer, tmp_path: Path) -> None:
    server.route(
        "/robots.txt",
        "User-agent: *\nDisallow: /\n\nUser-agent: sitemapkit\nDisallow: /private/\nCrawl-delay: 0.3\n",
        content_type="text/plain",
    )
    server.route("/", page(links("/a", "/b", "/private/x", "/c")), content_type=HTML)
    for p in ("/a", "/b", "/c"):
        server.route(p, page(p), content_type=HTML)
    urls, left, _ = run(server, tmp_path, concurrency=2)
    assert len(urls) == 4
    assert left[server.url("/private/x")].reason == "robots"
    assert "/private/x" not in fetched_paths(server)
    # Crawl-delay 0.3 between requests, despite concurrency 2, read from the server's log
    pages = [r.at for r in server.requests if r.path != "/robots.txt"]
    assert len(pages) == 4
    assert_paced(pages, 0.3)


def test_retry_after_is_honoured(server: LocalServer, tmp_path: Path) -> None:
    server.route("/", page(links("/busy")), content_type=HTML)
    server.handle(
        "/busy",
        sequence(
            (429, {"Retry-After": "1", "Content-Type": "text/plain"}, b"slow down"),
            (200, {"Content-Type": HTML}, page("ok").encode()),
        ),
    )
    urls, _, _ = run(server, tmp_path)
    assert server.url("/busy") in urls
    busy = [r.at for r in server.requests if r.path == "/busy"]
    # Retry-After: 1 from the 429's arrival, which the server noted the first request before it sent: a busy
    # machine only makes the gap longer (0.1 s allowed for the two clocks' reads)
    assert len(busy) == 2 and busy[1] - busy[0] >= 0.9


def test_per_host_concurrency(server: LocalServer, tmp_path: Path) -> None:
    flight = InFlight(3, 12, lambda h: (200, {"Content-Type": HTML}, page(h.path).encode()))
    server.route("/", page(links(*(f"/s{i}" for i in range(12)))), content_type=HTML)
    for i in range(12):
        server.handle(f"/s{i}", flight)
    urls, _, _ = run(server, tmp_path, concurrency=3)
    assert len(urls) == 13
    assert flight.peak == 3  # held until three were in flight: never fewer, and never more


def test_old_sitemap_seeds_and_max_pages_depth(server: LocalServer, tmp_path: Path) -> None:
    sitemap = (
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{server.url('/orphan')}</loc></url></urlset>"
    )
    server.route("/robots.txt", f"Sitemap: {server.url('/old-sitemap.xml')}\n", content_type="text/plain")
    server.route("/old-sitemap.xml", sitemap)
    server.route("/", page(links("/d1")), content_type=HTML)
    server.route("/d1", page(links("/d2")), content_type=HTML)
    server.route("/d2", page(links("/d3")), content_type=HTML)
    server.route("/d3", page(""), content_type=HTML)
    server.route("/orphan", page("only the old sitemap knows me"), content_type=HTML)
    urls, left, _ = run(server, tmp_path, sitemaps=True, max_depth=2)
    u = server.url
    assert set(urls) == {u("/"), u("/d1"), u("/d2"), u("/orphan")}
    assert left[u("/d3")].reason == "max-depth"
    (tmp_path / "out").rename(tmp_path / "first")
    urls, left, _ = run(server, tmp_path, sitemaps=False, max_pages=2)
    assert set(urls) == {u("/"), u("/d1")}
    assert left[u("/d2")].reason == "max-pages"


def test_lastmod_is_honest(server: LocalServer, tmp_path: Path) -> None:
    server.route(
        "/",
        page(links("/ld", "/og", "/header", "/none"), '<meta property="article:modified_time" content="x">'),
        content_type=HTML,
    )
    ld = (
        '<script type="application/ld+json">'
        '{"@type": "Article", "dateModified": "2024-03-04T05:06:07Z"}</script>'
    )
    server.route(
        "/ld", page("ld", ld), content_type=HTML, headers={"Last-Modified": "Wed, 01 Jan 2020 00:00:00 GMT"}
    )
    og = '<meta property="article:modified_time" content="2023-02-01T10:00:00+02:00">'
    server.route("/og", page("og", og), content_type=HTML)
    server.route(
        "/header", page("h"), content_type=HTML, headers={"Last-Modified": "Wed, 01 Jan 2020 00:00:00 GMT"}
    )
    server.route("/none", page("n"), content_type=HTML, headers={"Date": "Wed, 01 Jan 2025 00:00:00 GMT"})
    urls, _, _ = run(server, tmp_path)
    got = {k.replace(server.base, ""): v.lastmod and v.lastmod.isoformat() for k, v in urls.items()}
    assert got == {
        "/": None,  # an unusable date is no date; the crawl time is never used
        "/ld": "2024-03-04T05:06:07+00:00",
        "/og": "2023-02-01T10:00:00+02:00",
        "/header": "2020-01-01T00:00:00+00:00",
        "/none": None,
    }


def test_state_lastmod_moves_only_when_content_changes(server: LocalServer, tmp_path: Path) -> None:
    body = {"text": "first"}
    server.route("/", page(links("/a")), content_type=HTML)
    server.handle(
        "/a",
        lambda h: (
            200,
            {"Content-Type": HTML},
            page(body["text"], f'<script>var built = "{time.time()}";</script>').encode(),
        ),
    )
    state = tmp_path / "state.db"
    urls, _, _ = run(server, tmp_path, state=state)
    # a first crawl with no history invents nothing: the page says no date, the server sends none
    assert urls[server.url("/a")].lastmod is None
    time.sleep(1.1)  # lastmod has whole seconds: make "now" differ
    urls, _, result = run(server, tmp_path, state=state)
    assert urls[server.url("/a")].lastmod is None  # only the volatile script changed
    assert result.sources["state"]["unchanged"] == 2
    body["text"] = "second"
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    urls, _, _ = run(server, tmp_path, state=state)
    changed = urls[server.url("/a")].lastmod
    assert isinstance(changed, dt.datetime) and changed >= before  # the run that saw the change
    time.sleep(1.1)
    urls, _, _ = run(server, tmp_path, state=state)
    assert urls[server.url("/a")].lastmod == changed  # and it stays there while nothing changes


def test_cli_summary_explain_and_crawl_log(server: LocalServer, tmp_path: Path) -> None:
    server.route("/", page(links("/a", "/missing")), content_type=HTML)
    server.route("/a", page("a"), content_type=HTML)
    log = tmp_path / "crawl.jsonl"
    result = CliRunner().invoke(
        main,
        [
            "crawl",
            server.url("/"),
            "--out",
            str(tmp_path / "out"),
            "--no-sitemaps",
            "--explain",
            "--crawl-log",
            str(log),
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"{server.url('/missing')}: left out, status-4xx (answered 404)" in result.output
    assert "crawl: 3 fetched, 2 listed; left out: 1 status-4xx" in result.output
    records = [json.loads(line) for line in log.read_text().splitlines()]
    # written as each URL is decided: the start page first, then its links in the order they were decided
    assert records[0]["url"] == server.url("/")
    assert sorted(r["url"] for r in records) == [server.url("/"), server.url("/a"), server.url("/missing")]
    records.sort(key=lambda r: r["url"])
    assert set(records[0]) == {
        "url", "depth", "status", "final_url", "content_type", "reason", "detail", "lastmod", "canonical",
        "elapsed_ms", "found_on",
    }  # fmt: skip
    assert records[2]["found_on"] == server.url("/") and records[2]["status"] == 404
    as_json = CliRunner().invoke(
        main, ["crawl", server.url("/"), "--out", str(tmp_path / "out2"), "--no-sitemaps", "--json"]
    )
    assert json.loads(as_json.output)["sources"]["crawl"]["listed"] == 2


def test_bad_start_url_and_resume_without_crawl(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["crawl", "ftp://example.com/", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "is not http or https" in result.output
    result = CliRunner().invoke(
        main, ["crawl", "http://127.0.0.1:9/", "--out", str(tmp_path / "o"), "--resume"]
    )
    assert result.exit_code == 2 and "no crawl to resume" in result.output
    with pytest.raises(UsageError):
        crawl("http://127.0.0.1:9/", tmp_path / "o", concurrency=0)


def test_kill_and_resume_refetches_nothing(server: LocalServer, tmp_path: Path) -> None:
    release = threading.Event()

    def slow(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        release.wait(30)
        return 200, {"Content-Type": HTML}, page("slow").encode()

    server.route("/", page(links("/a", "/b", "/c", "/slow", "/d")), content_type=HTML)
    for p in ("/a", "/b", "/c", "/d"):
        server.route(p, page(p + links("/e")), content_type=HTML)
    server.route("/e", page("e"), content_type=HTML)
    server.handle("/slow", slow)
    db = tmp_path / "crawl.db"
    args = [sys.executable, "-m", "sitemapkit", "crawl", server.url("/"), "--out", str(tmp_path / "out")]
    args += ["--crawl-db", str(db), "--concurrency", "1"]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while "/slow" not in fetched_paths(server) or _done(db) < 4:  # /, /a, /b, /c decided and committed
            assert time.monotonic() < deadline, "the crawl did not reach /slow"
            time.sleep(0.02)
    finally:
        proc.kill()
        proc.wait()
    assert not (tmp_path / "out").exists()  # nothing published
    first = fetched_paths(server)
    server.requests.clear()
    release.set()
    result = CliRunner().invoke(
        main, ["crawl", server.url("/"), "--out", str(tmp_path / "out"), "--crawl-db", str(db), "--resume"]
    )
    assert result.exit_code == 0, result.output
    again = fetched_paths(server)
    assert "/slow" in again  # it was in flight when the crawl was killed
    assert not set(again) & (set(first) - {"/slow"}), (first, again)
    assert len(listed(tmp_path / "out")) == 7


def _done(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as conn:
            return int(conn.execute("SELECT count(*) FROM urls WHERE state = 1").fetchone()[0])
    except sqlite3.Error:
        return 0


def test_rules_units() -> None:
    rules = CrawlRules(Scope("https://example.com/blog/"), exclude=("/blog/tag/*",), max_depth=3)
    assert rules.judge("https://example.com/about", 1, 0) == (
        "out-of-scope",
        "not under the sitemap's folder https://example.com/blog/",
    )
    assert rules.judge("https://example.com/blog/tag/x", 1, 0) == (
        "out-of-scope",
        "matches --exclude /blog/tag/*",
    )
    assert rules.judge("https://example.com/blog/a", 4, 0)[0] == "max-depth"  # type: ignore[index]
    assert rules.judge("https://example.com/blog/a", 3, 0) is None
    assert rules.clean("https://example.com/?b=1&utm_medium=x&gclid=2&a=3") == "https://example.com/?b=1&a=3"
    assert url_pattern("https://example.com/cal/2024/06?view=month&day=3") == "/cal/N/N?day&view"


def test_crawl_source_in_sitemapkit_toml(server: LocalServer, tmp_path: Path) -> None:
    server.route("/", page(links("/a", "/hidden")), content_type=HTML)
    server.route("/a", page("a"), content_type=HTML)
    server.route("/hidden", page("h", '<meta name="robots" content="noindex">'), content_type=HTML)
    (tmp_path / "extra.txt").write_text(server.url("/from-list") + "\n")
    config = tmp_path / "sitemapkit.toml"
    config.write_text(
        f'base_url = "{server.url("/")}"\n'
        "state = false\n"
        '[output]\ndir = "out"\n'
        f'[[source]]\ntype = "crawl"\nurl = "{server.url("/")}"\nsitemaps = false\nconcurrency = 1\n'
        '[[source]]\ntype = "list"\npath = "extra.txt"\n'
    )
    result = CliRunner().invoke(main, ["build", str(config), "--explain"])
    assert result.exit_code == 0, result.output
    assert set(listed(tmp_path / "out")) == {server.url(p) for p in ("/", "/a", "/from-list")}
    assert f"{server.url('/hidden')}: left out, noindex" in result.output
    assert "crawl: 3 fetched, 2 listed; left out: 1 noindex" in result.output
    config.write_text(config.read_text().replace("concurrency = 1", "concurency = 1"))
    result = CliRunner().invoke(main, ["build", str(config)])
    assert result.exit_code == 1 and "concurency" in result.output


def test_docs_document_every_crawl_key_and_reason() -> None:
    from sitemapkit.crawl.policy import REASONS
    from sitemapkit.generator.config import _SOURCE_KEYS

    text = (REPO / "docs" / "commands" / "build.md").read_text("utf-8")
    block = text[text.index('type = "crawl"') :].split("\n\n", 1)[0]
    comments = " ".join(re.findall(r"^# (.*)$", block, re.M))
    named = set(re.findall(r"^(\w+) =", block, re.M)) | set(re.findall(r"\w+", comments))
    assert set(_SOURCE_KEYS["crawl"]) <= named | {"type"}
    section = (REPO / "docs" / "commands" / "crawl.md").read_text("utf-8")
    assert [r for r in REASONS if f"| `{r}` |" not in section] == []


@pytest.mark.parametrize("partial", [False, True])
def test_interrupt_publishes_nothing_unless_publish_partial(
    server: LocalServer, tmp_path: Path, partial: bool
) -> None:
    release = threading.Event()

    def slow(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        release.wait(30)
        return 200, {"Content-Type": HTML}, page("slow").encode()

    server.route("/", page(links("/a", "/slow", "/b")), content_type=HTML)
    server.route("/a", page("a"), content_type=HTML)
    server.route("/b", page("b"), content_type=HTML)
    server.handle("/slow", slow)
    args = [sys.executable, "-m", "sitemapkit", "crawl", server.url("/"), "--out", str(tmp_path / "out")]
    args += ["--concurrency", "1", "--no-sitemaps"] + (["--publish-partial"] if partial else [])
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while "/slow" not in fetched_paths(server):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
    if partial:
        assert proc.returncode == 0, err
        assert set(listed(tmp_path / "out")) == {server.url("/"), server.url("/a")}
        assert "interrupted: 2 still queued" in out
    else:
        assert proc.returncode == 130 and "continue with --resume" in err
        assert not (tmp_path / "out").exists()


def test_robots_txt_5xx_means_nothing_is_crawled(server: LocalServer, tmp_path: Path) -> None:
    server.route("/robots.txt", "down", status=503, content_type="text/plain")
    server.route("/", page(links("/a")), content_type=HTML)
    diagnostics: list[str] = []
    with pytest.raises(PublishError):  # no URL to publish
        crawl(
            server.url("/"),
            tmp_path / "out",
            sitemaps=False,
            on_diagnostic=lambda d: diagnostics.append(str(d)),
        )
    # robots.txt is asked again on a 5xx, like any request (--retries, 2), and then nothing else is
    assert fetched_paths(server) == ["/robots.txt"] * 3
    assert any("answered 503" in d for d in diagnostics)


def test_rate_limit_spaces_requests(server: LocalServer, tmp_path: Path) -> None:
    server.route("/", page(links("/a", "/b", "/c")), content_type=HTML)
    for p in ("/a", "/b", "/c"):
        server.route(p, page(p), content_type=HTML)
    urls, _, _ = run(server, tmp_path, rate=5, concurrency=2)
    assert len(urls) == 4
    assert_paced([r.at for r in server.requests if r.path != "/robots.txt"], 0.2)  # 5 a second


def test_a_queued_url_reached_by_a_redirect_first_is_fetched_once(
    server: LocalServer, tmp_path: Path
) -> None:
    # / links to /old (redirecting to /new) and to /new: both queued before either is fetched
    server.route("/", page(links("/old", "/new")), content_type=HTML)
    server.redirect("/old", "/new")
    server.route("/new", page("new"), content_type=HTML)
    urls, left, _ = run(server, tmp_path, concurrency=1)
    assert set(urls) == {server.url("/"), server.url("/new")}
    assert left[server.url("/old")].reason == "redirect"
    assert fetched_paths(server).count("/new") == 1


def test_resume_refuses_another_crawls_file_and_republishes_a_finished_one(
    server: LocalServer, tmp_path: Path
) -> None:
    server.route("/", page(links("/a")), content_type=HTML)
    server.route("/a", page("a"), content_type=HTML)
    db = tmp_path / "c.db"
    crawl(server.url("/"), tmp_path / "out", sitemaps=False, crawl_db=db)
    with pytest.raises(UsageError, match="belongs to another crawl"):
        crawl(server.url("/a/"), tmp_path / "out", sitemaps=False, crawl_db=db, resume=True)
    server.requests.clear()
    (tmp_path / "out" / "sitemap.xml").unlink()
    crawl(server.url("/"), tmp_path / "out", sitemaps=False, crawl_db=db, resume=True)
    assert server.requests == []  # a finished crawl: published again, nothing fetched
    assert len(listed(tmp_path / "out")) == 2


def test_progress_line_on_a_terminal(
    server: LocalServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sitemapkit.cli.crawl import _progress_line

    server.route("/", page(links("/a")), content_type=HTML)
    server.route("/a", page("a"), content_type=HTML)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    with _progress_line() as update:
        assert update is not None
        crawl(server.url("/"), tmp_path / "out", sitemaps=False, on_progress=update)
    err = capsys.readouterr().err
    assert "fetched 2  queued 0  listed 2  left out 0  errors 0" in err
    assert err.endswith("\r\x1b[K")  # the line is cleared at the end


def test_redirect_out_of_scope(server: LocalServer, tmp_path: Path) -> None:
    other = LocalServer().start()
    try:
        other.route("/landing", page("elsewhere"), content_type=HTML)
        server.route("/", page(links("/ext")), content_type=HTML)
        server.redirect("/ext", other.url("/landing"), 302)
        # another loopback origin than the one named: the fetch policy refuses the hop, nothing is sent there
        urls, left, _ = run(server, tmp_path)
        assert set(urls) == {server.url("/")}
        assert left[server.url("/ext")].reason == "redirect"
        assert other.url("/landing") in left[server.url("/ext")].detail
        assert other.requests == []
        # allowed: the hop is followed, and its target recorded as out of scope, never crawled further
        urls, left, _ = run(server, tmp_path, allow_private=True, crawl_db=tmp_path / "second.db")
        assert set(urls) == {server.url("/")}
        assert left[server.url("/ext")].reason == "redirect"
        assert left[other.url("/landing")].reason == "out-of-scope"
        assert "/robots.txt" not in [r.path for r in other.requests]
    finally:
        other.stop()


SPA = page(
    "<div id=app></div><script>document.getElementById('app').innerHTML = "
    "'<a href=\"/from-js\">js</a>';</script>"
)


def test_render_runs_javascript(server: LocalServer, tmp_path: Path) -> None:
    pytest.importorskip("playwright")
    from sitemapkit.crawl.render import find_chromium

    if find_chromium() is None:
        pytest.skip("no Chromium installed")
    server.route("/", SPA, content_type=HTML)
    noindex_by_js = (
        "<script>const m = document.createElement('meta'); m.name = 'robots'; m.content = 'noindex';"
        "document.head.appendChild(m);</script>"
    )
    server.route("/from-js", page("rendered", noindex_by_js), content_type=HTML)
    urls, _, _ = run(server, tmp_path)
    assert set(urls) == {server.url("/")}  # without rendering, the link does not exist
    (tmp_path / "out").rename(tmp_path / "plain")
    server.requests.clear()
    urls, left, _ = run(server, tmp_path, render=True)
    assert set(urls) == {server.url("/")}
    assert left[server.url("/from-js")].reason == "noindex"  # found in the rendered DOM; noindex set by JS
    assert fetched_paths(server).count("/") == 1  # the browser was handed the page, not fetching it again


def test_render_without_chromium_is_a_usage_error(
    server: LocalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("playwright")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("SITEMAPKIT_CHROMIUM", raising=False)
    server.route("/", page(), content_type=HTML)
    result = CliRunner().invoke(
        main, ["crawl", server.url("/"), "--out", str(tmp_path / "out"), "--render", "--no-sitemaps"]
    )
    assert result.exit_code == 2 and "--render needs Chromium" in result.output
    assert server.requests == []


def test_crawl_log_in_a_missing_folder_fails_before_crawling(server: LocalServer, tmp_path: Path) -> None:
    log = tmp_path / "no" / "log.jsonl"
    result = CliRunner().invoke(
        main, ["crawl", server.url("/"), "--out", str(tmp_path / "out"), "--crawl-log", str(log)]
    )
    assert result.exit_code == 2 and "does not exist" in result.output
    assert server.requests == []


def test_bad_base_url_fails_before_crawling(server: LocalServer, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["crawl", server.url("/"), "--out", str(tmp_path / "out"), "--base-url", "ftp://x/"]
    )
    assert result.exit_code == 2 and "--base-url" in result.output
    assert server.requests == []


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        ('<script type="application/ld+json">{"dateModified": "2024-05-06"}</script>', "2024-05-06"),
        (
            '<script type="application/ld+json">{"@graph": [{"@type": "WebSite"}, '
            '{"@type": "Article", "dateModified": "2024-05-06T07:08:09"}]}</script>',
            "2024-05-06T07:08:09+00:00",  # no timezone: UTC
        ),
        (
            '<script type="application/ld+json">'
            '[{"x": 1}, {"dateModified": "2023-01-02T03:04:05+02:00"}]</script>',
            "2023-01-02T03:04:05+02:00",
        ),
        (  # broken JSON-LD and a bad date are skipped, then the meta tag
            '<script type="application/ld+json">{oops</script>'
            '<script type="application/ld+json">{"dateModified": "last tuesday"}</script>'
            '<meta property="article:modified_time" content="2022-02-03">',
            "2022-02-03",
        ),
        ('<meta property="article:published_time" content="2022-02-03">', None),
    ],
)
def test_page_lastmod(head: str, expected: str | None) -> None:
    from sitemapkit.core.page import parse_html, read_head

    root, _ = parse_html(page("x", head).encode())
    assert read_head(root).modified == expected


def test_a_new_crawl_never_overwrites_a_file_that_is_not_a_crawl_file(
    server: LocalServer, tmp_path: Path
) -> None:
    precious = tmp_path / "state.db"
    precious.write_bytes(b"not a crawl file")
    result = CliRunner().invoke(
        main, ["crawl", server.url("/"), "--out", str(tmp_path / "out"), "--crawl-db", str(precious)]
    )
    assert result.exit_code == 1 and "not a sitemapkit crawl file" in result.output
    assert precious.read_bytes() == b"not a crawl file"


def test_the_one_retry_loop_retries_what_may_pass_and_not_a_refused_hop(server: LocalServer) -> None:
    """The one retry loop (the fetcher's, that the crawler and the audit's page checks go through): a 503
    is tried again after its Retry-After; a redirect to a host the fetch policy refuses is final at once
    (not retried)."""
    import asyncio

    from sitemapkit.reader.fetch import Fetcher, FetchError, FetchOptions, FetchPolicy

    server.handle("/busy", sequence((503, {"Retry-After": "0"}, b"busy"), (200, {}, b"ok")))
    server.route("/away", status=302, headers={"Location": "http://127.0.0.2:9/x"})

    async def run(path: str, policy: FetchPolicy) -> tuple[str, object]:
        options = FetchOptions(retries=3, policy=policy.trusting(server.url("/")), backoff_base=0.01)
        async with Fetcher(options) as fetcher:
            try:
                async with fetcher.stream(server.url(path)) as response:
                    return "answer", response.status
            except FetchError as exc:
                return "failed", exc.reason

    assert asyncio.run(run("/busy", FetchPolicy())) == ("answer", 200)
    assert [r.path for r in server.requests] == ["/busy", "/busy"]
    for policy, refusal in (
        (FetchPolicy(), "another site"),
        (FetchPolicy(follow_cross_host=True), "loopback"),
    ):
        server.requests.clear()
        outcome, reason = asyncio.run(run("/away", policy))
        assert outcome == "failed" and refusal in str(reason), reason
        assert [r.path for r in server.requests] == ["/away"]  # refused, and not asked again
