"""`crawl`: a live site -> the frontier (SQLite) -> the generator's writer -> published sitemaps, as one
function. The crawl is a source (`CrawlFeed`) of the same `generate` run the other sources use, so the
output (splitting, gzip, index, atomic publish, state store, robots.txt, XSL) is the same."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TextIO, TypeVar, Unpack, cast

from sitemapkit.core.dates import parse_w3c
from sitemapkit.core.diagnostics import DiagnosticHandler
from sitemapkit.core.errors import InputError, InvalidUrlError, PublishError, UsageError
from sitemapkit.core.files import open_new_nofollow
from sitemapkit.core.model import Alternate, Image, Lastmod, UrlEntry
from sitemapkit.core.runner import blocking_form, in_worker_thread, run_stoppable
from sitemapkit.core.urls import Scope, folder_of, normalize_url
from sitemapkit.crawl.engine import Crawler, CrawlOptions, CrawlProgress
from sitemapkit.crawl.frontier import Frontier, Row
from sitemapkit.crawl.options import (
    CrawlSettings,
    NetworkOptions,
    PublishOptions,
    PublishSettings,
    ScopeOptions,
    merged,
    no_more,
)
from sitemapkit.crawl.policy import CrawlRules
from sitemapkit.generator.config import DEFAULT_CONFIG
from sitemapkit.generator.run import generate
from sitemapkit.generator.writer import PublishResult, SitemapWriter
from sitemapkit.reader.polite import UNREACHABLE

if TYPE_CHECKING:
    from sitemapkit.generator.config import BuildConfig
    from sitemapkit.generator.sources.folder import Skip
    from sitemapkit.generator.state import StateRun

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True)
class CrawlSource:
    """A crawl as a source of a build: the start URL and what decides which pages are fetched and kept.
    See `crawl` for the meaning of each field."""

    start_url: str
    scope: ScopeOptions = dataclasses.field(default_factory=ScopeOptions)
    network: NetworkOptions = dataclasses.field(default_factory=NetworkOptions)
    images: bool = False
    render: bool = False
    crawl_db: str | os.PathLike[str] | None = None
    resume: bool = False
    publish_partial: bool = False

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> CrawlSource:
        """The crawl a `sitemapkit.toml` source declares (`BuildConfig.crawls`: flat keyword arguments, each
        a field of this class or of one of its option groups)."""
        rest = dict(spec)
        scope = merged(None, ScopeOptions, rest)
        network = merged(None, NetworkOptions, rest)
        start_url = rest.pop("start_url")
        own = {f.name for f in dataclasses.fields(cls)}
        no_more("CrawlSource", {k: v for k, v in rest.items() if k not in own})
        return cls(start_url, scope, network, **rest)

    def rules_scope(self) -> Scope:
        """The crawl's scope: the start URL's scheme, host, port and folder, and the allowed hosts."""
        start = _start(self.start_url)
        try:
            return Scope(folder_of(start), self.scope.allow_hosts)
        except InvalidUrlError as exc:
            raise UsageError(f"allow_hosts: {exc}") from None

    def key(self) -> str:
        """What a resumed crawl must share with the one it continues."""
        scope = self.rules_scope()
        return json.dumps(
            [
                _start(self.start_url),
                sorted(scope.allow_hosts),
                self.scope.include,
                self.scope.exclude,
                self.scope.strip_query,
                self.scope.keep_query,
            ]
        )


def _start(url: str) -> str:
    try:
        start = normalize_url(url)
    except InvalidUrlError as exc:
        raise UsageError(f"START_URL {url!r} is not a usable URL ({exc})") from None
    if not start.startswith(("http://", "https://")):
        raise UsageError(f"START_URL {url!r} is not an http(s) URL")
    return start


def default_crawl_db(out_dir: str | os.PathLike[str], state: str | os.PathLike[str] | None) -> Path:
    """Where the crawl file goes unless given: beside the state store (`STATE.crawl`), else beside the
    output folder (`OUT.crawl.db`)."""
    if state is not None:
        return Path(f"{os.fspath(state)}.crawl")
    out = Path(out_dir).resolve()
    return out.with_name(out.name + ".crawl.db")


class CrawlFeed:
    """The listed pages of a finished (or `publish_partial`) crawl, fed into a `generate` run."""

    def __init__(self, frontier: Frontier, complete: bool, name: str = "crawl") -> None:
        self.frontier = frontier
        self.complete = complete
        self.name = name

    def feed(self, writer: SitemapWriter, run: StateRun | None) -> dict[str, Any]:
        pages = iter(self.frontier.listed())
        while True:
            chunk = [p for _, p in zip(range(500), pages, strict=False)]
            if not chunk:
                break
            if run is not None:
                run.prefetch(p.url for p in chunk)
            for page in chunk:
                lastmod: Lastmod | None = parse_w3c(page.lastmod) if page.lastmod else None
                entry = UrlEntry(
                    page.url,
                    lastmod,
                    images=tuple(Image(u) for u in page.images),
                    alternates=tuple(Alternate(h, u) for h, u in page.alternates),
                    sitemap=page.url,
                )
                writer.add_entry(entry, _observer(run, page.hash, lastmod) if run is not None else None)
        return summary(self.frontier, self.complete)


def _observer(
    run: StateRun, digest: str | None, lastmod: Lastmod | None
) -> Callable[[UrlEntry], Lastmod | None]:
    def observe(entry: UrlEntry) -> Lastmod | None:
        return run.observe(entry.loc, content_hash=digest, source_lastmod=lastmod)

    return observe


def summary(frontier: Frontier, complete: bool) -> dict[str, Any]:
    """The crawl's counts: pages fetched, listed, URLs left out by reason, still queued."""
    return {
        "complete": complete,
        "fetched": frontier.fetched(),
        "listed": frontier.count("listed = 1"),
        "queued": frontier.count("state = 0"),
        "excluded": dict(sorted(frontier.reasons().items())),
        "crawl_db": str(frontier.path),
    }


