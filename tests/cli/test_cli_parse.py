"""`sitemapkit parse`: output formats, the tree, diagnostics on stderr, exit codes 0/1/2."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sitemapkit.cli import main
from tests.support.localserver import LocalServer

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'


def urlset(*entries: str) -> str:
    return f'{HEAD}<urlset xmlns="{NS}">\n' + "".join(f"<url>{e}</url>\n" for e in entries) + "</urlset>\n"


def index(*locs: str) -> str:
    body = "".join(f"<sitemap><loc>{loc}</loc><lastmod>2024-05-01</lastmod></sitemap>\n" for loc in locs)
    return f'{HEAD}<sitemapindex xmlns="{NS}">\n{body}</sitemapindex>\n'


def tree_site(server: LocalServer) -> str:
    server.route(
        "/a.xml",
        urlset(
            "<loc>https://example.com/a</loc><lastmod>2024-01-02</lastmod><priority>0.7</priority>",
            "<loc>https://example.com/b</loc><changefreq>often</changefreq>",
        ),
    )
    return server.route("/index.xml", index(server.url("/a.xml"), server.url("/gone.xml")))


def parse(*args: str) -> Result:
    return CliRunner().invoke(main, ["parse", *args])


def test_jsonl_is_the_default_and_problems_go_to_stderr(server: LocalServer) -> None:
    result = parse(tree_site(server))
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["loc"] for r in rows] == ["https://example.com/a", "https://example.com/b"]
    assert rows[0]["lastmod"] == "2024-01-02" and rows[0]["priority"] == 0.7
    assert rows[0]["sitemap"] == server.url("/a.xml")
    assert rows[1]["changefreq"] is None
    assert f"{server.url('/a.xml')}:4: error [invalid-value]" in result.stderr
    assert f"{server.url('/gone.xml')}: error [http-error] HTTP 404" in result.stderr
    assert "2 URLs from 2 sitemaps; 2 errors, 0 warnings" in result.stderr
    assert "\x1b[" not in result.stderr  # no progress display or colour when not a terminal


def test_csv_output(server: LocalServer) -> None:
    result = parse(tree_site(server), "--format", "csv")
    assert result.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["loc"] for r in rows] == ["https://example.com/a", "https://example.com/b"]
    assert rows[0]["lastmod"] == "2024-01-02" and rows[0]["images"] == "0"


def test_sitemaps_prints_the_tree(server: LocalServer) -> None:
    result = parse(tree_site(server), "--sitemaps")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith(server.url("/index.xml") + "  sitemapindex  200  2 sitemaps")
    assert lines[1].startswith(f"  {server.url('/a.xml')}  urlset  200  2 URLs  ")
    assert lines[1].endswith("lastmod 2024-05-01")
    assert (
        lines[2]
        == f"  {server.url('/gone.xml')}  -  404  0 URLs  0 bytes  lastmod 2024-05-01  error: HTTP 404"
    )


def test_sitemaps_as_jsonl(server: LocalServer) -> None:
    result = parse(tree_site(server), "--sitemaps", "--format", "jsonl")
    nodes = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(n["kind"], n["status"], n["url_count"], n["depth"]) for n in nodes] == [
        ("sitemapindex", 200, 0, 0),
        ("urlset", 200, 2, 1),
        (None, 404, 0, 1),
    ]


def test_output_file(server: LocalServer, tmp_path: Path) -> None:
    out = tmp_path / "urls.jsonl"
    result = parse(tree_site(server), "-o", str(out))
    assert result.exit_code == 0 and result.stdout == ""
    assert len(out.read_text().splitlines()) == 2


def test_options_reach_the_reader(server: LocalServer) -> None:
    url = server.route("/big.xml", urlset(*(f"<loc>https://example.com/{i}</loc>" for i in range(2000))))
    result = parse(url, "--user-agent", "CliBot/1", "--max-download", "10000", "--timeout", "5")
    assert result.exit_code == 0
    assert server.requests[0].headers["User-Agent"] == "CliBot/1"
    assert 0 < len(result.stdout.splitlines()) < 2000
    assert "[download-too-large]" in result.stderr


def test_max_depth_option(server: LocalServer) -> None:
    result = parse(tree_site(server), "--max-depth", "0")
    assert result.exit_code == 0 and result.stdout == ""
    assert "[too-deep]" in result.stderr


def test_exit_1_when_the_root_cannot_be_fetched(server: LocalServer) -> None:
    result = parse(server.url("/missing.xml"))
    assert result.exit_code == 1
    assert f"{server.url('/missing.xml')}: error [http-error] HTTP 404 Not Found" in result.stderr
    assert f"nothing could be read from {server.url('/missing.xml')}" in result.stderr
    assert "Traceback" not in result.output


def test_exit_1_for_html_instead_of_a_sitemap(server: LocalServer) -> None:
    url = server.route("/s.xml", "<!doctype html><html><body>hi</body></html>", content_type="text/html")
    result = parse(url)
    assert result.exit_code == 1 and "[unsupported-format]" in result.stderr


def test_exit_1_for_a_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.xml"
    result = parse(str(missing))
    assert result.exit_code == 1
    assert f"{missing}: no such file" in result.stderr and "Traceback" not in result.output


def test_exit_1_for_a_site_without_sitemaps(server: LocalServer) -> None:
    result = parse(server.url("/"))
    assert result.exit_code == 1 and "[no-sitemap]" in result.stderr


def test_exit_0_for_an_empty_but_valid_sitemap(tmp_path: Path) -> None:
    f = tmp_path / "empty.xml"
    f.write_text(urlset())
    result = parse(str(f))
    assert result.exit_code == 0 and result.stdout == ""


@pytest.mark.parametrize(
    "args",
    [
        ["--format", "xml", "https://example.com/"],
        ["--concurrency", "0", "https://example.com/"],
        ["ftp://example.com/sitemap.xml"],
        [],
    ],
)
def test_exit_2_for_usage_errors(args: list[str]) -> None:
    result = parse(*args)
    assert result.exit_code == 2, result.output


def test_help_has_an_example() -> None:
    result = parse("--help")
    assert result.exit_code == 0
    assert "Example" in result.stdout and "sitemapkit parse https://example.com/" in result.stdout


def test_stdin_and_a_real_process(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sitemapkit", "parse", "-", "--format", "csv"],
        input=urlset("<loc>https://example.com/x</loc>"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1].startswith("https://example.com/x,")
    assert proc.stderr == ""
