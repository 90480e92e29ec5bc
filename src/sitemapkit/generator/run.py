"""`generate`: sources (URL lists, CSV, JSONL, a site folder, access logs) -> entries -> pipeline -> writer
-> published sitemaps, with an optional state store for honest `<lastmod>`, as one function."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from sitemapkit.core.diagnostics import DiagnosticHandler
from sitemapkit.core.errors import InputError, PublishError, UsageError
from sitemapkit.core.model import Lastmod, UrlEntry
from sitemapkit.generator.rules import UrlRules
from sitemapkit.generator.sources.jsonl import jsonl_may_have_alternates
from sitemapkit.generator.sources.lists import is_url_list, list_batches, read_source, record_batches
from sitemapkit.generator.sources.parquet import has_alternates, is_parquet
from sitemapkit.generator.sources.records import TextRecord, entry_from_text
from sitemapkit.generator.sources.textblocks import input_kind, stdin_kind
from sitemapkit.generator.writer import IndexMode, Naming, PublishResult, SitemapWriter

if TYPE_CHECKING:
    import datetime as dt

    from sitemapkit.generator.sources.folder import FolderPage, Skip
    from sitemapkit.generator.state import StateRun

LASTMOD_CHOICES = ("content", "source", "mtime", "git")
HTML_PAGES = ("*.html", "*.htm")
"""What a folder source always lists; `--include` (and a config's `include`) add to it."""


def folder_include(extra: Iterable[str]) -> tuple[str, ...]:
    """The globs a folder source lists: the HTML pages, and `extra` (`--include '*.pdf'` adds PDFs;
    to list only some pages, exclude the others)."""
    return tuple(dict.fromkeys((*HTML_PAGES, *extra)))


@dataclass(frozen=True)
class FolderSource:
    """A built static site (or a web server's document root) published at the base URL."""

    path: str | os.PathLike[str]
    clean_urls: bool = False
    include: tuple[str, ...] = HTML_PAGES
    """Every glob to list (the CLI and config give `folder_include(their globs)`)."""
    exclude: tuple[str, ...] = ()
    images: bool = False
    volatile_selectors: tuple[str, ...] = ()
    volatile_patterns: tuple[str, ...] = ()
    url: str | None = None
    """The URL the folder is published at (default: the base URL); must lie in the base URL's scope."""
    default_files: tuple[str, ...] | None = None
    """The names a folder's URL serves (default: index.html, index.htm, index.xhtml)."""


@dataclass(frozen=True)
class LogSource:
    """Web-server access logs (Apache/nginx common or combined, gzip or not)."""

    paths: tuple[str, ...]
    min_hits: int = 1
    strip_query: bool = False
    exclude: tuple[str, ...] = ()
    priority_from_hits: bool = False
    encoding: str | None = None
    log_format: str | None = None
    """Force a format (common, combined, vhost_combined, w3c) instead of detecting it per file."""
    statuses: frozenset[int] | None = None
    """The statuses that count (default 2xx and 304)."""
    assets: tuple[str, ...] | None = None
    """Extensions that are not pages (default `logs.DEFAULT_ASSET_EXTENSIONS`)."""
    exclude_agents: tuple[str, ...] | None = None
    """User-agent fragments whose requests are dropped; None: `logs.DEFAULT_EXCLUDED_AGENTS`."""


@dataclass(frozen=True)
class ListSource:
    """An input file with options: a URL list, CSV or JSONL file, or an existing sitemap (`kind="sitemap"`,
    or detected by content when `kind` is None; see `kind`). `encoding` is its text encoding (default UTF-8);
    `sitemap_gen` reads a URL list's lines strictly in sitemap_gen.py's form (`URL key=value ...`)."""

    path: str
    encoding: str | None = None
    kind: str | None = None
    """"sitemap", "file" (read as its extension says), or None: "sitemap" when its content is one. For
    standard input (`-`), also "list", "csv" or "jsonl": the kind a configuration declares, which it must
    hold (it is read as its first bytes show, see `stdin_kind`)."""
    sitemap_gen: bool = False
    tag_order: tuple[str, ...] = ()
    """sitemap_gen.py's News list: the TAB-separated columns (see `sources.newslist`)."""
    publication: tuple[str, str] | None = None
    """The news publication's name and language, for a `tag_order` list."""


class EntryFeed(Protocol):
    """A source that gathers its entries elsewhere (the crawler) and feeds them into a `generate` run, through
    the same writer and state store as the other sources. `feed` adds the entries with `writer.add_entry`
    (deciding each lastmod with `run.observe` when there is a state run) and returns its summary, which the
    result's `sources[name]` holds."""

    name: str

    def feed(self, writer: SitemapWriter, run: StateRun | None) -> dict[str, Any]: ...


@dataclass
class SourceStats:
    """What the sources held, for the summary: lines read, pages scanned and skipped, log lines."""

    read: int = 0
    folder_pages: int = 0
    folder_cached: int = 0
    """Files the state store's file cache answered for, without reading them."""
    folder_skipped: Counter[str] = field(default_factory=Counter)
    log_lines: int = 0
    log_pages: int = 0
    log_bad_lines: int = 0
    state: dict[str, Any] | None = None
    feeds: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.feeds,
            "read": self.read,
            "folder": {
                "pages": self.folder_pages,
                "cached": self.folder_cached,
                "skipped": dict(self.folder_skipped),
            },
            "logs": {"lines": self.log_lines, "pages": self.log_pages, "bad_lines": self.log_bad_lines},
            "state": self.state,
        }


