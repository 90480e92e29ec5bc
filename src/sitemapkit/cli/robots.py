"""`sitemapkit robots`: list the published sitemaps in a robots.txt, keeping the rest of it as it is."""

from __future__ import annotations

import json

import click

from sitemapkit.cli._output import DiagnosticPrinter, fail, json_failure, safe_echo
from sitemapkit.cli.options import default_of, json_summary_option
from sitemapkit.core.errors import InputError, PublishError, UsageError
from sitemapkit.core.escape import for_terminal
from sitemapkit.crawl.options import PublishOptions
from sitemapkit.generator.robots import update_robots


@click.command()
@click.option(
    "--robots",
    "robots_path",
    metavar="PATH",
    required=True,
    type=click.Path(path_type=str),
    help="The robots.txt file to edit (created if missing), e.g. public/robots.txt.",
)
@click.option(
    "--sitemap",
    "sitemaps",
    metavar="URL",
    multiple=True,
    help="An absolute URL of a published sitemap or index (repeatable). These become the managed "
    "Sitemap: lines; managed lines not named here are removed.",
)
@click.option(
    "--remove",
    "remove",
    metavar="URL",
    multiple=True,
    help="Remove the Sitemap: line naming URL wherever it is in the file (repeatable). Without "
    "--sitemap, the managed lines are otherwise left as they are.",
)
@click.option(
    "--name",
    metavar="NAME",
    default=default_of(PublishOptions, "name"),
    show_default=True,
    help="The set of sitemaps (as `generate --name`) whose block of Sitemap: lines to manage, so several "
    "sets can each keep their own; the default set's block is the unnamed one.",
)
@click.option("--dry-run", is_flag=True, help="Print a unified diff of the change; write nothing.")
@json_summary_option
def robots(
    robots_path: str,
    sitemaps: tuple[str, ...],
    remove: tuple[str, ...],
    name: str,
    dry_run: bool,
    as_json: bool,
) -> None:
    """List the published sitemaps in robots.txt as Sitemap: lines.

    sitemapkit keeps its lines in one block (appended at the end the first time) and rewrites only
    the Sitemap: lines of that block:

    \b
      # BEGIN sitemapkit (managed Sitemap lines)
      Sitemap: https://example.com/sitemap.xml
      # END sitemapkit

    Every other line, comment, group, line ending and byte stays as it was. A sitemap already
    listed elsewhere in the file (in any case) is not listed twice. Rerunning with the same
    arguments changes nothing. A warning says when the rules disallow a sitemap or the site root
    for * or Googlebot.

    Exit status: 0 on success (warnings included), 1 when the file cannot be read or written, is
    larger than 500 KiB or is not a regular file (a FIFO or a device is left alone), 2 for usage
    errors (such as a sitemap URL that is not absolute).

    \b
    Examples:
      sitemapkit robots --robots public/robots.txt --sitemap https://example.com/sitemap.xml
      sitemapkit robots --robots public/robots.txt --sitemap https://example.com/sitemap_index.xml \\
          --sitemap https://example.com/news-sitemap.xml --dry-run
      sitemapkit robots --robots public/robots.txt --name news --sitemap https://example.com/news.xml
      sitemapkit robots --robots public/robots.txt --remove https://example.com/old-sitemap.xml --json
    """
    if not sitemaps and not remove:
        raise click.UsageError("give at least one --sitemap URL (or --remove URL)")
    printer = DiagnosticPrinter(limit=None, quiet=as_json)
    try:
        result = update_robots(
            robots_path,
            list(sitemaps) if sitemaps else None,
            remove=remove,
            name=None if name == default_of(PublishOptions, "name") else name,
            dry_run=dry_run,
            on_diagnostic=printer,
        )
    except UsageError as exc:
        if as_json:
            json_failure(printer, str(exc), path=robots_path)
        raise click.UsageError(for_terminal(str(exc))) from None
    except (InputError, PublishError) as exc:
        fail(str(exc), printer=printer, json_fields={"path": robots_path} if as_json else None)
    if as_json:
        data = result.to_dict()
        if dry_run:
            data["diff"] = result.diff()
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    if dry_run:
        # each line of robots.txt through for_terminal, the diff's own line breaks kept
        click.echo("".join(for_terminal(line) + "\n" for line in result.diff().splitlines()), nl=False)
        verb = {"created": "would be created", "updated": "would be updated", "unchanged": "unchanged"}
        safe_echo(f"{result.path}: {verb[result.status]} (dry run: nothing written)", err=True)
        return
    for url in result.added:
        safe_echo(f"+ Sitemap: {url}")
    for url in result.removed:
        safe_echo(f"- Sitemap: {url}")
    listed = len(result.kept) + len(result.added)
    safe_echo(
        f"{result.path}: {result.status} ({len(result.added)} added, {len(result.removed)} removed, "
        f"{listed} listed)"
    )
