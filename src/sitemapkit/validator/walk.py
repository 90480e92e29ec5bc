"""The validator's side of the one tree walk (`reader.tree.TreeWalk`): it reads each file of a sitemap tree
through the parser and the checks, and says what the walk met in the validator's words.

The walk decides what is read and from where (see `validator.run` for a local index's children), the depth
(one level below each root: nested indexes are reported, not followed), loops, the bounds and the fetch
policy; `Validator` is its `WalkEvents`, and opens a `FileVisit` for each file: a `FileReport`, the checks
of its entries, and, for a remote file, a spool copy of the body, so that the excerpts and the second look
at one-way hreflang pairs can read it again.
"""

from __future__ import annotations

import datetime as dt
import gzip
import io
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import IO, BinaryIO, Final, cast

from sitemapkit.core.diagnostics import Diagnostic, DiagnosticHandler
from sitemapkit.core.model import IndexEntry, UrlEntry
from sitemapkit.reader.discover import Discovery, Source, classify
from sitemapkit.reader.download import Download
from sitemapkit.reader.fetch import (
    ContentDecodingError,
    DownloadTooLargeError,
    Fetcher,
    FetchError,
    FetchOptions,
    FetchRefusedError,
    FetchResponse,
)
from sitemapkit.reader.parser import SitemapParser, parse_file
from sitemapkit.reader.safety import GZIP_MAGIC, detect_encoding, is_utf8_name, known_codec
from sitemapkit.reader.tree import TreeWalk
from sitemapkit.reader.walk import ReadOptions
from sitemapkit.reader.walkevents import Refusal, SitemapVisit, WalkEvents, WalkItem, status_phrase
from sitemapkit.validator.checks import FileChecks, TreeChecks
from sitemapkit.validator.report import FileReport, ValidationReport

MAX_CHILDREN: Final = 50_000
"""Children of one index validated (the protocol's limit); more are counted and reported."""
CHUNK: Final = 256 * 1024
"""Bytes of standard input spooled at a time."""
EXCERPT_WIDTH: Final = 120
"""Most characters of a source line shown with a diagnostic."""
_LINE_CAP: Final = 1 << 20
"""Most characters of one line searched for an excerpt (a minified file is one huge line)."""
_LOOKAHEAD: Final = 8
"""Lines after an entry's first searched for the URL at fault, for the excerpt."""


@dataclass
class Options:
    """What `validate`'s arguments ask of the walk."""

    url: str | None
    recursive: bool
    max_uncompressed: int
    fetch: FetchOptions
    fetch_missing: bool = False
    """Fetch a local index's children that are not found next to it (else `read-error`)."""

    def read_options(self) -> ReadOptions:
        """The walk's options: one level below each root (or none), `MAX_CHILDREN` children of an index,
        no bound on the whole walk, and the fetch options' own caps and per-host limit."""
        return ReadOptions(
            max_depth=1 if self.recursive else 0,
            concurrency=self.fetch.per_host,
            max_download=self.fetch.max_download,
            max_uncompressed=self.max_uncompressed,
            max_children=MAX_CHILDREN,
            max_sitemaps=sys.maxsize,
            fetch_missing=self.fetch_missing,
        )


