"""sitemapkit: generate, read, validate and publish XML sitemaps.

The public API is what this module exports; everything else is internal.
"""

from __future__ import annotations

import sys as _sys
import types as _types
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
from sitemapkit.core.lazy import lazy_exports as _lazy_exports
from sitemapkit.core.model import Alternate, Image, IndexEntry, News, UrlEntry, Video
from sitemapkit.core.urls import Scope, normalize_url

if TYPE_CHECKING:
    from sitemapkit.audit.report import AuditReport
    from sitemapkit.audit.run import aaudit, audit
    from sitemapkit.crawl.engine import CrawlProgress
    from sitemapkit.crawl.options import NetworkOptions, PublishOptions, ScopeOptions
    from sitemapkit.crawl.run import abuild, acrawl, build, crawl
    from sitemapkit.generator.config import ConfigError
    from sitemapkit.generator.robots import RobotsResult, update_robots, update_robots_text
    from sitemapkit.generator.run import generate
    from sitemapkit.generator.writer import PublishResult, SitemapFile, SitemapWriter
    from sitemapkit.harvest.options import HarvestOptions
    from sitemapkit.harvest.run import HarvestProgress, aharvest, harvest
    from sitemapkit.publisher.indexnow import IndexNowError
    from sitemapkit.reader.export import write_csv, write_jsonl
    from sitemapkit.reader.fetch import FetchError, FetchOptions, FetchPolicy
    from sitemapkit.reader.parquet import write_parquet
    from sitemapkit.reader.parser import SitemapParser, parse_bytes, parse_file
    from sitemapkit.reader.polite import Politeness
    from sitemapkit.reader.walk import AsyncReader, Reader, SitemapNode, aread, read
    from sitemapkit.validator.report import FileReport, ValidationReport
    from sitemapkit.validator.run import avalidate, validate

# The pure core is imported at once; each front end (writer, reader with httpx, parser with lxml,
# validator) loads on first use, so `import sitemapkit` stays quick and a script pays only for what it uses.
_LAZY = {
    "crawl": "sitemapkit.crawl.run",
    "acrawl": "sitemapkit.crawl.run",
    "build": "sitemapkit.crawl.run",
    "abuild": "sitemapkit.crawl.run",
    "audit": "sitemapkit.audit.run",
    "aaudit": "sitemapkit.audit.run",
    "AuditReport": "sitemapkit.audit.report",
    "harvest": "sitemapkit.harvest.run",
    "aharvest": "sitemapkit.harvest.run",
    "HarvestOptions": "sitemapkit.harvest.options",
    "HarvestProgress": "sitemapkit.harvest.run",
    "ConfigError": "sitemapkit.generator.config",
    "FetchError": "sitemapkit.reader.fetch",
    "FetchOptions": "sitemapkit.reader.fetch",
    "FetchPolicy": "sitemapkit.reader.fetch",
    "Politeness": "sitemapkit.reader.polite",
    "CrawlProgress": "sitemapkit.crawl.engine",
    "NetworkOptions": "sitemapkit.crawl.options",
    "PublishOptions": "sitemapkit.crawl.options",
    "ScopeOptions": "sitemapkit.crawl.options",
    "IndexNowError": "sitemapkit.publisher.indexnow",
    "generate": "sitemapkit.generator.run",
    "RobotsResult": "sitemapkit.generator.robots",
    "update_robots": "sitemapkit.generator.robots",
    "update_robots_text": "sitemapkit.generator.robots",
    "write_csv": "sitemapkit.reader.export",
    "write_jsonl": "sitemapkit.reader.export",
    "write_parquet": "sitemapkit.reader.parquet",
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


__getattr__ = _lazy_exports(__name__, _LAZY, cache=globals())


# `crawl`, `audit` and `harvest` name both a function exported here and a subpackage. Importing a subpackage
# (`sitemapkit.crawl.run`, by the CLI or by a test) makes Python set it as an attribute of this package,
# where it would hide the function: `from sitemapkit import crawl` would give a module. The package keeps the
# function instead; the subpackages stay importable by name (`from sitemapkit.crawl.run import CrawlSource`).
_FUNCTIONS = frozenset({"crawl", "audit", "harvest"})


class _Package(_types.ModuleType):
    def __setattr__(self, name: str, value: object) -> None:
        if name in _FUNCTIONS and isinstance(value, _types.ModuleType):
            self.__dict__.pop(name, None)  # resolved (again) by __getattr__: the function
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package

__all__ = [
    "CODES",
    "Alternate",
    "AsyncReader",
    "AuditReport",
    "ConfigError",
    "CrawlProgress",
    "Diagnostic",
    "DiagnosticLog",
    "FetchError",
    "FetchOptions",
    "FetchPolicy",
    "FileReport",
    "HarvestOptions",
    "HarvestProgress",
    "Image",
    "IndexEntry",
    "IndexNowError",
    "InputError",
    "InvalidDateError",
    "InvalidUrlError",
    "NetworkOptions",
    "News",
    "Politeness",
    "PublishError",
    "PublishOptions",
    "PublishResult",
    "Reader",
    "RobotsResult",
    "Scope",
    "ScopeOptions",
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
    "aaudit",
    "abuild",
    "acrawl",
    "aharvest",
    "aread",
    "audit",
    "avalidate",
    "build",
    "crawl",
    "format_w3c",
    "generate",
    "harvest",
    "normalize_url",
    "parse_bytes",
    "parse_file",
    "parse_w3c",
    "read",
    "update_robots",
    "update_robots_text",
    "validate",
    "write_csv",
    "write_jsonl",
    "write_parquet",
]
