"""`sitemapkit audit` against real loopback sites: each finding, a clean site, politeness, sampling,
coverage, the JSON/CSV outputs, baselines and exit codes."""

from __future__ import annotations

import csv
import datetime as dt
import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from sitemapkit.audit.report import wilson
from sitemapkit.audit.run import audit
from tests.support.auditsite import clean_site, entry, index, page, problem_site, urlset
from tests.support.helpers import assert_paced
from tests.support.localserver import LocalServer

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
TIMEOUT = 2.0
"""The problem site's /slow answers after a minute; every other page in milliseconds, far from this even on a
busy machine (the timeout covers every request of the audit)."""
EXPECTED = {
    ("url-blocked", "/private/x"),
    ("url-error", "/gone"),
    ("url-noindex", "/noindex"),
    ("url-noindex", "/xrobots"),
    ("url-unreachable", "/slow"),
    ("url-redirect", "/old"),
    ("url-redirect", "/refresh"),
    ("url-canonicalized", "/dup"),
    ("url-soft-404", "/soft"),
    ("url-not-html", "/file.pdf"),
    ("lastmod-stale", "/stale"),
    ("lastmod-ahead", "/ahead"),
    ("lastmod-future", "/future"),
    ("url-in-several-sitemaps", "/several"),
    ("hreflang-return-missing", "/en"),
    # validator codes pass through
    ("duplicate-url", "/several"),
    ("future-date", "/future"),
    ("hreflang-not-reciprocal", "/en"),
}
COVERAGE = {("url-not-in-sitemap", "/unlisted"), ("url-orphan", "/orphan")}


def _found(report: object, base: str) -> set[tuple[str, str]]:
    return {(f.code, (f.url or "").removeprefix(base)) for f in report.findings}  # type: ignore[attr-defined]


def test_problem_site_reports_each_case(server: LocalServer) -> None:
    root = problem_site(server)
    report = audit(root, crawl=True, timeout=TIMEOUT, retries=0, now=NOW)
    assert _found(report, server.base) == EXPECTED | COVERAGE
    by = {(f.code, f.url.removeprefix(server.base) if f.url else ""): f for f in report.findings}
    old = by[("url-redirect", "/old")]
    assert old.status == 301 and old.evidence["final_url"] == server.url("/ok")
    assert old.evidence["final_listed"] is True and old.sitemap == server.url("/sitemap-pages.xml")
    assert old.line == 5
    assert by[("url-error", "/gone")].status == 404
    assert by[("url-noindex", "/xrobots")].evidence["directive"] == "X-Robots-Tag: noindex"
    stale = by[("lastmod-stale", "/stale")].evidence
    assert stale["sitemap_lastmod"] == "2026-01-01" and stale["page_lastmod"].startswith("2026-06-01")
    assert by[("url-canonicalized", "/dup")].evidence["canonical_listed"] is True
    assert by[("url-not-in-sitemap", "/unlisted")].evidence["depth"] == 1
    rows = {r.url.removeprefix(server.base): r for r in report.rows}
    assert rows["/ok"].codes == [] and rows["/ok"].indexability == "indexable" and rows["/ok"].depth == 1
    assert rows["/"].depth == 0
    assert rows["/private/x"].indexability == "blocked" and rows["/private/x"].status is None
    assert rows["/soft"].indexability == "soft-404"
    assert report.discovery["via"] == "robots"
    assert report.coverage is not None and report.coverage["not_in_sitemap"] == 1
    # robots.txt disallows /private/: nothing was fetched there
    assert not [r for r in server.requests if r.path.startswith("/private/")]
    assert 0 < report.score() < 100
    assert report.failed("error") and report.failed("warning") and not report.failed("never")


def test_clean_site_has_no_findings(server: LocalServer) -> None:
    report = audit(clean_site(server), crawl=True, now=NOW)
    assert report.findings == []
    assert report.score() == 100 and len(report.rows) == 3
    assert {r.indexability for r in report.rows} == {"indexable"}
    assert not report.failed("warning")


