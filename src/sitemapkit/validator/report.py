"""The validator's report types: what one file and a whole tree were found to be, with every diagnostic."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from sitemapkit.core.diagnostics import Diagnostic

__all__ = ["DEFAULT_MAX_UNCOMPRESSED", "KEEP", "FileReport", "ValidationReport"]

KEEP: Final = 10_000
"""Diagnostics of each code a report keeps by default (its counts are always exact): one code that comes
50,000 times (a missing child each) never crowds out another."""
DEFAULT_MAX_UNCOMPRESSED: Final = 100 * 1024 * 1024
"""Most bytes one file is read to, uncompressed (the limit itself, 52,428,800, is reported, not enforced)."""
_URL_KINDS: Final = frozenset({"urlset", "text", "rss", "atom"})
_ABOUT_A_CHILD: Final = frozenset(
    {"read-error", "http-error", "download-too-large", "fetch-loop", "too-deep"}
)
"""Codes an index's line carries about the child sitemap it lists (which could not be read): shown after
the index's own findings."""


@dataclass(slots=True)
class FileReport:
    """One file of the validated tree: where it was read, what it is, what was found in it.

    `source` is the path or URL read (diagnostics name it); `url` the public URL its scope was judged by
    (None when unknown); `parent` the index that lists it. `entries` counts the `<url>` (or `<sitemap>`)
    elements met, valid or not. `error` says why the file could not be read, when it could not.
    """

    source: str
    url: str | None = None
    parent: str | None = None
    depth: int = 0
    kind: str | None = None
    entries: int = 0
    errors: int = 0
    warnings: int = 0
    bytes: int = 0
    uncompressed_bytes: int = 0
    compressed: bool = False
    status: int | None = None
    final_url: str | None = None
    error: str | None = None

    @property
    def urls(self) -> int:
        """URL entries (0 for an index)."""
        return self.entries if self.kind in _URL_KINDS else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "url": self.url,
            "parent": self.parent,
            "kind": self.kind,
            "entries": self.entries,
            "errors": self.errors,
            "warnings": self.warnings,
            "bytes": self.bytes,
            "uncompressed_bytes": self.uncompressed_bytes,
            "compressed": self.compressed,
            "status": self.status,
            "final_url": self.final_url,
            "error": self.error,
        }


class ValidationReport:
    """What `validate` found. Iterate it for the diagnostics (in the order found).

    `errors`, `warnings` and `codes` (the count of each code) are exact; the report keeps the first `keep`
    diagnostics of each code (`truncated` says whether some were dropped). `files` lists every file read,
    in walk order; `notes` says what could not be checked (for example scope, without a public URL).
    """

    def __init__(self, keep: int | None = KEEP) -> None:
        self.files: list[FileReport] = []
        self.notes: list[str] = []
        self.diagnostics: list[Diagnostic] = []
        self.errors = 0
        self.warnings = 0
        self.truncated = False
        self._keep = keep
        self.codes: Counter[str] = Counter()
        """How many diagnostics of each code were found (all of them, kept or not)."""
        self._by_source: dict[str, FileReport] = {}
        self._excerpts: dict[Diagnostic, str] = {}

    @property
    def ok(self) -> bool:
        """No errors (warnings allowed)."""
        return self.errors == 0

    @property
    def urls(self) -> int:
        return sum(f.urls for f in self.files)

    def __iter__(self) -> Iterator[Diagnostic]:
        return iter(self.diagnostics)

    def __len__(self) -> int:
        return self.errors + self.warnings

    def excerpt(self, diagnostic: Diagnostic) -> str | None:
        """The offending source line (shortened around the URL at fault), for a kept diagnostic."""
        return self._excerpts.get(diagnostic)

    def add_file(self, file: FileReport) -> None:
        """Count `file` in (the validator's walk adds each file as it comes to it)."""
        self.files.append(file)
        self._by_source.setdefault(file.source, file)

    def add_excerpt(self, diagnostic: Diagnostic, excerpt: str) -> None:
        """Keep the source line `diagnostic` points at (`excerpt`)."""
        self._excerpts[diagnostic] = excerpt

    def add(self, d: Diagnostic) -> None:
        """Count `d` in, and keep it unless `keep` diagnostics of its code are kept already."""
        file = self._by_source.get(d.source) if d.source is not None else None
        if d.is_error:
            self.errors += 1
            if file is not None:
                file.errors += 1
        else:
            self.warnings += 1
            if file is not None:
                file.warnings += 1
        self.codes[d.code] += 1
        if self._keep is None or self.codes[d.code] <= self._keep:
            self.diagnostics.append(d)
        else:
            self.truncated = True

    def summary(self) -> dict[str, Any]:
        return {
            "files": len(self.files),
            "urls": self.urls,
            "errors": self.errors,
            "warnings": self.warnings,
            "codes": dict(sorted(self.codes.items())),
        }

    def to_dict(self, limit: int | None = None) -> dict[str, Any]:
        """JSON-ready: `diagnostics` (at most `limit`, see `shown`), `summary`, `files` and `notes`."""
        items = []
        for d in self.shown(limit):
            item = d.to_dict()
            item["excerpt"] = self.excerpt(d)
            items.append(item)
        summary: dict[str, Any] = self.summary()
        summary["not_shown"] = len(self) - len(items)
        return {
            "diagnostics": items,
            "summary": summary,
            "files": [f.to_dict() for f in self.files],
            "notes": list(self.notes),
        }

    def shown(self, limit: int | None = None) -> list[Diagnostic]:
        """The kept diagnostics to show, grouped by file (in walk order), errors first, then by line.

        With a `limit`, the first diagnostic of every code is chosen first (errors, then warnings), then
        the others, errors before warnings: a cap never hides a code, nor an error behind a warning. A
        file's own findings come before those of the files it lists (walk order).
        """
        order = {f.source: i for i, f in reversed(list(enumerate(self.files)))}
        unknown = len(order)

        def key(d: Diagnostic) -> tuple[int, str, int, int, int, int]:
            file = order.get(d.source or "", unknown)
            child = 1 if d.code in _ABOUT_A_CHILD else 0  # reported at the index's line, about a child
            return (file, d.source or "", child, 0 if d.is_error else 1, d.line or 0, d.column or 0)

        items = self.diagnostics
        if limit is not None and limit < len(items):
            ranked = sorted(items, key=lambda d: (0 if d.is_error else 1, *key(d)))
            firsts: dict[str, Diagnostic] = {}
            for d in ranked:
                firsts.setdefault(d.code, d)
            chosen = list(firsts.values())[:limit]
            taken = {id(d) for d in chosen}
            chosen += [d for d in ranked if id(d) not in taken][: max(0, limit - len(chosen))]
            items = chosen
        return sorted(items, key=key)
