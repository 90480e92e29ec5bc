"""Writing files safely: the one atomic writer, the one way to open a log, and the sweep of what a killed
run left behind.

- `atomic_write(path)` writes a temporary file beside `path` and renames it over `path` once complete and
  flushed to disk: a reader sees the old file or the new one, never a part; an exception (Ctrl-C
  included) removes the temporary file and leaves `path` as it was. `AtomicFile(path)` is the same writer
  (the one implementation: `atomic_write` uses it) for a file kept open across calls, a Parquet writer's
  sink: `.file`, then `commit()` or `discard()`.
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
- Several files published as one set (a sitemap writer's children and the index that names them) are
  `AtomicFile`s committed by `commit_in_order`: every one synced, renamed in the order given, and each
  folder synced once after the last rename. A writer that keeps many finished files until that commit
  `release()`s each (synced, its descriptor closed) so that no descriptor stays open per file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any, Final

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no locks; the sweep then goes by age alone
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "STALE_AFTER",
    "AtomicFile",
    "SymlinkRefused",
    "atomic_write",
    "commit_in_order",
    "open_new_nofollow",
    "sweep_stale_temps",
]

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


def _take_mode(fd: int, path: str) -> None:
    """Give the file of `fd` the permissions (and owner, where allowed) of a regular file at `path`, else
    the default ones (the umask applies)."""
    try:
        old: os.stat_result | None = os.lstat(path)
    except OSError:
        old = None
    if old is not None and stat.S_ISREG(old.st_mode):
        os.fchmod(fd, stat.S_IMODE(old.st_mode))
        if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
            with contextlib.suppress(OSError):
                os.fchown(fd, old.st_uid, old.st_gid)
    else:
        os.fchmod(fd, 0o666 & ~_umask())


class AtomicFile:
    """The one atomic writer, in the form a long-lived writer keeps (a Parquet writer's sink): `.file` is
    the file object (`mode` "wb" or "w"; text with `encoding` and `newline`) open on a temporary file
    beside `path` (see the module's docstring); `commit()` makes it `path`, `discard()` removes it.
    `atomic_write` is this in a `with` block.

    `commit()` flushes `.file`, syncs it to disk (with `fsync`), renames it over `path`, closes it and, with
    `fsync`, syncs the folder. `.file` may be closed before (a library closing its sink): the temporary
    file's own descriptor and its `flock` stay open until `commit()` or `discard()`, so it is still synced,
    and no sweep can take it in between. A regular file already at `path` passes on its permissions (and
    owner, where allowed); a new file gets the default ones (the umask applies). A symbolic link at `path`
    is replaced, never written through. An exception inside `commit()` discards the file; `discard()` is
    safe to call at any time, again, or after `commit()` (then it does nothing). As a context manager:
    committed when the block ends without an exception, discarded otherwise.

    `tag` puts a word in the temporary name (`.NAME.TAG.<random>.tmp`), such as a run's token, by which
    that run's leftovers are known. `commit(path)` may name another path in the same folder, for a file
    whose final name is known only when the set it belongs to is complete (its permissions are then
    those of the file at that path). `release()` syncs the file and closes its descriptor before a later
    `commit()` (see `commit_in_order`).

    Raises `OSError` (the folder is missing or not writable) and `ValueError` for a `mode` other than
    "wb" or "w"."""

    path: str
    """The absolute path the file becomes."""
    temp: str
    """The temporary file's path (`.NAME.<random>.tmp`), until it is committed or discarded."""
    file: IO[Any]

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: str = "wb",
        *,
        fsync: bool = True,
        encoding: str | None = "utf-8",
        newline: str | None = None,
        tag: str | None = None,
    ) -> None:
        if mode not in ("wb", "w"):
            raise ValueError(f"AtomicFile: mode must be 'wb' or 'w', not {mode!r}")
        if tag is not None and not re.fullmatch(r"[A-Za-z0-9_-]+", tag):
            raise ValueError(f"AtomicFile: tag must be letters, digits, '_' or '-', not {tag!r}")
        self.path = os.path.abspath(os.fspath(path))
        self._folder, name = os.path.split(self.path)
        self._fsync = fsync
        self._done = False
        self._released = False
        prefix = _temp_prefix(name) + (f"{tag}." if tag is not None else "")
        fd, self.temp = tempfile.mkstemp(dir=self._folder, prefix=prefix, suffix=".tmp")
        self._fd = fd
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)  # ours alone: a sweep leaves it (released when fd closes)
            _take_mode(fd, self.path)
            # closefd=False: the descriptor (and the lock) outlive a close of the file object
            self.file = (
                os.fdopen(fd, "wb", closefd=False)
                if mode == "wb"
                else os.fdopen(fd, "w", encoding=encoding, newline=newline, closefd=False)
            )
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(self.temp)
            os.close(fd)
            self._done = True
            raise

    def commit(self, path: str | os.PathLike[str] | None = None, *, sync_folder: bool = True) -> None:
        """Flush, sync and rename the file over `path` (the one given at creation, or another in the same
        folder; see the class); `sync_folder=False` leaves the folder's sync to the caller (one for
        several files, as `commit_in_order` does). `ValueError` once it was committed or discarded, or
        for a `path` in another folder."""
        if self._done:
            raise ValueError(f"AtomicFile({self.path!r}): already committed or discarded")
        try:
            target = self.path if path is None else os.path.abspath(os.fspath(path))
            if os.path.dirname(target) != self._folder:
                raise ValueError(f"AtomicFile({self.path!r}): {target!r} is not in the same folder")
            if target != self.path:
                self.path = target
                if not self._released:
                    _take_mode(self._fd, target)
                else:
                    with open(self.temp, "rb", opener=_nofollow_opener) as again:
                        _take_mode(again.fileno(), target)
            if not self._released:
                if not self.file.closed:
                    self.file.flush()
                if self._fsync:
                    os.fsync(self._fd)
            os.replace(self.temp, self.path)
        except BaseException:
            self.discard()
            raise
        self._done = True
        if not self._released:
            self._close()
        if self._fsync and sync_folder:
            _sync_folder(self._folder)

    def release(self, *, synced: bool = False) -> None:
        """Flush and sync the file now and close it and its descriptor (its `flock` goes with it), keeping
        the temporary file for a later `commit()`: for a writer that keeps many finished files until one
        commit of the set. `synced`: another process wrote the file through its own descriptor and synced
        it already (no second `fsync`). Nothing can be written after it; again or once done, it does
        nothing."""
        if self._done or self._released:
            return
        try:
            if not self.file.closed:
                self.file.flush()
            if self._fsync and not synced:
                os.fsync(self._fd)
        except BaseException:
            self.discard()
            raise
        self._released = True
        self._close()

    def _close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.file.close()
        with contextlib.suppress(OSError):
            os.close(self._fd)

    def discard(self) -> None:
        """Close and remove the temporary file (`path` stays as it was); nothing once committed or
        discarded."""
        if self._done:
            return
        self._done = True
        with contextlib.suppress(OSError, ValueError):
            self.file.close()
        with contextlib.suppress(OSError):
            os.unlink(self.temp)  # still holding the lock (unless released)
        if not self._released:
            with contextlib.suppress(OSError):
                os.close(self._fd)

    @property
    def done(self) -> bool:
        """Committed or discarded."""
        return self._done

    def __enter__(self) -> AtomicFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()


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
    block ends without an exception: an `AtomicFile` (written under a temporary name beside `path`, see
    the module's docstring), flushed and, with `fsync`, synced to disk (and the folder after the rename)
    before it replaces `path`. A regular file already at `path` passes on its permissions (and owner, where
    allowed); a new file gets the default ones (the umask applies). A symbolic link at `path` is replaced,
    never written through. Any exception (KeyboardInterrupt, SIGTERM's included) removes the temporary file
    and leaves `path` as it was.

    Raises `OSError` (the folder is missing or not writable, the disk is full) and `ValueError` for a
    `mode` other than "wb" or "w"."""
    out = AtomicFile(path, mode, fsync=fsync, encoding=encoding, newline=newline)
    try:
        yield out.file
    except BaseException:
        out.discard()
        raise
    out.commit()


def commit_in_order(
    files: Sequence[tuple[AtomicFile, str | os.PathLike[str] | None]], *, fsync: bool = True
) -> None:
    """Publish several files as one set: each `(file, path)` committed (`path` None: the file's own) in
    the order given, so a reader that follows the set's links meets no missing file when the files named
    come before the file that names them (a sitemap index last); every file is synced before its rename
    and, with `fsync`, each folder once after the last rename. A failure (an interrupt included) discards
    the files not yet renamed and is raised; those renamed stay (each whole: the caller's record of the
    set, such as a manifest naming old and new files, accounts for them)."""
    folders: set[str] = set()
    try:
        for out, path in files:
            out.commit(path, sync_folder=False)
            folders.add(os.path.dirname(out.path))
    except BaseException:
        for out, _ in files:
            out.discard()
        raise
    if fsync:
        for folder in sorted(folders):
            _sync_folder(folder)


def _nofollow_opener(path: str, flags: int) -> int:
    return os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC)


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
    folder: str | os.PathLike[str], name: str | None, *, stale_after: float = STALE_AFTER
) -> list[str]:
    """Remove the temporary files `.NAME.*.tmp` that a killed run of `atomic_write(folder/NAME)` (or of an
    `AtomicFile`) left in `folder`: those no live writer holds (its `flock`) and unchanged for `stale_after`
    seconds. `name` None takes every `.*.tmp` in `folder`, for a folder that only sitemapkit writes (a
    harvest's dataset, whose part names a sweep cannot know). Only regular files and symbolic links of
    that name are removed (a link itself, never what it leads to); returns the names removed. Errors (a
    folder that cannot be listed, a file gone meanwhile) are ignored: a sweep is housekeeping."""
    prefix = re.escape(_temp_prefix(name)) if name is not None else r"\."
    pattern = re.compile(prefix + r"[^/]+\.tmp")
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
