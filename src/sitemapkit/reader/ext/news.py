"""`<news:news>`: the news extension (http://www.google.com/schemas/sitemap-news/0.9)."""

from __future__ import annotations

import re
from typing import Final

from lxml import etree

from sitemapkit.core.constants import MAX_NEWS_PER_SITEMAP, NS_NEWS
from sitemapkit.core.languages import LANGUAGE_CODES
from sitemapkit.core.model import Lastmod, News
from sitemapkit.reader.context import Context
from sitemapkit.reader.values import element_text, split_tag

_LANGUAGE: Final = re.compile(r"[a-z]{2,3}|zh-cn|zh-tw", re.IGNORECASE)


class NewsHandler:
    """Reads the `<news:news>` of a `<url>` (one at most) into a `News`, counting them over the sitemap."""

    namespace: Final = NS_NEWS
    element: Final = "news"
    names: Final = ("news", "publication", "name", "language", "publication_date", "title")

    def __init__(self, context: Context) -> None:
        self._context = context
        self._count = 0  # <news:news> read in this sitemap

    def read(self, el: etree._Element, page: str | None, nth: int = 1) -> News | None:
        """The news `el` describes (the `nth` of its `<url>`, whose `<loc>` is `page`), or None (reported)."""
        context = self._context
        if nth > 1:
            context.too_many("news:news", context.line(el), page)
            return None
        values: dict[str, str] = {}
        date: Lastmod | None = None
        date_seen = False
        for local, child, line in context.children(el, NS_NEWS, page, "<news:news>"):
            if local == "publication":
                if "publication" in values:
                    context.too_many("news:publication", line, page)
                    continue
                values["publication"] = ""
                self._publication(child, page, values)
            elif local == "publication_date":
                if date_seen:
                    context.too_many("news:publication_date", line, page)
                    continue
                date_seen = True
                date = context.date(element_text(child), "news:publication_date", line, page)
            elif local in ("title", "keywords", "stock_tickers"):
                if local in values:
                    context.too_many(f"news:{local}", line, page)
                    continue
                if local != "title":
                    context.deprecated(f"news:{local}", line, page)
                values[local] = element_text(child).strip()
            elif local in ("genres", "access"):
                context.deprecated(f"news:{local}", line, page, kept=False)
            else:
                context.unknown(local, NS_NEWS, line, page, "<news:news>")
        missing = [f"<news:{t}>" for t in ("name", "language", "title") if not values.get(t)]
        if not date_seen:
            missing.insert(2, "<news:publication_date>")
        if missing:
            context.report(
                "missing-tag",
                "<news:news> lacks " + ", ".join(missing) + "; the news block was ignored.",
                context.line(el),
                url=page,
            )
            return None
        if date is None:
            return None
        language = values["language"]
        if _LANGUAGE.fullmatch(language) is None or (
            len(language) == 2 and language.lower() not in LANGUAGE_CODES
        ):
            context.report(
                "invalid-value",
                f"<news:language> {language!r} is not an ISO 639 code (like en, or zh-cn / zh-tw); "
                "it was read as written.",
                context.line(el),
                url=page,
            )
        self._count += 1
        if self._count == MAX_NEWS_PER_SITEMAP + 1:
            context.report(
                "news-too-many",
                f"More than {MAX_NEWS_PER_SITEMAP:,} URLs carry <news:news>; split the news sitemap.",
                context.line(el),
                url=page,
            )
        return News(
            values["name"],
            language,
            date,
            values["title"],
            values.get("keywords"),
            values.get("stock_tickers"),
        )

    def _publication(self, el: etree._Element, page: str | None, values: dict[str, str]) -> None:
        context = self._context
        for part in el:
            ptag = part.tag
            if not isinstance(ptag, str):
                continue
            pns, plocal = split_tag(ptag)
            if pns == NS_NEWS and plocal in ("name", "language"):
                if plocal in values:
                    context.too_many(f"news:{plocal}", context.line(part), page)
                else:
                    values[plocal] = element_text(part).strip()
            elif pns == NS_NEWS or pns in context.core_ns:
                context.unknown(plocal, pns, context.line(part), page, "<news:publication>")
