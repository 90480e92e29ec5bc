"""The audit's HTML report in a real headless Chromium (driven over the DevTools protocol): it opens from
file:// with no console error and no network request, shows the JSON's counts, its tables sort and
filter, and it fits a laptop and a phone (screenshots under the test's temporary folder).

Skipped where no Chromium is installed (`apt-get install chromium`); CI installs it.
"""

from __future__ import annotations

import datetime as dt
import json
import struct
from pathlib import Path

import pytest

from sitemapkit.audit.report_html import write_html
from sitemapkit.audit.run import audit
from tests.support.auditsite import problem_site
from tests.support.cdp import CHROMIUM, Browser, Page
from tests.support.localserver import LocalServer

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed")


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def _matching(page: Page, section: str) -> int:
    return int(page.js(f"document.querySelector('#{section} .shown').dataset.matching"))


def _select(page: Page, section: str, name: str, value: str) -> None:
    page.js(
        f"(function(){{var s=document.querySelector('#{section} select[data-filter={name}]');"
        f"s.value={json.dumps(value)};s.dispatchEvent(new Event('change'));}})()"
    )


def _column(page: Page, section: str, index: int) -> list[str]:
    return list(
        page.js(
            f"[].map.call(document.querySelectorAll('#{section} tbody tr'),"
            f"function(tr){{return tr.children[{index}].textContent;}})"
        )
    )


@pytest.fixture(scope="module")
def report_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    server = LocalServer().start()
    try:
        report = audit(
            problem_site(server),
            crawl=True,
            timeout=2.0,  # /slow answers after a minute, the other pages in milliseconds
            retries=0,
            now=dt.datetime(2026, 12, 1, tzinfo=dt.UTC),
        )
    finally:
        server.stop()
    folder = tmp_path_factory.mktemp("audit-html")
    write_html(report, folder / "audit.html")
    report.write_json(folder / "audit.json")
    data = json.loads((folder / "audit.json").read_text())
    previous = dict(data, findings=data["findings"][2:])  # as if the first two findings were new
    report.compare(previous)
    write_html(report, folder / "audit-baseline.html")
    return folder, data


def test_report_opens_offline_with_the_json_counts(
    report_files: tuple[Path, dict[str, object]], tmp_path: Path
) -> None:
    folder, data = report_files
    url = (folder / "audit.html").as_uri()
    summary: dict[str, object] = data["summary"]  # type: ignore[assignment]
    with Browser(tmp_path / "profile") as browser:
        page = browser.open(url, 1280, 900)
        assert page.problems() == []
        assert page.requests() == [url]  # the file itself, nothing else
        counts = page.js(
            "Object.fromEntries([].map.call(document.querySelectorAll('[data-count]'),"
            "function(e){return [e.dataset.count, e.textContent.replace(/,/g,'')];}))"
        )
        assert counts["score"] == str(data["score"])
        for key in ("urls_listed", "urls_checked", "errors", "warnings", "sitemaps"):
            assert counts[key] == str(summary[key]), key
        by_code: dict[str, dict[str, int]] = summary["by_code"]  # type: ignore[assignment]
        assert {k.removeprefix("code:"): int(v) for k, v in counts.items() if k.startswith("code:")} == {
            c: v["count"] for c, v in by_code.items()
        }
        urls: list[dict[str, object]] = data["urls"]  # type: ignore[assignment]
        findings: list[dict[str, object]] = data["findings"]  # type: ignore[assignment]
        assert _matching(page, "urls") == len(urls) and _matching(page, "all-findings") == len(findings)
        assert page.js("document.querySelectorAll('svg.chart').length") == 5
        page.screenshot(tmp_path / "audit-1280x900.png")
        assert _png_size(tmp_path / "audit-1280x900.png") == (1280, 900)
        phone = browser.open(url, 390, 844, mobile=True)
        assert phone.problems() == []
        assert phone.js("document.documentElement.scrollWidth") <= 390  # nothing wider than the phone
        phone.screenshot(tmp_path / "audit-390x844.png")
        assert _png_size(tmp_path / "audit-390x844.png") == (390, 844)
        phone.js("document.getElementById('urls').scrollIntoView()")
        phone.screenshot(tmp_path / "audit-390x844-urls.png")


