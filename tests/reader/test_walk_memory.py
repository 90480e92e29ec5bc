"""What the walk holds while it waits for the network: nothing of what it already gave. A harvest reads
hundreds of sitemaps at once, each waiting for its next piece most of the time; a batch (whose runs keep
the text of the piece they were read from) held by the walk's generators for each of them was tens of MB."""

from __future__ import annotations

import asyncio
import gc

from sitemapkit.reader.runs import UrlRun
from sitemapkit.reader.walk import AsyncReader, ReadOptions

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def _live_runs() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is UrlRun)


def _size(items: list[object]) -> int:
    return sum(len(x) if isinstance(x, UrlRun) else 1 for x in items)


def test_no_batch_is_held_while_the_next_piece_is_awaited() -> None:
    rows = "".join(f"<url><loc>http://127.0.0.1/p{i}</loc></url>\n" for i in range(4000))
    body = f'<?xml version="1.0"?>\n<urlset xmlns="{NS}">\n{rows}</urlset>\n'.encode()
    half = body.rfind(b"<url>", 0, len(body) // 2) + 7  # the second half begins inside an element
    release = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await reader.readuntil(b"\r\n\r\n")
        if not request.startswith(b"GET /sitemap.xml "):  # robots.txt
            writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
            writer.close()
            return
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: {len(body)}\r\n\r\n"
        writer.write(head.encode() + body[:half])
        await writer.drain()
        await release.wait()
        writer.write(body[half:])
        await writer.drain()
        writer.close()

    async def run() -> tuple[int, int, int]:  # URLs, runs read before the pause, runs held in it
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        url = f"http://127.0.0.1:{port}/sitemap.xml"
        options = ReadOptions(allow_private=True, retries=0)
        got = runs = 0
        waiting = -1
        try:
            async with AsyncReader(url, options) as reader:
                walk = reader.batches(runs=True)
                pending = asyncio.ensure_future(walk.__anext__())
                while True:  # the first half's batches, until the walk waits for the network
                    done, _ = await asyncio.wait({pending}, timeout=0.3)
                    if not done:
                        break
                    got += _size(pending.result())
                    runs += sum(isinstance(x, UrlRun) for x in pending.result())
                    pending = asyncio.ensure_future(walk.__anext__())
                waiting = _live_runs()  # what the walk holds while it waits
                release.set()
                got += _size(await pending)
                async for items in walk:
                    got += _size(items)
        finally:
            server.close()
        return got, runs, waiting

    got, runs, waiting = asyncio.run(run())
    assert got == 4000
    assert runs > 0  # the first half was read as runs (the fast path), and given
    assert waiting == 0
