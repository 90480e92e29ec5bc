"""The connections the fetcher's requests travel over: TCP (and TLS on it) on asyncio's own transports,
made by the fetcher's transport (`transport.Transport`, which connects only to an address the policy
allows).

httpcore's stream (anyio's), which httpx would use, reads on demand: each read resumes the transport,
waits for one piece, pauses the transport again (two `epoll_ctl` calls) and arms a cancel scope. Here the
transport reads as data arrives, up to `HIGH_WATER` bytes held, and a read takes what has arrived (up to
the 64 KiB asked for), waiting (with its timeout) only when nothing has: a harvest of 1,000 sites x 5,000
URLs spent about a tenth less CPU. Failures are httpx's exceptions (`ConnectError`, `ReadTimeout` ...).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import socket
import ssl
import sys
from collections import deque
from collections.abc import Iterable
from typing import Any, Final

import httpx

RECEIVE: Final = 64 * 1024
"""Most bytes taken from the socket at once (asyncio would take 256 KiB)."""
HIGH_WATER: Final = 64 * 1024
"""Bytes held unread past which the transport stops reading from the socket (until reads take half): a
body waiting for its parser stays in the kernel's buffers, as with httpcore's own stream, not in this
process (over TLS: of encrypted data, decrypted as it is read)."""


class _Protocol(asyncio.BufferedProtocol):
    """What arrives on one connection, kept until read; whether writing must wait."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.chunks: deque[bytes] = deque()
        self.held = 0
        self.ended = False  # the peer sent its end, or the connection is lost
        self.error: Exception | None = None
        self.reading_paused = False
        self.writing_paused = False
        self._waiter: asyncio.Future[None] | None = None
        self._drained: asyncio.Future[None] | None = None
        self._buffer = memoryview(bytearray(RECEIVE))

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._buffer

    def buffer_updated(self, nbytes: int) -> None:
        self.chunks.append(self._buffer[:nbytes].tobytes())
        self.held += nbytes
        if self.held > HIGH_WATER and not self.reading_paused and self.transport is not None:
            self.transport.pause_reading()
            self.reading_paused = True
        self._wake()

    def eof_received(self) -> None:
        self.ended = True
        self._wake()  # (returns None: the transport closes itself)

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self.error = self.error or exc
        self._wake()
        drained, self._drained = self._drained, None
        _release(drained)

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        drained, self._drained = self._drained, None
        _release(drained)

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        _release(waiter)

    async def arrival(self, timeout: float | None) -> None:
        """Wait until something has arrived or the connection ended; TimeoutError after `timeout`."""
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(timeout):
                await waiter
        finally:
            self._waiter = None

    async def drained(self, timeout: float | None) -> None:
        """Wait until the transport takes writes again; TimeoutError after `timeout`."""
        drained = self._drained = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(timeout):
                await drained
        finally:
            self._drained = None

    def take(self, most: int) -> bytes:
        """All that has arrived, up to `most` bytes."""
        chunks = self.chunks
        first = chunks.popleft()
        if len(first) >= most:
            if len(first) > most:
                chunks.appendleft(first[most:])
                first = first[:most]
            data = first
        elif not chunks:
            data = first
        else:
            parts = [first]
            size = len(first)
            while chunks and size < most:
                chunk = chunks.popleft()
                if size + len(chunk) > most:
                    chunks.appendleft(chunk[most - size :])
                    chunk = chunk[: most - size]
                parts.append(chunk)
                size += len(chunk)
            data = b"".join(parts)
        self.held -= len(data)
        if self.reading_paused and self.held <= HIGH_WATER // 2 and self.transport is not None:
            self.reading_paused = False
            self.transport.resume_reading()
        return data


