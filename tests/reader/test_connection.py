"""The fetcher's connections (`reader.connection`) against real loopback peers: pieces in order and within
what the transport asks, flow control that leaves an unread body in the kernel, the ends of a connection
(closed, reset, silent), TLS over one, and whole fetches through them."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest

from sitemapkit.reader import connection
from sitemapkit.reader.connection import HIGH_WATER, RECEIVE, Connection, connect
from sitemapkit.reader.fetch import Fetcher, FetchOptions, FetchPolicy
from tests.support.localserver import SELF_SIGNED, LocalServer, tls_server_context
from tests.support.rawserver import read_head

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def peer(handle: Handler) -> AsyncIterator[tuple[str, int]]:
    """A TCP server on loopback running `handle` for each connection; its address."""
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[:2]
    finally:
        server.close()


async def dial(address: tuple[str, int], timeout: float = 5.0) -> Connection:
    import socket

    return await connect(socket.AF_INET, address, timeout)


def body(size: int) -> bytes:
    """`size` bytes that are not all alike (a piece out of order would show)."""
    out = bytearray()
    n = 0
    while len(out) < size:
        out += hashlib.sha256(str(n).encode()).digest()
        n += 1
    return bytes(out[:size])


def test_pieces_come_in_order_and_never_longer_than_asked() -> None:
    data = body(3 * 1024 * 1024 + 17)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for i in range(0, len(data), 100_000):  # written in pieces of its own size
            writer.write(data[i : i + 100_000])
            await writer.drain()
        writer.close()

    async def run() -> tuple[bytes, list[int]]:
        async with peer(handle) as address:
            conn = await dial(address)
            got, sizes = bytearray(), []
            while piece := await conn.read(65536, timeout=5):
                got += piece
                sizes.append(len(piece))
            await conn.aclose()
            return bytes(got), sizes

    got, sizes = asyncio.run(run())
    assert got == data
    assert max(sizes) <= 65536
    # a reader slower than the loopback takes full pieces: what has arrived, joined, not one recv each
    assert sizes.count(65536) >= len(sizes) // 2


def test_what_arrived_in_many_small_pieces_is_read_at_once() -> None:
    """Small pieces that came while nobody read are taken together, up to what was asked: the layers
    above see one piece, not hundreds."""
    data = body(200 * 1000)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for i in range(0, len(data), 1000):
            writer.write(data[i : i + 1000])
            await writer.drain()
            await asyncio.sleep(0.0005)  # (each its own segment, most its own receive)
        writer.close()

    async def run() -> list[bytes]:
        async with peer(handle) as address:
            conn = await dial(address)
            await asyncio.sleep(1.0)  # all of it has arrived (a loaded machine may need longer: then
            pieces = []  # the first piece is still joined from what came so far)
            while piece := await conn.read(65536, timeout=5):
                pieces.append(piece)
            return pieces

    pieces = asyncio.run(run())
    assert b"".join(pieces) == data
    assert len(pieces[0]) > 1000 * 4 and max(map(len, pieces)) <= 65536


def test_small_writes_are_not_held_back() -> None:
    """TCP_NODELAY is on (asyncio sets it only on a socket made with IPPROTO_TCP): a request's few
    hundred bytes go out at once, not after the peer's delayed ACK."""
    import socket

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    async def run() -> int:
        async with peer(handle) as address:
            conn = await dial(address)
            nodelay = int(conn.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            await conn.aclose()
            return nodelay

    assert asyncio.run(run()) == 1


def test_a_small_max_bytes_is_honoured() -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"0123456789" * 10)
        await writer.drain()
        writer.close()

    async def run() -> list[bytes]:
        async with peer(handle) as address:
            conn = await dial(address)
            await asyncio.sleep(0.05)
            pieces = []
            while piece := await conn.read(7, timeout=5):
                pieces.append(piece)
            return pieces

    pieces = asyncio.run(run())
    assert b"".join(pieces) == b"0123456789" * 10
    assert all(len(p) <= 7 for p in pieces)


