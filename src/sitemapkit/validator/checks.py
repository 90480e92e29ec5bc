"""The validator's checks that need context: a file's scope, the whole tree, the clock.

The parser checks each element on its own (form, values, limits). What it cannot know is checked here,
entry by entry as the parser hands them over, in memory that does not grow with the URLs' length:

- `url-not-allowed`: the URL is outside the sitemap's folder (scheme, host, port or path), or an index
  lists a sitemap outside its own folder;
- `duplicate-url`: a page listed twice, in one file or anywhere in the tree (a 64-bit hash per URL);
- `future-date`, `news-too-old`: dates judged against an injectable "now";
- `lastmod-uniform`: every `<lastmod>` of a large file is one instant (the build time, not the page's);
- `hreflang-missing-self`, `hreflang-not-reciprocal`: alternates among the URLs of the tree, tracked as
  hashes of (page, alternate) pairs until the pair's reverse shows up.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from typing import Final

from xxhash import xxh3_64_intdigest

from sitemapkit.core.dates import MAX_UTC_OFFSET, FutureLimit, format_w3c
from sitemapkit.core.diagnostics import Diagnostic, Severity
from sitemapkit.core.errors import InvalidUrlError
from sitemapkit.core.model import Alternate, IndexEntry, Lastmod, UrlEntry
from sitemapkit.core.urls import Scope, normalize_url

UNIFORM_MIN: Final = 100
"""`lastmod-uniform` is reported for a file with at least this many `<lastmod>`, all the same instant.
Below it, a small site updated in one go is plausible; above it, one instant means a build time."""

NEWS_MAX_AGE: Final = dt.timedelta(days=2)
"""Google News reads only articles published in the last two days."""

_BEHIND: Final = dt.timedelta(hours=12)
"""The furthest any timezone is behind UTC (UTC-12)."""
_DAY: Final = dt.timedelta(days=1)
_NO_OFFSET: Final = dt.timedelta(0)
_MASK: Final = (1 << 64) - 1

Emit = Callable[[Diagnostic], None]


def url_key(url: str) -> int:
    """The 64-bit hash a normalised URL is remembered by (XXH3: deterministic, collisions ~n²/2⁶⁵)."""
    return xxh3_64_intdigest(url.encode())


def _midnight(value: dt.date) -> dt.datetime:
    return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)


class TreeChecks:
    """State shared by every file of one validation run: the pages seen, open hreflang pairs, the clock.

    Memory: one dict entry per unique page URL (about 78 bytes) plus one per hreflang pair whose reverse
    has not been seen yet. Nothing else grows with the input.
    """

    def __init__(self, emit: Emit, *, now: dt.datetime, allow_hosts: Iterable[str] = ()) -> None:
        self.emit = emit
        self.now = now if now.utcoffset() is not None else now.replace(tzinfo=dt.UTC)
        self.allow_hosts = tuple(allow_hosts)
        self.is_future = FutureLimit(self.now)
        self.news_before = self.now - NEWS_MAX_AGE
        self.pages: dict[int, int] = {}
        """Hash of each page URL -> ordinal of the file that listed it first."""
        self.pending: dict[int, int] = {}
        """(page hash << 64 | alternate hash) -> ordinal of the file, for pairs not yet seen in reverse."""
        self.sitemaps: set[str] = set()
        """Normalised URLs of the sitemaps met so far (few: a list of strings is cheap)."""

    def file(self, ordinal: int, source: str, public_url: str | None, *, sources: list[str]) -> FileChecks:
        """Checks for one file; `public_url` (None when unknown) sets its scope."""
        scope = Scope.for_sitemap(public_url, self.allow_hosts) if public_url is not None else None
        return FileChecks(self, ordinal, source, scope, sources)

    # -- dates ---------------------------------------------------------------------------------------

    def is_old_news(self, value: Lastmod) -> bool:
        if isinstance(value, dt.datetime):
            aware = value if value.utcoffset() is not None else value.replace(tzinfo=dt.UTC)
            return aware < self.news_before
        # A date-only value: even at UTC-12 its day ended more than two days ago.
        return _midnight(value) + _DAY + _BEHIND < self.news_before

    # -- hreflang --------------------------------------------------------------------------------------

    def unmatched_pairs(self) -> dict[int, set[int]]:
        """Pairs (page -> alternate) never seen in reverse whose alternate is a page of the tree, by file.

        An alternate that is not listed anywhere in the tree may declare its alternates in its HTML;
        only pairs between listed pages are judged.
        """
        out: dict[int, set[int]] = {}
        pages = self.pages
        for key, ordinal in self.pending.items():
            if key & _MASK in pages:
                out.setdefault(ordinal, set()).add(key)
        return out

    def report_unmatched(self, entry: UrlEntry, keys: set[int]) -> None:
        """Report the pairs of `entry` (read again from its file) that are in `keys`; each only once."""
        try:
            page = normalize_url(entry.loc)
        except InvalidUrlError:
            return
        page_key = url_key(page)
        for alt in entry.alternates:
            href = _normal(alt.href)
            if href is None or href == page:
                continue
            key = page_key << 64 | url_key(href)
            if key in keys:
                keys.discard(key)
                self.emit(
                    Diagnostic.make(
                        "hreflang-not-reciprocal",
                        f"This page names {href} as its {alt.hreflang!r} alternate, but that page's "
                        "<url> entry does not name this page back; search engines ignore one-way "
                        "alternates. List every language version in each version's entry.",
                        source=entry.sitemap,
                        line=entry.line,
                        url=entry.loc,
                    )
                )


def _normal(url: str) -> str | None:
    try:
        return normalize_url(url)
    except InvalidUrlError:
        return None


class FileChecks:
    """The checks of one sitemap file; call `url` or `sitemap` for each entry, then `finish`."""

    def __init__(
        self, tree: TreeChecks, ordinal: int, source: str, scope: Scope | None, sources: list[str]
    ) -> None:
        self.tree = tree
        self.ordinal = ordinal
        self.source = source
        self.scope = scope
        self._sources = sources
        self._lastmod: Lastmod | None = None
        self._lastmod_line: int | None = None
        self._lastmods = 0
        self._uniform = True

    def _emit(
        self, code: str, message: str, line: int | None, url: str | None, severity: Severity | None = None
    ) -> None:
        self.tree.emit(
            Diagnostic.make(code, message, source=self.source, line=line, url=url, severity=severity)
        )

    def _normalise(self, loc: str, line: int | None, flagged: bool, what: str) -> str | None:
        try:
            return normalize_url(loc)
        except InvalidUrlError as exc:
            if not flagged:  # the parser read it as written and reported nothing: say what is wrong
                self._emit(
                    "invalid-url",
                    f"{what} {loc[:200]!r} is not a valid URL ({exc.reason}); write an absolute "
                    "http(s) URL with a valid host and port.",
                    line,
                    loc[:200],
                )
            return None

    def _in_scope(self, url: str, line: int | None, what: str, written: str) -> None:
        scope = self.scope
        if scope is None or url in scope:
            return
        self._emit(
            "url-not-allowed",
            f"{what} is outside this sitemap's scope: {scope.explain(url)}. Search engines drop it; "
            f"list only URLs under {scope.folder}, move the sitemap up, or (when that host's robots.txt "
            "names this sitemap) declare the host with --allow-host.",
            line,
            written,
        )

    def _dates(self, value: Lastmod | None, tag: str, line: int | None, url: str) -> None:
        if isinstance(value, dt.datetime) and abs(value.utcoffset() or _NO_OFFSET) > MAX_UTC_OFFSET:
            self._emit(
                "invalid-date",
                f"<{tag}> {format_w3c(value)} has a timezone offset beyond 14 hours, which no timezone has "
                "(W3C and ISO offsets run from -14:00 to +14:00).",
                line,
                url,
            )
        if value is not None and self.tree.is_future(value):
            self._emit(
                "future-date",
                f"<{tag}> {format_w3c(value)} lies in the future; write when the content really "
                "changed (search engines distrust such dates).",
                line,
                url,
            )

    def _lastmod_seen(self, value: Lastmod, line: int | None) -> None:
        self._lastmods += 1
        first = self._lastmod
        if first is None:
            self._lastmod, self._lastmod_line = value, line
        elif self._uniform and (value != first or type(value) is not type(first)):
            self._uniform = False

    def url(self, entry: UrlEntry, flagged: bool = False) -> None:
        """Check one `<url>` (or text line, or feed item). `flagged`: the parser already reported its loc."""
        line = entry.line
        loc = self._normalise(entry.loc, line, flagged, "<loc>")
        if loc is None:
            return
        written = entry.loc
        self._in_scope(loc, line, "The URL", written)
        if "#" in loc:
            loc, _, fragment = loc.partition("#")
            self._emit(
                "invalid-url",
                f"The URL has a fragment (#{fragment[:100]}); search engines drop it, so it names the same "
                "page as the URL without it. Leave the fragment out.",
                line,
                written,
                Severity.WARNING,
            )
        tree = self.tree
        key = url_key(loc)
        pages = tree.pages
        size = len(pages)
        first = pages.setdefault(key, self.ordinal)
        if len(pages) == size:
            where = (
                "earlier in this sitemap"
                if first == self.ordinal
                else f"in {self._sources[first]}, another sitemap of this tree"
            )
            self._emit(
                "duplicate-url",
                f"The URL is already listed {where}; list each URL once (engines read the first).",
                line,
                written,
            )
            return
        lastmod = entry.lastmod
        if lastmod is not None:
            self._lastmod_seen(lastmod, line)
            self._dates(lastmod, "lastmod", line, written)
        news = entry.news
        if news is not None:
            self._dates(news.publication_date, "news:publication_date", line, written)
            if tree.is_old_news(news.publication_date):
                self._emit(
                    "news-too-old",
                    f"The article was published {format_w3c(news.publication_date)}, more than two "
                    "days ago; Google News reads only the last two days. Move it to a regular sitemap.",
                    line,
                    written,
                )
        for video in entry.videos:
            if video.publication_date is not None:
                self._dates(video.publication_date, "video:publication_date", line, written)
        if entry.alternates:
            self._alternates(loc, key, entry.alternates, line, written)

    def _alternates(
        self, loc: str, key: int, alternates: tuple[Alternate, ...], line: int | None, written: str
    ) -> None:
        pending = self.tree.pending
        has_self = False
        done: set[int] = set()
        for alt in alternates:
            href = _normal(alt.href)
            if href is None:
                continue
            if href == loc:
                has_self = True
                continue
            other = url_key(href)
            if other in done:
                continue
            done.add(other)
            reverse = other << 64 | key
            if reverse in pending:
                del pending[reverse]
            else:
                pending[key << 64 | other] = self.ordinal
        if not has_self:
            codes = ", ".join(sorted({a.hreflang for a in alternates}))
            self._emit(
                "hreflang-missing-self",
                f"The alternates ({codes}) do not include the page itself; add an <xhtml:link "
                'rel="alternate"> with this page\'s own hreflang and URL.',
                line,
                written,
            )

    def sitemap(self, entry: IndexEntry, flagged: bool = False) -> str | None:
        """Check one `<sitemap>` of an index; return its normalised URL when it is new in this run
        (to be validated), None when it is invalid or already seen (reported)."""
        line = entry.line
        loc = self._normalise(entry.loc, line, flagged, "<loc>")
        if loc is None:
            return None
        written = entry.loc
        self._in_scope(loc, line, "The child sitemap", written)
        if entry.lastmod is not None:
            self._lastmod_seen(entry.lastmod, line)
            self._dates(entry.lastmod, "lastmod", line, written)
        seen = self.tree.sitemaps
        if loc in seen:
            self._emit(
                "duplicate-url",
                "This sitemap is already listed (or is this index itself); list each sitemap once.",
                line,
                written,
            )
            return None
        seen.add(loc)
        return loc

    def finish(self) -> None:
        """File-level checks that need every entry: `lastmod-uniform`."""
        if self._lastmods >= UNIFORM_MIN and self._uniform and self._lastmod is not None:
            self._emit(
                "lastmod-uniform",
                f"All {self._lastmods:,} <lastmod> values are {format_w3c(self._lastmod)}: that looks "
                "like the time the sitemap was built, not when each page changed. Search engines then "
                "ignore lastmod; write each page's own modification time, or leave lastmod out.",
                self._lastmod_line,
                None,
            )
