"""The sitemap writer: streams entries into files that roll over at the protocol's limits, gzips them,
writes the index, and publishes the set atomically.

Files are written under temporary names in the output folder and renamed into place only when the whole
set is complete (children first, index last). A manifest (`.sitemapkit-manifest.json`) records what was
published, so a rerun removes the sitemaps it wrote before and no longer writes, and never touches any
other file in the folder.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import secrets
import shutil
import signal
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Literal

from xxhash import xxh3_64_intdigest

from sitemapkit.core.constants import MAX_BYTES, MAX_NEWS_PER_SITEMAP, MAX_URLS
from sitemapkit.core.dates import CLOCK_SKEW, format_w3c, parse_w3c, sort_key
from sitemapkit.core.diagnostics import Diagnostic, DiagnosticHandler, DiagnosticLog
from sitemapkit.core.errors import (
    InterruptedAfterPublish,
    PublishError,
    StrictModeError,
    Terminated,
    UsageError,
    note_published,
)
from sitemapkit.core.files import atomic_write
from sitemapkit.core.model import Alternate, Image, IndexEntry, Lastmod, News, UrlEntry, Video
from sitemapkit.core.urls import Scope
from sitemapkit.generator.deflate import GzipWorker, GzipWriter, assemble_gzip, compressor
from sitemapkit.generator.lanes import BulkLane, add_list_batch, add_record_batch
from sitemapkit.generator.pipeline import Pipeline
from sitemapkit.generator.rules import UrlRules
from sitemapkit.generator.serialize import (
    escape_url,
    prefixes_of,
    render_index_entry,
    render_url,
    xml_footer,
    xml_header,
)
from sitemapkit.generator.sources.lists import CanonicalLines, ColumnBlock
from sitemapkit.generator.sources.records import TextRecord, entry_from_text
from sitemapkit.generator.tempfiles import RunLock, remove_stale

if TYPE_CHECKING:
    from sitemapkit.generator.hreflang import HreflangGroups, Spilled
    from sitemapkit.generator.robots import RobotsResult
    from sitemapkit.generator.spill import HeldEntries

IndexMode = Literal["auto", "always", "never"]
Naming = Literal["sitemapkit", "sitemap_gen"]
"""How published files are named: `sitemap.xml`, or `sitemap-1.xml`... with the index `sitemap.xml`; or as
Google's sitemap_gen.py named them: `sitemap.xml`, `sitemap1.xml`, ... and the index `sitemap_index.xml`
(never gzipped)."""
HreflangMode = Literal["keep", "complete"]
_CANON_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def manifest_name(name: str) -> str:
    """The manifest of the set of files named `name` (one per prefix, so several sets can share a folder)."""
    return f".sitemapkit-{name}.json"


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,100}")
_COPY_CHUNK = 1 << 20
_QUEUED = 2
_FOOTER = len(xml_footer("urlset").encode())
_SMALLEST_URL = len("<url><loc>http://a.b/</loc></url>\n")


@dataclass(frozen=True, slots=True)
class SitemapFile:
    """One published file: where it is, its public URL, what it holds."""

    path: Path
    url: str
    urls: int
    bytes: int
    """Uncompressed size, header and footer included."""
    lastmod: Lastmod | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "url": self.url,
            "urls": self.urls,
            "bytes": self.bytes,
            "lastmod": format_w3c(self.lastmod) if self.lastmod is not None else None,
        }


@dataclass(frozen=True, slots=True)
class PublishResult:
    """What a run published: the sitemaps, the index (if any), totals and diagnostics."""

    files: tuple[SitemapFile, ...]
    index: SitemapFile | None
    urls: int
    rejected: int
    duplicates: int
    removed: tuple[str, ...]
    errors: int
    warnings: int
    diagnostics: tuple[Diagnostic, ...] = field(repr=False)
    stylesheet: Path | None = None
    sources: dict[str, Any] | None = None
    """What `generate` read: lines, folder pages (and why some were skipped), log lines, state changes."""
    unchanged: tuple[str, ...] = ()
    """Files whose new bytes equal the published ones: left in place, not rewritten (mtime kept)."""
    filtered: int = 0
    """URLs left out by include/exclude rules (not an error)."""
    robots: RobotsResult | None = None
    """What `generate(..., robots=PATH)` did to robots.txt after publishing."""
    merged: int = 0
    """Entries merged into one for the same URL from another source (see `SitemapWriter.add_entry`)."""

    @property
    def entry_url(self) -> str:
        """The URL to submit (robots.txt `Sitemap:` line, Search Console): the index, or the only sitemap."""
        return self.index.url if self.index is not None else self.files[0].url

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": [f.to_dict() for f in self.files],
            "index": self.index.to_dict() if self.index is not None else None,
            "entry_url": self.entry_url,
            "totals": {
                "files": len(self.files),
                "urls": self.urls,
                "bytes": sum(f.bytes for f in self.files),
                "rejected": self.rejected,
                "duplicates": self.duplicates,
                "merged": self.merged,
                "filtered": self.filtered,
                "errors": self.errors,
                "warnings": self.warnings,
            },
            "removed": list(self.removed),
            "unchanged": list(self.unchanged),
            "stylesheet": str(self.stylesheet) if self.stylesheet else None,
            "sources": self.sources,
            "robots": self.robots.to_dict() if self.robots is not None else None,
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }


@dataclass(slots=True)
class Part:
    """A sitemap being filled: its body spools to a temporary file until the header is known."""

    spool: Path
    handle: IO[bytes]
    urls: int = 0
    news: int = 0
    body: int = 0
    prefixes: frozenset[str] = frozenset()
    header: int = 0
    newest: Lastmod | str | None = None
    """The newest lastmod, as a value or as canonical text (fast lane)."""
    newest_key: str = ""
    """UTC `YYYY-MM-DDTHH:MM:SS[.ffffff]` of `newest`: such strings sort in time order."""


@dataclass(slots=True)
class _Done:
    temp: Path
    urls: int
    bytes: int
    lastmod: Lastmod | None


class SitemapWriter:
    """Write sitemaps for the site whose sitemaps are published at `base_url` (a folder URL) into `out_dir`.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as out:
    ...     with SitemapWriter(out, "https://example.com/") as w:
    ...         w.add("https://example.com/", lastmod="2024-05-01")
    ...         w.add("/about")
    ...     w.result.entry_url
    True
    True
    'https://example.com/sitemap.xml'

    Every URL is normalised, kept in scope (the folder of `base_url`, plus `allow_hosts`) and written once.
    On leaving the `with` block normally the set is published; on an exception nothing is.
    With `strict`, any error or warning means nothing is published (`StrictModeError`).
    Extension data a validator would reject (a video without a title, an invalid hreflang, news older than
    two days as of `now`, ...) is left out with a diagnostic, and a file holds at most 1,000 news URLs.

    The set's own files (its sitemaps, index and stylesheet, and `own_urls`, such as the robots.txt a build
    updates) are never listed. `replace_existing` lets the set take over files of its names that another
    tool wrote (without it, publishing over them is refused). `naming`: see `Naming`.
    """

    def __init__(
        self,
        out_dir: str | os.PathLike[str],
        base_url: str,
        *,
        gzip: bool = False,
        gzip_level: int = 6,
        max_urls: int = MAX_URLS,
        max_bytes: int = MAX_BYTES,
        index: IndexMode = "auto",
        name: str = "sitemap",
        xsl: str | None = None,
        allow_hosts: Iterable[str] = (),
        strict: bool = False,
        dedupe: bool = True,
        hreflang: HreflangMode = "keep",
        rules: UrlRules | None = None,
        on_diagnostic: DiagnosticHandler | None = None,
        now: dt.datetime | None = None,
        naming: Naming = "sitemapkit",
        replace_existing: bool = False,
        own_urls: Iterable[str] = (),
    ) -> None:
        if not 1 <= max_urls <= MAX_URLS:
            raise UsageError(f"max_urls must be from 1 to {MAX_URLS:,} (got {max_urls:,})")
        smallest = len((xml_header("urlset", (), None) + xml_footer("urlset")).encode()) + _SMALLEST_URL
        if not smallest <= max_bytes <= MAX_BYTES:
            raise UsageError(
                f"max_bytes must be from {smallest:,} (a sitemap of one short URL) to {MAX_BYTES:,} "
                f"(got {max_bytes:,})"
            )
        if index not in ("auto", "always", "never"):
            raise UsageError(f"index must be auto, always or never (got {index!r})")
        if not _NAME.fullmatch(name) or ".." in name:
            raise UsageError(f"name must be a plain file name prefix such as 'sitemap' (got {name!r})")
        if not 0 <= gzip_level <= 9:
            raise UsageError(f"gzip_level must be from 0 to 9 (got {gzip_level})")
        if hreflang not in ("keep", "complete"):
            raise UsageError(f"hreflang must be keep or complete (got {hreflang!r})")
        if naming not in ("sitemapkit", "sitemap_gen"):
            raise UsageError(f"naming must be sitemapkit or sitemap_gen (got {naming!r})")
        self.out_dir = Path(out_dir)
        self.scope = Scope(base_url, tuple(allow_hosts))
        self.base_url = self.scope.folder
        self.gzip = gzip
        self.gzip_level = gzip_level
        self.max_urls = max_urls
        self.max_bytes = max_bytes
        self.index_mode: IndexMode = index
        self.name = name
        self.strict = strict
        self.log = DiagnosticLog(on_diagnostic)
        self.naming: Naming = naming
        self.replace_existing = replace_existing
        own_urls = tuple(own_urls)
        self.pipeline = Pipeline(
            self.scope, self.log, dedupe=dedupe, now=now, rules=rules, own=self._own_matcher(own_urls)
        )
        self._own_keys(own_urls)
        self._days: dict[str, bool] = {}  # canonical dates (YYYY-MM-DD) checked by add_lines: valid or not
        self._safe_day = (self.pipeline.now + CLOCK_SKEW).date().isoformat()  # earlier days are never future
        self.xsl_default = xsl == "default"
        self.xsl_href = f"{name}.xsl" if self.xsl_default else xsl
        self._suffix = ".xml.gz" if gzip else ".xml"
        self._token = secrets.token_hex(4)
        self._temps: list[Path] = []
        self._done: list[_Done] = []
        self._part: Part | None = None
        self._assembler: ThreadPoolExecutor | None = None
        self._assembling: list[Future[None]] = []
        self._gzip_worker: GzipWorker | Literal[False] | None = None  # False: none could be started
        self._closed = False
        self._header_cache: dict[frozenset[str], int] = {}
        self._bulk: BulkLane | None = None
        self._held: HeldEntries | None = None
        self.hold_undated = False
        """Hold back (as `add_entry(hold=True)`) an entry whose lastmod was left out (in the future), so that
        another source's date for its URL can still be merged in; `generate` sets it with several sources."""
        self.result: PublishResult | None = None
        if self.out_dir.exists() and not self.out_dir.is_dir():  # /dev/null, a file: not "File exists"
            raise PublishError(f"{self.out_dir}: not a folder; --out names the folder the sitemaps go in")
        try:
            self.out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise PublishError(f"{self.out_dir}: cannot create the output folder ({exc.strerror})") from None
        _check_writable(self.out_dir)
        self._groups: HreflangGroups | None = None
        # this run's lock first, then the temporary files that killed runs left (see tempfiles.py)
        self._lock = RunLock(self.out_dir, self._token)
        try:  # a Ctrl-C from here on still removes this run's lock and files (no `with` holds them yet)
            remove_stale(self.out_dir, keep=self._token)
            if hreflang == "complete":
                from sitemapkit.generator.hreflang import HreflangGroups

                self._groups = HreflangGroups(self._temp(f"{name}-hreflang"), self.log)
        except BaseException:
            self.abort()
            raise

    def _own_keys(self, extra: tuple[str, ...]) -> None:
        """Mark `extra` (own URLs other than the set's files, such as the robots.txt a build writes) as
        seen, so that the fast lanes of `add_lines` hand them to the pipeline, which leaves them out. The
        set's own file names need no marking: a line under `own_prefix` never takes a fast lane."""
        deduper = self.pipeline.deduper
        if deduper is None:
            return
        for url in extra:
            deduper._seen.add(xxh3_64_intdigest(escape_url(url).encode()))

    @property
    def own_prefix(self) -> str:
        """What every URL of the set's own files starts with (the folder and the file name prefix)."""
        return self.scope.folder + self.name

    def _own_matcher(self, extra: tuple[str, ...]) -> Callable[[str], bool]:
        """A test for the URLs of the set's own files (see the class docstring)."""
        name = re.escape(self.own_prefix)
        if self.naming == "sitemap_gen":
            pattern = rf"{name}(?:(?:[1-9]\d*)?\.xml(?:\.gz)?|_index\.xml|\.xsl)"
        else:
            pattern = rf"{name}(?:(?:-[1-9]\d*)?\.xml(?:\.gz)?|\.xsl)"
        own = re.compile(pattern)
        others = frozenset(extra)
        return lambda url: own.fullmatch(url) is not None or url in others

    # -- adding -------------------------------------------------------------------------------------

    def add(
        self,
        loc: str,
        lastmod: Lastmod | str | None = None,
        changefreq: str | None = None,
        priority: float | None = None,
        *,
        images: Iterable[Image] = (),
        videos: Iterable[Video] = (),
        news: News | None = None,
        alternates: Iterable[Alternate] = (),
    ) -> bool:
        """Add one URL. `lastmod` may be a W3C Datetime string. Returns False when the URL was left out
        (a diagnostic says why: invalid, out of scope, duplicate)."""
        if isinstance(lastmod, str):
            lastmod = parse_w3c(lastmod, allow_naive=True)
        entry = UrlEntry(
            loc, lastmod, changefreq, priority, tuple(images), tuple(videos), news, tuple(alternates)
        )
        return self.add_entry(entry)

    def add_entry(
        self,
        entry: UrlEntry,
        lastmod: Callable[[UrlEntry], Lastmod | None] | None = None,
        *,
        hold: bool = False,
    ) -> bool:
        """Add one entry (see `add`). `lastmod`, if given, is called with the entry once it is accepted
        (normalised, in scope, not a duplicate) and decides its `<lastmod>` (the state store does this).

        `hold` keeps the entry back until `close` (in a temporary SQLite file in the output folder, so
        memory stays flat), and from then on a later entry for the same URL, from
        any source, is merged into it (`sitemapkit.generator.merge`) instead of being a duplicate."""
        try:
            return self._add_entry(entry, lastmod, hold)
        except OSError as exc:  # a full disk, a failed gzip job: the run is abandoned
            raise self._abandon(exc) from None

    def _add_entry(
        self, entry: UrlEntry, lastmod: Callable[[UrlEntry], Lastmod | None] | None, hold: bool
    ) -> bool:
        if self._closed:
            raise UsageError("the writer is closed")
        ready = self.pipeline.process(entry)
        if ready is None:
            return False
        if self.hold_undated and entry.lastmod is not None and ready.lastmod is None:
            hold = True  # its date was left out: another source's may still stand
        if lastmod is not None:
            value = lastmod(ready)
            if value != ready.lastmod:
                ready = UrlEntry(  # positional: several times cheaper than dataclasses.replace
                    ready.loc,
                    value,
                    ready.changefreq,
                    ready.priority,
                    ready.images,
                    ready.videos,
                    ready.news,
                    ready.alternates,
                    ready.sitemap,
                    ready.line,
                )
        if hold:
            if self._held is None:
                from sitemapkit.generator.spill import HeldEntries

                self._held = HeldEntries(self._temp(f"{self.name}-held"))
            if self.pipeline.merge is None:
                self.pipeline.merge = self._merge_held
            self._held.put(ready)
            return True
        return self._emit(ready)

    def _merge_held(self, entry: UrlEntry) -> bool:
        from sitemapkit.generator.merge import merge_entries

        if self._held is None:
            return False
        held = self._held.get(entry.loc)
        if held is None or (held.sitemap is not None and held.sitemap == entry.sitemap):
            return False  # not held, or listed twice in one file: a duplicate (reported), not a merge
        self._held.put(merge_entries(held, entry))
        return True

    def _emit(self, ready: UrlEntry) -> bool:
        needs = (
            prefixes_of(ready) if (ready.images or ready.videos or ready.news or ready.alternates) else None
        )
        key = _key(ready.lastmod) if ready.lastmod is not None else ""
        if self._groups is not None:
            self._groups.add(ready, render_url(ready), needs, key)  # written at close, its group complete
            return True
        return self._write(render_url(ready).encode("utf-8"), needs, key, ready.lastmod, ready)

    def add_record(self, record: TextRecord) -> bool:
        """Add one URL given as text fields, as an input file spells them (bad optional fields are
        reported and dropped)."""
        return self.add_entry(entry_from_text(record, self.log))

    def _write(
        self,
        data: bytes,
        needs: set[str] | None,
        key: str,
        lastmod: Lastmod | str | None,
        entry: UrlEntry | Spilled | None,
    ) -> bool:
        part = self._part
        if part is not None:
            prefixes = part.prefixes | needs if needs else part.prefixes
            header = self._header_len(prefixes) if needs else part.header
            if (
                part.urls >= self.max_urls
                or header + part.body + len(data) + _FOOTER > self.max_bytes
                or (entry is not None and entry.news is not None and part.news >= MAX_NEWS_PER_SITEMAP)
            ):
                self._finish_part()
                part = None
        if part is None:
            prefixes = frozenset(needs or ())
            header = self._header_len(prefixes)
            if header + len(data) + _FOOTER > self.max_bytes:
                self.pipeline.accepted -= 1
                self.pipeline.rejected += 1
                self.log.add(
                    Diagnostic.make(
                        "file-too-large",
                        f"a sitemap holding only this entry would take {header + len(data) + _FOOTER:,} "
                        f"bytes ({len(data):,} for the entry, {header + _FOOTER:,} for the header and "
                        f"footer), more than the {self.max_bytes:,} allowed; it is left out",
                        source=entry.sitemap if entry else None,
                        line=entry.line if entry else None,
                        url=entry.loc if entry else None,
                    )
                )
                return False
            part = self._part = self._new_part()
        part.prefixes = prefixes
        part.header = header
        part.handle.write(data)
        part.body += len(data)
        part.urls += 1
        if entry is not None and entry.news is not None:
            part.news += 1
        if key and key > part.newest_key:
            part.newest, part.newest_key = lastmod, key
        return True

    def add_lines(
        self,
        lines: Sequence[str],
        first_line: int,
        parse_line: Callable[[str, int], TextRecord | None],
        *,
        clean: bool = False,
    ) -> None:
        """Add a batch of URL-list lines (`first_line` is the number of `lines[0]`).

        This is the hot loop of `generate`. Lines in canonical form, `URL` or `URL<TAB>LASTMOD` with a
        normalised in-scope URL and a lastmod as the writer writes it, are written by the fast lanes of
        `lanes.py` (a whole `CanonicalLines` batch at once, or line by line); any other line is parsed by
        `parse_line` and goes through `add_record`. The output is the same either way (property tests hold
        the lanes to it). `clean` says every character of the batch is a canonical URL character, TAB or
        newline, which spares the per-line URL check.
        """
        if self._closed:
            raise UsageError("the writer is closed")
        try:
            self._add_lines(lines, first_line, parse_line, clean)
        except OSError as exc:  # a full disk, a failed gzip job: the run is abandoned
            raise self._abandon(exc) from None

    def _add_lines(
        self,
        lines: Sequence[str],
        first_line: int,
        parse_line: Callable[[str, int], TextRecord | None],
        clean: bool,
    ) -> None:
        if self.pipeline.rules is not None or self._groups is not None:
            for index, line in enumerate(lines):  # every entry must go through the rules or the groups
                record = parse_line(line, first_line + index)
                if record is not None:
                    self.add_record(record)
            return
        if isinstance(lines, CanonicalLines):
            bulk = self._bulk
            if bulk is None:
                bulk = self._bulk = BulkLane(self.scope.folder, self.own_prefix)
            if bulk.usable and bulk.add(self, lines, self._known_day):
                return
        add_list_batch(self, lines, first_line, parse_line)

    def add_records(
        self,
        records: Sequence[TextRecord | UrlEntry] | ColumnBlock,
        notes: Mapping[int, Sequence[Diagnostic]] | None = None,
    ) -> None:
        """Add a batch of records read from a CSV or JSONL file (an entry with extensions as a `UrlEntry`):
        the columnar lane of `lanes.py` writes those in canonical form, and gives every other one to
        `add_record` (or `add_entry`) in its place. The output is the one `add_record` would give.
        `notes[i]`: diagnostics the reading made before record i (reported just before it is added)."""
        if self._closed:
            raise UsageError("the writer is closed")
        try:
            add_record_batch(self, records, notes or {}, self.pipeline.rules is None and self._groups is None)
        except OSError as exc:
            raise self._abandon(exc) from None

    def _known_day(self, day: str) -> bool:
        """Whether `day` is a valid canonical date `YYYY-MM-DD` (remembered for up to 100,000 days)."""
        valid = _CANON_DAY.fullmatch(day) is not None and day < self._safe_day  # a later day may be future
        if valid:
            try:
                dt.date.fromisoformat(day)
            except ValueError:
                valid = False
        if len(self._days) < 100_000:
            self._days[day] = valid
        return valid

    def add_many(self, entries: Iterable[UrlEntry]) -> int:
        """Add entries; returns how many were accepted."""
        return sum(1 for e in entries if self.add_entry(e))

    # -- files --------------------------------------------------------------------------------------

    def _header_len(self, prefixes: frozenset[str]) -> int:
        n = self._header_cache.get(prefixes)
        if n is None:
            n = self._header_cache[prefixes] = len(xml_header("urlset", prefixes, self.xsl_href).encode())
        return n

    def _temp(self, label: str) -> Path:
        # The name is predictable once the lock file shows the token: every temporary file is created
        # exclusively ("x"), so a symbolic link planted at one makes the run fail instead of being followed.
        path = self.out_dir / f".{label}.{self._token}.tmp"
        self._temps.append(path)
        return path

    def _current_part(self) -> Part:
        """The file being filled, or a new one without extension namespaces (for the bulk lane)."""
        part = self._part
        if part is None:
            part = self._part = self._new_part()
            part.header = self._header_len(part.prefixes)
        return part

    def _new_part(self) -> Part:
        spool = self._temp(f"{self.name}-{len(self._done) + 1}.body")
        handle = open(spool, "xb", buffering=_COPY_CHUNK)  # noqa: SIM115 - closed in _finish_part
        return Part(spool, handle)

    def _open_out(self, path: Path) -> tuple[IO[bytes] | GzipWriter, IO[bytes]]:
        raw = open(path, "xb", buffering=_COPY_CHUNK)  # noqa: SIM115 - closed by the caller
        if not self.gzip:
            return raw, raw
        return GzipWriter(raw, self.gzip_level), raw

    def _finish_part(self) -> None:
        """Close the current file's body; its header, body and footer are assembled while the next file
        fills, by a background thread that, for gzip, hands the work to a child process (`GzipWorker`:
        compression on another core, without the GIL)."""
        part = self._part
        assert part is not None
        self._part = None
        part.handle.close()
        temp = self._temp(f"{self.name}-{len(self._done) + 1}")
        header = xml_header("urlset", part.prefixes, self.xsl_href).encode()
        newest = parse_w3c(part.newest) if isinstance(part.newest, str) else part.newest
        self._done.append(_Done(temp, part.urls, len(header) + part.body + _FOOTER, newest))
        if self._assembler is None:
            self._assembler = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sitemapkit-writer")
        # A bounded queue: at most _QUEUED finished bodies wait for the compressor, so a slow disk or
        # compressor holds the main loop back instead of piling up spooled files.
        # The one thread runs jobs in order; a failure is raised here, at the next file, or by close().
        if len(self._assembling) >= _QUEUED:
            self._assembling[-_QUEUED].result()  # a file that failed fails the run now, not at the end
        if self.gzip and self._gzip_worker is None and not self._closed:
            # more files may follow: gzip them in a child process from now on (see deflate.py)
            self._gzip_worker = GzipWorker.start() or False
        worker = self._gzip_worker or None
        self._assembling.append(self._assembler.submit(self._assemble, temp, header, part.spool, worker))

    def _assemble(self, temp: Path, header: bytes, spool: Path, worker: GzipWorker | None) -> None:
        footer = xml_footer("urlset").encode()
        if self.gzip:
            name = compressor()
            if worker is not None:
                worker.run(str(temp), header, str(spool), footer, self.gzip_level, name)
            else:
                assemble_gzip(str(temp), header, str(spool), footer, self.gzip_level, name)
            return
        with open(temp, "xb", buffering=_COPY_CHUNK) as raw:
            raw.write(header)
            with open(spool, "rb") as body:
                shutil.copyfileobj(body, raw, _COPY_CHUNK)
            raw.write(footer)
            _sync(raw)  # on disk before the rename: after a power cut a file is whole, old or new
        spool.unlink()

    def _wait_for_files(self) -> None:
        """Wait until every file is assembled; re-raise the first failure."""
        try:
            for job in self._assembling:
                job.result()
        finally:
            self._assembling.clear()

    # -- publishing ---------------------------------------------------------------------------------

    def close(self) -> PublishResult:
        """Finish the files and publish the set atomically. Raises `PublishError` (nothing published)."""
        if self._closed:
            if self.result is None:
                raise UsageError("the writer was aborted")
            return self.result
        self._closed = True
        try:
            if self._held is not None:
                held, self._held = self._held, None
                try:
                    for entry in held.entries():
                        self._emit(entry)
                finally:
                    held.close()
            if self._groups is not None:
                groups, self._groups = self._groups, None
                try:
                    for item in groups.entries():
                        self._write(item.data, item.needs, item.key, item.lastmod, item)
                finally:
                    groups.close()
            if self._part is not None:
                self._finish_part()
            self._wait_for_files()
            with _interrupts_held() as interrupted:
                self.result = self._publish()
                note_published()
                self._cleanup()  # in the held block too: an interrupt now would leave the lock behind
            if signal.SIGTERM in interrupted:
                raise Terminated(128 + signal.SIGTERM)  # the CLI's handler would have raised it
            if interrupted:
                raise InterruptedAfterPublish
            return self.result
        except OSError as exc:
            raise self._cannot_write(exc) from None
        finally:
            self._cleanup()

    def _cannot_write(self, exc: OSError) -> PublishError:
        return PublishError(
            f"{exc.filename or self.out_dir}: cannot write ({exc.strerror or exc}); nothing was published"
        )

    def _abandon(self, exc: OSError) -> PublishError:
        """Discard the run after `exc` met while adding; the error to raise."""
        with contextlib.suppress(Exception):
            self.abort()
        return self._cannot_write(exc)

    def abort(self) -> None:
        """Discard everything written so far; the output folder is left as it was. A second Ctrl-C (or a
        SIGTERM) while it does so is let go: the run is ending already, and its files must still go."""
        self._closed = True
        with _interrupts_held():
            if self._held is not None:
                self._held.close()
                self._held = None
            if self._groups is not None:
                self._groups.close()
                self._groups = None
            if self._part is not None:
                self._part.handle.close()
                self._part = None
            with contextlib.suppress(Exception):
                self._wait_for_files()
            self._cleanup()

    def _cleanup(self) -> None:
        if self._assembler is not None:
            self._assembler.shutdown(wait=True)
            self._assembler = None
        if self._gzip_worker:
            self._gzip_worker.close()
        self._gzip_worker = None
        for path in self._temps:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        self._temps.clear()
        self._lock.release()

    def __enter__(self) -> SitemapWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is not None:
            self.abort()
        else:
            self.close()

    def _publish(self) -> PublishResult:
        log = self.log
        if self.strict and len(log):
            raise StrictModeError(
                f"strict mode: {log.errors} error(s) and {log.warnings} warning(s); nothing was published"
            )
        if not self._done:
            raise PublishError("no URL was accepted, so there is nothing to publish; nothing was changed")
        with_index = self.index_mode == "always" or (self.index_mode == "auto" and len(self._done) > 1)
        if self.index_mode == "never" and len(self._done) > 1:
            urls = sum(d.urls for d in self._done)
            raise PublishError(
                f"index 'never': the {urls:,} URLs need {len(self._done):,} files, but "
                "without an index only one file can be announced (robots.txt, Search Console); use index "
                "'auto', or raise the URL or byte limit per file. Nothing was published"
            )
        if len(self._done) > MAX_URLS and with_index:
            raise PublishError(
                f"{len(self._done):,} sitemaps exceed the {MAX_URLS:,} an index may list "
                "(too-many-sitemaps); nothing was published"
            )
        single = len(self._done) == 1 and not with_index
        sitemap_gen = self.naming == "sitemap_gen"
        files: list[SitemapFile] = []
        renames: list[tuple[Path, Path]] = []
        for number, done in enumerate(self._done, start=1):
            if sitemap_gen:
                final = f"{self.name}{number - 1 if number > 1 else ''}{self._suffix}"
            else:
                final = f"{self.name}{self._suffix}" if single else f"{self.name}-{number}{self._suffix}"
            files.append(
                SitemapFile(self.out_dir / final, self.base_url + final, done.urls, done.bytes, done.lastmod)
            )
            renames.append((done.temp, self.out_dir / final))
        index_file: SitemapFile | None = None
        if with_index:
            final = f"{self.name}_index.xml" if sitemap_gen else f"{self.name}{self._suffix}"
            temp = self._temp(final)
            size = self._write_index(temp, files, plain=sitemap_gen)
            index_file = SitemapFile(self.out_dir / final, self.base_url + final, len(files), size, None)
            renames.append((temp, self.out_dir / final))
        stylesheet: Path | None = None
        if self.xsl_default:
            stylesheet = self.out_dir / f"{self.name}.xsl"
            temp = self._temp(stylesheet.name)
            with open(temp, "xb") as xsl:
                xsl.write(resources.files("sitemapkit").joinpath("data/sitemap.xsl").read_bytes())
            renames.insert(0, (temp, stylesheet))
        removed, unchanged = self._commit(renames)
        return PublishResult(
            files=tuple(files),
            index=index_file,
            urls=sum(f.urls for f in files),
            rejected=self.pipeline.rejected,
            duplicates=self.pipeline.duplicates,
            merged=self.pipeline.merged,
            removed=removed,
            errors=log.errors,
            warnings=log.warnings,
            diagnostics=tuple(log.items),
            stylesheet=stylesheet,
            unchanged=unchanged,
            filtered=self.pipeline.filtered,
        )

    def _write_index(self, temp: Path, files: list[SitemapFile], plain: bool = False) -> int:
        header = xml_header("sitemapindex", (), self.xsl_href).encode()
        footer = xml_footer("sitemapindex").encode()
        out: IO[bytes] | GzipWriter
        raw: IO[bytes]
        if plain:  # never gzipped
            out = raw = open(temp, "xb", buffering=_COPY_CHUNK)  # noqa: SIM115 - closed below
        else:
            out, raw = self._open_out(temp)
        size = len(header) + len(footer)
        try:
            out.write(header)
            for f in files:
                data = render_index_entry(IndexEntry(f.url, f.lastmod)).encode()
                size += len(data)
                out.write(data)
            out.write(footer)
            if out is not raw:
                out.close()
            _sync(raw)
        finally:
            out.close()
            raw.close()
        if size > MAX_BYTES:
            raise PublishError(
                f"the index would take {size:,} bytes (more than {MAX_BYTES:,}); nothing published"
            )
        return size

    def _write_manifest(self, names: list[str]) -> None:
        manifest = self.out_dir / manifest_name(self.name)
        text = json.dumps({"version": 1, "files": names}, indent=1) + "\n"
        with contextlib.suppress(OSError, UnicodeDecodeError):
            if manifest.read_text("utf-8") == text:
                return  # already says so: an unchanged rebuild rewrites nothing
        with atomic_write(manifest, "w") as f:  # the one atomic writer (synced; a link there is replaced)
            f.write(text)

    def _read_manifest(self) -> set[str]:
        path = self.out_dir / manifest_name(self.name)
        try:
            data = json.loads(path.read_text("utf-8"))
            names = data["files"]
        except FileNotFoundError:
            return set()
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise PublishError(f"{path}: unreadable manifest ({exc}); remove it to start afresh") from None
        return {n for n in names if isinstance(n, str) and _is_plain_name(n)}

    def _owner(self, file_name: str) -> str | None:
        """The name of another sitemap set of this folder whose manifest lists `file_name`, if any."""
        for manifest in sorted(self.out_dir.glob(".sitemapkit-*.json")):
            other = manifest.name[len(".sitemapkit-") : -len(".json")]
            if other == self.name:
                continue
            try:
                names = json.loads(manifest.read_text("utf-8"))["files"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if isinstance(names, list) and file_name in names:
                return other
        return None

    def _commit(self, renames: list[tuple[Path, Path]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Rename the finished files into place and record them; return the names removed and the names
        left alone because their bytes did not change (an unchanged rebuild rewrites nothing, so mtimes,
        ETags and caches stay valid). The manifest first names old and new files together, so a run
        interrupted between two renames leaves every file accounted for (each one whole: old or new), and
        the next run replaces or removes them."""
        previous = self._read_manifest()
        new_names = [final.name for _, final in renames]
        for _, final in renames:
            if final.name in previous or not (final.exists() or final.is_symlink()):
                continue
            other = self._owner(final.name)
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
            if not self.replace_existing:
                raise PublishError(
                    f"{final} exists and was not written by sitemapkit; move it away, choose another --name, "
                    "or take it over with --replace-existing. Nothing was published"
                )
        self._write_manifest(sorted(previous | set(new_names)))
        unchanged: list[str] = []
        for temp, final in renames:  # children first, index last: the index never names a missing file
            if final.name in previous and _same_bytes(temp, final):
                unchanged.append(final.name)
                continue  # the temporary file goes with the others in _cleanup
            os.replace(temp, final)
            self._temps.remove(temp)
        self._write_manifest(sorted(new_names))
        _sync_folder(self.out_dir)
        removed: list[str] = []
        for stale in sorted(previous - set(new_names)):
            path = self.out_dir / stale
            if path.is_file() and not path.is_symlink():
                path.unlink()
                removed.append(stale)
        return tuple(removed), tuple(unchanged)


def _check_writable(folder: Path) -> None:
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


def _key(value: Lastmod) -> str:
    if type(value) is dt.date and value.year >= 1000:  # (strftime does not pad a year before 1000)
        return value.isoformat() + "T00:00:00"
    instant = sort_key(value)
    text = instant.isoformat()[:19] if instant.year >= 1000 else instant.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{instant.microsecond:06d}" if instant.microsecond else text


def _sync(raw: IO[bytes]) -> None:
    raw.flush()
    os.fsync(raw.fileno())


def _sync_folder(folder: Path) -> None:
    """Make the renames in `folder` durable (POSIX; a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _same_bytes(new: Path, old: Path) -> bool:
    """Whether the regular file `old` holds exactly the bytes of `new` (sizes first, then content)."""
    try:
        if old.is_symlink() or not old.is_file() or old.stat().st_size != new.stat().st_size:
            return False
        with open(new, "rb") as a, open(old, "rb") as b:
            while chunk := a.read(_COPY_CHUNK):
                if chunk != b.read(len(chunk)):
                    return False
        return True
    except OSError:
        return False


def _is_plain_name(name: str) -> bool:
    return "/" not in name and "\\" not in name and name not in ("", ".", "..") and not name.startswith(".")


@contextlib.contextmanager
def _interrupts_held() -> Iterator[list[int]]:
    """Hold SIGINT back while the block runs (in the main thread, where Python handles signals), and
    SIGTERM where a Python handler takes it (the CLI's); yields a list that gets the signal numbers that
    came, so the caller can raise once the block is done."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return
    held: list[tuple[signal.Signals, Any]] = []
    for number in (signal.SIGINT, signal.SIGTERM):
        previous = signal.getsignal(number)
        if callable(previous):  # not None, SIG_DFL or SIG_IGN: those stay as they are
            held.append((number, previous))
            signal.signal(number, lambda signum, frame: came.append(signum))
    try:
        yield came
    finally:
        for number, previous in held:
            signal.signal(number, previous)
