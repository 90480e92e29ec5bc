"""Existing sitemaps as a source: an XML urlset or index (0.84 or 0.9), gzip or not, an RSS or Atom feed,
recognised by content whatever the file's name. Every field and extension of each URL is carried over.

An index's children are read from the local folder: a child's URL path is looked for under the index's
folder, from its whole path down to its file name (`https://example.com/maps/s1.xml` listed by
`site/sitemap_index.xml` is `site/maps/s1.xml`, else `site/s1.xml`); for an index on standard input, under
the current folder. Nothing is fetched.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from pathlib import Path

from sitemapkit.core.diagnostics import Diagnostic, DiagnosticHandler
from sitemapkit.core.errors import InputError
from sitemapkit.core.model import IndexEntry, UrlEntry
from sitemapkit.generator.sources.textblocks import open_input, shown_name, stdin_kind, stdin_stream
from sitemapkit.reader.local import local_child

_MAX_DEPTH = 5
_SITEMAP_ROOTS = ("<urlset", "<sitemapindex", "<rss", "<feed", "<rdf:rdf")


def is_sitemap_file(name: str) -> bool:
    """Whether the file `name` (gzip or not) holds an XML sitemap, sitemap index or feed, by its first bytes.
    Only regular files and standard input (`-`) are looked at; one that cannot be opened is not one (it is
    then read, and reported, as the kind its name says)."""
    if name == "-":
        return stdin_kind() == "sitemap"  # (looked at without taking the bytes)
    if not os.path.isfile(name):  # a named pipe would lose what was read here
        return False
    try:
        stream = open_input(name)
    except InputError:  # the ordinary reader reports it
        return False
    try:
        head = stream.read(4096)
    except (OSError, EOFError, zlib.error):  # corrupt gzip too: as above
        return False
    finally:
        stream.close()
    text = head.decode("utf-8", "replace").removeprefix("\ufeff").lstrip().lower()
    if not text.startswith("<"):
        return False
    return any(root in text for root in _SITEMAP_ROOTS)


def read_sitemaps(
    path: str | os.PathLike[str],
    report: DiagnosticHandler,
    *,
    _depth: int = 0,
    _seen: set[Path] | None = None,
) -> Iterator[UrlEntry]:
    """The URL entries of a sitemap file, and of an index's children found next to it (see the module
    docstring). Problems are reported with file and line; a child that is not found is reported
    (`read-error`) and skipped."""
    from sitemapkit.reader.parser import parse_file, parse_stream

    seen = _seen if _seen is not None else set()
    real = Path(path).resolve()
    seen.add(real)
    name = os.fspath(path)
    try:
        if name == "-":  # standard input: an index's children are looked for in the current folder
            entries = parse_stream(stdin_stream(), shown_name(name), on_diagnostic=report)
        else:
            entries = parse_file(path, source=name, on_diagnostic=report)
        for entry in entries:
            if isinstance(entry, UrlEntry):
                yield entry
                continue
            yield from _child(name, entry, report, _depth, seen)
    except OSError as exc:
        message = f"cannot be read ({exc.strerror or exc})"
        report(Diagnostic.make("read-error", message, source=shown_name(name)))


def _child(
    index: str, entry: IndexEntry, report: DiagnosticHandler, depth: int, seen: set[Path]
) -> Iterator[UrlEntry]:
    child = local_child(index, entry.loc)
    if child is None:
        report(
            Diagnostic.make(
                "read-error",
                f"this child sitemap is not in {_folder_of(index)} (looked for its URL path there); its URLs "
                "are not read",
                source=shown_name(index),
                line=entry.line,
                url=entry.loc,
            )
        )
        return
    if child.resolve() in seen:
        report(
            Diagnostic.make(
                "fetch-loop",
                f"{child} was read already; not again",
                source=shown_name(index),
                line=entry.line,
                url=entry.loc,
            )
        )
        return
    if depth + 1 > _MAX_DEPTH:
        report(
            Diagnostic.make(
                "too-deep",
                f"indexes nested more than {_MAX_DEPTH} deep",
                source=shown_name(index),
                line=entry.line,
            )
        )
        return
    yield from read_sitemaps(child, report, _depth=depth + 1, _seen=seen)


def _folder_of(index: str) -> str:
    """Where an index's children are looked for, in words."""
    return "the current folder (the index came on standard input)" if index == "-" else "the index's folder"