async def acrawl(
    start_url: str,
    out_dir: str | os.PathLike[str],
    *,
    base_url: str | None = None,
    scope: ScopeOptions | None = None,
    network: NetworkOptions | None = None,
    publish: PublishOptions | None = None,
    images: bool = False,
    render: bool = False,
    crawl_db: str | os.PathLike[str] | None = None,
    resume: bool = False,
    publish_partial: bool = False,
    crawl_log: str | os.PathLike[str] | None = None,
    on_diagnostic: DiagnosticHandler | None = None,
    on_progress: Callable[[CrawlProgress], None] | None = None,
    explain: Callable[[Row], None] | None = None,
    **settings: Unpack[CrawlSettings],
) -> PublishResult:
    """Crawl the site at `start_url` and publish sitemaps of its indexable pages in `out_dir`, as `generate`
    does (`base_url`, default the start URL's folder, is where they are published). `crawl` runs it to its
    end; `await acrawl(...)` inside a running event loop.

    The settings come in three groups, each field also a keyword of its own (`crawl(url, out, rate=2,
    gzip=True)`; a keyword wins over the field of an object given too): `scope` (`ScopeOptions`: what is
    fetched), `network` (`NetworkOptions`: how politely) and `publish` (`PublishOptions`: how the sitemaps
    are written, as `generate` writes them).

    Fetched: the start URL and, unless `sitemaps=False`, the URLs of the site's existing sitemaps, then every
    link found, while in scope (the start URL's scheme, host, port and folder, or `allow_hosts`), kept by
    `include`/`exclude` (globs or `re:`), within `max_depth` links and `max_pages` fetches (default
    `DEFAULT_MAX_PAGES`; None or 0: no limit), allowed by robots.txt, and not a trap (more than
    `trap_limit` links in a row between URLs of one pattern, a URL over 2,048 characters or 32 segments
    deep or with a segment three times). Query strings lose tracking parameters; `strip_query` drops them
    all but `keep_query`.

    Listed: pages that answer 200 with HTML, are not noindex (meta or `X-Robots-Tag`, for all, Googlebot or
    sitemapkit), are their own canonical (`<link>` or `Link:` header), are not a soft 404 or a copy of
    another page's content, and are not in a run of links the trap guard stopped: as the audit judges
    (`sitemapkit.crawl.judge`). Each URL left out has a reason (`sitemapkit.crawl.policy.REASONS`),
    passed to `explain` and written to `crawl_log` (JSON Lines, as each URL is decided). lastmod: the
    page's own (JSON-LD `dateModified`, `article:modified_time`), else `Last-Modified`, else with `state`
    the time its content last changed. `images=True` lists each page's in-scope `<img>`.

    Polite: `concurrency` requests at a time per host, at most `rate` a second, robots.txt `Crawl-delay`
    honoured, 429/503 `Retry-After` waited out (`retries` further attempts on 429, 5xx and
    connection errors). The crawl lives in `crawl_db` (SQLite; default
    `default_crawl_db`): an interrupted crawl continues with `resume=True` without fetching again what it
    has. Nothing is published unless the crawl completes, or with `publish_partial` when it is stopped
    (Ctrl-C, SIGTERM, or the task cancelled): what was listed so far is published and its result returned.

    The start URL's origin may be on a private or loopback address; other such addresses are refused
    unless `allow_private` (the fetch policy, see the README's Security section).

    `render=True` runs each page's JavaScript in headless Chromium first (`sitemapkit.crawl.render`; needs
    the `render` extra and a system Chromium, else `UsageError`). A bad argument raises `UsageError`
    before anything is fetched.
    """
    rest = dict(settings)
    src = CrawlSource(
        start_url,
        merged(scope, ScopeOptions, rest),
        merged(network, NetworkOptions, rest),
        images=images,
        render=render,
        crawl_db=crawl_db,
        resume=resume,
        publish_partial=publish_partial,
    )
    out = merged(publish, PublishOptions, rest)
    no_more("crawl", rest)
    where = _checked(src, base_url, crawl_log)
    with _opened(src, out_dir, out.state, crawl_log) as frontier:
        complete = await arun_crawl(
            src,
            frontier,
            where,
            hashes=out.state is not None,
            on_diagnostic=on_diagnostic,
            on_progress=on_progress,
        )
        return _publish(
            frontier,
            complete,
            explain,
            out_dir,
            base_url or where.folder,
            allow_hosts=src.scope.allow_hosts,
            on_diagnostic=on_diagnostic,
            **out.generate_kwargs(),
        )


