"""Text sitemaps: one URL a line, each checked as a `<loc>` is."""

from __future__ import annotations

from typing import Final

from sitemapkit.core.model import UrlEntry
from sitemapkit.reader.context import Context
from sitemapkit.reader.entries import EntryReader, Tally

_MAX_LINE: Final = 64 * 1024
_MAX_NON_URL_LINES: Final = 5
"""Lines in a row that are not URLs after which a text file is not read further: it is not a text sitemap
(an internal file served by mistake), and its lines must not be echoed one by one into the report."""


class TextLines:
    """The part of `SitemapParser` that reads a text sitemap, as its bytes arrive."""

    def __init__(self, context: Context, tally: Tally, entries: EntryReader) -> None:
        self._context = context
        self._tally = tally
        self._entries = entries
        self._buf = b""  # the unfinished last line
        self._line = 0
        self._overlong = False  # the rest of the current line goes: it was reported as too long
        self._misses = 0  # lines in a row that were not URLs
        self._miss_line = 0  # the first of them

    def feed(self, data: bytes, final: bool) -> bool:
        """Read the lines `data` completes (all of them when `final`); False when reading stops here."""
        buf = self._buf + data if self._buf else data
        lines = buf.split(b"\n")
        rest = lines.pop()
        for raw in lines:
            if not self._entry(raw):
                self._buf = b""
                return False
        if final:
            if rest and not self._entry(rest):
                self._buf = b""
                return False
            rest = b""
        elif len(rest) > _MAX_LINE:
            if not self._overlong:
                self._line += 1
                self._overlong = True
                self._entries.count(self._line)
                self._context.report(
                    "url-too-long",
                    f"Line {self._line} has more than {_MAX_LINE:,} bytes; it was skipped.",
                    self._line,
                )
            rest = b""
        self._buf = rest
        return True

    def _entry(self, raw: bytes) -> bool:
        if self._overlong:  # the rest of a line already reported as too long
            self._overlong = False
            return True
        self._line += 1
        s = raw.strip()
        if not s:
            return True
        line = self._line
        text = s.decode("utf-8", "replace")
        if self._entries.url_like(text):
            self._misses = 0
        else:
            self._misses += 1
            if self._misses == 1:
                self._miss_line = line
            elif self._misses >= _MAX_NON_URL_LINES:
                # not reported as a URL (its text is not shown): reading stops
                self._context.report(
                    "invalid-url",
                    f"Lines {self._miss_line} to {line} are not URLs: this is not a text sitemap (one "
                    "URL a line), and it was not read further. Check what the server sends for it.",
                    line,
                )
                return False
        self._entries.count(line)
        loc = self._entries.loc(text, line, "The line")
        if loc is not None:
            tally = self._tally
            tally.count += 1
            tally.items.append(UrlEntry(loc, sitemap=self._context.source, line=line))
        return True
