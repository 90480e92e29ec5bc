"""JSONL at lane speed: a JSONL input without alternates is not held for hreflang completion (a scan of its
bytes tells), so its batches take the lanes; one with alternates anywhere (the last line, a key spelled with
escapes, a match cut by a block's end) is completed as before. Blocks of plain lines are read column by
column, and lines whose only extension is images given by their URLs take the columnar lane with them. The
output and the diagnostics are the general path's."""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemapkit.generator import lanes
from sitemapkit.generator.run import generate
from sitemapkit.generator.sources.jsonl import jsonl_may_have_alternates
from tests.generator.test_lanes_columns import changefreqs, lastmods, locs, priorities, publish

BASE = "https://example.com/"  # (as test_lanes_columns's)


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


# -- images in the lane: the property -----------------------------------------------------------------

image_values = st.sampled_from(
    [
        None,
        [],
        [{"loc": f"{BASE}i.jpg"}],
        [{"loc": "https://cdn.example.org/a.jpg?w=1&h=2"}],  # another host, an & to escape
        [{"loc": f"{BASE}a.jpg"}, {"loc": f"{BASE}b.jpg"}],
        [{"loc": "HTTPS://CDN.Example.org/Up.jpg"}],  # normalised by the general path
        [{"loc": "/rel.jpg"}],  # resolved against the base
        [{"loc": f"{BASE}with space.jpg"}],
        [{"loc": "https://a..b/x.jpg"}],  # refused
        [{"loc": f"{BASE}t.jpg", "title": "a title"}],  # a deprecated tag: dropped, reported
        [{"loc": ""}],
        ["not an object"],
        "not a list",
    ]
)
json_rows = st.lists(
    st.tuples(locs, lastmods, changefreqs, st.one_of(priorities, st.sampled_from([0.5, 1, 2])), image_values),
    min_size=1,
    max_size=40,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=json_rows,
    odd=st.sampled_from(["", "unknown key", "bad json", "sitemap key"]),
    max_urls=st.integers(1, 6),
    max_bytes=st.one_of(st.none(), st.integers(300, 1500)),
)
def test_jsonl_with_images_through_the_lane_writes_and_reports_what_the_general_path_does(
    rows: list[tuple[Any, ...]], odd: str, max_urls: int, max_bytes: int | None
) -> None:
    kw: dict[str, Any] = {"max_urls": max_urls}
    if max_bytes is not None:
        kw["max_bytes"] = max_bytes
    out = []
    for i, (loc, lastmod, changefreq, priority, images) in enumerate(rows):
        obj: dict[str, Any] = {"loc": loc, "lastmod": lastmod or None, "changefreq": changefreq}
        if priority != "":
            obj["priority"] = priority
        if images is not None:
            obj["images"] = images
        if odd == "unknown key" and i == len(rows) // 2:
            obj["colour"] = "blue"
        if odd == "sitemap key":
            obj["sitemap"] = BASE + "sitemap.xml"
        out.append(json.dumps(obj) if not (odd == "bad json" and i == len(rows) - 1) else "{not json")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.jsonl"
        path.write_text("\n".join(out) + "\n")
        lane = publish(path, Path(tmp) / "lane", True, **kw)
        general = publish(path, Path(tmp) / "general", False, **kw)
    assert lane == general


def test_the_image_namespace_is_declared_from_the_first_file_with_an_image(tmp_path: Path) -> None:
    # rows without images first, then with: a file that holds none of them does not declare the namespace,
    # and the file limits fall where the general path's do
    rows = [{"loc": f"{BASE}p/{i}"} for i in range(30)]
    rows += [{"loc": f"{BASE}q/{i}", "images": [{"loc": f"{BASE}img/{i}.jpg"}]} for i in range(30)]
    path = write(tmp_path / "in.jsonl", rows)
    lane = publish(path, tmp_path / "lane", True, max_urls=20, max_bytes=2000)
    assert lane == publish(path, tmp_path / "general", False, max_urls=20, max_bytes=2000)
    files, _ = lane
    declared = [b"xmlns:image" in data for name, data in files.items() if name.startswith("sitemap-")]
    assert declared[0] is False and declared[-1] is True


