"""The entry types pickle (for worker processes and caches) with every field, `sitemap` and `line` too."""

from __future__ import annotations

import datetime as dt
import pickle

from sitemapkit.core.model import Alternate, Image, IndexEntry, News, UrlEntry, Video


def test_every_entry_type_survives_pickling_whole() -> None:
    when = dt.datetime(2024, 5, 1, 10, 0, tzinfo=dt.UTC)
    entry = UrlEntry(
        "https://example.com/a",
        when,
        "daily",
        0.5,
        (Image("https://example.com/i.png", caption="c"),),
        (Video("https://example.com/t.png", "T", "D", content_loc="https://example.com/v.mp4", tags=("a",)),),
        News("The Times", "en", when, "Headline"),
        (Alternate("en", "https://example.com/a"),),
        "sitemap.xml",
        7,
    )
    index = IndexEntry("https://example.com/s.xml", dt.date(2024, 5, 1), "index.xml", 3)
    for value in (entry, index):
        copy = pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))
        assert copy == value and type(copy) is type(value)
        assert (copy.sitemap, copy.line) == (value.sitemap, value.line)  # not part of equality, still kept
