"""The generator's pipeline between sources and writer: normalise URLs, keep them in scope, drop duplicates,
and make dates timezone-aware. Every rejection is a diagnostic naming the source and line."""

from __future__ import annotations

import dataclasses

from xxhash import xxh3_64_intdigest

from sitemapkit.dates import is_naive, to_aware
from sitemapkit.diagnostics import Diagnostic, DiagnosticLog
from sitemapkit.errors import InvalidUrlError
from sitemapkit.model import UrlEntry
from sitemapkit.urls import Scope, normalize_url


class Deduper:
    """Remembers URLs seen, at a fixed cost per URL: a 64-bit XXH3 hash held as an int in a set
    (about 70 bytes of memory per unique URL in CPython, measured in the README). The hash is
    deterministic, so the same input always gives the same output; two different URLs collide with
    probability about n²/2⁶⁵ (3·10⁻⁸ for a million URLs)."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: set[int] = set()

    def add(self, url: str) -> bool:
        """Record `url`; False if it was already seen."""
        key = xxh3_64_intdigest(url.encode())
        seen = self._seen
        if key in seen:
            return False
        seen.add(key)
        return True

    def __len__(self) -> int:
        return len(self._seen)


class Pipeline:
    """Turns entries from any source into entries the writer may publish, or rejects them.

    - `loc` is normalised (`normalize_url`, with `/paths` resolved against the scope's folder);
    - URLs out of `scope` are rejected (`url-not-allowed`);
    - exact duplicates after normalisation are dropped (`duplicate-url`, a warning);
    - naive date-times are taken as UTC, and the run says so once (`naive-datetime`).
    """

    def __init__(self, scope: Scope, log: DiagnosticLog, *, dedupe: bool = True) -> None:
        self.scope = scope
        self.log = log
        self.deduper: Deduper | None = Deduper() if dedupe else None
        self.accepted = 0
        self.rejected = 0
        self.duplicates = 0

    def process(self, entry: UrlEntry) -> UrlEntry | None:
        """The entry ready to write, or None (with a diagnostic) when it must be left out."""
        source, line = entry.sitemap, entry.line
        try:
            loc = normalize_url(entry.loc, self.scope.folder)
        except InvalidUrlError as exc:
            self.rejected += 1
            self.log.add(
                Diagnostic.make(
                    exc.code, f"{exc.reason}; the URL is left out", source=source, line=line, url=entry.loc
                )
            )
            return None
        if loc not in self.scope:
            self.rejected += 1
            self.log.add(
                Diagnostic.make(
                    "url-not-allowed",
                    f"{self.scope.explain(loc)}; the URL is left out (use --allow-host for cross-submission)",
                    source=source,
                    line=line,
                    url=loc,
                )
            )
            return None
        if self.deduper is not None and not self.deduper.add(loc):
            self.duplicates += 1
            self.log.add(
                Diagnostic.make(
                    "duplicate-url", "listed before; written once", source=source, line=line, url=loc
                )
            )
            return None
        changes: dict[str, object] = {}
        if loc != entry.loc:
            changes["loc"] = loc
        if entry.lastmod is not None and is_naive(entry.lastmod):
            changes["lastmod"] = to_aware(entry.lastmod)
            self.log.once(
                "naive-datetime",
                Diagnostic.make(
                    "naive-datetime",
                    f"lastmod {entry.lastmod.isoformat()} has no timezone; it and any other such times "
                    "are taken as UTC",
                    source=source,
                    line=line,
                    url=loc,
                ),
            )
        return dataclasses.replace(entry, **changes) if changes else entry  # type: ignore[arg-type]

    def admit(self, loc: str, source: str | None, line: int | None) -> bool:
        """Count a normalised, in-scope URL as accepted unless it is a duplicate (then say so)."""
        if self.deduper is not None and not self.deduper.add(loc):
            self.duplicates += 1
            self.log.add(
                Diagnostic.make(
                    "duplicate-url", "listed before; written once", source=source, line=line, url=loc
                )
            )
            return False
        self.accepted += 1
        return True
