"""Where the child of a local sitemap index is on disk: `local_child`."""

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
