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
from hypothesis import HealthCheck, example, given, settings
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
        path.write_bytes(b"{" + filler[1:] + key + b': [{"hreflang": "en", "href": "x"}]}\n')
        assert jsonl_may_have_alternates(str(path)), cut
    for empty in (b"[]", b"[ ]", b"null", b" \t[]"):  # (as `parse` writes a URL without alternates)
        path = tmp_path / "empty.jsonl"
        path.write_bytes(b'{"loc": "https://example.com/", "alternates": ' + empty + b"}\n" * 3)
        assert not jsonl_may_have_alternates(str(path)), empty
        path.write_bytes(path.read_bytes() + b'{"loc": "https://example.com/", "alternates": [{}]}\n')
        assert jsonl_may_have_alternates(str(path)), empty
    real = b'{"loc": "https://example.com/en", "alternates"  :  [{"hreflang": "en", "href": "x"}]}\n'
    for cut in range(real.index(b"alternates"), real.index(b"hreflang")):  # the block's end anywhere there
        path = tmp_path / f"real{cut}.jsonl"
        path.write_bytes(b" " * ((1 << 20) - cut) + real)
        assert jsonl_may_have_alternates(str(path)), cut
    head = b'{"alternates": '
    for cut in range(4):  # an empty value that the block's end cuts counts as some (the scan cannot tell)
        path = tmp_path / f"value{cut}.jsonl"
        path.write_bytes(b" " * ((1 << 20) - len(head) - cut) + head + b"[ ]}\n")
        assert jsonl_may_have_alternates(str(path)) == (cut < 3), cut
    escaped = tmp_path / "escaped.jsonl"
    escaped.write_bytes(b'{"loc": "https://example.com/", "\\u0061lternates": []}\n')
    assert jsonl_may_have_alternates(str(escaped))
    go = tmp_path / "go.jsonl"  # Go's writer escapes `&`: not a letter of the key
    go.write_bytes(b'{"loc": "https://example.com/?a=1\\u0026b=2", "alternates": []}\n')
    assert not jsonl_may_have_alternates(str(go))
    for spelled in (b"\\u0061lternates", b"alt\\u0065rnates", b"a\\u006Cternates"):
        escaped.write_bytes(b'{"loc": "https://example.com/", "' + spelled + b'": []}\n')
        assert jsonl_may_have_alternates(str(escaped)), spelled
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


# -- blocks read by the first line's layout -------------------------------------------------------------

_plain_texts = st.text(st.characters(exclude_characters='"\\', exclude_categories=("Cc", "Cs")), max_size=8)
_json_texts = st.one_of(
    st.sampled_from(["", "x", "2024-01-01", "daily", "0.5", "\u2028", "é", "\x7f", "\x85"]),
    _plain_texts,
    _plain_texts,
    st.sampled_from(['a"b', "a\\b", "\n", "\x1f"]),
    st.text(max_size=8),
)
_plain_values = st.one_of(_json_texts, _json_texts, _json_texts, st.none())
_odd_values = st.one_of(st.floats(0, 1), st.integers(0, 2), st.just({"x": 1}))
_image_urls = st.one_of(st.sampled_from([f"{BASE}i.png", f"{BASE}j.png"]), _json_texts)
_plain_images = st.lists(st.fixed_dictionaries({"loc": _image_urls}), max_size=3)
_odd_images = st.one_of(
    st.none(), st.just([{"loc": BASE + "i.png", "caption": "c"}]), st.just({"loc": BASE}), st.just([BASE])
)


def _objects(
    texts: st.SearchStrategy[str], values: st.SearchStrategy[Any], images: st.SearchStrategy[Any], **more: Any
) -> st.SearchStrategy[dict[str, Any]]:
    """JSONL objects: a `loc`, and maybe the fields (each one of `values`), images and the keys of `more`."""
    fields = dict.fromkeys(("lastmod", "changefreq", "priority", "sitemap"), values)
    return st.fixed_dictionaries(
        {"loc": st.one_of(st.sampled_from([f"{BASE}a?x=1&y=2", f"{BASE}b", ""]), texts)},
        optional={**fields, "images": images, **more},
    )


_plain_objects = _objects(_json_texts, _plain_values, _plain_images)
_odd_objects = st.one_of(
    _plain_objects.map(lambda obj: {**obj, "news": {"title": "t"}}),
    _plain_objects.map(lambda obj: {**obj, "alternates": [{"hreflang": "en", "href": BASE}]}),
    _plain_objects.map(lambda obj: {**obj, "videos": [{}], "lastmod": True}),
    _plain_objects.map(lambda obj: {**obj, "priority": 1e400}),
    _plain_objects.map(lambda obj: {**obj, "loc": None}),
    st.tuples(_plain_objects, _odd_values).map(lambda pair: {**pair[0], "priority": pair[1]}),
    st.tuples(_plain_objects, _odd_images).map(lambda pair: {**pair[0], "images": pair[1]}),
    _plain_objects.map(lambda obj: dict(reversed(obj.items()))),
)


_clean_texts = st.one_of(st.sampled_from(["", "2024-01-01", "daily", "0.5", "\u2028", "\x85"]), _plain_texts)
_field_values = st.one_of(_clean_texts, _clean_texts, st.none(), st.floats(0, 1), st.integers(-1, 2))
_empty_extensions = st.sampled_from([[], None])
_clean_objects = _objects(
    _clean_texts,
    _field_values,
    st.lists(st.fixed_dictionaries({"loc": st.one_of(_image_urls, _image_urls, _clean_texts)}), max_size=3),
    videos=_empty_extensions,
    news=st.none(),
    alternates=_empty_extensions,
)


