"""The sitemap parser on bytes: formats, real-world breakage, per-element rules, safety, streaming."""

from __future__ import annotations

import datetime as dt
import gzip
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sitemapkit.core.diagnostics import CODES, Diagnostic, Severity
from sitemapkit.core.errors import UsageError
from sitemapkit.core.model import Alternate, Image, IndexEntry, News, UrlEntry
from sitemapkit.reader.parser import (
    LANGUAGE_CODES,
    REGION_CODES,
    SitemapParser,
    hreflang_problem,
    parse_bytes,
    parse_file,
)

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
EXT = (
    'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1" '
    'xmlns:video="http://www.google.com/schemas/sitemap-video/1.1" '
    'xmlns:news="http://www.google.com/schemas/sitemap-news/0.9" '
    'xmlns:xhtml="http://www.w3.org/1999/xhtml"'
)


@dataclass
class Parsed:
    entries: list[UrlEntry | IndexEntry]
    diagnostics: list[Diagnostic]
    parser: SitemapParser
    urls: list[str] = field(default_factory=list)

    def codes(self) -> list[str]:
        return [d.code for d in self.diagnostics]

    def only(self, code: str) -> Diagnostic:
        found = [d for d in self.diagnostics if d.code == code]
        assert len(found) == 1, self.diagnostics
        return found[0]


def parse(data: bytes | str, chunk: int | None = None, **kw: int) -> Parsed:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    diagnostics: list[Diagnostic] = []
    parser = SitemapParser("test.xml", on_diagnostic=diagnostics.append, **kw)
    entries: list[UrlEntry | IndexEntry] = []
    step = chunk or max(1, len(raw))
    for i in range(0, len(raw), step):
        entries += parser.feed(raw[i : i + step])
    entries += parser.close()
    return Parsed(entries, diagnostics, parser, [e.loc for e in entries])


def urlset(body: str, ns: str = NS, decl: bool = True) -> str:
    head = '<?xml version="1.0" encoding="UTF-8"?>\n' if decl else ""
    return f"{head}<urlset {ns} {EXT}>\n{body}\n</urlset>\n"


def url(loc: str = "https://example.com/", extra: str = "") -> str:
    return f"<url><loc>{loc}</loc>{extra}</url>"


# --- formats -------------------------------------------------------------------------------------------


def test_urlset_with_core_fields_and_lines() -> None:
    p = parse(
        urlset(
            "<url>\n <loc>https://example.com/a</loc>\n <lastmod>2024-05-01T12:00:00+02:00</lastmod>\n"
            " <changefreq>daily</changefreq>\n <priority>0.8</priority>\n</url>\n"
            + url("https://example.com/b", "<lastmod>2024-05-02</lastmod>")
        )
    )
    a, b = p.entries
    assert isinstance(a, UrlEntry) and isinstance(b, UrlEntry)
    assert a.loc == "https://example.com/a"
    assert a.lastmod == dt.datetime(2024, 5, 1, 10, 0, tzinfo=dt.UTC)
    assert (a.changefreq, a.priority) == ("daily", 0.8)
    assert (a.line, b.line) == (3, 9)
    assert a.sitemap == "test.xml"
    assert b.lastmod == dt.date(2024, 5, 2)
    assert p.diagnostics == []
    assert (p.parser.kind, p.parser.ok, p.parser.truncated, p.parser.count) == ("urlset", True, False, 2)
    assert p.parser.namespace == "http://www.sitemaps.org/schemas/sitemap/0.9"


def test_sitemapindex() -> None:
    p = parse(
        f"<sitemapindex {NS}>\n<sitemap><loc>https://example.com/s1.xml</loc>"
        "<lastmod>2024-01-01</lastmod></sitemap>\n<sitemap><loc>https://example.com/s2.xml.gz</loc></sitemap>"
        "\n</sitemapindex>"
    )
    assert p.entries == [
        IndexEntry("https://example.com/s1.xml", dt.date(2024, 1, 1)),
        IndexEntry("https://example.com/s2.xml.gz"),
    ]
    assert [e.line for e in p.entries] == [2, 3]
    assert p.parser.kind == "sitemapindex"
    assert p.diagnostics == []


def test_index_entry_rules() -> None:
    p = parse(
        f"<sitemapindex {NS}><sitemap><lastmod>2024-01-01</lastmod></sitemap>"
        "<sitemap><loc>https://e.com/a.xml</loc><loc>https://e.com/b.xml</loc><priority>1</priority>"
        "</sitemap><url><loc>https://e.com/</loc></url></sitemapindex>"
    )
    assert p.urls == ["https://e.com/a.xml"]
    assert sorted(p.codes()) == ["missing-tag", "too-many-tags", "unknown-tag", "unknown-tag"]
    assert p.parser.skipped == 1


def test_text_sitemap() -> None:
    p = parse(b"https://example.com/a\n\n   https://example.com/b  \r\n/relative\nhttps://example.com/c")
    assert p.urls == ["https://example.com/a", "https://example.com/b", "https://example.com/c"]
    assert [e.line for e in p.entries] == [1, 3, 5]
    assert p.parser.kind == "text"
    assert p.only("invalid-url").line == 4
    assert p.parser.skipped == 1


def test_text_sitemap_last_line_flushed_at_close() -> None:
    p = parse(b"https://example.com/a\nhttps://example.com/b", chunk=4)
    assert p.urls == ["https://example.com/a", "https://example.com/b"]


