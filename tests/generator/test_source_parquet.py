"""Parquet files as a `generate` SOURCE: `parse -o x.parquet` and a harvest's `urls/` dataset regenerate what
they hold; the same rows as CSV give the same bytes; bad rows are reported with their row numbers."""

from __future__ import annotations

import csv
import datetime as dt
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sitemapkit.cli import main
from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.errors import UsageError
from sitemapkit.core.model import Alternate, Image, News, UrlEntry
from sitemapkit.generator.run import generate
from sitemapkit.reader.parser import parse_file

pa = pytest.importorskip("pyarrow")  # the `parquet` extra, which `make test` installs
pq = pytest.importorskip("pyarrow.parquet")

BASE = "https://e.com/"

SITEMAP = """<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
 xmlns:image="http://www.google.com/schemas/sitemap-image/1.1" xmlns:xhtml="http://www.w3.org/1999/xhtml"
 xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">
<url><loc>https://e.com/en/a</loc><lastmod>2024-05-01</lastmod><changefreq>daily</changefreq>
<priority>0.8</priority>
<image:image><image:loc>https://e.com/a.png</image:loc></image:image>
<image:image><image:loc>https://e.com/b.png</image:loc></image:image>
<xhtml:link rel="alternate" hreflang="en" href="https://e.com/en/a"/>
<xhtml:link rel="alternate" hreflang="de" href="https://e.com/de/a"/></url>
<url><loc>https://e.com/de/a</loc><lastmod>2024-05-02T10:00:00+00:00</lastmod>
<xhtml:link rel="alternate" hreflang="en" href="https://e.com/en/a"/>
<xhtml:link rel="alternate" hreflang="de" href="https://e.com/de/a"/></url>
<url><loc>https://e.com/plain</loc></url>
<url><loc>https://e.com/news</loc><news:news><news:publication><news:name>E</news:name>
<news:language>en</news:language></news:publication>
<news:publication_date>{today}</news:publication_date><news:title>T</news:title></news:news></url>
</urlset>
"""


def entries(out: Path) -> list[tuple[Any, ...]]:
    """The entries of a published sitemap, without where they were read."""
    found = list(parse_file(out / "sitemap.xml"))
    return [
        (e.loc, e.lastmod, e.changefreq, e.priority, e.images, e.videos, e.news, e.alternates) for e in found
    ]


def files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if not p.name.startswith(".")}


