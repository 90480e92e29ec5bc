"""`harvest` keeps `<lastmod>` as the sitemap wrote it (the `lastmod` columns), beside the instant it means
(`lastmod_utc`), on the reader's fast path (runs of plain `<url>`s, read as columns) and on its per-entry
path (a `<url>` with extension data), for URL rows and for an index's `<sitemap><lastmod>`."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from tests.support.sitefarm import SiteFarm

pq = pytest.importorskip("pyarrow.parquet")

from sitemapkit.core.model import UrlEntry  # noqa: E402
from sitemapkit.harvest import HarvestOptions, harvest  # noqa: E402
from sitemapkit.reader.runs import UrlRun  # noqa: E402
from sitemapkit.reader.walk import Reader  # noqa: E402

OPTIONS = HarvestOptions(
    allow_private=True, retries=0, connect_timeout=2.0, read_timeout=5.0, site_timeout=20.0
)
UTC = dt.UTC

PLAIN = {
    # text as written -> the instant it means; each in the schema's form, so the fast path reads them
    "2022-08-26T02:28:20Z": dt.datetime(2022, 8, 26, 2, 28, 20, tzinfo=UTC),
    "2022-08-26T02:28:20+00:00": dt.datetime(2022, 8, 26, 2, 28, 20, tzinfo=UTC),
    "2024-05-01T10:00:00-05:00": dt.datetime(2024, 5, 1, 15, 0, 0, tzinfo=UTC),
    "2024-05-01": dt.datetime(2024, 5, 1, tzinfo=UTC),
    "2024-05-01T10:00:00.5Z": dt.datetime(2024, 5, 1, 10, 0, 0, 500000, tzinfo=UTC),
    "2024-05-01T10:00:00.000000+01:00": dt.datetime(2024, 5, 1, 9, 0, 0, tzinfo=UTC),
    "2024-05-01T10:00:00-00:00": dt.datetime(2024, 5, 1, 10, 0, 0, tzinfo=UTC),
}
ODD = {
    # as written in the XML -> (the text after unescaping and stripping, the instant or None)
    **{text: (text, instant) for text, instant in PLAIN.items()},
    "2025": ("2025", dt.datetime(2025, 1, 1, tzinfo=UTC)),
    "2025-03": ("2025-03", dt.datetime(2025, 3, 1, tzinfo=UTC)),
    "2024-05-01T10:00Z": ("2024-05-01T10:00Z", dt.datetime(2024, 5, 1, 10, 0, tzinfo=UTC)),
    "  2024-05-02\n ": ("2024-05-02", dt.datetime(2024, 5, 2, tzinfo=UTC)),
    "2024-05-01T10:00:00&#43;02:00": ("2024-05-01T10:00:00+02:00", dt.datetime(2024, 5, 1, 8, tzinfo=UTC)),
    "yesterday": ("yesterday", None),  # not a date: kept as written, no instant
    "2024-05-01T10:00:00": ("2024-05-01T10:00:00", None),  # no timezone: refused as a date
    "2024-02-30": ("2024-02-30", None),  # no such day
}
PER_BLOCK = 40  # URLs a date, in a row: long runs for the fast path
HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
    ' xmlns:xhtml="http://www.w3.org/1999/xhtml">\n'
)


def plain_sitemap(base: str) -> tuple[bytes, dict[str, str]]:
    """Plain `<url>`s, PER_BLOCK a date; returns the body and the text each URL's lastmod has."""
    parts, expect = [HEAD], {}
    for k, text in enumerate(PLAIN):
        for i in range(PER_BLOCK):
            loc = f"{base}plain/{k}/{i}"
            parts.append(f"<url><loc>{loc}</loc><lastmod>{text}</lastmod><priority>0.5</priority></url>\n")
            expect[loc] = text
    parts.append("</urlset>\n")
    return "".join(parts).encode(), expect


def odd_sitemap(base: str) -> tuple[bytes, dict[str, str]]:
    """Every `<url>` has an alternate link, which the fast path does not read: each is read alone."""
    parts, expect = [HEAD], {}
    for k, written in enumerate(ODD):
        for i in range(3):
            loc = f"{base}odd/{k}/{i}"
            parts.append(
                f"<url><loc>{loc}</loc><lastmod>{written}</lastmod>"
                f'<xhtml:link rel="alternate" hreflang="de" href="{loc}/de"/></url>\n'
            )
            expect[loc] = written
    parts.append("</urlset>\n")
    return "".join(parts).encode(), expect


INDEX_LASTMODS = ("2022-08-26T02:28:20Z", "2025-03", "  2024-05-01T10:00:00.5-05:00 ")