def test_rss_feed() -> None:
    p = parse(
        '<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><link>https://e.com/</link>\n'
        "<item><title>a</title><link>https://e.com/a</link><pubDate>Tue, 10 Jun 2003 04:00:00 GMT</pubDate>"
        "</item>\n<item><link>https://e.com/b</link><pubDate>yesterday</pubDate></item>\n"
        "<item><title>no link</title></item></channel></rss>"
    )
    assert p.parser.kind == "rss"
    assert p.urls == ["https://e.com/a", "https://e.com/b"]
    a = p.entries[0]
    assert isinstance(a, UrlEntry) and a.lastmod == dt.datetime(2003, 6, 10, 4, 0, tzinfo=dt.UTC)
    assert a.line == 2
    assert sorted(p.codes()) == ["invalid-date", "missing-tag"]


@pytest.mark.parametrize(
    ("ns", "date_tag"),
    [("http://www.w3.org/2005/Atom", "updated"), ("http://purl.org/atom/ns#", "modified")],
)
def test_atom_feeds(ns: str, date_tag: str) -> None:
    p = parse(
        f'<feed xmlns="{ns}"><title>t</title><link href="https://e.com/"/>\n'
        '<entry><link rel="self" href="https://e.com/self"/><link href="https://e.com/a"/>'
        f"<{date_tag}>2024-01-02T03:04:05Z</{date_tag}></entry>\n"
        f'<entry><link rel="alternate" href="https://e.com/b"/></entry></feed>'
    )
    assert p.parser.kind == "atom"
    assert p.urls == ["https://e.com/a", "https://e.com/b"]
    assert p.entries[0].lastmod == dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    assert p.diagnostics == []


def test_format_is_sniffed_not_named(tmp_path: Path) -> None:
    path = tmp_path / "sitemap.xml"
    path.write_bytes(b"https://example.com/a\n")
    assert [e.loc for e in parse_file(path)] == ["https://example.com/a"]
    gz = tmp_path / "plain-name.xml"
    gz.write_bytes(gzip.compress(urlset(url()).encode()))
    assert [e.loc for e in parse_file(gz)] == ["https://example.com/"]


# --- extensions --------------------------------------------------------------------------------------


def test_images_videos_news_alternates() -> None:
    body = """<url><loc>https://e.com/p</loc>
  <image:image><image:loc>https://e.com/1.jpg</image:loc></image:image>
  <image:image><image:loc>https://e.com/2.jpg</image:loc><image:caption>Cap &amp; more</image:caption>
    <image:title>T</image:title><image:geo_location>Paris</image:geo_location>
    <image:license>https://e.com/lic</image:license></image:image>
  <video:video>
    <video:thumbnail_loc>https://e.com/t.jpg</video:thumbnail_loc><video:title>V</video:title>
    <video:description>D</video:description><video:content_loc>https://e.com/v.mp4</video:content_loc>
    <video:player_loc>https://e.com/player</video:player_loc><video:duration>600</video:duration>
    <video:expiration_date>2030-01-01T00:00:00+00:00</video:expiration_date><video:rating>4.2</video:rating>
    <video:view_count>12</video:view_count><video:publication_date>2024-01-01</video:publication_date>
    <video:family_friendly>yes</video:family_friendly>
    <video:restriction relationship="allow">IE GB US</video:restriction>
    <video:platform relationship="deny">tv</video:platform>
    <video:requires_subscription>no</video:requires_subscription>
    <video:uploader info="https://e.com/u">Me</video:uploader><video:live>no</video:live>
    <video:tag>a</video:tag><video:tag>b</video:tag>
  </video:video>
  <video:video><video:thumbnail_loc>https://e.com/t2.jpg</video:thumbnail_loc><video:title>W</video:title>
    <video:description>E</video:description><video:player_loc>https://e.com/p2</video:player_loc>
  </video:video>
  <news:news><news:publication><news:name>Paper</news:name><news:language>en</news:language>
    </news:publication><news:publication_date>2024-05-01T10:00:00Z</news:publication_date>
    <news:title><![CDATA[Tom & Jerry]]></news:title></news:news>
  <xhtml:link rel="alternate" hreflang="en-GB" href="https://e.com/p"/>
  <xhtml:link rel="alternate" hreflang="x-default" href="https://e.com/"/>
</url>"""
    p = parse(urlset(body))
    (e,) = p.entries
    assert isinstance(e, UrlEntry)
    assert e.images[0] == Image("https://e.com/1.jpg")
    assert e.images[1] == Image("https://e.com/2.jpg", "Cap & more", "T", "Paris", "https://e.com/lic")
    v = e.videos[0]
    assert (v.thumbnail_loc, v.title, v.description, v.content_loc, v.player_loc) == (
        "https://e.com/t.jpg",
        "V",
        "D",
        "https://e.com/v.mp4",
        "https://e.com/player",
    )
    assert (v.duration, v.rating, v.view_count, v.family_friendly, v.live) == (600, 4.2, 12, True, False)
    assert v.expiration_date == dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    assert v.publication_date == dt.date(2024, 1, 1)
    assert (v.restriction, v.restriction_relationship) == ("IE GB US", "allow")
    assert (v.platform, v.platform_relationship) == ("tv", "deny")
    assert (v.requires_subscription, v.uploader, v.uploader_info) == (False, "Me", "https://e.com/u")
    assert v.tags == ("a", "b")
    assert e.videos[1].player_loc == "https://e.com/p2" and e.videos[1].content_loc is None
    assert e.news == News("Paper", "en", dt.datetime(2024, 5, 1, 10, tzinfo=dt.UTC), "Tom & Jerry")
    assert e.alternates == (Alternate("en-GB", "https://e.com/p"), Alternate("x-default", "https://e.com/"))
    # the deprecated image fields are read and reported, nothing else
    assert p.codes() == ["deprecated-tag"] * 4