class Connection:
    """One TCP connection, or TLS over one.

    TLS is done here on memory buffers (`ssl.SSLObject`), as httpcore's own stream does it, not by
    asyncio's TLS transport: that one holds a 256 KiB buffer and up to 256 KiB of encrypted data ahead a
    connection besides, several times what a harvest's hundreds of connections may hold."""

    def __init__(
        self,
        transport: asyncio.Transport,
        protocol: _Protocol,
        tls: ssl.SSLObject | None = None,
        incoming: ssl.MemoryBIO | None = None,
        outgoing: ssl.MemoryBIO | None = None,
    ) -> None:
        self._transport = transport
        self._protocol = protocol
        self._tls = tls
        self._incoming = incoming or ssl.MemoryBIO()
        self._outgoing = outgoing or ssl.MemoryBIO()

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """What has arrived, up to `max_bytes`; b"" once the peer ended. Waits `timeout` seconds at most
        for anything to arrive."""
        if self._tls is None:
            return await self._receive(max_bytes, timeout)
        return await self._receive_tls(max_bytes, timeout)

    async def _receive(self, max_bytes: int, timeout: float | None) -> bytes:
        protocol = self._protocol
        if not protocol.chunks:
            if not protocol.ended:
                try:
                    await protocol.arrival(timeout)
                except TimeoutError:
                    raise httpx.ReadTimeout(f"nothing arrived for {timeout:g} s") from None
            if not protocol.chunks:
                if protocol.error is not None:
                    raise httpx.ReadError(_reason(protocol.error)) from (protocol.error)
                return b""
        return protocol.take(max_bytes)

    async def _receive_tls(self, max_bytes: int, timeout: float | None) -> bytes:
        """The clear text of what has arrived, up to `max_bytes` (several TLS records, each at most 16 KiB,
        read together); b"" at the end, with or without the peer's close_notify (as httpcore reads it)."""
        tls, incoming, protocol = self._tls, self._incoming, self._protocol
        assert tls is not None
        parts: list[bytes] = []
        size = 0
        while size < max_bytes:
            try:
                chunk = tls.read(max_bytes - size)
            except ssl.SSLWantReadError:
                if protocol.chunks:  # encrypted bytes here already: decrypt them too
                    incoming.write(protocol.take(max_bytes))
                    continue
                if parts or incoming.eof:
                    break
                await self._flush(timeout)  # (anything TLS itself has to say first)
                raw = await self._receive(max_bytes, timeout)
                if raw:
                    incoming.write(raw)
                else:
                    incoming.write_eof()
                continue
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):  # the end, told or not
                break
            except ssl.SSLError as exc:
                raise httpx.ReadError(str(exc)) from exc
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
        if self._outgoing.pending:  # what reading made TLS say (a key update's answer): sent if it can be
            if self._protocol.ended or self._transport.is_closing():
                self._outgoing.read()  # (the peer is gone: a read is not failed for it)
            else:
                await self._flush(timeout)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        if self._tls is not None:
            try:
                self._tls.write(buffer)  # (into a memory buffer: never waits)
            except ssl.SSLError as exc:
                raise httpx.WriteError(str(exc)) from exc
            await self._flush(timeout)
            return
        await self._send(buffer, timeout)

    async def _flush(self, timeout: float | None) -> None:
        """Send what TLS has written into its outgoing buffer."""
        if self._outgoing.pending:
            await self._send(self._outgoing.read(), timeout)

    async def _send(self, data: bytes, timeout: float | None) -> None:
        protocol = self._protocol
        if protocol.ended or self._transport.is_closing():
            raise httpx.WriteError("the connection is closed")
        self._transport.write(data)
        if protocol.writing_paused:
            try:
                await protocol.drained(timeout)
            except TimeoutError:
                raise httpx.WriteTimeout(f"the peer took nothing for {timeout:g} s") from None
            if protocol.ended:
                raise httpx.WriteError("the connection was lost while writing")

    async def aclose(self) -> None:
        """Close at once: what was not sent yet is dropped, and no TLS close_notify is exchanged (as with
        httpcore's own stream; asyncio would wait up to 30 s for the peer's, the socket open)."""
        transport = self._transport
        if not transport.is_closing():
            transport.close()
            await asyncio.sleep(0)  # (a last small write goes out)
        transport.abort()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> Connection:
        """TLS over this connection, the handshake within `timeout` seconds; the certificate is checked
        as `ssl_context` says (against `server_hostname`)."""
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        protocol = self._protocol
        try:
            tls = ssl_context.wrap_bio(incoming, outgoing, server_side=False, server_hostname=server_hostname)
            stream = Connection(self._transport, protocol, tls, incoming, outgoing)
            async with asyncio.timeout(timeout):
                while True:
                    try:
                        tls.do_handshake()
                        break
                    except ssl.SSLWantReadError:
                        await stream._flush(None)
                        if protocol.chunks:
                            incoming.write(protocol.take(protocol.held))
                            continue
                        raw = await stream._receive(RECEIVE, None)
                        if not raw:
                            raise httpx.ConnectError(
                                "the connection closed during the TLS handshake"
                            ) from None
                        incoming.write(raw)
                await stream._flush(None)
        except TimeoutError:
            self._transport.abort()
            raise httpx.ConnectTimeout(f"TLS handshake took longer than {timeout:g} s") from None
        except httpx.ConnectError:
            self._transport.abort()
            raise
        except (OSError, httpx.ReadError, httpx.WriteError) as exc:  # ssl.SSLError among them
            self._transport.abort()
            raise httpx.ConnectError(_reason(exc)) from exc
        return stream

    def get_extra_info(self, info: str) -> Any:
        """The TLS object (`ssl_object`) or the socket (`socket`) under the connection; None for anything
        else."""
        if info == "ssl_object":
            return self._tls
        if info == "socket":
            return self._transport.get_extra_info("socket")
        return None

    def buffered(self) -> bool:
        """Whether bytes that arrived are held here unread: taken from the socket, or over TLS in its
        buffers (encrypted, or decrypted and not yet read)."""
        if self._protocol.chunks or self._incoming.pending:
            return True
        return self._tls is not None and self._tls.pending() > 0

    def stale(self) -> bool:
        """Whether an idle connection can no longer carry a request: the peer closed it, or wrote to it
        when it had nothing to say (held here, or still in the socket: what arrived while the loop was
        busy)."""
        if self.buffered() or self._protocol.ended or self._transport.is_closing():
            return True
        return _socket_readable(self._transport.get_extra_info("socket"))

    def abort(self) -> None:
        """Close at once, dropping what was not sent (a connection given up mid-message)."""
        self._transport.abort()


