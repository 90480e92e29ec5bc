"""How a crawl (and an audit) ends when it is stopped or lists nothing: SIGTERM mid-run prints one line and
exits 143 (its tasks cancelled and awaited, no `Task exception was never retrieved`); the crawl log is
written as the crawl goes (readable before it ends, kept after a kill) and never through a symbolic link;
`--json` prints `ok: false` with the reason when nothing was listed."""

from __future__ import annotations

import json
import os
import signal
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
from tests.support.localserver import LocalServer, Route

HTML = "text/html; charset=utf-8"
REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO / "src")}


def busy_site(server: LocalServer, pages: int = 60) -> None:
    """Pages that answer at once with a large body and two new links each: the crawler is busy in Python
    (parsing) most of the time, where a signal used to land inside a task."""

    def answer(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        filler = "<p>filler text</p>" * 2000
        body = f"<html><head><title>{h.path}</title></head><body>{h.path} {filler}"
        body += f"<a href='{h.path}x1'>a</a><a href='{h.path}x2'>b</a></body></html>"
        return 200, {"Content-Type": HTML}, body.encode()

    class Routes(dict[str, Any]):
        def get(self, path: str, default: Any = None) -> Any:
            if path.startswith("/p"):
                return Route(handler=answer)
            return super().get(path, default)

    server.routes = Routes(server.routes)
    links = "".join(f"<a href='/p{i}'>x</a>" for i in range(pages))
    server.route("/", f"<html><body>{links}</body></html>", content_type=HTML)
    urls = "".join(f"<url><loc>{server.url(f'/p{i}')}</loc></url>" for i in range(pages))
    server.route(
        "/sitemap.xml", f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
    )


def terminate_when_busy(server: LocalServer, args: list[str]) -> tuple[int, str]:
    """Run sitemapkit with `args`, SIGTERM it once the server has answered 5 pages; (status, stderr)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "sitemapkit", *args],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while len([r for r in server.requests if r.path.startswith("/p")]) < 5:
            assert time.monotonic() < deadline and proc.poll() is None, "the run never got going"
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err


@pytest.mark.parametrize("attempt", range(3))
def test_sigterm_during_crawl_says_one_line(server: LocalServer, tmp_path: Path, attempt: int) -> None:
    busy_site(server)
    args = ["crawl", server.url("/"), "--out", str(tmp_path / "out"), "--concurrency", "8"]
    status, err = terminate_when_busy(server, args)
    assert status == 143, err
    assert err.splitlines() == [
        "sitemapkit crawl: stopped by SIGTERM: nothing published; continue with --resume"
    ], err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("attempt", range(3))
def test_sigterm_during_audit_says_one_line(server: LocalServer, attempt: int) -> None:
    busy_site(server)
    status, err = terminate_when_busy(server, ["audit", server.url("/"), "--concurrency", "8"])
    assert status == 143, err
    assert err.splitlines() == ["sitemapkit audit: stopped by SIGTERM"], err


def test_crawl_log_is_written_as_the_crawl_goes(server: LocalServer, tmp_path: Path) -> None:
    """The log has the pages decided while the crawl still waits on a slow page, and keeps them after a
    kill (it was written only at the end: empty after Ctrl-C or a kill)."""
    release = threading.Event()

    def slow(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        release.wait(30)
        return 200, {"Content-Type": HTML}, b"<html><body>slow</body></html>"

    server.route("/", "<html><body><a href='/a'>a</a><a href='/slow'>s</a></body></html>", content_type=HTML)
    server.route("/a", "<html><body>a</body></html>", content_type=HTML)
    server.handle("/slow", slow)
    log = tmp_path / "crawl.jsonl"
    args = [sys.executable, "-m", "sitemapkit", "crawl", server.url("/"), "--out", str(tmp_path / "out")]
    args += ["--no-sitemaps", "--crawl-log", str(log)]
    proc = subprocess.Popen(args, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        urls: set[str] = set()
        while urls != {server.url("/"), server.url("/a")}:
            assert time.monotonic() < deadline, urls
            time.sleep(0.02)
            text = log.read_text() if log.exists() else ""
            urls = {json.loads(line)["url"] for line in text.splitlines() if line.endswith("}")}
        proc.kill()
        proc.wait()
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert {r["url"] for r in records} == {server.url("/"), server.url("/a")}  # kept after the kill
    assert all(r["status"] == 200 and r["reason"] is None for r in records)


def test_crawl_log_refuses_a_symlink(server: LocalServer, tmp_path: Path) -> None:
    server.route("/", "<html><body>home</body></html>", content_type=HTML)
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    (tmp_path / "crawl.jsonl").symlink_to(target)
    result = CliRunner().invoke(
        main,
        [
            "crawl",
            server.url("/"),
            "--out",
            str(tmp_path / "out"),
            "--crawl-log",
            str(tmp_path / "crawl.jsonl"),
        ],
    )
    assert result.exit_code == 1 and "symbolic link" in result.output
    assert target.read_text() == "keep me"
    assert server.requests == []  # refused before the crawl


def test_nothing_listed_says_why_and_json_says_ok_false(server: LocalServer, tmp_path: Path) -> None:
    links = "".join(f"<a href='/p{i}'>x</a>" for i in range(50))
    server.route("/robots.txt", "User-agent: *\nDisallow: /", content_type="text/plain")
    server.route("/", f"<html><body>{links}</body></html>", content_type=HTML)
    out = str(tmp_path / "out")
    result = CliRunner().invoke(main, ["crawl", server.url("/"), "--out", out, "--no-sitemaps"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "sitemapkit crawl: nothing was listed: robots.txt disallows all 1 URL"
    ], result.output
    as_json = CliRunner().invoke(main, ["crawl", server.url("/"), "--out", out, "--no-sitemaps", "--json"])
    assert as_json.exit_code == 1
    data = json.loads(as_json.stdout)
    assert data["ok"] is False and "robots.txt disallows all" in data["error"]


def test_nothing_listed_when_the_site_answers_5xx(server: LocalServer, tmp_path: Path) -> None:
    server.route("/", "down", status=503, content_type="text/plain")
    result = CliRunner().invoke(
        main,
        [
            "crawl",
            server.url("/"),
            "--out",
            str(tmp_path / "out"),
            "--no-sitemaps",
            "--retries",
            "0",
            "--json",
        ],
    )
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert (
        data["ok"] is False
        and data["error"] == "nothing was listed: of 1 URL met, 1 status-5xx (answered 503)"
    )


def test_sigterm_with_publish_partial_publishes_what_was_listed(server: LocalServer, tmp_path: Path) -> None:
    """SIGTERM is Ctrl-C's twin: with --publish-partial what was listed is published and summed up, and the
    run ends as after Ctrl-C (0: the sitemaps are there)."""
    busy_site(server)
    out = tmp_path / "out"
    args = ["crawl", server.url("/"), "--out", str(out), "--concurrency", "8", "--publish-partial"]
    status, err = terminate_when_busy(server, args)
    assert status == 0, err
    assert (out / "sitemap.xml").is_file()