def test_parse_to_parquet_then_generate_gives_the_sitemap_back(tmp_path: Path) -> None:
    (tmp_path / "s.xml").write_text(SITEMAP.replace("{today}", dt.datetime.now(dt.UTC).date().isoformat()))
    for fmt in ("parquet", "jsonl"):
        result = CliRunner().invoke(
            main, ["parse", str(tmp_path / "s.xml"), "--format", fmt, "-o", str(tmp_path / f"x.{fmt}")]
        )
        assert result.exit_code == 0, result.output
    generate([str(tmp_path / "s.xml")], tmp_path / "from-xml", BASE, hreflang="complete")
    generate([str(tmp_path / "x.jsonl")], tmp_path / "from-jsonl", BASE)
    seen: list[Diagnostic] = []
    generate([str(tmp_path / "x.parquet")], tmp_path / "from-parquet", BASE, on_diagnostic=seen.append)
    assert not [d for d in seen if d.severity.name == "ERROR"]
    got = entries(tmp_path / "from-parquet")
    assert got == entries(tmp_path / "from-xml")
    assert files(tmp_path / "from-parquet") == files(tmp_path / "from-jsonl")
    first = got[0]
    assert first[4] == (Image("https://e.com/a.png"), Image("https://e.com/b.png"))
    assert {a.hreflang for a in first[7]} == {"en", "de"}
    assert got[3][6] is not None and got[3][6].title == "T"
    # the CLI takes it too
    out = tmp_path / "cli"
    result = CliRunner().invoke(
        main, ["generate", str(tmp_path / "x.parquet"), "--base-url", BASE, "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert entries(out) == got


def _harvest_part(path: Path, site: str, rows: list[UrlEntry]) -> None:
    from sitemapkit.harvest.rows import UrlBuffer, url_schema

    buffer = UrlBuffer()
    buffer.add(site, rows)
    schema = url_schema()
    pq.write_table(buffer.table(schema), path)


def test_a_harvest_dataset_folder_is_regenerated(tmp_path: Path) -> None:
    urls = tmp_path / "harvest" / "urls"
    urls.mkdir(parents=True)
    when = dt.datetime(2024, 5, 2, 8, 30, tzinfo=dt.UTC)
    part1 = [
        UrlEntry(f"https://e.com/p{i}", dt.date(2024, 1, 1 + i % 28), "weekly", 0.5) for i in range(20)
    ] + [
        UrlEntry(
            "https://e.com/pic",
            when,
            images=(Image("https://e.com/1.png"), Image("https://e.com/2.png")),
        ),
        UrlEntry(
            "https://e.com/n",
            news=News(
                "E", "en", dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(hours=1), "Title"
            ),
            alternates=(Alternate("en", "https://e.com/n"), Alternate("fr", "https://e.com/fr/n")),
        ),
        UrlEntry(
            "https://e.com/fr/n",
            alternates=(Alternate("en", "https://e.com/n"), Alternate("fr", "https://e.com/fr/n")),
        ),
    ]
    part2 = [UrlEntry(f"https://e.com/q{i}") for i in range(5)]
    _harvest_part(urls / "part-0-1.parquet", "https://e.com/", part1)
    _harvest_part(urls / "part-0-2.parquet", "https://e.com/", part2)
    (urls / ".part-0-3.parquet.tmp").write_bytes(b"half written")
    (urls / "_SUCCESS").write_bytes(b"")
    seen: list[Diagnostic] = []
    generate([str(urls)], tmp_path / "out", BASE, on_diagnostic=seen.append)
    assert not [d for d in seen if d.severity.name == "ERROR"]
    got = entries(tmp_path / "out")
    want = [
        (e.loc, e.lastmod, e.changefreq, e.priority, e.images, e.videos, e.news, e.alternates)
        for e in [*part1, *part2]
    ]
    assert got == want


def _write(tmp_path: Path, rows: list[dict[str, Any]], name: str = "x") -> tuple[Path, Path]:
    """The rows as a Parquet file and as a CSV file (columns loc, lastmod, changefreq, priority)."""
    parquet = tmp_path / f"{name}.parquet"
    table = pa.table(
        {
            "loc": pa.array([r["loc"] for r in rows], pa.string()),
            "lastmod": pa.array([r.get("lastmod") for r in rows], pa.string()),
            "changefreq": pa.array([r.get("changefreq") for r in rows], pa.string()),
            "priority": pa.array([r.get("priority") for r in rows], pa.float64()),
        }
    )
    pq.write_table(table, parquet, row_group_size=7_000)
    path = tmp_path / f"{name}.csv"
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["loc", "lastmod", "changefreq", "priority"])
        for r in rows:
            priority = r.get("priority")
            out.writerow(
                [
                    r["loc"] or "",
                    r.get("lastmod") or "",
                    r.get("changefreq") or "",
                    "" if priority is None else priority,
                ]
            )
    return parquet, path


ODD = {
    3: {"loc": None},
    17: {"lastmod": "2024-13-45"},
    18: {"lastmod": "2024-02"},
    40: {"priority": 1.5},
    41: {"changefreq": "sometimes"},
    55: {"loc": "https://E.com/Upper"},
    56: {"loc": "/relative"},
    57: {"loc": "https://e.com/p1"},  # a duplicate
    19_000: {"lastmod": "2099-01-01"},  # in the future
    25_000: {"loc": "https://other.example/x"},
}


def _rows(n: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for i in range(n):
        row: dict[str, Any] = {"loc": f"https://e.com/p{i}"}
        if i % 3:
            row["lastmod"] = f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}"
        if i % 5:
            row["changefreq"] = "daily"
        if i % 7:
            row["priority"] = 0.5 if i % 2 else 1.0
        row.update(ODD.get(i, {}))
        rows.append(row)
    return rows


def test_csv_and_parquet_of_the_same_rows_give_the_same_bytes_and_diagnostics(tmp_path: Path) -> None:
    parquet, csv_path = _write(tmp_path, _rows(30_000))
    said: dict[str, list[Diagnostic]] = {"csv": [], "parquet": []}
    generate([str(csv_path)], tmp_path / "csv", BASE, max_urls=10_000, on_diagnostic=said["csv"].append)
    generate([str(parquet)], tmp_path / "pq", BASE, max_urls=10_000, on_diagnostic=said["parquet"].append)
    assert files(tmp_path / "pq") == files(tmp_path / "csv")
    assert len(files(tmp_path / "pq")) == 4
    # the same diagnostics, naming the file and the row (a CSV line counts the header: the row is one less)
    from_csv = [(d.code, d.message, d.line - 1 if d.line else None, d.url) for d in said["csv"]]
    from_parquet = [(d.code, d.message, d.line, d.url) for d in said["parquet"]]
    assert from_parquet == from_csv
    assert {d.source for d in said["parquet"] if d.line} == {str(parquet)}
    rows = {d.line: d for d in said["parquet"]}
    assert rows[18].code == "invalid-date" and "2024-13-45" in rows[18].message  # row 18 is index 17
    assert rows[41].code == "invalid-value" and "1.5" in rows[41].message
    assert 4 in rows  # the row without a loc


def test_the_general_path_reads_the_same_rows(tmp_path: Path) -> None:
    """With several sources (entries held and merged), a Parquet file is read entry by entry: the same."""
    parquet, csv_path = _write(tmp_path, _rows(2_000))
    (tmp_path / "more.txt").write_text("https://e.com/more\n")
    more = str(tmp_path / "more.txt")
    said: dict[str, list[Diagnostic]] = {"csv": [], "parquet": []}
    generate([str(csv_path), more], tmp_path / "csv", BASE, on_diagnostic=said["csv"].append)
    generate([str(parquet), more], tmp_path / "pq", BASE, on_diagnostic=said["parquet"].append)
    assert files(tmp_path / "pq") == files(tmp_path / "csv")
    assert [(d.code, d.message) for d in said["parquet"]] == [(d.code, d.message) for d in said["csv"]]


def test_bad_extension_items_are_dropped_with_their_row(tmp_path: Path) -> None:
    image = pa.struct([("loc", pa.string()), ("title", pa.string())])
    alternate = pa.struct([("hreflang", pa.string()), ("href", pa.string())])
    table = pa.table(
        {
            "url": ["https://e.com/a", "https://e.com/b", "https://e.com/c"],
            "lastmod": ["2024-05-01", "not a date", None],
            "images": pa.array(
                [[{"loc": "https://e.com/1.png"}, {"loc": None, "title": "no loc"}], None, []],
                pa.list_(image),
            ),
            "alternates": pa.array([None, [{"hreflang": "en", "href": None}], None], pa.list_(alternate)),
            "lastmdo": ["x", "y", "z"],
        }
    )
    pq.write_table(table, tmp_path / "x.parquet")
    seen: list[Diagnostic] = []
    generate([str(tmp_path / "x.parquet")], tmp_path / "out", BASE, on_diagnostic=seen.append)
    got = entries(tmp_path / "out")
    assert [e[0] for e in got] == ["https://e.com/a", "https://e.com/b", "https://e.com/c"]
    assert got[0][4] == (Image("https://e.com/1.png"),)
    by_row = {(d.line, d.code): d.message for d in seen}
    assert "images[1]" in by_row[1, "bad-line"] and "this image is dropped" in by_row[1, "bad-line"]
    assert "not a W3C Datetime" in by_row[2, "invalid-date"]
    assert "alternates[0]" in by_row[2, "bad-line"]
    assert any("'lastmdo' is not read; did you mean 'lastmod'" in d.message for d in seen)


def test_a_file_without_a_loc_column_or_not_parquet_is_an_input_error(tmp_path: Path) -> None:
    from sitemapkit.core.errors import InputError

    pq.write_table(pa.table({"href": ["https://e.com/"]}), tmp_path / "x.parquet")
    with pytest.raises(InputError, match=r"x\.parquet: a Parquet source needs a 'loc' column"):
        generate([str(tmp_path / "x.parquet")], tmp_path / "out", BASE)
    (tmp_path / "y.parquet").write_text("https://e.com/\n")
    with pytest.raises(InputError, match=r"y\.parquet: not a Parquet file"):
        generate([str(tmp_path / "y.parquet")], tmp_path / "out", BASE)
    assert not list((tmp_path / "out").iterdir())  # nothing published


def test_without_pyarrow_the_error_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pq.write_table(pa.table({"loc": ["https://e.com/"]}), tmp_path / "x.parquet")
    for name in ("pyarrow", "pyarrow.parquet", "pyarrow.compute"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(UsageError, match=r"pip install 'sitemapkit\[parquet\]'"):
        generate([str(tmp_path / "x.parquet")], tmp_path / "out", BASE)
    assert not list((tmp_path / "out").iterdir())  # nothing published


def _general_rows(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The URLs of the rows that go the general way (one by one through `add_record`), as they come."""
    from sitemapkit.generator.writer import SitemapWriter

    general: list[str] = []
    add_record = SitemapWriter.add_record

    def counted(self: SitemapWriter, record: Any) -> bool:
        general.append(record.loc)
        return add_record(self, record)

    monkeypatch.setattr(SitemapWriter, "add_record", counted)
    return general


def test_rows_without_extensions_take_the_columnar_lane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Canonical rows of a file without an `alternates` column are written from the columns: none goes the
    general way (one by one through `add_record`), but the odd one."""
    rows = [
        {"loc": f"https://e.com/p{i}", "lastmod": "2024-05-01", "changefreq": "daily", "priority": 0.5}
        for i in range(3_000)
    ]
    rows[7]["lastmod"] = "2024-05-01T10:00:00+02:00"  # not canonical: the general way
    parquet, _ = _write(tmp_path, rows)
    general = _general_rows(monkeypatch)
    generate([str(parquet)], tmp_path / "out", BASE)
    assert general == ["https://e.com/p7"]
    assert len(entries(tmp_path / "out")) == 3_000


def test_a_build_config_declares_parquet_sources(tmp_path: Path) -> None:
    from sitemapkit.core.errors import InputError
    from sitemapkit.generator.config import build

    (tmp_path / "ds").mkdir()
    pq.write_table(pa.table({"loc": ["https://e.com/a"]}), tmp_path / "one.parquet")
    pq.write_table(pa.table({"loc": ["https://e.com/b"]}), tmp_path / "ds" / "part-0.parquet")
    config = tmp_path / "sitemapkit.toml"
    head = f'base_url = "{BASE}"\n\n[output]\ndir = "out"\n'
    config.write_text(head + '\n[[source]]\ntype = "parquet"\npath = ["one.parquet", "ds"]\n', "utf-8")
    build(config)
    assert [e[0] for e in entries(tmp_path / "out")] == ["https://e.com/a", "https://e.com/b"]
    (tmp_path / "urls.txt").write_text("https://e.com/c\n")
    config.write_text(head + '\n[[source]]\ntype = "parquet"\npath = "urls.txt"\n', "utf-8")
    with pytest.raises(InputError, match=r"is read as list .*not parquet"):
        build(config)


def test_a_harvest_dataset_without_alternates_takes_the_lanes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`harvest` writes an `alternates` column always: only one with some alternates in it asks for hreflang
    completion (which holds every entry back and writes them the general way); the output is the same."""
    from sitemapkit.generator.sources.parquet import has_alternates

    urls = tmp_path / "harvest" / "urls"
    urls.mkdir(parents=True)
    _harvest_part(
        urls / "part-0-1.parquet", "https://e.com/", [UrlEntry(f"https://e.com/p{i}") for i in range(50)]
    )
    _harvest_part(
        urls / "part-0-2.parquet", "https://e.com/", [UrlEntry(f"https://e.com/q{i}") for i in range(50)]
    )
    assert not has_alternates(str(urls))
    general = _general_rows(monkeypatch)
    generate([str(urls)], tmp_path / "auto", BASE)
    assert general == []  # every row through the lane
    generate([str(urls)], tmp_path / "complete", BASE, hreflang="complete")
    assert len(general) == 100 and files(tmp_path / "auto") == files(tmp_path / "complete")
    pair = (Alternate("en", "https://e.com/r"), Alternate("fr", "https://e.com/fr/r"))
    _harvest_part(urls / "part-0-3.parquet", "https://e.com/", [UrlEntry("https://e.com/r", alternates=pair)])
    assert has_alternates(str(urls))  # (in the last part)
