"""Runs: the reader hands stretches of plain entries on as columns (`UrlRun`), and every writer formats
them to the very bytes (or table) it writes for the same entries one by one."""

from __future__ import annotations

import asyncio
import gzip
import io
from pathlib import Path

import pytest

from sitemapkit.core.model import UrlEntry
from sitemapkit.reader.export import chunks, write_csv, write_jsonl
from sitemapkit.reader.parser import SitemapParser
from sitemapkit.reader.runs import UrlRun
from sitemapkit.reader.walk import aread, read
from tests.support.localserver import LocalServer

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
HEAD = (
    f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}" '
    'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1" '
    'xmlns:video="http://www.google.com/schemas/sitemap-video/1.1">\n'
)
VIDEO = (
    "<url><loc>https://e.com/v</loc><video:video><video:thumbnail_loc>https://e.com/t.jpg"
    "</video:thumbnail_loc><video:title>T</video:title><video:description>D</video:description>"
    "<video:content_loc>https://e.com/v.mp4</video:content_loc></video:video></url>\n"
)


def _urls(n: int, offset: int = 0) -> str:
    """Plain elements of every shape the fast path reads: each field present or not, dates and date-times
    in several offsets, priorities 0.0 and 1.0, commas and &amp; in URLs (quoted in CSV), images."""
    out = []
    for i in range(offset, offset + n):
        parts = [f"<loc>https://e.com/p{i}?a=1&amp;b=2{',c' if i % 7 == 0 else ''}</loc>"]
        if i % 5:
            parts.append(
                f"<lastmod>2024-05-{1 + i % 28:02d}</lastmod>"
                if i % 3
                else f"<lastmod>2024-05-01T10:{i % 60:02d}:00{'Z' if i % 2 else '+02:00'}</lastmod>"
            )
        if i % 4:
            parts.append(f"<changefreq>{('daily', 'weekly', 'never')[i % 3]}</changefreq>")
        if i % 6:
            parts.append(f"<priority>{('0.0', '1.0', '0.5', '0.80', '1')[i % 5]}</priority>")
        if i % 11 == 0:
            parts.append("<image:image><image:loc>https://e.com/i.jpg</image:loc></image:image>")
        out.append("<url>" + "".join(parts) + "</url>\n")
    return "".join(out)


