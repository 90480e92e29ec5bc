"""Small helpers for tests: read back what the writer wrote, with lxml as an independent reader."""

from __future__ import annotations

import gzip
import itertools
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from lxml import etree

from sitemapkit.core.constants import NS_SITEMAP

NS = {"sm": NS_SITEMAP}
Answer = tuple[int, dict[str, str], bytes]


def raw_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def locs(path: Path) -> list[str]:
    doc = etree.fromstring(raw_bytes(path), etree.XMLParser(resolve_entities=False, no_network=True))
    return [str(e.text) for e in doc.iterfind("sm:url/sm:loc", NS)] or [
        str(e.text) for e in doc.iterfind("sm:sitemap/sm:loc", NS)
    ]


def published(out: Path) -> list[str]:
    """Names in the output folder, hidden files excluded."""
    return sorted(p.name for p in out.iterdir() if not p.name.startswith("."))


class Sleeps:
    """An injected `sleep` that records the delays asked for and returns at once, and the monotonic clock
    it moves forward (pass both: `FetchOptions(sleep=sleeps, monotonic=sleeps.monotonic)`), so that the
    delays recorded are exactly those asked for, whatever the machine's speed."""

    def __init__(self) -> None:
        self.delays: list[float] = []
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        self.now += seconds


class InFlight:
    """A route handler that counts the requests in flight at once and their `peak`, holding each until `cap`
    are in flight together (or all `total` have come): so that a client that uses its concurrency shows
    it, however slowly a busy machine lets it send. Each is held 0.05 s more after that, for a request
    past the cap to show too. `answer(handler)` gives (status, headers, body).

    A client that never has `cap` in flight is waited for 5 s, once (the cap's requests go out within
    milliseconds of each other, even on a busy machine): less than a client's read timeout, which would
    otherwise send a retry beside the abandoned request and look like concurrency."""

    def __init__(self, cap: int, total: int, answer: Callable[[BaseHTTPRequestHandler], Answer]) -> None:
        self.cap, self.total, self.answer = cap, total, answer
        self.now = self.peak = self.started = 0
        self.waited_out = False
        self._cond = threading.Condition()

    def __call__(self, handler: BaseHTTPRequestHandler) -> Answer:
        with self._cond:
            self.now += 1
            self.started += 1
            self.peak = max(self.peak, self.now)
            self._cond.notify_all()
            if not self.waited_out and not self._cond.wait_for(
                lambda: self.now >= self.cap or self.started >= self.total, timeout=5
            ):
                self.waited_out = True  # the client never had `cap` in flight: the others need not wait
        time.sleep(0.05)
        with self._cond:
            self.now -= 1
        return self.answer(handler)


def assert_paced(starts: Iterable[float], delay: float) -> None:
    """Requests `delay` seconds apart, as a server's log noted their arrival. A busy machine notes a request
    late (its client sent it late after the pacer let it go, or the server's thread got to it late), which
    shortens the gap after it and lengthens the one before: loaded runs saw one gap of 0.05 s in a row of
    0.3 s ones. So every gap but the shortest must be `delay` less 0.1 s; a run that does not pace has short
    gaps throughout."""
    gaps = sorted(b - a for a, b in itertools.pairwise(sorted(starts)))
    assert len(gaps) >= 2 and gaps[1] >= delay - 0.1, f"gaps {gaps}, {delay} s wanted"
