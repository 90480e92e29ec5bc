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

from sitemapkit import NetworkOptions, PublishOptions, ScopeOptions
from sitemapkit.cli import COMMANDS, main
from sitemapkit.cli.options import (
    allow_host_option,
    fetch_missing_option,
    follow_cross_host_option,
    format_option,
    json_summary_option,
    max_depth_option,
    max_duration_option,
    max_pages_option,
    network_group,
    out_dir_option,
    publish_group,
    scope_group,
)
from sitemapkit.core.constants import USER_AGENT
from sitemapkit.crawl.options import merged
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


GROUPS = {"network": network_group, "scope": scope_group, "publish": publish_group}
KINDS = {"network": NetworkOptions, "scope": ScopeOptions, "publish": PublishOptions}
OTHER_SHARED = (
    allow_host_option,
    max_pages_option,
    max_depth_option,
    json_summary_option,
    out_dir_option,
    format_option,
    max_duration_option,
    follow_cross_host_option,
    fetch_missing_option,
)
"""Declarations outside the groups that several commands share."""

DIFFERENT_MEANING: dict[str, dict[str, str]] = {
    "--concurrency": {
        "harvest": "sites read at once (its --per-host is the requests to one host)",
        "parse": "requests to one host, but read()'s own default (4): parse reads a few large files ahead",
    },
    "--max-depth": {"parse": "index nesting, not links", "harvest": "index nesting, not links"},
    "--max-urls": {"audit": "listed URLs checked, not URLs per sitemap file"},
    "--include": {"generate": "with --dir: files besides the HTML pages to list"},
    "--strip-query": {"generate": "with --log: the access log's query strings"},
    "--state": {
        "diff": "the store to read, so it has a default (.sitemapkit/state.db)",
        "indexnow": "the store to read, so it has a default (.sitemapkit/state.db)",
    },
    "--json": {"audit": "a file to write the report to"},
    "--out": {
        "harvest": "the dataset folder",
        "indexnow": "the folder to write the key file in",
    },
    "--name": {"robots": "the set whose robots.txt block to manage (the same default set)"},
    "--robots": {"robots": "the file the command edits, so required"},
    "--format": {"parse": "the output file's format, by default from its extension"},
}
"""A flag that means something else in a command than in the others: there its declaration (and, for
most, its default) is its own. Every other flag has one default across commands, and a flag of a shared
group one declaration."""


def _declarations(decorator: Any) -> dict[str, dict[str, Any]]:
    @click.command()
    @decorator
    def probe(**kwargs: Any) -> None: ...

    return {p.opts[0]: declaration(p) for p in probe.params if isinstance(p, click.Option)}


def _shared_declarations() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for decorator in [*GROUPS.values(), *OTHER_SHARED]:
        found.update(_declarations(decorator))
    return found


def test_a_group_option_has_one_declaration_wherever_it_appears() -> None:
    shared = _shared_declarations()
    assert {"--rate", "--allow-host", "--include", "--gzip", "--state", "--strict", "--no-sitemaps"} <= set(
        shared
    )
    seen: dict[str, list[str]] = {}
    for name, command in commands().items():
        for param in command.params:
            flag = param.opts[0]
            if not isinstance(param, click.Option) or flag not in shared:
                continue
            if name in DIFFERENT_MEANING.get(flag, {}):
                continue
            assert declaration(param) == shared[flag], (name, flag)
            seen.setdefault(flag, []).append(name)
    assert sorted(seen["--gzip"]) == ["crawl", "generate"]
    assert sorted(seen["--allow-host"]) == ["audit", "crawl", "generate", "validate"]
    assert sorted(seen["--strict"]) == ["build", "crawl", "generate"]
    assert sorted(seen["--rate"]) == ["audit", "crawl"]
    assert sorted(seen["--fetch-missing"]) == sorted(seen["--max-duration"]) == ["parse", "validate"]
    assert sorted(seen["--format"]) == ["diff", "validate"]


def test_one_default_per_option_across_commands() -> None:
    """Every flag: one default wherever it appears, but where it means something else (listed above,
    with the reason)."""
    defaults: dict[str, dict[str, Any]] = {}
    for name, command in commands().items():
        for param in command.params:
            if isinstance(param, click.Option):
                for flag in param.opts:
                    if name not in DIFFERENT_MEANING.get(flag, {}):
                        defaults.setdefault(flag, {})[name] = repr(param.default)
    several = {flag: by for flag, by in defaults.items() if len(set(by.values())) > 1}
    assert several == {}
    for flag, where in DIFFERENT_MEANING.items():  # no stale exception
        for name in where:
            assert option(commands()[name], flag) is not None, (flag, name)


class Captured(Exception):
    """Raised by the stand-in of the Python API a command calls, with what it was called with."""

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        super().__init__("captured")
        self.args_, self.kwargs = args, kwargs


