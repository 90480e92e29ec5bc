"""Recovery after a fatal XML error: where lxml stopped, reported with its line and column, then the next
entry sought in the bytes that follow, so one broken element does not lose the rest of the file; and what a
body cut short is told.

`Recovery` is the part of `SitemapParser` that does it. It finds the error in the bytes lxml was fed, which
`History` keeps, at the place in the stream that `Position` tracks; it says what the parser does next with
an `After`, and the parser (which owns its stages and its lxml parser) does it."""

from __future__ import annotations

import re
from enum import IntEnum
from typing import TYPE_CHECKING, Any, Final, cast

from lxml import etree

if TYPE_CHECKING:
    from sitemapkit.reader.context import Context
    from sitemapkit.reader.cut import OpenEntry
    from sitemapkit.reader.entries import Tally

_HOPELESS: Final = 1000
"""Fatal XML errors after which a file that gave fewer than one entry for every ten of them is not read
further: each costs a fresh lxml parser, so a file of broken entries would cost time for nothing."""
_PREV_MIN: Final = 1024
"""Fewest bytes kept from before the newest piece lxml completed an element in (see `History.trim`)."""
_HISTORY_MAX: Final = 4 * 1024 * 1024
"""Most bytes kept for finding a fatal XML error in (when no element completes for that long)."""

Resume = tuple[bytes, int, int, int]
"""Bytes to go on reading from, their offset in the (escaped) stream, their first line and where it starts."""
Piece = tuple[bytes, int, int, int, int]
"""Bytes fed to lxml: (bytes, offset, line, line start, characters from lxml's column 1 to the offset)."""


class After(IntEnum):
    """What the parser does after a fatal XML error (or after seeking the next entry)."""

    SEEK = 0
    """Seek the next entry in the bytes from the error on."""
    DONE = 1
    """Stop: the document was read (the error lies after the root's end, or only namespaces were wrong)."""
    END = 2
    """Stop: the seek found the root's end tag."""
    CUT = 3
    """Stop: the body was cut short, or is too broken to read further (truncated)."""
    LOST = 4
    """Stop: nothing sitemap-like came before the error (no root start tag, no entry): not a sitemap."""


_CONTINUATION = bytes(range(0x80, 0xC0))
"""The bytes that continue a UTF-8 character (a character is counted where its first byte is)."""


def _chars(data: bytes) -> int:
    """The characters of the UTF-8 `data`, each counted by its first byte: a character that a piece boundary
    cuts counts once, in the piece where it starts, however the bytes were fed."""
    return len(data) if data.isascii() else len(data.translate(None, _CONTINUATION))


def _char_bytes(data: bytes, pos: int, chars: int) -> int:
    """How many bytes the first `chars` characters of the UTF-8 `data[pos:]` take (at most the rest); bytes at
    `pos` that continue a character begun before it count as none (see `_chars`)."""
    if chars <= 0:
        return 0
    head = data[pos : pos + chars]
    if head.isascii():
        return len(head)
    start = pos
    while start < len(data) and data[start] in _CONTINUATION:
        start += 1
    return (
        start - pos + len(data[start : start + 4 * chars].decode("utf-8", "ignore")[:chars].encode("utf-8"))
    )


class Position:
    """Where the next escaped byte goes in the stream handed to lxml: its offset, the offset of the last
    line break before it, and its line."""

    __slots__ = ("last_newline", "lines", "pos")

    def __init__(self) -> None:
        self.pos = 0
        self.last_newline = -1
        self.lines = 0  # line breaks before it (the whitespace stripped before the XML declaration's too)

    def advance(self, data: bytes) -> None:
        """Count `data` as fed."""
        last_nl = data.rfind(b"\n")
        if last_nl >= 0:
            self.last_newline = self.pos + last_nl
            self.lines += data.count(b"\n")
        self.pos += len(data)

    def line(self) -> int:
        """The line the next escaped byte is in."""
        return self.lines + 1

    def column(self) -> int:
        """The column (in bytes) of the next escaped byte."""
        return self.pos - self.last_newline


