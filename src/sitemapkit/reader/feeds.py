"""RSS 2.0 (and 1.0) items and Atom 1.0/0.3 entries: where the page URL and its date are.

The parser hands each finished `<item>`/`<entry>` element here and does the URL and date checks itself,
so feeds are reported exactly like sitemaps.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from typing import Final, NamedTuple, cast

from lxml import etree

from sitemapkit.core.dates import MAX_UTC_OFFSET

NS_ATOM: Final = "http://www.w3.org/2005/Atom"
NS_ATOM_03: Final = "http://purl.org/atom/ns#"
NS_DC: Final = "http://purl.org/dc/elements/1.1/"


class FeedItem(NamedTuple):
    """What one feed item says about its page: the link and the date text with its format."""

    link: str | None
    link_line: int | None
    date: str | None
    date_format: str  # "rfc822" or "w3c"
    date_tag: str


def _local(tag: object) -> str:
    if not isinstance(tag, str):
        return ""
    return tag.rpartition("}")[2]


def _text(el: etree._Element) -> str:
    return "".join(cast("Iterator[str]", el.itertext()))


_LINE_LIMIT: Final = 65535


def source_line(el: etree._Element) -> int | None:
    """The line an element starts on: lxml's `sourceline`, made right past line 65,535.

    libxml2 keeps an element's line in 16 bits; beyond 65,535 it reports the line where the first text
    after the element's start tag (its own text, a descendant's, else its tail) *ends*. The line breaks of
    that text are taken off again, which is exact unless markup between the start tag and that text (an
    attribute, a comment) spans lines. (An element with no text in or after it, like `<url></url>` at the
    very end of the bytes read so far, gets the line of an ancestor from libxml2, as it always did.)
    """
    line: int | None = el.sourceline  # type: ignore[assignment]
    if line is None or line < _LINE_LIMIT:
        return line
    node = el
    while True:
        text = node.text
        if text is not None:
            return line - text.count("\n")
        if len(node):
            node = node[0]
            continue
        tail = node.tail
        if tail is not None:
            return line - tail.count("\n")
        following = node.getnext()
        if following is None:
            return line
        node = following


_line = source_line


def rss_item(item: etree._Element) -> FeedItem:
    """An RSS `<item>`: `<link>` (else a permalink `<guid>`), and `<pubDate>` (else `dc:date`)."""
    link: str | None = None
    link_line: int | None = None
    guid: str | None = None
    guid_line: int | None = None
    date: str | None = None
    date_format = "rfc822"
    date_tag = "pubDate"
    for child in item:
        local = _local(child.tag)
        if local == "link" and link is None and not child.get("href"):
            link, link_line = _text(child), _line(child)
        elif local == "guid" and guid is None and child.get("isPermaLink", "true").strip() == "true":
            guid, guid_line = _text(child), _line(child)
        elif local == "pubDate" and date is None:
            date = _text(child)
        elif local == "date" and date is None and etree.QName(child).namespace == NS_DC:
            date, date_format, date_tag = _text(child), "w3c", "dc:date"
    if link is None and guid is not None:
        link, link_line = guid, guid_line
    return FeedItem(link, link_line, date, date_format, date_tag)


def atom_entry(entry: etree._Element) -> FeedItem:
    """An Atom `<entry>`: the `<link href>` with `rel="alternate"` or no rel, and `<updated>`
    (Atom 1.0) or `<modified>` (Atom 0.3), else `<published>`/`<issued>`."""
    link: str | None = None
    link_line: int | None = None
    dates: dict[str, str] = {}
    for child in entry:
        local = _local(child.tag)
        if local == "link" and link is None:
            rel = (child.get("rel") or "alternate").strip()
            href = child.get("href")
            if rel == "alternate" and href is not None:
                link, link_line = href, _line(child)
        elif local in ("updated", "modified", "published", "issued") and local not in dates:
            dates[local] = _text(child)
    for tag in ("updated", "modified", "published", "issued"):
        if tag in dates:
            return FeedItem(link, link_line, dates[tag], "w3c", tag)
    return FeedItem(link, link_line, None, "w3c", "updated")


def parse_rfc822(text: str) -> dt.datetime | None:
    """An RFC 822/2822 date (`Tue, 10 Jun 2003 04:00:00 GMT`) as an aware datetime, or None when it is not
    one: a date without a zone, or with one that is not a known name or an offset (`XYZ`), says nothing
    about the instant, so it is refused (reported, lastmod left out), as a zoneless `<lastmod>` is; the
    offset must lie within 14 hours. `-0000` (UTC, the sender's zone unknown) is UTC."""
    import email.utils  # only feeds need it: importing it costs more than a small sitemap takes to read

    text = text.strip()
    try:
        parts = email.utils.parsedate_tz(text)
        if parts is None or parts[9] is None or not _ZONE.search(text):
            return None
        value = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if value.utcoffset() is None:
        value = value.replace(tzinfo=dt.UTC)
    offset = value.utcoffset()
    if offset is not None and abs(offset) > MAX_UTC_OFFSET:
        return None
    return value


# The zone at the end: an offset, or a name RFC 822 (and common use) defines. `email.utils` takes an
# unknown name for UTC, and so would we without this check.
_ZONE = re.compile(r"(?:[+-]\d{4}|\b(?:UT|UTC|GMT|Z|[ECMP][SD]T)|\b[A-IK-Z])\s*$", re.IGNORECASE)
