"""A text sitemap whose lines stop being URLs (an internal file served by mistake) is not echoed line by line,
and a value that is not a URL is quoted short and escaped."""

from __future__ import annotations

from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.reader.parser import SitemapParser

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def read(data: bytes, chunk: int | None = None) -> tuple[list[str], list[Diagnostic], SitemapParser]:
    diagnostics: list[Diagnostic] = []
    parser = SitemapParser("s.txt", on_diagnostic=diagnostics.append)
    locs: list[str] = []
    step = chunk or max(1, len(data))
    for i in range(0, len(data), step):
        locs += [e.loc for e in parser.feed(data[i : i + step])]
    locs += [e.loc for e in parser.close()]
    return locs, diagnostics, parser


def test_an_internal_file_after_a_url_is_not_read_past_five_lines() -> None:
    lines = ["https://e.com/a", "[default]"] + [f"Key{i}={SECRET}{i}" for i in range(40)]
    data = "\n".join(lines).encode()
    for chunk in (None, 1, 50):
        locs, diagnostics, parser = read(data, chunk)
        assert locs == ["https://e.com/a"]
        assert parser.truncated
        assert [d.code for d in diagnostics] == ["invalid-url"] * 5  # four lines, then one to stop
        assert [d.line for d in diagnostics] == [2, 3, 4, 5, 6]
        assert "Lines 2 to 6 are not URLs" in diagnostics[-1].message
        assert SECRET not in diagnostics[-1].message
        shown = "\n".join(f"{d.message} {d.url}" for d in diagnostics)
        assert "Key4=" not in shown and "Key39=" not in shown  # nothing of the lines after the stop


def test_a_text_sitemap_with_a_few_bad_lines_is_read_through() -> None:
    lines = ["https://e.com/a", "oops", "not a url", "/relative", "mailto:x@e.com", "https://e.com/b", "x"]
    locs, diagnostics, parser = read("\n".join(lines).encode())
    assert locs == ["https://e.com/a", "https://e.com/b"]
    assert [d.code for d in diagnostics] == ["invalid-url"] * 5 and not parser.truncated


def test_a_value_that_is_not_a_url_is_quoted_short_and_escaped() -> None:
    value = "token=\u202eowned\x85" + "A" * 500  # a bidi override and NEL, both allowed in XML
    ns = "http://www.sitemaps.org/schemas/sitemap/0.9"
    data = f'<urlset xmlns="{ns}"><url><loc>{value}</loc></url></urlset>'.encode()
    _, diagnostics, _ = read(data)
    (d,) = diagnostics
    assert d.code == "invalid-url"
    assert "A" * 100 not in d.message and len(d.message) < 300
    assert d.url is not None and len(d.url) < 140 and "\u202e" not in d.url and "\\u202e" in d.url
    assert "\u202e" not in d.message and "\x85" not in d.message and "\\x85" in d.message


def test_relative_paths_are_meant_as_urls_and_read_through() -> None:
    lines = ["https://e.com/a"] + [f"/page-{i}" for i in range(10)] + ["https://e.com/b"]
    locs, diagnostics, parser = read("\n".join(lines).encode())
    assert locs == ["https://e.com/a", "https://e.com/b"] and not parser.truncated
    assert [d.line for d in diagnostics] == list(range(2, 12))  # each reported, none stops the reading
