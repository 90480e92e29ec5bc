"""Reading `<url>`, `<sitemap>` and feed items into entries: each value checked, each problem reported.

`EntryReader` is a part of `SitemapParser`; this module also holds what the other parts share: the entry
makers, the plain-URL regex and the element helpers.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar, Final, cast
from urllib.parse import urlsplit

from lxml import etree

from sitemapkit.core.constants import (
    CHANGEFREQS,
    MAX_URL_LENGTH,
    MAX_URLS,
    NS_IMAGE,
    NS_NEWS,
    NS_VIDEO,
    NS_XHTML,
)
from sitemapkit.core.dates import parse_w3c
from sitemapkit.core.diagnostics import Severity
from sitemapkit.core.errors import InvalidDateError
from sitemapkit.core.escape import for_terminal
from sitemapkit.core.model import Alternate, Image, IndexEntry, Lastmod, News, UrlEntry, Video
from sitemapkit.core.urls import check_uri
from sitemapkit.reader import feeds
from sitemapkit.reader.runs import new_url_entry

if TYPE_CHECKING:
    from sitemapkit.reader.sniff import Kind

# --- values ------------------------------------------------------------------------------------------

_SCHEMA_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))?")
DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
_DATE_CACHE_SIZE: Final = 4096
PRIORITIES: Final = {
    **{f"{k / 100:.2f}": k / 100 for k in range(101)},
    **{f"{k / 10:.1f}": k / 10 for k in range(11)},
    "0": 0.0,
    "1": 1.0,
}
"""Common `<priority>` spellings, read without a regex."""


def _date_value(text: str) -> tuple[Lastmod | None, str | None]:
    """Read a W3C Datetime: (value, problem). A value with a problem is a W3C form the schema rejects;
    no value means the text is not a date at all."""
    if _SCHEMA_DATE.fullmatch(text) is not None:
        try:
            if len(text) == 10:
                return dt.date.fromisoformat(text), None
            return dt.datetime.fromisoformat(text), None
        except ValueError:
            return None, "no such date or time"
    try:
        value = parse_w3c(text)
    except InvalidDateError as exc:
        reason = str(exc)
        if "without a timezone" in reason:
            return None, "the time has no timezone (add Z or +hh:mm)"
        if "not a valid date" in reason or "out of range" in reason:
            return None, "no such date or time"
        return None, "it is not in the form YYYY-MM-DD or YYYY-MM-DDThh:mm:ss+hh:mm"
    return (
        value,
        "the sitemap schema accepts only YYYY-MM-DD or a date-time with seconds (it was read anyway)",
    )


# A subset of what `urls.check_uri` accepts (no `%`, lowercase ASCII host), matched by one regex so the
# common URL costs one call; anything else goes through `check_uri`.
PLAIN_HOST = r"[a-z0-9]++(?:-++[a-z0-9]++)*+(?:\.[a-z0-9]++(?:-++[a-z0-9]++)*+)*+(?::[0-9]{1,4}+)?+"
"""A lowercase name of letter-digit-hyphen labels and single dots, and a port under 10,000 (a subset of what
`check_uri` accepts)."""
PLAIN_URL = re.compile(r"https?://" + PLAIN_HOST + r"(?:/[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*+)?+")


_EXCERPT: Final = 80
"""Most characters of a value that is not a URL shown in a diagnostic (escaped): it may be anything, such as
a line of an internal file served in place of a text sitemap."""
_AUTHORITY_PROBLEMS: Final = ("host ", "port ", "no host", "the IPv6")
"""How `check_uri` starts what it says about a URL's host or port."""


def usable_url(url: str) -> bool:
    """An absolute http(s) URL with a host, however badly escaped: worth keeping after a report."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def split_tag(tag: str) -> tuple[str, str]:
    if tag[:1] == "{":
        ns, _, local = tag[1:].partition("}")
        return ns, local
    return "", tag


def element_text(el: etree._Element) -> str:
    text = el.text
    if len(el):
        return "".join(cast("Iterator[str]", el.itertext()))
    return text or ""


# --- tags --------------------------------------------------------------------------------------------

_LOC, _LASTMOD, _CHANGEFREQ, _PRIORITY = 0, 1, 2, 3
CORE_NAMES: Final = ("loc", "lastmod", "changefreq", "priority")
_EXTENSION_RANK: Final = 4
KNOWN_NAMESPACES: Final = frozenset({NS_IMAGE, NS_VIDEO, NS_NEWS, NS_XHTML})
_LXML_LINE_LIMIT: Final = 65535
"""From this line on, lxml's `sourceline` needs `feeds.source_line`."""