def test_video_rules() -> None:
    tags = "".join(f"<video:tag>t{i}</video:tag>" for i in range(33))
    body = url(
        "https://e.com/p",
        "<video:video><video:title>V</video:title><video:content_loc>https://e.com/p</video:content_loc>"
        "<video:duration>0</video:duration><video:rating>5.5</video:rating>"
        "<video:family_friendly>maybe</video:family_friendly><video:live>YES</video:live>"
        '<video:restriction relationship="maybe">GB</video:restriction>'
        '<video:platform relationship="allow">web car</video:platform>'
        f"<video:uploader>{'u' * 256}</video:uploader><video:description>{'d' * 2049}</video:description>"
        '<video:price currency="EUR">1</video:price><video:category>c</video:category>'
        '<video:player_loc allow_embed="yes">https://e.com/pl</video:player_loc>'
        f"<video:title>again</video:title><video:bogus/>{tags}</video:video>",
    )
    p = parse(urlset(body))
    (e,) = p.entries
    assert isinstance(e, UrlEntry)
    v = e.videos[0]
    assert v.duration is None and v.rating is None and v.family_friendly is None
    assert v.live is True and v.restriction is None and v.platform == "web car"
    assert len(v.tags) == 32 and v.category == "c" and v.title == "V"
    codes = p.codes()
    assert codes.count("video-missing-tag") == 1
    assert "thumbnail_loc" in p.only("video-missing-tag").message
    assert codes.count("video-location-is-page") == 1
    assert codes.count("deprecated-tag") == 3  # price, category, player_loc allow_embed
    assert codes.count("too-many-tags") == 1 and codes.count("unknown-tag") == 1
    # duration, rating, family_friendly, live (case), restriction, platform, uploader, description, tags
    assert codes.count("invalid-value") == 9
    assert all(d.url == "https://e.com/p" for d in p.diagnostics)


def test_video_deprecated_tags_tvshow_gallery() -> None:
    p = parse(
        urlset(
            url(
                "https://e.com/p",
                "<video:video><video:thumbnail_loc>https://e.com/t</video:thumbnail_loc><video:title>t"
                "</video:title><video:description>d</video:description><video:player_loc>https://e.com/x"
                "</video:player_loc><video:gallery_loc>https://e.com/g</video:gallery_loc>"
                "<video:tvshow><video:show_title>s</video:show_title></video:tvshow></video:video>",
            )
        )
    )
    assert p.entries[0].videos[0].gallery_loc == "https://e.com/g"  # type: ignore[union-attr]
    assert p.codes() == ["deprecated-tag", "deprecated-tag"]


def test_news_missing_parts_dropped_and_language_checked() -> None:
    p = parse(
        urlset(
            url(
                "https://e.com/a",
                "<news:news><news:publication_date>2024-01-01</news:publication_date>"
                "<news:keyworlds>x</news:keyworlds></news:news>",
            )
            + url(
                "https://e.com/b",
                "<news:news><news:publication><news:name>P</news:name><news:language>english"
                "</news:language></news:publication><news:publication_date>2024-01-01"
                "</news:publication_date><news:title>T</news:title><news:keywords>k</news:keywords>"
                "</news:news>",
            )
        )
    )
    a, b = p.entries
    assert isinstance(a, UrlEntry) and isinstance(b, UrlEntry)
    assert a.news is None
    assert b.news is not None and b.news.keywords == "k" and b.news.publication_language == "english"
    missing = p.only("missing-tag")
    assert "name" in missing.message and "title" in missing.message and missing.url == "https://e.com/a"
    assert "keyworlds" in p.only("unknown-tag").message
    assert p.only("invalid-value").url == "https://e.com/b"
    assert p.only("deprecated-tag").line is not None


def test_news_too_many() -> None:
    news = (
        "<news:news><news:publication><news:name>P</news:name><news:language>zh-cn</news:language>"
        "</news:publication><news:publication_date>2024-01-01</news:publication_date>"
        "<news:title>T</news:title></news:news>"
    )
    p = parse(urlset("\n".join(url(f"https://e.com/{i}", news) for i in range(1001))))
    assert p.parser.count == 1001
    assert p.only("news-too-many").line == 1003


def test_too_many_images() -> None:
    images = "".join(
        f"<image:image><image:loc>https://e.com/{i}.jpg</image:loc></image:image>" for i in range(1001)
    )
    p = parse(urlset(url("https://e.com/", images)))
    assert len(p.entries[0].images) == 1000  # type: ignore[union-attr]
    assert p.only("too-many-images").url == "https://e.com/"


def test_image_without_loc_is_dropped() -> None:
    p = parse(urlset(url("https://e.com/", "<image:image><image:title>x</image:title></image:image>")))
    assert p.entries[0].images == ()  # type: ignore[union-attr]
    assert sorted(p.codes()) == ["deprecated-tag", "missing-tag"]


