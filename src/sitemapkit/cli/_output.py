"""Output helpers shared by the commands: diagnostics on stderr, progress on a terminal only."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, NoReturn

import click

from sitemapkit.core.diagnostics import Diagnostic, DiagnosticLog
from sitemapkit.core.errors import Terminated
from sitemapkit.core.escape import for_terminal


class DiagnosticPrinter:
    """Prints diagnostics to stderr as they come, up to `limit`; counts the rest. `quiet` (for `--json`)
    prints none but keeps them (up to `keep`) for the JSON a failing run prints (`json_failure`)."""

    def __init__(self, limit: int | None = 100, quiet: bool = False, keep: int = 10_000) -> None:
        self.limit = limit
        self.quiet = quiet
        self.printed = 0
        self.hidden = 0
        self.color = sys.stderr.isatty()
        self.log = DiagnosticLog(keep=keep if quiet else 0)

    def __call__(self, diagnostic: Diagnostic) -> None:
        self.log.add(diagnostic)
        if self.quiet or (self.limit is not None and self.printed >= self.limit):
            self.hidden += 1
            return
        self.printed += 1
        colour = "red" if diagnostic.is_error else "yellow"
        click.secho(diagnostic_line(diagnostic), fg=colour if self.color else None, err=True)

    def finish(self) -> None:
        if self.hidden and not self.quiet:
            click.echo(f"... and {self.hidden:,} more diagnostics not shown", err=True)


def safe_echo(text: str, *, err: bool = False) -> None:
    """`click.echo` of one line that holds data (a URL, a file name, a message quoting input): through
    `for_terminal`, so no control or bidi character of it reaches the terminal."""
    click.echo(for_terminal(text), err=err)


def diagnostic_line(diagnostic: Diagnostic) -> str:
    """`source:line:col: severity [code] message (url)`, safe to print: every text of it through
    `for_terminal` (a `<loc>` holding ESC, CR, LF or a bidi control shows them as `\\x1b`, `\\r`, `\\n`,
    `\\u202e`), the URL added unless the message already names it."""
    text = for_terminal(str(diagnostic))
    if diagnostic.url:
        url = for_terminal(diagnostic.url)
        if url not in text:
            text += f" ({url})"
    return text


def json_failure(printer: DiagnosticPrinter | None, message: str, **fields: Any) -> None:
    """Print on stdout the JSON summary of a run that failed: `ok: false`, the `error`, the counts and the
    diagnostics so far, and `fields` (the keys a successful run's summary has, empty), so a script that
    reads `--json` always gets a line and a reason."""
    log = printer.log if printer is not None else DiagnosticLog()
    data = {
        **fields,
        "ok": False,
        "error": message,
        "errors": log.errors,
        "warnings": log.warnings,
        "diagnostics": [d.to_dict() for d in log],
    }
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def command_name() -> str:
    """The name of the command running (`parse`, `crawl`, ...), for the lines it prints about itself."""
    ctx = click.get_current_context(silent=True)
    return (ctx.info_name if ctx is not None else None) or "sitemapkit"


def error_line(message: str) -> None:
    """Print `sitemapkit COMMAND: message` on stderr, in red on a terminal, every character of `message`
    through `for_terminal` (a path or URL holding ESC shows it as `\\x1b`). The one form every command
    says why it failed or stopped in; `fail` prints it and exits."""
    text = f"sitemapkit {command_name()}: {for_terminal(message)}"
    click.secho(text, fg="red" if sys.stderr.isatty() else None, err=True)


def fail(
    message: str,
    status: int = 1,
    *,
    printer: DiagnosticPrinter | None = None,
    json_fields: Mapping[str, Any] | None = None,
) -> NoReturn:
    """End the command: the diagnostics `printer` holds back (if any), the JSON summary of the failed run
    on stdout when `json_fields` is given (`--json`: `json_failure` with those keys), then `message` as
    `error_line` prints it, and exit with `status` (1 a failure, 2 bad input, 130/143 interrupted)."""
    if printer is not None:
        printer.finish()
    if json_fields is not None:
        json_failure(printer, message, **json_fields)
    error_line(message)
    sys.exit(status)


@contextmanager
def progress(label: str) -> Iterator[Callable[[int], None] | None]:
    """A live counter on stderr when it is a terminal; None (no output at all) when piped."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TextColumn("{task.completed:,.0f}"),  # 1,225,423 (the total is not known: no "/?")
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=None)

        def update(count: int) -> None:
            bar.update(task, completed=count)

        yield update


def plural(count: int, word: str, words: str | None = None) -> str:
    """`1 URL`, `2 URLs`, `1,000 files`: the count with thousands separators and the word it takes."""
    return f"{count:,} {word if count == 1 else (words or word + 's')}"


max_diagnostics_option = click.option(
    "--max-diagnostics",
    default=100,
    show_default=True,
    type=click.IntRange(0),
    help="Print at most this many diagnostics on stderr (all are counted).",
)
"""The `--max-diagnostics` option of the commands that print diagnostics."""


def interruption(exc: BaseException) -> tuple[str, int]:
    """How a command says it was stopped, and its exit status: Ctrl-C ("interrupted", 130) or SIGTERM
    (`Terminated`: "stopped by SIGTERM", 143)."""
    return ("stopped by SIGTERM", 143) if isinstance(exc, Terminated) else ("interrupted", 130)
