"""Recovery after a fatal XML error: where lxml stopped, reported with its line and column, then the next
entry sought in the bytes that follow, so one broken element does not lose the rest of the file. A mixin of
`SitemapParser`."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final, cast

from lxml import etree

from sitemapkit.reader.stages import SEEK, SKIP, XML

_HOPELESS: Final = 1000
"""Fatal XML errors after which a file that gave fewer than one entry for every ten of them is not read
further: each costs a fresh lxml parser, so a file of broken entries would cost time for nothing."""

if TYPE_CHECKING:
    from sitemapkit.reader.cut import OpenEntry
    from sitemapkit.reader.sniff import Kind


def _char_bytes(data: bytes, pos: int, chars: int) -> int:
    """How many bytes the first `chars` characters of the UTF-8 `data[pos:]` take (at most the rest)."""
    if chars <= 0:
        return 0
    head = data[pos : pos + chars]
    if head.isascii():
        return len(head)
    return len(data[pos : pos + 4 * chars].decode("utf-8", "ignore")[:chars].encode("utf-8"))


class Recovery:
    """The part of `SitemapParser` that reports a fatal XML error and seeks the next entry after it."""

    # what it uses of the parser
    kind: Kind | None
    ok: bool
    truncated: bool
    _stage: int
    _xml: etree.XMLPullParser | None
    _history: list[tuple[bytes, int, int, int, int]]
    _history_bytes: int
    _history_prev: tuple[bytes, int, int, int, int] | None
    _cut: OpenEntry | None
    _quiet_cut: bool
    _stream_pos: int
    _last_newline: int
    _column_chars: int
    _line_offset: int
    _root_closed: bool
    _root_local: str
    _root_line: int
    _root_start: bytes | None
    _root: etree._Element | None
    _entries_seen: int
    _seek_buf: bytes
    _seek_line: int
    _seek_line_start: int
    _resume: re.Pattern[bytes] | None
    _resumed_at: int
    _entry_names: tuple[str, ...]
    _synced: bool
    _end_carry: str
    _trusted: bool
    _strip_lines: int
    _xml_lines: int
    count: int
    _fatals: int

    if TYPE_CHECKING:

        def _parse_error(self, message: str, line: int | None, column: int | None = None) -> None: ...

        def _report(self, code: str, message: str, line: int | None = None) -> None: ...

        def _new_lxml_parser(self, entries: tuple[str, ...]) -> etree.XMLPullParser: ...

    def _lxml_failed(self, exc: etree.XMLSyntaxError, at_close: bool) -> tuple[bytes, int, int, int] | None:
        """Report a fatal lxml error; return the bytes from the error on, with their stream offset, line
        and line start, to seek the next entry in (None when reading stops)."""
        history, self._history = self._history, []
        self._history_bytes = 0
        self._history_prev = None
        if history:
            _, start, start_line, start_line_start, start_chars = history[0]
            kept = b"".join(piece[0] for piece in history) if len(history) > 1 else history[0][0]
        else:
            start, start_line, start_line_start = (
                self._stream_pos,
                self._stream_line(),
                self._last_newline + 1,
            )
            start_chars = self._column_chars
            kept = b""
        # lxml raises the parser's first error; that may be one libxml2 went on after (an undeclared
        # namespace prefix), met before entries that were already read. The error that stopped the
        # parser is the newest one in the (thread's) error log.
        last = cast("Any", exc.error_log).last_error  # the stubs lack it
        if last is not None and last.level == etree.ErrorLevels.FATAL:
            msg, lineno, parser_column = str(last.message), last.line, last.column
        else:
            msg, lineno = str(exc.msg or exc), exc.lineno
            parser_column = exc.position[1] if exc.position else 1
        msg = msg.split(", line ")[0].rstrip(".")
        line = (lineno or 1) + self._line_offset
        before = False
        # Where the error is in the stream: lxml gives a line and a column in characters (counted from
        # where the parser started reading the line); find the line in `kept`, then the byte.
        if line > start_line:
            offset = 0
            for _ in range(line - start_line):
                nl = kept.find(b"\n", offset)
                if nl < 0:
                    break
                offset = nl + 1
            line_start = start + offset
            at = line_start + _char_bytes(kept, offset, parser_column - 1)
        elif line == start_line:
            line_start = start_line_start
            skip = parser_column - 1 - start_chars
            at = start + _char_bytes(kept, 0, skip) if skip > 0 else start
            before = skip < 0
        else:  # an error libxml2 went on after, in bytes no longer kept: its line and column are lxml's
            line_start = at = start
            before = True
        if last is not None and last.level != etree.ErrorLevels.FATAL and at_close and self._root_closed:
            # only namespace errors, in a complete document: it was read
            self._stage = SKIP
            # (namespace errors do not stop libxml2: this one may lie before the bytes still kept)
            self._parse_error(f"The XML is not well-formed: {msg}.", line, parser_column)
            return None
        column = parser_column if before else at - line_start + 1
        if at_close and (line == self._stream_line() or not self._root_closed):
            # an error at the end of the data: where libxml2 counts it depends on how the bytes were fed
            # (and where a cut body ends is where the bytes end, whatever libxml2 says)
            line = self._stream_line()
            column = self._stream_pos - self._last_newline
        if not self._fatal(msg, line, column, at_close):
            return None
        cut = min(len(kept), max(0, at - start))
        nl = kept.rfind(b"\n", 0, cut)
        return (
            kept[cut:],
            start + cut,
            start_line + kept.count(b"\n", 0, cut),
            start + nl + 1 if nl >= 0 else start_line_start,
        )

    def _fatal(self, msg: str, line: int, column: int, at_close: bool) -> bool:
        """Report a fatal XML error; say whether to seek the next entry (else reading stops)."""
        self._stage = SKIP
        if self._root_closed:
            self._parse_error(
                f"After the end of the root element: {msg}. Remove what follows </{self._root_local}>.",
                line,
                column,
            )
            return False
        if at_close:
            if not self._quiet_cut:  # else the cut was reported already
                self._parse_error(self._cut_message(line), line, column)
            self.truncated = True
            return False
        self._parse_error(f"The XML is not well-formed: {msg}.", line, column)
        self._fatals += 1
        if self._fatals > _HOPELESS and self._fatals > 10 * self.count:
            self._report(
                "parse-error",
                f"More than {_HOPELESS:,} fatal XML errors, and fewer than one entry read for every ten of "
                f"them: the file is too broken to read further (stopped at line {line}).",
                line,
            )
            self.truncated = True
            return False
        if self._root_start is None:
            if self._entries_seen == 0:
                self.kind = None
                self.ok = False
            self.truncated = True
            return False
        self._stage = SEEK
        return True

    def _cut_message(self, line: int) -> str:
        """What a body that ends before the root's end tag is told, saying where it ends and what was open."""
        cut = self._cut
        if cut is not None:
            opened = f" opened at line {cut.line}" if cut.line else ""
            return (
                f"The document ends inside <{cut.name}> (line {line}){opened}: the body was cut short; the "
                "unfinished entry was dropped."
            )
        return (
            f"The document ends inside <{self._root_local}> (line {line}) opened at line {self._root_line}, "
            f"before </{self._root_local}>: the body was cut short (or a tag is not closed); the complete "
            "entries before it were kept."
        )

    def _nul(self) -> None:
        """A NUL byte, never allowed in XML, is next in the stream: stop the parser here.

        libxml2 looks ahead for the ends of constructs with C string functions, which stop at a NUL, so
        when it reports one depends on where the chunks were cut; this makes it the same every time.
        """
        if self._stage != XML or self._xml is None:
            return
        self._xml = None
        self._history = []
        self._history_bytes = 0
        self._history_prev = None
        line = self._stream_line()
        line_start = self._last_newline + 1
        if self._fatal(
            "Invalid character: Char 0x0 out of allowed range", line, self._stream_pos - line_start + 1, False
        ):
            self._seek_buf, self._seek_line, self._seek_line_start = b"", line, line_start

    def _stream_line(self) -> int:
        """The line the next escaped byte is in."""
        return self._strip_lines + self._xml_lines + 1

    def _seek(self, data: bytes, base: int, final: bool) -> tuple[bytes, int, int, int] | None:
        """Look for the next entry start tag (or the root end tag) after a fatal error.

        Returns the bytes from that tag on, their stream offset, line and line start, with a new parser
        ready to read them.
        """
        assert self._resume is not None and self._root_start is not None
        buf = self._seek_buf + data if self._seek_buf else data
        buf_base = base - len(self._seek_buf)
        m = self._resume.search(buf, max(0, self._resumed_at + 1 - buf_base))
        if m is None:
            keep = len(buf) - min(len(buf), 64)
            nl = buf.rfind(b"\n", 0, keep)
            if nl >= 0:
                self._seek_line += buf.count(b"\n", 0, keep)
                self._seek_line_start = buf_base + nl + 1
            self._seek_buf = buf[keep:]
            if final:
                self.truncated = True
                self._stage = SKIP
            return None
        self._seek_buf = b""
        at = m.start()
        line = self._seek_line + buf.count(b"\n", 0, at)
        nl = buf.rfind(b"\n", 0, at)
        line_start = buf_base + nl + 1 if nl >= 0 else self._seek_line_start
        if m.group(0).startswith(b"</"):
            self._root_closed = True
            self._stage = SKIP
            return None
        self._resumed_at = buf_base + at
        self._column_chars = 0
        self._history_prev = None
        self._xml = self._new_lxml_parser(self._entry_names)
        self._root = None
        self._synced = False
        self._end_carry = ""
        self._trusted = True
        self._stage = XML
        # The new parser reads the root start tag, a line break, then the bytes from `at` on.
        self._line_offset = line - self._root_start.count(b"\n") - 2
        try:
            self._xml.feed(self._root_start + b"\n")
        except etree.XMLSyntaxError:  # pragma: no cover - this start tag was parsed once already
            self._stage = SKIP
            return None
        return buf[at:], buf_base + at, line, line_start
