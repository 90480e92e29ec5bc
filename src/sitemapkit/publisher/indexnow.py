"""IndexNow: tell search engines which URLs were added, changed or removed.

IndexNow (https://www.indexnow.org/) is the one push protocol that works today: a POST of up to 10,000 URLs
of one host, proven by a key that the host serves as a text file. The endpoints of the participating engines
share what they receive, so one submission to the shared endpoint reaches them all. sitemapkit has no
sitemap "ping" code: Google's ping endpoint was retired in 2023 and Bing's anonymous one in 2022.

    key = generate_key()
    write_key_file("public/", key)               # public/<key>.txt, served as https://HOST/<key>.txt
    ...deploy...
    submit(["https://www.example.com/a"], host="www.example.com", key=key)
    with StateStore(".sitemapkit/state.db", create=False) as store:
        submit_changes(store, host="www.example.com", key=key)   # what changed since the last submission

`submit_changes` reads the state store that `sitemapkit generate --state` keeps and records its progress
there after every accepted request, so a run that stops (a 403, a 429 that does not pass, an interrupt)
is resumed by the next one: nothing accepted is sent again, nothing is missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import re
import secrets
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from sitemapkit.core.diagnostics import Diagnostic, DiagnosticHandler, DiagnosticLog
from sitemapkit.core.errors import InvalidUrlError, PublishError, SitemapkitError, UsageError
from sitemapkit.core.files import atomic_write
from sitemapkit.core.model import UrlEntry
from sitemapkit.core.urls import normalize_url
from sitemapkit.generator.state import StateStore, UrlChange
from sitemapkit.reader.fetch import RETRY_STATUSES, Fetcher, FetchError, FetchOptions, FetchResponse
from sitemapkit.reader.polite import Politeness

DEFAULT_ENDPOINT = "https://api.indexnow.org/indexnow"
"""The shared IndexNow endpoint: the engines that take part (Bing, Yandex, Seznam, Naver...) share it."""

MAX_BATCH = 10_000
"""Most URLs the protocol accepts in one request."""

MARKER = "indexnow"
"""The state-store marker (and progress name) that `submit_changes` uses by default."""

DEFAULT_OPTIONS = FetchOptions(retries=5, backoff_base=2.0, backoff_max=60.0, retry_after_max=60.0)
"""Retries for submissions: 429 asks to slow down, so the waits are longer than for reading sitemaps."""

KEY_PATTERN = re.compile(r"[A-Za-z0-9-]{8,128}")
SAMPLE = 3  # URLs of each request kept for display
_BODY_SNIPPET = 300
_ANSWER_LIMIT = _BODY_SNIPPET * 4  # most bytes of a refusal's body read for its explanation
_ANSWER_SECONDS = 10.0  # most time spent reading them, in all (the read timeout, if shorter)
_ASCII_SPACE = " \t\r\n"
_KEY_FILE_LIMIT = 1024
_EXPLAIN = {
    400: "bad request: the endpoint could not understand the submission",
    403: (
        "forbidden: the engine does not accept the key for {host} (it found no key file at {key_url}, or one "
        "with other content); check that the file is served to every client, then rerun"
    ),
    422: (
        "unprocessable: the engine says some URLs do not belong to {host}, or the key does not match the "
        "protocol's format"
    ),
}


class IndexNowError(SitemapkitError):
    """A submission stopped. `status` is the endpoint's HTTP status (None for a connection failure or a
    key-file problem); `resumable` says the progress so far was recorded, so running `submit_changes` again
    resumes; `result` is the `SubmitResult` up to the stop (set when submitting started)."""

    def __init__(self, message: str, *, status: int | None = None, resumable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.resumable = resumable
        self.result: SubmitResult | None = None


class KeyFileError(IndexNowError):
    """The key file is not served at its URL, or serves something other than the key."""


# -- keys ---------------------------------------------------------------------------------------------------


def check_key(key: str) -> str:
    """Return `key` if it is a valid IndexNow key (8 to 128 of `a-z A-Z 0-9 -`), else raise `UsageError`."""
    if not KEY_PATTERN.fullmatch(key):
        bad = sorted({c for c in key if not (c.isascii() and (c.isalnum() or c == "-"))})
        why = (
            f"it has {len(key)} characters (8 to 128 are allowed)"
            if not bad
            else "it may only hold the letters a-z and A-Z, digits and '-' (found "
            + " ".join(repr(c) for c in bad)
            + ")"
        )
        raise UsageError(f"not a valid IndexNow key: {why}")
    return key


def generate_key(length: int = 32) -> str:
    """A new random key of `length` hexadecimal characters (8 to 128; 32 by default, 128 bits)."""
    if not 8 <= length <= 128:
        raise UsageError(f"a key has 8 to 128 characters (asked for {length})")
    return secrets.token_hex((length + 1) // 2)[:length]


def write_key_file(out_dir: str | os.PathLike[str], key: str) -> Path:
    """Write the key file `<key>.txt` (its content: the key) into `out_dir`, atomically, and return its path.

    The folder is created if missing; nothing is written anywhere else (a valid key is a plain file name).
    A key file that already holds the key is left as it is; a file of that name with other content is
    refused with `PublishError`.
    """
    check_key(key)
    folder = Path(out_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PublishError(f"{folder}: cannot create the folder ({exc.strerror or exc})") from None
    if not folder.is_dir():
        raise PublishError(f"{folder}: not a folder")
    path = folder / f"{key}.txt"
    if path.is_symlink() or path.exists():
        try:
            current = path.read_bytes()
        except OSError as exc:
            raise PublishError(f"{path}: exists and cannot be read ({exc.strerror or exc})") from None
        if current.strip(_ASCII_SPACE.encode("ascii")) == key.encode("ascii"):
            return path
        raise PublishError(f"{path} exists with other content; move it away to write the key file")
    try:
        with atomic_write(path, "w", encoding="ascii") as f:  # mode from the umask, like the sitemaps
            f.write(key)
    except OSError as exc:
        raise PublishError(f"{path}: cannot be written ({exc.strerror or exc})") from None
    return path


# -- the host and its scope ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Site:
    """The host URLs are submitted for, the key, and where the key file is served.

    `host` is the authority sent as `host` (`www.example.com`, or `127.0.0.1:8080`); `scheme` is used for
    the default key file URL `scheme://host/<key>.txt`. With `key_location`, only URLs in its folder or below
    can be submitted (the protocol's rule for a key file not at the root).
    """

    scheme: str
    host: str
    key: str
    key_location: str | None = None

    @classmethod
    def make(cls, host: str, key: str, key_location: str | None = None) -> Site:
        """Check and normalise the parts: `host` is a host name (https is assumed) or an origin such as
        `http://127.0.0.1:8080`; `key_location` must be an http(s) URL on that host. Raises `UsageError`."""
        check_key(key)
        scheme, netloc = parse_host(host)
        location = None
        if key_location is not None:
            try:
                location = normalize_url(key_location)
            except InvalidUrlError as exc:
                raise UsageError(f"key location: {exc}") from None
            parts = urlsplit(location)
            if parts.netloc != netloc:
                raise UsageError(
                    f"the key location {location} is not on the host {netloc}: the key file must be served "
                    "by the host whose URLs it vouches for"
                )
            if parts.fragment or parts.path.endswith("/"):
                raise UsageError(f"the key location {location} must name a file (no fragment, no final '/')")
        return cls(scheme, netloc, key, location)

    @property
    def key_url(self) -> str:
        """Where the key file must be served."""
        return self.key_location or f"{self.scheme}://{self.host}/{self.key}.txt"

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{self.host}/"

    @property
    def prefix(self) -> str:
        """The path every submitted URL must start with: `/`, or the key location's folder."""
        if self.key_location is None:
            return "/"
        path = urlsplit(self.key_location).path
        return path[: path.rfind("/") + 1]

    @property
    def scope(self) -> str:
        return self.host + self.prefix

    def explain(self, url: str) -> str | None:
        """Why the normalised `url` cannot be submitted for this site, or None when it can (http or https)."""
        parts = urlsplit(url)
        if parts.netloc != self.host:
            return f"not on the host {self.host}"
        if not (parts.path or "/").startswith(self.prefix):
            return f"not under {self.prefix}, the folder of the key location {self.key_location}"
        return None


def parse_host(text: str) -> tuple[str, str]:
    """(scheme, authority) of a `--host` value: `www.example.com` (https), `https://www.example.com/`, or
    `http://127.0.0.1:8080` for a local test. Host names are lowercased and IDNA-encoded.
    Raises `UsageError`."""
    raw = text.strip()
    candidate = raw if "://" in raw else f"https://{raw}"
    try:
        url = normalize_url(candidate)
    except InvalidUrlError as exc:
        raise UsageError(f"not a usable host {text!r} ({exc.reason})") from None
    parts = urlsplit(url)
    if parts.path != "/" or parts.query or parts.fragment or url.endswith("?"):
        raise UsageError(
            f"the host {text!r} has a path; give the host alone (a key file in a folder goes in the key "
            "location)"
        )
    return parts.scheme, parts.netloc


# -- results ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BatchResult:
    """One request: its number (from 1), how many URLs, the first few and the last, the status the
    endpoint gave (None in a dry run) and after how many attempts."""

    number: int
    size: int
    first_urls: tuple[str, ...]
    last_url: str
    status: int | None
    attempts: int

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"first_urls": list(self.first_urls)}


