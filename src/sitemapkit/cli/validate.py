"""`sitemapkit validate`: check sitemaps as search engines read them; every problem with its file and line."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click

from sitemapkit.cli._output import fail
from sitemapkit.cli.options import (
    allow_host_option,
    connect_timeout,
    fetch_missing_option,
    follow_cross_host_option,
    format_option,
    max_duration_option,
    network_options,
)
from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.errors import InputError, UsageError
from sitemapkit.core.escape import for_terminal
from sitemapkit.reader.fetch import FetchOptions
from sitemapkit.validator.report import FileReport, ValidationReport
from sitemapkit.validator.run import validate as run_validate


@click.command()
@click.argument("sources", nargs=-1, required=True, metavar="SOURCE...")
@click.option(
    "--url",
    "public_url",
    metavar="PUBLIC_URL",
    default=None,
    help="Public URL of a local SOURCE (its scope is judged by it); without it scope checks are skipped.",
)
@format_option
@click.option("--no-recursive", is_flag=True, help="Validate an index alone, not its child sitemaps.")
@fetch_missing_option
@click.option(
    "--max-errors",
    default=100,
    show_default=True,
    type=click.IntRange(0),
    metavar="N",
    help="Show at most N diagnostics (errors before warnings); all are counted.",
)
@allow_host_option
@max_duration_option
@network_options()
@follow_cross_host_option
def validate(
    sources: tuple[str, ...],
    public_url: str | None,
    fmt: str,
    no_recursive: bool,
    fetch_missing: bool,
    max_errors: int,
    allow_hosts: tuple[str, ...],
    max_duration: float,
    timeout: float,
    retries: int,
    user_agent: str,
    allow_private: bool,
    follow_cross_host: bool,
) -> None:
    """Validate sitemaps: report what search engines would reject or ignore, with file and line.

    A SOURCE is a local .xml, .xml.gz or .txt file ('-' for standard input), a sitemap URL,
    or a site (its sitemaps are found through robots.txt). An index is validated together with
    every child sitemap; a local index's children are read from its folder, and fetched only
    with --fetch-missing. Checks go beyond the XML schemas: URL form and length, scope (folder,
    host, scheme, port), limits, dates (invalid, in the future, all the same), duplicates across
    the tree, image/video/news rules and hreflang alternates (valid codes, self link, reciprocity).

    Exit status: 0 when there are no errors (warnings are fine), 1 when there are errors,
    2 for usage errors, 130 when interrupted.

    \b
    Examples:
      sitemapkit validate public/sitemap.xml --url https://example.com/sitemap.xml
      sitemapkit validate https://example.com/sitemap_index.xml --format json
      sitemapkit validate https://example.com/
    """
    fetch = FetchOptions(
        user_agent=user_agent,
        connect_timeout=connect_timeout(timeout),
        read_timeout=timeout,
        retries=retries,
    )
    try:
        report = run_validate(
            sources,
            url=public_url,
            recursive=not no_recursive,
            allow_hosts=allow_hosts,
            fetch_options=fetch,
            max_duration=max_duration,
            allow_private=allow_private,
            follow_cross_host=follow_cross_host,
            fetch_missing=fetch_missing,
        )
    except UsageError as exc:
        raise click.UsageError(for_terminal(str(exc))) from None
    except InputError as exc:  # a SOURCE that is not there: bad input, 2 as a usage error
        fail(str(exc), status=2)
    except KeyboardInterrupt:
        fail("interrupted", status=130)  # not 1: a CI job must tell an interrupt from a failed check
    if fmt == "json":
        click.echo(json.dumps(report.to_dict(max_errors), indent=2, ensure_ascii=False))
    else:
        _print_text(report, max_errors, color=sys.stdout.isatty())
    sys.exit(0 if report.ok else 1)


def _print_text(report: ValidationReport, limit: int, *, color: bool) -> None:
    """Grouped by file, errors first; each item with its line's excerpt; a summary line last."""

    def style(text: str, **kw: Any) -> str:
        return click.style(text, **kw) if color else text

    shown = report.shown(limit)
    files = {f.source: f for f in report.files}
    current: str | None = ""
    for d in shown:
        if d.source != current:
            current = d.source
            click.echo(("\n" if d is not shown[0] else "") + style(_heading(d.source, files), bold=True))
        click.echo(_item(d, style))
        excerpt = report.excerpt(d)
        if excerpt:
            click.echo(style(f"    | {for_terminal(excerpt)}", dim=True))
    for note in report.notes:
        click.echo(style(f"note: {for_terminal(note)}", fg="cyan"))
    hidden = len(report) - len(shown)
    if shown or report.notes:
        click.echo()
    s = report.summary()
    summary = (
        f"{_n(s['files'], 'file')}, {_n(s['urls'], 'URL')}: "
        f"{_n(s['errors'], 'error')}, {_n(s['warnings'], 'warning')}"
    )
    if hidden:
        summary += f" ({hidden:,} not shown; raise --max-errors to see more)"
        by_code = ", ".join(f"{code} {n:,}" for code, n in s["codes"].items())
        click.echo(style(f"by code: {by_code}", dim=True))
    click.echo(style(summary, fg="red" if s["errors"] else "green", bold=True))


def _heading(source: str | None, files: dict[str, FileReport]) -> str:
    if source is None:
        return "(no file)"
    f = files.get(source)
    if f is None:
        return for_terminal(source)
    if f.kind is None:
        what = for_terminal(f.error or "not read")
    elif f.kind == "sitemapindex":
        what = f"sitemap index, {_n(f.entries, 'sitemap')}"
    else:
        what = f"{f.kind}, {_n(f.entries, 'URL')}"
    return f"{for_terminal(source)} ({what}): {_n(f.errors, 'error')}, {_n(f.warnings, 'warning')}"


def _item(d: Diagnostic, style: Callable[..., str]) -> str:
    """`file:line: severity [code] message (url)`, the form editors and terminals make clickable; each
    text through `for_terminal`."""
    severity = style(d.severity.value, fg="red" if d.is_error else "yellow", bold=True)
    message = for_terminal(d.message)
    text = f"{for_terminal(d.location())}: {severity} [{d.code}] {message}"
    if d.url:
        url = for_terminal(d.url)
        if url not in message:
            text += f" ({url})"
    return text


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"
