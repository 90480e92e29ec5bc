"""IndexNow against real local servers: keys and key files, batches and their JSON, every response the
protocol defines, retries, and resumable submission of the changes a real state store records."""

from __future__ import annotations

import contextlib
import datetime as dt
import email.utils
import itertools
import json
import socket
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sitemapkit
from sitemapkit.core.errors import InputError, PublishError, UsageError
from sitemapkit.core.model import UrlEntry
from sitemapkit.generator.state import StateStore
from sitemapkit.publisher.indexnow import (
    DEFAULT_ENDPOINT,
    KEY_PATTERN,
    MARKER,
    IndexNowError,
    KeyFileError,
    Site,
    _Progress,
    check_key,
    generate_key,
    mark_submitted,
    parse_host,
    read_url_file,
    submit,
    submit_changes,
    verify_key,
    write_key_file,
)
from sitemapkit.reader.fetch import FetchOptions, FetchPolicy
from tests.support.helpers import Sleeps
from tests.support.localserver import Answer, LocalServer, sequence
from tests.support.rawserver import raw_server

KEY = "3f1c2a9be0d84b7c9a5e6d1f2b3c4a5d"
OK: Answer = (200, {}, b"")
ACCEPTED: Answer = (202, {}, b"")


def opts(sleeps: Sleeps | None = None, **kw: Any) -> FetchOptions:
    """Options whose waits (the politeness layer's pacing and holds) are recorded in `sleeps`, with the
    monotonic clock they move, so the delays recorded are exactly those asked for."""
    sleeps = sleeps or Sleeps()
    base: dict[str, Any] = {
        "sleep": sleeps,
        "monotonic": sleeps.monotonic,
        "jitter": lambda: 0.0,
        "backoff_base": 0.001,
    }
    base.update(kw)
    return FetchOptions(**base)


def serve_key(server: LocalServer, body: bytes | str = KEY, path: str = f"/{KEY}.txt", **kw: Any) -> str:
    return server.route(path, body, content_type="text/plain", **kw)


def netloc(server: LocalServer) -> str:
    return f"127.0.0.1:{server.port}"


def posts(server: LocalServer, path: str = "/indexnow") -> list[dict[str, Any]]:
    """The JSON bodies POSTed to the endpoint, in order."""
    return [json.loads(r.body) for r in server.requests if r.method == "POST" and r.path == path]


def urls_of(server: LocalServer, n: int, prefix: str = "/p") -> list[str]:
    return [server.url(f"{prefix}{i:03d}") for i in range(n)]


# -- keys ---------------------------------------------------------------------------------------------------


def test_generated_keys_are_valid_random_hex() -> None:
    keys = {generate_key() for _ in range(50)}
    assert len(keys) == 50
    for key in keys:
        assert len(key) == 32 and all(c in "0123456789abcdef" for c in key)
        assert check_key(key) == key
    assert len(generate_key(8)) == 8 and len(generate_key(128)) == 128 and len(generate_key(9)) == 9
    for bad in (7, 129, 0):
        with pytest.raises(UsageError):
            generate_key(bad)


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("abc-123", "7 characters"),
        ("a" * 129, "129 characters"),
        ("key_with_underscore", "'_'"),
        ("../../etc/passwd", "'.' '/'"),
        ("schlüssel-12345", "'ü'"),
        ("", "0 characters"),
    ],
)
def test_bad_keys_are_refused_with_the_reason(key: str, why: str) -> None:
    with pytest.raises(UsageError, match="not a valid IndexNow key") as info:
        check_key(key)
    assert why in str(info.value)


@given(
    st.text(
        alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-", min_size=8, max_size=128
    )
)
def test_every_key_of_the_protocol_alphabet_is_accepted(key: str) -> None:
    assert check_key(key) == key


@given(st.text(min_size=1, max_size=140))
def test_check_key_agrees_with_the_protocol_rule(key: str) -> None:
    valid = 8 <= len(key) <= 128 and all(c.isascii() and (c.isalnum() or c == "-") for c in key)
    if valid:
        assert check_key(key) == key
    else:
        with pytest.raises(UsageError):
            check_key(key)
    assert bool(KEY_PATTERN.fullmatch(key)) == valid


def test_write_key_file_is_atomic_idempotent_and_stays_in_its_folder(tmp_path: Path) -> None:
    out = tmp_path / "public" / "site"
    path = write_key_file(out, KEY)
    assert path == out / f"{KEY}.txt"
    assert path.read_bytes() == KEY.encode()
    assert sorted(p.name for p in out.iterdir()) == [f"{KEY}.txt"]  # no temporary file left
    mtime = path.stat().st_mtime_ns
    assert write_key_file(out, KEY) == path and path.stat().st_mtime_ns == mtime  # left as it was
    path.write_text(KEY + "\n")  # a trailing newline is the same key
    assert write_key_file(out, KEY) == path and path.read_text() == KEY + "\n"
    path.write_text("something else")
    with pytest.raises(PublishError, match="exists with other content"):
        write_key_file(out, KEY)
    assert path.read_text() == "something else"
    for other in (KEY + "\x0c", KEY + "\x0b", "\x1c" + KEY):  # verify_key would refuse these too
        path.write_text(other)
        with pytest.raises(PublishError, match="exists with other content"):
            write_key_file(out, KEY)
        assert path.read_text() == other


