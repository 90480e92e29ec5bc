"""The sitemap writer: streams entries into files that roll over at the protocol's limits, gzips them,
writes the index, and publishes the set atomically.

`SitemapWriter` checks and renders entries (the pipeline, the held and hreflang stores) and orchestrates;
the rest is done by concept: `parts.Parts`, the files as they fill and their rollover (also the interface
the bulk lanes of `lanes.py` write through); `assembly.Assembler`, the finished files assembled and
gzipped in the background (`deflate.GzipWorker`); `publish`, the manifest, the ownership checks, the one
multi-file commit (`core.files.AtomicFile`s, children first, index last) and the signals held meanwhile.

A manifest (`.sitemapkit-NAME.json`) records what was published, so a rerun removes the sitemaps it
wrote before and no longer writes, and never touches any other file in the folder.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import secrets
import signal
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, cast

from xxhash import xxh3_64_intdigest

from sitemapkit.core.constants import MAX_BYTES, MAX_URLS
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
from sitemapkit.core.files import AtomicFile
from sitemapkit.core.model import Alternate, Image, IndexEntry, Lastmod, News, UrlEntry, Video
from sitemapkit.core.runner import interrupts_held
from sitemapkit.core.urls import Scope
from sitemapkit.generator.assembly import Assembler
from sitemapkit.generator.deflate import GzipWriter
from sitemapkit.generator.lanes import BulkLane, LaneMeter, add_list_batch, add_record_batch
from sitemapkit.generator.parts import FOOTER, Parts
from sitemapkit.generator.pipeline import Pipeline
from sitemapkit.generator.publish import check_writable, commit_set
from sitemapkit.generator.publish import manifest_name as manifest_name
from sitemapkit.generator.rules import UrlRules
from sitemapkit.generator.serialize import (
    escape_url,
    prefixes_of,
    render_index_entry,
    render_url,
    xml_footer,
    xml_header,
)
from sitemapkit.generator.sources.records import ImagedRecord, TextRecord, entry_from_text
from sitemapkit.generator.sources.textblocks import CanonicalLines, ColumnBlock
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
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,100}")
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
        self.xsl_default = xsl == "default"
        self.xsl_href = f"{name}.xsl" if self.xsl_default else xsl
        self._suffix = ".xml.gz" if gzip else ".xml"
        self._token = secrets.token_hex(4)
        self._temps: list[Path] = []
        self._outs: list[AtomicFile] = []  # the index and stylesheet, until published
        self._assembler = Assembler(gzip_level if gzip else None)
        self.parts = Parts(
            self.out_dir,
            name,
            self._suffix,
            self._token,
            self.xsl_href,
            max_urls,
            max_bytes,
            self._temp,
            self._assembler,
            (self.pipeline.now + CLOCK_SKEW).date().isoformat(),  # earlier days are never in the future
        )
        """The files as they fill (internal: the interface of the bulk lanes in `lanes.py`)."""
        self._closed = False
        self._bulk: BulkLane | None = None
        self.lane_meter = LaneMeter()
        """Whether the columnar lane is worth trying on the next batch (see `lanes.LaneMeter`)."""
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
        check_writable(self.out_dir)
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
            deduper.claim({xxh3_64_intdigest(escape_url(url).encode())})

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
        prefix = self.own_prefix  # (a plain test first: most URLs are not the set's own)
        if not others:
            return lambda url: url.startswith(prefix) and own.fullmatch(url) is not None
        return lambda url: (url.startswith(prefix) and own.fullmatch(url) is not None) or url in others

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
        lastmod = ready.lastmod
        text, key = _text_and_key(lastmod) if lastmod is not None else (None, "")
        if self._groups is not None:
            self._groups.add(ready, render_url(ready, text), needs, key)  # written at close, group complete
            return True
        data = render_url(ready, text).encode("utf-8")
        if self.parts.add(data, needs, key, lastmod, ready.news is not None):  # (_write, one call less)
            return True
        return self._write(data, needs, key, lastmod, ready)

    def add_record(self, record: TextRecord) -> bool:
        """Add one URL given as text fields, as an input file spells them (bad optional fields are
        reported and dropped)."""
        try:  # (add_entry's work, one call less: the general path of every list and CSV line)
            return self._add_entry(entry_from_text(record, self.log), None, False)
        except OSError as exc:
            raise self._abandon(exc) from None

    def _write(
        self,
        data: bytes,
        needs: set[str] | None,
        key: str,
        lastmod: Lastmod | str | None,
        entry: UrlEntry | Spilled | None,
    ) -> bool:
        news = entry is not None and entry.news is not None
        if self.parts.add(data, needs, key, lastmod, news):
            return True
        size = self.parts.header_len(frozenset(needs or ())) + len(data) + FOOTER
        self.pipeline.accepted -= 1
        self.pipeline.rejected += 1
        self.log.add(
            Diagnostic.make(
                "file-too-large",
                f"a sitemap holding only this entry would take {size:,} bytes ({len(data):,} for the entry, "
                f"{size - len(data):,} for the header and footer), more than the {self.max_bytes:,} allowed; "
                "it is left out",
                source=entry.sitemap if entry else None,
                line=entry.line if entry else None,
                url=entry.loc if entry else None,
            )
        )
        return False

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
            if bulk.usable and bulk.add(self, lines):
                return
        add_list_batch(self, lines, first_line, parse_line)

    def add_records(
        self,
        records: Sequence[TextRecord | UrlEntry | ImagedRecord] | ColumnBlock,
        notes: Mapping[int, Sequence[Diagnostic]] | None = None,
    ) -> None:
        """Add a batch of records read from a CSV or JSONL file (an entry with extensions as a `UrlEntry`, or
        one with images given by their URLs alone as an `ImagedRecord`):
        the columnar lane of `lanes.py` writes those in canonical form, and gives every other one to
        `add_record` (or `add_entry`) in its place. The output is the one `add_record` would give.
        `notes[i]`: diagnostics the reading made before record i (reported just before it is added)."""
        if self._closed:
            raise UsageError("the writer is closed")
        try:
            add_record_batch(self, records, notes or {}, self.pipeline.rules is None and self._groups is None)
        except OSError as exc:
            raise self._abandon(exc) from None

    def add_many(self, entries: Iterable[UrlEntry]) -> int:
        """Add entries; returns how many were accepted."""
        return sum(1 for e in entries if self.add_entry(e))

    # -- files --------------------------------------------------------------------------------------

    def _temp(self, label: str) -> Path:
        # The name is predictable once the lock file shows the token: every temporary file is created
        # exclusively ("x"), so a symbolic link planted at one makes the run fail instead of being followed.
        path = self.out_dir / f".{label}.{self._token}.tmp"
        self._temps.append(path)
        return path

    def _out(self, name: str) -> AtomicFile:
        """A file of the set other than a sitemap (the index, the stylesheet), written under a temporary
        name until the set is published."""
        out = AtomicFile(self.out_dir / name, tag=self._token)
        self._outs.append(out)
        return out

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
            self.parts.closing = True  # (no gzip process is started for a last file)
            if self.parts.part is not None:
                self.parts.finish()
            self._assembler.wait()
            with interrupts_held() as interrupted:
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
        with interrupts_held():
            if self._held is not None:
                self._held.close()
                self._held = None
            if self._groups is not None:
                self._groups.close()
                self._groups = None
            with contextlib.suppress(Exception):
                self._assembler.wait()
            self._cleanup()

    def _cleanup(self) -> None:
        self._assembler.close()
        self.parts.drop()  # what was not published (nothing once it was)
        for out in self._outs:
            out.discard()
        self._outs.clear()
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
        done = self.parts.done
        if not done:
            raise PublishError("no URL was accepted, so there is nothing to publish; nothing was changed")
        with_index = self.index_mode == "always" or (self.index_mode == "auto" and len(done) > 1)
        if self.index_mode == "never" and len(done) > 1:
            urls = sum(d.urls for d in done)
            raise PublishError(
                f"index 'never': the {urls:,} URLs need {len(done):,} files, but "
                "without an index only one file can be announced (robots.txt, Search Console); use index "
                "'auto', or raise the URL or byte limit per file. Nothing was published"
            )
        if len(done) > MAX_URLS and with_index:
            raise PublishError(
                f"{len(done):,} sitemaps exceed the {MAX_URLS:,} an index may list "
                "(too-many-sitemaps); nothing was published"
            )
        single = len(done) == 1 and not with_index
        sitemap_gen = self.naming == "sitemap_gen"
        files: list[SitemapFile] = []
        renames: list[tuple[AtomicFile, Path]] = []
        for number, part in enumerate(done, start=1):
            if sitemap_gen:
                final = f"{self.name}{number - 1 if number > 1 else ''}{self._suffix}"
            else:
                final = f"{self.name}{self._suffix}" if single else f"{self.name}-{number}{self._suffix}"
            files.append(
                SitemapFile(self.out_dir / final, self.base_url + final, part.urls, part.bytes, part.lastmod)
            )
            renames.append((part.out, self.out_dir / final))
        index_file: SitemapFile | None = None
        if with_index:
            final = f"{self.name}_index.xml" if sitemap_gen else f"{self.name}{self._suffix}"
            out = self._out(final)
            size = self._write_index(out, files, plain=sitemap_gen)
            index_file = SitemapFile(self.out_dir / final, self.base_url + final, len(files), size, None)
            renames.append((out, self.out_dir / final))
        stylesheet: Path | None = None
        if self.xsl_default:
            stylesheet = self.out_dir / f"{self.name}.xsl"
            out = self._out(stylesheet.name)
            out.file.write(resources.files("sitemapkit").joinpath("data/sitemap.xsl").read_bytes())
            renames.insert(0, (out, stylesheet))
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

    def _write_index(self, out: AtomicFile, files: list[SitemapFile], plain: bool = False) -> int:
        """Write the index of `files` into `out` (gzipped as the sitemaps are, unless `plain`); its size."""
        header = xml_header("sitemapindex", (), self.xsl_href).encode()
        footer = xml_footer("sitemapindex").encode()
        size = len(header) + len(footer)
        with contextlib.ExitStack() as stack:
            sink: Any = out.file
            if self.gzip and not plain:  # sitemap_gen's index is never gzipped
                sink = stack.enter_context(GzipWriter(out.file, self.gzip_level))
            sink.write(header)
            for f in files:
                data = render_index_entry(IndexEntry(f.url, f.lastmod)).encode()
                size += len(data)
                sink.write(data)
            sink.write(footer)
        if size > MAX_BYTES:
            raise PublishError(
                f"the index would take {size:,} bytes (more than {MAX_BYTES:,}); nothing published"
            )
        return size

    def _commit(self, renames: list[tuple[AtomicFile, Path]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Publish the finished files (see `publish.commit_set`): the names removed and those unchanged."""
        return commit_set(self.out_dir, self.name, renames, replace_existing=self.replace_existing)


