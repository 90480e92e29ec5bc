"""The parser's shape: parts that own their state, composed by `SitemapParser` (no mixins). Each extension
handler reads an element of its namespace given alone; a namespace without a handler goes to none; the
entry reader, recovery's seek and the stages stand on their own."""

from __future__ import annotations

import datetime as dt
import importlib.util
from enum import IntEnum

from lxml import etree

from sitemapkit.core.constants import MAX_NEWS_PER_SITEMAP, NS_IMAGE, NS_NEWS, NS_SITEMAP, NS_VIDEO, NS_XHTML
from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.model import Alternate, Image, News, UrlEntry, Video
from sitemapkit.reader.context import Context
from sitemapkit.reader.entries import EntryReader, Tally
from sitemapkit.reader.ext.image import ImageHandler
from sitemapkit.reader.ext.news import NewsHandler
from sitemapkit.reader.ext.video import VideoHandler
from sitemapkit.reader.ext.xhtml import XhtmlHandler
from sitemapkit.reader.extensions import Extensions
from sitemapkit.reader.parser import SitemapParser, Stage
from sitemapkit.reader.recovery import After, History, Position, Recovery

PAGE = "https://e.com/page"


def element(xml: str) -> etree._Element:
    """An element alone, with the extension prefixes declared on it."""
    declared = (
        f'xmlns="{NS_SITEMAP}" xmlns:image="{NS_IMAGE}" xmlns:video="{NS_VIDEO}" xmlns:news="{NS_NEWS}" '
        f'xmlns:xhtml="{NS_XHTML}"'
    )
    name_end = xml.index(">") if " " not in xml[: xml.index(">")] else xml.index(" ")
    return etree.fromstring(f"{xml[:name_end]} {declared}{xml[name_end:]}")


def context() -> tuple[Context, list[Diagnostic]]:
    diagnostics: list[Diagnostic] = []
    return Context("s.xml", diagnostics.append), diagnostics


def extensions(ctx: Context) -> Extensions:
    return Extensions(ctx, ImageHandler(ctx), VideoHandler(ctx), NewsHandler(ctx), XhtmlHandler(ctx))


def test_the_parser_is_composed_not_mixed_in() -> None:
    assert SitemapParser.__mro__ == (SitemapParser, object)
    assert importlib.util.find_spec("sitemapkit.reader.stages") is None
    assert issubclass(Stage, IntEnum)
    assert list(Stage) == sorted(Stage) and Stage.START == 0 and max(Stage) == Stage.SKIP


def test_each_extension_handler_reads_an_element_given_alone() -> None:
    ctx, diagnostics = context()
    image = ImageHandler(ctx).read(
        element("<image:image><image:loc>https://e.com/i.jpg</image:loc></image:image>"), PAGE
    )
    assert image == Image("https://e.com/i.jpg")
    video = VideoHandler(ctx).read(
        element(
            "<video:video><video:thumbnail_loc>https://e.com/t.jpg</video:thumbnail_loc>"
            "<video:title>T</video:title><video:description>D</video:description>"
            "<video:content_loc>https://e.com/v.mp4</video:content_loc>"
            "<video:duration>60</video:duration></video:video>"
        ),
        PAGE,
    )
    assert video == Video(
        thumbnail_loc="https://e.com/t.jpg",
        title="T",
        description="D",
        content_loc="https://e.com/v.mp4",
        duration=60,
    )
    news = NewsHandler(ctx).read(
        element(
            "<news:news><news:publication><news:name>N</news:name><news:language>en</news:language>"
            "</news:publication><news:publication_date>2024-05-01</news:publication_date>"
            "<news:title>T</news:title></news:news>"
        ),
        PAGE,
    )
    assert news == News("N", "en", dt.date(2024, 5, 1), "T")
    alternate = XhtmlHandler(ctx).read(
        element('<xhtml:link rel="alternate" hreflang="de" href="https://e.com/de"/>'), PAGE
    )
    assert alternate == Alternate("de", "https://e.com/de")
    assert diagnostics == []


def test_a_handler_reports_through_the_context_it_was_given() -> None:
    ctx, diagnostics = context()
    assert (
        ImageHandler(ctx).read(element("<image:image><image:caption>c</image:caption></image:image>"), PAGE)
        is None
    )
    assert [d.code for d in diagnostics] == ["deprecated-tag", "missing-tag"]
    assert {d.url for d in diagnostics} == {PAGE}