def test_an_unread_body_stays_in_the_kernel() -> None:
    """Flow control: a connection nobody reads holds at most HIGH_WATER plus one receive in the
    process; the rest waits in the socket buffers (and the peer's writes wait), then all of it arrives."""
    data = body(16 * 1024 * 1024)
    written = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(data)
        await writer.drain()
        written.set()
        writer.close()

    async def run() -> tuple[int, bool, bytes]:
        async with peer(handle) as address:
            conn = await dial(address)
            await asyncio.sleep(0.5)  # nothing read: the transport fills up to its mark, then pauses
            held = conn._protocol.held
            done_early = written.is_set()
            got = bytearray()
            while piece := await conn.read(65536, timeout=5):
                got += piece
            return held, done_early, bytes(got)

    held, done_early, got = asyncio.run(run())
    assert 0 < held <= HIGH_WATER + RECEIVE
    assert not done_early  # 16 MB cannot all be in flight: the peer waited for the reader
    assert got == data


def test_silence_is_a_read_timeout_and_the_end_is_empty() -> None:
    release = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"hello")
        await writer.drain()
        await release.wait()
        writer.close()

    async def run() -> tuple[bytes, str, bytes, bool]:
        async with peer(handle) as address:
            conn = await dial(address)
            first = await conn.read(65536, timeout=5)
            with pytest.raises(httpx.ReadTimeout) as err:
                await conn.read(65536, timeout=0.2)
            release.set()
            end = await conn.read(65536, timeout=5)
            readable = conn.stale()
            return first, str(err.value), end, readable

    first, message, end, readable = asyncio.run(run())
    assert first == b"hello"
    assert "0.2 s" in message
    assert end == b""
    assert readable  # (the transport drops an idle connection the peer closed)


def test_a_reset_is_a_read_error_and_writing_to_an_ended_connection_fails() -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)
        writer.transport.abort()  # (an RST, with the request unread)

    async def run() -> None:
        async with peer(handle) as address:
            conn = await dial(address)
            await conn.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + b"x" * 100_000, timeout=5)
            with pytest.raises(httpx.ReadError):
                while await conn.read(65536, timeout=5):
                    pass
                raise httpx.ReadError("ended without an error")  # pragma: no cover
            with pytest.raises(httpx.WriteError):
                await conn.write(b"more", timeout=5)

    asyncio.run(run())


