"""`sitemapkit generate`: sitemaps from URL lists, CSV and JSONL files, a site folder and access logs."""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any, Final

import click

from sitemapkit.cli._output import (
    DiagnosticPrinter,
    fail,
    json_failure,
    max_diagnostics_option,
    plural,
    progress,
    safe_echo,
)
from sitemapkit.cli.options import (
    allow_host_option,
    exclude_option,
    json_summary_option,
    out_dir_option,
    publish_group,
)
from sitemapkit.core.errors import InputError, InvalidUrlError, PublishError, UsageError
from sitemapkit.core.escape import for_terminal
from sitemapkit.crawl.options import PublishOptions
from sitemapkit.generator.rules import Default, UrlRules, compile_pattern
from sitemapkit.generator.run import FolderSource, LogSource, folder_include
from sitemapkit.generator.run import generate as run_generate
from sitemapkit.generator.sources.logs import DEFAULT_EXCLUDED_AGENTS
from sitemapkit.generator.writer import PublishResult

if TYPE_CHECKING:
    from sitemapkit.generator.sources.folder import Skip


@click.command()
@click.argument("sources", nargs=-1, metavar="[SOURCE]...")
@click.option("--base-url", required=True, help="Public URL of the folder the sitemaps are published in.")
@out_dir_option
@publish_group
@allow_host_option
@click.option(
    "--dir",
    "site_dir",
    type=click.Path(file_okay=False, exists=True),
    help="A built static site (or document root) published at --base-url: its HTML pages become URLs.",
)
@click.option(
    "--clean-urls",
    is_flag=True,
    help="With --dir: map b.html to /b (a/index.html is always /a/), for every source of the build.",
)
@click.option(
    "--include",
    multiple=True,
    metavar="GLOB",
    help="With --dir: also list these files ('*.pdf'); HTML pages are always listed "
    "(to list only some pages, --exclude the others).",
)
@exclude_option
@click.option(
    "--only",
    multiple=True,
    metavar="PATTERN",
    help="Keep only URLs whose path matches one of these patterns (as --exclude). Repeatable.",
)
@click.option(
    "--default",
    "default_values",
    multiple=True,
    metavar="PATTERN=CHANGEFREQ,PRIORITY",
    help="Fill in changefreq and/or priority where a source gives none, for URLs matching PATTERN "
    "('/blog/*=weekly,0.6'); the first match wins. Repeatable.",
)
@click.option("--images", is_flag=True, help="With --dir: list each page's <img> as image entries.")
@click.option("--explain", is_flag=True, help="With --dir: say on stderr which pages were skipped and why.")
@click.option(
    "--volatile",
    multiple=True,
    metavar="SELECTOR",
    help="With --dir: CSS selector of page parts that change on every build (left out of the content hash).",
)
@click.option(
    "--volatile-regex",
    multiple=True,
    metavar="REGEX",
    help="With --dir: a regular expression for text that changes on every build (left out of the hash).",
)
@click.option(
    "--log", "log_files", multiple=True, metavar="FILE", help="An access log (common/combined, .gz ok)."
)
@click.option(
    "--log-format",
    type=click.Choice(["common", "combined", "vhost_combined", "w3c"]),
    help="With --log: read every line in this format instead of detecting it per file (w3c: IIS and any "
    "log with #Fields:).",
)
@click.option(
    "--encoding",
    metavar="NAME",
    help="Text encoding of SOURCE lists and --log files (latin-1, cp1252, ...) [default: utf-8]; URLs are "
    "written UTF-8 percent-encoded, and a line that cannot be decoded is reported and skipped.",
)
@click.option(
    "--exclude-agent",
    "exclude_agents",
    multiple=True,
    metavar="TEXT",
    help="With --log: also drop requests whose user agent contains TEXT (any case), besides the scanners "
    "and HTTP libraries dropped by default. Repeatable.",
)
@click.option("--min-hits", default=1, show_default=True, type=click.IntRange(1), help="With --log.")
@click.option("--strip-query", is_flag=True, help="With --log: drop query strings.")
@click.option("--priority-from-hits", is_flag=True, help="With --log: priority from hit counts.")
@click.option(
    "--lastmod",
    "lastmod_mode",
    type=click.Choice(["content", "source", "mtime", "git"]),
    help="Where lastmod comes from [default: content with --state, else source].",
)
@json_summary_option
@max_diagnostics_option
def generate(
    sources: tuple[str, ...],
    base_url: str,
    out_dir: str,
    publish: PublishOptions,
    allow_hosts: tuple[str, ...],
    site_dir: str | None,
    clean_urls: bool,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    only: tuple[str, ...],
    default_values: tuple[str, ...],
    images: bool,
    explain: bool,
    volatile: tuple[str, ...],
    volatile_regex: tuple[str, ...],
    log_files: tuple[str, ...],
    log_format: str | None,
    encoding: str | None,
    exclude_agents: tuple[str, ...],
    min_hits: int,
    strip_query: bool,
    priority_from_hits: bool,
    lastmod_mode: str | None,
    as_json: bool,
    max_diagnostics: int,
) -> None:
    """Generate sitemaps for the URLs in SOURCE files, a site folder (--dir) and access logs (--log).

    A SOURCE is a URL list (one URL per line, optional TAB-separated lastmod, changefreq, priority),
    a .csv with a header, or a .jsonl file; .gz works, and '-' reads standard input (JSONL, a CSV with
    a header, XML or a URL list, told apart by its first bytes). A .parquet file (or
    a folder of part files, such as a harvest's urls/) is read by its columns, named as the CSV's, with
    the extensions `parse --format parquet` writes (needs sitemapkit[parquet]). A SOURCE whose
    content is an XML sitemap, sitemap index or RSS/Atom feed (0.84 or 0.9, gzip or not, whatever its
    name) is read as one, every field and extension kept; an index's children are read from its folder.

    \b
    Examples:
      sitemapkit generate urls.txt --base-url https://example.com/ --out public/ --gzip
      sitemapkit generate --dir public/ --base-url https://example.com/ --out public/ \\
          --state .sitemapkit/state.db --explain
      sitemapkit generate --log access.log.gz --base-url https://example.com/ --out public/ --min-hits 3
    """
    printer = DiagnosticPrinter(limit=max_diagnostics, quiet=as_json)
    _warn_unused_options(click.get_current_context(), bool(site_dir), bool(log_files))
    try:
        defaults = tuple(_default(d) for d in default_values)
        rules = UrlRules(only, exclude, defaults) if only or exclude or defaults else None
    except UsageError as exc:
        raise click.UsageError(for_terminal(str(exc))) from None
    try:
        with progress("URLs read") as on_progress:
            result = run_generate(
                sources,
                out_dir,
                base_url,
                allow_hosts=allow_hosts,
                **publish.generate_kwargs(),
                encoding=encoding,
                log_format=log_format,
                on_diagnostic=printer,
                on_progress=on_progress,
                rules=rules,
                folder=FolderSource(
                    site_dir,
                    clean_urls=clean_urls,
                    include=folder_include(include),
                    images=images,
                    volatile_selectors=volatile,
                    volatile_patterns=volatile_regex,
                )
                if site_dir
                else None,
                logs=LogSource(
                    log_files,
                    min_hits=min_hits,
                    strip_query=strip_query,
                    exclude_agents=(*DEFAULT_EXCLUDED_AGENTS, *exclude_agents) if exclude_agents else None,
                    priority_from_hits=priority_from_hits,
                )
                if log_files
                else None,
                lastmod=lastmod_mode,
                explain=explain_skip if explain else None,
            )
    except InvalidUrlError as exc:
        hint = "--allow-host" if any(exc.url == h for h in allow_hosts) else "--base-url"
        if as_json:
            json_failure(printer, f"{hint}: {exc}", **FAILED_JSON)
        raise click.BadParameter(for_terminal(str(exc)), param_hint=hint) from None
    except UsageError as exc:
        if as_json:
            json_failure(printer, str(exc), **FAILED_JSON)
        raise click.UsageError(for_terminal(str(exc))) from None
    except (InputError, PublishError) as exc:
        fail(str(exc), printer=printer, json_fields=FAILED_JSON if as_json else None)
    report(printer, result, as_json)
    for kind, pattern in rules.unmatched() if rules is not None else ():
        option = "--only" if kind == "include" else "--exclude"
        safe_echo(f"warning: {option} {pattern!r} matched no URL (patterns match URL paths)", err=True)


