"""Sources of URL entries for the generator: URL lists, CSV and JSONL files (more in later modules)."""

from sitemapkit.generator.sources.lists import open_input, read_source, read_sources

__all__ = ["open_input", "read_source", "read_sources"]
