"""The sitemap server as a WSGI application (gunicorn, uWSGI, waitress, werkzeug; Flask, Django)."""

from __future__ import annotations

from collections.abc import Iterable
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from sitemapkit.publisher.web.server import SitemapServer


class SitemapWsgi:
    """A WSGI app answering the sitemap routes of `server`; other paths go to `fallback` (the rest of
    your app, for example Flask's `app.wsgi_app`) when given, else get a 404."""

    def __init__(self, server: SitemapServer, fallback: WSGIApplication | None = None) -> None:
        self.server = server
        self.fallback = fallback

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = _text(environ.get("PATH_INFO") or "")
        if self.fallback is not None and self.server.route(path) is None:
            return self.fallback(environ, start_response)
        headers = {
            key[5:].replace("_", "-").lower(): str(value)
            for key, value in environ.items()
            if key.startswith("HTTP_")
        }
        host = headers.get("host") or f"{environ.get('SERVER_NAME', '')}:{environ.get('SERVER_PORT', '')}"
        response = self.server.respond(
            environ.get("REQUEST_METHOD", "GET"),
            path,
            headers,
            scheme=environ.get("wsgi.url_scheme", "http"),
            host=host,
            root_path=_text(environ.get("SCRIPT_NAME") or ""),
        )
        start_response(response.status_line, response.headers)
        return [response.body] if response.body else []


def _text(wsgi_string: str) -> str:
    """A WSGI "bytes as latin-1" path as the text it spells in UTF-8."""
    return wsgi_string.encode("latin-1", "replace").decode("utf-8", "replace")
