"""A sitemap found at a well-known path is fetched once: the walk reads on from the bytes discovery sniffed
(a real local server; counted from its request log)."""

from __future__ import annotations

import asyncio
import gzip
from collections import Counter

from sitemapkit.reader.discover import discover
from sitemapkit.reader.fetch import Fetcher, FetchOptions, FetchPolicy
from sitemapkit.reader.walk import AsyncReader, read
from sitemapkit.validator.run import validate
from tests.support.localserver import LocalServer
from tests.validator.test_validate_codes import NO_RETRY, NOW

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def big_urlset(server: LocalServer, n: int) -> str:
    """Far more than the 4 KiB discovery sniffs, and than one piece of the body."""
    body = "".join(f"<url><loc>{server.url(f'/page/{i}')}</loc></url>\n" for i in range(n))
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}">\n{body}</urlset>\n'


def gets(server: LocalServer) -> Counter[str]:
    return Counter(r.path for r in server.requests if r.method == "GET")


def test_read_of_a_site_fetches_its_well_known_sitemap_once(server: LocalServer) -> None:
    server.route("/sitemap.xml", "<html><body>soft 404</body></html>", content_type="text/html")
    server.route("/sitemap_index.xml", big_urlset(server, 5_000))
    reader = read(server.url("/"), fetch_options=NO_RETRY, allow_private=True)
    entries = list(reader)
    assert len(entries) == 5_000 and entries[-1].loc == server.url("/page/4999")
    assert list(reader.diagnostics.items) == []
    assert reader.tree is not None and reader.tree.kind == "site"
    (node,) = reader.tree.children
    assert node.url == server.url("/sitemap_index.xml") and node.url_count == 5_000
    assert gets(server)["/sitemap_index.xml"] == 1 and gets(server)["/sitemap.xml"] == 1


def test_a_gzipped_well_known_sitemap_is_fetched_once(server: LocalServer) -> None:
    for path in ("/sitemap.xml", "/sitemap_index.xml", "/sitemap-index.xml"):
        server.route(path, b"", status=404)
    server.route(
        "/sitemap.xml.gz", gzip.compress(big_urlset(server, 2_000).encode()), content_type="application/gzip"
    )
    assert sum(1 for _ in read(server.url("/"), fetch_options=NO_RETRY, allow_private=True)) == 2_000
    assert gets(server)["/sitemap.xml.gz"] == 1


def test_validate_of_a_site_fetches_its_well_known_sitemap_once(server: LocalServer) -> None:
    server.route("/sitemap.xml", big_urlset(server, 3_000))
    report = validate(server.url("/"), now=NOW, fetch_options=NO_RETRY)
    assert list(report) == [] and report.urls == 3_000
    assert [f.source for f in report.files] == [server.url("/sitemap.xml")]
    assert gets(server)["/sitemap.xml"] == 1


def test_an_async_reader_reads_on_from_a_discovery_probe(server: LocalServer) -> None:
    """How a caller that discovers a site itself (the crawler, the harvester) reads what it found once."""
    server.route("/sitemap.xml", big_urlset(server, 1_000))
    options = FetchOptions(retries=0, policy=FetchPolicy(allow_private=True))

    async def main() -> int:
        async with Fetcher(options) as fetcher:
            found = await discover(server.url("/"), fetcher, keep=8)
            assert found.via == "well-known" and found.probe is not None
            reader = AsyncReader(found.sitemaps[0], fetch_options=options, probe=found.probe)
            return sum([1 async for _ in reader])

    assert asyncio.run(main()) == 1_000
    assert gets(server)["/sitemap.xml"] == 1


def test_a_probe_an_async_reader_never_reads_is_stopped_when_it_closes(server: LocalServer) -> None:
    server.route("/sitemap.xml", big_urlset(server, 20_000))  # more than the probe's buffer holds
    options = FetchOptions(retries=0, policy=FetchPolicy(allow_private=True))

    async def main() -> bool:
        async with Fetcher(options) as fetcher:
            found = await discover(server.url("/"), fetcher, keep=2)
            assert found.probe is not None
            async with AsyncReader(found.sitemaps[0], fetch_options=options, probe=found.probe):
                pass  # left unread (a cap reached, a stop)
            return found.probe.done

    assert asyncio.run(main()) is True
