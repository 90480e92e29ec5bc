"""`sitemapkit.read` end to end over a real local HTTP server: formats, tolerance, encodings, caps."""

from __future__ import annotations

import asyncio
import gzip
from pathlib import Path

import pytest

from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.errors import UsageError
from sitemapkit.core.model import UrlEntry
from sitemapkit.reader.fetch import FetchOptions
from sitemapkit.reader.walk import Reader, aread, read
from tests.support.localserver import LocalServer

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'


async def _no_sleep(_: float) -> None:
    pass


FAST = FetchOptions(sleep=_no_sleep, jitter=lambda: 0.0)


def urlset(*locs: str, ns: str = NS, extra: str = "") -> str:
    body = "".join(f"<url><loc>{loc}</loc></url>\n" for loc in locs)
    return f'{HEAD}<urlset xmlns="{ns}"{extra}>\n{body}</urlset>\n'


def run(url: str, **kw: object) -> tuple[list[UrlEntry], Reader]:
    kw.setdefault("fetch_options", FAST)
    reader = read(url, **kw)  # type: ignore[arg-type]
    return list(reader), reader


def locs(entries: list[UrlEntry]) -> list[str]:
    return [e.loc for e in entries]


def codes(reader: Reader) -> list[str]:
    return [d.code for d in reader.diagnostics]


# -- namespaces and XML forms ----------------------------------------------------------------------


def test_plain_urlset_entries_carry_their_sitemap_and_line(server: LocalServer) -> None:
    url = server.route("/sitemap.xml", urlset("https://example.com/a", "https://example.com/b"))
    entries, reader = run(url)
    assert locs(entries) == ["https://example.com/a", "https://example.com/b"]
    assert {e.sitemap for e in entries} == {url}
    assert [e.line for e in entries] == [3, 4]
    assert reader.any_read and not reader.diagnostics
    assert reader.tree is not None and reader.tree.kind == "urlset" and reader.tree.url_count == 2


def test_nothing_is_fetched_until_iteration(server: LocalServer) -> None:
    url = server.route("/sitemap.xml", urlset("https://example.com/a"))
    reader = read(url)
    assert server.requests == [] and reader.tree is None
    assert locs(list(reader)) == ["https://example.com/a"]


@pytest.mark.parametrize(
    ("ns", "diagnosed"),
    [
        ("", True),
        ("http://www.google.com/schemas/sitemap/0.84", True),  # read, with a warning naming the right one
        ("https://www.sitemaps.org/schemas/sitemap/0.9", True),
    ],
    ids=["none", "0.84", "https"],
)
def test_namespace_variants_are_read(server: LocalServer, ns: str, diagnosed: bool) -> None:
    xml = urlset("https://example.com/a").replace(f' xmlns="{NS}"', f' xmlns="{ns}"' if ns else "")
    entries, reader = run(server.route("/s.xml", xml))
    assert locs(entries) == ["https://example.com/a"]
    assert ("incorrect-namespace" in codes(reader)) is diagnosed


def test_prefixed_elements(server: LocalServer) -> None:
    xml = f'{HEAD}<sm:urlset xmlns:sm="{NS}"><sm:url><sm:loc>https://example.com/p</sm:loc></sm:url></sm:urlset>'
    entries, _ = run(server.route("/s.xml", xml))
    assert locs(entries) == ["https://example.com/p"]


def test_utf8_bom(server: LocalServer) -> None:
    entries, _ = run(server.route("/s.xml", b"\xef\xbb\xbf" + urlset("https://example.com/a").encode()))
    assert locs(entries) == ["https://example.com/a"]


def test_blank_lines_before_the_xml_declaration(server: LocalServer) -> None:
    entries, reader = run(server.route("/s.xml", "\n\n  " + urlset("https://example.com/a")))
    assert locs(entries) == ["https://example.com/a"]
    assert "leading-whitespace" in codes(reader)


