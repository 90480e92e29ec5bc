"""The audit's findings: every code with its severity, what it means and how to fix it.

Validator codes (`sitemapkit.core.diagnostics.CODES`) pass through as findings with their own severity and
summary; the codes below are the audit's own, about the live site.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sitemapkit.core.diagnostics import CODES, Diagnostic, Severity


@dataclass(frozen=True, slots=True)
class CodeHelp:
    """What an audit code means, its severity, and how to fix what it reports."""

    code: str
    severity: Severity
    explanation: str
    fix: str
    checked: bool = False
    """Found by checking a listed URL live, so counted over the URLs checked: with `--sample`, over the
    sample (its share then estimates the whole tree's); the others are counted over the whole tree."""


E, W = Severity.ERROR, Severity.WARNING

AUDIT_CODES: dict[str, CodeHelp] = {
    c.code: c
    for c in (
        CodeHelp(
            "sitemap-not-in-robots",
            W,
            "The sitemaps were found only at a well-known path (or the one audited is neither named by "
            "robots.txt nor listed by an index it names): search engines other than those you submit to by "
            "hand may never find them.",
            "Add a 'Sitemap: https://…/sitemap.xml' line for each sitemap (or index) to robots.txt "
            "(`sitemapkit robots` writes it).",
        ),
        CodeHelp(
            "site-unreachable",
            E,
            "The site gave no answer when its robots.txt was asked for: the host name does not resolve "
            "(DNS), nothing listens on the port (connection refused), the connection was cut, or no answer "
            "came in time. This says nothing about what robots.txt contains: it could not be read.",
            "Check the address (scheme, host, port) and that the server runs and answers within --timeout, "
            "then audit again.",
        ),
        CodeHelp(
            "urls-outside-folder",
            W,
            "The sitemap lists URLs of its own host outside its folder (a sitemap at /sitemaps/x.xml lists "
            "/page), and neither it nor an index above it is named in robots.txt. The sitemaps.org location "
            "rule (sitemaps.org/protocol.html#location) lets a sitemap list only URLs under its own folder, "
            "and engines that apply it drop the others; a sitemap named in the host's robots.txt may list "
            "any URL of that host (sitemaps.org/protocol.html#sitemaps_cross_submits; Google Search Central "
            "blog, 2008-02-28, 'Cross-submissions via robots.txt on Sitemaps.org'), and so may one submitted "
            "in Search Console. A warning, not an error: a sitemap submitted by hand works for that engine.",
            "Move the sitemap up to the folder that holds its URLs (usually the site's root), or name it (or "
            "its index) in robots.txt with a 'Sitemap:' line.",
        ),
        CodeHelp(
            "urls-on-other-host",
            E,
            "The sitemap lists URLs of another host, scheme or port. Search engines accept them only when "
            "that host's robots.txt names this sitemap (sitemaps.org/protocol.html#sitemaps_cross_submits) "
            "or both sites are verified together in Search Console; otherwise they are dropped.",
            "List only URLs of the sitemap's own scheme, host and port; or add 'Sitemap: <this sitemap>' to "
            "the other host's robots.txt and audit with --allow-host HOST.",
        ),
        CodeHelp(
            "url-redirect",
            W,
            "The listed URL answers with a redirect (3xx or meta refresh; or its redirects loop). Search "
            "Console reports it as 'Page with redirect'; the sitemap should list final URLs only.",
            "List the redirect's target instead (if it is not listed already) and drop the old URL.",
            checked=True,
        ),
        CodeHelp(
            "url-error",
            E,
            "The listed URL answers 4xx or 5xx ('Submitted URL not found (404)', 'Submitted URL has crawl "
            "issue').",
            "Remove the URL from the sitemap, or restore the page (or redirect it and list the target).",
            checked=True,
        ),
        CodeHelp(
            "url-unreachable",
            E,
            "No answer at all: DNS failure, refused connection, timeout, a connection cut midway.",
            "Check that the host resolves and answers in time, or remove the URL.",
            checked=True,
        ),
        CodeHelp(
            "url-noindex",
            E,
            "The page asks not to be indexed (robots meta or X-Robots-Tag), yet the sitemap submits it "
            "('Submitted URL marked noindex').",
            "Remove the page from the sitemap, or remove the noindex if it should be indexed.",
            checked=True,
        ),
        CodeHelp(
            "url-canonicalized",
            W,
            "The page's rel=canonical names another URL ('Alternate page with proper canonical tag'): "
            "the sitemap lists a duplicate.",
            "List the canonical URL instead, or point the canonical at the page itself.",
            checked=True,
        ),
        CodeHelp(
            "url-blocked",
            E,
            "robots.txt disallows the URL for crawlers: it is listed but cannot be crawled ('Submitted URL "
            "blocked by robots.txt'). It was not fetched.",
            "Remove the URL from the sitemap, or allow it in robots.txt.",
            checked=True,
        ),
        CodeHelp(
            "url-soft-404",
            W,
            "The page answers 200 but looks like an error page: its title or heading says 'not found' and "
            "its body is much smaller than the site's median page. A heuristic: check it.",
            "Answer 404 or 410 for missing pages and remove them from the sitemap.",
            checked=True,
        ),
        CodeHelp(
            "url-not-html",
            W,
            "The listed URL is not an HTML page (an image, a PDF, a feed …) and its entry is not an image "
            "or video entry.",
            "List pages only; put media in image or video entries of the page that shows them.",
            checked=True,
        ),
        CodeHelp(
            "lastmod-future",
            W,
            "The sitemap's lastmod is later than the server's clock when the page answered.",
            "Write the page's real modification time; check the generator's clock and timezone.",
            checked=True,
        ),
        CodeHelp(
            "lastmod-stale",
            W,
            "The sitemap's lastmod is older than the date the page itself gives (JSON-LD dateModified, "
            "article:modified_time, or Last-Modified): crawlers are told nothing changed.",
            "Update the sitemap's lastmod when the page changes (`generate --state` does it).",
            checked=True,
        ),
        CodeHelp(
            "lastmod-ahead",
            W,
            "The sitemap's lastmod is newer than the date the page itself gives: often the build time "
            "written for every URL, which teaches crawlers to ignore lastmod.",
            "Write each page's real modification time, not the time the sitemap was built.",
            checked=True,
        ),
        CodeHelp(
            "url-in-several-sitemaps",
            W,
            "The same URL is listed in more than one sitemap file.",
            "List each URL in one sitemap only, so counts in Search Console add up.",
        ),
        CodeHelp(
            "hreflang-return-missing",
            W,
            "A page names an hreflang alternate (on the page or in the sitemap), and that alternate, "
            "checked live, names alternates of its own but not this page: search engines ignore one-way "
            "pairs.",
            "Make every page of a language group name all the others (and itself), on the pages or in the "
            "sitemap.",
            checked=True,
        ),
        CodeHelp(
            "hreflang-sitemap-mismatch",
            W,
            "The page's own hreflang links and the sitemap's alternates for it disagree: one names a "
            "language version the other does not (or another URL for it). One of them is out of date, and "
            "search engines are given two different language groups for the page.",
            "Write the page's <link rel=alternate hreflang> and the sitemap's xhtml:link from the same data, "
            "or give the alternates in one place only.",
            checked=True,
        ),
        CodeHelp(
            "url-not-in-sitemap",
            W,
            "The crawl found an indexable page (200, HTML, no noindex, its own canonical) that no sitemap "
            "lists.",
            "Add the page to the sitemap, or make it non-indexable if it should not be found.",
        ),
        CodeHelp(
            "url-orphan",
            W,
            "The sitemap lists the page, but the crawl from the home page found no link to it: search "
            "engines see it as unimportant.",
            "Link to the page from the site's navigation or from related pages.",
            checked=True,
        ),
    )
}

SEVERITY_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1}