def test_sitemap_found_only_at_a_well_known_path(server: LocalServer) -> None:
    server.route("/robots.txt", "User-agent: *\nAllow: /\n", content_type="text/plain")
    url = page(server, "/", title="Home")
    server.route("/sitemap.xml", urlset([entry(url)]))
    report = audit(url, now=NOW)
    assert [(f.code, f.sitemap) for f in report.findings] == [
        ("sitemap-not-in-robots", server.url("/sitemap.xml"))
    ]
    assert report.discovery["via"] == "well-known"
    # a sitemap URL given on its own, that robots.txt does not name
    again = audit(server.url("/sitemap.xml"), now=NOW)
    assert [f.code for f in again.findings] == ["sitemap-not-in-robots"]


def test_no_sitemap_at_all(server: LocalServer) -> None:
    server.route("/robots.txt", "User-agent: *\n", content_type="text/plain")
    report = audit(server.url("/"), now=NOW)
    assert [f.code for f in report.findings] == ["no-sitemap"] and report.failed("error")


def test_validator_codes_pass_through(server: LocalServer) -> None:
    server.route("/robots.txt", f"Sitemap: {server.url('/sitemap.xml')}\n", content_type="text/plain")
    url = page(server, "/", title="Home")
    body = urlset([entry(url, "2026-13-45"), entry("https://elsewhere.example/x")])
    server.route("/sitemap.xml", body)
    report = audit(server.url("/"), now=NOW)
    codes = {(f.code, f.line) for f in report.findings}
    # the URL of another host: one finding for the file (not one per URL), at its first line
    assert ("invalid-date", 3) in codes and ("urls-on-other-host", 4) in codes
    assert "url-not-allowed" not in {c for c, _ in codes}
    assert all(f.sitemap == server.url("/sitemap.xml") for f in report.findings)


