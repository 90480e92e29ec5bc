"""A body cut short (a download that stopped, a gzip stream cut in two, the size cap): the parser returns
exactly the entries whose closing tags are in the bytes received, however the bytes were chunked and whatever
the lxml release (6.2 reports the elements still open at the end as ended; 5.x does not), and says once where
the body ends and what was open. The cases are those other sitemap readers test (a cut inside the URL, inside
the date, between </loc> and </url>, right after </url>, inside an extension, an index, RSS and Atom),
written anew here."""

from __future__ import annotations

import gzip
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.model import IndexEntry, UrlEntry
from sitemapkit.reader.parser import SitemapParser

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
IMAGE_NS = "http://www.google.com/schemas/sitemap-image/1.1"
HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'
CHUNKS = (None, 1, 7, 100, 4096)


def read(
    data: bytes, chunk: int | None = None, **kw: int
) -> tuple[list[str], list[Diagnostic], SitemapParser, list[UrlEntry | IndexEntry]]:
    diagnostics: list[Diagnostic] = []
    parser = SitemapParser("cut.xml", on_diagnostic=diagnostics.append, **kw)
    entries: list[UrlEntry | IndexEntry] = []
    step = chunk or max(1, len(data))
    for i in range(0, len(data), step):
        entries += parser.feed(data[i : i + step])
    entries += parser.close()
    return [e.loc for e in entries], diagnostics, parser, entries


def urlset(*entries: str) -> str:
    return f'{HEAD}<urlset xmlns="{NS}" xmlns:image="{IMAGE_NS}">\n' + "\n".join(entries) + "\n</urlset>\n"


def url(loc: str, extra: str = "") -> str:
    return f"<url><loc>{loc}</loc>{extra}</url>"


LASTMOD = "<lastmod>2024-05-01T10:00:00+00:00</lastmod>"
IMAGE = "<image:image><image:loc>https://e.com/i.jpg</image:loc></image:image>"
DOC = urlset(
    url("https://e.com/a", LASTMOD),
    url("https://e.com/b", IMAGE),
    url("https://e.com/c", LASTMOD + IMAGE),
    url("https://e.com/d", "<changefreq>daily</changefreq>"),
)


def _at(marker: str, offset: int = 0, doc: str = DOC) -> int:
    return doc.index(marker) + offset


# where the body ends -> the entries kept, and what the body ends inside
CUTS = {
    "inside <loc>": (_at("https://e.com/c", 11), 2, "url"),  # '<loc>https://e.com/' -- a URL that looks whole
    "inside the text of <lastmod>": (_at("2024-05-01", 4, DOC[_at("e.com/c") :]) + _at("e.com/c"), 2, "url"),
    "inside </loc>": (_at("https://e.com/c</lo", 17), 2, "url"),
    "between </loc> and </url>": (_at("https://e.com/d</loc>", 21), 3, "url"),
    "inside </url>": (_at("daily</changefreq></u", 22), 3, "url"),
    "inside <image:image>": (_at("i.jpg</image:loc>", 17), 1, "url"),
    "inside <image:loc>": (_at("https://e.com/i.jpg", 9, DOC[_at("e.com/c") :]) + _at("e.com/c"), 2, "url"),
    "inside the start tag <url": (_at("<url><loc>https://e.com/d", 3), 3, "urlset"),
    "right after </url>": (_at("daily</changefreq></url>", 24), 4, "urlset"),
    "right after </url> and the line break": (_at("daily</changefreq></url>", 25), 4, "urlset"),
    "inside </urlset>": (_at("</urlset>", 5), 4, "urlset"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CUTS))
