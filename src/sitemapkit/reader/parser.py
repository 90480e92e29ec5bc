"""The sitemap parser: bytes in, entries and diagnostics out, streaming, tolerant and safe.

`SitemapParser` takes raw bytes as they arrive (plain or gzip, detected by its magic bytes) and returns
`UrlEntry`/`IndexEntry` objects as soon as each is complete. It reads XML `<urlset>` and `<sitemapindex>`
documents with the image, video, news and hreflang extensions, text sitemaps, RSS and Atom feeds, and
reports every problem it meets as a `Diagnostic` (with a line) instead of raising.

Pipeline for one document, each stage streaming:
gzip inflation with a size cap (safety.py) -> UTF-8 normalisation (safety.py) -> format sniffing and
DOCTYPE screening (sniff.py) -> stray-`&` escaping (ampersands.py) -> lxml pull parsing (here, with runs of
plain `<url>` elements read without lxml: plain.py) -> per-entry reading and checks (entries.py, which hands
each extension element to the handler of its namespace: extensions.py and ext/). Text sitemaps are read by
text.py; recovery.py goes on after a fatal XML error.

This module keeps the byte stages and drives lxml. It composes the parser from those parts, each of which
owns its state: what they share is a `Context` (context.py: diagnostics, line mapping, namespaces, dates)
and a `Tally` (entries.py: the entries ready and their counts), passed to each.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Iterable, Iterator
from enum import IntEnum
from typing import Any, BinaryIO, Final, cast

from lxml import etree

from sitemapkit.core.constants import MAX_BYTES, NS_SITEMAP, NS_SITEMAP_LEGACY
from sitemapkit.core.diagnostics import Diagnostic, Severity
from sitemapkit.core.errors import UsageError
from sitemapkit.core.languages import LANGUAGE_CODES, REGION_CODES, hreflang_problem
from sitemapkit.core.model import URL_DRAFT, IndexEntry, UrlEntry
from sitemapkit.reader import feeds
from sitemapkit.reader.ampersands import StrayAmpersands
from sitemapkit.reader.context import MAX_PARSE_ERRORS, Context
from sitemapkit.reader.cut import OpenEntry, on_last_path, open_entry, root_closed
from sitemapkit.reader.entries import EntryReader, Tally
from sitemapkit.reader.ext.image import ImageHandler
from sitemapkit.reader.ext.news import NewsHandler
from sitemapkit.reader.ext.video import VideoHandler
from sitemapkit.reader.ext.xhtml import XhtmlHandler
from sitemapkit.reader.extensions import Extensions
from sitemapkit.reader.plain import PlainRuns
from sitemapkit.reader.recovery import After, History, Position, Recovery, Resume
from sitemapkit.reader.safety import (
    GZIP_MAGIC,
    PIECE,
    CompressionError,
    GzipInflater,
    Utf8Normalizer,
    detect_encoding,
    is_utf8_name,
    known_codec,
)
from sitemapkit.reader.sniff import WHITESPACE, Kind, Sniff, sniff_format
from sitemapkit.reader.text import TextLines
from sitemapkit.reader.values import split_tag

__all__ = [
    "LANGUAGE_CODES",
    "REGION_CODES",
    "Entry",
    "SitemapParser",
    "Stage",
    "hreflang_problem",
    "parse_bytes",
    "parse_file",
]

Entry = UrlEntry | IndexEntry
DiagnosticCallback = Callable[[Diagnostic], None]

NS_SITEMAP_HTTPS: Final = "https://www.sitemaps.org/schemas/sitemap/0.9"
CHUNK: Final = 64 * 1024
"""Bytes read at a time by `parse_file` and `parse_bytes`."""
DEFAULT_MAX_UNCOMPRESSED: Final = 100 * 1024 * 1024
_PIECE: Final = 4096
"""Compressed bytes fed at a time by `feed_pieces`."""

_E_URL, _E_SITEMAP, _E_ITEM, _E_ROOT, _E_OTHER = 0, 1, 2, 3, 4
_CUT_REFERENCE: Final = re.compile(rb"#?[A-Za-z0-9]{0,10}")
"""What follows an `&` cut with the body: a reference's start (after the `amp;` that escaped the `&`)."""


