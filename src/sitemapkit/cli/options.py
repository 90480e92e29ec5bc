"""The options several commands share, declared once: each with one flag, one default, one type and one
help text wherever it appears (tests/cli/test_cli_options.py walks every command to hold this).

The option groups of the Python API (`sitemapkit.NetworkOptions`, `ScopeOptions`, `PublishOptions`) are
option groups here too: `network_group`, `scope_group` and `publish_group` each add the options of one
group, with the group's own defaults, and pass the command one object (`network`, `scope`, `publish`),
the object the Python API takes; a value the object refuses is a usage error (exit 2).

`network_options` is the group of the commands that fetch through the reader (parse, validate, harvest):
`--timeout`, `--retries`, `--user-agent`, `--allow-private`, the same declarations as `network_group`'s.
`connect_timeout` turns `--timeout` into the connect timeout of the fetch layer, as the crawl engine does.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar, cast

import click

from sitemapkit.core.constants import MAX_BYTES, MAX_URLS
from sitemapkit.core.errors import UsageError
from sitemapkit.core.escape import for_terminal
from sitemapkit.crawl.options import MAX_CONNECT_TIMEOUT, NetworkOptions, PublishOptions, ScopeOptions

F = TypeVar("F", bound=Callable[..., object])
Decorator = Callable[[F], F]


def default_of(kind: type[Any], name: str) -> Any:
    """The default of the field `name` of the option group `kind`: the one default of its option."""
    for f in dataclasses.fields(kind):
        if f.name == name:
            return f.default
    raise KeyError(name)


DEFAULT_TIMEOUT: Final[float] = default_of(NetworkOptions, "timeout")
"""`--timeout`: seconds to wait for an answer and between two pieces of it (the read timeout)."""
DEFAULT_RETRIES: Final[int] = default_of(NetworkOptions, "retries")
"""`--retries`: further attempts of a request answered 429 or 5xx, or that got no answer."""
USER_AGENT: Final[str] = default_of(NetworkOptions, "user_agent")

timeout_option = click.option(
    "--timeout",
    metavar="S",
    default=DEFAULT_TIMEOUT,
    show_default=True,
    type=click.FloatRange(0, min_open=True),
    help=f"Seconds to wait for an answer, and between two pieces of it; connecting waits at most "
    f"{MAX_CONNECT_TIMEOUT:g} of them.",
)
retries_option = click.option(
    "--retries",
    metavar="N",
    default=DEFAULT_RETRIES,
    show_default=True,
    type=click.IntRange(0, 10),
    help="Further attempts of a request answered 429 or 5xx, or that got no answer (Retry-After is "
    "honoured).",
)
user_agent_option = click.option(
    "--user-agent",
    metavar="UA",
    default=USER_AGENT,
    show_default=True,
    help="User-Agent header to send; its first word is the name robots.txt rules are matched against.",
)
rate_option = click.option(
    "--rate",
    metavar="R",
    default=default_of(NetworkOptions, "rate"),
    type=click.FloatRange(0, min_open=True),
    help="At most R requests a second to one host (a longer robots.txt Crawl-delay wins).",
)
allow_private_option = click.option(
    "--allow-private",
    is_flag=True,
    help="Also fetch from loopback, private and link-local addresses (by default refused, except at the "
    "address of a URL given as an argument).",
)


PER_HOST_HELP: Final = "Requests in flight to one host, at most."


def network_options(*, rate: bool = False) -> Callable[[F], F]:
    """The options of a command that fetches: `--timeout`, `--retries`, `--user-agent`, `--allow-private`,
    and `--rate` with `rate` (the commands that pace their requests: crawl, audit)."""
    group = [timeout_option, retries_option, user_agent_option, *([rate_option] if rate else [])]
    group.append(allow_private_option)
    return _stacked(group)


def _stacked(options: Sequence[Decorator[F]]) -> Decorator[F]:
    def apply(f: F) -> F:
        for option in reversed(options):  # the first one listed first in --help
            f = option(f)
        return f

    return apply


def connect_timeout(timeout: float) -> float:
    """The connect timeout that `--timeout` implies: at most `MAX_CONNECT_TIMEOUT`."""
    return min(timeout, MAX_CONNECT_TIMEOUT)


def per_host_option(default: int, flag: str = "--concurrency") -> Callable[[F], F]:
    """`--concurrency` (parse) or `--per-host` (harvest, whose `--concurrency` counts sites): requests in
    flight to one host, with the help text and type of `network_group`'s `--concurrency` (crawl, audit);
    the default is the command's API's own (parse: `read()`'s, as it reads a few large files and fetches
    ahead; a harvest reads thousands of sites, one request to each host at a time)."""
    return click.option(
        flag,
        metavar="N",
        default=default,
        show_default=True,
        type=click.IntRange(1, 64),
        help=PER_HOST_HELP,
    )


# -- the option groups of the Python API ------------------------------------------------------------------


def option_group(kind: type[Any], param: str, options: Sequence[Decorator[F]]) -> Decorator[F]:
    """The `options` (each named as a field of `kind`) as one parameter `param` of the command: the `kind`
    made of their values. A value `kind` refuses (`UsageError`) is a usage error of the command."""
    names = [f.name for f in dataclasses.fields(kind)]

    def apply(f: F) -> F:
        @functools.wraps(f)
        def command(*args: Any, **kwargs: Any) -> Any:
            values = {name: kwargs.pop(name) for name in names if name in kwargs}
            try:
                kwargs[param] = kind(**values)
            except UsageError as exc:
                raise click.UsageError(for_terminal(str(exc))) from None
            return f(*args, **kwargs)

        return _stacked(options)(cast(F, command))

    return apply


allow_host_option = click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="HOST",
    help="Also accept URLs on HOST as the site's own (cross-submission through robots.txt); a crawl also "
    "fetches its pages. Repeatable.",
)
include_option = click.option(
    "--include",
    multiple=True,
    metavar="PATTERN",
    help="Only crawl paths matching one of these (a glob from '/', or 're:' and a regular expression). "
    "Repeatable.",
)
exclude_option = click.option(
    "--exclude",
    multiple=True,
    metavar="PATTERN",
    help="Leave out URLs whose path (and ?query) matches: a glob from '/' ('/drafts/*', '*.pdf'; '*' "
    "crosses '/') or 're:' and a regular expression. Repeatable.",
)
max_pages_option = click.option(
    "--max-pages",
    metavar="N",
    default=default_of(ScopeOptions, "max_pages"),
    show_default=True,
    type=click.IntRange(0),
    help="Fetch at most this many pages (a bound on any trap the guards miss); 0: no limit.",
)
max_depth_option = click.option(
    "--max-depth",
    metavar="N",
    default=default_of(ScopeOptions, "max_depth"),
    type=click.IntRange(0),
    help="Follow at most this many links from a seed.",
)
strip_query_option = click.option(
    "--strip-query",
    is_flag=True,
    help="Drop query strings (but the --keep-query parameters; tracking parameters are always dropped).",
)
scope_options = [
    allow_host_option,
    include_option,
    exclude_option,
    max_pages_option,
    max_depth_option,
    strip_query_option,
    click.option(
        "--keep-query", multiple=True, metavar="NAME", help="Keep only these query parameters. Repeatable."
    ),
    click.option(
        "--trap-limit",
        metavar="N",
        default=default_of(ScopeOptions, "trap_limit"),
        show_default=True,
        type=click.IntRange(1),
        help="Stop after this many links in a row between URLs of one pattern (a calendar).",
    ),
    click.option(
        "--no-sitemaps",
        "sitemaps",
        flag_value=False,
        default=True,
        help="Do not seed the crawl with the site's existing sitemaps.",
    ),
]
scope_group = option_group(ScopeOptions, "scope", scope_options)
"""`ScopeOptions` as `scope`: --allow-host, --include, --exclude, --max-pages, --max-depth, --strip-query,
--keep-query, --trap-limit, --no-sitemaps (crawl)."""

concurrency_option = click.option(
    "--concurrency",
    metavar="N",
    default=default_of(NetworkOptions, "concurrency"),
    show_default=True,
    type=click.IntRange(1, 64),
    help=PER_HOST_HELP,
)
network_group = option_group(
    NetworkOptions,
    "network",
    [
        concurrency_option,
        timeout_option,
        retries_option,
        user_agent_option,
        rate_option,
        allow_private_option,
    ],
)
"""`NetworkOptions` as `network`: --concurrency, --timeout, --retries, --user-agent, --rate,
--allow-private (crawl, audit)."""

strict_option = click.option("--strict", is_flag=True, help="Any problem means exit 1 and nothing published.")
replace_existing_option = click.option(
    "--replace-existing",
    is_flag=True,
    help="Take over sitemap files of the same names that another tool (sitemap_gen.py...) wrote (by "
    "default, publishing over them is refused).",
)
state_option = click.option(
    "--state",
    type=click.Path(dir_okay=False),
    help="SQLite state store for honest lastmod, removals and `sitemapkit diff` (e.g. .sitemapkit/state.db).",
)
publish_group = option_group(
    PublishOptions,
    "publish",
    [
        click.option("--gzip", is_flag=True, help="Write .xml.gz files."),
        click.option(
            "--gzip-level",
            metavar="N",
            default=default_of(PublishOptions, "gzip_level"),
            show_default=True,
            type=click.IntRange(0, 9),
            help="gzip level.",
        ),
        click.option(
            "--max-urls",
            metavar="N",
            default=default_of(PublishOptions, "max_urls"),
            show_default=True,
            type=click.IntRange(1, MAX_URLS),
            help="URLs per sitemap file, at most.",
        ),
        click.option(
            "--max-bytes",
            metavar="N",
            default=default_of(PublishOptions, "max_bytes"),
            show_default=True,
            type=click.IntRange(1, MAX_BYTES),
            help="Uncompressed size limit per file, header and footer included.",
        ),
        click.option(
            "--index",
            type=click.Choice(["auto", "always", "never"]),
            default=default_of(PublishOptions, "index"),
            show_default=True,
            help="Write a sitemap index: when there are several files, always, or never.",
        ),
        click.option(
            "--name",
            default=default_of(PublishOptions, "name"),
            show_default=True,
            help="File name prefix (sitemap.xml, sitemap-1.xml, ...).",
        ),
        click.option(
            "--xsl",
            default=default_of(PublishOptions, "xsl"),
            metavar="URL|default",
            help="Add an XSL stylesheet reference; 'default' writes a bundled one next to the sitemaps.",
        ),
        click.option(
            "--hreflang",
            type=click.Choice(["auto", "complete", "keep"]),
            default=default_of(PublishOptions, "hreflang"),
            show_default=True,
            help="Complete hreflang groups (every member lists every member), or keep alternates as given; "
            "auto completes them when a source can carry alternates.",
        ),
        click.option(
            "--robots",
            metavar="PATH",
            type=click.Path(dir_okay=False),
            help="After publishing, list the sitemap (index) in this robots.txt (created if missing).",
        ),
        state_option,
        replace_existing_option,
        strict_option,
    ],
)
"""`PublishOptions` as `publish`: --gzip, --gzip-level, --max-urls, --max-bytes, --index, --name, --xsl,
--hreflang, --robots, --state, --replace-existing, --strict (crawl, generate; build has --strict and
--replace-existing, which override its file)."""

json_summary_option = click.option(
    "--json", "as_json", is_flag=True, help="Print a machine-readable summary on stdout."
)
"""`--json` of the commands that publish (crawl, generate, build): the summary as JSON on stdout."""

out_dir_option = click.option(
    "--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Output folder."
)
"""`--out` of the commands that publish sitemaps (crawl, generate): the folder they are published in."""

max_duration_option = click.option(
    "--max-duration",
    metavar="S",
    default=600.0,
    show_default=True,
    type=click.FloatRange(0, min_open=True),
    help="Most seconds one request may take in all: connect, headers, redirects, retries and body.",
)
workers_option = click.option(
    "--workers",
    type=click.IntRange(1),
    default=None,
    help="Processes working on the other cores: harvest's site readers (local) or Ray actors, parse's "
    "sitemap parsers; 1: none, this process does it all [default: one per core this process may use "
    "(parse: up to 4), or per CPU of the Ray cluster].",
)
follow_cross_host_option = click.option(
    "--follow-cross-host",
    is_flag=True,
    help="Follow index children and redirects that leave the site of SOURCE (or of its index).",
)
fetch_missing_option = click.option(
    "--fetch-missing",
    is_flag=True,
    help="With a local sitemap index: fetch the children not found next to it (by default only local files "
    "are read, each child looked for by its URL path in the index's folder, and a missing one reported).",
)
"""`--max-duration`, `--follow-cross-host`, `--fetch-missing`: the reader's options of parse and validate."""

format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format.",
)
"""`--format text|json` of the commands that print a report (validate, diff); parse's `--format` is the
format of the file it writes."""
