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
import json
import re
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import contextmanager
from operator import itemgetter
from pathlib import Path
from typing import IO, Any, cast, overload

from sitemapkit.core.constants import CHANGEFREQS, MAX_LINE_BYTES
from sitemapkit.core.diagnostics import Diagnostic, DiagnosticHandler, Severity, printable
from sitemapkit.core.errors import InputError
from sitemapkit.core.model import Alternate, Image, UrlEntry
from sitemapkit.generator.sources.records import ImagedRecord, TextRecord, entry_from_text
from sitemapkit.reader.export import entry_from_dict

FIELDS = ("lastmod", "changefreq", "priority")


def open_input(name: str) -> IO[bytes]:
    """Open an input file (or `-` for stdin) as bytes, decompressing gzip (detected by its magic bytes)."""
    if name == "-":
        stdin = sys.stdin.buffer
        peek = getattr(stdin, "peek", None)
        if peek is not None and peek(2)[:2] == b"\x1f\x8b":
            return cast(IO[bytes], gzip.GzipFile(fileobj=stdin, mode="rb"))
        return stdin
    try:
        raw = open(name, "rb")  # noqa: SIM115 - returned; opened once, so a pipe loses nothing
        if raw.peek(2)[:2] == b"\x1f\x8b":
            return cast(IO[bytes], _OwningGzipFile(fileobj=raw, mode="rb"))
        return raw
    except IsADirectoryError:
        raise InputError(
            f"{name}: is a folder, not a URL list; to list a site folder's pages use --dir {name}"
        ) from None
    except OSError as exc:
        raise InputError(f"{name}: cannot open ({exc.strerror or exc})") from None


class _OwningGzipFile(gzip.GzipFile):
    """A GzipFile that closes the file it reads from."""

    def __init__(self, *, fileobj: IO[bytes], mode: str) -> None:
        super().__init__(fileobj=fileobj, mode=mode)
        self._owned = fileobj

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._owned.close()


def input_kind(name: str) -> str:
    """How an input file is read, by its name: "csv", "jsonl" (also .ndjson) or "list" (.gz aside)."""
    base = name[:-3] if name.endswith(".gz") else name
    suffix = Path(base).suffix.lower()
    return {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}.get(suffix, "list")


_ALTERNATES_KEY = re.compile(rb'"alternates"|\\u00[2-7][0-9A-Fa-f]')
"""What a JSONL file holding an `alternates` key has: the key, or an escaped ASCII character (a key may be
spelled `"\\u0061lternates"`, which JSON writers never do for a plain letter)."""


def jsonl_may_have_alternates(name: str) -> bool:
    """Whether the JSONL file `name` may give some URL alternates (hreflang), which the writer then completes
    into groups: found by a scan of its bytes; True where it cannot be told (stdin, a file that cannot
    be read: reading it reports why)."""
    if name == "-":
        return True
    tail = b""
    try:
        with open_input(name) as stream:
            while block := stream.read(1 << 20):
                data = tail + block
                if b'"alternates"' in data or (b"\\u00" in data and _ALTERNATES_KEY.search(data)):
                    return True
                tail = block[-11:]  # (a match the block's end cuts: within its last 11 bytes)
    except (OSError, EOFError, zlib.error, InputError):
        return True
    return False


class FieldReporter:
    """Reports bad lines of one input against its file name and line number."""

    def __init__(self, source: str, report: DiagnosticHandler) -> None:
        self.source = printable(source, None)  # a file name that is not UTF-8 shows its bytes as \xe9
        self.report = report

        self._noted: set[str] = set()

    def bad_line(self, message: str, line: int, severity: Severity | None = None) -> None:
        self.report(Diagnostic.make("bad-line", message, source=self.source, line=line, severity=severity))

    def once(self, key: str, message: str, line: int) -> None:
        """A warning about how the file is written, the first time `key` comes up in it."""
        if key not in self._noted:
            self._noted.add(key)
            self.bad_line(message, line, Severity.WARNING)


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


# Bytes of a URL list in canonical form: RFC 3986 characters other than % and #, TAB and LF.
_CANONICAL_TEXT = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@/?\t\n"
_CANONICAL_BYTES = _CANONICAL_TEXT.encode("ascii")
_CANONICAL_BYTES_BUT_SEPARATORS = bytes(set(_CANONICAL_BYTES) - set(b"\t\n."))


