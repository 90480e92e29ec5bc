"""Inputs that sites migrating from sitemap_gen.py have: W3C Extended (IIS) logs, Latin-1 lists and logs,
gzipped logs, existing 0.84 and 0.9 sitemaps and indexes; sitemap_gen list lines; the build's own files;
files another tool wrote; folders with their own URL and default files; news keywords."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.errors import PublishError, UsageError
from sitemapkit.core.model import News, UrlEntry
from sitemapkit.generator.run import FolderSource, ListSource, LogSource, generate
from sitemapkit.generator.sources.logs import read_logs
from sitemapkit.generator.sources.sitemaps import is_sitemap_file
from sitemapkit.generator.writer import SitemapWriter
from sitemapkit.reader.local import local_child
from sitemapkit.reader.parser import parse_file
from sitemapkit.validator.run import validate
from tests.support.localserver import LocalServer

BASE = "https://www.example.com/"

IIS_FIELDS = (
    "#Fields: date time s-ip cs-method cs-uri-stem cs-uri-query s-port cs-username c-ip cs(User-Agent) "
    "cs(Referer) sc-status sc-substatus sc-win32-status time-taken"
)
IIS_LOG = f"""\
#Software: Microsoft Internet Information Services 10.0
#Version: 1.0
#Date: 2024-03-01 00:00:00
{IIS_FIELDS}
2024-03-01 10:00:00 10.0.0.1 GET /products/list.aspx cat=7 443 - 1.2.3.4 Mozilla/5.0+(Windows) - 200 0 0 15
2024-03-01 10:00:01 10.0.0.1 POST /cart/add.aspx - 443 - 1.2.3.4 Mozilla/5.0 - 200 0 0 15
2024-03-01 10:00:02 10.0.0.1 GET /gone.aspx - 443 - 1.2.3.4 Mozilla/5.0 - 404 0 0 15
2024-03-01 10:00:03 10.0.0.1 HEAD /about.aspx - 443 - 1.2.3.4 Mozilla/5.0 - 200 0 0 15
#Software: Microsoft Internet Information Services 10.0
#Fields: date time cs-method cs-uri-stem cs-uri-query sc-status cs-host
2024-03-02 11:00:00 GET /news/today.aspx - 200 www.example.com
2024-03-02 11:00:01 GET /news/today.aspx - 304 www.example.com
2024-03-02 11:00:02 GET /stranger.aspx - 200 other.example.org
"""


def urls_of(out: Path, name: str = "sitemap.xml") -> list[str]:
    return [e.loc for e in parse_file(out / name)]


def collect() -> tuple[list[Diagnostic], object]:
    seen: list[Diagnostic] = []
    return seen, seen.append


# -- W3C Extended logs ------------------------------------------------------------------------------------


def test_an_iis_log_with_fields_changing_mid_file_is_read(tmp_path: Path) -> None:
    log = tmp_path / "u_ex240301.log"
    log.write_text(IIS_LOG)
    diagnostics, report = collect()
    summary = read_logs([log], BASE, report=report)  # type: ignore[arg-type]
    assert summary.stats.formats == {str(log): "w3c"}
    assert [p.url for p in summary.pages] == [
        BASE + "about.aspx",
        BASE + "news/today.aspx",
        BASE + "products/list.aspx?cat=7",
    ]
    hits = {p.url: p.hits for p in summary.pages}
    assert hits[BASE + "news/today.aspx"] == 2  # 200 and 304, under the second #Fields:
    assert summary.stats.dropped["method"] == 1 and summary.stats.dropped["status"] == 1
    assert summary.stats.dropped["out-of-scope"] == 1  # cs-host other.example.org
    seen = {p.url: p.last_seen for p in summary.pages}
    assert seen[BASE + "about.aspx"] == dt.datetime(2024, 3, 1, 10, 0, 3, tzinfo=dt.UTC)
    assert diagnostics == []


def test_log_format_forces_w3c_with_iis_default_fields(tmp_path: Path) -> None:
    log = tmp_path / "noheader.log"  # IIS's default fields, the header block cut off by rotation
    log.write_text(IIS_LOG.split("\n", 4)[4].split("#Software")[0])
    _, report = collect()
    detected = read_logs([log], BASE, report=report)  # type: ignore[arg-type]
    assert detected.pages == ()
    forced = read_logs([log], BASE, report=report, log_format="w3c")  # type: ignore[arg-type]
    assert [p.url for p in forced.pages] == [BASE + "about.aspx", BASE + "products/list.aspx?cat=7"]
    with pytest.raises(UsageError, match="log format"):
        read_logs([log], BASE, report=report, log_format="nginx")  # type: ignore[arg-type]


def test_a_gzipped_iis_log_through_the_cli(tmp_path: Path) -> None:
    log = tmp_path / "u_ex240301.log.gz"
    log.write_bytes(gzip.compress(IIS_LOG.encode()))
    out = tmp_path / "out"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "sitemapkit",
            "generate",
            "--log",
            str(log),
            "--base-url",
            BASE,
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert urls_of(out) == [BASE + "about.aspx", BASE + "news/today.aspx", BASE + "products/list.aspx?cat=7"]


def test_a_gzipped_common_log_with_forced_format(tmp_path: Path) -> None:
    log = tmp_path / "access.log.gz"
    log.write_bytes(gzip.compress(b'1.2.3.4 - - [01/Mar/2024:10:00:00 +0000] "GET /a.html HTTP/1.1" 200 5\n'))
    _, report = collect()
    summary = read_logs([log], BASE, report=report, log_format="common")  # type: ignore[arg-type]
    assert [p.url for p in summary.pages] == [BASE + "a.html"]
    assert summary.stats.formats == {str(log): "common"}


# -- encodings --------------------------------------------------------------------------------------------


def test_a_latin1_list_is_decoded_and_written_utf8_percent_encoded(tmp_path: Path) -> None:
    source = tmp_path / "urls.txt"
    source.write_bytes("https://www.example.com/café.html\nhttps://www.example.com/naïve\n".encode("latin-1"))
    diagnostics, report = collect()
    generate([str(source)], tmp_path / "out", BASE, encoding="latin-1", on_diagnostic=report)  # type: ignore[arg-type]
    assert urls_of(tmp_path / "out") == [BASE + "caf%C3%A9.html", BASE + "na%C3%AFve"]
    assert diagnostics == []
    # without the encoding, each such line is reported and skipped, as before
    with pytest.raises(PublishError):
        generate([str(source)], tmp_path / "out2", BASE, on_diagnostic=report)  # type: ignore[arg-type]
    assert [d.line for d in diagnostics if d.code == "bad-line"] == [1, 2]


def test_an_undecodable_line_is_reported_with_its_line_and_skipped(tmp_path: Path) -> None:
    source = tmp_path / "urls.txt"
    source.write_bytes(
        b"https://www.example.com/a\nhttps://www.example.com/\x81x\nhttps://www.example.com/b\n"
    )
    diagnostics, report = collect()
    generate([ListSource(str(source), "ascii")], tmp_path / "out", BASE, on_diagnostic=report)  # type: ignore[arg-type]
    assert urls_of(tmp_path / "out") == [BASE + "a", BASE + "b"]
    assert [(d.code, d.source, d.line) for d in diagnostics] == [("bad-line", str(source), 2)]
    assert "not ascii" in diagnostics[0].message


def test_a_latin1_log_gives_utf8_urls(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_bytes(
        '1.2.3.4 - - [01/Mar/2024:10:00:00 +0000] "GET /café.html HTTP/1.1" 200 5\n'.encode("latin-1")
    )
    _, report = collect()
    plain = read_logs([log], BASE, report=report)  # type: ignore[arg-type]
    assert [p.url for p in plain.pages] == [BASE + "caf%E9.html"]  # the raw byte, as before
    decoded = read_logs([log], BASE, report=report, encoding="latin-1")  # type: ignore[arg-type]
    assert [p.url for p in decoded.pages] == [BASE + "caf%C3%A9.html"]


def test_a_strict_log_encoding_reports_and_skips_a_bad_line(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_bytes(
        b'1.2.3.4 - - [01/Mar/2024:10:00:00 +0000] "GET /ok HTTP/1.1" 200 5\n'
        b'1.2.3.4 - - [01/Mar/2024:10:00:00 +0000] "GET /caf\xe9 HTTP/1.1" 200 5\n'
    )
    diagnostics, report = collect()
    summary = read_logs([log], BASE, report=report, encoding="utf-8")  # type: ignore[arg-type]
    assert [p.url for p in summary.pages] == [BASE + "ok"]
    assert [(d.code, d.line) for d in diagnostics] == [("bad-line", 2)]


def test_an_unknown_or_ascii_incompatible_encoding_is_a_usage_error(tmp_path: Path) -> None:
    source = tmp_path / "urls.txt"
    source.write_text(BASE + "\n")
    with pytest.raises(UsageError, match="unknown encoding"):
        generate([str(source)], tmp_path / "out", BASE, encoding="klingon")
    with pytest.raises(UsageError, match="ASCII"):
        generate([str(source)], tmp_path / "out", BASE, encoding="utf-16")
    # utf-8-sig is UTF-8 with a BOM, which UTF-8 input may have anyway: taken as UTF-8
    source.write_bytes(b"\xef\xbb\xbf" + (BASE + "caf\u00e9\n").encode())
    assert generate([str(source)], tmp_path / "sig", BASE, encoding="utf-8-sig").urls == 1
    assert "caf%C3%A9" in (tmp_path / "sig" / "sitemap.xml").read_text()
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "sitemapkit",
            "generate",
            str(source),
            "--base-url",
            BASE,
            "--out",
            str(tmp_path / "o"),
            "--encoding",
            "klingon",
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2 and "unknown encoding" in run.stderr


# -- sitemap_gen list lines and news ------------------------------------------------------------------------


def test_a_token_that_is_not_key_value_is_invalid_value_and_the_url_is_the_first_token(
    tmp_path: Path,
) -> None:
    source = tmp_path / "urllist.txt"
    source.write_text(
        "https://www.example.com/a lastmod=2024-01-02 junk priority=0.4\n"
        "https://www.example.com/b changefreq=weekly\n"
    )
    diagnostics, report = collect()
    generate([str(source)], tmp_path / "out", BASE, on_diagnostic=report)  # type: ignore[arg-type]
    entries = list(parse_file(tmp_path / "out" / "sitemap.xml"))
    assert [(e.loc, e.lastmod, e.priority) for e in entries] == [  # type: ignore[union-attr]
        (BASE + "a", dt.date(2024, 1, 2), 0.4),
        (BASE + "b", None, None),
    ]
    assert [(d.code, d.line, d.url) for d in diagnostics] == [("invalid-value", 1, BASE + "a")]
    # sitemap_gen's own form, as config.xml reads it: even a lone token is reported
    diagnostics.clear()
    source.write_text("https://www.example.com/d junk\n")
    generate([ListSource(str(source), sitemap_gen=True)], tmp_path / "out", BASE, on_diagnostic=report)  # type: ignore[arg-type]
    assert urls_of(tmp_path / "out") == [BASE + "d"]
    assert [(d.code, d.line) for d in diagnostics] == [("invalid-value", 1)]


def test_news_keywords_and_stock_tickers_are_written(tmp_path: Path) -> None:
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    news = News("The Paper", "en", now, "Title", "markets, tech", "NASDAQ:GOOG")
    with SitemapWriter(tmp_path, BASE) as writer:
        writer.add_entry(UrlEntry(BASE + "story", news=news))
    text = (tmp_path / "sitemap.xml").read_text()
    assert (
        "<news:keywords>markets, tech</news:keywords><news:stock_tickers>NASDAQ:GOOG</news:stock_tickers>"
        in text
    )
    (entry,) = parse_file(tmp_path / "sitemap.xml")
    assert isinstance(entry, UrlEntry) and entry.news == news


def test_a_news_list_by_tag_order(tmp_path: Path) -> None:
    today = dt.date.today().isoformat()
    source = tmp_path / "news.txt"
    source.write_text(
        f"https://www.example.com/n1\tdaily\t0.7\t{today}\t{today}\tsearch, robot\tNASDAQ:GOOG\tStory one\n"
        "https://www.example.com/n2\tweekly\n"
    )
    tags = (
        "loc",
        "changefreq",
        "priority",
        "lastmod",
        "publication_date",
        "keywords",
        "stock_tickers",
        "title",
    )
    diagnostics, report = collect()
    generate(
        [ListSource(str(source), tag_order=tags, publication=("Example News", "en"))],
        tmp_path / "out",
        BASE,
        on_diagnostic=report,  # type: ignore[arg-type]
    )
    entries = [e for e in parse_file(tmp_path / "out" / "sitemap.xml") if isinstance(e, UrlEntry)]
    assert entries[0].news is not None and entries[0].news.stock_tickers == "NASDAQ:GOOG"
    assert entries[0].changefreq == "daily" and entries[0].priority == 0.7
    assert entries[1].news is None and entries[1].changefreq == "weekly"
    assert diagnostics == []


# -- existing sitemaps ---------------------------------------------------------------------------------------

OLD_INDEX = """<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.google.com/schemas/sitemap/0.84">
  <sitemap><loc>https://www.example.com/maps/sitemap1.xml.gz</loc><lastmod>2005-06-01</lastmod></sitemap>
  <sitemap><loc>https://www.example.com/maps/sitemap2.xml</loc></sitemap>
  <sitemap><loc>https://www.example.com/maps/missing.xml</loc></sitemap>