crawl = blocking_form(acrawl)


def _checked(src: CrawlSource, base_url: str | None, crawl_log: str | os.PathLike[str] | None) -> Scope:
    """The crawl's scope, once the arguments were checked (before anything is fetched)."""
    scope = src.rules_scope()
    if base_url is not None:  # checked before the crawl, not after it
        try:
            Scope(base_url)
        except InvalidUrlError as exc:
            raise UsageError(f"--base-url {base_url!r} is not usable ({exc})") from None
    if crawl_log is not None and not Path(crawl_log).resolve().parent.is_dir():
        raise UsageError(f"--crawl-log {crawl_log}: the folder {Path(crawl_log).parent} does not exist")
    return scope


@contextlib.contextmanager
def _opened(
    src: CrawlSource,
    out_dir: str | os.PathLike[str],
    state: str | os.PathLike[str] | None,
    crawl_log: str | os.PathLike[str] | None,
) -> Iterator[Frontier]:
    """The crawl's frontier, with the crawl log streaming from it when asked; both closed after."""
    frontier = open_frontier(src, out_dir, state)
    log = None
    try:
        if crawl_log is not None:
            log = open_log(crawl_log)
            frontier.stream_log(log)
        yield frontier
    finally:
        frontier.close()
        if log is not None:
            log.close()


def _publish(
    frontier: Frontier,
    complete: bool,
    explain: Callable[[Row], None] | None,
    out_dir: str | os.PathLike[str],
    base_url: str,
    **options: Any,
) -> PublishResult:
    """The listed pages of the crawl, published by a `generate` run (`options` go to it)."""
    report_rows(frontier, explain)
    if frontier.count("listed = 1") == 0:
        raise PublishError(f"nothing was listed: {why_nothing(frontier)}")
    return generate([], out_dir, base_url, feeds=[CrawlFeed(frontier, complete)], **options)


def open_log(path: str | os.PathLike[str]) -> TextIO:
    """The crawl log, opened anew for writing; never through a symbolic link (it would overwrite the
    link's target)."""
    try:
        return cast(TextIO, open_new_nofollow(path, "w"))
    except OSError as exc:
        raise InputError(f"{path}: cannot write the crawl log ({exc.strerror or exc})") from None


