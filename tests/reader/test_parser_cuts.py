"""The fuzz harness of issue 12, kept as a test: hostile-looking documents built from the pieces that broke
the parser before (a quoted `>` in an attribute or a DOCTYPE literal, an element inside `<loc>`, runs of `&`
and NUL, tags cut inside their names), each read whole and cut at random points: the entries, their lines,
the diagnostics and the kind must not depend on where the bytes were cut."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sitemapkit.reader.parser import SitemapParser

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
IMAGE_NS = "http://www.google.com/schemas/sitemap-image/1.1"
EXAMPLES = int(os.environ.get("SITEMAPKIT_FUZZ_EXAMPLES", "300"))


def read(data: bytes, cuts: list[int]) -> tuple[object, ...]:
    """What the parser makes of `data` fed in the pieces `cuts` delimit."""
    diagnostics: list[tuple[str, int | None]] = []
    parser = SitemapParser("f.xml", on_diagnostic=lambda d: diagnostics.append((d.code, d.line)))
    out: list[object] = []
    start = 0
    for cut in sorted(set(cuts)):
        out += parser.feed(data[start:cut])
        start = cut
    out += parser.feed(data[start:])
    out += parser.close()
    entries = [(type(e).__name__, e.loc, getattr(e, "line", None), getattr(e, "images", ())) for e in out]
    return entries, sorted(diagnostics, key=repr), parser.kind, parser.truncated


PIECES = [
    "<url>", "</url>", "<loc>", "</loc>", "https://example.com/a", ".xml", "<url/>", "<sitemap>",
    "</sitemap>", "&", "&amp;", "&&&&", ">", '"', "'", ' data-note="a>b"', " x='>'",
    "<lastmod>2024-01-01</lastmod>", "<changefreq>daily</changefreq>", "<priority>0.5</priority>", "\n",
    " ", "\t", "<!-- c > -->", "<![CDATA[x>y]]>",
    "<image:image><image:loc>https://example.com/i.png</image:loc></image:image>",
    "\x00", "\x00" * 30, "&" * 30, "&#38;", "&lt;", "<a", "</a>", "<x:y z=\"1\">", "</x:y>", "<?pi x?>",
    "é", "\ufeff",
]  # fmt: skip
PROLOGS = [
    "", '<?xml version="1.0" encoding="UTF-8"?>\n', "\n\n", '<!DOCTYPE urlset SYSTEM "x><urlset">\n',
    "<!DOCTYPE urlset PUBLIC 'a>[' \"b]>\">", "<!DOCTYPE urlset>", "<!-- a > b -->",
    '<!DOCTYPE urlset SYSTEM "x><urlset" [<!ENTITY x SYSTEM "http://127.0.0.1/">]>',
]  # fmt: skip
ROOTS = [
    f'<urlset xmlns="{NS}">',
    f'<urlset xmlns="{NS}" data-note="a>b">',
    f"<urlset xmlns='{NS}' a='>>' b=\"'>\">",
    f'<urlset xmlns="{NS}" xmlns:image="{IMAGE_NS}">',
    f'<sitemapindex xmlns="{NS}">',
    "<urlset>",
]
ENDS = ["</urlset>", "</sitemapindex>", "", "</urlset>\n<!-- after -->"]


@st.composite
def documents(draw: st.DrawFn) -> bytes:
    body = "".join(draw(st.lists(st.sampled_from(PIECES), max_size=40)))
    text = draw(st.sampled_from(PROLOGS)) + draw(st.sampled_from(ROOTS)) + body + draw(st.sampled_from(ENDS))
    return text.encode("utf-8")


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(documents(), st.lists(st.integers(0, 600), max_size=8))
@example(
    f'<urlset xmlns="{NS}" data-note="a>b"><url><loc>https://example.com/a</loc></url></urlset>'.encode(),
    [70],
)
@example(
    f'<urlset xmlns="{NS}"><url><loc>https://example.com/a.xm<url/>l</loc></url></urlset>'.encode(), [100]
)
@example(
    (
        f'<!DOCTYPE urlset SYSTEM "x><urlset" [<!ENTITY x SYSTEM "http://x/">]><urlset xmlns="{NS}">'
        "<url><loc>https://example.com/a</loc></url></urlset>"
    ).encode(),
    [20],
)
@example(  # the document ends early after a two-byte character: libxml2 counted its column two ways
    f'<urlset xmlns="{NS}" xmlns:image="{IMAGE_NS}"><![CDATA[é]]><url><loc>https://e.com/x</loc></url>'.encode(),
    [],
)
def test_results_do_not_depend_on_where_the_input_is_cut(data: bytes, cuts: list[int]) -> None:
    whole = read(data, [])
    assert read(data, cuts) == whole
    assert read(data, list(range(1, len(data)))) == whole  # one byte at a time: every tag cut in its name


HOSTILE = (
    f'<urlset xmlns="{NS}"><url><loc>https://example.com/a</loc></url>\n<url><loc>https://example.com/'
    + "&" * 1500
    + "</loc></url>\n<url><loc>https://example.com/b?x=1&y=2</loc></url>"
    + "\x00" * 40
    + "<url><loc>https://example.com/c</loc></url>\n"
    + "&&\x00&&\x00\x00<url><loc>https://example.com/d</loc></url></urlset>\n"
).encode()


@settings(max_examples=max(20, EXAMPLES // 10), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.integers(0, len(HOSTILE)), max_size=12))
def test_runs_past_the_error_cap_read_the_same_however_cut(cuts: list[int]) -> None:
    """Past 1,000 parse errors stray `&` are only counted and NUL runs taken whole: the same result."""
    assert read(HOSTILE, cuts) == read(HOSTILE, [])


AMP_PIECES = [
    "&",
    "&amp;",
    "&am",
    "p;",
    "&#38;",
    "&#x26;",
    "&lt;",
    "<",
    "<!",
    "--",
    "<!-- & -->",
    "-->",
    "<![CDATA[ & ]]>",
    "]]>",
    "<?pi & ?>",
    "?>",
    "<loc>",
    "x",
    "?q=1",
    "!",
    ";",
]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.lists(st.sampled_from(AMP_PIECES), max_size=40).map(lambda ps: "".join(ps).encode()),
    cuts=st.lists(st.integers(0, 400), max_size=8),
)
@example(data=b"<loc>x<!-- & -->&", cuts=[7])  # cut between < and !: the comment must still be seen
@example(data=b"<loc>x<?pi & ?>", cuts=[7])
@example(data=b"a&amp;b & c", cuts=[3, 4])  # cut inside a reference
def test_stray_ampersands_escape_the_same_however_cut(data: bytes, cuts: list[int]) -> None:
    """The stray-`&` repair (its fast check included, which holds back a reference or `<` a cut may
    have split) gives the same bytes and offsets whether it sees the input whole or in pieces."""
    from sitemapkit.reader.ampersands import StrayAmpersands

    whole, strays = StrayAmpersands().fix(data, True)
    fixer, out, found, start = StrayAmpersands(), b"", [], 0
    for cut in [*sorted(set(cuts)), len(data)]:
        piece, offsets = fixer.fix(data[start : max(start, cut)], cut >= len(data))
        found += [len(out) + o for o in offsets]
        out += piece
        start = max(start, cut)
        if cut >= len(data):
            break
    assert (out, found) == (whole, strays)