def generate(
    sources: Iterable[str | ListSource],
    out_dir: str | os.PathLike[str],
    base_url: str,
    *,
    folder: FolderSource | Sequence[FolderSource] | None = None,
    logs: LogSource | Sequence[LogSource] | None = None,
    feeds: Sequence[EntryFeed] = (),
    rules: UrlRules | None = None,
    state: str | os.PathLike[str] | None = None,
    lastmod: str | None = None,
    gzip: bool = False,
    gzip_level: int = 6,
    max_urls: int = 50_000,
    max_bytes: int = 52_428_800,
    index: IndexMode = "auto",
    name: str = "sitemap",
    xsl: str | None = None,
    allow_hosts: Iterable[str] = (),
    hreflang: Literal["auto", "complete", "keep"] = "auto",
    robots: str | os.PathLike[str] | None = None,
    strict: bool = False,
    encoding: str | None = None,
    log_format: str | None = None,
    replace_existing: bool = False,
    naming: Naming = "sitemapkit",
    records: Iterable[TextRecord] = (),
    on_diagnostic: DiagnosticHandler | None = None,
    on_progress: Callable[[int], None] | None = None,
    explain: Callable[[Skip], None] | None = None,
) -> PublishResult:
    """Generate and publish sitemaps for the URLs in `sources` (URL lists, `.csv`, `.jsonl`, `.gz`, `-`,
    `.parquet` files and folders of Parquet part files, see `sitemapkit.generator.sources.parquet`),
    site folders (`folder`: one or several), access logs (`logs`: one group or several) and `feeds` (sources
    such as a crawl that gather their entries themselves; see `EntryFeed`). `rules`
    filter every URL (include/exclude) and fill in per-pattern changefreq and priority defaults.

    `<lastmod>`: with a `state` store (SQLite), a folder page's lastmod moves only when its content hash
    changes (`lastmod="content"`, the default with a store); the first run, with no history, takes what
    the page says (JSON-LD `dateModified`, `article:modified_time`) or none, never the run's time.
    `"mtime"` and `"git"` take the file's modification or last-commit time; `"source"` the value the input
    gives (for a folder page, what the page says). No lastmod is better than a wrong one.
    The store's run commits only if the sitemaps were published.

    `hreflang="complete"` completes hreflang groups so that every member lists every member (see
    `sitemapkit.generator.hreflang`); `"keep"` writes alternates as given; `"auto"` completes them whenever a
    source can carry alternates (a folder, or a JSONL or Parquet input that has some).

    `robots`: a robots.txt to list the published index (or only sitemap) in, once publishing succeeded
    (see `sitemapkit.generator.robots.update_robots`; the set's `name` other than "sitemap" names its block).

    A source whose content is an XML sitemap, sitemap index or feed is read as one (an index's children
    from its folder, see `sitemapkit.generator.sources.sitemaps`), whatever its name. `encoding` is the
    text encoding of lists and logs that do not name their own; `log_format` forces the access log format.
    `replace_existing` takes over sitemap files another tool wrote; `naming`: see `writer.Naming`.
    `records`: single URLs given as text fields (a config file's `[[url]]`s), added before the sources.

    Raises `InputError` when an input cannot be read and `PublishError` when nothing could be published;
    in both cases the output folder (and the store) are left as they were.
    """
    if encoding is not None:
        from sitemapkit.generator.sources.encodings import check_encoding

        encoding = check_encoding(encoding)
    inputs = [s if isinstance(s, ListSource) else ListSource(s) for s in sources]
    allow_hosts = tuple(allow_hosts)
    folders = [folder] if isinstance(folder, FolderSource) else list(folder or ())
    log_groups = [logs] if isinstance(logs, LogSource) else list(logs or ())
    records = tuple(records)
    if not inputs and not folders and not log_groups and not records and not feeds:
        raise UsageError("give at least one SOURCE file, a site folder or an access log")
    if lastmod is not None and lastmod not in LASTMOD_CHOICES:
        raise UsageError(f"lastmod must be one of {', '.join(LASTMOD_CHOICES)} (got {lastmod!r})")
    if lastmod == "content" and state is None:
        raise UsageError("lastmod 'content' needs a state store (--state) to remember content hashes")
    mode = lastmod or ("content" if state is not None else "source")
    if robots is not None:  # usable (readable, within 500 KiB, its folder there) before anything is published
        folder_of_robots = Path(robots).parent
        if folder_of_robots.is_dir():
            from sitemapkit.generator.robots import update_robots

            update_robots(robots, None, dry_run=True)
            if not os.access(folder_of_robots, os.W_OK | os.X_OK):  # it is replaced through a temporary file
                raise PublishError(
                    f"{robots}: cannot be written (no permission to write in {folder_of_robots}); "
                    "nothing was published"
                )
        elif folder_of_robots.resolve() != Path(out_dir).resolve():  # the output folder is made on publishing
            raise UsageError(f"{robots}: the folder {folder_of_robots} does not exist")
    if hreflang not in ("auto", "complete", "keep"):
        raise UsageError(f"hreflang must be auto, complete or keep (got {hreflang!r})")
    if hreflang == "auto":
        plain = (
            not folders
            and not feeds
            and all(
                s.kind != "sitemap"
                and (
                    not has_alternates(s.path)
                    if is_parquet(s.path)
                    else input_kind(s.path) in ("list", "csv")
                    or not jsonl_may_have_alternates(s.path, s.encoding or encoding)
                )
                for s in inputs
            )
        )
        hreflang = "keep" if plain else "complete"
    stats = SourceStats()
    with ExitStack() as stack:
        run: StateRun | None = None
        if state is not None:
            from sitemapkit.generator.state import StateStore

            store = stack.enter_context(StateStore(state))
            run = stack.enter_context(store.run(lastmod_mode=mode))  # type: ignore[arg-type]
        writer = SitemapWriter(
            out_dir,
            base_url,
            gzip=gzip,
            gzip_level=gzip_level,
            max_urls=max_urls,
            max_bytes=max_bytes,
            index=index,
            name=name,
            xsl=xsl,
            allow_hosts=allow_hosts,
            strict=strict,
            hreflang=hreflang,
            rules=rules,
            on_diagnostic=on_diagnostic,
            naming=naming,
            replace_existing=replace_existing,
            own_urls=_robots_urls(base_url) if robots is not None else (),
        )
        try:  # from the writer's first moment: a Ctrl-C anywhere after it leaves the folder as it was
            # with clean URLs, every source names a folder page as the folder does: /b.html is /b
            clean = _cleaner(writer.base_url) if any(f.clean_urls for f in folders) else None
            # With several sources, the entries of all but the streamed URL lists are held back (in a
            # temporary SQLite file in the output folder, see spill.py, not in memory) and merged, so that
            # one URL from several sources is one entry keeping what each says. A streamed entry whose date
            # was left out (in the future) is held too, so that another source's date can still stand.
            hold = len(inputs) + len(folders) + len(log_groups) + len(feeds) + (1 if records else 0) > 1
            writer.hold_undated = hold
            kinds = [s.kind or ("sitemap" if _is_sitemap(s.path) else "file") for s in inputs]
            sitemaps = [
                dataclasses.replace(s, kind=k) for s, k in zip(inputs, kinds, strict=True) if k == "sitemap"
            ]
            others = [
                dataclasses.replace(s, kind=k) for s, k in zip(inputs, kinds, strict=True) if k != "sitemap"
            ]
            for record in records:
                entry = entry_from_text(record, writer.log)
                writer.add_entry(clean(entry) if clean is not None else entry, hold=hold)
            _add_sources(writer, sitemaps, run, stats, on_progress, encoding, hold=hold, clean=clean)
            for each_folder in folders:
                _add_folder(writer, each_folder, base_url, allow_hosts, run, mode, stats, explain, hold)
            for log_group in log_groups:
                if log_group.encoding is None and encoding is not None:
                    log_group = dataclasses.replace(log_group, encoding=encoding)
                if log_group.log_format is None and log_format is not None:
                    log_group = dataclasses.replace(log_group, log_format=log_format)
                _add_logs(writer, log_group, base_url, allow_hosts, run, stats, hold, clean)
            for each_feed in feeds:
                stats.feeds[each_feed.name] = each_feed.feed(writer, run)
            _add_sources(writer, others, run, stats, on_progress, encoding, clean=clean)
        except BaseException:
            writer.abort()
            raise
        try:  # the state's finalising comes before the writer's close: an interrupt there must clean up too
            result = writer.close() if run is None else run.commit_after(writer.close)
        except BaseException:
            writer.abort()  # after a close, only what is left to remove (a published set stays published)
            raise
        if run is not None:
            info = run.summary()
            stats.state = {
                k: getattr(info, k) for k in ("added", "revived", "changed", "unchanged", "removed")
            }
    robots_result = None
    if robots is not None:
        from sitemapkit.generator.robots import update_robots

        try:
            robots_result = update_robots(
                robots,
                [result.entry_url],
                name=None if name == "sitemap" else name,
                on_diagnostic=on_diagnostic,
            )
        except (InputError, PublishError) as exc:
            raise PublishError(
                f"the sitemaps were published, but robots.txt was not updated: {exc}"
            ) from None
    return dataclasses.replace(result, sources=stats.to_dict(), robots=robots_result)


