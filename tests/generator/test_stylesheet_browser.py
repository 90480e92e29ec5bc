"""The bundled stylesheet renders each sitemap as a table in a real browser (headless Chromium).

Skipped where no Chromium is installed (`apt-get install chromium`); CI installs it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from sitemapkit.generator.writer import SitemapWriter
from tests.support.localserver import LocalServer

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed")


def dump_dom(url: str, profile: Path) -> str:
    assert CHROMIUM is not None
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", "--dump-dom", url],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return proc.stdout


def test_sitemap_and_index_render_as_tables(tmp_path: Path, server: LocalServer) -> None:
    base = server.url("/")
    out = tmp_path / "site"
    with SitemapWriter(out, base, xsl="default", max_urls=2) as writer:
        for path in ("", "about", "search?q=a&b=c"):
            writer.add(base + path, lastmod="2026-11-20")
    for f in out.iterdir():
        kind = "text/xsl" if f.suffix == ".xsl" else "application/xml"
        server.route("/" + f.name, f.read_bytes(), content_type=kind)
    page = dump_dom(base + "sitemap-1.xml", tmp_path / "profile1")
    assert "<table>" in page and "<title>Sitemap</title>" in page
    assert f">{base}about</a>" in page and "2026-11-20" in page
    index = dump_dom(base + "sitemap.xml", tmp_path / "profile2")
    assert "Sitemap index" in index and f">{base}sitemap-2.xml</a>" in index
