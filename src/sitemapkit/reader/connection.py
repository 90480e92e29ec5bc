"""The connections the fetcher's requests travel over: TCP (and TLS on it) on asyncio's own transports,
handed to httpcore by the fetcher's network backend (`fetch._GuardedBackend`, which connects only to an
address the policy allows).

httpcore's default stream (anyio's) reads on demand: each read resumes the transport, waits for one
piece, pauses the transport again (two `epoll_ctl` calls) and arms a cancel scope. Here the transport
reads as data arrives, up to `HIGH_WATER` bytes held, and a read takes what has arrived (up to the
64 KiB httpcore asks for), waiting (with its timeout) only when nothing has: a harvest of 1,000 sites x
5,000 URLs spends about a tenth less CPU.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections import deque
from collections.abc import Iterable
from typing import Any, Final

import httpcore

HIGH_WATER: Final = 64 * 1024
"""Bytes held unread past which the transport stops reading from the socket (until reads take half): a
body waiting for its parser stays in the kernel's buffers, as with httpcore's own stream, not in this
process."""


class _Protocol(asyncio.Protocol):
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

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.chunks.append(bytes(data))
        self.held += len(data)
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
        if drained is not None and not drained.done():
            drained.set_result(None)

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

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


class Connection(httpcore.AsyncNetworkStream):
    """One TCP connection (or TLS over one) as httpcore uses it."""

    def __init__(self, transport: asyncio.Transport, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """What has arrived, up to `max_bytes`; b"" once the peer ended. Waits `timeout` seconds at most
        for anything to arrive."""
        protocol = self._protocol
        if not protocol.chunks:
            if not protocol.ended:
                try:
                    await protocol.arrival(timeout)
                except TimeoutError:
                    raise httpcore.ReadTimeout(f"nothing arrived for {timeout:g} s") from None
            if not protocol.chunks:
                if protocol.error is not None:
                    raise httpcore.ReadError(str(protocol.error) or type(protocol.error).__name__) from (
                        protocol.error
                    )
                return b""
        return protocol.take(max_bytes)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        protocol = self._protocol
        if protocol.ended or self._transport.is_closing():
            raise httpcore.WriteError("the connection is closed")
        self._transport.write(buffer)
        if protocol.writing_paused:
            try:
                await protocol.drained(timeout)
            except TimeoutError:
                raise httpcore.WriteTimeout(f"the peer took nothing for {timeout:g} s") from None
            if protocol.ended:
                raise httpcore.WriteError("the connection was lost while writing")

    async def aclose(self) -> None:
        self._transport.close()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        """TLS over this connection, the handshake within `timeout` seconds; the certificate is checked
        as `ssl_context` says (against `server_hostname`)."""
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                transport = await loop.start_tls(
                    self._transport, self._protocol, ssl_context, server_hostname=server_hostname
                )
        except TimeoutError:
            self._transport.abort()
            raise httpcore.ConnectTimeout(f"TLS handshake took longer than {timeout:g} s") from None
        except OSError as exc:  # (ssl.SSLError and the certificate's rejection among them)
            self._transport.abort()
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        if transport is None:  # the connection closed during the handshake
            raise httpcore.ConnectError("the connection closed during the TLS handshake")
        assert isinstance(transport, asyncio.Transport)
        self._protocol.transport = transport  # (flow control now goes through TLS)
        return Connection(transport, self._protocol)

    def get_extra_info(self, info: str) -> Any:
        transport = self._transport
        if info == "ssl_object":
            return transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return transport.get_extra_info("sockname")
        if info == "server_addr":
            return transport.get_extra_info("peername")
        if info == "socket":
            return transport.get_extra_info("socket")
        if info == "is_readable":  # (httpcore: an idle connection the peer wrote to or closed is stale)
            return bool(self._protocol.chunks) or self._protocol.ended or transport.is_closing()
        return None


async def connect(
    family: int,
    sockaddr: tuple[Any, ...],
    timeout: float | None,
    local_address: str | None = None,
    socket_options: Iterable[Any] | None = None,
) -> Connection:
    """A TCP connection to `sockaddr` (an address by number, as `getaddrinfo` gives it), within `timeout`
    seconds. Raises httpcore's `ConnectError` or `ConnectTimeout`."""
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
        raise httpcore.ConnectTimeout(f"connecting took longer than {timeout:g} s") from None
    except OSError as exc:
        sock.close()
        raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
    except BaseException:
        sock.close()
        raise
    with contextlib.suppress(OSError):  # (asyncio sets it too, for a TCP socket)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return Connection(transport, protocol)
