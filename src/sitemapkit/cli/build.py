"""`sitemapkit build`: run the sitemap build that a `sitemapkit.toml` declares."""

from __future__ import annotations

import sys
from typing import Any

import click

from sitemapkit.cli._output import DiagnosticPrinter, max_diagnostics_option, progress
from sitemapkit.cli.generate import _explain, fail, report
from sitemapkit.core.errors import InputError, PublishError, UsageError
from sitemapkit.generator.config import DEFAULT_CONFIG, load_config


@click.command()
@click.argument("config", default=DEFAULT_CONFIG, metavar="[CONFIG]", type=click.Path(dir_okay=False))
@click.option("--strict", is_flag=True, help="Any problem means exit 1 and nothing published.")
@click.option("--explain", is_flag=True, help="Say on stderr which pages were skipped (left out) and why.")
@click.option("--check", is_flag=True, help="Only check the config file; build nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print a machine-readable summary on stdout.")
@max_diagnostics_option
def build(config: str, strict: bool, explain: bool, check: bool, as_json: bool, max_diagnostics: int) -> None:
    """Generate and publish the sitemaps that CONFIG (default: ./sitemapkit.toml) declares: its
    sources (URL lists, CSV, JSONL, site folders, access logs, crawls), filters, per-pattern defaults, output
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
            options: dict[str, Any] = {
                "strict": strict or settings.strict,
                "on_diagnostic": printer,
                "on_progress": on_progress,
                "explain": _explain if explain else None,
            }
            if settings.crawls:
                from sitemapkit.cli.crawl import explain_row
                from sitemapkit.crawl.run import run_config

                result = run_config(settings, explain_crawl=explain_row if explain else None, **options)
            else:
                result = settings.run(**options)
    except KeyboardInterrupt:
        printer.finish()
        click.echo("interrupted: nothing published", err=True)
        sys.exit(130)
    except UsageError as exc:  # a value the file checks could not see
        fail(printer, f"{config}: {exc}")
    except (InputError, PublishError) as exc:
        fail(printer, str(exc))
    report(printer, result, as_json)
