"""W3C Datetime (https://www.w3.org/TR/NOTE-datetime): parsing every form, writing the schema's forms."""

from __future__ import annotations

import datetime as dt
import re

from sitemapkit.core.errors import InvalidDateError
from sitemapkit.core.model import Lastmod

_W3C = re.compile(
    r"""
    (?P<year>\d{4})
    (?:-(?P<month>\d{2})
      (?:-(?P<day>\d{2})
        (?:[Tt](?P<hour>\d{2}):(?P<minute>\d{2})
          (?::(?P<second>\d{2})(?:\.(?P<fraction>\d+))?)?
          (?P<tz>[Zz]|[+-]\d{2}:\d{2})?
        )?
      )?
    )?
    """,
    re.VERBOSE,
)

# What sitemap.xsd's lastmod accepts: xsd:date or xsd:dateTime (seconds required, timezone optional in XSD
# but required by W3C Datetime, so we require it).
_SCHEMA_FORM = re.compile(r"\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))?")


def parse_w3c(text: str, *, allow_naive: bool = False) -> Lastmod:
    """Parse any W3C Datetime form: `YYYY`, `YYYY-MM`, `YYYY-MM-DD`, and date-times with minutes,
    seconds or fractions and a timezone (`Z` or `+hh:mm`).

    `YYYY` and `YYYY-MM` give the first day of the period. A time without a timezone is refused
    unless `allow_naive`, which returns a naive `datetime` (the caller decides what it means).

    >>> parse_w3c("2004-12-23T18:00:15+00:00")
    datetime.datetime(2004, 12, 23, 18, 0, 15, tzinfo=datetime.timezone.utc)
    >>> parse_w3c("2005-01")
    datetime.date(2005, 1, 1)
    """
    value = _PARSED.get(text)
    if value is not None:
        return value
    s = text.strip()
    value = _canonical(s)
    if value is None:
        return _parse(s, text, allow_naive)
    if len(_PARSED) >= _PARSED_MAX:
        _PARSED.clear()
    _PARSED[text] = value
    return value


# Texts the fast path parsed lately, and their values (immutable, so shared): inputs repeat their dates.
_PARSED: dict[str, Lastmod] = {}
_PARSED_MAX = 4096
# A date-time `fromisoformat` reads as `_parse` does: seconds optional, a fraction of up to 6 digits, `Z` or
# an offset of at most 14 hours (`fromisoformat` takes more) with minutes under 60.
_ISO_TIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,6})?)?"
    r"(?:Z|[+-](?:(?:0[0-9]|1[0-3]):[0-5][0-9]|14:00))"
)


def _canonical(s: str) -> Lastmod | None:
    """`s` parsed by the C parser of `fromisoformat` when it is a `YYYY-MM-DD` date or a date-time in the
    forms `_ISO_TIME` takes (checked here first: `fromisoformat` takes more forms than W3C Datetime, such as
    week dates); else None, for `_parse` to decide."""
    n = len(s)
    if n == 10:
        if s[4] == "-" == s[7] and s.isascii() and (s[:4] + s[5:7] + s[8:]).isdigit():
            try:
                return dt.date.fromisoformat(s)
            except ValueError:
                return None
        return None
    if n < 17 or s[10] != "T":
        return None
    if _ISO_TIME.fullmatch(s) is None:
        return None
    try:
        value = dt.datetime.fromisoformat(s)
        if s[:4] in ("0001", "9999"):
            value.astimezone(dt.UTC)  # an instant before year 1 or after 9999 in UTC cannot be compared
    except (ValueError, OverflowError):
        return None
    return value


