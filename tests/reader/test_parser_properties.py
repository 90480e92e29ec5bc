"""Parser properties: garbage never crashes it, written entries read back, chunking is invisible."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from xml.sax.saxutils import escape, quoteattr

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from lxml import etree

from sitemapkit.core.constants import CHANGEFREQS
from sitemapkit.core.dates import format_w3c
from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.model import Alternate, Image, IndexEntry, UrlEntry
from sitemapkit.reader import parser as parser_module
from sitemapkit.reader.entries import EntryReader
from sitemapkit.reader.parser import SitemapParser
from sitemapkit.reader.runs import UrlRun

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
# a character of two bytes cut between two feeds counts once, as lxml counts it (the column was one short)
@example(
    f'<urlset xmlns="{NS}" xmlns:image="{IMAGE_NS}"><![CDATA[é]]><url><loc>https://e.com/x</loc></url></url>'.encode()
)
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


# --- the fast paths read exactly what the general path reads ----------------------------------------------


class GeneralParser(SitemapParser):
    """The parser with both fast paths off: every <url> read from lxml, field by field, with every check."""

    _ELISION = False
    _FAST_READ = False


class LxmlFastParser(SitemapParser):
    """Only the lxml fast path on (no plain elements read without lxml)."""

    _ELISION = False


def _unrun(items: list[object]) -> list[object]:
    """`items` with each `UrlRun` replaced by its entries, after checking what a run promises."""
    out: list[object] = []
    for item in items:
        if isinstance(item, UrlRun):
            assert len(item) > 0
            for loc in item.locs:  # JSON-safe as it is, what the writers rely on
                assert json.dumps(loc, ensure_ascii=False) == f'"{loc}"'
                assert loc.isascii() and loc.isprintable() and " " not in loc
            assert all(type(p) is float for p in item.priorities if p is not None)
            out += item.entries()
        else:
            out.append(item)
    return out


def outcome(
    cls: type[SitemapParser],
    data: bytes,
    cuts: list[int] | None = None,
    cap: int = 1 << 30,
    runs: bool = False,
) -> tuple[object, ...]:
    """Everything a parser class makes of `data` (read up to `cap` bytes) fed in the pieces `cuts` delimit:
    entries with their lines and sources, every diagnostic field, and the parser's verdict. With `runs`,
    the parser gives `UrlRun`s, each replaced here by its entries."""
    diagnostics: list[Diagnostic] = []
    parser = cls("p.xml", on_diagnostic=diagnostics.append, max_uncompressed=cap, runs=runs)
    entries: list[object] = []
    start = 0
    for cut in sorted(set(cuts or [])):
        entries += parser.feed(data[start:cut])
        start = cut
    entries += parser.feed(data[start:])
    entries += parser.close()
    entries = _unrun(entries)
    return (
        entries,
        [(getattr(e, "line", None), getattr(e, "sitemap", None)) for e in entries],
        [(d.code, d.severity, d.line, d.column, d.message, d.url, d.source) for d in diagnostics],
        (parser.kind, parser.ok, parser.truncated, parser.count, parser.skipped, parser.namespace),
    )


WS = st.sampled_from(["", "", " ", "\n", "\n  ", "\t", "\r\n", "\n\n    "])
PLAIN_LOCS = st.sampled_from(
    [
        "https://www.example.com/",
        "http://example.com",
        "https://a.example.com:8080/p?q=1&amp;r=2",
        "https://shop.example/item-1.html?ref=x&amp;amp;y",
        "https://example.com/a/b;c=d,e!f$g'h(i)j*k+l@m",
        "https://ex-ample.com/~user/",
        "https://example.com/" + "a" * 2027,  # 2,047 characters: the longest allowed
        "https://example.com/%D8%A7%d9%83-x/",
    ]
)
# each one thing that the fast path must leave to lxml (or read exactly as lxml does)
ODD_LOC_VALUES: list[str] = [
    "",
    " https://example.com/x ",
    "https://example.com/a b",
    "/relative",
    "https://example.com/%4",
    "https://example.com/%zz",
    "https://example.com/%%41",
    "https://example.com/&lt;x",
    "https://example.com/&#x41;",
    "https://example.com/&amp",
    "https://Example.com/",
    "https://example.com:99999/",
    "https://-bad-.com/",
    "https://bad-.com/",
    "https://example..com/",
    "https://example.com?q",
    "https://example.com/ü",
    "ftp://example.com/",
    "https://example.com/" + "a" * 2028,  # 2,048 characters: one too many
    "<![CDATA[https://example.com/c]]>",
    "https://example.com/<!-- c -->d",
    "https://example.com/#top",
]
ODD_LOCS = st.sampled_from(ODD_LOC_VALUES)
PLAIN_LASTMODS = st.sampled_from(
    ["2024-05-01", "2024-05-01T12:00:00+02:00", "2024-05-01T12:00:00Z", "2024-05-01T12:00:00.5Z"]
)
ODD_LASTMOD_VALUES: list[str] = [
    "2024-02-30",
    "2024-05-01T10:00",
    "2024-05-01T10:00:00",
    "2024-5-1",
    " 2024-05-01",
    "2024-05-01T25:00:00Z",
    "2024-05-01T12:00:00+0200",
    "",
]
ODD_LASTMODS = st.sampled_from(ODD_LASTMOD_VALUES)
PLAIN_CHANGEFREQS = st.sampled_from(["daily", "weekly", "never", "always"])
ODD_CHANGEFREQ_VALUES: list[str] = ["Daily", "sometimes", "", "dailyy"]
ODD_CHANGEFREQS = st.sampled_from(ODD_CHANGEFREQ_VALUES)
PLAIN_PRIORITIES = st.sampled_from(["0.5", "1.0", "0", "1", "0.05", "0.0", "1.00"])
ODD_PRIORITY_VALUES: list[str] = ["1.5", ".5", "0.555", "x", "01", "0.", ""]
ODD_PRIORITIES = st.sampled_from(ODD_PRIORITY_VALUES)
ODD_STRUCTURE = st.sampled_from(
    [
        "swap",
        "dup",
        "comment",
        "end-in-comment",
        "attr",
        "prefix",
        "video",
        "caption",
        "xhtml",
        "nested",
        "empty",
        "pi",
        "text",
        "long-end",
    ]
)


@st.composite
def url_elements(draw: st.DrawFn) -> str:
    """A <url> element: mostly plain, sometimes with one or two things the fast path must leave to lxml."""
    odd = (
        set(
            draw(
                st.lists(
                    st.sampled_from(["loc", "lastmod", "changefreq", "priority", "image", "structure"]),
                    max_size=2,
                )
            )
        )
        if draw(st.integers(0, 3)) == 0
        else set()
    )

    def ws() -> str:
        return draw(WS)

    def pick(name: str, plain: st.SearchStrategy[str], odd_values: st.SearchStrategy[str]) -> str:
        return draw(odd_values if name in odd else plain)

    parts = [f"<loc>{pick('loc', PLAIN_LOCS, ODD_LOCS)}</loc>"]
    if draw(st.booleans()):
        parts.append(f"<lastmod>{pick('lastmod', PLAIN_LASTMODS, ODD_LASTMODS)}</lastmod>")
    if draw(st.booleans()):
        parts.append(f"<changefreq>{pick('changefreq', PLAIN_CHANGEFREQS, ODD_CHANGEFREQS)}</changefreq>")
    if draw(st.booleans()):
        parts.append(f"<priority>{pick('priority', PLAIN_PRIORITIES, ODD_PRIORITIES)}</priority>")
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):
        image_loc = pick("image", PLAIN_LOCS, ODD_LOCS)
        parts.append(f"<image:image>{ws()}<image:loc>{image_loc}</image:loc>{ws()}</image:image>")
    structure = draw(ODD_STRUCTURE) if "structure" in odd else ""
    if structure == "swap" and len(parts) > 1:
        parts[0], parts[1] = parts[1], parts[0]
    elif structure == "dup":
        parts.append(parts[0])
    elif structure == "comment":
        parts.insert(draw(st.integers(0, len(parts))), "<!-- a\ncomment -->")
    elif structure == "end-in-comment":
        parts.insert(draw(st.integers(0, len(parts))), "<!-- </url> --><![CDATA[</url>]]>")
    elif structure == "pi":
        parts.insert(draw(st.integers(0, len(parts))), "<?pi x?>")
    elif structure == "text":
        parts.insert(draw(st.integers(0, len(parts))), "text")
    elif structure == "video":
        parts.append("<video:video><video:title>t</video:title></video:video>")
    elif structure == "caption":
        parts.append(
            "<image:image><image:loc>https://e.com/i.jpg</image:loc><image:caption>c</image:caption></image:image>"
        )
    elif structure == "xhtml":
        parts.append('<xhtml:link rel="alternate" hreflang="en" href="https://e.com/en"/>')
    elif structure == "nested":
        parts.append("<url><loc>https://e.com/nested</loc></url>")
    elif structure == "empty":
        return draw(st.sampled_from(["<url/>", "<url></url>", "<url>\n</url>"]))
    open_tag = {"attr": '<url id="1">', "prefix": "<sm:url>"}.get(structure, "<url>")
    close_tag = (
        "</sm:url>" if structure == "prefix" else draw(st.sampled_from(["</url>", "</url>", "</url >"]))
    )
    if structure == "long-end":  # longer than the parser keeps to find a </url> cut by a piece boundary
        close_tag = "</url" + " " * 300 + ">"
    return open_tag + ws() + ws().join(parts) + ws() + close_tag


BETWEEN = st.one_of(
    st.sampled_from(["\n", "", "  ", "\r\n", "\n\t"]),
    st.sampled_from(["\n", "", "  ", "\r\n", "\n\t"]),
    st.sampled_from(["\n", "", "  ", "\r\n", "\n\t"]),
    st.sampled_from(
        [
            "\n<!-- between -->\n",
            "\n<x:y/>",
            "\n<foo>bar</foo>\n",
            "x",
            "<?pi?>",
            "<![CDATA[]]>",
            # a </url> that is not an end tag, followed by a plain <url> that is not an element
            "<!-- </url><url><loc>https://e.com/in-comment</loc></url> -->",
            "<![CDATA[</url><url><loc>https://e.com/in-cdata</loc></url>]]>",
            "<?pi </url><url><loc>https://e.com/in-pi</loc></url>?>",
        ]
    ),
)
FULL_ROOT = (
    f'<urlset xmlns="{NS}" xmlns:image="{IMAGE_NS}" xmlns:sm="{NS}" xmlns:x="urn:x"'
    f' xmlns:video="http://www.google.com/schemas/sitemap-video/1.1" xmlns:xhtml="{XHTML_NS}">'
)
ROOTS = st.one_of(
    st.just(FULL_ROOT),
    st.just(FULL_ROOT.replace("<urlset ", "<urlset\n  ")),
    st.sampled_from(
        [
            f'<urlset xmlns="{NS}" xmlns:sm="{NS}" xmlns:x="urn:x">',
            f'<urlset xmlns:sm="{NS}" xmlns:image="{IMAGE_NS}" xmlns:x="urn:x">',
            f'<urlset xmlns="https://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="{IMAGE_NS}">',
            f'<urlset xmlns="http://www.google.com/schemas/sitemap/0.84" xmlns:image="{IMAGE_NS}">',
            f'<urlset xmlns="{NS}" xmlns:image="urn:not-images" xmlns:sm="{NS}" xmlns:x="urn:x">',
            f'<urlset xmlns="{NS} " xmlns:image="{IMAGE_NS}" xmlns:x="urn:x">',
            f'<urlset xmlns="{NS}" xmlns:image="{IMAGE_NS}" xmlns:x="urn:x" xmlns:sm="{NS}"><!-- c -->',
            f'<sm:urlset xmlns:sm="{NS}" xmlns="{NS}" xmlns:image="{IMAGE_NS}" xmlns:x="urn:x">',
        ]
    ),
)
DAMAGE = st.sampled_from(["", "", "", "", "truncate", "stray-amp", "mismatch", "nul", "after-root", "no-end"])


@st.composite
def urlsets(draw: st.DrawFn) -> bytes:
    elements = draw(st.lists(url_elements(), max_size=16))
    body = "".join(draw(BETWEEN) + e for e in elements)
    root = draw(ROOTS)
    end = "</sm:urlset>" if root.startswith("<sm:") else "</urlset>"
    text = f'<?xml version="1.0" encoding="UTF-8"?>\n{root}{body}\n{end}\n'
    damage = draw(DAMAGE)
    data = text.encode()
    if damage == "truncate":
        data = data[: draw(st.integers(0, len(data)))]
    elif damage == "stray-amp":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + b"&" + data[at:]
    elif damage == "mismatch":
        data = (
            data.replace(b"</loc>", b"</lox>", 1)
            if draw(st.booleans())
            else data.replace(b"</url>", b"</urk>", 1)
        )
    elif damage == "nul":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + b"\x00" + data[at:]
    elif damage == "after-root":
        data += b"<url><loc>https://e.com/after</loc></url>"
    elif damage == "no-end":
        data = data.replace(end.encode(), b"")
    return data


PLAIN_URL = "<url><loc>https://e.com/p</loc></url>\n"
NOT_AN_ELEMENT = "<!-- </url><url><loc>https://e.com/in-comment</loc></url> -->"
VIDEO_URL = "<url><loc>https://e.com/v</loc><video:video><video:title>t</video:title></video:video>"


def _doc(*parts: str) -> bytes:
    return (FULL_ROOT + "\n" + PLAIN_URL * 3 + "".join(parts) + PLAIN_URL * 2 + "</urlset>\n").encode()


def _cut_in(data: bytes, marker: bytes, offset: int) -> list[int]:
    return [data.index(marker) + offset]


@settings(max_examples=400, deadline=None)
@given(urlsets(), st.lists(st.integers(0, 3000), max_size=8))
# an empty-element <url/> ends an element without a </url>
@example(_doc("<url/>", NOT_AN_ELEMENT), [])
# a </url> that lxml reads as no element proves nothing
@example(_doc("<foo/>", NOT_AN_ELEMENT), [])
# plain <image:image> elements only where the prefix image is the image extension's
@example(
    _doc(
        "<url><loc>https://e.com/i</loc><image:image><image:loc>https://e.com/i.jpg</image:loc></image:image></url>"
    ).replace(IMAGE_NS.encode(), b"urn:not-images"),
    [],
)
# a </url> cut by a piece boundary is found, and proves nothing together with the next one
@example(
    _doc(VIDEO_URL, "</url>", NOT_AN_ELEMENT),
    _cut_in(_doc(VIDEO_URL, "</url>", NOT_AN_ELEMENT), b"</url><!", 3),
)
# ... even when it is too long to keep
@example(
    _doc(VIDEO_URL, "</url" + " " * 300 + ">", NOT_AN_ELEMENT),
    _cut_in(_doc(VIDEO_URL, "</url" + " " * 300 + ">", NOT_AN_ELEMENT), b"</url ", 290),
)
# an error right after plain elements, on the line they end: its column is the document's
@example(_doc("<url>\n<loc>https://e.com/q</loc>\n</url><url><loc>https://e.com/r</lox></url>\n"), [])
# a root whose default namespace is not the one its start tag spells (what lxml reads is)
@example(
    (
        f'<urlset xmlns="{NS}&#x20;" xmlns:sm="{NS}">\n<sm:url><sm:loc>https://e.com/s</sm:loc></sm:url>\n'
        + PLAIN_URL * 3
        + "</urlset>\n"
    ).encode(),
    [],
)
def test_fast_paths_read_what_the_general_path_reads(data: bytes, cuts: list[int]) -> None:
    cuts = [c for c in cuts if c < len(data)]
    general = outcome(GeneralParser, data)
    assert outcome(SitemapParser, data, cuts) == general
    assert outcome(SitemapParser, data, cuts, runs=True) == general
    assert outcome(LxmlFastParser, data, cuts) == general
    if cuts:  # reading stops at a size cap (the first cut) in the middle of whatever is there
        capped = outcome(GeneralParser, data, cap=cuts[0])
        assert outcome(SitemapParser, data, cuts, cap=cuts[0]) == capped
        assert outcome(SitemapParser, data, cuts, cap=cuts[0], runs=True) == capped


@settings(max_examples=40, deadline=None)
@given(urlsets())
def test_fast_paths_read_byte_by_byte_what_the_general_path_reads(data: bytes) -> None:
    assert outcome(SitemapParser, data, list(range(1, len(data)))) == outcome(GeneralParser, data)
    assert outcome(SitemapParser, data, list(range(1, len(data))), runs=True) == outcome(GeneralParser, data)


def test_the_fast_path_reads_most_plain_elements_without_lxml(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a property of the output: proof that the comparison above compares two different paths."""
    body = "".join(
        f"<url><loc>https://e.com/{i}</loc><lastmod>2024-05-01</lastmod></url>\n" for i in range(500)
    )
    data = f'<urlset xmlns="{NS}">\n{body}</urlset>\n'.encode()
    read_by_lxml: list[int] = []

    class Counting(EntryReader):
        def read_url(self, el: etree._Element) -> UrlEntry | None:
            read_by_lxml.append(1)
            return super().read_url(el)

    general = outcome(GeneralParser, data)
    with monkeypatch.context() as patch:
        patch.setattr(parser_module, "EntryReader", Counting)
        assert outcome(SitemapParser, data) == general
    assert 0 < len(read_by_lxml) < 5
    # with runs, those elements come as runs (their columns), not as entries
    parser = SitemapParser("p.xml", runs=True)
    items = parser.feed(data) + parser.close()
    runs = [i for i in items if isinstance(i, UrlRun)]
    assert sum(map(len, runs)) > 495 and parser.count == 500
    # the first element lxml reads (line 2), the next ones go to a run
    assert runs[0].lines()[:2] == [3, 4] and runs[0].locs[0] == "https://e.com/1"
    assert repr(runs[0]).startswith("<UrlRun of ")


