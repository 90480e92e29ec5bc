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
from tests.auditsite import problem_site
from tests.cdp import CHROMIUM, Browser, Page
from tests.localserver import LocalServer

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
            timeout=1.0,
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
