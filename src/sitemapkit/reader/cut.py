"""A body that ends early: which entry, if any, the bytes received leave open, read from the bytes alone.

When a document ends before its root's end tag, libxml2 reports an error at `close()`; since lxml 6.2 its
recovery then also closes every element still open and reports their end, as if the end tags had come. An
entry whose end tag never arrived (a download cut inside `<loc>`) would so be read with the cut text as its
URL. What the parser keeps must not depend on how a libxml2 release recovers: an entry is read only when its
closing tag is in the bytes received. This module tells, from the last bytes lxml was fed, which entry the
body ends inside and whether the root's end tag came; the parser drops the end events lxml reports at close
for elements the bytes leave open.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final, NamedTuple

from lxml import etree

ENTRY_NAMES: Final = {"urlset": "url", "sitemapindex": "sitemap", "rss": "item", "atom": "entry"}
"""The element of each XML format that is one entry."""

_NAME: Final = rb"[A-Za-z_][\w.\-]*:"


class OpenEntry(NamedTuple):
    """The entry a cut body ends inside: its name as written (with any prefix) and the line it opens in."""

    name: str
    line: int


@lru_cache(maxsize=16)
def _entry_tags(name: str) -> re.Pattern[bytes]:
    # a start tag (complete, empty-element, or cut before its `>`) or an end tag of the entry element
    return re.compile(
        rb"<(/?)((?:" + _NAME + rb")?" + re.escape(name.encode()) + rb")(?=[\s/>]|\Z)([^<>]*)(>?)"
    )


@lru_cache(maxsize=16)
def _root_end(local: str) -> re.Pattern[bytes]:
    return re.compile(rb"</(?:" + _NAME + rb")?" + re.escape(local.encode()) + rb"[ \t\r\n]*>")


def open_entry(tail: bytes, kind: str | None, first_line: int) -> tuple[OpenEntry | None, bool]:
    """The entry `tail` (the last bytes of the body, which start in line `first_line`) ends inside, and
    whether `tail` holds any tag of an entry at all.

    The body ends inside an entry when the last start tag of one (a start tag cut before its `>` counts) has
    no end tag of one after it; an end tag cut before its `>` closes nothing. When the start tag is not in
    `tail` but such a cut end tag is, the entry is given with line 0 (its line is not known)."""
    name = ENTRY_NAMES.get(kind or "")
    if name is None:
        return None, False
    start: re.Match[bytes] | None = None
    seen = closed = False
    for m in _entry_tags(name).finditer(tail):
        seen = True
        slash, _, rest, gt = m.groups()
        if slash:
            closed = closed or bool(gt)  # `</url` cut before its `>` closes nothing
        elif gt and rest.endswith(b"/"):  # <url/>: an empty entry, closed
            start, closed = None, True
        else:
            start, closed = m, False
    if closed or not seen:
        return None, seen
    if start is None:
        return OpenEntry(name, 0), True
    written = start.group(2).decode("utf-8", "replace")
    return OpenEntry(written, first_line + tail.count(b"\n", 0, start.start())), True


def root_closed(tail: bytes, local: str) -> bool:
    """Whether the root's end tag (`</urlset>`, with any prefix) is in `tail`."""
    return _root_end(local).search(tail) is not None


def on_last_path(el: etree._Element) -> bool:
    """Whether `el` is on the path of last children from the root: the only elements that can still be open
    where the document ends."""
    node: etree._Element | None = el
    while node is not None:
        if node.getnext() is not None:
            return False
        node = node.getparent()
    return True
