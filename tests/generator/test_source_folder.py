"""The static-site folder source: file -> URL rules, skips with explanations, metadata, content hashes."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import cast
from urllib.parse import urljoin

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from sitemapkit.core.diagnostics import Diagnostic, DiagnosticLog
from sitemapkit.core.errors import InvalidUrlError
from sitemapkit.core.model import Alternate, Image
from sitemapkit.core.page import (
    DEFAULT_VOLATILE_SELECTORS,
    PageError,
    _drop,
    content_hash,
    css_to_xpath,
    decode_html,
    parse_html,
    resolve_link,
)
from sitemapkit.core.urls import normalize_url
from sitemapkit.generator.sources.folder import FolderPage, Skip, scan_folder

BASE = "https://example.com/"


def page(head: str = "", body: str = "<p>Hello</p>", charset: str = "utf-8") -> str:
    return (
        f'<!doctype html><html><head><meta charset="{charset}"><title>T</title>{head}</head>'
        f"<body>{body}</body></html>"
    )


def write(root: Path, rel: str, content: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


def scan(root: Path, base: str = BASE, **kw: object) -> tuple[list[FolderPage], list[Skip], DiagnosticLog]:
    skips: list[Skip] = []
    log = DiagnosticLog()
    pages = list(scan_folder(root, base, report=log, explain=skips.append, **kw))  # type: ignore[arg-type]
    return pages, skips, log


def locs(pages: list[FolderPage]) -> list[str]:
    return [p.entry.loc for p in pages]


def test_file_to_url_rules_and_sorted_order(tmp_path: Path) -> None:
    for rel in ("index.html", "b.html", "a/index.html", "a/z.htm", "a/b/c.html", "style.css", "doc.pdf"):
        write(tmp_path, rel, page())
    pages, skips, log = scan(tmp_path)
    assert locs(pages) == [
        "https://example.com/",
        "https://example.com/a/",
        "https://example.com/a/b/c.html",
        "https://example.com/a/z.htm",
        "https://example.com/b.html",
    ]
    assert not skips and not list(log)
    first = pages[0]
    assert first.path == tmp_path / "index.html"
    assert first.entry.sitemap == str(tmp_path / "index.html") and first.entry.line is None
    assert first.mtime == os.stat(tmp_path / "index.html").st_mtime
    assert len(first.content_hash) == 32


def test_clean_urls_and_base_folder(tmp_path: Path) -> None:
    write(tmp_path, "b.html", page())
    write(tmp_path, "x/index.html", page())
    pages, _, _ = scan(tmp_path, "https://example.com/docs", clean_urls=True)
    assert locs(pages) == ["https://example.com/docs/b", "https://example.com/docs/x/"]


def test_include_exclude_globs(tmp_path: Path) -> None:
    write(tmp_path, "a.html", page())
    write(tmp_path, "report.PDF", b"%PDF-1.4 binary\x00stuff")
    write(tmp_path, "drafts/d.html", page())
    write(tmp_path, "drafts/sub/e.html", page())
    write(tmp_path, "keep/private.html", page())
    pages, _, log = scan(tmp_path, include=("*.html", "*.pdf"), exclude=("drafts/*", "private.html"))
    assert locs(pages) == ["https://example.com/a.html", "https://example.com/report.PDF"]
    pdf = pages[1]
    assert pdf.entry.alternates == () and len(pdf.content_hash) == 32
    assert not list(log)


def test_non_ascii_and_special_file_names_are_percent_encoded(tmp_path: Path) -> None:
    write(tmp_path, "über uns.html", page())
    write(tmp_path, "q?a#b.html", page())
    pages, _, _ = scan(tmp_path)
    assert locs(pages) == ["https://example.com/q%3Fa%23b.html", "https://example.com/%C3%BCber%20uns.html"]


def test_hidden_files_and_folders_are_not_listed(tmp_path: Path) -> None:
    write(tmp_path, ".git/index.html", page())
    write(tmp_path, ".well-known/x.html", page())
    write(tmp_path, ".secret.html", page())
    write(tmp_path, "ok.html", page())
    pages, skips, _ = scan(tmp_path)
    assert locs(pages) == ["https://example.com/ok.html"] and not skips


def test_symlinks(tmp_path: Path) -> None:
    root = tmp_path / "site"
    outside = tmp_path / "outside"
    write(outside, "secret.html", page())
    write(root, "real.html", page())
    (root / "inside-link.html").symlink_to(root / "real.html")
    (root / "escape.html").symlink_to(outside / "secret.html")
    (root / "dirlink").symlink_to(outside, target_is_directory=True)
    (root / "loop").symlink_to(root, target_is_directory=True)
    pages, skips, _ = scan(root)
    assert locs(pages) == ["https://example.com/inside-link.html", "https://example.com/real.html"]
    reasons = sorted((s.path.name, s.reason) for s in skips)
    assert reasons == [
        ("dirlink", "symlinked-folder"),
        ("escape.html", "symlink-outside-root"),
        ("loop", "symlinked-folder"),
    ]


def test_error_pages_are_skipped_by_name(tmp_path: Path) -> None:
    for rel in ("404.html", "50x.html", "5xx.htm", "404/index.html", "not-found.html", "4041.html"):
        write(tmp_path, rel, page())
    pages, skips, _ = scan(tmp_path)
    assert locs(pages) == ["https://example.com/4041.html"]
    assert sorted(str(s.path.relative_to(tmp_path)) for s in skips if s.reason == "error-page") == [
        "404.html",
        "404/index.html",
        "50x.html",
        "5xx.htm",
        "not-found.html",
    ]


@pytest.mark.parametrize(
    "meta",
    [
        '<meta name="robots" content="noindex, follow">',
        '<META NAME="ROBOTS" CONTENT="NoIndex">',
        '<meta name="robots" content="none">',
        '<meta name="googlebot" content="noarchive,noindex">',
    ],
)
def test_noindex_is_skipped_and_explained(tmp_path: Path, meta: str) -> None:
    write(tmp_path, "a.html", page(meta))
    write(tmp_path, "b.html", page('<meta name="robots" content="index, follow">'))
    scan_ = scan_folder(tmp_path, BASE, report=DiagnosticLog(), explain=None)
    pages, skips, _ = scan(tmp_path)
    assert locs(pages) == ["https://example.com/b.html"]
    assert [(s.reason, s.url) for s in skips] == [("noindex", "https://example.com/a.html")]
    list(scan_)
    assert scan_.skipped == {"noindex": 1} and scan_.pages == 1 and scan_.files == 2


def test_meta_refresh_redirect_is_skipped(tmp_path: Path) -> None:
    write(tmp_path, "old.html", page('<meta http-equiv="Refresh" content="0; URL=\'/new.html\'">'))
    write(tmp_path, "new.html", page())
    write(tmp_path, "reload.html", page('<meta http-equiv="refresh" content="300">'))
    pages, skips, _ = scan(tmp_path)
    assert locs(pages) == ["https://example.com/new.html", "https://example.com/reload.html"]
    assert [(s.reason, s.path.name) for s in skips] == [("redirect", "old.html")]
    assert "https://example.com/new.html" in skips[0].detail


def test_canonical_rules(tmp_path: Path) -> None:
    # self-canonical (also written as the alias with the extension): listed
    write(tmp_path, "self.html", page('<link rel="canonical" href="https://example.com/self.html">'))
    write(tmp_path, "d/index.html", page('<link rel="canonical" href="/d/index.html">'))
    # canonical to a page served by another file: that file lists it
    write(tmp_path, "copy.html", page('<link rel="canonical" href="/self.html">'))
    # canonical to a URL no file serves: listed instead, once, after the walk
    write(tmp_path, "v1.html", page('<link rel="Canonical" href="/products/widget?id=1">'))
    write(tmp_path, "v2.html", page('<link rel="canonical" href="/products/widget?id=1">'))
    # canonical outside the scope: nothing listed
    write(tmp_path, "syndicated.html", page('<link rel="canonical" href="https://other.org/post">'))
    pages, skips, _ = scan(tmp_path)
    assert locs(pages) == [
        "https://example.com/d/",
        "https://example.com/self.html",
        "https://example.com/products/widget?id=1",
    ]
    assert pages[-1].path == tmp_path / "v1.html"
    details = {s.path.name: s.detail for s in skips}
    assert all(s.reason == "canonical" for s in skips)
    assert "own file" in details["copy.html"]
    assert "instead" in details["v1.html"] and "already" in details["v2.html"]
    assert "outside the scope" in details["syndicated.html"]


def test_hreflang_alternates_resolved_against_page_and_base(tmp_path: Path) -> None:
    head = (
        '<link rel="alternate" hreflang="en" href="/en/page.html">'
        '<link rel="alternate" hreflang="de" href="../de/seite.html">'
        '<link rel="alternate" hreflang="de" href="../de/seite.html">'
        '<link rel="alternate" hreflang="x-default" href="https://example.com/">'
        '<link rel="alternate" type="application/rss+xml" href="/feed.xml">'
    )
    write(tmp_path, "en/page.html", page(head))
    write(
        tmp_path, "fr/p.html", page('<base href="/en/"><link rel="alternate" hreflang="en" href="page.html">')
    )
    pages, _, _ = scan(tmp_path)
    assert pages[0].entry.alternates == (
        Alternate("en", "https://example.com/en/page.html"),
        Alternate("de", "https://example.com/de/seite.html"),
        Alternate("x-default", "https://example.com/"),
    )
    assert pages[1].entry.alternates == (Alternate("en", "https://example.com/en/page.html"),)


def test_images(tmp_path: Path) -> None:
    body = (
        '<img src="a.png"><img src="/img/b.jpg"><img src="a.png">'
        '<img src="https://cdn.example.net/c.jpg"><img src="https://evil.org/d.jpg">'
        '<img src="data:image/png;base64,AAAA"><img src=""><img alt="no src">'
    )
    write(tmp_path, "p/index.html", page(body=body))
    pages, _, _ = scan(tmp_path, images=True, allow_hosts=("cdn.example.net",))
    assert pages[0].entry.images == (
        Image("https://example.com/p/a.png"),
        Image("https://example.com/img/b.jpg"),
        Image("https://cdn.example.net/c.jpg"),
    )
    pages, _, _ = scan(tmp_path)
    assert pages[0].entry.images == ()


def test_broken_html_is_read(tmp_path: Path) -> None:
    write(
        tmp_path,
        "broken.html",
        "<html><head><link rel=alternate hreflang=en href=/x><title>x</head><body><p><b>open<div></table>",
    )
    pages, _, log = scan(tmp_path)
    assert pages[0].entry.alternates == (Alternate("en", "https://example.com/x"),)
    assert not list(log)


def test_unreadable_pages_are_reported_never_a_crash(tmp_path: Path) -> None:
    write(tmp_path, "empty.html", b"")
    write(tmp_path, "blank.html", b"  \n\t ")
    write(tmp_path, "image.html", bytes(range(256)) * 10)
    write(tmp_path, "big.html", page(body="x" * 5000))
    write(tmp_path, "ok.html", page())
    pages, skips, log = scan(tmp_path, max_page_bytes=4096)
    assert locs(pages) == ["https://example.com/ok.html"]
    bad = sorted(d.source or "" for d in log if d.code == "page-unreadable")
    assert bad == sorted(str(tmp_path / n) for n in ("empty.html", "blank.html", "image.html", "big.html"))
    assert all(d.is_error for d in log)
    assert {s.reason for s in skips} == {"unreadable"}


@contextlib.contextmanager
def permissions_enforced(tmp_path: Path) -> Iterator[Path]:
    """A folder where the block runs with file permissions enforced: as root (which reads any file), the
    block runs with the effective user `nobody` in a folder of its own under /tmp, and root after."""
    if os.geteuid() != 0:
        yield tmp_path
        return
    import pwd

    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("running as root and there is no user 'nobody' to drop privileges to")
    folder = Path(tempfile.mkdtemp(prefix="sitemapkit-nobody-"))
    try:
        folder.chmod(0o755)
        os.chown(folder, nobody.pw_uid, nobody.pw_gid)
        os.setegid(nobody.pw_gid)
        os.seteuid(nobody.pw_uid)
        try:
            yield folder
        finally:
            os.seteuid(0)
            os.setegid(0)
    finally:
        shutil.rmtree(folder)


def test_unreadable_file_permission(tmp_path: Path) -> None:
    with permissions_enforced(tmp_path) as folder:
        write(folder, "open.html", page())
        p = write(folder, "locked.html", page())
        p.chmod(0)
        assert not os.access(
            p, os.R_OK, effective_ids=True
        )  # the test below is not run where permissions are not enforced
        pages, _, log = scan(folder)
    assert locs(pages) == ["https://example.com/open.html"] and [d.code for d in log] == ["page-unreadable"]
    assert "cannot be read" in next(iter(log)).message


def test_encodings(tmp_path: Path) -> None:
    hreflang = '<link rel="alternate" hreflang="de" href="/d/%C3%BC.html">'
    write(tmp_path, "a-bom.html", b"\xef\xbb\xbf" + page(hreflang, "<p>Grüße</p>").encode())
    write(tmp_path, "b-latin1.html", page(hreflang, "<p>Grüße</p>", charset="iso-8859-1").encode("latin-1"))
    write(tmp_path, "c-utf16.html", page(hreflang, "<p>Grüße</p>").encode("utf-16"))
    undeclared = "<html><head><title>T</title></head><body><p>Grüße</p></body></html>".encode("cp1252")
    write(tmp_path, "d-undeclared.html", undeclared)
    write(
        tmp_path, "e-xmldecl.xhtml", '<?xml version="1.0" encoding="utf-8"?>' + page(hreflang, "<p>Grüße</p>")
    )
    pages, _, log = scan(tmp_path, include=("*.html", "*.xhtml"))
    assert len(pages) == 5
    hashes = {p.path.name: p.content_hash for p in pages}
    same = content_hash(page(hreflang, "<p>Grüße</p>").encode())
    assert hashes["a-bom.html"] == hashes["c-utf16.html"] == hashes["e-xmldecl.xhtml"] == same
    assert hashes["b-latin1.html"] == content_hash(
        page(hreflang, "<p>Grüße</p>", "iso-8859-1").encode("cp1252")
    )
    assert [(d.code, d.severity.value, Path(d.source or "").name) for d in log] == [
        ("encoding-error", "warning", "d-undeclared.html")
    ]
    assert content_hash(undeclared) == content_hash(undeclared.decode("cp1252").encode())


def test_bad_alternate_and_image_urls_are_warnings(tmp_path: Path) -> None:
    write(
        tmp_path,
        "a.html",
        page('<link rel="alternate" hreflang="en" href="http://[bad">', '<img src="http://[bad/x.png">'),
    )
    pages, _, log = scan(tmp_path, images=True)
    assert len(pages) == 1 and pages[0].entry.alternates == () and pages[0].entry.images == ()
    assert [(d.code, d.is_error) for d in log] == [("invalid-url", False), ("invalid-url", False)]


def test_nothing_is_read_until_iterated(tmp_path: Path) -> None:
    seen: list[Diagnostic] = []
    it = scan_folder(tmp_path / "missing", BASE, report=seen.append)
    assert seen == []
    assert list(it) == [] and [d.code for d in seen] == ["page-unreadable"]  # a folder it cannot list


# --------------------------------------------------------------------------------------------- hashes

BUILD_1 = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Widget</title>
<meta name="generator" content="Hugo 0.120.1 built 2026-01-01T10:00:00Z">
<meta name="csrf-token" content="abc123">
<link rel="stylesheet" href="/css/main.1a2b3c.css" integrity="sha384-xyz" nonce="n1">
<script nonce="n1">window.BUILD = "2026-01-01T10:00:00Z";</script>
<style>body { color: red }</style></head>
<body><h1 title="Widget">Widget</h1><p>The best <a href="/w">widget</a>.</p>
<img src="/w.png" alt="A widget">
<footer><span data-build-time>Built 2026-01-01 10:00</span></footer>
<form><input type="hidden" name="csrfmiddlewaretoken" value="tok1"><input type="submit" value="Buy"></form>
<noscript>Enable JS (build 1)</noscript><!-- build 1 --></body></html>"""