def test_write_key_file_refuses_a_bad_key_before_touching_anything(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for key in ("../../escape-key", "/etc/passwd-key", "short"):
        with pytest.raises(UsageError):
            write_key_file(out, key)
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_write_key_file_into_a_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(PublishError):
        write_key_file(tmp_path / "file", KEY)


# -- host, key location, scope ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("www.example.com", ("https", "www.example.com")),
        ("WWW.Example.COM", ("https", "www.example.com")),
        ("https://www.example.com/", ("https", "www.example.com")),
        ("https://www.example.com:443", ("https", "www.example.com")),
        ("http://127.0.0.1:8080", ("http", "127.0.0.1:8080")),
        ("example.com:8443", ("https", "example.com:8443")),
        ("bücher.de", ("https", "xn--bcher-kva.de")),
    ],
)
def test_parse_host(given: str, expected: tuple[str, str]) -> None:
    assert parse_host(given) == expected


@pytest.mark.parametrize(
    "bad", ["https://example.com/blog/", "example.com/x", "ftp://example.com", "", "exa mple.com"]
)
def test_parse_host_refuses(bad: str) -> None:
    with pytest.raises(UsageError):
        parse_host(bad)


def test_site_scope_and_key_location() -> None:
    site = Site.make("www.example.com", KEY)
    assert site.key_url == f"https://www.example.com/{KEY}.txt"
    assert site.explain("https://www.example.com/a") is None
    assert site.explain("http://www.example.com/a") is None  # the protocol allows mixing http and https
    assert site.explain("https://example.com/a") == "not on the host www.example.com"
    assert site.explain("https://www.example.com:8443/a") == "not on the host www.example.com"
    located = Site.make("www.example.com", KEY, "https://www.example.com/catalog/key.txt")
    assert located.key_url == "https://www.example.com/catalog/key.txt"
    assert located.prefix == "/catalog/"
    assert located.explain("https://www.example.com/catalog/shoes") is None
    assert "not under /catalog/" in (located.explain("https://www.example.com/help/") or "")
    with pytest.raises(UsageError, match="not on the host"):
        Site.make("www.example.com", KEY, "https://cdn.example.com/key.txt")
    with pytest.raises(UsageError, match="must name a file"):
        Site.make("www.example.com", KEY, "https://www.example.com/keys/")
    with pytest.raises(UsageError, match="not a valid IndexNow key"):
        Site.make("www.example.com", "bad key!")


# -- the key file is served ---------------------------------------------------------------------------------


def test_verify_key_accepts_the_served_key(server: LocalServer) -> None:
    url = serve_key(server, KEY + "\r\n")  # whitespace around the key is allowed
    assert verify_key(KEY, host=server.base, options=opts()) == url
    serve_key(server, " \t" + KEY + " \t\r\n\n")  # all of it ASCII: space, tab, CR, LF
    assert verify_key(KEY, host=server.base, options=opts()) == url
    located = serve_key(server, KEY, path="/keys/k.txt")
    assert verify_key(KEY, host=server.base, key_location=located, options=opts()) == located
    server.redirect(f"/{KEY}.txt", server.url("/keys/k.txt"))  # same host: fine
    assert verify_key(KEY, host=server.base, options=opts()) == url


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (404, b"not here", "is not served (not found)"),
        (500, b"oops", "is not served (HTTP 500)"),
        (200, b"another-key-12345", "serves 'another-key-12345', not the key"),
        (200, b"<!doctype html><html><body>Welcome</body></html>", "serves an HTML page"),
        (200, b"\xef\xbb\xbf" + KEY.encode(), "byte order mark"),
        (200, KEY.encode() * 40, "more than 1024 bytes"),
        (200, b"\xff\xfe" + KEY.encode("utf-16-le"), "not UTF-8"),
        (200, b"", "serves '', not the key"),
        # str.strip() would take these for whitespace; a key file holds the key and ASCII whitespace only
        (200, KEY.encode() + b"\x1c", "serves the key with '\\x1c' around it; only spaces, tabs, CR and LF"),
        (200, KEY.encode() + b"\x0c\n", "serves the key with '\\x0c' around it"),
        (200, b"\x0b" + KEY.encode(), "serves the key with '\\x0b' around it"),
        (200, "\u00a0".encode() + KEY.encode() + "\u2028".encode(), "with '\\xa0' '\\u2028' around it"),
    ],
)
def test_verify_key_explains_what_is_wrong(
    server: LocalServer, status: int, body: bytes, message: str
) -> None:
    serve_key(server, body, status=status)
    with pytest.raises(KeyFileError, match="nothing was sent") as info:
        verify_key(KEY, host=server.base, options=opts(retries=0))
    assert message in str(info.value)
    assert server.url(f"/{KEY}.txt") in str(info.value)