class FileVisit(SitemapVisit):
    """One file of the tree while the walk reads it: its report, the checks of its entries, its spool."""

    def __init__(self, run: Validator, item: WalkItem, file: FileReport, ordinal: int) -> None:
        self.run = run
        self.item = item
        self.file = file
        self.ordinal = ordinal
        self.checks: FileChecks | None = None
        self.first_error: str | None = None
        """The first error the parser reported (why the file is not a sitemap, if it is not)."""
        self._spool: IO[bytes] | None = None

    def body(self, response: FetchResponse | None) -> None:
        run, file = self.run, self.file
        if response is not None:
            file.url = self.item.public  # where redirects ended, unless a public URL was known
            spooled = os.path.join(run.spool, f"{self.ordinal}")
            run.paths[self.ordinal] = spooled
            self._spool = open(spooled, "wb")  # noqa: SIM115 - closed in close()
        self.checks = run.tree.file(self.ordinal, file.source, file.url, sources=run.names)

    def piece(self, data: bytes) -> None:
        if self._spool is not None:
            self._spool.write(data)

    def parsed(self, d: Diagnostic) -> None:
        if d.code == "invalid-url":
            self.run.flagged.add((d.line, d.url))
        elif d.is_error and self.first_error is None:
            self.first_error = f"[{d.code}] {d.message}"
        self.run.emit(d)

    def entries(self, out: list[UrlEntry | IndexEntry]) -> list[IndexEntry]:
        checks = self.checks
        assert checks is not None
        flagged = self.run.flagged
        on_entry = self.run.on_entry
        children: list[IndexEntry] = []
        for entry in out:
            was_flagged = bool(flagged) and (entry.line, entry.loc) in flagged
            if isinstance(entry, UrlEntry):
                checks.url(entry, was_flagged)
                if on_entry is not None and not was_flagged:
                    on_entry(entry)
            else:
                url = checks.sitemap(entry, was_flagged)
                if url is not None:
                    children.append(entry if url == entry.loc else replace(entry, loc=url))
        flagged.clear()
        return children

    def finish(self, parser: SitemapParser, complete: bool) -> None:
        # A body cut short by the network or a cap is not the file's fault: the walk did not close the
        # parser (no "truncated" parse error), and the entries read were checked.
        file = self.file
        if self.checks is not None:
            self.checks.finish()
        file.kind = parser.kind if parser.ok else None
        file.entries = parser.count + parser.skipped
        file.compressed = parser.compressed
        file.uncompressed_bytes = parser.uncompressed_bytes
        if file.kind is None and file.error is None:
            file.error = self.first_error or "not a sitemap"

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()
        node, file = self.item.node, self.file
        file.status = node.status
        file.final_url = node.final_url
        file.bytes = node.bytes


