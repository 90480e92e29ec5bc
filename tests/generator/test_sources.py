from __future__ import annotations

import datetime as dt
import gzip
import io
import sys
from pathlib import Path

import pytest

from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.errors import InputError
from sitemapkit.core.model import UrlEntry
from sitemapkit.generator.sources import read_source


def read(path: Path) -> tuple[list[UrlEntry], list[Diagnostic]]:
    diags: list[Diagnostic] = []
    return list(read_source(str(path), diags.append)), diags


def test_url_list_with_positional_and_keyed_fields(tmp_path: Path) -> None:
    f = tmp_path / "urls.txt"
    f.write_bytes(
        "\ufeff# comment\n"
        "\n"
        "https://example.com/a\t2024-01-02\tdaily\t0.8\n"
        "https://example.com/b\tpriority=0.3\tlastmod=2024-02-03T04:05:06Z\n"
        "https://example.com/c lastmod=2024-03-04 changefreq=Weekly priority=1\n"
        "  https://example.com/d  \r\n"
        "https://example.com/e f g\n".encode()
    )
    entries, diags = read(f)
    assert [(d.code, d.severity, d.line) for d in diags] == [("bad-line", "warning", 7)]  # raw spaces
    assert [(e.loc, e.line) for e in entries] == [
        ("https://example.com/a", 3),
        ("https://example.com/b", 4),
        ("https://example.com/c", 5),
        ("https://example.com/d", 6),
        ("https://example.com/e f g", 7),
    ]
    assert entries[0] == UrlEntry("https://example.com/a", dt.date(2024, 1, 2), "daily", 0.8)
    assert (
        entries[1].lastmod == dt.datetime(2024, 2, 3, 4, 5, 6, tzinfo=dt.UTC) and entries[1].priority == 0.3
    )
    assert entries[2].changefreq == "weekly" and entries[2].priority == 1.0
    assert all(e.sitemap == str(f) for e in entries)


def test_bad_fields_are_dropped_and_the_url_kept(tmp_path: Path) -> None:
    f = tmp_path / "urls.tsv"
    f.write_text("https://example.com/a\t2024-13-01\tsometimes\t1.5\nhttps://example.com/b\tcolour=red\n")
    entries, diags = read(f)
    assert [e.loc for e in entries] == ["https://example.com/a", "https://example.com/b"]
    assert entries[0] == UrlEntry("https://example.com/a")
    assert [(d.code, d.line, d.source) for d in diags] == [
        ("invalid-date", 1, str(f)),
        ("invalid-value", 1, str(f)),
        ("invalid-value", 1, str(f)),
        ("bad-line", 2, str(f)),
    ]
    assert "2024-13-01" in diags[0].message and "dropped" in diags[0].message


def test_undecodable_line_is_reported_and_skipped(tmp_path: Path) -> None:
    f = tmp_path / "urls.txt"
    f.write_bytes(b"https://example.com/a\nhttps://example.com/\xff\xfe\nhttps://example.com/c\n")
    entries, diags = read(f)
    assert [e.loc for e in entries] == ["https://example.com/a", "https://example.com/c"]
    assert [(d.code, d.line) for d in diags] == [("bad-line", 2)]
    assert "UTF-8" in diags[0].message


def test_csv_with_header(tmp_path: Path) -> None:
    f = tmp_path / "pages.csv"
    f.write_text(
        'Loc,priority,extra\n"https://example.com/a,b",0.5,x\n\nhttps://example.com/c,,y\n'
        "https://example.com/short\nhttps://example.com/long,0.1,x,y\n"
    )
    entries, diags = read(f)
    assert [(e.loc, e.priority, e.line) for e in entries] == [
        ("https://example.com/a,b", 0.5, 2),
        ("https://example.com/c", None, 4),
        ("https://example.com/short", None, 5),  # trailing cells left out: normal in exports
    ]
    assert [(d.code, d.line) for d in diags] == [("bad-line", 6)]  # an extra column is no problem


def test_csv_without_loc_column_is_an_input_error(tmp_path: Path) -> None:
    f = tmp_path / "pages.csv"
    f.write_text("link,lastmod\nhttps://example.com/,2024-01-01\n")
    with pytest.raises(InputError, match=r"pages\.csv:1: .*'loc'"):
        read(f)


def test_jsonl(tmp_path: Path) -> None:
    f = tmp_path / "pages.jsonl"
    f.write_text(
        '{"loc": "https://example.com/a", "lastmod": "2024-01-01", "priority": 0.4}\n'
        "not json\n"
        '{"url": "https://example.com/b"}\n'
        '{"loc": "https://example.com/c", "colour": "red"}\n'
        '{"loc": "https://example.com/d", "colour": "blue"}\n'
    )
    entries, diags = read(f)
    assert [(e.loc, e.line) for e in entries] == [
        ("https://example.com/a", 1),
        ("https://example.com/c", 4),
        ("https://example.com/d", 5),
    ]
    assert entries[0].priority == 0.4 and entries[0].lastmod == dt.date(2024, 1, 1)
    assert [(d.code, d.line) for d in diags] == [("bad-line", 2), ("bad-line", 3), ("bad-line", 4)]


