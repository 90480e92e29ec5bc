"""Google's page signals in `crawl`, judged as the audit judges them: a canonical in a `Link:` header,
`X-Robots-Tag` per Google's grammar (`googlebot:` applies, `otherbot:` does not, `unavailable_after`),
soft 404s. For each page the crawl lists, the audit's check of the same URL (its `Prober` and `judge`)
finds it indexable, and for each page the crawl leaves out, the audit flags it."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

from sitemapkit.audit.check import Listing, judge, soft_404
from sitemapkit.core.page import link_header_canonical, x_robots_tag
from sitemapkit.core.urls import Scope
from sitemapkit.crawl.engine import CrawlOptions, make_fetcher
from sitemapkit.crawl.frontier import Row
from sitemapkit.crawl.options import NetworkOptions
from sitemapkit.crawl.policy import CrawlRules
from sitemapkit.crawl.probe import PageCheck, Prober
from sitemapkit.crawl.run import crawl
from sitemapkit.reader.parser import parse_file
from tests.support.localserver import LocalServer

HTML = "text/html; charset=utf-8"
FILLER = "<p>" + "Some article text that makes a page of ordinary size. " * 60 + "</p>"


def page(body: str = "", head: str = "", title: str = "t") -> str:
    return f"<!doctype html><html><head><title>{title}</title>{head}</head><body>{body}</body></html>"


def run(server: LocalServer, tmp_path: Path, **kwargs: Any) -> tuple[set[str], dict[str, Row]]:
    left: dict[str, Row] = {}
    crawl(
        server.url("/"),
        tmp_path / "out",
        sitemaps=False,
        explain=lambda r: left.__setitem__(r.url, r),
        **kwargs,
    )
    return {e.loc for e in parse_file(tmp_path / "out" / "sitemap.xml")}, left


def audit_checks(server: LocalServer, urls: list[str]) -> dict[str, PageCheck]:
    """Each URL checked by the audit's prober, as `sitemapkit audit` checks a listed URL."""
    network = NetworkOptions(retries=0)
    options = CrawlOptions(server.url("/"), CrawlRules(Scope(server.url("/"))), network=network)

    async def go() -> dict[str, PageCheck]:
        async with make_fetcher(options) as fetcher:
            prober = Prober(options, fetcher)
            return {u: await prober.check(u) for u in urls}

    return asyncio.run(go())


def signals_site(server: LocalServer) -> dict[str, str]:
    """path -> what the crawl must decide (`listed` or a reason)."""
    cases = {
        "/link-canonical": ("noindex-free", {"Link": '</canonical-target>; rel="canonical"'}, "canonical"),
        "/link-self": ("self", {"Link": '</link-self>; rel="canonical", </x.css>; rel="preload"'}, "listed"),
        "/googlebot-noindex": ("g", {"X-Robots-Tag": "googlebot: noindex"}, "noindex"),
        "/sitemapkit-noindex": ("s", {"X-Robots-Tag": "sitemapkit: noindex"}, "noindex"),
        "/otherbot-noindex": ("o", {"X-Robots-Tag": "otherbot: noindex, nofollow"}, "listed"),
        "/max-snippet-noindex": ("m", {"X-Robots-Tag": "max-snippet: 20, noindex"}, "noindex"),
        "/expired": (
            "e",
            {"X-Robots-Tag": "unavailable_after: Wednesday, 25-Jun-2010 15:00:00 GMT"},
            "noindex",
        ),
        "/not-yet": ("n", {"X-Robots-Tag": "unavailable_after: 2999-01-01T00:00:00Z"}, "listed"),
    }
    expected = {"/": "listed", "/canonical-target": "listed"}
    for path, (text, headers, outcome) in cases.items():
        server.route(path, page(f"{path} {text} {FILLER}"), content_type=HTML, headers=headers)
        expected[path] = outcome
    server.route("/canonical-target", page("the target " + FILLER), content_type=HTML)
    # the target is linked from nowhere: only the Link header names it
    server.route("/", page(" ".join(f'<a href="{p}">x</a>' for p in cases) + FILLER), content_type=HTML)
    return expected


def test_link_header_canonical_and_x_robots_tag(server: LocalServer, tmp_path: Path) -> None:
    expected = signals_site(server)
    listed, left = run(server, tmp_path)
    got = {u.replace(server.base, ""): "listed" for u in listed}
    got.update({u.replace(server.base, ""): r.reason or "" for u, r in left.items()})
    assert got == expected
    assert left[server.url("/link-canonical")].detail == f"canonical is {server.url('/canonical-target')}"
    assert left[server.url("/googlebot-noindex")].detail == "X-Robots-Tag: googlebot: noindex"


def test_the_audit_agrees_with_the_crawl(server: LocalServer, tmp_path: Path) -> None:
    expected = signals_site(server)
    listed, _ = run(server, tmp_path)
    urls = [server.url(p) for p in expected]
    checks = audit_checks(server, urls)
    now = dt.datetime.now(dt.UTC)
    for url in urls:
        row, findings = judge(Listing(url), checks[url], set(urls), now)
        flagged = {f.code for f in findings} & {
            "url-noindex",
            "url-canonicalized",
            "url-error",
            "url-redirect",
        }
        assert (url in listed) == (row.indexability == "indexable" and not flagged), (url, row.indexability)


def test_soft_404_is_not_listed(server: LocalServer, tmp_path: Path) -> None:
    links = " ".join(f'<a href="/p{i}">x</a>' for i in range(6)) + ' <a href="/gone">y</a>'
    server.route("/", page(links + FILLER), content_type=HTML)
    for i in range(6):
        server.route(f"/p{i}", page(f"article {i} {FILLER}"), content_type=HTML)
    server.route("/gone", page("<h1>Sorry</h1>", title="Page not found"), content_type=HTML)
    listed, left = run(server, tmp_path)
    assert server.url("/gone") not in listed and len(listed) == 7
    assert left[server.url("/gone")].reason == "soft-404"
    assert "Page not found" in (left[server.url("/gone")].detail or "")
    check = audit_checks(server, [server.url("/gone")])[server.url("/gone")]
    assert soft_404(check) == "Page not found"  # what the audit flags as url-soft-404


def test_x_robots_tag_grammar() -> None:
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    assert "noindex" in x_robots_tag(["googlebot: noindex"], "sitemapkit")
    assert "noindex" not in x_robots_tag(["otherbot: noindex"], "sitemapkit")
    assert "noindex" in x_robots_tag(["otherbot: nofollow", "noindex"], "sitemapkit")
    assert x_robots_tag(["GoogleBot: NONE"], "sitemapkit") >= {"noindex", "nofollow"}
    assert "noindex" in x_robots_tag(["max-image-preview: large, noindex"], "sitemapkit")
    assert "noindex" in x_robots_tag(["unavailable_after: 25 Jun 2010 15:00:00 PST"], "s", now)
    assert "noindex" not in x_robots_tag(["unavailable_after: 2030-01-01"], "s", now)
    assert x_robots_tag(["unavailable_after: Wednesday, 25-Jun-2010 15:00:00 GMT, nofollow"], "s", now) >= {
        "noindex",
        "nofollow",
    }
    assert (
        link_header_canonical(['<https://e.com/x>; rel="alternate"; hreflang="de"'], "https://e.com/") is None
    )
    assert link_header_canonical(["</a>; rel=canonical"], "https://e.com/b/") == "https://e.com/a"