BUILD_2 = (
    BUILD_1.replace("2026-01-01T10:00:00Z", "2026-02-02T11:11:11Z")
    .replace("Built 2026-01-01 10:00", "Built 2026-02-02 11:11")
    .replace("abc123", "zzz999")
    .replace('nonce="n1"', 'nonce="n2"')
    .replace("tok1", "tok2")
    .replace("build 1", "build 2")
    .replace("main.1a2b3c.css", "main.9f9f9f.css")
)


def test_hash_ignores_build_noise() -> None:
    assert BUILD_1 != BUILD_2
    assert content_hash(BUILD_1.encode()) == content_hash(BUILD_2.encode())


def test_hash_ignores_whitespace_only_reformatting() -> None:
    reformatted = BUILD_1.replace("><", ">\n    <").replace("The best ", "The   best\n\t")
    assert content_hash(BUILD_1.encode()) == content_hash(reformatted.encode())


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The best", "The worst"),
        ('href="/w"', 'href="/v"'),
        ('alt="A widget"', 'alt="Two widgets"'),
        ("<title>Widget</title>", "<title>Gadget</title>"),
        ('value="Buy"', 'value="Order"'),
        ('lang="en"', 'lang="de"'),
    ],
)
def test_hash_changes_with_content(old: str, new: str) -> None:
    assert old in BUILD_1
    assert content_hash(BUILD_1.encode()) != content_hash(BUILD_1.replace(old, new).encode())