class History:
    """The bytes fed to lxml from the last feed that completed an element on, with their places: libxml2
    holds back an unfinished construct, so an error it finds may lie in bytes fed earlier, and the seek must
    start there whatever the chunk boundaries were. Also the piece before them (`previous`, at least
    `_PREV_MIN` bytes), on which a body cut short is judged."""

    __slots__ = ("_bytes", "_chars", "_pieces", "_previous")

    def __init__(self) -> None:
        self._pieces: list[Piece] = []
        self._bytes = 0
        self._chars = 0  # characters from lxml's column 1 to the end of the last piece
        self._previous: Piece | None = None

    def add(self, data: bytes, base: int, first_line: int, line_start: int) -> None:
        """Keep `data`, fed to lxml at stream offset `base`, line `first_line` (starting at `line_start`)."""
        self._pieces.append((data, base, first_line, line_start, self._chars))
        self._bytes += len(data)
        # characters from the parser's column 1 to the end of `data`: lxml counts columns in those
        nl = data.rfind(b"\n")
        tail = data if nl < 0 else data[nl + 1 :]
        chars = _chars(tail)
        self._chars = chars if nl >= 0 else self._chars + chars

    def settle(self, progressed: bool) -> None:
        """After a feed without error: when lxml got past the start of the newest piece (`progressed`), an
        error cannot lie before it; keep only it (also when the pieces grow past `_HISTORY_MAX`)."""
        if len(self._pieces) > 1 and (progressed or self._bytes > _HISTORY_MAX):
            self.trim()

    def trim(self) -> None:
        """Keep only the newest piece, and in `previous` at least the last `_PREV_MIN` bytes before it."""
        history = self._pieces
        if len(history) < 2:
            return
        last = history[-2]
        if len(last[0]) < _PREV_MIN:  # small pieces: join the last ones
            pieces = [last]
            size = len(last[0])
            at = len(history) - 2
            while size < _PREV_MIN and at > 0:
                at -= 1
                pieces.insert(0, history[at])
                size += len(history[at][0])
            old = self._previous
            if size < _PREV_MIN and old is not None and old[1] + len(old[0]) == pieces[0][1]:
                pieces.insert(0, old)
            data = b"".join(piece[0] for piece in pieces)
            cut = max(0, len(data) - _PREV_MIN)
            first = pieces[0]
            last = (data[cut:], first[1] + cut, first[2] + data.count(b"\n", 0, cut), 0, 0)
        self._previous = last
        del history[:-1]
        self._bytes = len(history[0][0])

    def tail(self) -> tuple[bytes, int | None]:
        """The bytes kept, `previous` first, and the line they start in (None when none are kept)."""
        pieces = list(self._pieces)
        if self._previous is not None:
            pieces.insert(0, self._previous)
        return b"".join(piece[0] for piece in pieces), pieces[0][2] if pieces else None

    def take(self) -> tuple[bytes, Piece | None]:
        """The pieces kept, joined, and the first of them (None when none are); none are kept after."""
        history = self._pieces
        self.clear()
        if not history:
            return b"", None
        return b"".join(piece[0] for piece in history) if len(history) > 1 else history[0][0], history[0]

    def clear(self) -> None:
        """Keep nothing (lxml stopped)."""
        self._pieces = []
        self._bytes = 0
        self._previous = None

    def restart(self) -> None:
        """A new lxml parser starts reading: it counts columns from the start of a line."""
        self._chars = 0
        self._previous = None

    def chars(self) -> int:
        """Characters from lxml's column 1 to the end of the bytes fed."""
        return self._chars


