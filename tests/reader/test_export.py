"""The JSONL shape of entries, its inverse, and the JSONL/CSV writers."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitemapkit.core.errors import InputError
from sitemapkit.core.model import Alternate, Image, News, UrlEntry, Video
from sitemapkit.reader.export import (
    CSV_COLUMNS,
    entry_from_dict,
    entry_to_dict,
    entry_to_json,
    entry_to_row,
    write_csv,
    write_jsonl,
)

UTC = dt.UTC
FULL = UrlEntry(
    loc="https://example.com/a?x=1&y=2",
    lastmod=dt.datetime(2024, 5, 1, 12, 30, tzinfo=UTC),
    changefreq="daily",
    priority=0.8,
    images=(
        Image("https://example.com/1.jpg", title="One", caption="first"),
        Image("https://example.com/2.jpg"),
    ),
    videos=(
        Video(
            thumbnail_loc="https://example.com/t.jpg",
            title="Clip",
            description="A clip",
            content_loc="https://example.com/c.mp4",
            duration=120,
            rating=4.5,
            view_count=10,
            publication_date=dt.date(2024, 4, 30),
            family_friendly=True,
            restriction="IE GB",
            restriction_relationship="allow",
            tags=("a", "b"),
        ),
    ),
    news=News(
        "The Times", "en", dt.datetime(2024, 5, 1, 8, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))), "Hi"
    ),
    alternates=(Alternate("en", "https://example.com/a"), Alternate("de", "https://example.com/de/a")),
    sitemap="https://example.com/sitemap.xml",
)


def terminal_safe_json(value: object) -> str:
    """`json.dumps` compact with non-ASCII kept, but the characters a terminal acts on or hides (DEL and
    the C1 controls, bidi controls, zero-width and line separators, a BOM) as `\\uXXXX` escapes."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    unsafe = (
        {*range(0x7F, 0xA0), 0x061C, 0xFEFF}
        | set(range(0x200B, 0x2010))
        | set(range(0x2028, 0x202F))
        | set(range(0x2060, 0x206A))
    )
    return "".join(f"\\u{ord(c):04x}" if ord(c) in unsafe else c for c in text)


def test_entry_to_dict_shape() -> None:
    d = entry_to_dict(FULL)
    assert list(d) == [
        "loc",
        "lastmod",
        "changefreq",
        "priority",
        "sitemap",
        "images",
        "videos",
        "news",
        "alternates",
    ]
    assert d["lastmod"] == "2024-05-01T12:30:00+00:00"
    assert d["images"] == [
        {"loc": "https://example.com/1.jpg", "caption": "first", "title": "One"},
        {"loc": "https://example.com/2.jpg"},
    ]
    assert d["videos"][0]["publication_date"] == "2024-04-30"
    assert d["videos"][0]["tags"] == ["a", "b"]
    assert d["videos"][0]["family_friendly"] is True
    assert d["news"] == {
        "publication_name": "The Times",
        "publication_language": "en",
        "publication_date": "2024-05-01T08:00:00+02:00",
        "title": "Hi",
    }
    assert d["alternates"][1] == {"hreflang": "de", "href": "https://example.com/de/a"}
    json.dumps(d)  # JSON-ready


def test_bare_entry_has_every_top_level_key() -> None:
    assert entry_to_dict(UrlEntry("https://example.com/")) == {
        "loc": "https://example.com/",
        "lastmod": None,
        "changefreq": None,
        "priority": None,
        "sitemap": None,
        "images": [],
        "videos": [],
        "news": None,
        "alternates": [],
    }


def test_round_trip_full_entry() -> None:
    back = entry_from_dict(json.loads(json.dumps(entry_to_dict(FULL))))
    assert back == FULL
    assert back.sitemap == FULL.sitemap