def test_alternate_problems() -> None:
    links = (
        '<xhtml:link rel="alternate" href="https://e.com/x"/>'
        '<xhtml:link rel="alternate" hreflang="de"/>'
        '<xhtml:link rel="alternate" hreflang="en_GB" href="https://e.com/gb"/>'
        '<xhtml:link rel="alternate" hreflang="en-UK" href="https://e.com/uk"/>'
        '<xhtml:link rel="alternate" hreflang="fr" href="/fr/"/>'
        '<xhtml:link rel="canonical" hreflang="fr" href="https://e.com/fr"/>'
    )
    p = parse(urlset(url("https://e.com/", links)))
    assert p.entries[0].alternates == (  # type: ignore[union-attr]
        Alternate("en_GB", "https://e.com/gb"),
        Alternate("en-UK", "https://e.com/uk"),
    )
    assert sorted(p.codes()) == [
        "hreflang-invalid",
        "hreflang-invalid",
        "invalid-url",
        "invalid-value",
        "missing-tag",
        "missing-tag",
    ]


@pytest.mark.parametrize(
    ("code", "valid"),
    [
        ("en", True),
        ("en-GB", True),
        ("en-gb", True),
        ("x-default", True),
        ("zh-Hant", True),
        ("zh-Hant-TW", True),
        ("es-419", False),
        ("en_GB", False),
        ("en-UK", False),
        ("eng", False),
        ("xx", False),
        ("en-GB-x", False),
    ],
)
def test_hreflang_codes(code: str, valid: bool) -> None:
    assert (hreflang_problem(code) is None) is valid


def test_code_lists_are_complete() -> None:
    assert len(LANGUAGE_CODES) == 184 and {"en", "zh", "he"} <= LANGUAGE_CODES
    assert len(REGION_CODES) == 249 and "GB" in REGION_CODES and "UK" not in REGION_CODES


# --- per-element rules -------------------------------------------------------------------------------


def test_missing_and_empty_loc_skip_the_entry() -> None:
    p = parse(
        urlset("<url><lastmod>2024-01-01</lastmod></url>\n<url><loc></loc></url>\n<url><loc>  </loc></url>")
    )
    assert p.entries == []
    assert p.codes() == ["missing-tag", "invalid-url", "invalid-url"]
    assert [d.line for d in p.diagnostics] == [3, 4, 5]
    assert p.parser.skipped == 3


def test_relative_loc_is_skipped_and_iri_is_kept() -> None:
    p = parse(urlset(url("/page") + "\n" + url("https://e.com/ü") + "\n" + url("ftp://e.com/x")))
    assert p.urls == ["https://e.com/ü"]
    assert [d.code for d in p.diagnostics] == ["invalid-url"] * 3
    assert [d.url for d in p.diagnostics] == ["/page", "https://e.com/ü", "ftp://e.com/x"]


def test_url_too_long() -> None:
    long = "https://e.com/" + "a" * 2040
    p = parse(urlset(url(long)))
    assert p.entries == [] and p.codes() == ["url-too-long"]


def test_whitespace_in_loc_is_stripped_and_warned() -> None:
    p = parse(urlset("<url><loc>\n    https://e.com/a\n  </loc></url>"))
    assert p.urls == ["https://e.com/a"]
    (d,) = p.diagnostics
    assert d.severity is Severity.WARNING and d.line == 3


@pytest.mark.parametrize(
    ("value", "expected", "reported"),
    [
        ("2024-05-01", dt.date(2024, 5, 1), False),
        ("2024-05-01T10:11:12.5Z", dt.datetime(2024, 5, 1, 10, 11, 12, 500000, tzinfo=dt.UTC), False),
        (" 2024-05-01 ", dt.date(2024, 5, 1), False),
        ("2024", dt.date(2024, 1, 1), True),
        ("2024-05", dt.date(2024, 5, 1), True),
        ("2024-05-01T10:11+00:00", dt.datetime(2024, 5, 1, 10, 11, tzinfo=dt.UTC), True),
        ("2024-05-01T25:00:00+00:00", None, True),
        ("2024-05-01T10:00:00", None, True),
        ("2024-05-01 2024-06-01", None, True),
        ("2024-5-1", None, True),
        ("", None, True),
    ],
)
def test_lastmod_values(value: str, expected: object, reported: bool) -> None:
    p = parse(urlset(url("https://e.com/", f"<lastmod>{value}</lastmod>")))
    (e,) = p.entries
    assert isinstance(e, UrlEntry) and e.lastmod == expected
    assert p.codes() == (["invalid-date"] if reported else [])


@pytest.mark.parametrize(
    ("changefreq", "priority", "read", "codes"),
    [
        ("weekly", "0.5", ("weekly", 0.5), []),
        ("Weekly", "1", ("weekly", 1.0), ["invalid-value"]),
        ("often", "1.5", (None, None), ["invalid-value", "invalid-value"]),
        ("never", "high", ("never", None), ["invalid-value"]),
        ("never", ".25", ("never", 0.25), []),
        ("never", "-0.1", ("never", None), ["invalid-value"]),
        ("never", "1e-1", ("never", None), ["invalid-value"]),
    ],
)
def test_changefreq_and_priority(
    changefreq: str, priority: str, read: tuple[object, object], codes: list[str]
) -> None:
    p = parse(
        urlset(url("https://e.com/", f"<changefreq>{changefreq}</changefreq><priority>{priority}</priority>"))
    )
    (e,) = p.entries
    assert isinstance(e, UrlEntry) and (e.changefreq, e.priority) == read
    assert p.codes() == codes


def test_repeated_core_child_unknown_tag_and_order() -> None:
    p = parse(
        urlset(
            "<url><loc>https://e.com/a</loc><loc>https://e.com/b</loc><priorty>1</priorty></url>\n"
            "<url><priority>0.1</priority><loc>https://e.com/c</loc></url>"
        )
    )
    assert p.urls == ["https://e.com/a", "https://e.com/c"]
    assert p.codes() == ["too-many-tags", "unknown-tag", "tag-order"]
    assert "did you mean <priority>" in p.diagnostics[1].message
    assert p.diagnostics[1].severity is Severity.WARNING
    assert p.diagnostics[2].line == 4
    assert "tag-order" in CODES


