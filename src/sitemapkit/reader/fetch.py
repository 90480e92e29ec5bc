"""The one HTTP stack of sitemapkit: httpx underneath, async inside, a small sync API on top.

What it guarantees, whoever calls it:

- http and https only, at every redirect hop; redirects are followed here (not by httpx) so that
  each hop is recorded, with a maximum number of hops and loop detection;
- the fetch policy (`FetchPolicy`): no connection to a loopback, private, link-local, multicast or
  reserved address (checked on the address actually connected to, after DNS, so a rebinding name
  cannot get around it) unless that origin is one the user named or `allow_private` is set; no
  redirect that leaves the site unless `follow_cross_host` is set;
- bounded concurrency per host and in total;
- politeness (`sitemapkit.reader.polite`): robots.txt at every hop, pacing, `Retry-After` holds and the
  per-host limit, shared by every `Fetcher` of a run;
- retries with exponential backoff and jitter on 429, 5xx and connection errors (not on a host name
  that does not exist: DNS said so, and a retry changes nothing), honouring
  `Retry-After` (seconds or an HTTP date, capped); the sleep, the jitter and the clock are injectable;
- connect and read timeouts, and one total deadline per request (`max_duration`) over connecting,
  the headers, redirects, retries and the body; a budget of retry sleeps per `Fetcher` (one walk);
- a cap on the bytes taken from the wire (the body is streamed and reading stops past the cap);
- `Content-Encoding` is decoded here exactly once, from the raw bytes, with its own size cap.
  Whatever is left (a `.xml.gz` file is gzip *content*, even when also sent with
  `Content-Encoding: gzip`) is for the parser to recognise by its magic bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import ipaddress
import random
import socket
import ssl
import threading
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from sitemapkit.core.constants import DEFAULT_RETRIES, MAX_ROBOTS_BYTES, USER_AGENT
from sitemapkit.core.errors import InputError
from sitemapkit.reader.polite import ROBOTS_MAX_REDIRECTS, UNREACHABLE, Politeness, RobotsRules, origin_of
from sitemapkit.reader.transport import AddressRefused, Transport

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 520, 521, 522, 523, 524})
"""Statuses worth asking again: rate limiting and transient server or gateway failures."""

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
CHUNK_SIZE = 64 * 1024

Sleep = Callable[[float], Awaitable[None]]


class FetchError(InputError):
    """A URL could not be fetched; the message names the URL and what went wrong."""

    redirects: tuple[Hop, ...] = ()
    """The redirects answered before the chain ended here, when it ended in a redirect."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"{url}: {reason}")
        self.url = url
        self.reason = reason


class DownloadTooLargeError(FetchError):
    """The body is larger than the download cap; reading stopped there."""


class ContentDecodingError(FetchError):
    """The `Content-Encoding` could not be decoded, or decodes to more than allowed."""


class FetchRefusedError(FetchError):
    """A request was not made: the fetch policy or the politeness layer refused it, or a redirect chain
    ended. `code` is the diagnostic code to report it with: `private-address`, `cross-host`,
    `robots-disallowed`, `redirect-blocked` (a hop robots.txt disallows), `redirect-invalid` (a target
    that is not http(s) with a host) or `redirect-seen` (a hop the caller had fetched already)."""

    def __init__(self, url: str, reason: str, code: str, target: str | None = None) -> None:
        super().__init__(url, reason)
        self.code = code
        self.target = target
        """The redirect target the chain stopped at, for a refused hop."""


_SECOND_LEVEL = frozenset(
    {"ac", "co", "com", "edu", "go", "gob", "gov", "mil", "ne", "net", "nic", "or", "org"}
)
"""Second-level labels under a country code that are public suffixes themselves (`co.uk`, `com.au`)."""


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def site_of(url: str) -> str:
    """The site a URL belongs to, as the policy compares them: its registrable domain (`example.com` for
    `https://www.example.com/`; `example.co.uk` under a country code's `co.`, `com.` ...), or the whole
    host for an IP address or a one-label name. An approximation of the Public Suffix List that errs
    toward "same site" only for hosts under the same two-label domain."""
    host = (urlsplit(url).hostname or "").rstrip(".").lower()
    if _ip(host) is not None or "." not in host:
        return host
    labels = host.split(".")
    keep = 3 if len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in _SECOND_LEVEL else 2
    return ".".join(labels[-keep:])


