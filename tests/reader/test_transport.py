"""The fetcher's HTTP/1.1 transport (`reader.transport`) against a scripted loopback server whose own log
says which connection carried which request: keep-alive reuse and when a connection must not be reused,
the request sent again after a keep-alive race, bodies of every framing, errors in httpx's terms, the
address policy and the numeric-host shortcut."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import struct
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, TypeVar

import httpx
import pytest

from sitemapkit.reader.fetch import FetchPolicy, tls_context
from sitemapkit.reader.transport import AddressRefused, Transport, numeric

Answer = Callable[[int, int, bytes], "bytes | None"]
"""(connection number, request number on it, request head) -> the bytes to send back; None: close the
connection without answering; the answer is sent and the connection closed when it ends with `CLOSE`."""
CLOSE = b"<close>"
RESET = b"<reset>"
T = TypeVar("T")


def ok(body: bytes = b"<urlset/>", extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)


class Scripted:
    """A loopback HTTP server that answers as `answer` says and logs (connection, request line)."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.log: list[tuple[int, bytes]] = []
        self.heads: list[bytes] = []
        self.connections = 0
        self.closed_by_client = 0
        self.base = ""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        number = self.connections
        self.connections += 1
        n = 0
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    self.closed_by_client += 1
                    return
                self.log.append((number, head.split(b"\r\n", 1)[0]))
                self.heads.append(head)
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        await reader.readexactly(int(line.split(b":")[1]))
                reply = self.answer(number, n, head)
                n += 1
                if reply is None:
                    return
                if reply == RESET:  # a reset (RST), not a close: no linger
                    sock = writer.get_extra_info("socket")
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    writer.transport.abort()
                    return
                closing = reply.endswith(CLOSE)
                writer.write(reply.removesuffix(CLOSE))
                await writer.drain()
                if closing:
                    return
        except (ConnectionError, asyncio.CancelledError):  # (cancelled: the test is over)
            return
        finally:
            writer.close()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Scripted]:
        server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        self.base = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        try:
            yield self
        finally:
            server.close()


def client(**kw: object) -> httpx.AsyncClient:
    policy = FetchPolicy(allow_private=True)
    options: dict[str, object] = {"keepalive": 8, **kw}
    return httpx.AsyncClient(transport=Transport(policy.connect_problem, tls_context(), **options))  # type: ignore[arg-type]


