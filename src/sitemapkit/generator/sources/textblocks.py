"""The ground the input readers stand on: opening an input (gzip, stdin), its file name in diagnostics,
its bytes decoded a megabyte at a time into batches of lines (`decoded_blocks`; `CanonicalLines` for a
batch that is all canonical URL characters), and `ColumnBlock`, a block of rows as columns for the writer's
columnar lane. `lists` (URL lists, CSV) and `jsonl` read their formats with these.
"""

from __future__ import annotations

import gzip
import io
import sys
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, cast, overload

from sitemapkit.core.constants import MAX_LINE_BYTES
from sitemapkit.core.diagnostics import Diagnostic, DiagnosticHandler, Severity, printable
from sitemapkit.core.errors import InputError
from sitemapkit.generator.sources.records import ImagedRecord, TextRecord

__all__ = [
    "FIELDS",
    "TOO_LONG",
    "CanonicalLines",
    "ColumnBlock",
    "FieldReporter",
    "bounded_lines",
    "decoded_blocks",
    "input_kind",
    "open_input",
    "shown_name",
    "stdin_kind",
    "stdin_stream",
]

FIELDS = ("lastmod", "changefreq", "priority")


def open_input(name: str) -> IO[bytes]:
    """Open an input file (or `-` for stdin) as bytes, decompressing gzip (detected by its magic bytes)."""
    if name == "-":
        stdin = stdin_stream()
        if stdin.peek(2)[:2] == b"\x1f\x8b":
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


_HEADER_NAMES = ("loc", "url", "address")
_SNIFF_MAX = 1 << 20
"""Most bytes of standard input read to tell what it holds (its first non-blank line is usually enough)."""


def stdin_kind() -> str:
    """What standard input holds, by its first bytes (gzip decompressed; they are given back to whoever
    reads it, see `stdin_stream`): "jsonl" when they start with `{`, "sitemap" with `<` (XML: a sitemap,
    an index or a feed), "csv" when the first line is a CSV header naming the URL column (`loc`, `url` or
    `address`, and no `://`), else "list". Blank lines and a BOM before are skipped; the first non-blank
    line is read whole however the writer on the other side of a pipe splits its writes. So
    `sitemapkit parse ... --format jsonl | sitemapkit generate -` reads JSONL."""
    stdin = _stdin()
    return "list" if stdin is None else stdin.sniff()


def stdin_stream() -> io.BufferedReader:
    """Standard input as a binary stream, with the bytes `stdin_kind` read in front of the rest (closing
    it leaves standard input open). Raises `InputError` if there is no standard input."""
    stdin = _stdin()
    if stdin is None:
        raise InputError("-: there is no standard input to read (it is closed)")
    stdin.sniff()
    return io.BufferedReader(_Prefixed(stdin.take(), stdin.raw))


