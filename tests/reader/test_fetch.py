"""The HTTP stack against a real local server: decoding once, caps, redirects, retries, timeouts, limits."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import socket
import ssl
import threading
import time
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sitemapkit.reader.fetch import (
    ContentDecodingError,
    DownloadTooLargeError,
    Fetcher,
    FetchError,
    FetchOptions,
    FetchPolicy,
    FetchRefusedError,
    FetchResponse,
    fetch,
    tls_context,
)
from tests.support.helpers import InFlight, Sleeps
from tests.support.localserver import LocalServer, sequence

XML = b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>'


def opts(sleeps: Sleeps | None = None, **kw: object) -> FetchOptions:
    # The HTTP stack itself is tested here, on loopback: the policy's address check is tested on its own.
    sleeps = sleeps or Sleeps()
    base: dict[str, object] = {
        "sleep": sleeps,
        "monotonic": sleeps.monotonic,
        "jitter": lambda: 0.0,
        "policy": FetchPolicy(allow_private=True),
    }
    base.update(kw)
    return FetchOptions(**base)  # type: ignore[arg-type]


def get(
    url: str, options: FetchOptions | None = None, limit: int | None = None
) -> tuple[FetchResponse, bytes]:
    async def run() -> tuple[FetchResponse, bytes]:
        async with Fetcher(options or opts()) as f, f.stream(url) as response:
            body, _ = await response.read(limit)
            return response, body

    return asyncio.run(run())


# -- bodies and Content-Encoding --------------------------------------------------------------


def test_plain_body_and_default_user_agent(server: LocalServer) -> None:
    url = server.route("/s.xml", XML)
    response, body = get(url)
    assert (response.status, body, response.final_url) == (200, XML, url)
    assert server.requests[0].headers["User-Agent"].startswith("sitemapkit/")
    assert server.requests[0].headers["Accept-Encoding"] == "gzip, deflate"


def test_custom_user_agent_is_sent(server: LocalServer) -> None:
    url = server.route("/s.xml", XML)
    get(url, opts(user_agent="MyBot/1.0"))
    assert server.requests[0].headers["User-Agent"] == "MyBot/1.0"


def test_content_encoding_gzip_on_plain_xml_is_decoded_once(server: LocalServer) -> None:
    url = server.route("/s.xml", gzip.compress(XML), headers={"Content-Encoding": "gzip"})
    response, body = get(url)
    assert body == XML
    assert response.raw_bytes == len(gzip.compress(XML))


def test_gz_file_served_with_content_encoding_gzip_stays_gzip_content(server: LocalServer) -> None:
    file_bytes = gzip.compress(XML)  # sitemap.xml.gz on disk
    url = server.route("/s.xml.gz", gzip.compress(file_bytes), headers={"Content-Encoding": "gzip"})
    _, body = get(url)
    assert body == file_bytes  # one layer undone; the parser recognises the rest by its magic bytes


def test_gzip_without_header_is_passed_through_untouched(server: LocalServer) -> None:
    url = server.route("/s.xml", gzip.compress(XML), content_type="application/octet-stream")
    _, body = get(url)
    assert body[:2] == b"\x1f\x8b" and gzip.decompress(body) == XML


def test_content_encoding_gzip_label_on_plain_body_passes_through(server: LocalServer) -> None:
    url = server.route("/s.xml", XML, headers={"Content-Encoding": "gzip"})
    _, body = get(url)
    assert body == XML


@pytest.mark.parametrize("wbits", [zlib.MAX_WBITS, -zlib.MAX_WBITS], ids=["zlib", "raw"])
def test_content_encoding_deflate_both_forms(server: LocalServer, wbits: int) -> None:
    c = zlib.compressobj(wbits=wbits)
    url = server.route("/s.xml", c.compress(XML) + c.flush(), headers={"Content-Encoding": "deflate"})
    assert get(url)[1] == XML


def test_concatenated_gzip_members_are_one_body(server: LocalServer) -> None:
    url = server.route(
        "/s.xml", gzip.compress(b"abc") + gzip.compress(b"def"), headers={"Content-Encoding": "gzip"}
    )
    assert get(url)[1] == b"abcdef"


def test_corrupt_content_encoding_is_a_decoding_error(server: LocalServer) -> None:
    url = server.route("/s.xml", b"\x1f\x8b\x08\x00garbage-garbage", headers={"Content-Encoding": "gzip"})
    with pytest.raises(ContentDecodingError, match="corrupt gzip"):
        get(url)


def test_truncated_content_encoding_is_a_decoding_error(server: LocalServer) -> None:
    data = gzip.compress(XML * 50)
    url = server.route("/s.xml", data[: len(data) // 2], headers={"Content-Encoding": "gzip"})
    with pytest.raises(ContentDecodingError, match="ends early"):
        get(url)


def test_content_encoding_bomb_stops_at_the_decoded_cap(server: LocalServer) -> None:
    url = server.route("/s.xml", gzip.compress(b"\0" * 5_000_000), headers={"Content-Encoding": "gzip"})
    with pytest.raises(ContentDecodingError, match="more than 100,000 bytes"):
        get(url, opts(max_decoded=100_000))


def test_unsupported_content_encoding_is_refused(server: LocalServer) -> None:
    url = server.route("/s.xml", b"xx", headers={"Content-Encoding": "br"})
    with pytest.raises(ContentDecodingError, match="unsupported Content-Encoding 'br'"):
        get(url)


def test_download_cap_stops_reading_after_exactly_the_cap(server: LocalServer) -> None:
    url = server.route("/big.xml", b"x" * 500_000)
    got: list[bytes] = []

    async def run() -> FetchResponse:
        async with Fetcher(opts(max_download=200_000)) as f, f.stream(url) as response:
            with pytest.raises(DownloadTooLargeError, match="download cap of 200,000 bytes"):
                async for piece in response.aiter_bytes():
                    got.append(piece)
            return response

    response = asyncio.run(run())
    assert len(b"".join(got)) == 200_000 == response.raw_bytes


def test_read_with_limit_truncates_without_error(server: LocalServer) -> None:
    url = server.route("/robots.txt", b"a" * 10_000, content_type="text/plain")

    async def run() -> tuple[bytes, bool]:
        async with Fetcher(opts()) as f:
            result = await f.get(url, limit=1000)
            return result.body, result.truncated

    assert asyncio.run(run()) == (b"a" * 1000, True)


# -- redirects ----------------------------------------------------------------------------------


def test_redirect_hops_are_recorded_in_order(server: LocalServer) -> None:
    server.redirect("/a", "/b", 301)
    server.redirect("/b", server.url("/c"), 302)
    final = server.route("/c", XML)
    response, body = get(server.url("/a"))
    assert body == XML and response.final_url == final
    assert [(h.url, h.status) for h in response.redirects] == [
        (server.url("/a"), 301),
        (server.url("/b"), 302),
    ]


def test_redirect_loop_is_an_error(server: LocalServer) -> None:
    server.redirect("/a", "/b")
    server.redirect("/b", "/a")
    with pytest.raises(FetchError, match="redirect loop"):
        get(server.url("/a"))


def test_too_many_redirects_is_an_error(server: LocalServer) -> None:
    for i in range(5):
        server.redirect(f"/r{i}", f"/r{i + 1}")
    server.route("/r5", XML)
    with pytest.raises(FetchError, match="more than 3 redirects"):
        get(server.url("/r0"), opts(max_redirects=3))
    assert get(server.url("/r0"), opts(max_redirects=5))[1] == XML


@pytest.mark.parametrize(
    "target",
    [
        "ftp://example.com/sitemap.xml",
        "mailto:a@example.com",
        "data:text/html,hi",
        "javascript:alert(1)",
        "about:blank",
        "http://[::1",
        "http://",
    ],
)
def test_redirect_to_a_non_http_target_ends_with_redirect_invalid(server: LocalServer, target: str) -> None:
    server.redirect("/a", target)
    with pytest.raises(FetchRefusedError, match="not an http\\(s\\) URL with a host") as caught:
        get(server.url("/a"))
    assert caught.value.code == "redirect-invalid"


@pytest.mark.parametrize("url", ["ftp://example.com/s.xml", "file:///etc/passwd", "http:///nohost"])
def test_only_http_and_https_urls_are_fetched(url: str) -> None:
    with pytest.raises(FetchError):
        get(url)


# -- retries ------------------------------------------------------------------------------------


def test_429_with_retry_after_seconds_then_200(server: LocalServer) -> None:
    url = server.handle("/s.xml", sequence((429, {"Retry-After": "7"}, b""), (200, {}, XML)))
    sleeps = Sleeps()
    response, body = get(url, opts(sleeps))
    assert (response.status, body, response.attempts) == (200, XML, 2)
    assert sleeps.delays == [7.0]


def test_retry_after_http_date_is_honoured_and_capped(server: LocalServer) -> None:
    now = 1_700_000_000.0
    url = server.handle(
        "/s.xml",
        sequence(
            (503, {"Retry-After": "Tue, 14 Nov 2023 22:13:40 GMT"}, b""),  # now + 20 s
            (503, {"Retry-After": "3600"}, b""),
            (200, {}, XML),
        ),
    )
    sleeps = Sleeps()
    response, _ = get(url, opts(sleeps, clock=lambda: now, retry_after_max=60.0))
    assert response.status == 200
    assert sleeps.delays == [20.0, 60.0]


@pytest.mark.parametrize("value", ["\u00b2", "\u0663", "1e3", "-5", "soon", " ", "Tue, 14 Nov 2023 22:13:40"])
def test_an_unusable_retry_after_falls_back_to_backoff(value: str) -> None:
    assert FetchOptions().retry_after(value) is None


def test_a_non_ascii_digit_retry_after_from_a_server_is_not_a_crash(server: LocalServer) -> None:
    url = server.handle("/s.xml", sequence((429, {"Retry-After": "\u00b2"}, b""), (200, {}, XML)))
    sleeps = Sleeps()
    response, body = get(url, opts(sleeps, backoff_base=1.0, jitter=lambda: 1.0))
    assert (response.status, body) == (200, XML)
    assert sleeps.delays == [1.0]  # the header was unusable: ordinary backoff


def test_503_then_200_uses_exponential_backoff(server: LocalServer) -> None:
    url = server.handle("/s.xml", sequence((503, {}, b""), (502, {}, b""), (500, {}, b""), (200, {}, XML)))
    sleeps = Sleeps()
    response, _ = get(url, opts(sleeps, backoff_base=1.0, jitter=lambda: 1.0, retries=3))
    assert response.status == 200
    assert sleeps.delays == [1.0, 2.0, 4.0]


def test_backoff_is_jittered_in_its_upper_half_and_capped() -> None:
    o = FetchOptions(backoff_base=1.0, backoff_max=10.0, jitter=lambda: 0.0)
    assert [o.backoff(n) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]


def test_retries_exhausted_returns_the_last_answer(server: LocalServer) -> None:
    url = server.handle("/s.xml", sequence((503, {}, b"busy")))
    sleeps = Sleeps()
    response, body = get(url, opts(sleeps, retries=2))
    assert (response.status, body, response.attempts) == (503, b"busy", 3)
    assert len(sleeps.delays) == 2


def test_404_is_not_retried(server: LocalServer) -> None:
    sleeps = Sleeps()
    response, _ = get(server.url("/missing.xml"), opts(sleeps))
    assert response.status == 404 and not sleeps.delays and len(server.requests) == 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connection_refused_is_retried_then_reported() -> None:
    sleeps = Sleeps()
    url = f"http://127.0.0.1:{_closed_port()}/s.xml"
    with pytest.raises(FetchError, match=r"connection failed .*3 attempts"):
        get(url, opts(sleeps, retries=2))
    assert len(sleeps.delays) == 2


def test_read_timeout_is_reported(server: LocalServer) -> None:
    url = server.route("/slow.xml", XML, delay=60.0)  # never near the 0.2 s, however busy the machine
    with pytest.raises(FetchError, match="timed out"):
        get(url, opts(read_timeout=0.2, retries=0))


# -- concurrency --------------------------------------------------------------------------------


def test_concurrency_per_host_is_bounded(server: LocalServer) -> None:
    flight = InFlight(2, 8, lambda _: (200, {}, XML))
    urls = [server.handle(f"/s{i}.xml", flight) for i in range(8)]

    async def run() -> list[int]:
        async with Fetcher(opts(per_host=2)) as f:
            results = await asyncio.gather(*(f.get(u) for u in urls))
            return [r.status for r in results]

    assert asyncio.run(run()) == [200] * 8
    assert flight.peak == 2  # held until two were in flight: never fewer, and never more


def test_sync_fetch(server: LocalServer) -> None:
    url = server.route("/s.xml", XML)
    result = fetch(url, opts())
    assert result.ok and result.body == XML and result.final_url == url


def test_a_body_that_trickles_forever_stops_at_the_total_deadline() -> None:
    """A real server that sends one byte every 50 ms: each read is quick, so only a total deadline ends it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    stop = threading.Event()

    def trickle() -> None:
        conn, _ = listener.accept()
        conn.recv(4096)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: 100000\r\n\r\n")
        while not stop.is_set():
            try:
                conn.sendall(b"x")
            except OSError:
                break
            time.sleep(0.05)
        conn.close()

    threading.Thread(target=trickle, daemon=True).start()

    async def run() -> None:
        async with (
            Fetcher(opts(max_duration=0.5, monotonic=time.monotonic)) as f,
            f.stream(f"http://127.0.0.1:{port}/slow.xml") as response,
        ):
            async for _ in response.aiter_bytes():
                pass

    try:
        with pytest.raises(FetchError, match=r"longer than 0\.5 s"):
            asyncio.run(run())
    finally:
        stop.set()
        listener.close()


