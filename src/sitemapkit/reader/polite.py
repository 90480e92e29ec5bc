"""The one politeness layer: how sitemapkit behaves toward a host, whichever wing is asking.

One `Politeness` serves a whole run (a crawl, an audit, a harvest worker, a parse), shared by every
`Fetcher` of the run through `FetchOptions.politeness`. The fetcher consults it at every request it
sends, whatever asks for it (robots.txt, a sitemap, a page, a retry, each redirect hop):

- **robots.txt** (RFC 9309), fetched once per origin per run and cached: 2xx is parsed (protego; our
  product token matched as the RFC says, case-insensitively, falling back to `*`), 4xx allows everything,
  5xx, 429 and an unreachable host disallow everything; at most `MAX_ROBOTS_BYTES` are read and at most
  `ROBOTS_MAX_REDIRECTS` redirects followed. A request that robots.txt disallows is refused
  (`robots-disallowed`; `redirect-blocked` for a redirect hop) before anything is sent.
- **pacing**: the starts of two requests to one origin are at least its delay apart: the `Crawl-delay`
  (or `Request-rate`) robots.txt sets for the agent, capped at `max_crawl_delay`, or `1 / rate`,
  whichever is longer;
- **Retry-After**: a 429 or 5xx answer's wait (or the fetcher's backoff) holds the whole origin back
  (`hold`), so that the retry, and every other request to that origin, waits it out;
- **in flight**: at most `per_host` requests to one origin at a time, across every fetcher of the run.

Origins the user named can be exempted from robots.txt (`robots_exempt`): `parse` and `validate` read what
the user asked for, and consult robots.txt only for the hosts a site chose. The clock and the sleep are
injectable, so tests need not depend on the machine's speed.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Protocol
from urllib.parse import urlsplit

from sitemapkit.core.constants import MAX_ROBOTS_BYTES, USER_AGENT
from sitemapkit.core.errors import UsageError

__all__ = [
    "MAX_CRAWL_DELAY",
    "MAX_ROBOTS_BYTES",
    "ROBOTS_MAX_REDIRECTS",
    "Pacer",
    "Politeness",
    "RobotsRules",
    "RobotsStore",
    "agent_token",
    "origin_of",
]

ROBOTS_MAX_REDIRECTS = 5
"""Redirects followed for a robots.txt (RFC 9309 asks for at least five)."""

MAX_CRAWL_DELAY = 30.0
"""The longest `Crawl-delay` honoured by default: a site that asks for a day between requests would hang."""

UNREACHABLE = 599
"""The status a robots.txt is recorded with when no answer could be had (treated as a 5xx)."""

RobotsFetch = Callable[[str], Awaitable[tuple[int, bytes, str | None]]]
"""Fetches a robots.txt URL: (status, body, reason it could not be had); status `UNREACHABLE` then."""


_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(url: str) -> str:
    """The origin of `url` as the layer keys hosts: `scheme://host[:port]`, the scheme and host lowercased,
    without user info or a trailing dot, the port written only when it is not the scheme's default (so
    `http://u@Example.com.:080/` and `http://example.com/` are one host, paced and cached once)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None or port == _DEFAULT_PORTS.get(scheme):
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def agent_token(user_agent: str) -> str:
    """The product token robots.txt groups are matched against: `sitemapkit` for
    `sitemapkit/0.1 (+https://...)` (RFC 9309 2.2.1: the name before the version, lowercased)."""
    text = user_agent.strip()
    return text.split("/", 1)[0].split()[0].strip().lower() if text else "sitemapkit"