def _robots_urls(base_url: str) -> tuple[str, ...]:
    """The URL of the robots.txt of `base_url`'s host (a build that updates it never lists it)."""
    from urllib.parse import urlsplit

    parts = urlsplit(base_url)
    return (f"{parts.scheme.lower()}://{parts.netloc.lower()}/robots.txt",)


def _record_hash(entry: UrlEntry) -> str | None:
    """A list entry has no page content: its own fields stand for it, so a new source lastmod counts as a
    change. Without a lastmod there is nothing to go by (None: the store keeps what it had)."""
    if entry.lastmod is None:
        return None
    text = f"{entry.lastmod.isoformat()}|{entry.changefreq}|{entry.priority}"
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def _cleaner(folder: str) -> Callable[[UrlEntry], UrlEntry]:
    """The `clean_urls` mapping for the entries of other sources: `/b.html` -> `/b`, `/a/index.html` ->
    `/a/`, for URLs under `folder` or written from the root (`/b.html`)."""
    from sitemapkit.generator.sources.folder import clean_url

    def clean(entry: UrlEntry) -> UrlEntry:
        loc = entry.loc
        if loc.startswith("/") or loc.lower().startswith(folder):
            cleaned = clean_url(loc)
            if cleaned != loc:
                return dataclasses.replace(entry, loc=cleaned)
        return entry

    return clean


