"""HTTP request headers the sitemap app reads: content-coding negotiation, entity tags, HTTP dates, Host.

Pure functions over strings (RFC 9110), tolerant of malformed input: a header that cannot be understood
counts as absent, never as an error.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import re

_CODING = re.compile(r"\s*([A-Za-z0-9!#$%&'*+.^_`|~-]+)\s*((?:;[^,]*)?)")
_QVALUE = re.compile(r";\s*q\s*=\s*([0-9](?:\.[0-9]{0,3})?)\s*(?:;|$)", re.IGNORECASE)
_ETAG = re.compile(r'\s*(?:W/)?("[\x21\x23-\x7e\x80-\xff]*")\s*(?:,|$)')
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?"
_HOST = re.compile(rf"(?:{_LABEL}(?:\.{_LABEL})*\.?|\[[0-9A-Fa-f:.]{{2,45}}\])(?::[0-9]{{1,5}})?")


def accepted_codings(header: str | None) -> dict[str, float]:
    """The `Accept-Encoding` header as a map of lower-case coding to q-value (`x-gzip` counts as gzip).

    >>> accepted_codings("gzip;q=0.5, br, identity;q=0")
    {'gzip': 0.5, 'br': 1.0, 'identity': 0.0}
    >>> accepted_codings("x-gzip")
    {'gzip': 1.0}
    """
    codings: dict[str, float] = {}
    for part in (header or "").split(","):
        m = _CODING.fullmatch(part)
        if m is None:
            continue
        name = m[1].lower()
        name = "gzip" if name == "x-gzip" else name
        q = 1.0
        if m[2]:
            qm = _QVALUE.search(m[2])
            if qm is None:
                continue  # a parameter we cannot read: skip the item rather than guess
            q = min(float(qm[1]), 1.0)
        codings[name] = max(q, codings.get(name, 0.0)) if name in codings else q
    return codings


def wants_gzip(header: str | None) -> bool:
    """Whether to send gzip: the client accepts it (by name or by `*`) with a q-value above 0 and at least
    that of `identity` when identity is named. No header means identity (RFC 9110 §12.5.3).

    >>> wants_gzip("gzip, deflate"), wants_gzip("gzip;q=0"), wants_gzip(None), wants_gzip("*")
    (True, False, False, True)
    >>> wants_gzip("gzip;q=0.2, identity;q=0.8"), wants_gzip("*;q=0, identity")
    (False, False)
    """
    codings = accepted_codings(header)
    gzip_q = codings.get("gzip", codings.get("*", 0.0))
    return gzip_q > 0.0 and gzip_q >= codings.get("identity", 0.0)


def etag_matches(header: str, etag: str) -> bool:
    """Whether an `If-None-Match` header matches `etag` (a quoted entity tag), by weak comparison:
    `W/"x"` matches `"x"`; `*` matches anything.

    >>> etag_matches('W/"abc", "def"', '"abc"'), etag_matches('"abc"', '"abd"'), etag_matches(" * ", '"x"')
    (True, False, True)
    """
    if header.strip() == "*":
        return True
    pos = 0
    while pos < len(header):
        m = _ETAG.match(header, pos)
        if m is None or m.end() == pos:
            return False
        if m[1] == etag:
            return True
        pos = m.end()
    return False


def parse_http_date(value: str | None) -> dt.datetime | None:
    """An HTTP-date (any of the three RFC 9110 forms) as an aware UTC datetime, or None if invalid.

    >>> parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT")
    datetime.datetime(1994, 11, 6, 8, 49, 37, tzinfo=datetime.timezone.utc)
    >>> parse_http_date("yesterday") is None
    True
    """
    if not value:
        return None
    try:
        parsed = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError, OverflowError, AttributeError):
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.astimezone(dt.UTC)


def format_http_date(value: dt.datetime) -> str:
    """An aware datetime as an IMF-fixdate.

    >>> format_http_date(dt.datetime(1994, 11, 6, 8, 49, 37, tzinfo=dt.UTC))
    'Sun, 06 Nov 1994 08:49:37 GMT'
    """
    return email.utils.format_datetime(value.astimezone(dt.UTC), usegmt=True)


def valid_host(value: str) -> bool:
    """Whether a `Host` header is a plain `host[:port]` (a name, IPv4 or bracketed IPv6 address).

    >>> valid_host("example.com:8080"), valid_host("[::1]:80"), valid_host("evil.com/x"), valid_host("a..b")
    (True, True, False, False)
    """
    return _HOST.fullmatch(value) is not None
