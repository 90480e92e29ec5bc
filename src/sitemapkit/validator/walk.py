"""The walk behind `validate`: read each file of a sitemap tree through the parser and the checks.

Local files are read in chunks; remote ones are fetched (redirects, retries and caps in fetch.py) and
spooled to a temporary file while they are parsed, so that the excerpts and the second look at one-way
hreflang pairs can read them again. Where each child of an index is read from is told in validate.py.
"""

from __future__ import annotations

import datetime as dt
import gzip
import io
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http import HTTPStatus
from typing import IO, BinaryIO, Final, cast
from urllib.parse import unquote, urlsplit

from sitemapkit.core.diagnostics import Diagnostic, DiagnosticHandler
from sitemapkit.core.model import IndexEntry, UrlEntry
from sitemapkit.core.urls import folder_of, url_key
from sitemapkit.reader.discover import classify, discover
from sitemapkit.reader.fetch import (
    ContentDecodingError,
    DownloadTooLargeError,
    Fetcher,
    FetchError,
    FetchOptions,
    FetchRefusedError,
)
from sitemapkit.reader.parser import SitemapParser, parse_file
from sitemapkit.reader.safety import GZIP_MAGIC, detect_encoding, is_utf8_name, known_codec
from sitemapkit.validator.checks import FileChecks, TreeChecks
from sitemapkit.validator.report import FileReport, ValidationReport

MAX_CHILDREN: Final = 50_000
"""Children of one index validated (the protocol's limit); more are counted and reported."""
CHUNK: Final = 256 * 1024
"""Bytes read from a local file at a time."""
EXCERPT_WIDTH: Final = 120
"""Most characters of a source line shown with a diagnostic."""
_LINE_CAP: Final = 1 << 20
"""Most characters of one line searched for an excerpt (a minified file is one huge line)."""
_LOOKAHEAD: Final = 8
"""Lines after an entry's first searched for the URL at fault, for the excerpt."""


@dataclass(slots=True)
class _Job:
    """A file to validate: where to read it, and what is known of it before reading."""

    read: str
    """A local path, or a URL."""
    local: bool
    public: str | None
    """Its public URL when known before reading (a remote file's is where redirects end)."""
    parent: FileReport | None = None
    parent_line: int | None = None
    depth: int = 0
    local_folder: str | None = None
    """For a local index: the folder its children may be found in."""
    public_folder: str | None = None
    """For an index given a public URL: its public folder, which `local_folder` (or the folder it was
    fetched from, for a remote index) stands for."""
    read_folder: str | None = None
    """For a remote index given a public URL: the folder it was really fetched from."""
    name: str | None = None
    """The name diagnostics use, when it is not `read` (standard input)."""


@dataclass(slots=True)
class _Child:
    url: str
    line: int | None


@dataclass
class Options:
    """What `validate`'s arguments ask of the walk."""

    url: str | None
    recursive: bool
    max_uncompressed: int
    fetch: FetchOptions
    fetch_missing: bool = False
    """Fetch a local index's children that are not found next to it (else `read-error`)."""