class Validator(WalkEvents):
    """One validation run over one or more sources; `run` walks, then `excerpts` takes the lines."""

    close_cut_body = False
    lists = "The index lists"

    def __init__(
        self,
        report: ValidationReport,
        options: Options,
        tree_now: dt.datetime,
        allow_hosts: tuple[str, ...],
        on_diagnostic: DiagnosticHandler | None,
        spool: str,
        on_entry: Callable[[UrlEntry], None] | None = None,
    ) -> None:
        super().__init__(self.emit, options.fetch.max_download)
        self.report = report
        self.on_entry = on_entry
        self.options = options
        self.on_diagnostic = on_diagnostic
        self.tree = TreeChecks(self.emit, now=tree_now, allow_hosts=allow_hosts)
        self._allowed_hosts = frozenset(h.lower().rstrip(".") for h in allow_hosts)
        """--allow-host: children on these hosts are followed as if on the index's own site."""
        self.spool = spool
        self.names: list[str] = []
        """Source name of each file, by ordinal."""
        self.paths: list[str | None] = []
        """Where each file's bytes can be read again (a local path or a spool file), by ordinal."""
        self.flagged: set[tuple[int | None, str | None]] = set()
        """(line, URL) of the entries the parser reported `invalid-url` for, in the list being checked."""

    def emit(self, d: Diagnostic) -> None:
        self.report.add(d)
        if self.on_diagnostic is not None:
            self.on_diagnostic(d)

    # -- sources -------------------------------------------------------------------------------------

    async def run(self, sources: list[str], probe: Download | None = None) -> None:
        """Walk each source; `probe` (a download of one of them a discovery began) is read on from."""
        read_options = self.options.read_options()
        try:
            async with Fetcher(self.options.fetch) as fetcher:
                for source in sources:
                    src, name = self._root(source)
                    mine = probe is not None and src.kind == "sitemap" and probe.url == src.location
                    given, probe = (probe, None) if mine else (None, probe)
                    walk = TreeWalk(
                        src,
                        read_options,
                        self.options.fetch,
                        self,
                        root_name=name,
                        public_url=self.options.url,
                        allow_hosts=self._allowed_hosts,
                        record_past_depth=False,
                        probe=given,
                    )
                    async for _ in walk.batches(fetcher):
                        pass  # the entries were checked as the walk parsed them (`FileVisit.entries`)
        finally:
            if probe is not None:  # of no source: its download stops
                await probe.cancel()
        self._hreflang_pairs()

    def _root(self, source: str) -> tuple[Source, str | None]:
        """What the walk starts from, and the name diagnostics give it (standard input is spooled)."""
        src = classify(source)
        url = self.options.url
        if src.kind == "file" and url is None:
            self.report.notes.append(
                f"{src.location}: scope checks (url-not-allowed) were skipped; give --url with the file's "
                "public URL to check that every URL is in its folder."
            )
        if src.kind != "stdin":
            return src, None
        spooled = os.path.join(self.spool, "stdin")
        with open(spooled, "wb") as out:
            while piece := sys.stdin.buffer.read(CHUNK):
                out.write(piece)
        if url is None:
            self.report.notes.append(
                "<stdin>: scope checks (url-not-allowed) were skipped; give --url with the public "
                "URL of the sitemap to check them."
            )
        return Source("stdin", spooled), "<stdin>"

    # -- what the walk meets ---------------------------------------------------------------------------

    def open(self, item: WalkItem) -> FileVisit:
        parent = _file_of(item.parent)
        file = FileReport(
            item.name,
            url=item.public,
            parent=parent.source if parent is not None else None,
            depth=item.node.depth,
        )
        ordinal = len(self.names)
        self.report.add_file(file)
        self.names.append(item.name)
        self.paths.append(item.location if item.local else None)
        return FileVisit(self, item, file, ordinal)

    def no_sitemap(self, found: Discovery, message: str) -> None:
        self.emit(
            Diagnostic.make(
                "no-sitemap",
                f"No sitemap found for {found.site}: robots.txt names none and no well-known path "
                "answers with one. Add a 'Sitemap:' line to robots.txt.",
                source=found.robots_url,
            )
        )

    def fetch_failed(self, item: WalkItem, exc: FetchError) -> None:
        file = _file_of(item)
        assert file is not None
        file.error = exc.reason
        if isinstance(exc, DownloadTooLargeError):
            self._fetch_problem("download-too-large", f"{exc.reason}; complete entries were checked.", item)
        elif isinstance(exc, ContentDecodingError):
            self._fetch_problem(
                "compression-error", f"{exc.reason}; serve the file with a correct Content-Encoding.", item
            )
        elif isinstance(exc, FetchRefusedError):
            file.error = f"not fetched: {exc.reason}"
            self._fetch_problem(exc.code, f"{exc.reason}.", item)
        else:
            self._fetch_problem(
                "http-error",
                f"The sitemap could not be fetched: {exc.reason}. Check the URL and that the server answers.",
                item,
            )

    cut = fetch_failed  # a body cut short is told as the validator always told it

    def redirect_loop(self, item: WalkItem, url: str, message: str) -> None:
        file = _file_of(item)
        assert file is not None
        file.error = "redirects to a sitemap already read"
        self._loop(item, item.name, f"redirects to a sitemap already read ({url})")

    def http_status(self, item: WalkItem, response: FetchResponse) -> None:
        file = _file_of(item)
        assert file is not None
        file.error = f"HTTP {response.status}"
        attempts = f" (after {response.attempts} attempts)" if response.attempts > 1 else ""
        self._fetch_problem(
            "http-error",
            f"The server answered HTTP {response.status} {status_phrase(response.status)}{attempts}; make "
            "the sitemap available at this URL or remove it from the index.",
            item,
        )

    def unreadable(self, item: WalkItem, error: str) -> None:
        file = _file_of(item)
        assert file is not None
        file.error = error
        self._fetch_problem("read-error", f"The file cannot be read ({error}).", item)

    def nested_index(self, item: WalkItem) -> None:
        parent = _file_of(item.parent)
        assert parent is not None
        self.emit(
            Diagnostic.make(
                "nested-index",
                "This index lists another sitemap index; search engines do not follow nested "
                "indexes. List that index's sitemaps here instead, or submit it on its own.",
                source=parent.source,
                line=item.line,
                url=item.node.url,
            )
        )

    def over(self, item: WalkItem, over_index: int, over_walk: int, options: ReadOptions) -> None:
        file = _file_of(item)
        if over_index and file is not None:
            self.emit(
                Diagnostic.make(
                    "walk-limit",
                    f"{over_index:,} more children past the first {MAX_CHILDREN:,} of this index were not "
                    "validated.",
                    source=file.source,
                )
            )

    def refused(self, item: WalkItem, refusal: Refusal, options: ReadOptions) -> None:
        parent = _file_of(item.parent)
        assert parent is not None
        url, depth = item.node.url, item.node.depth
        if refusal.code == "fetch-loop":
            self._loop(item, url, "lists itself (or a sitemap already read)")
        elif refusal.code == "cross-host":
            self.emit(
                Diagnostic.make("cross-host", refusal.reason, source=parent.source, line=item.line, url=url)
            )
        elif refusal.code == "read-error" and refusal.path is not None:
            self.emit(
                Diagnostic.make(
                    "read-error",
                    f"The child sitemap should be at {refusal.path} next to the index (its public URL is "
                    "under the index's folder), but no such file exists; generate it or fix the <loc>.",
                    source=parent.source,
                    line=item.line,
                    url=url,
                )
            )
            # counted as a file that could not be read, as a child that cannot be fetched is
            self.report.add_file(FileReport(refusal.path, url, parent.source, depth, error="no such file"))
        elif refusal.code == "read-error":
            self.emit(
                Diagnostic.make(
                    "read-error",
                    "The child sitemap is not next to the index (looked for its URL path in the index's "
                    "folder); it is not fetched unless asked (--fetch-missing).",
                    source=parent.source,
                    line=item.line,
                    url=url,
                )
            )
            # a file that could not be read, as with --url or a failed fetch
            self.report.add_file(FileReport(url, url, parent.source, depth, error="not fetched"))

    def _loop(self, item: WalkItem, url: str, what: str) -> None:
        parent = _file_of(item.parent)
        self.emit(
            Diagnostic.make(
                "fetch-loop",
                f"This child {what}; it is not followed. An index should list only its child sitemaps.",
                source=parent.source if parent is not None else item.name,
                line=item.line,
                url=url,
            )
        )

    def _fetch_problem(self, code: str, message: str, item: WalkItem) -> None:
        """Report a file that could not be (fully) read: at the index line listing it, if any."""
        parent = _file_of(item.parent)
        if parent is not None:
            d = Diagnostic.make(code, message, source=parent.source, line=item.line, url=item.location)
        else:
            d = Diagnostic.make(code, message, source=item.name)
        self.emit(d)

    # -- after the walk ------------------------------------------------------------------------------

    def _hreflang_pairs(self) -> None:
        """Report one-way alternates: read again only the files that hold some."""
        for ordinal, keys in sorted(self.tree.unmatched_pairs().items()):
            path = self.paths[ordinal]
            if path is None:
                continue
            for entry in parse_file(path, source=self.names[ordinal]):
                if isinstance(entry, UrlEntry) and entry.alternates:
                    self.tree.report_unmatched(entry, keys)
                    if not keys:
                        break

    def excerpts(self) -> None:
        """Take the source line of every kept diagnostic that has a line, one pass per file.

        An entry spread over several lines is reported at its `<url>` line; when the URL at fault is not
        on it, the excerpt is the first of the next few lines that shows it.
        """
        wanted: dict[str, dict[int, list[Diagnostic]]] = {}
        for d in self.report.diagnostics:
            if d.source is not None and d.line is not None:
                wanted.setdefault(d.source, {}).setdefault(d.line, []).append(d)
        for ordinal, name in enumerate(self.names):
            lines = wanted.pop(name, None)
            path = self.paths[ordinal]
            if not lines or path is None:
                continue
            waiting: list[tuple[int, Diagnostic, str]] = []
            try:
                for number, text in _numbered_lines(path, max(lines) + _LOOKAHEAD):
                    if waiting:
                        still = []
                        for until, d, first in waiting:
                            if _find(text, d.url) >= 0:
                                self.report.add_excerpt(d, _shorten(text, d))
                            elif number >= until:
                                self.report.add_excerpt(d, _shorten(first, d))
                            else:
                                still.append((until, d, first))
                        waiting = still
                    for d in lines.get(number, ()):
                        if d.url and _find(text, d.url) < 0:
                            waiting.append((number + _LOOKAHEAD, d, text))
                        else:
                            self.report.add_excerpt(d, _shorten(text, d))
            except (OSError, EOFError, ValueError):
                pass  # a corrupt gzip tail: the lines before it were taken
            for _, d, first in waiting:
                self.report.add_excerpt(d, _shorten(first, d))