def test_whitespace_around_loc_is_dropped(server: LocalServer) -> None:
    entries, _ = run(server.route("/s.xml", urlset("\n   https://example.com/a \t\n")))
    assert locs(entries) == ["https://example.com/a"]


def test_cdata_and_entities_are_decoded_exactly_once(server: LocalServer) -> None:
    xml = urlset(
        "<![CDATA[https://example.com/?a=1&b=2]]>",
        "https://example.com/?c=1&amp;d=2",
        "https://example.com/?q=a&amp;amp;b",
    )
    entries, _ = run(server.route("/s.xml", xml))
    got = locs(entries)
    assert got[:2] == ["https://example.com/?a=1&b=2", "https://example.com/?c=1&d=2"]
    assert got[2] == "https://example.com/?q=a&amp;b"  # one level of escaping undone, not two


def test_truncated_file_keeps_complete_entries(server: LocalServer) -> None:
    xml = urlset("https://example.com/a", "https://example.com/b")
    cut = xml[: xml.index("https://example.com/b") + 5]
    entries, reader = run(server.route("/s.xml", cut))
    assert locs(entries) == ["https://example.com/a"]
    assert "parse-error" in codes(reader)
    assert reader.tree is not None and reader.tree.truncated


def test_bad_fields_are_reported_and_dropped(server: LocalServer) -> None:
    xml = (
        f'{HEAD}<urlset xmlns="{NS}">\n'
        "<url><loc></loc></url>\n"
        "<url><loc>https://example.com/a</loc><changefreq>sometimes</changefreq><priority>1.5</priority>"
        "<lastmod>2024-13-45</lastmod></url>\n"
        "<url><loc>https://example.com/b</loc><lastmod>2024-05</lastmod><priority>abc</priority></url>\n"
        "</urlset>"
    )
    entries, reader = run(server.route("/s.xml", xml))
    assert locs(entries) == ["https://example.com/a", "https://example.com/b"]
    a, b = entries
    assert (a.changefreq, a.priority, a.lastmod) == (None, None, None)
    assert b.priority is None
    # the empty <loc> is an invalid URL (not a missing tag), line 3; the bad fields of line 4 and 5
    found = [(d.code, d.line) for d in reader.diagnostics]
    assert ("invalid-url", 3) in found and ("missing-tag", 3) not in found, found
    assert {("invalid-value", 4), ("invalid-date", 4), ("invalid-value", 5), ("invalid-date", 5)} <= set(
        found
    )


def test_relative_loc_is_reported_and_skipped(server: LocalServer) -> None:
    entries, reader = run(server.route("/s.xml", urlset("/relative/page", "https://example.com/ok")))
    assert locs(entries) == ["https://example.com/ok"]
    bad = [d for d in reader.diagnostics if d.code == "invalid-url"]
    assert bad and bad[0].source == server.url("/s.xml") and bad[0].line == 3


def test_images_videos_and_alternates(server: LocalServer) -> None:
    xml = (
        f'{HEAD}<urlset xmlns="{NS}" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"'
        ' xmlns:video="http://www.google.com/schemas/sitemap-video/1.1"'
        ' xmlns:xhtml="http://www.w3.org/1999/xhtml">\n'
        "<url><loc>https://example.com/a</loc>\n"
        "<image:image><image:loc>https://example.com/1.jpg</image:loc></image:image>\n"
        "<image:image><image:loc>https://example.com/2.jpg</image:loc>"
        "<image:title>Two</image:title></image:image>\n"
        + "".join(
            f"<video:video><video:thumbnail_loc>https://example.com/t{i}.jpg</video:thumbnail_loc>"
            f"<video:title>V{i}</video:title><video:description>D{i}</video:description>"
            f"<video:content_loc>https://example.com/v{i}.mp4</video:content_loc></video:video>\n"
            for i in range(2)
        )
        + '<xhtml:link rel="alternate" hreflang="en" href="https://example.com/a"/>\n'
        '<xhtml:link rel="alternate" hreflang="de"/>\n'
        "</url></urlset>"
    )
    entries, reader = run(server.route("/s.xml", xml))
    (e,) = entries
    assert [i.loc for i in e.images] == ["https://example.com/1.jpg", "https://example.com/2.jpg"]
    assert e.images[1].title == "Two"
    assert [v.title for v in e.videos] == ["V0", "V1"]
    assert [(a.hreflang, a.href) for a in e.alternates] == [("en", "https://example.com/a")]
    assert any(d.line == 9 and d.is_error for d in reader.diagnostics), list(map(str, reader.diagnostics))


