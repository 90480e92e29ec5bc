"""The CSV reading of the columnar lane: a block of lines without quotes (or CRs) is split into columns in
passes over the block (`ColumnBlock`), any other block is read by the csv module. Property tests hold
the result to the record-by-record reading (the csv module on every line, each record through the general
path): the same bytes and the same diagnostics in the same order, with blocks of a few lines so that a
file mixes both kinds, quoted cells across block boundaries included."""

from __future__ import annotations

import csv
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.model import UrlEntry
from sitemapkit.generator.sources import textblocks
from sitemapkit.generator.sources.lists import read_records, record_batches
from sitemapkit.generator.sources.records import entry_from_text
from sitemapkit.generator.sources.textblocks import ColumnBlock
from sitemapkit.generator.writer import SitemapWriter

BASE = "https://example.com/"

cells = {
    "loc": st.one_of(
        st.builds(lambda s: BASE + "p" + s, st.text("ab1-._~!$&'()*+=:@/?", max_size=6)),
        st.sampled_from(["/rel", " https://example.com/sp ", "HTTPS://Example.com/Up", "", BASE + "pa"]),
    ),
    "lastmod": st.sampled_from(["", "2024-01-01", "2024-01-01T10:00:00+00:00", "2999-01-01", "2024-02-30"]),
    "changefreq": st.sampled_from(["", "daily", "Weekly", " daily", "sometimes"]),
    "priority": st.sampled_from(["", "0.5", "1", "1.5", "x", " 0.5"]),
    "note": st.sampled_from(["", "x", "a b", 'say "hi"', "two\nlines", "semi;colon", "com,ma", "tab\there"]),
}


def _cell(text: str, delimiter: str) -> str:
    if any(c in text for c in (delimiter, '"', "\n")) or text.startswith(" "):
        return '"' + text.replace('"', '""') + '"'
    return text


@st.composite
def csv_files(draw: st.DrawFn) -> tuple[str, str]:
    delimiter = draw(st.sampled_from([",", ";", "\t"]))
    header = draw(st.permutations(["loc", "lastmod", "changefreq", "priority", "note"]))
    header = header[: draw(st.integers(header.index("loc") + 1, len(header)))]
    lines = [delimiter.join(header)]
    for _ in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from(["row", "row", "row", "row", "short", "long", "blank", "spaces", "bare"]))
        if kind == "blank":
            lines.append("")
        elif kind == "spaces":
            lines.append("   ")
        else:
            row = [draw(cells[name]) for name in header]
            if kind == "short":
                row = row[: draw(st.integers(0, len(row)))]
            elif kind == "long":
                row.append("extra")
            quote = _cell if kind != "bare" else (lambda text, _: text.replace("\n", " "))
            lines.append(delimiter.join(quote(c, delimiter) for c in row))
    return delimiter, "\n".join(lines) + "\n"


def publish(path: Path, out: Path, lane: bool, **kw: Any) -> tuple[dict[str, bytes], list[Any]]:
    diags: list[Diagnostic] = []
    w = SitemapWriter(out, BASE, on_diagnostic=diags.append, **kw)
    with w:
        if lane:
            with record_batches(str(path), w.log) as batches:
                for batch in batches:
                    w.add_records(batch, batch.notes)
        else:
            for record in read_records(str(path), w.log):
                w.add_entry(record if isinstance(record, UrlEntry) else entry_from_text(record, w.log))
        w.add(BASE + "always-one")
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if not p.name.startswith(".")}
    return files, [(d.code, d.line, d.url, d.message) for d in diags]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(file=csv_files(), block=st.sampled_from([60, 200, 1 << 20]), max_urls=st.integers(1, 5))
def test_csv_blocks_read_and_write_what_the_csv_module_and_general_path_do(
    file: tuple[str, str], block: int, max_urls: int
) -> None:
    _, text = file
    saved = textblocks.MAX_LINE_BYTES
    textblocks.MAX_LINE_BYTES = block  # blocks of a few lines (a longer line is reported, the same both ways)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "in.csv"
            path.write_text(text)
            lane = publish(path, Path(tmp) / "lane", True, max_urls=max_urls)
            general = publish(path, Path(tmp) / "general", False, max_urls=max_urls)
    finally:
        textblocks.MAX_LINE_BYTES = saved
    assert lane == general


