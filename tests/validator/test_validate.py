"""The validator end to end: clean files stay clean, context checks, trees on a real local server, the
writer's output, and the corpus of real sitemaps."""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import gzip
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.errors import InputError, UsageError
from sitemapkit.core.model import Alternate, Image, News, UrlEntry, Video
from sitemapkit.core.urls import normalize_url
from sitemapkit.generator.run import generate
from sitemapkit.generator.writer import SitemapWriter
from sitemapkit.reader.fetch import FetchOptions
from sitemapkit.validator.checks import UNIFORM_MIN
from sitemapkit.validator.report import ValidationReport
from sitemapkit.validator.run import avalidate, validate
from tests.support.localserver import LocalServer
from tests.validator.test_validate_codes import NO_RETRY, NOW, NS, PUBLIC, index, news, urlset

BASE = "https://example.com/"


def codes(report: ValidationReport) -> Counter[str]:
    return Counter(d.code for d in report)


def check(path: Path, text: str | bytes, **kw: object) -> ValidationReport:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    kw.setdefault("now", NOW)
    kw.setdefault("fetch_options", NO_RETRY)
    return validate(path, **kw)  # type: ignore[arg-type]


# --- clean files ------------------------------------------------------------------------------------

FULL = urlset(
    "<url><loc>https://example.com/</loc><lastmod>2024-06-01</lastmod><changefreq>daily</changefreq>"
    "<priority>1.0</priority></url>",
    "<url><loc>https://example.com/en/tour?a=1&amp;b=2</loc><lastmod>2024-05-01T10:00:00+02:00</lastmod>"
    "<image:image><image:loc>https://cdn.example.net/tour.jpg</image:loc></image:image>"
    "<video:video><video:thumbnail_loc>https://cdn.example.net/t.jpg</video:thumbnail_loc>"
    "<video:title>Tour</video:title><video:description>A tour</video:description>"
    "<video:player_loc>https://player.example.net/1</video:player_loc><video:duration>60</video:duration>"
    "<video:publication_date>2024-05-01</video:publication_date>"
    '<video:restriction relationship="allow">DE FR</video:restriction>'
    "<video:family_friendly>yes</video:family_friendly><video:live>no</video:live></video:video>"
    f"{news('2024-06-15T08:00:00Z')}"
    '<xhtml:link rel="alternate" hreflang="en" href="https://example.com/en/tour?a=1&amp;b=2"/>'
    '<xhtml:link rel="alternate" hreflang="de-DE" href="https://example.com/de/tour"/>'
    '<xhtml:link rel="alternate" hreflang="x-default" href="https://example.com/en/tour?a=1&amp;b=2"/></url>',
    "<url><loc>https://example.com/de/tour</loc>"
    '<xhtml:link rel="alternate" hreflang="de-DE" href="https://example.com/de/tour"/>'
    '<xhtml:link rel="alternate" hreflang="en" href="https://example.com/en/tour?a=1&amp;b=2"/></url>',
    "<url><loc>https://example.com/b%C3%BCcher/</loc></url>",
)
PLAIN = urlset(
    "<url><loc>https://example.com/</loc><lastmod>2024-06-01</lastmod></url>",
    "<url><loc>https://example.com/about</loc><lastmod>2024-06-14T23:59:59Z</lastmod></url>",
)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("sitemap.xml", PLAIN),
        ("sitemap.xml", FULL),
        ("sitemap.xml.gz", gzip.compress(FULL.encode())),
        ("sitemap.txt", "https://example.com/\nhttps://example.com/a?b=c\n\nhttps://example.com/%C3%BC\n"),
        ("sitemap.txt.gz", gzip.compress(b"https://example.com/\n")),
    ],
    ids=["plain", "all-extensions", "gzip", "text", "text-gzip"],
)
def test_clean_files_have_no_diagnostics(tmp_path: Path, name: str, data: str | bytes) -> None:
    report = check(tmp_path / name, data, url=BASE + "sitemap.xml")
    assert list(report) == []
    assert report.ok and report.notes == []
    assert report.files[0].url == BASE + "sitemap.xml"


