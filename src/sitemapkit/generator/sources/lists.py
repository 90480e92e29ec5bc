"""URL list, CSV and JSONL input files.

- A URL list has one URL per line, optionally followed by TAB-separated fields (lastmod, changefreq,
  priority), positional or `key=value`; Google's sitemap_gen.py form `URL lastmod=... priority=...` works too.
  Fields separated by spaces are read by what they look like (a W3C date, a changefreq word, a number from 0
  to 1), with a warning once per file; any other space in a URL is percent-encoded, with a warning.
  `#` comments and blank lines are ignored.
- `.csv` needs a header naming `loc` (or `url`, `address`) and optionally `lastmod`, `changefreq`,
  `priority`; other columns are ignored, `;` or TAB delimiters are detected from the header, and a row may
  leave out trailing cells.
- `.jsonl` holds one object per line with those keys.
- `.gz` inputs are decompressed; `-` reads standard input. UTF-8, with or without a BOM, unless an
  `encoding` is given (see `sitemapkit.generator.sources.encodings`); URLs are UTF-8 percent-encoded.

Bad lines become diagnostics with file and line; a bad optional field is dropped and the URL kept. A line
longer than `MAX_LINE_BYTES` (1 MiB) is reported and skipped without being held whole.
"""

from __future__ import annotations

import csv
import difflib
import gzip
import itertools
import re
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, cast

from sitemapkit.core.constants import CHANGEFREQS
from sitemapkit.core.diagnostics import Diagnostic, DiagnosticHandler, Severity
from sitemapkit.core.errors import InputError
from sitemapkit.core.model import UrlEntry
from sitemapkit.generator.sources.jsonl import read_jsonl
from sitemapkit.generator.sources.records import ImagedRecord, TextRecord, entry_from_text
from sitemapkit.generator.sources.textblocks import (
    FIELDS,
    CanonicalLines,
    ColumnBlock,
    FieldReporter,
    decoded_blocks,
    input_kind,
    open_input,
    shown_name,
)

_DATE_LIKE = re.compile(r"\d{4}(?:-\d{2}(?:-\d{2}(?:[Tt][0-9:.]+(?:[Zz]|[+-]\d{2}:\d{2})?)?)?)?")
_PRIORITY_LIKE = re.compile(r"(?:0|1)?\.\d+|0|1")


def _field_of(token: str) -> str | None:
    """The field a space-separated token of a URL-list line looks like: a W3C date is a lastmod, a
    changefreq word a changefreq, a number from 0 to 1 a priority; None for anything else."""
    if token.lower() in CHANGEFREQS:
        return "changefreq"
    if _PRIORITY_LIKE.fullmatch(token):
        return "priority"
    if _DATE_LIKE.fullmatch(token):
        return "lastmod"
    return None


def _list_record(
    text: str, number: int, fields: FieldReporter, sitemap_gen: bool = False
) -> TextRecord | None:
    """The record of one URL-list line, or None for a blank line, a comment or a bad line (reported).

    A line without TABs is in sitemap_gen.py's form (`URL key=value ...`) when some token after the URL is
    `key=value`, or always with `sitemap_gen`: then the URL is the first token, and a token that is not
    `key=value` is reported (`invalid-value`) and ignored. With `sitemap_gen`, a relative URL (`/page.html`)
    is reported and left out, as sitemap_gen.py did; otherwise the writer resolves it against the base URL."""
    tab = text.find("\t")
    if tab >= 0:
        url = text[:tab].strip()
        if not url or url[0] == "#":
            if url or not text.strip():
                return None
            fields.bad_line("fields but no URL at the start of the line; the line is skipped", number)
            return None
        rest = text[tab + 1 :].split("\t")
        if (
            len(rest) <= len(FIELDS) and text.find("=", tab) < 0
        ):  # positional only: as _fields_from reads them
            lastmod = rest[0].strip() or None
            changefreq = (rest[1].strip() or None) if len(rest) > 1 else None
            priority = (rest[2].strip() or None) if len(rest) > 2 else None
            if sitemap_gen and relative_dropped(url, fields.source, number, fields.report):
                return None
            return _record(TextRecord, (url, lastmod, changefreq, priority, fields.source, number))
        values = _fields_from(rest, fields, number, positional=True)
    else:
        line = text.strip()
        if not line or line.startswith("#"):
            return None
        url, *rest = line.split()
        if rest and all("=" in token for token in rest):
            values = _fields_from(rest, fields, number, positional=False)
        elif rest and sitemap_gen:
            values = _sitemap_gen_fields(url, rest, fields, number)
        elif rest and len(rest) <= len(FIELDS) and all(_field_of(t) or "=" in t for t in rest):
            values = _fields_from([t for t in rest if "=" in t], fields, number, positional=False)
            values.update((_field_of(t) or "", t) for t in rest if "=" not in t)
            values.pop("", None)
            fields.once(
                "space-fields",
                "fields separated by spaces, not TABs: each is read by what it looks like (a W3C date as "
                "lastmod, a changefreq word, a number from 0 to 1 as priority); noted once per file",
                number,
            )
        elif any("=" in token for token in rest):
            values = _sitemap_gen_fields(url, rest, fields, number)
        elif rest:  # a URL with raw spaces in it: encoded later
            url, values = line, {}
            fields.bad_line(
                f"the URL {line[:200]!r} has spaces in it; they are percent-encoded (%20). Separate "
                "fields with a TAB",
                number,
                Severity.WARNING,
            )
        else:
            values = {}
    if sitemap_gen and relative_dropped(url, fields.source, number, fields.report):
        return None
    return TextRecord(
        url, values.get("lastmod"), values.get("changefreq"), values.get("priority"), fields.source, number
    )