def test_polite_robots_agent_crawl_delay_and_retry_after(server: LocalServer) -> None:
    times: dict[str, list[float]] = {}
    lock = threading.Lock()

    def timed(path: str, answers: list[tuple[int, dict[str, str], bytes]]) -> None:
        def handler(_: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
            with lock:
                times.setdefault(path, []).append(time.monotonic())
                n = len(times[path])
            return answers[min(n, len(answers)) - 1]

        server.handle(path, handler)

    html = b"<html><head><title>x</title></head><body>x</body></html>"
    ok = (200, {"Content-Type": "text/html"}, html)
    server.route(
        "/robots.txt",
        "User-agent: *\nDisallow: /nothing\n\nUser-agent: sitemapkit\nDisallow: /mine\nCrawl-delay: 0.3\n",
        content_type="text/plain",
    )
    for p in ("/a", "/b", "/c", "/mine"):
        timed(p, [ok])
    timed("/busy", [(503, {"Retry-After": "1", "Content-Type": "text/plain"}, b"busy"), ok])
    paths = ("/a", "/b", "/c", "/mine", "/busy")
    server.route("/sitemap.xml", urlset([entry(server.url(p)) for p in paths]))
    report = audit(server.url("/sitemap.xml"), concurrency=4, now=NOW)
    assert {(f.code, f.url) for f in report.findings} == {
        ("sitemap-not-in-robots", None),
        ("url-blocked", server.url("/mine")),
    }
    assert "/mine" not in times
    # Crawl-delay 0.3 s spaces the starts of requests to the host (concurrency 4 would send them at once)
    assert_paced([t for p in ("/a", "/b", "/c", "/busy") for t in times[p]], 0.3)
    # Retry-After: 1 waited out from the 503's arrival, which comes after the first request was noted here:
    # a busy machine only makes the gap longer
    busy = times["/busy"]
    assert len(busy) == 2 and busy[1] - busy[0] >= 0.85


def test_the_sitemaps_too_are_read_at_the_crawl_delay(server: LocalServer) -> None:
    """Not only the pages: an index and its children are fetched at robots.txt's Crawl-delay as well."""
    times: list[tuple[float, str]] = []
    lock = threading.Lock()

    def timed(path: str, body: str) -> None:
        def handler(_: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
            with lock:
                times.append((time.monotonic(), path))
            return 200, {"Content-Type": "application/xml"}, body.encode()

        server.handle(path, handler)

    pages = [page(server, f"/p{i}", title=f"Page {i}") for i in range(3)]
    children = [f"/s{i}.xml" for i in range(3)]
    for child, url in zip(children, pages, strict=True):
        timed(child, urlset([entry(url)]))
    timed("/index.xml", index([server.url(c) for c in children]))
    server.route(
        "/robots.txt",
        f"User-agent: *\nCrawl-delay: 0.3\nSitemap: {server.url('/index.xml')}\n",
        content_type="text/plain",
    )
    report = audit(server.base, concurrency=4, now=NOW)
    assert report.listed == 3
    assert sorted(p for _, p in times) == ["/index.xml", "/s0.xml", "/s1.xml", "/s2.xml"]
    assert_paced([t for t, _ in times], 0.3)


def _many(server: LocalServer, n: int) -> list[str]:
    urls = []
    for i in range(n):
        if i % 4 == 0:
            server.route(f"/p{i}", "gone", status=404, content_type="text/plain")
            urls.append(server.url(f"/p{i}"))
        else:
            urls.append(page(server, f"/p{i}", title=f"Page {i}"))
    server.route("/sitemap.xml", urlset([entry(u) for u in urls]))
    server.route("/robots.txt", f"Sitemap: {server.url('/sitemap.xml')}\n", content_type="text/plain")
    return urls


def test_sample_is_seeded_uniform_and_has_intervals(server: LocalServer) -> None:
    _many(server, 40)
    first = audit(server.url("/"), sample=12, seed=3, concurrency=8, now=NOW)
    second = audit(server.url("/"), sample=12, seed=3, concurrency=8, now=NOW)
    other = audit(server.url("/"), sample=12, seed=4, concurrency=8, now=NOW)
    picked = [r.url for r in first.rows]
    assert len(picked) == 12 and picked == [r.url for r in second.rows]
    assert picked != [r.url for r in other.rows]
    sample = first.sample
    assert sample is not None and sample["population"] == 40 and sample["checked"] == 12
    errors = sum(1 for r in first.rows if r.codes == ["url-error"])
    share = sample["shares"]["url-error"]
    assert share["count"] == errors and share["share"] == errors / 12
    assert share["low"] <= errors / 12 <= share["high"] and share["estimate"] == round(errors / 12 * 40)
    # only the sampled URLs were fetched
    fetched = {r.path for r in server.requests if r.path.startswith("/p")}
    assert fetched == {u.removeprefix(server.base) for u in picked + [r.url for r in other.rows]}


def test_wilson_interval() -> None:
    low, high = wilson(10, 100)
    assert round(low, 4) == 0.0552 and round(high, 4) == 0.1744
    assert wilson(0, 20)[0] == 0.0 and wilson(20, 20)[1] == 1.0


def test_max_urls_checks_the_first_n(server: LocalServer) -> None:
    urls = _many(server, 10)
    report = audit(server.url("/"), max_urls=3, now=NOW)
    assert [r.url for r in report.rows] == urls[:3] and report.listed == 10
    assert any("--max-urls" in n for n in report.notes)


def test_progress_reports_rate_and_total(server: LocalServer) -> None:
    _many(server, 8)
    seen = []
    audit(server.url("/"), now=NOW, on_progress=lambda p: seen.append((p.done, p.total)))
    assert seen[-1] == (8, 8)


def test_json_csv_and_baseline(server: LocalServer, tmp_path: Path) -> None:
    root = problem_site(server)
    first = audit(root, timeout=TIMEOUT, retries=0, now=NOW)
    first.write_json(tmp_path / "a.json")
    first.write_csv(tmp_path / "a.csv")
    data = json.loads((tmp_path / "a.json").read_text())
    assert data["summary"]["errors"] == first.errors and len(data["findings"]) == len(first.findings)
    keys = {"code", "severity", "url", "sitemap", "line", "status", "message", "evidence"}
    assert all(set(f) == keys for f in data["findings"])
    assert {c for c in data["codes"]} == {f["code"] for f in data["findings"]}
    assert all(data["codes"][c]["fix"] for c in data["codes"])
    assert len(data["urls"]) == data["summary"]["urls_checked"] == 19
    rows = list(csv.DictReader((tmp_path / "a.csv").open()))
    assert len(rows) == 19
    gone = next(r for r in rows if r["url"].endswith("/gone"))
    assert gone["status"] == "404" and gone["findings"] == "url-error" and gone["indexability"] == "error"
    # fix /gone, break /ok
    page(server, "/gone", title="Back")
    server.route("/ok", "oops", status=500, content_type="text/plain")
    second = audit(root, timeout=TIMEOUT, retries=0, now=NOW, baseline=tmp_path / "a.json")
    assert second.baseline is not None
    new = {(f.code, f.url) for f in second.findings if f.baseline == "new"}
    # /old redirects to /ok, which is listed: it is checked on its own, not fetched again through /old
    assert new == {("url-error", server.url("/ok"))}
    assert [(f["code"], f["url"]) for f in second.baseline["fixed_findings"]] == [
        ("url-error", server.url("/gone"))
    ]
    assert second.baseline["unchanged"] == len(second.findings) - 1
    from sitemapkit.audit.report_html import render

    page_html = render(second)
    fixed_part = page_html.split("Fixed since the baseline", 1)[1].split("</details>", 1)[0]
    assert server.url("/gone") in fixed_part and "url-error" in fixed_part
    assert second.failed("error")
    # the same site again: nothing new, so --fail-on error passes though errors remain
    second.write_json(tmp_path / "b.json")
    third = audit(root, timeout=TIMEOUT, retries=0, now=NOW, baseline=tmp_path / "b.json")
    assert third.errors > 0 and not third.failed("error") and third.baseline["new"] == 0


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sitemapkit", "audit", *args], capture_output=True, text=True, timeout=120
    )


def test_a_site_with_no_sitemap_scores_zero_not_nearly_perfect(server: LocalServer) -> None:
    server.route("/", "<title>home</title>", content_type="text/html")  # no robots.txt, no sitemap
    done = _cli(server.url("/"), "--retries", "0")
    assert done.returncode == 1, done.stderr
    assert "[no-sitemap]" in done.stdout
    assert "score 0/100: 1 error, 0 warnings" in done.stdout


def test_cli_exit_codes_and_outputs(server: LocalServer, tmp_path: Path) -> None:
    root = clean_site(server)
    ok = _cli(root, "--json", str(tmp_path / "r.json"), "--csv", str(tmp_path / "r.csv"))
    assert ok.returncode == 0, ok.stderr
    assert "score 100/100: 0 errors, 0 warnings" in ok.stdout
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["findings"] == 0
    server.route("/a", "gone", status=410, content_type="text/plain")
    bad = _cli(root)
    assert bad.returncode == 1 and "[url-error]" in bad.stdout and "Answers HTTP 410" in bad.stdout
    assert _cli(root, "--fail-on", "never").returncode == 0
    (tmp_path / "bad.json").write_text("[1, 2")
    broken = _cli(root, "--baseline", str(tmp_path / "bad.json"))
    assert broken.returncode == 2 and "bad.json: the baseline is not JSON" in broken.stderr
    assert "Traceback" not in broken.stderr
    local = _cli("sitemap.xml")
    assert local.returncode == 2 and "give the site's URL" in local.stderr


@pytest.mark.parametrize("value", ["--sample=0", "--concurrency=0", "--max-urls=0"])
def test_cli_refuses_bad_numbers(value: str) -> None:
    p = _cli("https://example.com/", value)
    assert p.returncode == 2 and "Traceback" not in p.stderr


def test_cli_html_sample_and_crawl(server: LocalServer, tmp_path: Path) -> None:
    _many(server, 12)
    page(server, "/", title="Home", links=tuple(f"/p{i}" for i in range(12)))
    p = _cli(server.url("/"), "--sample", "5", "--seed", "2", "--crawl", "--html", str(tmp_path / "r.html"),
             "--json", str(tmp_path / "r.json"), "--fail-on", "never")  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert "5 of 12 listed URLs checked (a random sample, seed 2)" in p.stdout
    assert "crawl: 13 pages fetched" in p.stdout and "url-not-in-sitemap" in p.stdout  # the home page
    data = json.loads((tmp_path / "r.json").read_text())
    html = (tmp_path / "r.html").read_text()
    assert data["sample"]["checked"] == 5 and "95% CI" in html
    assert html.count('<svg class="chart"') == 4 and "No data for lastmod by month" in html  # no lastmod


def test_validator_gives_each_entry_once_with_its_place(tmp_path: Path) -> None:
    import asyncio

    from sitemapkit.validator.run import avalidate

    path = tmp_path / "sitemap.xml"
    path.write_text(
        urlset([entry("https://example.com/a"), entry("/relative"), entry("https://example.com/b")])
    )
    seen = []
    report = asyncio.run(avalidate(path, url="https://example.com/sitemap.xml", on_entry=seen.append))
    assert [(e.loc, e.sitemap, e.line) for e in seen] == [
        ("https://example.com/a", str(path), 3),
        ("https://example.com/b", str(path), 5),
    ]
    assert [d.code for d in report] == ["invalid-url"]


def test_redirect_loop_unreachable_host_and_robots_5xx(server: LocalServer) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/page"  # nothing listens there once closed
    other = LocalServer().start()
    try:
        other.route("/robots.txt", "busy", status=503, content_type="text/plain")
        other.route("/page", "<title>x</title>", content_type="text/html")
        server.route("/robots.txt", f"Sitemap: {server.url('/sitemap.xml')}\n", content_type="text/plain")
        server.redirect("/loop", server.url("/loop2"))
        server.redirect("/loop2", server.url("/loop"))
        listed = [server.url("/loop"), dead, other.url("/page")]
        server.route("/sitemap.xml", urlset([entry(u) for u in listed]))
        report = audit(
            server.url("/"), retries=0, allow_hosts=["127.0.0.1"], allow_private=True, now=NOW
        )  # the other two are loopback origins the user did not name
    finally:
        other.stop()
    by = {f.url: f for f in report.findings}
    assert {(f.code, f.url) for f in report.findings} == {
        ("url-redirect", listed[0]),
        ("url-unreachable", dead),
        ("url-blocked", listed[2]),
    }
    assert "redirect loop" in by[listed[0]].message
    assert "robots.txt could not be fetched" in by[dead].message
    assert "answered 503" in by[listed[2]].message
    assert not [r for r in other.requests if r.path == "/page"]  # robots.txt 5xx: the page is not fetched


def test_lastmod_against_last_modified_unless_it_is_the_response_time(server: LocalServer) -> None:
    import email.utils

    html = {"Content-Type": "text/html"}
    body = b"<html><head><title>t</title></head><body>text</body></html>"
    server.route("/robots.txt", f"Sitemap: {server.url('/sitemap.xml')}\n", content_type="text/plain")
    server.route("/old", body, headers={**html, "Last-Modified": "Tue, 01 Sep 2026 10:00:00 GMT"})
    server.handle(
        "/dynamic", lambda _: (200, {**html, "Last-Modified": email.utils.formatdate(usegmt=True)}, body)
    )
    server.route(
        "/sitemap.xml",
        urlset([entry(server.url("/old"), "2026-11-01"), entry(server.url("/dynamic"), "2026-01-01")]),
    )
    report = audit(server.url("/"), now=NOW)
    assert [(f.code, f.url, f.evidence["page_lastmod_from"]) for f in report.findings] == [
        ("lastmod-ahead", server.url("/old"), "Last-Modified")
    ]
    rows = {r.url: r for r in report.rows}
    assert rows[server.url("/old")].page_lastmod == "2026-09-01T10:00:00+00:00"
    assert rows[server.url("/dynamic")].page_lastmod is None