def test_verify_key_refuses_a_redirect_to_another_host(server: LocalServer) -> None:
    other = LocalServer().start()
    try:
        serve_key(other)
        server.redirect(f"/{KEY}.txt", other.url(f"/{KEY}.txt"))
        # another port on loopback: the fetch policy does not even connect
        with pytest.raises(KeyFileError, match="is a loopback address"):
            verify_key(KEY, host=server.base, options=opts())
        assert other.requests == []
        # private addresses allowed: fetched, and still refused as another host
        with pytest.raises(KeyFileError, match="redirects to another host"):
            verify_key(KEY, host=server.base, options=opts(policy=FetchPolicy(allow_private=True)))
    finally:
        other.stop()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_verify_key_when_the_host_is_unreachable() -> None:
    sleeps = Sleeps()
    with pytest.raises(KeyFileError, match="cannot be fetched"):
        verify_key(KEY, host=f"http://127.0.0.1:{closed_port()}", options=opts(sleeps, retries=2))
    assert len(sleeps.delays) == 2


# -- submitting lists ---------------------------------------------------------------------------------------


def test_batches_and_exact_json_bodies(server: LocalServer) -> None:
    serve_key(server)
    endpoint = server.handle("/indexnow", sequence(OK, ACCEPTED, OK))
    urls = urls_of(server, 25)
    seen: list[int] = []
    result = submit(
        urls,
        host=server.base,
        key=KEY,
        endpoint=endpoint,
        batch_size=10,
        options=opts(),
        on_batch=lambda b: seen.append(b.size),
    )
    assert result.complete and result.submitted == 25 and seen == [10, 10, 5]
    assert [(b.number, b.size, b.status, b.attempts) for b in result.batches] == [
        (1, 10, 200, 1),
        (2, 10, 202, 1),
        (3, 5, 200, 1),
    ]
    assert result.batches[0].first_urls == tuple(urls[:3]) and result.batches[2].last_url == urls[-1]
    # the key file is checked once, before the first request
    assert [(r.method, r.path) for r in server.requests] == [("GET", f"/{KEY}.txt")] + [
        ("POST", "/indexnow")
    ] * 3
    bodies = posts(server)
    assert bodies == [
        {"host": netloc(server), "key": KEY, "urlList": urls[0:10]},
        {"host": netloc(server), "key": KEY, "urlList": urls[10:20]},
        {"host": netloc(server), "key": KEY, "urlList": urls[20:25]},
    ]
    assert all(list(body) == ["host", "key", "urlList"] for body in bodies)
    post = next(r for r in server.requests if r.method == "POST")
    assert post.headers["Content-Type"] == "application/json; charset=utf-8"
    assert post.headers["User-Agent"].startswith("sitemapkit/")
    assert result.key_checked and result.to_dict()["submitted"] == 25


def test_at_most_10000_urls_a_request(server: LocalServer) -> None:
    serve_key(server)
    endpoint = server.handle("/indexnow", sequence(OK))
    urls = [server.url(f"/u/{i}") for i in range(10_001)]
    result = submit(urls, host=server.base, key=KEY, endpoint=endpoint, options=opts())
    assert [len(b["urlList"]) for b in posts(server)] == [10_000, 1]
    assert result.submitted == 10_001
    with pytest.raises(UsageError, match="1 to 10,000"):
        submit(urls, host=server.base, key=KEY, endpoint=endpoint, batch_size=10_001)


def test_key_location_is_sent_and_limits_the_urls(server: LocalServer) -> None:
    location = serve_key(server, path="/shop/indexnow-key.txt")
    endpoint = server.handle("/indexnow", sequence(OK))
    diagnostics: list[sitemapkit.Diagnostic] = []
    result = submit(
        [server.url("/shop/a"), server.url("/blog/b"), server.url("/shop/sub/c")],
        host=server.base,
        key=KEY,
        key_location=location,
        endpoint=endpoint,
        options=opts(),
        on_diagnostic=diagnostics.append,
    )
    assert posts(server) == [
        {
            "host": netloc(server),
            "key": KEY,
            "keyLocation": location,
            "urlList": [server.url("/shop/a"), server.url("/shop/sub/c")],
        }
    ]
    assert [r.path for r in server.requests if r.method == "GET"] == ["/shop/indexnow-key.txt"]
    assert result.skipped == 1 and [(d.code, d.url) for d in diagnostics] == [
        ("url-not-allowed", server.url("/blog/b"))
    ]
    assert "not under /shop/" in diagnostics[0].message


def test_urls_not_on_the_host_are_reported_with_their_line_and_skipped(
    tmp_path: Path, server: LocalServer
) -> None:
    serve_key(server)
    endpoint = server.handle("/indexnow", sequence(OK))
    listing = tmp_path / "changed.txt"
    listing.write_text(
        "# changed today\n"
        f"{server.url('/a')}\t2024-01-01\n"
        "https://elsewhere.example/x\n"
        "/relative/b\n"
        "\n"
        f"{server.url('/a')}\n"
        "ftp://127.0.0.1/c\n"
        f"{server.url('/ü')}\n",
        encoding="utf-8",
    )
    diagnostics: list[sitemapkit.Diagnostic] = []
    result = submit(
        read_url_file(str(listing), on_diagnostic=diagnostics.append),
        host=server.base,
        key=KEY,
        endpoint=endpoint,
        options=opts(),
        on_diagnostic=diagnostics.append,
    )
    assert posts(server)[0]["urlList"] == [server.url("/a"), server.url("/relative/b"), server.url("/%C3%BC")]
    assert [(d.code, d.line) for d in diagnostics] == [
        ("url-not-allowed", 3),
        ("duplicate-url", 6),
        ("invalid-url", 7),
    ]
    assert all(d.source == str(listing) for d in diagnostics)
    assert (result.submitted, result.skipped, result.duplicates) == (3, 2, 1)


