"""`sitemapkit crawl`: sitemaps for a live site, by crawling it."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click

from sitemapkit.cli._output import DiagnosticPrinter, fail, interruption, max_diagnostics_option
from sitemapkit.cli.generate import FAILED_JSON, report
from sitemapkit.cli.options import (
    json_summary_option,
    network_group,
    out_dir_option,
    publish_group,
    scope_group,
)
from sitemapkit.core.errors import InputError, InvalidUrlError, PublishError, Terminated, UsageError
from sitemapkit.core.escape import for_terminal
from sitemapkit.core.runner import run_stoppable
from sitemapkit.crawl.engine import CrawlProgress
from sitemapkit.crawl.frontier import Row
from sitemapkit.crawl.options import NetworkOptions, PublishOptions, ScopeOptions
from sitemapkit.crawl.run import acrawl
from sitemapkit.generator.writer import PublishResult


@click.command()
@click.argument("start_url")
@out_dir_option
@click.option(
    "--base-url", help="Public URL of the folder the sitemaps are published in [default: START_URL's]."
)
@scope_group
@network_group
@click.option("--images", is_flag=True, help="List each page's in-scope <img> as image entries.")
@click.option(
    "--render", is_flag=True, help="Run each page's JavaScript in headless Chromium (the render extra)."
)
@click.option(
    "--crawl-db",
    type=click.Path(dir_okay=False),
    help="The crawl file [default: STATE.crawl or OUT.crawl.db].",
)
@click.option("--resume", is_flag=True, help="Continue the crawl in the crawl file; fetch nothing it has.")
@click.option("--publish-partial", is_flag=True, help="When interrupted, publish what was listed so far.")
@publish_group
@click.option("--explain", is_flag=True, help="Say on stderr which URLs were left out and why.")
@click.option("--crawl-log", type=click.Path(dir_okay=False), help="Write one JSON line per URL met.")
@json_summary_option
@max_diagnostics_option
def crawl(
    start_url: str,
    out_dir: str,
    base_url: str | None,
    scope: ScopeOptions,
    network: NetworkOptions,
    images: bool,
    render: bool,
    crawl_db: str | None,
    resume: bool,
    publish_partial: bool,
    publish: PublishOptions,
    explain: bool,
    crawl_log: str | None,
    as_json: bool,
    max_diagnostics: int,
) -> None:
    """Crawl the site at START_URL and publish sitemaps of its indexable pages.

    Only pages that answer 200 with HTML, are not noindex and are their own canonical are listed; every
    URL left out has a reason (--explain, --crawl-log, written as the crawl goes). Traps are bounded: at
    most --max-pages fetches, no URL over 2,048 characters or 32 segments deep or with a segment three
    times, --trap-limit links in a row to one URL pattern, and a page with the same content as another
    is not followed. robots.txt and its Crawl-delay are obeyed. The
    crawl is kept in a SQLite file: after Ctrl-C, --resume continues it. Nothing is published until the
    crawl completes (or --publish-partial).

    \b
    Examples:
      sitemapkit crawl https://example.com/ --out public/ --gzip
      sitemapkit crawl https://example.com/blog/ --out public/blog/ --state .sitemapkit/state.db \\
          --exclude '/blog/tag/*' --max-pages 50000 --explain
      sitemapkit crawl https://example.com/ --out public/ --resume
    """
    printer = DiagnosticPrinter(limit=max_diagnostics, quiet=as_json)
    finished: list[PublishResult] = []

    async def run() -> PublishResult:
        finished.append(
            await acrawl(
                start_url,
                out_dir,
                base_url=base_url,
                scope=scope,
                network=network,
                publish=publish,
                images=images,
                render=render,
                crawl_db=crawl_db,
                resume=resume,
                publish_partial=publish_partial,
                crawl_log=crawl_log,
                on_diagnostic=printer,
                on_progress=on_progress,
                explain=explain_row if explain else None,
            )
        )
        return finished[0]

    try:
        with _progress_line() as on_progress:
            try:
                result = run_stoppable(run())
            except Terminated:
                if not finished:
                    raise
                result = finished[0]  # SIGTERM with --publish-partial: published, as after Ctrl-C
    except (KeyboardInterrupt, Terminated) as exc:
        how, status = interruption(exc)
        fail(f"{how}: nothing published; continue with --resume", status, printer=printer)
    except InvalidUrlError as exc:
        raise click.BadParameter(str(exc), param_hint="START_URL") from None
    except UsageError as exc:
        raise click.UsageError(str(exc)) from None
    except (InputError, PublishError) as exc:
        fail(str(exc), printer=printer, json_fields=FAILED_JSON if as_json else None)
    except OSError as exc:  # a file of the crawl (the crawl file beside --out) that cannot be made
        where = exc.filename if exc.filename is not None else out_dir
        message = f"{where}: cannot write ({exc.strerror or exc})"
        fail(message, printer=printer, json_fields=FAILED_JSON if as_json else None)
    report(printer, result, as_json)


def explain_row(row: Row) -> None:
    detail = f" ({row.detail})" if row.detail else ""
    click.echo(for_terminal(f"{row.url}: left out, {row.reason}{detail}"), err=True)


@contextmanager
def _progress_line() -> Iterator[Callable[[CrawlProgress], None] | None]:
    """A live line on stderr when it is a terminal: fetched, queued, listed, excluded, errors, rate."""
    if not sys.stderr.isatty():
        yield None
        return
    shown = {"any": False}

    def update(p: CrawlProgress) -> None:
        shown["any"] = True
        line = (
            f"fetched {p.fetched:,}  queued {p.queued:,}  listed {p.listed:,}  "
            f"left out {p.excluded:,}  errors {p.errors:,}  {p.rate:,.0f} pages/s"
        )
        click.echo(f"\r\x1b[K{line}", nl=False, err=True)

    try:
        yield update
    finally:
        if shown["any"]:
            click.echo("\r\x1b[K", nl=False, err=True)