def _blocks(path: Path) -> list[Any]:
    with record_batches(str(path), print) as batches:
        return list(batches)


def test_a_block_without_quotes_is_split_in_columns_and_one_with_quotes_is_not(tmp_path: Path) -> None:
    rows = [f"{BASE}p/{i}?a=1&b='{i}',2024-01-{i % 28 + 1:02d},daily,0.5" for i in range(30_000)]
    plain = tmp_path / "plain.csv"
    plain.write_text("loc,lastmod,changefreq,priority\n" + "\n".join(rows) + "\n")
    blocks = _blocks(plain)
    assert all(isinstance(b, ColumnBlock) for b in blocks)  # the header's block too, after the header
    assert sum(len(b.columns[0]) for b in blocks) == 30_000
    assert blocks[0].first == 2
    loc, lastmod, changefreq, priority = blocks[0].columns
    assert loc[0] == f"{BASE}p/0?a=1&amp;b=&apos;0&apos;"  # escaped in the block, as the lane writes it
    assert (lastmod[0], changefreq[0], priority[0]) == ("2024-01-01", "daily", "0.5")
    quoted = tmp_path / "quoted.csv"
    quoted.write_text(
        'loc,lastmod\n"' + BASE + 'q",2024-01-01\n' + "\n".join(r[: r.index(",d")] for r in rows)
    )
    kinds = [type(b).__name__ for b in _blocks(quoted)]
    assert kinds[0] == "RecordBatch"  # the header's block has a quoted cell: the csv module reads it
    assert "ColumnBlock" in kinds[1:]
    assert publish(quoted, tmp_path / "a", True) == publish(quoted, tmp_path / "b", False)


def test_a_quoted_cell_across_two_blocks_is_one_row(tmp_path: Path) -> None:
    """The csv module reads on from a block that ends inside a quoted cell (a megabyte is read at a time);
    the next block starts mid-row, so it is not split as columns."""
    header = "loc,lastmod\n"
    line = f"{BASE}p0000000,2024-01-01\n"
    count = (textblocks.MAX_LINE_BYTES - len(header) - 30) // len(line)
    head = "".join(f"{BASE}p{i:07d},2024-01-01\n" for i in range(count))
    quoted = '"' + BASE + "q" + "\n" * 100 + 'r",2024-01-03\n'
    tail = "".join(f"{BASE}t{i},2024-01-02\n" for i in range(100))
    text = header + head + quoted + tail
    start = len(header + head)
    assert start < textblocks.MAX_LINE_BYTES < start + len(quoted)
    path = tmp_path / "in.csv"
    path.write_text(text)
    lane = publish(path, tmp_path / "a", True)
    assert lane == publish(path, tmp_path / "b", False)
    assert lane[1] == []
    written = b"".join(lane[0].values())
    assert written.count(b"<url>") == count + 1 + 100 + 1  # the quoted row is one row (and always-one)
    assert b"<loc>https://example.com/qr</loc><lastmod>2024-01-03</lastmod>" in written


