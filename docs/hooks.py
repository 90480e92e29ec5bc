"""MkDocs hooks: the tables that must not drift from the code are made from it at build time.

`<!-- generated: codes -->` becomes the table of `sitemapkit.core.diagnostics.CODES` and
`<!-- generated: audit-codes -->` that of `sitemapkit.audit.findings.AUDIT_CODES`. The hook also puts
`src/` first on `sys.path`, so mkdocs-click documents the commands of this tree, installed or not.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.hooks")
SRC = str(Path(__file__).resolve().parent.parent / "src")


def on_config(config: Any, **kwargs: Any) -> Any:
    if SRC not in sys.path:  # mkdocs restores sys.path after loading a hook, so this is done here
        sys.path.insert(0, SRC)
    return config


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def codes_table() -> str:
    from sitemapkit.core.diagnostics import CODES

    rows = ["| code | severity | what it means |", "| --- | --- | --- |"]
    rows += [f"| `{c.code}` | {c.severity.value} | {_cell(c.summary)} |" for c in CODES.values()]
    return "\n".join(rows)


def audit_codes_table() -> str:
    from sitemapkit.audit.findings import AUDIT_CODES

    rows = ["| code | severity | what it means | how to fix it |", "| --- | --- | --- | --- |"]
    rows += [
        f"| `{c.code}` | {c.severity.value} | {_cell(c.explanation)} | {_cell(c.fix)} |"
        for c in AUDIT_CODES.values()
    ]
    return "\n".join(rows)


def _help_markdown(text: str) -> str:
    """A command's docstring as Markdown: paragraphs as they are, an indented block (the `Examples:` lines)
    as a shell code block."""
    import inspect

    out: list[str] = []
    block: list[str] = []
    for line in [*inspect.cleandoc(text).split("\n"), ""]:
        if line.startswith("  ") and line.strip():
            block.append(line.strip())
            continue
        if block:
            out += ["", "```sh", *block, "```", ""]
            block = []
        out.append(line.replace("\b", "").rstrip())
    return "\n".join(out).strip()


def command_reference(name: str) -> str:
    """The reference of `sitemapkit NAME` from its click command: usage, help (with the exit statuses),
    arguments and every option with the help, default and range `--help` prints."""
    import click

    from sitemapkit.cli import main

    root = click.Context(main, info_name="sitemapkit")
    command = main.get_command(root, name)
    if command is None:
        raise ValueError(f"docs: no command {name!r}")
    ctx = click.Context(command, info_name=name, parent=root)
    usage = " ".join(["sitemapkit", name, *command.collect_usage_pieces(ctx)])
    parts = [f"```text\n{usage}\n```", _help_markdown(command.help or "")]
    arguments = [p for p in command.get_params(ctx) if isinstance(p, click.Argument)]
    if arguments:
        parts.append("| argument | |\n| --- | --- |")
        parts[-1] += "".join(
            f"\n| `{p.make_metavar(ctx)}` | {'required' if p.required else 'optional'}"
            f"{', repeatable' if p.nargs == -1 else ''} |"
            for p in arguments
        )
    rows = ["| option | what it does |", "| --- | --- |"]
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx) if isinstance(param, click.Option) else None
        if record is not None:
            rows.append(f"| `{record[0]}` | {_cell(record[1])} |")  # a | inside backticks splits no cell
    parts.append("\n".join(rows))
    return "\n\n".join(parts)


_COMMAND = re.compile(r"<!-- generated: command ([a-z]+) -->")


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    markdown = _COMMAND.sub(lambda m: command_reference(m.group(1)), markdown)
    if "<!-- generated: codes -->" in markdown:
        markdown = markdown.replace("<!-- generated: codes -->", codes_table())
    if "<!-- generated: audit-codes -->" in markdown:
        markdown = markdown.replace("<!-- generated: audit-codes -->", audit_codes_table())
    return _api(markdown)


# The API reference lists exactly `sitemapkit.__all__`, in these groups (a name in no group goes last, under
# "More"; a group name that is no longer exported fails the build).
API_GROUPS: dict[str, list[str]] = {
    "Writing sitemaps": ["generate", "SitemapWriter", "PublishResult", "SitemapFile", "build", "abuild"],
    "Crawling a site": ["crawl", "acrawl", "ScopeOptions", "PublishOptions", "CrawlProgress"],
    "Fetching politely": ["NetworkOptions", "FetchOptions", "FetchPolicy", "Politeness"],
    "Reading sitemaps": ["read", "aread", "Reader", "AsyncReader", "SitemapNode"],
    "Parsing one document": ["parse_file", "parse_bytes", "SitemapParser"],
    "Writing entries out": ["write_jsonl", "write_csv", "write_parquet"],
    "Validating": ["validate", "avalidate", "ValidationReport", "FileReport"],
    "Auditing a site": ["audit", "aaudit", "AuditReport"],
    "Harvesting many sites": ["harvest", "aharvest", "HarvestOptions", "HarvestProgress"],
    "robots.txt": ["update_robots", "update_robots_text", "RobotsResult"],
    "The model": ["UrlEntry", "IndexEntry", "Image", "Video", "News", "Alternate"],
    "Diagnostics": ["Diagnostic", "DiagnosticLog", "Severity", "CODES"],
    "Errors": [
        "SitemapkitError",
        "InputError",
        "PublishError",
        "StrictModeError",
        "UsageError",
        "InvalidUrlError",
        "InvalidDateError",
        "FetchError",
        "ConfigError",
        "IndexNowError",
    ],
    "URLs and dates": ["normalize_url", "Scope", "parse_w3c", "format_w3c"],
}


def api_reference() -> str:
    import inspect

    import sitemapkit

    exported = list(sitemapkit.__all__)
    grouped = [name for names in API_GROUPS.values() for name in names]
    stale = sorted(set(grouped) - set(exported))
    if stale:
        raise ValueError(f"docs/hooks.py API_GROUPS names what sitemapkit no longer exports: {stale}")
    groups = dict(API_GROUPS)
    rest = [name for name in exported if name not in grouped]
    if rest:
        groups["More"] = rest
    parts = []
    for title, names in groups.items():
        parts.append(f"## {title}\n")
        for name in names:
            obj = getattr(sitemapkit, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                path = f"{obj.__module__}.{obj.__qualname__}"
            else:  # a constant: the module that defines it
                path = f"sitemapkit.core.diagnostics.{name}" if name == "CODES" else f"sitemapkit.{name}"
            parts.append(f"::: {path}\n    options:\n      heading_level: 3\n")
    return "\n".join(parts)


def _api(markdown: str) -> str:
    if "<!-- generated: api-reference -->" in markdown:
        markdown = markdown.replace("<!-- generated: api-reference -->", api_reference())
    return markdown


_EXTERNAL = re.compile(
    r"<script[^>]*\ssrc=[\"']?(?:https?:)?//|<link[^>]*\shref=[\"']?(?:https?:)?//[^>]*>|"
    r"@import\s+(?:url\()?[\"']?(?:https?:)?//|url\([\"']?(?:https?:)?//",
    re.I,
)


def on_post_build(config: Any, **kwargs: Any) -> None:
    """The site must work offline: no script, style sheet or font from another host (a warning, so
    `mkdocs build --strict` fails). Plain links to other sites are fine."""
    site = Path(config["site_dir"])
    for path in sorted([*site.rglob("*.html"), *site.rglob("*.css")]):
        for match in _EXTERNAL.finditer(path.read_text("utf-8", "replace")):
            tag = match.group(0)
            if tag.lower().startswith("<link") and not re.search(r"rel=[\"']?(stylesheet|preload|icon)", tag):
                continue
            log.warning("%s loads something from another host: %s", path.relative_to(site), tag[:120])
