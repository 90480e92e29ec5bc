"""The stages a `SitemapParser` goes through, shared by the modules it is made of."""

from __future__ import annotations

START, HEAD, SNIFF, XML, SEEK, TEXT, SKIP = range(7)
"""Waiting for the first two bytes (START: gzip or not), then for the encoding (HEAD) and the format (SNIFF);
then reading XML (XML), seeking the next entry after a fatal XML error (SEEK), reading a text sitemap (TEXT),
or stopped (SKIP)."""