def run(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(main())


def test_one_connection_carries_the_requests_to_an_origin_one_after_another() -> None:
    server = Scripted(lambda c, n, head: ok(b"<urlset>%d</urlset>" % n))

    async def main() -> list[bytes]:
        async with server.running(), client() as c:
            return [(await c.get(server.base + f"/{i}.xml")).content for i in range(3)]

    assert run(main) == [b"<urlset>0</urlset>", b"<urlset>1</urlset>", b"<urlset>2</urlset>"]
    assert server.log == [
        (0, b"GET /0.xml HTTP/1.1"),
        (0, b"GET /1.xml HTTP/1.1"),
        (0, b"GET /2.xml HTTP/1.1"),
    ]


def test_chunked_and_close_delimited_bodies_are_read_whole() -> None:
    def answer(c: int, n: int, head: bytes) -> bytes:
        if b"/chunked" in head:
            return (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n<url\r\n5\r\nset/>\r\n0\r\n\r\n"
            )
        return b"HTTP/1.1 200 OK\r\n\r\n<urlset>to the end</urlset>" + CLOSE  # no length: until the close

    server = Scripted(answer)

    async def main() -> list[bytes]:
        async with server.running(), client() as c:
            out = [(await c.get(server.base + "/chunked")).content for _ in range(2)]
            return [
                *out,
                (await c.get(server.base + "/close")).content,
                (await c.get(server.base + "/chunked")).content,
            ]

    assert run(main) == [b"<urlset/>", b"<urlset/>", b"<urlset>to the end</urlset>", b"<urlset/>"]
    # the chunked answers kept the connection; the one read to its end ended it
    assert [c for c, _ in server.log] == [0, 0, 0, 1]


def test_a_connection_is_not_reused_after_connection_close_an_unread_body_or_http_1_0() -> None:
    def answer(c: int, n: int, head: bytes) -> bytes:
        if b"/close" in head:
            return ok(extra=b"Connection: close\r\n")
        if b"/old" in head:
            return b"HTTP/1.0 200 OK\r\nContent-Length: 9\r\n\r\n<urlset/>"
        return ok(b"x" * 200_000)

    server = Scripted(answer)

    async def main() -> int:
        async with server.running(), client() as c:
            assert (await c.get(server.base + "/close")).status_code == 200
            async with c.stream("GET", server.base + "/big") as response:  # closed before its end
                async for _ in response.aiter_raw():
                    break
            assert (await c.get(server.base + "/old")).status_code == 200
            assert (await c.get(server.base + "/big")).content == b"x" * 200_000
            transport = c._transport
            assert isinstance(transport, Transport)
            return transport.idle

    assert run(main) == 1  # only the last connection, whose answer was read whole, is kept
    assert [c for c, _ in server.log] == [0, 1, 2, 3]


def test_a_get_is_sent_again_on_a_new_connection_when_a_kept_one_was_closed_before_answering() -> None:
    """The keep-alive race: the server closes an idle connection just as the next request goes out on it.
    A GET or HEAD goes again on a new connection, once; a POST does not (it may have been acted on)."""
    server = Scripted(lambda c, n, head: None if (c, n) == (0, 1) or b"/ping" in head else ok())

    async def main() -> tuple[int, int, str]:
        async with server.running(), client() as c:
            first = (await c.get(server.base + "/a.xml")).status_code
            second = (await c.get(server.base + "/b.xml")).status_code  # on connection 0: closed unanswered
            await c.get(server.base + "/c.xml")  # on connection 1, its first
            with pytest.raises(httpx.RemoteProtocolError) as err:
                await c.post(server.base + "/ping", content=b"{}")  # connection 1's second: closed unanswered
            return first, second, str(err.value)

    assert run(main) == (200, 200, "Server disconnected without sending a response.")
    assert server.log == [
        (0, b"GET /a.xml HTTP/1.1"),
        (0, b"GET /b.xml HTTP/1.1"),
        (1, b"GET /b.xml HTTP/1.1"),
        (1, b"GET /c.xml HTTP/1.1"),
        (1, b"POST /ping HTTP/1.1"),
    ]


def test_a_get_is_sent_again_when_a_kept_connection_was_reset_and_a_new_ones_reset_is_said() -> None:
    server = Scripted(lambda c, n, head: RESET if (c, n) == (0, 1) or b"/reset" in head else ok())

    async def main() -> tuple[int, str]:
        async with server.running():
            async with client() as c:
                await c.get(server.base + "/a.xml")
                status = (await c.get(server.base + "/b.xml")).status_code  # connection 0 reset: on 1
            async with client() as c:
                with pytest.raises(httpx.ReadError) as err:
                    await c.get(server.base + "/reset")  # a new connection: not again
            return status, str(err.value)

    assert run(main) == (200, "Connection reset by peer")
    assert server.log == [
        (0, b"GET /a.xml HTTP/1.1"),
        (0, b"GET /b.xml HTTP/1.1"),
        (1, b"GET /b.xml HTTP/1.1"),
        (2, b"GET /reset HTTP/1.1"),
    ]


def test_a_new_connection_closed_before_answering_is_not_tried_again() -> None:
    server = Scripted(lambda c, n, head: None)

    async def main() -> str:
        async with server.running(), client() as c:
            with pytest.raises(httpx.RemoteProtocolError) as err:
                await c.get(server.base + "/a.xml")
            return str(err.value)

    assert run(main) == "Server disconnected without sending a response."
    assert server.log == [(0, b"GET /a.xml HTTP/1.1")]


def test_what_is_not_http_is_a_protocol_error_and_a_cut_body_says_so() -> None:
    def answer(c: int, n: int, head: bytes) -> bytes:
        if b"/junk" in head:
            return b"SSH-2.0-OpenSSH_9.2\r\n\r\n" + CLOSE
        if b"/half-head" in head:
            return b"HTTP/1.1 200 OK\r\nContent-Le" + CLOSE
        return b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n<urlset>" + CLOSE

    server = Scripted(answer)

    async def main() -> list[str]:
        out = []
        async with server.running(), client() as c:
            for path in ("/junk", "/half-head"):
                with pytest.raises(httpx.RemoteProtocolError) as err:
                    await c.get(server.base + path)
                out.append(str(err.value))
            async with c.stream("GET", server.base + "/cut") as response:
                with pytest.raises(httpx.RemoteProtocolError) as err:
                    await response.aread()
                out.append(str(err.value))
            transport = c._transport
            assert isinstance(transport, Transport)
            assert transport.idle == 0
        return out

    junk, half, cut = run(main)
    assert junk.startswith("illegal status line")
    assert half == "Server disconnected without sending a response."
    assert "peer closed connection without sending complete message body" in cut


def test_a_head_too_large_is_refused() -> None:
    server = Scripted(lambda c, n, head: b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n" + CLOSE)

    async def main() -> None:
        async with server.running(), client() as c:
            with pytest.raises(httpx.RemoteProtocolError):
                await c.get(server.base + "/")

    run(main)


def test_informational_answers_are_skipped_and_head_has_no_body() -> None:
    def answer(c: int, n: int, head: bytes) -> bytes:
        if head.startswith(b"HEAD"):
            return b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n"
        return b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n" + ok()

    server = Scripted(answer)

    async def main() -> tuple[int, bytes, int, bytes]:
        async with server.running(), client() as c:
            head = await c.head(server.base + "/s.xml")
            get = await c.get(server.base + "/s.xml")
            return head.status_code, head.content, get.status_code, get.content

    assert run(main) == (200, b"", 200, b"<urlset/>")
    assert [c for c, _ in server.log] == [0, 0]  # the HEAD's connection carried the GET


def test_idle_connections_expire_and_are_bounded() -> None:
    server = Scripted(lambda c, n, head: ok())

    async def main(**kw: object) -> int:
        async with server.running(), client(**kw) as c:
            for _ in range(2):
                await c.get(server.base + "/")
            transport = c._transport
            assert isinstance(transport, Transport)
            return transport.idle

    assert run(lambda: main(keepalive_expiry=0)) == 1  # each request on a new connection
    assert server.connections == 2
    assert run(lambda: main(keepalive=0)) == 0  # none kept: each closed after its answer
    assert server.connections == 4


def test_a_cancelled_request_closes_its_connection() -> None:
    """A task cancelled while a body arrives leaves no half-read connection in the pool."""
    got_request = asyncio.Event()

    def answer(c: int, n: int, head: bytes) -> bytes:
        got_request.set()
        return b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n<urlset>"  # and then nothing

    server = Scripted(answer)

    async def main() -> tuple[int, int]:
        async with server.running(), client() as c:
            task = asyncio.create_task(c.get(server.base + "/slow"))
            await got_request.wait()
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            for _ in range(100):  # the server sees the close
                if server.closed_by_client:
                    break
                await asyncio.sleep(0.02)
            transport = c._transport
            assert isinstance(transport, Transport)
            return transport.idle, server.closed_by_client

    assert run(main) == (0, 1)


def test_every_address_the_policy_refuses_is_not_connected_to() -> None:
    server = Scripted(lambda c, n, head: ok())

    async def main() -> str:
        async with server.running():
            policy = FetchPolicy()
            async with httpx.AsyncClient(
                transport=Transport(policy.connect_problem, tls_context(), keepalive=4)
            ) as c:
                with pytest.raises(AddressRefused) as err:
                    await c.get(server.base + "/")
                return err.value.reason

    assert run(main).startswith("127.0.0.1:")
    assert "loopback address; not fetched" in run(main)
    assert server.connections == 0


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.2", [(socket.AF_INET, ("127.0.0.2", 80))]),
        ("93.184.215.14", [(socket.AF_INET, ("93.184.215.14", 80))]),
        ("::1", [(socket.AF_INET6, ("::1", 80, 0, 0))]),
        ("::ffff:127.0.0.1", [(socket.AF_INET6, ("::ffff:127.0.0.1", 80, 0, 0))]),
        ("127.1", None),  # the resolver reads these (127.0.0.1), and its reading is what the policy judges
        ("0x7f.0.0.1", None),
        ("0177.0.0.1", None),
        ("127.000.0.1", None),
        ("0:0:0:0:0:0:0:1", None),
        ("fe80::1%eth0", None),
        ("example.com", None),
        ("", None),
    ],
)
def test_only_a_canonical_ip_address_skips_the_resolver(host: str, expected: object) -> None:
    assert numeric(host, 80) == expected


