"""`sitemapkit generate`: sitemaps from URL lists, CSV and JSONL files."""

from __future__ import annotations

import json
import sys

import click

from sitemapkit.cli._output import DiagnosticPrinter, progress
from sitemapkit.constants import MAX_BYTES, MAX_URLS
from sitemapkit.errors import InputError, InvalidUrlError, PublishError, UsageError
from sitemapkit.generator import generate as run_generate
from sitemapkit.writer import PublishResult


@click.command()
@click.argument("sources", nargs=-1, required=True, metavar="SOURCE...")
@click.option("--base-url", required=True, help="Public URL of the folder the sitemaps are published in.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Output folder.")
@click.option("--gzip", "use_gzip", is_flag=True, help="Write .xml.gz files.")
@click.option("--gzip-level", default=6, show_default=True, type=click.IntRange(0, 9), help="gzip level.")
@click.option("--max-urls", default=MAX_URLS, show_default=True, type=click.IntRange(1, MAX_URLS))
@click.option(
    "--max-bytes",
    default=MAX_BYTES,
    show_default=True,
    type=click.IntRange(1, MAX_BYTES),
    help="Uncompressed size limit per file, header and footer included.",
)
@click.option(
    "--index",
    "index_mode",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Write a sitemap index: when there are several files, always, or never.",
)
@click.option("--name", default="sitemap", show_default=True, help="File name prefix.")
@click.option(
    "--xsl",
    default=None,
    metavar="URL|default",
    help="Add an XSL stylesheet reference; 'default' writes a bundled one next to the sitemaps.",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="HOST",
    help="Also accept URLs on HOST (cross-submission through robots.txt). Repeatable.",
)
@click.option("--strict", is_flag=True, help="Any problem means exit 1 and nothing published.")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable summary on stdout.")
@click.option(
    "--max-diagnostics",
    default=100,
    show_default=True,
    type=click.IntRange(0),
    help="Print at most this many diagnostics on stderr (all are counted).",
)
def generate(
    sources: tuple[str, ...],
    base_url: str,
    out_dir: str,
    use_gzip: bool,
    gzip_level: int,
    max_urls: int,
    max_bytes: int,
    index_mode: str,
    name: str,
    xsl: str | None,
    allow_hosts: tuple[str, ...],
    strict: bool,
    as_json: bool,
    max_diagnostics: int,
) -> None:
    """Generate sitemaps for the URLs in SOURCE files.

    A SOURCE is a URL list (one URL per line, optional TAB-separated lastmod, changefreq, priority),
    a .csv with a header, or a .jsonl file; .gz works, and '-' reads standard input.

    \b
    Example:
      sitemapkit generate urls.txt --base-url https://example.com/ --out public/ --gzip
    """
    printer = DiagnosticPrinter(limit=max_diagnostics, quiet=as_json)
    try:
        with progress("URLs read") as on_progress:
            result = run_generate(
                sources,
                out_dir,
                base_url,
                gzip=use_gzip,
                gzip_level=gzip_level,
                max_urls=max_urls,
                max_bytes=max_bytes,
                index=index_mode,  # type: ignore[arg-type]
                name=name,
                xsl=xsl,
                allow_hosts=allow_hosts,
                strict=strict,
                on_diagnostic=printer,
                on_progress=on_progress,
            )
    except InvalidUrlError as exc:
        raise click.BadParameter(str(exc), param_hint="--base-url") from None
    except UsageError as exc:
        raise click.UsageError(str(exc)) from None
    except (InputError, PublishError) as exc:
        printer.finish()
        click.secho(f"error: {exc}", fg="red" if sys.stderr.isatty() else None, err=True)
        sys.exit(1)
    printer.finish()
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        _print_summary(result)


def _print_summary(result: PublishResult) -> None:
    for f in result.files:
        click.echo(f"{f.path}  {f.urls:,} URLs  {f.bytes:,} bytes")
    if result.index is not None:
        click.echo(f"{result.index.path}  index of {len(result.files):,} sitemaps")
    for stale in result.removed:
        click.echo(f"removed stale {stale}")
    click.echo(
        f"published {result.urls:,} URLs in {len(result.files):,} file(s); "
        f"{result.rejected:,} rejected, {result.duplicates:,} duplicates; "
        f"{result.errors:,} errors, {result.warnings:,} warnings"
    )
    click.echo(f"submit: {result.entry_url}")
