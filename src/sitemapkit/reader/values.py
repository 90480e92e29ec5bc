"""What the parts of the parser share about values and elements: the plain-URL regex, the schema's date form,
common priorities, and small element helpers. Pure: no state, no reporting."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final, cast
from urllib.parse import urlsplit

from sitemapkit.core.dates import parse_w3c
from sitemapkit.core.errors import InvalidDateError
from sitemapkit.core.model import Lastmod

if TYPE_CHECKING:
    from lxml import etree

SCHEMA_DATE: Final = re.compile(r"\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))?")
"""A date or date-time in the sitemap schema's form."""
DECIMAL: Final = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
PRIORITIES: Final = {
    **{f"{k / 100:.2f}": k / 100 for k in range(101)},
    **{f"{k / 10:.1f}": k / 10 for k in range(11)},
    "0": 0.0,
    "1": 1.0,
}
"""Common `<priority>` spellings, read without a regex."""

# A subset of what `urls.check_uri` accepts (no `%`, lowercase ASCII host), matched by one regex so the
# common URL costs one call; anything else goes through `check_uri`.
PLAIN_HOST: Final = r"[a-z0-9]++(?:-++[a-z0-9]++)*+(?:\.[a-z0-9]++(?:-++[a-z0-9]++)*+)*+(?::[0-9]{1,4}+)?+"
"""A lowercase name of letter-digit-hyphen labels and single dots, and a port under 10,000 (a subset of what
`check_uri` accepts)."""
PLAIN_URL: Final = re.compile(r"https?://" + PLAIN_HOST + r"(?:/[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*+)?+")


def date_value(text: str) -> tuple[Lastmod | None, str | None]:
    """Read a W3C Datetime: (value, problem). A value with a problem is a W3C form the schema rejects;
    no value means the text is not a date at all."""
    if SCHEMA_DATE.fullmatch(text) is not None:
        try:
            if len(text) == 10:
                return dt.date.fromisoformat(text), None
            return dt.datetime.fromisoformat(text), None
        except ValueError:
            return None, "no such date or time"
    try:
        value = parse_w3c(text)
    except InvalidDateError as exc:
        reason = str(exc)
        if "without a timezone" in reason:
            return None, "the time has no timezone (add Z or +hh:mm)"
        if "not a valid date" in reason or "out of range" in reason:
            return None, "no such date or time"
        return None, "it is not in the form YYYY-MM-DD or YYYY-MM-DDThh:mm:ss+hh:mm"
    return (
        value,
        "the sitemap schema accepts only YYYY-MM-DD or a date-time with seconds (it was read anyway)",
    )


def usable_url(url: str) -> bool:
    """An absolute http(s) URL with a host, however badly escaped: worth keeping after a report."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def split_tag(tag: str) -> tuple[str, str]:
    """`{namespace}local` as (namespace, local); no namespace is ""."""
    if tag[:1] == "{":
        ns, _, local = tag[1:].partition("}")
        return ns, local
    return "", tag


def element_text(el: etree._Element) -> str:
    """The text of an element and of its descendants."""
    text = el.text
    if len(el):
        return "".join(cast("Iterator[str]", el.itertext()))
    return text or ""
