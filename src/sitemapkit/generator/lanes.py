"""The two fast lanes of `SitemapWriter.add_lines`, for URL-list lines in canonical form (`URL` or
`URL<TAB>LASTMOD`, the URL normalised under the site's folder, the lastmod as the writer writes it).

The bulk lane takes a whole batch whose every line is canonical, in one shape: the per-line checks are made
once over the batch, in C: one `bytes.translate` (in the source) proves it canonical and counts its TABs,
dots and lines, the distinct days are checked once each, the deduplication keys are hashed by `map`, and
the XML is made by two `bytes.replace` calls. A batch it refuses (one odd line, a duplicate, a day that
may be in the future) goes to the inline lane, which checks line by line, writes canonical lines itself
and hands any other line to the general path (`SitemapWriter.add_record`). The output is the same on every
path (`tests/test_writer_properties.py` holds the lanes to the general path's bytes).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate
from operator import itemgetter
from typing import TYPE_CHECKING

from xxhash import xxh3_64_intdigest

from sitemapkit.core.constants import MAX_URL_LENGTH
from sitemapkit.generator.serialize import escape_url, xml_footer
from sitemapkit.generator.sources.records import CANONICAL_URL, TextRecord

if TYPE_CHECKING:
    from sitemapkit.generator.sources.lists import CanonicalLines
    from sitemapkit.generator.writer import SitemapWriter, _Part

_DATES = re.compile(rb"\d{4}-\d{2}-\d{2}(?:\n\d{4}-\d{2}-\d{2})*")
_UTC_TIME = rb"\d{4}-\d{2}-\d{2}T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\+00:00"
_UTC_TIMES = re.compile(_UTC_TIME + rb"(?:\n" + _UTC_TIME + rb")*")
_FOOTER = len(xml_footer("urlset").encode())
_CANON_UTC_TIME = re.compile(r"T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\+00:00")
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

    def __init__(self, folder: str, own_prefix: str) -> None:
        self.usable = CANONICAL_URL.fullmatch(folder) is not None and "/." not in folder
        self._folder = folder.encode("ascii") if self.usable else b""
        self._line_start = b"\n" + self._folder
        self._folder_dots = folder.count(".")
        self._own = own_prefix.encode()
        self._own_line = b"\n" + self._own

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
        if data.startswith(self._own) or self._own_line in data:
            return False  # maybe one of the set's own files, which the pipeline leaves out
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


def add_inline(
    writer: SitemapWriter,
    lines: Sequence[str],
    first_line: int,
    parse_line: Callable[[str, int], TextRecord | None],
    clean: bool,
) -> None:
    """The inline lane: write each canonical line of `lines` that fits the current file, and give every
    other line to the general path (`clean`: every character is canonical, which spares the URL check)."""
    folder = escape_url(writer.scope.folder)
    own = escape_url(writer.own_prefix)  # the set's own files: the pipeline leaves them out
    canon_url = CANONICAL_URL.fullmatch
    canon_time = _CANON_UTC_TIME.fullmatch
    days = writer._days
    known_day = writer._known_day
    deduper = writer.pipeline.deduper
    seen = deduper._seen if deduper is not None else set()
    # Escape the whole batch at once (in C): the inline path works on escaped text, and the
    # deduper hashes escaped URLs on every path, so both paths agree.
    text = "\n".join(lines)
    escaped = lines
    if "&" in text or "'" in text:
        escaped = text.replace("&", "&amp;").replace("'", "&apos;").split("\n")
    # The inline path keeps the current file's counters in locals and its output in `pending`
    # (canonical text is ASCII, so a string's length is its size in bytes); `sync` hands them back
    # to the part before the general path runs. Canonical lastmods are dates (10 characters) or UTC
    # date-times (25): within each kind, string order is time order.
    part: _Part | None = None
    pending: list[str] = []
    urls = size = limit_urls = limit_size = accepted = 0
    newest_date = newest_time = ""
    date_at = time_at = 0  # where each first appeared: equal instants keep the earlier, as `_write` does

    def sync() -> None:
        nonlocal part, accepted, newest_date, newest_time
        if part is not None:
            part.handle.write("".join(pending).encode())
            part.urls, part.body = urls, size - part.header
            pending.clear()
            candidates = sorted(
                (at, value, key)
                for at, value, key in (
                    (date_at, newest_date, newest_date + "T00:00:00"),
                    (time_at, newest_time, newest_time[:19]),
                )
                if value
            )
            for _, value, key in candidates:
                if key > part.newest_key:
                    part.newest, part.newest_key = value, key
            part = None
        newest_date = newest_time = ""
        writer.pipeline.accepted += accepted
        accepted = 0

    def general(index: int) -> None:
        nonlocal part, urls, size, limit_urls, limit_size
        sync()
        record = parse_line(lines[index], first_line + index)
        if record is not None:
            writer.add_record(record)
        part = writer._part
        if part is not None and deduper is not None:
            urls, size = part.urls, part.header + part.body
            limit_urls, limit_size = writer.max_urls, writer.max_bytes - _FOOTER
        else:
            part = None

    for index, line in enumerate(escaped):
        loc, tab, lastmod = line.partition("\t")
        if (
            part is None
            or not loc.startswith(folder)
            or loc.startswith(own)
            or len(loc) >= MAX_URL_LENGTH
            or "/." in loc  # a dot segment, which normalize_url removes
            or (not clean and canon_url(lines[index].partition("\t")[0]) is None)
        ):
            general(index)
            continue
        if not tab:
            xml = f"<url><loc>{loc}</loc></url>\n"
        elif (len(lastmod) == 10 and (days.get(lastmod) or known_day(lastmod))) or (
            len(lastmod) == 25
            and (days.get(lastmod[:10]) or known_day(lastmod[:10]))
            and canon_time(lastmod, 10) is not None
        ):
            xml = f"<url><loc>{loc}</loc><lastmod>{lastmod}</lastmod></url>\n"
        else:
            general(index)
            continue
        key = xxh3_64_intdigest(loc.encode())
        if urls >= limit_urls or size + len(xml) > limit_size or key in seen:
            general(index)  # rolls over, or reports the duplicate
            continue
        seen.add(key)
        accepted += 1
        if tab:
            if len(lastmod) == 10:
                if lastmod > newest_date:
                    newest_date, date_at = lastmod, index
            elif lastmod > newest_time:
                newest_time, time_at = lastmod, index
        pending.append(xml)
        urls += 1
        size += len(xml)
    sync()
