"""Reading `<url>`, `<sitemap>` and feed items into entries: each value checked, each problem reported.

`EntryReader` is the part of `SitemapParser` that does it; the extension elements of a `<url>` go to
`Extensions` (extensions.py), and the parser's other readers (plain runs, text lines) count the entries they
meet in the same `Tally`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from lxml import etree

from sitemapkit.core.constants import CHANGEFREQS, MAX_URL_LENGTH, MAX_URLS
from sitemapkit.core.diagnostics import Severity
from sitemapkit.core.escape import for_terminal
from sitemapkit.core.model import IndexEntry, Lastmod, UrlEntry, new_url_entry
from sitemapkit.core.urls import check_uri
from sitemapkit.reader import feeds
from sitemapkit.reader.context import CORE_NAMES, Context
from sitemapkit.reader.runs import UrlRun
from sitemapkit.reader.values import DECIMAL, PLAIN_URL, PRIORITIES, element_text, split_tag, usable_url

if TYPE_CHECKING:
    from sitemapkit.reader.extensions import Extensions
    from sitemapkit.reader.sniff import Kind

__all__ = ["CORE_NAMES", "PLAIN_URL", "EntryReader", "Tally"]

_EXCERPT: Final = 80
"""Most characters of a value that is not a URL shown in a diagnostic (escaped): it may be anything, such as
a line of an internal file served in place of a text sitemap."""
_AUTHORITY_PROBLEMS: Final = ("host ", "port ", "no host", "the IPv6")
"""How `check_uri` starts what it says about a URL's host or port."""
_LOC, _LASTMOD, _CHANGEFREQ, _PRIORITY = 0, 1, 2, 3
_INDEX_NAMES: Final = ("loc", "lastmod")
_EXTENSION_RANK: Final = 4
_LXML_LINE_LIMIT: Final = 65535
"""From this line on, lxml's `sourceline` needs `feeds.source_line`."""


class Tally:
    """The entries of one document, as the parser's readers hand them on: `items`, those ready to be
    returned (entries, and with runs `UrlRun`s); `count`, the entries handed on so far; `seen`, the entries
    met so far (those skipped for a problem too)."""

    __slots__ = ("count", "items", "seen")

    def __init__(self) -> None:
        self.items: list[UrlEntry | IndexEntry | UrlRun] = []
        self.count = 0
        self.seen = 0

    def take(self) -> list[UrlEntry | IndexEntry | UrlRun]:
        """The items ready, which are no longer kept."""
        items = self.items
        self.items = []
        return items


