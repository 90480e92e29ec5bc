"""Web server access logs as a source of URL entries: the pages people (and crawlers) actually fetched.

Formats, detected per file from its first parseable lines (a file mixing them is read too):

- `common` (NCSA/CLF): `%h %l %u %t "%r" %>s %b`
- `combined`: common + `"%{Referer}i" "%{User-Agent}i"` (nginx's default; extra fields after it are allowed)
- `vhost_combined`: `%v:%p` + combined (Apache's Debian default for virtual hosts)
- `w3c`: W3C Extended (IIS, and any server that writes `#Fields:`; see `sitemapkit.generator.sources.w3c`),
  recognised by its `#Fields:` (or `#Software:`, `#Version:`, `#Date:`) directives.

`log_format` forces one of them for every line. With an `encoding`, lines are decoded with it (a line that
cannot be is reported and skipped); without one, as UTF-8 with undecodable bytes kept as `%HH`.

Files may be gzipped (recognised by their magic bytes). A line counts when its method is GET or HEAD and its
status is 2xx or 304; the request target is resolved against `base_url` (`/path` targets, or absolute
`http(s)://` ones), `\\xHH` escapes and raw non-ASCII bytes become `%HH`, existing escapes are kept, and
URLs outside the scope are dropped. A request for an invalid URL (2,048 characters or more, say) is dropped
and reported (`url-too-long` or `invalid-url`, with file and line: the first `bad_line_samples` of each
file, then their count). Assets (by extension, `DEFAULT_ASSET_EXTENSIONS`), `exclude` patterns
and URLs with fewer than `min_hits` hits are dropped too. A line in no known format is counted as bad;
the first `bad_line_samples` of each file are reported (`bad-line`, with file and line).

Memory: one entry per distinct kept URL: the URL string (49 bytes + its length), a hit counter and a last-seen
time in two dicts, then its `LogPage` in the result. Measured with tracemalloc for 100,000 distinct URLs of
47 characters: 32 MB at peak, about 320 bytes per URL (210 bytes per URL for the result alone). Nothing
else grows with the size of the logs; to bound memory further, split the logs by site section.

`LogPage.last_seen` (the time of the last kept hit) may serve as a lastmod *candidate*, but it says when a
page was fetched, not when it changed, so `LogSummary.entries` leaves lastmod out unless asked.
"""

from __future__ import annotations

import datetime as dt
import gzip
import math
import os
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from fnmatch import translate
from typing import NamedTuple
from urllib.parse import urlsplit

from sitemapkit.core.diagnostics import Diagnostic, DiagnosticHandler
from sitemapkit.core.errors import InputError, InvalidUrlError, UsageError
from sitemapkit.core.model import UrlEntry
from sitemapkit.core.urls import Scope, normalize_url
from sitemapkit.generator.sources.textblocks import TOO_LONG, bounded_lines, open_input

_ASSETS = """
    css js mjs map json xml rss atom txt wasm
    png jpg jpeg gif webp avif svg ico bmp tif tiff heic
    woff woff2 ttf otf eot
    mp3 mp4 m4a m4v ogg oga ogv webm wav flac mov avi
    zip gz tgz bz2 xz 7z rar tar exe dmg iso apk bin
"""
DEFAULT_ASSET_EXTENSIONS: frozenset[str] = frozenset(_ASSETS.split())
"""Extensions (lowercase, no dot) of requests that are not pages. PDF and other documents are kept."""

_AGENTS = """
    sqlmap nikto nmap masscan zgrab nuclei wpscan dirbuster gobuster ffuf feroxbuster wfuzz
    acunetix netsparker openvas nessus qualys censysinspect expanse internetmeasurement
    python-requests python-urllib aiohttp go-http-client curl/ wget/ libwww-perl okhttp
"""
DEFAULT_EXCLUDED_AGENTS: tuple[str, ...] = tuple(_AGENTS.split())
"""User-agent fragments (matched anywhere, without regard to case) whose requests are not counted:
scanners, and the HTTP libraries and command-line tools that scripts and probes use."""