@dataclass(slots=True)
class SubmitResult:
    """What a submission did (or, in a dry run, would do).

    `submitted`: URLs accepted (200 or 202), or that would be sent; `skipped`: URLs that cannot be
    submitted for the host (reported as diagnostics); `duplicates`: repeated URLs sent once. For changes
    from the state store: `added`/`changed`/`removed` count the submitted URLs by kind, `since_run` is the
    run the last complete submission reached, `to_run` the run this one covers, `resumed` says it continued
    a stopped one, `previously_submitted` how many URLs that one had sent. `complete` is False after a stop.
    """

    host: str
    endpoint: str
    key_url: str
    key_location: str | None
    dry_run: bool
    batches: list[BatchResult] = field(default_factory=list)
    submitted: int = 0
    skipped: int = 0
    duplicates: int = 0
    added: int = 0
    changed: int = 0
    removed: int = 0
    since_run: int | None = None
    to_run: int | None = None
    resumed: bool = False
    previously_submitted: int = 0
    key_checked: bool = False
    complete: bool = False
    error: str | None = None
    diagnostics: DiagnosticLog = field(default_factory=lambda: DiagnosticLog(keep=1000), repr=False)

    @property
    def requests(self) -> int:
        return len(self.batches)

    @property
    def last_url(self) -> str | None:
        """The last URL of the last accepted request."""
        return self.batches[-1].last_url if self.batches else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "endpoint": self.endpoint,
            "key_url": self.key_url,
            "key_location": self.key_location,
            "dry_run": self.dry_run,
            "complete": self.complete,
            "error": self.error,
            "submitted": self.submitted,
            "requests": self.requests,
            "skipped": self.skipped,
            "duplicates": self.duplicates,
            "added": self.added,
            "changed": self.changed,
            "removed": self.removed,
            "since_run": self.since_run,
            "to_run": self.to_run,
            "resumed": self.resumed,
            "previously_submitted": self.previously_submitted,
            "key_checked": self.key_checked,
            "batches": [b.to_dict() for b in self.batches],
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }


