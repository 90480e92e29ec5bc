"""The Ray engine: the same `Worker` in Ray actors, one asyncio loop each over a shard of the sites.

Sites are sharded by host name, so one host is only ever read by one actor and `per_host` holds across
the cluster. Each actor writes its own part files and manifest into DATASET, which must therefore be a
path every node of the cluster sees (a shared file system). The driver polls the actors' counters for
one progress display and writes the summary once they are done.

A Ray that sitemapkit starts for the run (no `--ray-address`, no `RAY_ADDRESS`) is locked down as far as
the installed Ray allows (`_private_ray`): token authentication on (Ray 2.60's default; a
`RAY_AUTH_MODE` that says otherwise is refused), every listener on loopback (the node's address is
127.0.0.1: Ray's gRPC servers then listen on 127.0.0.1 only, and so does its runtime-env agent), no
dashboard, and its session folder (logs, Unix sockets, the object store's socket) inside a folder of ours
that only this user can enter, created with umask 077 and removed when the run ends, however it ends.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

from sitemapkit.core.errors import Terminated, UsageError
from sitemapkit.harvest.options import HarvestOptions
from sitemapkit.harvest.pool import sum_counters
from sitemapkit.harvest.sites import shard
from sitemapkit.harvest.store import new_worker_id
from sitemapkit.harvest.worker import Worker
from sitemapkit.reader.parquet import arrow_without_pandas

INSTALL_HINT = "--engine ray needs Ray: pip install 'sitemapkit[ray]'"


class HarvestActor:
    """One Ray actor: a `Worker` over its shard (an async actor, so `counters` answers while `run` runs)."""

    def __init__(self, root: str, sites: list[str], options: HarvestOptions, worker_id: str) -> None:
        arrow_without_pandas()  # the actor's process is the harvest's own
        self.worker = Worker(root, sites, options, worker_id)

    async def run(self) -> dict[str, int]:
        return await self.worker.run()

    async def counters(self) -> dict[str, int]:
        return self.worker.counters.as_dict()


LOOPBACK: Final = "127.0.0.1"
AUTH_MODE: Final = "RAY_AUTH_MODE"
"""Ray's switch for token authentication: `token` (what a new local Ray of Ray 2.60 defaults to) or
`disabled`."""
LOCAL_IP: Final = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Off, Ray takes 127.0.0.1 as this node's address instead of replacing a loopback `node_ip_address` with
the machine's outward address (`services.resolve_ip_for_localhost`); with a loopback node address its gRPC
servers listen on 127.0.0.1 only, where otherwise they listen on every interface."""
_UNSET: Final = object()


def _ray() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise UsageError(INSTALL_HINT) from None


