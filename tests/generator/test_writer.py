from __future__ import annotations

import datetime as dt
import gzip
import json
from pathlib import Path

import pytest
from lxml import etree

from sitemapkit.core.errors import PublishError, StrictModeError, UsageError
from sitemapkit.core.model import Alternate, Image, News, UrlEntry, Video
from sitemapkit.generator.serialize import render_url, xml_footer, xml_header
from sitemapkit.generator.writer import SitemapWriter, manifest_name
from tests.support.helpers import locs, published, raw_bytes
from tests.support.schema_oracle import schema_errors

BASE = "https://example.com/"
MANIFEST = manifest_name("sitemap")
UTC = dt.UTC


def write(out: Path, urls: list[str], **kw: object) -> SitemapWriter:
    with SitemapWriter(out, BASE, **kw) as w:  # type: ignore[arg-type]
        for u in urls:
            w.add(u)
    return w


def test_add_many_counts_what_was_accepted(tmp_path: Path) -> None:
    with SitemapWriter(tmp_path, BASE) as w:
        assert w.add_many([UrlEntry(BASE + "a"), UrlEntry(BASE + "a"), UrlEntry("https://other.org/")]) == 1


def test_single_file_named_after_prefix(tmp_path: Path) -> None:
    w = write(tmp_path, [f"{BASE}p{i}" for i in range(3)])
    assert published(tmp_path) == ["sitemap.xml"]
    assert locs(tmp_path / "sitemap.xml") == [f"{BASE}p{i}" for i in range(3)]
    assert w.result is not None and w.result.entry_url == BASE + "sitemap.xml"
    assert w.result.index is None


def test_rolls_over_at_max_urls_and_writes_index(tmp_path: Path) -> None:
    w = write(tmp_path, [f"{BASE}p{i}" for i in range(5)], max_urls=2)
    assert published(tmp_path) == ["sitemap-1.xml", "sitemap-2.xml", "sitemap-3.xml", "sitemap.xml"]
    assert [len(locs(tmp_path / f"sitemap-{i}.xml")) for i in (1, 2, 3)] == [2, 2, 1]
    assert locs(tmp_path / "sitemap.xml") == [f"{BASE}sitemap-{i}.xml" for i in (1, 2, 3)]
    assert w.result is not None and w.result.entry_url == BASE + "sitemap.xml"


def test_index_modes(tmp_path: Path) -> None:
    write(tmp_path / "a", [BASE], index="always")
    assert published(tmp_path / "a") == ["sitemap-1.xml", "sitemap.xml"]
    write(tmp_path / "b", [f"{BASE}{i}" for i in range(2)], index="never", max_urls=2)
    assert published(tmp_path / "b") == ["sitemap.xml"]
    with pytest.raises(PublishError, match="need 2 files, but without an index only one"):
        write(tmp_path / "c", [f"{BASE}{i}" for i in range(3)], index="never", max_urls=2)
    assert published(tmp_path / "c") == []  # several files without an index would go unannounced


def exact_size(entries: list[UrlEntry]) -> int:
    body = "".join(render_url(e) for e in entries)
    return len((xml_header("urlset") + body + xml_footer("urlset")).encode())


def test_max_bytes_is_exact_with_header_and_footer(tmp_path: Path) -> None:
    urls = [f"{BASE}page-{i}" for i in range(3)]
    size = exact_size([UrlEntry(u) for u in urls])
    w = write(tmp_path / "fits", urls, max_bytes=size)
    assert w.result is not None and len(w.result.files) == 1
    assert w.result.files[0].bytes == size == len((tmp_path / "fits" / "sitemap.xml").read_bytes())
    w = write(tmp_path / "over", urls, max_bytes=size - 1)
    assert w.result is not None and [f.urls for f in w.result.files] == [2, 1]
    for f in w.result.files:
        assert f.bytes == len(f.path.read_bytes()) <= size - 1


