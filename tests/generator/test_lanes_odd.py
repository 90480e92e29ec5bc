"""Odd lines cost only themselves (issue 25): in a URL-list batch whose every line has the same fields, the
few lines the columnar lane cannot take (a bad cell, a duplicate, a URL the lane cannot resolve) go the
general way one by one, read from the batch's columns: the batch is never split into its lines for them.
The output and the diagnostics are the general path's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sitemapkit.generator.sources import textblocks as lists_module
from sitemapkit.generator.writer import SitemapWriter
from tests.generator.test_lanes_columns import BASE, publish


@pytest.mark.parametrize("width", [1, 2, 4])
def test_odd_lines_of_a_uniform_batch_are_read_from_its_columns(
    width: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines: list[str] = []
    odd: list[int] = []
    for i in range(3000):
        fields = [f"{BASE}p/{i}?a=1&b='{i % 7}'", f"2024-01-{i % 28 + 1:02d}", "daily", "0.5"][:width]
        if i % 60 == 59:
            kind = (i // 60) % 4
            if kind == 0:
                fields[0] = f"{BASE}p/{i - 1}?a=1&b='{(i - 1) % 7}'"  # a duplicate of the line before
            elif kind == 1:
                fields[0] = f"https://other.org/{i}"  # out of scope
            elif kind == 2 and width > 1:
                fields[1] = "2999-01-01"  # in the future
            elif kind == 3 and width == 4:
                fields[3] = "1.5"  # not a priority
            else:
                fields[0] = f"{BASE}p/{i}/../{i}"  # a dot segment
            odd.append(i + 1)
        lines.append("\t".join(fields))
    source = tmp_path / "in.txt"
    source.write_text("".join(line + "\n" for line in lines))
    split: list[int] = []
    real_lines = lists_module.CanonicalLines.lines

    def spy_lines(self: lists_module.CanonicalLines) -> list[str]:
        split.append(len(self))
        return real_lines(self)

    seen: list[tuple[int | None, str]] = []
    add_record = SitemapWriter.add_record

    def spy(self: SitemapWriter, record: Any) -> bool:
        seen.append((record.line, record.loc))
        return add_record(self, record)

    monkeypatch.setattr(lists_module.CanonicalLines, "lines", spy_lines)
    monkeypatch.setattr(SitemapWriter, "add_record", spy)
    lane = publish(source, tmp_path / "lane", True)
    assert split == []  # no batch was split into lines for its odd ones
    assert [line for line, _ in seen] == odd  # each odd line on its own, in order, as the file spells it
    assert [loc for _, loc in seen] == [lines[n - 1].split("\t")[0] for n in odd]
    monkeypatch.undo()
    assert lane == publish(source, tmp_path / "general", False)
    assert lane[1]  # (the duplicates, at least, are reported)


@pytest.mark.parametrize("suffix", [".txt", ".csv"])
def test_after_a_batch_of_mostly_odd_lines_the_next_ones_skip_the_lane_then_it_is_tried_again(
    suffix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an input whose first lines all go the general way (a changefreq in capitals), then canonical ones:
    # after the first batch, `LaneMeter.SKIP` batches go the general way without the lane's checks, then the
    # lane takes the canonical ones again; the output and the diagnostics are the general path's throughout
    from sitemapkit.generator import lanes

    pad = "x" * 400  # long lines: many batches (each about a megabyte) from a few thousand lines
    sep = "," if suffix == ".csv" else "\t"
    rows = [
        sep.join([f"{BASE}{pad}/{i}", "2024-01-02", "Daily" if i < 2500 else "daily", "0.5"])
        for i in range(30_000)
    ]
    source = tmp_path / f"in{suffix}"
    header = "loc,lastmod,changefreq,priority\n" if suffix == ".csv" else ""
    source.write_text(header + "".join(row + "\n" for row in rows))
    tried: list[int] = []
    real = lanes.add_columns

    def spy(writer: SitemapWriter, columns: Any, *args: Any, **kw: Any) -> None:
        tried.append(len(columns[0]))
        real(writer, columns, *args, **kw)

    monkeypatch.setattr(lanes, "add_columns", spy)
    lane = publish(source, tmp_path / "lane", True)
    batches = -(-source.stat().st_size // (1 << 20))  # (at least this many: a megabyte each, or less)
    assert 2 <= len(tried) <= batches - lanes.LaneMeter.SKIP + 1  # the first, then again after the skip
    monkeypatch.undo()
    assert lane == publish(source, tmp_path / "general", False)