def _add_sources(
    writer: SitemapWriter,
    sources: list[ListSource],
    run: StateRun | None,
    stats: SourceStats,
    on_progress: Callable[[int], None] | None,
    default_encoding: str | None = None,
    hold: bool = False,
    clean: Callable[[UrlEntry], UrlEntry] | None = None,
) -> None:
    def observed(entry: UrlEntry) -> Lastmod | None:
        assert run is not None
        run.observe(entry.loc, content_hash=_record_hash(entry), source_lastmod=entry.lastmod)
        return entry.lastmod  # a list's lastmod is the source's: the store only records it

    hook = observed if run is not None else None
    for source in sources:
        name = source.path
        encoding = source.encoding or default_encoding
        if encoding is not None:
            from sitemapkit.generator.sources.encodings import check_encoding

            encoding = check_encoding(encoding)
        entries: Iterable[UrlEntry] | None = None
        if name == "-" and source.kind in ("list", "csv", "jsonl", "sitemap"):
            _check_stdin(source.kind)
        if source.tag_order:
            from sitemapkit.generator.sources.newslist import read_news_list

            entries = read_news_list(
                name, source.tag_order, writer.log, encoding=encoding, publication=source.publication
            )
        elif source.kind == "sitemap" or (source.kind is None and _is_sitemap(name)):
            from sitemapkit.generator.sources.sitemaps import read_sitemaps

            entries = read_sitemaps(name, writer.log)
        elif is_parquet(name):
            from sitemapkit.generator.sources.parquet import parquet_batches, read_parquet

            if hook is None and clean is None and not hold:
                with parquet_batches(name, writer.log) as parquet_batch:
                    for block in parquet_batch:
                        writer.add_records(block, block.notes)
                        stats.read += len(block)
                        if on_progress is not None:
                            on_progress(stats.read)
                continue
            entries = read_parquet(name, writer.log)
        elif is_url_list(name) and hook is None and clean is None:
            batched = list_batches(name, writer.log, encoding, sitemap_gen=source.sitemap_gen)
            with batched as (batches, parse_line):
                for first, lines, canonical in batches:
                    writer.add_lines(lines, first, parse_line, clean=canonical)
                    stats.read += len(lines)
                    if on_progress is not None:
                        on_progress(stats.read)
            continue
        elif input_kind(name) != "list" and hook is None and clean is None and not hold:
            with record_batches(name, writer.log, encoding) as record_batch:
                for records in record_batch:
                    writer.add_records(records, records.notes)
                    stats.read += len(records)
                    if on_progress is not None:
                        on_progress(stats.read)
            continue
        if entries is None:
            entries = read_source(name, writer.log, encoding, sitemap_gen=source.sitemap_gen)
        for entry in entries:
            writer.add_entry(clean(entry) if clean is not None else entry, hook, hold=hold)
            stats.read += 1
            if on_progress is not None and not stats.read % 10_000:
                on_progress(stats.read)


