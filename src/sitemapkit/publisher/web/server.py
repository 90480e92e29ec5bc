"""The sitemap server: routes a request, renders the index or a page from a `PagedSource`, and answers it
with the right headers. It knows nothing of ASGI or WSGI;
`sitemapkit.publisher.web.asgi` and `.wsgi` adapt it.

A page is rendered once per request (or once per cache lifetime), through the generator's pipeline and
serializer, so what is served is what `sitemapkit generate` would write for the same entries.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import gzip
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from importlib import resources
from itertools import islice
from typing import Any, Literal, TypedDict
from urllib.parse import urlsplit

from xxhash import xxh3_128_hexdigest

from sitemapkit.core.constants import CHANGEFREQS, MAX_BYTES, MAX_NEWS_PER_SITEMAP, MAX_URLS
from sitemapkit.core.dates import parse_w3c, to_aware
from sitemapkit.core.diagnostics import Diagnostic, DiagnosticHandler, DiagnosticLog
from sitemapkit.core.errors import InvalidDateError, InvalidUrlError, UsageError
from sitemapkit.core.model import IndexEntry, Lastmod, UrlEntry
from sitemapkit.core.urls import Scope, normalize_url
from sitemapkit.generator.pipeline import Pipeline
from sitemapkit.generator.serialize import prefixes_of, render_index_entry, render_url, xml_footer, xml_header
from sitemapkit.publisher.web.headers import (
    etag_matches,
    format_http_date,
    parse_http_date,
    valid_host,
    wants_gzip,
)
from sitemapkit.publisher.web.sources import PagedSource, as_source

logger = logging.getLogger("sitemapkit.web")

IndexMode = Literal["always", "auto"]
XML_TYPE = "application/xml; charset=utf-8"
XSL_TYPE = "text/xsl; charset=utf-8"
_TEXT_TYPE = "text/plain; charset=utf-8"
_ALLOW = "GET, HEAD"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,100}")
_PAGE = re.compile(r"-([1-9][0-9]{0,8})\.xml")
_URLSET_FOOTER = xml_footer("urlset").encode()


class ServerOptions(TypedDict, total=False):
    """The keyword options of `SitemapServer`, `asgi_app` and `wsgi_app`."""

    base_url: str | None
    name: str
    page_size: int
    max_bytes: int
    index: IndexMode
    xsl: str | None
    max_age: int
    gzip_level: int
    allow_hosts: Iterable[str]
    cache_seconds: float
    cache_bytes: int
    on_diagnostic: DiagnosticHandler | None
    clock: Callable[[], float]
    wall_clock: Callable[[], float]


@dataclass(frozen=True, slots=True)
class Response:
    """What to answer: a status, headers (in order) and the body (empty for HEAD and 304)."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""

    @property
    def status_line(self) -> str:
        """`200 OK`, as WSGI's `start_response` wants it."""
        return f"{self.status} {HTTPStatus(self.status).phrase}"

    def header(self, name: str) -> str | None:
        """The first header called `name` (any case), or None."""
        lower = name.lower()
        return next((v for k, v in self.headers if k.lower() == lower), None)


@dataclass(frozen=True, slots=True)
class Route:
    """A path the server answers: the index, page `number`, or the stylesheet."""

    kind: Literal["index", "page", "xsl"]
    number: int = 0


@dataclass(slots=True)
class _Rendered:
    data: bytes
    etag: str
    """The entity tag's opaque value (without quotes); gzip appends `-gzip`."""
    content_type: str = XML_TYPE
    gz: bytes | None = None

    def gzipped(self, level: int) -> bytes:
        if self.gz is None:  # two threads may both compress once; the result is the same bytes
            self.gz = gzip.compress(self.data, compresslevel=level, mtime=0)
        return self.gz


class _BadRequest(Exception):
    pass


class _NoEntries(Exception):
    """The source has no entries: there is no valid sitemap to serve (404)."""


class _Unservable(Exception):
    """A sitemap has entries, but none of them can be served from here (500, logged as an error)."""