_record = tuple.__new__
"""`_record(TextRecord, fields)`: a `TextRecord` without the Python frame of its `__new__`."""
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def relative_dropped(url: str, source: str, line: int, report: DiagnosticHandler) -> bool:
    """True, with a warning naming `source` and `line`, when `url` is relative (`/page.html`): a URL list in
    sitemap_gen.py's form (its `<urllist>`, plain or news) holds full URLs, and sitemap_gen.py dropped any
    other with a warning (only `<url>` and access logs were joined to base_url)."""
    if _SCHEME.match(url) is not None:
        return False
    report(
        Diagnostic.make(
            "invalid-url",
            f"{url[:200]!r} is a relative URL: in sitemap_gen.py's form a list holds full URLs only "
            "(sitemap_gen.py dropped any not starting with base_url, with a warning), so it is left out; "
            "write the full URL",
            source=source,
            line=line,
            severity=Severity.WARNING,
        )
    )
    return True


def _sitemap_gen_fields(url: str, tokens: list[str], fields: FieldReporter, line: int) -> dict[str, str]:
    """The `key=value` tokens of a sitemap_gen.py list line; any other token is reported and ignored."""
    pairs = [t for t in tokens if "=" in t]
    for token in tokens:
        if "=" not in token:
            fields.report(
                Diagnostic.make(
                    "invalid-value",
                    f"{token!r} is not a key=value field (lastmod=, changefreq=, priority=); it is ignored "
                    "and the URL is the line's first token",
                    source=fields.source,
                    line=line,
                    url=url,
                )
            )
    return _fields_from(pairs, fields, line, positional=False)


def _read_list(
    stream: IO[bytes], fields: FieldReporter, encoding: str | None = None, sitemap_gen: bool = False
) -> Iterator[TextRecord]:
    for first, lines, _ in decoded_blocks(stream, fields, encoding):
        for number, text in enumerate(lines, start=first):
            record = _list_record(text, number, fields, sitemap_gen)
            if record is not None:
                yield record


def _fields_from(tokens: list[str], fields: FieldReporter, line: int, *, positional: bool) -> dict[str, str]:
    values: dict[str, str] = {}
    for position, token in enumerate(tokens):
        token = token.strip()
        if not token:
            continue
        key, eq, value = token.partition("=")
        key = key.strip().lower()
        if eq and key in FIELDS:
            values[key] = value
        elif positional and not (eq and key.isidentifier()) and position < len(FIELDS):
            values[FIELDS[position]] = token
        else:
            fields.bad_line(
                f"unknown field {token!r} (expected lastmod, changefreq, priority); ignored", line
            )
    return values


class _Feed:
    """The lines of a file's decoded blocks (see `decoded_blocks`) for the csv module, with the number of
    the last line it took (0 after `taken`)."""

    def __init__(self, blocks: Iterator[tuple[int, Sequence[str], bool]]) -> None:
        self.blocks = blocks
        self.lines: Sequence[str] = ()
        self.first = 0
        self.at = 0
        self.number = 0

    def next_block(self) -> tuple[int, Sequence[str]] | None:
        for first, lines, _ in self.blocks:
            if len(lines):
                return first, lines
        return None

    def load(self, first: int, lines: Sequence[str], at: int = 0) -> None:
        self.first, self.lines, self.at = first, lines, at

    def __iter__(self) -> _Feed:
        return self

    def __next__(self) -> str:
        if self.at >= len(self.lines):
            block = self.next_block()
            if block is None:
                raise StopIteration
            self.load(*block)
        at = self.at
        self.at = at + 1
        self.number = self.first + at
        return self.lines[at]