def test_clean_index_with_local_children(tmp_path: Path) -> None:
    (tmp_path / "a.xml").write_text(PLAIN)
    (tmp_path / "b.xml.gz").write_bytes(
        gzip.compress(urlset("<url><loc>https://example.com/b</loc></url>").encode())
    )
    report = check(
        tmp_path / "sitemap.xml",
        index("https://example.com/a.xml", "https://example.com/b.xml.gz"),
        url=PUBLIC,
    )
    assert list(report) == []
    assert [(f.source, f.kind, f.entries, f.parent) for f in report.files] == [
        (str(tmp_path / "sitemap.xml"), "sitemapindex", 2, None),
        (str(tmp_path / "a.xml"), "urlset", 2, str(tmp_path / "sitemap.xml")),
        (str(tmp_path / "b.xml.gz"), "urlset", 1, str(tmp_path / "sitemap.xml")),
    ]
    assert report.urls == 3 and report.files[2].compressed


def test_without_a_public_url_scope_is_skipped_with_one_note(tmp_path: Path) -> None:
    report = check(tmp_path / "s.xml", urlset("<url><loc>https://elsewhere.org/x</loc></url>"))
    assert list(report) == [] and report.ok
    (note,) = report.notes
    assert "--url" in note and "s.xml" in note


def test_local_index_without_url_finds_children_by_name(tmp_path: Path) -> None:
    (tmp_path / "a.xml").write_text(urlset("<url><loc>/relative</loc></url>"))
    report = check(tmp_path / "sitemap.xml", index("https://example.com/sitemaps/a.xml"))
    assert [(d.code, d.source) for d in report] == [("invalid-url", str(tmp_path / "a.xml"))]
    assert report.files[1].url == "https://example.com/sitemaps/a.xml"


# --- context checks ---------------------------------------------------------------------------------


def test_scope_folder_host_scheme_port_and_allow_host(tmp_path: Path) -> None:
    doc = urlset(
        "<url><loc>https://example.com/shop/a</loc></url>",
        "<url><loc>https://example.com/blog/b</loc></url>",
        "<url><loc>http://example.com/shop/c</loc></url>",
        "<url><loc>https://www.example.com/shop/d</loc></url>",
        "<url><loc>https://example.com:8443/shop/e</loc></url>",
        "<url><loc>https://partner.org/x</loc></url>",
    )
    report = check(tmp_path / "s.xml", doc, url="https://example.com/shop/sitemap.xml")
    found = {d.line: d.message for d in report if d.code == "url-not-allowed"}
    assert sorted(found) == [4, 5, 6, 7, 8]
    assert "folder" in found[4] and "scheme" in found[5] and "host" in found[6] and "port" in found[7]
    allowed = check(
        tmp_path / "s.xml", doc, url="https://example.com/shop/sitemap.xml", allow_hosts=["partner.org"]
    )
    assert [d.line for d in allowed if d.code == "url-not-allowed"] == [4, 5, 6, 7]


def test_index_children_must_be_in_the_index_folder(tmp_path: Path) -> None:
    report = check(
        tmp_path / "sitemap.xml",
        index("https://example.com/docs/a.xml", "https://example.com/b.xml"),
        url="https://example.com/docs/sitemap.xml",
        recursive=False,
    )
    assert [(d.code, d.line, d.url) for d in report] == [("url-not-allowed", 4, "https://example.com/b.xml")]


def test_duplicates_across_sources_name_the_first_file(tmp_path: Path) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("https://example.com/x\nhttps://example.com/y\n")
    b.write_text("https://example.com/y\n")
    report = validate([a, b], now=NOW)
    (d,) = [d for d in report if d.code == "duplicate-url"]
    assert (d.source, d.line, d.url) == (str(b), 1, "https://example.com/y")
    assert str(a) in d.message


def test_now_is_injectable_and_skew_is_allowed(tmp_path: Path) -> None:
    doc = urlset(
        "<url><loc>https://example.com/a</loc><lastmod>2024-06-15T12:59:00Z</lastmod></url>",
        "<url><loc>https://example.com/b</loc><lastmod>2024-06-16</lastmod></url>",
        "<url><loc>https://example.com/c</loc><lastmod>2024-06-17</lastmod></url>",
    )
    report = check(tmp_path / "s.xml", doc)
    # 59 minutes ahead is clock skew; June 16 has begun at UTC+14; June 17 has begun nowhere.
    assert [(d.code, d.line) for d in report] == [("future-date", 5)]
    later = check(tmp_path / "s.xml", doc, now=dt.datetime(2024, 6, 17, 10, tzinfo=dt.UTC))
    assert list(later) == []


