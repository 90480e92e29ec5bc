"""The validator walks its trees with the reader's walk: what that walk decides, the validator gets too
(on a real local server, checked from its request log)."""

from __future__ import annotations

from collections import Counter

from sitemapkit.reader.walk import read
from sitemapkit.validator.run import validate
from tests.support.localserver import LocalServer
from tests.validator.test_validate_codes import NO_RETRY, NOW, index, urlset


def test_a_sitemap_robots_txt_and_an_index_both_list_is_fetched_once_below_the_index(
    server: LocalServer,
) -> None:
    """robots.txt names the index and its child: the child is read once, as the index's child (before,
    the validator read it a second time as a root of its own, and every URL in it was a duplicate)."""
    a, b = server.url("/a.xml"), server.url("/b.xml")
    server.route("/robots.txt", f"Sitemap: {a}\nSitemap: {b}\n", content_type="text/plain")
    server.route("/a.xml", index(b))
    server.route("/b.xml", urlset(f"<url><loc>{server.url('/x')}</loc></url>"))
    report = validate(server.url("/"), now=NOW, fetch_options=NO_RETRY)
    assert list(report) == []
    assert [(f.source, f.parent, f.depth) for f in report.files] == [(a, None, 0), (b, a, 1)]
    gets = Counter(r.path for r in server.requests)
    assert gets["/b.xml"] == 1 and gets["/a.xml"] == 1

    server.requests.clear()
    reader = read(server.url("/"), fetch_options=NO_RETRY, allow_private=True)
    assert [e.loc for e in reader] == [server.url("/x")]
    assert list(reader.diagnostics.items) == []
    assert reader.tree is not None and [n.url for n in reader.tree.children] == [a]
    assert [n.url for n in reader.tree.children[0].children] == [b]
    assert Counter(r.path for r in server.requests)["/b.xml"] == 1