class Validator:
    """One validation run over one or more sources; `run` walks, then `excerpts` takes the lines."""

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
        self.report = report
        self.on_entry = on_entry
        self.options = options
        self.on_diagnostic = on_diagnostic
        self.tree = TreeChecks(self.emit, now=tree_now, allow_hosts=allow_hosts)
        self._allowed_hosts = {h.lower().rstrip(".") for h in allow_hosts}
        """--allow-host: children on these hosts are followed as if on the index's own site."""
        self._visited: set[str] = set()  # sitemaps of the current tree, by normalised URL: loops stop here
        self.spool = spool
        self.names: list[str] = []
        """Source name of each file, by ordinal."""
        self.paths: list[str | None] = []
        """Where each file's bytes can be read again (a local path or a spool file), by ordinal."""
        self._flagged: set[tuple[int | None, str | None]] = set()
        self._first_error: str | None = None
        """The first error the parser reported in the file being read (why it is not a sitemap)."""
        self._over = 0
        """Children of the index being read past `MAX_CHILDREN` (counted, not kept)."""

    def emit(self, d: Diagnostic) -> None:
        self.report._add(d)
        if self.on_diagnostic is not None:
            self.on_diagnostic(d)

    def _from_parser(self, d: Diagnostic) -> None:
        if d.code == "invalid-url":
            self._flagged.add((d.line, d.url))
        elif d.is_error and self._first_error is None:
            self._first_error = f"[{d.code}] {d.message}"
        self.emit(d)

    # -- sources -------------------------------------------------------------------------------------

    async def run(self, sources: list[str]) -> None:
        async with Fetcher(self.options.fetch) as fetcher:
            for source in sources:
                for job in await self._roots(source, fetcher):
                    await self._tree(job, fetcher)
        self._hreflang_pairs()

    async def _roots(self, source: str, fetcher: Fetcher) -> list[_Job]:
        src = classify(source)
        url = self.options.url
        if src.kind == "file":
            path = src.location
            if url is None:
                self.report.notes.append(
                    f"{path}: scope checks (url-not-allowed) were skipped; give --url with the file's "
                    "public URL to check that every URL is in its folder."
                )
            folder = os.path.dirname(os.path.abspath(path))
            public_folder = folder_of(url) if url is not None else None
            return [_Job(path, True, url, local_folder=folder, public_folder=public_folder)]
        if src.kind == "stdin":
            spooled = os.path.join(self.spool, "stdin")
            with open(spooled, "wb") as out:
                while piece := sys.stdin.buffer.read(CHUNK):
                    out.write(piece)
            if url is None:
                self.report.notes.append(
                    "<stdin>: scope checks (url-not-allowed) were skipped; give --url with the public "
                    "URL of the sitemap to check them."
                )
            return [_Job(spooled, True, url, name="<stdin>")]
        if src.kind == "sitemap":
            return [_Job(src.location, False, url, public_folder=folder_of(url) if url else None)]
        found = await discover(src.location, fetcher, on_diagnostic=self.emit)
        if not found.sitemaps:
            self.emit(
                Diagnostic.make(
                    "no-sitemap",
                    f"No sitemap found for {src.location}: robots.txt names none and no well-known path "
                    "answers with one. Add a 'Sitemap:' line to robots.txt.",
                    source=found.robots_url,
                )
            )
            return []
        return [_Job(u, False, None) for u in found.sitemaps]

    def _seen(self, *urls: str | None) -> None:
        for url in urls:
            if url and "://" in url:
                self._visited.add(url_key(url))

    async def _tree(self, root: _Job, fetcher: Fetcher) -> None:
        self._visited.clear()
        self._seen(root.public, root.read if not root.local else None)
        self._over = 0
        file, children = await self._file(root, fetcher)
        self._seen(file.url, file.final_url)
        if self._over and self.options.recursive:
            self.emit(
                Diagnostic.make(
                    "walk-limit",
                    f"{self._over:,} more children past the first {MAX_CHILDREN:,} of this index were not "
                    "validated.",
                    source=file.source,
                )
            )
        if file.kind != "sitemapindex" or not self.options.recursive:
            return
        for child in children:
            if url_key(child.url) in self._visited:
                self._loop(file, child.line, child.url, "lists itself (or a sitemap already read)")
                continue
            job = self._child_job(root, file, child)
            if job is None:
                continue
            self._seen(child.url)
            sub, _ = await self._file(job, fetcher)
            if sub.kind == "sitemapindex":
                self.emit(
                    Diagnostic.make(
                        "nested-index",
                        "This index lists another sitemap index; search engines do not follow nested "
                        "indexes. List that index's sitemaps here instead, or submit it on its own.",
                        source=file.source,
                        line=child.line,
                        url=child.url,
                    )
                )

    def _loop(self, parent: FileReport, line: int | None, url: str, what: str) -> None:
        self.emit(
            Diagnostic.make(
                "fetch-loop",
                f"This child {what}; it is not followed. An index should list only its child sitemaps.",
                source=parent.source,
                line=line,
                url=url,
            )
        )

    def _child_job(self, root: _Job, parent: FileReport, child: _Child) -> _Job | None:
        """Where to read a child of `root` from (see the module docstring), or None (reported)."""

        def job(read: str, local: bool) -> _Job:
            folder = os.path.dirname(read) if local else None  # a local child index's own children
            return _Job(
                read,
                local,
                child.url,
                parent=parent,
                parent_line=child.line,
                depth=root.depth + 1,
                local_folder=folder,
            )

        if root.local and root.local_folder is not None:
            local = self._local_child(root, child.url)
            if local is not None:
                path, required = local
                if os.path.isfile(path):
                    return job(path, True)
                if required:
                    self.emit(
                        Diagnostic.make(
                            "read-error",
                            f"The child sitemap should be at {path} next to the index (its public URL is "
                            "under the index's folder), but no such file exists; generate it or fix the "
                            "<loc>.",
                            source=parent.source,
                            line=child.line,
                            url=child.url,
                        )
                    )
                    # counted as a file that could not be read, as a child that cannot be fetched is
                    self.report._file(
                        FileReport(path, child.url, parent.source, root.depth + 1, error="no such file")
                    )
                    return None
            if not self.options.fetch_missing:
                self.emit(
                    Diagnostic.make(
                        "read-error",
                        "The child sitemap is not next to the index (looked for its URL path in the index's "
                        "folder); it is not fetched unless asked (--fetch-missing).",
                        source=parent.source,
                        line=child.line,
                        url=child.url,
                    )
                )
                self.report._file(  # a file that could not be read, as with --url or a failed fetch
                    FileReport(child.url, child.url, parent.source, root.depth + 1, error="not fetched")
                )
                return None
        if (
            not root.local
            and root.public_folder is not None
            and root.read_folder is not None
            and child.url.startswith(root.public_folder)
        ):
            # a staging copy judged as the public tree: children under the public folder come from staging
            return job(root.read_folder + child.url[len(root.public_folder) :], False)
        base = parent.url or (None if root.local else root.read)
        if base is not None and (urlsplit(child.url).hostname or "") not in self._allowed_hosts:
            cross = self.options.fetch.policy.cross_host_reason(base, child.url, "The index lists")
            if cross is not None:
                self.emit(
                    Diagnostic.make("cross-host", cross, source=parent.source, line=child.line, url=child.url)
                )
                return None
        return job(child.url, False)

    @staticmethod
    def _local_child(root: _Job, url: str) -> tuple[str, bool] | None:
        """Where a local index's child may be on disk, and whether it must be there."""
        assert root.local_folder is not None
        parts = urlsplit(url)
        if parts.query or parts.fragment:
            return None
        if root.public_folder is not None:
            if not url.startswith(root.public_folder):
                return None
            relative, required = unquote(url[len(root.public_folder) :]), True
        else:
            from sitemapkit.reader.local import local_child

            found = local_child(os.path.join(root.local_folder, "index"), url)
            return (str(found), False) if found is not None else None
        if not relative or relative.endswith("/"):
            return None
        folder = os.path.realpath(root.local_folder)
        path = os.path.realpath(os.path.join(folder, *relative.split("/")))
        if os.path.commonpath([folder, path]) != folder:
            return None
        return path, required

    # -- one file ------------------------------------------------------------------------------------

    async def _file(self, job: _Job, fetcher: Fetcher) -> tuple[FileReport, list[_Child]]:
        name = job.name or job.read
        file = FileReport(
            name,
            url=job.public,
            parent=job.parent.source if job.parent is not None else None,
            depth=job.depth,
        )
        ordinal = len(self.names)
        self.report._file(file)
        self.names.append(name)
        self.paths.append(job.read if job.local else None)
        parser = SitemapParser(
            name, on_diagnostic=self._from_parser, max_uncompressed=self.options.max_uncompressed
        )
        children: list[_Child] = []
        self._first_error = None
        if job.local:
            checks = self.tree.file(ordinal, name, job.public, sources=self.names)
            try:
                for piece in _file_pieces(job.read, file):
                    for batch in parser.feed_pieces(piece):
                        self._entries(batch, checks, children)
            except OSError as exc:
                file.error = f"cannot read: {exc.strerror or exc}"
                self._fetch_problem("read-error", f"The file cannot be read ({file.error}).", job)
                return file, children
            self._entries(parser.close(), checks, children)
        else:
            read = await self._remote(job, file, fetcher, parser, ordinal, children)
            if read is None:
                return file, children
            checks, complete = read
            # A body cut short by the network or a cap is not the file's fault: no "truncated" parse error.
            self._entries(parser.close() if complete else [], checks, children)
        checks.finish()
        file.kind = parser.kind if parser.ok else None
        file.entries = parser.count + parser.skipped
        file.compressed = parser.compressed
        file.uncompressed_bytes = parser.uncompressed_bytes
        if file.kind is None and file.error is None:
            file.error = self._first_error or "not a sitemap"
        return file, children

    async def _remote(
        self,
        job: _Job,
        file: FileReport,
        fetcher: Fetcher,
        parser: SitemapParser,
        ordinal: int,
        children: list[_Child],
    ) -> tuple[FileChecks, bool] | None:
        """Fetch, spool and parse a remote file: its checks and whether the whole body was read, or None
        when nothing was (reported)."""
        spooled = os.path.join(self.spool, f"{ordinal}")
        checks: FileChecks | None = None
        try:
            async with fetcher.stream(job.read) as response:
                file.status = response.status
                if response.redirects:
                    file.final_url = response.final_url
                    if job.parent is not None and url_key(response.final_url) in self._visited:
                        file.error = "redirects to a sitemap already read"
                        self._loop(
                            job.parent,
                            job.parent_line,
                            job.name or job.read,
                            f"redirects to a sitemap already read ({response.final_url})",
                        )
                        return None
                    self._seen(response.final_url)
                if not response.ok:
                    file.error = f"HTTP {response.status}"
                    self._fetch_problem(
                        "http-error",
                        f"The server answered HTTP {response.status} {_phrase(response.status)}"
                        f"{_attempts(response.attempts)}; make the sitemap available at this URL "
                        "or remove it from the index.",
                        job,
                    )
                    return None
                public = job.public
                if job.parent is None and job.public_folder is not None:
                    job.read_folder = folder_of(response.final_url)
                elif public is None or public == job.read:
                    public = response.final_url
                file.url = public
                checks = self.tree.file(ordinal, file.source, public, sources=self.names)
                self.paths[ordinal] = spooled
                with open(spooled, "wb") as spool:
                    async for piece in response.aiter_bytes():
                        spool.write(piece)
                        file.bytes = response.raw_bytes
                        for batch in parser.feed_pieces(piece):
                            self._entries(batch, checks, children)
                file.bytes = response.raw_bytes
            return checks, True
        except DownloadTooLargeError as exc:
            file.error = exc.reason
            self._fetch_problem("download-too-large", f"{exc.reason}; complete entries were checked.", job)
        except ContentDecodingError as exc:
            file.error = exc.reason
            self._fetch_problem(
                "compression-error", f"{exc.reason}; serve the file with a correct Content-Encoding.", job
            )
        except FetchRefusedError as exc:
            file.error = f"not fetched: {exc.reason}"
            self._fetch_problem(exc.code, f"{exc.reason}.", job)
        except FetchError as exc:
            file.error = exc.reason
            self._fetch_problem(
                "http-error",
                f"The sitemap could not be fetched: {exc.reason}. Check the URL and that the server answers.",
                job,
            )
        return (checks, False) if checks is not None else None

    def _fetch_problem(self, code: str, message: str, job: _Job) -> None:
        """Report a file that could not be (fully) read: at the index line listing it, if any."""
        if job.parent is not None:
            d = Diagnostic.make(code, message, source=job.parent.source, line=job.parent_line, url=job.read)
        else:
            d = Diagnostic.make(code, message, source=job.name or job.read)
        self.emit(d)

    def _entries(
        self, entries: list[UrlEntry | IndexEntry], checks: FileChecks, children: list[_Child]
    ) -> None:
        flagged = self._flagged
        for entry in entries:
            was_flagged = bool(flagged) and (entry.line, entry.loc) in flagged
            if isinstance(entry, UrlEntry):
                checks.url(entry, was_flagged)
                if self.on_entry is not None and not was_flagged:
                    self.on_entry(entry)
            else:
                url = checks.sitemap(entry, was_flagged)
                if url is not None:
                    if len(children) < MAX_CHILDREN:
                        children.append(_Child(url, entry.line))
                    else:
                        self._over += 1
        flagged.clear()

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
        excerpts = self.report._excerpts
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
                                excerpts[d] = _shorten(text, d)
                            elif number >= until:
                                excerpts[d] = _shorten(first, d)
                            else:
                                still.append((until, d, first))
                        waiting = still
                    for d in lines.get(number, ()):
                        if d.url and _find(text, d.url) < 0:
                            waiting.append((number + _LOOKAHEAD, d, text))
                        else:
                            excerpts[d] = _shorten(text, d)
            except (OSError, EOFError, ValueError):
                pass  # a corrupt gzip tail: the lines before it were taken
            for _, d, first in waiting:
                excerpts[d] = _shorten(first, d)


def _file_pieces(path: str, file: FileReport) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while piece := f.read(CHUNK):
            file.bytes += len(piece)
            yield piece


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _attempts(n: int) -> str:
    return f" (after {n} attempts)" if n > 1 else ""


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