@pytest.mark.parametrize(
    ("count", "same", "expected"),
    [(UNIFORM_MIN - 1, True, 0), (UNIFORM_MIN, True, 1), (UNIFORM_MIN + 50, False, 0)],
)
def test_lastmod_uniform_threshold(tmp_path: Path, count: int, same: bool, expected: int) -> None:
    lines = [
        f"<url><loc>https://example.com/{i}</loc><lastmod>2024-06-01T10:00:00Z</lastmod></url>"
        for i in range(count)
    ]
    if not same:
        lines[-1] = lines[-1].replace("10:00:00Z", "10:00:01Z")
    report = check(tmp_path / "s.xml", urlset(*lines))
    assert codes(report)["lastmod-uniform"] == expected


def test_same_instant_in_other_timezones_is_uniform(tmp_path: Path) -> None:
    lines = [
        f"<url><loc>https://example.com/{i}</loc><lastmod>2024-06-01T{10 + i % 2}:00:00"
        f"{'+00:00' if i % 2 == 0 else '+01:00'}</lastmod></url>"
        for i in range(UNIFORM_MIN)
    ]
    assert codes(check(tmp_path / "s.xml", urlset(*lines))) == {"lastmod-uniform": 1}


def test_hreflang_pairs_across_files_in_any_order(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.xml", tmp_path / "b.xml", tmp_path / "c.xml"

    def page(loc: str, *alts: str) -> str:
        links = "".join(f'<xhtml:link rel="alternate" hreflang="{h}" href="{u}"/>' for h, u in alts)
        return f"<url><loc>{loc}</loc>{links}</url>"

    en, de, fr = BASE + "en", BASE + "de", BASE + "fr"
    a.write_text(urlset(page(en, ("en", en), ("de", de), ("fr", fr))))
    b.write_text(urlset(page(de, ("de", de), ("en", en))))  # does not name fr
    c.write_text(urlset(page(fr, ("fr", fr), ("en", en), ("de", de))))
    report = validate([a, b, c], now=NOW)
    assert sorted((d.code, d.source, d.url) for d in report) == [
        ("hreflang-not-reciprocal", str(c), fr),  # fr -> de, de does not link back
    ]
    (d,) = report
    assert de in d.message and report.excerpt(d) is not None and fr in report.excerpt(d)  # type: ignore[operator]


def test_parser_accepted_urls_that_cannot_be_normalised_are_invalid(tmp_path: Path) -> None:
    report = check(tmp_path / "s.xml", urlset("<url><loc>https://exa$mple.com/</loc></url>"), url=PUBLIC)
    assert [(d.code, d.line) for d in report] == [("invalid-url", 3)]


def test_counts_are_exact_when_few_diagnostics_are_kept(tmp_path: Path) -> None:
    # (a text sitemap must start with a URL: the first line is one, the next 30 are not)
    lines = (
        "https://example.com/a\n"
        + "".join(f"/relative-{i}\n" for i in range(30))
        + "https://example.com/a\n" * 19
    )
    seen: list[Diagnostic] = []
    report = check(tmp_path / "s.txt", lines, keep=5, on_diagnostic=seen.append)
    assert (report.errors, report.warnings) == (30, 19)
    assert len(report.diagnostics) == 10 and report.truncated
    assert len(seen) == 49
    assert report.to_dict(limit=3)["summary"] == {
        "files": 1,
        "urls": 50,
        "errors": 30,
        "warnings": 19,
        "codes": {"duplicate-url": 19, "invalid-url": 30},
        "not_shown": 46,
    }


def test_a_limit_shows_errors_before_warnings(tmp_path: Path) -> None:
    text = "https://example.com/a\nhttps://example.com/a\nhttps://example.com:99999/\n"
    report = check(tmp_path / "s.txt", text)
    assert [d.code for d in report] == ["invalid-url", "duplicate-url"]  # the parser reports as it reads
    assert [d.code for d in report.shown(1)] == ["invalid-url"]
    assert [d["code"] for d in report.to_dict()["diagnostics"]] == ["invalid-url", "duplicate-url"]


def test_excerpt_of_a_long_line_centres_on_the_url(tmp_path: Path) -> None:
    body = "".join(f"<url><loc>https://example.com/page-{i}</loc></url>" for i in range(200))
    body += "<url><loc>/bad</loc></url>"
    report = check(tmp_path / "s.xml", f'<?xml version="1.0"?><urlset xmlns="{NS}">{body}</urlset>')
    (d,) = report
    excerpt = report.excerpt(d)
    assert excerpt is not None and "<loc>/bad</loc>" in excerpt and len(excerpt) <= 122


def test_utf16_file_is_an_encoding_error_with_a_readable_excerpt(tmp_path: Path) -> None:
    doc = urlset("<url><loc>/relative</loc></url>").replace("UTF-8", "UTF-16")
    report = check(tmp_path / "s.xml", doc.encode("utf-16"))
    assert [(d.code, d.line) for d in report] == [("encoding-error", 1), ("invalid-url", 3)]
    assert report.excerpt(report.diagnostics[1]) == "<url><loc>/relative</loc></url>"


def test_usage_errors(tmp_path: Path) -> None:
    path = tmp_path / "s.xml"
    path.write_text(PLAIN)
    with pytest.raises(UsageError):
        validate([path, path], url=PUBLIC)
    with pytest.raises(UsageError):
        validate(path, url="not a url")
    with pytest.raises(UsageError):
        validate(path, allow_hosts=["bad host!"])
    with pytest.raises(UsageError):
        validate([])
    with pytest.raises(InputError):
        validate(tmp_path / "missing.xml")


def test_async_form_and_no_sync_call_inside_a_loop(tmp_path: Path) -> None:
    path = tmp_path / "s.xml"
    path.write_text(PLAIN)

    async def main() -> ValidationReport:
        with pytest.raises(UsageError):
            validate(path)
        return await avalidate(path, url=PUBLIC, now=NOW)

    assert asyncio.run(main()).ok


# --- remote trees -----------------------------------------------------------------------------------


def _site(server: LocalServer) -> str:
    """An index with a good child, a nested index, a 404, a corrupt gzip and a redirected child."""
    good = urlset(f"<url><loc>{server.url('/a')}</loc></url>")
    server.route("/good.xml", good)
    server.route("/nested.xml", index(server.url("/other.xml")))
    data = gzip.compress(urlset(f"<url><loc>{server.url('/p')}</loc></url>").encode())
    server.route("/broken.xml.gz", data[:10] + b"\xff" * 64, content_type="application/gzip")
    server.redirect("/moved.xml", server.url("/new/moved.xml"))
    server.route("/new/moved.xml", urlset(f"<url><loc>{server.url('/new/b')}</loc></url>"))
    return server.route(
        "/sitemap.xml",
        index(
            server.url("/good.xml"),
            server.url("/nested.xml"),
            server.url("/missing.xml"),
            server.url("/broken.xml.gz"),
            server.url("/moved.xml"),
        ),
    )


def test_remote_tree(server: LocalServer) -> None:
    root = _site(server)
    report = validate(root, now=NOW, fetch_options=NO_RETRY)
    found = {(d.code, d.source, d.line) for d in report}
    assert found == {
        ("nested-index", root, 4),
        ("http-error", root, 5),
        ("compression-error", server.url("/broken.xml.gz"), None),
    }
    assert [f.source for f in report.files] == [
        root,
        server.url("/good.xml"),
        server.url("/nested.xml"),
        server.url("/missing.xml"),
        server.url("/broken.xml.gz"),
        server.url("/moved.xml"),
    ]
    moved = report.files[-1]
    # scope follows where the file really is: /new/b is in the folder of /new/moved.xml
    assert moved.final_url == moved.url == server.url("/new/moved.xml")
    assert report.files[3].status == 404 and report.files[3].error == "HTTP 404"
    assert report.urls == 2
    assert report.files[4].error is not None and "corrupt" in report.files[4].error
    http = next(d for d in report if d.code == "http-error")
    assert http.url == server.url("/missing.xml") and "404" in http.message
    assert report.excerpt(http) == f"<sitemap><loc>{server.url('/missing.xml')}</loc></sitemap>"
    # the nested index was read (its entries checked) but its children were not followed
    assert not any(r.path == "/other.xml" for r in server.requests)


def test_no_recursive_reads_the_index_alone(server: LocalServer) -> None:
    root = _site(server)
    report = validate(root, now=NOW, fetch_options=NO_RETRY, recursive=False)
    assert list(report) == [] and len(report.files) == 1
    assert [r.path for r in server.requests] == ["/sitemap.xml"]


def test_a_redirected_root_is_judged_where_it_lands(server: LocalServer) -> None:
    server.route("/en/sitemap.xml", urlset(f"<url><loc>{server.url('/en/a')}</loc></url>"))
    start = server.redirect("/sitemap.xml", server.url("/en/sitemap.xml"), status=302)
    report = validate(start, now=NOW, fetch_options=NO_RETRY)
    assert list(report) == []
    assert report.files[0].url == server.url("/en/sitemap.xml")


def test_a_slow_child_is_an_http_error_at_its_index_line(server: LocalServer) -> None:
    # the read timeout holds for the index too: 2 s, far from the index's milliseconds on a busy machine,
    # and far from the child's minute
    server.route("/slow.xml", urlset(f"<url><loc>{server.url('/a')}</loc></url>"), delay=60)
    root = server.route("/sitemap.xml", index(server.url("/slow.xml")))
    report = validate(root, now=NOW, fetch_options=FetchOptions(retries=0, read_timeout=2.0))
    ((code, line, message),) = [(d.code, d.line, d.message) for d in report]
    assert (code, line) == ("http-error", 3) and "timed out" in message


def test_excerpts_of_remote_files_come_from_the_spool(server: LocalServer) -> None:
    body = gzip.compress(
        urlset(f"<url><loc>{server.url('/a')}</loc></url>", "<url><loc>/rel</loc></url>").encode()
    )
    url = server.route("/s.xml.gz", body, content_type="application/gzip")
    report = validate(url, now=NOW, fetch_options=NO_RETRY)
    (d,) = report
    assert (d.code, d.line, report.excerpt(d)) == ("invalid-url", 4, "<url><loc>/rel</loc></url>")


def test_public_url_maps_a_staging_tree(server: LocalServer) -> None:
    server.route("/staging/a.xml", urlset("<url><loc>https://example.com/a</loc></url>"))
    root = server.route("/staging/sitemap.xml", index("https://example.com/a.xml"))
    report = validate(root, url=PUBLIC, now=NOW, fetch_options=NO_RETRY)
    assert list(report) == []
    assert [f.url for f in report.files] == [PUBLIC, "https://example.com/a.xml"]


def test_a_site_is_discovered_through_robots_txt(server: LocalServer) -> None:
    server.route("/maps/sitemap.xml", urlset(f"<url><loc>{server.url('/elsewhere')}</loc></url>"))
    server.route("/robots.txt", f"Sitemap: {server.url('/maps/sitemap.xml')}\n", content_type="text/plain")
    report = validate(server.url("/"), now=NOW, fetch_options=NO_RETRY)
    assert [(d.code, d.line) for d in report] == [("url-not-allowed", 3)]


# --- the writer's output validates --------------------------------------------------------------------


def test_generate_output_validates_clean(tmp_path: Path) -> None:
    src = tmp_path / "urls.txt"
    src.write_text(
        "".join(
            f"https://example.com/docs/p{i}\t2024-0{1 + i % 5}-1{i % 10}\tweekly\t0.{i % 10}\n"
            for i in range(120)
        )
        + "/docs/relative\nhttps://example.com/docs/ü?q=a b\n"
    )
    out = tmp_path / "public"
    result = generate([str(src)], out, "https://example.com/docs/", gzip=True, max_urls=50)
    assert result.index is not None and len(result.files) == 3
    report = validate(result.index.path, url=result.entry_url, now=NOW)
    assert list(report) == [] and report.urls == 122
    assert {f.kind for f in report.files} == {"sitemapindex", "urlset"}


def test_writer_with_every_extension_validates_clean(tmp_path: Path) -> None:
    with SitemapWriter(tmp_path, BASE, index="always") as writer:
        alternates = (
            Alternate("en", BASE + "en"),
            Alternate("de", BASE + "de"),
            Alternate("x-default", BASE + "en"),
        )
        video = Video(
            thumbnail_loc=BASE + "t.jpg",
            title="T",
            description="D & more",
            content_loc=BASE + "v.mp4",
            duration=30,
            publication_date=dt.date(2024, 1, 1),
            tags=("a", "b"),
        )
        writer.add(
            BASE + "en", "2024-06-01", images=[Image(BASE + "i.jpg")], videos=[video], alternates=alternates
        )
        writer.add(BASE + "de", "2024-06-02", alternates=alternates)
        writer.add(
            BASE + "news",
            news=News("Paper", "en", dt.datetime(2024, 6, 15, 9, tzinfo=dt.UTC), "Title <b>"),
        )
    assert writer.result is not None
    report = validate(
        writer.result.entry_url.replace(BASE, str(tmp_path) + "/"), url=writer.result.entry_url, now=NOW
    )
    assert list(report) == [] and report.urls == 3


# Like tests/generator/test_roundtrip.py, with inputs whose content is clean too: dates not after "now", news
# from the last day, hreflang groups in which every page lists every other and itself.
_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\ufffe\uffff"),
    min_size=1,
    max_size=20,
).filter(lambda s: s.strip() == s)
_paths = st.lists(
    st.sampled_from([*"abcXYZ019-._~!$&'()*+,;=:@/?% ", "ü", "日", "&amp;", "<", '"']), max_size=16
).map("".join)
_tz = st.sampled_from([dt.UTC, dt.timezone(dt.timedelta(hours=2)), dt.timezone(-dt.timedelta(hours=5))])
_past = st.datetimes(min_value=dt.datetime(1995, 1, 1), max_value=dt.datetime(2024, 6, 14), timezones=_tz)
_recent = st.datetimes(
    min_value=dt.datetime(2024, 6, 14, 13), max_value=dt.datetime(2024, 6, 15, 6), timezones=_tz
)
_lastmods = st.one_of(
    st.none(), st.dates(min_value=dt.date(1995, 1, 1), max_value=dt.date(2024, 6, 14)), _past
)
_videos = st.builds(
    Video,
    thumbnail_loc=_paths.map(lambda p: BASE + "t/" + p),
    title=_text,
    description=_text,
    content_loc=_paths.map(lambda p: BASE + "v/" + p + ".mp4"),
    duration=st.one_of(st.none(), st.integers(1, 28_800)),
    rating=st.one_of(st.none(), st.integers(0, 50).map(lambda i: i / 10)),
    publication_date=st.one_of(st.none(), _past),
    family_friendly=st.one_of(st.none(), st.booleans()),
    tags=st.lists(_text, max_size=3).map(tuple),
)


