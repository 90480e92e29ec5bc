"""RSS 2.0 (and 1.0) items and Atom 1.0/0.3 entries: where the page URL and its date are.

The parser hands each finished `<item>`/`<entry>` element here and does the URL and date checks itself,
so feeds are reported exactly like sitemaps.
"""

from __future__ import annotations

import datetime as dt
import email.utils
from collections.abc import Iterator
from typing import Final, NamedTuple, cast

from lxml import etree

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


def _line(el: etree._Element) -> int | None:
    line: int | None = el.sourceline  # type: ignore[assignment]
    return line


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
    """An RFC 822/2822 date (`Tue, 10 Jun 2003 04:00:00 GMT`) as an aware datetime, or None."""
    try:
        value = email.utils.parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if value.utcoffset() is None:
        value = value.replace(tzinfo=dt.UTC)
    return value
