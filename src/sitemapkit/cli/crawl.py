"""`sitemapkit crawl`: sitemaps for a live site, by crawling it."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click

from sitemapkit.cli._output import DiagnosticPrinter, fail, interruption, max_diagnostics_option
from sitemapkit.cli.generate import FAILED_JSON, report
from sitemapkit.cli.options import network_options, per_host_option
from sitemapkit.core.constants import MAX_BYTES, MAX_URLS
from sitemapkit.core.errors import InputError, InvalidUrlError, PublishError, Terminated, UsageError
from sitemapkit.core.escape import for_terminal
from sitemapkit.crawl.engine import CrawlProgress
from sitemapkit.crawl.frontier import Row
from sitemapkit.crawl.policy import DEFAULT_MAX_PAGES
from sitemapkit.crawl.run import crawl as run_crawl


@click.command()
@click.argument("start_url")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Output folder.")
@click.option(
    "--base-url", help="Public URL of the folder the sitemaps are published in [default: START_URL's]."
)
@click.option(
    "--allow-host", "allow_hosts", multiple=True, metavar="HOST", help="Also crawl HOST. Repeatable."
)
@click.option("--include", multiple=True, metavar="PATTERN", help="Only crawl paths matching (glob or re:).")
@click.option(
    "--exclude", multiple=True, metavar="PATTERN", help="Do not crawl paths matching (glob or re:)."
)
@click.option(
    "--max-pages",
    default=DEFAULT_MAX_PAGES,
    show_default=True,
    type=click.IntRange(0),
    help="Fetch at most this many pages (a bound on any trap the guards miss); 0: no limit.",
)
@click.option("--max-depth", type=click.IntRange(0), help="Follow at most this many links from a seed.")
@click.option("--strip-query", is_flag=True, help="Drop query strings (but the --keep-query parameters).")
@click.option(
    "--keep-query", multiple=True, metavar="NAME", help="Keep only these query parameters. Repeatable."
)
@click.option(
    "--trap-limit",
    default=100,
    show_default=True,
    type=click.IntRange(1),
    help="Stop after this many links in a row between URLs of one pattern (a calendar).",
)
@per_host_option(2)
@network_options(rate=True)
@click.option("--no-sitemaps", is_flag=True, help="Do not seed the crawl with the site's existing sitemaps.")
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
@click.option("--state", type=click.Path(dir_okay=False), help="SQLite state store for honest lastmod.")
@click.option("--gzip", "use_gzip", is_flag=True, help="Write .xml.gz files.")
@click.option("--gzip-level", default=6, show_default=True, type=click.IntRange(0, 9))
@click.option("--max-urls", default=MAX_URLS, show_default=True, type=click.IntRange(1, MAX_URLS))
@click.option("--max-bytes", default=MAX_BYTES, show_default=True, type=click.IntRange(1, MAX_BYTES))
@click.option("--index", "index_mode", type=click.Choice(["auto", "always", "never"]), default="auto")
@click.option("--name", default="sitemap", show_default=True, help="File name prefix.")
@click.option("--xsl", default=None, metavar="URL|default", help="Add an XSL stylesheet reference.")
@click.option(
    "--hreflang",
    "hreflang_mode",
    type=click.Choice(["auto", "complete", "keep"]),
    default="auto",
    show_default=True,
)
@click.option(
    "--robots", "robots_path", metavar="PATH", type=click.Path(dir_okay=False), help="Update robots.txt."
)
@click.option("--explain", is_flag=True, help="Say on stderr which URLs were left out and why.")
@click.option("--crawl-log", type=click.Path(dir_okay=False), help="Write one JSON line per URL met.")
@click.option("--strict", is_flag=True, help="Any problem means exit 1 and nothing published.")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable summary on stdout.")
@max_diagnostics_option
def crawl(
    start_url: str,
    out_dir: str,
    base_url: str | None,
    allow_hosts: tuple[str, ...],
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    max_pages: int,
    max_depth: int | None,
    strip_query: bool,
    keep_query: tuple[str, ...],
    trap_limit: int,
    concurrency: int,
    rate: float | None,
    user_agent: str,
    timeout: float,
    retries: int,
    allow_private: bool,
    no_sitemaps: bool,
    images: bool,
    render: bool,
    crawl_db: str | None,
    resume: bool,
    publish_partial: bool,
    state: str | None,
    use_gzip: bool,
    gzip_level: int,
    max_urls: int,
    max_bytes: int,
    index_mode: str,
    name: str,
    xsl: str | None,
    hreflang_mode: str,
    robots_path: str | None,
    explain: bool,
    crawl_log: str | None,
    strict: bool,
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
    try:
        with _progress_line() as on_progress:
            result = run_crawl(
                start_url,
                out_dir,
                base_url=base_url,
                allow_hosts=allow_hosts,
                include=include,
                exclude=exclude,
                max_pages=max_pages or None,
                max_depth=max_depth,
                strip_query=strip_query,
                keep_query=keep_query,
                trap_limit=trap_limit,
                concurrency=concurrency,
                rate=rate,
                user_agent=user_agent,
                timeout=timeout,
                retries=retries,
                allow_private=allow_private,
                sitemaps=not no_sitemaps,
                images=images,
                render=render,
                crawl_db=crawl_db,
                resume=resume,
                publish_partial=publish_partial,
                state=state,
                gzip=use_gzip,
                gzip_level=gzip_level,
                max_urls=max_urls,
                max_bytes=max_bytes,
                index=index_mode,  # type: ignore[arg-type]
                name=name,
                xsl=xsl,
                hreflang=hreflang_mode,  # type: ignore[arg-type]
                robots=robots_path,
                strict=strict,
                on_diagnostic=printer,
                on_progress=on_progress,
                explain=explain_row if explain else None,
                crawl_log=crawl_log,
            )
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