@st.composite
def _groups(draw: st.DrawFn) -> list[UrlEntry]:
    """A page and its language versions, each listing all of them (itself included), with extensions."""
    path = draw(_paths)
    langs = draw(
        st.lists(st.sampled_from(["en", "de-DE", "pt-BR", "zh-Hant"]), min_size=0, max_size=3, unique=True)
    )
    pages = [BASE + path] + [BASE + lang.lower() + "/" + path for lang in langs[1:]]
    alternates = tuple(Alternate(lang, page) for lang, page in zip(langs, pages, strict=False))
    return [
        UrlEntry(
            page,
            lastmod=draw(_lastmods),
            changefreq=draw(st.one_of(st.none(), st.sampled_from(["daily", "never"]))),
            priority=draw(st.one_of(st.none(), st.integers(0, 10).map(lambda i: i / 10))),
            images=tuple(Image(BASE + "img/" + p) for p in draw(st.lists(_paths, max_size=2))),
            videos=tuple(draw(st.lists(_videos, max_size=1))),
            news=draw(
                st.one_of(st.none(), st.builds(News, _text, st.sampled_from(["en", "zh-cn"]), _recent, _text))
            ),
            alternates=alternates if len(langs) > 1 else (),
        )
        for page in pages[: max(1, len(langs))]
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups=st.lists(_groups(), max_size=8), max_urls=st.integers(1, 5), use_gzip=st.booleans())
def test_whatever_the_writer_publishes_validates_clean(
    groups: list[list[UrlEntry]], max_urls: int, use_gzip: bool
) -> None:
    with tempfile.TemporaryDirectory() as out:
        with SitemapWriter(out, BASE, max_urls=max_urls, gzip=use_gzip, index="always") as writer:
            writer.add(BASE)
            seen = {BASE}
            for group in groups:
                locs = {normalize_url(e.loc) for e in group}
                if (
                    locs & seen
                ):  # a page twice with different alternates is the input's fault, not the writer's
                    continue
                seen |= locs
                for entry in group:
                    writer.add_entry(entry)
        result = writer.result
        assert result is not None and result.index is not None
        report = validate(result.index.path, url=result.entry_url, now=NOW)
        assert [str(d) for d in report] == []
        assert report.urls == result.urls