class _Stdin:
    """Standard input's first bytes, read once (`sniff`) and given back once (`take`)."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.kind: str | None = None
        self._head = b""

    def sniff(self) -> str:
        if self.kind is None:
            read = getattr(self.raw, "read1", self.raw.read)  # (what is there, without waiting for more)
            head = b""
            try:
                while len(head) < _SNIFF_MAX and (chunk := read(1 << 16)):
                    head += chunk
                    start = _start(head)
                    if start[:1] in (b"{", b"<") or b"\n" in start:
                        break
            except OSError:
                pass  # reading reports it
            self._head = head
            self.kind = _kind_of(_start(head))
        return self.kind

    def take(self) -> bytes:
        head, self._head = self._head, b""
        return head


_STDIN: list[_Stdin] = []  # (the one for the current sys.stdin; tests replace sys.stdin)


def _stdin() -> _Stdin | None:
    raw = getattr(sys.stdin, "buffer", None)
    if raw is None:
        return None
    if not _STDIN or _STDIN[0].raw is not raw:
        _STDIN[:] = [_Stdin(raw)]
    return _STDIN[0]


class _Prefixed(io.RawIOBase):
    """`head`, then the rest of `raw` (left open when this is closed)."""

    def __init__(self, head: bytes, raw: IO[bytes]) -> None:
        self._head = head
        self._raw = raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._head:
            n = min(len(view), len(self._head))
            view[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        read = getattr(self._raw, "read1", self._raw.read)
        data = read(len(view))
        view[: len(data)] = data
        return len(data)


def _start(head: bytes) -> bytes:
    """The start of `head` as text: gzip decompressed (as far as it goes, member after member), a BOM and
    leading blanks left out."""
    if head[:2] == b"\x1f\x8b":
        out, data = b"", head
        try:
            while data:
                inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
                out += inflate.decompress(data, _SNIFF_MAX)
                data = inflate.unused_data if inflate.eof else b""
                if len(out) >= _SNIFF_MAX:
                    break
        except zlib.error:
            pass  # (reading reports it)
        head = out
    return head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")


def _kind_of(start: bytes) -> str:
    """What a stream whose text starts with `start` holds (see `stdin_kind`)."""
    if start[:1] == b"{":
        return "jsonl"
    if start[:1] == b"<":
        return "sitemap"
    line = start.split(b"\n", 1)[0]
    if b"://" not in line:  # (a URL list's first line holds a URL; a lone `loc` is a one-column header)
        first = line.decode("utf-8", "replace").lower()
        for delimiter in (",", ";", "\t"):
            if any(cell.strip().strip('"') in _HEADER_NAMES for cell in first.split(delimiter)):
                return "csv"
    return "list"


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


def shown_name(name: str) -> str:
    """How diagnostics name the input `name` (`-`: `<stdin>`)."""
    return "<stdin>" if name == "-" else name


def input_kind(name: str) -> str:
    """How an input file is read, by its name: "csv", "jsonl" (also .ndjson) or "list" (.gz aside);
    standard input (`-`) by its first bytes (see `stdin_kind`; XML counts as "list" here)."""
    if name == "-":
        kind = stdin_kind()
        return kind if kind in ("csv", "jsonl") else "list"
    base = name[:-3] if name.endswith(".gz") else name
    suffix = Path(base).suffix.lower()
    return {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}.get(suffix, "list")


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


# Bytes of a URL list in canonical form: RFC 3986 characters other than % and #, TAB and LF.
_CANONICAL_TEXT = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@/?\t\n"
_CANONICAL_BYTES = _CANONICAL_TEXT.encode("ascii")
_KEPT = b"\t\n.,;"  # what the canonical check keeps of a block: its separators and dots, counted apart
_CANONICAL_BYTES_BUT_SEPARATORS = bytes(set(_CANONICAL_BYTES) - set(_KEPT))


class CanonicalLines(Sequence[str]):
    """A batch of lines whose every byte is a canonical URL character or TAB (so ASCII, in any encoding
    that agrees with ASCII on them), kept as the bytes between its line feeds and decoded only when a
    line is asked for: `SitemapWriter.add_lines` writes such a batch straight from `data`.
    `marks`: the batch's TABs, LFs, dots, commas and semicolons alone, in order (see `aligned`)."""

    __slots__ = ("_count", "_lines", "_marks", "data", "dots", "tabs")

    def __init__(self, data: bytes, marks: bytes) -> None:
        self.data = data
        self._marks = marks
        self._count = marks.count(b"\n") + 1
        self.tabs = marks.count(b"\t")
        """How many TABs `data` holds."""
        self.dots = marks.count(b".")
        """How many dots `data` holds."""
        self._lines: list[str] | None = None

    def aligned(self, delimiter: str, k: int) -> bool:
        """Whether every line holds exactly `k` of `delimiter` (TAB, `,` or `;`): one pass over the marks,
        a few bytes a line, instead of over the lines."""
        mark = delimiter.encode("ascii")
        shape = self._marks.translate(None, bytes(set(_KEPT) - {mark[0], 10}))
        row = mark * k
        return len(shape) == self._count * (k + 1) - 1 and shape == (row + b"\n") * (self._count - 1) + row

    def after(self, count: int) -> CanonicalLines:
        """The lines from the `count`-th on (0 < `count` < the number of lines): a CSV block less its
        header."""
        data, marks = self.data, self._marks
        for _ in range(count):
            data, marks = data[data.index(b"\n") + 1 :], marks[marks.index(b"\n") + 1 :]
        return CanonicalLines(data, marks)

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
        # one pass drops every canonical byte but the separators and dots: canonical if nothing else is left,
        # and what is left is counted (the lanes need the counts and the shape of the lines) at no cost
        rest = data.translate(None, _CANONICAL_BYTES_BUT_SEPARATORS) if ascii_based else b"x"
        if not rest.translate(None, _KEPT):
            if data.endswith(b"\n"):
                data, rest = data[:-1], rest[:-1]
            canonical = CanonicalLines(data, rest)
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


class ColumnBlock:
    """Rows of a CSV file given as columns (`columns`: loc, lastmod, changefreq, priority, each a cell per
    row, None where the file has no such column; the cells XML-escaped if `escaped`), read from a block of
    lines without a quote or a CR, so that each line is one row and its cells are the text between the
    delimiters. `odd`: the rows whose number of cells differs from the block's usual one (a blank row, a
    short or a long one): `record(i)` reads those, and any other row the columnar lane does not take, as
    the csv module's row would be read, reporting a bad row where the record-by-record reading does.
    `url_bytes`: every loc cell holds only bytes a canonical URL may have (the block passed the canonical
    check, and no cell holds a TAB)."""

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
        "url_bytes",
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
        url_bytes: bool = False,
    ) -> None:
        self.columns = columns
        self.url_bytes = url_bytes
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