# a quoted field, unrolled: the character runs are single repeats, so a long field costs neither
# backtracking nor the regex engine's memory per character (the alternation form took 494 MB on 1 MB)
_STR = r'"([^"\\]*(?:\\.[^"\\]*)*)"'
_CORE = r"(\S+) (\S+) (\S+) \[([^\]]*)\] " + _STR + r" (\d{3}) (\d+|-)"
FORMATS: dict[str, re.Pattern[str]] = {
    "vhost_combined": re.compile(r"(\S+?)(?::(\d+))? " + _CORE + " " + _STR + " " + _STR + r"(?: .*)?"),
    "combined": re.compile(r"()()" + _CORE + " " + _STR + " " + _STR + r"(?: .*)?"),
    "common": re.compile(r"()()" + _CORE + r"\s*"),
}
"""The line formats, most specific first; each fully matches a line without its line ending."""

_MONTH_NAMES = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec"
_MONTHS = {m: i for i, m in enumerate(_MONTH_NAMES.split(), 1)}
_TIME = re.compile(r"(\d{1,2})/([A-Z][a-z]{2})/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})")
_BACKSLASH_X = re.compile(r"\\x([0-9A-Fa-f]{2})")
_DETECT_LINES = 20


class LogLine(NamedTuple):
    """One parsed access log line (fields as text, as the log spells them; `\\"` escapes undone)."""

    format: str
    vhost: str | None
    client: str
    time: str
    request: str
    status: int
    size: int | None
    referer: str | None
    agent: str | None


def _unescape(value: str) -> str:
    return value.replace('\\"', '"').replace("\\\\", "\\") if "\\" in value else value


def parse_log_line(line: str, formats: Iterable[str] = FORMATS) -> LogLine | None:
    """The fields of one access log line in one of `formats` (tried in order), or None."""
    for name in formats:
        m = FORMATS[name].fullmatch(line)
        if m is not None:
            vhost, _port, client, _ident, _user, time, request, status, size = m.groups()[:9]
            referer = agent = None
            if name != "common":
                referer, agent = _unescape(m.group(10)), _unescape(m.group(11))
            return LogLine(
                name,
                vhost or None,
                client,
                time,
                _unescape(request),
                int(status),
                None if size == "-" else int(size),
                referer,
                agent,
            )
    return None


def parse_log_time(text: str) -> dt.datetime | None:
    """`10/Oct/2000:13:55:36 -0700` as an aware datetime, or None."""
    m = _TIME.fullmatch(text.strip())
    if m is None or m.group(2) not in _MONTHS:
        return None
    day, month, year, hh, mm, ss, sign, oh, om = m.groups()
    offset = dt.timedelta(hours=int(oh), minutes=int(om)) * (-1 if sign == "-" else 1)
    try:
        return dt.datetime(
            int(year), _MONTHS[month], int(day), int(hh), int(mm), int(ss), tzinfo=dt.timezone(offset)
        )
    except (ValueError, OverflowError):
        return None


def priority_from_hits(hits: int, max_hits: int) -> float:
    """A `<priority>` from a page's hit count, on a logarithmic scale relative to the busiest page.

    `round(log(1 + hits) / log(1 + max_hits), 1)`, clamped to 0.0..1.0, and at least 0.1 for a page with
    any hit (0.0 only for none): the busiest page gets 1.0, one with the square root of its hits about 0.5.
    A log scale keeps a few very popular pages from pressing every other page to 0.0.

    >>> [priority_from_hits(h, 10_000) for h in (0, 1, 10, 100, 10_000)]
    [0.0, 0.1, 0.3, 0.5, 1.0]
    """
    if hits <= 0 or max_hits <= 0:
        return 0.0
    if hits >= max_hits:
        return 1.0
    value = round(math.log1p(hits) / math.log1p(max_hits), 1)
    return min(1.0, max(0.1, value))