class CanonicalLines(Sequence[str]):
    """A batch of lines whose every byte is a canonical URL character or TAB (so ASCII, in any encoding
    that agrees with ASCII on them), kept as the bytes between its line feeds and decoded only when a
    line is asked for: `SitemapWriter.add_lines` writes such a batch straight from `data`."""

    __slots__ = ("_count", "_lines", "data", "dots", "tabs")

    def __init__(self, data: bytes, count: int, tabs: int, dots: int) -> None:
        self.data = data
        self.tabs = tabs
        """How many TABs `data` holds."""
        self.dots = dots
        """How many dots `data` holds."""
        self._lines: list[str] | None = None
        self._count = count

    def lines(self) -> list[str]:
        """The decoded lines."""
        if self._lines is None:
            self._lines = self.data.decode("ascii").split("\n")
        return self._lines

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        return self.lines()[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self.lines())


TOO_LONG = f"longer than {MAX_LINE_BYTES:,} bytes; the line is skipped"


def bounded_lines(stream: IO[bytes], limit: int = MAX_LINE_BYTES) -> Iterator[bytes | None]:
    """The lines of `stream` with their endings; a line longer than `limit` bytes is read past in pieces
    (never held whole) and given as None."""
    while line := stream.readline(limit + 1):
        if len(line) > limit and not line.endswith(b"\n"):
            while (rest := stream.readline(limit + 1)) and not rest.endswith(b"\n"):
                pass
            yield None
        else:
            yield line


def decoded_blocks(
    stream: IO[bytes], fields: FieldReporter, encoding: str | None = None
) -> Iterator[tuple[int, Sequence[str], bool]]:
    """Lines in batches, decoded a megabyte at a time: (number of the batch's first line, lines without
    line endings, whether every byte of the batch is a canonical URL character, TAB or LF).
    A UTF-8 BOM is removed; a line that is not in `encoding` (default UTF-8) is reported and skipped; so is
    a line longer than `MAX_LINE_BYTES`, which stands as an empty line in its batch (its bytes are dropped as
    they come)."""
    codec = encoding or "utf-8"
    number = 1
    carry = b""
    skipping = False  # inside a line that is too long, until its end
    first = True
    ascii_based = True
    while True:
        block = stream.read(MAX_LINE_BYTES)
        if skipping:
            if not block:
                return
            end = block.find(b"\n")
            if end < 0:
                continue
            block = block[end:]  # the long line's end: it stays as an empty line
            skipping = False
        data = carry + block
        if not block:
            if not data:
                return
            carry = b""
        else:
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                if len(data) > MAX_LINE_BYTES:
                    fields.bad_line(TOO_LONG, number)
                    carry, skipping = b"", True
                    continue
                carry = data
                continue
            data, carry = data[:cut], data[cut:]
        # Only the first line can be too long: it may start in `carry`; every other one lies in one block.
        end = data.find(b"\n")
        if (end if end >= 0 else len(data)) > MAX_LINE_BYTES:
            fields.bad_line(TOO_LONG, number)
            data = data[end:] if end >= 0 else b""
        if first:
            first = False
            if data.startswith(b"\xef\xbb\xbf") and codec.replace("_", "-") in ("utf-8", "utf8"):
                data = data[3:]
            try:
                ascii_based = _CANONICAL_TEXT.encode(codec, "replace") == _CANONICAL_BYTES
            except LookupError:
                ascii_based = False  # decode() below reports the unknown encoding
        # one pass drops every canonical byte but TAB, LF and ".": canonical if nothing else is left,
        # and what is left is counted (the bulk lane needs the counts) at no cost
        rest = data.translate(None, _CANONICAL_BYTES_BUT_SEPARATORS) if ascii_based else b"x"
        if not rest.translate(None, b"\t\n."):
            if data.endswith(b"\n"):
                data, rest = data[:-1], rest[:-1]
            canonical = CanonicalLines(data, rest.count(b"\n") + 1, rest.count(b"\t"), rest.count(b"."))
            yield number, canonical, True
            number += len(canonical)
            if not block:
                return
            continue
        try:
            text = data.decode(codec)
            lines = text.split("\n")
            if "\r" in text:
                lines = [line.rstrip("\r") for line in lines]
        except UnicodeDecodeError:
            lines = []
            for offset, raw in enumerate(data.split(b"\n")):
                try:
                    lines.append(raw.decode(codec).rstrip("\r"))
                except UnicodeDecodeError as exc:
                    name = "UTF-8" if codec == "utf-8" else codec
                    fields.bad_line(
                        f"not {name} (byte {exc.start + 1} of the line); the line is skipped", number + offset
                    )
                    lines.append("")
        if lines and not lines[-1] and data.endswith(b"\n"):
            lines.pop()
        yield number, lines, False
        number += len(lines)
        if not block:
            return


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
            return TextRecord(url, lastmod, changefreq, priority, fields.source, number)
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