@pytest.mark.parametrize("chunk", CHUNKS)
def test_a_cut_body_keeps_exactly_the_closed_entries(case: str, chunk: int | None) -> None:
    cut, kept, inside = CUTS[case]
    data = DOC.encode()[:cut]
    locs, diagnostics, parser, entries = read(data, chunk)
    assert locs == ["https://e.com/a", "https://e.com/b", "https://e.com/c", "https://e.com/d"][:kept]
    assert parser.truncated and parser.ok and parser.kind == "urlset"
    assert [d.code for d in diagnostics] == ["parse-error"]  # reported once
    (error,) = diagnostics
    last_line = data.count(b"\n") + 1
    assert error.message.startswith(f"The document ends inside <{inside}> (line {last_line})")
    assert "After the end of the root element" not in error.message
    assert error.line == data.count(b"\n") + 1
    assert error.column == len(data) - data.rfind(b"\n")  # where the bytes end
    if inside == "url":
        assert "the unfinished entry was dropped" in error.message
    if kept >= 2:  # the entries kept are whole: the image of b
        assert [i.loc for i in entries[1].images] == ["https://e.com/i.jpg"]  # type: ignore[union-attr]


def test_the_message_says_where_the_body_ends_and_where_the_open_entry_began() -> None:
    doc = urlset(
        *(url(f"https://e.com/{i}") for i in range(7)), "<url>\n  <loc>https://e.com/x</loc>\n  <last"
    )
    data = doc.encode()[: doc.index("<last") + 5]
    locs, diagnostics, _, _ = read(data)
    assert locs == [f"https://e.com/{i}" for i in range(7)]
    (error,) = diagnostics
    assert error.message == (
        "The document ends inside <url> (line 12) opened at line 10: the body was cut short; the unfinished "
        "entry was dropped."
    )
    assert (error.line, error.column) == (12, 8)


def test_no_end_tag_for_the_root_is_not_content_after_it() -> None:
    """A file that stops after its last </url> (no </urlset>) is cut short, not 'content after the root'."""
    data = urlset(url("https://e.com/a"), url("https://e.com/b")).replace("</urlset>\n", "").encode()
    for chunk in CHUNKS:
        locs, diagnostics, parser, _ = read(data, chunk)
        assert locs == ["https://e.com/a", "https://e.com/b"]
        (error,) = diagnostics
        assert error.message.startswith("The document ends inside <urlset> (line 5) opened at line 2")
        assert parser.truncated


def test_content_after_the_root_is_still_that() -> None:
    data = (urlset(url("https://e.com/a")) + "<url><loc>https://e.com/after").encode()
    locs, diagnostics, parser, _ = read(data)
    assert locs == ["https://e.com/a"] and not parser.truncated
    assert [d.code for d in diagnostics] == ["parse-error"]
    assert "After the end of the root element" in diagnostics[0].message


def test_an_index_cut_inside_a_sitemap_entry() -> None:
    doc = (
        f'{HEAD}<sitemapindex xmlns="{NS}">\n'
        "<sitemap><loc>https://e.com/s1.xml</loc><lastmod>2024-01-01</lastmod></sitemap>\n"
        "<sitemap><loc>https://e.com/s2.xml</loc></sitemap>\n"
        "</sitemapindex>\n"
    )
    for cut, kept in (
        (doc.index("s2.x") + 2, 1),
        (doc.index("2024-01") + 4, 0),
        (doc.index("</sitemapi"), 2),
    ):
        for chunk in CHUNKS:
            locs, diagnostics, parser, _ = read(doc.encode()[:cut], chunk)
            assert locs == ["https://e.com/s1.xml", "https://e.com/s2.xml"][:kept]
            assert parser.truncated and parser.kind == "sitemapindex"
            assert [d.code for d in diagnostics] == ["parse-error"]
            inside = "sitemap" if kept < 2 else "sitemapindex"
            assert diagnostics[0].message.startswith(f"The document ends inside <{inside}>")