def why_nothing(frontier: Frontier) -> str:
    """In one line, why a crawl listed no page: `robots.txt disallows all 51 URLs`, `1 URL answered 5xx
    (answered 503)`."""
    reasons = frontier.reasons()
    total = sum(reasons.values())
    if not total:
        return "no URL was decided"
    if set(reasons) == {"robots"}:
        row = frontier.db.execute("SELECT status FROM robots ORDER BY status DESC LIMIT 1").fetchone()
        if row is not None and row[0] >= UNREACHABLE:
            return "robots.txt could not be fetched, so nothing was (as search engines do)"
        if row is not None and row[0] >= 500:
            return f"robots.txt answered {row[0]}, so nothing was fetched (as search engines do)"
        return f"robots.txt disallows all {total:,} URL{'s' if total != 1 else ''}"
    parts = []
    for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        found = frontier.db.execute(
            "SELECT detail FROM urls WHERE reason = ? AND detail IS NOT NULL LIMIT 1", (reason,)
        ).fetchone()
        example = f" ({found[0]})" if found is not None and n == 1 else ""
        parts.append(f"{n:,} {reason}{example}")
    return f"of {total:,} URL{'s' if total != 1 else ''} met, " + ", ".join(parts)


def open_frontier(
    src: CrawlSource, out_dir: str | os.PathLike[str], state: str | os.PathLike[str] | None
) -> Frontier:
    path = Path(src.crawl_db) if src.crawl_db is not None else default_crawl_db(out_dir, state)
    return Frontier(path, src.key(), fresh=not src.resume)


def run_crawl(
    src: CrawlSource,
    frontier: Frontier,
    scope: Scope,
    *,
    hashes: bool,
    on_diagnostic: DiagnosticHandler | None,
    on_progress: Callable[[CrawlProgress], None] | None,
) -> bool:
    """Crawl into `frontier`; True when the crawl completed, False when it was interrupted (Ctrl-C, SIGTERM)
    with `publish_partial` (otherwise the interruption propagates)."""
    crawler = make_crawler(src, frontier, scope, hashes, on_diagnostic, on_progress)
    if crawler is None:
        return True
    try:
        run_stoppable(crawler.run())
    except (KeyboardInterrupt, SystemExit):
        frontier.commit()
        if not src.publish_partial:
            raise
        settle(frontier, crawler)
        return False
    settle(frontier, crawler)
    return True


async def arun_crawl(
    src: CrawlSource,
    frontier: Frontier,
    scope: Scope,
    *,
    hashes: bool,
    on_diagnostic: DiagnosticHandler | None,
    on_progress: Callable[[CrawlProgress], None] | None,
) -> bool:
    """`run_crawl` on the running event loop: True when the crawl completed. Cancelled (the task, or Ctrl-C
    in `crawl`, whose event loop cancels it), what was fetched is committed; with `publish_partial` the
    cancellation is taken back and the result is False (publish what was listed), else it propagates."""
    crawler = make_crawler(src, frontier, scope, hashes, on_diagnostic, on_progress)
    if crawler is None:
        return True
    try:
        await crawler.run()
    except asyncio.CancelledError:
        frontier.commit()
        task = asyncio.current_task()
        if not src.publish_partial or task is None:
            raise
        task.uncancel()
        settle(frontier, crawler)
        return False
    except BaseException:
        frontier.commit()
        raise
    settle(frontier, crawler)
    return True


def make_crawler(
    src: CrawlSource,
    frontier: Frontier,
    scope: Scope,
    hashes: bool,
    on_diagnostic: DiagnosticHandler | None,
    on_progress: Callable[[CrawlProgress], None] | None,
) -> Crawler | None:
    """The crawler of `src` into `frontier`; None when the frontier holds a completed crawl already."""
    if frontier.meta("complete") is not None:
        return None
    rules = CrawlRules(
        scope,
        include=src.scope.include,
        exclude=src.scope.exclude,
        strip_query=src.scope.strip_query,
        keep_query=src.scope.keep_query,
        max_depth=src.scope.max_depth,
        trap_limit=src.scope.trap_limit,
    )
    options = CrawlOptions(
        _start(src.start_url),
        rules,
        network=src.network,
        max_pages=src.scope.max_pages or None,
        sitemaps=src.scope.sitemaps,
        images=src.images,
        hashes=hashes,
        render=src.render,
    )
    return Crawler(options, frontier, on_diagnostic=on_diagnostic, on_progress=on_progress)


