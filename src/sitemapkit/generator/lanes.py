"""The two fast lanes of `SitemapWriter.add_lines`, for URL-list lines in canonical form (`URL` or
`URL<TAB>LASTMOD`, the URL normalised under the site's folder, the lastmod as the writer writes it).

The bulk lane takes a whole batch whose every line is canonical, in one shape: the per-line checks are made
once over the batch, in C: one `bytes.translate` (in the source) proves it canonical and counts its TABs,
dots and lines, the distinct days are checked once each, the deduplication keys are hashed by `map`, and
the XML is made by two `bytes.replace` calls. A batch it refuses (one odd line, a duplicate, a day that
may be in the future) goes to the inline lane, which checks line by line, writes canonical lines itself
and hands any other line to the general path (`SitemapWriter.add_record`). The output is the same on every
path (`tests/generator/test_writer_properties.py` holds the lanes to the general path's bytes).
"""

from __future__ import annotations

import contextlib
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import accumulate, chain, compress, repeat
from operator import itemgetter
from operator import not_ as _not
from typing import TYPE_CHECKING, cast

from xxhash import xxh3_64_intdigest

from sitemapkit.core.constants import CHANGEFREQS, MAX_IMAGES_PER_URL, MAX_URL_LENGTH
from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.model import UrlEntry
from sitemapkit.generator.serialize import escape_url, format_priority, xml_footer
from sitemapkit.generator.sources.jsonl import JsonBlock
from sitemapkit.generator.sources.lists import ListLineParser
from sitemapkit.generator.sources.records import CANONICAL_URL, ImagedRecord, TextRecord
from sitemapkit.generator.sources.textblocks import CanonicalLines, ColumnBlock

if TYPE_CHECKING:
    from sitemapkit.generator.parts import Part, Parts
    from sitemapkit.generator.writer import SitemapWriter