def address_problem(address: str) -> str | None:
    """What kind of non-public address `address` is (`loopback`, `private` ...), or None for a public one."""
    ip = _ip(address)
    if ip is None:
        return "unparsable"
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif ip.sixtofour is not None:  # 6to4 (2002::/16): where it leads is the IPv4 address inside
            ip = ip.sixtofour
        elif ip.is_site_local:  # fec0::/10, deprecated but still routed inside some networks
            return "site-local"
    for kind, hit in (
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("unspecified", ip.is_unspecified),
        ("reserved", ip.is_reserved),
        ("private", ip.is_private),
        ("non-public", not ip.is_global),
    ):
        if hit:
            return kind
    return None


def _origin(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    host = (parts.hostname or "").rstrip(".").lower()
    if not host.isascii():  # the host as httpx sends it (IDNA 2008), which the transport judges
        try:
            host = httpx.URL(url).raw_host.decode("ascii").rstrip(".").lower()
        except (httpx.InvalidURL, UnicodeError, ValueError):
            with contextlib.suppress(UnicodeError):
                host = host.encode("idna").decode("ascii")
    try:
        port = parts.port
    except ValueError:
        port = None
    return host, port or (443 if parts.scheme.lower() == "https" else 80)


@dataclass(frozen=True, slots=True)
class FetchPolicy:
    """Where fetching may go: the one policy every reader, validator and crawler goes through.

    - A connection to a loopback, private, link-local, multicast or reserved address is refused
      (`private-address`), checked on the address actually connected to after DNS, at every redirect
      hop, unless its origin (host and port) is in `trusted` (the origins the user named) or
      `allow_private` is set.
    - A redirect, or an index child, that leaves the site (`site_of`) is refused (`cross-host`) unless
      `follow_cross_host` is set. robots.txt `Sitemap:` lines may name any site (cross-submission).
    """

    allow_private: bool = False
    follow_cross_host: bool = False
    trusted: frozenset[tuple[str, int]] = frozenset()
    """(host, port) of the origins the user named, where a private address is fine."""

    def trusting(self, *urls: str | None) -> FetchPolicy:
        """This policy, with the origins of `urls` (those the user named) trusted."""
        added = {_origin(u) for u in urls if u and "://" in u}
        return replace(self, trusted=self.trusted | added) if added - self.trusted else self

    def connect_problem(self, host: str, port: int, address: str) -> str | None:
        """Why connecting to `address` (which `host` resolved to) is refused, or None when it is allowed."""
        origin = (host.rstrip(".").lower(), port)
        if self.allow_private or origin in self.trusted or origin in _TRUSTED_HERE.get():
            return None
        kind = address_problem(address)
        if kind is None:
            return None
        shown = f"{host}:{port}" if host == address else f"{host}:{port} ({address})"
        return f"{shown} is a {kind} address; not fetched (--allow-private allows it)"

    def leaves_site(self, base: str, target: str) -> bool:
        """Whether going from `base` to `target` is refused as leaving the site."""
        if self.follow_cross_host:
            return False
        return site_of(base) != site_of(target)

    def cross_host_reason(self, base: str, target: str, what: str) -> str | None:
        """`cross-host` message for `what` (e.g. "redirects to") going from `base` to `target`, or None."""
        if not self.leaves_site(base, target):
            return None
        return (
            f"{what} {target}, on another site than {site_of(base) or base}; not followed "
            "(parse and validate: --follow-cross-host follows it)"
        )


_TRUSTED_HERE: ContextVar[frozenset[tuple[str, int]]] = ContextVar("sitemapkit_trusted", default=frozenset())


def trust_in_this_task(*urls: str) -> None:
    """Trust the origins of `urls` (sites the user named) for the requests of the running task and of the
    tasks it starts from now on, whichever fetcher sends them: a harvest's shared fetcher serves many
    sites, each trusted only within its own task."""
    _TRUSTED_HERE.set(_TRUSTED_HERE.get() | {_origin(u) for u in urls if "://" in u})


_tls_lock = threading.Lock()
_tls: ssl.SSLContext | None = None


def tls_context() -> ssl.SSLContext:
    """The one TLS context of the process, shared by every `Fetcher`: made on first use, exactly as httpx
    makes its own (certifi's CA bundle, certificate and host name verified; the environment's
    `SSL_CERT_FILE` ignored, as the fetcher ignores the environment). Loading the bundle costs ~50 ms of
    CPU and ~0.7 MB, which a harvest (one `Fetcher` per site) would otherwise pay per site."""
    global _tls
    with _tls_lock:
        if _tls is None:
            _tls = httpx.create_ssl_context(verify=True, trust_env=False)
            _tls.set_alpn_protocols(["http/1.1"])  # (what the transport speaks)
        return _tls


@dataclass(frozen=True, slots=True)
class FetchOptions:
    """How to fetch. Every limit has a safe default; the timing hooks exist for tests."""

    user_agent: str = USER_AGENT
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    max_download: int = 100 * 1024 * 1024
    """Most bytes taken from the wire for one body (before any decoding)."""
    max_decoded: int = 100 * 1024 * 1024
    """Most bytes a `Content-Encoding` may decode to."""
    max_duration: float = 600.0
    """Longest one request may take in all: connecting, the headers (however slowly they trickle),
    redirects, retries and the body (the read timeout only bounds the gap between two pieces)."""
    max_redirects: int = 10
    retries: int = DEFAULT_RETRIES
    """Further attempts after the first, on 429, 5xx and connection errors."""
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    retry_after_max: float = 60.0
    """`Retry-After` is honoured up to this many seconds."""
    retry_budget: float = 300.0
    """Most seconds one `Fetcher` (one walk) spends sleeping before retries, in all; past it, the
    answer or the error at hand is taken as final."""
    policy: FetchPolicy = FetchPolicy()
    """Where fetching may go (private addresses, other sites)."""
    per_host: int = 4
    """Simultaneous requests to one host (when `politeness` is None; else the layer's)."""
    max_connections: int = 16
    """Simultaneous requests in total."""
    keepalive: int | None = None
    """Idle connections kept open for reuse (None: `max_connections`)."""
    politeness: Politeness | None = None
    """The run's politeness layer (robots.txt, pacing, Retry-After, per-host limit), shared by every
    `Fetcher` of the run; None: each `Fetcher` has its own, which paces nothing and consults no
    robots.txt (`per_host` then sets its limit)."""
    sleep: Sleep = asyncio.sleep
    jitter: Callable[[], float] = random.random
    """Returns a float in [0, 1); scales the second half of each backoff delay."""
    clock: Callable[[], float] = time.time
    """Current Unix time, for `Retry-After` given as an HTTP date."""
    monotonic: Callable[[], float] = time.monotonic
    """A clock for `max_duration`."""

    def backoff(self, attempt: int) -> float:
        """Seconds to wait before retry number `attempt` (0-based): exponential, half of it jittered."""
        delay = min(self.backoff_max, self.backoff_base * (2.0**attempt))
        return delay / 2 + self.jitter() * delay / 2

    def retry_after(self, value: str | None, *, capped: bool = True) -> float | None:
        """Seconds a `Retry-After` header asks for, capped at `retry_after_max` (unless not `capped`);
        None if unusable."""
        if not value:
            return None
        value = value.strip()
        seconds: float
        if value.isascii() and value.isdigit():  # str.isdigit() also takes '²' and other digits
            seconds = float(value)
        else:
            try:
                when = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError, IndexError):
                return None
            if when.tzinfo is None:  # an HTTP date is always GMT
                return None
            seconds = when.timestamp() - self.clock()
        return max(0.0, min(seconds, self.retry_after_max) if capped else seconds)