@dataclass(frozen=True, slots=True)
class LogPage:
    """One URL of the logs: its hits and the time of the last one (UTC)."""

    url: str
    hits: int
    last_seen: dt.datetime | None


@dataclass(slots=True)
class LogStats:
    """What the logs held. `dropped` counts kept-format lines that were not taken, by reason:
    `method`, `status`, `agent`, `bad-request`, `probe`, `asset`, `excluded`, `invalid-url`, `out-of-scope`;
    `min-hits` counts URLs (not lines) under `min_hits`. `formats` is each file's detected format."""

    files: int = 0
    lines: int = 0
    parsed: int = 0
    bad: int = 0
    kept: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    formats: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LogSummary:
    """The pages of the logs, sorted by URL (so a new day's logs do not reorder the sitemap), with stats."""

    pages: tuple[LogPage, ...]
    stats: LogStats
    max_hits: int

    def entries(
        self, *, priority: bool = True, lastmod: bool = False, source: str | None = None
    ) -> Iterator[UrlEntry]:
        """Entries for the writer: `priority` from `priority_from_hits`, `lastmod` from `last_seen` (off by
        default: it is when the page was fetched, not when it changed)."""
        for page in self.pages:
            yield UrlEntry(
                page.url,
                lastmod=page.last_seen if lastmod else None,
                priority=priority_from_hits(page.hits, self.max_hits) if priority else None,
                sitemap=source,
            )


def _compile_excludes(patterns: Iterable[str]) -> re.Pattern[str] | None:
    parts = []
    for p in patterns:
        if p.startswith("re:"):
            parts.append(f"(?:{p[3:]})")
        else:
            parts.append(f"(?:{translate(p)})")
    return re.compile("|".join(parts)) if parts else None


def _is_probe(path: str) -> bool:
    """True for a path no page has: a hidden segment (`/.env`, `/.git/HEAD`; `.well-known` included, as the
    folder source never lists it) or dot segments that climb above the root (`/../../etc/passwd`)."""
    if "." not in path and "%2" not in path:
        return False
    depth = 0
    for segment in path.split("/")[1:]:
        name = segment.replace("%2e", ".").replace("%2E", ".")
        if name == "..":
            depth -= 1
            if depth < 0:
                return True
        elif name.startswith(".") and name != ".":
            return True
        elif name and name != ".":
            depth += 1
    return False


def _target_text(target: str) -> str:
    if "\\x" in target:
        target = _BACKSLASH_X.sub(lambda m: "%" + m.group(1).upper(), target)
    if not target.isascii():
        raw = target.encode("utf-8", "surrogateescape")
        target = "".join(chr(b) if b < 128 else f"%{b:02X}" for b in raw)
    return target


