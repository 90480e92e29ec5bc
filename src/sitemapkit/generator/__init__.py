"""Generating sitemaps: sources -> pipeline -> writer, with the state store and the build config."""