@dataclass(frozen=True, slots=True)
class _Request:
    """What each attempt sends: a GET (`stream`, `get`), or what `send` was given."""

    method: str = "GET"
    content: bytes | None = None
    headers: Mapping[str, str] | None = None
    wait_capped: bool = True
    """A `Retry-After` longer than `retry_after_max` is waited for `retry_after_max`; else it ends the
    retries (the answer is final)."""


_GET = _Request()


@dataclass(frozen=True, slots=True)
class Hop:
    """One answer on the way to the final response: the URL asked and the status it gave."""

    url: str
    status: int


def check_http_url(url: str) -> str:
    """Return `url` if it is an absolute http(s) URL with a host, else raise `FetchError`."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise FetchError(url, f"not a valid URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise FetchError(url, f"scheme {parts.scheme or '(none)'!r} is not http or https")
    if not parts.hostname:
        raise FetchError(url, "URL has no host")
    return url


class _Decoder:
    """Decodes one `Content-Encoding` layer (gzip or deflate), in bounded output pieces, with a total cap."""

    def __init__(self, encoding: str, url: str, limit: int) -> None:
        self._encoding = encoding
        self._url = url
        self._limit = limit
        self._out = 0
        self._started = False
        self._passthrough = False
        self._d: zlib._Decompress | None = None

    def _new(self, first: bytes) -> zlib._Decompress:
        if self._encoding == "deflate":
            # "deflate" should be zlib-wrapped, but raw deflate is common: the first byte tells them apart.
            wrapped = len(first) >= 2 and (first[0] & 0x0F) == 8 and (first[0] << 8 | first[1]) % 31 == 0
            return zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        return zlib.decompressobj(16 + zlib.MAX_WBITS)

    def decode(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of `data`, each at most ~64 KiB, produced one at a time (so that a layer of
        gzip inside gzip never piles up: every piece reaches the parser before the next is made)."""
        if not self._started:
            if not data:
                return
            self._started = True
            if self._encoding == "gzip" and not data.startswith(b"\x1f\x8b"):
                # Servers that label a plain body as gzip exist; the bytes, not the label, decide.
                self._passthrough = True
            else:
                self._d = self._new(data)
        if self._passthrough:
            self._check(len(data))
            if data:
                yield data
            return
        d = self._d
        assert d is not None
        while data or not d.eof:
            if d.eof:
                # Concatenated gzip members form one body; other trailing bytes are ignored, as by gzip(1).
                if self._encoding != "gzip" or not data.startswith(b"\x1f\x8b"):
                    break
                d = self._d = self._new(data)
            try:
                piece = d.decompress(data, CHUNK_SIZE)
            except zlib.error as exc:
                raise ContentDecodingError(
                    self._url, f"corrupt {self._encoding} Content-Encoding ({exc})"
                ) from None
            if piece:
                self._check(len(piece))
                yield piece
            data = d.unused_data if d.eof else d.unconsumed_tail
            if not data and not d.eof and len(piece) < CHUNK_SIZE:
                break  # all input taken and no output pending

    def _check(self, n: int) -> None:
        self._out += n
        if self._out > self._limit:
            raise ContentDecodingError(
                self._url, f"Content-Encoding decodes to more than {self._limit:,} bytes; reading stopped"
            )

    def finish(self) -> None:
        """Raise if the encoded stream stopped before its end."""
        if self._d is not None and not self._passthrough and not self._d.eof:
            raise ContentDecodingError(
                self._url, f"{self._encoding} Content-Encoding ends early (truncated body)"
            )


