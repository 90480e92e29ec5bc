"""One fixture for every code the validator reports, each with the line it must point at.

Each case is a real file (plain or gzip) validated as published at https://example.com/sitemap.xml,
with "now" fixed; remote cases use the local HTTP server.
"""

from __future__ import annotations

import datetime as dt
import gzip
from pathlib import Path

import pytest

from sitemapkit.core.constants import MAX_BYTES, MAX_URLS
from sitemapkit.core.diagnostics import CODES, Severity
from sitemapkit.reader.fetch import FetchOptions
from sitemapkit.validator.report import ValidationReport
from sitemapkit.validator.run import validate
from tests.support.localserver import LocalServer

NOW = dt.datetime(2024, 6, 15, 12, 0, tzinfo=dt.UTC)
PUBLIC = "https://example.com/sitemap.xml"
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
EXT = (
    'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1" '
    'xmlns:video="http://www.google.com/schemas/sitemap-video/1.1" '
    'xmlns:news="http://www.google.com/schemas/sitemap-news/0.9" '
    'xmlns:xhtml="http://www.w3.org/1999/xhtml"'
)
HEAD = f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}" {EXT}>\n'
TAIL = "</urlset>\n"
NO_RETRY = FetchOptions(retries=0, connect_timeout=2, read_timeout=2)


def urlset(*lines: str) -> str:
    """A urlset whose body lines start at line 3."""
    return HEAD + "".join(line + "\n" for line in lines) + TAIL


