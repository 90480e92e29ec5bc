"""`sitemapkit diff`: what the last build added, changed and removed, from the state database."""

from __future__ import annotations

import json

import click

from sitemapkit.cli._output import fail
from sitemapkit.cli.options import format_option
from sitemapkit.core.dates import format_w3c
from sitemapkit.core.errors import InputError
from sitemapkit.core.escape import for_terminal
from sitemapkit.generator.state import DEFAULT_STATE_PATH, StateStore


@click.command()
@click.option(
    "--state",
    "state_path",
    metavar="PATH",
    default=str(DEFAULT_STATE_PATH),
    show_default=True,
    help="The state database that `sitemapkit generate` keeps.",
)
@click.option(
    "--since",
    "since_run",
    metavar="RUN",
    type=click.IntRange(0),
    default=None,
    help="Show the changes after run RUN (0: everything) instead of those of the last run.",
)
@format_option
def diff(state_path: str, since_run: int | None, fmt: str) -> None:
    """Show the URLs the last build added, changed (new lastmod or content) and removed.

    Exit status: 0 on success (even with no changes), 1 when the state database is missing or
    unreadable, 2 for usage errors.

    \b
    Examples:
      sitemapkit diff
      sitemapkit diff --state build/.sitemapkit/state.db --format json
    """
    try:
        with StateStore(state_path, create=False) as store:
            last = store.last_run()
            if since_run is not None and since_run > (last.id if last is not None else 0):
                runs_so_far = last.id if last is not None else 0
                raise click.BadParameter(
                    f"there is no run {since_run}: the state database has {runs_so_far} run(s)",
                    param_hint="--since",
                )
            result = store.diff(since_run)
            runs = {r.id: r for r in store.runs()} if result.to_run is not None else {}
    except InputError as exc:
        fail(str(exc))
    if fmt == "json":
        data = result.to_dict()
        data["to_run_started_at"] = runs[result.to_run].started_at if result.to_run in runs else None
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    if result.to_run is None:
        click.echo("no build recorded in this state database yet")
        return
    for sign, changes in (("+", result.added), ("~", result.changed), ("-", result.removed)):
        for change in changes:
            lastmod = format_w3c(change.lastmod) if change.lastmod is not None else "-"
            click.echo(f"{sign} {for_terminal(change.url)}\t{lastmod}")
    since = f"run {result.since_run}" if result.since_run else "the start"
    click.echo(
        f"{len(result.added):,} added, {len(result.changed):,} changed, {len(result.removed):,} removed "
        f"in run {result.to_run} ({runs[result.to_run].started_at}) since {since}"
    )
