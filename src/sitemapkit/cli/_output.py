"""Output helpers shared by the commands: diagnostics on stderr, progress on a terminal only."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click

from sitemapkit.core.diagnostics import Diagnostic


class DiagnosticPrinter:
    """Prints diagnostics to stderr as they come, up to `limit`; counts the rest."""

    def __init__(self, limit: int | None = 100, quiet: bool = False) -> None:
        self.limit = limit
        self.quiet = quiet
        self.printed = 0
        self.hidden = 0
        self.color = sys.stderr.isatty()

    def __call__(self, diagnostic: Diagnostic) -> None:
        if self.quiet or (self.limit is not None and self.printed >= self.limit):
            self.hidden += 1
            return
        self.printed += 1
        colour = "red" if diagnostic.is_error else "yellow"
        text = str(diagnostic)
        if diagnostic.url and diagnostic.url not in text:
            text += f" ({diagnostic.url})"
        click.secho(text, fg=colour if self.color else None, err=True)

    def finish(self) -> None:
        if self.hidden and not self.quiet:
            click.echo(f"... and {self.hidden:,} more diagnostics not shown", err=True)


@contextmanager
def progress(label: str) -> Iterator[Callable[[int], None] | None]:
    """A live counter on stderr when it is a terminal; None (no output at all) when piped."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=None)

        def update(count: int) -> None:
            bar.update(task, completed=count)

        yield update


max_diagnostics_option = click.option(
    "--max-diagnostics",
    default=100,
    show_default=True,
    type=click.IntRange(0),
    help="Print at most this many diagnostics on stderr (all are counted).",
)
"""The `--max-diagnostics` option of the commands that print diagnostics."""