@pytest.mark.parametrize(
    ("d", "message"),
    [
        ({}, "loc is missing"),
        ({"loc": 3}, r"entry\.loc: unexpected value 3"),
        ({"loc": "https://e.com/", "priority": "high"}, r"entry\.priority"),
        ({"loc": "https://e.com/", "priority": True}, r"entry\.priority"),
        ({"loc": "https://e.com/", "lastmod": "yesterday"}, r"entry\.lastmod: not a W3C Datetime"),
        ({"loc": "https://e.com/", "images": [{"title": "x"}]}, r"images\[0\]: an image needs a loc"),
        ({"loc": "https://e.com/", "images": "a.jpg"}, "images: unexpected value"),
        ({"loc": "https://e.com/", "videos": [{"duration": 1.5}]}, r"videos\[0\]\.duration"),
        ({"loc": "https://e.com/", "videos": [{"tags": "a"}]}, r"videos\[0\]\.tags"),
        ({"loc": "https://e.com/", "news": {"title": "x"}}, "news: needs publication_name"),
        (
            {"loc": "https://e.com/", "alternates": [{"hreflang": "en"}]},
            r"alternates\[0\]: needs hreflang and href",
        ),
        ({"loc": "https://e.com/", "colour": "red"}, "entry: unknown field colour"),
        ({"loc": "https://e.com/", "images": [{"loc": "x", "size": 1}]}, r"images\[0\]: unknown field size"),
    ],
)
def test_entry_from_dict_names_the_bad_field(d: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        entry_from_dict(d)


def test_entry_from_dict_accepts_integral_float_for_int() -> None:
    e = entry_from_dict({"loc": "https://e.com/", "videos": [{"duration": 60.0, "view_count": 3}]})
    assert e.videos[0].duration == 60 and isinstance(e.videos[0].duration, int)


def test_write_jsonl_one_object_per_line_unicode_kept() -> None:
    out = io.StringIO()
    n = write_jsonl([UrlEntry("https://example.com/ü"), FULL], out)
    lines = out.getvalue().splitlines()
    assert n == 2 and len(lines) == 2
    assert "ü" in lines[0]
    assert entry_from_dict(json.loads(lines[1])) == FULL


def test_write_csv_flattens_extensions_to_counts() -> None:
    out = io.StringIO()
    n = write_csv([FULL, UrlEntry("https://example.com/b", priority=1.0)], out)
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert n == 2
    assert rows[0] == list(CSV_COLUMNS)
    assert rows[1] == [
        "https://example.com/a?x=1&y=2",
        "2024-05-01T12:30:00+00:00",
        "daily",
        "0.8",
        "2",
        "1",
        "2",
        "1",
        "https://example.com/sitemap.xml",
    ]
    assert rows[2] == ["https://example.com/b", "", "", "1", "0", "0", "0", "0", ""]


_text = st.text(st.characters(codec="utf-8"), max_size=20)
_dates = st.one_of(
    st.dates(),
    st.datetimes(timezones=st.just(UTC)).map(lambda d: d.replace(microsecond=0)),
)


@given(
    loc=_text.filter(bool),
    lastmod=st.none() | _dates,
    changefreq=st.none() | _text,
    priority=st.none() | st.floats(0, 1),
    images=st.lists(st.builds(Image, _text.filter(bool), st.none() | _text), max_size=3),
    alternates=st.lists(st.builds(Alternate, _text, _text), max_size=3),
)
def test_round_trip_property(
    loc: str,
    lastmod: dt.date | None,
    changefreq: str | None,
    priority: float | None,
    images: list[Image],
    alternates: list[Alternate],
) -> None:
    entry = UrlEntry(loc, lastmod, changefreq, priority, tuple(images), alternates=tuple(alternates))
    assert entry_from_dict(json.loads(json.dumps(entry_to_dict(entry)))) == entry
    line = entry_to_json(entry)
    assert line == terminal_safe_json(entry_to_dict(entry))
    assert entry_from_dict(json.loads(line)) == entry


_repeats = st.sampled_from(["daily", "weekly", None, 'ü,"x"\n'])
_priorities = (
    st.none() | st.sampled_from([0.0, -0.0, 1.0, 1, 0.5, 0.25, float("nan"), float("inf")]) | st.floats()
)
_lastmods = (
    st.none()
    | _dates
    | st.sampled_from(
        [
            dt.date(2024, 5, 1),
            dt.datetime(2024, 5, 1, 12, tzinfo=UTC),
            dt.datetime(2024, 5, 1, 14, tzinfo=dt.timezone(dt.timedelta(hours=2))),  # the same instant
            dt.datetime(2024, 5, 1, 12),  # naive: written as UTC
        ]
    )
)
_entries = st.lists(
    st.builds(
        UrlEntry,
        loc=_text.filter(bool) | st.sampled_from(["https://e.com/a,b", 'https://e.com/"q"']),
        lastmod=_lastmods,
        changefreq=_repeats,
        priority=_priorities,
        images=st.lists(st.builds(Image, _text.filter(bool)), max_size=1).map(tuple),
        sitemap=st.none() | st.sampled_from(["https://e.com/s1.xml", "https://e.com/s2.xml"]),
    ),
    max_size=30,
)


@given(entries=_entries)
def test_batch_writers_write_what_the_per_entry_functions_write(entries: list[UrlEntry]) -> None:
    """The batched JSONL and CSV writers (with their text caches) are byte-identical to formatting each
    entry on its own: `json.dumps(entry_to_dict(e))` per line, `csv.writer` over `entry_to_row(e)`."""
    jsonl, table, expected_table = io.StringIO(), io.StringIO(), io.StringIO()
    assert write_jsonl(entries, jsonl) == len(entries)
    expected = "".join(terminal_safe_json(entry_to_dict(e)) + "\n" for e in entries)
    assert jsonl.getvalue() == expected
    assert write_csv(entries, table) == len(entries)
    writer = csv.writer(expected_table, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows(entry_to_row(e) for e in entries)
    assert table.getvalue() == expected_table.getvalue()


def test_batch_writers_span_batches_and_caches() -> None:
    """More entries than one batch, more distinct dates than a cache keeps: still the same text."""
    entries = [
        UrlEntry(f"https://e.com/{i}", dt.date(2000, 1, 1) + dt.timedelta(days=i % 5000), priority=i % 7 / 10)
        for i in range(10_000)
    ]
    out = io.StringIO()
    write_jsonl(entries, out)
    assert out.getvalue().splitlines() == [entry_to_json(e) for e in entries]
