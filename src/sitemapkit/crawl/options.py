"""The settings of a crawl, an audit and a publication, grouped as httpx groups its `Timeout` and `Limits`:
each setting declared once, with its default and what it means, in a frozen dataclass.

- `NetworkOptions`: how a run fetches (requests in flight, rate, User-Agent, timeout, retries, private
  addresses). `crawl` and `audit` take it.
- `ScopeOptions`: what a crawl fetches (hosts, include/exclude patterns, limits, query strings, seeds).
- `PublishOptions`: how the sitemaps are written and published (gzip, sizes, index, names, XSL, hreflang,
  robots.txt, state store, strictness): `crawl` takes it, and its fields are `generate`'s parameters of
  the same names (`PublishOptions.generate_kwargs`).

The functions also take each field as a keyword argument (`crawl(url, out, rate=2, gzip=True)`): the
`*Settings` typed dicts here are those keywords (mypy checks them), and `merged` puts them in their groups,
a keyword winning over the field of an object given too. A bad value raises `UsageError` when the object is
made, before anything is fetched or written.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, Literal, TypedDict, TypeVar

from sitemapkit.core.constants import DEFAULT_RETRIES, MAX_BYTES, MAX_URLS, USER_AGENT
from sitemapkit.core.errors import UsageError
from sitemapkit.crawl.policy import DEFAULT_MAX_PAGES

MAX_CONNECT_TIMEOUT: Final = 10.0
"""Connecting waits at most this long (or the timeout, if shorter): a host that takes longer to accept a
connection is as good as down, and a crawl or an audit should not wait 30 s on each of its URLs."""

IndexMode = Literal["auto", "always", "never"]
HreflangMode = Literal["auto", "complete", "keep"]

G = TypeVar("G")


class UnknownSettingError(UsageError, TypeError):
    """A keyword no option group has (`crawl(url, out, gzipp=True)`): a `UsageError`, and a `TypeError` as an
    unexpected keyword argument is in Python."""


def _tuple(self: object, name: str) -> None:
    """Store the iterable field `name` as a tuple (a list or a generator given is kept as one)."""
    value = getattr(self, name)
    if isinstance(value, str):
        raise UsageError(f"{name} takes a list of strings, not the string {value!r}")
    object.__setattr__(self, name, tuple(value))


@dataclass(frozen=True, slots=True)
class NetworkOptions:
    """How a run fetches: how many requests at once and how fast, as whom, how patiently, and from which
    addresses. Shared by `crawl` and `audit`; every field has a safe default."""

    concurrency: int = 2
    """Requests in flight to one host, at most (1 to 64)."""
    rate: float | None = None
    """At most this many requests a second to one host; a longer robots.txt `Crawl-delay` wins. None: no
    limit but the `Crawl-delay`."""
    user_agent: str = USER_AGENT
    """The User-Agent header; its first word is the name robots.txt rules are matched against."""
    timeout: float = 30.0
    """Seconds to wait for an answer, and between two pieces of it; connecting waits at most 10 of them."""
    retries: int = DEFAULT_RETRIES
    """Further attempts of a request answered 429 or 5xx, or that got no answer (`Retry-After` honoured)."""
    allow_private: bool = False
    """Also fetch from loopback, private and link-local addresses; by default refused, except at the origin
    of the URL the run was given (the fetch policy, see the README's Security section)."""

    def __post_init__(self) -> None:
        if not 1 <= self.concurrency <= 64:
            raise UsageError(f"concurrency must be 1 to 64 (got {self.concurrency})")
        if self.rate is not None and not self.rate > 0:
            raise UsageError(f"rate must be more than 0 (got {self.rate})")
        if not self.timeout > 0:
            raise UsageError(f"timeout must be more than 0 seconds (got {self.timeout})")
        if not 0 <= self.retries <= 10:
            raise UsageError(f"retries must be 0 to 10 (got {self.retries})")
        if not self.user_agent.strip():
            raise UsageError("user_agent must not be empty")

    @property
    def connect_timeout(self) -> float:
        """Seconds connecting may take: `timeout`, at most `MAX_CONNECT_TIMEOUT`."""
        return min(self.timeout, MAX_CONNECT_TIMEOUT)


@dataclass(frozen=True, slots=True)
class ScopeOptions:
    """What a crawl fetches: the start URL's scheme, host, port and folder (and `allow_hosts`), the paths
    `include` keeps and `exclude` drops, within `max_depth` links and `max_pages` fetches."""

    allow_hosts: tuple[str, ...] = ()
    """Other hosts the crawl fetches and the sitemaps may list (cross-submission through robots.txt)."""
    include: tuple[str, ...] = ()
    """Only paths matching one of these (globs from `/`, or `re:` and a regular expression) are fetched."""
    exclude: tuple[str, ...] = ()
    """Paths matching one of these are not fetched."""
    max_pages: int | None = DEFAULT_MAX_PAGES
    """Fetch at most this many pages (a bound on any trap the guards miss); None or 0: no limit."""
    max_depth: int | None = None
    """Follow at most this many links from a seed; None: no limit."""
    strip_query: bool = False
    """Drop query strings (all parameters but `keep_query`); tracking parameters are always dropped."""
    keep_query: tuple[str, ...] = ()
    """The query parameters `strip_query` keeps."""
    trap_limit: int = 100
    """Stop after this many links in a row between URLs of one pattern (a calendar)."""
    sitemaps: bool = True
    """Seed the crawl with the URLs of the site's existing sitemaps."""

    def __post_init__(self) -> None:
        for name in ("allow_hosts", "include", "exclude", "keep_query"):
            _tuple(self, name)
        if self.max_pages is not None and self.max_pages < 0:
            raise UsageError(f"max_pages must be 0 (no limit) or more (got {self.max_pages})")
        if self.max_depth is not None and self.max_depth < 0:
            raise UsageError(f"max_depth must be 0 or more (got {self.max_depth})")
        if self.trap_limit < 1:
            raise UsageError(f"trap_limit must be at least 1 (got {self.trap_limit})")


@dataclass(frozen=True, slots=True)
class PublishOptions:
    """How the sitemaps are written and published: the parameters of the same names of `generate`, which
    documents each (`crawl` publishes through a `generate` run)."""

    gzip: bool = False
    """Write `.xml.gz` files."""
    gzip_level: int = 6
    """The gzip compression level, 0 to 9."""
    max_urls: int = MAX_URLS
    """URLs per sitemap file, at most (the protocol's limit is 50,000)."""
    max_bytes: int = MAX_BYTES
    """Uncompressed bytes per sitemap file, header and footer included, at most (the limit: 50 MiB)."""
    index: IndexMode = "auto"
    """Write a sitemap index: when there are several files (`auto`), `always`, or `never`."""
    name: str = "sitemap"
    """The file name prefix (`sitemap.xml`, `sitemap-1.xml`, ...); a trailing `.xml` or `.xml.gz` is
    dropped."""
    xsl: str | None = None
    """An XSL stylesheet reference; `default` writes a bundled one next to the sitemaps."""
    hreflang: HreflangMode = "auto"
    """Complete hreflang groups (`complete`), keep alternates as given (`keep`), or complete them when a
    source can carry alternates (`auto`)."""
    robots: str | os.PathLike[str] | None = None
    """A robots.txt to list the published index (or only sitemap) in, created if missing."""
    state: str | os.PathLike[str] | None = None
    """The SQLite state store: honest lastmod, removals and `sitemapkit diff`."""
    replace_existing: bool = False
    """Take over sitemap files of the same names that another tool wrote (by default publishing over them is
    refused)."""
    strict: bool = False
    """Any problem means `StrictModeError` and nothing published."""

    def __post_init__(self) -> None:
        if not 0 <= self.gzip_level <= 9:
            raise UsageError(f"gzip_level must be 0 to 9 (got {self.gzip_level})")
        if not 1 <= self.max_urls <= MAX_URLS:
            raise UsageError(f"max_urls must be 1 to {MAX_URLS:,} (got {self.max_urls})")
        if not 1 <= self.max_bytes <= MAX_BYTES:
            raise UsageError(f"max_bytes must be 1 to {MAX_BYTES:,} (got {self.max_bytes})")
        if self.index not in ("auto", "always", "never"):
            raise UsageError(f"index must be 'auto', 'always' or 'never' (got {self.index!r})")
        if self.hreflang not in ("auto", "complete", "keep"):
            raise UsageError(f"hreflang must be 'auto', 'complete' or 'keep' (got {self.hreflang!r})")
        name = (
            self.name.removesuffix(".gz").removesuffix(".xml")
            if self.name.endswith((".xml", ".xml.gz"))
            else self.name
        )
        if not name or "/" in name or os.sep in name:
            raise UsageError(f"name must be a file name prefix such as 'sitemap' (got {self.name!r})")
        object.__setattr__(self, "name", name)

    def generate_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of `generate` these options are."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


class NetworkSettings(TypedDict, total=False):
    """`NetworkOptions`' fields, as keyword arguments."""

    concurrency: int
    rate: float | None
    user_agent: str
    timeout: float
    retries: int
    allow_private: bool


class ScopeSettings(TypedDict, total=False):
    """`ScopeOptions`' fields, as keyword arguments."""

    allow_hosts: Iterable[str]
    include: Iterable[str]
    exclude: Iterable[str]
    max_pages: int | None
    max_depth: int | None
    strip_query: bool
    keep_query: Iterable[str]
    trap_limit: int
    sitemaps: bool


class PublishSettings(TypedDict, total=False):
    """`PublishOptions`' fields, as keyword arguments."""

    gzip: bool
    gzip_level: int
    max_urls: int
    max_bytes: int
    index: IndexMode
    name: str
    xsl: str | None
    hreflang: HreflangMode
    robots: str | os.PathLike[str] | None
    state: str | os.PathLike[str] | None
    replace_existing: bool
    strict: bool


class CrawlSettings(ScopeSettings, NetworkSettings, PublishSettings, total=False):
    """The keyword arguments of `crawl` that are fields of its option groups."""


SETTINGS: dict[type[Any], type[Any]] = {
    NetworkOptions: NetworkSettings,
    ScopeOptions: ScopeSettings,
    PublishOptions: PublishSettings,
}
"""Each option group and the typed dict of its keywords (tests/crawl/test_options.py holds them equal)."""


def merged(option: G | None, kind: type[G], settings: dict[str, Any]) -> G:
    """`option` (or the defaults of `kind`) with the fields `settings` names set to their values; those
    keywords are taken out of `settings`."""
    names = {f.name for f in dataclasses.fields(kind)}  # type: ignore[arg-type]
    mine = {k: settings.pop(k) for k in [k for k in settings if k in names]}
    if option is None:
        return kind(**mine)
    if not isinstance(option, kind):
        raise UsageError(f"expected a {kind.__name__}, got {type(option).__name__}")
    return dataclasses.replace(option, **mine) if mine else option  # type: ignore[type-var]


def no_more(function: str, settings: dict[str, Any]) -> None:
    """Refuse the keywords `merged` left: no group has them."""
    if settings:
        name = sorted(settings)[0]
        raise UnknownSettingError(f"{function}() got an unexpected keyword argument {name!r}")


__all__ = [
    "CrawlSettings",
    "NetworkOptions",
    "NetworkSettings",
    "PublishOptions",
    "PublishSettings",
    "ScopeOptions",
    "ScopeSettings",
    "UnknownSettingError",
    "merged",
    "no_more",
]
