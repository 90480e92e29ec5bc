"""Parser properties: garbage never crashes it, written entries read back, chunking is invisible."""

from __future__ import annotations

import datetime as dt
import gzip
from xml.sax.saxutils import escape, quoteattr

from hypothesis import example, given, settings
from hypothesis import strategies as st

from sitemapkit.constants import CHANGEFREQS
from sitemapkit.dates import format_w3c
from sitemapkit.diagnostics import Diagnostic
from sitemapkit.model import Alternate, Image, IndexEntry, UrlEntry
from sitemapkit.parser import SitemapParser

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
IMAGE_NS = "http://www.google.com/schemas/sitemap-image/1.1"
XHTML_NS = "http://www.w3.org/1999/xhtml"


def run(data: bytes, cuts: list[int] | None = None) -> tuple[list[object], list[Diagnostic], SitemapParser]:
    """Parse `data` fed in the pieces that `cuts` (offsets) delimit."""
    diagnostics: list[Diagnostic] = []
    parser = SitemapParser("p.xml", on_diagnostic=diagnostics.append)
    entries: list[object] = []
    start = 0
    for cut in sorted(set(cuts or [])):
        entries += parser.feed(data[start:cut])
        start = cut
    entries += parser.feed(data[start:])
    entries += parser.close()
    return entries, diagnostics, parser


def lines_of(entries: list[object]) -> list[object]:
    return [getattr(e, "line", None) for e in entries]


# --- strategies ----------------------------------------------------------------------------------------

path_text = st.text(alphabet="abcxyz0189-._~!$'()*+,;=:@/", max_size=20)
locs = st.builds(
    lambda host, path, query: f"https://{host}.example.com/{path}{query}",
    st.sampled_from(["www", "a", "b-c"]),
    path_text,
    st.sampled_from(["", "?a=1&b=2", "?q=x&amp;y"]),
)
dates = st.one_of(
    st.dates(min_value=dt.date(1990, 1, 1), max_value=dt.date(2100, 1, 1)),
    st.datetimes(
        min_value=dt.datetime(1990, 1, 1), max_value=dt.datetime(2100, 1, 1), timezones=st.just(dt.UTC)
    ).map(lambda d: d.replace(microsecond=0)),
)
free_text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=30).map(str.strip)
images = st.builds(Image, locs, st.none() | free_text.filter(bool), st.none() | free_text.filter(bool))
alternates = st.builds(Alternate, st.sampled_from(["en", "en-GB", "de", "x-default", "zh-Hant-TW"]), locs)
url_entries = st.builds(
    UrlEntry,
    locs,
    st.none() | dates,
    st.none() | st.sampled_from(sorted(CHANGEFREQS)),
    st.none() | st.integers(0, 10).map(lambda k: k / 10),
    st.lists(images, max_size=3).map(tuple),
    st.just(()),
    st.none(),
    st.lists(alternates, max_size=3).map(tuple),
)
index_entries = st.builds(IndexEntry, locs, st.none() | dates)


def render_url(e: UrlEntry) -> str:
    parts = [f"<url>\n  <loc>{escape(e.loc)}</loc>"]
    if e.lastmod is not None:
        parts.append(f"<lastmod>{format_w3c(e.lastmod)}</lastmod>")
    if e.changefreq is not None:
        parts.append(f"<changefreq>{e.changefreq}</changefreq>")
    if e.priority is not None:
        parts.append(f"<priority>{e.priority:.1f}</priority>")
    for img in e.images:
        fields = "".join(
            f"<image:{name}>{escape(value)}</image:{name}>"
            for name, value in (("caption", img.caption), ("title", img.title))
            if value is not None
        )
        parts.append(f"<image:image>\n<image:loc>{escape(img.loc)}</image:loc>{fields}</image:image>")
    for alt in e.alternates:
        parts.append(f'<xhtml:link rel="alternate" hreflang="{alt.hreflang}" href={quoteattr(alt.href)}/>')
    return "\n  ".join(parts) + "\n</url>"


def render(entries: list[UrlEntry]) -> bytes:
    body = "\n".join(render_url(e) for e in entries)
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}" xmlns:image="{IMAGE_NS}" '
        f'xmlns:xhtml="{XHTML_NS}">\n{body}\n</urlset>\n'
    ).encode()


def render_index(entries: list[IndexEntry]) -> bytes:
    body = "".join(
        f"<sitemap><loc>{escape(e.loc)}</loc>"
        + (f"<lastmod>{format_w3c(e.lastmod)}</lastmod>" if e.lastmod is not None else "")
        + "</sitemap>\n"
        for e in entries
    )
    return f'<sitemapindex xmlns="{NS}">\n{body}</sitemapindex>'.encode()


FRAGMENTS = [
    "<url>",
    "</url>",
    "<loc>",
    "</loc>",
    "https://e.com/",
    "&",
    "&amp;",
    "<",
    ">",
    "<![CDATA[",
    "]]>",
    "<!--",
    "-->",
    "<?",
    "?>",
    "\n",
    " ",
    "<lastmod>2024-01-01</lastmod>",
    "<image:image>",
    "</urlset>",
    "<!DOCTYPE x [<!ENTITY a 'b'>]>",
    "\x00",
    "é",
    "中",
    "<url><loc>https://e.com/x</loc></url>",
    "&#x41;",
    "&#0;",
    "<x:y>",
    "</x:y>",
    "<?x y?>",
    "\r\n",
]
xmlish = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map(
    lambda parts: (f'<urlset xmlns="{NS}" xmlns:image="{IMAGE_NS}">' + "".join(parts)).encode()
)


