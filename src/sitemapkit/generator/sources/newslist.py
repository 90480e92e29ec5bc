"""sitemap_gen.py's News URL lists: TAB-separated columns named by a `tag_order` (`loc, changefreq,
priority, lastmod, publication_date, keywords, stock_tickers, title`).

`loc`, `lastmod`, `changefreq` and `priority` are read as in a URL list in sitemap_gen.py's form (a relative
`loc` is reported and left out, as sitemap_gen.py did). The news fields become a
`<news:news>` block when the source names its publication (`publication = [NAME, LANGUAGE]`, which
sitemap_gen's config has no place for) and the line has a `publication_date` and a `title`; otherwise the
URL is kept without it, and the run says why once per file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from sitemapkit.core.dates import parse_w3c
from sitemapkit.core.diagnostics import Diagnostic, DiagnosticHandler
from sitemapkit.core.errors import InvalidDateError, UsageError
from sitemapkit.core.model import News, UrlEntry
from sitemapkit.generator.sources.records import TextRecord, entry_from_text

NEWS_TAGS = (
    "loc",
    "changefreq",
    "priority",
    "lastmod",
    "publication_date",
    "keywords",
    "stock_tickers",
    "title",
)


def check_tag_order(tags: tuple[str, ...]) -> tuple[str, ...]:
    """`tags` lowercased and checked: known names, each once, `loc` among them. Raises `UsageError`."""
    out = tuple(t.strip().lower() for t in tags)
    for tag in out:
        if tag not in NEWS_TAGS:
            raise UsageError(f"unknown tag {tag!r} in tag_order (known: {', '.join(NEWS_TAGS)})")
    if len(set(out)) != len(out):
        raise UsageError("a tag appears twice in tag_order")
    if "loc" not in out:
        raise UsageError("tag_order must name loc")
    return out


def read_news_list(
    name: str,
    tag_order: tuple[str, ...],
    report: DiagnosticHandler,
    *,
    encoding: str | None = None,
    publication: tuple[str, str] | None = None,
) -> Iterator[UrlEntry]:
    """The entries of a TAB-separated news list whose columns `tag_order` names (see the module docstring)."""
    from sitemapkit.generator.sources.lists import relative_dropped
    from sitemapkit.generator.sources.textblocks import FieldReporter, decoded_blocks, open_input

    stream = open_input(name)
    fields = FieldReporter(name, report)
    said = False
    try:
        for first, lines, _ in decoded_blocks(stream, fields, encoding):
            for number, text in enumerate(lines, start=first):
                line = text.strip()
                if not line or line.startswith("#"):
                    continue
                values = {tag: cell.strip() for tag, cell in zip(tag_order, text.split("\t"), strict=False)}
                values = {k: v for k, v in values.items() if v}
                loc = values.get("loc")
                if not loc:
                    fields.bad_line("no URL in the loc column; the line is skipped", number)
                    continue
                if relative_dropped(loc, fields.source, number, report):
                    continue
                record = TextRecord(
                    loc, values.get("lastmod"), values.get("changefreq"), values.get("priority"), name, number
                )
                entry = entry_from_text(record, report)
                news, why = _news(values, publication)
                if news is not None:
                    entry = dataclasses.replace(entry, news=news)
                elif why and not said and any(values.get(t) for t in NEWS_TAGS[4:]):
                    said = True
                    report(
                        Diagnostic.make(
                            "invalid-value",
                            f"the news fields are not written: {why} (said once per file)",
                            source=name,
                            line=number,
                            url=loc,
                        )
                    )
                yield entry
    finally:
        stream.close()


def _news(values: dict[str, str], publication: tuple[str, str] | None) -> tuple[News | None, str]:
    if publication is None:
        return (
            None,
            "the source names no publication (publication = [NAME, LANGUAGE]), which Google News needs",
        )
    date_text, title = values.get("publication_date"), values.get("title")
    if not date_text or not title:
        return None, "a news URL needs a publication_date and a title"
    try:
        date = parse_w3c(date_text, allow_naive=True)
    except InvalidDateError:
        return None, f"publication_date {date_text!r} is not a W3C Datetime"
    return News(
        publication[0], publication[1], date, title, values.get("keywords"), values.get("stock_tickers")
    ), ""
