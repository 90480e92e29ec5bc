"""`sitemapkit build`: run the sitemap build that a `sitemapkit.toml` (or sitemap_gen.py's config.xml)
declares."""

from __future__ import annotations

from typing import Any

import click

from sitemapkit.cli._output import DiagnosticPrinter, fail, max_diagnostics_option, progress, safe_echo
from sitemapkit.cli.generate import FAILED_JSON, explain_skip, report
from sitemapkit.cli.options import json_summary_option, replace_existing_option, strict_option
from sitemapkit.core.errors import InputError, PublishError, UsageError
from sitemapkit.generator.config import DEFAULT_CONFIG
from sitemapkit.generator.sitemap_gen import load_any, to_toml


@click.command()
@click.argument("config", default=DEFAULT_CONFIG, metavar="[CONFIG]", type=click.Path(dir_okay=False))
@strict_option
@click.option("--explain", is_flag=True, help="Say on stderr which pages were skipped (left out) and why.")
@click.option("--check", is_flag=True, help="Only check the config file; build nothing.")
@click.option(
    "--print-toml",
    is_flag=True,
    help="Print the sitemapkit.toml equivalent of CONFIG (a sitemap_gen.py config.xml, or a sitemapkit.toml "
    "with every path made relative and defaults left out); build nothing.",
)
@replace_existing_option
@json_summary_option
@max_diagnostics_option
def build(
    config: str,
    strict: bool,
    explain: bool,
    check: bool,
    print_toml: bool,
    replace_existing: bool,
    as_json: bool,
    max_diagnostics: int,
) -> None:
    """Generate and publish the sitemaps that CONFIG (default: ./sitemapkit.toml) declares: its
    sources (URL lists, CSV, JSONL, site folders, access logs, existing sitemaps, crawls), filters,
    per-pattern defaults, output and state file. Paths in the file are relative to the file.

    CONFIG may also be Google's sitemap_gen.py config.xml (recognised by its <site> root), read as
    it is: its output keeps sitemap_gen's file names. --print-toml shows the equivalent
    sitemapkit.toml.

    Exit status: 0 when published, 1 when the config, an input or publishing failed (nothing is
    published then), 2 for usage errors.

    \b
    Examples:
      sitemapkit build
      sitemapkit build site/sitemapkit.toml --explain
      sitemapkit build --check
      sitemapkit build config.xml --replace-existing
      sitemapkit build --print-toml config.xml > sitemapkit.toml
    """
    printer = DiagnosticPrinter(limit=max_diagnostics, quiet=as_json)
    try:
        settings = load_any(config)
    except InputError as exc:
        fail(str(exc), printer=printer, json_fields=FAILED_JSON if as_json else None)
    if print_toml:
        click.echo(to_toml(settings), nl=False)
        return
    if check:
        safe_echo(f"{config}: OK")
        return
    for note in settings.notes:
        safe_echo(f"note: {note}", err=True)
    try:
        with progress("URLs read") as on_progress:
            options: dict[str, Any] = {
                "strict": strict or settings.strict,
                "on_diagnostic": printer,
                "on_progress": on_progress,
                "explain": explain_skip if explain else None,
            }
            if replace_existing:
                options["replace_existing"] = True
            if settings.crawls:
                from sitemapkit.cli.crawl import explain_row
                from sitemapkit.crawl.run import run_config

                result = run_config(settings, explain_crawl=explain_row if explain else None, **options)
            else:
                result = settings.run(**options)
    except UsageError as exc:  # a value the file checks could not see
        fail(f"{config}: {exc}", printer=printer, json_fields=FAILED_JSON if as_json else None)
    except (InputError, PublishError) as exc:
        fail(str(exc), printer=printer, json_fields=FAILED_JSON if as_json else None)
    report(printer, result, as_json)
