"""The one politeness layer, as a site owner sees it from the request log: every wing (crawl, audit,
harvest, parse) reads one loopback site that combines the seams (redirects into a disallowed folder from
pages and from an index child, a redirect chain, two redirects to one page, 429 and 503 with Retry-After,
a Crawl-delay, slow pages). Timing is read from the server's own log, with slack for a loaded machine."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from sitemapkit.reader.fetch import Fetcher, FetchOptions, FetchPolicy, FetchRefusedError
from sitemapkit.reader.polite import Pacer, Politeness, RobotsRules, agent_token
from tests.support.seamsite import SeamSite

DELAY = 0.3
SLACK = 0.1
"""A busy server notes a request late, which can make one gap look shorter by this much."""


@pytest.fixture
def site() -> Iterator[SeamSite]:
    try:
        s = SeamSite("127.0.0.3", DELAY).start()
    except OSError:  # pragma: no cover - no 127.0.0.3 on this machine
        pytest.skip("127.0.0.3 is not available")
    yield s
    s.stop()


def polite_everywhere(site: SeamSite, retried: tuple[str, ...] = ()) -> None:
    """What every wing must show in the site's log."""
    paths = site.paths()
    assert [p for p in paths if p.startswith("/private/")] == []
    assert paths.count("/robots.txt") == 1
    twice = {p: n for p, n in Counter(paths).items() if n > 1}
    assert twice == dict.fromkeys(retried, 2)
    gaps = site.gaps()
    assert min(gaps) >= DELAY - SLACK, gaps
    assert sum(gaps) >= len(gaps) * DELAY - SLACK
    for path in retried:
        assert site.retry_gap(path) >= 1.0 - SLACK
    assert site.most_in_flight() <= 2


def test_crawl_is_polite_on_every_hop(site: SeamSite, tmp_path: Path) -> None:
    from sitemapkit.crawl.run import crawl

    log = tmp_path / "crawl.jsonl"
    crawl(
        site.url("/"),
        tmp_path / "out",
        concurrency=2,
        allow_private=True,
        crawl_log=log,
        crawl_db=tmp_path / "crawl.db",
    )
    polite_everywhere(site, retried=("/busy429", "/busy503"))
    text = (tmp_path / "out" / "sitemap.xml").read_text()
    listed = sorted(loc.split("</loc>")[0].removeprefix(site.base) for loc in text.split("<loc>")[1:])
    assert listed == sorted(SeamSite.INDEXABLE)
    records = {r["url"].removeprefix(site.base): r for r in map(json.loads, log.read_text().splitlines())}
    assert records["/old/x"]["reason"] == "redirect-blocked"
    assert records["/t307"]["reason"] == "redirect-blocked"
    assert records["/private/y"]["reason"] == "robots"
    # the second redirect to /p/common did not fetch it again
    assert {records["/r1"]["reason"], records["/r2"]["reason"]} == {"redirect"}
    # the index child that 301s into /private/ was not followed either
    assert "/private/sitemap.xml" not in site.paths()


def test_audit_is_polite_on_every_hop(site: SeamSite) -> None:
    from sitemapkit.audit.run import audit

    report = audit(site.url("/"), concurrency=2, allow_private=True)
    polite_everywhere(site, retried=("/busy429", "/busy503"))
    rows = {r.url.removeprefix(site.base): r for r in report.rows}
    assert sorted(rows) == sorted([*SeamSite.PAGES, "/b"])  # every listed URL checked
    assert rows["/busy429"].status == 200 and rows["/busy503"].status == 200
    codes = {(f.url or "").removeprefix(site.base): set() for f in report.findings}
    for f in report.findings:
        codes[(f.url or "").removeprefix(site.base)].add(f.code)
    assert "url-blocked" in codes["/old/x"] and "url-blocked" in codes["/t307"]
    assert "url-redirect" in codes["/r1"] and "url-redirect" in codes["/chain1"]


