"""`sitemapkit audit`: a site's sitemaps against the live site."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from sitemapkit.audit.report import AuditReport, check_output
from sitemapkit.audit.run import AuditProgress, aaudit
from sitemapkit.cli._output import error_line, fail, plural
from sitemapkit.cli.options import allow_host_option, max_depth_option, max_pages_option, network_group
from sitemapkit.core.errors import InputError, UsageError
from sitemapkit.core.escape import for_terminal
from sitemapkit.core.runner import run_stoppable
from sitemapkit.crawl.engine import CrawlProgress
from sitemapkit.crawl.options import NetworkOptions

MESSAGE_LIMIT = 500
"""Characters of a URL or message shown on the terminal (the files have them whole)."""


@click.command()
@click.argument("site_or_sitemap_url")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write the full report as JSON.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), help="Write one row per URL as CSV.")
@click.option(
    "--html", "html_path", type=click.Path(dir_okay=False), help="Write the report as one HTML file."
)
@click.option(
    "--fail-on",
    type=click.Choice(["error", "warning", "never"]),
    default="error",
    show_default=True,
    help="Exit 1 when a finding of this severity (or worse) is found (only new ones with --baseline).",
)
@click.option(
    "--baseline", type=click.Path(dir_okay=False), help="A previous --json report: mark findings new/fixed."
)
@click.option(
    "--crawl",
    "do_crawl",
    is_flag=True,
    help="Also crawl the site (--max-pages, --max-depth): pages not in any sitemap, orphans.",
)
@max_pages_option
@max_depth_option
@click.option("--crawl-db", type=click.Path(dir_okay=False), help="With --crawl: keep the crawl file here.")
@click.option("--sample", type=click.IntRange(1), help="Check a uniform random sample of N listed URLs.")
@click.option("--seed", default=0, show_default=True, type=int, help="The sample's random seed.")
@click.option("--max-urls", type=click.IntRange(1), help="Check at most the first N listed URLs.")
@allow_host_option
@network_group
@click.option(
    "--max-findings",
    default=20,
    show_default=True,
    type=click.IntRange(0),
    help="Findings listed on the terminal (all are counted, and all are in the files).",
)
def audit(
    site_or_sitemap_url: str,
    json_path: str | None,
    csv_path: str | None,
    html_path: str | None,
    fail_on: str,
    baseline: str | None,
    do_crawl: bool,
    max_pages: int | None,
    max_depth: int | None,
    crawl_db: str | None,
    sample: int | None,
    seed: int,
    max_urls: int | None,
    allow_hosts: tuple[str, ...],
    network: NetworkOptions,
    max_findings: int,
) -> None:
    """Audit a site's sitemaps against the live site.

    Finds the sitemaps (robots.txt, then well-known paths), validates every file (each `validate` code),
    and checks every listed URL live, politely (robots.txt, per-host limits, Crawl-delay, Retry-After):
    redirects, errors, noindex, canonicals elsewhere, robots.txt blocks, soft 404s, non-HTML, lastmod
    against the page's own date, URLs in several sitemaps, one-way hreflang. --crawl adds the pages no
    sitemap lists and the listed pages nothing links to.

    Exit status: 0, or 1 when a finding reaches --fail-on; 2 for usage errors; 130 when interrupted.

    \b
    Examples:
      sitemapkit audit https://example.com/ --html audit.html --json audit.json
      sitemapkit audit https://example.com/sitemap_index.xml --sample 2000 --seed 7
      sitemapkit audit https://example.com/ --crawl --max-pages 5000 --baseline last.json --fail-on error
    """
    outputs = [
        (p, what) for p, what in ((json_path, "--json"), (csv_path, "--csv"), (html_path, "--html")) if p
    ]
    try:
        _check_outputs(outputs, crawl_db)
        with _progress() as (on_progress, on_crawl):
            report = run_stoppable(  # SIGTERM cancels the workers
                aaudit(
                    site_or_sitemap_url,
                    crawl=do_crawl,
                    max_pages=max_pages,
                    max_depth=max_depth,
                    sample=sample,
                    seed=seed,
                    max_urls=max_urls,
                    allow_hosts=allow_hosts,
                    network=network,
                    baseline=baseline,
                    crawl_db=crawl_db,
                    on_progress=on_progress,
                    on_crawl_progress=on_crawl,
                )
            )
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except UsageError as exc:
        raise click.UsageError(for_terminal(str(exc))) from None
    except InputError as exc:
        fail(str(exc), 2)
    failed = _write_reports(report, outputs)
    print_summary(report, max_findings, color=sys.stdout.isatty())
    if failed:
        for message in failed.values():
            error_line(message)
        written = [p for p, _ in outputs if p not in failed]
        click.echo(
            f"the other reports were written: {for_terminal(', '.join(written))}"
            if written
            else "no report was written",
            err=True,
        )
        sys.exit(2)
    sys.exit(1 if report.failed(fail_on) else 0)


def _check_outputs(outputs: list[tuple[str, str]], crawl_db: str | None) -> None:
    """Every path the run will write, checked before it starts (a mistyped folder would otherwise be
    found after the whole audit)."""
    seen: dict[str, str] = {}
    for path, what in [*outputs, *([(crawl_db, "--crawl-db")] if crawl_db else [])]:
        key = os.path.realpath(path)
        if key in seen:
            raise UsageError(f"{seen[key]} and {what} name the same file {path!r}")
        seen[key] = what
        check_output(path, what)


def _write_reports(report: AuditReport, outputs: list[tuple[str, str]]) -> dict[str, str]:
    """Write each report asked for; one that fails does not stop the others. The failures, by path."""
    from sitemapkit.audit.report_html import write_html

    writers: dict[str, Callable[[str], None]] = {
        "--json": report.write_json,
        "--csv": report.write_csv,
        "--html": lambda path: write_html(report, path),
    }
    failed: dict[str, str] = {}
    for path, what in outputs:
        try:
            writers[what](path)
        except InputError as exc:
            failed[path] = str(exc)
    return failed


def print_summary(report: AuditReport, limit: int, *, color: bool) -> None:
    """Counts by code and severity, worst first; the first `limit` findings; the score. Every text that
    comes from the site (URLs, messages quoting a sitemap or a page) goes through `for_terminal`."""

    def style(text: str, **kw: Any) -> str:
        return click.style(text, **kw) if color else text

    def safe(text: str) -> str:
        return for_terminal(text, MESSAGE_LIMIT)

    s = report.summary()
    d = report.discovery
    if d.get("sitemaps"):
        named = d["sitemaps"]
        more = f" and {len(named) - 3:,} more" if len(named) > 3 else ""
        click.echo(f"sitemaps ({d.get('via')}): " + safe(", ".join(named[:3])) + more)
    checked = f"{s['urls_checked']:,} of {s['urls_listed']:,} listed URLs checked"
    sample = report.sample
    if sample is not None:
        checked += f" (a random sample, seed {sample['seed']})"
    click.echo(f"{s['sitemaps']:,} sitemap file(s); {checked}")
    if report.coverage is not None:
        c = report.coverage
        click.echo(
            f"crawl: {c['crawled']:,} pages fetched, {c['indexable']:,} indexable; "
            f"{c['not_in_sitemap']:,} not in a sitemap, {c['orphans']:,} orphans"
        )
    if s["by_code"]:
        click.echo()
        if sample is not None:
            click.echo(
                f"  counts: 'in the sample' = among the {s['urls_checked']:,} URLs checked, with an estimate "
                f"for all {s['urls_listed']:,} listed; 'exact' = every sitemap file was read in full"
            )
        width = max(len(c) for c in s["by_code"])
        shares = sample.get("shares", {}) if sample is not None else {}
        for code, item in s["by_code"].items():
            sev = item["severity"]
            colour = "red" if sev == "error" else "yellow"
            line = f"  {style(f'{sev:<7}', fg=colour, bold=True)} {code:<{width}}  {item['count']:>7,}"
            if sample is not None:
                if item["counted_over"] == "sample":
                    line += " in the sample"
                    if code in shares:
                        sh = shares[code]
                        line += (
                            f"; estimate for all listed: ~{sh['estimate']:,} ({sh['share']:.1%}, "
                            f"95% CI {sh['low']:.1%}-{sh['high']:.1%})"
                        )
                else:
                    line += " exact"
            click.echo(line)
        click.echo()
    for f in report.findings[:limit]:
        colour = "red" if f.severity.value == "error" else "yellow"
        mark = f" [{f.baseline}]" if f.baseline else ""
        where = safe(f.url or f.sitemap or "")
        click.echo(f"{style(f.severity.value, fg=colour)} [{f.code}]{mark} {where}: {safe(f.message)}")
    if len(report.findings) > limit:
        click.echo(f"... and {len(report.findings) - limit:,} more (see --json, --csv or --html)")
    for note in report.notes:
        click.echo(style(f"note: {safe(note)}", fg="cyan"))
    if report.baseline is not None:
        b = report.baseline
        click.echo(
            f"against the baseline: {b['new']:,} new, {b['unchanged']:,} unchanged, {b['fixed']:,} fixed"
        )
    summary = (
        f"score {report.score()}/100: {plural(s['errors'], 'error')}, {plural(s['warnings'], 'warning')}"
    )
    click.echo(style(summary, fg="red" if s["errors"] else "yellow" if s["warnings"] else "green", bold=True))


@contextmanager
def _progress() -> Iterator[
    tuple[Callable[[AuditProgress], None] | None, Callable[[CrawlProgress], None] | None]
]:
    """A progress bar with rate and ETA on stderr when it is a terminal; nothing when piped."""
    if not sys.stderr.isatty():
        yield None, None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("checking URLs", total=None, rate="")
        crawl_task: list[Any] = []

        def update(p: AuditProgress) -> None:
            bar.update(task, completed=p.done, total=p.total, rate=f"{p.rate:,.0f} URLs/s")

        def crawl(p: CrawlProgress) -> None:
            if not crawl_task:
                crawl_task.append(bar.add_task("crawling", total=None, rate=""))
            bar.update(crawl_task[0], completed=p.fetched, rate=f"{p.rate:,.0f} pages/s")

        yield update, crawl