def _file_pieces(path: str, file: FileReport) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while piece := f.read(CHUNK):
            file.bytes += len(piece)
            yield piece


# --- excerpts --------------------------------------------------------------------------------------------


def _open_text(path: str) -> IO[str]:
    """The file as text, as the parser read it: gunzipped, in its detected encoding (UTF-8 by default)."""
    raw: io.BufferedIOBase = open(path, "rb")  # noqa: SIM115 - returned wrapped, closed by the caller
    try:
        if raw.read(2) == GZIP_MAGIC:
            raw.seek(0)
            raw = gzip.GzipFile(fileobj=raw)
        else:
            raw.seek(0)
        head = raw.read(1024)
        raw.seek(0)
    except BaseException:
        raw.close()
        raise
    codec, bom, _ = detect_encoding(head)
    encoding = "utf-8-sig" if is_utf8_name(codec) else (known_codec(codec) or "utf-8")
    if bom and encoding.endswith(("-le", "-be")):
        encoding = encoding.rsplit("-", 1)[0]  # utf-16-le with a BOM: let the codec eat the BOM
    return io.TextIOWrapper(cast("BinaryIO", raw), encoding=encoding, errors="replace")


def _numbered_lines(path: str, last: int, budget: int = 100 * 1024 * 1024) -> Iterator[tuple[int, str]]:
    """(line number, text) for lines 1..`last`, each cut at `_LINE_CAP` characters; at most `budget`
    characters are read in all (like the parser's decompression cap), so a bomb cannot make it spin."""
    with _open_text(path) as text:
        number = 0
        while number < last and budget > 0:
            line = text.readline(_LINE_CAP)
            if not line:
                return
            budget -= len(line)
            number += 1
            if not line.endswith("\n") and len(line) == _LINE_CAP:
                while budget > 0 and (rest := text.readline(_LINE_CAP)) and not rest.endswith("\n"):
                    budget -= len(rest)
            yield number, line.rstrip("\r\n")


