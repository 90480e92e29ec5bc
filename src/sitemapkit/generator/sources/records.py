"""Text records: a URL and its optional fields exactly as an input file spells them, with file and line.

`entry_from_text` turns a record into a `UrlEntry`, reporting and dropping bad optional fields;
`with_extensions` gives an entry the extensions read beside it.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from sitemapkit.core.constants import CHANGEFREQS
from sitemapkit.core.dates import parse_w3c
from sitemapkit.core.diagnostics import Diagnostic, DiagnosticHandler, Severity
from sitemapkit.core.errors import InvalidDateError
from sitemapkit.core.model import Image, Lastmod, UrlEntry, new_image, new_url_entry


class TextRecord(NamedTuple):
    loc: str
    lastmod: str | None
    changefreq: str | None
    priority: str | None
    source: str
    line: int


class ImagedRecord(NamedTuple):
    """A `TextRecord` (its six fields first, in its order) with images given by their URLs alone: a JSONL line
    whose only extension is such images, read for the writer's columnar lane (`SitemapWriter.add_records`);
    `entry()` is the entry the line gives otherwise."""

    loc: str
    lastmod: str | None
    changefreq: str | None
    priority: str | None
    source: str
    line: int
    images: tuple[str, ...]

    def entry(self, report: DiagnosticHandler) -> UrlEntry:
        """The entry, as `entry_from_text` and the images give it (a bad field reported and dropped)."""
        record: TextRecord = tuple.__new__(TextRecord, self[:6])  # (without the frame of TextRecord.__new__)
        return entry_from_text(record, report, tuple(map(new_image, self.images)))


def entry_from_text(
    record: TextRecord, report: DiagnosticHandler, images: tuple[Image, ...] = ()
) -> UrlEntry:
    """The entry for `record` (with `images`); a bad lastmod, changefreq or priority is reported and
    dropped."""
    loc, raw_lastmod, raw_changefreq, raw_priority, source, line = record
    lastmod: Lastmod | None = None
    changefreq: str | None = None
    priority: float | None = None
    if raw_lastmod is not None and (value := raw_lastmod.strip()):
        try:
            lastmod = parse_w3c(value, allow_naive=True)
        except InvalidDateError as exc:
            _bad_date(exc, value, loc, source, line, report)
        else:
            if len(value) < 10:  # `2024` or `2024-05`: W3C Datetime, but the sitemap schema wants a day
                _period(lastmod, value, loc, source, line, report)
    if raw_changefreq is not None:
        changefreq = _CHANGEFREQ.get(raw_changefreq)
        if changefreq is None and (value := raw_changefreq.strip()):
            if value.lower() in CHANGEFREQS:
                changefreq = value.lower()
                if len(_CHANGEFREQ) < 1024:  # (`Daily`, ` weekly`: an input spells them one way)
                    _CHANGEFREQ[raw_changefreq] = changefreq
            else:
                _bad(
                    report,
                    "invalid-value",
                    f"changefreq {value!r} is not one of {', '.join(sorted(CHANGEFREQS))}",
                    loc,
                    source,
                    line,
                )
    if raw_priority is not None:
        priority = _PRIORITY.get(raw_priority)
        if priority is None and (value := raw_priority.strip()):
            try:
                number = float(value)
            except ValueError:
                number = -1.0
            if 0.0 <= number <= 1.0:
                priority = number
                if len(_PRIORITY) < 1024:
                    _PRIORITY[raw_priority] = number
            else:
                _bad(
                    report,
                    "invalid-value",
                    f"priority {value!r} is not a number from 0.0 to 1.0",
                    loc,
                    source,
                    line,
                )
    return new_url_entry(loc, lastmod, changefreq, priority, source, line, images)


# The changefreq words and priorities as inputs spell them (the words in lowercase, and any read lately),
# and their values.
_CHANGEFREQ = {word: word for word in CHANGEFREQS}
_PRIORITY: dict[str, float] = {}


def _bad(report: DiagnosticHandler, code: str, message: str, loc: str, source: str, line: int) -> None:
    report(Diagnostic.make(code, message + "; the field is dropped", source=source, line=line, url=loc))


def _bad_date(
    exc: InvalidDateError, value: str, loc: str, source: str, line: int, report: DiagnosticHandler
) -> None:
    reason = _reason(exc)
    message = f"lastmod {value!r} is not a W3C Datetime" + (f" ({reason})" if reason else "")
    _bad(report, "invalid-date", message, loc, source, line)


def _period(
    lastmod: Lastmod, value: str, loc: str, source: str, line: int, report: DiagnosticHandler
) -> None:
    period = "a year" if len(value) == 4 else "a month"
    report(
        Diagnostic.make(
            "invalid-date",
            f"lastmod {value!r} names {period}, which the sitemap schema does not accept; it is "
            f"written as its first day, {lastmod.isoformat()}",
            source=source,
            line=line,
            url=loc,
            severity=Severity.WARNING,
        )
    )


def _reason(exc: InvalidDateError) -> str:
    """The detail of a date error (`day is out of range for month`), or "" when it only repeats the rule."""
    text = str(exc)
    if " (" in text:
        return text.split(" (", 1)[1].rstrip(")")
    head = text.split(":", 1)[0]
    return "" if head == "not a W3C Datetime" else head


# A URL already in normal form: lowercase host, no port, a path, only RFC 3986 characters, no % or #.
# `normalize_url` returns such a URL unchanged unless it has dot segments (`/./`, `/../`), which the
# writer's bulk path checks for separately. (Possessive: a text that is not one fails without backtracking.)
CANONICAL_URL = re.compile(r"https?://[a-z0-9]++(?:[.-]++[a-z0-9]++)*+/[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*+")


def with_extensions(entry: UrlEntry, found: dict[str, Any]) -> UrlEntry:
    """`entry` with the extensions in `found` (images, videos, news, alternates) in place of its own."""
    return new_url_entry(
        entry.loc,
        entry.lastmod,
        entry.changefreq,
        entry.priority,
        entry.sitemap,
        entry.line,
        found.get("images", entry.images),
        entry.lastmod_text,
        videos=found.get("videos", entry.videos),
        news=found.get("news", entry.news),
        alternates=found.get("alternates", entry.alternates),
    )
