"""JSONL at lane speed: a JSONL input without alternates is not held for hreflang completion (a scan of its
bytes tells), so its batches take the lanes; one with alternates anywhere (the last line, a key spelled with
escapes, a match cut by a block's end) is completed as before. The output is the same either way."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from sitemapkit.generator import lanes
from sitemapkit.generator.run import generate
from sitemapkit.generator.sources.lists import jsonl_may_have_alternates

BASE = "https://example.com/"


def published(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if not p.name.startswith(".")}


def lines_of(n: int) -> list[dict[str, Any]]:
    return [{"loc": f"{BASE}p/{i}?a=1&b=2", "lastmod": f"2024-01-{i % 28 + 1:02d}"} for i in range(n)]


def write(path: Path, rows: list[dict[str, Any]], compress: bool = False) -> Path:
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


@pytest.mark.parametrize("compress", [False, True])
def test_jsonl_without_alternates_takes_the_lanes_with_the_completed_output(
    compress: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = write(tmp_path / ("in.jsonl.gz" if compress else "in.jsonl"), lines_of(3000), compress)
    assert not jsonl_may_have_alternates(str(source))
    rows: list[int] = []
    real = lanes.add_columns

    def spy(writer: Any, columns: Any, *args: Any, **kw: Any) -> None:
        rows.append(len(columns[0]))
        real(writer, columns, *args, **kw)

    monkeypatch.setattr(lanes, "add_columns", spy)
    generate([str(source)], tmp_path / "auto", BASE)
    assert sum(rows) == 3000  # every row through the lane
    rows.clear()
    generate([str(source)], tmp_path / "complete", BASE, hreflang="complete")
    assert rows == []  # completion holds every entry: no lane
    assert published(tmp_path / "auto") == published(tmp_path / "complete")


def test_jsonl_with_alternates_anywhere_is_completed(tmp_path: Path) -> None:
    rows = lines_of(40_000)  # several megabytes: the key comes in a later block
    rows[-1] = {"loc": f"{BASE}en", "alternates": [{"hreflang": "en", "href": f"{BASE}en"}]}
    rows[-2] = {
        "loc": f"{BASE}de",
        "alternates": [{"hreflang": "de", "href": f"{BASE}de"}, {"hreflang": "en", "href": f"{BASE}en"}],
    }
    source = write(tmp_path / "in.jsonl", rows)
    assert jsonl_may_have_alternates(str(source))
    generate([str(source)], tmp_path / "out", BASE)
    text = b"".join(published(tmp_path / "out").values())
    # /en lists nothing of /de itself: completion gives it both
    en = text[text.index(b"<loc>https://example.com/en</loc>") :].split(b"</url>")[0]
    assert b'hreflang="de"' in en and b'hreflang="en"' in en


def test_the_scan_finds_the_key_cut_by_a_block_end_and_spelled_with_escapes(tmp_path: Path) -> None:
    key = b'"alternates"'
    for cut in range(1, len(key)):
        path = tmp_path / f"cut{cut}.jsonl"
        filler = b" " * ((1 << 20) - cut)  # the key starts `cut` bytes before the first block's end
        path.write_bytes(b"{" + filler[1:] + key + b": []}\n")
        assert jsonl_may_have_alternates(str(path)), cut
    escaped = tmp_path / "escaped.jsonl"
    escaped.write_bytes(b'{"loc": "https://example.com/", "\\u0061lternates": []}\n')
    assert jsonl_may_have_alternates(str(escaped))
    accented = write(tmp_path / "accented.jsonl", [{"loc": f"{BASE}caf\u00e9"}])  # \u00e9: not a key letter
    assert b"\\u00e9" in accented.read_bytes() and not jsonl_may_have_alternates(str(accented))
    assert jsonl_may_have_alternates("-")  # standard input cannot be read twice: it counts
    assert jsonl_may_have_alternates(str(tmp_path / "missing.jsonl"))  # reading it says why
