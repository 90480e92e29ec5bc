"""`sitemapkit validate` on the command line: exit status, text and JSON output, options."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from click.testing import CliRunner

from sitemapkit.cli import main
from tests.support.localserver import LocalServer
from tests.validator.test_validate_codes import PUBLIC, index, urlset

CLEAN = urlset("<url><loc>https://example.com/a</loc><lastmod>2024-06-01</lastmod></url>")
BAD = urlset(
    "<url><loc>https://example.com/a</loc></url>",
    "<url><loc>https://example.com/a</loc></url>",
    "<url><loc>/relative</loc></url>",
    "<url><loc>https://other.org/x</loc></url>",
)


def run(*args: str, input: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["validate", *args], input=input)
    return result.exit_code, result.output


def test_clean_file_exits_0(tmp_path: Path) -> None:
    path = tmp_path / "sitemap.xml"
    path.write_text(CLEAN)
    code, out = run(str(path), "--url", PUBLIC)
    assert code == 0
    assert out.strip() == "1 file, 1 URL: 0 errors, 0 warnings"


def test_warnings_only_exit_0_and_errors_exit_1(tmp_path: Path) -> None:
    path = tmp_path / "sitemap.txt"
    path.write_text("https://example.com/a\nhttps://example.com/a\n")
    assert run(str(path), "--url", PUBLIC)[0] == 0
    path.write_text("/relative\n")
    assert run(str(path), "--url", PUBLIC)[0] == 1


def test_text_output_grouped_with_excerpts_and_summary(tmp_path: Path) -> None:
    path = tmp_path / "sitemap.xml"
    path.write_text(BAD)
    code, out = run(str(path), "--url", PUBLIC)
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == f"{path} (urlset, 4 URLs): 2 errors, 1 warning"
    assert lines[1].startswith(f"{path}:5: error [invalid-url]")
    assert lines[2] == "    | <url><loc>/relative</loc></url>"
    assert lines[3].startswith(f"{path}:6: error [url-not-allowed]") and lines[3].endswith(
        "(https://other.org/x)"
    )
    assert lines[5].startswith(f"{path}:4: warning [duplicate-url]")
    assert lines[-1] == "1 file, 4 URLs: 2 errors, 1 warning"
    assert "\x1b[" not in out  # no colour when stdout is not a terminal


def test_max_errors_caps_what_is_printed_not_what_is_counted(tmp_path: Path) -> None:
    path = tmp_path / "sitemap.xml"
    path.write_text(BAD)
    code, out = run(str(path), "--url", PUBLIC, "--max-errors", "1")
    assert code == 1
    assert out.count("[") == 1 and "[invalid-url]" in out
    assert (
        out.splitlines()[-1]
        == "1 file, 4 URLs: 2 errors, 1 warning (2 not shown; raise --max-errors to see more)"
    )
    data = json.loads(run(str(path), "--url", PUBLIC, "--format", "json", "--max-errors", "0")[1])
    assert data["diagnostics"] == []
    assert data["summary"] == {
        "files": 1,
        "urls": 4,
        "errors": 2,
        "warnings": 1,
        "codes": {"duplicate-url": 1, "invalid-url": 1, "url-not-allowed": 1},
        "not_shown": 3,
    }


def test_json_output(tmp_path: Path) -> None:
    path = tmp_path / "sitemap.xml"
    path.write_text(BAD)
    code, out = run(str(path), "--format", "json")
    assert code == 1
    data = json.loads(out)
    assert [(d["code"], d["severity"], d["line"]) for d in data["diagnostics"]] == [
        ("invalid-url", "error", 5),
        ("duplicate-url", "warning", 4),
    ]
    first = data["diagnostics"][0]
    assert set(first) == {"code", "severity", "message", "source", "line", "column", "url", "excerpt"}
    assert first["source"] == str(path) and first["url"] == "/relative"
    assert data["summary"] == {
        "files": 1,
        "urls": 4,
        "errors": 1,
        "warnings": 1,
        "codes": {"duplicate-url": 1, "invalid-url": 1},
        "not_shown": 0,
    }
    assert len(data["notes"]) == 1 and "--url" in data["notes"][0]
    assert data["files"][0]["kind"] == "urlset"


def test_allow_host(tmp_path: Path) -> None:
    path = tmp_path / "sitemap.xml"
    path.write_text(urlset("<url><loc>https://other.org/x</loc></url>"))
    assert run(str(path), "--url", PUBLIC)[0] == 1
    assert run(str(path), "--url", PUBLIC, "--allow-host", "other.org")[0] == 0


def test_remote_index_and_no_recursive(server: LocalServer) -> None:
    server.route("/a.xml.gz", gzip.compress(urlset("<url><loc>/rel</loc></url>").encode()))
    root = server.route("/sitemap.xml", index(server.url("/a.xml.gz"), server.url("/gone.xml")))
    code, out = run(root)
    assert code == 1
    assert f"{root}:4: error [http-error]" in out
    assert f"{server.url('/a.xml.gz')}:3: error [invalid-url]" in out
    assert "    | <url><loc>/rel</loc></url>" in out
    assert out.splitlines()[-1] == "3 files, 1 URL: 2 errors, 0 warnings"
    assert run(root, "--no-recursive") == (0, "1 file, 0 URLs: 0 errors, 0 warnings\n")


def test_standard_input() -> None:
    code, out = run("-", "--url", PUBLIC, input="https://example.com/a\nhttps://elsewhere.org/\n")
    assert code == 1
    assert "<stdin>:2: error [url-not-allowed]" in out
    assert "    | https://elsewhere.org/" in out


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "sitemap.xml"
    path.write_text(CLEAN)
    assert run(str(tmp_path / "missing.xml"))[0] == 2
    assert run(str(path), str(path), "--url", PUBLIC)[0] == 2
    assert run(str(path), "--url", "ftp://example.com/")[0] == 2
    assert run(str(path), "--format", "yaml")[0] == 2
    assert run()[0] == 2


def test_help_has_an_example() -> None:
    code, out = run("--help")
    assert code == 0 and "sitemapkit validate public/sitemap.xml --url" in out
