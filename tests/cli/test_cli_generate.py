from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sitemapkit.cli import main
from tests.support.helpers import locs, published

BASE = "https://example.com/"


def run(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sitemapkit", *args], capture_output=True, text=True, input=input, timeout=120
    )


def test_generate_publishes_and_prints_a_summary(tmp_path: Path) -> None:
    src = tmp_path / "urls.txt"
    src.write_text("".join(f"{BASE}p{i}\n" for i in range(5)) + "https://other.org/x\n")
    out = tmp_path / "out"
    proc = run("generate", str(src), "--base-url", BASE, "--out", str(out), "--max-urls", "2", "--gzip")
    assert proc.returncode == 0, proc.stderr
    assert "published 5 URLs in 3 files" in proc.stdout
    assert "submit: https://example.com/sitemap.xml.gz" in proc.stdout
    assert f"{src}:6: error [url-not-allowed]" in proc.stderr
    assert published(out) == ["sitemap-1.xml.gz", "sitemap-2.xml.gz", "sitemap-3.xml.gz", "sitemap.xml.gz"]
    assert locs(out / "sitemap-3.xml.gz") == [f"{BASE}p4"]


def test_json_summary(tmp_path: Path) -> None:
    src = tmp_path / "urls.csv"
    src.write_text("loc,lastmod\nhttps://example.com/a,2024-01-01\nhttps://example.com/a,2024-01-01\n")
    result = CliRunner().invoke(
        main, ["generate", str(src), "--base-url", BASE, "--out", str(tmp_path / "o"), "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["entry_url"] == BASE + "sitemap.xml"
    assert data["files"] == [
        {
            "path": str(tmp_path / "o" / "sitemap.xml"),
            "url": BASE + "sitemap.xml",
            "urls": 1,
            "bytes": (tmp_path / "o" / "sitemap.xml").stat().st_size,
            "lastmod": "2024-01-01",
        }
    ]
    assert data["totals"]["duplicates"] == 1 and data["totals"]["urls"] == 1
    assert [d["code"] for d in data["diagnostics"]] == ["duplicate-url"]
    assert data["diagnostics"][0]["line"] == 3


def test_strict_exits_1_and_publishes_nothing(tmp_path: Path) -> None:
    src = tmp_path / "urls.txt"
    src.write_text(f"{BASE}a\t2024-02-30\n")
    proc = run("generate", str(src), "--base-url", BASE, "--out", str(tmp_path / "o"), "--strict")
    assert proc.returncode == 1
    assert "invalid-date" in proc.stderr and "nothing was published" in proc.stderr
    assert not (tmp_path / "o").exists() or list((tmp_path / "o").iterdir()) == []


def test_unreadable_input_exits_1_without_traceback(tmp_path: Path) -> None:
    proc = run("generate", str(tmp_path / "missing.txt"), "--base-url", BASE, "--out", str(tmp_path / "o"))
    assert proc.returncode == 1
    assert "missing.txt: cannot open" in proc.stderr and "Traceback" not in proc.stderr
    bad = tmp_path / "bad.csv"
    bad.write_text("link\nx\n")
    proc = run("generate", str(bad), "--base-url", BASE, "--out", str(tmp_path / "o"))
    assert proc.returncode == 1 and "'loc' column" in proc.stderr and "Traceback" not in proc.stderr


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    src = tmp_path / "u.txt"
    src.write_text(BASE + "\n")
    for args in (
        ["generate", str(src), "--out", str(tmp_path)],
        ["generate", str(src), "--base-url", BASE, "--out", str(tmp_path), "--max-urls", "50001"],
        ["generate", str(src), "--base-url", "ftp://x", "--out", str(tmp_path)],
        ["generate", str(src), "--base-url", BASE, "--out", str(tmp_path), "--name", "../up"],
        ["generate", str(src), "--base-url", BASE, "--out", str(tmp_path), "--index", "sometimes"],
    ):
        proc = run(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "Traceback" not in proc.stderr


def test_stdin_and_several_sources(tmp_path: Path) -> None:
    gz = tmp_path / "more.txt.gz"
    gz.write_bytes(gzip.compress(f"{BASE}from-gzip\n".encode()))
    proc = run(
        "generate",
        "-",
        str(gz),
        "--base-url",
        BASE,
        "--out",
        str(tmp_path / "o"),
        input=f"{BASE}from-stdin\n",
    )
    assert proc.returncode == 0, proc.stderr
    assert locs(tmp_path / "o" / "sitemap.xml") == [f"{BASE}from-stdin", f"{BASE}from-gzip"]


def test_no_progress_output_when_piped(tmp_path: Path) -> None:
    src = tmp_path / "u.txt"
    src.write_text("".join(f"{BASE}{i}\n" for i in range(3000)))
    proc = run("generate", str(src), "--base-url", BASE, "--out", str(tmp_path / "o"))
    assert proc.returncode == 0 and proc.stderr == ""


def test_help_has_an_example() -> None:
    result = CliRunner().invoke(main, ["generate", "--help"])
    assert result.exit_code == 0 and "Examples:" in result.output and "--base-url" in result.output


def test_progress_shows_on_a_terminal(tmp_path: Path) -> None:
    import os
    import pty

    src = tmp_path / "u.txt"
    src.write_text("".join(f"{BASE}{i}\n" for i in range(25_000)))
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sitemapkit",
            "generate",
            str(src),
            "--base-url",
            BASE,
            "--out",
            str(tmp_path / "o"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=follower,
        stdin=subprocess.DEVNULL,
    )
    os.close(follower)
    output = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    assert proc.wait(timeout=120) == 0
    os.close(leader)
    assert b"URLs read" in output
    assert b"/?" not in output  # a count with separators (25,000), not rich's "25000/?" for no total


def test_sigterm_mid_run_publishes_nothing_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    import json
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "out"
    command = [sys.executable, "-m", "sitemapkit", "generate", "-", "--base-url", "https://example.com/"]
    proc = subprocess.Popen(
        [*command, "--out", str(out), "--hreflang", "complete"], stdin=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin is not None
    line = json.dumps({"loc": "https://example.com/x", "alternates": [{"hreflang": "en", "href": "/x"}]})
    proc.stdin.write((line + "\n").encode() * 1000)
    proc.stdin.flush()
    deadline = time.monotonic() + 60
    while not any(p.name.endswith(".tmp") for p in out.glob(".*")) and time.monotonic() < deadline:
        time.sleep(0.05)  # wait until the run has started writing (not a timing assertion)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err.decode()
    assert err.decode().strip() == "sitemapkit generate: stopped by SIGTERM; nothing was published"
    assert list(out.iterdir()) == []  # nothing published, no temporary file left behind


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [("--volatile", "!!x", "unsupported CSS selector '!!x'"), ("--volatile", "a:hover", "a:hover")],
)
def test_a_bad_volatile_selector_is_a_usage_error(
    tmp_path: Path, option: str, value: str, message: str
) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text("<html><body>hi</body></html>")
    out = str(tmp_path / "out")
    args = ["generate", "--dir", str(tmp_path / "site"), "--base-url", BASE, "--out", out, option, value]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_an_interrupt_after_the_set_is_published_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C while robots.txt is updated, after the sitemaps went into place: it said "nothing was
    # published" over a published set (hostile review)
    import sitemapkit.generator.robots as robots_module

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    real = robots_module.update_robots

    def interrupted_once_published(*args: object, **kwargs: object) -> object:
        if kwargs.get("dry_run"):  # the check before the run
            return real(*args, **kwargs)  # type: ignore[arg-type]
        raise KeyboardInterrupt

    monkeypatch.setattr(robots_module, "update_robots", interrupted_once_published)
    urls = tmp_path / "urls.txt"
    urls.write_text("https://example.com/a\n")
    out = tmp_path / "out"
    args = ["generate", str(urls), "--base-url", "https://example.com/", "--out", str(out)]
    result = CliRunner().invoke(main, [*args, "--robots", str(tmp_path / "robots.txt")])
    assert result.exit_code == 130
    assert "interrupted; it came after the new files were published, which stand" in result.output
    assert (out / "sitemap.xml").is_file()
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == [".sitemapkit-sitemap.json"]
    # and a run interrupted before it publishes still says nothing was
    import sitemapkit.generator.writer as writer_module

    monkeypatch.setattr(writer_module.SitemapWriter, "_publish", interrupted)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 130
    assert "interrupted; nothing was published" in result.output


def test_sigterm_during_the_renames_is_held_like_ctrl_c() -> None:
    import os
    import signal

    from sitemapkit.core.runner import interrupts_held

    seen: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        with interrupts_held() as came:
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGINT)
        assert came == [signal.SIGTERM, signal.SIGINT] and seen == []  # held, not handled
        os.kill(os.getpid(), signal.SIGTERM)
        assert seen == [signal.SIGTERM]  # the handler is back
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_an_interrupt_while_the_command_is_imported_names_the_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # it said "sitemapkit sitemapkit: interrupted", without "nothing was published" (hostile review)
    import importlib

    def interrupted(name: str) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(importlib, "import_module", interrupted)
    result = CliRunner().invoke(main, ["generate", "urls.txt", "--out", "out"])
    assert result.exit_code == 130
    assert result.output == "sitemapkit generate: interrupted; nothing was published\n"