NEAR_MISSES = sorted(
    {
        *(f"<loc>{v}</loc>" for v in ODD_LOC_VALUES),
        *(f"<loc>https://e.com/</loc><lastmod>{v}</lastmod>" for v in ODD_LASTMOD_VALUES),
        *(f"<loc>https://e.com/</loc><changefreq>{v}</changefreq>" for v in ODD_CHANGEFREQ_VALUES),
        *(f"<loc>https://e.com/</loc><priority>{v}</priority>" for v in ODD_PRIORITY_VALUES),
        "<loc>https://e.com/</loc><image:image><image:loc>https://e.com/&lt;</image:loc></image:image>",
        "<loc>https://e.com/</loc><image:image><image:loc>https://e.com/"
        + "i" * 2030
        + "</image:loc></image:image>",
        "<loc>https://e.com/</loc>"
        + "<image:image><image:loc>https://e.com/i</image:loc></image:image>" * 1001,
    }
)


def test_each_near_miss_between_plain_elements_reads_as_in_the_general_path() -> None:
    """Every value the fast path must refuse, where it would otherwise read it: between plain elements."""
    plain = "<url><loc>https://e.com/p</loc><lastmod>2024-05-01</lastmod></url>\n"
    for inner in NEAR_MISSES:
        data = f"{FULL_ROOT}\n{plain * 3}<url>{inner}</url>\n{plain * 2}</urlset>\n".encode()
        general = outcome(GeneralParser, data)
        for cuts in ([], [len(data) // 2], list(range(0, len(data), 97))):
            assert outcome(SitemapParser, data, cuts) == general, inner[:80]
            assert outcome(SitemapParser, data, cuts, runs=True) == general, inner[:80]


@settings(max_examples=60, deadline=None)
@given(urlsets(), st.lists(st.integers(0, 1000), max_size=4))
def test_fast_paths_read_gzipped_input_as_the_general_path(data: bytes, cuts: list[int]) -> None:
    packed = gzip.compress(data)
    cuts = [c for c in cuts if c < len(packed)]
    assert outcome(SitemapParser, packed, cuts) == outcome(GeneralParser, packed)
