"""The options several commands share, declared once: each with one flag, one default, one type and one
help text wherever it appears (tests/cli/test_cli_options.py walks every command to hold this).

`network_options` is the group of every command that fetches: `--timeout`, `--retries`, `--user-agent`,
`--allow-private`, and `--rate` for the commands that pace their requests. The values reach the Python API
under each command's own parameter names (`timeout`, `retries`, `user_agent`, `rate`, `allow_private`);
`connect_timeout` and `read_timeout` turn `--timeout` into the two timeouts of the fetch layer, as the
crawl engine does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, TypeVar

import click

from sitemapkit.core.constants import USER_AGENT

F = TypeVar("F", bound=Callable[..., object])

DEFAULT_TIMEOUT: Final = 30.0
"""`--timeout`: seconds to wait for an answer and between two pieces of it (the read timeout)."""
MAX_CONNECT_TIMEOUT: Final = 10.0
"""Connecting waits at most this long (or `--timeout`, if shorter): a host that takes longer to accept a
connection is as good as down, and a crawl or an audit should not wait 30 s on each of its URLs."""
DEFAULT_RETRIES: Final = 2
"""`--retries`: further attempts of a request answered 429 or 5xx, or that got no answer."""

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
    default=None,
    type=click.FloatRange(0, min_open=True),
    help="At most R requests a second to one host (a longer robots.txt Crawl-delay wins).",
)
allow_private_option = click.option(
    "--allow-private",
    is_flag=True,
    help="Also fetch from loopback, private and link-local addresses (by default refused, except at the "
    "address of a URL given as an argument).",
)


def network_options(*, rate: bool = False) -> Callable[[F], F]:
    """The options of a command that fetches: `--timeout`, `--retries`, `--user-agent`, `--allow-private`,
    and `--rate` with `rate` (the commands that pace their requests: crawl, audit)."""
    group = [timeout_option, retries_option, user_agent_option, *([rate_option] if rate else [])]
    group.append(allow_private_option)

    def apply(f: F) -> F:
        for option in reversed(group):  # the first one listed first in --help
            f = option(f)
        return f

    return apply


def connect_timeout(timeout: float) -> float:
    """The connect timeout that `--timeout` implies: at most `MAX_CONNECT_TIMEOUT`."""
    return min(timeout, MAX_CONNECT_TIMEOUT)


PER_HOST_HELP: Final = "Requests in flight to one host, at most."


def per_host_option(default: int, flag: str = "--concurrency") -> Callable[[F], F]:
    """`--concurrency` (parse, crawl, audit) or `--per-host` (harvest, whose `--concurrency` counts sites):
    requests in flight to one host. One help text and type; the default is the command's API's own, as
    the work differs (parse reads a few large files and fetches ahead; a crawl or an audit fetches many
    pages of one site; a harvest reads thousands of sites, one request to each host at a time)."""
    return click.option(
        flag,
        metavar="N",
        default=default,
        show_default=True,
        type=click.IntRange(1, 64),
        help=PER_HOST_HELP,
    )
