"""The official schemas as a test oracle: validate a sitemap or index against sitemaps.org + extensions."""

from __future__ import annotations

import functools
from pathlib import Path

from lxml import etree

_WRAPPER = """<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified">
  <xs:import namespace="http://www.sitemaps.org/schemas/sitemap/0.9" schemaLocation="{d}/sitemap.xsd"/>
  <xs:import namespace="http://www.google.com/schemas/sitemap-image/1.1" schemaLocation=
    "{d}/sitemap-image.xsd"/>
  <xs:import namespace="http://www.google.com/schemas/sitemap-video/1.1" schemaLocation=
    "{d}/sitemap-video.xsd"/>
  <xs:import namespace="http://www.google.com/schemas/sitemap-news/0.9" schemaLocation=
    "{d}/sitemap-news.xsd"/>
  <xs:import namespace="http://www.w3.org/1999/xhtml" schemaLocation="{d}/xhtml1-strict.xsd"/>
</xs:schema>
"""


@functools.cache
def _urlset_schema(xsd_dir: Path) -> etree.XMLSchema:
    doc = etree.fromstring(_WRAPPER.format(d=xsd_dir.as_uri()).encode(), base_url=str(xsd_dir) + "/")
    return etree.XMLSchema(doc)


@functools.cache
def _index_schema(xsd_dir: Path) -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(xsd_dir / "siteindex.xsd")))


def schema_errors(xsd_dir: Path, data: bytes) -> list[str]:
    """Validate `data` (a urlset or sitemapindex) and return the schema's error messages."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True)
    doc = etree.fromstring(data, parser)
    schema = (
        _index_schema(xsd_dir) if etree.QName(doc).localname == "sitemapindex" else _urlset_schema(xsd_dir)
    )
    if schema.validate(doc):
        return []
    return [f"line {e.line}: {e.message}" for e in schema.error_log]  # type: ignore[attr-defined]