class SitemapServer:
    """Serves a sitemap index and its pages from `source` (anything `as_source` accepts).

    Routes, relative to where the app is mounted: `/{name}.xml` (the index), `/{name}-1.xml`,
    `/{name}-2.xml`, ... (pages of at most `page_size` URLs and `max_bytes` bytes), and `/{name}.xsl` with
    `xsl="default"`. `respond()` answers one request; the ASGI and WSGI apps call it.

    `base_url` is the public origin (`https://example.com`, or with a path a proxy strips); the mount
    prefix (ASGI `root_path`, WSGI `SCRIPT_NAME`) is appended to it. Without it the request's `Host` is
    used, which a client controls: set `base_url` in production. Entries are checked as `generate` checks
    them, in the scope of the folder the sitemaps are served from (plus `allow_hosts`); an entry `/path`
    is a path on the site, so under a mount point it must include the mount prefix. A sitemap whose
    entries are all left out is a 500 with an error in the log, never an empty `<urlset>` (invalid, and
    silently wrong); a source with no entries at all has no sitemap: 404.

    Validators: every response has a strong `ETag`. `Last-Modified` is sent, and `If-Modified-Since`
    honoured, only when the source's `version()` is a `datetime`, the time of its latest change (removals
    included): it is then the later of that time and `started` (when this server was made, so a change of
    options is a change too), left out while it is not yet a whole second in the past (a change later in
    the same second could not move it). The newest `lastmod` of the entries is not used: removing an entry
    or adding one with an older date changes a page without moving it. `If-Modified-Since` is ignored when
    `If-None-Match` is sent, and when it is not a valid date or lies in the future (`wall_clock`).
    """

    def __init__(
        self,
        source: Any,
        *,
        base_url: str | None = None,
        name: str = "sitemap",
        page_size: int = MAX_URLS,
        max_bytes: int = MAX_BYTES,
        index: IndexMode = "always",
        xsl: str | None = None,
        max_age: int = 3600,
        gzip_level: int = 6,
        allow_hosts: Iterable[str] = (),
        cache_seconds: float = 0.0,
        cache_bytes: int = 64 * 1024 * 1024,
        on_diagnostic: DiagnosticHandler | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        if not 1 <= page_size <= MAX_URLS:
            raise UsageError(f"page_size must be from 1 to {MAX_URLS:,} (got {page_size:,})")
        if not 1_024 <= max_bytes <= MAX_BYTES:
            raise UsageError(f"max_bytes must be from 1,024 to {MAX_BYTES:,} (got {max_bytes:,})")
        if index not in ("always", "auto"):
            raise UsageError(f"index must be 'always' or 'auto' (got {index!r})")
        if not _NAME.fullmatch(name) or ".." in name:
            raise UsageError(f"name must be a plain file name prefix such as 'sitemap' (got {name!r})")
        if not 0 <= gzip_level <= 9:
            raise UsageError(f"gzip_level must be from 0 to 9 (got {gzip_level})")
        if max_age < 0 or cache_seconds < 0:
            raise UsageError("max_age and cache_seconds cannot be negative")
        self.source: PagedSource = as_source(source)
        self.origin = _origin(base_url) if base_url is not None else None
        self.name = name
        self.page_size = page_size
        self.max_bytes = max_bytes
        self.index_mode: IndexMode = index
        self.xsl_href = f"{name}.xsl" if xsl == "default" else xsl
        self.serves_xsl = xsl == "default"
        self.max_age = max_age
        self.gzip_level = gzip_level
        self.allow_hosts = tuple(allow_hosts)
        self.on_diagnostic = on_diagnostic
        self._cache = _Cache(cache_seconds, cache_bytes, clock) if cache_seconds > 0 else None
        self._wall_clock = wall_clock
        self.started = _whole_seconds(wall_clock())
        """When this server was made (whole seconds, UTC): `Last-Modified` is never earlier."""
        self._scopes: dict[str, Scope] = {}
        self._checked: set[str] = set()
        self._logged: set[tuple[str, str | None, str]] = set()
        self._lock = threading.Lock()
        self._headers: dict[frozenset[str], int] = {}
        self._config = (name, page_size, max_bytes, index, self.xsl_href, tuple(sorted(self.allow_hosts)))
        self._stylesheet: _Rendered | None = None
        if self.serves_xsl:
            data = resources.files("sitemapkit").joinpath("data/sitemap.xsl").read_bytes()
            self._stylesheet = _Rendered(data, xxh3_128_hexdigest(data), XSL_TYPE)

    # -- routing ----------------------------------------------------------------------------------

    def route(self, path: str) -> Route | None:
        """The route for `path` (relative to the mount point), or None when it is not one of ours.

        >>> s = SitemapServer([])
        >>> s.route("/sitemap.xml"), s.route("/sitemap-12.xml"), s.route("/sitemap-012.xml")
        (Route(kind='index', number=0), Route(kind='page', number=12), None)
        """
        stem = "/" + self.name
        if not path.startswith(stem):
            return None
        rest = path[len(stem) :]
        if rest == ".xml":
            return Route("index")
        if rest == ".xsl" and self.serves_xsl:
            return Route("xsl")
        m = _PAGE.fullmatch(rest)
        if m is not None and int(m[1]) <= MAX_URLS:
            return Route("page", int(m[1]))
        return None

    # -- answering --------------------------------------------------------------------------------

    def respond(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        *,
        scheme: str = "http",
        host: str | None = None,
        root_path: str = "",
    ) -> Response:
        """Answer one request. `path` is relative to the mount point `root_path`; `headers` has
        lower-case names; `scheme` and `host` (the `Host` header) matter only without `base_url`.

        Never raises for a problem of the source or its data: a failing source is a 500 (logged with its
        traceback), an invalid entry is left out with a diagnostic (logged, and passed to `on_diagnostic`).
        """
        response = self._respond(method, path, headers, scheme, host, root_path)
        if method == "HEAD" and response.body:
            return dataclasses.replace(response, body=b"")
        return response

    def _respond(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        scheme: str,
        host: str | None,
        root_path: str,
    ) -> Response:
        route = self.route(path)
        if route is None:
            return _plain(404, "Not Found")
        if method not in ("GET", "HEAD"):
            return _plain(405, "Method Not Allowed", [("Allow", _ALLOW)])
        try:
            scope = self._scope(scheme, host, root_path)
        except _BadRequest as exc:
            return _plain(400, f"Bad Request: {exc}")
        gz = wants_gzip(headers.get("accept-encoding"))
        suffix = "-gzip" if gz else ""
        now = self._wall_clock()
        last_modified: dt.datetime | None = None
        try:
            if route.kind == "xsl":
                rendered: _Rendered | None = self._stylesheet
            else:
                if route.kind == "index" and scope.folder not in self._checked:
                    self._check_scope(scope)
                tag, changed = self._version(route, scope)
                last_modified = self._last_modified(changed, now)
                if tag is not None and _not_modified(headers, f'"{tag}{suffix}"', last_modified, now):
                    return Response(304, self._meta(f'"{tag}{suffix}"', last_modified))
                rendered = self._rendered(route, scope, tag)
        except _NoEntries:
            self._log_once(
                logging.WARNING,
                f"{scope.folder}{path.lstrip('/')}: the sitemap source has no entries, so there is no "
                "sitemap to serve (404) until it has some",
            )
            return _plain(404, "Not Found: this sitemap has no URLs yet", [("Cache-Control", "no-store")])
        except _Unservable as exc:
            logger.error("%s", exc)
            return _plain(
                500,
                "Internal Server Error: none of this sitemap's entries can be served from here "
                "(the server's log says why)",
                [("Cache-Control", "no-store")],
            )
        except Exception:
            logger.exception("sitemap source failed while serving %s%s", root_path, path)
            return _plain(500, "Internal Server Error", [("Cache-Control", "no-store")])
        if rendered is None:
            return _plain(404, "Not Found")
        etag = f'"{rendered.etag}{suffix}"'
        meta = self._meta(etag, last_modified)
        if _not_modified(headers, etag, last_modified, now):
            return Response(304, meta)
        body = rendered.gzipped(self.gzip_level) if gz else rendered.data
        out = [("Content-Type", rendered.content_type), ("Content-Length", str(len(body)))]
        if gz:
            out.append(("Content-Encoding", "gzip"))
        return Response(200, out + meta, body)

    def _meta(self, etag: str, last_modified: dt.datetime | None) -> list[tuple[str, str]]:
        meta = [
            ("Vary", "Accept-Encoding"),
            ("ETag", etag),
            ("Cache-Control", f"public, max-age={self.max_age}"),
            ("X-Robots-Tag", "noindex"),
        ]
        if last_modified is not None:
            meta.append(("Last-Modified", format_http_date(last_modified)))
        return meta

    def _scope(self, scheme: str, host: str | None, root_path: str) -> Scope:
        if self.origin is not None:
            origin = self.origin
        else:
            if scheme not in ("http", "https"):
                raise _BadRequest(f"unsupported scheme {scheme!r}")
            if host is None or not valid_host(host):
                raise _BadRequest("missing or invalid Host header")
            origin = f"{scheme}://{host}"
        folder = origin + root_path.rstrip("/") + "/"
        scope = self._scopes.get(folder)
        if scope is None:
            try:
                scope = Scope(folder, self.allow_hosts)
            except InvalidUrlError as exc:
                raise _BadRequest(
                    f"the sitemaps' URL would be invalid ({exc.reason.split(':')[0]})"
                ) from None
            with self._lock:
                if len(self._scopes) >= 256:
                    self._scopes.clear()
                self._scopes[folder] = scope
        return scope

    def _version(self, route: Route, scope: Scope) -> tuple[str | None, dt.datetime | None]:
        """The entity tag made from the source's `version()` (None without one), and the time of the
        source's latest change when the version is one (a `datetime`)."""
        version: Callable[[], Hashable | None] | None = getattr(self.source, "version", None)
        value = version() if callable(version) else None
        if value is None:
            return None, None
        key = repr((value, route.kind, route.number, scope.folder, self._config))
        changed = None
        if isinstance(value, dt.datetime):
            changed = value if value.utcoffset() is not None else value.replace(tzinfo=dt.UTC)
        return "v" + xxh3_128_hexdigest(key.encode()), changed

    def _last_modified(self, changed: dt.datetime | None, now: float) -> dt.datetime | None:
        """`Last-Modified` for a source last changed at `changed`: the later of that and `started`, in
        whole seconds; None when unknown or not yet a whole second in the past."""
        if changed is None:
            return None
        value = max(changed.astimezone(dt.UTC).replace(microsecond=0), self.started)
        return value if value < _whole_seconds(now) else None

    def _check_scope(self, scope: Scope) -> None:
        """Before the first index served from `scope`: when the first entries are all out of it (the
        sitemaps are mounted under a prefix the entries lack), fail loudly instead of serving pages that
        are all empty. Passes (and is not asked again) once an entry is in scope."""
        codes: list[Diagnostic] = []
        log = DiagnosticLog(codes.append, keep=0)
        pipeline = Pipeline(scope, log)
        kept = seen = 0
        try:
            for item in islice(self.source.entries(0, min(self.page_size, 50)), 50):
                seen += 1
                entry = self._entry(item, "", 0, log)
                if entry is not None and pipeline.process(entry) is not None:
                    kept += 1
                    break
        except Exception:  # a failing source is reported by the page that reads it, not by the index
            logger.debug("sitemap source failed while checking %s", scope.folder, exc_info=True)
            return
        outside = [d for d in codes if d.code == "url-not-allowed"]
        if kept or (seen and not outside):
            with self._lock:
                if len(self._checked) >= 256:
                    self._checked.clear()
                self._checked.add(scope.folder)
        elif outside:
            what = f"the first {seen:,} entries of the source" if seen > 1 else "the source's first entry"
            raise _Unservable(self._out_of_scope(f"{scope.folder}{self.name}.xml", scope, outside[0], what))

    def _out_of_scope(self, url: str, scope: Scope, example: Diagnostic, what: str) -> str:
        """Why no entry can be served from `scope`, and what to do about it."""
        loc = example.url or ""
        where = urlsplit(scope.folder)
        hint = "list URLs under it"
        there = urlsplit(loc)
        if (there.scheme, there.netloc) == (where.scheme, where.netloc) and where.path != "/":
            hint = (
                f"a path starting with / is a path on the site, not under the mount point: give full "
                f"paths ({where.path}{there.path.lstrip('/')} rather than {there.path}, as url_for() or "
                "reverse() write them), or serve the sitemaps at the site root"
            )
        return (
            f"{url}: none of {what} can be served: the sitemaps are served from "
            f"{scope.folder}, and a sitemap may list only URLs in its own folder (sitemaps.org), but {loc} "
            f"is not ({scope.explain(loc)}). {hint[0].upper()}{hint[1:]}"
        )

    def _rendered(self, route: Route, scope: Scope, tag: str | None) -> _Rendered | None:
        def render() -> _Rendered | None:
            rendered = self._render(route, scope)
            if rendered is not None and tag is not None:
                rendered.etag = tag
            return rendered

        if self._cache is None:
            return render()
        return self._cache.get_or_render((route, scope.folder, tag), render)

    # -- rendering --------------------------------------------------------------------------------

    def _render(self, route: Route, scope: Scope) -> _Rendered | None:
        size = self.page_size
        if route.kind == "page":
            url = f"{scope.folder}{self.name}-{route.number}.xml"
            offset = (route.number - 1) * size
            return self._render_urlset(self.source.entries(offset, size), scope, url, offset, empty_ok=False)
        url = f"{scope.folder}{self.name}.xml"
        count = self.source.count()
        if count <= 0:
            raise _NoEntries
        pages = -(-count // size)
        if self.index_mode == "auto" and pages <= 1:
            return self._render_urlset(self.source.entries(0, size), scope, url, 0, empty_ok=True)
        if pages > MAX_URLS:
            self._report(
                Diagnostic.make(
                    "too-many-sitemaps",
                    f"{count:,} entries make {pages:,} pages of {size:,}, more than the {MAX_URLS:,} an "
                    f"index may list; only the first {MAX_URLS:,} are listed. Raise page_size",
                    source=url,
                )
            )
            pages = MAX_URLS
        newest: Callable[[int, int], Lastmod | None] | None = getattr(self.source, "newest", None)
        parts = [xml_header("sitemapindex", (), self.xsl_href)]
        for number in range(1, pages + 1):
            lastmod = newest((number - 1) * size, size) if callable(newest) else None
            lastmod = to_aware(lastmod) if isinstance(lastmod, dt.date) else None
            entry = IndexEntry(f"{scope.folder}{self.name}-{number}.xml", lastmod)
            parts.append(render_index_entry(entry))
        parts.append(xml_footer("sitemapindex"))
        data = "".join(parts).encode()
        return _Rendered(data, xxh3_128_hexdigest(data))

    def _render_urlset(
        self, items: Iterable[Any], scope: Scope, url: str, offset: int, *, empty_ok: bool
    ) -> _Rendered | None:
        where: list[Any] = [url, 0]
        outside: list[Diagnostic] = []

        def report(d: Diagnostic) -> None:
            if d.source is None:
                d = dataclasses.replace(d, source=where[0], line=where[1])
            if d.code == "url-not-allowed" and not outside:
                outside.append(d)
            self._report(d)

        log = DiagnosticLog(report, keep=0)
        pipeline = Pipeline(scope, log)
        chunks: list[bytes] = []
        prefixes: frozenset[str] = frozenset()
        header = self._header_len(prefixes)
        limit = self.max_bytes - len(_URLSET_FOOTER)
        size = urls = news = left_out = seen = 0
        for position, item in enumerate(items, start=offset + 1):
            seen += 1
            if left_out:
                left_out += 1
                continue
            where[1] = position
            entry = self._entry(item, url, position, log)
            if entry is None:
                continue
            ready = pipeline.process(entry)
            if ready is None:
                continue
            if ready.news is not None and news >= MAX_NEWS_PER_SITEMAP:
                log.add(
                    Diagnostic.make(
                        "news-too-many",
                        f"more than {MAX_NEWS_PER_SITEMAP:,} news URLs in one page; this URL is served "
                        f"without its news block. Use page_size {MAX_NEWS_PER_SITEMAP:,} or less for news "
                        "sitemaps",
                        url=ready.loc,
                    )
                )
                ready = dataclasses.replace(ready, news=None)
            try:
                data = render_url(ready).encode()
            except (TypeError, ValueError, AttributeError) as exc:
                log.add(Diagnostic.make("bad-line", f"cannot render this entry ({exc}); it is left out"))
                continue
            needs = (
                prefixes_of(ready)
                if (ready.images or ready.videos or ready.news or ready.alternates)
                else None
            )
            grown = prefixes | needs if needs else prefixes
            if grown != prefixes:
                header = self._header_len(grown)
            if header + size + len(data) > limit:
                left_out = 1
                continue
            prefixes = grown
            chunks.append(data)
            size += len(data)
            urls += 1
            news += ready.news is not None
        if not seen:
            if empty_ok:
                raise _NoEntries
            return None
        if not urls:
            if outside:
                what = f"the {seen:,} entries of this sitemap" if seen > 1 else "this sitemap's entry"
                raise _Unservable(self._out_of_scope(url, scope, outside[0], what))
            raise _Unservable(
                f"{url}: none of the {seen:,} entries of this sitemap can be served (the diagnostics "
                "logged for them say why), and a sitemap without any URL is not valid"
            )
        if left_out:
            suggestion = max(1, urls * 9 // 10)
            self._report(
                Diagnostic.make(
                    "file-too-large",
                    f"this page reached {self.max_bytes:,} bytes after {urls:,} URLs, so the other "
                    f"{left_out:,} entries of its slice are not served. Set page_size to {suggestion:,} or "
                    "less so that every page fits",
                    source=url,
                )
            )
        head = xml_header("urlset", prefixes, self.xsl_href).encode()
        data = b"".join([head, *chunks, _URLSET_FOOTER])
        return _Rendered(data, xxh3_128_hexdigest(data))

    def _entry(self, item: Any, url: str, position: int, log: DiagnosticLog) -> UrlEntry | None:
        """`item` as an entry with valid optional fields (bad ones reported and dropped), or None."""
        if isinstance(item, str):
            return UrlEntry(item, sitemap=url, line=position)
        if not isinstance(item, UrlEntry):
            log.add(
                Diagnostic.make(
                    "bad-line",
                    f"the source gave a {type(item).__name__}, not a UrlEntry or a URL string; "
                    "it is left out",
                )
            )
            return None
        changes: dict[str, Any] = {}
        lastmod: Any = item.lastmod
        if isinstance(lastmod, str):
            try:
                changes["lastmod"] = parse_w3c(lastmod, allow_naive=True)
            except InvalidDateError:
                changes["lastmod"] = None
                log.add(
                    Diagnostic.make("invalid-date", f"lastmod {lastmod!r} is not a W3C Datetime; dropped")
                )
        elif lastmod is not None and not isinstance(lastmod, dt.date):
            changes["lastmod"] = None
            log.add(Diagnostic.make("invalid-date", f"lastmod {lastmod!r} is not a date; dropped"))
        changefreq: Any = item.changefreq
        if changefreq is not None:
            if isinstance(changefreq, str) and changefreq.strip().lower() in CHANGEFREQS:
                if changefreq != changefreq.strip().lower():
                    changes["changefreq"] = changefreq.strip().lower()
            else:
                changes["changefreq"] = None
                log.add(
                    Diagnostic.make("invalid-value", f"changefreq {changefreq!r} is not allowed; dropped")
                )
        priority: Any = item.priority
        if priority is not None and (
            isinstance(priority, bool) or not isinstance(priority, (int, float)) or not 0.0 <= priority <= 1.0
        ):
            changes["priority"] = None
            log.add(Diagnostic.make("invalid-value", f"priority {priority!r} is not 0.0 to 1.0; dropped"))
        return dataclasses.replace(item, **changes) if changes else item

    def _header_len(self, prefixes: frozenset[str]) -> int:
        n = self._headers.get(prefixes)
        if n is None:
            n = len(xml_header("urlset", prefixes, self.xsl_href).encode())
            self._headers[prefixes] = n
        return n

    def _log_once(self, level: int, message: str) -> None:
        """Log `message` at `level` the first time, at DEBUG after that."""
        key = ("", None, message)
        with self._lock:
            first = key not in self._logged
            if first and len(self._logged) < 10_000:
                self._logged.add(key)
        logger.log(level if first else logging.DEBUG, "%s", message)

    def _report(self, d: Diagnostic) -> None:
        """Pass a diagnostic to `on_diagnostic`, and log it: the first time at WARNING, repeats (every
        request of a page with a bad entry meets it again) at DEBUG."""
        if self.on_diagnostic is not None:
            self.on_diagnostic(d)
        key = (d.code, d.url, d.message)
        with self._lock:
            first = key not in self._logged
            if first and len(self._logged) < 10_000:
                self._logged.add(key)
        logger.log(logging.WARNING if first else logging.DEBUG, "%s", d)


class _Cache:
    """Rendered responses by key for `seconds`, least recently used first out beyond `max_bytes`.
    Concurrent requests for the same missing key render it once."""

    def __init__(self, seconds: float, max_bytes: int, clock: Callable[[], float]) -> None:
        self.seconds = seconds
        self.max_bytes = max_bytes
        self.clock = clock
        self._items: OrderedDict[Hashable, tuple[float, _Rendered]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self._inflight: dict[Hashable, threading.Lock] = {}

    def _get(self, key: Hashable) -> _Rendered | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            if hit[0] <= self.clock():
                del self._items[key]
                self._size -= len(hit[1].data)
                return None
            self._items.move_to_end(key)
            return hit[1]

    def _put(self, key: Hashable, value: _Rendered) -> None:
        size = len(value.data)
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._size -= len(old[1].data)
            while self._items and self._size + size > self.max_bytes:
                _, (_, evicted) = self._items.popitem(last=False)
                self._size -= len(evicted.data)
            self._items[key] = (self.clock() + self.seconds, value)
            self._size += size

    def get_or_render(self, key: Hashable, render: Callable[[], _Rendered | None]) -> _Rendered | None:
        hit = self._get(key)
        if hit is not None:
            return hit
        with self._lock:
            gate = self._inflight.setdefault(key, threading.Lock())
        try:
            with gate:
                hit = self._get(key)
                if hit is not None:
                    return hit
                value = render()
                if value is not None:
                    self._put(key, value)
                return value
        finally:
            with self._lock:
                self._inflight.pop(key, None)


def _origin(base_url: str) -> str:
    try:
        url = normalize_url(base_url)
    except InvalidUrlError as exc:
        raise UsageError(f"base_url {base_url!r}: {exc.reason}") from None
    if "?" in url or "#" in url:
        raise UsageError(f"base_url {base_url!r} must have no query or fragment")
    return url.rstrip("/")


def _whole_seconds(timestamp: float) -> dt.datetime:
    """A POSIX time as an aware UTC datetime, cut to whole seconds (what HTTP dates carry)."""
    return dt.datetime.fromtimestamp(int(timestamp), dt.UTC)


def _not_modified(
    headers: Mapping[str, str], etag: str, last_modified: dt.datetime | None, now: float
) -> bool:
    """RFC 9110 §13.2.2: If-None-Match decides when present; otherwise If-Modified-Since, when there is a
    `Last-Modified` to compare and the date is valid and not in the future (§13.1.3)."""
    inm = headers.get("if-none-match")
    if inm is not None:
        return etag_matches(inm, etag)
    if last_modified is None:
        return False
    since = parse_http_date(headers.get("if-modified-since"))
    return since is not None and since.timestamp() <= now and last_modified <= since


def _plain(status: int, text: str, extra: list[tuple[str, str]] | None = None) -> Response:
    body = (text + "\n").encode()
    headers = [
        ("Content-Type", _TEXT_TYPE),
        ("Content-Length", str(len(body))),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Robots-Tag", "noindex"),
    ]
    return Response(status, headers + (extra or []), body)
