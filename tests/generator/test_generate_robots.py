"""`generate --robots` and `build` with `robots =`: robots.txt lists what was published, after publishing."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from sitemapkit.cli import main
from sitemapkit.generator.config import build

BASE = "https://example.com/"


def test_generate_lists_the_index_in_robots_txt_idempotently(tmp_path: Path) -> None:
    (tmp_path / "urls.txt").write_text("".join(f"{BASE}p{i}\n" for i in range(5)))
    robots = tmp_path / "robots.txt"
    robots.write_bytes(b"User-agent: *\r\nDisallow: /admin/\r\nSitemap: https://example.com/old.xml\r\n")
    args = ["generate", str(tmp_path / "urls.txt"), "--base-url", BASE, "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(main, [*args, "--max-urls", "2", "--robots", str(robots)])
    assert result.exit_code == 0, result.output
    assert f"robots.txt: {robots} updated (added {BASE}sitemap.xml)" in result.output
    text = robots.read_bytes()
    assert text.startswith(b"User-agent: *\r\nDisallow: /admin/\r\nSitemap: https://example.com/old.xml\r\n")
    assert b"Sitemap: https://example.com/sitemap.xml\r\n" in text
    stamp = robots.stat().st_mtime_ns
    again = CliRunner().invoke(main, [*args, "--max-urls", "2", "--robots", str(robots)])
    assert again.exit_code == 0 and "unchanged (already listed)" in again.output
    assert robots.read_bytes() == text and robots.stat().st_mtime_ns == stamp


def test_a_robots_txt_that_cannot_be_used_stops_before_publishing(tmp_path: Path) -> None:
    (tmp_path / "urls.txt").write_text(BASE + "\n")
    robots = tmp_path / "robots.txt"
    robots.write_bytes(b"# padding\n" * 60_000)  # over the 500 KiB Google reads
    out = str(tmp_path / "out")
    args = ["generate", str(tmp_path / "urls.txt"), "--base-url", BASE, "--out", out, "--robots", str(robots)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert "500 KiB" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_build_updates_the_robots_txt_the_config_names(tmp_path: Path) -> None:
    (tmp_path / "urls.txt").write_text(BASE + "a\n")
    (tmp_path / "sitemapkit.toml").write_text(
        f'base_url = "{BASE}"\nrobots = "public/robots.txt"\n[output]\ndir = "public"\ngzip = true\n'
        '[[source]]\ntype = "list"\npath = "urls.txt"\n'
    )
    result = build(tmp_path / "sitemapkit.toml")
    assert result.robots is not None and result.robots.status == "created"
    assert b"Sitemap: https://example.com/sitemap.xml.gz" in (tmp_path / "public" / "robots.txt").read_bytes()


def test_a_robots_txt_in_a_missing_folder_is_a_usage_error_before_publishing(tmp_path: Path) -> None:
    (tmp_path / "urls.txt").write_text(BASE + "\n")
    out = tmp_path / "out"
    args = ["generate", str(tmp_path / "urls.txt"), "--base-url", BASE, "--out", str(out)]
    result = CliRunner().invoke(main, [*args, "--robots", str(tmp_path / "nowhere" / "robots.txt")])
    assert result.exit_code == 2 and "nowhere does not exist" in result.output
    assert not out.exists()