RSS = (
    f'{HEAD}<rss version="2.0"><channel><title>t</title>\n'
    "<item><title>one</title><link>https://e.com/1</link></item>\n"
    "<item><title>two</title><link>https://e.com/2</link>"
    "<pubDate>Wed, 01 May 2024 10:00:00 GMT</pubDate></item>\n"
    "</channel></rss>\n"
)
ATOM = (
    f'{HEAD}<feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>\n'
    '<entry><title>one</title><link href="https://e.com/1"/></entry>\n'
    '<entry><title>two</title><link href="https://e.com/2"/><updated>2024-05-01T10:00:00Z</updated></entry>\n'
    "</feed>\n"
)


@pytest.mark.parametrize(
    ("doc", "kind", "marker", "kept"),
    [
        (RSS, "rss", "https://e.com/2", 1),
        (RSS, "rss", "GMT</pubDate>", 1),
        (RSS, "rss", "</channel>", 2),
        (ATOM, "atom", '"https://e.com/2"', 1),
        (ATOM, "atom", "2024-05-01T10", 1),
        (ATOM, "atom", "</feed>", 2),
    ],
)
def test_a_cut_feed_keeps_the_closed_items(doc: str, kind: str, marker: str, kept: int) -> None:
    data = doc.encode()[: doc.index(marker) + 3]
    for chunk in CHUNKS:
        locs, diagnostics, parser, _ = read(data, chunk)
        assert locs == ["https://e.com/1", "https://e.com/2"][:kept]
        assert parser.truncated and parser.kind == kind
        assert [d.code for d in diagnostics] == ["parse-error"]


def _inflated(gz: bytes) -> bytes:
    """What a gzip prefix inflates to (all that a reader can get from it)."""
    return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(gz)


