"""The politeness layer's neighbour cases, found by an adversarial review: a robots.txt that redirects to an
internal address, hosts spelled several ways, a Crawl-delay of a day, `/a` and `/a#x`, a robots.txt that
answers 503 to the audit. Real loopback servers, checked from their own request logs."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

import pytest

from sitemapkit.reader.polite import MAX_CRAWL_DELAY, Politeness, origin_of
from tests.support.localserver import LocalServer
from tests.support.sitemaps import urlset

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
HTML = "text/html"


def page(title: str, body: str = "") -> str:
    return f"<!doctype html><html><head><title>{title}</title></head><body><p>{title}</p>{body}</body></html>"


def paths(server: LocalServer) -> list[str]:
    return [r.path for r in server.requests]


def run_crawl(server: LocalServer, tmp_path: Path) -> dict[str, dict[str, object]]:
    from sitemapkit.crawl.run import crawl

    log = tmp_path / "crawl.jsonl"
    crawl(server.url("/"), tmp_path / "out", crawl_log=log, crawl_db=tmp_path / "c.db", publish_partial=True)
    return {r["url"]: r for r in map(json.loads, log.read_text().splitlines())}


@pytest.mark.parametrize("wing", ["crawl", "audit"])
def test_a_robots_txt_that_redirects_to_an_internal_address_is_unavailable_not_fatal(
    wing: str, server: LocalServer, tmp_path: Path
) -> None:
    """The old layer raised from the robots.txt fetch: the crawl and the audit ended with an error, and the
    refusal was not kept, so each page asked robots.txt again."""
    server.redirect("/robots.txt", "http://127.0.0.2:9/robots.txt")
    server.route("/", page("home", '<a href="/a">a</a><a href="/b">b</a>'), content_type=HTML)
    server.route("/sitemap.xml", urlset(server.url("/a"), server.url("/b")))
    if wing == "crawl":
        from sitemapkit.core.errors import PublishError

        with pytest.raises(PublishError, match=r"robots\.txt could not be fetched, so nothing was"):
            run_crawl(server, tmp_path)
    else:
        from sitemapkit.audit.run import audit

        report = audit(server.url("/"))
        assert any("127.0.0.2:9" in f.message for f in report.findings), report.findings
    # robots.txt could not be had: unavailable, so nothing else is fetched (RFC 9309), and it is asked once
    assert paths(server) == ["/robots.txt"]


def test_one_host_spelled_several_ways_is_one_origin() -> None:
    base = origin_of("http://example.com/")
    for spelling in (
        "http://Example.COM/x",
        "http://user:pw@example.com/x",
        "http://example.com:80/x",
        "http://example.com:080/x",
        "http://example.com./x",
    ):
        assert origin_of(spelling) == base, spelling
    assert origin_of("https://example.com:443/") == "https://example.com"
    assert origin_of("http://example.com:8080/") == "http://example.com:8080"
    assert origin_of("http://[::1]:8080/") == "http://[::1]:8080"


def test_redirects_through_user_info_do_not_escape_the_crawl_delay(server: LocalServer) -> None:
    """Listed pages redirect to the same host spelled with user info: one robots.txt, every gap paced."""
    from sitemapkit.audit.run import audit

    host = server.base.removeprefix("http://")
    server.route("/robots.txt", "User-agent: *\nCrawl-delay: 0.4\n", content_type="text/plain")
    listed = []
    for n in range(3):
        listed.append(server.redirect(f"/u{n}", f"http://u{n}@{host}/t{n}", status=302))
        server.route(f"/t{n}", page(f"t{n}"), content_type=HTML)
    server.route("/sitemap.xml", urlset(*listed))
    audit(server.url("/sitemap.xml"), allow_private=True)
    assert paths(server).count("/robots.txt") == 1
    times = [r.at for r in server.requests]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= 0.4 - 0.1, gaps


def test_a_crawl_delay_of_a_day_is_capped() -> None:
    polite = Politeness()

    async def fetch(url: str) -> tuple[int, bytes, str | None]:
        return 200, b"User-agent: *\nCrawl-delay: 86400\n", None

    asyncio.run(polite.rules("http://example.com", fetch))
    assert polite.delay("http://example.com/x") == MAX_CRAWL_DELAY == 30.0
    uncapped = Politeness(max_crawl_delay=None)
    asyncio.run(uncapped.rules("http://example.com", fetch))
    assert uncapped.delay("http://example.com/x") == 86400


@pytest.mark.parametrize("wing", ["crawl", "audit"])
def test_a_url_and_its_fragment_are_fetched_once(wing: str, server: LocalServer, tmp_path: Path) -> None:
    server.route("/", page("home"), content_type=HTML)
    server.route("/p0", page("p0"), content_type=HTML)
    server.route("/sitemap.xml", urlset(server.url("/p0"), server.url("/p0#x"), server.url("/p0#y")))
    if wing == "crawl":
        run_crawl(server, tmp_path)
    else:
        from sitemapkit.audit.run import audit

        audit(server.url("/"))
    assert paths(server).count("/p0") == 1


def test_the_audit_says_robots_txt_answered_503(server: LocalServer) -> None:
    """The old audit said 'no sitemap: add a Sitemap: line' for a site whose robots.txt answers 503."""
    from sitemapkit.audit.run import audit

    server.route("/robots.txt", "down", status=503, content_type="text/plain")
    server.route("/sitemap.xml", urlset(server.url("/a")))
    report = audit(server.url("/"), retries=0)
    codes = [f.code for f in report.findings]
    assert "no-sitemap" not in codes
    assert any("503" in f.message for f in report.findings), [f.message for f in report.findings]
    assert "/sitemap.xml" not in paths(server)


def test_validate_reports_each_refusal_with_its_code(server: LocalServer) -> None:
    """A child on a host whose robots.txt disallows it, a child that redirects there, one that redirects to
    `mailto:`: each is reported with its code at the index line, and none is fetched."""
    from sitemapkit.validator.run import validate

    other = LocalServer().start()
    try:
        other.route("/robots.txt", "User-agent: *\nDisallow: /private/\n", content_type="text/plain")
        server.redirect("/moved.xml", other.url("/private/b.xml"))
        server.redirect("/mail.xml", "mailto:someone@example.com")
        children = (other.url("/private/a.xml"), server.url("/moved.xml"), server.url("/mail.xml"))
        body = "".join(f"<sitemap><loc>{c}</loc></sitemap>" for c in children)
        server.route("/index.xml", f'<?xml version="1.0"?>\n<sitemapindex xmlns="{NS}">{body}</sitemapindex>')
        report = validate(server.url("/index.xml"), allow_private=True)
        codes = {d.code for d in report}
        assert {"robots-disallowed", "redirect-blocked", "redirect-invalid"} <= codes
        assert paths(other) == ["/robots.txt"]
    finally:
        other.stop()


def test_the_audit_words_a_redirect_that_goes_nowhere_fetched(server: LocalServer) -> None:
    """A listed page redirecting to `mailto:` or another site was told 'the redirects never end'."""
    from sitemapkit.audit.run import audit

    listed = [
        server.redirect("/mail", "mailto:someone@example.com"),
        server.redirect("/away", "https://elsewhere.example/x"),
        server.redirect("/loop", server.url("/loop")),
    ]
    server.route("/sitemap.xml", urlset(*listed))
    report = audit(server.url("/sitemap.xml"))
    said = {f.url.removeprefix(server.base): f.message for f in report.findings if f.code == "url-redirect"}
    assert "never end" in said["/loop"]
    assert "never end" not in said["/mail"] and "mailto:" in said["/mail"]
    assert "never end" not in said["/away"] and "elsewhere.example" in said["/away"]


def test_parse_jsonl_escapes_what_a_terminal_would_act_on(tmp_path: Path) -> None:
    """C1 controls (CSI), bidi overrides, line separators and a BOM in a <loc> were written raw to stdout."""
    import subprocess
    import sys

    odd = "https://example.com/a\u202eb\u009b2J\u2028\ufeffc"
    (tmp_path / "s.xml").write_text(urlset(odd.replace("&", "&amp;")), "utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "sitemapkit", "parse", str(tmp_path / "s.xml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.stdout.isascii() or not any(c in run.stdout for c in "\u202e\u009b\u2028\ufeff"), run.stdout
    assert run.stdout.strip() and all(json.loads(line)["loc"] for line in run.stdout.splitlines())
    assert "\u202e" not in run.stderr and "\u009b" not in run.stderr


def test_a_crawl_whose_folder_is_a_file_says_so(server: LocalServer, tmp_path: Path) -> None:
    """crawl(..., out_dir) under a regular file raised NotADirectoryError from the crawl file's set-up."""
    from sitemapkit.core.errors import InputError
    from sitemapkit.crawl.run import crawl

    server.route("/", page("home"), content_type=HTML)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="cannot"):
        crawl(server.url("/"), tmp_path / "file" / "out")
    assert server.requests == []
