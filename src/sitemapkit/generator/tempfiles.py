"""Temporary files of the writer that a killed run left behind, and how a live run says it is live.

Every `SitemapWriter` holds a lock file, `.sitemapkit-run.<token>.lock` in the output folder, with an
exclusive `flock` for as long as it runs, and creates its temporary files (`.<label>.<token>.tmp`, and
`.<name>.<token>.<random>.tmp` for the files it publishes) only after taking it. A run killed with
`kill -9` loses its lock with its process, so the next writer in that folder removes the temporary files of
every token whose lock nobody holds (or that has no lock file: a run of an older version) and that lock
file. Only names the writer uses are touched: sitemaps, their bodies, the hreflang and held-entry stores,
the stylesheet and the manifest; never a robots.txt or any other file.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import Final

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no locks, so nothing is ever taken for stale
    fcntl = None  # type: ignore[assignment]

_TEMP: Final = re.compile(
    r"\.(?P<label>.+?-hreflang|.+?-held|.+-\d+\.body|.+-\d+|.+\.xml|.+\.xml\.gz|.+\.xsl|\.sitemapkit-.+\.json)"
    r"\.(?P<token>[0-9a-f]{8})(?:\.[a-z0-9_]{8})?\.tmp(?:-journal|-wal|-shm)?"
)
"""A temporary file of a run: `.<label>.<token>.tmp`, or `.<label>.<token>.<random>.tmp` for the files it
publishes (`core.files.AtomicFile` with the run's token as its tag)."""
_LOCK: Final = re.compile(r"\.sitemapkit-run\.(?P<token>[0-9a-f]{8})\.lock")
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
"""Lock files are opened without following a symbolic link planted at their name (a link there is left
alone, as a lock nobody can take)."""


def lock_name(token: str) -> str:
    return f".sitemapkit-run.{token}.lock"


class RunLock:
    """The lock a live run holds in its output folder (a no-op where `flock` does not exist)."""

    def __init__(self, folder: Path, token: str) -> None:
        self.path = folder / lock_name(token)
        self._fd: int | None = None
        if fcntl is None:
            return
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | _NOFOLLOW, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:  # a sweep may have removed the file between open and flock: then take a new one
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self._fd = fd
                return
            os.close(fd)

    def release(self) -> None:
        """Remove the lock file and let it go (after the run's temporary files are gone)."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(self._fd)
        self._fd = None


def remove_stale(folder: Path, keep: str) -> list[str]:
    """Remove the temporary files (and lock files) of runs in `folder` that no live process holds, except
    those of the token `keep` (the caller's own); returns the names removed."""
    if fcntl is None:
        return []
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    temps: dict[str, list[str]] = {}
    locks: set[str] = set()
    for name in names:
        if m := _TEMP.fullmatch(name):
            temps.setdefault(m["token"], []).append(name)
        elif m := _LOCK.fullmatch(name):
            locks.add(m["token"])
    removed: list[str] = []
    for token in (set(temps) | locks) - {keep}:
        fd: int | None = None
        if token in locks:
            try:
                fd = os.open(folder / lock_name(token), os.O_RDWR | os.O_CLOEXEC | _NOFOLLOW)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # held: a live run
                os.close(fd)
                continue
        try:
            for name in temps.get(token, ()):
                with contextlib.suppress(OSError):
                    (folder / name).unlink()
                    removed.append(name)
            if fd is not None:
                with contextlib.suppress(OSError):
                    (folder / lock_name(token)).unlink()
                    removed.append(lock_name(token))
        finally:
            if fd is not None:
                os.close(fd)
    return sorted(removed)