class EntryReader:
    """The part of `SitemapParser` that reads one `<url>`, `<sitemap>`, RSS `<item>` or Atom `<entry>` into
    an entry, checking and counting it."""

    # what it uses of the parser
    source: str
    kind: Kind | None
    _FAST_READ: ClassVar[bool]
    _entries_seen: int
    _line_offset: int
    _fast_tags: tuple[str, ...]
    _core: dict[str, int]
    _core_ns: frozenset[str]
    _date_cache: dict[str, Lastmod]

    if TYPE_CHECKING:

        def _report(
            self,
            code: str,
            message: str,
            line: int | None = None,
            *,
            url: str | None = None,
            column: int | None = None,
            severity: Severity | None = None,
        ) -> None: ...

        def _line(self, el: etree._Element) -> int | None: ...

        # ExtensionReader
        def _extensions(
            self, children: list[etree._Element], loc: str | None, line: int | None
        ) -> tuple[tuple[Image, ...], tuple[Video, ...], News | None, tuple[Alternate, ...]]: ...

        def _unknown(self, local: str, ns: str, line: int | None, url: str | None, where: str) -> None: ...

    def _count_entry(self, line: int | None) -> None:
        self._entries_seen += 1
        if self._entries_seen > MAX_URLS:
            self._count_limit(line)

    def _count_limit(self, line: int | None) -> None:
        if self._entries_seen != MAX_URLS + 1:
            return
        if self.kind == "sitemapindex":
            self._report(
                "too-many-sitemaps",
                f"The index lists more than {MAX_URLS:,} sitemaps; split it into several indexes.",
                line,
            )
        else:
            self._report(
                "too-many-urls",
                f"The sitemap lists more than {MAX_URLS:,} URLs; split it and list the parts in a "
                "sitemap index.",
                line,
            )

    def _url_like(self, text: str) -> bool:
        """Whether `text` is meant as a URL: an absolute http(s) one with a host, however badly written, or a
        path (`/about`, relative, reported as such)."""
        return usable_url(text) or (text[:1] == "/" and not any(c.isspace() for c in text))

    def _loc(self, raw: str | None, line: int | None, tag: str = "<loc>") -> str | None:
        """Check a page URL as written: return it (stripped) if usable, else report and return None."""
        if raw is None:
            self._report("invalid-url", f"{tag} is empty; give the page's absolute URL.", line)
            return None
        loc = raw
        if raw[:1] <= " " or raw[-1:] <= " ":
            loc = raw.strip()
            if not loc:
                self._report("invalid-url", f"{tag} is empty; give the page's absolute URL.", line)
                return None
            self._report(
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
            self._report(
                "url-too-long",
                f"The URL has {len(loc):,} characters; it must be shorter than {MAX_URL_LENGTH:,}. "
                "It was skipped.",
                line,
                url=loc[:200],
            )
            return None
        if usable_url(loc):
            self._report(
                "invalid-url",
                f"{tag} is not in RFC 3986 form ({problem}); percent-encode it (it was read as written)."
                if not problem or not problem.startswith(_AUTHORITY_PROBLEMS)
                else f"{tag} has a bad host or port ({problem}); fix it (it was read as written).",
                line,
                url=loc,
            )
            return loc
        shown = for_terminal(loc, _EXCERPT)
        self._report(
            "invalid-url",
            f"{tag} '{shown}' is not an absolute http(s) URL ({for_terminal(problem or '', _EXCERPT)}); it "
            "was skipped. Write the full URL with scheme and host.",
            line,
            url=shown,
        )
        return None

    def _schema_date(self, text: str) -> Lastmod | None:
        """A date or date-time exactly in the schema's form, remembered; else None (nothing reported)."""
        if _SCHEMA_DATE.fullmatch(text) is None:
            return None
        return self._store_date(text)

    def _store_date(self, text: str) -> Lastmod | None:
        """`_schema_date` for a text known to be in the schema's form."""
        try:
            value: Lastmod = (
                dt.datetime.fromisoformat(text) if len(text) > 10 else dt.date.fromisoformat(text)
            )
        except ValueError:
            return None
        cache = self._date_cache
        if len(cache) >= _DATE_CACHE_SIZE:
            cache.clear()
        cache[text] = value
        return value

    def _date(
        self, text: str | None, tag: str, where: etree._Element | int | None, url: str | None
    ) -> Lastmod | None:
        """Read a W3C Datetime; report it (at `where`, an element or a line) when the schema rejects it."""
        cache = self._date_cache
        if text is not None:
            cached = cache.get(text)
            if cached is not None:
                return cached
            if _SCHEMA_DATE.fullmatch(text) is not None:
                try:
                    value: Lastmod = (
                        dt.datetime.fromisoformat(text) if len(text) > 10 else dt.date.fromisoformat(text)
                    )
                except ValueError:
                    pass
                else:
                    if len(cache) >= _DATE_CACHE_SIZE:
                        cache.clear()
                    cache[text] = value
                    return value
        s = (text or "").strip()
        found, problem = _date_value(s) if s else (None, "it is empty")
        if problem is None:
            return found
        line = self._line(where) if isinstance(where, etree._Element) else where
        kept = "" if found is not None else " It was ignored."
        self._report(
            "invalid-date",
            f"<{tag}> {s!r} is not a valid date: {problem}. Write a W3C Datetime such as 2024-05-01 or "
            f"2024-05-01T12:00:00+00:00.{kept}",
            line,
            url=url,
        )
        return found

    def _too_many(self, tag: str, line: int | None, url: str | None) -> None:
        self._report(
            "too-many-tags",
            f"<{tag}> appears more than once; only the first was read. Keep one.",
            line,
            url=url,
        )

    def _read_url(self, el: etree._Element) -> UrlEntry | None:
        line: int | None = el.sourceline  # type: ignore[assignment]
        if line is not None:
            if line >= _LXML_LINE_LIMIT:
                line = self._line(el)
            else:
                line += self._line_offset
        self._entries_seen += 1
        if self._entries_seen > MAX_URLS:
            self._count_limit(line)
        # The common <url>: <loc>, then any of <lastmod>, <changefreq>, <priority> in that order, in the
        # root's namespace, each a plain valid value: read in one pass with nothing to report. Anything
        # else is read by `_read_url_checked`, which reports it.
        children = list(el)
        n = len(children)
        tags = self._fast_tags
        if n and n <= 4 and tags and self._FAST_READ:
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
                        lastmod = self._date_cache.get(text)
                        if lastmod is None:
                            lastmod = self._schema_date(text)
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
                    return new_url_entry(loc, lastmod, changefreq, priority, self.source, line, (), written)
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
            self._too_many(CORE_NAMES[r], self._line(child), None)
        loc: str | None = None
        if loc_el is None:
            self._report("missing-tag", "<url> has no <loc>; every <url> needs one. It was skipped.", line)
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
                loc = self._loc(element_text(loc_el), self._line(loc_el))
        if disorder is not None:
            self._report(
                "tag-order",
                f"<{split_tag(disorder.tag)[1]}> comes out of order; write <loc>, <lastmod>, <changefreq>, "
                "<priority>, then extension tags.",
                self._line(disorder),
                url=loc,
            )
        lastmod: Lastmod | None = None
        written: str | None = None
        changefreq: str | None = None
        priority: float | None = None
        if lastmod_el is not None:
            text = lastmod_el.text
            written = (text.strip() or None) if text is not None else None
            lastmod = self._date_cache.get(text) if text is not None else None
            if lastmod is None:
                lastmod = self._date(text, "lastmod", lastmod_el, loc)
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
            return new_url_entry(loc, lastmod, changefreq, priority, self.source, line, (), written)
        images, videos, news, alternates = self._extensions(extensions, loc, line)
        if loc is None:
            return None
        if not videos and news is None and not alternates:
            return new_url_entry(loc, lastmod, changefreq, priority, self.source, line, images, written)
        return UrlEntry(
            loc, lastmod, changefreq, priority, images, videos, news, alternates, self.source, line, written
        )

    def _changefreq(self, el: etree._Element, loc: str | None) -> str | None:
        raw = (el.text or "").strip()
        if raw in CHANGEFREQS:
            return raw
        allowed = ", ".join(sorted(CHANGEFREQS))
        if raw.lower() in CHANGEFREQS:
            self._report(
                "invalid-value",
                f"<changefreq> {raw!r} must be lowercase ({raw.lower()}); it was read as {raw.lower()!r}.",
                self._line(el),
                url=loc,
            )
            return raw.lower()
        self._report(
            "invalid-value",
            f"<changefreq> {raw!r} is not one of {allowed}; it was ignored.",
            self._line(el),
            url=loc,
        )
        return None

    def _priority(self, el: etree._Element, loc: str | None) -> float | None:
        raw = (el.text or "").strip()
        if DECIMAL.fullmatch(raw) is not None:
            value = float(raw)
            if 0.0 <= value <= 1.0:
                return value
        self._report(
            "invalid-value",
            f"<priority> {raw!r} is not a decimal from 0.0 to 1.0; it was ignored.",
            self._line(el),
            url=loc,
        )
        return None

    def _read_sitemap(self, el: etree._Element) -> IndexEntry | None:
        line = self._line(el)
        self._count_entry(line)
        core = self._core
        loc_el = lastmod_el = None
        for child in el:
            tag = child.tag
            r = core.get(tag)
            if r == _LOC:
                if loc_el is not None:
                    self._too_many("loc", self._line(child), None)
                else:
                    loc_el = child
            elif r == _LASTMOD:
                if lastmod_el is not None:
                    self._too_many("lastmod", self._line(child), None)
                else:
                    lastmod_el = child
            elif isinstance(tag, str):
                ns, local = split_tag(tag)
                if ns in self._core_ns or ns in KNOWN_NAMESPACES:
                    self._unknown(local, ns, self._line(child), None, "<sitemap> (only <loc> and <lastmod>)")
        if loc_el is None:
            self._report(
                "missing-tag", "<sitemap> has no <loc>; every <sitemap> needs one. It was skipped.", line
            )
            return None
        loc = self._loc(element_text(loc_el), self._line(loc_el))
        if loc is None:
            return None
        lastmod = None
        written = None
        if lastmod_el is not None:
            lastmod = self._date(lastmod_el.text, "lastmod", lastmod_el, loc)
            written = (lastmod_el.text or "").strip() or None
        return IndexEntry(loc, lastmod, self.source, line, written)

    def _read_feed_item(self, el: etree._Element) -> UrlEntry | None:
        line = self._line(el)
        self._count_entry(line)
        item = feeds.rss_item(el) if self.kind == "rss" else feeds.atom_entry(el)
        what = "<item>" if self.kind == "rss" else "<entry>"
        if item.link is None:
            self._report("missing-tag", f"{what} has no <link>; it was skipped.", line)
            return None
        link_line = item.link_line + self._line_offset if item.link_line is not None else line
        loc = self._loc(item.link, link_line, "<link>")
        if loc is None:
            return None
        lastmod: Lastmod | None = None
        if item.date is not None:
            if item.date_format == "rfc822":
                lastmod = feeds.parse_rfc822(item.date)
                if lastmod is None:
                    self._report(
                        "invalid-date",
                        f"<{item.date_tag}> {item.date.strip()!r} is not an RFC 822 date "
                        "(Tue, 10 Jun 2003 04:00:00 GMT); it was ignored.",
                        line,
                        url=loc,
                    )
            else:
                lastmod = self._date(item.date, item.date_tag, line, loc)
        written = (item.date.strip() or None) if item.date is not None else None
        return UrlEntry(loc, lastmod, sitemap=self.source, line=line, lastmod_text=written)