# -- HTTP ---------------------------------------------------------------------------------------------------


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _snippet(body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()
    text = " ".join(text.split())
    return text[:_BODY_SNIPPET] + ("..." if len(text) > _BODY_SNIPPET else "")


async def _averify_key(site: Site, options: FetchOptions) -> str:
    url = site.key_url
    hint = (
        f"publish {site.key}.txt (content: the key) at the root of the site"
        if site.key_location is None
        else "publish the key file there (content: the key)"
    )
    # The key file is on the host the user named (--host): its origin is trusted by the fetch policy. A
    # redirect to another host is judged below, with a message about the key file.
    policy = dataclasses.replace(options.policy, follow_cross_host=True).trusting(url)
    options = dataclasses.replace(options, policy=policy)
    try:
        async with Fetcher(options) as fetcher:
            got = await fetcher.get(url, limit=_KEY_FILE_LIMIT)
    except FetchError as exc:
        raise KeyFileError(f"the key file {url} cannot be fetched ({exc.reason}); nothing was sent") from None
    where = urlsplit(got.final_url).netloc
    if where != site.host:
        raise KeyFileError(
            f"the key file {url} redirects to another host ({got.final_url}); search engines look for it on "
            f"{site.host}: serve it there directly, or check --host; nothing was sent"
        )
    if got.status != 200:
        reason = "not found" if got.status in (404, 410) else f"HTTP {got.status}"
        raise KeyFileError(f"the key file {url} is not served ({reason}): {hint}; nothing was sent")
    body = got.body
    problem: str | None = None
    if got.truncated:
        problem = f"it serves more than {_KEY_FILE_LIMIT} bytes, not just the key"
    elif body.startswith(b"\xef\xbb\xbf"):
        problem = "it starts with a UTF-8 byte order mark; save it without one"
    else:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            problem = "it is not UTF-8 text"
        else:
            if text.strip(_ASCII_SPACE) != site.key:  # str.strip() would also take '\x1c' or NBSP
                if text.strip() == site.key:  # other whitespace around it
                    extra = sorted({c for c in text.replace(site.key, "", 1) if c not in _ASCII_SPACE})
                    problem = (
                        f"it serves the key with {' '.join(ascii(c) for c in extra)} around it; only spaces, "
                        "tabs, CR and LF may surround the key"
                    )
                else:
                    looks = "an HTML page" if text.lstrip()[:1] == "<" else repr(_snippet(body)[:80])
                    problem = f"it serves {looks}, not the key {site.key}"
    if problem is not None:
        raise KeyFileError(f"the key file {url} does not hold the key: {problem}; nothing was sent")
    return url


def verify_key(
    key: str, *, host: str, key_location: str | None = None, options: FetchOptions | None = None
) -> str:
    """Check that the key file is served at its URL (`https://HOST/KEY.txt`, or `key_location`): HTTP 200
    and a body that is the key (spaces, tabs, CR and LF around it allowed, no other whitespace). Returns
    the URL checked; raises `KeyFileError` saying what is wrong. Must not be called from a running event
    loop."""
    site = Site.make(host, key, key_location)
    return asyncio.run(_averify_key(site, options or DEFAULT_OPTIONS))


class _Sender:
    """POSTs batches to the endpoint through the fetcher's one retry loop (`Fetcher.send`): 429, 5xx and
    connection failures are retried, each attempt paced by the run's politeness layer, a `Retry-After`
    holding the endpoint's origin back. The endpoint is an address the user named: its origin is trusted
    by the fetch policy, no robots.txt is consulted for it, no redirect followed."""

    def __init__(self, site: Site, endpoint: str, options: FetchOptions) -> None:
        self.site = site
        self.endpoint = endpoint
        self.options = options
        self._fetcher = Fetcher(dataclasses.replace(options, policy=options.policy.trusting(endpoint)))

    async def aclose(self) -> None:
        await self._fetcher.aclose()

    def body(self, urls: list[str]) -> bytes:
        data: dict[str, Any] = {"host": self.site.host, "key": self.site.key}
        if self.site.key_location is not None:
            data["keyLocation"] = self.site.key_location
        data["urlList"] = urls
        return json.dumps(data, ensure_ascii=False).encode("utf-8")

    async def post(self, urls: list[str]) -> tuple[int, int]:
        """Send one batch; return (status, attempts) on 200 or 202, else raise `IndexNowError`.

        The status decides as soon as the headers arrive: only a request that got no answer (a connection
        failure before the status line), or a 429 or 5xx, is sent again, never one that was accepted. The
        body is read only for the explanation of a refusal, and at most `_ANSWER_LIMIT` bytes within
        `_ANSWER_SECONDS`. A `Retry-After` longer than `retry_after_max` ends the retries: the error says so.
        """
        opts = self.options
        # identity: the explanation is read as it comes from the wire, with no decoder in between
        headers = {"Content-Type": "application/json; charset=utf-8", "Accept-Encoding": "identity"}
        status: int | None = None
        attempts = 0
        retry_after: str | None = None
        location = "?"
        answer = b""
        try:
            async with self._fetcher.send(
                "POST", self.endpoint, content=self.body(urls), headers=headers
            ) as r:
                status, attempts = r.status, r.attempts
                retry_after = r.headers.get("retry-after")
                location = r.headers.get("location", "?")
                if status not in (200, 202):
                    answer = await _read_answer(r, opts)
        except (FetchError, httpx.TransportError) as exc:
            if status is None:  # no answer, after the retries (or none: a host name that does not exist)
                why = exc.reason if isinstance(exc, FetchError) else _describe(exc)
                raise IndexNowError(f"{self.endpoint} could not be reached: {why}", resumable=True) from None
            # answered: closing the connection afterwards failed, which changes nothing
        if status in (200, 202):
            return status, attempts
        said = f" (the endpoint said: {_snippet(answer)})" if answer.strip() else ""
        tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
        if status == 429 or 500 <= status <= 599:
            what = "429 Too Many Requests" if status == 429 else f"HTTP {status}"
            wanted = opts.retry_after(retry_after, capped=False)
            if wanted is not None and wanted > opts.retry_after_max:
                raise IndexNowError(
                    f"{self.endpoint} answered {what} and asks to wait {wanted:,.0f} s, longer than the "
                    f"{opts.retry_after_max:g} s allowed{said}",
                    status=status,
                    resumable=True,
                )
            if status not in RETRY_STATUSES:
                message = f"answered {what}, a server error that a retry would not mend (not retried)"
            else:
                message = f"still answered {what} after {tries}"
                if attempts <= opts.retries:  # the retry loop stopped early: a further wait passes a bound
                    message += (
                        f" (a further wait would pass the {opts.retry_budget:g} s of waits a run may "
                        f"spend, or the {opts.max_duration:g} s a request may take)"
                    )
            raise IndexNowError(f"{self.endpoint} {message}{said}", status=status, resumable=True)
        explain = _EXPLAIN.get(status)
        if explain is not None:
            message = explain.format(host=self.site.host, key_url=self.site.key_url)
        elif 300 <= status < 400:
            message = (
                f"HTTP {status}, a redirect to {location}; submissions are not "
                "redirected: give that address as the endpoint"
            )
        else:
            message = f"unexpected HTTP {status}; is {self.endpoint} an IndexNow endpoint?"
        raise IndexNowError(f"{self.endpoint} answered {status}: {message}{said}", status=status)


async def _read_answer(response: FetchResponse, options: FetchOptions) -> bytes:
    """The start of a response body, for an explanation: at most `_ANSWER_LIMIT` bytes, read within
    `_ANSWER_SECONDS` in all (or the read timeout, if shorter). A body that comes slower than that, or a
    connection that fails while it comes, leaves what arrived so far."""
    clock = options.monotonic
    deadline = clock() + min(options.read_timeout, _ANSWER_SECONDS)
    answer = bytearray()
    pieces = response.aiter_bytes()
    try:
        while len(answer) < _ANSWER_LIMIT:
            remaining = deadline - clock()
            if remaining <= 0:
                break
            try:
                async with asyncio.timeout(remaining):  # not wait_for, which can drop a cancellation (3.11)
                    answer += await anext(pieces)
            except (StopAsyncIteration, TimeoutError, FetchError):
                break
    finally:
        close = getattr(pieces, "aclose", None)  # an async generator: let it go at once
        if close is not None:
            await close()
    return bytes(answer[:_ANSWER_LIMIT])


def _check_endpoint(endpoint: str) -> str:
    try:
        url = httpx.URL(endpoint)
    except (httpx.InvalidURL, ValueError):
        url = None
    if url is None or url.scheme not in ("http", "https") or not url.host:
        raise UsageError(f"the endpoint must be an http(s) URL (got {endpoint!r})")
    return endpoint


def _check_batch_size(batch_size: int) -> int:
    if not 1 <= batch_size <= MAX_BATCH:
        raise UsageError(f"the batch size must be 1 to {MAX_BATCH:,} (got {batch_size})")
    return batch_size


class _Run:
    """One submission: key check before the first request, then each batch in turn."""

    def __init__(
        self,
        site: Site,
        endpoint: str,
        options: FetchOptions,
        result: SubmitResult,
        *,
        verify: bool,
        on_batch: Callable[[BatchResult], None] | None,
    ) -> None:
        self.site = site
        self.endpoint = endpoint
        # One politeness layer for the run, the key check's and every POST's: pacing and Retry-After holds
        # (robots.txt is not consulted: the host and the endpoint are addresses the user named).
        self.options = options
        if options.politeness is None:
            polite = Politeness(
                user_agent=options.user_agent,
                obey_robots=False,
                per_host=options.per_host,
                clock=options.monotonic,
                sleep=options.sleep,
            )
            self.options = dataclasses.replace(options, politeness=polite)
        self.result = result
        self.verify = verify
        self.on_batch = on_batch
        self.sender: _Sender | None = None

    async def send(self, urls: list[str]) -> BatchResult:
        result = self.result
        status: int | None = None
        attempts = 0
        if not result.dry_run:
            if self.sender is None:
                if self.verify:
                    await _averify_key(self.site, self.options)
                    result.key_checked = True
                self.sender = _Sender(self.site, self.endpoint, self.options)
            status, attempts = await self.sender.post(urls)
        batch = BatchResult(
            len(result.batches) + 1, len(urls), tuple(urls[:SAMPLE]), urls[-1], status, attempts
        )
        result.batches.append(batch)
        result.submitted += len(urls)
        if self.on_batch is not None:
            self.on_batch(batch)
        return batch

    async def aclose(self) -> None:
        if self.sender is not None:
            await self.sender.aclose()


def _fail(exc: IndexNowError, result: SubmitResult) -> IndexNowError:
    result.complete = False
    result.error = str(exc)
    exc.result = result
    return exc


# -- submitting a list --------------------------------------------------------------------------------------


def read_url_file(name: str, *, on_diagnostic: DiagnosticHandler | None = None) -> Iterator[UrlEntry]:
    """The URLs of an input file, as entries naming the file and line: a URL list (one URL a line; extra
    fields, `#` comments and blank lines ignored), a `.csv` with a `loc` column or a `.jsonl` file; `.gz`
    works and `-` reads standard input (JSONL, a CSV or a URL list, told by its first bytes, as
    `generate -` tells them). Lines that cannot be read are reported (`bad-line`)."""
    from sitemapkit.generator.sources.lists import read_records

    def report(diagnostic: Diagnostic) -> None:
        if on_diagnostic is not None and diagnostic.code == "bad-line":
            on_diagnostic(diagnostic)

    for record in read_records(name, report):
        if isinstance(record, UrlEntry):
            yield UrlEntry(record.loc, sitemap=record.sitemap, line=record.line)
        else:
            yield UrlEntry(record.loc, sitemap=record.source, line=record.line)


def _accept(site: Site, item: str | UrlEntry, log: DiagnosticLog) -> str | None:
    """The normalised URL of `item` if it can be submitted for `site`; else report it and return None."""
    if isinstance(item, UrlEntry):
        loc, source, line = item.loc, item.sitemap, item.line
    else:
        loc, source, line = item, None, None
    try:
        url = normalize_url(loc, base_url=site.origin)
    except InvalidUrlError as exc:
        log.add(Diagnostic.make(exc.code, f"{exc}; not submitted", source=source, line=line, url=loc.strip()))
        return None
    reason = site.explain(url)
    if reason is not None:
        log.add(
            Diagnostic.make("url-not-allowed", f"{reason}; not submitted", source=source, line=line, url=url)
        )
        return None
    return url


def submit(
    urls: Iterable[str | UrlEntry],
    *,
    host: str,
    key: str,
    key_location: str | None = None,
    endpoint: str = DEFAULT_ENDPOINT,
    batch_size: int = MAX_BATCH,
    dry_run: bool = False,
    verify: bool = True,
    options: FetchOptions | None = None,
    on_batch: Callable[[BatchResult], None] | None = None,
    on_diagnostic: DiagnosticHandler | None = None,
) -> SubmitResult:
    """Submit `urls` (strings, or `UrlEntry` objects whose file and line name them in diagnostics).

    Each URL is normalised (a relative one resolved against the host); URLs not on the host (or not under
    the key location's folder) are reported (`url-not-allowed`) and skipped, repeats sent once. Before the
    first request the key file is checked (`verify_key`; `verify=False` skips it). Requests of at most
    `batch_size` URLs go to `endpoint`; 200 and 202 are success, 429, 5xx and connection failures are
    retried (`options`: `retries`, backoff, `Retry-After` up to `retry_after_max`, `retry_budget` for the
    run), anything else stops. Every request goes through the fetcher's one retry loop and the run's
    politeness layer (`options.politeness`, else one of the run's own): paced, held by `Retry-After`.

    Raises `UsageError` for a bad key, host, key location, endpoint or batch size, and `IndexNowError`
    (with `.result`: what was accepted before the stop) when the submission stopped or no URL could be
    submitted. `dry_run` sends nothing. Must not be called from a running event loop.
    """
    site = Site.make(host, key, key_location)
    _check_endpoint(endpoint)
    _check_batch_size(batch_size)
    opts = options or DEFAULT_OPTIONS
    result = SubmitResult(site.host, endpoint, site.key_url, site.key_location, dry_run)
    result.diagnostics = DiagnosticLog(on_diagnostic, keep=1000)
    accepted: list[str] = []
    seen: set[str] = set()
    given = 0
    for item in urls:
        given += 1
        url = _accept(site, item, result.diagnostics)
        if url is None:
            result.skipped += 1
        elif url in seen:
            result.duplicates += 1
            where = item if isinstance(item, UrlEntry) else None
            result.diagnostics.add(
                Diagnostic.make(
                    "duplicate-url",
                    "already listed; submitted once",
                    source=where.sitemap if where else None,
                    line=where.line if where else None,
                    url=url,
                )
            )
        else:
            seen.add(url)
            accepted.append(url)
    del seen
    if given and not accepted and result.skipped:
        raise _fail(
            IndexNowError(
                f"none of the {result.skipped:,} URLs can be submitted for {site.scope} (see the "
                "diagnostics); is the host right?"
            ),
            result,
        )

    async def run() -> None:
        job = _Run(site, endpoint, opts, result, verify=verify, on_batch=on_batch)
        try:
            for start in range(0, len(accepted), batch_size):
                await job.send(accepted[start : start + batch_size])
        finally:
            await job.aclose()

    try:
        asyncio.run(run())
    except IndexNowError as exc:
        exc.resumable = False  # nothing is recorded for a list: `result` says what was accepted
        raise _fail(exc, result) from None
    result.complete = True
    return result


# -- submitting the changes recorded in the state store -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Progress:
    """How far a stopped submission got. `segments` are (bound, run) pairs with increasing bounds: the URLs
    up to and including the first bound were submitted as of its run, those after it up to the next bound as
    of that run, and so on; URLs after the last bound are as of `since` (the marker)."""

    since: int
    scope: str
    segments: tuple[tuple[str, int], ...]
    submitted: int

    def dumps(self) -> str:
        return json.dumps(
            {
                "version": 1,
                "since": self.since,
                "scope": self.scope,
                "segments": [list(s) for s in self.segments],
                "submitted": self.submitted,
            }
        )

    @classmethod
    def loads(cls, text: str | None) -> _Progress | None:
        if not text:
            return None
        try:
            data = json.loads(text)
            segments = tuple((str(b), int(r)) for b, r in data["segments"])
            progress = cls(int(data["since"]), str(data["scope"]), segments, int(data["submitted"]))
        except (ValueError, KeyError, TypeError):
            return None
        return progress if data.get("version") == 1 else None

    def advance(self, url: str, run: int, count: int) -> _Progress:
        """After URLs up to `url` were submitted as of `run`."""
        merged: list[tuple[str, int]] = [(url, run)]
        for bound, r in self.segments:
            if bound <= url:
                continue
            if r == merged[-1][1]:
                merged[-1] = (bound, r)
            else:
                merged.append((bound, r))
        return dataclasses.replace(self, segments=tuple(merged), submitted=self.submitted + count)


@contextlib.contextmanager
def _closing(changes: Iterator[UrlChange]) -> Iterator[Iterator[UrlChange]]:
    """Close a stream of changes (its SQLite statement) even when it is left early."""
    try:
        yield changes
    finally:
        close = getattr(changes, "close", None)
        if close is not None:
            close()


def _pending(reader: StateStore, since: int, segments: tuple[tuple[str, int], ...]) -> Iterator[UrlChange]:
    """The changes still to submit, in URL order: for each progress segment, the changes after its run
    within its URL range; after the last bound, the changes after `since`."""
    lower: str | None = None
    for bound, run in segments:
        with _closing(reader.iter_changes(run)) as changes:
            for change in changes:
                if lower is not None and change.url <= lower:
                    continue
                if change.url > bound:
                    break
                yield change
        lower = bound
    with _closing(reader.iter_changes(since)) as changes:
        for change in changes:
            if lower is None or change.url > lower:
                yield change


def _any_in_scope(reader: StateStore, site: Site) -> bool:
    with _closing(reader.iter_changes(0)) as present:
        return any(site.explain(change.url) is None for change in present)


def submit_changes(
    store: StateStore | str | os.PathLike[str],
    *,
    host: str,
    key: str,
    key_location: str | None = None,
    endpoint: str = DEFAULT_ENDPOINT,
    batch_size: int = MAX_BATCH,
    dry_run: bool = False,
    verify: bool = True,
    options: FetchOptions | None = None,
    marker: str = MARKER,
    on_batch: Callable[[BatchResult], None] | None = None,
    on_diagnostic: DiagnosticHandler | None = None,
) -> SubmitResult:
    """Submit the URLs added, changed or removed since the last complete submission, from the state store
    that `sitemapkit generate --state` keeps (a `StateStore`, or its path).

    The first time (no marker yet) every present URL counts as added; `mark_submitted` skips that. After
    every accepted request the progress is saved in the store; when all is sent, the marker `marker` moves to
    the last run and the progress is cleared. A stopped run (`IndexNowError` with `resumable`) is resumed by
    the next call: URLs already accepted are not sent again, even if builds ran in between (only their newer
    changes are). URLs that cannot be submitted for the host are reported and skipped; when no URL of the
    store is on the host at all, `IndexNowError` is raised and nothing is marked. `dry_run` sends nothing
    and writes nothing. Otherwise as `submit`.
    """
    site = Site.make(host, key, key_location)
    _check_endpoint(endpoint)
    _check_batch_size(batch_size)
    opts = options or DEFAULT_OPTIONS
    own = not isinstance(store, StateStore)
    db = StateStore(store, create=False) if not isinstance(store, StateStore) else store
    try:
        return _submit_changes(
            db, site, endpoint, batch_size, dry_run, verify, opts, marker, on_batch, on_diagnostic
        )
    finally:
        if own:
            db.close()


def _submit_changes(
    store: StateStore,
    site: Site,
    endpoint: str,
    batch_size: int,
    dry_run: bool,
    verify: bool,
    opts: FetchOptions,
    marker: str,
    on_batch: Callable[[BatchResult], None] | None,
    on_diagnostic: DiagnosticHandler | None,
) -> SubmitResult:
    result = SubmitResult(site.host, endpoint, site.key_url, site.key_location, dry_run)
    result.diagnostics = DiagnosticLog(on_diagnostic, keep=1000)
    last = store.last_run()
    since = store.marker(marker) or 0
    result.since_run = since
    if last is None:
        result.complete = True
        return result
    target = last.id
    result.to_run = target
    saved = _Progress.loads(store.progress(marker))
    if saved is not None and (
        saved.since != since
        or saved.scope != site.scope
        or any(not since <= run <= target for _, run in saved.segments)
    ):
        saved = None  # the marker moved, the scope changed, or another database: start from the marker
    if saved is not None:
        result.resumed = True
        result.previously_submitted = saved.submitted
    state = saved or _Progress(since, site.scope, (), 0)
    # A second connection streams the changes, so the progress written after each request is committed at
    # once (on one connection, SQLite would hold those writes until the reading statement ends).
    reader = StateStore(store.path, create=False, timeout=store.timeout)

    async def run() -> None:
        job = _Run(site, endpoint, opts, result, verify=verify, on_batch=on_batch)
        batch: list[UrlChange] = []

        async def flush() -> None:
            nonlocal state
            await job.send([c.url for c in batch])
            for change in batch:
                setattr(result, change.kind, getattr(result, change.kind) + 1)
            if not dry_run:
                state = state.advance(batch[-1].url, target, len(batch))
                store.set_progress(marker, state.dumps())
            batch.clear()

        try:
            with _closing(_pending(reader, since, state.segments)) as changes:
                for change in changes:
                    reason = site.explain(change.url)
                    if reason is not None:
                        result.skipped += 1
                        result.diagnostics.add(
                            Diagnostic.make(
                                "url-not-allowed",
                                f"{reason}; not submitted ({change.kind})",
                                source=str(store.path),
                                url=change.url,
                            )
                        )
                        continue
                    batch.append(change)
                    if len(batch) >= batch_size:
                        await flush()
                if batch:
                    await flush()
        finally:
            await job.aclose()

    try:
        try:
            asyncio.run(run())
        except IndexNowError as exc:
            exc.resumable = not dry_run  # the progress of every accepted request is recorded
            raise _fail(exc, result) from None
        if result.skipped and not result.submitted and not result.resumed and not _any_in_scope(reader, site):
            raise _fail(
                IndexNowError(
                    f"no URL in the state store {store.path} can be submitted for {site.scope}; is the host "
                    "right? Nothing was sent, nothing recorded"
                ),
                result,
            )
    finally:
        reader.close()
    if not dry_run:
        store.mark(marker, target)
        store.set_progress(marker, None)
    result.complete = True
    return result


def mark_submitted(store: StateStore | str | os.PathLike[str], *, marker: str = MARKER) -> int | None:
    """Record the last build as submitted without sending anything (for a site whose existing URLs the
    engines already know): the next `submit_changes` sends only what changes after it. Returns the run
    marked, or None when the store has no run yet."""
    db = StateStore(store, create=False) if not isinstance(store, StateStore) else store
    try:
        if db.last_run() is None:
            return None
        run = db.mark(marker)
        db.set_progress(marker, None)
        return run
    finally:
        if db is not store:
            db.close()
