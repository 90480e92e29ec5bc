"""A batch of canonical bytes knows the shape of its lines (`CanonicalLines.aligned`, from the separators
the canonical check keeps): when every line has the same number of delimiters, the columnar lane splits the
cells in one pass; when two lines' counts differ but add up (a cell too many on one line, one too few on
another), the lines are not aligned and the odd ones go the general way, as the csv module reads them."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitemapkit.generator.sources import textblocks
from sitemapkit.generator.sources.textblocks import CanonicalLines
from tests.generator.test_lanes_columns import BASE
from tests.generator.test_lanes_columns import publish as publish_list
from tests.generator.test_lanes_csv import publish as publish_csv


def _canonical(lines: list[str]) -> CanonicalLines:
    data = "\n".join(lines).encode("ascii")
    return CanonicalLines(data, data.translate(None, textblocks._CANONICAL_BYTES_BUT_SEPARATORS))


@given(lines=st.lists(st.text("ab.\t,;", max_size=8), min_size=1, max_size=12), k=st.integers(0, 4))
def test_aligned_is_every_line_holding_k_of_the_delimiter(lines: list[str], k: int) -> None:
    batch = _canonical(lines)
    assert len(batch) == len(lines)
    assert (batch.tabs, batch.dots) == (sum(x.count("\t") for x in lines), sum(x.count(".") for x in lines))
    for delimiter in "\t,;":
        assert batch.aligned(delimiter, k) == all(line.count(delimiter) == k for line in lines)
    for count in range(1, len(lines)):  # a CSV block less its header (one line or more)
        rest = batch.after(count)
        assert list(rest) == lines[count:]
        assert rest.aligned(",", k) == all(line.count(",") == k for line in lines[count:])
        assert rest.aligned(";", k) == all(line.count(";") == k for line in lines[count:])


def test_a_long_and_a_short_line_that_add_up_are_not_aligned() -> None:
    batch = _canonical(["a,b,c", "a,b,c,d", "a,b", "a,b,c"])
    assert not batch.aligned(",", 2)
    assert _canonical(["a,b,c", "a,b,c"]).aligned(",", 2)


@pytest.mark.parametrize("delimiter", [",", ";", "\t"])
def test_csv_rows_whose_cells_add_up_are_read_as_the_csv_module_reads_them(
    tmp_path: Path, delimiter: str
) -> None:
    """Row 5 has a cell too many (a URL, so a misaligned split would take it for a loc), row 8 one too
    few; the block's delimiters add up to every row's share."""
    d = delimiter
    rows = [d.join([f"{BASE}p{i}", "2024-01-01", "daily"]) for i in range(40)]
    rows[5] = d.join([f"{BASE}long", "2024-01-02", "weekly", f"{BASE}not-a-loc"])
    rows[8] = d.join([f"{BASE}short", "2024-01-03"])
    path = tmp_path / "in.csv"
    path.write_text(d.join(["loc", "lastmod", "changefreq"]) + "\n" + "\n".join(rows) + "\n")
    lane = publish_csv(path, tmp_path / "lane", True)
    assert lane == publish_csv(path, tmp_path / "general", False)
    written = b"".join(lane[0].values())
    assert b"not-a-loc" not in written
    assert b"<loc>https://example.com/short</loc><lastmod>2024-01-03</lastmod></url>" in written
    assert [x[:2] for x in lane[1]] == [("bad-line", 7)]  # the long row, skipped


def test_list_lines_whose_tabs_add_up_are_read_one_by_one(tmp_path: Path) -> None:
    lines = [f"{BASE}p{i}\t2024-01-01\tdaily\t0.5" for i in range(40)]
    lines[5] = f"{BASE}long\t2024-01-02\tweekly\t0.5\t{BASE}not-a-loc"
    lines[8] = f"{BASE}short\t2024-01-03\tdaily"
    path = tmp_path / "in.txt"
    path.write_text("\n".join(lines) + "\n")
    lane = publish_list(path, tmp_path / "lane", True)
    assert lane == publish_list(path, tmp_path / "general", False)
    written = b"".join(lane[0].values())
    assert (
        b"<loc>https://example.com/short</loc><lastmod>2024-01-03</lastmod><changefreq>daily</changefreq></url>"
        in written
    )


def test_a_tab_in_a_csv_cell_of_a_canonical_block_is_not_taken_for_a_url_byte(tmp_path: Path) -> None:
    """A TAB passes the canonical check (it separates a list's fields) but is no URL byte: in a CSV cut by
    commas, a loc with one goes the general way."""
    rows = [f"{BASE}p{i},2024-01-01" for i in range(20)]
    rows[4] = f"{BASE}tab\there,2024-01-02"
    path = tmp_path / "in.csv"
    path.write_text("loc,lastmod\n" + "\n".join(rows) + "\n")
    lane = publish_csv(path, tmp_path / "lane", True)
    assert lane == publish_csv(path, tmp_path / "general", False)
    assert b"\t" not in b"".join(lane[0].values())
