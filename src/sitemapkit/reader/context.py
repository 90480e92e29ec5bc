"""What every part of one `SitemapParser` shares, and nothing more: where diagnostics go (with the source and
the count of parse errors), how an lxml element's line maps to the document's, the root's namespaces and each
extension namespace's tag names (for "did you mean" hints), and the dates read so far."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Final

from lxml import etree

from sitemapkit.core.constants import MAX_URL_LENGTH
from sitemapkit.core.diagnostics import Diagnostic, Severity
from sitemapkit.core.model import Lastmod
from sitemapkit.core.urls import check_uri
from sitemapkit.reader.feeds import source_line
from sitemapkit.reader.values import SCHEMA_DATE, date_value, element_text, split_tag, usable_url

if TYPE_CHECKING:
    from collections.abc import Iterable

DiagnosticCallback = Callable[[Diagnostic], None]

CORE_NAMES: Final = ("loc", "lastmod", "changefreq", "priority")
"""The children of `<url>` in the sitemap namespace, in their order."""
MAX_PARSE_ERRORS: Final = 1000
"""Parse errors reported one by one; after these, one more says that no more are."""
_DATE_CACHE_SIZE: Final = 4096


class Context:
    """The shared services of one parser's parts (see the module)."""

    def __init__(self, source: str, on_diagnostic: DiagnosticCallback | None) -> None:
        self.source = source
        self.line_offset = 0
        """Added to lxml's lines: the document line of line 1 of the current lxml parser, less one."""
        self.core_ns: frozenset[str] = frozenset()
        """The root's namespace and the sitemap namespaces (old, https, none) read as it."""
        self.dates: dict[str, Lastmod] = {}
        """Dates in the schema's form read so far, by their text (cleared when it grows large)."""
        self.parse_errors = 0
        self._on_diagnostic = on_diagnostic
        self._names: dict[str, tuple[str, ...]] = {}

    # -- diagnostics ------------------------------------------------------------------------------------

    def report(
        self,
        code: str,
        message: str,
        line: int | None = None,
        *,
        url: str | None = None,
        column: int | None = None,
        severity: Severity | None = None,
    ) -> None:
        """Pass a diagnostic about the source to the parser's callback."""
        if self._on_diagnostic is not None:
            self._on_diagnostic(
                Diagnostic.make(
                    code, message, source=self.source, line=line, column=column, url=url, severity=severity
                )
            )

    def parse_error(self, message: str, line: int | None, column: int | None = None) -> None:
        """Report a parse error, up to `MAX_PARSE_ERRORS` of them (then once that there are more)."""
        self.parse_errors += 1
        if self.parse_errors <= MAX_PARSE_ERRORS:
            self.report("parse-error", message, line, column=column)
        elif self.parse_errors == MAX_PARSE_ERRORS + 1:
            self.report("parse-error", f"More than {MAX_PARSE_ERRORS} parse errors; no more are reported.")

    def line(self, el: etree._Element) -> int | None:
        """The document line `el` starts on."""
        line = source_line(el)
        return line + self.line_offset if line is not None else None

    # -- tags --------------------------------------------------------------------------------------------

    def add_names(self, namespace: str, names: Iterable[str]) -> None:
        """Name the tags of an extension namespace (for hints, and `known`)."""
        self._names[namespace] = tuple(names)

    def known(self, namespace: str) -> bool:
        """Whether tags of `namespace` are the sitemap's own or an extension's (and so worth a report)."""
        return namespace in self.core_ns or namespace in self._names

    def children(
        self, el: etree._Element, namespace: str, url: str | None, where: str
    ) -> Iterator[tuple[str, etree._Element, int | None]]:
        """(local name, element, line) of each child of `el` in `namespace`, in document order; a child of
        another namespace worth a report (`known`) is reported as not allowed `where`, others skipped."""
        for child in el:
            tag = child.tag
            if not isinstance(tag, str):
                continue
            ns, local = split_tag(tag)
            line = self.line(child)
            if ns == namespace:
                yield local, child, line
            elif self.known(ns):
                self.unknown(local, ns, line, url, where)

    def unknown(self, local: str, ns: str, line: int | None, url: str | None, where: str) -> None:
        """Report a tag not allowed where it is, with the closest tag of its namespace as a hint."""
        names = self._names.get(ns, CORE_NAMES)
        import difflib  # only for this hint: not worth importing for every document

        close = difflib.get_close_matches(local, names, n=1)
        hint = f" (did you mean <{close[0]}>?)" if close else ""
        self.report("unknown-tag", f"<{local}> is not a tag of {where}{hint}; it was ignored.", line, url=url)

    def too_many(self, tag: str, line: int | None, url: str | None) -> None:
        self.report(
            "too-many-tags",
            f"<{tag}> appears more than once; only the first was read. Keep one.",
            line,
            url=url,
        )

    def deprecated(self, tag: str, line: int | None, url: str | None, kept: bool = True) -> None:
        what = "it was read, but" if kept else "it was ignored, and"
        self.report(
            "deprecated-tag",
            f"<{tag}> is deprecated (Google no longer uses it); {what} it can be removed.",
            line,
            url=url,
        )

    def extension_url(self, el: etree._Element, tag: str, page: str | None) -> str | None:
        """The URL an extension element holds; a bad one is reported, and kept only if usable."""
        raw = element_text(el).strip()
        problem = check_uri(raw) if raw else "empty"
        if problem is None and len(raw) < MAX_URL_LENGTH:
            return raw
        line = self.line(el)
        if not raw:
            self.report("invalid-url", f"<{tag}> is empty; give an absolute URL.", line, url=page)
            return None
        usable = usable_url(raw)
        if problem is None or problem == "too long":
            problem = f"{len(raw):,} characters; the limit is {MAX_URL_LENGTH - 1:,}"
        ignored = " (it was read as written)" if usable else "; it was ignored"
        self.report(
            "invalid-url", f"<{tag}> {raw[:200]!r} is not a valid URL ({problem}){ignored}.", line, url=page
        )
        return raw if usable else None

    # -- dates -------------------------------------------------------------------------------------------

    def schema_date(self, text: str) -> Lastmod | None:
        """A date or date-time exactly in the schema's form, remembered; else None (nothing reported)."""
        if SCHEMA_DATE.fullmatch(text) is None:
            return None
        return self.store_date(text)

    def store_date(self, text: str) -> Lastmod | None:
        """`schema_date` for a text known to be in the schema's form."""
        try:
            value: Lastmod = (
                dt.datetime.fromisoformat(text) if len(text) > 10 else dt.date.fromisoformat(text)
            )
        except ValueError:
            return None
        cache = self.dates
        if len(cache) >= _DATE_CACHE_SIZE:
            cache.clear()
        cache[text] = value
        return value

    def date(
        self, text: str | None, tag: str, where: etree._Element | int | None, url: str | None
    ) -> Lastmod | None:
        """Read a W3C Datetime; report it (at `where`, an element or a line) when the schema rejects it."""
        if text is not None:
            cached = self.dates.get(text)
            if cached is not None:
                return cached
            value = self.schema_date(text)
            if value is not None:
                return value
        s = (text or "").strip()
        found, problem = date_value(s) if s else (None, "it is empty")
        if problem is None:
            return found
        line = self.line(where) if isinstance(where, etree._Element) else where
        kept = "" if found is not None else " It was ignored."
        self.report(
            "invalid-date",
            f"<{tag}> {s!r} is not a valid date: {problem}. Write a W3C Datetime such as 2024-05-01 or "
            f"2024-05-01T12:00:00+00:00.{kept}",
            line,
            url=url,
        )
        return found