def help_for(code: str) -> CodeHelp:
    """The meaning and fix of any code the audit reports (its own, or a validator code)."""
    found = AUDIT_CODES.get(code)
    if found is not None:
        return found
    info = CODES.get(code)
    if info is None:
        return CodeHelp(code, W, code, "")
    return CodeHelp(
        code,
        info.severity,
        info.summary,
        "Fix the sitemap file at the line shown; `sitemapkit validate` gives the details.",
    )


@dataclass(slots=True)
class Finding:
    """One problem: a stable `code`, its severity, the URL (or sitemap) concerned, where it is listed,
    the status it answered, a message, and the values that show it (`evidence`)."""

    code: str
    severity: Severity
    url: str | None
    message: str
    sitemap: str | None = None
    line: int | None = None
    status: int | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    baseline: str | None = None
    """With a baseline: `new` or `unchanged`."""

    @classmethod
    def make(cls, code: str, url: str | None, message: str, **kw: Any) -> Finding:
        return cls(code, AUDIT_CODES[code].severity, url, message, **kw)

    @classmethod
    def from_diagnostic(cls, d: Diagnostic) -> Finding:
        return cls(d.code, d.severity, d.url, d.message, sitemap=d.source, line=d.line)

    def key(self) -> str:
        """What identifies the finding from one run to the next (for `--baseline`)."""
        return f"{self.code}\t{self.url or ''}\t{self.sitemap or ''}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity.value,
            "url": self.url,
            "sitemap": self.sitemap,
            "line": self.line,
            "status": self.status,
            "message": self.message,
            "evidence": self.evidence,
        }
        if self.baseline is not None:
            out["baseline"] = self.baseline
        return out


def site_unreachable(root: str, robots_url: str, reason: str, found_any: bool) -> Finding:
    """`site-unreachable`: robots.txt could not be fetched at all, and why (refused, DNS, timeout)."""
    then = (
        "Search engines fetch nothing from a host whose robots.txt they cannot read (RFC 9309, 2.3.1.4)."
        if found_any
        else "Nothing else could be checked: whether robots.txt names a sitemap is not known."
    )
    return Finding.make(
        "site-unreachable",
        None,
        f"{root} does not answer: {robots_url} could not be fetched ({reason}). {then}",
        sitemap=robots_url,
        evidence={"robots_url": robots_url, "error": reason},
    )


__all__ = ["AUDIT_CODES", "CodeHelp", "Finding", "help_for", "site_unreachable"]