def test_tables_sort_and_filter(report_files: tuple[Path, dict[str, object]], tmp_path: Path) -> None:
    folder, data = report_files
    urls: list[dict[str, object]] = data["urls"]  # type: ignore[assignment]
    findings: list[dict[str, object]] = data["findings"]  # type: ignore[assignment]
    with Browser(tmp_path / "profile") as browser:
        page = browser.open((folder / "audit.html").as_uri(), 1280, 900)
        _select(page, "urls", "indexability", "noindex")
        noindex = [u["url"] for u in urls if u["indexability"] == "noindex"]
        assert _matching(page, "urls") == len(noindex) == 2
        assert sorted(_column(page, "urls", 0)) == sorted(noindex)
        _select(page, "urls", "indexability", "")
        _select(page, "urls", "codes", "url-redirect")
        assert _matching(page, "urls") == sum(1 for u in urls if "url-redirect" in u["codes"])  # type: ignore[operator]
        _select(page, "urls", "codes", "")
        page.js(
            "(function(){var i=document.querySelector('#urls input');i.value='gone';"
            "i.dispatchEvent(new Event('input'));})()"
        )
        assert _column(page, "urls", 0) == [u["url"] for u in urls if "gone" in str(u["url"])]
        page.js(
            "(function(){var i=document.querySelector('#urls input');i.value='';"
            "i.dispatchEvent(new Event('input'));})()"
        )
        page.js("document.querySelector('#urls th[data-key=status] button').click()")
        statuses = [s for s in _column(page, "urls", 1)]
        numbers = [int(s) for s in statuses if s]
        assert numbers == sorted(numbers) and statuses[-1] == ""  # ascending, no status last
        assert page.js("document.querySelector('#urls th[data-key=status]').getAttribute('aria-sort')") == (
            "ascending"
        )
        page.js("document.querySelector('#urls th[data-key=status] button').click()")
        numbers = [int(s) for s in _column(page, "urls", 1) if s]
        assert numbers == sorted(numbers, reverse=True)
        _select(page, "all-findings", "severity", "error")
        assert _matching(page, "all-findings") == data["summary"]["errors"]  # type: ignore[index]
        _select(page, "all-findings", "code", "url-noindex")
        assert _matching(page, "all-findings") == sum(1 for f in findings if f["code"] == "url-noindex")
        assert page.problems() == []


def test_baseline_column_filters_new_findings(
    report_files: tuple[Path, dict[str, object]], tmp_path: Path
) -> None:
    folder, data = report_files
    findings: list[dict[str, object]] = data["findings"]  # type: ignore[assignment]
    with Browser(tmp_path / "profile") as browser:
        page = browser.open((folder / "audit-baseline.html").as_uri(), 1280, 900)
        assert page.problems() == []
        assert page.js("document.querySelector('[data-count=new]').textContent") == "2"
        assert page.js("document.querySelectorAll('details.fixed li').length") == 0  # nothing was fixed
        _select(page, "all-findings", "baseline", "new")
        assert sorted(_column(page, "all-findings", 2)) == sorted(str(f["url"]) for f in findings[:2])
        _select(page, "all-findings", "baseline", "unchanged")
        assert _matching(page, "all-findings") == len(findings) - 2


def _hostile_site(server: LocalServer) -> str:
    """A site whose sitemap carries what a page must show as text: a lastmod that opens an HTML comment
    and a script, a title with `</script>`, and a URL long enough to widen a table."""
    b = server.url
    server.route("/robots.txt", f"Sitemap: {b('/sitemap.xml')}\n", content_type="text/plain")
    long_path = "/" + "/".join(f"a-rather-long-folder-name-{i}" for i in range(9)) + "/page"
    for path in ("/", "/a", long_path):
        server.route(path, f"<title>{path} </script><!--</title><h1>x</h1>", content_type="text/html")
    entries = [
        f"<url><loc>{b('/')}</loc><lastmod>&lt;!--&lt;script&gt;</lastmod></url>",
        f"<url><loc>{b('/a')}</loc><lastmod>2026-01-01</lastmod></url>",
        f"<url><loc>{b(long_path)}</loc><lastmod>2026-02-01T10:00:00+00:00</lastmod></url>",
        f"<url><loc>{b('/gone')}</loc></url>",
    ]
    server.route(
        "/sitemap.xml",
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(entries)
        + "</urlset>",
    )
    return b("/")