def test_a_line_nested_too_deeply_is_reported_and_the_others_kept(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(f'{{"loc": "{BASE}a"}}\n' + "[" * 100_000 + f'\n{{"loc": "{BASE}b"}}\n')
    files, diagnostics = publish(path, tmp_path / "out", True)
    assert [(code, line) for code, line, _, _ in diagnostics] == [("bad-line", 2)]
    assert "nested too deeply" in diagnostics[0][3]
    assert b"<loc>https://example.com/b</loc>" in b"".join(files.values())


def test_an_image_a_line_with_urls_to_escape_and_to_normalise(tmp_path: Path) -> None:
    # every line one image (the lane writes the column of their URLs between the tags): URLs with & and ',
    # one the general path normalises, one it refuses; the same bytes and diagnostics as the general path
    images = [f"{BASE}i/{i}.jpg?a=1&b='{i}'" for i in range(40)]
    images[7] = "HTTPS://CDN.Example.org/Up.jpg"
    images[9] = "https://a..b/x.jpg"
    rows = [{"loc": f"{BASE}p/{i}", "images": [{"loc": url}]} for i, url in enumerate(images)]
    path = write(tmp_path / "in.jsonl", rows)
    lane = publish(path, tmp_path / "lane", True, max_urls=15)
    assert lane == publish(path, tmp_path / "general", False, max_urls=15)
    text = b"".join(lane[0].values())
    assert b"<image:loc>https://example.com/i/0.jpg?a=1&amp;b=&apos;0&apos;</image:loc>" in text
    assert b"https://cdn.example.org/Up.jpg" in text and [d[0] for d in lane[1]] == ["invalid-url"]


def test_what_cannot_be_scanned_is_held_for_completion(tmp_path: Path) -> None:
    # a named pipe cannot be read twice; bytes in another encoding may spell the key otherwise (UTF-7: +AGE-)
    fifo = tmp_path / "in.jsonl"
    os.mkfifo(fifo)
    assert jsonl_may_have_alternates(str(fifo))  # (answered without opening it)
    seven = tmp_path / "seven.jsonl"
    seven.write_bytes(b'{"loc": "https://example.com/en", "+AGE-lternates": []}\n')
    assert not jsonl_may_have_alternates(str(seven))
    assert jsonl_may_have_alternates(str(seven), "utf-7")
    assert not jsonl_may_have_alternates(str(seven), "UTF8")
    assert jsonl_may_have_alternates(str(seven), "no-such-codec")  # (reading it reports the encoding)


def test_a_named_pipe_is_read_once_and_published(tmp_path: Path) -> None:
    fifo = tmp_path / "in.jsonl"
    os.mkfifo(fifo)
    lines = "".join(json.dumps(row) + "\n" for row in lines_of(5)).encode()

    def feed() -> None:
        with open(fifo, "wb") as f:
            f.write(lines)

    writer = threading.Thread(target=feed)
    writer.start()
    result = generate([str(fifo)], tmp_path / "out", BASE)
    writer.join(5)
    assert result.urls == 5


def test_a_cell_with_a_line_feed_beside_one_to_escape(tmp_path: Path) -> None:
    # the lane escapes a column joined by LF: a cell with a LF of its own (a JSON string may have one)
    # must not shift the others
    rows = [
        {"loc": f"{BASE}a", "images": [{"loc": f"{BASE}a\nb.jpg"}]},
        {"loc": f"{BASE}b", "images": [{"loc": f"{BASE}x&y.jpg"}]},
    ]
    path = write(tmp_path / "images.jsonl", rows)
    lane = publish(path, tmp_path / "lane", True)
    assert lane == publish(path, tmp_path / "general", False)
    assert [d[0] for d in lane[1]] == ["invalid-url"]
    locs = write(tmp_path / "locs.jsonl", [{"loc": f"{BASE}a\nb"}, {"loc": f"{BASE}x&y"}])
    assert publish(locs, tmp_path / "lane2", True) == publish(locs, tmp_path / "general2", False)


def test_a_number_too_long_for_an_int_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(f'{{"loc": "{BASE}a", "priority": {"1" * 5000}}}\n{{"loc": "{BASE}b"}}\n')
    files, diagnostics = publish(path, tmp_path / "out", True)
    assert [(code, line) for code, line, _, _ in diagnostics] == [("bad-line", 1)]
    assert b"<loc>https://example.com/b</loc>" in b"".join(files.values())