def _parse(s: str, text: str, allow_naive: bool) -> Lastmod:
    m = _W3C.fullmatch(s)
    if m is None:
        raise InvalidDateError(f"not a W3C Datetime: {text!r}")
    try:
        year = int(m["year"])
        month = int(m["month"] or 1)
        day = int(m["day"] or 1)
        if m["hour"] is None:
            return dt.date(year, month, day)
        tz: dt.tzinfo | None = None
        if m["tz"] is None:
            if not allow_naive:
                raise InvalidDateError(f"date-time without a timezone: {text!r}")
        elif m["tz"] in ("Z", "z"):
            tz = dt.UTC
        else:
            sign = -1 if m["tz"][0] == "-" else 1
            hh, mm = int(m["tz"][1:3]), int(m["tz"][4:6])
            if mm > 59 or dt.timedelta(hours=hh, minutes=mm) > MAX_UTC_OFFSET:
                raise InvalidDateError(f"timezone offset beyond 14 hours: {text!r}")
            offset = dt.timedelta(hours=hh, minutes=mm) * sign
            tz = dt.UTC if not offset else dt.timezone(offset)
        fraction = m["fraction"] or ""
        micro = int((fraction + "000000")[:6]) if fraction else 0
        value = dt.datetime(
            year, month, day, int(m["hour"]), int(m["minute"]), int(m["second"] or 0), micro, tzinfo=tz
        )
        if tz is not None:
            value.astimezone(dt.UTC)  # an instant before year 1 or after 9999 in UTC cannot be compared
        return value
    except (ValueError, OverflowError) as exc:  # day 31 of April, hour 25, year 0, ...
        raise InvalidDateError(f"not a valid date: {text!r} ({exc})") from None


MAX_UTC_OFFSET = dt.timedelta(hours=14)
"""The largest timezone offset there is (W3C and ISO 8601 limit offsets to -14:00 .. +14:00)."""
CLOCK_SKEW = dt.timedelta(hours=1)
"""How far past "now" a date-time may lie before it counts as in the future (clocks disagree)."""


class FutureLimit:
    """Whether a lastmod lies in the future, judged against `now` (aware): a date-time more than
    `CLOCK_SKEW` after it, or a date whose midnight, even at UTC+14, is past that."""

    __slots__ = ("after", "day_after")

    def __init__(self, now: dt.datetime) -> None:
        now = now if now.utcoffset() is not None else now.replace(tzinfo=dt.UTC)
        self.after = now + CLOCK_SKEW
        self.day_after = (self.after + MAX_UTC_OFFSET).date()  # until UTC+14 reaches it

    def settled(self, value: Lastmod) -> bool:
        """Whether `value` is the usual lastmod, with nothing to fix or report: a date, or a date-time with a
        timezone, not in the future (exact types: a subclass is checked the long way)."""
        kind = type(value)
        if kind is dt.date:
            return value <= self.day_after
        return (
            kind is dt.datetime
            and isinstance(value, dt.datetime)  # (always, once the type is: for mypy)
            and value.utcoffset() is not None
            and value <= self.after
        )

    def __call__(self, value: Lastmod) -> bool:
        if isinstance(value, dt.datetime):
            aware = value if value.utcoffset() is not None else value.replace(tzinfo=dt.UTC)
            return aware > self.after
        return value > self.day_after


def schema_accepts(text: str) -> bool:
    """True if `text` is one of the forms the sitemap schema accepts: a date, or a date-time with
    seconds and a timezone. (`YYYY`, `YYYY-MM` and `hh:mm` are W3C forms that it rejects.)"""
    s = text.strip()
    if _SCHEMA_FORM.fullmatch(s) is None:
        return False
    try:
        parse_w3c(s)
    except InvalidDateError:
        return False
    return True


def is_naive(value: Lastmod) -> bool:
    """True for a `datetime` without a timezone."""
    return isinstance(value, dt.datetime) and value.utcoffset() is None


def to_aware(value: Lastmod) -> Lastmod:
    """Take a naive `datetime` as UTC; anything else is returned as is."""
    if isinstance(value, dt.datetime) and value.utcoffset() is None:
        return value.replace(tzinfo=dt.UTC)
    return value


def format_w3c(value: Lastmod) -> str:
    """Write a date as `YYYY-MM-DD`, a date-time as `YYYY-MM-DDThh:mm:ss[.ffffff]±hh:mm`.

    A naive date-time is written as UTC.

    >>> format_w3c(dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC))
    '2024-05-01T12:00:00+00:00'
    """
    if isinstance(value, dt.datetime):
        if value.utcoffset() is None:
            value = value.replace(tzinfo=dt.UTC)
        return value.isoformat()
    return value.isoformat()


def sort_key(value: Lastmod) -> dt.datetime:
    """A UTC instant to compare dates and date-times by (a date counts as its midnight UTC)."""
    if isinstance(value, dt.datetime):
        aware = value if value.utcoffset() is not None else value.replace(tzinfo=dt.UTC)
        try:
            return aware.astimezone(dt.UTC)
        except OverflowError:  # within a day of year 1 or 9999: clamp to the representable end
            edge = dt.datetime.min if aware.year == 1 else dt.datetime.max
            return edge.replace(tzinfo=dt.UTC)
    return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