def test_gzip_inputs_by_magic_bytes(tmp_path: Path) -> None:
    (tmp_path / "urls.txt.gz").write_bytes(gzip.compress(b"https://example.com/a\nhttps://example.com/b\n"))
    (tmp_path / "pages.csv.gz").write_bytes(gzip.compress(b"loc\nhttps://example.com/c\n"))
    (tmp_path / "misnamed.txt").write_bytes(gzip.compress(b"https://example.com/d\n"))
    assert [e.loc for e in read(tmp_path / "urls.txt.gz")[0]] == [
        "https://example.com/a",
        "https://example.com/b",
    ]
    assert [e.loc for e in read(tmp_path / "pages.csv.gz")[0]] == ["https://example.com/c"]
    assert [e.loc for e in read(tmp_path / "misnamed.txt")[0]] == ["https://example.com/d"]


def test_corrupt_gzip_is_an_input_error(tmp_path: Path) -> None:
    data = gzip.compress(b"https://example.com/a\n" * 1000)
    (tmp_path / "bad.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match=r"bad\.gz: cannot be read"):
        read(tmp_path / "bad.gz")


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope\.txt: cannot open"):
        read(tmp_path / "nope.txt")


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = io.TextIOWrapper(io.BufferedReader(io.BytesIO(b"https://example.com/x\n")))  # type: ignore[arg-type]
    monkeypatch.setattr(sys, "stdin", fake)
    entries = list(read_source("-", lambda d: None))
    assert [(e.loc, e.sitemap) for e in entries] == [("https://example.com/x", "<stdin>")]


def test_jsonl_with_extensions_in_the_shape_parse_prints(tmp_path: Path) -> None:
    f = tmp_path / "pages.jsonl"
    f.write_text(
        '{"loc": "https://example.com/a", "sitemap": "https://example.com/sitemap.xml", '
        '"images": [{"loc": "https://example.com/a.png"}], '
        '"alternates": [{"hreflang": "en", "href": "https://example.com/a"}], '
        '"news": {"publication_name": "Times", "publication_language": "en", '
        '"publication_date": "2026-11-29T08:00:00Z", "title": "T"}}\n'
        '{"loc": "https://example.com/b", "images": [{"loc": 5}]}\n'
    )
    entries, diags = read(f)
    assert [e.loc for e in entries] == ["https://example.com/a", "https://example.com/b"]
    assert entries[0].images[0].loc == "https://example.com/a.png"
    assert entries[0].alternates[0].hreflang == "en" and entries[0].news is not None
    assert entries[1].images == ()
    assert [(d.code, d.line) for d in diags] == [("bad-line", 2)] and "images" in diags[0].message


def test_parse_output_feeds_generate(tmp_path: Path) -> None:
    from sitemapkit.core.model import Alternate, Image
    from sitemapkit.generator.run import generate
    from sitemapkit.generator.writer import SitemapWriter
    from sitemapkit.reader.export import write_jsonl
    from sitemapkit.reader.parser import parse_file

    base = "https://example.com/"
    with SitemapWriter(tmp_path / "one", base) as w:
        w.add(
            base + "a",
            lastmod="2024-01-01",
            images=[Image(base + "a.png")],
            alternates=[Alternate("en", base + "a"), Alternate("de", base + "de/a")],
        )
        w.add(base + "b", changefreq="daily")
    first = list(parse_file(tmp_path / "one" / "sitemap.xml"))
    with open(tmp_path / "urls.jsonl", "w") as out:
        write_jsonl(first, out)  # type: ignore[arg-type]
    generate([str(tmp_path / "urls.jsonl")], tmp_path / "two", base, hreflang="keep")  # /de/a is elsewhere
    assert (tmp_path / "two" / "sitemap.xml").read_bytes() == (tmp_path / "one" / "sitemap.xml").read_bytes()


def test_a_named_pipe_is_read_once_and_loses_nothing(tmp_path: Path) -> None:
    import os
    import threading

    fifo = tmp_path / "urls.fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "w") as w:
            w.write("https://example.com/a\n")
            w.flush()
            w.write("https://example.com/b\n")

    threading.Thread(target=feed, daemon=True).start()
    entries, diags = read(fifo)
    assert [e.loc for e in entries] == ["https://example.com/a", "https://example.com/b"] and diags == []
