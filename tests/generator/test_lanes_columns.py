"""Property tests: the columnar lane (URL lists with any of the positional fields, CSV, JSONL) writes the
bytes and reports the diagnostics, in the same order, that the general path (record by record) does, for
random inputs with odd lines among canonical ones."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.model import UrlEntry
from sitemapkit.generator.sources.lists import list_batches, read_records, record_batches
from sitemapkit.generator.sources.records import entry_from_text
from sitemapkit.generator.writer import SitemapWriter

BASE = "https://example.com/"

good_locs = st.lists(st.sampled_from(list("ab1-._~!$&'()*+,;=:@/?")), max_size=8).map(
    lambda cs: BASE + "p" + "".join(cs)
)
odd_locs = st.sampled_from(
    [
        "/rel",
        "https://other.org/x",
        "HTTPS://Example.com/Up",
        "https://example.com/a/../b",
        "https://example.com/%7e",
        "https://example.com/ü",
        "https://example.com/sitemap.xml",
        "",
        "# a comment",
        BASE + "pa",
    ]
)
locs = st.one_of(good_locs, good_locs, good_locs, odd_locs)
lastmods = st.sampled_from(
    [
        "",
        "2024-01-01",
        "2023-12-31",
        "2024-01-01T10:00:00+00:00",
        "2024-01-01T00:00:00+00:00",
        "2999-01-01",
        "2024-02-30",
        "2024-01-01T10:00:00Z",
        "2024",
        " 2024-05-05",
    ]
)
changefreqs = st.sampled_from(["", "daily", "weekly", "never", "Weekly", "sometimes", " daily"])
priorities = st.sampled_from(["", "0.5", "1.0", "1", "0", ".5", "0.55", "1.5", "x", "nan", "1e-1"])
Row = tuple[str, str, str, str]
rows_strategy = st.lists(st.tuples(locs, lastmods, changefreqs, priorities), min_size=1, max_size=50)


def _diagnostics(diags: list[Diagnostic]) -> list[tuple[str, int | None, str | None, str]]:
    return [(d.code, d.line, d.url, d.message) for d in diags]


def publish(path: Path, out: Path, lane: bool, **kw: Any) -> tuple[dict[str, bytes], list[Any]]:
    """Publish the input file `path` through the lane `generate` takes (`add_lines` for a list,
    `add_records` for CSV and JSONL), or entry by entry through the general path."""
    diags: list[Diagnostic] = []
    w = SitemapWriter(out, BASE, on_diagnostic=diags.append, **kw)
    with w:
        if not lane:
            for record in read_records(str(path), w.log):
                w.add_entry(record if isinstance(record, UrlEntry) else entry_from_text(record, w.log))
        elif path.suffix == ".txt":
            with list_batches(str(path), w.log) as (batches, parse_line):
                for first, lines, clean in batches:
                    w.add_lines(lines, first, parse_line, clean=clean)
        else:
            with record_batches(str(path), w.log) as batches_of_records:
                for records in batches_of_records:
                    w.add_records(records, records.notes)
        w.add(BASE + "always-one")
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if not p.name.startswith(".")}
    return files, _diagnostics(diags)


def write_input(kind: str, rows: list[Row], width: int, folder: Path) -> Path:
    if kind == "list":
        path = folder / "in.txt"
        path.write_text("".join("\t".join(row[:width]) + "\n" for row in rows))
    elif kind == "csv":
        path = folder / "in.csv"
        lines = ["priority,loc,changefreq,lastmod"]  # any column order
        for loc, lastmod, changefreq, priority in rows:
            cells = [priority, loc, changefreq, lastmod]
            lines.append(",".join(f'"{c}"' if "," in c or c.startswith(" ") else c for c in cells))
        path.write_text("\n".join(lines) + "\n")
    else:
        path = folder / "in.jsonl"
        out = []
        for i, (loc, lastmod, changefreq, priority) in enumerate(rows):
            obj: dict[str, Any] = {"loc": loc, "lastmod": lastmod or None, "changefreq": changefreq}
            if priority:
                obj["priority"] = priority
            if i % 7 == 3:
                obj["images"] = [{"loc": BASE + f"i{i}.jpg"}]
            if i % 11 == 5:
                obj["colour"] = "blue"  # an unknown key: a diagnostic from the reader, before the record
            out.append(json.dumps(obj) if i % 13 != 8 else "{not json")
        path.write_text("\n".join(out) + "\n")
    return path


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=rows_strategy,
    kind=st.sampled_from(["list", "csv", "jsonl"]),
    width=st.integers(1, 4),
    max_urls=st.integers(1, 6),
    max_bytes=st.one_of(st.none(), st.integers(300, 1200)),
    gzip=st.booleans(),
)
def test_columnar_lane_writes_and_reports_what_the_general_path_does(
    rows: list[Row], kind: str, width: int, max_urls: int, max_bytes: int | None, gzip: bool
) -> None:
    kw: dict[str, Any] = {"max_urls": max_urls, "gzip": gzip}
    if max_bytes is not None:
        kw["max_bytes"] = max_bytes
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = write_input(kind, rows, width, folder)
        lane = publish(path, folder / "lane", True, **kw)
        general = publish(path, folder / "general", False, **kw)
    assert lane == general


@pytest.mark.parametrize("kind", ["list", "csv"])
def test_a_few_odd_lines_keep_the_rest_in_the_lane(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2% odd lines in a 4-field batch: the general path sees those lines only (the old inline lane, and the
    bulk lane, sent any batch with one odd line the slow way for canonical lines of more than 2 fields)."""
    from sitemapkit.generator import writer as writer_module

    seen: list[int | None] = []
    add_record = writer_module.SitemapWriter.add_record

    def spy(self: SitemapWriter, record: Any) -> bool:
        seen.append(record.line)
        return add_record(self, record)

    monkeypatch.setattr(writer_module.SitemapWriter, "add_record", spy)
    rows: list[Row] = []
    for i in range(2000):
        row = (f"{BASE}p/{i}?a=1&b='{i % 7}'", f"2024-01-{i % 28 + 1:02d}", "daily", "0.5")
        if i % 50 == 49:
            row = (row[0], row[1], row[2], "1.5") if i % 100 == 49 else ("/rel/" + str(i), *row[1:])
        rows.append(row)
    path = write_input(kind, rows, 4, tmp_path)
    lane = publish(path, tmp_path / "lane", True)
    odd_lines = [i + 1 + (kind == "csv") for i in range(2000) if i % 100 == 49]
    assert seen == odd_lines  # the bad priorities: the relative URLs are resolved in the lane
    seen.clear()
    assert lane == publish(path, tmp_path / "general", False)
    assert len(lane[1]) == 20  # the 20 bad priorities; the relative URLs resolve silently
