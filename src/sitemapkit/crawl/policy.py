"""What the crawler may fetch: scope and filters, query-string rules, the trap guard. (How fast, and what
robots.txt allows, is the politeness layer's: `sitemapkit.reader.polite`.)"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from sitemapkit.core.constants import MAX_URL_LENGTH
from sitemapkit.core.urls import Scope
from sitemapkit.generator.rules import compile_pattern, url_path

REASONS: dict[str, str] = {
    "redirect-blocked": "answered with a redirect to a URL robots.txt disallows; the target was not fetched",
    "redirect": "answered with a redirect (3xx or meta refresh): its target is listed instead, if listable; "
    "also a redirect loop or too many hops",
    "noindex": "robots noindex, in <meta name=robots> (or googlebot) or an X-Robots-Tag header for all, "
    "googlebot or sitemapkit (unavailable_after a date passed counts)",
    "canonical": "its <link rel=canonical> (or Link: rel=canonical header) names another URL, which is "
    "crawled and listed instead; also a URL with tracking parameters (utm_*), the same page as without",
    "robots": "robots.txt disallows it for the crawler's user agent",
    "status-4xx": "answered 4xx (404, 410, 403, 429 after the retries ...)",
    "status-5xx": "answered 5xx after the retries",
    "not-html": "answered 200 with a content type other than HTML (an image, a PDF, a feed ...)",
    "out-of-scope": "another scheme, host or port, outside the start URL's folder, or left out by "
    "--include/--exclude",
    "trap": "one more in a long run of links to the same URL pattern (a calendar, endless pagination, a "
    "session id in the path, a meta refresh chain, ever longer URLs); the pages of that run already "
    "fetched are not listed either",
    "too-long": "a URL longer than 2,048 characters (the sitemap protocol's limit: it could not be listed)",
    "too-deep": "a path of more than 32 segments",
    "repeated-path": "one path segment three times or more (/a/b/a/b/a/b: relative links resolved again "
    "and again)",
    "duplicate": "the same content as a page already crawled (its links are not followed either)",
    "render-blocked": "requested by a page while --render ran it (a script's navigation, fetch or frame) "
    "and refused: a private address, another site, or robots.txt; not fetched",
    "soft-404": "answers 200 but its title or heading says it is not there (as the audit's url-soft-404)",
    "max-depth": "further than --max-depth links from a seed",
    "max-pages": "still queued when --max-pages pages had been fetched",
    "error": "could not be fetched or read: connection failed, timed out, too large, not parsable HTML",
}
"""Every reason a URL is left out of the sitemap, and what it means."""

TRACKING_PARAMS = frozenset(
    {
        "gclid",
        "fbclid",
        "msclkid",
        "dclid",
        "yclid",
        "mc_cid",
        "mc_eid",
        "_ga",
        "_gl",
        "phpsessid",
        "jsessionid",
    }
)
"""Query parameters that never make a different page; dropped from every URL (and any `utm_*`)."""

DEFAULT_MAX_PAGES = 100_000
"""Pages a crawl fetches at most unless told otherwise (`--max-pages 0` lifts the limit)."""
MAX_PATH_SEGMENTS = 32
REPEATED_SEGMENT = 3
"""A path with one segment this many times is a loop of relative links (`/a/b/a/b/a/b`)."""

_DIGITS = re.compile(r"\d+")
_TOKEN = re.compile(r"[A-Za-z0-9]{8,}")
_VOWELS = frozenset("aeiouyAEIOUY")


def _looks_random(token: str) -> bool:
    """Whether a run of 8+ letters and digits reads as a generated token (a session id, a hash), not a
    word: digits among letters, case changing inside it, or too few vowels for a word."""
    if not token.isalpha():
        return not token.isdigit()
    body = token[1:]
    if any(c.isupper() for c in body) and any(c.islower() for c in body):
        return True
    vowels = sum(c in _VOWELS for c in token)
    return vowels * 4 < len(token) or _consonant_run(token) >= 5


def _consonant_run(token: str) -> int:
    run = best = 0
    for c in token:
        run = 0 if c in _VOWELS else run + 1
        best = max(best, run)
    return best


def _fold(segment: str) -> str:
    segment = _TOKEN.sub(lambda m: "X" if _looks_random(m.group(0)) else m.group(0), segment)
    return _DIGITS.sub("N", segment)


def url_pattern(url: str) -> str:
    """The shape of a URL for the trap guard: its path with every run of digits as `N` and every
    generated-looking token (a session id, a hash: 8+ letters and digits that do not read as a word) as
    `X`, and its query's parameter names (`/calendar/N/N?view`, `/s/X/about`)."""
    parts = urlsplit(url)
    names = "&".join(sorted({p.split("=", 1)[0] for p in parts.query.split("&") if p}))
    return _fold(parts.path) + ("?" + names if names else "")


