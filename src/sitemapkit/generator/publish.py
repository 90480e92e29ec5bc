"""Publishing a sitemap set: the manifest that says which files of the output folder are the set's, the
ownership checks before anything is replaced, the one multi-file commit, and the signals held meanwhile.

The set's files are `core.files.AtomicFile`s, finished and synced under temporary names in the output
folder. `commit_set` first writes a manifest naming the old and the new files together, then renames the
new files into place with `core.files.commit_in_order` (children first, index last: the index never names
a missing file), then writes the manifest of the new files and removes the old files the set no longer
has. A run interrupted between two renames so leaves every file accounted for (each whole: old or new),
and the next run replaces or removes them. A file whose new bytes equal the published ones is left in
place (an unchanged rebuild rewrites nothing, so mtimes, ETags and caches stay valid).

The manifest (`.sitemapkit-NAME.json`) lists only the set's own files: a rerun never touches any other file
in the folder, and a file of another set (another manifest) or of another tool is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

from sitemapkit.core.errors import PublishError
from sitemapkit.core.files import AtomicFile, atomic_write, commit_in_order

_CHUNK = 1 << 20


def manifest_name(name: str) -> str:
    """The manifest of the set of files named `name` (one per prefix, so several sets can share a folder)."""
    return f".sitemapkit-{name}.json"


def check_writable(folder: Path) -> None:
    """Raise `PublishError` unless a file can be made in `folder` (made and removed again): the temporary
    files go there, so an unwritable folder is refused before anything is read."""
    probe = folder / f".sitemapkit-probe.{secrets.token_hex(4)}.tmp"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as exc:
        raise PublishError(
            f"{folder}: cannot write in the output folder ({exc.strerror or exc}); nothing was published"
        ) from None
    finally:  # also on Ctrl-C
        with contextlib.suppress(OSError):
            probe.unlink()


def read_manifest(folder: Path, name: str) -> set[str]:
    """The file names the manifest of set `name` in `folder` lists (none without a manifest); an unreadable
    manifest is a `PublishError`."""
    path = folder / manifest_name(name)
    try:
        data = json.loads(path.read_text("utf-8"))
        names = data["files"]
    except FileNotFoundError:
        return set()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PublishError(f"{path}: unreadable manifest ({exc}); remove it to start afresh") from None
    return {n for n in names if isinstance(n, str) and is_plain_name(n)}


def write_manifest(folder: Path, name: str, names: list[str]) -> None:
    """Make the manifest of set `name` list `names` (with core's one atomic writer: synced, a link there is
    replaced); a manifest that says so already is left as it is."""
    manifest = folder / manifest_name(name)
    text = json.dumps({"version": 1, "files": names}, indent=1) + "\n"
    with contextlib.suppress(OSError, UnicodeDecodeError):
        if manifest.read_text("utf-8") == text:
            return  # already says so: an unchanged rebuild rewrites nothing
    with atomic_write(manifest, "w") as f:
        f.write(text)


def owner(folder: Path, name: str, file_name: str) -> str | None:
    """The name of another sitemap set of `folder` (not `name`) whose manifest lists `file_name`, if any."""
    for manifest in sorted(folder.glob(".sitemapkit-*.json")):
        other = manifest.name[len(".sitemapkit-") : -len(".json")]
        if other == name:
            continue
        try:
            names = json.loads(manifest.read_text("utf-8"))["files"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(names, list) and file_name in names:
            return other
    return None


def commit_set(
    folder: Path, name: str, files: Sequence[tuple[AtomicFile, Path]], *, replace_existing: bool
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Publish `files` (each finished file and its final path in `folder`, in the order to rename them) as
    the set `name` (see the module's docstring); return the names removed and the names left alone because
    their bytes did not change. Refused (`PublishError`, nothing changed) where a final path is a file the
    set did not write: another set's, a symbolic link, or (without `replace_existing`) another tool's."""
    previous = read_manifest(folder, name)
    new_names = [final.name for _, final in files]
    for _, final in files:
        if final.name in previous or not (final.exists() or final.is_symlink()):
            continue
        other = owner(folder, name, final.name)
        if other is not None:
            raise PublishError(
                f"{final} belongs to the sitemap set named {other!r} in this folder; choose a --name "
                "whose files do not collide with its files. Nothing was published"
            )
        if final.is_symlink():
            raise PublishError(
                f"{final} is a symbolic link not written by sitemapkit; move it away or choose another "
                "--name. Nothing was published"
            )
        if not replace_existing:
            raise PublishError(
                f"{final} exists and was not written by sitemapkit; move it away, choose another --name, "
                "or take it over with --replace-existing. Nothing was published"
            )
    write_manifest(folder, name, sorted(previous | set(new_names)))
    unchanged: list[str] = []
    renames: list[tuple[AtomicFile, str | os.PathLike[str] | None]] = []
    for out, final in files:
        out.release()  # written out and synced (nothing once it was), so its bytes can be compared
        if final.name in previous and same_bytes(Path(out.temp), final):
            unchanged.append(final.name)
            out.discard()
        else:
            renames.append((out, final))
    commit_in_order(renames)  # children first, index last: the index never names a missing file
    write_manifest(folder, name, sorted(new_names))
    removed: list[str] = []
    for stale in sorted(previous - set(new_names)):
        path = folder / stale
        if path.is_file() and not path.is_symlink():
            path.unlink()
            removed.append(stale)
    return tuple(removed), tuple(unchanged)


def same_bytes(new: Path, old: Path) -> bool:
    """Whether the regular file `old` holds exactly the bytes of `new` (sizes first, then content)."""
    try:
        if old.is_symlink() or not old.is_file() or old.stat().st_size != new.stat().st_size:
            return False
        with open(new, "rb") as a, open(old, "rb") as b:
            while chunk := a.read(_CHUNK):
                if chunk != b.read(len(chunk)):
                    return False
        return True
    except OSError:
        return False


def is_plain_name(name: str) -> bool:
    """A file name of the folder itself, not hidden (what a manifest may list)."""
    return "/" not in name and "\\" not in name and name not in ("", ".", "..") and not name.startswith(".")