class RobotsRules:
    """One origin's robots.txt as judged for `agent`: the file's rules (2xx), everything allowed (4xx), or
    everything disallowed (5xx, 429, unreachable: `status` is then 599 and `error` says why)."""

    def __init__(self, status: int, body: str | bytes, agent: str, error: str | None = None) -> None:
        self.status = status
        self.agent = agent
        self.error = error
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        self.text = text.removeprefix("\ufeff") if 200 <= status < 300 else ""
        self._rules = None
        if 200 <= status < 300:
            from protego import Protego

            self._rules = Protego.parse(self.text)

    @property
    def unavailable(self) -> bool:
        """True when robots.txt answered 5xx or 429, or could not be fetched: nothing may be fetched."""
        return self._rules is None and (self.status >= 500 or self.status == 429)

    def allowed(self, url: str, agent: str | None = None) -> bool:
        """Whether `url` may be fetched by `agent` (this rules' agent by default)."""
        if self._rules is None:
            return not self.unavailable
        return bool(self._rules.can_fetch(url, agent or self.agent))

    @property
    def sitemaps(self) -> list[str]:
        """The values of the `Sitemap:` lines, as written (protego reads them: any case, `site-map`)."""
        return list(self._rules.sitemaps) if self._rules is not None else []

    def why_not(self, url: str) -> str:
        """Why `url` is not allowed, for a message."""
        origin = origin_of(url)
        if self.error is not None:
            return (
                f"{origin}/robots.txt could not be fetched ({self.error}): nothing is fetched from the host"
            )
        if self.unavailable:
            return f"{origin}/robots.txt answered {self.status}: nothing is fetched from the host (RFC 9309)"
        return f"{origin}/robots.txt disallows it for {self.agent}"

    def crawl_delay(self) -> float | None:
        """The `Crawl-delay` (or `Request-rate`) for the agent, in seconds; None when it sets none."""
        if self._rules is None:
            return None
        delay = self._rules.crawl_delay(self.agent)
        rate = self._rules.request_rate(self.agent)
        seconds = float(delay) if delay is not None else None
        if rate is not None and rate.requests:
            per = rate.seconds / rate.requests
            seconds = per if seconds is None else max(seconds, per)
        return seconds


class RobotsStore(Protocol):
    """Where a run keeps the robots.txt it fetched, to use again on `--resume` (the crawl's frontier)."""

    def robots(self, origin: str) -> tuple[int, str] | None: ...

    def set_robots(self, origin: str, status: int, text: str) -> None: ...