def test_https_with_an_untrusted_certificate_is_refused(https_server: LocalServer) -> None:
    sleeps = Sleeps()
    url = https_server.route("/sitemap.xml", "<urlset/>")
    with pytest.raises(FetchError) as err:
        fetch(url, opts(sleeps))
    assert err.value.url == url
    assert err.value.reason == "TLS certificate not accepted (self-signed certificate); not fetched"
    assert sleeps.delays == []  # not retried: verification fails the same way again
    assert https_server.requests == []  # no request went out over the untrusted connection


def test_every_fetcher_shares_one_verifying_tls_context() -> None:
    async def contexts() -> list[object]:
        found = []
        for _ in range(2):
            async with Fetcher() as f:
                found.append(f._client._transport.tls)  # type: ignore[attr-defined]
        return found

    first, second = asyncio.run(contexts())
    assert first is second is tls_context()
    assert tls_context().verify_mode == ssl.CERT_REQUIRED and tls_context().check_hostname
    assert tls_context().cert_store_stats()["x509_ca"] > 0  # certifi's bundle is loaded


def test_keepalive_bounds_the_idle_connections_kept() -> None:
    """A client that asks many hosts once each (a harvest's robots.txt client) keeps only `keepalive`
    idle connections; by default it keeps one per host, up to `max_connections`."""
    from tests.support.sitefarm import SiteFarm, address

    async def idle_after(farm: SiteFarm, keepalive: int | None) -> int:
        async with Fetcher(opts(max_connections=16, keepalive=keepalive)) as f:
            for n in range(5):
                assert (await f.get(farm.add(address(n)).url("/robots.txt"))).status == 404
            return f._client._transport.idle  # type: ignore[attr-defined]

    with SiteFarm() as farm:
        assert asyncio.run(idle_after(farm, None)) == 5
    with SiteFarm() as farm:
        assert asyncio.run(idle_after(farm, 2)) == 2


