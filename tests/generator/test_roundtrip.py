"""Round trips between our writer and our reader: whatever `SitemapWriter` publishes, `parse_file` reads back
as the same entries, with no diagnostics."""

from __future__ import annotations

import dataclasses
import datetime as dt
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.errors import InvalidUrlError
from sitemapkit.core.model import Alternate, Image, News, UrlEntry, Video
from sitemapkit.core.urls import normalize_url
from sitemapkit.generator.writer import SitemapWriter
from sitemapkit.reader.parser import parse_file

BASE = "https://example.com/"

text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\ufffe\uffff"),
    min_size=1,
    max_size=30,
).filter(lambda s: s.strip() == s)
paths = st.lists(
    st.sampled_from([*"abcXYZ019-._~!$&'()*+,;=:@/?% ", "ü", "日", "&amp;", "<", '"']), max_size=20
).map("".join)
urls = paths.map(lambda p: BASE + p)
tz = st.sampled_from(
    [dt.UTC, dt.timezone(dt.timedelta(hours=2)), dt.timezone(-dt.timedelta(hours=5, minutes=30))]
)
# before NOW: the writer leaves a future lastmod out (future-date)
datetimes = st.datetimes(min_value=dt.datetime(1990, 1, 1), max_value=dt.datetime(2026, 11, 1), timezones=tz)
lastmods = st.one_of(
    st.none(), st.dates(min_value=dt.date(1990, 1, 1), max_value=dt.date(2026, 11, 1)), datetimes
)
tenths = st.integers(0, 10).map(lambda i: i / 10)
images = st.builds(Image, urls)
videos = st.builds(
    Video,
    thumbnail_loc=urls,
    title=text,
    description=text,
    content_loc=urls.map(lambda u: u + "#video"),
    duration=st.one_of(st.none(), st.integers(1, 28_800)),
    rating=st.one_of(st.none(), st.integers(0, 50).map(lambda i: i / 10)),
    view_count=st.one_of(st.none(), st.integers(0, 10**9)),
    family_friendly=st.one_of(st.none(), st.booleans()),
    live=st.one_of(st.none(), st.booleans()),
    tags=st.lists(text, max_size=3).map(tuple),
)
NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)
recent = st.datetimes(
    min_value=dt.datetime(2026, 11, 27, 16), max_value=dt.datetime(2026, 11, 29, 6), timezones=tz
)
news = st.builds(News, text, st.sampled_from(["en", "de", "zh-cn"]), recent, text)
alternates = st.lists(
    st.builds(Alternate, st.sampled_from(["en", "de-DE", "x-default", "pt-BR"]), urls), max_size=3
)
entries = st.builds(
    UrlEntry,
    urls,
    lastmod=lastmods,
    changefreq=st.one_of(st.none(), st.sampled_from(["daily", "never", "always"])),
    priority=st.one_of(st.none(), tenths),
    images=st.lists(images, max_size=2).map(tuple),
    videos=st.lists(videos, max_size=2).map(tuple),
    news=st.one_of(st.none(), news),
    alternates=alternates.map(tuple),
)


def normalised(entry: UrlEntry) -> UrlEntry | None:
    """What the writer is expected to publish for `entry` (its URLs normalised), or None if it is rejected."""
    try:
        return UrlEntry(
            normalize_url(entry.loc),
            entry.lastmod,
            entry.changefreq,
            entry.priority,
            tuple(Image(normalize_url(i.loc)) for i in entry.images),
            tuple(
                dataclasses.replace(
                    v,
                    thumbnail_loc=normalize_url(v.thumbnail_loc or ""),
                    content_loc=normalize_url(v.content_loc or ""),
                )
                for v in entry.videos
            ),
            entry.news,
            tuple(Alternate(a.hreflang, normalize_url(a.href)) for a in entry.alternates),
        )
    except InvalidUrlError:
        return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.lists(entries, max_size=12), max_urls=st.integers(1, 4), gzip=st.booleans())
def test_what_we_write_we_read_back(batch: list[UrlEntry], max_urls: int, gzip: bool) -> None:
    expected: dict[str, UrlEntry] = {}
    with tempfile.TemporaryDirectory() as out:
        writer = SitemapWriter(out, BASE, max_urls=max_urls, gzip=gzip, index="always", now=NOW)
        with writer:
            writer.add(BASE + "anchor")
            for entry in batch:
                if writer.add_entry(entry):
                    want = normalised(entry)
                    assert want is not None
                    expected.setdefault(want.loc, want)
        assert writer.result is not None
        diagnostics: list[Diagnostic] = []
        got: list[UrlEntry] = []
        for f in writer.result.files:
            for e in parse_file(f.path, on_diagnostic=diagnostics.append):
                assert isinstance(e, UrlEntry)
                got.append(e)
        index = list(parse_file(writer.result.index.path, on_diagnostic=diagnostics.append))  # type: ignore[union-attr]
    assert [d for d in diagnostics if d.code != "news-too-old"] == []
    assert [e.loc for e in index] == [f.url for f in writer.result.files]
    assert got[0].loc == BASE + "anchor"
    assert {e.loc: e for e in got[1:]} == expected
    assert len(got) == len(expected) + 1