def _capture(monkeypatch: pytest.MonkeyPatch, target: str, *, is_async: bool) -> list[Captured]:
    calls: list[Captured] = []

    def record(*args: Any, **kwargs: Any) -> Any:
        calls.append(Captured(args, kwargs))
        raise KeyboardInterrupt  # every command ends on it the same way: exit 130

    async def arecord(*args: Any, **kwargs: Any) -> Any:
        return record(*args, **kwargs)

    monkeypatch.setattr(target, arecord if is_async else record)
    return calls


CRAWL_ARGS = [
    *("--concurrency", "3", "--rate", "2.5", "--timeout", "5", "--retries", "0"),
    *("--user-agent", "probe/1", "--allow-private"),
    *("--allow-host", "b.example", "--include", "/a/*", "--exclude", "/a/x", "--max-pages", "0"),
    *("--max-depth", "2", "--strip-query", "--keep-query", "id", "--trap-limit", "7", "--no-sitemaps"),
    *("--gzip", "--gzip-level", "9", "--max-urls", "10", "--max-bytes", "100000", "--index", "always"),
    *("--name", "pages.xml", "--xsl", "default", "--hreflang", "keep", "--robots", "robots.txt"),
    *("--state", "s.db", "--replace-existing", "--strict"),
]
CRAWL_KWARGS: dict[str, Any] = {
    "concurrency": 3,
    "rate": 2.5,
    "timeout": 5.0,
    "retries": 0,
    "user_agent": "probe/1",
    "allow_private": True,
    "allow_hosts": ["b.example"],
    "include": ["/a/*"],
    "exclude": ["/a/x"],
    "max_pages": 0,
    "max_depth": 2,
    "strip_query": True,
    "keep_query": ["id"],
    "trap_limit": 7,
    "sitemaps": False,
    "gzip": True,
    "gzip_level": 9,
    "max_urls": 10,
    "max_bytes": 100_000,
    "index": "always",
    "name": "pages.xml",
    "xsl": "default",
    "hreflang": "keep",
    "robots": "robots.txt",
    "state": "s.db",
    "replace_existing": True,
    "strict": True,
}
"""The Python API's keywords for CRAWL_ARGS."""


def _groups_of(kwargs: dict[str, Any], *names: str) -> dict[str, Any]:
    """The option objects the Python API makes of these keywords (`crawl(url, out, **kwargs)`)."""
    rest = dict(kwargs)
    made = {name: merged(None, KINDS[name], rest) for name in names}
    return made


@pytest.mark.parametrize("given", [False, True])
def test_crawl_builds_the_objects_the_python_api_gets(monkeypatch: pytest.MonkeyPatch, given: bool) -> None:
    calls = _capture(monkeypatch, "sitemapkit.cli.crawl.acrawl", is_async=True)
    args = ["crawl", "https://example.com/", "--out", "public", *(CRAWL_ARGS if given else [])]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 130 and len(calls) == 1, result.output
    got = {name: calls[0].kwargs[name] for name in GROUPS}
    want = _groups_of(CRAWL_KWARGS if given else {}, *GROUPS)
    assert got == want
    if not given:
        assert want == {"network": NetworkOptions(), "scope": ScopeOptions(), "publish": PublishOptions()}


@pytest.mark.parametrize("given", [False, True])
def test_audit_builds_the_network_object_the_python_api_gets(
    monkeypatch: pytest.MonkeyPatch, given: bool
) -> None:
    calls = _capture(monkeypatch, "sitemapkit.cli.audit.aaudit", is_async=True)
    network = CRAWL_ARGS[: CRAWL_ARGS.index("--allow-host")] if given else []
    result = CliRunner().invoke(
        main, ["audit", "https://example.com/", *network, "--allow-host", "b.example"]
    )
    assert result.exit_code == 130 and len(calls) == 1, result.output
    kwargs = calls[0].kwargs
    assert kwargs["network"] == _groups_of(CRAWL_KWARGS if given else {}, "network")["network"]
    assert kwargs["allow_hosts"] == ("b.example",) and kwargs["max_pages"] == ScopeOptions().max_pages


def test_generate_publishes_as_the_python_api_would(monkeypatch: pytest.MonkeyPatch) -> None:
    """generate's publish group is the `PublishOptions` crawl takes: the same keywords reach `generate`."""
    calls = _capture(monkeypatch, "sitemapkit.cli.generate.run_generate", is_async=False)
    publish = CRAWL_ARGS[CRAWL_ARGS.index("--gzip") :]
    args = ["generate", "urls.txt", "--base-url", "https://example.com/", "--out", "public", *publish]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 130 and len(calls) == 1, result.output
    expected = _groups_of(CRAWL_KWARGS, "publish")["publish"].generate_kwargs()
    assert {k: calls[0].kwargs[k] for k in expected} == expected
    assert calls[0].kwargs["name"] == "pages"  # --name pages.xml: the prefix


def test_a_value_the_group_refuses_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["crawl", "https://example.com/", "--out", "o", "--name", "a/b"])
    assert result.exit_code == 2 and "name must be a file name prefix" in result.stderr


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