# -- what is not a sitemap, and content sniffing --------------------------------------------------


def test_html_soft_404_is_unsupported_and_nothing_is_read(server: LocalServer) -> None:
    url = server.route(
        "/sitemap.xml", "<!DOCTYPE html><html><body>Not found</body></html>", content_type="text/html"
    )
    entries, reader = run(url)
    assert entries == [] and not reader.any_read
    assert "unsupported-format" in codes(reader)
    assert reader.tree is not None and reader.tree.status == 200 and reader.tree.error


def test_xml_served_as_text_html_is_still_read(server: LocalServer) -> None:
    entries, reader = run(server.route("/s.xml", urlset("https://example.com/a"), content_type="text/html"))
    assert locs(entries) == ["https://example.com/a"] and reader.any_read


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("", "The body is empty"),
        ('<?xml version="1.0"?><catalog><item/></catalog>', "The root element is <catalog>"),
    ],
    ids=["empty", "root"],
)
def test_empty_body_or_unknown_root(server: LocalServer, body: str, said: str) -> None:
    entries, reader = run(server.route("/s.xml", body))
    assert entries == [] and not reader.any_read
    assert [(d.code, d.message.startswith(said)) for d in reader.diagnostics] == [
        ("unsupported-format", True)
    ]


def test_utf16_document(server: LocalServer) -> None:
    xml = urlset("https://example.com/ü")
    utf8, as_utf8 = run(server.route("/s8.xml", xml.encode("utf-8")))
    entries, reader = run(
        server.route("/s.xml", xml.replace('encoding="UTF-8"', 'encoding="UTF-16"').encode("utf-16"))
    )
    # read as the same document in UTF-8 is (the IRI kept as written: an invalid-url in both), plus an
    # encoding-error, since sitemaps must be UTF-8
    assert locs(entries) == locs(utf8) == ["https://example.com/ü"]
    assert codes(as_utf8) == ["invalid-url"]
    assert sorted(codes(reader)) == ["encoding-error", "invalid-url"]


def test_latin1_declared_document(server: LocalServer) -> None:
    xml = urlset("https://example.com/caf\u00e9").replace('encoding="UTF-8"', 'encoding="ISO-8859-1"')
    entries, reader = run(server.route("/s.xml", xml.encode("latin-1")))
    assert len(entries) == 1 and entries[0].loc.startswith("https://example.com/caf")
    assert "\ufffd" not in entries[0].loc
    assert "encoding-error" in codes(reader)


def test_text_sitemap(server: LocalServer) -> None:
    url = server.route(
        "/s.txt", "https://example.com/a\r\nhttps://example.com/b\n", content_type="text/plain"
    )
    entries, reader = run(url)
    assert locs(entries) == ["https://example.com/a", "https://example.com/b"]
    assert reader.tree is not None and reader.tree.kind == "text"


# -- gzip ------------------------------------------------------------------------------------------


def test_gzip_found_by_magic_bytes_without_any_header(server: LocalServer) -> None:
    url = server.route("/sitemap.xml", gzip.compress(urlset("https://example.com/a").encode()))
    entries, reader = run(url)
    assert locs(entries) == ["https://example.com/a"]
    assert reader.tree is not None and reader.tree.compressed