def settle(frontier: Frontier, crawler: Crawler) -> None:
    """What the crawl can judge only once it has seen the pages: soft 404s (against the median page size,
    as the audit judges them) and the pages of a run of links that became a trap; both are taken off the
    list (the crawl log gets a line for each)."""
    for url, detail in crawler.pages().soft_404s():
        frontier.unlist(url, "soft-404", detail)
    frontier.unlist_trap_runs()
    frontier.commit()


def report_rows(frontier: Frontier, explain: Callable[[Row], None] | None) -> None:
    """Each URL left out to `explain` (the crawl log is written as the crawl goes: `Frontier.stream_log`)."""
    if explain is None:
        return
    for row in frontier.rows():
        if row.reason is not None:
            explain(row)


def run_config(
    config: BuildConfig,
    *,
    on_crawl_progress: Callable[[CrawlProgress], None] | None = None,
    explain_crawl: Callable[[Row], None] | None = None,
    **kwargs: Any,
) -> PublishResult:
    """Run a `sitemapkit.toml` build that has `type = "crawl"` sources: each crawl first (into its crawl
    file: `crawl_db`, else beside the state file or the output folder, numbered from the second on), then
    the build, with the crawled pages fed in beside the other sources. `kwargs` go to `BuildConfig.run`."""
    frontiers: list[Frontier] = []
    try:
        feeds = []
        for i, spec in enumerate(config.crawls):
            src = CrawlSource.from_spec(spec)
            path = src.crawl_db or default_crawl_db(config.output.dir, config.state)
            if i and src.crawl_db is None:
                path = f"{path}-{i + 1}"
            frontier = Frontier(path, src.key(), fresh=True)
            frontiers.append(frontier)
            on_diagnostic = kwargs.get("on_diagnostic")
            complete = run_crawl(
                src,
                frontier,
                src.rules_scope(),
                hashes=config.state is not None,
                on_diagnostic=on_diagnostic,
                on_progress=on_crawl_progress,
            )
            report_rows(frontier, explain_crawl)
            feeds.append(CrawlFeed(frontier, complete, "crawl" if not i else f"crawl-{i + 1}"))
        return config.run(feeds=feeds, **kwargs)
    finally:
        for frontier in frontiers:
            frontier.close()


def build(
    path: str | os.PathLike[str] = DEFAULT_CONFIG,
    *,
    on_diagnostic: DiagnosticHandler | None = None,
    on_progress: Callable[[int], None] | None = None,
    explain: Callable[[Skip], None] | None = None,
    on_crawl_progress: Callable[[CrawlProgress], None] | None = None,
    explain_crawl: Callable[[Row], None] | None = None,
    **overrides: Unpack[PublishSettings],
) -> PublishResult:
    """Build and publish the sitemaps the config file at `path` declares, as `sitemapkit build` does.

    The file is a `sitemapkit.toml` or a sitemap_gen.py `config.xml` (told apart by content); it is checked
    whole first (`ConfigError` names the file, line and key, and nothing is built). Its crawl sources are
    crawled first (`on_crawl_progress` and `explain_crawl` see them), then every source is read and the
    result published (`on_diagnostic`, `on_progress` and `explain` as `generate` takes them). A keyword of
    `PublishOptions` (`strict=True`, `replace_existing=True`, `gzip=True`, ...) overrides what the file
    says. `await abuild(...)` runs the same build in a worker thread (a build is mostly local work): the
    callbacks are called from that thread, and cancelling the task does not stop the build (it finishes or
    fails in its thread).
    """
    from sitemapkit.generator.sitemap_gen import load_any

    given = dict(overrides)
    known = {f.name for f in dataclasses.fields(PublishOptions)}
    no_more("build", {k: v for k, v in given.items() if k not in known})
    if given:  # checked (and normalized: `name="news.xml"` is "news") as the group checks them
        checked = dataclasses.replace(PublishOptions(), **given)  # type: ignore[arg-type]
        given = {name: getattr(checked, name) for name in given}
    config = load_any(path)
    callbacks: dict[str, Any] = {
        "on_diagnostic": on_diagnostic,
        "on_progress": on_progress,
        "explain": explain,
    }
    if config.crawls:
        return run_config(
            config, on_crawl_progress=on_crawl_progress, explain_crawl=explain_crawl, **callbacks, **given
        )
    return config.run(**callbacks, **given)


abuild = in_worker_thread(build)
