"""Text encodings of input files (URL lists and access logs): `--encoding NAME`, `encoding =` in
`sitemapkit.toml`, `encoding=` and `default_encoding=` in sitemap_gen's config.xml.

Lines are split on the byte LF before they are decoded, so only encodings that write ASCII as ASCII
(UTF-8, Latin-1, Windows-1252, Shift JIS, EUC-KR, ...) can be read; UTF-16 and UTF-32 cannot.
"""

from __future__ import annotations

import codecs

from sitemapkit.core.errors import UsageError


def check_encoding(name: str) -> str:
    """The codec name Python knows `name` by (`latin-1` -> `iso8859-1`). Raises `UsageError` for an
    unknown encoding or one that does not write ASCII as ASCII."""
    try:
        info = codecs.lookup(name)
    except LookupError:
        raise UsageError(f"unknown encoding {name!r} (try utf-8, latin-1, cp1252)") from None
    if info.name == "utf-8-sig":
        return "utf-8"  # a leading BOM is removed from UTF-8 input anyway
    sample = "http://a.example/?x=1&y=2#\t\n"
    try:
        ascii_compatible = sample.encode(info.name) == sample.encode("ascii")
    except (UnicodeError, LookupError):
        ascii_compatible = False
    if not ascii_compatible:
        raise UsageError(f"encoding {name!r} does not write ASCII as ASCII; convert the file to UTF-8 first")
    return info.name


def is_utf8(name: str | None) -> bool:
    """Whether `name` (a checked codec name, or None for the default) is UTF-8."""
    return name is None or codecs.lookup(name).name == "utf-8"
