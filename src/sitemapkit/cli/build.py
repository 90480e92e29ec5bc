"""`sitemapkit build`: run the sitemap build that a `sitemapkit.toml` declares."""

from __future__ import annotations

import json
import sys

import click

from sitemapkit.cli._output import DiagnosticPrinter, progress
from sitemapkit.cli.generate import _explain, _print_summary
from sitemapkit.config import DEFAULT_CONFIG, load_config
from sitemapkit.errors import InputError, PublishError, UsageError


@click.command()
@click.argument("config", default=DEFAULT_CONFIG, metavar="[CONFIG]", type=click.Path(dir_okay=False))
@click.option("--strict", is_flag=True, help="Any problem means exit 1 and nothing published.")
@click.option("--explain", is_flag=True, help="Say on stderr which folder pages were skipped and why.")
@click.option("--check", is_flag=True, help="Only check the config file; build nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable summary on stdout.")
@click.option(
    "--max-diagnostics",
    default=100,
    show_default=True,
    type=click.IntRange(0),
    help="Print at most this many diagnostics on stderr (all are counted).",
)
def build(config: str, strict: bool, explain: bool, check: bool, as_json: bool, max_diagnostics: int) -> None:
    """Generate and publish the sitemaps that CONFIG (default: ./sitemapkit.toml) declares: its
    sources (URL lists, CSV, JSONL, site folders, access logs), filters, per-pattern defaults, output
    and state file. Paths in the file are relative to the file.

    Exit status: 0 when published, 1 when the config, an input or publishing failed (nothing is
    published then), 2 for usage errors.

    \b
    Examples:
      sitemapkit build
      sitemapkit build site/sitemapkit.toml --explain
      sitemapkit build --check
    """
    try:
        settings = load_config(config)
    except InputError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    if check:
        click.echo(f"{config}: OK")
        return
    printer = DiagnosticPrinter(limit=max_diagnostics, quiet=as_json)
    try:
        with progress("URLs read") as on_progress:
            result = settings.run(
                strict=strict or settings.strict,
                on_diagnostic=printer,
                on_progress=on_progress,
                explain=_explain if explain else None,
            )
    except UsageError as exc:  # a value the file checks could not see (e.g. lastmod 'content' without state)
        printer.finish()
        click.echo(f"error: {config}: {exc}", err=True)
        sys.exit(1)
    except (InputError, PublishError) as exc:
        printer.finish()
        click.secho(f"error: {exc}", fg="red" if sys.stderr.isatty() else None, err=True)
        sys.exit(1)
    printer.finish()
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        _print_summary(result)
