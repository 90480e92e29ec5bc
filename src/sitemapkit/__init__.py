"""sitemapkit: generate, read, validate and publish XML sitemaps.

The public API is what this module exports; everything else is internal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitemapkit.core.dates import format_w3c, parse_w3c
from sitemapkit.core.diagnostics import CODES, Diagnostic, DiagnosticLog, Severity
from sitemapkit.core.errors import (
    InputError,
    InvalidDateError,
    InvalidUrlError,
    PublishError,
    SitemapkitError,
    StrictModeError,
    UsageError,
)
from sitemapkit.core.model import Alternate, Image, IndexEntry, News, UrlEntry, Video
from sitemapkit.core.urls import Scope, normalize_url

if TYPE_CHECKING:
    from sitemapkit.generator.run import generate
    from sitemapkit.generator.writer import PublishResult, SitemapFile, SitemapWriter
    from sitemapkit.reader.parser import SitemapParser, parse_bytes, parse_file
    from sitemapkit.reader.walk import AsyncReader, Reader, SitemapNode, aread, read
    from sitemapkit.validator.report import FileReport, ValidationReport
    from sitemapkit.validator.run import avalidate, validate

# The pure core is imported at once; each front end (writer, reader with httpx, parser with lxml,
# validator) loads on first use, so `import sitemapkit` stays quick and a script pays only for what it uses.
_LAZY = {
    "generate": "sitemapkit.generator.run",
    "PublishResult": "sitemapkit.generator.writer",
    "SitemapFile": "sitemapkit.generator.writer",
    "SitemapWriter": "sitemapkit.generator.writer",
    "FileReport": "sitemapkit.validator.report",
    "ValidationReport": "sitemapkit.validator.report",
    "avalidate": "sitemapkit.validator.run",
    "validate": "sitemapkit.validator.run",
    "AsyncReader": "sitemapkit.reader.walk",
    "Reader": "sitemapkit.reader.walk",
    "SitemapNode": "sitemapkit.reader.walk",
    "aread": "sitemapkit.reader.walk",
    "read": "sitemapkit.reader.walk",
    "SitemapParser": "sitemapkit.reader.parser",
    "parse_bytes": "sitemapkit.reader.parser",
    "parse_file": "sitemapkit.reader.parser",
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
