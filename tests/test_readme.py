"""The README's Python examples work as written (the reading one against a real local server)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from sitemapkit.generator.writer import SitemapWriter
from tests.localserver import LocalServer

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text("utf-8"), re.S)


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_python_example_runs(
    block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: LocalServer
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
    live = "sitemapkit.read(" in block or "from sitemapkit.audit import audit" in block
    code = block.replace('"https://example.com/")', f'"{site}")') if live else block
    if "harvest(" in block:  # the same local site, on loopback
        pytest.importorskip("pyarrow")
        code = code.replace('["https://example.com/"]', f'["{site}"]')
        code = code.replace("HarvestOptions(", "HarvestOptions(allow_private=True, ")
    namespace: dict[str, object] = {}
    exec(compile(code, str(README), "exec"), namespace)
    if "shop.db" in code:  # a reader runs an example more than once, in the same folder
        exec(compile(code, str(README), "exec"), {})
    if "urls" in namespace and callable(namespace["urls"]):
        import asyncio

        assert asyncio.run(namespace["urls"](site)) == [f"{site}x"]  # type: ignore[operator]
    assert os.listdir(tmp_path)


def test_every_diagnostic_code_is_documented_with_an_example() -> None:
    from sitemapkit.core.diagnostics import CODES

    text = README.read_text("utf-8")
    table = text[text.index("## Diagnostics") : text.index("## Performance")]
    missing = [code for code in CODES if f"| `{code}`" not in table]
    assert missing == []