def index(*locs: str) -> str:
    """A sitemap index whose entries start at line 3."""
    body = "".join(f"<sitemap><loc>{loc}</loc></sitemap>\n" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="{NS}">\n{body}</sitemapindex>\n'


def run(path: Path, data: str | bytes, **kw: object) -> ValidationReport:
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    kw.setdefault("url", PUBLIC)
    return validate(path, now=NOW, fetch_options=NO_RETRY, **kw)  # type: ignore[arg-type]


def where(report: ValidationReport, code: str) -> list[int | None]:
    return [d.line for d in report if d.code == code]


def only(report: ValidationReport, code: str) -> list[int | None]:
    """The lines of `code`, after checking that no other code was reported."""
    assert {d.code for d in report} == {code}, [str(d) for d in report]
    return where(report, code)


VIDEO = (
    "<video:video><video:thumbnail_loc>https://example.com/t.jpg</video:thumbnail_loc>"
    "<video:title>T</video:title><video:description>D</video:description>"
    "<video:content_loc>https://example.com/v.mp4</video:content_loc></video:video>"
)


def news(date: str) -> str:
    return (
        "<news:news><news:publication><news:name>N</news:name><news:language>en</news:language>"
        f"</news:publication><news:publication_date>{date}</news:publication_date>"
        "<news:title>T</news:title></news:news>"
    )


# (code, document, expected lines). Every document is otherwise clean.
CASES: list[tuple[str, str | bytes, list[int | None]]] = [
    (
        "parse-error",
        urlset("<url><loc>https://example.com/a</loc></url>", "<url><loc>https://example.com/b</lo></url>"),
        [4],
    ),
    ("leading-whitespace", "\n\n" + urlset("<url><loc>https://example.com/a</loc></url>"), [1]),
    ("unsupported-format", "<!DOCTYPE html>\n<html><body>Not found</body></html>\n", [1]),
    (
        "incorrect-namespace",
        '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="https://www.sitemaps.org/schemas/sitemap/0.9">'
        "\n<url><loc>https://example.com/a</loc></url>\n</urlset>\n",
        [2],  # the root element's line
    ),
    (
        "encoding-error",
        urlset("<url><loc>https://example.com/a</loc></url>").encode()[:-10]
        + b"<!-- caf\xe9 -->\n</urlset>\n",
        [4],
    ),
    (
        "forbidden-doctype",
        '<?xml version="1.0"?>\n<!DOCTYPE urlset [<!ENTITY x "y">]>\n<urlset xmlns="' + NS + '"/>\n',
        [2],
    ),
    ("empty-sitemap", urlset(), [None]),
    ("missing-tag", urlset("<url><lastmod>2024-01-01</lastmod></url>"), [3]),
    (
        "too-many-tags",
        urlset("<url>", "<loc>https://example.com/a</loc>", "<loc>https://example.com/b</loc>", "</url>"),
        [5],
    ),
    ("unknown-tag", urlset("<url><loc>https://example.com/a</loc>", "<priorty>0.5</priorty></url>"), [4]),
    (
        "invalid-value",
        urlset("<url><loc>https://example.com/a</loc>", "<changefreq>sometimes</changefreq></url>"),
        [4],
    ),
    ("invalid-url", urlset("<url><loc>https://example.com/a</loc></url>", "<url><loc>/b</loc></url>"), [4]),
    ("url-too-long", urlset(f"<url><loc>https://example.com/{'a' * 2030}</loc></url>"), [3]),
    (
        "url-not-allowed",
        urlset("<url><loc>https://example.com/a</loc></url>", "<url><loc>http://example.com/b</loc></url>"),
        [4],
    ),
    (
        "duplicate-url",
        urlset("<url><loc>https://example.com/a</loc></url>", "<url><loc>https://EXAMPLE.com/a</loc></url>"),
        [4],
    ),
    (
        "invalid-date",
        urlset("<url><loc>https://example.com/a</loc>", "<lastmod>2024-8-1</lastmod></url>"),
        [4],
    ),
    (
        "future-date",
        urlset(
            "<url><loc>https://example.com/a</loc><lastmod>2024-06-15T12:30:00Z</lastmod></url>",
            "<url><loc>https://example.com/b</loc><lastmod>2024-06-15T14:00:00Z</lastmod></url>",
        ),
        [4],
    ),
    (
        "lastmod-uniform",
        urlset(
            *(
                f"<url><loc>https://example.com/{i}</loc><lastmod>2024-06-01T10:00:00+00:00</lastmod></url>"
                for i in range(100)
            )
        ),
        [3],
    ),
    (
        "too-many-images",
        urlset(
            "<url><loc>https://example.com/a</loc>",
            *(
                f"<image:image><image:loc>https://example.com/{i}.jpg</image:loc></image:image>"
                for i in range(1001)
            ),
            "</url>",
        ),
        [1004],
    ),
    (
        "deprecated-tag",
        urlset(
            "<url><loc>https://example.com/a</loc><image:image>",
            "<image:loc>https://example.com/a.jpg</image:loc>",
            "<image:caption>C</image:caption>",
            "</image:image></url>",
        ),
        [5],
    ),
    (
        "video-missing-tag",
        urlset(
            "<url><loc>https://example.com/a</loc>",
            VIDEO.replace("<video:title>T</video:title>", ""),
            "</url>",
        ),
        [4],
    ),
    (
        "video-location-is-page",
        urlset("<url><loc>https://example.com/v.mp4</loc>", VIDEO, "</url>"),
        [4],
    ),
    (
        "news-too-many",
        urlset(*(f"<url><loc>https://example.com/{i}</loc>{news('2024-06-15')}</url>" for i in range(1001))),
        [1003],
    ),
    ("news-too-old", urlset("<url><loc>https://example.com/a</loc>", news("2024-06-10"), "</url>"), [3]),
    (
        "hreflang-invalid",
        urlset(
            "<url><loc>https://example.com/a</loc>",
            '<xhtml:link rel="alternate" hreflang="en-UK" href="https://example.com/a"/></url>',
        ),
        [4],
    ),
    (
        "hreflang-missing-self",
        urlset(
            "<url><loc>https://example.com/a</loc>",
            '<xhtml:link rel="alternate" hreflang="de" href="https://example.com/b"/>',
            '<xhtml:link rel="alternate" hreflang="en" href="https://example.com/a"/></url>',
            "<url><loc>https://example.com/b</loc>",
            '<xhtml:link rel="alternate" hreflang="en" href="https://example.com/a"/></url>',
        ),
        [6],
    ),
    (
        "hreflang-not-reciprocal",
        urlset(
            "<url><loc>https://example.com/a</loc>",
            '<xhtml:link rel="alternate" hreflang="en" href="https://example.com/a"/>',
            '<xhtml:link rel="alternate" hreflang="de" href="https://example.com/b"/></url>',
            "<url><loc>https://example.com/b</loc></url>",
            "<url><loc>https://example.com/c</loc>",
            '<xhtml:link rel="alternate" hreflang="en" href="https://example.com/c"/>',
            '<xhtml:link rel="alternate" hreflang="fr" href="https://example.com/elsewhere"/></url>',
        ),
        [3],
    ),
    (
        "tag-order",
        urlset("<url><lastmod>2024-01-01</lastmod>", "<loc>https://example.com/a</loc></url>"),
        [4],
    ),
]


@pytest.mark.parametrize(("code", "document", "lines"), CASES, ids=[c[0] for c in CASES])
def test_each_code_points_at_its_line(
    tmp_path: Path, code: str, document: str | bytes, lines: list[int | None]
) -> None:
    report = run(tmp_path / "sitemap.xml", document)
    assert only(report, code) == lines
    d = next(d for d in report if d.code == code)
    assert d.severity is CODES[code].severity
    assert d.source == str(tmp_path / "sitemap.xml")
    assert d.message.endswith((".", ")")), d.message
    assert report.ok is (CODES[code].severity is Severity.WARNING)


def test_compression_error(tmp_path: Path) -> None:
    good = gzip.compress(
        urlset(*(f"<url><loc>https://example.com/{i}</loc></url>" for i in range(50))).encode()
    )
    report = run(tmp_path / "sitemap.xml.gz", good[: len(good) // 2] + b"\x00garbage" * 4)
    assert "compression-error" in {d.code for d in report}
    assert not report.ok


def test_too_many_urls_points_at_the_first_url_over(tmp_path: Path) -> None:
    lines = [f"<url><loc>https://example.com/{i}</loc></url>" for i in range(MAX_URLS + 1)]
    report = run(tmp_path / "sitemap.xml.gz", gzip.compress(urlset(*lines).encode(), 1))
    assert only(report, "too-many-urls") == [3 + MAX_URLS]


def test_too_many_sitemaps(tmp_path: Path) -> None:
    report = run(
        tmp_path / "sitemap.xml",
        index(*(f"https://example.com/s{i}.xml" for i in range(MAX_URLS + 1))),
        recursive=False,
    )
    assert only(report, "too-many-sitemaps") == [3 + MAX_URLS]


def test_file_too_large_counts_uncompressed_bytes(tmp_path: Path) -> None:
    """A gzip file of a few hundred kilobytes that inflates past 52,428,800 bytes."""
    pad = " " * 2000
    n = MAX_BYTES // 2048 + 10
    body = "".join(f"<url><loc>https://example.com/{i}</loc>{pad}</url>\n" for i in range(n))
    data = gzip.compress(urlset(body.rstrip("\n")).encode(), 9)
    assert len(data) < MAX_BYTES // 20
    report = run(tmp_path / "sitemap.xml.gz", data)
    assert only(report, "file-too-large") == [None]
    assert report.files[0].uncompressed_bytes > MAX_BYTES


def test_read_error_for_a_child_missing_next_to_a_local_index(tmp_path: Path) -> None:
    (tmp_path / "a.xml").write_text(urlset("<url><loc>https://example.com/a</loc></url>"))
    report = run(tmp_path / "sitemap.xml", index("https://example.com/a.xml", "https://example.com/b.xml"))
    assert only(report, "read-error") == [4]
    assert report.diagnostics[0].url == "https://example.com/b.xml"


def test_http_error_and_nested_index_point_at_the_index_line(server: LocalServer) -> None:
    server.route("/a.xml", urlset(f"<url><loc>{server.url('/a')}</loc></url>"))
    server.route("/nested.xml", index(server.url("/a.xml")))
    root = server.route(
        "/sitemap.xml", index(server.url("/a.xml"), server.url("/gone.xml"), server.url("/nested.xml"))
    )
    report = validate(root, now=NOW, fetch_options=NO_RETRY)
    # the nested index lists a.xml again: a duplicate listing (the index it is in is not followed)
    assert {(d.code, d.source, d.line) for d in report} == {
        ("http-error", root, 4),
        ("nested-index", root, 5),
        ("duplicate-url", server.url("/nested.xml"), 3),
    }


def test_download_too_large(server: LocalServer) -> None:
    big = urlset(*(f"<url><loc>{server.url(f'/{i}')}</loc></url>" for i in range(2000)))
    server.route("/big.xml", big)
    root = server.route("/sitemap.xml", index(server.url("/big.xml")))
    options = FetchOptions(retries=0, max_download=10_000)
    report = validate(root, now=NOW, fetch_options=options)
    assert [(d.code, d.source, d.line) for d in report] == [("download-too-large", root, 3)]


def test_no_sitemap(server: LocalServer) -> None:
    report = validate(server.url("/"), now=NOW, fetch_options=NO_RETRY)
    assert only(report, "no-sitemap") == [None]


def test_every_validator_code_has_a_case() -> None:
    covered = {c[0] for c in CASES} | {
        "compression-error",
        "too-many-urls",
        "too-many-sitemaps",
        "file-too-large",
        "read-error",
        "http-error",
        "nested-index",
        "download-too-large",
        "no-sitemap",
        "fetch-loop",  # test_validate.py: an index listing itself, a child redirecting to its index
        "private-address",  # test_security.py: children and redirects to another loopback port
        "cross-host",
        # test_polite_edges.py: a child robots.txt disallows, one redirecting there, one to mailto:
        "robots-disallowed",
        "redirect-blocked",
        "redirect-invalid",
    }
    # codes of the reader's walk and of the generator's inputs, which validation never emits
    not_from_validate = {
        "too-deep",
        "walk-limit",  # validate emits it only past 50,000 children (too slow here); the reader's is tested
        "naive-datetime",
        "bad-line",
        "page-unreadable",
        "unknown-log-format",
        "lastmod-fallback",
        "git-shallow",
        "hreflang-not-listed",  # the generator's hreflang group completion
        "hreflang-conflict",
        "robots-disallows-sitemap",  # sitemapkit robots
        "robots-disallows-root",
        "redirect-seen",  # crawl and audit: a redirect to a page fetched already (test_politeness.py)
    }
    assert covered == set(CODES) - not_from_validate
