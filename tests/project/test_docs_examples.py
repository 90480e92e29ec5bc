"""The documentation's shell examples hold: each `sitemapkit` command line of docs/ and the README is parsed
by the real command (an option that no longer exists, a choice it no longer takes, a value it refuses fails),
and the blocks marked `<!-- docs-test: run -->` run, in order, in a scratch folder and must succeed.

A block marked `<!-- docs-test: skip (reason) -->` is neither (it installs packages or writes to your home
folder). The docs' Python blocks run in tests/project/test_readme.py, beside the README's. Most shell
examples need a live site or your own files, so they are parsed, not run; the getting-started page's are
run whole.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from sitemapkit.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SHELL = ("sh", "console", "bash", "shell")
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
MARK = re.compile(r"<!-- docs-test: (run|skip)\b[^>]*-->\s*\n$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    lang: str
    mark: str | None  # "run", "skip" or None
    code: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    text = path.read_text("utf-8")
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()]
        mark = MARK.search(before[-200:])
        found.append(
            Block(
                path, before.count("\n") + 1, match.group(1), mark.group(1) if mark else None, match.group(2)
            )
        )
    return found


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


ALL = [b for path in markdown_files() for b in blocks(path)]
SHELL_BLOCKS = [b for b in ALL if b.lang in SHELL and b.mark != "skip"]
RUN_PAGES = sorted({b.path for b in ALL if b.mark == "run"})


def command_lines(block: Block) -> list[list[str]]:
    """Each `sitemapkit ...` invocation of a shell block, as arguments (pipes, redirections and comments
    cut off; a console block's commands are its `$ ` lines)."""
    text = block.code
    if block.lang == "console":
        text = "\n".join(line[2:] for line in text.splitlines() if line.startswith("$ "))
    text = text.replace("\\\n", " ")
    found = []
    for line in text.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.commenters = "#"
        lexer.whitespace_split = True
        try:
            tokens = list(lexer)
        except ValueError:  # an unclosed quote belongs to another program's argument (duckdb -c "...)
            continue
        current: list[str] | None = None
        for token in [*tokens, ";"]:
            if current is not None and token in {"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", ")"}:
                found.append(current)
                current = None
            elif current is not None:
                current.append(token)
            elif token == "sitemapkit":
                current = []
    return found


def check_command(args: list[str]) -> None:
    """Parse `args` as the real command does; convert every value whose type needs no file."""
    if not args or args[0].startswith("-"):  # `sitemapkit --version`, `sitemapkit --help`
        assert set(args) <= {"--version", "--help", "-h"}, args
        return
    root = click.Context(main, info_name="sitemapkit")
    command = main.get_command(root, args[0])
    assert command is not None, f"no command {args[0]!r}"
    ctx = click.Context(command, info_name=args[0], parent=root)
    values, rest, _ = command.make_parser(ctx).parse_args(list(args[1:]))
    assert rest == [], f"unexpected arguments {rest}"
    for param in command.get_params(ctx):
        value = values.get(param.name) if param.name else None
        if not isinstance(param, click.Option) or not isinstance(value, str | tuple | bool | int | float):
            continue  # not given (click's UNSET), or an argument (files, URLs)
        if isinstance(param.type, click.Path | click.File):
            continue
        param.type_cast_value(ctx, value)


@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=[b.id for b in SHELL_BLOCKS])
def test_every_sitemapkit_command_line_parses(block: Block) -> None:
    for args in command_lines(block):
        try:
            check_command(args)
        except click.ClickException as exc:
            pytest.fail(f"{block.id}: sitemapkit {shlex.join(args)}: {exc.format_message()}")


def test_the_shell_examples_are_found() -> None:
    """The extraction finds the commands (a regex that matched nothing would pass every block)."""
    lines = [args for b in SHELL_BLOCKS for args in command_lines(b)]
    assert len(lines) > 60
    assert {args[0] for args in lines if args} >= {
        "generate", "build", "crawl", "parse", "validate", "audit", "harvest", "robots", "indexnow", "diff"
    }  # fmt: skip
    # and a wrong option is caught, in the neighbour shapes: a continuation line, a console block
    fake = Block(ROOT, 0, "sh", None, "sitemapkit generate a.txt \\\n    --base-url https://e.com/ --gzipp\n")
    with pytest.raises(click.NoSuchOption):
        for args in command_lines(fake):
            check_command(args)
    fake = Block(ROOT, 0, "console", None, "$ sitemapkit parse x --format yaml\nerror: ...\n")
    with pytest.raises(click.BadParameter):
        for args in command_lines(fake):
            check_command(args)


@pytest.mark.parametrize("page", RUN_PAGES, ids=[str(p.relative_to(ROOT)) for p in RUN_PAGES])
def test_runnable_blocks_run(page: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for block in (b for b in blocks(page) if b.mark == "run"):
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block.code],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"{block.id} failed:\n{done.stdout}\n{done.stderr}"


def test_every_python_and_shell_block_is_accounted_for() -> None:
    """Every python block runs (test_readme.py) unless marked skip, every shell block is parsed or run;
    a block marked `run` must be a shell block (a python block always runs)."""
    for block in ALL:
        if block.mark == "run":
            assert block.lang in SHELL, block.id
    assert any(b.mark == "run" for b in ALL)