def test_no_url_on_the_host_sends_nothing(server: LocalServer) -> None:
    serve_key(server)
    endpoint = server.handle("/indexnow", sequence(OK))
    with pytest.raises(IndexNowError, match="none of the 2 URLs can be submitted") as info:
        submit(
            ["https://www.example.com/a", UrlEntry("https://www.example.com/b", sitemap="list.txt", line=2)],
            host=server.base,
            key=KEY,
            endpoint=endpoint,
            options=opts(),
        )
    assert server.requests == []
    assert info.value.result is not None and info.value.result.skipped == 2
    assert [(d.source, d.line) for d in info.value.result.diagnostics] == [(None, None), ("list.txt", 2)]


def test_nothing_to_submit_sends_nothing(server: LocalServer) -> None:
    result = submit([], host=server.base, key=KEY, endpoint=server.url("/indexnow"), options=opts())
    assert result.complete and result.submitted == 0 and server.requests == []


def test_dry_run_sends_nothing(server: LocalServer) -> None:
    urls = urls_of(server, 7)
    result = submit(
        urls, host=server.base, key=KEY, endpoint=server.url("/indexnow"), batch_size=3, dry_run=True
    )
    assert server.requests == []
    assert [(b.size, b.status, b.first_urls) for b in result.batches] == [
        (3, None, tuple(urls[0:3])),
        (3, None, tuple(urls[3:6])),
        (1, None, (urls[6],)),
    ]
    assert result.dry_run and result.submitted == 7 and not result.key_checked


def test_key_not_served_sends_nothing(server: LocalServer) -> None:
    endpoint = server.handle("/indexnow", sequence(OK))
    with pytest.raises(KeyFileError, match="not served"):
        submit(urls_of(server, 3), host=server.base, key=KEY, endpoint=endpoint, options=opts(retries=0))
    assert posts(server) == []


@pytest.mark.parametrize(
    ("status", "explained"),
    [
        (400, "bad request"),
        (403, "forbidden: the engine does not accept the key"),
        (422, "unprocessable: the engine says some URLs do not belong to"),
        (404, "is http://127.0.0.1"),
        (301, "a redirect to https://elsewhere/"),
    ],
)
def test_refusals_stop_with_an_explanation(server: LocalServer, status: int, explained: str) -> None:
    serve_key(server)
    refusal: Answer = (status, {"Location": "https://elsewhere/"} if status == 301 else {}, b"Key mismatch")
    endpoint = server.handle("/indexnow", sequence(OK, refusal, OK))
    sleeps = Sleeps()
    with pytest.raises(IndexNowError) as info:
        submit(
            urls_of(server, 6),
            host=server.base,
            key=KEY,
            endpoint=endpoint,
            batch_size=2,
            options=opts(sleeps),
        )
    error = info.value
    assert error.status == status and not error.resumable and explained in str(error)
    assert "the endpoint said: Key mismatch" in str(error)
    assert len(posts(server)) == 2 and sleeps.delays == []  # not retried, and nothing after the stop
    assert error.result is not None and error.result.submitted == 2 and not error.result.complete
    assert error.result.last_url == server.url("/p001") and error.result.error == str(error)


def test_429_and_5xx_are_retried_honouring_retry_after(server: LocalServer) -> None:
    serve_key(server)
    endpoint = server.handle(
        "/indexnow",
        sequence((429, {"Retry-After": "7"}, b""), (503, {}, b""), (502, {"Retry-After": "0"}, b""), OK),
    )
    sleeps = Sleeps()
    result = submit(
        urls_of(server, 2),
        host=server.base,
        key=KEY,
        endpoint=endpoint,
        options=opts(sleeps, backoff_base=1.0, retries=3),
    )
    # Retry-After, then backoff (1 s base, attempt 2); Retry-After 0 holds the endpoint for no time at all
    assert sleeps.delays == [7.0, 1.0]
    assert result.batches[0].attempts == 4 and result.batches[0].status == 200
    assert len({json.dumps(b) for b in posts(server)}) == 1  # the same batch each time


def test_retry_after_as_an_http_date(server: LocalServer) -> None:
    serve_key(server)
    now = 1_700_000_000.0
    when = email.utils.formatdate(now + 20, usegmt=True)
    endpoint = server.handle("/indexnow", sequence((429, {"Retry-After": when}, b""), OK))
    sleeps = Sleeps()
    submit(
        urls_of(server, 1),
        host=server.base,
        key=KEY,
        endpoint=endpoint,
        options=opts(sleeps, clock=lambda: now),
    )
    assert sleeps.delays == [20.0]