def _read_csv(
    stream: IO[bytes], fields: FieldReporter, encoding: str | None = None, *, columnar: bool = False
) -> Iterator[TextRecord | ColumnBlock]:
    """The records of a CSV file; with `columnar`, a block of lines without quotes (or CRs) that starts at a
    row's start comes as a `ColumnBlock` instead of its records."""
    feed = _Feed(decoded_blocks(stream, fields, encoding))
    block = feed.next_block()
    if block is None:
        return
    feed.load(*block)
    delimiter = _delimiter(block[1][0])
    reader = csv.reader(feed, delimiter=delimiter)
    header = next(reader, None)
    if header is None:
        return
    feed.number = 0
    columns = [_COLUMN_ALIASES.get(c, c) for c in (h.strip().lower() for h in header)]
    if "loc" not in columns:
        raise InputError(
            f"{fields.source}:1: the CSV header must name a 'loc' column (or 'url', 'address') "
            f"(found: {', '.join(header)})"
        )
    for column in columns:  # other columns are normal in exports; a near miss of a field is not
        near = difflib.get_close_matches(column, FIELDS, n=1, cutoff=0.7)
        if column not in ("loc", *FIELDS) and near:
            fields.bad_line(f"column {column!r} is not read; did you mean {near[0]!r}?", 1, Severity.WARNING)
    loc_index = columns.index("loc")
    field_at = {c: i for i, c in enumerate(columns) if c in FIELDS}  # the last of a name counts
    source = fields.source

    def read(row: list[str], number: int) -> TextRecord | None:
        if not row or all(not cell.strip() for cell in row):
            return None
        if len(row) > len(columns):
            fields.bad_line(
                f"{len(row)} cells where the header has {len(columns)}; the line is skipped", number
            )
            return None
        if len(row) <= loc_index:
            fields.bad_line("no cell for the 'loc' column; the line is skipped", number)
            return None
        # trailing optional cells left out, as many exports do: empty
        values = {c: row[i] for c, i in field_at.items() if i < len(row)}
        return TextRecord(
            row[loc_index].strip(),
            values.get("lastmod"),
            values.get("changefreq"),
            values.get("priority"),
            source,
            number,
        )

    limit = csv.field_size_limit()
    if columnar and feed.at < len(feed.lines):  # the rest of the header's block
        lines = feed.lines
        rest = lines.after(feed.at) if isinstance(lines, CanonicalLines) else lines[feed.at :]
        columns_block = _column_block(
            feed.first + feed.at, rest, delimiter, len(columns) - 1, loc_index, field_at, read, limit
        )
        if columns_block is not None:
            feed.at = len(feed.lines)
            yield columns_block
    while True:
        if columnar and feed.at >= len(feed.lines):  # at a row's start: the next block may go as columns
            block = feed.next_block()
            if block is None:
                return
            first, lines = block
            feed.load(first, lines)
            columns_block = _column_block(
                first, lines, delimiter, len(columns) - 1, loc_index, field_at, read, limit
            )
            if columns_block is not None:
                feed.at = len(lines)
                yield columns_block
                continue
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:  # a cell over the csv module's field limit, a NUL byte ...
            fields.bad_line(f"not a valid CSV row ({exc}); the line is skipped", feed.number)
            feed.number = 0
            continue
        number = feed.number
        feed.number = 0
        record = read(row, number)
        if record is not None:
            yield record