def test_a_gzip_stream_cut_keeps_the_entries_closed_in_what_it_inflates_to() -> None:
    doc = urlset(
        *(url(f"https://e.com/{i}", LASTMOD + (IMAGE if i % 3 else "")) for i in range(400))
    ).encode()
    gz = gzip.compress(doc, compresslevel=1)
    for cut in range(len(gz) // 7, len(gz) - 8, len(gz) // 7):
        plain = _inflated(gz[:cut])
        whole = plain.count(b"</url>")
        for chunk in (None, 1000):
            locs, diagnostics, parser, _ = read(gz[:cut], chunk)
            assert locs == [f"https://e.com/{i}" for i in range(whole)], cut
            assert parser.truncated and [d.code for d in diagnostics] == ["compression-error"]


def test_a_gzip_stream_cut_right_after_an_end_tag_keeps_that_entry() -> None:
    doc = urlset(*(url(f"https://e.com/{i}") for i in range(50))).encode()
    body = doc[: doc.index(b"https://e.com/20</loc></url>") + len(b"https://e.com/20</loc></url>")]
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    gz = z.compress(body) + z.flush(zlib.Z_SYNC_FLUSH)  # a stream that stops there, without its end
    assert _inflated(gz) == body
    for chunk in (None, 1, 64):
        locs, diagnostics, parser, _ = read(gz, chunk)
        assert locs == [f"https://e.com/{i}" for i in range(21)]
        assert parser.truncated and [d.code for d in diagnostics] == ["compression-error"]


def test_the_size_cap_keeps_the_entries_closed_before_it() -> None:
    doc = urlset(*(url(f"https://e.com/{i}", LASTMOD) for i in range(100))).encode()
    for cap in (doc.index(b"https://e.com/40") + 5, doc.index(b"https://e.com/41") - 6):
        for chunk in (None, 1, 333):
            locs, diagnostics, parser, _ = read(doc, chunk, max_uncompressed=cap)
            assert locs == [f"https://e.com/{i}" for i in range(doc[:cap].count(b"</url>"))]
            assert parser.truncated and [d.code for d in diagnostics] == ["file-too-large"]


# --- any cut, any chunking --------------------------------------------------------------------------------

ELEMENTS = [
    "<url><loc>https://e.com/{i}</loc></url>",
    "<url><loc>https://e.com/{i}</loc>" + LASTMOD + "<changefreq>daily</changefreq><priority>0.5</priority>"
    "</url>",
    "<url>\n  <loc>https://e.com/{i}</loc>\n  <lastmod>2024-01-02</lastmod>\n</url>",
    "<url><loc>https://e.com/{i}</loc>" + IMAGE + IMAGE + "</url>",
    "<url><loc>https://e.com/{i}?a=1&amp;b=2</loc><image:image><image:loc>https://e.com/{i}.png</image:loc>"
    "</image:image></url>",
]  # fmt: skip
BETWEEN = ["", "\n", "  ", "\n\n  ", "<!-- x -->"]


@st.composite
def cut_sitemaps(draw: st.DrawFn) -> tuple[bytes, list[int], list[str], int]:
    """A valid sitemap, the offsets where each of its entries ends, their URLs, and where its body starts."""
    kinds = draw(st.lists(st.integers(0, len(ELEMENTS) - 1), min_size=1, max_size=12))
    head = urlset().split("\n</urlset>")[0]
    text, ends, locs = head, [], []
    for i, k in enumerate(kinds):
        text += draw(st.sampled_from(BETWEEN)) + ELEMENTS[k].format(i=i)
        ends.append(len(text.encode()))
        locs.append(f"https://e.com/{i}" + ("?a=1&b=2" if k == 4 else ""))
    text += "\n</urlset>\n"
    return text.encode(), ends, locs, len(head.encode())


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(cut_sitemaps(), st.data())
def test_any_cut_of_a_valid_sitemap_gives_exactly_the_entries_closed_before_it(
    sitemap: tuple[bytes, list[int], list[str], int], data: st.DataObject
) -> None:
    doc, ends, locs, body = sitemap
    cut = data.draw(st.integers(body, doc.rindex(b"</urlset>") + 8), label="cut")  # before its last '>'

    cuts = data.draw(st.lists(st.integers(1, max(1, cut - 1)), max_size=6), label="chunks")
    gzipped = data.draw(st.booleans(), label="gzip")
    expected = [loc for loc, end in zip(locs, ends, strict=True) if end <= cut]
    raw = doc[:cut]
    pieces = [raw[a:b] for a, b in zip([0, *sorted(set(cuts))], [*sorted(set(cuts)), len(raw)], strict=True)]
    if gzipped:  # the same bytes as a gzip stream cut at the same place
        z = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        pieces = [z.compress(p) + z.flush(zlib.Z_SYNC_FLUSH) for p in pieces]
    diagnostics: list[Diagnostic] = []
    parser = SitemapParser("cut.xml", on_diagnostic=diagnostics.append)
    out: list[UrlEntry | IndexEntry] = []
    for piece in pieces:
        out += parser.feed(piece)
    out += parser.close()
    assert [e.loc for e in out] == expected
    assert parser.truncated
    assert [d.code for d in diagnostics] == ["compression-error" if gzipped else "parse-error"]
    if not gzipped:
        assert diagnostics[0].line == raw.count(b"\n") + 1


def test_a_cut_after_a_fatal_error_and_the_resumed_read() -> None:
    """After a broken entry the parser reads on with a fresh lxml parser: a cut is judged there too."""
    doc = urlset(
        url("https://e.com/a"),
        "<url><loc>https://e.com/b</loc><lastmod>2024-01-01</url>",  # mismatched tags: a fatal error
        url("https://e.com/c", LASTMOD),
        url("https://e.com/d"),
    )
    data = doc.encode()[: doc.index("https://e.com/d") + 12]
    for chunk in CHUNKS:
        locs, diagnostics, parser, _ = read(data, chunk)
        assert locs == ["https://e.com/a", "https://e.com/c"]
        assert [d.line for d in diagnostics] == [4, 6] and parser.truncated
        assert diagnostics[1].message.startswith("The document ends inside <url> (line 6) opened at line 6")