_DATES = re.compile(rb"\d{4}-\d{2}-\d{2}(?:\n\d{4}-\d{2}-\d{2})*")
_UTC_TIME = rb"\d{4}-\d{2}-\d{2}T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\+00:00"
_UTC_TIMES = re.compile(_UTC_TIME + rb"(?:\n" + _UTC_TIME + rb")*")
_FOOTER = len(xml_footer("urlset").encode())
_CANON_UTC_TIME = re.compile(r"T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\+00:00")
_DAY_OF = itemgetter(slice(0, 10))
# the bytes of a canonical URL (see CANONICAL_URL)
_URL_BYTES_AND_LF = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@/?\n"
_NOT_URL_BYTE = re.compile(rb"[^A-Za-z0-9\-._~!$&'()*+,;=:@/?\n]")

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

    def add(self, writer: SitemapWriter, lines: CanonicalLines) -> bool:
        """Write `lines` to `writer` if the whole batch is canonical and new; False (nothing written)
        if any line needs the per-line loop."""
        deduper = writer.pipeline.deduper
        data, n, tabs = lines.data, len(lines), lines.tabs
        if not n or deduper is None or (tabs and tabs != n):
            return False  # (tabs: every line one, or none; any other batch takes the columnar lane)
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
            parts = writer.parts
            known, known_day = parts.days, parts.known_day
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
        parts = writer.parts
        header = parts.header_len(frozenset())
        capacity = parts.max_bytes - _FOOTER - header
        largest = longest + per_line
        if largest > capacity:
            return False
        keys = set(map(xxh3_64_intdigest, locs))
        if len(keys) != n or not deduper.claim(keys):
            return False  # the per-line loop reports the duplicates
        part = parts.current()
        total = len(escaped) + 1 + n * growth
        if n <= parts.max_urls - part.urls and total <= capacity - part.body + (header - part.header):
            self._write(part, escaped, lastmods)  # the common case: the whole batch fits the file
            part.urls += n
            part.body += total
        else:
            self._write_across(parts, escaped, locs, lastmods, per_line, growth, capacity, header)
        writer.pipeline.accepted += n
        return True

    def _write_across(
        self,
        parts: Parts,
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
            part = parts.current()
            room = capacity - part.body + (header - part.header)
            end = min(start + parts.max_urls - part.urls, bisect_right(ends, done + room, lo=start), n)
            if end == start:
                parts.finish()
                continue
            # the text of lines start..end-1: where their XML starts and ends, less the growth
            piece = escaped[done - start * growth : ends[end - 1] - end * growth - 1]
            self._write(part, piece, lastmods[start:end] if lastmods is not None else None)
            part.urls += end - start
            part.body += ends[end - 1] - done
            done = ends[end - 1]
            start = end

    @staticmethod
    def _write(part: Part, text: bytes, lastmods: list[bytes] | None) -> None:
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


class LaneMeter:
    """Whether the columnar lane is worth its checks for the next batch. A batch whose rows mostly went the
    general way anyway (an input of odd lines) paid the lane's passes for little: the next `SKIP` batches
    go the general way straight, then the lane is tried again (the input may change). The output is the
    same either way."""

    SKIP = 8

    def __init__(self) -> None:
        self._skip = 0

    def wanted(self) -> bool:
        """Whether to try the lane on the next batch."""
        if self._skip:
            self._skip -= 1
            return False
        return True

    def record(self, rows: int, general: int) -> None:
        """A batch of `rows` went through the lane, `general` of them the general way."""
        if general * 2 > rows:
            self._skip = self.SKIP


Row = Callable[[int], None]
_NO_ROW = ("", None, None, None)  # the columns of a row the columnar lane leaves to the general path


def add_list_batch(
    writer: SitemapWriter,
    lines: Sequence[str],
    first_line: int,
    parse_line: Callable[[str, int], TextRecord | None],
) -> None:
    """A batch of URL-list lines through the columnar lane (see `SitemapWriter.add_lines`)."""
    if not len(lines):
        return
    if not writer.lane_meter.wanted():
        for index, text in enumerate(lines):
            record = parse_line(text, first_line + index)
            if record is not None:
                writer.add_record(record)
        return
    canonical = lines if isinstance(lines, CanonicalLines) else None
    if canonical is not None:
        text = canonical.data.decode("ascii")
        get_lines: Callable[[], Sequence[str]] = canonical.lines  # decoded only if a line is needed
    else:
        text = "\n".join(lines)
        get_lines = repeat(lines).__next__
    escaped = "&" in text or "'" in text
    columns, odd = list_columns(text, get_lines, canonical)
    if not odd and canonical is not None:
        # every field of every row is in the columns (XML-escaped): a row the general path takes is
        # joined again from them, and the batch is not decoded and split into lines for the few it needs
        def line(index: int) -> str:
            text = "\t".join([column[index] for column in columns])
            return text.replace("&apos;", "'").replace("&amp;", "&") if escaped else text

    else:

        def line(index: int) -> str:
            return get_lines()[index]

    def general(index: int) -> None:
        record = parse_line(line(index), first_line + index)
        if record is not None:
            writer.add_record(record)

    resolve = isinstance(parse_line, ListLineParser) and parse_line.resolves_relative
    url_bytes = canonical is not None
    add_columns(writer, columns, odd, general, escaped=True, resolve=resolve, url_bytes=url_bytes)


def add_record_batch(
    writer: SitemapWriter,
    records: Sequence[TextRecord | UrlEntry | ImagedRecord] | ColumnBlock,
    notes: Mapping[int, Sequence[Diagnostic]],
    lane: bool,
) -> None:
    """A batch of CSV or JSONL records (see `SitemapWriter.add_records`); `lane`: through the columnar lane
    (else each record the general way)."""
    if isinstance(records, ColumnBlock):
        block = records

        def general_row(index: int) -> None:
            record = block.record(index)
            if record is not None:
                _add_general(writer, record)

        if lane and writer.lane_meter.wanted():
            imaged = block.images if isinstance(block, JsonBlock) else None
            add_columns(
                writer,
                block.columns,
                block.odd,
                general_row,
                escaped=block.escaped,
                images=imaged,
                url_bytes=block.url_bytes,
            )
        else:
            for index in range(len(block.columns[0])):
                general_row(index)
        return
    n = len(records)

    def general(index: int) -> None:
        for diagnostic in notes.get(index, ()):
            writer.log.add(diagnostic)
        if index < n:
            _add_general(writer, records[index])

    if not lane or not writer.lane_meter.wanted():
        for index in range(n + 1):
            general(index)
        return
    odd = {i for i in notes if i < n}
    rows: Sequence[Sequence[str | None]] = records  # type: ignore[assignment]
    images: list[tuple[str, ...]] | None = None
    if not all(type(r) is TextRecord for r in records):
        if any(type(r) is ImagedRecord for r in records):
            images = [r[6] if type(r) is ImagedRecord else () for r in records]
        odd.update(
            i for i, r in enumerate(records) if type(r) is not TextRecord and type(r) is not ImagedRecord
        )
        rows = [_NO_ROW if i in odd else r for i, r in enumerate(records)]  # type: ignore[misc]
    if rows:
        add_columns(writer, list(zip(*rows, strict=False))[:4], odd, general, images=images)
    general(n)


def _add_general(writer: SitemapWriter, record: TextRecord | UrlEntry | ImagedRecord) -> None:
    """Add a record of a CSV or JSONL batch the general way."""
    if isinstance(record, UrlEntry):
        writer.add_entry(record)
    elif isinstance(record, ImagedRecord):
        writer.add_entry(record.entry(writer.log))
    else:
        writer.add_record(record)


def list_columns(
    text: str, lines: Callable[[], Sequence[str]], canonical: CanonicalLines | None = None
) -> tuple[list[list[str]], set[int]]:
    """The columns of a batch of URL-list lines, `text` (the lines joined by LF, `lines()` the lines;
    `canonical`: the batch, if it came so): the URL, XML-escaped, then the positional TAB fields; and the
    rows whose number of TABs differs from the batch's usual one (odd: read on their own by the general
    path)."""
    n = len(canonical) if canonical is not None else text.count("\n") + 1
    if "&" in text or "'" in text:
        text = text.replace("&", "&amp;").replace("'", "&apos;")  # no valid field has either
    tabs = canonical.tabs if canonical is not None else text.count("\t")
    if not tabs:
        return [text.split("\n")], set()
    k = tabs // n
    shaped = k * n == tabs and 1 <= k <= len(_FIELD_ELEMENTS)
    if shaped and canonical is not None and canonical.aligned("\t", k):
        fields = text.replace("\n", "\t").split("\t")  # every line k TABs: the fields in line order
        return [fields[c :: k + 1] for c in range(k + 1)], set()
    if shaped and canonical is None:
        # every line k TABs, if each of the n - 1 line starts (marked by a LF) is a first field
        fields = text.replace("\n", "\t\n").split("\t")
        first_fields = "".join(fields[0 :: k + 1])
        if first_fields.count("\n") == n - 1:
            fields[0 :: k + 1] = first_fields.split("\n")
            return [fields[c :: k + 1] for c in range(k + 1)], set()
    counts = list(map(str.count, lines(), repeat("\t")))
    k = min(Counter(counts).most_common(1)[0][0], len(_FIELD_ELEMENTS))
    odd = set(compress(range(n), map(k.__ne__, counts)))
    if odd:
        padded = text.split("\n")
        for i in odd:
            padded[i] = "\t" * k  # an empty row in its place: the columns stay aligned
        text = "\n".join(padded)
    fields = text.replace("\t", "\n").split("\n")
    return [fields[c :: k + 1] for c in range(k + 1)], odd


# the sitemap elements of the optional columns, in column order
_FIELD_ELEMENTS = ("lastmod", "changefreq", "priority")


def _rows_of(column: Sequence[str | None], values: set[str | None]) -> Iterable[int]:
    """The rows of `column` whose cell is one of `values`: by `list.index` (a C scan) for a few values,
    else by one pass with a set."""
    if len(values) <= 3 and type(column) in (list, tuple):
        found: list[int] = []
        for value in values:
            at = -1
            with contextlib.suppress(ValueError):
                while True:
                    at = column.index(value, at + 1)
                    found.append(at)
        return found
    return compress(range(len(column)), map(values.__contains__, column))


def _lastmod_cell(value: str, known_day: Callable[[str], bool]) -> tuple[str, str] | None:
    """A canonical lastmod cell's text and time key, None otherwise."""
    if len(value) == 10:
        return (value, value + "T00:00:00") if known_day(value) else None
    if len(value) == 25 and _CANON_UTC_TIME.fullmatch(value, 10) is not None and known_day(value[:10]):
        return value, value[:19]
    return None


def _priority_text(value: str) -> str | None:
    """A priority cell as `entry_from_text` and `render_url` write it (None: not a number from 0 to 1)."""
    if value != value.strip():
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return format_priority(number) if 0.0 <= number <= 1.0 else None


def _odd_urls(
    data: bytes,
    lines: list[bytes],
    locs: Sequence[str | None],
    folder: str,
    own: str,
    longest: int,
    url_bytes: bool = False,
) -> Iterable[int]:
    """The rows of `locs` (joined by LF in `data`, UTF-8; `longest`: the length of the longest; `url_bytes`:
    they hold only bytes a canonical URL may have) whose URL is not canonical, under `folder` and outside
    `own` (see CANONICAL_URL): found by passes over the rows and `data` when each URL is one line of it,
    else URL by URL."""
    if CANONICAL_URL.fullmatch(folder) is None or "/." in folder:
        return range(len(locs))
    if data.count(b"\n") == len(locs) - 1:
        # one URL a line: the rows not under the folder or under `own` by one test each, those with a byte
        # outside a canonical URL or a dot segment from where such bytes lie in `data`
        folder_b, own_b = folder.encode(), own.encode()
        found: set[int] = set()
        rows = range(len(lines))
        dots = folder.count(".") * len(lines)  # the dots of the folder, if every row starts with it
        if not data.startswith(folder_b) or data.count(b"\n" + folder_b) != len(lines) - 1:
            found.update(compress(rows, map(_not, map(bytes.startswith, lines, repeat(folder_b)))))
            dots += sum(lines[i].count(b".") - folder.count(".") for i in found)
        if data.startswith(own_b) or b"\n" + own_b in data:
            found.update(compress(rows, map(bytes.startswith, lines, repeat(own_b))))
        if longest >= MAX_URL_LENGTH:  # (a row whose UTF-8 is longer than its text is not ASCII: found)
            found.update(compress(rows, map(MAX_URL_LENGTH.__le__, map(len, lines))))
        strange = not url_bytes and bool(data.translate(None, _URL_BYTES_AND_LF))
        # a dot segment needs a dot outside the folder's in a row under it: none if the dots add up
        at = data.find(b"/.") if data.count(b".") != dots else -1
        if not strange and at < 0:
            return found
        ends = list(accumulate(map((1).__add__, map(len, lines))))  # where each row's LF lies, plus one
        if strange:
            found.update(bisect_right(ends, m.start()) for m in _NOT_URL_BYTE.finditer(data))
        while at >= 0:
            row = bisect_right(ends, at)
            found.add(row)
            at = data.find(b"/.", ends[row]) if row < len(ends) - 1 else -1
        return found
    return [i for i, loc in enumerate(locs) if loc is None or not _canonical(loc, folder, own)]


def add_columns(
    writer: SitemapWriter,
    columns: Sequence[Sequence[str | None]],
    odd: set[int],
    general: Row,
    *,
    escaped: bool = False,
    resolve: bool = True,
    images: Sequence[tuple[str, ...]] | None = None,
    url_bytes: bool = False,
) -> None:
    """The columnar lane: write a batch given as columns (URL, then lastmod, changefreq, priority, each
    optional and None or "" where a row has none; `escaped`: the URLs are XML-escaped already; `url_bytes`:
    they hold only bytes a canonical URL may have, as checked where they were read), checking
    each column in passes over the whole batch. `resolve`: a relative URL (`/page`) in canonical form is
    taken as the site's origin and it, as `normalize_url` resolves it. `images`: each row's image URLs,
    written as `<image:image>` elements when each is in normal form. A row the lane cannot take as it
    stands (`odd`, or any cell not canonical, a duplicate, one of the set's own files) goes to
    `general(row)`, which reads and adds it the general way, in its place in the order."""
    locs = columns[0]
    n = len(locs)
    if not n:
        return
    deduper = writer.pipeline.deduper
    if deduper is None:
        for i in range(n):
            general(i)
        return
    folder, own = writer.scope.folder, writer.own_prefix
    odd = set(odd)
    # the URL column: one check over the joined column, or (if it fails) one per URL
    joined = "\n".join(cast("list[str]", locs))
    if not escaped and ("&" in joined or "'" in joined):
        joined = joined.replace("&", "&amp;").replace("'", "&apos;")
        locs = _escaped_cells(joined, locs)
    data = joined.encode("utf-8", "surrogatepass")
    folder_b, own_b = folder.encode(), own.encode()
    longest = max(map(len, locs))  # type: ignore[arg-type]
    lines = data.split(b"\n")
    canonical = (
        len(lines) == n  # no URL with a line feed in it (a JSON or Parquet cell may have one)
        and data.startswith(folder_b)
        and data.count(b"\n" + folder_b) == n - 1
        and (url_bytes or (len(data) == len(joined) and not data.translate(None, _URL_BYTES_AND_LF)))
        and "/." not in folder
        and (data.count(b".") == n * folder.count(".") or b"/." not in data)  # (dots: only the folder's)
        and not data.startswith(own_b)
        and b"\n" + own_b not in data
        and longest < MAX_URL_LENGTH
    )
    if len(lines) != n:  # a URL with a line feed in it: its row is odd anyway
        lines = [loc.encode("utf-8", "surrogatepass") for loc in cast("list[str]", locs)]
    found = set() if canonical else set(_odd_urls(data, lines, locs, folder, own, longest, url_bytes))
    # the optional columns: each distinct cell checked once; a column whose cells are all written as they
    # stand goes in verbatim between its tags, any other as its cells' elements
    parts = writer.parts
    known, known_day = parts.days, parts.known_day

    def day_ok(day: str) -> bool:
        return known.get(day) or known_day(day)

    slots: list[Sequence[str | None]] = [locs]
    tags: list[tuple[str, str]] = [("", "")]
    lastmod_keys: dict[str | None, str] | None = None
    lastmods: Sequence[str | None] = ()
    url_longest = longest
    longest += _GROWTH_LOC + 1
    for name, column in zip(_FIELD_ELEMENTS, columns[1:], strict=False):
        texts: dict[str | None, str] = {}
        bad: set[str | None] = set()
        keyed: dict[str | None, str] = {}
        for value in set(column):
            text: str | None = None
            if not value:
                texts[value] = keyed[value] = ""
                continue
            if name == "lastmod":
                cell = _lastmod_cell(value, day_ok)
                if cell is not None:
                    text, keyed[value] = cell
            elif name == "changefreq":
                text = value if value in CHANGEFREQS else None
            else:
                text = _priority_text(value)
            if text is None:
                bad.add(value)
                texts[value] = keyed[value] = ""
            else:
                texts[value] = text
        if bad:
            odd.update(_rows_of(column, bad))
        written = {value: text for value, text in texts.items() if value not in bad}
        if not any(written.values()):
            continue  # nothing to write from this column
        if name == "lastmod":
            lastmod_keys, lastmods = keyed, column
        longest += max(map(len, written.values())) + 2 * len(name) + 5
        if all(written.values()) and all(value == text for value, text in written.items()):
            slots.append(column)  # verbatim
            tags.append((f"<{name}>", f"</{name}>"))
        else:
            slots.append(
                list(map({v: f"<{name}>{t}</{name}>" if t else "" for v, t in texts.items()}.get, column))
            )
            tags.append(("", ""))
    imaged: list[bool] | None = None
    if images is not None and any(images):
        imaged = list(map(bool, images))
        column, around, widest = _image_elements(images, odd)
        longest += widest
        slots.append(column)
        tags.append(around)
    if found:
        # a URL the general path would only resolve (`/page`) or lowercase (`HTTPS://Example.com/...`)
        # to a canonical one is taken so, in the lane (if nothing else of its row is odd)
        origin = folder[: folder.index("/", folder.index("//") + 2)] if "//" in folder else ""
        rescued = {}
        for i in found.difference(odd) if origin else ():
            url = _resolved(cast(str, locs[i]), origin, resolve)
            if url is not None and _canonical(url, folder, own):
                rescued[i] = url
        if rescued:
            locs = slots[0] = list(locs)
            for i, url in rescued.items():
                locs[i] = url
                lines[i] = url.encode("ascii")
            longest += max(0, max(map(len, rescued.values())) - url_longest)
            found.difference_update(rescued)
        odd.update(found)
    keys = list(map(xxh3_64_intdigest, lines))
    # the XML of row i is OPEN + pieces[i * width : (i + 1) * width] less the last piece's OPEN, laid out by
    # slice assignments (in C): each slot's cells between the closing and opening tags around them
    width = 2 * len(slots)
    tags.append(("", ""))
    separators = [("</loc>" if at == 0 else "") + tags[at][1] + tags[at + 1][0] for at in range(len(slots))]
    separators[-1] += "</url>\n<url><loc>"
    pieces: list[str | None] = [None] * (width * n)
    for at, slot in enumerate(slots):
        pieces[2 * at :: width] = slot
    pieces[1::2] = separators * n
    capacity = parts.max_bytes - _FOOTER - parts.header_len(_IMAGE if imaged is not None else frozenset())
    if longest > capacity:
        sizes = _row_sizes(pieces, width, 0, n)
        odd.update(i for i, size in enumerate(sizes) if size > capacity)  # file-too-large, reported
    newest = max(lastmod_keys.values()) if lastmod_keys else ""
    start = 0
    duplicates = 0
    for stop in [*sorted(odd), n]:
        while start < stop:
            # the good rows start..stop-1, up to the first duplicate among them
            end = start + deduper.claim_prefix(keys[start:stop])
            _write_rows(writer, pieces, width, lastmods, lastmod_keys, start, end, newest, imaged)
            if end < stop:
                general(end)  # a duplicate: the general path reports it (or merges it)
                duplicates += 1
                end += 1
            start = end
        if stop < n:
            general(stop)
        start = stop + 1
    writer.lane_meter.record(n, len(odd) + duplicates)


_IMAGE = frozenset({"image"})
_IMAGE_OPEN = "<image:image><image:loc>"
_IMAGE_CLOSE = "</image:loc></image:image>"


def _image_elements(
    images: Sequence[tuple[str, ...]], odd: set[int]
) -> tuple[list[str], tuple[str, str], int]:
    """The images of each row as a slot of the XML (the cells and the tags around each) and the widest a
    row's take; the rows with an image URL not in normal form, or too many images, are added to `odd`
    (the general path reports them)."""
    distinct = set(chain.from_iterable(images))
    bad = _not_canonical_images(distinct)
    if bad:
        odd.update(i for i, urls in enumerate(images) if not bad.isdisjoint(urls))
    counts = set(map(len, images))
    if max(counts) > MAX_IMAGES_PER_URL:
        odd.update(i for i, urls in enumerate(images) if len(urls) > MAX_IMAGES_PER_URL)
    if counts == {1}:  # an image a row (the usual case): its URL between the tags
        column = list(map(itemgetter(0), images))
        if any("&" in url or "'" in url for url in distinct):
            column = _escaped_cells("\n".join(column).replace("&", "&amp;").replace("'", "&apos;"), column)
        widest = max(map(len, column)) + len(_IMAGE_OPEN) + len(_IMAGE_CLOSE)
        return column, (_IMAGE_OPEN, _IMAGE_CLOSE), widest
    element = {url: _IMAGE_OPEN + escape_url(url) + _IMAGE_CLOSE for url in distinct - bad}
    widest = max(map(len, element.values()), default=0) * min(max(counts), MAX_IMAGES_PER_URL)

    def text_of(urls: tuple[str, ...]) -> str:
        if len(urls) == 1:
            return element.get(urls[0], "")
        return "".join(map(element.get, urls, repeat(""))) if urls else ""

    return list(map(text_of, images)), ("", ""), widest


def _escaped_cells(joined: str, cells: Sequence[str | None]) -> list[str]:
    """The cells XML-escaped, from `joined` (the cells joined by LF, then escaped): split again where no
    cell has a line feed of its own (a JSON or Parquet cell may), else escaped one by one."""
    if joined.count("\n") == len(cells) - 1:
        return joined.split("\n")
    return [escape_url(cell or "") for cell in cells]


def _not_canonical_images(urls: set[str]) -> set[str]:
    """The image URLs of `urls` that `normalize_url` would change or refuse (see `_canonical_image`): all
    checked at once where none is (the usual case), else one by one."""
    listed = list(urls)
    joined = "\n".join(listed)
    if (
        _CANONICAL_LINES.fullmatch(joined) is not None
        and joined.count("\n") == len(listed) - 1  # (no URL with a line feed of its own)
        and "/." not in joined
        and ".." not in joined
        and max(map(len, listed), default=0) < MAX_URL_LENGTH
    ):
        return set()
    return {url for url in listed if not _canonical_image(url)}


_CANONICAL_LINES = re.compile(rf"(?:{CANONICAL_URL.pattern})(?:\n(?:{CANONICAL_URL.pattern}))*+")
"""Lines that each are a `CANONICAL_URL` (possessive: a line that is not fails without backtracking)."""


def _canonical_image(url: str) -> bool:
    """Whether `normalize_url` gives the image URL `url` as it stands (an absolute URL in normal form)."""
    return (
        len(url) < MAX_URL_LENGTH
        and "/." not in url
        and CANONICAL_URL.fullmatch(url) is not None
        and (".." not in url or ".." not in url.split("/", 3)[2])  # (an empty label: the host is refused)
    )


# the rest of a URL after its origin that `normalize_url` leaves as it stands, XML-escaped: no `;` in the
# path (urljoin takes it for a parameter), no empty query, no `//` in the path and no dot segment (checked
# apart)
_REST = re.compile(r"/[A-Za-z0-9\-._~!$&'()*+,=:@/]*(?:\?[A-Za-z0-9\-._~!$&'()*+,;=:@/?]+)?")


def _resolved(loc: str, origin: str, relative: bool) -> str | None:
    """`loc` as `normalize_url` gives it against a folder of `origin` (`https://host`), when that is `origin`
    and the rest of `loc` as it stands: for a relative URL (`/page`, if `relative`) or one whose scheme and
    host differ from `origin` only in case. None for any other (the general path reads it)."""
    if loc[:1] == "/":
        rest = loc if relative else ""
    elif loc[: len(origin)].lower() == origin and loc[: len(origin)].isascii():
        rest = loc[len(origin) :]
    else:
        return None
    if _REST.fullmatch(rest) is None or "/." in rest or "//" in rest.partition("?")[0]:
        return None
    return origin + rest


def _canonical(url: str, folder: str, own: str) -> bool:
    """Whether `url` (XML-escaped) is canonical, under `folder` and not one of the set's own files."""
    return (
        url.startswith(folder)
        and not url.startswith(own)
        and len(url) < MAX_URL_LENGTH
        and "/." not in url
        and CANONICAL_URL.fullmatch(url) is not None
    )


def _row_sizes(pieces: Sequence[str | None], width: int, start: int, stop: int) -> list[int]:
    """The size of the XML of rows start..stop-1."""
    columns = (pieces[start * width + at : stop * width : width] for at in range(width))
    return list(map(len, map("".join, zip(*columns, strict=True))))


def _write_rows(
    writer: SitemapWriter,
    pieces: list[str | None],
    width: int,
    lastmods: Sequence[str | None],
    lastmod_keys: dict[str | None, str] | None,
    start: int,
    end: int,
    newest: str = "",
    imaged: list[bool] | None = None,
) -> None:
    """Write rows start..end-1 (canonical, so ASCII: a string's length is its size in bytes), filling the
    current file and starting new ones as its limits require. `newest`: the largest of `lastmod_keys`.
    `imaged[i]`: row i has images, so that its file's header declares the image namespace (from that row
    on, as the general path's `Parts.add` does)."""
    parts = writer.parts
    while start < end:
        part = parts.current()
        prefixes, header, last = part.prefixes, part.header, end
        if imaged is not None and "image" not in prefixes:
            try:
                last = imaged.index(True, start, end)  # the rows before it under the header as it is
            except ValueError:
                last = end
            if last == start:
                prefixes = prefixes | _IMAGE
                header, last = parts.header_len(prefixes), end
        room = parts.max_bytes - _FOOTER - header - part.body
        stop = min(last, start + parts.max_urls - part.urls)
        whole = start == 0 and stop * width == len(pieces)  # (the common case: no slice to copy)
        text = "".join(pieces if whole else pieces[start * width : stop * width])  # type: ignore[arg-type]
        if len(text) > room:
            ends = list(accumulate(_row_sizes(pieces, width, start, stop)))
            stop = start + bisect_right(ends, room)
            text = "".join(pieces[start * width : stop * width])  # type: ignore[arg-type]
        if stop == start:
            parts.finish()
            continue
        part.prefixes, part.header = prefixes, header
        part.handle.write(b"<url><loc>")
        part.handle.write(memoryview(text.encode("ascii"))[: -len("<url><loc>")])
        part.body += len(text)
        part.urls += stop - start
        writer.pipeline.accepted += stop - start
        if lastmod_keys is not None and newest > part.newest_key:  # (else none of them is newer)
            window = lastmods[start:stop]
            best = max(map(lastmod_keys.__getitem__, set(window)))
            if best > part.newest_key:  # the first of the newest, as the general path keeps it
                part.newest = next(v for v in window if lastmod_keys[v] == best)
                part.newest_key = best
        start = stop
