"""`sitemapkit robots`: output, dry run, JSON, warnings and exit codes, on real files."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from click.testing import CliRunner

from sitemapkit.cli import main
from sitemapkit.generator.robots import BEGIN_MARKER, END_MARKER
from tests.generator.test_robots import feeding

S = "https://example.com/sitemap.xml"
OLD = "https://example.com/old-sitemap.xml"
RULES = "User-agent: *\r\nDisallow: /admin/\r\n"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["robots", *args])
    return result.exit_code, result.stdout, result.stderr


def test_adds_the_block_then_reports_unchanged(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_bytes(RULES.encode())
    code, out, err = run("--robots", str(robots), "--sitemap", S)
    assert (code, err) == (0, "")
    assert out.splitlines() == [f"+ Sitemap: {S}", f"{robots}: updated (1 added, 0 removed, 1 listed)"]
    assert robots.read_bytes() == f"{RULES}\r\n{BEGIN_MARKER}\r\nSitemap: {S}\r\n{END_MARKER}\r\n".encode()
    code, out, _ = run("--robots", str(robots), "--sitemap", S)
    assert (code, out) == (0, f"{robots}: unchanged (0 added, 0 removed, 1 listed)\n")


def test_creates_a_missing_file(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    code, out, _ = run("--robots", str(robots), "--sitemap", S, "--sitemap", OLD)
    assert code == 0
    assert out.endswith(f"{robots}: created (2 added, 0 removed, 2 listed)\n")
    assert robots.read_text() == f"{BEGIN_MARKER}\nSitemap: {S}\nSitemap: {OLD}\n{END_MARKER}\n"


def test_replacing_the_sitemaps_removes_the_old_line(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    run("--robots", str(robots), "--sitemap", OLD)
    code, out, _ = run("--robots", str(robots), "--sitemap", S)
    assert code == 0
    assert out.splitlines() == [
        f"+ Sitemap: {S}",
        f"- Sitemap: {OLD}",
        f"{robots}: updated (1 added, 1 removed, 1 listed)",
    ]
    assert OLD not in robots.read_text()


def test_dry_run_prints_a_diff_and_writes_nothing(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_text("User-agent: *\nDisallow:\n")
    code, out, err = run("--robots", str(robots), "--sitemap", S, "--dry-run")
    assert code == 0
    assert out == (
        f"--- a/{robots}\n+++ b/{robots}\n@@ -1,2 +1,6 @@\n User-agent: *\n Disallow:\n+\n"
        f"+{BEGIN_MARKER}\n+Sitemap: {S}\n+{END_MARKER}\n"
    )
    assert err == f"{robots}: would be updated (dry run: nothing written)\n"
    assert robots.read_text() == "User-agent: *\nDisallow:\n"


def test_json_summary_with_warnings(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_text(f"User-agent: *\nDisallow: /\n\nsitemap: {OLD}\n")
    code, out, err = run("--robots", str(robots), "--sitemap", S, "--remove", OLD, "--json")
    assert (code, err) == (0, "")  # diagnostics are in the JSON, not repeated on stderr
    data = json.loads(out)
    assert {k: data[k] for k in ("path", "status", "dry_run", "added", "removed", "kept")} == {
        "path": str(robots),
        "status": "updated",
        "dry_run": False,
        "added": [S],
        "removed": [OLD],
        "kept": [],
    }
    assert [(d["code"], d["severity"], d["url"]) for d in data["diagnostics"]] == [
        ("robots-disallows-root", "warning", "https://example.com/"),
        ("robots-disallows-sitemap", "warning", S),
    ]
    assert "diff" not in data


def test_json_dry_run_includes_the_diff(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    code, out, _ = run("--robots", str(robots), "--sitemap", S, "--json", "--dry-run")
    data = json.loads(out)
    assert (code, data["status"], data["dry_run"]) == (0, "created", True)
    assert data["diff"].startswith("--- /dev/null\n")
    assert not robots.exists()


def test_warnings_go_to_stderr_with_their_code(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_text("User-agent: Googlebot\nDisallow: /*.xml$\n")
    code, out, err = run("--robots", str(robots), "--sitemap", S)
    assert code == 0
    assert err == (
        f"{robots}: warning [robots-disallows-sitemap] robots.txt disallows the sitemap {S} for Googlebot: "
        "crawlers that obey it will not fetch the sitemap. Add an Allow: line for it or narrow the "
        "Disallow: rule\n"
    )
    assert out.endswith("updated (1 added, 0 removed, 1 listed)\n")


def test_remove_alone_leaves_the_managed_lines(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_text(f"Sitemap: {OLD}\n{BEGIN_MARKER}\nSitemap: {S}\n{END_MARKER}\n")
    code, out, _ = run("--robots", str(robots), "--remove", OLD)
    assert code == 0
    assert out.splitlines() == [f"- Sitemap: {OLD}", f"{robots}: updated (0 added, 1 removed, 1 listed)"]
    assert robots.read_text() == f"{BEGIN_MARKER}\nSitemap: {S}\n{END_MARKER}\n"


def test_name_keeps_a_block_per_set_of_sitemaps(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    news = "https://example.com/news.xml"
    assert run("--robots", str(robots), "--sitemap", S)[0] == 0
    assert run("--robots", str(robots), "--name", "news", "--sitemap", news)[0] == 0
    code, out, _ = run("--robots", str(robots), "--sitemap", S)
    assert (code, out) == (0, f"{robots}: unchanged (0 added, 0 removed, 1 listed)\n")
    assert robots.read_text() == (
        f"{BEGIN_MARKER}\nSitemap: {S}\n{END_MARKER}\n\n"
        f"# BEGIN sitemapkit news (managed Sitemap lines)\nSitemap: {news}\n# END sitemapkit news\n"
    )


def test_a_file_over_500_kib_exits_1_naming_it(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_bytes(b"# padding\n" * 60_000)
    code, out, err = run("--robots", str(robots), "--sitemap", S)
    assert (code, out) == (1, "")
    assert err.startswith(
        f"sitemapkit robots: {robots}: 600,000 bytes, more than the 512,000 bytes (500 KiB)"
    )


def test_a_folder_exits_1(tmp_path: Path) -> None:
    code, _, err = run("--robots", str(tmp_path), "--sitemap", S)
    assert code == 1
    assert err == f"sitemapkit robots: {tmp_path}: is a folder, not a robots.txt file\n"


def test_usage_errors_exit_2_and_write_nothing(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    for args, message in [
        ((), "give at least one --sitemap URL"),
        (("--sitemap", "/sitemap.xml"), "'/sitemap.xml' must be an absolute http(s) URL"),
        (("--sitemap", "ftp://example.com/s.xml"), "scheme 'ftp' is not http or https"),
        (("--sitemap", S + "#x"), "has a fragment"),
        (("--sitemap", S, "--remove", S), "both a sitemap to list and one to remove"),
        (("--sitemap", S, "--name", "a b"), "block name 'a b'"),
    ]:
        code, _, err = run("--robots", str(robots), *args)
        assert code == 2, args
        assert message in err, (args, err)
    assert run("--sitemap", S)[0] == 2  # --robots is required
    assert not robots.exists()


def test_help_has_examples() -> None:
    code, out, _ = run("--help")
    assert code == 0
    assert "Examples:" in out
    assert "sitemapkit robots --robots public/robots.txt --sitemap https://example.com/sitemap.xml" in out
    assert BEGIN_MARKER in out


def test_a_fifo_exits_1_at_once_and_stays(tmp_path: Path) -> None:
    fifo = tmp_path / "robots.txt"
    os.mkfifo(fifo)
    with feeding(fifo, RULES.encode()):
        code, out, err = run("--robots", str(fifo), "--sitemap", S)
    assert (code, out) == (1, "")
    assert err == (
        f"sitemapkit robots: {fifo}: is a named pipe (FIFO), not a regular file; robots.txt must be one "
        "(nothing was read or written)\n"
    )
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_sitemap_then_remove_gives_the_file_back(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    original = b"\xef\xbb\xbfUser-agent: *\r\nDisallow: /admin"
    robots.write_bytes(original)
    assert run("--robots", str(robots), "--sitemap", S)[0] == 0
    assert robots.read_bytes().endswith(
        f"/admin\r\n\r\n{BEGIN_MARKER}\r\nSitemap: {S}\r\n{END_MARKER}".encode()
    )
    code, out, _ = run("--robots", str(robots), "--remove", S)
    assert (code, out) == (0, f"- Sitemap: {S}\n{robots}: updated (0 added, 1 removed, 0 listed)\n")
    assert robots.read_bytes() == original