def _document(n: int = 3000) -> bytes:
    return (HEAD + _urls(n // 2) + VIDEO + _urls(n // 2, n // 2) + "</urlset>\n").encode()


def _expand(items: list[UrlEntry | UrlRun]) -> list[UrlEntry]:
    out: list[UrlEntry] = []
    for item in items:
        out += item.entries() if isinstance(item, UrlRun) else [item]
    return out


def _parsed(data: bytes, runs: bool) -> list[UrlEntry | UrlRun]:
    parser = SitemapParser("https://e.com/s.xml", runs=runs)
    items: list[object] = []
    for start in range(0, len(data), 4096):
        items += parser.feed(data[start : start + 4096])
    items += parser.close()
    return items  # type: ignore[return-value]


def test_runs_hold_the_entries_the_parser_makes_otherwise() -> None:
    data = _document()
    items = _parsed(data, runs=True)
    runs = [i for i in items if isinstance(i, UrlRun)]
    assert runs and sum(map(len, runs)) > 2500  # most entries came as columns
    assert _expand(items) == _parsed(data, runs=False)
    assert [e.line for e in _expand(items)] == [e.line for e in _parsed(data, runs=False)]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("writer", "p7"),
    [
        (write_jsonl, '\n{"loc":"https://e.com/p7?a=1&b=2,c","lastmod":"2024-05-08",'),
        (write_csv, '\n"https://e.com/p7?a=1&b=2,c",2024-05-08,weekly,0.5,'),  # the comma quoted
    ],
    ids=["jsonl", "csv"],
)
def test_writers_write_runs_as_the_entries_they_hold(writer: object, p7: str) -> None:
    items = _parsed(_document(), runs=True)
    from_runs, from_entries = io.StringIO(), io.StringIO()
    assert writer(items, from_runs) == writer(_expand(items), from_entries) == 3001  # type: ignore[operator]
    assert from_runs.getvalue() == from_entries.getvalue()
    assert p7 in from_runs.getvalue()  # &amp; unescaped, the comma kept, the fields in place


def test_parquet_writes_runs_as_the_entries_they_hold(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    from sitemapkit.reader.parquet import write_parquet

    items = _parsed(_document(), runs=True)
    # small row groups: runs and single entries are gathered across group boundaries
    assert write_parquet(items, str(tmp_path / "runs.parquet"), row_group_size=1000) == 3001
    assert write_parquet(_expand(items), str(tmp_path / "entries.parquet"), row_group_size=1000) == 3001
    runs_table = pq.read_table(tmp_path / "runs.parquet")
    assert runs_table.equals(pq.read_table(tmp_path / "entries.parquet"))
    assert pq.ParquetFile(tmp_path / "runs.parquet").metadata.num_row_groups > 1


def test_chunks_keep_order_and_bound_the_lists() -> None:
    items = _parsed(_document(), runs=True)
    plain = _expand(items)
    pieces = list(chunks(plain, size=100))
    assert all(isinstance(p, list) and len(p) <= 100 for p in pieces)
    flat = [e for p in chunks(items, size=100) for e in ([p] if isinstance(p, UrlRun) else p)]
    assert _expand(flat) == plain


def _serve_tree(server: LocalServer) -> str:
    one = HEAD + _urls(1200) + VIDEO + "</urlset>\n"
    two = HEAD + _urls(900, 5000) + "</urlset>\n"
    server.route("/one.xml", one)
    server.route("/two.xml.gz", gzip.compress(two.encode()), content_type="application/gzip")
    return server.route(
        "/index.xml",
        f'<sitemapindex xmlns="{NS}"><sitemap><loc>{server.url("/one.xml")}</loc></sitemap>'
        f"<sitemap><loc>{server.url('/two.xml.gz')}</loc></sitemap></sitemapindex>",
    )


def test_reader_runs_give_the_entries_and_tree_of_iterating_it(server: LocalServer) -> None:
    index = _serve_tree(server)
    plain = read(index)
    entries = list(plain)
    with_runs = read(index)
    items = list(with_runs.runs())
    assert any(isinstance(i, UrlRun) for i in items)
    assert _expand(items) == entries and len(entries) == 2101
    assert with_runs.count == plain.count == 2101
    assert [(n.url, n.url_count, n.kind) for n in with_runs.sitemaps] == [
        (n.url, n.url_count, n.kind) for n in plain.sitemaps
    ]
    assert list(with_runs.runs()) == []  # read once, like iterating it


def test_async_batches_with_runs(server: LocalServer) -> None:
    index = _serve_tree(server)

    async def collect(runs: bool) -> list[UrlEntry | UrlRun]:
        out: list[UrlEntry | UrlRun] = []
        async with aread(index) as reader:
            async for batch in reader.batches(runs=runs) if runs else reader.batches():
                out += batch
        return out

    with_runs = asyncio.run(collect(True))
    assert any(isinstance(i, UrlRun) for i in with_runs)
    without = asyncio.run(collect(False))
    assert not any(isinstance(i, UrlRun) for i in without)
    assert _expand(with_runs) == without


def test_a_slice_of_a_run_holds_those_entries() -> None:
    body = "".join(f"<url><loc>https://e.com/{i}</loc></url>\n" for i in range(600))
    runs = [i for i in _parsed((HEAD + body + "</urlset>\n").encode(), runs=True) if isinstance(i, UrlRun)]
    run = max(runs, key=len)
    assert len(run) > 100
    for part in (slice(0, 10), slice(37, 101), slice(len(run) - 5, None), slice(50, 50)):
        assert run[part].entries() == run.entries()[part]
        assert run[part].lines() == run.lines()[part]


def test_harvest_rows_of_a_run_are_the_rows_of_its_entries() -> None:
    pytest.importorskip("pyarrow")
    from sitemapkit.harvest.rows import UrlBuffer, url_schema

    items = _parsed(_document(), runs=True)
    from_runs, from_entries = UrlBuffer(), UrlBuffer()
    counts_runs, counts_entries = [0] * 7, [0] * 7
    for item in items:
        part = item if isinstance(item, UrlRun) else [item]
        for i, count in enumerate(from_runs.add("e.com", part)):
            counts_runs[i] += count
    for i, count in enumerate(from_entries.add("e.com", _expand(items))):
        counts_entries[i] += count
    assert counts_runs == counts_entries and counts_runs[0] > 0
    assert from_runs.table(url_schema()).equals(from_entries.table(url_schema()))
