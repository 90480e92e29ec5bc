"""`blocking_form` and `in_worker_thread`: the blocking form of an async API function and the async form of a
blocking one, each from the one declaration of its parameters.

`run_stoppable`: `asyncio.run` for a command's event loop, where SIGTERM stops the run as Ctrl-C does.
`interrupts_held`: Ctrl-C and SIGTERM held back while a block that must finish runs (a set's commit, the
stopping of helper processes).

The CLI's SIGTERM handler raises `Terminated` wherever the main thread is. Inside an event loop that is the
middle of some task's step: that task ends with the exception, the others (a `gather`'s workers, the HTTP
client's) are never cancelled nor awaited, and Python prints `Task exception was never retrieved` for each,
or the loop's shutdown raises again (a traceback, or exit 1 without the "stopped by SIGTERM" line). Here,
while the loop runs, SIGTERM is taken by the loop instead: it cancels the main task, as asyncio's own
Ctrl-C handling does, so every task under it is cancelled and awaited (`gather` cancels its children, `async
with` blocks close), and then `Terminated` is raised from `run_stoppable` itself.

`asyncio` is imported where a function runs an event loop: a command without one (`generate` from files)
starts 20 ms sooner without it.
"""

from __future__ import annotations

import contextlib
import functools
import signal
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, ParamSpec, TypeVar

from sitemapkit.core.errors import Terminated, UsageError

T = TypeVar("T")
P = ParamSpec("P")


def blocking_form(afunction: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """The blocking form of the async API function `afunction` (`acrawl` -> `crawl`): the same parameters,
    declared once (mypy, `inspect.signature` and the docs all see `afunction`'s), and the same docstring;
    it runs `afunction` to its end with `asyncio.run`. Called inside a running event loop it raises
    `UsageError` naming the async form to await instead."""
    name = afunction.__name__.removeprefix("a")

    @functools.wraps(afunction)
    def blocking(*args: P.args, **kwargs: P.kwargs) -> T:
        import asyncio

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(afunction(*args, **kwargs))
        raise UsageError(
            f"{name}() runs its own event loop; inside one, use `await {afunction.__name__}(...)`"
        )

    blocking.__name__ = name
    blocking.__qualname__ = (
        afunction.__qualname__.rsplit(".", 1)[0] + "." + name if "." in afunction.__qualname__ else name
    )
    return blocking


def in_worker_thread(function: Callable[P, T]) -> Callable[P, Coroutine[Any, Any, T]]:
    """The async form of the blocking `function` (`build` -> `abuild`): the same parameters, declared once;
    it runs `function` in a worker thread (`asyncio.to_thread`), so the callbacks are called from that
    thread, and cancelling the task does not stop it (it finishes or fails in its thread)."""

    @functools.wraps(function)
    async def in_thread(*args: P.args, **kwargs: P.kwargs) -> T:
        import asyncio

        return await asyncio.to_thread(function, *args, **kwargs)

    in_thread.__name__ = in_thread.__qualname__ = "a" + function.__name__
    return in_thread


def run_stoppable(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to its end, as `asyncio.run`. Ctrl-C raises `KeyboardInterrupt` and SIGTERM raises
    `Terminated` (exit status 143), each once the tasks of the run were cancelled and awaited."""
    import asyncio

    received: list[int] = []

    async def main() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None

        def stop() -> None:
            received.append(signal.SIGTERM)
            task.cancel()

        previous = signal.getsignal(signal.SIGTERM)
        try:
            loop.add_signal_handler(signal.SIGTERM, stop)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
            return await coro
        try:
            return await coro
        finally:
            loop.remove_signal_handler(signal.SIGTERM)
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)

    try:
        result = asyncio.run(main())
    except asyncio.CancelledError:
        if received:
            raise Terminated(128 + signal.SIGTERM) from None
        raise
    if received:  # a cancellation the run swallowed still ends it
        raise Terminated(128 + signal.SIGTERM)
    return result


__all__ = ["run_stoppable"]


@contextlib.contextmanager
def interrupts_held() -> Iterator[list[int]]:
    """Hold SIGINT back while the block runs (in the main thread, where Python handles signals), and
    SIGTERM where a Python handler takes it (the CLI's); yields a list that gets the signal numbers that
    came, so the caller can raise once the block is done."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return
    held: list[tuple[signal.Signals, Any]] = []
    for number in (signal.SIGINT, signal.SIGTERM):
        previous = signal.getsignal(number)
        if callable(previous):  # not None, SIG_DFL or SIG_IGN: those stay as they are
            held.append((number, previous))
            signal.signal(number, lambda signum, frame: came.append(signum))
    try:
        yield came
    finally:
        for number, previous in held:
            signal.signal(number, previous)