def _release(waiter: asyncio.Future[None] | None) -> None:
    """Let the one waiting on `waiter` (if anyone still is) go on."""
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


def _reason(exc: BaseException) -> str:
    """What went wrong, in words (`Connection refused`, not `[Errno 111] Connect call failed (...)`)."""
    if isinstance(exc, OSError) and not isinstance(exc, ssl.SSLError) and exc.errno:
        return os.strerror(exc.errno)
    return str(exc) or type(exc).__name__


def _socket_readable(sock: Any) -> bool:
    """Whether `sock` has something to read (or its end) right now; True when it cannot be told."""
    try:
        fd = sock.fileno()
        if fd < 0:
            return True
        if sys.platform == "win32" or not hasattr(select, "poll"):
            readable, _, _ = select.select([fd], [], [], 0)
            return bool(readable)
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return True


async def connect(
    family: int,
    sockaddr: tuple[Any, ...],
    timeout: float | None,
    local_address: str | None = None,
    socket_options: Iterable[Any] | None = None,
) -> Connection:
    """A TCP connection to `sockaddr` (an address by number, as `getaddrinfo` gives it), within `timeout`
    seconds. Raises httpx's `ConnectError` or `ConnectTimeout`."""
    loop = asyncio.get_running_loop()
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        for option in socket_options or ():
            sock.setsockopt(*option)
        if local_address is not None:
            sock.bind((local_address, 0))
        async with asyncio.timeout(timeout):
            await loop.sock_connect(sock, sockaddr)
            transport, protocol = await loop.create_connection(_Protocol, sock=sock)
    except TimeoutError:
        sock.close()
        raise httpx.ConnectTimeout(f"connecting took longer than {timeout:g} s") from None
    except OSError as exc:
        sock.close()
        raise httpx.ConnectError(_reason(exc)) from exc
    except BaseException:
        sock.close()
        raise
    with contextlib.suppress(OSError):  # (asyncio sets it only on a socket made with IPPROTO_TCP)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return Connection(transport, protocol)
