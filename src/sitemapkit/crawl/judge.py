"""One judgement of a page, shared by the crawl (what it lists) and the audit (what it flags): what a page
says about itself in its headers and HTML (`read_signals`), whether it is indexable and why not
(`indexability`), and whether it is a soft 404 (`says_not_found`, `is_soft_404`). A page the audit would
flag for itself is a page the crawl does not list.

The reasons are the crawl's (`sitemapkit.crawl.policy.REASONS`); `AUDIT_CODES` names the audit finding
each one is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sitemapkit.core.page import (
    PageMeta,
    link_header_canonical,
    meta_robots,
    resolve_link,
    x_robots_tag,
)

HTML_TYPES = ("text/html", "application/xhtml+xml")

SOFT_404 = re.compile(
    r"\b(?:not\s+found|404|page\s+(?:does\s+not|doesn't|cannot\s+be|can't\s+be)\s+(?:exist|be\s+found|found)"
    r"|no\s+longer\s+(?:exists|available)|page\s+(?:is\s+)?missing|nicht\s+gefunden|introuvable"
    r"|no\s+encontrad[ao])\b",
    re.IGNORECASE,
)
"""Titles and headings of pages that say they are not there."""
SOFT_404_RATIO = 0.5
"""A soft 404 also has a body smaller than this share of the site's median page..."""
SOFT_404_MIN_PAGES = 5
"""... when there are this many pages to take a median of (fewer: the title or heading alone decides)."""

AUDIT_CODES: dict[str, str] = {
    "status-4xx": "url-error",
    "status-5xx": "url-error",
    "error": "url-error",
    "noindex": "url-noindex",
    "not-html": "url-not-html",
    "canonical": "url-canonicalized",
    "redirect": "url-redirect",
    "soft-404": "url-soft-404",
}
"""The audit finding for each reason `indexability` gives."""


@dataclass(slots=True)
class Signals:
    """What a page says about itself (headers and HTML) that decides whether it is listed."""

    noindex: str | None = None
    """What says noindex (`X-Robots-Tag: ...` or the meta element), when something does."""
    nofollow: bool = False
    canonical: str | None = None
    """The canonical URL (`<link rel=canonical>`, else a `Link: rel="canonical"` header), resolved."""
    refresh: str | None = None
    """A meta refresh target, resolved."""


def header_signals(x_robots: Sequence[str], link: Sequence[str], url: str, agent: str) -> Signals:
    """What the response headers say: `X-Robots-Tag` (for all, Googlebot or `agent`) and a canonical in
    `Link:`."""
    out = Signals()
    directives = x_robots_tag(x_robots, agent)
    if "noindex" in directives:
        out.noindex = "X-Robots-Tag: " + ", ".join(x_robots)
    out.nofollow = "nofollow" in directives
    out.canonical = link_header_canonical(link, url)
    return out


def read_signals(out: Signals, root: Any, head: PageMeta, base: str, agent: str) -> None:
    """Add what the HTML says to `out` (from `header_signals`): robots meta for all, Googlebot or `agent`
    (a header's noindex comes first), `<link rel=canonical>` (before the header's), meta refresh."""
    directives = meta_robots(root, agent)
    if out.noindex is None:
        if head.noindex:
            out.noindex = head.noindex
        elif "noindex" in directives:
            out.noindex = f'<meta name="{agent}"> noindex'
    out.nofollow = out.nofollow or "nofollow" in directives
    if head.canonical and (canonical := resolve_link(head.canonical, base)) is not None:
        out.canonical = canonical
    if head.refresh:
        out.refresh = resolve_link(head.refresh, base)


def indexability(
    url: str, status: int | None, content_type: str | None, signals: Signals | None
) -> tuple[str, str] | None:
    """Why the page `url` (its final URL, after any HTTP redirect) is not indexable, as (reason, detail);
    None when it is. In order: the status, the content type, noindex, a canonical elsewhere, a meta refresh
    elsewhere. URLs are compared as given: the caller cleans them alike (tracking parameters)."""
    if status is None:
        return "error", "no answer"
    if status >= 400:
        return ("status-5xx" if status >= 500 else "status-4xx"), f"answered {status}"
    if status != 200:
        return "error", f"answered {status}, not 200"
    if content_type not in HTML_TYPES:
        return "not-html", f"content type {content_type or '(none)'}"
    if signals is None:
        return None
    if signals.noindex is not None:
        return "noindex", signals.noindex
    if signals.canonical is not None and signals.canonical != url:
        return "canonical", f"canonical is {signals.canonical}"
    if signals.refresh is not None and signals.refresh != url:
        return "redirect", f"meta refresh to {signals.refresh}"
    return None


def says_not_found(title: str | None, h1: str | None) -> str | None:
    """The title or heading that says the page is not there, if one does."""
    for text in (title, h1):
        if text and SOFT_404.search(text):
            return text
    return None


def is_soft_404(said: str | None, body_bytes: int | None, median_bytes: float, pages: int) -> bool:
    """Whether a page that answered 200 is a soft 404: its title or heading says so (`said`), and it is
    small (under `SOFT_404_RATIO` of the median of the site's `pages` pages), or there are too few pages
    for a median."""
    if said is None:
        return False
    if pages < SOFT_404_MIN_PAGES:
        return True
    return body_bytes is not None and body_bytes < median_bytes * SOFT_404_RATIO


def median(values: Sequence[int]) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    mid = len(s) // 2
    return float(s[mid]) if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


class PageMemory:
    """What a crawl remembers of the pages it read: the content digest of each listable page (a page with
    the same content later is a duplicate), every page's size, and the pages whose title or heading says
    they are not there (judged at the end, against the median size: `soft_404s`)."""

    def __init__(self) -> None:
        self.digests: dict[str, str] = {}
        self.sizes: list[int] = []
        self.said: list[tuple[str, str, int]] = []

    def read(
        self, url: str, digest: str | None, size: int, said: str | None, *, listable: bool
    ) -> str | None:
        """Note the page `url` (`digest`: its `text_digest`, None when it shows nothing); the URL of the
        listable page with the same content read before, if there is one."""
        self.sizes.append(size)
        first = self.digests.get(digest) if digest is not None else None
        if first is not None and first != url:
            return first
        if listable:
            if digest is not None:
                self.digests.setdefault(digest, url)
            if said is not None:
                self.said.append((url, said, size))
        return None

    def soft_404s(self) -> list[tuple[str, str]]:
        """The listable pages that are soft 404s (`is_soft_404` against the median of every page read), with
        the detail to record."""
        middle = median(self.sizes)
        out = []
        for url, said, size in self.said:
            if is_soft_404(said, size, middle, len(self.sizes)):
                small = f", {size:,} bytes against a median of {middle:,.0f}" if len(self.sizes) >= 5 else ""
                out.append((url, f"answers 200 but says {said!r}{small}"))
        return out


def text_of(el: Any) -> str | None:
    """An element's text, whitespace collapsed, at most 300 characters; None when empty or absent."""
    if el is None:
        return None
    text = " ".join("".join(el.itertext()).split())
    return text[:300] or None


__all__ = [
    "AUDIT_CODES",
    "HTML_TYPES",
    "SOFT_404",
    "PageMemory",
    "Signals",
    "header_signals",
    "indexability",
    "is_soft_404",
    "median",
    "read_signals",
    "says_not_found",
    "text_of",
]
