"""The options the commands share are declared once (`sitemapkit.cli.options`): wherever one appears, it has
the same default, type, metavar and help text; and every command says why it failed through the one
printer (`sitemapkit.cli._output.fail`): one line `sitemapkit COMMAND: message`, escaped, no traceback."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from sitemapkit.cli import COMMANDS, main
from sitemapkit.core.constants import USER_AGENT
from tests.support.localserver import LocalServer

SHARED = ("--timeout", "--retries", "--user-agent", "--rate", "--allow-private", "--max-diagnostics")
"""Options that mean the same in every command that has them, so have one declaration."""

NETWORK = ("--timeout", "--retries", "--user-agent", "--allow-private")
FETCHING = ("parse", "validate", "crawl", "audit", "harvest")
"""The commands that fetch with the whole network group (indexnow has --timeout and --user-agent, and its
own --max-retries; robots, generate, build and diff fetch nothing)."""


def commands() -> dict[str, click.Command]:
    ctx = click.Context(main)
    found = {name: main.get_command(ctx, name) for name in main.list_commands(ctx)}
    assert sorted(found) == sorted(COMMANDS)
    return {name: command for name, command in found.items() if command is not None}


def option(command: click.Command, flag: str) -> click.Option | None:
    for param in command.params:
        if isinstance(param, click.Option) and flag in param.opts:
            return param
    return None


def declaration(param: click.Option) -> dict[str, Any]:
    """What a user sees of an option and what the command gets from it."""
    return {
        "opts": param.opts,
        "default": param.default,
        "type": param.type.to_info_dict(),
        "metavar": param.metavar,
        "help": param.help,
        "is_flag": param.is_flag,
        "show_default": param.show_default,
        "multiple": param.multiple,
    }


@pytest.mark.parametrize("flag", SHARED)
def test_a_shared_option_is_the_same_wherever_it_appears(flag: str) -> None:
    seen = {name: option(command, flag) for name, command in commands().items()}
    declared = {name: declaration(param) for name, param in seen.items() if param is not None}
    assert len(declared) >= 2, declared
    first = next(iter(declared.values()))
    different = {name: d for name, d in declared.items() if d != first}
    assert not different, (flag, first, different)


def test_the_network_defaults() -> None:
    """One default each: --timeout 30 (connecting: at most 10), --retries 2, our User-Agent, no --rate."""
    found = commands()
    for name in FETCHING:
        for flag in NETWORK:
            assert option(found[name], flag) is not None, (name, flag)
    for name in ("indexnow",):
        for flag in ("--timeout", "--user-agent"):
            assert option(found[name], flag) is not None, (name, flag)
    for name in ("crawl", "audit"):
        assert option(found[name], "--rate") is not None, name
    with found["parse"].make_context("parse", ["sitemap.xml"]) as ctx:
        given = {k: ctx.params[k] for k in ("timeout", "retries", "user_agent", "allow_private")}
    assert given == {"timeout": 30.0, "retries": 2, "user_agent": USER_AGENT, "allow_private": False}


def test_requests_per_host_has_one_help_and_type() -> None:
    """--concurrency is requests in flight to one host in parse, crawl and audit, as --per-host is in
    harvest (whose --concurrency counts sites, and says so)."""
    found = commands()
    per_host = [option(found[n], "--concurrency") for n in ("parse", "crawl", "audit")]
    per_host.append(option(found["harvest"], "--per-host"))
    shapes = {(p.help, p.metavar, str(p.type.to_info_dict())) for p in per_host if p is not None}
    assert len(per_host) == 4 and len(shapes) == 1, shapes
    assert next(iter(shapes))[0] == "Requests in flight to one host, at most."
    sites = option(found["harvest"], "--concurrency")
    assert sites is not None and sites.metavar == "SITES" and "--per-host" in (sites.help or "")


@pytest.fixture
def paths(tmp_path: Path) -> tuple[str, str]:
    """A folder and a missing folder whose names hold ESC (and a colour code after it)."""
    there = tmp_path / "bad\x1b[31m"
    there.mkdir()
    return str(there), str(tmp_path / "gone\x1b[31m")


def failure_cases(there: str, gone: str, tmp: str) -> dict[str, list[str]]:
    return {
        "parse": ["parse", os.path.join(gone, "sitemap.xml")],
        "validate": ["validate", os.path.join(gone, "sitemap.xml")],
        "audit": ["audit", "http://127.0.0.1:9/", "--baseline", os.path.join(gone, "b.json")],
        "harvest": ["harvest", os.path.join(gone, "sites.txt"), "--out", os.path.join(tmp, "ds")],
        "generate": [
            "generate",
            os.path.join(gone, "urls.txt"),
            "--base-url",
            "https://example.com/",
            "--out",
            os.path.join(tmp, "out"),
        ],
        "build": ["build", os.path.join(gone, "sitemapkit.toml")],
        "robots": ["robots", "--robots", there, "--sitemap", "https://example.com/sitemap.xml"],
        "diff": ["diff", "--state", os.path.join(gone, "state.db")],
        "indexnow": [
            "indexnow",
            "--urls",
            os.path.join(gone, "urls.txt"),
            "--key",
            "a" * 32,
            "--host",
            "example.com",
            "--dry-run",
        ],
    }


def check_failure(name: str, result: Any, lines: int | None = 1) -> str:
    """The failure is `sitemapkit NAME: ...` on the last line of stderr, ESC shown as `\\x1b`."""
    assert result.exit_code in (1, 2), (name, result.exit_code, result.stderr)
    assert isinstance(result.exception, SystemExit), (name, result.exception)
    err = result.stderr
    assert "Traceback" not in err and "\x1b" not in err, (name, err)
    said = err.splitlines()
    if lines is not None:
        assert len(said) == lines, (name, err)
    assert said[-1].startswith(f"sitemapkit {name}: "), (name, err)
    assert "\\x1b[31m" in said[-1], (name, err)
    assert not any(line.lower().startswith("error:") for line in said), (name, err)
    return said[-1]


def test_every_command_fails_through_the_one_printer(paths: tuple[str, str], tmp_path: Path) -> None:
    there, gone = paths
    cases = failure_cases(there, gone, str(tmp_path))
    assert sorted([*cases, "crawl"]) == sorted(COMMANDS)  # a new command gets a case here
    for name, args in cases.items():
        check_failure(name, CliRunner().invoke(main, args))


def test_crawl_fails_through_the_one_printer(server: LocalServer, paths: tuple[str, str]) -> None:
    """crawl, which checks its paths once the crawl is done: --out under a file cannot be made."""
    there, _ = paths
    server.route("/", "<html><body>hello</body></html>", content_type="text/html; charset=utf-8")
    blocker = Path(there) / "file"
    blocker.write_text("")
    args = ["crawl", server.url("/"), "--out", str(blocker / "out"), "--no-sitemaps", "--allow-private"]
    result = CliRunner().invoke(main, args)
    check_failure("crawl", result, lines=None)
    as_json = CliRunner().invoke(main, [*args, "--json"])
    line = check_failure("crawl", as_json, lines=None)
    assert '"ok": false' in as_json.stdout and line.startswith("sitemapkit crawl: ")