class ColumnBlock:
    """Rows of a CSV file given as columns (`columns`: loc, lastmod, changefreq, priority, each a cell per
    row, None where the file has no such column; the cells XML-escaped if `escaped`), read from a block of
    lines without a quote or a CR, so that each line is one row and its cells are the text between the
    delimiters. `odd`: the rows whose number of cells differs from the block's usual one (a blank row, a
    short or a long one): `record(i)` reads those, and any other row the columnar lane does not take, as
    the csv module's row would be read, reporting a bad row where the record-by-record reading does."""

    __slots__ = (
        "_delimiter",
        "_lines",
        "_read",
        "_skipped",
        "_text",
        "columns",
        "escaped",
        "first",
        "notes",
        "odd",
    )

    def __init__(
        self,
        columns: list[Sequence[str | None]],
        odd: set[int],
        text: str,
        first: int,
        delimiter: str,
        read: Callable[[list[str], int], TextRecord | None],
        escaped: bool,
    ) -> None:
        self.columns = columns
        self.odd = odd
        self.first = first
        self.escaped = escaped
        self.notes: dict[int, list[Diagnostic]] = {}
        self._text = text
        self._lines: list[str] | None = None
        self._delimiter = delimiter
        self._read = read
        self._skipped = 0

    def record(self, index: int) -> TextRecord | ImagedRecord | None:
        """The record of row `index`, or None for a row that is skipped (blank, or reported)."""
        if self._lines is None:
            self._lines = self._text.split("\n")
        line = self._lines[index]
        record = self._read(line.split(self._delimiter) if line else [], self.first + index)
        if record is None:
            self._skipped += 1
        return record

    def __len__(self) -> int:
        """The rows read as records so far (all of them, less those `record` skipped)."""
        return len(self.columns[0]) - self._skipped


class JsonBlock(ColumnBlock):
    """A block of JSONL lines that are all plain objects (see `_plain_rows`) as columns (loc, lastmod,
    changefreq, priority as text, None where a line has none) and each line's image URLs (`images`, None if
    no line has any), for the writer's columnar lane; `record(i)` gives line i's record for the lines the
    lane leaves to the general path."""

    __slots__ = ("_source", "images")

    def __init__(
        self,
        columns: list[Sequence[str | None]],
        images: list[tuple[str, ...]] | None,
        first: int,
        source: str,
    ) -> None:
        super().__init__(columns, set(), "", first, ",", _no_read, escaped=False)
        self.images = images
        self._source = source

    def record(self, index: int) -> TextRecord | ImagedRecord:
        loc, lastmod, changefreq, priority = (column[index] for column in self.columns)
        record = TextRecord(cast(str, loc), lastmod, changefreq, priority, self._source, self.first + index)
        return record if self.images is None else ImagedRecord(*record, self.images[index])


def _no_read(row: list[str], number: int) -> None:  # pragma: no cover - JsonBlock.record reads the rows
    return None


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
        rest = feed.lines[feed.at :]
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
    text = block.data.decode("ascii") if isinstance(block, CanonicalLines) else "\n".join(block)
    if '"' in text or "\r" in text or _has_long_line(text, limit):
        return None
    n = text.count("\n") + 1
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
    return ColumnBlock(columns, odd, text, first, delimiter, read, escaped)


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


_EXTENSIONS = ("images", "videos", "news", "alternates")
_ITEM = {"images": "image", "videos": "video", "alternates": "alternate"}