def read_logs(
    paths: Iterable[str | os.PathLike[str]],
    base_url: str,
    *,
    min_hits: int = 1,
    strip_query: bool = False,
    exclude: Iterable[str] = (),
    assets: Iterable[str] = DEFAULT_ASSET_EXTENSIONS,
    exclude_agents: Iterable[str] = DEFAULT_EXCLUDED_AGENTS,
    allow_hosts: Iterable[str] = (),
    bad_line_samples: int = 5,
    encoding: str | None = None,
    log_format: str | None = None,
    statuses: frozenset[int] | None = None,
    report: DiagnosticHandler,
) -> LogSummary:
    """Count the hits of each page in access logs (see the module docstring).

    `exclude`: glob patterns matched against the target's path and query (`/admin/*`, `*?session=*`), or
    regular expressions prefixed `re:` (searched in it). `assets`: extensions to drop (no dot, any case).
    `encoding` and `log_format`: see the module docstring. `statuses`: the statuses that count (default
    2xx and 304). `exclude_agents`: user-agent fragments whose requests are dropped (any case; a line
    without a user agent, in the common format, is kept). Paths with a hidden segment (`/.env`,
    `/.git/config`) and paths that climb above the root (`/../../etc/passwd`) are probes, never pages:
    dropped. An absolute-form target (`GET http://example.com/x`) on the site's own host counts as its path
    on the site. Raises `InputError` when a file cannot be opened or is corrupt gzip.
    """
    from sitemapkit.generator.sources.w3c import W3CLog, is_directive

    if log_format is not None and log_format not in (*FORMATS, "w3c"):
        raise UsageError(f"log format must be one of {', '.join((*FORMATS, 'w3c'))} (got {log_format!r})")
    scope = Scope(base_url, tuple(allow_hosts))
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(scope.folder))
    own_host = (urlsplit(scope.folder).hostname or "").lower()
    agents = tuple(a.lower() for a in exclude_agents if a)
    excluded = _compile_excludes(exclude)
    asset_exts = frozenset(a.lower().lstrip(".") for a in assets)
    stats = LogStats()
    hits: dict[str, int] = {}
    last: dict[str, float] = {}
    time_cache: tuple[str, float | None] = ("", None)
    dropped = stats.dropped

    for raw_path in paths:
        path = os.fspath(raw_path)
        stats.files += 1
        order: tuple[str, ...] = (log_format,) if log_format in FORMATS else tuple(FORMATS)
        w3c = W3CLog(urlsplit(scope.folder).scheme) if log_format == "w3c" else None
        seen: Counter[str] = Counter()
        bad_here = 0
        invalid_here = 0
        parsed_here = 0
        stream = open_input(path)
        try:
            for number, raw in enumerate(bounded_lines(stream), start=1):
                if raw is None:
                    stats.lines += 1
                    stats.bad += 1
                    report(Diagnostic.make("bad-line", TOO_LONG, source=path, line=number))
                    continue
                if encoding is None:
                    line = raw.decode("utf-8", "surrogateescape").rstrip("\r\n")
                else:
                    try:
                        line = raw.decode(encoding).rstrip("\r\n")
                    except UnicodeDecodeError as exc:
                        stats.lines += 1
                        stats.bad += 1
                        report(
                            Diagnostic.make(
                                "bad-line",
                                f"not {encoding} (byte {exc.start + 1} of the line); the line is skipped",
                                source=path,
                                line=number,
                            )
                        )
                        continue
                if not line.strip():
                    continue
                if w3c is None and log_format is None and is_directive(line):
                    w3c = W3CLog(urlsplit(scope.folder).scheme)
                if w3c is not None:
                    fields = w3c.feed(line)
                    if fields is None and not w3c.bad:
                        continue  # a directive
                    rec = LogLine(*fields) if fields is not None else None
                else:
                    rec = parse_log_line(line, order)
                stats.lines += 1
                if rec is None:
                    stats.bad += 1
                    bad_here += 1
                    if bad_here <= bad_line_samples:
                        shown = line[:120].encode("utf-8", "backslashreplace").decode("utf-8", "replace")
                        report(
                            Diagnostic.make(
                                "bad-line",
                                f"not an access log line in a known format: {shown!r}; the line is skipped",
                                source=path,
                                line=number,
                            )
                        )
                    continue
                stats.parsed += 1
                parsed_here += 1
                if parsed_here <= _DETECT_LINES and log_format is None:
                    seen[rec.format] += 1
                    if parsed_here == _DETECT_LINES or parsed_here == 1:
                        best = max(FORMATS, key=lambda f: (seen[f], -list(FORMATS).index(f)))
                        order = (best, *(f for f in FORMATS if f != best))
                parts = rec.request.split(" ")
                method = parts[0]
                if method not in ("GET", "HEAD"):
                    dropped["method"] += 1
                    continue
                if (
                    (rec.status not in statuses)
                    if statuses is not None
                    else not (200 <= rec.status < 300 or rec.status == 304)
                ):
                    dropped["status"] += 1
                    continue
                if len(parts) not in (2, 3) or not parts[1]:
                    dropped["bad-request"] += 1
                    continue
                if agents and rec.agent and any(a in rec.agent.lower() for a in agents):
                    dropped["agent"] += 1
                    continue
                target = _target_text(parts[1])
                if target.startswith("/") and not target.startswith("//"):
                    url_text = origin + target
                elif target[:7].lower() == "http://" or target[:8].lower() == "https://":
                    url_text = target
                    absolute = urlsplit(target)
                    if (absolute.hostname or "").lower() == own_host:  # the site's own: its path here
                        url_text = (
                            origin + (absolute.path or "/") + ("?" + absolute.query if absolute.query else "")
                        )
                else:
                    dropped["bad-request"] += 1
                    continue
                if _is_probe(urlsplit(url_text).path):
                    dropped["probe"] += 1
                    continue
                if strip_query:
                    url_text = url_text.split("?", 1)[0]
                url_text = url_text.split("#", 1)[0]
                split = urlsplit(url_text)
                last_segment = split.path.rsplit("/", 1)[-1]
                dot = last_segment.rfind(".")
                if dot > 0 and last_segment[dot + 1 :].lower() in asset_exts:
                    dropped["asset"] += 1
                    continue
                if excluded is not None:
                    local = split.path + ("?" + split.query if split.query else "")
                    if excluded.search(local) is not None:
                        dropped["excluded"] += 1
                        continue
                try:
                    url = normalize_url(url_text)
                except InvalidUrlError as exc:  # too long (2,048 characters or more), or not a URL
                    dropped["invalid-url"] += 1
                    invalid_here += 1
                    if invalid_here <= bad_line_samples:
                        report(
                            Diagnostic.make(
                                exc.code,
                                f"the requested {exc.reason}; it is left out (it begins {target[:120]!r})",
                                source=path,
                                line=number,
                            )
                        )
                    continue
                if url not in scope:
                    dropped["out-of-scope"] += 1
                    continue
                stats.kept += 1
                if time_cache[0] != rec.time:
                    when = parse_log_time(rec.time)
                    time_cache = (rec.time, when.timestamp() if when is not None else None)
                stamp = time_cache[1]
                hits[url] = hits.get(url, 0) + 1
                if stamp is not None and stamp > last.get(url, -math.inf):
                    last[url] = stamp
        except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise InputError(f"{path}: cannot be read ({exc})") from None
        finally:
            stream.close()
        if bad_here > bad_line_samples:
            report(
                Diagnostic.make(
                    "bad-line",
                    f"{bad_here - bad_line_samples:,} more bad lines not shown ({bad_here:,} in all)",
                    source=path,
                )
            )
        if invalid_here > bad_line_samples:
            report(
                Diagnostic.make(
                    "invalid-url",
                    f"{invalid_here - bad_line_samples:,} more requests for invalid URLs not shown "
                    f"({invalid_here:,} in all, each left out)",
                    source=path,
                )
            )
        if parsed_here:
            stats.formats[path] = "w3c" if w3c is not None else order[0]
        elif bad_here:
            report(
                Diagnostic.make(
                    "unknown-log-format",
                    f"none of its {bad_here:,} lines is a common, combined, vhost_combined or W3C Extended "
                    "(#Fields:) log line",
                    source=path,
                )
            )

    max_hits = max(hits.values(), default=0)
    pages = []
    for url in sorted(hits):
        n = hits[url]
        if n < min_hits:
            dropped["min-hits"] += 1
            continue
        stamp = last.get(url)
        seen_at = dt.datetime.fromtimestamp(stamp, dt.UTC) if stamp is not None else None
        pages.append(LogPage(url, n, seen_at))
    return LogSummary(tuple(pages), stats, max_hits)
