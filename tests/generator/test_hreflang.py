"""hreflang group completion in the writer: every member lists every member, never one-sided."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemapkit import parse_file, validate
from sitemapkit.core.model import Alternate, UrlEntry
from sitemapkit.generator.writer import SitemapWriter

BASE = "https://example.com/"


def write(out: Path, entries: list[UrlEntry], **kw: object) -> tuple[dict[str, UrlEntry], list[str]]:
    codes: list[str] = []
    with SitemapWriter(
        out, BASE, hreflang="complete", on_diagnostic=lambda d: codes.append(d.code), **kw
    ) as w:  # type: ignore[arg-type]
        for e in entries:
            w.add_entry(e)
    assert w.result is not None
    read: dict[str, UrlEntry] = {}
    for f in w.result.files:
        for entry in parse_file(f.path):
            assert isinstance(entry, UrlEntry)
            read[entry.loc] = entry
    return read, codes


def page(path: str, *alternates: tuple[str, str]) -> UrlEntry:
    return UrlEntry(BASE + path, alternates=tuple(Alternate(code, BASE + href) for code, href in alternates))


def langs(entry: UrlEntry) -> set[tuple[str, str]]:
    return {(a.hreflang, a.href.removeprefix(BASE)) for a in entry.alternates}


def test_one_sided_declarations_are_completed(tmp_path: Path) -> None:
    read, codes = write(
        tmp_path,
        [
            page("en", ("fr", "fr")),  # English names French but not itself
            page("fr"),  # French names nothing (and comes before anyone names it as a member... of a group)
            page("de", ("en", "en")),  # German names English; nobody declares German
            page("plain"),
        ],
    )
    group = {("en", "en"), ("fr", "fr")}
    assert langs(read[BASE + "en"]) == group
    assert langs(read[BASE + "fr"]) == group
    assert langs(read[BASE + "de"]) == set()  # its own language is unknown: others could not link back
    assert langs(read[BASE + "plain"]) == set()
    assert codes == ["hreflang-missing-self"]
    assert list(read) == [BASE + "en", BASE + "fr", BASE + "de", BASE + "plain"]  # order kept


def test_x_default_groups_merge_and_external_members(tmp_path: Path) -> None:
    read, codes = write(
        tmp_path,
        [
            page("a", ("en", "a"), ("x-default", "a")),
            page("c", ("es", "c"), ("it", "d")),
            page("d"),
            page("b", ("fr", "b"), ("en", "a"), ("es", "c")),  # joins the two groups
            page("e", ("en", "e"), ("pt", "elsewhere")),  # a member outside the set
        ],
    )
    group = {("en", "a"), ("x-default", "a"), ("es", "c"), ("it", "d"), ("fr", "b")}
    for p in "abcd":
        assert langs(read[BASE + p]) == group, p
    assert [a.hreflang for a in read[BASE + "a"].alternates][-1] == "x-default"
    assert langs(read[BASE + "e"]) == set()  # a group of one page
    assert codes == ["hreflang-not-listed"]


def test_a_shared_x_default_does_not_merge_groups(tmp_path: Path) -> None:
    read, codes = write(
        tmp_path,
        [
            page("", ("x-default", "")),  # the language picker
            page("en/a", ("en", "en/a"), ("fr", "fr/a"), ("x-default", "")),
            page("fr/a", ("en", "en/a"), ("fr", "fr/a"), ("x-default", "")),
            page("en/b", ("en", "en/b"), ("fr", "fr/b"), ("x-default", "")),
            page("fr/b", ("en", "en/b"), ("fr", "fr/b"), ("x-default", "")),
            page("en/c", ("en", "en/c"), ("x-default", "fr/c")),  # an x-default only one group names...
            page("fr/c"),  # ...is a member of it
        ],
    )
    for x in "ab":
        group = {("en", f"en/{x}"), ("fr", f"fr/{x}"), ("x-default", "")}
        assert langs(read[BASE + f"en/{x}"]) == group and langs(read[BASE + f"fr/{x}"]) == group
    assert langs(read[BASE]) == set()
    group = {("en", "en/c"), ("x-default", "fr/c")}
    assert langs(read[BASE + "en/c"]) == group and langs(read[BASE + "fr/c"]) == group
    assert codes == []


def test_two_urls_claiming_one_language_keep_the_first(tmp_path: Path) -> None:
    read, codes = write(
        tmp_path,
        [
            page("one", ("en", "one"), ("de", "two")),
            page("two"),
            page("three", ("en", "three"), ("de", "two")),
        ],
    )
    assert langs(read[BASE + "one"]) == {("en", "one"), ("de", "two")}
    assert langs(read[BASE + "two"]) == {("en", "one"), ("de", "two")}
    assert langs(read[BASE + "three"]) == set()  # "en" is taken by /one, so /three is not a member
    assert codes == ["hreflang-conflict", "hreflang-missing-self"]


def test_keep_mode_writes_alternates_as_given(tmp_path: Path) -> None:
    with SitemapWriter(tmp_path, BASE) as w:
        w.add_entry(page("en", ("fr", "fr")))
        w.add_entry(page("fr"))
    assert w.result is not None
    entries = [e for e in parse_file(w.result.files[0].path) if isinstance(e, UrlEntry)]
    assert langs(entries[0]) == {("fr", "fr")} and langs(entries[1]) == set()


def test_completed_output_is_valid_and_the_temp_file_is_gone(tmp_path: Path) -> None:
    entries = [
        page(f"{lang}/{i}", (lang, f"{lang}/{i}"), ("en", f"en/{i}"))
        for i in range(30)
        for lang in ("en", "fr", "de")
    ]
    _, codes = write(tmp_path, entries, max_urls=20, gzip=True)
    assert codes == []
    report = validate(str(tmp_path / "sitemap.xml.gz"))
    assert [d.code for d in report.diagnostics] == []
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".") and "hreflang" in p.name]


CODES = ("en", "fr", "de", "es", "x-default", "en-GB")


@st.composite
def sites(draw: st.DrawFn) -> list[UrlEntry]:
    n = draw(st.integers(1, 12))
    out: list[UrlEntry] = []
    for i in range(n):
        pairs = draw(
            st.lists(st.tuples(st.sampled_from(CODES), st.integers(0, n + 1)), max_size=4)  # n, n+1: outside
        )
        out.append(page(f"p{i}", *((code, f"p{j}") for code, j in pairs)))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sites())
def test_every_alternate_is_reciprocal(tmp_path_factory: object, site: list[UrlEntry]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as out:
        read, _ = write(Path(out), site)
    named_as_x_default: dict[str, set[str]] = {}  # x-default URL -> the pages (input) that name it
    for e in site:
        for a in e.alternates:
            if a.hreflang == "x-default":
                named_as_x_default.setdefault(a.href, set()).add(e.loc)
    shared = {href for href, pages in named_as_x_default.items() if len(pages) > 1}
    for loc, entry in read.items():
        if not entry.alternates:
            continue
        hrefs = [a.href for a in entry.alternates]
        assert len({a.hreflang.lower() for a in entry.alternates}) == len(entry.alternates)
        assert len(set(hrefs)) >= 2
        assert loc in hrefs or loc in shared  # lists itself (a shared language picker may not)
        for a in entry.alternates:
            assert a.href in read  # every member is a page of the set...
            if a.hreflang == "x-default" and a.href in shared:
                continue  # ...a site-wide language picker, named by several groups, cannot list them all
            assert langs(read[a.href]) == langs(entry)  # ...that lists exactly the same group
    assert list(read) == [e.loc for e in site]