class Recovery:
    """Reports a fatal XML error and seeks the next entry after it (see the module)."""

    def __init__(self, context: Context, tally: Tally, history: History, position: Position) -> None:
        self._context = context
        self._tally = tally
        self._history = history
        self._position = position
        self.cut: OpenEntry | None = None
        """At close, the entry a cut body ends inside (see cut.py), when known."""
        self.cut_reported = False
        """The body broke off for a reason reported already (a broken gzip stream, the size cap)."""
        self._fatals = 0  # fatal XML errors (each restarts lxml after it)
        self._root_local = ""
        self._root_start: bytes | None = None
        self._root_line = 1
        self._resume: re.Pattern[bytes] | None = None
        self._seek_buf = b""
        self._seek_line = 0
        self._seek_line_start = 0
        self._resumed_at = -1

    def start(self, root: str, root_start: bytes | None, root_line: int, entries: tuple[str, ...]) -> None:
        """Seek, after an error, the elements named `entries` (or the end of `root`, the root's qualified
        name) in a document whose root start tag `root_start` (if readable) is on line `root_line`."""
        local = root.rpartition(":")[2]
        prefix = root[: -len(local)]
        self._root_local = local
        self._root_start = root_start
        self._root_line = root_line
        alternatives = b"|".join(re.escape(e.encode()) for e in entries)
        self._resume = re.compile(
            rb"<(?:[A-Za-z_][\w.\-]*:)?(?:"
            + alternatives
            + rb")[\s/>]|</"
            + re.escape(prefix.encode())
            + re.escape(local.encode())
            + rb"\s*>"
        )

    def failed(
        self, exc: etree.XMLSyntaxError, at_close: bool, root_closed: bool
    ) -> tuple[After, Resume | None]:
        """Report a fatal lxml error; say what to do, and with SEEK the bytes from the error on (with their
        stream offset, line and line start) to seek the next entry in."""
        kept, first = self._history.take()
        position = self._position
        if first is not None:
            _, start, start_line, start_line_start, start_chars = first
        else:
            start, start_line, start_line_start = position.pos, position.line(), position.last_newline + 1
            start_chars = self._history.chars()
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
        line = (lineno or 1) + self._context.line_offset
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
        if last is not None and last.level != etree.ErrorLevels.FATAL and at_close and root_closed:
            # only namespace errors, in a complete document: it was read
            # (namespace errors do not stop libxml2: this one may lie before the bytes still kept)
            self._context.parse_error(f"The XML is not well-formed: {msg}.", line, parser_column)
            return After.DONE, None
        column = parser_column if before else at - line_start + 1
        if at_close and (line == position.line() or not root_closed):
            # an error at the end of the data: where libxml2 counts it depends on how the bytes were fed
            # (and where a cut body ends is where the bytes end, whatever libxml2 says)
            line = position.line()
            column = position.column()
        after = self.fatal(msg, line, column, at_close, root_closed)
        if after != After.SEEK:
            return after, None
        cut = min(len(kept), max(0, at - start))
        nl = kept.rfind(b"\n", 0, cut)
        resume_line = start_line + kept.count(b"\n", 0, cut)
        resume_line_start = start + nl + 1 if nl >= 0 else start_line_start
        self.begin_seek(resume_line, resume_line_start)
        return after, (kept[cut:], start + cut, resume_line, resume_line_start)

    def fatal(self, msg: str, line: int, column: int, at_close: bool, root_closed: bool) -> After:
        """Report a fatal XML error at `line` and `column`; say what to do."""
        parse_error = self._context.parse_error
        if root_closed:
            parse_error(
                f"After the end of the root element: {msg}. Remove what follows </{self._root_local}>.",
                line,
                column,
            )
            return After.DONE
        if at_close:
            if not self.cut_reported:
                parse_error(self._cut_message(line), line, column)
            return After.CUT
        parse_error(f"The XML is not well-formed: {msg}.", line, column)
        self._fatals += 1
        if self._fatals > _HOPELESS and self._fatals > 10 * self._tally.count:
            self._context.report(
                "parse-error",
                f"More than {_HOPELESS:,} fatal XML errors, and fewer than one entry read for every ten of "
                f"them: the file is too broken to read further (stopped at line {line}).",
                line,
            )
            return After.CUT
        if self._root_start is None:
            return After.LOST if self._tally.seen == 0 else After.CUT
        return After.SEEK

    def _cut_message(self, line: int) -> str:
        """What a body that ends before the root's end tag is told, saying where it ends and what was open."""
        cut = self.cut
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

    def begin_seek(self, line: int, line_start: int) -> None:
        """Seek from stream bytes that start in `line`, which starts at offset `line_start`."""
        self._seek_buf, self._seek_line, self._seek_line_start = b"", line, line_start

    def seek(self, data: bytes, base: int, final: bool) -> Resume | After | None:
        """Look for the next entry start tag (or the root end tag) after a fatal error in `data` (at stream
        offset `base`, after the bytes given before).

        Returns the bytes from an entry's start tag on, their stream offset, line and line start; END when
        the root's end tag comes first, CUT when the data ends (`final`) before either, else None (more data
        is needed)."""
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
            return After.CUT if final else None
        self._seek_buf = b""
        at = m.start()
        line = self._seek_line + buf.count(b"\n", 0, at)
        nl = buf.rfind(b"\n", 0, at)
        line_start = buf_base + nl + 1 if nl >= 0 else self._seek_line_start
        if m.group(0).startswith(b"</"):
            return After.END
        self._resumed_at = buf_base + at
        return buf[at:], buf_base + at, line, line_start