def _default(text: str) -> Default:
    """`--default '/blog/*=weekly,0.6'`: a pattern, then a changefreq and/or a priority."""
    pattern, eq, values = text.rpartition("=")
    if not eq or not pattern:
        raise UsageError(f"--default {text!r}: write PATTERN=CHANGEFREQ,PRIORITY, e.g. '/blog/*=weekly,0.6'")
    changefreq: str | None = None
    priority: float | None = None
    for value in filter(None, (v.strip() for v in values.split(","))):
        try:
            priority = float(value)
        except ValueError:
            changefreq = value.lower()
    compile_pattern(pattern)
    return Default(pattern, changefreq, priority)


_FOLDER_OPTIONS = ("clean_urls", "include", "images", "explain", "volatile", "volatile_regex")
_LOG_OPTIONS = ("exclude_agents", "log_format", "min_hits", "strip_query", "priority_from_hits")


def _warn_unused_options(ctx: click.Context, folder: bool, logs: bool) -> None:
    """Say which options given on the command line do nothing, because their source is not there."""
    for present, source, names in ((folder, "--dir", _FOLDER_OPTIONS), (logs, "--log", _LOG_OPTIONS)):
        given = [
            "--" + n.replace("_", "-").replace("exclude-agents", "exclude-agent")
            for n in names
            if ctx.get_parameter_source(n) is click.core.ParameterSource.COMMANDLINE
        ]
        if given and not present:
            verb = "applies" if len(given) == 1 else "apply"
            message = f"{', '.join(given)} only {verb} with {source}, which was not given; ignored"
            safe_echo(f"warning: {message}", err=True)