class Pacer:
    """Spaces the starts of requests to one origin by its delay, and holds an origin back after a
    `Retry-After`. `clock` and `sleep` are injectable."""

    def __init__(
        self,
        default: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.default = default
        self.clock = clock
        self.sleep = sleep
        self._delay: dict[str, float] = {}
        self._last: dict[str, float] = {}
        self._next: dict[str, float] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def set_delay(self, origin: str, seconds: float | None) -> None:
        """Use `seconds` (at least the default) between the starts of two requests to `origin`, counted
        from the last request already sent."""
        delay = self._delay[origin] = max(self.default, seconds or 0.0)
        if origin in self._last:
            self._next[origin] = max(self._next.get(origin, 0.0), self._last[origin] + delay)

    def delay(self, origin: str) -> float:
        return self._delay.get(origin, self.default)

    def hold(self, origin: str, seconds: float) -> None:
        """No request to `origin` for `seconds` from now (a 429 or 503 with `Retry-After`, a backoff)."""
        self._next[origin] = max(self._next.get(origin, 0.0), self.clock() + seconds)

    async def wait(self, origin: str) -> None:
        """Wait until a request to `origin` may start, and count it as started."""
        lock = self._locks.get(origin)
        if lock is None:
            lock = self._locks[origin] = asyncio.Lock()
        async with lock:
            now = self.clock()
            start = self._next.get(origin, now)
            if start > now:
                await self.sleep(start - now)
                now = max(self.clock(), start)
            self._last[origin] = now
            # max: a hold (Retry-After) set while this request waited still stands
            self._next[origin] = max(self._next.get(origin, 0.0), now + self.delay(origin))


class Politeness:
    """A run's manners toward every host: robots.txt, pacing, Retry-After holds, requests in flight.

    - `user_agent`: its product token is what robots.txt groups are matched against;
    - `rate`: most requests a second to one origin (robots.txt may ask for fewer);
    - `obey_robots`: consult robots.txt at all; `robots_exempt`: origins (see `origin_of`) it is not
      consulted for (those the user named, for `parse` and `validate`);
    - `max_crawl_delay`: the longest `Crawl-delay` honoured (a longer one is capped to it; None: no cap);
    - `per_host`: most requests in flight to one origin;
    - `store`: where robots.txt answers are kept between runs;
    - `max_origins`: robots.txt answers kept in memory at once (the least recently used go first).
    """

    def __init__(
        self,
        *,
        user_agent: str = USER_AGENT,
        rate: float | None = None,
        obey_robots: bool = True,
        robots_exempt: frozenset[str] = frozenset(),
        max_crawl_delay: float | None = MAX_CRAWL_DELAY,
        per_host: int = 4,
        store: RobotsStore | None = None,
        max_origins: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if per_host < 1:
            raise UsageError("per_host must be at least 1")
        if rate is not None and rate <= 0:
            raise UsageError("rate must be more than 0")
        self.agent = agent_token(user_agent)
        self.obey_robots = obey_robots
        self.robots_exempt = frozenset(origin_of(o) if "://" in o else o for o in robots_exempt)
        self.max_crawl_delay = max_crawl_delay
        self.per_host = per_host
        self.store = store
        self.max_origins = max_origins
        self.pacer = Pacer(1.0 / rate if rate else 0.0, clock, sleep)
        self._rules: OrderedDict[str, RobotsRules] = OrderedDict()
        self._fetching: dict[str, asyncio.Lock] = {}
        self._slots: dict[str, asyncio.Semaphore] = {}
        self.robots_fetched = 0
        """robots.txt files fetched (not taken from the cache or the store) in this run."""

    # -- robots.txt -------------------------------------------------------------------------------

    def consults_robots(self, url: str) -> bool:
        """Whether robots.txt is consulted for `url`."""
        return self.obey_robots and origin_of(url) not in self.robots_exempt

    def known(self, origin: str) -> RobotsRules | None:
        """The robots.txt rules of `origin` if they have been read in this run."""
        return self._rules.get(origin)

    async def rules(self, origin: str, fetch: RobotsFetch) -> RobotsRules:
        """The robots.txt rules of `origin`, fetched with `fetch` the first time they are asked for."""
        rules = self._rules.get(origin)
        if rules is not None:
            self._rules.move_to_end(origin)
            return rules
        lock = self._fetching.setdefault(origin, asyncio.Lock())
        async with lock:
            rules = self._rules.get(origin)
            if rules is None:
                rules = await self._load(origin, fetch)
                self._rules[origin] = rules
                if len(self._rules) > self.max_origins:
                    self._rules.popitem(last=False)
        self._fetching.pop(origin, None)
        return rules

    async def _load(self, origin: str, fetch: RobotsFetch) -> RobotsRules:
        stored = self.store.robots(origin) if self.store is not None else None
        if stored is not None:
            status, text = stored
            rules = RobotsRules(status, text, self.agent)
        else:
            status, body, error = await fetch(origin + "/robots.txt")
            self.robots_fetched += 1
            rules = RobotsRules(status, body, self.agent, error)
            if self.store is not None:
                self.store.set_robots(origin, status, rules.text)
        delay = rules.crawl_delay()
        if delay is not None and self.max_crawl_delay is not None:
            delay = min(delay, self.max_crawl_delay)
        self.pacer.set_delay(origin, delay)
        return rules

    async def refusal(self, url: str, fetch: RobotsFetch) -> str | None:
        """Why robots.txt keeps `url` from being fetched, or None when it may be (or is not consulted)."""
        if not self.consults_robots(url):
            return None
        rules = await self.rules(origin_of(url), fetch)
        return None if rules.allowed(url) else rules.why_not(url)

    # -- pacing and slots -------------------------------------------------------------------------

    async def pace(self, url: str) -> None:
        """Wait until a request to `url`'s origin may start (its delay, any hold), and count it started."""
        await self.pacer.wait(origin_of(url))

    def hold(self, url: str, seconds: float) -> None:
        """Hold `url`'s origin back for `seconds` (a `Retry-After`, a backoff before a retry)."""
        self.pacer.hold(origin_of(url), seconds)

    def delay(self, url: str) -> float:
        """The seconds kept between two requests to `url`'s origin."""
        return self.pacer.delay(origin_of(url))

    @asynccontextmanager
    async def slot(self, url: str) -> AsyncIterator[None]:
        """Hold one of the `per_host` places for a request to `url`'s origin."""
        origin = origin_of(url)
        sem = self._slots.get(origin)
        if sem is None:
            sem = self._slots[origin] = asyncio.Semaphore(self.per_host)
        async with sem:
            yield