def test_a_line_over_the_csv_field_limit_is_reported_as_the_csv_module_does(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text("loc\n" + "\n".join([BASE + "a", BASE + "x" * 300, BASE + "b"]) + "\n")
    saved = csv.field_size_limit(200)
    try:
        lane = publish(path, tmp_path / "a", True)
        general = publish(path, tmp_path / "b", False)
    finally:
        csv.field_size_limit(saved)
    assert lane == general
    assert [d[:2] for d in lane[1]] == [("bad-line", 3)]


@pytest.mark.parametrize("delimiter", [",", ";", "\t"])
def test_short_long_and_blank_rows_in_a_block(tmp_path: Path, delimiter: str) -> None:
    """Trailing cells left out, a cell too many, blank lines: read and reported as the csv module's rows,
    in their place, the other rows of the block in the lane."""
    d = delimiter
    rows = [d.join([f"{BASE}p{i}", "2024-01-01", "daily"]) for i in range(50)]
    rows[3] = f"{BASE}short"
    rows[7] = d.join([f"{BASE}long", "2024-01-01", "daily", "x"])
    rows[9] = ""
    rows[11] = d.join(["", "", ""])
    rows[13] = d.join([f"{BASE}p1", "2024-01-02", "weekly"])  # a duplicate
    path = tmp_path / "in.csv"
    path.write_text(d.join(["loc", "lastmod", "changefreq"]) + "\n" + "\n".join(rows) + "\n")
    (block,) = _blocks(path)
    assert isinstance(block, ColumnBlock)
    assert block.odd == {3, 7, 9}
    lane = publish(path, tmp_path / "a", True)
    assert lane == publish(path, tmp_path / "b", False)
    assert [d[:2] for d in lane[1]] == [("bad-line", 9), ("duplicate-url", 15)]


relative = st.builds(lambda s: "/" + s, st.text("ab1-._~!$&'()*+,;=:@/?%#", max_size=10))
upper = st.builds(
    lambda origin, s: origin + s,
    st.sampled_from(
        ["HTTPS://EXAMPLE.COM", "https://Example.com", "HTTPS://example.com/shop", "https://a.Example.com"]
    ),
    st.text("ab1-._~!$&'()*+,;=:@/?%#", max_size=10),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    locs=st.lists(
        st.one_of(
            relative,
            relative,
            upper,
            st.sampled_from(
                [BASE + "a", BASE + "a?b", "/a;", "/;", "/a;b?c", "/a?", "/a//b", "/a/./b", "//x/y"]
            ),
        ),
        min_size=1,
    ),
    folder=st.sampled_from(["", "shop/"]),
    kind=st.sampled_from(["list", "csv", "sitemap_gen"]),
)
def test_relative_urls_resolve_in_the_lane_as_the_general_path_resolves_them(
    locs: list[str], folder: str, kind: str
) -> None:
    """A relative URL (`/page`) in canonical form is the origin and it in the lane, and so is a URL whose
    scheme and host differ from the origin only in case (`normalize_url`
    drops an empty query and a `;` parameter, and removes `//` and dot segments: those go the general
    way); in sitemap_gen.py's form a relative URL is reported and left out, and the lane leaves it alone."""
    from sitemapkit.generator.sources.lists import list_batches

    base = BASE + folder

    def run(out: Path, path: Path, lane: bool) -> tuple[dict[str, bytes], list[Any]]:
        diags: list[Diagnostic] = []
        with SitemapWriter(out, base, on_diagnostic=diags.append) as w:
            if kind == "csv" and lane:
                with record_batches(str(path), w.log) as batches:
                    for batch in batches:
                        w.add_records(batch, batch.notes)
            elif lane:
                with list_batches(str(path), w.log, sitemap_gen=kind == "sitemap_gen") as (batches, parse):
                    for first, lines, clean in batches:
                        w.add_lines(lines, first, parse, clean=clean)
            else:
                for record in read_records(str(path), w.log, sitemap_gen=kind == "sitemap_gen"):
                    assert not isinstance(record, UrlEntry)
                    w.add_entry(entry_from_text(record, w.log))
            w.add(base + "always-one")
        files = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if not p.name.startswith(".")}
        return files, [(d.code, d.line, d.url, d.message) for d in diags]

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("in.csv" if kind == "csv" else "in.txt")
        rows = [loc + "\t2024-01-01" if kind != "csv" else loc + ",2024-01-01" for loc in locs]
        path.write_text(("loc,lastmod\n" if kind == "csv" else "") + "\n".join(rows) + "\n")
        assert run(Path(tmp) / "a", path, True) == run(Path(tmp) / "b", path, False)


def test_relative_urls_of_a_list_stay_in_the_lane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sitemapkit.generator import writer as writer_module

    seen: list[int] = []
    add_record = writer_module.SitemapWriter.add_record

    def spy(self: SitemapWriter, record: Any) -> bool:
        seen.append(record.line)
        return add_record(self, record)

    monkeypatch.setattr(writer_module.SitemapWriter, "add_record", spy)
    path = tmp_path / "in.csv"
    rows = [f"/p/{i}?a=1&b=2,2024-01-01" if i % 10 else f"/p/{i};x,2024-01-01" for i in range(100)]
    path.write_text("loc,lastmod\n" + "\n".join(rows) + "\n")
    lane = publish(path, tmp_path / "a", True)
    assert seen == [i + 2 for i in range(0, 100, 10)]  # only the ones with a `;` parameter
    assert lane == publish(path, tmp_path / "b", False)
    assert b"<loc>https://example.com/p/1?a=1&amp;b=2</loc>" in b"".join(lane[0].values())
