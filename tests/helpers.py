"""Small helpers for tests: read back what the writer wrote, with lxml as an independent reader."""

from __future__ import annotations

import gzip
from pathlib import Path

from lxml import etree

from sitemapkit.core.constants import NS_SITEMAP

NS = {"sm": NS_SITEMAP}


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
