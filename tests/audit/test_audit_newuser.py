"""`sitemapkit audit` as a new user meets it: output paths checked before the run (and one failed write
does not lose the others), sitemaps outside their folder judged per file and by what robots.txt submits,
an unreachable site named as such, sample counts labelled, the child of a robots.txt index, a baseline of
another site, hreflang that the page and its sitemap entry disagree on, and the reports' escaping."""

from __future__ import annotations

import csv
import datetime as dt
import json
import shutil
import socket
import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from sitemapkit.audit.findings import Finding
from sitemapkit.audit.report import AuditReport
from sitemapkit.audit.report_html import render
from sitemapkit.audit.run import audit
from sitemapkit.cli.audit import print_summary
from sitemapkit.core.diagnostics import Severity
from tests.support.auditsite import entry, index, page, urlset
from tests.support.localserver import LocalServer

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sitemapkit", "audit", *args], capture_output=True, text=True, timeout=120
    )


def _site_with_children_in_a_folder(server: LocalServer, *, robots_names_index: bool) -> list[str]:
    """An index at / naming two sitemaps in /sitemaps/ that list pages at / (one of them a 404)."""
    b = server.url
    robots = "User-agent: *\n" + (f"Sitemap: {b('/sitemap_index.xml')}\n" if robots_names_index else "")
    server.route("/robots.txt", robots, content_type="text/plain")
    urls = [page(server, f"/p{i}", title=f"Page {i}") for i in range(12)]
    server.route("/gone", "gone", status=404, content_type="text/plain")
    server.route("/sitemaps/a.xml", urlset([entry(u) for u in urls[:6]] + [entry(b("/gone"))]))
    server.route("/sitemaps/b.xml", urlset([entry(u) for u in urls[6:]]))
    server.route("/sitemap_index.xml", index([b("/sitemaps/a.xml"), b("/sitemaps/b.xml")]))
    return urls


def _dead_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/"  # nothing listens there once closed


# 1. output paths


def test_an_unwritable_output_is_refused_before_any_request(server: LocalServer, tmp_path: Path) -> None:
    _site_with_children_in_a_folder(server, robots_names_index=True)
    missing = _cli(server.url("/"), "--json", str(tmp_path / "no-such-folder" / "x.json"))
    assert missing.returncode == 2, missing.stdout
    assert f"{tmp_path / 'no-such-folder'} does not exist (--json)" in missing.stderr
    folder = _cli(server.url("/"), "--html", str(tmp_path))
    assert folder.returncode == 2 and "is a directory" in folder.stderr
    same = _cli(server.url("/"), "--json", str(tmp_path / "r"), "--csv", str(tmp_path / "r"))
    assert same.returncode == 2 and "--json and --csv name the same file" in same.stderr
    assert "Traceback" not in missing.stderr + folder.stderr + same.stderr
    assert server.requests == []  # refused before the audit began
    assert list(tmp_path.iterdir()) == []  # and no probe file is left behind


