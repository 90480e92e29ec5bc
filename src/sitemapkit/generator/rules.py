"""URL rules for generation: include/exclude filters and per-pattern defaults (changefreq, priority).

A pattern matches a URL's path and query (`/blog/post?id=1`), never its scheme or host, as written in
the URL (`/caf%C3%A9/`) or decoded (`/café/`): either form of a pattern works.

- a glob (`/blog/*`, `*.pdf`, `/docs/**/index.html`) matched against the whole path with `fnmatch`
  rules (case-sensitive, `*` also crosses `/`); it must start with `/` or `*`, since it is matched
  against the whole path;
- `re:` followed by a regular expression, searched in the path (`re:^/tag/[a-z]+/$`).

`UrlFilter`s are sitemap_gen.py's `<filter>`s: matched against the whole URL, in order, the first that
matches decides (`pass` keeps the URL, `drop` leaves it out); they come before include and exclude.

>>> rules = UrlRules(include=("/blog/*",), exclude=("*/drafts/*",),
...                  defaults=(Default("/blog/*", changefreq="weekly", priority=0.6),))
>>> rules.allows("https://example.com/blog/hello"), rules.allows("https://example.com/blog/drafts/x")
(True, False)
>>> rules.allows("https://example.com/about")
False
>>> rules.apply(UrlEntry("https://example.com/blog/hello")).changefreq
'weekly'
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import unquote, urlsplit

from sitemapkit.core.constants import CHANGEFREQS
from sitemapkit.core.errors import UsageError
from sitemapkit.core.model import UrlEntry

Matcher = Callable[[str], bool]


def compile_pattern(pattern: str) -> Matcher:
    """A predicate on a URL's path (and query) for a glob or a `re:` regular expression.
    Raises `UsageError` for an empty pattern or an invalid expression."""
    if pattern.startswith("re:"):
        try:
            regex = re.compile(pattern[3:])
        except re.error as exc:
            raise UsageError(f"invalid regular expression {pattern[3:]!r}: {exc}") from None
        return lambda path: regex.search(path) is not None
    if not pattern:
        raise UsageError("empty pattern")
    if not pattern.startswith(("/", "*")):
        raise UsageError(
            f"the glob {pattern!r} is matched against the whole path, which starts with '/': "
            f"write '/{pattern}' or '*{pattern}'"
        )
    glob = re.compile(fnmatch.translate(pattern))
    return lambda path: glob.match(path) is not None


def url_path(url: str) -> str:
    """The part of `url` that patterns see: its path (at least `/`) and `?query`, if any."""
    parts = urlsplit(url)
    path = parts.path or "/"
    return f"{path}?{parts.query}" if parts.query else path


def _forms(path: str) -> tuple[str, ...]:
    """The path as written and, when it has %-escapes, decoded (so `/café/*` matches `/caf%C3%A9/x`)."""
    if "%" not in path:
        return (path,)
    return path, unquote(path)


@dataclass(frozen=True)
class Default:
    """Values for the URLs that `match` a pattern and lack them in their source."""

    match: str
    changefreq: str | None = None
    priority: float | None = None

    def __post_init__(self) -> None:
        if self.changefreq is not None and self.changefreq not in CHANGEFREQS:
            raise UsageError(
                f"changefreq must be one of {', '.join(sorted(CHANGEFREQS))} (got {self.changefreq!r})"
            )
        if self.priority is not None and not 0.0 <= self.priority <= 1.0:
            raise UsageError(f"priority must be from 0.0 to 1.0 (got {self.priority})")


@dataclass(frozen=True)
class UrlFilter:
    """One ordered filter on the whole URL, as sitemap_gen.py's `<filter action type pattern>`:
    `wildcard` is a case-sensitive glob (`*` and `?`, `fnmatchcase`), `regexp` a regular expression
    searched in the URL."""

    pattern: str
    action: Literal["pass", "drop"] = "drop"
    type: Literal["wildcard", "regexp"] = "wildcard"
    _match: Matcher = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.pattern:
            raise UsageError("a filter needs a pattern")
        if self.action not in ("pass", "drop"):
            raise UsageError(f"a filter's action must be pass or drop (got {self.action!r})")
        if self.type not in ("wildcard", "regexp"):
            raise UsageError(f"a filter's type must be wildcard or regexp (got {self.type!r})")
        if self.type == "regexp":
            try:
                regex = re.compile(self.pattern)
            except re.error as exc:
                raise UsageError(f"invalid regular expression {self.pattern!r}: {exc}") from None
            object.__setattr__(self, "_match", lambda url: regex.search(url) is not None)
        else:
            glob = re.compile(fnmatch.translate(self.pattern))
            object.__setattr__(self, "_match", lambda url: glob.match(url) is not None)

    def decide(self, url: str) -> bool | None:
        """True (keep) or False (drop) when the filter matches `url`, None when it does not."""
        return (self.action == "pass") if self._match(url) else None


class UrlRules:
    """Include/exclude filters and per-pattern defaults, applied to every URL of a run.

    A URL is kept when it matches some `include` pattern (or there are none) and no `exclude` pattern.
    The first `Default` whose pattern matches fills in the changefreq and priority the source left out.
    """

    def __init__(
        self,
        include: tuple[str, ...] = (),
        exclude: tuple[str, ...] = (),
        defaults: tuple[Default, ...] = (),
        filters: tuple[UrlFilter, ...] = (),
    ) -> None:
        self.filters = filters
        self.include = tuple(compile_pattern(p) for p in include)
        self.exclude = tuple(compile_pattern(p) for p in exclude)
        self.defaults = tuple((compile_pattern(d.match), d) for d in defaults)

    def __bool__(self) -> bool:
        return bool(self.include or self.exclude or self.defaults or self.filters)

    def allows(self, url: str) -> bool:
        """Whether the filters keep `url`."""
        for each in self.filters:
            decision = each.decide(url)
            if decision is not None:
                return decision
        paths = _forms(url_path(url))
        if self.include and not any(m(p) for m in self.include for p in paths):
            return False
        return not any(m(p) for m in self.exclude for p in paths)

    def apply(self, entry: UrlEntry) -> UrlEntry:
        """`entry` with the first matching default's values where its own are missing."""
        if not self.defaults or (entry.changefreq is not None and entry.priority is not None):
            return entry
        paths = _forms(url_path(entry.loc))
        for matches, default in self.defaults:
            if any(matches(p) for p in paths):
                changes: dict[str, object] = {}
                if entry.changefreq is None and default.changefreq is not None:
                    changes["changefreq"] = default.changefreq
                if entry.priority is None and default.priority is not None:
                    changes["priority"] = default.priority
                return dataclasses.replace(entry, **changes) if changes else entry  # type: ignore[arg-type]
        return entry