def test_no_asyncio_wait_for_in_the_package() -> None:
    # On Python 3.11 `asyncio.wait_for` drops a cancellation that comes as its awaitable finishes; the
    # task then ran on: a harvest stopped with Ctrl-C hung for good, a download blocked on a full queue.
    # `asyncio.timeout` has no such window.
    import sitemapkit

    root = Path(sitemapkit.__file__).parent
    users = [str(p.relative_to(root)) for p in root.rglob("*.py") if "asyncio.wait_for(" in p.read_text()]
    assert users == []


def test_a_download_whose_cancellation_was_swallowed_still_ends(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A library below may swallow a cancellation; the download task must not then block for good on its
    full queue, which nobody reads any more (a harvest stopped with Ctrl-C hung so)."""
    from sitemapkit.reader.download import Download
    from sitemapkit.reader.fetch import FetchResponse

    url = server.route("/big.xml", b"x" * (1024 * 1024))
    real = FetchResponse.aiter_bytes
    inside = asyncio.Event()

    async def swallowing(self: FetchResponse) -> AsyncIterator[bytes]:
        n = 0
        async for piece in real(self):
            n += 1
            if n == 3:  # the queue (two places) is full: wait here, and drop the cancellation that comes
                inside.set()
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.sleep(30)
            yield piece

    monkeypatch.setattr(FetchResponse, "aiter_bytes", swallowing)

    async def main() -> bool:
        async with Fetcher(FetchOptions(policy=FetchPolicy(allow_private=True))) as fetcher:
            download = Download(fetcher, url, 2)
            await download.response()
            await asyncio.wait_for(inside.wait(), 30)
            download._task.cancel()
            await asyncio.wait({download._task}, timeout=10)
            ended = download._task.done()
            download._task.cancel()
            return ended

    assert asyncio.run(main())