_HOLDS = {"list": "a URL list", "csv": "a CSV", "jsonl": "JSONL", "sitemap": "XML (a sitemap or a feed)"}


def _check_stdin(declared: str) -> None:
    """Standard input must hold what a configuration declares for it (`type = ...`)."""
    held = stdin_kind()
    if held != declared:
        raise InputError(
            f"-: standard input holds {_HOLDS[held]} (by its first bytes), but the configuration "
            f"declares type = {declared!r} for it"
        )


def _is_sitemap(name: str) -> bool:
    from sitemapkit.generator.sources.sitemaps import is_sitemap_file

    return is_sitemap_file(name)


def _add_folder(
    writer: SitemapWriter,
    folder: FolderSource,
    base_url: str,
    allow_hosts: tuple[str, ...],
    run: StateRun | None,
    mode: str,
    stats: SourceStats,
    explain: Callable[[Skip], None] | None,
    hold: bool = False,
) -> None:
    from itertools import islice

    from sitemapkit.generator.sources.folder import scan_folder

    def skipped(skip: Skip) -> None:
        stats.folder_skipped[skip.reason] += 1
        if explain is not None:
            explain(skip)

    scan = scan_folder(
        folder.path,
        folder.url or base_url,
        clean_urls=folder.clean_urls,
        include=folder.include,
        exclude=folder.exclude,
        images=folder.images,
        allow_hosts=allow_hosts,
        report=writer.log,
        explain=skipped,
        volatile_selectors=folder.volatile_selectors,
        volatile_patterns=folder.volatile_patterns,
        state=run,  # unchanged files are taken from the store's file cache, not read again
        default_files=folder.default_files,
    )
    git_times: dict[str, dt.datetime] = {}
    pages: Iterable[FolderPage] = scan
    if mode == "git":
        from sitemapkit.generator.gitdates import git_last_commit_times

        listed = list(scan)  # the paths first: one git pass answers for all of them
        git_times = git_last_commit_times(folder.path, [p.file for p in listed], on_diagnostic=writer.log)
        pages = listed
    it = iter(pages)
    while chunk := list(islice(it, 500)):
        if run is not None:  # the store's rows for 500 pages in one query, not 500
            run.prefetch(page.entry.loc for page in chunk)
        for page in chunk:
            stats.folder_pages += 1
            entry = _dated(page, run, mode, git_times)
            writer.add_entry(entry, _page_observer(page, run) if run is not None else None, hold=hold)
    stats.folder_cached += scan.cached