def _column_block(
    first: int,
    block: Sequence[str],
    delimiter: str,
    k: int,
    loc_index: int,
    field_at: dict[str, int],
    read: Callable[[list[str], int], TextRecord | None],
    limit: int,
) -> ColumnBlock | None:
    """The block of lines `block` (the first one numbered `first`) as columns, if it has neither quotes nor
    CRs nor a line over the csv module's field `limit`, and its usual row has the loc cell and at most `k`
    delimiters; else None (read by the csv module)."""
    canonical = block if isinstance(block, CanonicalLines) else None
    text = canonical.data.decode("ascii") if canonical is not None else "\n".join(block)
    if (canonical is None and ('"' in text or "\r" in text)) or _has_long_line(text, limit):
        return None  # (a canonical block has neither)
    n = len(block) if canonical is not None else text.count("\n") + 1
    # XML-escaped before the split (no valid cell has & or '), unless the escape would add delimiters
    escaped = delimiter != ";"
    cells_text = text
    if escaped and ("&" in text or "'" in text):
        cells_text = text.replace("&", "&amp;").replace("'", "&apos;")
    odd: set[int] = set()
    usual = k
    cells: list[str] | None = None
    if not k and delimiter not in text:
        cells = cells_text.split("\n")
    elif canonical is not None:
        if canonical.aligned(delimiter, k):  # every row k delimiters: the cells in row order
            cells = cells_text.replace("\n", delimiter).split(delimiter)
    elif text.count(delimiter) == n * k:
        # every row k delimiters, if each of the n - 1 row starts (marked by a LF) is a first cell
        cells = cells_text.replace("\n", delimiter + "\n").split(delimiter)
        starts = "".join(cells[0 :: k + 1])
        if starts.count("\n") == n - 1:
            cells[0 :: k + 1] = starts.split("\n")
        else:
            cells = None
    if cells is None:
        lines = cells_text.split("\n")
        counts = list(map(str.count, lines, itertools.repeat(delimiter)))
        usual = Counter(counts).most_common(1)[0][0]
        if usual > k or usual < loc_index:
            return None
        odd = set(itertools.compress(range(n), map(usual.__ne__, counts)))
        for i in odd:
            lines[i] = delimiter * usual  # an empty row in its place: the columns stay aligned
        cells = "\n".join(lines).replace(delimiter, "\n").split("\n") if usual else lines
    width = usual + 1
    empty: list[str | None] = [None] * n
    columns: list[Sequence[str | None]] = [cells[loc_index::width]]
    for name in FIELDS:
        at = field_at.get(name)
        columns.append(cells[at::width] if at is not None and at <= usual else empty)
    url_bytes = canonical is not None and (delimiter == "\t" or not canonical.tabs)
    return ColumnBlock(columns, odd, text, first, delimiter, read, escaped, url_bytes)


