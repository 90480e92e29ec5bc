"""The one diagnostic type shared by the reader, the validator and the generator.

Every problem sitemapkit reports is a `Diagnostic` with a stable `code` from `CODES`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

from sitemapkit.core.escape import for_terminal


class Severity(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True)
class CodeInfo:
    """What a diagnostic code means and its default severity."""

    code: str
    severity: Severity
    summary: str


def _c(code: str, severity: Severity, summary: str) -> tuple[str, CodeInfo]:
    return code, CodeInfo(code, severity, summary)


E, W = Severity.ERROR, Severity.WARNING

CODES: dict[str, CodeInfo] = dict(
    [
        # fetching and format
        _c("http-error", E, "The sitemap could not be fetched (HTTP error, timeout, refused connection)."),
        _c("compression-error", E, "The gzip data is corrupt or larger than allowed when decompressed."),
        _c("parse-error", E, "The XML is not well-formed."),
        _c("leading-whitespace", E, "Something (blank lines, spaces) comes before the XML declaration."),
        _c("unsupported-format", E, "Not a sitemap: HTML, an unknown root element, or an empty body."),
        _c("incorrect-namespace", E, "The root element lacks the sitemaps.org 0.9 namespace."),
        _c("encoding-error", E, "The file is not UTF-8."),
        _c(
            "forbidden-doctype", E, "The document declares a DOCTYPE with entities; it is refused for safety."
        ),
        _c("fetch-loop", W, "A sitemap was already visited (an index lists itself or an ancestor)."),
        _c("too-deep", W, "The index nesting is deeper than the configured maximum."),
        _c(
            "private-address",
            E,
            "A URL leads to a loopback, private, link-local or reserved address; not fetched.",
        ),
        _c(
            "robots-disallowed",
            E,
            "robots.txt disallows the URL for sitemapkit (or answered 5xx/429, or could not be fetched); "
            "not fetched.",
        ),
        _c(
            "redirect-blocked",
            E,
            "A redirect leads to a URL robots.txt disallows, or to a private address; the chain stops there.",
        ),
        _c("redirect-invalid", E, "A redirect leads to something that is not an http(s) URL with a host."),
        _c("redirect-seen", W, "A redirect leads to a URL fetched already in this run; not fetched again."),
        _c(
            "cross-host",
            E,
            "An index child or a redirect leaves the site; not followed (--follow-cross-host).",
        ),
        _c(
            "walk-limit",
            W,
            "More children than a walk bound allows (--max-children, --max-sitemaps); not followed.",
        ),
        _c("download-too-large", E, "The download exceeded the configured cap; the rest was not read."),
        _c("read-error", E, "A local file could not be read (missing, a folder, no permission)."),
        _c("no-sitemap", E, "No sitemap was found: robots.txt names none and no well-known path has one."),
        # limits
        _c("empty-sitemap", W, "The sitemap lists no URLs."),
        _c("too-many-urls", E, "More than 50,000 URLs in one sitemap."),
        _c("too-many-sitemaps", E, "More than 50,000 sitemaps in one index."),
        _c("file-too-large", E, "More than 52,428,800 bytes uncompressed."),
        _c("nested-index", E, "A sitemap index lists another sitemap index."),
        # tags
        _c("missing-tag", E, "A required tag is missing (for example <loc>)."),
        _c("too-many-tags", E, "A tag that may appear once appears more often."),
        _c("unknown-tag", W, "A tag that the protocol does not define."),
        _c("invalid-value", E, "A tag or attribute value is out of range or not allowed."),
        # URLs
        _c("invalid-url", E, "Not an absolute http(s) URL in RFC 3986 form."),
        _c("url-too-long", E, "The URL has 2,048 characters or more."),
        _c("url-not-allowed", E, "The URL is outside the sitemap's scope (scheme, host, port or folder)."),
        _c("duplicate-url", W, "The URL is listed more than once."),
        # dates
        _c("invalid-date", E, "Not a W3C Datetime that the schema accepts."),
        _c("future-date", W, "The date lies in the future."),
        _c(
            "lastmod-uniform", W, "Every lastmod in a large file is the same instant (likely the build time)."
        ),
        _c("naive-datetime", W, "A date-time without a timezone was taken as UTC."),
        # extensions
        _c("too-many-images", E, "More than 1,000 images for one URL."),
        _c("deprecated-tag", W, "A tag Google deprecated in 2022."),
        _c(
            "video-missing-tag",
            E,
            "A video lacks thumbnail_loc, title, description, or content/player location.",
        ),
        _c("video-location-is-page", E, "A video's content or player location equals the page URL."),
        _c("news-too-many", E, "More than 1,000 news URLs in one sitemap."),
        _c("news-too-old", W, "A news article is more than two days old."),
        _c(
            "hreflang-invalid",
            E,
            "An hreflang code that is not ISO 639-1 (+ ISO 3166-1 region) or x-default.",
        ),
        _c("hreflang-missing-self", W, "A page's alternates do not list the page itself."),
        _c("hreflang-not-reciprocal", W, "An alternate does not link back."),
        # document structure (parser)
        _c("tag-order", W, "The children of <url> are not in the order loc, lastmod, changefreq, priority."),
        # input files (generator)
        _c("bad-line", E, "An input line could not be understood."),
        # generator sources: static site folders and access logs
        _c(
            "page-unreadable",
            E,
            "A page of a site folder is not readable HTML (empty, binary, too large); it is left out.",
        ),
        _c("unknown-log-format", E, "No line of an access log is in a known format (common, combined, W3C)."),
        # lastmod sources (state store, --lastmod git|mtime)
        _c(
            "lastmod-fallback",
            W,
            "The chosen lastmod source has no value for a file (uncommitted, untracked); its mtime is used.",
        ),
        _c(
            "git-shallow",
            W,
            "The git repository is a shallow clone: older files get the time of its oldest commit.",
        ),
        # hreflang groups (generator)
        _c(
            "hreflang-not-listed",
            W,
            "An hreflang alternate is not a page of the sitemap set, so it cannot link back; it is left out.",
        ),
        _c(
            "hreflang-conflict",
            W,
            "Two URLs of one hreflang group claim the same language; the first keeps it.",
        ),
        # publishing (robots.txt)
        _c("robots-disallows-sitemap", W, "robots.txt disallows the sitemap's URL for * or Googlebot."),
        _c("robots-disallows-root", W, "robots.txt disallows the site's root for * or Googlebot."),
    ]
)


MAX_ECHO = 1_000
"""Characters of a diagnostic's message, source or URL kept as they are: a longer text (an input line of
megabytes echoed in a message) keeps its start and end around a note of how much was left out."""


def printable(text: str, limit: int | None = MAX_ECHO) -> str:
    """`text` safe to print and to store as UTF-8: `for_terminal` (control and bidi characters and a file
    name's undecodable bytes shown as escapes, `\\x1b`, `\\u202e`, `\\xe9`) with, by default, the
    `MAX_ECHO` cap (a longer text is shortened in the middle: `... [1,234,567 characters left out] ...`)."""
    return for_terminal(text, limit)


def _utf8(text: str) -> bool:
    """Whether `text` can be written as UTF-8 (no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem found in a file, URL or input line.

    `source` is the file path or URL; `line`/`column` are 1-based when known;
    `url` names the URL entry at fault, if one is. `message` and `source` are kept `printable` (control and
    bidi characters and undecodable bytes of a file name shown as escapes, so `str(diagnostic)` can be
    printed as it is; at most about `MAX_ECHO` characters): a diagnostic never echoes megabytes. `url` is
    kept as given (it is the entry's identity: the validator matches it with the entry's `<loc>`), unless it
    is longer than `4 * MAX_ECHO` or cannot be written as UTF-8: print it through `for_terminal`.
    """

    code: str
    severity: Severity
    message: str
    source: str | None = None
    line: int | None = None
    column: int | None = None
    url: str | None = None

    def __post_init__(self) -> None:
        message, source, url = self.message, self.source, self.url  # the common case: short printable ASCII
        if len(message) > MAX_ECHO or not (message.isascii() and message.isprintable()):
            object.__setattr__(self, "message", printable(message))
        if source is not None and (len(source) > MAX_ECHO or not (source.isascii() and source.isprintable())):
            object.__setattr__(self, "source", printable(source))
        if url is not None and (len(url) > 4 * MAX_ECHO or not (url.isascii() or _utf8(url))):
            object.__setattr__(self, "url", printable(url, 4 * MAX_ECHO))

    @classmethod
    def make(
        cls,
        code: str,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        column: int | None = None,
        url: str | None = None,
        severity: Severity | None = None,
    ) -> Diagnostic:
        """Build a diagnostic with the code's default severity (unless given)."""
        info = CODES.get(code)
        if info is None:
            raise KeyError(f"unknown diagnostic code {code!r}")
        return cls(code, severity or info.severity, message, source, line, column, url)

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def location(self) -> str:
        """`source:line:column`, as much of it as is known."""
        parts = [self.source or "<input>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)

    def __str__(self) -> str:
        return f"{self.location()}: {self.severity.value} [{self.code}] {self.message}"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["severity"] = self.severity.value
        return d


DiagnosticHandler = Callable[[Diagnostic], None]


class DiagnosticLog:
    """Collects diagnostics, counts them by severity, and forwards each to an optional handler.

    `keep` bounds how many are stored (the counts are always exact), so a run over
    millions of bad lines does not grow without limit.
    """

    def __init__(self, handler: DiagnosticHandler | None = None, keep: int | None = 10_000) -> None:
        self._handler = handler
        self._keep = keep
        self.items: list[Diagnostic] = []
        self.errors = 0
        self.warnings = 0
        self._once: set[str] = set()

    def __call__(self, diagnostic: Diagnostic) -> None:
        self.add(diagnostic)

    def add(self, diagnostic: Diagnostic) -> None:
        if diagnostic.is_error:
            self.errors += 1
        else:
            self.warnings += 1
        if self._keep is None or len(self.items) < self._keep:
            self.items.append(diagnostic)
        if self._handler is not None:
            self._handler(diagnostic)

    def once(self, key: str, diagnostic: Diagnostic) -> None:
        """Add `diagnostic` only the first time `key` is seen."""
        if key not in self._once:
            self._once.add(key)
            self.add(diagnostic)

    def extend(self, diagnostics: Iterable[Diagnostic]) -> None:
        for d in diagnostics:
            self.add(d)

    def __iter__(self) -> Iterator[Diagnostic]:
        return iter(self.items)

    def __len__(self) -> int:
        return self.errors + self.warnings

    @property
    def truncated(self) -> bool:
        return len(self.items) < len(self)
