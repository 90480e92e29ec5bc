"""The sitemap server as an ASGI application (uvicorn, hypercorn, daphne; Starlette, FastAPI, Django)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from sitemapkit.publisher.web.server import SitemapServer

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_CHUNK = 1 << 20


class SitemapAsgi:
    """An ASGI 3 app answering the sitemap routes of `server`.

    The source is read in a worker thread (`run_in_executor`), so a blocking database query does not stall
    the event loop; it must be safe to call from several threads at once. Paths that are not sitemap routes
    go to `fallback` (the rest of your app) when given, else get a 404. An asyncio event loop is required.
    """

    def __init__(self, server: SitemapServer, fallback: ASGIApp | None = None) -> None:
        self.server = server
        self.fallback = fallback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            root = scope.get("root_path") or ""
            path = route_path(scope.get("path") or "", root)
            if self.fallback is not None and self.server.route(path) is None:
                await self.fallback(scope, receive, send)
                return
            await self._http(scope, send, path, root)
        elif self.fallback is not None:
            await self.fallback(scope, receive, send)
        elif kind == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1000})

    async def _http(self, scope: Scope, send: Send, path: str, root: str) -> None:
        headers: dict[str, str] = {}
        for raw_name, raw_value in scope.get("headers") or ():
            name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        host = headers.get("host")
        if host is None and scope.get("server"):
            server_host, port = scope["server"][0], scope["server"][1]
            host = f"[{server_host}]:{port}" if ":" in server_host else f"{server_host}:{port}"
        call = functools.partial(
            self.server.respond,
            scope.get("method", "GET"),
            path,
            headers,
            scheme=scope.get("scheme") or "http",
            host=host,
            root_path=root,
        )
        response = await asyncio.get_running_loop().run_in_executor(None, call)
        await send(
            {
                "type": "http.response.start",
                "status": response.status,
                "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in response.headers],
            }
        )
        body = response.body
        for start in range(0, len(body), _CHUNK):
            await send(
                {"type": "http.response.body", "body": body[start : start + _CHUNK], "more_body": True}
            )
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def route_path(path: str, root_path: str) -> str:
    """The part of `path` below the mount point `root_path` (servers differ on whether `path` includes it).

    >>> route_path("/shop/sitemap.xml", "/shop"), route_path("/sitemap.xml", "/shop")
    ('/sitemap.xml', '/sitemap.xml')
    >>> route_path("/shopping/sitemap.xml", "/shop")
    '/shopping/sitemap.xml'
    """
    if root_path and path.startswith(root_path):
        rest = path[len(root_path) :]
        if not rest or rest.startswith("/"):
            return rest
    return path
