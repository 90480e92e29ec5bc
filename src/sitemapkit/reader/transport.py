"""The fetcher's HTTP/1.1 transport under httpx: each connection made by `connection.connect` to an address
the fetch policy allows (`resolve`, then the policy's `connect_problem` on each address), requests written
and responses read by h11, idle connections kept per origin for the next request.

httpx's own transport is httpcore's connection pool. For each request it takes and releases anyio locks
and cancel scopes, asks sniffio which library runs several times and looks at every pooled connection
twice. Through the whole fetcher (politeness, retries, httpx's client), 1,000 loopback sites of four
requests each, a `Fetcher` per site: 700 µs of CPU a request with it, 505 µs with this
(docs/performance.md).

What this transport does is what that pool did for sitemapkit, no more: HTTP/1.1 only, no proxy (the
fetcher ignores the environment), a response read as it arrives, a connection kept only when both sides
finished their message and nothing came after the answer. A kept connection is dropped when it is older
than `keepalive_expiry`, when the peer wrote to it or closed it meanwhile (`Connection.stale`), or when
more than `keepalive` are kept; before it is reused its address is judged by the policy again, for the
task at hand (what the policy allows can differ by task). Unlike httpcore, a GET or HEAD sent on a kept
connection that the server had closed or reset before answering (the keep-alive race) is sent once more,
on a new connection. The host resolved, judged and named to TLS is the one on the wire (IDNA 2008).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

import h11
import httpx

from sitemapkit.reader.connection import Connection, connect

READ_SIZE: Final = 64 * 1024
"""Most bytes read from a connection at once."""
MAX_HEAD: Final = 100 * 1024
"""Most bytes a response head (status line and headers) may take, as httpcore allows."""
IDEMPOTENT: Final = frozenset({b"GET", b"HEAD"})
"""Methods sent again on a new connection when a reused one turns out closed before any answer."""

ConnectProblem = Callable[[str, int, str], "str | None"]
"""The policy's judgement of one address: `(host, port, address) -> why it is refused, or None`."""
Address = tuple[int, tuple[Any, ...]]
"""(address family, socket address), as `getaddrinfo` gives them."""