def test_retry_after_longer_than_allowed_stops_at_once(server: LocalServer) -> None:
    serve_key(server)
    endpoint = server.handle("/indexnow", sequence((429, {"Retry-After": "3600"}, b""), OK))
    sleeps = Sleeps()
    with pytest.raises(IndexNowError, match="asks to wait 3,600 s, longer than the 5 s allowed") as info:
        submit(
            urls_of(server, 1),
            host=server.base,
            key=KEY,
            endpoint=endpoint,
            options=opts(sleeps, retry_after_max=5),
        )
    assert sleeps.delays == [] and len(posts(server)) == 1 and info.value.status == 429


def test_retries_exhausted(server: LocalServer) -> None:
    serve_key(server)
    endpoint = server.handle("/indexnow", sequence(OK, (429, {}, b"slow down")))
    sleeps = Sleeps()
    with pytest.raises(IndexNowError, match="still answered 429 Too Many Requests after 3 attempts") as info:
        submit(
            urls_of(server, 4),
            host=server.base,
            key=KEY,
            endpoint=endpoint,
            batch_size=2,
            options=opts(sleeps, retries=2, backoff_base=1.0),
        )
    assert sleeps.delays == [0.5, 1.0]  # exponential: half of each delay jittered (jitter 0 here)
    assert len(posts(server)) == 4 and info.value.result is not None and info.value.result.submitted == 2


def test_unreachable_endpoint_is_retried_then_stops(server: LocalServer) -> None:
    serve_key(server)
    sleeps = Sleeps()
    with pytest.raises(IndexNowError, match="could not be reached") as info:
        submit(
            urls_of(server, 1),
            host=server.base,
            key=KEY,
            endpoint=f"http://127.0.0.1:{closed_port()}/indexnow",
            options=opts(sleeps, retries=3),
        )
    assert len(sleeps.delays) == 3 and info.value.status is None


def head(status: int, length: int) -> bytes:
    return f"HTTP/1.1 {status} Whatever\r\nContent-Length: {length}\r\n\r\n".encode()


@pytest.mark.parametrize("status", [200, 202])
def test_an_accepted_batch_whose_body_never_ends_is_not_sent_again(status: int) -> None:
    # The status line says the batch arrived; the body promises 3 bytes and sends 1. Reading it would time
    # out, and taking that for a connection failure would send the batch a second time.
    with raw_server(lambda conn: conn.sendall(head(status, 3) + b"x"), {}, hold=True) as raw:
        sleeps = Sleeps()
        result = submit(
            ["/a", "/b"],
            host=raw.base,
            key=KEY,
            endpoint=raw.base + "/indexnow",
            verify=False,
            options=opts(sleeps, retries=2, read_timeout=0.5),
        )
        assert len(raw.posts) == 1 and sleeps.delays == []
        assert json.loads(raw.posts[0])["urlList"] == [raw.base + "/a", raw.base + "/b"]
    assert result.complete and [(b.status, b.attempts) for b in result.batches] == [(status, 1)]


@pytest.mark.parametrize(
    ("status", "message"),
    [(403, "answered 403: forbidden"), (429, "still answered 429 Too Many Requests after 2 attempts")],
)
def test_a_refusal_whose_body_never_ends_is_explained_with_what_came(status: int, message: str) -> None:
    # The status decides; a body that stalls only shortens the explanation (and is not a connection failure).
    with raw_server(lambda conn: conn.sendall(head(status, 100) + b"Key mismatch"), {}, hold=True) as raw:
        sleeps = Sleeps()
        with pytest.raises(IndexNowError, match=message) as info:
            submit(
                ["/a"],
                host=raw.base,
                key=KEY,
                endpoint=raw.base + "/indexnow",
                verify=False,
                options=opts(sleeps, retries=1, read_timeout=0.5),
            )
    assert info.value.status == status and "(the endpoint said: Key mismatch)" in str(info.value)
    assert len(raw.posts) == len(sleeps.delays) + 1 == (2 if status == 429 else 1)


def test_a_trickling_refusal_body_is_read_within_a_total_deadline() -> None:
    # One byte at a time, each well within the read timeout: only the total deadline stops the reading. The
    # injected clock jumps past it as soon as the first byte is out, so the reading stops at the next check
    # and the server sees the connection close after a few bytes, not after the 1,200 bytes read before.
    sent = [0]
    started = threading.Event()
    ticks = itertools.count(1)

    def clock() -> float:  # still until the first byte is out, then an hour further at every look
        return 3600.0 * next(ticks) if started.is_set() else 0.0

    def trickle(conn: socket.socket) -> None:
        conn.sendall(head(400, 5000))
        for _ in range(5000):
            conn.sendall(b"x")
            sent[0] += 1
            started.set()
            time.sleep(0.002)  # pacing only: each byte is a piece of its own

    with raw_server(trickle, {}, hold=True) as raw:
        with pytest.raises(IndexNowError, match="answered 400: bad request") as info:
            submit(
                ["/a"],
                host=raw.base,
                key=KEY,
                endpoint=raw.base + "/indexnow",
                verify=False,
                options=opts(retries=3, monotonic=clock),
            )
        raw.done.set()
    assert info.value.status == 400 and len(raw.posts) == 1
    assert 1 <= sent[0] < 1200


