"""From what a listed URL answered (`sitemapkit.crawl.probe.PageCheck`) to findings and one row of the
URL table: status, redirects, robots, indexability, content type, lastmod against the page's own date."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from sitemapkit.audit.findings import Finding
from sitemapkit.core.dates import format_w3c
from sitemapkit.core.errors import InvalidUrlError
from sitemapkit.core.model import Lastmod
from sitemapkit.core.urls import normalize_url
from sitemapkit.crawl.judge import median, says_not_found
from sitemapkit.crawl.probe import PageCheck

LASTMOD_TOLERANCE = dt.timedelta(days=1)
"""How far a sitemap's lastmod may differ from the page's own date before it is reported."""


@dataclass(slots=True)
class Listing:
    """A URL as the sitemaps list it: every (sitemap, line) that lists it, and the first entry's data."""

    url: str
    places: list[tuple[str, int | None]] = field(default_factory=list)
    lastmod: Lastmod | None = None
    alternates: tuple[tuple[str, str], ...] = ()
    media: bool = False
    """The entry has images or videos."""

    @property
    def sitemap(self) -> str | None:
        return self.places[0][0] if self.places else None

    @property
    def line(self) -> int | None:
        return self.places[0][1] if self.places else None


@dataclass(slots=True)
class UrlRow:
    """One listed URL in the report: what it answered and every finding about it."""

    url: str
    sitemap: str | None
    line: int | None
    lastmod: str | None
    status: int | None = None
    final_url: str | None = None
    content_type: str | None = None
    indexability: str = "unchecked"
    page_lastmod: str | None = None
    elapsed_ms: int | None = None
    bytes: int | None = None
    depth: int | None = None
    codes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "sitemap": self.sitemap,
            "line": self.line,
            "lastmod": self.lastmod,
            "status": self.status,
            "final_url": self.final_url,
            "content_type": self.content_type,
            "indexability": self.indexability,
            "page_lastmod": self.page_lastmod,
            "elapsed_ms": self.elapsed_ms,
            "bytes": self.bytes,
            "depth": self.depth,
            "codes": self.codes,
        }


def as_datetime(value: Lastmod) -> dt.datetime:
    """A lastmod as an aware datetime (a date is its midnight UTC)."""
    if isinstance(value, dt.datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
    return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)


def judge(
    listing: Listing, check: PageCheck, listed: set[str], now: dt.datetime
) -> tuple[UrlRow, list[Finding]]:
    """The row and findings for one listed URL that was checked (soft 404s and hreflang come later, when
    every page is known)."""
    url = listing.url
    row = UrlRow(
        url,
        listing.sitemap,
        listing.line,
        format_w3c(listing.lastmod) if listing.lastmod is not None else None,
        status=check.status,
        final_url=check.final_url if check.final_url != url else None,
        content_type=check.content_type,
        elapsed_ms=check.elapsed_ms,
        bytes=check.body_bytes,
    )
    found: list[Finding] = []

    def add(code: str, message: str, **evidence: Any) -> None:
        found.append(
            Finding.make(
                code,
                url,
                message,
                sitemap=listing.sitemap,
                line=listing.line,
                status=row.status,
                evidence={k: v for k, v in evidence.items() if v is not None},
            )
        )

    if check.blocked is not None and not check.redirects:
        row.indexability = "blocked"
        add("url-blocked", f"Not crawlable: {check.blocked}; it was not fetched.", robots=check.blocked)
        return row, found
    if check.error is not None and check.status is None:
        row.indexability = "unreachable"
        if check.error.startswith(("redirect loop", "more than")):
            add("url-redirect", f"The redirects never end: {check.error}.", error=check.error)
        elif check.redirects:  # the chain stopped at a target that is not fetched (another site, mailto:)
            add("url-redirect", f"Redirects where no crawler follows: {check.error}.", error=check.error)
        else:
            add("url-unreachable", f"No answer: {check.error}.", error=check.error)
        return row, found
    status = check.status or 0
    if check.redirects and check.final_url != url:
        row.indexability = "redirect"
        row.status = check.redirects[0].status
        target = check.final_url or ""
        is_listed = target in listed
        hops = [f"{h.status} {h.url}" for h in check.redirects]
        add(
            "url-redirect",
            f"Answers {check.redirects[0].status} and ends at {target} "
            f"({'also listed' if is_listed else 'not listed'}); list the final URL instead.",
            final_url=target,
            final_listed=is_listed,
            hops=hops,
            final_status=check.status,
        )
        if check.blocked is not None:  # the chain stopped at a URL robots.txt disallows: not fetched
            add("url-blocked", f"The redirect leads to {target}, which is not crawlable: {check.blocked}.")
        if status >= 400:
            add("url-error", f"The redirect ends at {target}, which answers {status}.", final_url=target)
        return row, found
    if status >= 400:
        row.indexability = "error"
        add("url-error", f"Answers HTTP {status}.")
        return row, found
    if status != 200:
        row.indexability = "error"
        add("url-error", f"Answers HTTP {status}, not 200.")
        return row, found
    if check.noindex is not None:
        row.indexability = "noindex"
        add("url-noindex", f"The page is noindex ({check.noindex}).", directive=check.noindex)
    if check.content_type not in ("text/html", "application/xhtml+xml"):
        if row.indexability == "unchecked":
            row.indexability = "not-html"
        if not listing.media:
            add("url-not-html", f"Not an HTML page: content type {check.content_type or '(none)'}.")
        return row, found
    if check.error is not None:
        row.indexability = "error"
        add("url-error", f"The page could not be read: {check.error}.", error=check.error)
        return row, found
    if check.canonical is not None and check.canonical != url:
        if row.indexability == "unchecked":
            row.indexability = "canonicalized"
        is_listed = check.canonical in listed
        add(
            "url-canonicalized",
            f"The page's canonical is {check.canonical} ({'also listed' if is_listed else 'not listed'}).",
            canonical=check.canonical,
            canonical_listed=is_listed,
        )
    elif check.refresh is not None and check.refresh != url:
        if row.indexability == "unchecked":
            row.indexability = "redirect"
        add(
            "url-redirect",
            f"The page redirects with <meta http-equiv=refresh> to {check.refresh}.",
            final_url=check.refresh,
            final_listed=check.refresh in listed,
        )
    if row.indexability == "unchecked":
        row.indexability = "indexable"
    _lastmod(listing, check, row, now, add)
    return row, found