@contextlib.contextmanager
def _environment(changes: dict[str, str | None]) -> Iterator[None]:
    """`os.environ` with `changes` (None: unset) for the block, then as it was."""
    before = {name: os.environ.get(name) for name in changes}
    try:
        for name, value in changes.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def _terminated_on_sigterm() -> Iterator[None]:
    """SIGTERM raises `Terminated` (as Ctrl-C raises KeyboardInterrupt), so that the Ray started here is
    stopped and its folder removed; left alone outside the main thread. Ray turns an exception raised by a
    signal handler while it waits into `SystemExit(1)`: after a SIGTERM, that is `Terminated` again."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def stop(signum: int, frame: object) -> None:
        received.append(signum)
        raise Terminated(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    except SystemExit as exc:
        if received and not isinstance(exc, Terminated):
            raise Terminated(128 + received[0]) from None
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _private_ray(ray: Any) -> Iterator[Path]:
    """A local Ray for this run, locked down (see the module docstring); yields the folder it lives in.

    Raises `UsageError` if `RAY_AUTH_MODE` asks for no authentication, or if Ray cannot start, or starts
    without token authentication or on an address that is not loopback (then it is stopped at once).
    """
    mode = os.environ.get(AUTH_MODE)
    if mode is not None and mode.strip().lower() != "token":
        raise UsageError(
            f"{AUTH_MODE}={mode!r}: sitemapkit starts a local Ray only with token authentication; unset it "
            f"(or set {AUTH_MODE}=token)"
        )
    home = Path(tempfile.mkdtemp(prefix="skray-"))  # mode 0700: only this user can enter it
    # Ray makes the folder it is given world-writable (a /tmp/ray shared by users): it gets one inside ours
    temp_dir = home / "ray"
    constants = sys.modules.get("ray._private.ray_constants")
    cluster = getattr(constants, "ENABLE_RAY_CLUSTER", _UNSET)
    mask = os.umask(0o077)
    started = False
    try:
        # RAY_AUTH_MODE unset: Ray turns token authentication on itself (and tells its C++ side, which
        # read the environment when Ray was imported); whatever it sets is undone after the run
        with _environment({AUTH_MODE: mode, LOCAL_IP: "0", "RAY_ADDRESS": None}):
            if cluster is not _UNSET:  # imported already: the environment was read; the same switch
                constants.ENABLE_RAY_CLUSTER = False  # type: ignore[union-attr]
            try:
                context = ray.init(
                    include_dashboard=False,
                    log_to_driver=False,
                    _node_ip_address=LOOPBACK,
                    _temp_dir=str(temp_dir),
                )
                started = True
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise UsageError(f"cannot start a local Ray: {exc}") from None
            finally:
                os.umask(mask)
                if cluster is not _UNSET:
                    constants.ENABLE_RAY_CLUSTER = cluster  # type: ignore[union-attr]
            where = getattr(context, "address_info", {}).get("node_ip_address")
            if where != LOOPBACK:
                raise UsageError(f"the local Ray started on {where}, not on loopback; it was stopped")
            if not _token_auth(ray):
                raise UsageError("the local Ray started without token authentication; it was stopped")
            yield home
    finally:
        try:
            if started:
                ray.shutdown()
        finally:
            shutil.rmtree(home, ignore_errors=True)


def _token_auth(ray: Any) -> bool:
    """Whether the Ray this process is connected to checks tokens (Ray's own answer where it gives one)."""
    try:
        utils = importlib.import_module("ray._private.authentication.authentication_utils")
        return bool(utils.is_token_auth_enabled())
    except (ImportError, AttributeError):  # a Ray without that module: what we asked of it
        return os.environ.get(AUTH_MODE, "").lower() == "token"


def run_ray(
    root: Path,
    todo: list[str],
    options: HarvestOptions,
    *,
    workers: int | None,
    address: str | None,
    report: Callable[[dict[str, int]], None],
    stop: threading.Event | None = None,
) -> tuple[dict[str, int], int]:
    """Run the harvest on Ray; returns the summed counters and the number of actors used. Once `stop` is
    set (checked twice a second), the actors are ended and the counters so far returned.

    With no `address` (and no `RAY_ADDRESS`), on a Ray started for the run and stopped after it (see
    `_private_ray`); else on the cluster named, which is the user's to secure.
    """
    ray = _ray()
    if ray.is_initialized():  # the caller's own Ray
        return _run(ray, root, todo, options, workers, report, stop)
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address is None:
        # the handler goes in once Ray has started: ray.init puts in its own, which would end the process
        # without a word of cleanup (exit status 1, the folder left behind)
        with _terminated_on_sigterm(), _private_ray(ray), _terminated_on_sigterm():
            return _run(ray, root, todo, options, workers, report, stop)
    try:
        ray.init(address=address, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise UsageError(f"cannot start or reach {address}: {exc}") from None
    try:
        return _run(ray, root, todo, options, workers, report, stop)
    finally:
        ray.shutdown()


def _run(
    ray: Any,
    root: Path,
    todo: list[str],
    options: HarvestOptions,
    workers: int | None,
    report: Callable[[dict[str, int]], None],
    stop: threading.Event | None,
) -> tuple[dict[str, int], int]:
    count = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    shards = [s for s in shard(todo, count) if s] or [[]]
    actor_class = ray.remote(num_cpus=1)(HarvestActor)
    actors = [
        actor_class.remote(str(root), sites, options, new_worker_id(f"ray{i}"))
        for i, sites in enumerate(shards)
    ]
    try:
        pending = [actor.run.remote() for actor in actors]
        refs = list(pending)
        while pending:
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=0.5)
            so_far = sum_counters(ray.get([actor.counters.remote() for actor in actors]))
            report(so_far)
            if stop is not None and stop.is_set():  # the caller was cancelled: it raises
                return so_far, len(actors)
        results = ray.get(refs)
    finally:
        for actor in actors:
            ray.kill(actor)
    return sum_counters(results), len(actors)