def test_usage_errors() -> None:
    for endpoint in ("ftp://x/indexnow", "http://[::1/indexnow", "/indexnow", "https://:80/"):
        with pytest.raises(UsageError, match="endpoint"):
            submit([], host="www.example.com", key=KEY, endpoint=endpoint)
    with pytest.raises(UsageError, match="key"):
        submit([], host="www.example.com", key="nope")
    with pytest.raises(UsageError, match="host"):
        submit([], host="www.example.com/sub/", key=KEY)
    assert DEFAULT_ENDPOINT == "https://api.indexnow.org/indexnow"


# -- changes from the state store ---------------------------------------------------------------------------


def build(tmp_path: Path, server: LocalServer, lines: list[str], db: Path) -> None:
    """One real `generate` run with the state store `db`, for URLs (with optional TAB fields) on `server`."""
    listing = tmp_path / "urls.txt"
    listing.write_text("".join(server.url(line) + "\n" for line in lines), encoding="utf-8")
    sitemapkit.generate([str(listing)], tmp_path / "out", server.url("/"), state=db)


def changes_endpoint(server: LocalServer, *answers: Answer) -> str:
    return server.handle("/indexnow", sequence(*answers) if answers else sequence(OK))


def sent(server: LocalServer) -> list[str]:
    return [u for body in posts(server) for u in body["urlList"]]


def test_since_last_submits_what_the_builds_changed(tmp_path: Path, server: LocalServer) -> None:
    db = tmp_path / "state.db"
    serve_key(server)
    endpoint = changes_endpoint(server)
    build(tmp_path, server, ["/a\t2024-01-01", "/b\t2024-01-01", "/c", "/d"], db)
    first = submit_changes(db, host=server.base, key=KEY, endpoint=endpoint, batch_size=3, options=opts())
    assert sent(server) == [server.url(p) for p in ("/a", "/b", "/c", "/d")]
    assert (first.added, first.changed, first.removed, first.since_run, first.to_run) == (4, 0, 0, 0, 1)
    assert [len(b["urlList"]) for b in posts(server)] == [3, 1]
    with StateStore(db) as store:
        assert store.marker(MARKER) == 1 and store.progress(MARKER) is None

    server.requests.clear()
    build(tmp_path, server, ["/a\t2024-02-01", "/c", "/d", "/e"], db)  # a changed, b removed, e added
    second = submit_changes(db, host=server.base, key=KEY, endpoint=endpoint, options=opts())
    assert sent(server) == [server.url(p) for p in ("/a", "/b", "/e")]
    assert (second.added, second.changed, second.removed, second.since_run, second.to_run) == (1, 1, 1, 1, 2)

    server.requests.clear()
    build(tmp_path, server, ["/a\t2024-02-01", "/c", "/d", "/e"], db)  # nothing changed
    third = submit_changes(db, host=server.base, key=KEY, endpoint=endpoint, options=opts())
    assert server.requests == [] and third.complete and third.submitted == 0  # not even the key check
    with StateStore(db) as store:
        assert store.marker(MARKER) == 3


def test_dry_run_touches_no_state(tmp_path: Path, server: LocalServer) -> None:
    db = tmp_path / "state.db"
    build(tmp_path, server, ["/a", "/b", "/c"], db)
    before = db.read_bytes()
    result = submit_changes(
        db, host=server.base, key=KEY, endpoint=server.url("/indexnow"), batch_size=2, dry_run=True
    )
    assert server.requests == [] and result.submitted == 3 and [b.size for b in result.batches] == [2, 1]
    with StateStore(db) as store:
        assert store.marker(MARKER) is None and store.progress(MARKER) is None
    assert db.read_bytes() == before


def test_the_issue_sequence_200_202_403_422_429_resumes_without_sending_twice(
    tmp_path: Path, server: LocalServer
) -> None:
    """The endpoint answers 200, 202, 403, 422 and 429 in turn; each stop is resumed by the next run."""
    db = tmp_path / "state.db"
    serve_key(server)
    pages = [f"/p{i:02d}" for i in range(9)]
    build(tmp_path, server, pages, db)
    answers: list[int] = []
    script = iter([200, 202, 403, 422, 429])

    def endpoint_handler(_: BaseHTTPRequestHandler) -> Answer:
        status = next(script, 200)
        answers.append(status)
        return (status, {}, b"")

    endpoint = server.handle("/indexnow", endpoint_handler)
    kw: dict[str, Any] = {"host": server.base, "key": KEY, "endpoint": endpoint, "batch_size": 3}
    accepted: list[str] = []

    def run(expect: int | None) -> None:
        before = len(posts(server))
        try:
            submit_changes(db, options=opts(retries=0), **kw)
            assert expect is None
        except IndexNowError as exc:
            assert exc.status == expect and exc.resumable
        for body, status in zip(posts(server)[before:], answers[before:], strict=True):
            if status in (200, 202):
                accepted.extend(body["urlList"])

    run(403)  # requests 1 (200) and 2 (202) accepted, 3 refused
    with StateStore(db) as store:
        saved = json.loads(store.progress(MARKER) or "")
        assert saved["segments"] == [[server.url("/p05"), 1]] and saved["submitted"] == 6
        assert store.marker(MARKER) is None
    run(422)
    run(429)  # no retries left: stops, resumable
    run(None)
    assert answers == [200, 202, 403, 422, 429, 200]
    assert accepted == [server.url(p) for p in pages]  # every URL once, in order
    assert [b["urlList"][0] for b in posts(server)[2:]] == [
        server.url("/p06")
    ] * 4  # each rerun resumed there
    with StateStore(db) as store:
        assert store.marker(MARKER) == 1 and store.progress(MARKER) is None