def _read_jsonl(
    stream: IO[bytes], fields: FieldReporter, encoding: str | None = None, *, columnar: bool = False
) -> Iterator[TextRecord | UrlEntry | ImagedRecord | JsonBlock]:
    """JSONL objects in the shape `sitemapkit parse` prints: `loc`, `lastmod`, `changefreq`, `priority`, and
    `images`, `videos`, `news`, `alternates`. A line with extensions becomes a `UrlEntry`; a bad extension
    item (one image, one video, one alternate, the news entry) is reported and dropped, the rest kept.
    `sitemap` (where `parse` found the URL) is ignored. With `columnar`, a line whose only extension is images
    given by their URLs alone (`[{"loc": ...}]`) comes as an `ImagedRecord` (its fields read when written).

    A block of lines that are all plain objects of the usual keys is read column by column (`_plain_rows`),
    and with `columnar` comes as a `JsonBlock`; any other block line by line, as the same records and
    diagnostics."""
    warned: set[str] = set()
    for first, lines, _ in decoded_blocks(stream, fields, encoding):
        objs = _objects(lines)
        if objs is not None:
            block = _plain_rows(objs, first, fields.source, columnar)
            if block is not None and columnar:
                yield block
                continue
            if block is not None:
                yield from map(block.record, range(len(block.columns[0])))
                continue
        for index, text in enumerate(lines):
            number = first + index
            if objs is not None:
                obj = objs[index]
            elif not text.strip():
                continue
            else:
                try:
                    obj = json.loads(text)
                except json.JSONDecodeError as exc:
                    fields.bad_line(
                        f"not valid JSON ({exc.msg} at column {exc.colno}); the line is skipped", number
                    )
                    continue
                except RecursionError:
                    fields.bad_line("not valid JSON (nested too deeply); the line is skipped", number)
                    continue
            item = _jsonl_item(obj, number, fields, warned, columnar)
            if item is not None:
                yield item


_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _objects(lines: Sequence[str]) -> list[Any] | None:
    """The JSON value of each line, when each line is one value and nothing else (not even whitespace
    around it); else None (the lines are read one by one, which says what is wrong)."""
    try:
        found = [_SCAN(line, 0) for line in lines]
    except (StopIteration, ValueError, RecursionError):
        return None
    if list(map(itemgetter(1), found)) != list(map(len, lines)):
        return None
    return list(map(itemgetter(0), found))


_PLAIN_KEYS = frozenset({"loc", "sitemap", *FIELDS, "images"})


def _plain_rows(objs: list[Any], first: int, source: str, columnar: bool) -> JsonBlock | None:
    """A block of JSONL objects (the first on line `first`) read column by column, when each is an object of
    the usual keys with a string `loc` and (with `columnar`) images given by their URLs alone; else None
    (read object by object, by `_jsonl_item`, with the same records)."""
    if set(map(type, objs)) != {dict}:
        return None
    keys = set(itertools.chain.from_iterable(objs))
    if not keys <= _PLAIN_KEYS or (not columnar and "images" in keys):
        return None
    locs = [obj.get("loc") for obj in objs]
    if set(map(type, locs)) != {str}:
        return None
    columns: list[Sequence[str | None]] = []
    none: list[str | None] = [None] * len(objs)
    for name in FIELDS:
        if name not in keys:
            columns.append(none)
            continue
        column = [obj.get(name) for obj in objs]
        if not set(map(type, column)) <= _TEXT_OR_NONE:
            column = [None if value is None else str(value) for value in column]
        columns.append(column)
    if "images" not in keys:
        return JsonBlock([locs, *columns], None, first, source)
    # (a row without images too: an ImagedRecord gives the entry its TextRecord gives)
    images = [_image_urls(value) if value else () for value in (obj.get("images") for obj in objs)]
    if None in images or not all(loc for loc, urls in zip(locs, images, strict=True) if urls):
        return None  # an image given otherwise, or images of an empty loc: read one by one
    return JsonBlock([locs, *columns], cast("list[tuple[str, ...]]", images), first, source)


_TEXT_OR_NONE = frozenset({str, type(None)})