def test_max_bytes_counts_uncompressed_size_under_gzip(tmp_path: Path) -> None:
    urls = [f"{BASE}page-{i:03d}" for i in range(50)]
    size = exact_size([UrlEntry(u) for u in urls[:10]])
    w = write(tmp_path, urls, max_bytes=size, gzip=True)
    assert w.result is not None
    assert [f.urls for f in w.result.files] == [10] * 5
    for f in w.result.files:
        assert f.path.name.endswith(".xml.gz")
        assert len(gzip.decompress(f.path.read_bytes())) == f.bytes == size


def test_namespace_growth_counts_toward_max_bytes(tmp_path: Path) -> None:
    plain = UrlEntry(BASE + "a")
    with_image = UrlEntry(BASE + "b", images=(Image(BASE + "i.png"),))
    size = len(
        (
            xml_header("urlset", {"image"}) + render_url(plain) + render_url(with_image) + "</urlset>\n"
        ).encode()
    )
    with SitemapWriter(tmp_path / "fits", BASE, max_bytes=size) as w:
        w.add_entry(plain)
        w.add_entry(with_image)
    assert w.result is not None and len(w.result.files) == 1
    with SitemapWriter(tmp_path / "over", BASE, max_bytes=size - 1) as w:
        w.add_entry(plain)
        w.add_entry(with_image)
    assert w.result is not None and [f.urls for f in w.result.files] == [1, 1]


def test_an_entry_larger_than_a_file_is_reported_and_left_out(tmp_path: Path) -> None:
    huge = UrlEntry(BASE + "big", images=tuple(Image(f"{BASE}img/{i}.png") for i in range(50)))
    with SitemapWriter(tmp_path, BASE, max_bytes=1000) as w:
        assert w.add_entry(huge) is False
        assert w.add(BASE + "small") is True
    assert [d.code for d in w.log] == ["file-too-large"]
    assert locs(tmp_path / "sitemap.xml") == [BASE + "small"]