def test_foreign_namespaces_are_ignored_quietly() -> None:
    p = parse(
        urlset(
            url(
                "https://e.com/",
                '<mobile:mobile xmlns:mobile="http://www.google.com/schemas/sitemap-mobile/1.0"/>',
            )
        )
    )
    assert p.urls == ["https://e.com/"] and p.diagnostics == []


def test_empty_sitemap_warning() -> None:
    p = parse(urlset(""))
    assert p.codes() == ["empty-sitemap"] and p.parser.ok and not p.parser.truncated
    assert parse(f"<urlset {NS}/>").codes() == ["empty-sitemap"]


def test_too_many_urls() -> None:
    body = "\n".join(url(f"https://e.com/{i}") for i in range(50_001))
    p = parse(urlset(body), chunk=1 << 20)
    assert p.parser.count == 50_001
    assert p.only("too-many-urls").line == 50_003


class _GeneralParser(SitemapParser):
    _ELISION = False
    _FAST_READ = False


def test_a_long_pretty_printed_sitemap_reads_the_same_on_every_path_with_right_lines() -> None:
    """Past line 65,535 (where libxml2 stops counting lines in elements) and past 50,000 URLs: the entries,
    their lines and the diagnostics are the same whether plain <url> elements are read without lxml or not,
    and every line is the line its <url> starts on."""
    parts = []
    for i in range(50_002):
        extra = ""
        if i % 7 == 0:
            extra = (
                "\n    <image:image>\n      <image:loc>https://e.com/i.jpg</image:loc>\n    </image:image>"
            )
        elif i % 1009 == 0:
            extra = "\n    <priority>2</priority>"  # reported at its line
        loc = f"https://e.com/{i}?a=1&amp;b=2"
        parts.append(f"  <url>\n    <loc>{loc}</loc>\n    <lastmod>2024-05-01</lastmod>{extra}\n  </url>")
    data = urlset("\n".join(parts)).encode()
    outcomes = []
    for cls in (SitemapParser, _GeneralParser):
        diagnostics: list[Diagnostic] = []
        parser = cls("test.xml", on_diagnostic=diagnostics.append)
        entries = parser.feed(data) + parser.close()
        outcomes.append(
            (entries, [e.line for e in entries], [(d.code, d.line, d.message) for d in diagnostics])
        )
    assert outcomes[0] == outcomes[1]
    entries, lines, diagnostics = outcomes[0]
    starts = _lines_of(data, b"<url>")
    assert lines == starts and lines[-1] > 200_000
    bad = [("invalid-value", starts[i] + 3) for i in range(1009, 50_002, 1009) if i % 7]
    assert [d[:2] for d in diagnostics] == sorted(
        [*bad, ("too-many-urls", starts[50_000])], key=lambda d: d[1]
    )
    assert len(bad) > 40


def _lines_of(data: bytes, needle: bytes) -> list[int]:
    """The line of each occurrence of `needle`."""
    found, line, last = [], 1, 0
    at = data.find(needle)
    while at >= 0:
        line += data.count(b"\n", last, at)
        found.append(line)
        last = at
        at = data.find(needle, at + 1)
    return found


def test_too_many_sitemaps() -> None:
    body = "".join(f"<sitemap><loc>https://e.com/{i}.xml</loc></sitemap>" for i in range(50_001))
    p = parse(f"<sitemapindex {NS}>{body}</sitemapindex>")
    assert p.codes() == ["too-many-sitemaps"]


# --- real-world breakage -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("root", "code", "severity"),
    [
        ("<urlset>", "incorrect-namespace", Severity.ERROR),
        (
            '<urlset xmlns="http://www.google.com/schemas/sitemap/0.84">',
            "incorrect-namespace",
            Severity.WARNING,
        ),
        (
            '<urlset xmlns="https://www.sitemaps.org/schemas/sitemap/0.9">',
            "incorrect-namespace",
            Severity.ERROR,
        ),
        ('<urlset xmlns="http://example.com/ns">', "incorrect-namespace", Severity.ERROR),
    ],
)
def test_namespaces_are_read_and_reported(root: str, code: str, severity: Severity) -> None:
    p = parse(f"{root}<url><loc>https://e.com/</loc><priority>0.3</priority></url></urlset>")
    assert p.urls == ["https://e.com/"] and p.entries[0].priority == 0.3  # type: ignore[union-attr]
    d = p.only(code)
    assert d.severity is severity and d.line == 1


def test_prefixed_elements() -> None:
    p = parse(
        '<sm:urlset xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<sm:url><sm:loc>https://e.com/</sm:loc><sm:changefreq>daily</sm:changefreq></sm:url></sm:urlset>"
    )
    assert p.entries == [UrlEntry("https://e.com/", changefreq="daily")] and p.diagnostics == []


def test_bom_and_leading_whitespace() -> None:
    p = parse(b"\xef\xbb\xbf" + urlset(url()).encode())
    assert p.urls == ["https://example.com/"] and p.diagnostics == []
    p = parse(b"\xef\xbb\xbf\n\n  " + urlset(url()).encode())
    assert p.urls == ["https://example.com/"]
    d = p.only("leading-whitespace")
    assert d.line == 1
    assert p.entries[0].line == 5  # lines count from the real start of the file


