"""The validator: what search engines would report about a sitemap tree, with the file and line of each
problem.

`validate(source)` reads local files (`.xml`, `.xml.gz`, `.txt`), sitemap URLs and site roots, follows an
index to every child, and returns a `ValidationReport`. It streams: each file goes through the parser in
chunks, and the context checks (checks.py) keep hashes, not URLs. Remote bodies are spooled to a temporary
file, so that the lines diagnostics point at can be shown afterwards; the spool is deleted before
`validate` returns.

Where each child of an index is read from:

- a remote index: each child from its URL;
- a local index with `url` (its public URL): a child under the index's public folder is read from the
  same relative path next to the local index (`read-error` if it is missing there), others from their URL;
- a local index without `url`: a child whose file name exists next to the index is read from there,
  others from their URL.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final

from sitemapkit.diagnostics import Diagnostic, DiagnosticHandler, Severity
from sitemapkit.errors import InvalidUrlError, UsageError
from sitemapkit.urls import Scope, normalize_url

if TYPE_CHECKING:
    from sitemapkit.fetch import FetchOptions

__all__ = ["FileReport", "ValidationReport", "avalidate", "validate"]

KEEP: Final = 10_000
"""Diagnostics of each severity a report keeps by default (its counts are always exact)."""
DEFAULT_MAX_UNCOMPRESSED: Final = 100 * 1024 * 1024
"""Most bytes one file is read to, uncompressed (the limit itself, 52,428,800, is reported, not enforced)."""
_URL_KINDS: Final = frozenset({"urlset", "text", "rss", "atom"})


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

    `errors` and `warnings` are exact; the report keeps the first `keep` diagnostics of each severity
    (`truncated` says whether some were dropped). `files` lists every file read, in walk order; `notes`
    says what could not be checked (for example scope, without a public URL).
    """

    def __init__(self, keep: int | None = KEEP) -> None:
        self.files: list[FileReport] = []
        self.notes: list[str] = []
        self.diagnostics: list[Diagnostic] = []
        self.errors = 0
        self.warnings = 0
        self.truncated = False
        self._keep = keep
        self._kept = {Severity.ERROR: 0, Severity.WARNING: 0}
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

    def _file(self, file: FileReport) -> None:
        self.files.append(file)
        self._by_source.setdefault(file.source, file)

    def _add(self, d: Diagnostic) -> None:
        file = self._by_source.get(d.source) if d.source is not None else None
        if d.is_error:
            self.errors += 1
            if file is not None:
                file.errors += 1
        else:
            self.warnings += 1
            if file is not None:
                file.warnings += 1
        if self._keep is None or self._kept[d.severity] < self._keep:
            self._kept[d.severity] += 1
            self.diagnostics.append(d)
        else:
            self.truncated = True

    def summary(self) -> dict[str, int]:
        return {"files": len(self.files), "urls": self.urls, "errors": self.errors, "warnings": self.warnings}

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

        With a `limit`, errors are chosen before warnings, so a cap never hides an error behind a warning.
        """
        order = {f.source: i for i, f in reversed(list(enumerate(self.files)))}
        unknown = len(order)

        def key(d: Diagnostic) -> tuple[int, str, int, int, int]:
            file = order.get(d.source or "", unknown)
            return (file, d.source or "", 0 if d.is_error else 1, d.line or 0, d.column or 0)

        items = self.diagnostics
        if limit is not None and limit < len(items):
            items = sorted(items, key=lambda d: (0 if d.is_error else 1, *key(d)))[:limit]
        return sorted(items, key=key)


# --- public API ------------------------------------------------------------------------------------------


def _sources(source_or_sources: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[str]:
    if isinstance(source_or_sources, (str, os.PathLike)):
        return [os.fspath(source_or_sources)]
    out = [os.fspath(s) for s in source_or_sources]
    if not out:
        raise UsageError("no SOURCE to validate")
    return out


async def avalidate(
    source_or_sources: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    url: str | None = None,
    recursive: bool = True,
    allow_hosts: Iterable[str] = (),
    now: dt.datetime | None = None,
    keep: int | None = KEEP,
    timeout: float | None = None,
    max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED,
    on_diagnostic: DiagnosticHandler | None = None,
    fetch_options: FetchOptions | None = None,
) -> ValidationReport:
    """The async form of `validate`, for use inside a running event loop."""
    # The walk needs httpx and lxml: load them only now, so that `import sitemapkit` stays quick.
    from sitemapkit.fetch import FetchOptions
    from sitemapkit.validator import Options, Validator

    sources = _sources(source_or_sources)
    if url is not None:
        if len(sources) > 1:
            raise UsageError("--url names the public URL of one SOURCE; give one SOURCE with it")
        try:
            url = normalize_url(url)
        except InvalidUrlError as exc:
            raise UsageError(f"--url {url!r} is not a valid http(s) URL ({exc.reason})") from None
    hosts = tuple(h.strip() for h in allow_hosts if h.strip())
    try:
        Scope("https://example.com/", hosts)
    except InvalidUrlError as exc:
        raise UsageError(f"--allow-host: {exc}") from None
    fetch = fetch_options or FetchOptions()
    if timeout is not None:
        fetch = replace(fetch, connect_timeout=timeout, read_timeout=timeout)
    report = ValidationReport(keep)
    with tempfile.TemporaryDirectory(prefix="sitemapkit-validate-") as spool:
        run = Validator(
            report,
            Options(url, recursive, max_uncompressed, fetch),
            now or dt.datetime.now(dt.UTC),
            hosts,
            on_diagnostic,
            spool,
        )
        await run.run(sources)
        run.excerpts()
    return report


def validate(
    source_or_sources: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    url: str | None = None,
    recursive: bool = True,
    allow_hosts: Iterable[str] = (),
    now: dt.datetime | None = None,
    keep: int | None = KEEP,
    timeout: float | None = None,
    max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED,
    on_diagnostic: DiagnosticHandler | None = None,
    fetch_options: FetchOptions | None = None,
) -> ValidationReport:
    """Validate sitemaps as search engines would read them; return a `ValidationReport`.

    A source is a local `.xml`, `.xml.gz` or `.txt` file (`-` for standard input), a sitemap URL, or a
    site root (its sitemaps are found through robots.txt). `url` is the public URL of a local file (its
    scope is judged by it; without it, scope checks are skipped with a note). An index is validated with
    every child unless `recursive` is False. `allow_hosts` are hosts whose URLs any sitemap may list
    (cross-submission). `now` is the time dates are judged against (default: the current time).
    All sources of one call form one tree for duplicates and hreflang.

    Raises `UsageError` for bad arguments and `InputError` for a local file that does not exist; every
    problem found in the sitemaps themselves is a diagnostic. Must not be called inside a running event
    loop (use `avalidate` there).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "sitemap.txt")
    >>> _ = open(path, "w").write("https://example.com/a\\nhttps://example.com/a\\n")
    >>> report = validate(path, url="https://example.com/sitemap.txt")
    >>> report.ok, [(d.code, d.line) for d in report]
    (True, [('duplicate-url', 2)])
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise UsageError("validate() cannot run inside a running event loop; use avalidate() there")
    return asyncio.run(
        avalidate(
            source_or_sources,
            url=url,
            recursive=recursive,
            allow_hosts=allow_hosts,
            now=now,
            keep=keep,
            timeout=timeout,
            max_uncompressed=max_uncompressed,
            on_diagnostic=on_diagnostic,
            fetch_options=fetch_options,
        )
    )
