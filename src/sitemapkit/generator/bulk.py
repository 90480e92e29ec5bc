"""The bulk lane of `Writer.add_lines`: a batch of URL-list lines that are all in canonical form.

A URL list exported from a database is usually uniform: every line is `URL` or `URL<TAB>LASTMOD`, with
the URL already normalised under the site's folder and the lastmod already as the writer would write it.
For such a batch the per-line checks of the writer's inline loop can be made once over the whole batch,
in C: one regular expression proves every line canonical, the distinct days are checked once each, the
deduplication keys are hashed by `map`, and the XML is made by two `str.replace` calls. Anything else
(one odd line, a duplicate, a day that may be in the future, a file that would overflow its byte limit
mid-batch) leaves the batch to the per-line loop, which decides line by line; the output is the same
either way (`tests/test_writer_properties.py` holds the lanes to it).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from itertools import accumulate
from operator import itemgetter
from typing import TYPE_CHECKING

from xxhash import xxh3_64_intdigest

from sitemapkit.core.constants import MAX_URL_LENGTH
from sitemapkit.generator.serialize import xml_footer
from sitemapkit.generator.sources.records import CANONICAL_URL

if TYPE_CHECKING:
    from sitemapkit.generator.sources.lists import CanonicalLines
    from sitemapkit.generator.writer import SitemapWriter, _Part

_DATES = re.compile(rb"\d{4}-\d{2}-\d{2}(?:\n\d{4}-\d{2}-\d{2})*")
_UTC_TIME = rb"\d{4}-\d{2}-\d{2}T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\+00:00"
_UTC_TIMES = re.compile(_UTC_TIME + rb"(?:\n" + _UTC_TIME + rb")*")
_FOOTER = len(xml_footer("urlset").encode())
_DAY_OF = itemgetter(slice(0, 10))

# the XML around one line: `URL<TAB>LASTMOD` and `URL`
_OPEN = b"<url><loc>"
_LOC_TO_LASTMOD = b"</loc><lastmod>"
_CLOSE_LASTMOD = b"</lastmod></url>\n"
_CLOSE_LOC = b"</loc></url>\n"
# what a line's XML adds to the line and its "\n" (the TAB is replaced)
_GROWTH_LASTMOD = len(_OPEN) + len(_LOC_TO_LASTMOD) + len(_CLOSE_LASTMOD) - 2
_GROWTH_LOC = len(_OPEN) + len(_CLOSE_LOC) - 1


class BulkLane:
    """The checks of one writer's bulk lane, made for its folder (see the module's docstring)."""

    def __init__(self, folder: str) -> None:
        self.usable = CANONICAL_URL.fullmatch(folder) is not None and "/." not in folder
        self._folder = folder.encode("ascii") if self.usable else b""
        self._line_start = b"\n" + self._folder
        self._folder_dots = folder.count(".")

    def add(self, writer: SitemapWriter, lines: CanonicalLines, known_day: Callable[[str], bool]) -> bool:
        """Write `lines` to `writer` if the whole batch is canonical and new; False (nothing written)
        if any line needs the per-line loop."""
        deduper = writer.pipeline.deduper
        data, n, tabs = lines.data, len(lines), lines.tabs
        if not n or deduper is None:
            return False
        if not data.startswith(self._folder) or data.count(self._line_start) != n - 1:
            return False  # a line outside the folder (or empty)
        if lines.dots != n * self._folder_dots and b"/." in data:
            return False  # maybe a dot segment, which normalisation removes
        escaped = (
            data.replace(b"&", b"&amp;").replace(b"'", b"&apos;") if b"&" in data or b"'" in data else data
        )
        lastmods: list[bytes] | None = None
        if tabs == n:
            # every line one TAB, so the fields alternate; every second field a lastmod proves it
            fields = escaped.replace(b"\t", b"\n").split(b"\n")
            locs, lastmods = fields[0::2], fields[1::2]
            distinct = set(lastmods)
            joined = b"\n".join(distinct)
            if _DATES.fullmatch(joined):
                days = {day.decode() for day in distinct}
            elif _UTC_TIMES.fullmatch(joined):
                days = {day.decode() for day in set(map(_DAY_OF, distinct))}
            else:
                return False
            known = writer._days
            if not all(known.get(day) or known_day(day) for day in days):
                return False
            growth = _GROWTH_LASTMOD
            per_line = len(lastmods[0]) + 2 + growth
        elif tabs == 0:
            locs = escaped.split(b"\n")
            growth = _GROWTH_LOC
            per_line = 1 + growth
        else:
            return False
        longest = max(map(len, locs))
        if longest >= MAX_URL_LENGTH:
            return False
        header = writer._header_len(frozenset())
        capacity = writer.max_bytes - _FOOTER - header
        largest = longest + per_line
        if largest > capacity:
            return False
        writer._own_keys_ahead(n // min(writer.max_urls, capacity // largest) + 2)
        keys = set(map(xxh3_64_intdigest, locs))
        seen = deduper._seen
        if len(keys) != n or not seen.isdisjoint(keys):
            return False  # the per-line loop reports the duplicates
        seen |= keys
        part = writer._current_part()
        total = len(escaped) + 1 + n * growth
        if n <= writer.max_urls - part.urls and total <= capacity - part.body + (header - part.header):
            self._write(part, escaped, lastmods)  # the common case: the whole batch fits the file
            part.urls += n
            part.body += total
        else:
            self._write_across(writer, escaped, locs, lastmods, per_line, growth, capacity, header)
        writer.pipeline.accepted += n
        return True

    def _write_across(
        self,
        writer: SitemapWriter,
        escaped: bytes,
        locs: list[bytes],
        lastmods: list[bytes] | None,
        per_line: int,
        growth: int,
        capacity: int,
        header: int,
    ) -> None:
        """Write a batch that fills the current file: as many lines as fit, then the next file."""
        n = len(locs)
        ends = list(accumulate(map(per_line.__add__, map(len, locs))))  # XML bytes up to each line
        start = done = 0
        while start < n:
            part = writer._current_part()
            room = capacity - part.body + (header - part.header)
            end = min(start + writer.max_urls - part.urls, bisect_right(ends, done + room, lo=start), n)
            if end == start:
                writer._finish_part()
                continue
            # the text of lines start..end-1: where their XML starts and ends, less the growth
            piece = escaped[done - start * growth : ends[end - 1] - end * growth - 1]
            self._write(part, piece, lastmods[start:end] if lastmods is not None else None)
            part.urls += end - start
            part.body += ends[end - 1] - done
            done = ends[end - 1]
            start = end

    @staticmethod
    def _write(part: _Part, text: bytes, lastmods: list[bytes] | None) -> None:
        if lastmods is None:
            part.handle.write(_OPEN + text.replace(b"\n", _CLOSE_LOC + _OPEN) + _CLOSE_LOC)
            return
        part.handle.write(
            _OPEN
            + text.replace(b"\t", _LOC_TO_LASTMOD).replace(b"\n", _CLOSE_LASTMOD + _OPEN)
            + _CLOSE_LASTMOD
        )
        newest = max(lastmods).decode()
        key = newest + "T00:00:00" if len(newest) == 10 else newest[:19]
        if key > part.newest_key:
            part.newest, part.newest_key = newest, key
