"""The Python examples of the README and of docs/ work as written (the reading ones against a real local
server). A block right after `<!-- docs-test: skip (reason) -->` is not run."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from sitemapkit.generator.writer import SitemapWriter
from tests.support.localserver import LocalServer

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DIAGNOSTICS = ROOT / "docs" / "topics" / "diagnostics.md"
SKIP = re.compile(r"<!-- docs-test: skip\b[^>]*-->\s*\n$")


def python_blocks(path: Path) -> list[tuple[str, str]]:
    text = path.read_text("utf-8")
    return [
        (f"{path.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1}", m.group(1))
        for m in re.finditer(r"```python\n(.*?)```", text, re.S)
        if not SKIP.search(text[: m.start()][-200:])
    ]


BLOCKS = [b for path in [README, *sorted((ROOT / "docs").rglob("*.md"))] for b in python_blocks(path)]


@pytest.mark.parametrize("where,block", BLOCKS, ids=[where for where, _ in BLOCKS])
def test_readme_python_example_runs(
    where: str, block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: LocalServer
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "urls.txt").write_text("https://example.com/\nhttps://example.com/pricing\n")
    with SitemapWriter(tmp_path / "examples" / "out", "https://example.com/", gzip=True, index="always") as w:
        w.add("https://example.com/a")
    # the reading and audit examples ask https://example.com/: serve that site locally instead
    site = server.url("/")
    server.route("/robots.txt", "User-agent: *\nSitemap: /sitemap.xml\n", content_type="text/plain")
    server.route(
        "/sitemap.xml",
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>{site}x</loc></url></urlset>',
    )
    live = "sitemapkit.read(" in block or "from sitemapkit import audit" in block
    code = block.replace('"https://example.com/")', f'"{site}")') if live else block
    if "harvest(" in block:  # the same local site, on loopback
        pytest.importorskip("pyarrow")
        code = code.replace('["https://example.com/"]', f'["{site}"]')
        code = code.replace("HarvestOptions(", "HarvestOptions(allow_private=True, ")
    namespace: dict[str, object] = {}
    exec(compile(code, where, "exec"), namespace)
    if "shop.db" in code:  # a reader runs an example more than once, in the same folder
        exec(compile(code, where, "exec"), {})
    if "urls" in namespace and callable(namespace["urls"]):
        import asyncio

        assert asyncio.run(namespace["urls"](site)) == [f"{site}x"]  # type: ignore[operator]
    assert os.listdir(tmp_path)


def test_every_diagnostic_code_is_documented_with_an_example() -> None:
    from sitemapkit.core.diagnostics import CODES

    text = DIAGNOSTICS.read_text("utf-8")
    table = text[: text.index("<!-- generated: codes -->")]  # the hand-written examples, not the generated
    missing = [code for code in CODES if f"| `{code}`" not in table]
    assert missing == []


def test_the_docs_python_blocks_are_found() -> None:
    """Blocks from the README and from docs/ are both collected (a wrong path would collect none)."""
    assert any(where.startswith("README.md") for where, _ in BLOCKS)
    assert any(where.startswith("docs/getting-started.md") for where, _ in BLOCKS)
    assert len(BLOCKS) >= 10
