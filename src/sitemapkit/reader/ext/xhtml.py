"""`<xhtml:link rel="alternate" hreflang=... href=...>`: a page's alternate for a language or region."""

from __future__ import annotations

from typing import Final

from lxml import etree

from sitemapkit.core.constants import MAX_URL_LENGTH, NS_XHTML
from sitemapkit.core.languages import hreflang_problem
from sitemapkit.core.model import Alternate
from sitemapkit.core.urls import check_uri
from sitemapkit.reader.context import Context
from sitemapkit.reader.values import usable_url


class XhtmlHandler:
    """Reads one `<xhtml:link>` into an `Alternate`."""

    namespace: Final = NS_XHTML
    element: Final = "link"
    names: Final = ("link",)

    def __init__(self, context: Context) -> None:
        self._context = context

    def read(self, el: etree._Element, page: str | None, nth: int = 1) -> Alternate | None:
        """The alternate `el` names for the page `page`, or None (reported) when it names none."""
        context = self._context
        line = context.line(el)
        rel = (el.get("rel") or "").strip()
        hreflang = el.get("hreflang")
        href = el.get("href")
        if rel.lower() != "alternate":
            context.report(
                "invalid-value",
                f'<xhtml:link> has rel={rel!r}; hreflang links need rel="alternate". It was ignored.',
                line,
                url=page,
            )
            return None
        missing = [a for a, v in (("hreflang", hreflang), ("href", href)) if v is None or not v.strip()]
        if missing:
            context.report(
                "missing-tag",
                "<xhtml:link> lacks the " + " and ".join(missing) + " attribute; the alternate was ignored.",
                line,
                url=page,
            )
            return None
        assert hreflang is not None and href is not None
        problem = hreflang_problem(hreflang)
        if problem is not None:
            context.report(
                "hreflang-invalid",
                f"hreflang {hreflang!r} is not valid: {problem}. It was read as written.",
                line,
                url=page,
            )
        url = href.strip()
        check = check_uri(url)
        if check is not None or len(url) >= MAX_URL_LENGTH:
            usable = usable_url(url) and len(url) < MAX_URL_LENGTH
            ignored = "read as written" if usable else "the alternate was ignored"
            context.report(
                "invalid-url",
                f"<xhtml:link> href {url[:200]!r} is not a valid absolute URL ({check or 'too long'}); "
                f"{ignored}.",
                line,
                url=page,
            )
            if not usable:
                return None
        return Alternate(hreflang.strip(), url)