def _content_encodings(headers: httpx.Headers, url: str) -> list[str]:
    """The `Content-Encoding` layers to undo, outermost first."""
    layers = [
        e.strip().lower()
        for value in headers.get_list("content-encoding")
        for e in value.split(",")
        if e.strip() and e.strip().lower() != "identity"
    ]
    layers = ["gzip" if e == "x-gzip" else e for e in layers]
    for e in layers:
        if e not in ("gzip", "deflate"):
            raise ContentDecodingError(url, f"unsupported Content-Encoding {e!r} (sitemapkit asks for gzip)")
    return list(reversed(layers))


@dataclass(eq=False)
class FetchResponse:
    """The final answer to a request (after redirects and retries); the body is read with `aiter_bytes`."""

    url: str
    """The URL asked for."""
    final_url: str
    status: int
    headers: httpx.Headers
    redirects: tuple[Hop, ...] = ()
    """Every redirect answered on the way, in order."""
    attempts: int = 1
    raw_bytes: int = 0
    """Bytes taken from the wire so far (before any Content-Encoding is undone)."""
    _response: httpx.Response | None = field(default=None, repr=False)
    _options: FetchOptions = field(default_factory=FetchOptions, repr=False)
    _deadline: float | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body with `Content-Encoding` undone exactly once, in pieces of at most ~64 KiB.

        Raises `DownloadTooLargeError` past `max_download` wire bytes (after yielding what came before),
        `ContentDecodingError` for a bad encoding, `FetchError` when the connection fails midway.
        """
        response = self._response
        if response is None:
            return
        opts = self._options
        decoders = [
            _Decoder(e, self.final_url, opts.max_decoded)
            for e in _content_encodings(self.headers, self.final_url)
        ]
        deadline = self._deadline if self._deadline is not None else opts.monotonic() + opts.max_duration
        # Pieces as they arrive (no chunk size: httpx would hold up to a chunk back, and lose it when the
        # connection breaks); whatever came before an error is passed on before the error.
        pieces = response.aiter_raw().__aiter__()
        try:
            while True:
                try:  # each wait is bounded by what is left of the total deadline
                    # (asyncio.timeout, not wait_for: on Python 3.11, wait_for drops a cancellation that
                    # comes as its awaitable finishes, and the task then ran on; a harvest hung so)
                    async with asyncio.timeout(max(0.0, deadline - opts.monotonic())):
                        raw = await pieces.__anext__()
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    raise FetchError(
                        self.final_url,
                        f"download took longer than {opts.max_duration:g} s in all (--max-duration; "
                        f"{self.raw_bytes:,} bytes read); reading stopped",
                    ) from None
                if self.raw_bytes + len(raw) > opts.max_download:
                    keep = opts.max_download - self.raw_bytes
                    raw = raw[:keep]
                    for piece in _decode_all(decoders, raw):
                        yield piece
                    self.raw_bytes += keep
                    raise DownloadTooLargeError(
                        self.final_url,
                        f"body exceeds the download cap of {opts.max_download:,} bytes; reading stopped",
                    )
                self.raw_bytes += len(raw)
                for piece in _decode_all(decoders, raw):
                    yield piece
        except httpx.TimeoutException:
            raise FetchError(
                self.final_url, f"read timed out after {self.raw_bytes:,} bytes ({opts.read_timeout:g} s)"
            ) from None
        except httpx.TransportError as exc:
            raise FetchError(
                self.final_url, f"connection lost after {self.raw_bytes:,} bytes ({_describe(exc)})"
            ) from None
        for decoder in decoders:
            decoder.finish()

    async def read(self, limit: int | None = None) -> tuple[bytes, bool]:
        """The whole (decoded) body, or its first `limit` bytes; returns (body, truncated)."""
        parts: list[bytes] = []
        size = 0
        async for piece in self.aiter_bytes():
            parts.append(piece)
            size += len(piece)
            if limit is not None and size >= limit:
                return b"".join(parts)[:limit], True
        return b"".join(parts), False


def _decode_all(decoders: list[_Decoder], data: bytes) -> Iterator[bytes]:
    """`data` through every layer, one piece at a time (a layer's piece goes through the next at once)."""
    if not decoders:
        if data:
            yield data
        return
    for piece in decoders[0].decode(data):
        yield from _decode_all(decoders[1:], piece)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


@dataclass(frozen=True, slots=True)
class FetchResult:
    """A whole body, read by `Fetcher.get` or `fetch`."""

    url: str
    final_url: str
    status: int
    headers: httpx.Headers
    body: bytes
    redirects: tuple[Hop, ...] = ()
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


class _Cookies(httpx.Cookies):
    """httpx's cookies, which read a response only when it sets some: building the urllib request and
    response that `http.cookiejar` reads cost 55 µs of CPU a request, a tenth of the fetcher's."""

    def extract_cookies(self, response: httpx.Response) -> None:
        headers = response.headers
        if "set-cookie" in headers or "set-cookie2" in headers:
            super().extract_cookies(response)


class _Client(httpx.AsyncClient):
    """httpx's client, with `_Cookies`."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._jar = _Cookies()

    @property
    def cookies(self) -> httpx.Cookies:
        return self._jar

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        self._jar = _Cookies(cookies)


class Fetcher:
    """An async HTTP client for sitemaps. Use as `async with Fetcher(options) as f:`.

    `stream(url)` opens a response (redirects followed hop by hop, retries done) and holds a place for the
    host until the context exits; `get(url)` reads a whole body. Every request it sends, whatever it is
    for, goes through the run's `Politeness` (`options.politeness`, or one of its own): robots.txt, pacing,
    Retry-After holds and the per-host limit.
    """

    def __init__(self, options: FetchOptions | None = None) -> None:
        self.options = opts = options or FetchOptions()
        if opts.per_host < 1 or opts.max_connections < 1:
            raise ValueError("concurrency must be at least 1")
        self.policy = opts.policy
        self.politeness = opts.politeness or Politeness(
            user_agent=opts.user_agent,
            obey_robots=False,
            per_host=opts.per_host,
            clock=opts.monotonic,
            sleep=opts.sleep,
        )
        self._client = _Client(
            follow_redirects=False,
            timeout=httpx.Timeout(opts.read_timeout, connect=opts.connect_timeout, pool=None),
            headers={"User-Agent": opts.user_agent, "Accept-Encoding": "gzip, deflate"},
            event_hooks={"response": [_hide_location]},
            transport=Transport(
                opts.policy.connect_problem,
                tls_context(),
                keepalive=opts.max_connections if opts.keepalive is None else opts.keepalive,
            ),
            trust_env=False,
        )
        self._total = asyncio.Semaphore(opts.max_connections)
        self.retry_slept = 0.0
        """Seconds waited before retries so far (bounded by `retry_budget`)."""

    async def __aenter__(self) -> Fetcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def robots(self, url: str) -> RobotsRules:
        """The robots.txt rules of `url`'s origin, as the run's politeness layer has them (fetched once
        per origin per run, whether or not robots.txt is consulted for that origin)."""
        return await self.politeness.rules(origin_of(url), self._fetch_robots)

    async def _fetch_robots(self, url: str) -> tuple[int, bytes, str | None]:
        """Fetch a robots.txt (RFC 9309): at most `MAX_ROBOTS_BYTES` (a line cut there is dropped), at
        most `ROBOTS_MAX_REDIRECTS` redirects, which may lead to another site."""
        try:
            async with self._open(url, robots_file=True) as response:
                if not response.ok:
                    return response.status, b"", None
                body, truncated = await response.read(MAX_ROBOTS_BYTES)
        except FetchRefusedError as exc:
            if exc.code == "private-address":  # the host itself is refused: so is every URL on it
                raise
            return UNREACHABLE, b"", exc.reason
        except FetchError as exc:
            return UNREACHABLE, b"", exc.reason
        if truncated:  # the last line is incomplete: not a rule to use
            body = body[: max(body.rfind(b"\n"), body.rfind(b"\r")) + 1]
        return response.status, body, None

    @asynccontextmanager
    async def stream(
        self, url: str, *, follow: Callable[[str], str | None] | None = None
    ) -> AsyncIterator[FetchResponse]:
        """Open `url`: follow redirects hop by hop, retry what is worth retrying, politely.

        Each hop is a request like any other: the fetch policy, robots.txt (`robots-disallowed` for `url`
        itself, `redirect-blocked` for a hop), pacing, the per-host limit, loop detection, and `follow`
        (given a hop's target, a reason not to fetch it, e.g. that it was fetched already:
        `redirect-seen`). A target that is not http(s) with a host ends it (`redirect-invalid`).

        Yields the final response whatever its status (the caller judges 404 or 503 after retries);
        raises `FetchError` when no response could be had at all (`FetchRefusedError`, with its `code`,
        when a request was not made). One deadline (`max_duration`) covers all of it, the body included.
        """
        async with self._open(url, follow=follow) as response:
            yield response

    @asynccontextmanager
    async def send(
        self,
        method: str,
        url: str,
        *,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        wait_capped: bool = False,
    ) -> AsyncIterator[FetchResponse]:
        """Send a request to an address the caller was given that is not a page to read (a POST to an API,
        such as IndexNow's endpoint): robots.txt, which is for crawlers, is not consulted, and a redirect is
        not followed (the 3xx is the answer). Otherwise as `stream`: the fetch policy, pacing, the per-host
        limit, one deadline and the one retry loop (only a request that got no answer, or a 429 or 5xx, is
        sent again). A `Retry-After` longer than `retry_after_max` ends the retries, the answer at hand
        being final (unless `wait_capped`: then it is waited for `retry_after_max`, as `stream` does)."""
        async with self._open(url, request=_Request(method, content, headers, wait_capped)) as response:
            yield response

    @asynccontextmanager
    async def _open(
        self,
        url: str,
        *,
        follow: Callable[[str], str | None] | None = None,
        robots_file: bool = False,
        request: _Request | None = None,
    ) -> AsyncIterator[FetchResponse]:
        check_http_url(url)
        opts = self.options
        polite = self.politeness
        deadline = opts.monotonic() + opts.max_duration
        hops: list[Hop] = []
        seen = {url}
        current = url
        attempts = 0
        async with AsyncExitStack() as held:
            while True:
                if not robots_file and request is None:  # `send`: no robots.txt (see there)
                    why = await polite.refusal(current, self._fetch_robots)
                    if why is not None:
                        if current == url:
                            raise FetchRefusedError(url, f"{why}; not fetched", "robots-disallowed")
                        blocked = FetchRefusedError(
                            url,
                            f"redirects to {current}, but {why}; not followed",
                            "redirect-blocked",
                            current,
                        )
                        blocked.redirects = tuple(hops)
                        raise blocked
                hop = AsyncExitStack()
                try:
                    await hop.enter_async_context(polite.slot(current))
                    await hop.enter_async_context(self._total)
                    response, tries = await self._send_with_retries(current, hop, deadline, request or _GET)
                except FetchRefusedError as exc:
                    await hop.aclose()
                    if current == url:
                        raise
                    blocked = FetchRefusedError(  # a hop the address policy refused: the chain stops here
                        url, f"redirects to {current}, but {exc.reason}", "redirect-blocked", current
                    )
                    blocked.redirects = tuple(hops)
                    raise blocked from None
                except BaseException:
                    await hop.aclose()
                    raise
                attempts += tries
                redirect = response.status_code in REDIRECT_STATUSES and "location" in response.headers
                if redirect and request is None:  # `send` follows none: the 3xx is its answer
                    hops.append(Hop(current, response.status_code))
                    location = response.headers["location"]
                    await hop.aclose()
                    try:
                        current = self._redirect_target(url, current, location, seen, len(hops), robots_file)
                        why = follow(current) if follow is not None else None
                        if why is not None:
                            raise FetchRefusedError(
                                url, f"redirects to {current}: {why}", "redirect-seen", current
                            )
                    except FetchError as exc:
                        exc.redirects = tuple(hops)
                        raise
                    seen.add(current)
                    continue
                held.push_async_exit(hop)
                yield FetchResponse(
                    url=url,
                    final_url=current,
                    status=response.status_code,
                    headers=response.headers,
                    redirects=tuple(hops),
                    attempts=attempts,
                    _response=response,
                    _options=opts,
                    _deadline=deadline,
                )
                return

    def _redirect_target(
        self, url: str, current: str, location: str, seen: set[str], hops: int, robots_file: bool
    ) -> str:
        """Where a redirect of `current` leads, or the `FetchError` that ends the chain."""
        shown = location.strip()
        try:
            if shown.lower() in ("http:", "https:", "http://", "https://", "http:///", "https:///"):
                raise ValueError("a scheme without a host")  # urljoin would read it as the current URL
            target = urljoin(current, shown).split("#", 1)[0]
            check_http_url(target)
            httpx.URL(target)  # what httpx could not send is no target either
        except (FetchError, httpx.InvalidURL, ValueError, UnicodeError):
            raise FetchRefusedError(
                url,
                f"redirects to {shown[:200]!r}, not an http(s) URL with a host; not followed",
                "redirect-invalid",
            ) from None
        if target in seen:
            raise FetchError(url, f"redirect loop at {target}")
        limit = ROBOTS_MAX_REDIRECTS if robots_file else self.options.max_redirects
        if hops > limit:
            raise FetchError(url, f"more than {limit} redirects")
        if not robots_file:
            cross = self.policy.cross_host_reason(url, target, "redirects to")
            if cross is not None:
                raise FetchRefusedError(url, cross, "cross-host", target)
        return target

    def _left(self, url: str, deadline: float) -> float:
        left = deadline - self.options.monotonic()
        if left <= 0:
            raise self._overdue(url)
        return left

    def _overdue(self, url: str) -> FetchError:
        return FetchError(
            url, f"no complete answer within {self.options.max_duration:g} s (--max-duration); gave up"
        )

    def _hold(self, url: str, delay: float, deadline: float) -> bool:
        """Hold `url`'s origin back `delay` seconds before a retry, if the run's retry budget and the
        deadline allow it; else False (the answer or error at hand is final)."""
        opts = self.options
        if self.retry_slept + delay > opts.retry_budget or opts.monotonic() + delay >= deadline:
            return False
        self.retry_slept += delay
        self.politeness.hold(url, delay)
        return True

    async def _send_with_retries(
        self, url: str, stack: AsyncExitStack, deadline: float, ask: _Request = _GET
    ) -> tuple[httpx.Response, int]:
        """The one retry loop of sitemapkit: each attempt paced by the politeness layer; a 429 or 5xx
        answer's `Retry-After` (else the backoff) holds the origin back before the next; so does a
        connection error. Only a request that got no answer, or one of those answers, is sent again."""
        opts = self.options
        attempt = 0
        while True:
            attempt += 1
            try:
                request = self._client.build_request(
                    ask.method, url, content=ask.content, headers=ask.headers
                )
            except (httpx.InvalidURL, UnicodeError, ValueError) as exc:
                raise FetchError(url, f"not a usable URL ({exc})") from None
            await self.politeness.pace(url)
            try:
                async with asyncio.timeout(self._left(url, deadline)):  # see aiter_bytes: not wait_for
                    response = await self._client.send(request, stream=True)
            except TimeoutError:
                raise self._overdue(url) from None
            except AddressRefused as exc:
                raise FetchRefusedError(url, exc.reason, "private-address") from None
            except (httpx.UnsupportedProtocol, httpx.ProxyError, httpx.InvalidURL) as exc:
                raise FetchError(url, _describe(exc)) from None
            except httpx.TransportError as exc:
                if (
                    attempt > opts.retries
                    or _unresolvable(exc)  # a name that does not resolve will not on a retry either
                    or _untrusted(exc) is not None  # nor will a certificate that failed verification pass
                    or not self._hold(url, opts.backoff(attempt - 1), deadline)
                ):
                    raise FetchError(url, _transport_reason(exc, opts, attempt)) from None
                continue
            if response.status_code in RETRY_STATUSES and attempt <= opts.retries:
                wanted = opts.retry_after(response.headers.get("retry-after"), capped=ask.wait_capped)
                delay = wanted if wanted is not None else opts.backoff(attempt - 1)
                longer = wanted is not None and wanted > opts.retry_after_max  # not `wait_capped`
                if not longer and self._hold(url, delay, deadline):
                    await response.aclose()
                    continue
            if _LOCATION in response.headers:  # see _hide_location
                response.headers["location"] = response.headers.pop(_LOCATION)
            stack.push_async_callback(response.aclose)
            return response, attempt

    async def get(
        self, url: str, *, limit: int | None = None, follow: Callable[[str], str | None] | None = None
    ) -> FetchResult:
        """Fetch a whole body (at most `limit` decoded bytes: more is cut off, not an error)."""
        async with self.stream(url, follow=follow) as response:
            body, truncated = await response.read(limit)
            return FetchResult(
                url,
                response.final_url,
                response.status,
                response.headers,
                body,
                response.redirects,
                truncated,
            )


_LOCATION = "x-sitemapkit-location"


async def _hide_location(response: httpx.Response) -> None:
    """Keep httpx from building the next request of a redirect itself (it does so even when not following,
    and raises `InvalidURL` for a `mailto:` or `data:` target, losing the answer): the `Location` is
    put back once httpx is done, and judged hop by hop by `Fetcher._redirect_target`."""
    if "location" in response.headers:
        response.headers[_LOCATION] = response.headers.pop("location")


def _unresolvable(exc: BaseException) -> bool:
    """True when the host name does not exist (DNS says so: EAI_NONAME, EAI_NODATA), which no retry
    changes; a temporary DNS failure (EAI_AGAIN) is retried like any connection error."""
    final = {socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)}
    seen: BaseException | None = exc
    for _ in range(8):  # the causes httpx and the transport chain
        if seen is None:
            break
        if isinstance(seen, socket.gaierror) and seen.errno in final:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _untrusted(exc: BaseException) -> ssl.SSLCertVerificationError | None:
    """The TLS certificate verification failure behind `exc`, if that is what it is."""
    seen: BaseException | None = exc
    for _ in range(8):  # the causes httpx and the transport chain
        if seen is None:
            break
        if isinstance(seen, ssl.SSLCertVerificationError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _transport_reason(exc: httpx.TransportError, opts: FetchOptions, attempts: int) -> str:
    untrusted = _untrusted(exc)
    if untrusted is not None:
        return f"TLS certificate not accepted ({untrusted.verify_message or untrusted}); not fetched"
    tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
    if isinstance(exc, httpx.ConnectTimeout):
        return f"connection timed out ({opts.connect_timeout:g} s; {tries})"
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out waiting for the server ({opts.read_timeout:g} s; {tries})"
    if isinstance(exc, httpx.ConnectError):
        return f"connection failed ({_describe(exc)}; {tries})"
    return f"{_describe(exc)} ({tries})"


def fetch(url: str, options: FetchOptions | None = None, *, limit: int | None = None) -> FetchResult:
    """Fetch one URL synchronously: the sync face of `Fetcher.get`. Must not be called from a running loop.

    `url` is taken as named by the user: its origin is trusted by the fetch policy."""
    options = options or FetchOptions()
    options = replace(options, policy=options.policy.trusting(url))

    async def run() -> FetchResult:
        async with Fetcher(options) as fetcher:
            return await fetcher.get(url, limit=limit)

    return asyncio.run(run())
