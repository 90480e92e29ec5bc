"""The general path's shortcuts held to what they stand for: a TAB line's positional fields read as
`_fields_from` reads them, `entry_from_text` the same on a second reading of a record (its remembered
changefreq and priority spellings), and `format_priority` the same whatever it wrote before."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.generator.serialize import format_priority
from sitemapkit.generator.sources import jsonl, lists, textblocks
from sitemapkit.generator.sources.records import TextRecord, entry_from_text

_fields = st.sampled_from(
    [
        "",
        " ",
        "2024-05-01",
        " 2024-05-01T10:00:00Z ",
        "2024",
        "2024-13-01",
        "Daily",
        " weekly ",
        "WEEKLY",
        "often",
        "0.5",
        " .50",
        "-0",
        "1.5",
        "nan",
        "x=1",
        "lastmod=2024-01-01",
        "#",
        "a b",
    ]
)


def _old_list_record(text: str, number: int, fields: lists.FieldReporter) -> TextRecord | None:
    """`_list_record` for a line with a TAB, as it read every such line before (through `_fields_from`)."""
    url, *rest = text.split("\t")
    url = url.strip()
    if not text.strip() or url.startswith("#"):
        return None
    if not url:
        fields.bad_line("fields but no URL at the start of the line; the line is skipped", number)
        return None
    values = lists._fields_from(rest, fields, number, positional=True)
    return TextRecord(
        url, values.get("lastmod"), values.get("changefreq"), values.get("priority"), fields.source, number
    )


@settings(max_examples=500)
@given(
    st.sampled_from(["https://example.com/a", " /b ", "", " ", "#c", "https://x/?q=1"]),
    st.lists(_fields, max_size=5),
)
@example("https://example.com/a", ["2024-05-01", "Daily", "0.5"])
@example("", ["2024-05-01"])
def test_a_tab_line_reads_as_fields_from_reads_it(url: str, rest: list[str]) -> None:
    text = "\t".join([url, *rest]) if rest else url + "\t"
    got: list[Diagnostic] = []
    want: list[Diagnostic] = []
    record = lists._list_record(text, 7, lists.FieldReporter("in.txt", got.append))
    assert record == _old_list_record(text, 7, lists.FieldReporter("in.txt", want.append))
    assert got == want


@settings(max_examples=300)
@given(_fields, _fields, _fields)
@example("2024-05-01", "Daily", "-0")
def test_entry_from_text_reads_a_record_the_same_twice(lastmod: str, changefreq: str, priority: str) -> None:
    record = TextRecord("https://example.com/a", lastmod, changefreq, priority, "in.txt", 3)
    first: list[Diagnostic] = []
    second: list[Diagnostic] = []
    entry = entry_from_text(record, first.append)
    again = entry_from_text(record, second.append)
    assert (entry, entry.sitemap, entry.line) == (again, again.sitemap, again.line)
    assert first == second
    if changefreq.strip().lower() in ("daily", "weekly"):
        assert entry.changefreq == changefreq.strip().lower()


def test_format_priority_keeps_the_sign_of_zero_whatever_came_before() -> None:
    assert [format_priority(x) for x in (0.0, -0.0, 0.5, 0.5, -0.0, 0.0)] == [
        "0.0",
        "-0.0",
        "0.5",
        "0.5",
        "-0.0",
        "0.0",
    ]


_values = st.sampled_from(["https://example.com/i.jpg", "", "en", None, 3, ["x"]])
_items = st.dictionaries(
    st.sampled_from(["loc", "hreflang", "href", "caption", "title", "x"]), _values, max_size=4
)


@settings(max_examples=500)
@given(st.sampled_from(["https://example.com/a", ""]), st.sampled_from(["images", "alternates"]), _items)
@example("https://example.com/a", "images", {"loc": "https://example.com/i.jpg"})
@example("", "images", {"loc": "https://example.com/i.jpg"})
@example("https://example.com/a", "alternates", {"hreflang": "en", "href": "https://example.com/a", "x": 3})
def test_an_extension_item_reads_as_entry_from_dict_reads_it(
    loc: str, key: str, item: dict[str, object]
) -> None:
    from sitemapkit.core.errors import InputError
    from sitemapkit.reader.export import entry_from_dict

    got: list[Diagnostic] = []
    kept = jsonl.read_extension(loc, key, [item], textblocks.FieldReporter("in.jsonl", got.append), 4)
    try:
        want = getattr(entry_from_dict({"loc": loc, key: [item]}), key)
    except InputError:
        assert (kept, len(got)) == ((), 1)
    else:
        assert (kept, got) == (want, [])
