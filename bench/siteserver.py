"""A small, fast static server for the crawl benchmarks: HTTP/1.1 with keep-alive, GET and HEAD, every file
of a folder held in memory. `python bench/siteserver.py FOLDER PORT`.

`python -m http.server` answers about 90 requests a second here (one connection per request, headers and
body written apart); this one is not the bottleneck of a benchmark that fetches 50,000 pages.
"""

from __future__ import annotations

import asyncio
import sys
from asyncio import StreamReader, StreamWriter
from collections.abc import Awaitable, Callable
from pathlib import Path

TYPES = {".html": "text/html; charset=utf-8", ".xml": "application/xml", ".txt": "text/plain"}


def load(folder: Path) -> dict[bytes, tuple[bytes, bytes]]:
    """Every file under `folder` (but templates and dotfiles) by URL path: (response head, body)."""
    files = {}
    for path in folder.rglob("*"):
        if path.is_file() and not path.name.endswith(".in") and not path.name.startswith("."):
            body = path.read_bytes()
            kind = TYPES.get(path.suffix, "application/octet-stream")
            files[("/" + path.relative_to(folder).as_posix()).encode()] = answer(body, kind)
    return files


def answer(body: bytes, kind: str) -> tuple[bytes, bytes]:
    """The (response head, body) of a 200 answer."""
    head = (
        f"HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
        "Last-Modified: Fri, 01 May 2026 00:00:00 GMT\r\n\r\n"
    ).encode()
    return head, body


NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n\r\nnot found"


def handler(
    files: dict[bytes, tuple[bytes, bytes]],
) -> Callable[[StreamReader, StreamWriter], Awaitable[None]]:
    """A keep-alive connection handler answering from `files` (URL path -> (head, body))."""

    async def handle(reader: StreamReader, writer: StreamWriter) -> None:
        try:
            while True:
                request = await reader.readuntil(b"\r\n\r\n")
                method, path, _ = request.split(b"\r\n", 1)[0].split(b" ", 2)
                found = files.get(path.split(b"?", 1)[0])
                if found is None:
                    writer.write(NOT_FOUND)
                else:
                    writer.write(found[0] if method == b"HEAD" else found[0] + found[1])
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    return handle


async def serve(files: dict[bytes, tuple[bytes, bytes]], port: int, host: str = "127.0.0.1") -> None:
    server = await asyncio.start_server(handler(files), host, port, backlog=512)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(serve(load(Path(sys.argv[1])), int(sys.argv[2])))
