"""Text records: a URL and its optional fields exactly as an input file spells them, with file and line.

`entry_from_text` turns a record into a `UrlEntry`, reporting and dropping bad optional fields.
`render_canonical` is the generator's fast lane: when every field is already in the form the writer
would produce, the `<url>` element is built straight from the text, byte-identical to the slow path.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from sitemapkit.constants import CHANGEFREQS, MAX_URL_LENGTH
from sitemapkit.dates import parse_w3c
from sitemapkit.diagnostics import Diagnostic, DiagnosticHandler
from sitemapkit.errors import InvalidDateError
from sitemapkit.model import Lastmod, UrlEntry


class TextRecord(NamedTuple):
    loc: str
    lastmod: str | None
    changefreq: str | None
    priority: str | None
    source: str
    line: int


def entry_from_text(record: TextRecord, report: DiagnosticHandler) -> UrlEntry:
    """The entry for `record`; a bad lastmod, changefreq or priority is reported and dropped."""
    loc, raw_lastmod, raw_changefreq, raw_priority, source, line = record
    lastmod: Lastmod | None = None
    changefreq: str | None = None
    priority: float | None = None

    def bad(code: str, message: str) -> None:
        report(Diagnostic.make(code, message + "; the field is dropped", source=source, line=line, url=loc))

    if raw_lastmod is not None and (value := raw_lastmod.strip()):
        try:
            lastmod = parse_w3c(value, allow_naive=True)
        except InvalidDateError as exc:
            bad("invalid-date", f"lastmod {value!r} is not a W3C Datetime ({_reason(exc)})")
    if raw_changefreq is not None and (value := raw_changefreq.strip()):
        if value.lower() in CHANGEFREQS:
            changefreq = value.lower()
        else:
            bad("invalid-value", f"changefreq {value!r} is not one of {', '.join(sorted(CHANGEFREQS))}")
    if raw_priority is not None and (value := raw_priority.strip()):
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if 0.0 <= number <= 1.0:
            priority = number
        else:
            bad("invalid-value", f"priority {value!r} is not a number from 0.0 to 1.0")
    return UrlEntry(loc, lastmod, changefreq, priority, sitemap=source, line=line)


def _reason(exc: InvalidDateError) -> str:
    text = str(exc)
    return text.split(" (", 1)[1].rstrip(")") if " (" in text else text.split(":", 1)[0]


# -- the fast lane ---------------------------------------------------------------------------------

# A URL already in normal form: lowercase host, no port, a path, only RFC 3986 characters, no % or #.
_CANON_URL = re.compile(r"https?://[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?/[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*")
# A lastmod as the writer writes it: a date, or a date-time with seconds in UTC.
_CANON_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\+00:00)?")
_CANON_PRIORITY = frozenset(["0.0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1.0"])


class FastLane:
    """Builds `<url>` elements straight from canonical text, for URLs under `folder`.

    `render` returns None whenever anything needs the slow path (normalising, a diagnostic, another form).
    """

    __slots__ = ("_days", "folder")

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self._days: dict[str, bool] = {}

    def _valid_day(self, day: str) -> bool:
        ok = self._days.get(day)
        if ok is None:
            try:
                parse_w3c(day)
                ok = True
            except InvalidDateError:
                ok = False
            if len(self._days) < 100_000:
                self._days[day] = ok
        return ok

    def render(self, record: TextRecord) -> tuple[str, str] | None:
        """(`<url>` element, newest-key text) for a canonical record, or None."""
        loc, lastmod, changefreq, priority = record[0], record[1], record[2], record[3]
        if (
            not loc.startswith(self.folder)
            or len(loc) >= MAX_URL_LENGTH
            or _CANON_URL.fullmatch(loc) is None
            or (changefreq is not None and changefreq not in CHANGEFREQS)
            or (priority is not None and priority not in _CANON_PRIORITY)
        ):
            return None
        parts = ["<url><loc>", loc.replace("&", "&amp;").replace("'", "&apos;"), "</loc>"]
        key = ""
        if lastmod is not None:
            m = _CANON_DATE.fullmatch(lastmod)
            if m is None or not self._valid_day(m.group(1)):
                return None
            parts += ["<lastmod>", lastmod, "</lastmod>"]
            key = lastmod[:19] if len(lastmod) > 10 else lastmod + "T00:00:00"
        if changefreq is not None:
            parts += ["<changefreq>", changefreq, "</changefreq>"]
        if priority is not None:
            parts += ["<priority>", priority, "</priority>"]
        parts.append("</url>\n")
        return "".join(parts), key
