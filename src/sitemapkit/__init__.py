"""sitemapkit: generate, read, validate and publish XML sitemaps.

The public API is what this module exports; everything else is internal.
"""

from __future__ import annotations

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
from sitemapkit.generator import generate
from sitemapkit.model import Alternate, Image, IndexEntry, News, UrlEntry, Video
from sitemapkit.urls import Scope, normalize_url
from sitemapkit.writer import PublishResult, SitemapFile, SitemapWriter

__all__ = [
    "CODES",
    "Alternate",
    "Diagnostic",
    "DiagnosticLog",
    "Image",
    "IndexEntry",
    "InputError",
    "InvalidDateError",
    "InvalidUrlError",
    "News",
    "PublishError",
    "PublishResult",
    "Scope",
    "Severity",
    "SitemapFile",
    "SitemapWriter",
    "SitemapkitError",
    "StrictModeError",
    "UrlEntry",
    "UsageError",
    "Video",
    "format_w3c",
    "generate",
    "normalize_url",
    "parse_w3c",
]