class AddressRefused(Exception):
    """The fetch policy refused every address of a host (`reason` says why)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def numeric(host: str, port: int) -> list[Address] | None:
    """The address of `host` when it is an IP address written in canonical form (what asyncio also
    connects to without asking DNS); None for a name, or for a number written otherwise (`127.1`,
    `0x7f.0.0.1`: the resolver's reading of those is the one that counts)."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            packed = socket.inet_pton(family, host)
        except OSError:
            continue
        if socket.inet_ntop(family, packed) != host:
            return None
        return [(family, (host, port) if family == socket.AF_INET else (host, port, 0, 0))]
    return None


async def resolve(host: str, port: int, timeout: float | None) -> list[Address]:
    """Every address of `host` (DNS, in asyncio's resolver thread, unless it is a number already); raises
    `httpx.ConnectTimeout` or `httpx.ConnectError` (whose cause is the resolver's `socket.gaierror`)."""
    found = numeric(host, port)
    if found is not None:
        return found
    try:
        async with asyncio.timeout(timeout):
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except TimeoutError:
        raise httpx.ConnectTimeout(f"DNS lookup of {host} timed out") from None
    except OSError as exc:
        raise httpx.ConnectError(f"DNS lookup of {host} failed: {exc}") from exc
    return [(family, sockaddr) for family, _, _, _, sockaddr in infos]


class _Idle:
    """A connection kept for its origin's next request."""

    __slots__ = ("address", "connection", "key", "since", "state")

    def __init__(
        self, key: tuple[bytes, bytes, int], connection: Connection, address: str, state: h11.Connection
    ) -> None:
        self.key = key
        self.connection = connection
        self.address = address
        self.state = state
        self.since = time.monotonic()


class Transport(httpx.AsyncBaseTransport):
    """HTTP/1.1 for `httpx.AsyncClient`, over connections to addresses `connect_problem` allows (see the
    module). `tls` verifies https servers; at most `keepalive` idle connections are kept, each at most
    `keepalive_expiry` seconds."""

    def __init__(
        self,
        connect_problem: ConnectProblem,
        tls: ssl.SSLContext,
        *,
        keepalive: int,
        keepalive_expiry: float | None = 5.0,
    ) -> None:
        self.connect_problem = connect_problem
        self.tls = tls
        self.keepalive = keepalive
        self.keepalive_expiry = keepalive_expiry
        self._origins: dict[tuple[bytes, bytes, int], list[_Idle]] = {}
        self._idle: dict[_Idle, None] = {}  # every idle connection, oldest first
        self._closed = False

    @property
    def idle(self) -> int:
        """How many idle connections are kept."""
        return len(self._idle)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        scheme = url.raw_scheme
        if scheme not in (b"http", b"https"):
            raise httpx.UnsupportedProtocol(
                f"Request URL has an unsupported protocol '{scheme.decode()}://'."
            )
        port = url.port or (443 if scheme == b"https" else 80)
        key = (scheme, url.raw_host, port)
        timeouts = request.extensions.get("timeout", {})
        # the host as it goes on the wire (IDNA 2008, as httpx encodes it) is the one resolved, judged by
        # the policy and named to TLS
        host = url.raw_host.decode("ascii")
        while True:
            reused = self._take(key, host, port)
            if reused is not None:
                connection, address, state = reused.connection, reused.address, reused.state
            else:
                connection, address = await self._connect(
                    host, port, scheme == b"https", timeouts.get("connect")
                )
                state = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
            try:
                return await self._exchange(request, key, connection, address, state, timeouts)
            except _Stale as stale:
                if reused is None or request.method.encode() not in IDEMPOTENT:
                    if stale.error is not None:
                        raise stale.error from stale.error.__cause__
                    raise httpx.RemoteProtocolError(_DISCONNECTED) from None
                # the server closed (or reset) the kept connection before it read this request: again,
                # on a new one

    async def _exchange(
        self,
        request: httpx.Request,
        key: tuple[bytes, bytes, int],
        connection: Connection,
        address: str,
        state: h11.Connection,
        timeouts: dict[str, float | None],
    ) -> httpx.Response:
        """Send `request` on `connection` and read the head of its answer; the body is the response's
        stream. Raises `_Stale` when the connection ended or was reset before any of the answer came."""
        try:
            data = state.send(
                h11.Request(method=request.method, target=request.url.raw_path, headers=request.headers.raw)
            )
            assert data is not None
            async for chunk in request.stream:  # type: ignore[union-attr]  # (an async client's request)
                if chunk:
                    data += state.send(h11.Data(data=chunk)) or b""
            data += state.send(h11.EndOfMessage()) or b""
            # a server may answer, then close, before taking the whole request: its answer is read
            with contextlib.suppress(httpx.WriteError):
                await connection.write(data, timeouts.get("write"))
            informational = False
            while True:
                try:
                    event = await _next_event(connection, state, timeouts.get("read"))
                except _Stale as stale:
                    if informational:  # the server had begun to answer: not the keep-alive race
                        raise stale.error or httpx.RemoteProtocolError(_DISCONNECTED) from None
                    raise
                if isinstance(event, h11.Response):
                    break
                if not isinstance(event, h11.InformationalResponse):  # pragma: no cover - h11 gives no other
                    raise httpx.RemoteProtocolError(f"unexpected {type(event).__name__} before the response")
                informational = True
        except h11.LocalProtocolError as exc:
            connection.abort()
            raise httpx.LocalProtocolError(str(exc)) from exc
        except BaseException:
            connection.abort()
            raise
        body = _Body(self, key, connection, address, state, timeouts.get("read"))
        return httpx.Response(
            event.status_code,
            headers=event.headers.raw_items(),
            stream=body,
            extensions={
                "http_version": b"HTTP/1.1",
                "reason_phrase": event.reason,
                "network_stream": connection,
            },
        )

    async def _connect(
        self, host: str, port: int, tls: bool, timeout: float | None
    ) -> tuple[Connection, str]:
        """A connection to the first address of `host` that the policy allows and that answers, and that
        address."""
        refused: str | None = None
        failure: Exception | None = None
        for family, sockaddr in await resolve(host, port, timeout):
            address = str(sockaddr[0])
            problem = self.connect_problem(host, port, address)
            if problem is not None:
                refused = refused or problem
                continue
            try:
                connection = await connect(family, sockaddr, timeout)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                failure = exc
                continue
            if not tls:
                return connection, address
            try:
                return await connection.start_tls(self.tls, server_hostname=host, timeout=timeout), address
            except BaseException:  # (a cancellation among them)
                connection.abort()
                raise
        if failure is not None:
            raise failure
        raise AddressRefused(refused or f"{host} has no address")

    def _take(self, key: tuple[bytes, bytes, int], host: str, port: int) -> _Idle | None:
        """An idle connection to `key`'s origin that can be used, if one is kept (the stale are closed).
        Its address is judged by the policy again: what the policy allows can differ from one task to
        another (`fetch.trust_in_this_task`); if it refuses now, a new connection is tried (and refused)."""
        self._expire()
        kept = self._origins.get(key)
        while kept:
            idle = kept[-1]
            if self.connect_problem(host, port, idle.address) is not None:
                return None  # (it stays kept, for the tasks the policy lets use it)
            kept.pop()
            del self._idle[idle]
            if not kept:
                del self._origins[key]
            if idle.connection.stale():  # the peer closed it, or wrote when it had nothing to say
                idle.connection.abort()
                continue
            return idle
        return None

    def give_back(
        self, key: tuple[bytes, bytes, int], connection: Connection, address: str, state: h11.Connection
    ) -> None:
        """Keep `connection` for the origin's next request if both sides finished their message and keep
        it open, and nothing came after the answer; close it otherwise."""
        finished = state.our_state is h11.DONE and state.their_state is h11.DONE
        # bytes after the answer in h11's buffer (those still on the connection make it `stale`)
        more = bool(state.trailing_data[0])
        if self._closed or self.keepalive < 1 or not finished or more:
            connection.abort()
            return
        state.start_next_cycle()
        self._expire()
        idle = _Idle(key, connection, address, state)
        self._origins.setdefault(key, []).append(idle)
        self._idle[idle] = None
        while len(self._idle) > self.keepalive:
            self._drop(next(iter(self._idle)))

    def _expire(self) -> None:
        """Close the idle connections older than `keepalive_expiry`."""
        if self.keepalive_expiry is None:
            return
        oldest = time.monotonic() - self.keepalive_expiry
        while self._idle:
            idle = next(iter(self._idle))
            if idle.since > oldest:
                break
            self._drop(idle)

    def _drop(self, idle: _Idle) -> None:
        del self._idle[idle]
        kept = self._origins[idle.key]
        kept.remove(idle)
        if not kept:
            del self._origins[idle.key]
        idle.connection.abort()

    async def aclose(self) -> None:
        """Close the idle connections; those in use close when their response is closed."""
        self._closed = True
        for idle in list(self._idle):
            self._drop(idle)


_DISCONNECTED: Final = "Server disconnected without sending a response."


class _Stale(Exception):
    """The connection ended (or was reset: `error`) before any of the answer came."""

    def __init__(self, error: httpx.ReadError | None = None) -> None:
        super().__init__()
        self.error = error


async def _next_event(connection: Connection, state: h11.Connection, timeout: float | None) -> Any:
    """h11's next event on `connection`, reading as needed (within `timeout` a read)."""
    while True:
        try:
            event = state.next_event()
        except h11.RemoteProtocolError as exc:
            raise httpx.RemoteProtocolError(str(exc)) from exc
        if event is not h11.NEED_DATA:
            return event
        try:
            data = await connection.read(READ_SIZE, timeout)
        except httpx.ReadError as exc:
            if state.their_state is h11.SEND_RESPONSE and not state.trailing_data[0]:
                raise _Stale(exc) from exc
            raise
        if not data and state.their_state is h11.SEND_RESPONSE:
            if state.trailing_data[0]:  # part of a head, then the end
                raise httpx.RemoteProtocolError(_DISCONNECTED)
            raise _Stale
        state.receive_data(data)


class _Body(httpx.AsyncByteStream):
    """A response body as it arrives; the connection goes back to the transport once the body ended (or
    is closed when the response is closed before)."""

    def __init__(
        self,
        transport: Transport,
        key: tuple[bytes, bytes, int],
        connection: Connection,
        address: str,
        state: h11.Connection,
        timeout: float | None,
    ) -> None:
        self._transport = transport
        self._key = key
        self._address = address
        self._connection: Connection | None = connection
        self._state = state
        self._timeout = timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection, state = self._connection, self._state
        if connection is None:
            return
        try:
            while True:
                event = await _next_event(connection, state, self._timeout)
                if type(event) is h11.Data:
                    yield bytes(event.data)
                elif type(event) is h11.EndOfMessage:
                    break
                else:  # pragma: no cover - h11 ends a body with EndOfMessage or an error
                    raise httpx.RemoteProtocolError(f"unexpected {type(event).__name__} in a response body")
        except BaseException:
            self._abort()
            raise
        self._connection = None
        self._transport.give_back(self._key, connection, self._address, state)

    def _abort(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.abort()

    async def aclose(self) -> None:
        """Close the connection, unless the whole body was read (it went back to the transport then)."""
        self._abort()