# --- real sitemaps ------------------------------------------------------------------------------------

REAL_NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
RELATIVE = ("010", "011", "014", "016", "041", "048", "053", "055", "056")
CLEAN = (
    "001", "002", "009", "012", "013", "017", "020", "023", "025", "027", "028", "029", "030",
    "031", "033", "035", "037", "040", "046", "049", "052", "054", "063", "065", "077",
)  # fmt: skip


def test_real_sitemaps(real_sitemaps: Path) -> None:
    with open(real_sitemaps / "MANIFEST.tsv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    assert len(rows) == 80
    for row in rows:
        path = real_sitemaps / "files" / row["file"]
        prefix = row["file"][:3]
        report = validate(path, recursive=False, now=REAL_NOW)
        found = codes(report)
        file = report.files[0]
        # 078 is relative paths, one a line: refused as not a text sitemap (one unsupported-format)
        kind = "other" if prefix == "078" else row["kind"]
        assert (file.kind or "other") == kind, row["file"]
        if kind == "other":
            assert not report.ok and found.keys() <= {"unsupported-format", "parse-error"}, row["file"]
        if prefix in RELATIVE:
            assert not report.ok and found["invalid-url"] > 0, row["file"]
        if prefix in CLEAN:
            assert list(report) == [], (row["file"], found)
        assert report.errors + report.warnings >= len(report.diagnostics)


def test_real_sitemaps_judged_at_their_public_url(real_sitemaps: Path) -> None:
    """018 lists another project's URLs; 021 a preview host; both out of scope for their real site."""
    files = real_sitemaps / "files"
    foreign = validate(
        files / "018-sphinx-sitemap-foreign-domain.xml", url="https://eemont.readthedocs.io/sitemap.xml"
    )
    assert not foreign.ok and codes(foreign)["url-not-allowed"] == 19
    uniform = validate(files / "064-xml-sitemaps-com-loc-whitespace.xml", now=REAL_NOW)
    assert codes(uniform)["lastmod-uniform"] == 1


def test_an_index_that_lists_itself_is_a_loop_not_a_nested_index(tmp_path: Path) -> None:
    path = tmp_path / "selfidx.xml"
    path.write_text(index("https://example.com/selfidx.xml", "https://example.com/a.xml"))
    (tmp_path / "a.xml").write_text(urlset("<url><loc>https://example.com/p</loc></url>"))
    report = validate(str(path), url="https://example.com/selfidx.xml")
    assert [(d.code, d.line) for d in report] == [("fetch-loop", 3)]
    assert report.ok and len(report.files) == 2


def test_a_child_redirecting_to_its_index_is_a_loop(server: LocalServer) -> None:
    server.route("/parent.xml", index(server.url("/redir.xml"), server.url("/good.xml")))
    server.redirect("/redir.xml", server.url("/parent.xml"))
    server.route("/good.xml", urlset(f"<url><loc>{server.url('/a')}</loc></url>"))
    report = validate(server.url("/parent.xml"))
    assert [d.code for d in report] == ["fetch-loop"] and report.ok
    assert report.urls == 1
