"""Serve sitemaps from a Python web app: an index and its pages, built on each request from a source of
entries such as a database query, as an ASGI or a WSGI application.

>>> from sitemapkit.publisher.web import wsgi_app
>>> app = wsgi_app(["https://example.com/", "https://example.com/about"], base_url="https://example.com")

No web framework is needed; see `SitemapServer` for the options and `sitemapkit.publisher.web.sources` for the
shapes of source it can page through.
"""

from __future__ import annotations

from typing import Any, Unpack
from wsgiref.types import WSGIApplication

from sitemapkit.publisher.web.asgi import ASGIApp, SitemapAsgi
from sitemapkit.publisher.web.server import Response, Route, ServerOptions, SitemapServer
from sitemapkit.publisher.web.sources import (
    CountSliceSource,
    FunctionSource,
    Item,
    IterableSource,
    KeysetSource,
    PagedSource,
    SequenceSource,
    as_source,
)
from sitemapkit.publisher.web.wsgi import SitemapWsgi


def asgi_app(
    source: Any, *, fallback: ASGIApp | None = None, **options: Unpack[ServerOptions]
) -> SitemapAsgi:
    """An ASGI app serving the sitemaps of `source` (see `SitemapServer` for the options); paths that are
    not sitemap routes go to `fallback` when given. `source` may also be a ready `SitemapServer`."""
    server = source if isinstance(source, SitemapServer) and not options else SitemapServer(source, **options)
    return SitemapAsgi(server, fallback)


def wsgi_app(
    source: Any, *, fallback: WSGIApplication | None = None, **options: Unpack[ServerOptions]
) -> SitemapWsgi:
    """A WSGI app serving the sitemaps of `source` (see `SitemapServer` for the options); paths that are
    not sitemap routes go to `fallback` when given. `source` may also be a ready `SitemapServer`."""
    server = source if isinstance(source, SitemapServer) and not options else SitemapServer(source, **options)
    return SitemapWsgi(server, fallback)


__all__ = [
    "CountSliceSource",
    "FunctionSource",
    "Item",
    "IterableSource",
    "KeysetSource",
    "PagedSource",
    "Response",
    "Route",
    "SequenceSource",
    "ServerOptions",
    "SitemapAsgi",
    "SitemapServer",
    "SitemapWsgi",
    "as_source",
    "asgi_app",
    "wsgi_app",
]