</sitemapindex>
"""
CHILD_084 = """<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.google.com/schemas/sitemap/0.84">
  <url><loc>https://www.example.com/old-a</loc><lastmod>2005-01-01</lastmod><changefreq>monthly</changefreq>
    <priority>0.8</priority></url>
  <url><loc>https://www.example.com/old-b</loc></url>
</urlset>
"""
CHILD_09 = """<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url><loc>https://www.example.com/new-c</loc><lastmod>2024-02-03T04:05:06+00:00</lastmod>
    <image:image><image:loc>https://www.example.com/c.png</image:loc></image:image></url>
</urlset>
"""


def make_old_maps(root: Path) -> Path:
    (root / "maps").mkdir(parents=True)
    index = root / "sitemap_index.dat"  # any name: read by content
    index.write_text(OLD_INDEX)
    (root / "maps" / "sitemap1.xml.gz").write_bytes(gzip.compress(CHILD_084.encode()))
    (root / "sitemap2.xml").write_text(CHILD_09)  # found by its file name, next to the index
    return index


def test_an_084_index_with_084_and_09_children_is_a_source(tmp_path: Path) -> None:
    index = make_old_maps(tmp_path / "old")
    assert is_sitemap_file(str(index)) and not is_sitemap_file(str(tmp_path / "nothing.txt"))
    diagnostics, report = collect()
    generate([str(index)], tmp_path / "out", BASE, on_diagnostic=report)  # type: ignore[arg-type]
    entries = {e.loc: e for e in parse_file(tmp_path / "out" / "sitemap.xml") if isinstance(e, UrlEntry)}
    assert list(entries) == [BASE + "old-a", BASE + "old-b", BASE + "new-c"]
    a, c = entries[BASE + "old-a"], entries[BASE + "new-c"]
    assert (a.lastmod, a.changefreq, a.priority) == (dt.date(2005, 1, 1), "monthly", 0.8)
    assert c.lastmod == dt.datetime(2024, 2, 3, 4, 5, 6, tzinfo=dt.UTC)
    assert [i.loc for i in c.images] == [BASE + "c.png"]
    missing = [d for d in diagnostics if d.code == "read-error"]
    assert len(missing) == 1 and missing[0].url == BASE + "maps/missing.xml" and missing[0].line == 5


def test_local_child_never_leaves_the_index_folder(tmp_path: Path) -> None:
    index = make_old_maps(tmp_path / "old")
    (tmp_path / "secret.xml").write_text(CHILD_09)
    assert local_child(index, "https://www.example.com/maps/sitemap1.xml.gz") == (
        tmp_path / "old" / "maps" / "sitemap1.xml.gz"
    )
    assert local_child(index, "https://www.example.com/../secret.xml") is None
    assert local_child(index, "https://www.example.com/") is None


def test_a_sitemap_source_loop_is_reported_once(tmp_path: Path) -> None:
    index = tmp_path / "sitemap_index.xml"
    index.write_text(
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<sitemap><loc>https://www.example.com/sitemap_index.xml</loc></sitemap>"
        "<sitemap><loc>https://www.example.com/s.xml</loc></sitemap></sitemapindex>"
    )
    (tmp_path / "s.xml").write_text(CHILD_09)
    diagnostics, report = collect()
    generate([str(index)], tmp_path / "out", BASE, on_diagnostic=report)  # type: ignore[arg-type]
    assert urls_of(tmp_path / "out") == [BASE + "new-c"]
    assert [d.code for d in diagnostics] == ["fetch-loop"]


# -- own files, adopting files, folders ---------------------------------------------------------------------


def test_the_builds_own_files_are_never_listed(tmp_path: Path) -> None:
    site = tmp_path / "public"
    site.mkdir()
    (site / "index.html").write_text("<html><head><title>x</title></head></html>")
    source = tmp_path / "urls.txt"
    source.write_text(
        f"{BASE}sitemap.xml\n{BASE}sitemap-2.xml\n{BASE}sitemap.xsl\n{BASE}robots.txt\n"
        f"{BASE}sitemap-guide.html\n{BASE}page\n"
    )
    for run in (1, 2):  # the second run sees the first run's sitemap.xml in the folder
        generate(
            [str(source)],
            site,
            BASE,
            folder=FolderSource(site, include=("*",)),
            robots=site / "robots.txt",
            xsl="default",
        )
        assert urls_of(site) == [BASE + "sitemap-guide.html", BASE + "page", BASE], run


def test_sitemap_gen_naming_leaves_its_own_outputs_out(tmp_path: Path) -> None:
    source = tmp_path / "urls.txt"
    source.write_text(
        "".join(f"{BASE}p{i}\n" for i in range(5)) + f"{BASE}sitemap1.xml.gz\n{BASE}sitemap_index.xml\n"
    )
    out = tmp_path / "out"
    generate([str(source)], out, BASE, naming="sitemap_gen", gzip=True, max_urls=2)
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "sitemap.xml.gz",
        "sitemap1.xml.gz",
        "sitemap2.xml.gz",
        "sitemap_index.xml",
    ]
    assert (out / "sitemap_index.xml").read_bytes().startswith(b"<?xml")  # never gzipped
    assert urls_of(out, "sitemap_index.xml") == [
        BASE + n for n in ("sitemap.xml.gz", "sitemap1.xml.gz", "sitemap2.xml.gz")
    ]


def test_replace_existing_adopts_files_another_tool_wrote(tmp_path: Path) -> None:
    source = tmp_path / "urls.txt"
    source.write_text(f"{BASE}a\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "sitemap.xml").write_text("<urlset/>")  # sitemap_gen's
    with pytest.raises(PublishError, match="--replace-existing"):
        generate([str(source)], out, BASE)
    assert (out / "sitemap.xml").read_text() == "<urlset/>"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "sitemapkit",
            "generate",
            str(source),
            "--base-url",
            BASE,
            "--out",
            str(out),
            "--replace-existing",
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert urls_of(out) == [BASE + "a"]
    generate([str(source)], out, BASE)  # now it is sitemapkit's own


def test_folders_with_their_own_url_prefix_and_default_files(tmp_path: Path) -> None:
    docs, blog = tmp_path / "docs", tmp_path / "blog"
    for folder in (docs / "guide", blog):
        folder.mkdir(parents=True)
    (docs / "default.htm").write_text("<html><head><title>d</title></head></html>")
    (docs / "guide" / "start.html").write_text("<html><head><title>s</title></head></html>")
    (docs / "guide" / "index.html").write_text("<html><head><title>i</title></head></html>")
    (blog / "home.html").write_text("<html><head><title>b</title></head></html>")
    generate(
        [],
        tmp_path / "out",
        BASE,
        folder=[
            FolderSource(docs, url=BASE + "manual/", default_files=("default.htm", "start.html")),
            FolderSource(blog, url=BASE + "blog/", default_files=("home.html",)),
        ],
    )
    assert sorted(urls_of(tmp_path / "out")) == [
        BASE + "blog/",
        BASE + "manual/",
        BASE + "manual/guide/",
        BASE + "manual/guide/index.html",  # not a default file here
    ]


def test_a_log_source_keeps_assets_and_counts_only_200_when_asked(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_text(
        '1.2.3.4 - - [01/Mar/2024:10:00:00 +0000] "GET /logo.png HTTP/1.1" 200 5\n'
        '1.2.3.4 - - [01/Mar/2024:10:00:00 +0000] "GET /cached HTTP/1.1" 304 0\n'
    )
    generate([], tmp_path / "out", BASE, logs=LogSource((str(log),), statuses=frozenset({200}), assets=()))
    assert urls_of(tmp_path / "out") == [BASE + "logo.png"]
    assert os.path.exists(tmp_path / "out" / "sitemap.xml")


# -- merging ------------------------------------------------------------------------------------------------


def test_the_same_url_from_several_sources_is_one_entry_keeping_what_each_says(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "page.html").write_text(
        "<html><head><title>p</title></head><body><img src='/a.png'></body></html>"
    )
    os.utime(site / "page.html", (1_700_000_000, 1_700_000_000))  # 2023-11-14
    log = tmp_path / "access.log"
    log.write_text(
        '1.2.3.4 - - [01/Mar/2024:10:00:00 +0000] "GET /page.html HTTP/1.1" 200 5\n' * 3
        + '1.2.3.4 - - [01/Mar/2024:10:00:00 +0000] "GET /other HTTP/1.1" 200 5\n'
    )
    old = tmp_path / "old.xml"
    old.write_text(
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">'
        f"<url><loc>{BASE}page.html</loc><lastmod>2020-01-01</lastmod><changefreq>monthly</changefreq>"
        f"<image:image><image:loc>{BASE}b.png</image:loc></image:image></url></urlset>"
    )
    urls = tmp_path / "urls.txt"
    urls.write_text(f"{BASE}page.html\t2024-06-01\tdaily\t0.9\n{BASE}other\n")
    diagnostics, report = collect()
    result = generate(
        [str(urls), str(old)],
        tmp_path / "out",
        BASE,
        folder=FolderSource(site, images=True),
        logs=LogSource((str(log),), priority_from_hits=True),
        lastmod="mtime",
        on_diagnostic=report,  # type: ignore[arg-type]
    )
    entries = {e.loc: e for e in parse_file(tmp_path / "out" / "sitemap.xml") if isinstance(e, UrlEntry)}
    assert sorted(entries) == [BASE + "other", BASE + "page.html"]
    page = entries[BASE + "page.html"]
    assert page.lastmod == dt.date(2024, 6, 1)  # the newest: the list's (the file's mtime is 2023)
    assert page.changefreq == "monthly"  # the existing sitemap is read before the list
    assert page.priority == 1.0  # from the log's hits: no source before it gave one
    assert sorted(i.loc for i in page.images) == [BASE + "a.png", BASE + "b.png"]
    assert entries[BASE + "other"].priority == 0.5  # from the log; the list says nothing
    assert result.merged == 4 and result.duplicates == 0
    assert not [d for d in diagnostics if d.code == "duplicate-url"]


def test_one_source_streams_and_reports_duplicates_as_before(tmp_path: Path) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text(f"{BASE}a\n{BASE}a\n")
    result = generate([str(urls)], tmp_path / "out", BASE)
    assert (result.urls, result.duplicates, result.merged) == (1, 1, 0)


# -- parse and validate of a local index -------------------------------------------------------------------


def test_parse_and_validate_read_a_local_index_children_locally_first(
    tmp_path: Path, server: LocalServer
) -> None:
    old = tmp_path / "old"
    (old / "maps").mkdir(parents=True)
    (old / "maps" / "sitemap1.xml.gz").write_bytes(gzip.compress(CHILD_084.encode()))
    (old / "sitemap2.xml").write_text(CHILD_09)
    remote = server.route(
        "/remote.xml",
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<url><loc>https://www.example.com/remote</loc></url></urlset>",
    )
    index = old / "sitemap_index.xml"
    index.write_text(
        '<sitemapindex xmlns="http://www.google.com/schemas/sitemap/0.84">'
        f"<sitemap><loc>{server.url('/maps/sitemap1.xml.gz')}</loc></sitemap>"
        f"<sitemap><loc>{server.url('/sitemap2.xml')}</loc></sitemap>"
        f"<sitemap><loc>{remote}</loc></sitemap></sitemapindex>"
    )
    local_only = subprocess.run(
        [sys.executable, "-m", "sitemapkit", "parse", str(index)], capture_output=True, text=True, timeout=60
    )
    assert local_only.returncode == 0, local_only.stderr
    assert [json.loads(line)["loc"] for line in local_only.stdout.splitlines()] == [
        BASE + "old-a",
        BASE + "old-b",
        BASE + "new-c",
    ]
    assert "--fetch-missing" in local_only.stderr and server.requests == []  # nothing fetched
    fetched = subprocess.run(
        # (a local index names no origin: its child on a loopback server also needs --allow-private)
        [sys.executable, "-m", "sitemapkit", "parse", "--fetch-missing", "--allow-private", str(index)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert [json.loads(line)["loc"] for line in fetched.stdout.splitlines()][-1] == BASE + "remote"
    # only the one not found locally (after the robots.txt of its host, which no user named)
    assert [r.path for r in server.requests] == ["/robots.txt", "/remote.xml"]

    report = validate(index)
    assert [(f.source, f.entries) for f in report.files][1:] == [
        (str(old / "maps" / "sitemap1.xml.gz"), 2),
        (str(old / "sitemap2.xml"), 1),
        (remote, 0),  # not read (not fetched unless asked), counted as a file all the same
    ]
    assert [d.code for d in report if d.url == remote] == ["read-error"]
    assert [r.path for r in server.requests] == ["/robots.txt", "/remote.xml"]  # nothing more
    fetched_report = validate(index, fetch_missing=True, allow_private=True)
    assert len(fetched_report.files) == 4


def test_rss_and_atom_feeds_are_sources_by_content(tmp_path: Path) -> None:
    rss = tmp_path / "feed.dat"
    rss.write_text(
        '<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><item>'
        f"<link>{BASE}post-1</link><pubDate>Tue, 10 Jun 2025 04:00:00 GMT</pubDate></item></channel></rss>"
    )
    atom = tmp_path / "atom.txt.gz"
    atom.write_bytes(
        gzip.compress(
            b'<feed xmlns="http://www.w3.org/2005/Atom"><title>t</title><entry>'
            b'<link href="https://www.example.com/post-2"/><updated>2025-06-11T00:00:00Z</updated></entry></feed>'
        )
    )
    generate([str(rss), str(atom)], tmp_path / "out", BASE)
    entries = list(parse_file(tmp_path / "out" / "sitemap.xml"))
    assert [(e.loc, e.lastmod) for e in entries] == [
        (BASE + "post-1", dt.datetime(2025, 6, 10, 4, tzinfo=dt.UTC)),
        (BASE + "post-2", dt.datetime(2025, 6, 11, tzinfo=dt.UTC)),
    ]


def test_a_forced_log_format_is_kept_for_every_line(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    combined = '1.2.3.4 - - [01/Mar/2024:10:00:00 +0000] "GET /{} HTTP/1.1" 200 5 "-" "UA"\n'
    log.write_text(combined.format("a") + combined.format("b"))
    _, report = collect()
    forced = read_logs([log], BASE, report=report, log_format="vhost_combined")  # type: ignore[arg-type]
    assert forced.pages == () and forced.stats.bad == 2
    kept = read_logs([log], BASE, report=report, log_format="combined")  # type: ignore[arg-type]
    assert [p.url for p in kept.pages] == [BASE + "a", BASE + "b"]


def test_a_pipe_source_is_not_sniffed(tmp_path: Path) -> None:
    fifo = tmp_path / "urls.fifo"
    os.mkfifo(fifo)
    assert not is_sitemap_file(str(fifo))  # returns at once, reading nothing
    run = subprocess.run(
        [
            "bash",
            "-c",
            f'printf "{BASE}a\\n" > {fifo} & {sys.executable} -m sitemapkit generate {fifo} '
            f"--base-url {BASE} --out {tmp_path / 'out'}; wait",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert urls_of(tmp_path / "out") == [BASE + "a"]


def test_a_corrupt_gzip_source_or_log_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage-garbage")
    for args in ([str(bad)], ["--log", str(bad)]):
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "sitemapkit",
                "generate",
                *args,
                "--base-url",
                BASE,
                "--out",
                str(tmp_path / "o"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 1 and "cannot be read" in run.stderr and "Traceback" not in run.stderr
