"""Sources of URL entries for the generator: URL lists, CSV and JSONL files (more in later modules)."""

from sitemapkit.generator.sources.lists import read_source, read_sources
from sitemapkit.generator.sources.textblocks import open_input

__all__ = ["open_input", "read_source", "read_sources"]