class Stage(IntEnum):
    """The stages a `SitemapParser` goes through, in order (SEEK and XML alternate)."""

    START = 0
    """Waiting for the first two bytes: gzip or not."""
    HEAD = 1
    """Waiting for the bytes that tell the encoding."""
    SNIFF = 2
    """Waiting for the bytes that tell the format."""
    XML = 3
    """Reading XML."""
    SEEK = 4
    """Seeking the next entry after a fatal XML error."""
    TEXT = 5
    """Reading a text sitemap."""
    SKIP = 6
    """Stopped: whatever comes is not read."""


class SitemapParser:
    """Incremental sitemap parser: feed raw bytes as they arrive, get entries as they complete.

    gzip is detected by its magic bytes (1f 8b), never by a name. The format (urlset, sitemapindex,
    text, RSS, Atom) is sniffed from the content. Problems are passed to `on_diagnostic`; the parser
    never raises on bad input. After `close()`:

    - `kind`: the format, or None when the input is not a sitemap;
    - `ok`: False when nothing sitemap-like could be read (HTML, empty body, unknown root, refused DOCTYPE,
      or a fatal error before the root element);
    - `truncated`: the input ended early, hit `max_uncompressed`, or broke off with a fatal error;
    - `compressed`, `uncompressed_bytes`, `count` (entries returned), `namespace` (of the root element).

    With `runs=True`, consecutive plain `<url>` entries come as one `UrlRun` (their columns) in the
    lists `feed` and `close` return, in their place; `count` still counts entries.
    """

    _ELISION = True
    """Read plain `<url>` elements without lxml (see plain.py); tests turn it off to compare."""
    _FAST_READ = True
    """Read common `<url>` elements from lxml in one pass (see `EntryReader.read_url`); tests turn it off to
    compare."""

    def __init__(
        self,
        source: str,
        *,
        on_diagnostic: DiagnosticCallback | None = None,
        max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED,
        runs: bool = False,
    ) -> None:
        self.source = source
        self.max_uncompressed = max_uncompressed
        self.kind: Kind | None = None
        self.ok = True
        self.truncated = False
        self.compressed = False
        self.uncompressed_bytes = 0
        self.namespace: str | None = None
        self._stage = Stage.START
        self._stopped = False
        self._closed = False
        # the parts, and what they share
        context = self._context = Context(source, on_diagnostic)
        self._report = context.report
        tally = self._tally = Tally()
        extensions = Extensions(
            context, ImageHandler(context), VideoHandler(context), NewsHandler(context), XhtmlHandler(context)
        )
        self._entries = EntryReader(context, tally, extensions, fast=self._FAST_READ)
        self._history = History()
        self._position = Position()
        self._recovery = Recovery(context, tally, self._history, self._position)
        self._plain = PlainRuns(
            context,
            tally,
            self._entries,
            self._history,
            runs=runs,
            feed_lxml=self._feed_lxml,
            reading=self._reading,
            tail_root=self._tail_root,
        )
        self._text = TextLines(context, tally, self._entries)
        # the byte stages
        self._head = b""
        self._inflater: GzipInflater | None = None
        self._normalizer: Utf8Normalizer | None = None
        self._norm_lines = 0
        self._encoding_reported = False
        self._sniff_buf = b""
        self._amp = StrayAmpersands()
        # the XML read by lxml
        self._xml: etree.XMLPullParser | None = None
        self._root: etree._Element | None = None
        self._last: etree._Element | None = None  # the last entry read, kept (cleared) until the next one
        self._tail_entry = False  # the last element lxml reported was a <url> child of the root
        self._root_local = ""
        self._root_start: bytes | None = None
        self._root_line = 1
        self._root_closed = False
        self._entry_names: tuple[str, ...] = ()
        self._tag_kinds: dict[str, int] = {}
        self._elide = False  # plain <url> elements may be read without lxml (see plain.py)

    @property
    def count(self) -> int:
        """Entries returned so far."""
        return self._tally.count

    @property
    def skipped(self) -> int:
        """Entries met in the document but not returned because of a problem (each was reported)."""
        return self._tally.seen - self._tally.count

    # -- public API ------------------------------------------------------------------------------------

    def feed(self, chunk: bytes) -> list[Entry]:
        """Take the next bytes of the document; return the entries they complete."""
        if self._closed:
            raise UsageError("feed() called after close()")
        if chunk and not self._stopped:
            self._raw(bytes(chunk), final=False)
        return self._take()

    def feed_pieces(self, chunk: bytes) -> Iterator[list[Entry]]:
        """Like `feed`, in bounded batches: compressed input is fed 4 KiB at a time, so that one chunk of a
        highly compressible body (deflate expands up to about 1,000 times) never yields more than a few MB
        of entries at once. Streaming callers consume each batch before the next is inflated."""
        if not (self.compressed or chunk[:2] == GZIP_MAGIC) or len(chunk) <= _PIECE:
            yield self.feed(chunk)
            return
        for start in range(0, len(chunk), _PIECE):
            yield self.feed(chunk[start : start + _PIECE])

    def close(self) -> list[Entry]:
        """Signal the end of the input; return the remaining entries. Flushes the last text line."""
        if self._closed:
            return []
        self._closed = True
        if not self._stopped:
            self._raw(b"", final=True)
        self._finish()
        return self._take()

    # -- plumbing ----------------------------------------------------------------------------------------

    def _take(self) -> list[Entry]:
        # holds a UrlRun only with runs=True (see the class)
        return self._tally.take()  # type: ignore[return-value]

    def _stop(self) -> None:
        self._stopped = True
        self.truncated = True

    def _end_cut(self) -> None:
        """Stop reading a body that broke off (a damaged gzip stream, the size cap), which was reported: the
        XML read so far is closed, so that the entries complete in it (the last one too, whose end lxml may
        hold back) are read, and the one it ends inside is not, as when a body ends early."""
        if self._stage in (Stage.XML, Stage.SEEK):
            self._recovery.cut_reported = True
            self._xml_bytes(b"", True)
        self._stop()

    def _raw(self, chunk: bytes, final: bool) -> None:
        """Stage 1: detect gzip, inflate, count and cap the uncompressed size."""
        if self._stage == Stage.START:
            self._head += chunk
            if len(self._head) < 2 and not final:
                return
            chunk, self._head = self._head, b""
            self._stage = Stage.HEAD
            if chunk.startswith(GZIP_MAGIC):
                self.compressed = True
                self._inflater = GzipInflater()
        if self._inflater is None:
            # in slices of at most PIECE bytes, as inflated data comes: the parser's copies of a slice
            # then stay in the CPU's cache (reading 256 KiB at once is about 10% slower)
            if len(chunk) <= PIECE:
                self._uncompressed(chunk, final)
                return
            last = (len(chunk) - 1) // PIECE * PIECE
            for at in range(0, last + 1, PIECE):
                self._uncompressed(chunk[at : at + PIECE], final and at == last)
                if self._stopped:
                    return
            return
        try:
            for piece in self._inflater.inflate(chunk):
                self._uncompressed(piece, False)
                if self._stopped:
                    return
            if final:
                self._inflater.finish()
        except CompressionError as exc:
            self._report(
                "compression-error",
                f"{str(exc).capitalize()}; entries before the damage were kept. Re-create the .gz file.",
            )
            self._end_cut()
            return
        if final:
            self._uncompressed(b"", True)

    def _uncompressed(self, data: bytes, final: bool) -> None:
        before = self.uncompressed_bytes
        total = before + len(data)
        if total > self.max_uncompressed:
            data = data[: max(0, self.max_uncompressed - before)]
            total = self.max_uncompressed
            if data:
                self.uncompressed_bytes = total
                self._decoded(data, False)
            if self.compressed:
                self._report(
                    "compression-error",
                    f"The data grows past {self.max_uncompressed:,} bytes when decompressed (a gzip bomb?); "
                    "reading stopped there.",
                )
            else:
                self._report(
                    "file-too-large",
                    f"The file is larger than the {self.max_uncompressed:,}-byte reading limit; "
                    "reading stopped there.",
                )
            self._end_cut()
            return
        self.uncompressed_bytes = total
        if before <= MAX_BYTES < total:
            self._report(
                "file-too-large",
                f"The sitemap is larger than {MAX_BYTES:,} bytes uncompressed; split it into several "
                "sitemaps listed in a sitemap index.",
            )
        self._decoded(data, final)

    def _decoded(self, data: bytes, final: bool) -> None:
        """Stage 2: pick the encoding from the first bytes, then normalise everything to UTF-8."""
        if self._normalizer is None:
            self._head += data
            head = self._head
            stripped = head.lstrip(WHITESPACE)
            if not final and (
                len(head) < 4 or (stripped.startswith(b"<?xml") and b"?>" not in head and len(head) < 1024)
            ):
                return
            self._head = b""
            codec, bom, _ = detect_encoding(head)
            self._normalizer = self._make_normalizer(codec)
            data = head[bom:]
        normalizer = self._normalizer
        out = normalizer.convert(data, final)
        if normalizer.bad_at is not None and not self._encoding_reported:
            self._encoding_reported = True
            line = self._norm_lines + out.count(b"\n", 0, normalizer.bad_at) + 1
            self._report(
                "encoding-error",
                "The file is not valid UTF-8 from here on; the bytes were read as Windows-1252. "
                "Save the file as UTF-8.",
                line,
            )
        self._norm_lines += out.count(b"\n")
        self._utf8(out, final)

    def _make_normalizer(self, codec: str) -> Utf8Normalizer:
        if is_utf8_name(codec):
            return Utf8Normalizer()
        known = known_codec(codec)
        if known is None:
            self._encoding_reported = True
            self._report(
                "encoding-error",
                f"The file declares the unknown encoding {codec!r}; it was read as UTF-8. "
                "Sitemaps must be UTF-8.",
                1,
            )
            return Utf8Normalizer()
        self._encoding_reported = True
        self._report(
            "encoding-error",
            f"The file is encoded as {codec.upper()}, not UTF-8; it was read as {codec.upper()}. "
            'Save it as UTF-8 (and declare encoding="UTF-8").',
            1,
        )
        return Utf8Normalizer(known)

    def _utf8(self, data: bytes, final: bool) -> None:
        """Stage 3: sniff the format, then hand the bytes to the XML or text reader."""
        stage = self._stage
        if stage == Stage.XML or stage == Stage.SEEK:
            self._xml_bytes(data, final)
        elif stage == Stage.TEXT:
            if not self._text.feed(data, final):
                self._stop()
        elif stage == Stage.HEAD or stage == Stage.SNIFF:
            self._stage = Stage.SNIFF
            self._sniff_buf += data
            sniff = sniff_format(self._sniff_buf, final)
            if sniff is None:
                return
            buf, self._sniff_buf = self._sniff_buf, b""
            if sniff.kind is None:
                self._report(sniff.code, sniff.problem or "Not a sitemap.", sniff.line)
                self.ok = False
                self._stage = Stage.SKIP
                return
            self.kind = sniff.kind
            self._entries.start(sniff.kind)
            if sniff.kind == "text":
                self._stage = Stage.TEXT
                if not self._text.feed(buf, final):
                    self._stop()
                return
            if sniff.skip:
                self._position.lines = buf.count(b"\n", 0, sniff.skip)
                self._report(
                    "leading-whitespace",
                    "Whitespace comes before the XML declaration <?xml ...?>, which must be the very first "
                    "thing in the file; remove it (the file was read anyway).",
                    1,
                )
                buf = buf[sniff.skip :]
            self._start_xml(sniff)
            self._xml_bytes(buf, final)

    # -- XML ---------------------------------------------------------------------------------------------

    def _start_xml(self, sniff: Sniff) -> None:
        assert sniff.root is not None and sniff.kind is not None
        local = sniff.root.rpartition(":")[2]
        prefix = sniff.root[: -len(local)]
        self._root_local = local
        self._root_start = sniff.root_start
        self._root_line = sniff.line or 1
        kind = sniff.kind
        entries: tuple[str, ...]
        if kind in ("urlset", "sitemapindex"):
            entries = ("url", "sitemap")
        elif kind == "rss":
            entries = ("item",)
        else:
            entries = ("entry",)
        self._recovery.start(sniff.root, sniff.root_start, self._root_line, entries)
        self._context.line_offset = self._position.lines
        self._entry_names = entries
        self._xml = self._new_lxml_parser(entries)
        if sniff.root_start is not None:
            self._set_namespace(sniff.namespace)
            self._elide = self._ELISION and kind == "urlset" and not prefix and URL_DRAFT is not None
            self._plain.start(self.namespace)
        self._stage = Stage.XML

    def _new_lxml_parser(self, entries: tuple[str, ...]) -> etree.XMLPullParser:
        tags = [f"{{*}}{e}" for e in entries] + [f"{{*}}{self._root_local}"]
        return etree.XMLPullParser(
            events=("end",),
            tag=tags,
            encoding="utf-8",
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            huge_tree=False,
            remove_comments=True,
            remove_pis=True,
        )

    def _set_namespace(self, ns: str | None) -> None:
        """Record the root namespace, report a wrong one, and prepare the tag tables."""
        self.namespace = ns or None
        kind = self.kind
        if kind in ("urlset", "sitemapindex"):
            root = f"<{self._root_local}>"
            if ns == NS_SITEMAP:
                pass
            elif ns == NS_SITEMAP_LEGACY:
                self._report(
                    "incorrect-namespace",
                    f"{root} uses the old Google namespace {NS_SITEMAP_LEGACY}; it was read, but use "
                    f'xmlns="{NS_SITEMAP}".',
                    self._root_line,
                    severity=Severity.WARNING,
                )
            elif ns == NS_SITEMAP_HTTPS:
                self._report(
                    "incorrect-namespace",
                    f"{root} uses the namespace {ns}; it must be {NS_SITEMAP} (http, not https). "
                    "It was read anyway.",
                    self._root_line,
                )
            elif not ns:
                self._report(
                    "incorrect-namespace",
                    f'{root} has no namespace; add xmlns="{NS_SITEMAP}". It was read anyway.',
                    self._root_line,
                )
            else:
                self._report(
                    "incorrect-namespace",
                    f"{root} has the namespace {ns}; it must be {NS_SITEMAP}. It was read anyway.",
                    self._root_line,
                )
        core_ns = frozenset({ns or "", NS_SITEMAP, NS_SITEMAP_LEGACY, NS_SITEMAP_HTTPS, ""})
        self._context.core_ns = core_ns
        self._entries.use_namespaces(ns, core_ns)

    def _xml_bytes(self, data: bytes, final: bool) -> None:
        fixed, strays = self._amp.fix(data, final)
        if final and strays and _CUT_REFERENCE.fullmatch(fixed, strays[-1] + 5) is not None:
            # a reference the end of the body cut (`&am`): the cut is reported, not a stray `&`
            strays = strays[:-1]
        if not strays and b"\x00" not in fixed:
            self._xml_piece(fixed, final)
            return
        # Deal with each stray `&` and NUL where it is in the stream, after lxml has read (and the
        # entries report) everything before it, so that what is reported, and in which order, never
        # depends on where the chunks were cut.
        marks = strays
        if b"\x00" in fixed:
            marks = sorted(strays + [m.start() for m in re.finditer(b"\x00", fixed)])
        # Runs are taken in bulk, so that hostile bytes cost linear time: the NULs right after one that
        # stopped the parser cannot start an entry, and the strays after the error cap are only counted;
        # either way they go to lxml with the next piece, as they would one by one.
        start = 0
        i, n = 0, len(marks)
        while i < n:
            offset = marks[i]
            self._xml_piece(fixed[start:offset], False)
            start = offset
            if self._stage != Stage.XML and self._stage != Stage.SEEK:
                return
            j = i + 1
            if fixed[offset] == 0:
                self._nul()
                if self._stage != Stage.XML:
                    while j < n and marks[j] == marks[j - 1] + 1 and fixed[marks[j]] == 0:
                        j += 1
            elif self._context.parse_errors > MAX_PARSE_ERRORS:
                if marks is strays:  # no NUL: every mark left is a stray, only counted now
                    j = n
                else:
                    while j < n and marks[j] == marks[j - 1] + 5 and fixed[marks[j]] != 0:
                        j += 1
                self._context.parse_errors += j - i
            else:
                self._context.parse_error(
                    "A raw '&' that starts no entity reference; write it as &amp; (it was read as '&').",
                    self._position.line(),
                    self._position.column(),
                )
            i = j
        self._xml_piece(fixed[start:], final)

    def _xml_piece(self, fixed: bytes, final: bool) -> None:
        """Hand escaped bytes to lxml, keeping count of their lines and offsets in the stream."""
        position = self._position
        first_line = position.line()
        base = position.pos
        line_start = position.last_newline + 1
        position.advance(fixed)
        self._pump(fixed, base, first_line, line_start, final)

    def _pump(self, data: bytes, base: int, first_line: int, line_start: int, final: bool) -> None:
        """Feed lxml; after a fatal error, seek the next entry and go on with a fresh parser.

        `base` is the offset of `data` in the (escaped) document stream, `first_line` the line it starts
        in and `line_start` the offset where that line starts.
        """
        while True:
            if self._stage == Stage.XML:
                if self._elide:
                    resume = self._plain.feed(data, base, first_line, line_start, final)
                else:
                    resume = self._feed_lxml(data, base, first_line, line_start, final)
                if resume is None:
                    return
                data, base, first_line, line_start = resume
            elif self._stage == Stage.SEEK:
                found = self._recovery.seek(data, base, final)
                if found is None:
                    return
                if isinstance(found, After):
                    self._after(found)
                    return
                data, base, first_line, line_start = found
                if not self._restart(first_line):
                    return
            else:
                return

    def _after(self, after: After) -> None:
        """Go on as `Recovery` says after a fatal error: seek the next entry, or stop."""
        if after == After.SEEK:
            self._stage = Stage.SEEK
            return
        self._stage = Stage.SKIP
        if after == After.END:
            self._root_closed = True
        elif after >= After.CUT:
            self.truncated = True
            if after == After.LOST:
                self.kind = None
                self.ok = False

    def _restart(self, line: int) -> bool:
        """A fresh lxml parser for the bytes from an entry's start tag in `line` on (after a fatal error);
        False when it cannot start."""
        assert self._root_start is not None
        self._history.restart()
        self._xml = self._new_lxml_parser(self._entry_names)
        self._root = None
        self._plain.restart()
        self._stage = Stage.XML
        # The new parser reads the root start tag, a line break, then the bytes from the entry on.
        self._context.line_offset = line - self._root_start.count(b"\n") - 2
        try:
            self._xml.feed(self._root_start + b"\n")
        except etree.XMLSyntaxError:  # pragma: no cover - this start tag was parsed once already
            self._stage = Stage.SKIP
            return False
        return True

    def _nul(self) -> None:
        """A NUL byte, never allowed in XML, is next in the stream: stop the parser here.

        libxml2 looks ahead for the ends of constructs with C string functions, which stop at a NUL, so
        when it reports one depends on where the chunks were cut; this makes it the same every time.
        """
        if self._stage != Stage.XML or self._xml is None:
            return
        self._xml = None
        self._history.clear()
        position = self._position
        line = position.line()
        line_start = position.last_newline + 1
        after = self._recovery.fatal(
            "Invalid character: Char 0x0 out of allowed range",
            line,
            position.column(),
            False,
            self._root_closed,
        )
        self._after(after)
        if after == After.SEEK:
            self._recovery.begin_seek(line, line_start)

    def _reading(self) -> bool:
        """Still reading XML with lxml (for `PlainRuns`)."""
        return self._stage == Stage.XML

    def _tail_root(self) -> etree._Element | None:
        """The root, when the last element lxml reported was a `<url>` child of it (for `PlainRuns`)."""
        return self._root if self._tail_entry else None

    def _feed_lxml(
        self,
        data: bytes,
        base: int,
        first_line: int,
        line_start: int,
        final: bool,
        fed: bytes | None = None,
    ) -> Resume | None:
        """Feed `data`; on a fatal error return where to seek the next entry from (see `Recovery.failed`).

        The bytes fed are kept in `History` from the last feed that completed an element on: libxml2
        holds back an unfinished construct, so an error it finds may lie in bytes fed earlier, and the
        seek must start there whatever the chunk boundaries were. `fed`, when given, is what lxml reads
        instead of `data`: the same bytes with plain elements replaced by comments of the same layout.
        """
        xml = self._xml
        if xml is None:
            return None
        if data:
            self._history.add(data, base, first_line, line_start)
        error: etree.XMLSyntaxError | None = None
        at_close = False
        progressed = False
        try:
            if data:
                xml.feed(data if fed is None else fed)
            if final:
                if data:
                    progressed = self._drain(xml)
                at_close = True
                root = xml.close()
                if self._root is None and self._tally.seen == 0:
                    self._root = root
                    self._set_namespace_late(root)
                self._root_closed = True
        except etree.XMLSyntaxError as exc:
            error = exc
        if error is not None and at_close:
            progressed = self._drain_cut(xml) or progressed
        else:
            progressed = self._drain(xml) or progressed
        if error is None:
            # lxml got past the start of the newest piece: an error cannot lie before it
            self._history.settle(progressed)
            return None
        self._xml = None
        after, resume = self._recovery.failed(error, at_close, self._root_closed)
        self._after(after)
        return resume

    def _drain(
        self, xml: etree.XMLPullParser, events: Iterable[tuple[str, etree._Element]] | None = None
    ) -> bool:
        """Read the entries lxml completed (or `events`, when given); say whether it reported any element."""
        kinds = self._tag_kinds
        tally = self._tally
        out = tally.items
        before = len(out)
        root = self._root
        last = self._last
        read_url = self._entries.read_url
        if events is None:
            events = cast("Iterator[tuple[str, etree._Element]]", xml.read_events())
        el: etree._Element | None = None
        tail = False
        for _, el in events:
            tail = False
            tag = el.tag
            kind = kinds.get(tag)
            if kind is None:
                kind = self._classify(tag)
            parent = el.getparent()
            if kind in (_E_URL, _E_SITEMAP):
                if parent is not root:
                    if not self._adopt_root(parent, el):
                        continue
                    root = self._root
                tail = kind == _E_URL
                entry: Entry | None = read_url(el) if kind == _E_URL else self._entries.read_sitemap(el)
            elif kind == _E_ITEM:
                entry = self._entries.read_feed_item(el)
            elif kind == _E_ROOT:
                if parent is None:
                    self._root_end(el)
                continue
            else:
                self._misplaced(el)
                continue
            if entry is not None:
                out.append(entry)
            el.clear()
            if parent is not None:
                prev = el.getprevious()
                while prev is not None:
                    if prev is not last and kind != _E_ITEM:
                        self._unexpected_child(prev)
                    del parent[0]
                    prev = el.getprevious()
            last = el
        self._last = last
        self._tail_entry = tail
        tally.count += len(out) - before
        return el is not None

    def _drain_cut(self, xml: etree.XMLPullParser) -> bool:
        """`_drain` after a `close()` that failed: the body ended early. lxml may report elements still open
        at the end as ended (lxml 6.2 does, 5.x does not), and may have held back the end of the last one
        that did end; only ends whose end tags are in the bytes received are read (see cut.py)."""
        events = cast("list[tuple[str, etree._Element]]", list(xml.read_events()))
        tail, first_line = self._history.tail()
        cut, seen = open_entry(tail, self.kind, first_line or self._position.line())
        self._recovery.cut = cut
        root_end = root_closed(tail, self._root_local)
        kept: list[tuple[str, etree._Element]] = []
        for event in events:
            el = event[1]
            kind = self._tag_kinds.get(el.tag)
            if kind is None:
                kind = self._classify(el.tag)
            if kind == _E_ROOT:
                if root_end or el.getparent() is not None:
                    kept.append(event)
                continue
            if kind in (_E_URL, _E_SITEMAP, _E_ITEM) and (cut is not None or not seen) and on_last_path(el):
                line = self._context.line(el)
                if cut is None or line is None or line >= cut.line:
                    if cut is None:  # its start tag came before the bytes kept: only lxml knows its line
                        self._recovery.cut = OpenEntry(
                            split_tag(el.tag)[1] if isinstance(el.tag, str) else "?", line or 0
                        )
                    continue  # open when the body ended: its end tag never came
            kept.append(event)
        return self._drain(xml, kept) or bool(events)

    def _classify(self, tag: Any) -> int:
        kind = _E_OTHER
        if isinstance(tag, str):
            ns, local = split_tag(tag)
            root_kind = self.kind
            if local == self._root_local:
                kind = _E_ROOT
            elif root_kind == "urlset" and local == "url" and ns in self._context.core_ns:
                kind = _E_URL
            elif root_kind == "sitemapindex" and local == "sitemap" and ns in self._context.core_ns:
                kind = _E_SITEMAP
            elif (root_kind == "rss" and local == "item") or (
                root_kind == "atom" and local == "entry" and ns in (feeds.NS_ATOM, feeds.NS_ATOM_03)
            ):
                kind = _E_ITEM
            self._tag_kinds[tag] = kind
        return kind

    def _adopt_root(self, parent: etree._Element | None, el: etree._Element) -> bool:
        """The first entry tells which element is the root; later ones must be its children."""
        if self._root is None and parent is not None and parent.getparent() is None:
            self._root = parent
            self._set_namespace_late(parent)
            return True
        self._misplaced(el)
        return False

    def _misplaced(self, el: etree._Element) -> None:
        local = split_tag(el.tag)[1] if isinstance(el.tag, str) else "?"
        parent = el.getparent()
        where = f"inside <{split_tag(parent.tag)[1]}>" if parent is not None else "here"
        self._report(
            "unknown-tag",
            f"<{local}> does not belong {where} in a {self.kind}; it was ignored.",
            self._context.line(el),
            severity=Severity.WARNING,
        )
        # its tail is text of its parent: kept, however the bytes arrive (lxml-stubs lack keep_tail)
        el.clear(keep_tail=True)  # type: ignore[call-arg]

    def _set_namespace_late(self, root: etree._Element) -> None:
        """Without a readable root start tag, the namespace is taken from lxml's root element."""
        if self._root_start is None and not self._context.core_ns:
            self._set_namespace(etree.QName(root).namespace)

    def _unexpected_child(self, el: etree._Element) -> None:
        tag = el.tag
        if not isinstance(tag, str):
            return
        if tag in self._tag_kinds:  # an entry, or reported when it ended
            return
        ns, local = split_tag(tag)
        expected = "url" if self.kind == "urlset" else "sitemap"
        if self._context.known(ns):
            self._report(
                "unknown-tag",
                f"<{local}> is not allowed directly inside <{self._root_local}>; only <{expected}> is. "
                "It was ignored.",
                self._context.line(el),
            )

    def _root_end(self, root: etree._Element) -> None:
        self._root_closed = True
        if self._root is None:
            self._root = root
            self._set_namespace_late(root)
        for child in root:
            if child.tag != root.tag:
                kind = self._tag_kinds.get(child.tag) if isinstance(child.tag, str) else None
                if kind not in (_E_URL, _E_SITEMAP, _E_ITEM) and self.kind in ("urlset", "sitemapindex"):
                    self._unexpected_child(child)

    # -- end ---------------------------------------------------------------------------------------------

    def _finish(self) -> None:
        if self.kind is None:
            self.ok = False
            return
        if self.kind != "text" and not self._root_closed:
            self.truncated = True
        if self._tally.seen == 0 and not self.truncated:
            what = {"sitemapindex": "sitemap index", "text": "text sitemap"}.get(self.kind, self.kind)
            listed = "sitemaps" if self.kind == "sitemapindex" else "URLs"
            self._report("empty-sitemap", f"The {what} lists no {listed}.")