def test_gz_file_sent_with_content_encoding_gzip_is_gzip_twice(server: LocalServer) -> None:
    file_bytes = gzip.compress(urlset("https://example.com/a").encode())
    url = server.route("/sitemap.xml.gz", gzip.compress(file_bytes), headers={"Content-Encoding": "gzip"})
    entries, reader = run(url)
    assert locs(entries) == ["https://example.com/a"]
    assert reader.tree is not None and reader.tree.bytes == len(gzip.compress(file_bytes))


def test_plain_xml_sent_with_content_encoding_gzip(server: LocalServer) -> None:
    url = server.route(
        "/sitemap.xml",
        gzip.compress(urlset("https://example.com/a").encode()),
        headers={"Content-Encoding": "gzip"},
    )
    entries, reader = run(url)
    assert locs(entries) == ["https://example.com/a"]
    assert reader.tree is not None and not reader.tree.compressed


def test_decompressed_size_cap(server: LocalServer) -> None:
    many = [f"https://example.com/page-{i}" for i in range(5000)]
    url = server.route("/big.xml.gz", gzip.compress(urlset(*many).encode()))
    entries, reader = run(url, max_uncompressed=50_000)
    assert 0 < len(entries) < 5000
    assert {"compression-error", "file-too-large"} & set(codes(reader)), codes(reader)
    assert reader.tree is not None and reader.tree.truncated


def test_download_cap_keeps_complete_entries(server: LocalServer) -> None:
    many = [f"https://example.com/page-{i}" for i in range(5000)]
    url = server.route("/big.xml", urlset(*many))
    entries, reader = run(url, max_download=20_000)
    assert 0 < len(entries) < 5000
    assert locs(entries) == many[: len(entries)]
    assert "download-too-large" in codes(reader)
    assert reader.tree is not None and reader.tree.truncated and reader.tree.bytes == 20_000


# -- the API around it -----------------------------------------------------------------------------


def test_on_diagnostic_receives_every_problem(server: LocalServer) -> None:
    seen: list[Diagnostic] = []
    _, reader = run(
        server.route("/s.xml", urlset("/rel", "https://example.com/a")), on_diagnostic=seen.append
    )
    assert seen == list(reader.diagnostics) and seen


def test_user_agent_option_is_sent(server: LocalServer) -> None:
    run(server.route("/s.xml", urlset("https://example.com/a")), user_agent="TestBot/2")
    assert server.requests[0].headers["User-Agent"] == "TestBot/2"


def test_local_file_and_gzip_file(tmp_path: Path) -> None:
    plain = tmp_path / "sitemap.xml"
    plain.write_text(urlset("https://example.com/a"))
    packed = tmp_path / "sitemap.bin"
    packed.write_bytes(gzip.compress(urlset("https://example.com/b").encode()))
    assert locs(run(str(plain))[0]) == ["https://example.com/a"]
    entries, reader = run(str(packed))
    assert locs(entries) == ["https://example.com/b"] and entries[0].sitemap == str(packed)
    assert reader.tree is not None and reader.tree.bytes == packed.stat().st_size


def test_aread_yields_the_same_entries(server: LocalServer) -> None:
    url = server.route("/s.xml", urlset("https://example.com/a", "https://example.com/b"))

    async def collect() -> list[str]:
        reader = aread(url, fetch_options=FAST)
        return [e.loc async for e in reader]

    assert asyncio.run(collect()) == ["https://example.com/a", "https://example.com/b"]


def test_a_reader_is_iterated_once(server: LocalServer) -> None:
    url = server.route("/s.xml", urlset("https://example.com/a"))
    reader = read(url)
    assert len(list(reader)) == 1
    assert list(reader) == []  # the same, exhausted iterator


def test_sync_reader_inside_a_running_loop_says_to_use_aread(server: LocalServer) -> None:
    url = server.route("/s.xml", urlset("https://example.com/a"))

    async def misuse() -> None:
        list(read(url))

    with pytest.raises(UsageError, match="use aread"):
        asyncio.run(misuse())