def test_a_write_that_fails_at_the_end_does_not_lose_the_others(server: LocalServer, tmp_path: Path) -> None:
    _site_with_children_in_a_folder(server, robots_names_index=True)
    doomed = tmp_path / "doomed"
    doomed.mkdir()
    original = server.routes["/sitemaps/b.xml"].body

    def remove_folder(_: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        shutil.rmtree(doomed, ignore_errors=True)  # the folder goes while the audit runs
        return 200, {"Content-Type": "application/xml"}, original

    server.handle("/sitemaps/b.xml", remove_folder)
    out = _cli(
        server.url("/"),
        "--json", str(doomed / "r.json"),
        "--csv", str(tmp_path / "r.csv"),
        "--html", str(tmp_path / "r.html"),
    )  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert f"sitemapkit audit: {doomed / 'r.json'}: cannot write" in out.stderr
    assert f"the other reports were written: {tmp_path / 'r.csv'}, {tmp_path / 'r.html'}" in out.stderr
    assert "score " in out.stdout  # the summary is printed all the same
    assert len(list(csv.DictReader((tmp_path / "r.csv").open()))) == 13
    assert "Sitemap audit" in (tmp_path / "r.html").read_text()


# 2. sitemaps outside their folder


def test_children_in_a_folder_not_named_in_robots_give_one_warning_per_file(server: LocalServer) -> None:
    urls = _site_with_children_in_a_folder(server, robots_names_index=False)
    report = audit(server.url("/"), now=NOW)
    outside = [f for f in report.findings if f.code == "urls-outside-folder"]
    assert [(f.sitemap, f.evidence["count"]) for f in outside] == [
        (server.url("/sitemaps/a.xml"), 7),
        (server.url("/sitemaps/b.xml"), 6),
    ]
    a = outside[0]
    assert a.severity is Severity.WARNING and a.url is None and a.line == 3
    assert a.evidence["examples"][0] == urls[0] and a.evidence["move_to"] == server.url("/a.xml")
    assert a.evidence["robots_line"] == f"Sitemap: {server.url('/sitemap_index.xml')}"
    assert f"Move it to {server.url('/a.xml')}" in a.message
    assert "url-not-allowed" not in {f.code for f in report.findings}
    # the score is that of the one real error (the 404), not 0
    assert {f.code for f in report.findings} == {"urls-outside-folder", "url-error", "sitemap-not-in-robots"}
    assert report.score() == round(100 * (1 - 1 / 13))
    files = {f["source"]: f for f in report.files}
    assert (
        files[server.url("/sitemaps/a.xml")]["errors"],
        files[server.url("/sitemaps/a.xml")]["warnings"],
    ) == (
        0,
        1,
    )


def test_children_of_an_index_named_in_robots_may_list_any_url_of_the_host(server: LocalServer) -> None:
    _site_with_children_in_a_folder(server, robots_names_index=True)
    report = audit(server.url("/"), now=NOW)
    assert [f.code for f in report.findings] == ["url-error"]
    assert all(f["errors"] == 0 for f in report.files)
    # audited on its own, the child is still submitted through the index robots.txt names
    child = audit(server.url("/sitemaps/a.xml"), now=NOW)
    assert [f.code for f in child.findings] == ["url-error"]  # no sitemap-not-in-robots, no scope finding


def test_another_hosts_urls_are_one_error_per_file_even_when_robots_names_it(server: LocalServer) -> None:
    server.route("/robots.txt", f"Sitemap: {server.url('/sitemap.xml')}\n", content_type="text/plain")
    home = page(server, "/", title="Home")
    others = [f"http://127.0.0.2:{server.url('/').split(':')[2].rstrip('/')}/x{i}" for i in range(3)]
    server.route("/sitemap.xml", urlset([entry(home)] + [entry(u) for u in others]))
    report = audit(server.url("/"), now=NOW, retries=0, timeout=2.0)
    other = [f for f in report.findings if f.code == "urls-on-other-host"]
    assert len(other) == 1 and other[0].evidence["count"] == 3 and other[0].severity is Severity.ERROR
    assert other[0].line == 4 and "url-not-allowed" not in {f.code for f in report.findings}


# 3. a site that does not answer


def test_an_unreachable_site_says_so_and_does_not_blame_robots_txt() -> None:
    root = _dead_port()
    report = audit(root, retries=0, timeout=2.0, now=NOW)
    assert [f.code for f in report.findings] == ["site-unreachable"]
    f = report.findings[0]
    assert "does not answer" in f.message and "connection" in f.evidence["error"]
    assert "names none" not in f.message and "Sitemap:" not in f.message
    assert report.discovery["robots_error"] == f.evidence["error"] and report.score() == 0
    # a sitemap URL of that site: the same finding, and no claim that robots.txt does not name it
    given = audit(root + "sitemap.xml", retries=0, timeout=2.0, now=NOW)
    codes = [f.code for f in given.findings]
    assert "site-unreachable" in codes and "sitemap-not-in-robots" not in codes
    out = _cli(root, "--retries", "0", "--timeout", "2")
    assert out.returncode == 1 and "[site-unreachable]" in out.stdout and "[no-sitemap]" not in out.stdout


# 4. labels and the right findings


def test_sample_counts_say_which_are_exact_and_which_are_estimates(
    server: LocalServer, tmp_path: Path
) -> None:
    urls = []
    for i in range(30):
        if i % 3 == 0:
            server.route(f"/p{i}", "gone", status=404, content_type="text/plain")
            urls.append(server.url(f"/p{i}"))
        else:
            urls.append(page(server, f"/p{i}", title=f"Page {i}"))
    server.route("/sitemap.xml", urlset([entry(u) for u in urls] + [entry(urls[1]), entry(urls[2])]))
    server.route("/robots.txt", f"Sitemap: {server.url('/sitemap.xml')}\n", content_type="text/plain")
    out = _cli(server.url("/"), "--sample", "10", "--seed", "1", "--json", str(tmp_path / "r.json"))
    assert out.returncode == 1, out.stderr
    lines = {line.split()[1]: line for line in out.stdout.splitlines() if line.startswith("  error   ")}
    lines |= {line.split()[1]: line for line in out.stdout.splitlines() if line.startswith("  warning ")}
    assert lines["duplicate-url"].rstrip().endswith("2 exact")  # the whole tree was read
    assert "in the sample; estimate for all listed: ~" in lines["url-error"]
    assert "counts: 'in the sample' = among the 10 URLs checked" in out.stdout
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["summary"]["by_code"]["duplicate-url"]["counted_over"] == "all"
    assert data["summary"]["by_code"]["url-error"]["counted_over"] == "sample"
    assert set(data["sample"]["shares"]) == {"url-error"}  # no estimate of an exact count


def test_a_sitemap_robots_txt_does_not_reach_is_reported(server: LocalServer) -> None:
    server.route("/robots.txt", f"Sitemap: {server.url('/sitemap_index.xml')}\n", content_type="text/plain")
    home = page(server, "/", title="Home")
    server.route("/listed.xml", urlset([entry(home)]))
    server.route("/stray.xml", urlset([entry(home)]))
    server.route("/sitemap_index.xml", index([server.url("/listed.xml")]))
    assert audit(server.url("/listed.xml"), now=NOW).findings == []
    stray = audit(server.url("/stray.xml"), now=NOW)
    assert [f.code for f in stray.findings] == ["sitemap-not-in-robots"]
    assert "nor an index that lists it" in stray.findings[0].message


def test_a_baseline_of_another_site_is_refused(server: LocalServer, tmp_path: Path) -> None:
    other = {"format": 1, "target": "https://example.org/", "generated": "2026-11-01", "findings": []}
    (tmp_path / "other.json").write_text(json.dumps(other))
    out = _cli(server.url("/"), "--baseline", str(tmp_path / "other.json"))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "the baseline is an audit of https://example.org/, not of " + server.url("/") in out.stderr
    assert server.requests == []
    # the same site through one of its sitemaps is the same site
    server.route("/robots.txt", f"Sitemap: {server.url('/sitemap.xml')}\n", content_type="text/plain")
    server.route("/sitemap.xml", urlset([entry(page(server, "/", title="Home"))]))
    same = dict(other, target=server.url("/sitemap.xml"))
    assert audit(server.url("/"), baseline=same, now=NOW).baseline is not None


def test_page_hreflang_that_disagrees_with_the_sitemap_is_reported(server: LocalServer) -> None:
    b = server.url
    server.route("/robots.txt", f"Sitemap: {b('/sitemap.xml')}\n", content_type="text/plain")
    en, fr, de = b("/en"), b("/fr"), b("/de")
    links = "".join(f'<link rel="alternate" hreflang="{h}" href="{u}">' for h, u in (("en", en), ("fr", fr)))
    page(server, "/en", title="EN", head=links)
    page(server, "/fr", title="FR", head=f'<link rel="alternate" hreflang="fr" href="{fr}">'
         f'<link rel="alternate" hreflang="de" href="{de}">')  # fmt: skip
    page(server, "/de", title="DE")  # no hreflang on the page: nothing to compare
    alts = "".join(
        f'<xhtml:link rel="alternate" hreflang="{h}" href="{u}"/>' for h, u in (("en", en), ("fr", fr))
    )
    server.route(
        "/sitemap.xml", urlset([entry(en, extra=alts), entry(fr, extra=alts), entry(de, extra=alts)])
    )
    report = audit(b("/"), now=NOW)
    mismatch = [f for f in report.findings if f.code == "hreflang-sitemap-mismatch"]
    assert [f.url for f in mismatch] == [fr]  # /en agrees; /de has no links of its own
    assert mismatch[0].evidence == {"only_in_sitemap": [["en", en]], "only_on_page": [["de", de]]}
    assert f"the sitemap gives en {en}, which the page does not name" in mismatch[0].message


# 5. the reports are safe


def test_json_in_the_html_cannot_end_its_script_element() -> None:
    from sitemapkit.audit.report_html import script_json

    hostile = {"lastmod": "<!--<script>", "url": "</script><b>x</b>", "t": "a&b\u2028\u2029>"}
    text = script_json(hostile)
    assert not any(c in text for c in "<>&\u2028\u2029")
    assert "\\u003c!--\\u003cscript\\u003e" in text and json.loads(text) == hostile


def test_csv_cells_from_the_site_cannot_be_formulas(server: LocalServer, tmp_path: Path) -> None:
    server.route("/robots.txt", f"Sitemap: {server.url('/sitemap.xml')}\n", content_type="text/plain")
    server.route("/evil", b"x", content_type='=HYPERLINK("http://127.0.0.1/","click")')
    server.route("/sitemap.xml", urlset([entry(server.url("/evil"))]))
    report = audit(server.url("/"), now=NOW)
    report.write_csv(tmp_path / "r.csv")
    (row,) = list(csv.DictReader((tmp_path / "r.csv").open()))
    assert row["content_type"].startswith("'=") and row["status"] == "200"  # numbers stay numbers


def test_terminal_output_escapes_what_the_site_wrote(capsys: pytest.CaptureFixture[str]) -> None:
    report = AuditReport("https://example.com/", "2026-12-01T00:00:00+00:00")
    report.findings.append(
        Finding(
            "url-error", Severity.ERROR, "https://example.com/\x1b]0;owned\x07", "Answers \x1b[2K 0 errors"
        )
    )
    report.notes.append("note \u202etxt.exe")
    print_summary(report, 10, color=False)
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert "\\x1b]0;owned\\x07" in out and "\\x1b[2K 0 errors" in out and "\\u202e" in out


def test_the_html_page_allows_only_its_own_script() -> None:
    page_html = render(AuditReport("https://example.com/", "2026-12-01T00:00:00+00:00"))
    csp = page_html.split('http-equiv="Content-Security-Policy" content="', 1)[1].split('"', 1)[0]
    assert "script-src 'sha256-" in csp and "unsafe-inline'; img" not in csp
    assert "script-src 'unsafe-inline'" not in csp