@st.composite
def _json_blocks(draw: st.DrawFn) -> list[str]:
    """Blocks of JSONL lines: most laid out alike (the keys of the first line in its order, with other
    values, one of the usual separators, no escapes), and in some of those one line that differs: other
    keys or order, a number, an object, images given otherwise, escapes, other spacing, a blank line."""
    separators = draw(st.sampled_from([(", ", ": "), (",", ":"), (",", ": "), (", ", ":")]))
    first = draw(_clean_objects)
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        other = draw(_clean_objects)
        obj = {}
        for key in first:
            if key in ("loc", "images"):
                obj[key] = other.get(key, first[key])
            elif key in ("videos", "alternates"):
                obj[key] = draw(_empty_extensions)
            else:
                obj[key] = draw(_field_values) if key != "news" else None
        lines.append(json.dumps(obj, separators=separators, ensure_ascii=False))
    if draw(st.integers(0, 2)) == 0:  # one line that differs
        odd = draw(st.one_of(_plain_objects, _odd_objects, _json_texts))
        text = json.dumps(odd, separators=separators, ensure_ascii=draw(st.booleans()))
        huge = '{"loc": "https://example.com/", "priority": ' + "1" * 5000 + "}"  # (the JSON module refuses)
        odd_line = draw(st.sampled_from([text, " " + text, "", json.dumps(odd), huge]))
        lines.insert(draw(st.integers(0, len(lines))), odd_line)
    return lines


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=_json_blocks(), columnar=st.booleans())
def test_a_block_read_by_its_first_lines_layout_is_the_block_read_by_the_json_module(
    lines: list[str], columnar: bool
) -> None:
    """Where the block's lines are laid out alike (and the layout reader takes them), it gives the block
    that the JSON module's reading of each line gives, column for column; where it does not take them,
    the JSON module reads them as before."""
    from sitemapkit.generator.sources.jsonl import _objects, _plain_rows, _templated_rows

    fast = _templated_rows(lines, 7, "s.jsonl", columnar)
    if fast is None:
        return
    objs = _objects(lines)
    assert objs is not None
    slow = _plain_rows(objs, 7, "s.jsonl", columnar)
    assert slow is not None
    assert [list(column) for column in fast.columns] == [list(column) for column in slow.columns]
    assert fast.images == slow.images
    assert (fast.first, fast.record(0)) == (slow.first, slow.record(0))


def test_the_layout_reader_takes_the_usual_blocks_and_leaves_the_others() -> None:
    from sitemapkit.generator.sources.jsonl import _templated_rows

    def takes(*lines: str, columnar: bool = True) -> bool:
        return _templated_rows(list(lines), 1, "s", columnar) is not None

    image = {"loc": BASE + "a", "lastmod": "2024-01-01", "images": [{"loc": BASE + "i.png"}]}
    assert takes(json.dumps(image), json.dumps({**image, "loc": BASE + "b"}))
    assert takes(json.dumps(image, separators=(",", ":")), json.dumps(image, separators=(",", ":")))
    assert takes(json.dumps({"loc": BASE + "a", "images": []}), json.dumps({"loc": BASE + "b", "images": []}))
    assert not takes('{"loc": "https://example.com/ä"}', '{"loc": "https://example.com/b", "lastmod": null}')
    assert not takes(json.dumps(image), json.dumps(image), columnar=False)  # images: not for this reader
    assert not takes(json.dumps({"loc": BASE + "a"}), json.dumps({"loc": BASE + "\u00e4"}))  # an escape
    assert takes(json.dumps({"loc": BASE, "priority": 0.5}), json.dumps({"loc": BASE, "priority": 1}))
    assert not takes(json.dumps({"loc": BASE, "priority": True}))  # (`True` as text: read one by one)
    parsed = {"loc": BASE, "lastmod": "2024-01-01", "priority": 0.6, "sitemap": BASE + "s.xml", "images": []}
    parsed |= {"videos": [], "news": None, "alternates": []}  # a line as `sitemapkit parse` writes it
    assert takes(json.dumps(parsed, separators=(",", ":")), json.dumps(parsed, separators=(",", ":")))
    assert not takes(json.dumps(parsed), json.dumps({**parsed, "videos": [{"title": "t"}]}))
    assert not takes(json.dumps({"loc": BASE}), json.dumps({"loc": BASE}) + " ")
    assert not takes(json.dumps({"loc": BASE}), "")
    assert takes(
        json.dumps({"loc": BASE, "lastmod": None}), json.dumps({"loc": BASE, "lastmod": "2024-01-01"})
    )


_url_parts = st.sampled_from(
    ["https://", "http://", "HTTPS://", "a", "A", ".", "-", "/", "..", "/.", "?", "%", " "]
)


@settings(max_examples=500, deadline=None)
@given(urls=st.sets(st.lists(_url_parts | st.text(max_size=3), max_size=8).map("".join), max_size=6))
@example(urls={"https://a./x"})  # each alone: one URL that the shared checks send one by one hides the rest
@example(urls={"https://-a/x"})
@example(urls={"https://a-/x"})
@example(urls={"https://.a/x"})
@example(urls={"https://a..b/x"})
@example(urls={"https://a/x\nhttps://b/y"})
@example(urls={"https://a/x/../y"})
@example(urls={"https://a/x/./y"})
@example(urls={"https://a/" + "x" * 2100})
def test_image_urls_checked_at_once_are_those_checked_one_by_one(urls: set[str]) -> None:
    from sitemapkit.generator.lanes import _canonical_image, _not_canonical_images

    good = {f"https://example.com/i/{i}.png?x=a&b=c" for i in range(3)}
    assert _not_canonical_images(good) == set()
    assert _not_canonical_images(urls | good) == {url for url in urls if not _canonical_image(url)}
    assert _not_canonical_images(urls) == {url for url in urls if not _canonical_image(url)}