def test_the_news_handler_counts_its_own_news_over_the_sitemap() -> None:
    ctx, diagnostics = context()
    news = element(
        "<news:news><news:publication><news:name>N</news:name><news:language>en</news:language>"
        "</news:publication><news:publication_date>2024-05-01</news:publication_date>"
        "<news:title>T</news:title></news:news>"
    )
    handler, other = NewsHandler(ctx), NewsHandler(ctx)
    for _ in range(MAX_NEWS_PER_SITEMAP):
        assert handler.read(news, PAGE) is not None
    assert other.read(news, PAGE) is not None  # a handler of another sitemap: its own count
    assert diagnostics == []
    handler.read(news, PAGE)
    assert [d.code for d in diagnostics] == ["news-too-many"]
    # a second <news:news> in one <url> (nth=2) is reported, not read
    assert handler.read(news, PAGE, 2) is None
    assert diagnostics[-1].code == "too-many-tags"


def test_each_namespace_goes_to_its_handler_and_an_unknown_one_to_none() -> None:
    ctx, diagnostics = context()
    ext = extensions(ctx)
    assert isinstance(ext.handler_for(NS_IMAGE), ImageHandler)
    assert isinstance(ext.handler_for(NS_VIDEO), VideoHandler)
    assert isinstance(ext.handler_for(NS_NEWS), NewsHandler)
    assert isinstance(ext.handler_for(NS_XHTML), XhtmlHandler)
    assert ext.handler_for("https://example.com/ns/other") is None
    assert ext.handler_for(NS_SITEMAP) is None
    url = element(
        '<url xmlns:o="https://example.com/ns/other"><loc>https://e.com/page</loc>'
        "<o:image><o:loc>https://e.com/x.jpg</o:loc></o:image>"
        "<image:image><image:loc>https://e.com/i.jpg</image:loc></image:image>"
        '<xhtml:link rel="alternate" hreflang="de" href="https://e.com/de"/></url>'
    )
    images, videos, news, alternates = ext.read(list(url)[1:], PAGE)
    assert images == (Image("https://e.com/i.jpg"),)
    assert (videos, news, alternates) == ((), None, (Alternate("de", "https://e.com/de"),))
    assert diagnostics == []  # the other namespace's elements are no extension: not read, not reported


def test_the_entry_reader_reads_a_url_element_given_alone() -> None:
    ctx, diagnostics = context()
    ctx.core_ns = frozenset({NS_SITEMAP, ""})
    tally = Tally()
    reader = EntryReader(ctx, tally, extensions(ctx))
    reader.start("urlset")
    reader.use_namespaces(NS_SITEMAP, ctx.core_ns)
    url = element(
        "<url><loc>https://e.com/page</loc><lastmod>2024-05-01</lastmod>"
        "<image:image><image:loc>https://e.com/i.jpg</image:loc></image:image><lastmud/></url>"
    )
    entry = reader.read_url(url)
    assert isinstance(entry, UrlEntry)
    assert (entry.loc, entry.lastmod, entry.images) == (
        PAGE,
        dt.date(2024, 5, 1),
        (Image("https://e.com/i.jpg"),),
    )
    assert tally.seen == 1 and tally.count == 0  # counting what is handed on is the caller's
    assert [(d.code, "did you mean <lastmod>" in d.message) for d in diagnostics] == [("unknown-tag", True)]


def test_recovery_seeks_the_next_entry_on_its_own() -> None:
    ctx, diagnostics = context()
    tally = Tally()
    recovery = Recovery(ctx, tally, History(), Position())
    root = f'<urlset xmlns="{NS_SITEMAP}">'.encode()
    recovery.start("urlset", root, 1, ("url", "sitemap"))
    recovery.begin_seek(5, 100)
    assert recovery.seek(b"<broken\nstuff ", 100, False) is None
    assert recovery.seek(b"<url><loc>", 114, False) == (b"<url><loc>", 114, 6, 108)
    assert recovery.fatal("bad", 7, 3, False, False) == After.SEEK
    assert recovery.seek(b"junk </urlset>", 200, False) == After.END
    assert recovery.fatal("bad", 8, 1, True, False) == After.CUT
    assert recovery.fatal("bad", 9, 1, False, True) == After.DONE
    assert [d.code for d in diagnostics] == ["parse-error"] * 3
