"""`sitemapkit indexnow` against real local servers: key setup, submission modes, output, exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import sitemapkit
from sitemapkit.cli import main
from sitemapkit.generator.state import StateStore
from sitemapkit.publisher.indexnow import MARKER
from tests.publisher.test_indexnow import head
from tests.support.localserver import Answer, LocalServer, sequence
from tests.support.rawserver import raw_server

KEY = "a1b2c3d4e5f60718293a4b5c6d7e8f90"
OK: Answer = (200, {}, b"")


def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, ["indexnow", *args], input=input, env=env)


def serve_key(server: LocalServer, body: str = KEY) -> None:
    server.route(f"/{KEY}.txt", body, content_type="text/plain")


def posts(server: LocalServer) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in server.requests if r.method == "POST"]


def site(server: LocalServer, *extra: str) -> list[str]:
    """Key, host and endpoint options for the local server; no waiting between retries."""
    return [
        "--key",
        KEY,
        "--host",
        server.base,
        "--endpoint",
        server.url("/indexnow"),
        "--max-wait",
        "0",
        *extra,
    ]


def build(tmp_path: Path, server: LocalServer, pages: list[str]) -> Path:
    db = tmp_path / "state.db"
    listing = tmp_path / "urls.txt"
    listing.write_text("".join(server.url(p) + "\n" for p in pages))
    sitemapkit.generate([str(listing)], tmp_path / "public", server.url("/"), state=db)
    return db


# -- keys ---------------------------------------------------------------------------------------------------


def test_new_key_prints_it_and_writes_its_file(tmp_path: Path) -> None:
    result = run("--new-key", "--out", str(tmp_path / "public"), "--host", "www.example.com")
    assert result.exit_code == 0, result.output
    key = result.stdout.strip()
    assert len(key) == 32 and (tmp_path / "public" / f"{key}.txt").read_text() == key
    assert f"https://www.example.com/{key}.txt" in result.stderr and "--check-key" in result.stderr
    only = run("--new-key")
    assert only.exit_code == 0 and len(only.stdout.strip()) == 32 and only.stdout.strip() != key
    as_json = json.loads(run("--new-key", "--json", "--out", str(tmp_path / "j")).stdout)
    assert Path(as_json["file"]).read_text() == as_json["key"]


def test_out_writes_the_file_of_a_given_key(tmp_path: Path) -> None:
    result = run("--key", KEY, "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert (tmp_path / f"{KEY}.txt").read_text() == KEY
    assert f"wrote {tmp_path / (KEY + '.txt')}" in result.stdout
    (tmp_path / f"{KEY}.txt").write_text("tampered")
    refused = run("--key", KEY, "--out", str(tmp_path))
    assert refused.exit_code == 1 and "exists with other content" in refused.stderr


def test_key_from_the_environment(tmp_path: Path) -> None:
    result = run("--out", str(tmp_path), env={"SITEMAPKIT_INDEXNOW_KEY": KEY})
    assert result.exit_code == 0 and (tmp_path / f"{KEY}.txt").exists()


def test_check_key(server: LocalServer) -> None:
    serve_key(server, KEY + "\n")
    ok = run("--check-key", "--key", KEY, "--host", server.base)
    assert ok.exit_code == 0, ok.output
    assert ok.stdout == f"the key file {server.url(f'/{KEY}.txt')} is served and holds the key\n"
    serve_key(server, "<html>Page not found</html>")
    bad = run("--check-key", "--key", KEY, "--host", server.base, "--max-retries", "0")
    assert bad.exit_code == 1 and "serves an HTML page" in bad.stderr and "Traceback" not in bad.output


def test_check_key_allows_only_ascii_whitespace_around_the_key(server: LocalServer) -> None:
    serve_key(server, f" {KEY}\t\r\n")
    assert run("--check-key", "--key", KEY, "--host", server.base).exit_code == 0
    serve_key(server, KEY + "\x1c")  # str.strip() takes it for whitespace; an engine may not
    bad = run("--check-key", "--key", KEY, "--host", server.base, "--max-retries", "0")
    assert bad.exit_code == 1 and "Traceback" not in bad.output
    assert "does not hold the key: it serves the key with '\\x1c' around it" in bad.stderr


# -- submitting ---------------------------------------------------------------------------------------------


def test_urls_file_submitted_in_batches(tmp_path: Path, server: LocalServer) -> None:
    serve_key(server)
    server.handle("/indexnow", sequence(OK, (202, {}, b"")))
    listing = tmp_path / "changed.txt"
    listing.write_text("".join(server.url(f"/p{i}") + "\n" for i in range(5)) + "https://other.example/x\n")
    result = run("--urls", str(listing), *site(server, "--batch-size", "2"))
    assert result.exit_code == 0, result.output
    assert [b["urlList"] for b in posts(server)] == [
        [server.url("/p0"), server.url("/p1")],
        [server.url("/p2"), server.url("/p3")],
        [server.url("/p4")],
    ]
    assert f"{listing}:6: error [url-not-allowed] not on the host 127.0.0.1:{server.port}" in result.stderr
    assert result.stdout.splitlines() == [
        f"submitted 5 URLs in 3 requests to {server.url('/indexnow')} for 127.0.0.1:{server.port}; "
        "1 URL skipped (see above)",
        "the endpoint answered 202 Accepted: it has not validated the key yet (usual for a new key)",
    ]


def test_urls_from_stdin_with_json_summary(server: LocalServer) -> None:
    serve_key(server)
    server.handle("/indexnow", sequence(OK))
    result = run("--urls", "-", *site(server, "--json"), input="/a\n/b\n")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["submitted"] == 2 and data["complete"] and data["batches"][0]["status"] == 200
    assert posts(server)[0]["urlList"] == [server.url("/a"), server.url("/b")]


def test_dry_run_prints_the_requests_and_sends_nothing(tmp_path: Path, server: LocalServer) -> None:
    db = build(tmp_path, server, ["/a", "/b", "/c"])
    result = run("--since-last", "--state", str(db), *site(server, "--dry-run", "--batch-size", "2"))
    assert result.exit_code == 0, result.output
    assert server.requests == []
    host = f"127.0.0.1:{server.port}"
    assert result.stdout.splitlines() == [
        "first submission from this state database: every URL counts as added (--baseline starts from the "
        "last build instead)",
        f"dry run: nothing sent, nothing recorded; POST {server.url('/indexnow')}",
        f'  request 1: {{"host": "{host}", "key": "...", "urlList": [2 URLs]}}',
        f"    {server.url('/a')}, {server.url('/b')}",
        f'  request 2: {{"host": "{host}", "key": "...", "urlList": [1 URL]}}',
        f"    {server.url('/c')}",
        "would submit 3 URLs in 2 requests (3 added, 0 changed, 0 removed; run 1)",
    ]
    with StateStore(db) as store:
        assert store.marker(MARKER) is None


def test_since_last_stops_on_403_and_the_rerun_resumes(tmp_path: Path, server: LocalServer) -> None:
    db = build(tmp_path, server, [f"/p{i}" for i in range(5)])
    serve_key(server)
    server.handle("/indexnow", sequence(OK, (403, {}, b"UserForbiddedToAccessSite"), OK))
    args = ["--since-last", "--state", str(db), *site(server, "--batch-size", "2")]
    stopped = run(*args)
    assert stopped.exit_code == 1
    assert "answered 403: forbidden: the engine does not accept the key" in stopped.stderr
    assert "(the endpoint said: UserForbiddedToAccessSite)" in stopped.stderr
    assert (
        "2 URLs accepted and recorded before the stop; run the same command again to resume" in stopped.stderr
    )
    assert "Traceback" not in stopped.output
    resumed = run(*args)
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout.splitlines()[0] == "resuming a stopped submission (2 URLs were accepted before)"
    accepted = [b["urlList"] for b in posts(server)]
    assert accepted == [
        [server.url("/p0"), server.url("/p1")],
        [server.url("/p2"), server.url("/p3")],  # refused
        [server.url("/p2"), server.url("/p3")],
        [server.url("/p4")],
    ]
    again = run(*args)
    assert again.exit_code == 0 and again.stdout == "nothing to submit: no change since run 1\n"
    assert len(posts(server)) == 4


def test_429_that_does_not_pass_stops_with_json_output(tmp_path: Path, server: LocalServer) -> None:
    db = build(tmp_path, server, ["/a", "/b"])
    serve_key(server)
    server.handle("/indexnow", sequence((429, {"Retry-After": "0"}, b"")))
    result = run("--since-last", "--state", str(db), *site(server, "--max-retries", "2", "--json"))
    assert result.exit_code == 1
    assert "still answered 429 Too Many Requests after 3 attempts" in result.stderr
    data = json.loads(result.stdout)
    assert not data["complete"] and data["submitted"] == 0 and "429" in data["error"]
    assert len(posts(server)) == 3


def test_a_long_retry_after_stops_and_says_so(tmp_path: Path, server: LocalServer) -> None:
    db = build(tmp_path, server, ["/a"])
    serve_key(server)
    server.handle("/indexnow", sequence((503, {"Retry-After": "120"}, b"")))
    result = run("--since-last", "--state", str(db), *site(server, "--max-wait", "30"))
    assert result.exit_code == 1 and "asks to wait 120 s, longer than the 30 s allowed" in result.stderr
    assert "run the same command again to resume" in result.stderr and len(posts(server)) == 1


def test_key_not_served_exits_1_and_sends_nothing(tmp_path: Path, server: LocalServer) -> None:
    db = build(tmp_path, server, ["/a"])
    result = run("--since-last", "--state", str(db), *site(server, "--max-retries", "0"))
    assert result.exit_code == 1 and "is not served (not found)" in result.stderr
    assert posts(server) == []


def test_baseline_then_since_last(tmp_path: Path, server: LocalServer) -> None:
    db = build(tmp_path, server, ["/a", "/b"])
    marked = run("--baseline", "--state", str(db))
    assert marked.exit_code == 0 and "recorded run 1 as submitted" in marked.stdout
    build(tmp_path, server, ["/a", "/b", "/c"])
    serve_key(server)
    server.handle("/indexnow", sequence(OK))
    result = run("--since-last", "--state", str(db), *site(server))
    assert result.exit_code == 0, result.output
    assert [b["urlList"] for b in posts(server)] == [[server.url("/c")]]
    assert "submitted 1 URL in 1 request (1 added, 0 changed, 0 removed; run 2)" in result.stdout


def test_missing_state_exits_1(tmp_path: Path, server: LocalServer) -> None:
    result = run("--since-last", "--state", str(tmp_path / "nope.db"), *site(server))
    assert result.exit_code == 1 and "no state database here" in result.stderr


def test_unreadable_url_file_exits_1(tmp_path: Path, server: LocalServer) -> None:
    result = run("--urls", str(tmp_path / "missing.txt"), *site(server))
    assert result.exit_code == 1 and "missing.txt: cannot open" in result.stderr
    assert server.requests == [] and "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "say what to do"),
        (["--since-last", "--urls", "x.txt"], "--since-last and --urls cannot be used together"),
        (["--new-key", "--check-key"], "cannot be used together"),
        (["--urls", "x.txt", "--state", "s.db", "--key", KEY, "--host", "example.com"], "--state is for"),
        (["--since-last", "--key", KEY], "--since-last needs --host"),
        (["--since-last", "--host", "example.com"], "give the key with --key"),
        (["--since-last", "--host", "example.com", "--key", "short"], "not a valid IndexNow key"),
        (["--since-last", "--host", "example.com/blog/", "--key", KEY], "has a path"),
        (
            [
                "--since-last",
                "--host",
                "example.com",
                "--key",
                KEY,
                "--key-location",
                "https://cdn.example/k.txt",
            ],
            "is not on the host",
        ),
        (["--urls", "x.txt", "--host", "example.com", "--key", KEY, "--batch-size", "10001"], "--batch-size"),
        (["--new-key", "--key", KEY], "do not give --key"),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr


def test_help_has_examples() -> None:
    result = run("--help")
    assert result.exit_code == 0
    assert "sitemapkit indexnow --since-last --key KEY --host www.example.com" in result.stdout
    assert "never pings Google or Bing sitemap endpoints" in " ".join(result.stdout.split())


def test_an_accepted_request_whose_body_never_ends_is_sent_once(tmp_path: Path) -> None:
    # 200 and a body that promises 3 bytes and sends 1: the status line is the answer, the body is not read
    with raw_server(
        lambda conn: conn.sendall(head(200, 3) + b"x"), {f"/{KEY}.txt": KEY.encode()}, hold=True
    ) as raw:
        listing = tmp_path / "urls.txt"
        listing.write_text("/a\n/b\n")
        result = run(
            "--urls", str(listing), "--key", KEY, "--host", raw.base, "--endpoint", raw.base + "/indexnow",
            "--max-wait", "0", "--json",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert [json.loads(b)["urlList"] for b in raw.posts] == [[raw.base + "/a", raw.base + "/b"]]
    assert json.loads(result.stdout)["batches"][0]["attempts"] == 1
