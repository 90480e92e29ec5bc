"""Where the child of a local sitemap index is on disk: `local_child` (found by its URL path), `public_child`
(where it must be, given the index's public URL)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit


def local_child(index_path: str | os.PathLike[str], loc: str) -> Path | None:
    """The local file of the index's child `loc`: its URL path looked for under the index's folder, from the
    whole path down to the file name (`https://example.com/maps/s1.xml` listed by `old/sitemap_index.xml`
    is `old/maps/s1.xml`, else `old/s1.xml`). None when there is no such file; never outside the folder."""
    folder = Path(index_path).resolve().parent
    parts = urlsplit(loc)
    if parts.query or parts.fragment:
        return None
    segments = [p for p in unquote(parts.path).split("/") if p]
    if not segments or any(p in (".", "..") or "\\" in p or "\0" in p for p in segments):
        return None
    for start in range(len(segments)):
        candidate = folder.joinpath(*segments[start:])
        if candidate.is_file():
            return candidate
    return None


def public_child(index_path: str | os.PathLike[str], public_folder: str, loc: str) -> str | None:
    """Where the child `loc` of a local index published in `public_folder` must be: the same path below the
    index's folder as `loc` below `public_folder` (`validate --url`). None when `loc` is not under that
    folder (or has a query or a fragment, or names a folder); never outside the index's folder. The file may
    not exist: it *should* be there."""
    parts = urlsplit(loc)
    if parts.query or parts.fragment or not loc.startswith(public_folder):
        return None
    relative = unquote(loc[len(public_folder) :])
    if not relative or relative.endswith("/"):
        return None
    folder = os.path.realpath(os.path.dirname(os.path.abspath(index_path)))
    path = os.path.realpath(os.path.join(folder, *relative.split("/")))
    if os.path.commonpath([folder, path]) != folder:
        return None
    return path