def _lastmod(listing: Listing, check: PageCheck, row: UrlRow, now: dt.datetime, add: Any) -> None:
    said = listing.lastmod
    own: Lastmod | None = check.lastmod
    source = "the page's dateModified / article:modified_time"
    if own is None and check.last_modified is not None and not _is_response_time(check):
        # a Last-Modified equal to Date is a page built for this request: it says nothing of its content
        own, source = check.last_modified, "Last-Modified"
    if own is not None:
        row.page_lastmod = format_w3c(own)
    if said is None:
        return
    said_at = as_datetime(said)
    clock = check.date or now
    if said_at > clock + LASTMOD_TOLERANCE:
        add(
            "lastmod-future",
            f"The sitemap's lastmod {format_w3c(said)} is later than the server's time {format_w3c(clock)}.",
            sitemap_lastmod=format_w3c(said),
            server_time=format_w3c(clock),
        )
        return
    if own is None:
        return
    own_at = as_datetime(own)
    if own_at - said_at > LASTMOD_TOLERANCE:
        add(
            "lastmod-stale",
            f"The sitemap's lastmod {format_w3c(said)} is older than the page's {format_w3c(own)} "
            f"({source}).",
            sitemap_lastmod=format_w3c(said),
            page_lastmod=format_w3c(own),
            page_lastmod_from=source,
        )
    elif said_at - own_at > LASTMOD_TOLERANCE:
        add(
            "lastmod-ahead",
            f"The sitemap's lastmod {format_w3c(said)} is newer than the page's {format_w3c(own)} "
            f"({source}).",
            sitemap_lastmod=format_w3c(said),
            page_lastmod=format_w3c(own),
            page_lastmod_from=source,
        )


def _is_response_time(check: PageCheck) -> bool:
    """Whether `Last-Modified` is just when the response was made (within 2 s of `Date`)."""
    if check.last_modified is None or check.date is None:
        return False
    return abs(as_datetime(check.last_modified) - as_datetime(check.date)) <= dt.timedelta(seconds=2)


def hreflang_mismatch(listing: Listing, check: PageCheck) -> Finding | None:
    """`hreflang-sitemap-mismatch` when the page names hreflang alternates and so does its sitemap entry, and
    the two disagree on another language version (a language one of them leaves out, or another URL for
    it). The page's reference to itself is left out of the comparison; a page or an entry without any
    alternates is not compared (giving them in one place is enough)."""
    url = listing.url

    def pairs(items: tuple[tuple[str, str], ...]) -> set[tuple[str, str]]:
        return {(hreflang.strip().lower(), _normal(href)) for hreflang, href in items if _normal(href) != url}

    sitemap, page = pairs(listing.alternates), pairs(check.alternates)
    if not listing.alternates or not check.alternates or sitemap == page:
        return None
    only_sitemap, only_page = sorted(sitemap - page), sorted(page - sitemap)

    def shown(items: list[tuple[str, str]]) -> str:
        return ", ".join(f"{h} {u}" for h, u in items[:5]) + (" …" if len(items) > 5 else "")

    said = []
    if only_sitemap:
        said.append(f"the sitemap gives {shown(only_sitemap)}, which the page does not name")
    if only_page:
        said.append(f"the page names {shown(only_page)}, which its sitemap entry does not give")
    return Finding.make(
        "hreflang-sitemap-mismatch",
        url,
        "The page's hreflang links and its sitemap entry's alternates disagree: " + "; ".join(said) + ".",
        sitemap=listing.sitemap,
        line=listing.line,
        status=check.status,
        evidence={
            "only_in_sitemap": [list(p) for p in only_sitemap],
            "only_on_page": [list(p) for p in only_page],
        },
    )


def _normal(url: str) -> str:
    try:
        return normalize_url(url)
    except InvalidUrlError:
        return url


def soft_404(check: PageCheck) -> str | None:
    """The title or heading that says the page is not there, if one does (the crawl's judgement)."""
    return says_not_found(check.title, check.h1)


__all__ = ["Listing", "UrlRow", "hreflang_mismatch", "judge", "median", "soft_404"]