def test_a_numeric_host_is_connected_to_without_the_resolver_and_a_written_otherwise_one_is_judged_resolved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No resolver thread for `127.0.0.1`; `127.1` goes to the resolver, and the policy judges the address
    it gives (a loopback address, refused)."""
    asked: list[str] = []
    real = asyncio.BaseEventLoop.getaddrinfo

    async def counting(self: asyncio.BaseEventLoop, host: str, *args: object, **kw: object) -> object:
        asked.append(host)
        return await real(self, host, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", counting)
    server = Scripted(lambda c, n, head: ok())

    async def main() -> str:
        async with server.running():
            async with client() as c:
                assert (await c.get(server.base + "/")).status_code == 200
            port = server.base.rsplit(":", 1)[1]
            policy = FetchPolicy()
            async with httpx.AsyncClient(
                transport=Transport(policy.connect_problem, tls_context(), keepalive=4)
            ) as c:
                with pytest.raises(AddressRefused) as err:
                    await c.get(f"http://127.1:{port}/")
                return err.value.reason

    reason = run(main)
    assert asked == ["127.1"]
    assert reason.startswith("127.1:") and "(127.0.0.1) is a loopback address" in str(reason)


def test_an_unknown_name_is_a_connect_error_caused_by_the_resolver() -> None:
    async def main() -> BaseException:
        async with client() as c:
            with pytest.raises(httpx.ConnectError) as err:
                await c.get("http://no-such-host.invalid/")
            return err.value

    error = run(main)
    assert str(error).startswith("DNS lookup of no-such-host.invalid failed")
    assert isinstance(error.__cause__, socket.gaierror)


def test_a_scheme_other_than_http_is_refused() -> None:
    async def main() -> None:
        async with client() as c:
            with pytest.raises(httpx.UnsupportedProtocol):
                await c.get("ftp://127.0.0.1/")

    run(main)


def test_bytes_after_an_answer_keep_its_connection_from_being_reused() -> None:
    """More than the answer's length came: what follows is no answer to the next request."""
    server = Scripted(lambda c, n, head: ok(b"<urlset/>") + (b"junk" if c == 0 else b""))

    async def main() -> list[bytes]:
        async with server.running(), client() as c:
            return [(await c.get(server.base + path)).content for path in ("/a.xml", "/b.xml")]

    assert run(main) == [b"<urlset/>", b"<urlset/>"]
    assert [c for c, _ in server.log] == [0, 1]


