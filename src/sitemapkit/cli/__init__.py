"""The `sitemapkit` command: a thin layer over the public API. Subcommands load lazily."""

from __future__ import annotations

import importlib
import signal
import threading
from typing import Any

import click

# name -> "module:attribute" of a click.Command; imported only when that command runs.
COMMANDS: dict[str, str] = {
    "build": "sitemapkit.cli.build:build",
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
        module, attr = target.split(":")
        command: Any = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command)
        return command


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
    raise SystemExit(128 + signum)
