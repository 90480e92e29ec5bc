"""The parser against 80 real sitemap files (../shared/data/real-sitemaps), read in place."""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.model import IndexEntry, UrlEntry
from sitemapkit.reader.parser import SitemapParser


@dataclass
class Read:
    entries: list[UrlEntry | IndexEntry]
    diagnostics: list[Diagnostic]
    parser: SitemapParser

    def codes(self) -> Counter[str]:
        return Counter(d.code for d in self.diagnostics)


NOT_TEXT = "078-text-sitemap-huge.txt"
"""Relative paths, one a line: a text body whose first line is not an http(s) URL is refused as one
`unsupported-format` (issue 12: a body that is not a sitemap is never echoed line by line)."""


def manifest(corpus: Path) -> list[dict[str, str]]:
    with open(corpus / "MANIFEST.tsv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    for row in rows:
        if row["file"] == NOT_TEXT:
            row["kind"] = "other"
    return rows


def read(path: Path, chunk: int = 8192) -> Read:
    diagnostics: list[Diagnostic] = []
    parser = SitemapParser(path.name, on_diagnostic=diagnostics.append)
    entries: list[UrlEntry | IndexEntry] = []
    with open(path, "rb") as f:
        while data := f.read(chunk):
            entries += parser.feed(data)
    entries += parser.close()
    return Read(entries, diagnostics, parser)


@pytest.fixture(scope="module")
def corpus(real_sitemaps: Path) -> dict[str, tuple[dict[str, str], Read]]:
    return {
        row["file"]: (row, read(real_sitemaps / "files" / row["file"])) for row in manifest(real_sitemaps)
    }


def test_every_file_is_read_without_crashing(corpus: dict[str, tuple[dict[str, str], Read]]) -> None:
    assert len(corpus) == 80
    for name, (row, r) in corpus.items():
        assert r.parser.count == len(r.entries), name
        kind = r.parser.kind or "other"
        assert kind == row["kind"], name
        assert r.parser.ok is (row["kind"] != "other"), name
        for e in r.entries:
            assert e.sitemap == name and e.line is not None and e.line >= 1


def test_counts_match_the_manifest(corpus: dict[str, tuple[dict[str, str], Read]]) -> None:
    """Every `<url>`/`<sitemap>` (or text line) is either returned or skipped with a diagnostic."""
    for name, (row, r) in corpus.items():
        if row["well_formed"] in ("yes", "n/a") and row["kind"] != "other":
            assert r.parser.count + r.parser.skipped == int(row["urls"]), name
            assert not r.parser.truncated, name
            assert "parse-error" not in r.codes(), name


def test_chunk_size_does_not_matter(real_sitemaps: Path) -> None:
    for name in (
        "020-docusaurus-multiline-root.xml",
        "047-yoast-news-9pars.xml",
        "074-video-unescaped-amp.xml",
    ):
        path = real_sitemaps / "files" / name
        small, big = read(path, 7), read(path, 1 << 20)
        assert small.entries == big.entries
        assert [(d.code, d.line, d.column) for d in small.diagnostics] == [
            (d.code, d.line, d.column) for d in big.diagnostics
        ]


def get(corpus: dict[str, tuple[dict[str, str], Read]], prefix: str) -> Read:
    (r,) = [r for name, (_, r) in corpus.items() if name.startswith(prefix)]
    return r


@pytest.mark.parametrize("prefix", ["003", "004", "005", "008", "080"])
def test_unrendered_templates(corpus: dict[str, tuple[dict[str, str], Read]], prefix: str) -> None:
    r = get(corpus, prefix)
    assert r.codes() == Counter({"unsupported-format": 1})
    assert "template" in r.diagnostics[0].message


def test_merge_conflict_and_html_page(corpus: dict[str, tuple[dict[str, str], Read]]) -> None:
    assert "merge-conflict" in get(corpus, "019").diagnostics[0].message
    assert "HTML" in get(corpus, "057").diagnostics[0].message


def test_broken_comment_after_root_keeps_the_entries(corpus: dict[str, tuple[dict[str, str], Read]]) -> None:
    r = get(corpus, "034")
    assert len(r.entries) == 1 and not r.parser.truncated
    (d,) = r.diagnostics
    assert (d.code, d.line) == ("parse-error", 22)


def test_unescaped_ampersands_lose_no_url(corpus: dict[str, tuple[dict[str, str], Read]]) -> None:
    small = get(corpus, "074")
    assert len(small.entries) == 1 and [(d.code, d.line) for d in small.diagnostics] == [("parse-error", 9)]
    video = small.entries[0].videos[0]  # type: ignore[union-attr]
    assert video.description is not None and "Azurite Medical & Wellness" in video.description
    large = get(corpus, "075")
    assert len(large.entries) == 1511 and not large.parser.truncated
    first = next(d for d in large.diagnostics if d.code == "parse-error")
    assert first.line == 4319
    # after the first raw '&' the escaped ones still read correctly
    assert all("&amp;" not in e.loc for e in large.entries)


def test_relative_locs_are_skipped(corpus: dict[str, tuple[dict[str, str], Read]]) -> None:
    for prefix, n in (
        ("010", 2),
        ("011", 13),
        ("016", 3),
        ("041", 8),
        ("053", 7),
        ("056", 5660),
    ):
        r = get(corpus, prefix)
        assert r.entries == [] and r.parser.skipped == n, prefix
        assert sum(1 for d in r.diagnostics if d.code == "invalid-url" and "skipped" in d.message) == n
    refused = get(corpus, "078")
    assert [d.code for d in refused.diagnostics] == ["unsupported-format"] and refused.entries == []


def test_quirks_are_reported(corpus: dict[str, tuple[dict[str, str], Read]]) -> None:
    assert get(corpus, "064").codes() == Counter({"invalid-value": 1})  # <loc> with a leading space
    assert get(corpus, "067").codes() == Counter({"invalid-date": 2})  # 2025-8-10
    assert get(corpus, "068").codes()["invalid-url"] == 30  # raw Japanese in <loc>, read as written
    assert len(get(corpus, "068").entries) == 43
    for prefix in ("050", "062", "069", "070", "071"):
        assert get(corpus, prefix).codes() == Counter({"empty-sitemap": 1}), prefix
    django = get(corpus, "079").codes()
    assert django["incorrect-namespace"] == 1 and django["unknown-tag"] == 2 and django["missing-tag"] == 1


def test_extensions_in_real_files(corpus: dict[str, tuple[dict[str, str], Read]]) -> None:
    news = get(corpus, "047").entries
    assert all(isinstance(e, UrlEntry) and e.news is not None for e in news)
    hreflang = get(corpus, "031").entries
    assert any(isinstance(e, UrlEntry) and e.alternates for e in hreflang)
    images = get(corpus, "073").entries
    assert sum(len(e.images) for e in images if isinstance(e, UrlEntry)) > 4000


class _GeneralParser(SitemapParser):
    """Every <url> read from lxml with every check (the fast paths off)."""

    _ELISION = False
    _FAST_READ = False


def _outcome(cls: type[SitemapParser], path: Path, chunk: int) -> tuple[object, ...]:
    diagnostics: list[Diagnostic] = []
    parser = cls(path.name, on_diagnostic=diagnostics.append)
    entries: list[UrlEntry | IndexEntry] = []
    with open(path, "rb") as f:
        while data := f.read(chunk):
            entries += parser.feed(data)
    entries += parser.close()
    return (
        entries,
        [e.line for e in entries],
        [(d.code, d.severity, d.line, d.column, d.message, d.url) for d in diagnostics],
        (parser.kind, parser.ok, parser.truncated, parser.count, parser.skipped),
    )


def test_the_fast_paths_read_every_real_file_as_the_general_path(real_sitemaps: Path) -> None:
    for path in sorted((real_sitemaps / "files").iterdir()):
        general = _outcome(_GeneralParser, path, 1 << 20)
        for chunk in (1 << 20, 4093):
            assert _outcome(SitemapParser, path, chunk) == general, (path.name, chunk)
