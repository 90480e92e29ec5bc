"""A sitemap the harvest could not read whole (a corrupt or cut gzip stream, a parse error that stopped the
reading) says so in `sitemaps.parquet` (`error_code`, `error`) and is not counted as read in the summary;
its complete entries are kept. A sitemap the harvest's own cap stopped is not an error."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.support.sitefarm import SiteFarm, urlset

pq = pytest.importorskip("pyarrow.parquet")

from sitemapkit.harvest import HarvestOptions, harvest  # noqa: E402

OPTIONS = HarvestOptions(
    allow_private=True, retries=0, connect_timeout=2.0, read_timeout=5.0, site_timeout=20.0
)


def test_sitemaps_read_in_part_are_errors(tmp_path: Path) -> None:
    with SiteFarm() as farm:
        s = farm.add("127.0.0.1")
        body = urlset([s.url(f"/p/{i}") for i in range(300)])
        packed = gzip.compress(body)
        entry_151 = body.index(b"<url>", body.index(b"/p/150"))
        s.route(
            "/robots.txt",
            "User-agent: *\nSitemap: /corrupt.xml.gz\nSitemap: /cut.xml.gz\nSitemap: /stopped.xml\n"
            "Sitemap: /ok.xml\n",
        )
        # the deflate stream damaged past its first blocks: what came before is read, then it stops
        damaged = bytearray(packed)
        damaged[len(packed) // 2 : len(packed) // 2 + 64] = bytes(64)
        s.route("/corrupt.xml.gz", bytes(damaged))
        s.route("/cut.xml.gz", packed[: len(packed) // 2])  # the gzip stream ends in its middle
        # a NUL byte (never allowed in XML) mid-document, and no entry after it to resume at
        s.route("/stopped.xml", body[:entry_151] + b"\x00 and no more entries\n" * 10)
        s.route("/ok.xml", urlset([s.url("/ok")]))
        summary = harvest([s.base], tmp_path / "ds", options=OPTIONS)
        base = s.base
    rows = {
        r["url"].removeprefix(base): r
        for r in pq.read_table(tmp_path / "ds" / "sitemaps.parquet").to_pylist()
    }
    for name, code in (
        ("corrupt.xml.gz", "compression-error"),
        ("cut.xml.gz", "compression-error"),
        ("stopped.xml", "parse-error"),
    ):
        row = rows[name]
        assert row["truncated"] is True, name
        assert row["error_code"] == code, (name, row)
        assert row["error"] and row["error"].startswith(f"[{code}] "), (name, row)
        assert row["status"] == 200
    assert rows["stopped.xml"]["urls"] == 151  # the complete entries before the damage are kept
    assert "0x0" in rows["stopped.xml"]["error"]
    assert (rows["ok.xml"]["error_code"], rows["ok.xml"]["error"], rows["ok.xml"]["truncated"]) == (
        None,
        None,
        False,
    )
    # counted apart: the summary and the site's row
    read_in_part = sum(1 for name in ("corrupt.xml.gz", "cut.xml.gz", "stopped.xml") if rows[name]["kind"])
    assert read_in_part >= 2  # (a stream damaged early may not even show its root: then it was not read)
    assert summary["sitemaps_read"] == 1
    assert summary["sitemaps_cut_short"] == read_in_part
    (site,) = pq.read_table(tmp_path / "ds" / "sites.parquet").to_pylist()
    assert (site["sitemaps_read"], site["sitemaps_cut_short"], site["sitemaps_found"]) == (1, read_in_part, 4)
    assert json.loads((tmp_path / "ds" / "summary.json").read_text())["sitemaps_read"] == 1


def test_a_sitemap_the_url_cap_stopped_is_no_error(tmp_path: Path) -> None:
    """The neighbour case: truncated by the harvest's own cap (the site row says so), not damaged."""
    with SiteFarm() as farm:
        s = farm.add("127.0.0.1")
        s.route("/robots.txt", "User-agent: *\nSitemap: /big.xml\n")
        s.route("/big.xml", urlset([s.url(f"/p/{i}") for i in range(3000)]))
        options = HarvestOptions(
            allow_private=True, retries=0, connect_timeout=2.0, read_timeout=5.0, max_urls_per_site=100
        )
        summary = harvest([s.base], tmp_path / "ds", options=options)
    (row,) = pq.read_table(tmp_path / "ds" / "sitemaps.parquet").to_pylist()
    assert (row["urls"], row["truncated"], row["error_code"], row["error"]) == (100, True, None, None)
    assert (summary["sitemaps_read"], summary["sitemaps_cut_short"]) == (1, 0)
