"""URL rules: globs and regexes on the path, as written or decoded; per-pattern defaults."""

from __future__ import annotations

import pytest

from sitemapkit.core.errors import UsageError
from sitemapkit.core.model import UrlEntry
from sitemapkit.generator.rules import Default, UrlRules, compile_pattern

U = "https://example.com"


@pytest.mark.parametrize(
    ("pattern", "url", "matches"),
    [
        ("/blog/*", "/blog/a/b", True),
        ("/blog/*", "/blog", False),
        ("*.pdf", "/docs/a.pdf", True),
        ("*.pdf", "/docs/a.pdf?dl=1", False),  # the query is part of what patterns see
        ("*.pdf*", "/docs/a.pdf?dl=1", True),
        ("/café/*", "/caf%C3%A9/menu", True),  # decoded form
        ("/caf%C3%A9/*", "/caf%C3%A9/menu", True),  # as written
        ("/a b/*", "/a%20b/x", True),
        ("re:^/tag/[a-z]+/$", "/tag/python/", True),
        ("re:^/tag/[a-z]+/$", "/tag/Python/", False),
        ("re:café", "/caf%C3%A9", True),
        ("/Blog/*", "/blog/x", False),  # case-sensitive
    ],
)
def test_patterns_match_the_path(pattern: str, url: str, matches: bool) -> None:
    assert UrlRules(include=(pattern,)).allows(U + url) is matches


@pytest.mark.parametrize("pattern", ["", "blog/*", "re:(unclosed"])
def test_bad_patterns_are_usage_errors(pattern: str) -> None:
    with pytest.raises(UsageError):
        compile_pattern(pattern)


def test_exclude_wins_and_defaults_fill_only_what_is_missing() -> None:
    rules = UrlRules(
        include=("/blog/*", "/shop/*"),
        exclude=("*/drafts/*",),
        defaults=(Default("/blog/*", "weekly", 0.6), Default("/*", priority=0.1)),
    )
    assert (
        rules.allows(U + "/blog/x") and not rules.allows(U + "/blog/drafts/x") and not rules.allows(U + "/")
    )
    assert rules.apply(UrlEntry(U + "/blog/x")) == UrlEntry(U + "/blog/x", changefreq="weekly", priority=0.6)
    kept = UrlEntry(U + "/blog/y", changefreq="daily")
    assert rules.apply(kept) == UrlEntry(U + "/blog/y", changefreq="daily", priority=0.6)
    assert rules.apply(UrlEntry(U + "/shop/z")).priority == 0.1
    with pytest.raises(UsageError, match="changefreq must be one of"):
        Default("/*", changefreq="sometimes")
    with pytest.raises(UsageError, match=r"priority must be from 0\.0 to 1\.0"):
        Default("/*", priority=1.5)