def _click_at(page: Page, x: float, y: float) -> None:
    for kind in ("mousePressed", "mouseReleased"):
        page.browser.call(
            "Input.dispatchMouseEvent",
            {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
            session=page.session,
        )


def test_hostile_text_leaves_the_tables_whole_and_they_fit_a_laptop(tmp_path: Path) -> None:
    server = LocalServer().start()
    try:
        report = audit(
            _hostile_site(server), timeout=2.0, retries=0, now=dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
        )
    finally:
        server.stop()
    assert any("<!--<script>" in f.message for f in report.findings)  # the text reaches the page's data
    write_html(report, tmp_path / "hostile.html")
    with Browser(tmp_path / "profile") as browser:
        page = browser.open((tmp_path / "hostile.html").as_uri(), 1280, 900)
        assert page.problems() == []
        assert _matching(page, "urls") == len(report.rows) == 4
        assert page.js("document.querySelectorAll('#urls tbody tr').length") == 4
        assert _matching(page, "all-findings") == len(report.findings)
        assert page.js("document.querySelector('#all-findings tbody').textContent").count("<!--<script>") == 1
        # no table needs horizontal scrolling at 1280 px, long URL and all
        widths = page.js(
            "[].map.call(document.querySelectorAll('.scroll'),"
            "function(s){return [s.scrollWidth,s.clientWidth];})"
        )
        assert widths and all(scroll <= client for scroll, client in widths), widths
        page.js("document.getElementById('urls').scrollIntoView()")
        page.screenshot(tmp_path / "hostile-1280-urls.png")
        # the whole header cell sorts, clicked at its far right edge, away from its label
        th = page.js(
            "(function(){var th=document.querySelector('#urls th[data-key=status]'),"
            "r=th.getBoundingClientRect(),b=th.querySelector('button').getBoundingClientRect();"
            "return [r.right-3,r.top+r.height/2,b.width,r.width,b.height,r.height];})()"
        )
        assert abs(th[2] - th[3]) <= 1 and abs(th[4] - th[5]) <= 1  # the button fills the cell (less borders)
        _click_at(page, th[0], th[1])
        assert page.js("document.querySelector('#urls th[data-key=status]').getAttribute('aria-sort')") == (
            "ascending"
        )
        # and from the keyboard: the header is a real button, Enter sorts the other way
        page.js("document.querySelector('#urls th[data-key=status] button').focus()")
        assert page.js("document.activeElement.tagName") == "BUTTON"
        for kind in ("keyDown", "keyUp"):
            page.browser.call(
                "Input.dispatchKeyEvent",
                {"type": kind, "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "text": "\r"},
                session=page.session,
            )
        assert page.js("document.querySelector('#urls th[data-key=status]').getAttribute('aria-sort')") == (
            "descending"
        )
        statuses = [int(s) for s in _column(page, "urls", 1) if s]
        assert statuses == sorted(statuses, reverse=True) and statuses[0] == 404
        # a phone: the header row is hidden, a sort control takes its place
        phone = browser.open((tmp_path / "hostile.html").as_uri(), 390, 844, mobile=True)
        assert phone.problems() == [] and phone.js("document.documentElement.scrollWidth") <= 390
        assert phone.js("document.querySelector('#urls select.sort').offsetParent !== null")
        phone.js(
            "(function(){var s=document.querySelector('#urls select.sort');s.value='status -1';"
            "s.dispatchEvent(new Event('change'));})()"
        )
        statuses = [int(s) for s in _column(phone, "urls", 1) if s]
        assert statuses == sorted(statuses, reverse=True) and statuses[0] == 404
        assert phone.js("document.querySelector('#urls th[data-key=status]').getAttribute('aria-sort')") == (
            "descending"
        )
        phone.js("document.getElementById('urls').scrollIntoView()")
        phone.screenshot(tmp_path / "hostile-390-urls.png")
