"""Where sitemaps are: what a SOURCE argument names, robots.txt `Sitemap:` lines, well-known paths."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urljoin, urlsplit

from sitemapkit.core.diagnostics import Diagnostic, DiagnosticHandler
from sitemapkit.core.errors import InputError, UsageError
from sitemapkit.reader.download import Download
from sitemapkit.reader.fetch import Fetcher, FetchError

WELL_KNOWN_PATHS: tuple[str, ...] = (
    "/sitemap.xml",
    "/sitemap_index.xml",
    "/sitemap-index.xml",
    "/sitemap.xml.gz",
    "/sitemap_index.xml.gz",
    "/sitemap.txt",
    "/sitemaps.xml",
    "/sitemap/sitemap.xml",
    "/sitemap/index.xml",
    "/sitemaps/sitemap.xml",
    "/wp-sitemap.xml",
    "/sitemap-main.xml",
    "/post-sitemap.xml",
    "/page-sitemap.xml",
    "/sitemap.php",
    "/rss.xml",
    "/atom.xml",
)
"""Paths tried, in this order, when robots.txt names no sitemap. The first that answers with one wins."""

SourceKind = Literal["file", "stdin", "sitemap", "site"]

_SITEMAP_LINE = re.compile(r"^\s*sitemap\s*:\s*(\S.*?)\s*$", re.IGNORECASE)
_HOSTNAME = re.compile(
    r"(?i)[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+(?::\d{1,5})?"
)
_FILE_SUFFIXES = (".xml", ".gz", ".txt", ".rss", ".atom", ".jsonl", ".csv")


@dataclass(frozen=True, slots=True)
class Source:
    """What a SOURCE argument names: a local file, standard input, one sitemap URL, or a site root."""

    kind: SourceKind
    location: str
    """The file path, `-`, or the absolute URL (a site root always ends with `/`)."""


def classify(source: str) -> Source:
    """Decide what `source` names.

    - `-` is standard input; an existing path (or a `file:` URL) is a local file;
    - an http(s) URL whose path is empty or `/` (and without a query) is a site root, to be discovered;
    - any other http(s) URL is a sitemap, whatever its name (`.xml?page=2`, no extension at all);
    - a bare host name (`example.com`) is the site root `https://example.com/`.

    Raises `UsageError` for an unsupported scheme, `InputError` for a path that does not exist.

    >>> classify("https://example.com").kind
    'site'
    >>> classify("https://example.com/sitemap.xml?page=2").kind
    'sitemap'
    """
    text = source.strip()
    if not text:
        raise UsageError("SOURCE is empty: give a file, a sitemap URL or a site URL")
    if text == "-":
        return Source("stdin", "-")
    path = Path(text)
    if path.exists():
        if path.is_dir():
            raise InputError(f"{source}: is a folder, not a sitemap file")
        return Source("file", text)
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme == "file":
        return Source("file", parts.path)
    if scheme in ("http", "https"):
        if not parts.hostname:
            raise UsageError(f"{source}: URL has no host")
        if parts.path in ("", "/") and not parts.query:
            return Source("site", f"{scheme}://{parts.netloc}/")
        return Source("sitemap", text)
    if scheme and len(scheme) > 1 and "://" in text:
        raise UsageError(f"{source}: scheme {parts.scheme!r} is not supported (use http, https or a file)")
    if _HOSTNAME.fullmatch(text.rstrip("/")) and not text.lower().endswith(_FILE_SUFFIXES):
        return Source("site", f"https://{text.rstrip('/').lower()}/")
    raise InputError(f"{source}: no such file, and not an http(s) URL")


def robots_url(site_url: str) -> str:
    """The robots.txt of the site `site_url` belongs to."""
    parts = urlsplit(site_url)
    return f"{parts.scheme}://{parts.netloc}/robots.txt"


def sitemaps_in_robots(
    body: bytes | str, base_url: str, *, on_diagnostic: DiagnosticHandler | None = None
) -> list[str]:
    """The sitemap URLs named by `Sitemap:` lines, in order, without repeats.

    Lines match without regard to case, in any group; CRLF, CR and LF all end lines; a UTF-8 BOM is
    ignored; relative URLs are resolved against `base_url` (the robots.txt URL). A value that is
    not an http(s) URL is reported (`invalid-url`) and skipped.

    >>> sitemaps_in_robots("User-agent: *\\r\\nSITEMAP: /a.xml\\r\\n", "https://example.com/robots.txt")
    ['https://example.com/a.xml']
    """
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    text = text.removeprefix("\ufeff")
    found: list[str] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        m = _SITEMAP_LINE.match(line.split("#", 1)[0])
        if m is None:
            continue
        value = m.group(1)
        url = urljoin(base_url, value)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            if on_diagnostic is not None:
                on_diagnostic(
                    Diagnostic.make(
                        "invalid-url",
                        f"Sitemap: line names {value!r}, which is not an http(s) URL; skipped",
                        source=base_url,
                        line=number,
                    )
                )
            continue
        if url not in seen:
            seen.add(url)
            found.append(url)
    return found


def looks_like_sitemap(head: bytes) -> bool:
    """Whether the first bytes of a body could be a sitemap (gzip, XML sitemap or feed, URL list),
    rather than an HTML page that a server sends for every path (a soft 404)."""
    if head.startswith(b"\x1f\x8b"):
        return True
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        text = head.decode("utf-16", "replace")
    else:
        text = head.decode("utf-8", "replace").removeprefix("\ufeff")
    lowered = text.lower()
    if any(tag in lowered for tag in ("<urlset", "<sitemapindex", "<rss", "<feed")):
        return True
    first = lowered.lstrip().split("\n", 1)[0].strip()
    return first.startswith(("http://", "https://"))


@dataclass(slots=True)
class Discovery:
    """What was found for a site: the sitemaps to read and how they were found."""

    site: str
    robots_url: str
    robots_status: int | None = None
    """HTTP status of robots.txt; None when it could not be fetched at all."""
    robots_bytes: int = 0
    """The size of the robots.txt body read."""
    sitemaps: list[str] = field(default_factory=list)
    via: Literal["robots", "well-known"] | None = None
    error: str | None = None
    """Why robots.txt could not be fetched, if it could not."""
    probe: Download | None = None
    """With `discover(keep=...)`, the well-known sitemap found, still downloading (its first bytes were
    sniffed, none used up): the caller reads it from there, or cancels it."""


async def discover(
    site_url: str,
    fetcher: Fetcher,
    *,
    on_diagnostic: DiagnosticHandler | None = None,
    well_known: tuple[str, ...] = WELL_KNOWN_PATHS,
    keep: int | None = None,
) -> Discovery:
    """Find a site's sitemaps: the `Sitemap:` lines of its robots.txt, or else the first well-known
    path that answers 2xx with something that looks like a sitemap (and that robots.txt allows, where the
    run consults it). robots.txt comes from the run's politeness layer (`Fetcher.robots`).

    With `keep` (a number of body pieces to hold ahead), a well-known sitemap found is not fetched again:
    its download goes on in `Discovery.probe`, for the caller to read (or cancel)."""
    result = Discovery(site_url, robots_url(site_url))
    rules = await fetcher.robots(site_url)  # the run's one copy: fetched once, whoever asks
    if rules.error is not None:
        result.error = rules.error
    else:
        result.robots_status = rules.status
        result.robots_bytes = len(rules.text.encode())
        result.sitemaps = sitemaps_in_robots(rules.text, result.robots_url, on_diagnostic=on_diagnostic)
    if result.sitemaps:
        result.via = "robots"
        return result
    for path in well_known:
        url = urljoin(site_url, path)
        if keep is not None:
            probe = Download(fetcher, url, keep)
            try:
                response = await probe.response()
                head = await probe.head(4096) if response.ok else b""
            except FetchError:
                head = b""
            except BaseException:
                await probe.cancel()
                raise
            if head and looks_like_sitemap(head):
                result.sitemaps, result.via, result.probe = [url], "well-known", probe
                break
            await probe.cancel()
            continue
        try:
            async with fetcher.stream(url) as response:
                if not response.ok:
                    continue
                head, _ = await response.read(4096)
        except FetchError:
            continue
        if looks_like_sitemap(head):
            result.sitemaps = [url]
            result.via = "well-known"
            break
    return result
