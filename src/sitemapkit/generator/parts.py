"""The sitemap files of a run as they fill: the one being filled, its rollover at the protocol's limits (URLs,
bytes, news URLs per file), and the finished ones waiting to be published.

`Parts` is the writer's internal interface for whatever writes entries: `SitemapWriter`'s general path
(`add`) and the bulk lanes of `lanes.py`, which write whole batches of canonical lines into `current()`
themselves, account for them in the `Part`, and call `finish()` when a file is full. It is internal: not
part of the public API.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from sitemapkit.core.constants import MAX_NEWS_PER_SITEMAP
from sitemapkit.core.dates import parse_w3c
from sitemapkit.core.files import AtomicFile
from sitemapkit.core.model import Lastmod
from sitemapkit.generator.assembly import Assembler
from sitemapkit.generator.serialize import xml_footer, xml_header

FOOTER: Final = len(xml_footer("urlset").encode())
"""The size of a sitemap's footer."""
_CANON_DAY: Final = re.compile(r"\d{4}-\d{2}-\d{2}")
_COPY_CHUNK: Final = 1 << 20
_DAYS_KEPT: Final = 100_000


@dataclass(slots=True)
class Part:
    """A sitemap being filled: its body spools to a temporary file until the header is known. Whoever
    writes to `handle` adds to `urls`, `body` (bytes) and `news`, and keeps `newest` up to date."""

    spool: Path
    handle: IO[bytes]
    urls: int = 0
    news: int = 0
    body: int = 0
    prefixes: frozenset[str] = frozenset()
    """The extension namespaces (prefixes) the body uses: the header declares them."""
    header: int = 0
    """The size of the header for `prefixes`."""
    newest: Lastmod | str | None = None
    """The newest lastmod, as a value or as canonical text (fast lane)."""
    newest_key: str = ""
    """UTC `YYYY-MM-DDTHH:MM:SS[.ffffff]` of `newest`: such strings sort in time order."""


@dataclass(slots=True)
class Done:
    """A finished sitemap: the file to publish (assembled in the background), what it holds."""

    out: AtomicFile
    urls: int
    bytes: int
    lastmod: Lastmod | None


class Parts:
    """The files of one run (see the module's docstring). `temp(label)` names a temporary file in the output
    folder (removed with the run's); finished files become `AtomicFile`s named `name-N` + `suffix`, tagged
    with the run's `token`; `safe_day`: the first day (`YYYY-MM-DD`) that may be in the future."""

    def __init__(
        self,
        out_dir: Path,
        name: str,
        suffix: str,
        token: str,
        xsl_href: str | None,
        max_urls: int,
        max_bytes: int,
        temp: Callable[[str], Path],
        assembler: Assembler,
        safe_day: str,
    ) -> None:
        self.max_urls = max_urls
        """URLs a file may hold."""
        self.max_bytes = max_bytes
        """Bytes a file may take, uncompressed (header and footer included)."""
        self.part: Part | None = None
        """The file being filled, if any."""
        self.done: list[Done] = []
        """The finished files, in order."""
        self.days: dict[str, bool] = {}
        """Canonical dates (`YYYY-MM-DD`) checked by `known_day`: valid or not."""
        self.closing = False
        """Set when the run closes: no more files follow the one being finished."""
        self._out_dir = out_dir
        self._name = name
        self._suffix = suffix
        self._token = token
        self._xsl_href = xsl_href
        self._temp = temp
        self._assembler = assembler
        self._safe_day = safe_day
        self._headers: dict[frozenset[str], int] = {}

    def known_day(self, day: str) -> bool:
        """Whether `day` is a valid canonical date `YYYY-MM-DD` that is not in the future (remembered in
        `days`, for up to 100,000 days)."""
        valid = _CANON_DAY.fullmatch(day) is not None and day < self._safe_day  # a later day may be future
        if valid:
            try:
                dt.date.fromisoformat(day)
            except ValueError:
                valid = False
        if len(self.days) < _DAYS_KEPT:
            self.days[day] = valid
        return valid

    def header_len(self, prefixes: frozenset[str]) -> int:
        """The size of a sitemap's header declaring the extension namespaces `prefixes`."""
        n = self._headers.get(prefixes)
        if n is None:
            n = self._headers[prefixes] = len(xml_header("urlset", prefixes, self._xsl_href).encode())
        return n

    def current(self) -> Part:
        """The file being filled, or a new one without extension namespaces."""
        part = self.part
        if part is None:
            part = self.part = self.new_part()
            part.header = self.header_len(part.prefixes)
        return part

    def new_part(self) -> Part:
        """A new, empty file (not yet the current one)."""
        spool = self._temp(f"{self._name}-{len(self.done) + 1}.body")
        handle = open(spool, "xb", buffering=_COPY_CHUNK)  # noqa: SIM115 - closed in finish
        return Part(spool, handle)

    def add(
        self, data: bytes, needs: set[str] | None, key: str, lastmod: Lastmod | str | None, news: bool
    ) -> bool:
        """Write one entry's XML `data` (using the namespaces `needs`; `key`: its lastmod's time key, ""
        for none; `news`: it has a news element), starting a new file where the current one cannot take
        it. False (nothing written) where even a file of its own could not."""
        part = self.part
        if part is not None:
            prefixes = part.prefixes | needs if needs else part.prefixes
            header = self.header_len(prefixes) if needs else part.header
            if (
                part.urls >= self.max_urls
                or header + part.body + len(data) + FOOTER > self.max_bytes
                or (news and part.news >= MAX_NEWS_PER_SITEMAP)
            ):
                self.finish()
                part = None
        if part is None:
            prefixes = frozenset(needs or ())
            header = self.header_len(prefixes)
            if header + len(data) + FOOTER > self.max_bytes:
                return False
            part = self.part = self.new_part()
        part.prefixes = prefixes
        part.header = header
        part.handle.write(data)
        part.body += len(data)
        part.urls += 1
        if news:
            part.news += 1
        if key and key > part.newest_key:
            part.newest, part.newest_key = lastmod, key
        return True

    def finish(self) -> None:
        """Close the current file's body and hand it to the assembler (header, body and footer are
        assembled while the next file fills)."""
        part = self.part
        assert part is not None
        self.part = None
        part.handle.close()
        number = len(self.done) + 1
        out = AtomicFile(self._out_dir / f"{self._name}-{number}{self._suffix}", tag=self._token)
        header = xml_header("urlset", part.prefixes, self._xsl_href).encode()
        newest = parse_w3c(part.newest) if isinstance(part.newest, str) else part.newest
        self.done.append(Done(out, part.urls, len(header) + part.body + FOOTER, newest))
        self._assembler.submit(out, header, part.spool, more=not self.closing)

    def drop(self) -> None:
        """Abandon the file being filled and discard the finished ones (after the assembler is done)."""
        if self.part is not None:
            self.part.handle.close()
            self.part = None
        for done in self.done:
            done.out.discard()