def test_whitespace_before_root_without_declaration_is_fine() -> None:
    p = parse("\n\n   " + urlset(url(), decl=False))
    assert p.urls == ["https://example.com/"] and p.diagnostics == []


def test_cdata_entities_and_comments() -> None:
    p = parse(
        urlset(
            "<url><!-- c --><loc><![CDATA[https://e.com/?a=1&b=2]]></loc></url>\n"
            "<url><loc>https://e.com/?q=&amp;amp;</loc></url>\n"
            "<url><loc>https://e.com/x<!-- split -->y</loc><!-- after --></url>"
        )
    )
    assert p.urls == ["https://e.com/?a=1&b=2", "https://e.com/?q=&amp;", "https://e.com/xy"]
    assert p.diagnostics == []


def test_truncated_document_keeps_complete_entries() -> None:
    doc = urlset("\n".join(url(f"https://e.com/{i}", "<lastmod>2024-01-01</lastmod>") for i in range(5)))
    cut = doc.index("https://e.com/3") + 5
    for chunk in (None, 7):
        p = parse(doc[:cut], chunk=chunk)
        assert p.urls == ["https://e.com/0", "https://e.com/1", "https://e.com/2"]
        assert p.parser.truncated and p.parser.ok
        assert p.only("parse-error").line == 6


def test_truncated_after_last_entry() -> None:
    p = parse(urlset(url()).replace("</urlset>\n", ""))
    assert p.urls == ["https://example.com/"]
    assert p.parser.truncated and p.codes() == ["parse-error"]


def test_raw_ampersand_is_reported_and_read() -> None:
    doc = urlset(
        url(
            "https://e.com/a", "<image:image><image:loc>https://e.com/i.jpg?a=1&b=2</image:loc></image:image>"
        )
        + "\n"
        + url("https://e.com/b?x=1&y=2")
        + "\n"
        + url("https://e.com/c")
    )
    for chunk in (None, 1, 5):
        p = parse(doc, chunk=chunk)
        assert p.urls == ["https://e.com/a", "https://e.com/b?x=1&y=2", "https://e.com/c"]
        assert p.entries[0].images[0].loc == "https://e.com/i.jpg?a=1&b=2"  # type: ignore[union-attr]
        assert [(d.code, d.line) for d in p.diagnostics] == [("parse-error", 3), ("parse-error", 4)]
        assert not p.parser.truncated


def test_fatal_error_resumes_at_next_entry() -> None:
    doc = urlset(
        url("https://e.com/1")
        + "\n"
        + "<url><loc>https://e.com/2</loc><lastmod>2024-01-01</url>\n"
        + url("https://e.com/3")
        + "\n<url><loc>https://e.com/4<5</loc></url>\n"
        + url("https://e.com/6")
    )
    for chunk in (None, 3):
        p = parse(doc, chunk=chunk)
        assert p.urls == ["https://e.com/1", "https://e.com/3", "https://e.com/6"]
        assert [e.line for e in p.entries] == [3, 5, 7]
        assert [(d.code, d.line) for d in p.diagnostics] == [("parse-error", 4), ("parse-error", 6)]
        assert not p.parser.truncated


def test_error_after_root_keeps_everything() -> None:
    p = parse(urlset(url()) + "<!-- a -- b -->")
    assert p.urls == ["https://example.com/"]
    assert p.codes() == ["parse-error"] and not p.parser.truncated


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"", "empty"),
        (b" \n\t", "whitespace"),
        (b"<!DOCTYPE html>\n<html><body>Not found</body></html>", "HTML"),
        (b"<html><head></head></html>", "HTML"),
        (b'<?xml version="1.0"?><catalog><book/></catalog>', "<catalog>"),
        (b"---\nlayout: null\n---\n<?xml version='1.0'?><urlset/>", "front matter"),
        (b'<?xml version="1.0"?>\n{#- comment #}\n<urlset/>', "template"),
        (b"{% for x in y %}", "template"),
        (b"<<<<<<< HEAD\n<urlset/>\n=======\n<urlset/>\n>>>>>>> other\n", "merge-conflict"),
        (b"hello world, this is not a sitemap", "neither XML nor"),
        (b"\x00\x01\x02\x03binary", "neither XML nor"),
    ],
)
def test_not_a_sitemap(body: bytes, words: str) -> None:
    p = parse(body)
    assert p.entries == [] and not p.parser.ok and p.parser.kind is None
    d = p.only("unsupported-format")
    assert words in d.message


def test_utf16_is_read_and_reported() -> None:
    doc = urlset(url("https://e.com/caf%C3%A9", "<lastmod>2024-01-01</lastmod>")).replace("UTF-8", "UTF-16")
    for data in (doc.encode("utf-16"), doc.encode("utf-16-be"), b"\xff\xfe" + doc.encode("utf-16-le")):
        p = parse(data, chunk=3)
        assert p.urls == ["https://e.com/caf%C3%A9"]
        assert p.codes() == ["encoding-error"]


def test_latin1_declared_is_read_correctly() -> None:
    doc = urlset(
        url(
            "https://e.com/",
            "<news:news><news:publication><news:name>Café</news:name>"
            "<news:language>fr</news:language></news:publication><news:publication_date>2024-01-01"
            "</news:publication_date><news:title>Été</news:title></news:news>",
        )
    )
    p = parse(doc.replace("UTF-8", "ISO-8859-1").encode("latin-1"))
    e = p.entries[0]
    assert isinstance(e, UrlEntry) and e.news is not None and e.news.title == "Été"
    assert p.codes() == ["encoding-error"]


