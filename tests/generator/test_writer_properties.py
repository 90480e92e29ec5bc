"""Property tests: the fast lane and the slow path write the same bytes; output is deterministic."""

from __future__ import annotations

import copy
import datetime as dt
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.generator.sources.lists import list_batches, read_records
from sitemapkit.generator.sources.records import entry_from_text
from sitemapkit.generator.writer import SitemapWriter

BASE = "https://example.com/"

path_chars = st.sampled_from([*"abcXYZ019-._~!$&'()*+,;=:@/?%# ü\"<>", "%41", "%zz", "日"])
canonical_chars = st.sampled_from(list("abc019-._~!$&'()*+,;=:@/?"))
locs = st.one_of(
    st.lists(canonical_chars, max_size=12).map(lambda cs: BASE + "".join(cs)),
    st.lists(path_chars, max_size=12).map(lambda cs: BASE + "".join(cs)),
    st.sampled_from(
        [
            "/rel",
            "https://other.org/x",
            "HTTPS://Example.com/Up",
            "https://example.com:443/p",
            "",
            "nope",
            "https://example.com/a/../b",
            "https://example.com/./c",
            "https://example.com/.well-known/d",
        ]
    ),
)
lastmods = st.one_of(
    st.none(),
    st.sampled_from(["2024-01-01", "2024-01-01T10:00:00+00:00"]),
    st.sampled_from(
        [
            "2024-01-01",
            "2024-02-30",
            "2024-01-01T10:00:00+00:00",
            "2024-01-01T10:00:00Z",
            "2024-01-01T10:00+02:00",
            "2024-01-01T25:00:00+00:00",
            "2024",
            " 2024-05-05",
            "2024-01-01T10:00:00",
            "2023-12-31T23:59:59-01:00",
        ]
    ),
)
changefreqs = st.one_of(st.none(), st.none(), st.none(), st.sampled_from(["daily", "Weekly", "sometimes"]))
priorities = st.one_of(
    st.none(), st.none(), st.none(), st.sampled_from(["0.5", "1.0", "1", "0.55", "2", "x"])
)
records = st.lists(st.tuples(locs, lastmods, changefreqs, priorities), min_size=1, max_size=60)


Row = tuple[str, str | None, str | None, str | None]


def publish(
    rows: list[Row], fast: bool, out: Path, **kw: object
) -> tuple[dict[str, bytes], list[tuple[str, int | None]]]:
    """Publish `rows` written as a URL list: through the bulk path that `generate` takes (`add_lines`),
    or entry by entry through the general path."""
    diags: list[Diagnostic] = []
    source = out.parent / (out.name + ".tsv")
    source.write_text("".join("\t".join(field or "" for field in row).rstrip("\t") + "\n" for row in rows))
    w = SitemapWriter(out, BASE, on_diagnostic=diags.append, **kw)  # type: ignore[arg-type]
    with w:
        if fast:
            with list_batches(str(source), w.log) as (batches, parse_line):
                for first, lines, clean in batches:
                    w.add_lines(lines, first, parse_line, clean=clean)
        else:
            for record in read_records(str(source), w.log):
                w.add_entry(entry_from_text(record, w.log))
        w.add(BASE + "always-one")
    files = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if not p.name.startswith(".")}
    return files, [(d.code, d.line) for d in diags]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=records, max_urls=st.integers(1, 5), gzip=st.booleans())
def test_fast_lane_and_slow_path_write_the_same_bytes(rows: list[Row], max_urls: int, gzip: bool) -> None:
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        fast = publish(rows, True, Path(a) / "out", max_urls=max_urls, gzip=gzip)
        slow = publish(rows, False, Path(b) / "out", max_urls=max_urls, gzip=gzip)
    assert fast == slow


@settings(max_examples=50, deadline=None)
@given(rows=records)
def test_same_input_gives_byte_identical_output(
    rows: list[tuple[str, str | None, str | None, str | None]],
) -> None:
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        first = publish(rows, True, Path(a) / "out", gzip=True, max_urls=3)
        assert first == publish(rows, True, Path(b) / "out", gzip=True, max_urls=3)


# -- the bulk lane: whole batches in canonical form ------------------------------------------------

bulk_locs = st.one_of(
    st.lists(st.sampled_from(list("ab1-._~!$&'()*+,;=:@/?")), max_size=10).map(lambda cs: BASE + "".join(cs)),
    st.sampled_from([BASE + "a", BASE + "b", BASE + "./c", BASE + "x/../y", BASE + ".well-known/z"]),
)
SHAPES = {
    "date": st.sampled_from(["2024-01-01", "2023-12-31", "2024-02-29", "2024-02-30", "2999-01-01"]),
    "time": st.sampled_from(
        ["2024-01-01T10:00:00+00:00", "2024-01-01T23:59:59+00:00", "2999-01-01T00:00:00+00:00"]
    ),
    "none": st.none(),
}