@pytest.mark.parametrize("begun", [b"HTTP/1.1 2", b"HTTP/1.1 100 Continue\r\n\r\n"])
def test_a_kept_connection_that_began_an_answer_and_closed_is_not_tried_again(begun: bytes) -> None:
    """Part of a status line, or a whole informational answer, then the close: the server began to answer,
    so the request is not sent again (only one closed before any answer is)."""
    server = Scripted(lambda c, n, head: ok() if n == 0 else begun + CLOSE)

    async def main() -> str:
        async with server.running(), client() as c:
            await c.get(server.base + "/a.xml")
            with pytest.raises(httpx.RemoteProtocolError) as err:
                await c.get(server.base + "/b.xml")
            return str(err.value)

    assert run(main) == "Server disconnected without sending a response."
    assert server.log == [(0, b"GET /a.xml HTTP/1.1"), (0, b"GET /b.xml HTTP/1.1")]


def test_a_body_that_fails_closes_its_connection_even_if_the_response_is_never_closed() -> None:
    """The body's own iterator lets the connection go when it fails, whoever reads it."""
    server = Scripted(lambda c, n, head: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")

    async def main() -> int:
        async with server.running():
            transport = Transport(FetchPolicy(allow_private=True).connect_problem, tls_context(), keepalive=4)
            request = httpx.Request("GET", server.base + "/bad")
            response = await transport.handle_async_request(request)
            with pytest.raises(httpx.RemoteProtocolError):
                async for _ in response.stream:  # type: ignore[union-attr]
                    pass
            for _ in range(100):  # the server sees the close
                if server.closed_by_client:
                    break
                await asyncio.sleep(0.02)
            return server.closed_by_client

    assert run(main) == 1


def test_the_fetcher_keeps_the_cookies_a_site_sets() -> None:
    """A cookie set by an answer goes with the next requests to that site; answers that set none leave
    the jar as it is (the fetcher reads cookies only from answers that set some)."""
    from sitemapkit.reader.fetch import Fetcher, FetchOptions

    def answer(c: int, n: int, head: bytes) -> bytes:
        if b"/robots.txt" in head:
            return ok(b"User-agent: *\n", extra=b"Set-Cookie: session=abc; Path=/\r\n")
        return ok()

    server = Scripted(answer)

    async def main() -> None:
        async with server.running():
            options = FetchOptions(policy=FetchPolicy(allow_private=True), retries=0)
            async with Fetcher(options) as f:
                for path in ("/robots.txt", "/a.xml", "/b.xml"):
                    assert (await f.get(server.base + path)).status == 200

    run(main)
    cookies = [
        next((line for line in head.split(b"\r\n") if line.lower().startswith(b"cookie:")), None)
        for head in server.heads
    ]
    assert cookies == [None, b"Cookie: session=abc", b"Cookie: session=abc"]


def test_an_international_host_is_resolved_as_it_goes_on_the_wire(monkeypatch: pytest.MonkeyPatch) -> None:
    """`straße.test` is looked up (and judged, and named to TLS) as httpx writes it, IDNA 2008's
    `xn--strae-oqa.test`, not as Python's own codec would (IDNA 2003: `strasse.test`, another host)."""
    asked: list[str] = []
    server = Scripted(lambda c, n, head: ok())

    async def fake(self: asyncio.BaseEventLoop, host: str, port: int, **kw: object) -> object:
        asked.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", fake)

    async def main() -> int:
        async with server.running(), client() as c:
            port = server.base.rsplit(":", 1)[1]
            return (await c.get(f"http://straße.test:{port}/")).status_code

    assert run(main) == 200
    assert asked == ["xn--strae-oqa.test"]


def test_over_tls_bytes_after_an_answer_held_in_the_tls_buffers_keep_the_connection_from_reuse() -> None:
    """A body that ends where a 64 KiB read ends, more bytes behind it in the same write: over TLS they
    wait in the TLS buffers, not on the connection; the connection must still not carry the next request
    (else those bytes would be its answer)."""
    import threading

    from tests.support.localserver import SELF_SIGNED, tls_server_context
    from tests.support.rawserver import read_head

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    context = tls_server_context()
    sent = threading.Event()
    connections: list[int] = []

    def serve() -> None:
        while True:
            try:
                raw, _ = listener.accept()
            except OSError:
                return
            number = len(connections)
            connections.append(number)
            threading.Thread(target=answer, args=(context.wrap_socket(raw, server_side=True), number)).start()

    def answer(conn: ssl.SSLSocket, number: int) -> None:
        with conn:
            while read_head(conn) is not None:
                if number == 0:
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n\r\n")
                    conn.sendall(b"a" * 65536 + b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nEVIL!")
                    sent.set()
                else:
                    conn.sendall(ok(b"connection %d" % number))

    threading.Thread(target=serve, daemon=True).start()

    async def main() -> tuple[int, bytes]:
        trusting = ssl.create_default_context(cafile=str(SELF_SIGNED))
        transport = Transport(FetchPolicy(allow_private=True).connect_problem, trusting, keepalive=4)
        async with httpx.AsyncClient(transport=transport) as c:
            first = await c.send(c.build_request("GET", f"https://127.0.0.1:{port}/1"), stream=True)
            await asyncio.to_thread(sent.wait, 10)  # all of it sent before the body is read
            await asyncio.sleep(0.2)  # (and arrived)
            await first.aread()
            second = await c.get(f"https://127.0.0.1:{port}/2")
            return len(first.content), second.content

    try:
        assert run(main) == (65536, b"connection 1")
    finally:
        listener.close()


def test_a_kept_connection_is_judged_again_for_the_task_that_would_reuse_it() -> None:
    """What the policy allows can differ between tasks (a harvest trusts each site in its own task): a
    connection kept after a trusting task's request is not reused by a task the policy refuses it to."""
    from sitemapkit.reader.fetch import Fetcher, FetchError, FetchOptions, trust_in_this_task

    server = Scripted(lambda c, n, head: ok(b"secret"))

    async def main() -> list[str]:
        out: list[str] = []
        async with server.running(), Fetcher(FetchOptions(retries=0)) as f:

            async def untrusted() -> None:
                try:
                    out.append(f"read {(await f.get(server.base + '/admin')).body!r}")
                except FetchError as exc:
                    out.append("refused" if "loopback address" in exc.reason else exc.reason)

            async def trusted() -> None:
                trust_in_this_task(server.base + "/")
                out.append(f"read {(await f.get(server.base + '/sitemap.xml')).body!r}")

            for task in (untrusted, trusted, untrusted):
                await asyncio.create_task(task())
        return out

    assert run(main) == ["refused", "read b'secret'", "refused"]
    assert server.log == [(0, b"GET /sitemap.xml HTTP/1.1")]