def test_gzip_output_is_deterministic_and_has_no_timestamp(tmp_path: Path) -> None:
    urls = [f"{BASE}p{i}" for i in range(100)]
    write(tmp_path / "a", urls, gzip=True, max_urls=30)
    write(tmp_path / "b", urls, gzip=True, max_urls=30)
    for name in published(tmp_path / "a"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    data = (tmp_path / "a" / "sitemap-1.xml.gz").read_bytes()
    assert data[4:8] == b"\0\0\0\0"  # gzip MTIME field


def test_index_lastmod_is_newest_of_its_urls_or_absent(tmp_path: Path) -> None:
    with SitemapWriter(tmp_path, BASE, max_urls=2) as w:
        w.add(BASE + "a", lastmod="2024-01-01")
        w.add(BASE + "b", lastmod="2024-03-01T10:00:00+02:00")
        w.add(BASE + "c")
        w.add(BASE + "d")
        w.add(BASE + "e", lastmod=dt.datetime(2024, 3, 1, 9, tzinfo=UTC))
        w.add(BASE + "f", lastmod=dt.date(2024, 3, 1))
    index = raw_bytes(tmp_path / "sitemap.xml").decode()
    assert "<loc>https://example.com/sitemap-1.xml</loc><lastmod>2024-03-01T10:00:00+02:00</lastmod>" in index
    assert "<loc>https://example.com/sitemap-2.xml</loc></sitemap>" in index
    assert "<loc>https://example.com/sitemap-3.xml</loc><lastmod>2024-03-01T09:00:00+00:00</lastmod>" in index


def test_escaping_is_exact_and_done_once(tmp_path: Path) -> None:
    with SitemapWriter(tmp_path, BASE) as w:
        w.add(BASE + "catalog?item=12&desc=vacation_hawaii")
        w.add(BASE + "a?x=%26amp;")
        w.add(
            BASE + "v",
            videos=[
                Video(
                    thumbnail_loc=BASE + "t.jpg",
                    title='Tom & "Jerry" <3',
                    description="it's",
                    content_loc=BASE + "v.mp4",
                )
            ],
        )
    text = raw_bytes(tmp_path / "sitemap.xml").decode()
    assert "<loc>https://example.com/catalog?item=12&amp;desc=vacation_hawaii</loc>" in text
    assert "<loc>https://example.com/a?x=%26amp;</loc>" in text
    assert "<video:title>Tom &amp; &quot;Jerry&quot; &lt;3</video:title>" in text
    assert "<video:description>it&apos;s</video:description>" in text
    assert locs(tmp_path / "sitemap.xml")[0] == BASE + "catalog?item=12&desc=vacation_hawaii"


def test_only_namespaces_in_use_are_declared(tmp_path: Path) -> None:
    with SitemapWriter(tmp_path, BASE, max_urls=1) as w:
        w.add(BASE + "a")
        w.add(BASE + "b", alternates=[Alternate("en", BASE + "b"), Alternate("de", BASE + "de/b")])
    assert "xmlns:" not in raw_bytes(tmp_path / "sitemap-1.xml").decode()
    second = raw_bytes(tmp_path / "sitemap-2.xml").decode()
    assert 'xmlns:xhtml="http://www.w3.org/1999/xhtml"' in second and "xmlns:image" not in second


def every_extension(i: int) -> UrlEntry:
    now = dt.datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
    return UrlEntry(
        f"{BASE}article/{i}?a=1&b=ü",
        lastmod=now,
        changefreq="daily",
        priority=0.7,
        images=(Image(f"{BASE}img/{i}.jpg", caption="A <caption>", title="T"),),
        videos=(
            Video(
                thumbnail_loc=f"{BASE}thumb/{i}.jpg",
                title="Video & more",
                description="Desc",
                content_loc=f"{BASE}v/{i}.mp4",
                player_loc=f"{BASE}player?v={i}",
                duration=600,
                expiration_date=now,
                rating=4.2,
                view_count=12345,
                publication_date=dt.date(2026, 1, 1),
                family_friendly=True,
                restriction="IE GB US",
                restriction_relationship="allow",
                platform="web tv",
                platform_relationship="deny",
                requires_subscription=False,
                uploader="Someone",
                uploader_info=f"{BASE}users/1",
                live=False,
                tags=("steak", "grill"),
            ),
        ),
        news=News("The Example Times", "en", now, "Headline & subhead"),
        alternates=(Alternate("en", f"{BASE}article/{i}"), Alternate("x-default", f"{BASE}article/{i}")),
    )


def test_output_with_every_extension_validates_against_official_schemas(
    tmp_path: Path, xsd_dir: Path
) -> None:
    with SitemapWriter(tmp_path, BASE, max_urls=3, gzip=True, xsl="default", now=NOW) as w:
        for i in range(7):
            w.add_entry(every_extension(i))
        w.add(BASE + "plain", lastmod="2024-01-01")
    assert w.result is not None
    for f in (*w.result.files, w.result.index):
        assert f is not None
        assert schema_errors(xsd_dir, raw_bytes(f.path)) == [], f.path
    first = raw_bytes(w.result.files[0].path).decode()
    assert first.count("<news:news>") == 3 and first.count("<video:video>") == 3 and "<xhtml:link" in first


def test_rerun_removes_its_stale_files_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<h1>mine</h1>")
    (tmp_path / "sitemap-9.xml").write_text("not ours either")
    write(tmp_path, [f"{BASE}p{i}" for i in range(5)], max_urls=2)
    assert published(tmp_path) == [
        "index.html",
        "sitemap-1.xml",
        "sitemap-2.xml",
        "sitemap-3.xml",
        "sitemap-9.xml",
        "sitemap.xml",
    ]
    w = write(tmp_path, [f"{BASE}p{i}" for i in range(3)], max_urls=2)
    assert published(tmp_path) == [
        "index.html",
        "sitemap-1.xml",
        "sitemap-2.xml",
        "sitemap-9.xml",
        "sitemap.xml",
    ]
    assert w.result is not None and w.result.removed == ("sitemap-3.xml",)
    w = write(tmp_path, [BASE])
    assert published(tmp_path) == ["index.html", "sitemap-9.xml", "sitemap.xml"]
    assert (tmp_path / "index.html").read_text() == "<h1>mine</h1>"
    assert json.loads((tmp_path / MANIFEST).read_text())["files"] == ["sitemap.xml"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("gz", [False, True])
def test_an_unchanged_rebuild_rewrites_nothing(tmp_path: Path, gz: bool) -> None:
    urls = [f"{BASE}p{i}" for i in range(5)]
    write(tmp_path, urls, max_urls=2, gzip=gz)
    before = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in tmp_path.iterdir()}
    w = write(tmp_path, urls, max_urls=2, gzip=gz)
    after = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes()) for p in tmp_path.iterdir()}
    assert after == before  # same inodes: not even replaced by an identical copy
    assert w.result is not None
    assert sorted(w.result.unchanged) == sorted(n for n in before if not n.startswith("."))
    # one changed URL rewrites its own file only (no lastmods here, so the index bytes stay the same)
    w = write(tmp_path, [*urls[:4], BASE + "new"], max_urls=2, gzip=gz)
    assert w.result is not None
    suffix = ".xml.gz" if gz else ".xml"
    assert sorted(w.result.unchanged) == [f"sitemap-1{suffix}", f"sitemap-2{suffix}", f"sitemap{suffix}"]
    assert (tmp_path / f"sitemap-3{suffix}").stat().st_ino != before[f"sitemap-3{suffix}"][0]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_refuses_to_overwrite_a_file_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "sitemap.xml").write_text("hand-written")
    with pytest.raises(PublishError, match="not written by sitemapkit"):
        write(tmp_path, [BASE])
    assert (tmp_path / "sitemap.xml").read_text() == "hand-written"
    assert published(tmp_path) == ["sitemap.xml"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_an_exception_publishes_nothing(tmp_path: Path) -> None:
    write(tmp_path, [BASE + "old"])
    before = (tmp_path / "sitemap.xml").read_bytes()
    with pytest.raises(RuntimeError), SitemapWriter(tmp_path, BASE, max_urls=1) as w:
        w.add(BASE + "new1")
        w.add(BASE + "new2")
        raise RuntimeError("crash mid-run")
    assert (tmp_path / "sitemap.xml").read_bytes() == before
    assert published(tmp_path) == ["sitemap.xml"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST, "sitemap.xml"]


def test_strict_publishes_nothing_on_any_problem(tmp_path: Path) -> None:
    with pytest.raises(StrictModeError), SitemapWriter(tmp_path, BASE, strict=True) as w:
        w.add(BASE + "ok")
        w.add("https://elsewhere.example.org/")
    assert list(tmp_path.iterdir()) == []


def test_scope_duplicates_and_invalid_urls_are_diagnosed(tmp_path: Path) -> None:
    with SitemapWriter(tmp_path / "out", "https://example.com/shop/", allow_hosts=["cdn.example.com"]) as w:
        assert w.add("https://example.com/shop/a")
        assert not w.add("https://example.com/shop/a")
        assert not w.add("https://example.com/blog/")
        assert not w.add("http://example.com/shop/b")
        assert w.add("https://cdn.example.com/file")
        assert not w.add("nonsense")
        assert w.add("/shop/c")
        assert not w.add("/elsewhere")
    assert [d.code for d in w.log] == [
        "duplicate-url",
        "url-not-allowed",
        "url-not-allowed",
        "invalid-url",
        "url-not-allowed",
    ]
    assert w.result is not None and w.result.urls == 3 and w.result.duplicates == 1 and w.result.rejected == 4


def test_naive_datetime_is_utc_and_said_once(tmp_path: Path) -> None:
    with SitemapWriter(tmp_path, BASE) as w:
        w.add(BASE + "a", lastmod="2024-01-01T10:00:00")
        w.add(BASE + "b", lastmod=dt.datetime(2024, 1, 1, 11, 0))
    assert [d.code for d in w.log] == ["naive-datetime"]
    text = raw_bytes(tmp_path / "sitemap.xml").decode()
    assert "2024-01-01T10:00:00+00:00" in text and "2024-01-01T11:00:00+00:00" in text


def test_xsl_reference_and_bundled_stylesheet(tmp_path: Path) -> None:
    write(tmp_path / "url", [BASE], xsl="https://example.com/style.xsl?a=1&b=2")
    assert (
        b'<?xml-stylesheet type="text/xsl" href="https://example.com/style.xsl?a=1&amp;b=2"?>'
        in (tmp_path / "url" / "sitemap.xml").read_bytes()
    )
    write(tmp_path / "default", [f"{BASE}p{i}" for i in range(3)], xsl="default", max_urls=2)
    out = tmp_path / "default"
    assert "sitemap.xsl" in published(out)
    transform = etree.XSLT(etree.parse(str(out / "sitemap.xsl")))
    html = str(transform(etree.parse(str(out / "sitemap-1.xml"))))
    assert "<table>" in html and "https://example.com/p1" in html and "2</strong> URLs" in html
    html = str(transform(etree.parse(str(out / "sitemap.xml"))))
    assert "Sitemap index" in html and "sitemap-2.xml" in html


@pytest.mark.parametrize("name", ["../evil", "a/b", "", ".hidden", "x" * 200])
def test_name_cannot_escape_the_output_folder(tmp_path: Path, name: str) -> None:
    with pytest.raises(UsageError):
        SitemapWriter(tmp_path, BASE, name=name)


@pytest.mark.parametrize(
    ("option", "value"), [("max_urls", 50_001), ("max_urls", 0), ("max_bytes", 52_428_801)]
)
def test_limits_cannot_exceed_the_protocol(tmp_path: Path, option: str, value: int) -> None:
    with pytest.raises(UsageError):
        SitemapWriter(tmp_path, BASE, **{option: value})  # type: ignore[arg-type]


def test_nothing_to_publish_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(PublishError, match="nothing to publish"):
        write(tmp_path, ["https://elsewhere.example.org/"])
    assert list(tmp_path.iterdir()) == []


def test_index_lastmod_from_a_url_list_takes_the_newest_instant(tmp_path: Path) -> None:
    from sitemapkit.generator.run import generate

    src = tmp_path / "urls.txt"
    src.write_text(
        f"{BASE}a\t2024-01-01\n{BASE}b\t2024-01-01T10:00:00+00:00\n{BASE}c\t2024-01-01\n"
        f"{BASE}d\t2023-05-05\n{BASE}e\t2023-05-05T23:59:59+00:00\n{BASE}f\t2023-05-06\n"
    )
    result = generate([str(src)], tmp_path / "out", BASE, max_urls=3)
    assert [f.lastmod for f in result.files] == [
        dt.datetime(2024, 1, 1, 10, tzinfo=UTC),
        dt.date(2023, 5, 6),
    ]


def test_sets_with_different_names_share_a_folder(tmp_path: Path) -> None:
    write(tmp_path, [f"{BASE}post/{i}" for i in range(3)], name="posts", max_urls=2)
    write(tmp_path, [f"{BASE}page/{i}" for i in range(3)], name="pages", max_urls=2)
    write(tmp_path, [f"{BASE}page/{i}" for i in range(2)], name="pages", max_urls=2)
    assert published(tmp_path) == ["pages.xml", "posts-1.xml", "posts-2.xml", "posts.xml"]


NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_news_sitemaps_hold_at_most_1000_news_urls_and_drop_old_articles(tmp_path: Path) -> None:
    fresh = News("The Example Times", "en", NOW - dt.timedelta(hours=5), "Headline")
    stale = News("The Example Times", "en", NOW - dt.timedelta(days=3), "Old")
    with SitemapWriter(tmp_path, BASE, now=NOW) as w:
        for i in range(1001):
            w.add(f"{BASE}news/{i}", news=fresh)
        w.add(f"{BASE}old", news=stale)
        w.add(f"{BASE}plain")
    assert w.result is not None and [f.urls for f in w.result.files] == [1000, 3]
    assert [(d.code, d.url) for d in w.log] == [("news-too-old", f"{BASE}old")]
    second = raw_bytes(tmp_path / "sitemap-2.xml").decode()
    assert second.count("<news:news>") == 1 and f"<loc>{BASE}old</loc></url>" in second


def test_extension_data_a_validator_would_reject_is_left_out_and_reported(tmp_path: Path) -> None:
    good = Video(thumbnail_loc=BASE + "t.jpg", title="T", description="D", content_loc=BASE + "v.mp4")
    with SitemapWriter(tmp_path, BASE, now=NOW) as w:
        w.add(
            BASE + "page",
            images=[Image(f"{BASE}i{i}.png") for i in range(1001)],
            videos=[
                good,
                Video(title="no thumbnail", description="D", content_loc=BASE + "v.mp4"),
                Video(thumbnail_loc=BASE + "t.jpg", title="T", description="D", content_loc=BASE + "page"),
                Video(
                    thumbnail_loc=BASE + "t.jpg",
                    title="T",
                    description="D",
                    player_loc=BASE + "p",
                    duration=0,
                    rating=7.5,
                    tags=tuple(str(i) for i in range(40)),
                ),
            ],
            alternates=[Alternate("en", BASE + "page"), Alternate("en_GB", BASE + "gb/page")],
            news=News("Times", "english", NOW, "T"),
        )
    codes = sorted(d.code for d in w.log)
    assert codes == [
        "hreflang-invalid",
        "invalid-value",
        "invalid-value",
        "invalid-value",
        "invalid-value",
        "too-many-images",
        "video-location-is-page",
        "video-missing-tag",
    ]
    text = raw_bytes(tmp_path / "sitemap.xml").decode()
    assert text.count("<image:image>") == 1000 and text.count("<video:video>") == 2
    assert "en_GB" not in text and "<news:news>" not in text and text.count("<video:tag>") == 32
    assert "<video:duration>" not in text and "<video:rating>" not in text


def test_equal_instants_keep_the_first_lastmod_on_both_paths(tmp_path: Path) -> None:
    from sitemapkit.generator.run import generate

    src = tmp_path / "urls.txt"
    src.write_text(f"{BASE}z\n{BASE}a\t2024-01-01T00:00:00+00:00\n{BASE}b\t2024-01-01\n")
    fast = generate([str(src)], tmp_path / "fast", BASE, index="always")
    with SitemapWriter(tmp_path / "slow", BASE, index="always") as w:
        w.add(f"{BASE}z")
        w.add(f"{BASE}a", lastmod="2024-01-01T00:00:00+00:00")
        w.add(f"{BASE}b", lastmod="2024-01-01")
    assert w.result is not None
    assert fast.files[0].lastmod == w.result.files[0].lastmod == dt.datetime(2024, 1, 1, tzinfo=UTC)


def test_a_run_interrupted_between_renames_is_repaired_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os as os_module

    write(tmp_path, [f"{BASE}a{i}" for i in range(4)], max_urls=2)
    real_replace = os_module.replace
    calls = {"n": 0}

    def flaky(src: object, dst: object) -> None:
        if Path(str(dst)).name == "sitemap.xml":  # the new children are in place, the index is not
            calls["n"] += 1
            raise KeyboardInterrupt
        real_replace(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr("sitemapkit.generator.writer.os.replace", flaky)
    with pytest.raises(KeyboardInterrupt):
        write(tmp_path, [f"{BASE}b{i}" for i in range(6)], max_urls=2)
    monkeypatch.setattr("sitemapkit.generator.writer.os.replace", real_replace)
    assert calls["n"] == 1 and (tmp_path / "sitemap-3.xml").exists()
    w = write(tmp_path, [f"{BASE}c{i}" for i in range(6)], max_urls=2)  # no "not written by sitemapkit"
    assert w.result is not None and published(tmp_path) == [
        "sitemap-1.xml",
        "sitemap-2.xml",
        "sitemap-3.xml",
        "sitemap.xml",
    ]
    assert locs(tmp_path / "sitemap-3.xml") == [f"{BASE}c4", f"{BASE}c5"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("where", ["remove_stale", "hreflang"])
def test_ctrl_c_while_the_writer_starts_leaves_the_folder_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    # CI once sent SIGINT while SitemapWriter() was still making its hreflang file: no `with` held the
    # writer yet, and its lock and temporary file stayed behind
    import sitemapkit.generator.hreflang as hreflang_module
    import sitemapkit.generator.writer as writer_module

    def interrupt(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    if where == "remove_stale":
        monkeypatch.setattr(writer_module, "remove_stale", interrupt)
    else:
        real = hreflang_module.HreflangGroups.__init__

        def made_then_interrupted(self: object, *args: object) -> None:
            real(self, *args)  # type: ignore[arg-type]
            raise KeyboardInterrupt

        monkeypatch.setattr(hreflang_module.HreflangGroups, "__init__", made_then_interrupted)
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(KeyboardInterrupt):
        SitemapWriter(out, "https://example.com/", hreflang="complete")
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


def test_a_second_ctrl_c_while_the_writer_cleans_up_still_leaves_the_folder_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C twice in a row: the second landed in abort() and the temporary files stayed (hostile review)
    import os
    import signal

    import sitemapkit.generator.hreflang as hreflang_module

    real = hreflang_module.HreflangGroups.close

    def close_and_ctrl_c(self: object) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # the second Ctrl-C, while the writer cleans up
        real(self)  # type: ignore[arg-type]

    monkeypatch.setattr(hreflang_module.HreflangGroups, "close", close_and_ctrl_c)
    out = tmp_path / "out"
    with (
        pytest.raises(KeyboardInterrupt),
        SitemapWriter(out, "https://example.com/", hreflang="complete") as w,
    ):
        w.add("https://example.com/a")
        raise KeyboardInterrupt  # the first
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("kind", ["image", "video", "alternate"])
def test_an_extension_url_that_cannot_be_normalised_is_left_out_when_nothing_else_changes(
    tmp_path: Path, kind: str
) -> None:
    """An image, video or alternate whose URL is invalid is left out and reported, also when every other
    URL of the entry is already in normal form (so the entry is otherwise kept as it came)."""
    bad = "http://[bad/x"
    video = Video(thumbnail_loc=BASE + "t.jpg", title="T", description="D", content_loc=BASE + "v.mp4")
    extensions = {
        "image": {"images": [Image(BASE + "i.png"), Image(bad)]},
        "video": {"videos": [video, Video(thumbnail_loc=bad, title="T", description="D", content_loc=BASE)]},
        "alternate": {"alternates": [Alternate("en", BASE + "page"), Alternate("de", bad)]},
    }[kind]
    with SitemapWriter(tmp_path, BASE, now=NOW) as w:
        w.add(BASE + "page", **extensions)  # type: ignore[arg-type]
    text = raw_bytes(tmp_path / "sitemap.xml").decode()
    assert "[bad" not in text
    assert text.count("<image:image>") == (kind == "image")
    assert text.count("<video:video>") == (kind == "video")
    assert text.count("<xhtml:link") == (kind == "alternate")
    assert [d.code for d in w.log] == ["invalid-url"]
