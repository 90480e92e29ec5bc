"""URL rules for generation: include/exclude filters and per-pattern defaults (changefreq, priority).

A pattern matches a URL's path and query (`/blog/post?id=1`), never its scheme or host, as written in
the URL (`/caf%C3%A9/`) or decoded (`/café/`): either form of a pattern works.

- a glob (`/blog/*`, `*.pdf`, `/docs/**/index.html`) matched against the whole path with `fnmatch`
  rules (case-sensitive, `*` also crosses `/`); it must start with `/` or `*`, since it is matched
  against the whole path;
- `re:` followed by a regular expression, searched in the path (`re:^/tag/[a-z]+/$`).

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
from dataclasses import dataclass
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


class UrlRules:
    """Include/exclude filters and per-pattern defaults, applied to every URL of a run.

    A URL is kept when it matches some `include` pattern (or there are none) and no `exclude` pattern.
    The first `Default` whose pattern matches fills in the changefreq and priority the source left out.
    """

    def __init__(
        self, include: tuple[str, ...] = (), exclude: tuple[str, ...] = (), defaults: tuple[Default, ...] = ()
    ) -> None:
        self.include = tuple(compile_pattern(p) for p in include)
        self.exclude = tuple(compile_pattern(p) for p in exclude)
        self.defaults = tuple((compile_pattern(d.match), d) for d in defaults)
        self._patterns = (*(("include", p) for p in include), *(("exclude", p) for p in exclude))
        self._hits = [0] * len(self._patterns)

    def __bool__(self) -> bool:
        return bool(self.include or self.exclude or self.defaults)

    def allows(self, url: str) -> bool:
        """Whether the filters keep `url` (and count, for `unmatched`, which patterns matched it)."""
        paths = _forms(url_path(url))
        hits = self._hits
        if self.include:
            found = next((i for i, m in enumerate(self.include) if any(m(p) for p in paths)), None)
            if found is None:
                return False
            hits[found] += 1
        offset = len(self.include)
        for i, m in enumerate(self.exclude):
            if any(m(p) for p in paths):
                hits[offset + i] += 1
                return False
        return True

    def unmatched(self) -> list[tuple[str, str]]:
        """The (kind, pattern) of the include and exclude patterns that matched no URL so far (a typo, or a
        pattern written for file names rather than URL paths)."""
        return [pattern for pattern, hits in zip(self._patterns, self._hits, strict=True) if not hits]

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
