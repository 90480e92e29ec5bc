"""The validator: what search engines would report about a sitemap tree, with the file and line of each
problem.

`validate(source)` reads local files (`.xml`, `.xml.gz`, `.txt`), sitemap URLs and site roots, follows an
index to its children (one level: a nested index is reported, not followed), and returns a
`ValidationReport`. The tree is walked by the reader's walk (`reader.tree.TreeWalk`, through
`validator.walk.Validator`). It streams: each file goes through the parser in chunks, and the context
checks (checks.py) keep hashes, not URLs. Remote bodies are spooled to a temporary file, so that the lines
diagnostics point at can be shown afterwards; the spool is deleted before `validate` returns.

Where each child of an index is read from (decided by the walk):

- a remote index: each child from its URL; with `url` (the index is a staging copy of that public URL), a
  child under the public folder from the same path below the folder the index was fetched from;
- a local index with `url` (its public URL): a child under the index's public folder is read from the
  same relative path next to the local index (`read-error` if it is missing there);
- a local index without `url`: a child whose URL path (or, failing that, a shorter end of it, down to its
  file name) exists in the index's folder is read from there;
- a local index's other children are fetched from their URL only with `fetch_missing`, else reported
  (`read-error`); those of standard input are fetched.
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from sitemapkit.core.diagnostics import DiagnosticHandler
from sitemapkit.core.errors import InvalidUrlError, UsageError
from sitemapkit.core.runner import blocking_form
from sitemapkit.core.urls import Scope, normalize_url
from sitemapkit.validator.report import DEFAULT_MAX_UNCOMPRESSED, KEEP, ValidationReport

if TYPE_CHECKING:
    from sitemapkit.core.model import UrlEntry
    from sitemapkit.reader.download import Download
    from sitemapkit.reader.fetch import FetchOptions

__all__ = ["avalidate", "validate"]

# --- public API ------------------------------------------------------------------------------------------


def _sources(source_or_sources: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[str]:
    if isinstance(source_or_sources, (str, os.PathLike)):
        return [os.fspath(source_or_sources)]
    out = [os.fspath(s) for s in source_or_sources]
    if not out:
        raise UsageError("no SOURCE to validate")
    return out


async def avalidate(
    source_or_sources: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    url: str | None = None,
    recursive: bool = True,
    allow_hosts: Iterable[str] = (),
    now: dt.datetime | None = None,
    keep: int | None = KEEP,
    timeout: float | None = None,
    max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED,
    max_duration: float | None = None,
    allow_private: bool = False,
    follow_cross_host: bool = False,
    fetch_missing: bool = False,
    on_diagnostic: DiagnosticHandler | None = None,
    fetch_options: FetchOptions | None = None,
    on_entry: Callable[[UrlEntry], None] | None = None,
    user_named: bool = True,
    probe: Download | None = None,
) -> ValidationReport:
    """Validate sitemaps as search engines would read them; return a `ValidationReport`. `validate` is the
    blocking form (the same parameters); inside a running event loop await `avalidate`.

    A source is a local `.xml`, `.xml.gz` or `.txt` file (`-` for standard input), a sitemap URL, or a
    site root (its sitemaps are found through robots.txt). `url` is the public URL of a local file (its
    scope is judged by it; without it, scope checks are skipped with a note). An index is validated with
    every child unless `recursive` is False. `allow_hosts` are hosts whose URLs any sitemap may list
    (cross-submission). `now` is the time dates are judged against (default: the current time).
    The fetch policy applies (see `FetchPolicy`): no private address except on the origins named by a
    source or `url` unless `allow_private`; index children and redirects stay on the site unless
    `follow_cross_host`; `max_duration` bounds one request, connect to last byte.
    All sources of one call form one tree for duplicates and hreflang.

    `on_entry` is given every URL entry with a usable `<loc>` as it is read (with its `sitemap` and
    `line`), so that a caller such as the audit reads the tree once. `user_named=False` says the sources
    are URLs a site chose (robots.txt `Sitemap:` lines): their origins are then not trusted by the fetch
    policy, nor exempt from robots.txt. `probe` is a download of one of the sources that a discovery began
    in this event loop (`reader.discover.discover(keep=...)`'s `Discovery.probe`): it is read on from there,
    not fetched again.

    Raises `UsageError` for bad arguments and `InputError` for a local file that does not exist; every
    problem found in the sitemaps themselves is a diagnostic.

    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "sitemap.txt")
    ...     _ = open(path, "w").write("https://example.com/a\\nhttps://example.com/a\\n")
    ...     report = validate(path, url="https://example.com/sitemap.txt")
    >>> report.ok, [(d.code, d.line) for d in report]
    (True, [('duplicate-url', 2)])
    """
    # The walk needs httpx and lxml: load them only now, so that `import sitemapkit` stays quick.
    from sitemapkit.reader.fetch import FetchOptions
    from sitemapkit.validator.walk import Options, Validator

    sources = _sources(source_or_sources)
    if url is not None:
        if len(sources) > 1:
            raise UsageError("--url names the public URL of one SOURCE; give one SOURCE with it")
        try:
            url = normalize_url(url)
        except InvalidUrlError as exc:
            raise UsageError(f"--url {url!r} is not a valid http(s) URL ({exc.reason})") from None
    hosts = tuple(h.strip() for h in allow_hosts if h.strip())
    try:
        Scope("https://example.com/", hosts)
    except InvalidUrlError as exc:
        raise UsageError(f"--allow-host: {exc}") from None
    for name, seconds in (("timeout", timeout), ("max_duration", max_duration)):
        if seconds is not None and (
            isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0
        ):
            raise UsageError(f"{name} must be a number of seconds above 0 (got {seconds!r})")
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 0):
        raise UsageError(f"keep must be a whole number, 0 or more, or None (got {keep!r})")
    fetch = fetch_options or FetchOptions()
    if timeout is not None:
        fetch = replace(fetch, connect_timeout=timeout, read_timeout=timeout)
    if max_duration is not None:
        fetch = replace(fetch, max_duration=max_duration)
    policy = replace(
        fetch.policy,
        allow_private=fetch.policy.allow_private or allow_private,
        follow_cross_host=fetch.policy.follow_cross_host or follow_cross_host,
    )
    # The origins the user named (each SOURCE URL, --url) are trusted by the fetch policy, and robots.txt
    # is consulted only for the hosts the sitemaps lead to.
    named = [u for u in (url, *sources) if u and "://" in u] if user_named else []
    fetch = replace(fetch, policy=policy.trusting(*named))
    if fetch.politeness is None:
        from sitemapkit.reader.polite import Politeness, origin_of

        politeness = Politeness(
            user_agent=fetch.user_agent,
            robots_exempt=frozenset(origin_of(u) for u in named),
            per_host=fetch.per_host,
            clock=fetch.monotonic,
            sleep=fetch.sleep,
        )
        fetch = replace(fetch, politeness=politeness)
    report = ValidationReport(keep)
    with tempfile.TemporaryDirectory(prefix="sitemapkit-validate-") as spool:
        run = Validator(
            report,
            Options(url, recursive, max_uncompressed, fetch, fetch_missing),
            now or dt.datetime.now(dt.UTC),
            hosts,
            on_diagnostic,
            spool,
            on_entry,
        )
        await run.run(sources, probe)
        run.excerpts()
    return report


validate = blocking_form(avalidate)