def _extends(url: str, parent: str) -> bool:
    """`url` is `parent` with more characters in its last segment or query (not a folder below it)."""
    return (
        len(url) > len(parent)
        and url.startswith(parent)
        and not parent.endswith("/")
        and "/" not in url[len(parent) :]
    )


def path_problem(url: str) -> tuple[str, str] | None:
    """Why a URL's shape alone marks a trap (too long, too deep, a segment repeated), as (reason,
    detail); None when it does not."""
    if len(url) >= MAX_URL_LENGTH:  # as `normalize_url` refuses it: a sitemap could not list it
        return "too-long", f"{len(url):,} characters (a sitemap URL must be under {MAX_URL_LENGTH:,})"
    segments = [s for s in urlsplit(url).path.split("/") if s]
    if len(segments) > MAX_PATH_SEGMENTS:
        return "too-deep", f"{len(segments)} path segments (at most {MAX_PATH_SEGMENTS})"
    counts: dict[str, int] = {}
    for s in segments:
        counts[s] = counts.get(s, 0) + 1
        if counts[s] >= REPEATED_SEGMENT:
            return "repeated-path", f"the segment {s[:60]!r} appears {REPEATED_SEGMENT} times or more"
    return None


@dataclass
class CrawlRules:
    """Which URLs the crawl fetches: in `scope` (the start URL's folder, plus allowed hosts), kept by the
    `include`/`exclude` patterns (globs or `re:` on the path and query, as for `generate`), within
    `max_depth` and not a trap (`trap_limit` links in a row between URLs of one pattern; a URL too long,
    too deep or with a segment repeated: `path_problem`)."""

    scope: Scope
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    strip_query: bool = False
    keep_query: tuple[str, ...] = ()
    max_depth: int | None = None
    trap_limit: int = 100
    _include: tuple[Callable[[str], bool], ...] = field(default=(), init=False)
    _exclude: tuple[Callable[[str], bool], ...] = field(default=(), init=False)
    _hops: set[str] = field(default_factory=set, init=False)

    def __post_init__(self) -> None:
        self._include = tuple(compile_pattern(p) for p in self.include)
        self._exclude = tuple(compile_pattern(p) for p in self.exclude)

    def clean(self, url: str) -> str:
        """`url` with the query-string rules applied: tracking parameters always dropped; with
        `strip_query` every parameter but those of `keep_query`, and with `keep_query` alone likewise."""
        if "?" not in url:
            return url
        head, _, query = url.partition("?")
        keep = self.keep_query
        params = []
        for p in query.split("&"):
            name = p.split("=", 1)[0]
            low = name.lower()
            if not p or low in TRACKING_PARAMS or low.startswith("utm_"):
                continue
            if (self.strip_query or keep) and name not in keep:
                continue
            params.append(p)
        return f"{head}?{'&'.join(params)}" if params else head

    def judge(self, url: str, depth: int, chain: int) -> tuple[str, str] | None:
        """Why `url` is not to be fetched, as (reason, detail); None when it is."""
        if url not in self.scope:
            return "out-of-scope", self.scope.explain(url)
        if self._include or self._exclude:
            path = url_path(url)
            if self._include and not any(m(path) for m in self._include):
                return "out-of-scope", "matches no --include pattern"
            for pattern, matches in zip(self.exclude, self._exclude, strict=True):
                if matches(path):
                    return "out-of-scope", f"matches --exclude {pattern}"
        if self.max_depth is not None and depth > self.max_depth:
            return "max-depth", f"{depth} links from a seed (--max-depth {self.max_depth})"
        if (problem := path_problem(url)) is not None:
            return problem
        if chain > self.trap_limit:
            return "trap", f"more than {self.trap_limit} links in a row to {url_pattern(url)}"
        return None

    def chain(self, url: str, parent: str | None, parent_chain: int) -> int:
        """How many links in a row, ending at `url`, lead between URLs of one pattern; a URL that
        extends its parent's last segment (`/a` -> `/aa`, `/p?q=x` -> `/p?q=xx`, not `/` -> `/a`) or a
        meta refresh target (`note_hop`) continues its parent's run whatever its pattern."""
        if parent is None:
            return 0
        if url in self._hops:
            return parent_chain + 1
        if url_pattern(url) == url_pattern(parent) or _extends(url, parent):
            return parent_chain + 1
        return 0

    def note_hop(self, target: str) -> None:
        """`target` is reached by a meta refresh: it continues the run of the page that refreshes."""
        if len(self._hops) > 10_000:
            self._hops.clear()
        self._hops.add(target)