def test_hash_volatile_selectors_and_patterns() -> None:
    a = page(body='<p>Hi</p><div class="ad banner">Ad 1</div><p>Updated 2026-01-01</p>').encode()
    b = page(body='<p>Hi</p><div class="ad banner">Ad 2</div><p>Updated 2026-03-04</p>').encode()
    assert content_hash(a) != content_hash(b)
    assert content_hash(a, volatile_selectors=["div.ad"]) != content_hash(b, volatile_selectors=["div.ad"])
    kw = {"volatile_selectors": ["div.ad"], "volatile_patterns": [r"Updated \d{4}-\d\d-\d\d"]}
    assert content_hash(a, **kw) == content_hash(b, **kw)


def test_scan_uses_volatile_options(tmp_path: Path) -> None:
    write(tmp_path, "a.html", page(body='<p id="clock">12:00</p><p>x</p>'))
    (pages_a, _, _) = scan(tmp_path, volatile_selectors=["#clock"])
    write(tmp_path, "a.html", page(body='<p id="clock">13:00</p><p>x</p>'))
    (pages_b, _, _) = scan(tmp_path, volatile_selectors=["#clock"])
    assert pages_a[0].content_hash == pages_b[0].content_hash


def test_content_hash_of_junk_raises_page_error() -> None:
    with pytest.raises(PageError):
        content_hash(b"")
    with pytest.raises(PageError):
        content_hash(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")


def test_css_to_xpath_subset() -> None:
    assert css_to_xpath("#a") == "descendant-or-self::*[@id='a']"
    assert css_to_xpath("meta[name=generator]") == "descendant-or-self::meta[@name='generator']"
    assert css_to_xpath("a, b") == "descendant-or-self::a | descendant-or-self::b"
    assert "starts-with(@href, 'x')" in css_to_xpath("a[href^='x']")
    for bad in ("a:hover", "a + b", "", "> a", "a > > b"):
        with pytest.raises(ValueError):
            css_to_xpath(bad)
    with pytest.raises(ValueError):
        scan_folder(".", BASE, report=print, volatile_selectors=["p::before"])


# ---------------------------------------------------------------------- fast paths, against the plain way

# The content hash as first written: every volatile selector's XPath in one union, dropped; the text nodes
# and the content attributes from XPath. `_hash_tree` gets the same digest faster (grouped XPath, one pass
# over the attributes in Python); these properties hold it to that on arbitrary HTML.
_PLAIN_ATTRS = etree.XPath(
    "//a/@href | //area/@href | //img/@src | //img/@srcset | //img/@alt | //iframe/@src"
    " | //video/@src | //audio/@src | //source/@src | //object/@data | //embed/@src"
    " | //link[@hreflang]/@hreflang | //link[@hreflang]/@href"
    " | //meta[@name='description' or @name='robots' or @name='googlebot' or @name='keywords'"
    " or starts-with(@property, 'og:')]/@content"
    " | //@title | //@lang | //input[@type='submit' or @type='button']/@value"
)


def plain_hash(html: bytes, selectors: tuple[str, ...] = ()) -> str:
    root, _ = parse_html(html)
    volatile = " | ".join(css_to_xpath(s) for s in (*DEFAULT_VOLATILE_SELECTORS, *selectors))
    for element in root.xpath(volatile):
        _drop(element)
    texts = [" ".join(t.split()) for t in cast(list[str], root.xpath("//text()"))]
    attrs = [" ".join(a.split()) for a in cast(list[str], _PLAIN_ATTRS(root))]
    blob = "\x1f".join(t for t in texts if t) + "\x1e" + "\x1f".join(attrs)
    return hashlib.blake2b(blob.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


_TAGS = [
    "div", "p", "span", "a", "img", "script", "style", "noscript", "template", "meta", "link", "input",
    "title", "b", "ul", "li", "iframe", "source", "video", "audio", "object", "embed", "area", "table", "td",
    "form",
]  # fmt: skip
_ATTRS = [
    "href", "src", "srcset", "alt", "title", "lang", "hreflang", "name", "content", "property", "type",
    "value", "data-build-time", "class", "id", "data", "rel", "nonce", "xml:lang",
]  # fmt: skip
_WORDS = st.sampled_from(
    ["x", "Hello", "ad", "generator", "robots", "description", "og:title", "submit", "button", "csrf_token",
     "en", " ", "  a  b ", "\t", "\n", "\xa0", "\u2003", "\x1f", "\x01", "é", "&amp;", "&lt;", "1 < 2",
     "\U0001f600"]
)  # fmt: skip
_TEXT = st.lists(_WORDS, max_size=4).map("".join)


@st.composite
def _element(draw: st.DrawFn, depth: int = 0) -> str:
    tag = draw(st.sampled_from(_TAGS))
    attrs = draw(st.lists(st.tuples(st.sampled_from(_ATTRS), _TEXT), max_size=4))
    rendered = "".join(f' {n}="{v.replace(chr(34), "&quot;")}"' if v != "x" else f" {n}" for n, v in attrs)
    children = (
        draw(st.lists(_TEXT | st.just("<!-- c -->") | _element(depth + 1), max_size=3)) if depth < 3 else []
    )
    tail = draw(_TEXT)
    close = draw(st.sampled_from([f"</{tag}>", f"</{tag}>", ""]))  # unclosed tags, as in the wild
    return f"<{tag}{rendered}>{''.join(children)}{close}{tail}"


@settings(max_examples=100, deadline=None)
@given(
    body=st.lists(_element(), min_size=1, max_size=5).map("".join),
    head=st.lists(_element(), max_size=3).map("".join),
    selectors=st.lists(
        st.sampled_from(
            ["div.ad", "#x", "p > span", "[data-x]", "span[lang|=en]", "li a", "b, td", "*[title]"]
        ),
        max_size=2,
    ),
)
def test_content_hash_equals_the_plain_xpath_hash(body: str, head: str, selectors: list[str]) -> None:
    html = (
        f"<!doctype html><html lang=en><head><title>T</title>{head}</head><body>{body}</body></html>".encode()
    )
    sel = tuple(selectors)
    assert content_hash(html, volatile_selectors=sel) == plain_hash(html, sel)


def plain_resolve(href: str, base: str) -> str | None:
    try:
        return normalize_url(urljoin(base, href.strip())).split("#", 1)[0]
    except (InvalidUrlError, ValueError):
        return None


_HREF_START = st.sampled_from(
    ["/", "//", "http://", "https://", "HTTPS://", "./", "../", "", "?", "#", "a", "http://example.com",
     "https://example.com:8443/", "https://Example.COM", "https://x.org:99999/", "/a/../", "/%41", " /x"]
)  # fmt: skip
_HREF_REST = st.text(alphabet="ab/.?#;:%=&@!$'()*+,~-_ ü[]\\\t", max_size=12)
_BASES = st.sampled_from(
    [
        "https://example.com/",
        "https://example.com/a/b.html",
        "http://example.com:8080/x/",
        "https://x.org/p?q=1",
    ]
)


@settings(max_examples=500, deadline=None)
@given(start=_HREF_START, rest=_HREF_REST, base=_BASES)
def test_resolve_equals_urljoin_then_normalize(start: str, rest: str, base: str) -> None:
    href = start + rest
    assert resolve_link(href, base) == plain_resolve(href, base)


@given(st.text(alphabet="ab <>\t\n\r\x00\x01\x07\x0b\x0c\x1b\x1f", min_size=1, max_size=80), st.booleans())
def test_binary_detection_counts_control_characters(text: str, ascii_only: bool) -> None:
    data = (text if ascii_only else text + "é").encode()
    sample = data.decode()[:4096]
    expected_binary = (
        not sample.strip()
        or "\x00" in sample
        or len(re.findall(r"[\x00-\x08\x0b\x0e-\x1f]", sample)) > len(sample) // 10
    )
    try:
        decode_html(data)
    except PageError:
        assert expected_binary
    else:
        assert not expected_binary


def test_control_character_beside_a_dropped_element_is_no_crash(tmp_path: Path) -> None:
    # the HTML parser keeps \x01; lxml refuses to set it as text when the <script> before it is dropped
    write(tmp_path, "a.html", b"<html><body><p>a<script>x()</script>\x01b</p></body></html>")
    pages, _, log = scan(tmp_path)
    assert len(pages) == 1 and not list(log)
    assert pages[0].content_hash == content_hash(b"<html><body><p>a<script></script> b</p></body></html>")