def parse_bytes(
    data: bytes,
    source: str = "<bytes>",
    *,
    on_diagnostic: DiagnosticCallback | None = None,
    max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED,
) -> Iterator[Entry]:
    """Parse a whole document held in memory (plain or gzip); yield its entries."""
    stream = io.BytesIO(data)  # (shares `data`'s bytes until written to)
    yield from parse_stream(stream, source, on_diagnostic=on_diagnostic, max_uncompressed=max_uncompressed)


def parse_file(
    path: str | os.PathLike[str],
    *,
    source: str | None = None,
    on_diagnostic: DiagnosticCallback | None = None,
    max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED,
) -> Iterator[Entry]:
    """Parse a sitemap file (plain or gzip, any supported format), reading it in chunks; yield its entries."""
    with open(path, "rb") as f:
        name = source if source is not None else os.fspath(path)
        yield from parse_stream(f, name, on_diagnostic=on_diagnostic, max_uncompressed=max_uncompressed)


def parse_stream(
    stream: BinaryIO,
    source: str,
    *,
    on_diagnostic: DiagnosticCallback | None = None,
    max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED,
) -> Iterator[Entry]:
    """Parse a sitemap read from a binary stream (plain or gzip; standard input, a pipe), a chunk at a
    time; yield its entries. The stream is left open."""
    parser = SitemapParser(source, on_diagnostic=on_diagnostic, max_uncompressed=max_uncompressed)
    while chunk := stream.read(CHUNK):
        for batch in parser.feed_pieces(chunk):
            yield from batch
    yield from parser.close()
