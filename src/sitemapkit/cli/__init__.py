"""The `sitemapkit` command: a thin layer over the public API. Subcommands load lazily."""

from __future__ import annotations

import importlib
import signal
import threading
from typing import Any

import click

from sitemapkit.cli._output import interruption
from sitemapkit.core.errors import InterruptedAfterPublish, Terminated, published_count

# name -> "module:attribute" of a click.Command; imported only when that command runs.
COMMANDS: dict[str, str] = {
    "audit": "sitemapkit.cli.audit:audit",
    "build": "sitemapkit.cli.build:build",
    "crawl": "sitemapkit.cli.crawl:crawl",
    "diff": "sitemapkit.cli.diff:diff",
    "generate": "sitemapkit.cli.generate:generate",
    "harvest": "sitemapkit.cli.harvest:harvest",
    "indexnow": "sitemapkit.cli.indexnow:indexnow",
    "parse": "sitemapkit.cli.parse:parse",
    "robots": "sitemapkit.cli.robots:robots",
    "validate": "sitemapkit.cli.validate:validate",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        ctx.meta["sitemapkit.command"] = cmd_name  # for an interrupt that comes while it is imported
        module, attr = target.split(":")
        command: Any = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand; Ctrl-C ends every command the same way: one line, exit 130 (128 + SIGINT),
        not click's `Aborted!` and 1, so a script tells an interrupt from a failure."""
        published = published_count()
        try:
            return super().invoke(ctx)
        except (KeyboardInterrupt, Terminated) as exc:
            name = (
                ctx.invoked_subcommand or ctx.meta.get("sitemapkit.command") or ctx.info_name or "sitemapkit"
            )
            done = "; nothing was published" if name in _PUBLISHING else ""
            if isinstance(exc, InterruptedAfterPublish):
                done = "; it came while the finished sitemaps were being put in place, so they were published"
            elif published_count() > published:
                done = "; it came after the new files were published, which stand"
            how, status = interruption(exc)
            click.echo(f"sitemapkit {name}: {how}{done}", err=True)
            raise click.exceptions.Exit(status) from None


_PUBLISHING = frozenset({"build", "generate", "robots"})
"""Commands that publish files all at once at the end (an interrupt leaves the output as it was)."""


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="sitemapkit")
def main() -> None:
    """sitemapkit: generate, read, validate and publish XML sitemaps.

    Run `sitemapkit COMMAND --help` for each command's options and an example.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM (a CI timeout, `kill`, a container stop) unwinds like Ctrl-C: temporary files are removed
    and nothing half-written is published."""
    raise Terminated(128 + signum)