def test_resume_after_new_builds_sends_only_what_is_still_owed(tmp_path: Path, server: LocalServer) -> None:
    """Stopped half way, then two builds: the rerun sends the unsent part as of now, and from the part
    already accepted only what changed since."""
    db = tmp_path / "state.db"
    serve_key(server)
    build(tmp_path, server, ["/a", "/b\t2024-01-01", "/c", "/d", "/e", "/f"], db)
    endpoint = changes_endpoint(server, OK, (403, {}, b""), OK)
    with pytest.raises(IndexNowError):
        submit_changes(db, host=server.base, key=KEY, endpoint=endpoint, batch_size=3, options=opts())
    assert sent(server)[:3] == [server.url(p) for p in ("/a", "/b", "/c")]
    # build 2: b changed, c removed (both already sent), e removed, g added (not yet sent)
    build(tmp_path, server, ["/a", "/b\t2024-05-01", "/d", "/f", "/g"], db)
    # build 3: nothing new
    build(tmp_path, server, ["/a", "/b\t2024-05-01", "/d", "/f", "/g"], db)
    server.requests.clear()
    result = submit_changes(db, host=server.base, key=KEY, endpoint=endpoint, batch_size=3, options=opts())
    # from the accepted part (a, b, c): b changed, c removed; then d, f, g as of now (e: gone, never sent)
    assert sent(server) == [server.url(p) for p in ("/b", "/c", "/d", "/f", "/g")]
    assert result.resumed and result.previously_submitted == 3 and result.to_run == 3
    assert (result.added, result.changed, result.removed) == (3, 1, 1)
    with StateStore(db) as store:
        assert store.marker(MARKER) == 3 and store.progress(MARKER) is None


def test_progress_for_another_scope_or_a_moved_marker_is_not_used(
    tmp_path: Path, server: LocalServer
) -> None:
    db = tmp_path / "state.db"
    serve_key(server)
    build(tmp_path, server, ["/a", "/b"], db)
    with StateStore(db) as store:
        store.set_progress(MARKER, _Progress(0, "other.example/", ((server.url("/a"), 1),), 1).dumps())
    endpoint = changes_endpoint(server)
    submit_changes(db, host=server.base, key=KEY, endpoint=endpoint, options=opts())
    assert sent(server) == [server.url("/a"), server.url("/b")]
    server.requests.clear()
    build(tmp_path, server, ["/a", "/b", "/c"], db)
    with StateStore(db) as store:
        store.set_progress(MARKER, "not json")
    result = submit_changes(db, host=server.base, key=KEY, endpoint=endpoint, options=opts())
    assert sent(server) == [server.url("/c")] and not result.resumed


def test_progress_segments_merge() -> None:
    p = _Progress(0, "h/", (), 0).advance("/c", 1, 3)
    assert p.segments == (("/c", 1),) and p.submitted == 3
    q = p.advance("/e", 2, 2)  # the first segment is covered by the newer one
    assert q.segments == (("/e", 2),)
    r = _Progress(0, "h/", (("/c", 1), ("/f", 2), ("/k", 3)), 0).advance("/d", 3, 1)
    assert r.segments == (("/d", 3), ("/f", 2), ("/k", 3))
    s = _Progress(0, "h/", (("/c", 1), ("/f", 3)), 0).advance("/d", 3, 1)
    assert s.segments == (("/f", 3),)
    assert _Progress.loads(s.dumps()) == s
    assert (
        _Progress.loads('{"version": 2, "since": 0, "scope": "h/", "segments": [], "submitted": 0}') is None
    )


def test_off_host_urls_in_the_store(tmp_path: Path, server: LocalServer) -> None:
    db = tmp_path / "state.db"
    serve_key(server)
    endpoint = changes_endpoint(server)
    with StateStore(db) as store, store.run() as run:
        for url in ("https://www.example.com/a", server.url("/b"), "https://cdn.example.com/c"):
            run.observe(url, content_hash="1")
    diagnostics: list[sitemapkit.Diagnostic] = []
    result = submit_changes(
        db, host=server.base, key=KEY, endpoint=endpoint, options=opts(), on_diagnostic=diagnostics.append
    )
    assert sent(server) == [server.url("/b")] and result.skipped == 2
    assert [d.url for d in diagnostics] == ["https://cdn.example.com/c", "https://www.example.com/a"]
    assert all(d.code == "url-not-allowed" and d.source == str(db) for d in diagnostics)
    with StateStore(db) as store:
        assert store.marker(MARKER) == 1


def test_a_wrong_host_marks_nothing(tmp_path: Path, server: LocalServer) -> None:
    db = tmp_path / "state.db"
    build(tmp_path, server, ["/a", "/b"], db)
    with pytest.raises(IndexNowError, match="no URL in the state store") as info:
        submit_changes(db, host="www.example.com", key=KEY, endpoint=server.url("/indexnow"), options=opts())
    assert server.requests == [] and not info.value.resumable
    with StateStore(db) as store:
        assert store.marker(MARKER) is None