FAILED_JSON: Final[dict[str, Any]] = {
    "files": [],
    "index": None,
    "entry_url": None,
    "totals": None,
    "removed": [],
    "unchanged": [],
}
"""The keys of the `--json` summary of a generate, build or crawl run that published nothing (`fail`'s
`json_fields`), empty."""


def report(printer: DiagnosticPrinter, result: PublishResult, as_json: bool) -> None:
    """Print the diagnostics, then the summary of what was published (JSON with `as_json`, `ok: true`)."""
    printer.finish()
    if as_json:
        click.echo(json.dumps({**result.to_dict(), "ok": True}, indent=2))
    else:
        _print_summary(result)


def explain_skip(skip: Skip) -> None:
    """`--explain`: a line on stderr for each input the run skipped, with the reason."""
    detail = f" ({skip.detail})" if skip.detail else ""
    safe_echo(f"{skip.path}: skipped, {skip.reason}{detail}", err=True)


def _print_summary(result: PublishResult) -> None:
    unchanged = set(result.unchanged)
    for f in result.files:
        note = "  (unchanged, not rewritten)" if f.path.name in unchanged else ""
        size = plural(f.bytes, "byte")
        if f.path.name.endswith(".gz"):  # the limit counts uncompressed bytes; the file on disk is smaller
            with contextlib.suppress(OSError):
                size = f"{plural(f.path.stat().st_size, 'byte')} gzipped, {f.bytes:,} uncompressed"
        safe_echo(f"{f.path}  {plural(f.urls, 'URL')}  {size}{note}")
    if result.index is not None:
        safe_echo(f"{result.index.path}  index of {plural(len(result.files), 'sitemap')}")
    for stale in result.removed:
        safe_echo(f"removed stale {stale}")
    safe_echo(
        f"published {plural(result.urls, 'URL')} in {plural(len(result.files), 'file')}; "
        f"{result.rejected:,} rejected, {plural(result.duplicates, 'duplicate')}; "
        f"{plural(result.errors, 'error')}, {plural(result.warnings, 'warning')}"
    )
    sources = result.sources or {}
    folder, logs, state = sources.get("folder") or {}, sources.get("logs") or {}, sources.get("state")
    if folder.get("pages") or folder.get("skipped"):
        skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(folder["skipped"].items())) or "none"
        cached = (
            f" ({plural(folder['cached'], 'unchanged file')} not read again)" if folder.get("cached") else ""
        )
        safe_echo(f"site folder: {plural(folder['pages'], 'page')} listed{cached}; skipped: {skipped}")
    crawl = sources.get("crawl")
    if crawl:
        left = ", ".join(f"{n:,} {reason}" for reason, n in crawl["excluded"].items()) or "none"
        state_note = "" if crawl["complete"] else f" (interrupted: {crawl['queued']:,} still queued)"
        safe_echo(
            f"crawl: {crawl['fetched']:,} fetched, {crawl['listed']:,} listed{state_note}; left out: {left}"
        )
    if logs.get("lines"):
        safe_echo(
            f"access logs: {plural(logs['lines'], 'line')}, {plural(logs['pages'], 'page')}, "
            f"{plural(logs['bad_lines'], 'bad line')}"
        )
    if state:
        safe_echo(
            "state: "
            + ", ".join(f"{state[k]:,} {k}" for k in ("added", "changed", "unchanged", "removed", "revived"))
        )
    if result.robots is not None:
        r = result.robots
        change = f"added {', '.join(r.added)}" if r.added else "already listed"
        if r.removed:
            change += f"; removed {', '.join(r.removed)}"
        safe_echo(f"robots.txt: {r.path} {r.status} ({change})")
    safe_echo(f"submit: {result.entry_url}")
