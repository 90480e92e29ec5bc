"""One sitemap downloaded ahead of its turn by its own task, into a bounded queue of body pieces: how the
reader's walk fetches ahead without holding more than a few pieces of each body in memory."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Final

from sitemapkit.reader.fetch import Fetcher, FetchError, FetchResponse

__all__ = ["Download"]

_END: Final = object()


class Download:
    """One sitemap being downloaded by its own task into a bounded queue of body pieces.

    The queue's first item is the `FetchResponse` (or a `FetchError`); then body pieces; then `_END`
    or a `FetchError`. When the queue is full the task waits, so a sitemap fetched ahead costs at most
    `buffer` pieces of memory until its turn comes.
    """

    def __init__(self, fetcher: Fetcher, url: str, buffer: int) -> None:
        self.url = url
        self._queue: asyncio.Queue[object] = asyncio.Queue(max(2, buffer))
        self._task = asyncio.create_task(self._run(fetcher, url))
        self._response: FetchResponse | None = None
        self._kept: list[object] = []
        """Items `head` took from the queue, for `pieces` to give first."""

    async def _run(self, fetcher: Fetcher, url: str) -> None:
        try:
            async with fetcher.stream(url) as response:
                await self._queue.put(response)
                if response.ok:
                    task = asyncio.current_task()
                    async for piece in response.aiter_bytes():
                        if task is not None and task.cancelling():  # a cancellation a library swallowed:
                            # stop (the reader may be gone, the queue never emptied), telling a reader still
                            # there, where the queue has room
                            with contextlib.suppress(asyncio.QueueFull):
                                self._queue.put_nowait(FetchError(url, "the download was cancelled"))
                            raise asyncio.CancelledError
                        await self._queue.put(piece)
        except FetchError as exc:
            await self._queue.put(exc)
            return
        except Exception as exc:  # any other failure must still reach the reader, or it would wait forever
            await self._queue.put(FetchError(url, f"unexpected error: {type(exc).__name__}: {exc}"))
            return
        await self._queue.put(_END)

    async def response(self) -> FetchResponse:
        """The response (status, headers), once it came; asked again, the same one."""
        if self._response is None:
            item = await self._queue.get()
            if isinstance(item, FetchError):
                raise item
            assert isinstance(item, FetchResponse)
            self._response = item
        return self._response

    async def head(self, size: int) -> bytes:
        """The first `size` bytes of the body (all of it, when shorter), without using them up: `pieces`
        gives them again. Raises `FetchError` when the body fails before that."""
        taken = sum(len(item) for item in self._kept if isinstance(item, bytes))
        while taken < size and not (self._kept and not isinstance(self._kept[-1], bytes)):
            item = await self._queue.get()
            self._kept.append(item)
            if isinstance(item, bytes):
                taken += len(item)
        if self._kept and isinstance(self._kept[-1], FetchError):
            raise self._kept[-1]
        return b"".join(item for item in self._kept if isinstance(item, bytes))[:size]

    async def pieces(self) -> AsyncIterator[bytes]:
        while True:
            item = self._kept.pop(0) if self._kept else await self._queue.get()
            if item is _END:
                return
            if isinstance(item, FetchError):
                raise item
            assert isinstance(item, bytes)
            yield item

    @property
    def done(self) -> bool:
        """Whether the download's task has ended (read to its end, failed, or cancelled)."""
        return self._task.done()

    async def cancel(self) -> None:
        """Stop the download and wait for it to let its connection go.

        A cancellation of the caller while it waits is not swallowed (it propagates as usual); the
        download's own end, whatever it was, is retrieved so asyncio does not report it as unhandled.
        """
        task = self._task
        task.cancel()
        await asyncio.wait((task,))
        if not task.cancelled():
            task.exception()