def test_harvest_is_polite_and_records_the_blocked_sitemap(site: SeamSite, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    from sitemapkit.harvest.options import HarvestOptions
    from sitemapkit.harvest.run import harvest

    harvest([site.base], tmp_path / "ds", options=HarvestOptions(allow_private=True, per_host=2))
    polite_everywhere(site)
    sitemaps = {
        r["url"].removeprefix(site.base): r
        for r in pq.read_table(tmp_path / "ds" / "sitemaps.parquet").to_pylist()
    }
    assert sitemaps["/sm/blocked.xml"]["error_code"] == "redirect-blocked"
    assert sitemaps["/sm/pages.xml"]["error_code"] is None
    assert sitemaps["/sm/moved.xml"]["final_url"] == site.url("/sm/pages2.xml")
    urls = pq.read_table(tmp_path / "ds" / "urls").column("loc").to_pylist()
    assert sorted(u.removeprefix(site.base) for u in urls) == sorted([*SeamSite.PAGES, "/b"])


def test_parse_reads_a_site_politely(site: SeamSite) -> None:
    from sitemapkit.reader.walk import read

    reader = read(site.url("/"), allow_private=True)
    locs = sorted(e.loc.removeprefix(site.base) for e in reader)
    assert locs == sorted([*SeamSite.PAGES, "/b"])
    # parse consults robots.txt only for hosts the site chose; the site the user named is read as asked,
    # still paced and never twice
    paths = site.paths()
    assert paths.count("/robots.txt") == 1 and len(paths) == len(set(paths))
    assert "/private/sitemap.xml" in paths  # the index child's redirect on the named origin: asked for
    gaps = site.gaps()
    assert min(gaps) >= DELAY - SLACK, gaps  # paced by the site's Crawl-delay all the same
    assert site.most_in_flight() <= 2


def codes_of(reader: object) -> set[str]:
    return {d.code for d in reader.diagnostics}  # type: ignore[attr-defined]


# -- the layer's parts, with an injected clock -----------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_pacer_spaces_starts_and_counts_a_delay_learnt_late() -> None:
    clock = Clock()
    pacer = Pacer(0.0, clock, clock.sleep)

    async def run() -> None:
        await pacer.wait("http://h")  # robots.txt: no delay known yet
        pacer.set_delay("http://h", 2.0)  # robots.txt said Crawl-delay: 2
        await pacer.wait("http://h")
        clock.now += 0.5
        await pacer.wait("http://h")
        pacer.hold("http://h", 10.0)  # a Retry-After
        await pacer.wait("http://h")

    asyncio.run(run())
    assert clock.slept == [2.0, 1.5, 10.0]


def test_robots_rules_follow_rfc_9309() -> None:
    assert agent_token("SitemapKit/0.1 (+https://x)") == "sitemapkit"
    body = "User-agent: sitemapkit\nDisallow: /no\n\nUser-agent: *\nDisallow: /\n"
    rules = RobotsRules(200, body, "sitemapkit")
    assert rules.allowed("https://e.com/yes") and not rules.allowed("https://e.com/no")
    assert RobotsRules(404, "", "sitemapkit").allowed("https://e.com/x")  # 4xx: everything allowed
    for status in (500, 503, 429, 599):
        assert not RobotsRules(status, "", "sitemapkit").allowed("https://e.com/x")


def test_a_robots_txt_is_fetched_once_and_paced_like_any_request(site: SeamSite) -> None:
    clock_politeness = Politeness(per_host=1)

    async def run() -> list[str]:
        options = FetchOptions(policy=FetchPolicy(allow_private=True), politeness=clock_politeness)
        out = []
        async with Fetcher(options) as a, Fetcher(options) as b:  # two fetchers of one run
            for fetcher, path in ((a, "/"), (b, "/a"), (a, "/private/x")):
                try:
                    async with fetcher.stream(site.url(path)) as response:
                        out.append(f"{path} {response.status}")
                except FetchRefusedError as exc:
                    out.append(f"{path} {exc.code}")
        return out

    assert asyncio.run(run()) == ["/ 200", "/a 200", "/private/x robots-disallowed"]
    assert site.paths() == ["/robots.txt", "/", "/a"]
    assert min(site.gaps()) >= DELAY - SLACK