def test_baseline_then_only_later_changes(tmp_path: Path, server: LocalServer) -> None:
    db = tmp_path / "state.db"
    serve_key(server)
    endpoint = changes_endpoint(server)
    StateStore(tmp_path / "empty.db").close()
    assert mark_submitted(tmp_path / "empty.db") is None
    build(tmp_path, server, ["/a", "/b"], db)
    assert mark_submitted(db) == 1
    build(tmp_path, server, ["/a", "/b", "/c"], db)
    submit_changes(db, host=server.base, key=KEY, endpoint=endpoint, options=opts())
    assert sent(server) == [server.url("/c")]


def test_state_store_missing_or_empty(tmp_path: Path, server: LocalServer) -> None:
    with pytest.raises(InputError, match="no state database"):
        submit_changes(tmp_path / "none.db", host=server.base, key=KEY, endpoint=server.url("/indexnow"))
    StateStore(tmp_path / "empty.db").close()
    result = submit_changes(
        tmp_path / "empty.db", host=server.base, key=KEY, endpoint=server.url("/indexnow")
    )
    assert result.complete and result.to_run is None and server.requests == []


# -- the resumption invariant, over random builds and failures ----------------------------------------------

PAGES = [f"/u{i}" for i in range(8)]
build_step = st.tuples(st.just("build"), st.dictionaries(st.sampled_from(PAGES), st.sampled_from("xy")))
submit_step = st.tuples(st.just("submit"), st.lists(st.sampled_from([200, 202, 403, 429]), max_size=4))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    steps=st.lists(st.one_of(build_step, submit_step), min_size=1, max_size=8),
    batch_size=st.integers(1, 3),
)
def test_every_change_reaches_the_engine_once(
    server: LocalServer, steps: list[tuple[str, Any]], batch_size: int
) -> None:
    """Whatever the builds and stops: after a final complete submission, every URL's latest change was
    accepted, and a URL accepted twice changed in between."""
    script: list[int] = []

    def handler(request: BaseHTTPRequestHandler) -> Answer:
        status = script.pop(0) if script else 200
        return (status, {}, b"")

    endpoint = server.handle("/indexnow", handler)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "state.db"
        events: dict[int, set[str]] = {}  # run -> URLs added, changed or removed in it
        states: dict[int, dict[str, str]] = {0: {}}  # run -> the URLs present after it, with their content
        present: dict[str, str] = {}
        accepted: list[tuple[str, int]] = []  # url, target run of the submission that got it accepted
        run_id = 0
        store = StateStore(db)

        def submit_now(statuses: list[int]) -> None:
            script[:] = statuses
            before = len(server.requests)
            target = run_id
            with contextlib.suppress(IndexNowError):
                submit_changes(
                    store,
                    host=server.base,
                    key=KEY,
                    endpoint=endpoint,
                    batch_size=batch_size,
                    verify=False,
                    options=opts(retries=0),
                )
            given = iter(statuses)
            for request in server.requests[before:]:
                status = next(given, 200)
                if status in (200, 202):
                    accepted.extend((u, target) for u in json.loads(request.body)["urlList"])

        now = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
        for kind, arg in steps:
            if kind == "build":
                run_id += 1
                with store.run(now=now + dt.timedelta(days=run_id)) as run:
                    for page, digest in arg.items():
                        run.observe(server.url(page), content_hash=digest)
                changed = {p for p in set(arg) | set(present) if arg.get(p) != present.get(p)}
                events[run_id] = {server.url(p) for p in changed}
                present = states[run_id] = dict(arg)
            elif run_id:
                submit_now(arg)
        if run_id:
            submit_now([])  # a final complete submission
        store.close()

    final = run_id
    for page in PAGES:
        url = server.url(page)
        times = [t for u, t in accepted if u == url]
        for t1, t2 in itertools.pairwise(times):  # accepted twice: it changed in between
            assert any(url in events[r] for r in range(t1 + 1, t2 + 1)), (url, times, events)
        last = times[-1] if times else 0
        later = [r for r in range(last + 1, final + 1) if url in events[r]]
        if later:  # a change after the last acceptance: only one that nets out (absent then, absent now)
            assert page not in states[last] and page not in states[final], (url, times, events)


def test_a_url_revived_then_removed_again_is_reported(tmp_path: Path, server: LocalServer) -> None:
    db = tmp_path / "state.db"
    endpoint = changes_endpoint(server)
    with StateStore(db) as store:
        for pages in ({"/a": "1", "/b": "1"}, {"/b": "1"}, {"/a": "1", "/b": "1"}, {"/b": "1"}):
            with store.run() as run:
                for page, digest in pages.items():
                    run.observe(server.url(page), content_hash=digest)
            if store.last_run() is not None and store.marker(MARKER) is None:
                submit_changes(
                    store, host=server.base, key=KEY, endpoint=endpoint, verify=False, options=opts()
                )
        server.requests.clear()
        submit_changes(store, host=server.base, key=KEY, endpoint=endpoint, verify=False, options=opts())
    assert sent(server) == [server.url("/a")]  # the engine was told /a exists; it must hear it is gone