def _find(line: str, url: str | None) -> int:
    """Where `url` is in `line` (as an element's whole text first, then anywhere; as written or
    XML-escaped; then ignoring case), or -1."""
    if not url:
        return -1
    needles = (url, url.replace("&", "&amp;")) if "&" in url else (url,)
    for needle in needles:
        at = line.find(f">{needle}<")
        if at >= 0:
            return at + 1
    for needle in needles:
        at = line.find(needle)
        if at >= 0:
            return at
    return line.lower().find(url.lower())


def _shorten(line: str, d: Diagnostic) -> str:
    """At most `EXCERPT_WIDTH` characters of `line`, around the URL at fault or the column."""
    text = line.replace("\t", " ")
    if len(text) <= EXCERPT_WIDTH:
        return text.strip()
    at = _find(text, d.url)
    if at < 0 and d.column is not None:
        at = d.column - 1
    if at < 0:
        at = len(text) - len(text.lstrip())
    start = max(0, min(at - 20, len(text) - EXCERPT_WIDTH))
    piece = text[start : start + EXCERPT_WIDTH]
    return ("…" if start > 0 else "") + piece + ("…" if start + EXCERPT_WIDTH < len(text) else "")


def _file_of(item: WalkItem | None) -> FileReport | None:
    """The report of the file `item` stands for (None for none, or one not opened)."""
    visit = item.visit if item is not None else None
    return visit.file if isinstance(visit, FileVisit) else None