def _dated(page: FolderPage, run: StateRun | None, mode: str, git_times: dict[str, dt.datetime]) -> UrlEntry:
    """The page's entry with the date the folder gives it in this lastmod mode: its mtime, its last commit,
    or what the page says (JSON-LD dateModified, ...). It is the source's date, so the pipeline checks it as
    any source's (a future one is reported and left out) and a merge with other sources weighs it against
    theirs: a date decided after the pipeline was lost when another source listed the URL first."""
    import datetime

    lastmod = page.entry.lastmod
    mtime = datetime.datetime.fromtimestamp(int(page.mtime), datetime.UTC)
    if mode == "mtime":
        lastmod = mtime
    elif mode == "git":
        git_time = git_times.get(page.file)
        # with a state store, a file git does not know has its mtime, as the store's git mode had it
        lastmod = git_time if run is None or git_time is not None else mtime
    if lastmod is page.entry.lastmod:
        return page.entry
    return dataclasses.replace(page.entry, lastmod=lastmod)


def _page_observer(page: FolderPage, run: StateRun) -> Callable[[UrlEntry], Lastmod | None]:
    """The state store's hook for a folder page: `entry` comes from the pipeline, its lastmod the one
    `_dated` gave (the store's mtime and git modes take it as given: it is already the mode's date)."""

    def observe(entry: UrlEntry) -> Lastmod | None:
        return run.observe(entry.loc, content_hash=page.content_hash, source_lastmod=entry.lastmod)

    return observe


def _add_logs(
    writer: SitemapWriter,
    logs: LogSource,
    base_url: str,
    allow_hosts: tuple[str, ...],
    run: StateRun | None,
    stats: SourceStats,
    hold: bool = False,
    clean: Callable[[UrlEntry], UrlEntry] | None = None,
) -> None:
    from sitemapkit.generator.sources.logs import DEFAULT_ASSET_EXTENSIONS, DEFAULT_EXCLUDED_AGENTS, read_logs

    summary = read_logs(
        logs.paths,
        base_url,
        min_hits=logs.min_hits,
        strip_query=logs.strip_query,
        exclude=logs.exclude,
        exclude_agents=DEFAULT_EXCLUDED_AGENTS if logs.exclude_agents is None else logs.exclude_agents,
        allow_hosts=allow_hosts,
        report=writer.log,
        encoding=logs.encoding,
        log_format=logs.log_format,
        statuses=logs.statuses,
        assets=DEFAULT_ASSET_EXTENSIONS if logs.assets is None else logs.assets,
    )
    stats.log_lines += summary.stats.lines
    stats.log_bad_lines += summary.stats.bad
    entries: Iterator[UrlEntry] = summary.entries(
        priority=logs.priority_from_hits, source=", ".join(logs.paths)
    )

    def observed(entry: UrlEntry) -> Lastmod | None:
        assert run is not None
        run.observe(entry.loc, content_hash=None)
        return None

    for entry in entries:
        stats.log_pages += 1
        writer.add_entry(
            clean(entry) if clean is not None else entry, observed if run is not None else None, hold=hold
        )