@st.composite
def uniform_rows(draw: st.DrawFn) -> list[Row]:
    """A URL list whose lines all have one shape (URL, URL+date, URL+UTC time), as databases export."""
    shape = SHAPES[draw(st.sampled_from(sorted(SHAPES)))]
    return draw(st.lists(st.tuples(bulk_locs, shape, st.none(), st.none()), min_size=1, max_size=40))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=uniform_rows(),
    max_urls=st.integers(1, 7),
    max_bytes=st.one_of(st.none(), st.integers(280, 900)),
    gzip=st.booleans(),
)
def test_bulk_lane_writes_what_the_slow_path_writes(
    rows: list[Row], max_urls: int, max_bytes: int | None, gzip: bool
) -> None:
    kw: dict[str, object] = {"max_urls": max_urls, "gzip": gzip}
    if max_bytes is not None:
        kw["max_bytes"] = max_bytes
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        fast = publish(rows, True, Path(a) / "out", **kw)
        slow = publish(rows, False, Path(b) / "out", **kw)
    assert fast == slow


def test_bulk_lane_takes_canonical_batches_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A canonical list goes through the bulk lane (and still matches the slow path), across file
    boundaries by count and by size; one odd line sends its batch to the per-line loop."""
    from sitemapkit.generator import lanes as bulk

    taken: list[bool] = []
    add = bulk.BulkLane.add

    def spy(self: bulk.BulkLane, *args: Any) -> bool:
        taken.append(add(self, *args))
        return taken[-1]

    monkeypatch.setattr(bulk.BulkLane, "add", spy)
    rows: list[Row] = [
        (f"{BASE}p/{i}?a=1&b='{i % 7}'", f"2024-01-{i % 28 + 1:02d}", None, None) for i in range(3000)
    ]
    for kw in ({"max_urls": 700}, {"max_bytes": 20_000}, {"gzip": True}):
        taken.clear()
        fast = publish(rows, True, tmp_path / f"fast{len(kw)}{sorted(kw)}", **kw)
        slow = publish(rows, False, tmp_path / f"slow{sorted(kw)}", **kw)
        assert fast == slow
        assert taken == [True]
    taken.clear()
    odd = [*rows[:10], (BASE + "p/%7e", "2024-01-01", None, None), *rows[10:20]]
    assert publish(odd, True, tmp_path / "odd-fast") == publish(odd, False, tmp_path / "odd-slow")
    assert taken == []  # the % is not a canonical byte: the batch never reached the bulk lane
    dup = [*rows[:10], rows[3]]
    assert publish(dup, True, tmp_path / "dup-fast") == publish(dup, False, tmp_path / "dup-slow")
    assert taken == [False]  # a duplicate: the per-line loop reports it


def test_no_lane_lists_the_sets_own_files(tmp_path: Path) -> None:
    """A URL naming one of the set's own files is left out on every path, even when the file it names is
    only made by a later batch (the list here is two 1 MB batches; sitemap-2200.xml comes from the second)."""
    rows: list[Row] = [(f"{BASE}p/{i:06d}", None, None, None) for i in range(45_000)]
    rows.insert(10, (BASE + "sitemap-2200.xml", None, None, None))
    rows.insert(20, (BASE + "sitemap-2201.xml.gz", None, None, None))
    fast = publish(rows, True, tmp_path / "fast", max_urls=20)
    assert fast == publish(rows, False, tmp_path / "slow", max_urls=20)
    files, _ = fast
    assert len(files) == 2252  # 45,001 URLs (publish adds one) in 2,251 files, and the index
    assert not any(b"sitemap-220" in body for name, body in files.items() if name != "sitemap.xml")


@given(
    value=st.one_of(
        st.dates(),
        st.datetimes(timezones=st.sampled_from([dt.UTC, dt.timezone(dt.timedelta(0), "Z"), None])),
        st.datetimes(
            timezones=st.builds(
                dt.timezone, st.integers(-23 * 60, 23 * 60).map(lambda m: dt.timedelta(minutes=m))
            )
        ),
    )
)
def test_a_lastmods_text_and_key_made_once_are_those_made_apart(value: dt.date) -> None:
    """`_text_and_key` writes the usual lastmods' text once for the element and the file's newest key:
    the same text `render_url` writes and the same key `_key` gives."""
    from sitemapkit.core.model import UrlEntry
    from sitemapkit.generator.serialize import render_url
    from sitemapkit.generator.writer import _key, _text_and_key

    if isinstance(value, dt.datetime) and value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    text, key = _text_and_key(value)
    assert key == _key(value)
    assert _text_and_key(value) == (text, key)  # (the same object again: from the cache)
    assert _text_and_key(copy.copy(value)) == (text, key)  # an equal one
    entry = UrlEntry("https://example.com/", value)
    assert render_url(entry, text) == render_url(entry)