def test_invalid_utf8_is_read_as_windows_1252() -> None:
    doc = urlset(
        "\n"
        + url(
            "https://e.com/",
            "<image:image><image:loc>https://e.com/i.jpg</image:loc>"
            "<image:title>Caf\xe9</image:title></image:image>",
        )
    )
    p = parse(doc.encode("latin-1"), chunk=10)
    assert p.entries[0].images[0].title == "Café"  # type: ignore[union-attr]
    assert p.only("encoding-error").line == 4


def test_unknown_declared_encoding() -> None:
    p = parse(urlset(url()).replace("UTF-8", "x-klingon"))
    assert p.urls == ["https://example.com/"] and p.codes() == ["encoding-error"]


# --- safety ------------------------------------------------------------------------------------------


def test_doctype_with_entities_is_refused() -> None:
    bomb = (
        b'<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
        b' <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">\n]>\n'
        b"<urlset><url><loc>https://e.com/&lol2;</loc></url></urlset>"
    )
    p = parse(bomb)
    assert p.entries == [] and not p.parser.ok and p.codes() == ["forbidden-doctype"]
    xxe = b'<!DOCTYPE urlset [<!ENTITY x SYSTEM "file:///etc/passwd">]><urlset><url><loc>&x;</loc></url></urlset>'
    assert parse(xxe).codes() == ["forbidden-doctype"]


def test_harmless_doctype_is_allowed_and_undeclared_entity_is_literal() -> None:
    p = parse(
        b'<!DOCTYPE urlset SYSTEM "http://e.com/x.dtd"><urlset><url><loc>https://e.com/?a&nbsp;</loc></url></urlset>'
    )
    assert p.urls == ["https://e.com/?a&nbsp;"]
    assert "parse-error" in p.codes() and p.parser.ok


def test_gzip_is_detected_by_magic_and_streamed() -> None:
    doc = urlset("\n".join(url(f"https://e.com/{i}") for i in range(300)))
    p = parse(gzip.compress(doc.encode()), chunk=100)
    assert p.parser.compressed and p.parser.count == 300
    assert p.parser.uncompressed_bytes == len(doc.encode())
    assert p.diagnostics == []


def test_multi_member_gzip() -> None:
    doc = urlset(url()).encode()
    p = parse(gzip.compress(doc[:40]) + gzip.compress(doc[40:]), chunk=16)
    assert p.urls == ["https://example.com/"] and p.diagnostics == []


def test_gzip_bomb_stops_at_the_cap() -> None:
    bomb = gzip.compress(urlset(url()).encode()[:-11] + b" " * 20_000_000 + b"</urlset>")
    assert len(bomb) < 100_000
    p = parse(bomb, chunk=4096, max_uncompressed=1_000_000)
    assert p.urls == ["https://example.com/"]
    assert p.parser.truncated and p.parser.uncompressed_bytes == 1_000_000
    assert "compression-error" in p.codes()


def test_plain_file_over_the_cap() -> None:
    doc = urlset("\n".join(url(f"https://e.com/{i}") for i in range(1000)))
    p = parse(doc, chunk=1000, max_uncompressed=10_000)
    assert p.parser.truncated and 0 < p.parser.count < 1000
    assert p.codes()[0] == "file-too-large" and "parse-error" not in p.codes()


def test_protocol_size_limit_is_reported() -> None:
    filler = "<!--" + "x" * 100_000 + "-->\n"
    big = urlset(url("https://e.com/a") + filler * 525 + url("https://e.com/b"))
    assert len(big) > 52_428_800
    p = parse(big, chunk=1 << 22)
    assert p.urls == ["https://e.com/a", "https://e.com/b"]
    assert p.codes() == ["file-too-large"] and not p.parser.truncated