class EntryReader:
    """Reads one `<url>`, `<sitemap>`, RSS `<item>` or Atom `<entry>` into an entry, checking and counting it;
    also checks the URLs of a text sitemap (`loc`). Set up for a document with `start`."""

    def __init__(self, context: Context, tally: Tally, extensions: Extensions, *, fast: bool = True) -> None:
        """`fast`: read common `<url>` elements in one pass (see `read_url`); tests turn it off to compare."""
        self._context = context
        self._tally = tally
        self._extensions = extensions
        self._fast = fast
        self._kind: Kind | None = None
        self._core: dict[str, int] = {}  # the tags of <url> (or <sitemap>) children -> their rank
        self._fast_tags: tuple[str, ...] = ()  # <loc>, <lastmod>, <changefreq>, <priority> in the root's ns

    def start(self, kind: Kind) -> None:
        """Read entries of a document of this kind."""
        self._kind = kind

    def use_namespaces(self, namespace: str | None, core_ns: frozenset[str]) -> None:
        """Read the children of entries in the root's `namespace` and those read as it (`core_ns`)."""
        names = CORE_NAMES if self._kind != "sitemapindex" else _INDEX_NAMES
        self._core = {
            (f"{{{n}}}{name}" if n else name): rank for n in core_ns for rank, name in enumerate(names)
        }
        if self._kind == "urlset":
            ns = namespace
            self._fast_tags = tuple(f"{{{ns}}}{name}" if ns else name for name in CORE_NAMES)

    # -- counting ----------------------------------------------------------------------------------------

    def count(self, line: int | None) -> None:
        """Count one more entry met, at `line`."""
        tally = self._tally
        tally.seen += 1
        if tally.seen > MAX_URLS:
            self.over_limit(line)

    def over_limit(self, line: int | None) -> None:
        """Report, once, that the tally has met more entries than a sitemap may list (at `line`)."""
        if self._tally.seen != MAX_URLS + 1:
            return
        if self._kind == "sitemapindex":
            self._context.report(
                "too-many-sitemaps",
                f"The index lists more than {MAX_URLS:,} sitemaps; split it into several indexes.",
                line,
            )
        else:
            self._context.report(
                "too-many-urls",
                f"The sitemap lists more than {MAX_URLS:,} URLs; split it and list the parts in a "
                "sitemap index.",
                line,
            )

    # -- values ------------------------------------------------------------------------------------------

    def url_like(self, text: str) -> bool:
        """Whether `text` is meant as a URL: an absolute http(s) one with a host, however badly written, or a
        path (`/about`, relative, reported as such)."""
        return usable_url(text) or (text[:1] == "/" and not any(c.isspace() for c in text))

    def loc(self, raw: str | None, line: int | None, tag: str = "<loc>") -> str | None:
        """Check a page URL as written: return it (stripped) if usable, else report and return None."""
        report = self._context.report
        if raw is None:
            report("invalid-url", f"{tag} is empty; give the page's absolute URL.", line)
            return None
        loc = raw
        if raw[:1] <= " " or raw[-1:] <= " ":
            loc = raw.strip()
            if not loc:
                report("invalid-url", f"{tag} is empty; give the page's absolute URL.", line)
                return None
            report(
                "invalid-value",
                f"{tag} has whitespace or line breaks around the URL; it was stripped, but write the "
                "URL alone.",
                line,
                url=loc,
                severity=Severity.WARNING,
            )
        problem = check_uri(loc)
        if problem is None and len(loc) < MAX_URL_LENGTH:
            return loc
        if problem == "too long" or len(loc) >= MAX_URL_LENGTH:
            report(
                "url-too-long",
                f"The URL has {len(loc):,} characters; it must be shorter than {MAX_URL_LENGTH:,}. "
                "It was skipped.",
                line,
                url=loc[:200],
            )
            return None
        if usable_url(loc):
            report(
                "invalid-url",
                f"{tag} is not in RFC 3986 form ({problem}); percent-encode it (it was read as written)."
                if not problem or not problem.startswith(_AUTHORITY_PROBLEMS)
                else f"{tag} has a bad host or port ({problem}); fix it (it was read as written).",
                line,
                url=loc,
            )
            return loc
        shown = for_terminal(loc, _EXCERPT)
        report(
            "invalid-url",
            f"{tag} '{shown}' is not an absolute http(s) URL ({for_terminal(problem or '', _EXCERPT)}); it "
            "was skipped. Write the full URL with scheme and host.",
            line,
            url=shown,
        )
        return None

    # -- entries -----------------------------------------------------------------------------------------

    def read_url(self, el: etree._Element) -> UrlEntry | None:
        """The entry a `<url>` element holds, counted; None when it holds none (each problem reported)."""
        context = self._context
        line: int | None = el.sourceline  # type: ignore[assignment]
        if line is not None:
            if line >= _LXML_LINE_LIMIT:
                line = context.line(el)
            else:
                line += context.line_offset
        tally = self._tally
        tally.seen += 1
        if tally.seen > MAX_URLS:
            self.over_limit(line)
        # The common <url>: <loc>, then any of <lastmod>, <changefreq>, <priority> in that order, in the
        # root's namespace, each a plain valid value: read in one pass with nothing to report. Anything
        # else is read by `_read_url_checked`, which reports it.
        children = list(el)
        n = len(children)
        tags = self._fast_tags
        if n and n <= 4 and tags and self._fast:
            child = children[0]
            text = child.text
            if (
                child.tag == tags[0]
                and text
                and text[0] > " "
                and text[-1] > " "
                and len(text) < MAX_URL_LENGTH
                and PLAIN_URL.fullmatch(text) is not None
                and not len(child)
            ):
                loc = text
                lastmod: Lastmod | None = None
                changefreq: str | None = None
                priority: float | None = None
                i = 1
                if i < n:
                    child = children[i]
                    if child.tag == tags[1]:
                        text = child.text
                        if text is None:
                            return self._read_url_checked(el, line)
                        lastmod = context.dates.get(text)
                        if lastmod is None:
                            lastmod = context.schema_date(text)
                            if lastmod is None:
                                return self._read_url_checked(el, line)
                        i += 1
                if i < n:
                    child = children[i]
                    if child.tag == tags[2]:
                        changefreq = child.text
                        if changefreq not in CHANGEFREQS:
                            return self._read_url_checked(el, line)
                        i += 1
                if i < n:
                    child = children[i]
                    if child.tag == tags[3]:
                        text = child.text
                        priority = PRIORITIES.get(text) if text is not None else None
                        if priority is None:
                            return self._read_url_checked(el, line)
                        i += 1
                if i == n:
                    written = children[1].text if lastmod is not None else None  # schema form: no spaces
                    return new_url_entry(
                        loc, lastmod, changefreq, priority, context.source, line, (), written
                    )
        return self._read_url_checked(el, line)

    def _read_url_checked(self, el: etree._Element, line: int | None) -> UrlEntry | None:
        core = self._core
        loc_el = lastmod_el = changefreq_el = priority_el = None
        rank = 0
        extensions: list[etree._Element] | None = None
        disorder: etree._Element | None = None
        for child in el:
            r = core.get(child.tag)
            if r is None:
                if extensions is None:
                    extensions = []
                extensions.append(child)
                rank = _EXTENSION_RANK
                continue
            if r < rank and disorder is None:
                disorder = child
            rank = r
            if r == _LOC:
                if loc_el is None:
                    loc_el = child
                    continue
            elif r == _LASTMOD:
                if lastmod_el is None:
                    lastmod_el = child
                    continue
            elif r == _CHANGEFREQ:
                if changefreq_el is None:
                    changefreq_el = child
                    continue
            elif priority_el is None:
                priority_el = child
                continue
            self._context.too_many(CORE_NAMES[r], self._context.line(child), None)
        loc: str | None = None
        if loc_el is None:
            self._context.report(
                "missing-tag", "<url> has no <loc>; every <url> needs one. It was skipped.", line
            )
        else:
            text = loc_el.text
            if (
                text is not None
                and text[0] > " "
                and text[-1] > " "
                and len(text) < MAX_URL_LENGTH
                and (PLAIN_URL.fullmatch(text) is not None or check_uri(text) is None)
                and not len(loc_el)
            ):
                loc = text
            else:
                loc = self.loc(element_text(loc_el), self._context.line(loc_el))
        if disorder is not None:
            self._context.report(
                "tag-order",
                f"<{split_tag(disorder.tag)[1]}> comes out of order; write <loc>, <lastmod>, <changefreq>, "
                "<priority>, then extension tags.",
                self._context.line(disorder),
                url=loc,
            )
        lastmod: Lastmod | None = None
        written: str | None = None
        changefreq: str | None = None
        priority: float | None = None
        if lastmod_el is not None:
            text = lastmod_el.text
            written = (text.strip() or None) if text is not None else None
            lastmod = self._context.dates.get(text) if text is not None else None
            if lastmod is None:
                lastmod = self._context.date(text, "lastmod", lastmod_el, loc)
        if changefreq_el is not None:
            text = changefreq_el.text
            changefreq = text if text in CHANGEFREQS else self._changefreq(changefreq_el, loc)
        if priority_el is not None:
            text = priority_el.text
            priority = PRIORITIES.get(text) if text is not None else None
            if priority is None:
                priority = self._priority(priority_el, loc)
        if extensions is None:
            if loc is None:
                return None
            return new_url_entry(loc, lastmod, changefreq, priority, self._context.source, line, (), written)
        images, videos, news, alternates = self._extensions.read(extensions, loc)
        if loc is None:
            return None
        if not videos and news is None and not alternates:
            return new_url_entry(
                loc, lastmod, changefreq, priority, self._context.source, line, images, written
            )
        return UrlEntry(
            loc,
            lastmod,
            changefreq,
            priority,
            images,
            videos,
            news,
            alternates,
            self._context.source,
            line,
            written,
        )

    def _changefreq(self, el: etree._Element, loc: str | None) -> str | None:
        raw = (el.text or "").strip()
        if raw in CHANGEFREQS:
            return raw
        allowed = ", ".join(sorted(CHANGEFREQS))
        if raw.lower() in CHANGEFREQS:
            self._context.report(
                "invalid-value",
                f"<changefreq> {raw!r} must be lowercase ({raw.lower()}); it was read as {raw.lower()!r}.",
                self._context.line(el),
                url=loc,
            )
            return raw.lower()
        self._context.report(
            "invalid-value",
            f"<changefreq> {raw!r} is not one of {allowed}; it was ignored.",
            self._context.line(el),
            url=loc,
        )
        return None

    def _priority(self, el: etree._Element, loc: str | None) -> float | None:
        raw = (el.text or "").strip()
        if DECIMAL.fullmatch(raw) is not None:
            value = float(raw)
            if 0.0 <= value <= 1.0:
                return value
        self._context.report(
            "invalid-value",
            f"<priority> {raw!r} is not a decimal from 0.0 to 1.0; it was ignored.",
            self._context.line(el),
            url=loc,
        )
        return None

    def read_sitemap(self, el: etree._Element) -> IndexEntry | None:
        """The entry a `<sitemap>` element of an index holds, counted; None when it holds none."""
        line = self._context.line(el)
        self.count(line)
        core = self._core
        loc_el = lastmod_el = None
        for child in el:
            tag = child.tag
            r = core.get(tag)
            if r == _LOC:
                if loc_el is not None:
                    self._context.too_many("loc", self._context.line(child), None)
                else:
                    loc_el = child
            elif r == _LASTMOD:
                if lastmod_el is not None:
                    self._context.too_many("lastmod", self._context.line(child), None)
                else:
                    lastmod_el = child
            elif isinstance(tag, str):
                ns, local = split_tag(tag)
                if self._context.known(ns):
                    where = "<sitemap> (only <loc> and <lastmod>)"
                    self._context.unknown(local, ns, self._context.line(child), None, where)
        if loc_el is None:
            self._context.report(
                "missing-tag", "<sitemap> has no <loc>; every <sitemap> needs one. It was skipped.", line
            )
            return None
        loc = self.loc(element_text(loc_el), self._context.line(loc_el))
        if loc is None:
            return None
        lastmod = None
        written = None
        if lastmod_el is not None:
            lastmod = self._context.date(lastmod_el.text, "lastmod", lastmod_el, loc)
            written = (lastmod_el.text or "").strip() or None
        return IndexEntry(loc, lastmod, self._context.source, line, written)

    def read_feed_item(self, el: etree._Element) -> UrlEntry | None:
        """The entry an RSS `<item>` or Atom `<entry>` holds, counted; None when it holds none."""
        line = self._context.line(el)
        self.count(line)
        item = feeds.rss_item(el) if self._kind == "rss" else feeds.atom_entry(el)
        what = "<item>" if self._kind == "rss" else "<entry>"
        if item.link is None:
            self._context.report("missing-tag", f"{what} has no <link>; it was skipped.", line)
            return None
        link_line = item.link_line + self._context.line_offset if item.link_line is not None else line
        loc = self.loc(item.link, link_line, "<link>")
        if loc is None:
            return None
        lastmod: Lastmod | None = None
        if item.date is not None:
            if item.date_format == "rfc822":
                lastmod = feeds.parse_rfc822(item.date)
                if lastmod is None:
                    self._context.report(
                        "invalid-date",
                        f"<{item.date_tag}> {item.date.strip()!r} is not an RFC 822 date "
                        "(Tue, 10 Jun 2003 04:00:00 GMT); it was ignored.",
                        line,
                        url=loc,
                    )
            else:
                lastmod = self._context.date(item.date, item.date_tag, line, loc)
        written = (item.date.strip() or None) if item.date is not None else None
        return UrlEntry(loc, lastmod, sitemap=self._context.source, line=line, lastmod_text=written)