# --- properties ----------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600))
def test_random_bytes_never_crash(data: bytes) -> None:
    entries, diagnostics, parser = run(data)
    assert parser.count == len(entries)
    assert all(d.code for d in diagnostics)


def _garbage(*parts: str) -> bytes:
    return (f'<urlset xmlns="{NS}" xmlns:image="{IMAGE_NS}">' + "".join(parts)).encode()


@settings(max_examples=300, deadline=None)
@given(xmlish, st.lists(st.integers(0, 2000), max_size=6))
# a stray & was reported before the entries that precede it in the same chunk
@example(_garbage("<url>", "<url><loc>https://e.com/x</loc></url>", "&", "https://e.com/"), [164])
# libxml2 found the bad PI only in the next chunk: the seek must start in the previous one
@example(_garbage("<url>", "<url>", "<url>", "<url>", "<?", "</urlset>", "?>"), [151])
# libxml2 looks for the end of a comment with strstr, which stops at a NUL
@example(_garbage("<!--", "\x00", "<url><loc>https://e.com/x</loc></url>", "-->"), [131])
# lxml raises the undeclared prefix (met first) when a later error stops the parser
@example(_garbage("<x:y>", "<url><loc>https://e.com/x</loc></url>", "</url>"), [127])
@example(_garbage("</urlset>", "<url>", "&", "<url><loc>https://e.com/x</loc></url>"), list(range(1, 180)))
# lxml counts columns in characters, not bytes
@example(_garbage("é中", "é中", "<url/>", "]]>", "<url>"), list(range(1, 147)))
def test_xml_like_garbage_never_crashes_and_chunking_is_invisible(data: bytes, cuts: list[int]) -> None:
    whole = run(data)
    pieces = run(data, [c for c in cuts if c < len(data)])
    assert whole[0] == pieces[0] and lines_of(whole[0]) == lines_of(pieces[0])
    assert [(d.code, d.line, d.column, d.message) for d in whole[1]] == [
        (d.code, d.line, d.column, d.message) for d in pieces[1]
    ]
    assert (whole[2].truncated, whole[2].kind, whole[2].ok) == (
        pieces[2].truncated,
        pieces[2].kind,
        pieces[2].ok,
    )


@settings(max_examples=60, deadline=None)
@given(xmlish)
def test_xml_like_garbage_read_byte_by_byte(data: bytes) -> None:
    whole = run(data)
    bytewise = run(data, list(range(1, len(data))))
    assert whole[0] == bytewise[0] and lines_of(whole[0]) == lines_of(bytewise[0])
    assert [(d.code, d.line, d.column, d.message) for d in whole[1]] == [
        (d.code, d.line, d.column, d.message) for d in bytewise[1]
    ]
    assert (whole[2].truncated, whole[2].kind) == (bytewise[2].truncated, bytewise[2].kind)


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=300))
def test_gzipped_garbage_never_crashes(data: bytes) -> None:
    gz = gzip.compress(data)
    run(gz[: len(gz) // 2])
    run(gz)


@settings(max_examples=150, deadline=None)
@given(st.lists(url_entries, max_size=8))
def test_written_url_entries_read_back(entries: list[UrlEntry]) -> None:
    data = render(entries)
    read, diagnostics, parser = run(data)
    expected = [
        UrlEntry(
            e.loc.replace("&amp;", "&amp;"),
            e.lastmod,
            e.changefreq,
            e.priority,
            e.images,
            (),
            None,
            e.alternates,
        )
        for e in entries
    ]
    assert read == expected
    assert [d.code for d in diagnostics if d.code != "deprecated-tag"] == (
        [] if entries else ["empty-sitemap"]
    )
    assert parser.kind == "urlset" and not parser.truncated


@settings(max_examples=100, deadline=None)
@given(st.lists(index_entries, max_size=8))
def test_written_index_entries_read_back(entries: list[IndexEntry]) -> None:
    read, _, parser = run(render_index(entries))
    assert read == entries and parser.kind == "sitemapindex"


@settings(max_examples=150, deadline=None)
@given(
    st.lists(url_entries, min_size=1, max_size=6),
    st.lists(st.integers(0, 4000), max_size=8),
    st.sampled_from(["none", "amp", "truncate", "mismatch", "gzip", "utf16"]),
)
def test_chunk_splits_give_identical_results(entries: list[UrlEntry], cuts: list[int], damage: str) -> None:
    data = render(entries)
    if damage == "amp":
        data = data.replace(b"<loc>", b"<loc>&", 1)
    elif damage == "truncate":
        data = data[: len(data) * 2 // 3]
    elif damage == "mismatch":
        data = data.replace(b"</loc>", b"</lox>", 1)
    elif damage == "gzip":
        data = gzip.compress(data)
    elif damage == "utf16":
        data = data.decode().replace("UTF-8", "UTF-16").encode("utf-16")
    whole = run(data)
    pieces = run(data, [c for c in cuts if c < len(data)])
    bytewise = run(data, list(range(1, len(data)))) if len(data) < 1500 else pieces
    for other in (pieces, bytewise):
        assert other[0] == whole[0] and lines_of(other[0]) == lines_of(whole[0])
        assert [(d.code, d.line, d.column) for d in other[1]] == [
            (d.code, d.line, d.column) for d in whole[1]
        ]
        assert (other[2].truncated, other[2].kind) == (whole[2].truncated, whole[2].kind)
