"""Validating sitemaps: per-entry checks, the walk over files and trees, and the report types."""