def test_closing_lets_the_socket_go_at_once_even_with_unsent_data() -> None:
    """A peer that stops reading: what was not sent is dropped at close, not held (with the socket)
    until the peer reads or goes away."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)
        await asyncio.sleep(30)  # reads nothing more

    async def run() -> tuple[str, int]:
        async with peer(handle) as address:
            conn = await dial(address)
            with pytest.raises(httpx.WriteTimeout) as err:
                await conn.write(b"x" * 20_000_000, timeout=0.3)
            sock = conn.get_extra_info("socket")
            await conn.aclose()
            await asyncio.sleep(0.05)
            return str(err.value), sock.fileno()

    message, fileno = asyncio.run(run())
    assert "0.3 s" in message
    assert fileno == -1


def test_a_refused_connection_is_a_connect_error() -> None:
    import socket

    async def run() -> None:
        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            address = s.getsockname()
        with pytest.raises(httpx.ConnectError, match=r"^Connection refused$"):  # (in words)
            await connect(socket.AF_INET, address, 5)

    asyncio.run(run())


def test_a_whole_fetch_over_tls_with_a_trusted_certificate(https_server: LocalServer) -> None:
    """TLS goes over the connection (`start_tls`): with the certificate trusted, a 2 MB body arrives
    whole; the server saw the one request."""
    data = b"<urlset>" + body(2 * 1024 * 1024).hex().encode()[: 2 * 1024 * 1024] + b"</urlset>"
    url = https_server.route("/big.xml", data)
    trusting = ssl.create_default_context(cafile=str(SELF_SIGNED))

    async def run() -> tuple[int, bytes, object]:
        options = FetchOptions(policy=FetchPolicy(allow_private=True), retries=0)
        async with Fetcher(options) as f:
            f._client._transport.tls = trusting  # type: ignore[attr-defined]
            async with f.stream(url) as response:
                got, _ = await response.read(None)
                stream = response._response.extensions["network_stream"]  # type: ignore[union-attr]
                return response.status, got, stream.get_extra_info("ssl_object")

    status, got, ssl_object = asyncio.run(run())
    assert status == 200 and got == data
    assert isinstance(ssl_object, ssl.SSLObject)
    assert [r.path for r in https_server.requests] == ["/big.xml"]


def test_tls_reads_records_together_holds_little_and_takes_an_end_without_close_notify() -> None:
    """Over TLS: pieces join several records (each at most 16 KiB) up to what was asked; a connection
    nobody reads holds little of the encrypted body (the rest waits in the kernel); a peer that closes
    without close_notify ends the body, which is whole."""
    import socket
    import threading

    data = body(8 * 1024 * 1024)
    written = threading.Event()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def serve() -> None:  # a blocking TLS server: all of `data` sent, then closed without close_notify
        raw, _ = listener.accept()
        with tls_server_context().wrap_socket(raw, server_side=True) as conn:
            conn.recv(5)
            conn.sendall(data)
            written.set()

    threading.Thread(target=serve, daemon=True).start()

    async def run() -> tuple[int, bool, bytes, list[int]]:
        try:
            plain = await connect(socket.AF_INET, listener.getsockname(), 5)
            trusting = ssl.create_default_context(cafile=str(SELF_SIGNED))
            conn = await plain.start_tls(trusting, "127.0.0.1", timeout=5)
            assert isinstance(conn, Connection)
            await conn.write(b"hello", timeout=5)
            await asyncio.sleep(0.5)  # nothing read: the transport pauses at its mark
            held = conn._protocol.held + conn._incoming.pending
            done_early = written.is_set()
            got, sizes = bytearray(), []
            while piece := await conn.read(65536, timeout=5):
                got += piece
                sizes.append(len(piece))
            assert await conn.read(65536, timeout=5) == b""  # (and stays ended)
            await conn.aclose()
            return held, done_early, bytes(got), sizes
        finally:
            listener.close()

    held, done_early, got, sizes = asyncio.run(run())
    assert got == data
    assert held <= HIGH_WATER + RECEIVE
    assert not done_early
    assert max(sizes) <= 65536 and sizes.count(65536) >= len(sizes) // 2  # records read together


def test_a_close_the_loop_has_not_seen_yet_makes_the_connection_stale() -> None:
    """`stale` (the transport's test before reusing an idle connection) looks at the socket itself: a
    peer's close that came while the loop was busy counts before the loop has read it. Checked with no
    await between the close and the question, so the loop cannot have seen it."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    close = threading.Event()
    closed = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.sendall(b"hello")
            close.wait(5)
        closed.set()

    threading.Thread(target=serve, daemon=True).start()

    async def run() -> tuple[bool, bool, bool]:
        conn = await dial(listener.getsockname())
        assert await conn.read(65536, timeout=5) == b"hello"
        idle = conn.stale()
        close.set()
        closed.wait(5)  # blocking: the loop is busy
        time.sleep(0.05)  # (the FIN reaches this side's socket)
        seen_by_loop = conn._protocol.ended
        stale = conn.stale()
        await conn.aclose()
        return idle, seen_by_loop, stale

    try:
        idle, seen_by_loop, stale = asyncio.run(run())
    finally:
        listener.close()
    assert not idle  # an open, quiet connection is not stale
    assert not seen_by_loop
    assert stale


def test_an_idle_connection_the_server_closed_while_the_loop_was_busy_is_not_reused() -> None:
    """The transport asks whether an idle pooled connection is stale before reusing it: a close that came
    while the loop was busy (parsing, not reading the socket) must count, or the next request goes out on
    a dead connection and fails."""
    import socket
    import threading

    closed = threading.Event()
    connections: list[int] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            connections.append(1)
            with conn:
                read_head(conn)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n<urlset/>")
            closed.set()  # (keep-alive was not refused: the server just closed the connection)

    threading.Thread(target=serve, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/s.xml"

    async def run() -> list[int]:
        options = FetchOptions(policy=FetchPolicy(allow_private=True), retries=0)
        statuses = []
        async with Fetcher(options) as f:
            for _ in range(3):
                response = await f.get(url)
                statuses.append(response.status)
                closed.wait(5)  # blocking: the loop is busy while the server closes
                time.sleep(0.05)  # (the FIN reaches the client's socket)
                closed.clear()
        return statuses

    try:
        assert asyncio.run(run()) == [200, 200, 200]
    finally:
        listener.close()
    assert len(connections) == 3


def test_a_tls_handshake_against_a_plain_server_is_a_connect_error() -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(100)
        writer.write(b"HTTP/1.1 400 Bad Request\r\n\r\n")
        await writer.drain()
        writer.close()

    async def run() -> None:
        async with peer(handle) as address:
            conn = await dial(address)
            with pytest.raises(httpx.ConnectError):
                await conn.start_tls(ssl.create_default_context(), "127.0.0.1", timeout=5)

    asyncio.run(run())


def test_the_fetcher_connects_through_this_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every request goes over `connection.connect` (the fetcher's transport calls it), so a change here
    reaches every wing."""
    server = LocalServer()
    server.start()
    calls: list[tuple[object, ...]] = []
    real = connection.connect

    async def counting(*args: object, **kw: object) -> Connection:
        calls.append(args)
        return await real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr("sitemapkit.reader.transport.connect", counting)
    try:
        url = server.route("/s.xml", b"<urlset/>")

        async def run() -> bytes:
            options = FetchOptions(policy=FetchPolicy(allow_private=True))
            async with Fetcher(options) as f, f.stream(url) as response:
                got, _ = await response.read(None)
                return got

        assert asyncio.run(run()) == b"<urlset/>"
    finally:
        server.stop()
    assert len(calls) == 1 and calls[0][1][0] == "127.0.0.1"


def test_over_tls_what_waits_in_the_tls_buffers_counts_as_buffered_and_stale() -> None:
    """Bytes already taken from the socket can wait in the TLS layer: encrypted in its input buffer, or
    decrypted and not read yet. `buffered` and `stale` see them, so that such a connection is not reused
    for a request whose answer they are not. (The reads below put the bytes where the test wants them.)"""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    sent = threading.Event()

    def serve() -> None:
        raw, _ = listener.accept()
        with tls_server_context().wrap_socket(raw, server_side=True) as conn:
            conn.recv(5)
            conn.sendall(b"x" * 100 + b"y" * 50)  # one record of 150 bytes
            sent.set()
            conn.recv(5)  # (open until the client is done)

    threading.Thread(target=serve, daemon=True).start()

    async def run() -> list[tuple[str, bool, bool]]:
        try:
            plain = await connect(socket.AF_INET, listener.getsockname(), 5)
            trusting = ssl.create_default_context(cafile=str(SELF_SIGNED))
            conn = await plain.start_tls(trusting, "127.0.0.1", timeout=5)
            await conn.write(b"hello", timeout=5)
            await asyncio.to_thread(sent.wait, 5)
            for _ in range(100):  # until the record arrived whole
                await asyncio.sleep(0.01)
                if conn._protocol.held >= 150:
                    break
            protocol, incoming, tls = conn._protocol, conn._incoming, conn._tls
            assert tls is not None
            steps = [("on the connection", conn.buffered(), conn.stale())]
            incoming.write(protocol.take(protocol.held))  # into the TLS input buffer, encrypted
            assert not protocol.chunks and incoming.pending
            steps.append(("encrypted in the TLS buffer", conn.buffered(), conn.stale()))
            assert await conn.read(100, timeout=5) == b"x" * 100
            assert not protocol.chunks and not incoming.pending and tls.pending() == 50
            steps.append(("decrypted, not read", conn.buffered(), conn.stale()))
            assert await conn.read(100, timeout=5) == b"y" * 50
            steps.append(("all read", conn.buffered(), conn.stale()))
            await conn.write(b"bye!!", timeout=5)
            await conn.aclose()
            return steps
        finally:
            listener.close()

    assert asyncio.run(run()) == [
        ("on the connection", True, True),
        ("encrypted in the TLS buffer", True, True),
        ("decrypted, not read", True, True),
        ("all read", False, False),
    ]