def _jsonl_item(
    obj: Any, number: int, fields: FieldReporter, warned: set[str], columnar: bool
) -> TextRecord | UrlEntry | ImagedRecord | None:
    """The record of one JSONL object (line `number`), or None for one that is skipped (reported)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("loc"), str):
        fields.bad_line("expected an object with a string 'loc'; the line is skipped", number)
        return None
    for key in obj.keys() - {"loc", "sitemap", *FIELDS, *_EXTENSIONS} - warned:
        warned.add(key)
        fields.bad_line(f"unknown key {key!r} ignored (reported once per file)", number)
    values = {k: str(obj[k]) for k in FIELDS if obj.get(k) is not None}
    record = TextRecord(
        obj["loc"],
        values.get("lastmod"),
        values.get("changefreq"),
        values.get("priority"),
        fields.source,
        number,
    )
    extensions = {k: obj[k] for k in _EXTENSIONS if obj.get(k)}
    if not extensions:
        return record
    if columnar and len(extensions) == 1 and record.loc:
        images = _image_urls(extensions.get("images"))
        if images is not None:
            return ImagedRecord(*record, images)
    entry = entry_from_text(record, fields.report)
    # each extension, and each item of a list, on its own
    found = {key: read_extension(entry.loc, key, value, fields, number) for key, value in extensions.items()}
    return with_extensions(entry, found)


def _image_urls(value: Any) -> tuple[str, ...] | None:
    """The URLs of a JSONL line's `images` when each is given by its URL alone (`{"loc": "..."}`, as
    `read_extension` takes them without a check), else None."""
    if type(value) is not list:
        return None
    if len(value) == 1:  # (the usual case)
        item = value[0]
        if type(item) is dict and len(item) == 1:
            url = item.get("loc")
            if type(url) is str and url:
                return (url,)
        return None
    urls: list[str] = []
    for item in value:
        if type(item) is not dict or len(item) != 1:
            return None
        url = item.get("loc")
        if type(url) is not str or not url:
            return None
        urls.append(url)
    return tuple(urls)


def with_extensions(entry: UrlEntry, found: dict[str, Any]) -> UrlEntry:
    """`entry` with the extensions in `found` (images, videos, news, alternates) in place of its own."""
    return UrlEntry(  # positional: several times cheaper than dataclasses.replace
        entry.loc,
        entry.lastmod,
        entry.changefreq,
        entry.priority,
        found.get("images", entry.images),
        found.get("videos", entry.videos),
        found.get("news", entry.news),
        found.get("alternates", entry.alternates),
        entry.sitemap,
        entry.line,
        entry.lastmod_text,
    )


def read_extension(
    loc: str, key: str, value: Any, fields: FieldReporter, number: int, unit: str = "line"
) -> Any:
    """One extension of a record (`images`, `videos`, `news`, `alternates`) at `number` (a JSONL line, a
    Parquet row: `unit`), read item by item: a bad item is reported and dropped, the others kept (a value
    of the wrong kind drops the extension)."""
    if key == "news" or not isinstance(value, list):
        try:
            parsed = entry_from_dict({"loc": loc, key: value})
        except InputError as exc:
            what = f"news entry of this {unit} is" if key == "news" else f"{key} of this {unit} are"
            fields.bad_line(f"{exc}; the {what} dropped", number)
            return None if key == "news" else ()
        return getattr(parsed, key)
    kept: list[Any] = []
    for i, item in enumerate(value):
        if loc and type(item) is dict:  # the common items, as entry_from_dict reads them, without it
            if key == "images" and len(item) == 1:
                image = item.get("loc")
                if type(image) is str and image:
                    kept.append(Image(image))
                    continue
            elif key == "alternates":
                hreflang, href = item.get("hreflang"), item.get("href")
                if type(hreflang) is str and type(href) is str:
                    kept.append(Alternate(hreflang, href))
                    continue
        try:
            parsed = entry_from_dict({"loc": loc, key: [item]})
        except InputError as exc:
            message = str(exc).replace(f"{key}[0]", f"{key}[{i}]")
            fields.bad_line(f"{message}; this {_ITEM[key]} is dropped (the others are kept)", number)
            continue
        kept.append(getattr(parsed, key)[0])
    return tuple(kept)


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
    fields = FieldReporter("<stdin>" if name == "-" else name, report)
    try:
        kind = input_kind(name)
        if kind == "list":
            yield from _read_list(stream, fields, encoding, sitemap_gen)
        elif kind == "csv":
            yield from _read_csv(stream, fields, encoding, columnar=columnar)
        else:
            yield from _read_jsonl(stream, fields, encoding, columnar=columnar)
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
    fields = FieldReporter("<stdin>" if name == "-" else name, report)

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