def test_corrupt_gzip_keeps_entries_before_the_damage() -> None:
    doc = urlset("\n".join(url(f"https://e.com/{i}") for i in range(3000))).encode()
    gz = bytearray(gzip.compress(doc))
    gz[len(gz) // 2 : len(gz) // 2 + 20] = b"\x00" * 20
    p = parse(bytes(gz), chunk=512)
    assert 0 < p.parser.count < 3000 and p.parser.truncated
    assert "compression-error" in p.codes()
    assert p.urls[:100] == [f"https://e.com/{i}" for i in range(100)]


def test_truncated_gzip() -> None:
    gz = gzip.compress(urlset("\n".join(url(f"https://e.com/{i}") for i in range(3000))).encode())
    p = parse(gz[: len(gz) // 2])
    assert 0 < p.parser.count < 3000 and p.parser.truncated
    assert p.codes() == ["compression-error"]


# --- API -----------------------------------------------------------------------------------------------


def test_feed_after_close_is_a_usage_error() -> None:
    parser = SitemapParser("x")
    parser.close()
    with pytest.raises(UsageError):
        parser.feed(b"<urlset/>")
    assert parser.close() == []


def test_parse_bytes_and_parse_file_agree(tmp_path: Path) -> None:
    doc = urlset("\n".join(url(f"https://e.com/{i}") for i in range(2000))).encode()
    path = tmp_path / "s.xml.gz"
    path.write_bytes(gzip.compress(doc))
    from_file = list(parse_file(path))
    assert from_file == list(parse_bytes(doc, "s.xml")) and len(from_file) == 2000
    assert from_file[0].sitemap == str(path)
    seen: list[Diagnostic] = []
    assert list(parse_bytes(b"/rel\n", on_diagnostic=seen.append)) == [] and len(seen) == 1


def test_entries_come_out_as_they_complete() -> None:
    parser = SitemapParser("x")
    doc = urlset("\n".join(url(f"https://e.com/{i}") for i in range(3))).encode()
    first = parser.feed(doc[: doc.index(b"https://e.com/1") + 30])
    assert [e.loc for e in first] == ["https://e.com/0", "https://e.com/1"]
    assert parser.kind == "urlset"


def test_garbage_root_start_tag() -> None:
    p = parse(b"<urlset xmlns=http://x><url><loc>https://e.com/</loc></url></urlset>")
    assert not p.parser.ok and p.entries == [] and "parse-error" in p.codes()


def test_undeclared_prefix_in_a_complete_document_is_reported_where_it_is() -> None:
    for chunk in (None, 5):
        p = parse(urlset(url("https://example.com/a", "<foo:bar/>") + url("https://example.com/b")), chunk)
        assert p.urls == ["https://example.com/a", "https://example.com/b"]
        error = p.only("parse-error")
        assert error.message == "The XML is not well-formed: Namespace prefix foo on bar is not defined."
        assert (error.line, error.column) == (3, 46) and not p.parser.truncated


def test_a_fatal_error_after_an_undeclared_prefix_is_the_one_reported() -> None:
    p = parse(
        urlset(url("https://example.com/a", "<foo:bar/>") + "<url><loc>https://example.com/b</lox></url>")
    )
    assert p.urls == ["https://example.com/a"]
    assert "Opening and ending tag mismatch: loc" in p.only("parse-error").message


def test_nul_byte_stops_the_xml_where_it_is() -> None:
    doc = urlset(url("https://example.com/a") + "<!--\x00" + url("https://example.com/b") + "-->")
    for chunk in (None, 3):
        p = parse(doc, chunk)
        first = p.diagnostics[0]
        assert (first.code, first.line) == ("parse-error", 3)
        assert "Char 0x0" in first.message
        assert p.urls == ["https://example.com/a", "https://example.com/b"]


def test_fast_url_entry_is_a_plain_url_entry() -> None:
    from sitemapkit.core.model import new_url_entry

    day = dt.date(2024, 5, 1)
    fast = new_url_entry("https://example.com/", day, "daily", 0.5, "s.xml", 7)
    plain = UrlEntry("https://example.com/", day, "daily", 0.5, (), (), None, (), "s.xml", 7)
    assert type(fast) is UrlEntry and fast == plain and hash(fast) == hash(plain)
    assert repr(fast) == repr(plain) and (fast.sitemap, fast.line) == ("s.xml", 7)
    with pytest.raises(AttributeError):
        fast.loc = "https://example.com/x"  # type: ignore[misc]


def test_root_and_doctype_problems_point_at_their_own_line() -> None:
    from sitemapkit.reader.parser import parse_bytes

    for data, code in [
        (
            b'<?xml version="1.0"?>\n<!-- c -->\n<urlset xmlns="https://www.sitemaps.org/schemas/sitemap/0.9">'
            b"<url><loc>https://e.com/</loc></url></urlset>",
            "incorrect-namespace",
        ),
        (b'<?xml version="1.0"?>\n\n<!DOCTYPE urlset [<!ENTITY x "y">]>\n<urlset/>', "forbidden-doctype"),
        (b'<?xml version="1.0"?>\n<!-- a -->\n<html><body>x</body></html>', "unsupported-format"),
    ]:
        found: list[Diagnostic] = []
        list(parse_bytes(data, on_diagnostic=found.append))
        assert [(d.code, d.line) for d in found] == [(code, 3)]


@pytest.mark.parametrize("encoding", ["rot13", "base64", "hex", "zlib", "idna", "utf-16", "bogus"])
def test_an_unusable_declared_encoding_is_reported_and_the_file_read_as_utf8(encoding: str) -> None:
    from sitemapkit.reader.parser import parse_bytes

    data = (
        f'<?xml version="1.0" encoding="{encoding}"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<url><loc>https://e.com/a</loc></url></urlset>\n"
    ).encode()
    found: list[Diagnostic] = []
    entries = list(parse_bytes(data, on_diagnostic=found.append))
    assert [e.loc for e in entries] == ["https://e.com/a"]
    assert [d.code for d in found] == ["encoding-error"]


def test_highly_compressed_input_comes_out_in_bounded_batches() -> None:
    import gzip

    from sitemapkit.reader.parser import SitemapParser

    body = b"<url><loc>https://e.com/x</loc></url>" * 300_000
    data = gzip.compress(
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">' + body + b"</urlset>", 9
    )
    parser = SitemapParser("bomb.xml.gz")
    sizes = [len(batch) for batch in parser.feed_pieces(data)]
    sizes.append(len(parser.close()))
    assert sum(sizes) == 300_000
    assert len(data) > 20_000 and max(sizes) < 150_000  # one feed of the whole body would be all 300,000


def test_a_doctype_internal_subset_is_refused_even_when_it_hides_its_entities() -> None:
    from sitemapkit.reader.parser import parse_bytes

    entities = "".join(f'<!ENTITY l{i} "&l{i - 1};&l{i - 1};">' for i in range(1, 10))
    data = (
        f'<!DOCTYPE urlset [<?x ]><!-- ?><!ENTITY l0 "lol">{entities}]><!-- -->'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>&l9;</loc></url></urlset>'
    ).encode()
    found: list[Diagnostic] = []
    assert list(parse_bytes(data, on_diagnostic=found.append)) == []
    assert [d.code for d in found] == ["forbidden-doctype"]