def _has_long_line(text: str, limit: int) -> bool:
    """Whether `text` may have a line longer than `limit` characters: true unless every aligned window of
    `limit // 2` characters holds a LF (a longer line would hold such a window whole)."""
    step = max(limit // 2, 1)
    return any(text.find("\n", p, p + step) < 0 for p in range(0, len(text) - step + 1, step))


_COLUMN_ALIASES = {"url": "loc", "address": "loc", "last modified": "lastmod", "last-modified": "lastmod"}
"""CSV header names other tools export (Screaming Frog's `Address`, a plain `URL`) for sitemapkit's."""


def _delimiter(header: str) -> str:
    """The CSV delimiter, from the header line: `,` unless `;` or a TAB splits it and `,` does not (the
    exports of spreadsheet programs in locales whose decimal mark is a comma use `;`)."""
    counts = {d: header.count(d) for d in (",", ";", "\t")}
    if counts[","]:
        return ","
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


def read_records(
    name: str, report: DiagnosticHandler, encoding: str | None = None, *, sitemap_gen: bool = False
) -> Iterator[TextRecord | UrlEntry]:
    """Stream the records of one input file (`-` for stdin): the fields as text, with file and line.
    `encoding`: the file's text encoding (default UTF-8); `sitemap_gen`: read a URL list's lines in
    sitemap_gen.py's form (see `_list_record`).

    Raises `InputError` if the file cannot be opened or read at all.
    """
    return cast(Iterator[TextRecord | UrlEntry], _read(name, report, encoding, sitemap_gen, columnar=False))


def _read(
    name: str, report: DiagnosticHandler, encoding: str | None, sitemap_gen: bool, *, columnar: bool
) -> Generator[TextRecord | UrlEntry | ImagedRecord | ColumnBlock, None, None]:
    """`read_records`; with `columnar`, a CSV file's blocks without quotes as `ColumnBlock`s and a JSONL line
    whose only extension is images given by their URLs as an `ImagedRecord`."""
    stream = open_input(name)
    fields = FieldReporter(shown_name(name), report)
    try:
        kind = input_kind(name)
        if kind == "list":
            yield from _read_list(stream, fields, encoding, sitemap_gen)
        elif kind == "csv":
            yield from _read_csv(stream, fields, encoding, columnar=columnar)
        else:
            yield from read_jsonl(stream, fields, encoding, columnar=columnar)
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise InputError(f"{fields.source}: cannot be read ({exc})") from None
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def is_url_list(name: str) -> bool:
    """True when `name` is read as a URL list (not `.csv` or `.jsonl`)."""
    return input_kind(name) == "list"


LineParser = Callable[[str, int], "TextRecord | None"]


class ListLineParser:
    """Parses one line of a URL list into a record (see `_list_record`), reporting against its file."""

    __slots__ = ("_fields", "sitemap_gen")

    def __init__(self, fields: FieldReporter, sitemap_gen: bool) -> None:
        self._fields = fields
        self.sitemap_gen = sitemap_gen

    def __call__(self, text: str, number: int) -> TextRecord | None:
        return _list_record(text, number, self._fields, self.sitemap_gen)

    @property
    def resolves_relative(self) -> bool:
        """Whether a relative URL (`/page`) is kept, for the writer to resolve against the base URL (not
        in sitemap_gen.py's form, where it is reported and left out)."""
        return not self.sitemap_gen


@contextmanager
def list_batches(
    name: str, report: DiagnosticHandler, encoding: str | None = None, *, sitemap_gen: bool = False
) -> Iterator[tuple[Iterator[tuple[int, Sequence[str], bool]], LineParser]]:
    """The lines of a URL list in decoded batches (see `decoded_blocks`), with the function that parses one
    line into a record, for writers that take the canonical lines inline (`SitemapWriter.add_lines`)."""
    stream = open_input(name)
    fields = FieldReporter(shown_name(name), report)

    parse = ListLineParser(fields, sitemap_gen)

    def batches() -> Iterator[tuple[int, Sequence[str], bool]]:
        try:
            yield from decoded_blocks(stream, fields, encoding)
        except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise InputError(f"{fields.source}: cannot be read ({exc})") from None

    try:
        yield batches(), parse
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


RECORD_BATCH = 10_000
"""How many records of a CSV or JSONL file `record_batches` hands over at once."""


class RecordBatch(list[TextRecord | UrlEntry | ImagedRecord]):
    """Records of a CSV or JSONL file, with the diagnostics its reading made, each held until the record it
    came before is added (`notes[i]`: those before record i; `notes[len(batch)]`: those after the last),
    so that they come out in the order the record-by-record path gives."""

    def __init__(self) -> None:
        super().__init__()
        self.notes: dict[int, list[Diagnostic]] = {}


@contextmanager
def record_batches(
    name: str, report: DiagnosticHandler, encoding: str | None = None
) -> Iterator[Iterator[RecordBatch | ColumnBlock]]:
    """The records of a CSV or JSONL file (see `read_records`) in batches of up to `RECORD_BATCH`, for
    writers that take a batch at once (`SitemapWriter.add_records`); a CSV file's blocks of lines without
    quotes come as `ColumnBlock`s (their bad rows reported to `report` as the writer reads them)."""
    batch: RecordBatch | ColumnBlock = RecordBatch()

    def note(diagnostic: Diagnostic) -> None:
        if isinstance(batch, ColumnBlock):
            report(diagnostic)  # a row of the block being written: in its place
        else:
            batch.notes.setdefault(len(batch), []).append(diagnostic)

    records = _read(name, note, encoding, False, columnar=True)

    def batches() -> Iterator[RecordBatch | ColumnBlock]:
        nonlocal batch
        gathered = batch = RecordBatch()
        for item in records:
            if isinstance(item, ColumnBlock):
                if gathered or gathered.notes:
                    yield gathered
                batch = item
                yield item
                gathered = batch = RecordBatch()
                continue
            gathered.append(item)
            if len(gathered) >= RECORD_BATCH:
                yield gathered
                gathered = batch = RecordBatch()
        if gathered or gathered.notes:
            yield gathered

    try:
        yield batches()
    finally:
        records.close()  # closes the file


def read_source(
    name: str, report: DiagnosticHandler, encoding: str | None = None, *, sitemap_gen: bool = False
) -> Iterator[UrlEntry]:
    """Stream the entries of one input file (`-` for stdin). Entries carry `sitemap=name` and `line`;
    a bad optional field is reported and dropped. See `read_records` for `encoding` and `sitemap_gen`."""
    for record in read_records(name, report, encoding, sitemap_gen=sitemap_gen):
        yield record if isinstance(record, UrlEntry) else entry_from_text(record, report)


def read_sources(names: Iterable[str], report: DiagnosticHandler) -> Iterator[UrlEntry]:
    """The entries of several inputs, one after another."""
    for name in names:
        yield from read_source(name, report)
