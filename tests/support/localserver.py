"""A real HTTP server on 127.0.0.1 for tests: register routes, then fetch them for real."""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SELF_SIGNED = Path(__file__).parents[1] / "data" / "selfsigned.pem"
"""A self-signed certificate and key for 127.0.0.1 (made with `openssl req -x509 -newkey ec -pkeyopt
ec_paramgen_curve:P-256 -nodes -days 36500 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1`)."""


def tls_server_context() -> ssl.SSLContext:
    """A server's TLS context with the self-signed certificate (which no client trusts unless told to)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(SELF_SIGNED)
    return context


Answer = tuple[int, dict[str, str], bytes]
Handler = Callable[[BaseHTTPRequestHandler], Answer]


def sequence(*answers: Answer) -> Handler:
    """A handler giving each answer (status, headers, body) in turn, then repeating the last."""
    calls = {"n": 0}

    def handler(_: BaseHTTPRequestHandler) -> Answer:
        i = min(calls["n"], len(answers) - 1)
        calls["n"] += 1
        return answers[i]

    return handler


@dataclass
class Route:
    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    handler: Callable[[BaseHTTPRequestHandler], tuple[int, dict[str, str], bytes]] | None = None


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float = field(default_factory=time.monotonic)
    """When the request arrived (`time.monotonic`)."""
    end: float = 0.0
    """When its answer was sent (0 until then)."""


class LocalServer:
    """`server.route("/sitemap.xml", b"...", headers={...})`; `server.url("/sitemap.xml")`.

    Unknown paths answer 404, or what `server.fallback` gives. `server.requests` records every request in
    order. `address` is the loopback address to listen on (127.0.0.2 and on are other hosts).
    """

    def __init__(self, address: str = "127.0.0.1") -> None:
        self.routes: dict[str, Route] = {}
        self.fallback: Handler | None = None
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = Request(self.command, self.path, dict(self.headers.items()), body)
                with outer._lock:
                    outer.requests.append(request)
                route = outer.routes.get(self.path)
                if route is None and outer.fallback is not None:
                    status, headers, payload = outer.fallback(self)
                elif route is None:
                    status, headers, payload = 404, {"Content-Type": "text/plain"}, b"not found"
                elif route.handler is not None:
                    status, headers, payload = route.handler(self)
                else:
                    if route.delay:
                        threading.Event().wait(route.delay)
                    status, headers, payload = route.status, route.headers, route.body
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                if "Content-Length" not in headers:
                    self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)
                self.wfile.flush()
                request.end = time.monotonic()

            do_GET = do_HEAD = do_POST = _serve

        self.httpd = ThreadingHTTPServer((address, 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base = f"http://{address}:{self.port}"
        # A client that stops reading early (a download cap) makes a handler fail; keep its traceback out of
        # whatever captures stderr at that moment.
        self.httpd.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def start(self) -> LocalServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def url(self, path: str = "/") -> str:
        return self.base + path

    def route(
        self,
        path: str,
        body: bytes | str = b"",
        *,
        status: int = 200,
        headers: dict[str, str] | None = None,
        content_type: str | None = "application/xml",
        delay: float = 0.0,
    ) -> str:
        """Serve `body` at `path`; returns the full URL."""
        data = body.encode("utf-8") if isinstance(body, str) else body
        h = dict(headers or {})
        if content_type and "Content-Type" not in h:
            h["Content-Type"] = content_type
        self.routes[path] = Route(data, status, h, delay)
        return self.url(path)

    def redirect(self, path: str, target: str, status: int = 301) -> str:
        self.routes[path] = Route(b"", status, {"Location": target})
        return self.url(path)

    def handle(
        self, path: str, handler: Callable[[BaseHTTPRequestHandler], tuple[int, dict[str, str], bytes]]
    ) -> str:
        """Serve `path` with a function returning (status, headers, body)."""
        self.routes[path] = Route(handler=handler)
        return self.url(path)