def _text_and_key(value: Lastmod) -> tuple[str | None, str]:
    """A lastmod's text as `render_url` writes it (None: left to it) and its time key (`_key`), the text
    made once for the usual lastmods (a date, an aware date-time). The same object again (the parser gives
    one object for a text it read lately: inputs repeat their dates) is answered from a cache."""
    made = _MADE.get(id(value))
    if made is not None and made[0] is value:  # (the cache holds the object, so its id is not reused)
        return made[1], made[2]
    kind = type(value)
    text: str | None = None
    if kind is dt.datetime and 1000 < value.year < 9999:
        when = cast("dt.datetime", value)
        zone = when.tzinfo
        if zone is _UTC:  # (the parser's zone for `Z` and `+00:00`)
            text = when.isoformat()
            key = text[:-6]  # less `+00:00`: the seconds, and the microseconds if any
        elif zone is not None and when.utcoffset() is not None:  # (a year from 1001 to 9998 stays one in UTC)
            text, key = when.isoformat(), when.astimezone(_UTC).isoformat()[:-6]
        else:
            key = _key(value)
    elif kind is dt.date and value.year >= 1000:
        text = value.isoformat()
        key = text + "T00:00:00"
    else:
        key = _key(value)
    if len(_MADE) >= 1024:
        _MADE.clear()
    _MADE[id(value)] = (value, text, key)
    return text, key


_UTC = dt.UTC
_MADE: dict[int, tuple[Lastmod, str | None, str]] = {}
"""`_text_and_key` of the lastmod objects met lately, by identity (a date-time's hash is slow to compute)."""


def _key(value: Lastmod) -> str:
    """The time key of a lastmod (its UTC instant, as text that sorts as time does)."""
    if type(value) is dt.date and value.year >= 1000:  # (strftime does not pad a year before 1000)
        return value.isoformat() + "T00:00:00"
    instant = sort_key(value)
    text = instant.isoformat()[:19] if instant.year >= 1000 else instant.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{instant.microsecond:06d}" if instant.microsecond else text
