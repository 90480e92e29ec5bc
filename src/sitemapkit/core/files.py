"""Writing files safely: the one atomic writer, the one way to open a log, and the sweep of what a killed
run left behind.

- `atomic_write(path)` writes a temporary file beside `path` and renames it over `path` once complete and
  flushed to disk: a reader sees the old file or the new one, never a part; an exception (Ctrl-C
  included) removes the temporary file and leaves `path` as it was.
- The temporary file is `.NAME.<random>.tmp` in `path`'s folder, created by `tempfile.mkstemp`
  (`O_CREAT | O_EXCL`, `O_NOFOLLOW`): never a predictable name, and a symbolic link planted at any name
  makes the creation fail rather than write through it.
- A symbolic link at `path` itself is *replaced* (the rename replaces the link, never its target): a link
  planted at the output path cannot make sitemapkit overwrite the file it points to. (A caller that means
  to write a linked file, as `robots` does for a link inside its folder, resolves the link first and names
  the real file.)
- While it is written the temporary file holds an exclusive `flock`; `sweep_stale_temps` removes only
  temporary files nobody holds (their run was killed: `kill -9`, a power cut) that have not changed for a
  minute, so it never takes the file of a writer running at the same time.
- `open_new_nofollow(path)` opens a log or stream for writing (created or truncated), refusing a symbolic
  link at `path` with an error naming the file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, Final

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no locks; the sweep then goes by age alone
    fcntl = None  # type: ignore[assignment]

__all__ = ["STALE_AFTER", "SymlinkRefused", "atomic_write", "open_new_nofollow", "sweep_stale_temps"]

STALE_AFTER: Final = 60.0
"""Seconds a temporary file nobody holds must have been left unchanged before `sweep_stale_temps` removes
it (a writer takes its lock right after creating the file; this covers the instant in between)."""
_UNLOCKED_STALE_AFTER: Final = 24 * 3600.0
"""Where `flock` does not exist: the age past which a temporary file is taken for stale."""


class SymlinkRefused(OSError):
    """`open_new_nofollow` found a symbolic link at the path: it writes through none."""


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # pragma: no cover - not Linux
    os.umask(mask)  # pragma: no cover
    return mask  # pragma: no cover


def _temp_prefix(name: str) -> str:
    return f".{name}."


@contextmanager
def atomic_write(
    path: str | os.PathLike[str],
    mode: str = "wb",
    *,
    fsync: bool = True,
    encoding: str | None = "utf-8",
    newline: str | None = None,
) -> Iterator[IO[Any]]:
    """A file object (`mode` "wb" or "w"; text with `encoding` and `newline`) that becomes `path` when the
    block ends without an exception: written under a temporary name beside it (see the module's
    docstring), flushed and, with `fsync`, synced to disk (and the folder after the rename) before it
    replaces `path`. A regular file already at `path` passes on its permissions (and owner, where allowed);
    a new file gets the default ones (the umask applies). A symbolic link at `path` is replaced, never
    written through. Any exception (KeyboardInterrupt, SIGTERM's included) removes the temporary file and
    leaves `path` as it was.

    Raises `OSError` (the folder is missing or not writable, the disk is full) and `ValueError` for a
    `mode` other than "wb" or "w"."""
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_write: mode must be 'wb' or 'w', not {mode!r}")
    target = os.path.abspath(os.fspath(path))
    folder, name = os.path.split(target)
    fd, temp = tempfile.mkstemp(dir=folder, prefix=_temp_prefix(name), suffix=".tmp")
    f: IO[Any] | None = None
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)  # ours alone: a sweep leaves it (released when fd closes)
        try:
            old: os.stat_result | None = os.lstat(target)
        except OSError:
            old = None
        if old is not None and stat.S_ISREG(old.st_mode):
            os.fchmod(fd, stat.S_IMODE(old.st_mode))
            if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
                with contextlib.suppress(OSError):
                    os.fchown(fd, old.st_uid, old.st_gid)
        else:
            os.fchmod(fd, 0o666 & ~_umask())
        f = os.fdopen(fd, "wb") if mode == "wb" else os.fdopen(fd, "w", encoding=encoding, newline=newline)
        yield f
        if not f.closed:
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(temp, target)
        f.close()
    except BaseException:
        if f is not None:
            with contextlib.suppress(OSError):
                f.close()
        else:
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    if fsync:
        _sync_folder(folder)


def _sync_folder(folder: str) -> None:
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def open_new_nofollow(
    path: str | os.PathLike[str], mode: str = "w", *, encoding: str | None = "utf-8"
) -> IO[Any]:
    """`path` opened for writing, created or truncated (`O_NOFOLLOW | O_CREAT | O_TRUNC | O_WRONLY`), for a
    log or a stream written as it goes (mode "w", "wb", "a" or "ab"; "a" appends instead of truncating).
    A symbolic link at `path` is refused (`SymlinkRefused`, an `OSError` naming the file): a link planted
    where a log goes cannot make sitemapkit write into the file it points to."""
    if mode not in ("w", "wb", "a", "ab"):
        raise ValueError(f"open_new_nofollow: mode must be 'w', 'wb', 'a' or 'ab', not {mode!r}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    flags |= os.O_APPEND if mode.startswith("a") else os.O_TRUNC
    shown = os.fspath(path)
    try:
        fd = os.open(shown, flags, 0o666)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK) and os.path.islink(shown):
            raise SymlinkRefused(
                errno.ELOOP, "is a symbolic link; sitemapkit writes through none (remove it)", shown
            ) from None
        raise
    try:
        if "b" in mode:
            return os.fdopen(fd, mode)
        return os.fdopen(fd, mode, encoding=encoding)
    except BaseException:
        os.close(fd)
        raise


def sweep_stale_temps(
    folder: str | os.PathLike[str], name: str, *, stale_after: float = STALE_AFTER
) -> list[str]:
    """Remove the temporary files `.NAME.*.tmp` that a killed run of `atomic_write(folder/NAME)` left in
    `folder`: those no live writer holds (its `flock`) and unchanged for `stale_after` seconds. Only
    regular files and symbolic links of that name are removed (a link itself, never what it leads to);
    returns the names removed. Errors (a folder that cannot be listed, a file gone meanwhile) are ignored:
    a sweep is housekeeping."""
    pattern = re.compile(re.escape(_temp_prefix(name)) + r"[^/]+\.tmp")
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    now = time.time()
    removed: list[str] = []
    for entry in entries:
        if not pattern.fullmatch(entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            if now - st.st_mtime >= stale_after:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                    removed.append(entry.name)
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        if fcntl is None:
            if now - st.st_mtime >= max(stale_after, _UNLOCKED_STALE_AFTER):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
                    removed.append(entry.name)
            continue
        if now - st.st_mtime < stale_after:
            continue
        if _unlink_if_unheld(entry.path, st):
            removed.append(entry.name)
    return sorted(removed)


def _unlink_if_unheld(path: str, st: os.stat_result) -> bool:
    """Unlink `path` (the file `st` describes) if no process holds its lock, holding it meanwhile."""
    assert fcntl is not None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: a live writer
            return False
        try:
            os.unlink(path)
        except OSError:
            return False
        return True
    finally:
        os.close(fd)
