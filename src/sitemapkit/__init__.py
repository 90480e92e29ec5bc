"""sitemapkit: generate, read, validate and publish XML sitemaps.

The public API is what this module exports; everything else is internal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitemapkit.dates import format_w3c, parse_w3c
from sitemapkit.diagnostics import CODES, Diagnostic, DiagnosticLog, Severity
from sitemapkit.errors import (
    InputError,
    InvalidDateError,
    InvalidUrlError,
    PublishError,
    SitemapkitError,
    StrictModeError,
    UsageError,
)
from sitemapkit.model import Alternate, Image, IndexEntry, News, UrlEntry, Video
from sitemapkit.urls import Scope, normalize_url

if TYPE_CHECKING:
    from sitemapkit.generator import generate
    from sitemapkit.parser import SitemapParser, parse_bytes, parse_file
    from sitemapkit.reader import AsyncReader, Reader, SitemapNode, aread, read
    from sitemapkit.validation import FileReport, ValidationReport, avalidate, validate
    from sitemapkit.writer import PublishResult, SitemapFile, SitemapWriter

# The pure core is imported at once; each front end (writer, reader with httpx, parser with lxml,
# validator) loads on first use, so `import sitemapkit` stays quick and a script pays only for what it uses.
_LAZY = {
    "generate": "sitemapkit.generator",
    "PublishResult": "sitemapkit.writer",
    "SitemapFile": "sitemapkit.writer",
    "SitemapWriter": "sitemapkit.writer",
    "FileReport": "sitemapkit.validation",
    "ValidationReport": "sitemapkit.validation",
    "avalidate": "sitemapkit.validation",
    "validate": "sitemapkit.validation",
    "AsyncReader": "sitemapkit.reader",
    "Reader": "sitemapkit.reader",
    "SitemapNode": "sitemapkit.reader",
    "aread": "sitemapkit.reader",
    "read": "sitemapkit.reader",
    "SitemapParser": "sitemapkit.parser",
    "parse_bytes": "sitemapkit.parser",
    "parse_file": "sitemapkit.parser",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sitemapkit' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "CODES",
    "Alternate",
    "AsyncReader",
    "Diagnostic",
    "DiagnosticLog",
    "FileReport",
    "Image",
    "IndexEntry",
    "InputError",
    "InvalidDateError",
    "InvalidUrlError",
    "News",
    "PublishError",
    "PublishResult",
    "Reader",
    "Scope",
    "Severity",
    "SitemapFile",
    "SitemapNode",
    "SitemapParser",
    "SitemapWriter",
    "SitemapkitError",
    "StrictModeError",
    "UrlEntry",
    "UsageError",
    "ValidationReport",
    "Video",
    "aread",
    "avalidate",
    "format_w3c",
    "generate",
    "normalize_url",
    "parse_bytes",
    "parse_file",
    "parse_w3c",
    "read",
    "validate",
]