def serve(farm: SiteFarm) -> tuple[str, dict[str, str], dict[str, str]]:
    site = farm.add("127.0.0.1")
    site.route("/robots.txt", "User-agent: *\nAllow: /\nSitemap: /index.xml\n")
    plain, plain_expect = plain_sitemap(site.base)
    odd, odd_expect = odd_sitemap(site.base)
    site.route("/plain.xml", plain)
    site.route("/odd.xml", odd)
    site.route("/none.xml", HEAD + "<url><loc>" + site.base + "bare</loc></url>\n</urlset>\n")
    children = ("/plain.xml", "/odd.xml", "/none.xml")
    entries = "".join(
        f"<sitemap><loc>{site.url(path)}</loc><lastmod>{lastmod}</lastmod></sitemap>\n"
        for path, lastmod in zip(children, INDEX_LASTMODS, strict=True)
    )
    site.route(
        "/index.xml",
        '<?xml version="1.0"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        + entries
        + "</sitemapindex>\n",
    )
    return site.base, plain_expect, odd_expect


def check_dataset(out: Path, base: str, plain_expect: dict[str, str], odd_expect: dict[str, str]) -> None:
    """What a harvest of `serve`'s site must hold, read back with pyarrow."""
    rows = {r["loc"]: r for r in pq.read_table(out / "urls").to_pylist()}
    assert len(rows) == len(plain_expect) + len(odd_expect) + 1
    for loc, text in plain_expect.items():
        assert (rows[loc]["lastmod"], rows[loc]["lastmod_utc"]) == (text, PLAIN[text]), loc
    for loc, written in odd_expect.items():
        assert (rows[loc]["lastmod"], rows[loc]["lastmod_utc"]) == ODD[written], loc
    assert (rows[base + "bare"]["lastmod"], rows[base + "bare"]["lastmod_utc"]) == (None, None)
    maps = {r["url"]: r for r in pq.read_table(out / "sitemaps.parquet").to_pylist()}
    assert [maps[base + p]["lastmod"] for p in ("plain.xml", "odd.xml", "none.xml")] == [
        "2022-08-26T02:28:20Z",
        "2025-03",
        "2024-05-01T10:00:00.5-05:00",
    ]
    assert maps[base + "index.xml"]["lastmod"] is None


def test_lastmod_as_written_on_both_paths(tmp_path: Path) -> None:
    with SiteFarm() as farm:
        base, plain_expect, odd_expect = serve(farm)
        summary = harvest([base], tmp_path / "ds", options=OPTIONS)
    check_dataset(tmp_path / "ds", base, plain_expect, odd_expect)
    # the share counts the URLs whose lastmod is a date: not the three texts that are none
    urls = len(plain_expect) + len(odd_expect) + 1
    dated = len(plain_expect) + len(odd_expect) - 3 * 3
    assert summary["urls"] == urls
    assert summary["share_of_urls"]["lastmod"] == round(dated / urls, 4)


def test_the_fast_path_and_the_per_entry_path_both_carry_the_text(tmp_path: Path) -> None:
    """The sitemaps above do go down both paths (else the test above would not test both)."""
    plain, plain_expect = plain_sitemap("https://example.com/")
    odd, odd_expect = odd_sitemap("https://example.com/")
    for name, body in (("plain.xml", plain), ("odd.xml", odd)):
        (tmp_path / name).write_bytes(body)
    in_runs: dict[str, str | None] = {}
    alone: dict[str, str | None] = {}
    for name in ("plain.xml", "odd.xml"):
        for item in Reader(str(tmp_path / name)).runs():
            if isinstance(item, UrlRun):
                assert len(item.lastmod_texts) == len(item)
                in_runs.update(zip(item.locs, item.lastmod_texts, strict=True))
                # a run's entries carry the text as well
                assert [e.lastmod_text for e in item.entries()] == item.lastmod_texts
            else:
                assert isinstance(item, UrlEntry)
                alone[item.loc] = item.lastmod_text
    assert len(in_runs) > len(plain_expect) * 0.9  # nearly all of the plain ones are read as columns
    assert set(PLAIN) <= set(in_runs.values())
    assert not set(odd_expect) & set(in_runs)
    assert {loc: alone[loc] for loc in odd_expect} == {loc: ODD[w][0] for loc, w in odd_expect.items()}
    assert {**in_runs, **alone} == {**plain_expect, **{loc: ODD[w][0] for loc, w in odd_expect.items()}}


def test_a_row_not_read_from_a_document_gets_the_w3c_form() -> None:
    """Entries made in code (no text): the date in W3C form, as before."""
    from sitemapkit.harvest.rows import UrlBuffer, url_schema

    buffer = UrlBuffer()
    buffer.add("s", [UrlEntry("https://e.com/a", dt.date(2024, 5, 1)), UrlEntry("https://e.com/b")])
    table: Any = buffer.table(url_schema())
    assert table.column("lastmod").to_pylist() == ["2024-05-01", None]
