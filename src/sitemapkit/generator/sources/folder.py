"""A built static site (or a web server's document root) as a source of URL entries.

`scan_folder` walks the folder in sorted order and turns each page into a `FolderPage`: its `UrlEntry` (with
hreflang alternates and, on request, images), the file's path and mtime, and a content hash for change
detection (`content_hash`).

Files and URLs:

- `a/index.html` -> `/a/`, `index.html` -> `/`, `b.html` -> `/b.html` (`/b` with `clean_urls`); `.htm` and
  `.xhtml` likewise. Other files only when an `include` glob selects them (`*.pdf`): their URL is their path.
- Globs are matched without regard to case; a glob without `/` matches the file name, one with `/` the path
  relative to the root (`drafts/*` excludes the folder `drafts` and everything below it).
- Hidden files and folders (a name starting with `.`) are never listed, `.well-known` included: what lives
  there (security.txt, assetlinks.json, ...) is for machines, not a page for a search engine.
- Symbolic links: a linked *file* is listed when its target lies inside the root (a web server serves it);
  a link leading outside the root is skipped, and linked *folders* are never followed (they would list
  pages twice, or leave the root). Both are explained.

Pages left out, each passed to `explain` as a `Skip` and counted in `FolderScan.skipped`:

- `error-page`: an error page by its name: `404.html`, `50x.html`, `5xx.html`, `404/index.html`,
  `not-found.html`, ... (a stem of three characters `4`/`5` + two digits or `x`, or `not-found`/`notfound`).
- `noindex`: `<meta name="robots">` or `<meta name="googlebot">` whose content has `noindex` or `none`
  (any case).
- `redirect`: `<meta http-equiv="refresh">` whose content names a URL other than the page.
- `canonical`: `<link rel="canonical">` naming another URL. That URL is listed *instead*, once, after the
  walk, when it is in scope and is not served by a file of the folder (which is then listed by its own scan,
  or skipped by its own rules); its entry takes the page's alternates, images, mtime and hash.
- `symlink-outside-root`, `symlinked-folder`, `unreadable` (the last also reported as a diagnostic).

Broken pages never stop the walk: an empty file, binary junk named `.html`, a page larger than
`max_page_bytes` or one that cannot be read is reported (`page-unreadable`, naming the file) and left out.
The encoding is taken from a BOM, then `<meta charset>` / `http-equiv` content-type, then UTF-8; a page
that is not valid in it is read as windows-1252 (UTF-8 undeclared) or with replacement characters, with a
warning (`encoding-error`).

Each page is read by `sitemapkit.core.page` (one parse for the metadata, the images and the content hash),
which the crawler and the audit share. selectolax was measured too (see `bench/bench_folder.py`) and not
adopted.

With a state run (`state=`), what each file gave is kept in the store's file cache (`filecache.FileCache`)
under the file's place in the walk and its stamp (size, mtime and ctime in nanoseconds, inode), and a
later scan with the same options (`_fingerprint`) takes it from there without opening the file: the same
pages, skips and diagnostics. What depends on other files (a canonical's target being served by a file)
is decided afresh every time. A file modified within `RACY_NS` of the scan's start is read again next
time; symbolic links are always read. Walk and cache rows advance together in key order (`_walk`), so
nothing grows with the size of the site.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import stat
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, cast
from urllib.parse import quote, unquote

from lxml import etree

from sitemapkit.core.diagnostics import Diagnostic, DiagnosticHandler, Severity
from sitemapkit.core.model import Alternate, Image, UrlEntry
from sitemapkit.core.page import (
    DEFAULT_VOLATILE_SELECTORS,
    Note,
    PageError,
    alternates_of,
    compile_patterns,
    hash_tree,
    images_of,
    parse_html,
    read_head,
    resolve_link,
    volatile_xpath,
)
from sitemapkit.core.urls import Scope

if TYPE_CHECKING:
    from sitemapkit.generator.filecache import FileCache, FileStamp
    from sitemapkit.generator.state import StateRun

HTML_SUFFIXES = (".html", ".htm", ".xhtml")
INDEX_NAMES = ("index.html", "index.htm", "index.xhtml")
DEFAULT_MAX_PAGE_BYTES = 32 * 1024 * 1024
CACHE_VERSION = 1
"""Part of the file cache's fingerprint: bump it when what a scan makes of a file changes."""
RACY_NS = 2_000_000_000
"""A file whose mtime is less than this (2 s) before the scan started, or later, is cached untrusted and
read again by the next run: it may change again within its mtime's granularity without the mtime moving
(git's "racy clean" problem; FAT and some network file systems count in whole or even two seconds)."""

_ERROR_STEM = re.compile(r"[45](?:\d\d|\dx|xx)|not[-_]?found", re.IGNORECASE)
_URL_SAFE = "/!$&'()*+,;=:@-._~"
_PLAIN_PATH = re.compile(r"[A-Za-z0-9/!$&'()*+,;=:@\-._~]*")  # what `quote(safe=_URL_SAFE)` leaves as is


@dataclass(frozen=True, slots=True)
class Skip:
    """A file that was not listed, and why (`reason` is one of the codes in the module docstring)."""

    path: Path
    url: str | None
    reason: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class FolderPage:
    """One listed page: its entry (`entry.sitemap` is the file path), the file, its mtime and content hash."""

    entry: UrlEntry
    file: str
    mtime: float
    content_hash: str

    @property
    def path(self) -> Path:
        """The file as a `Path` (made when asked for: a `Path` per page costs more than a cached page)."""
        return Path(self.file)


def _hash_bytes(path: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------------------
# The walk


class FolderScan(Iterator[FolderPage]):
    """The pages of a folder, as an iterator; counts are complete once it is exhausted.

    `files`: files selected by `include`/`exclude`; `pages`: pages yielded; `skipped`: `Skip` reasons
    counted; `cached`: files whose result came from the state store's file cache, without reading them."""

    def __init__(self, pages: Callable[[FolderScan], Iterator[FolderPage]]) -> None:
        self.files = 0
        self.pages = 0
        self.cached = 0
        self.skipped: Counter[str] = Counter()
        self._it = pages(self)

    def __next__(self) -> FolderPage:
        page = next(self._it)
        self.pages += 1
        return page


_JSON = json.JSONEncoder(separators=(",", ":"))  # json.dumps with options builds an encoder per call


@dataclass(frozen=True, slots=True)
class _Result:
    """What one file gave, before the rules that depend on other files (canonical): the part of a scan
    the file cache keeps. `skip` is (reason, detail) for a page left out by its own content."""

    content_hash: str | None = None
    skip: tuple[str, str] | None = None
    canonical: str | None = None
    alternates: tuple[tuple[str, str], ...] = ()
    images: tuple[str, ...] = ()
    notes: tuple[Note, ...] = ()

    def dump(self) -> str | None:
        """The result without its hash, as text for the file cache: None when there is nothing else; the
        image URLs one a line when there are only images (normalised URLs hold no line break); else JSON."""
        if not (self.skip or self.canonical or self.alternates or self.notes):
            return "\n".join(self.images) if self.images else None
        return _JSON.encode([self.skip, self.canonical, self.alternates, self.images, self.notes])

    @classmethod
    def load(cls, content_hash: str | None, data: str | None) -> _Result:
        """The result `dump` gave `data` for."""
        if data is None:
            return cls(content_hash)
        if not data.startswith("["):
            return cls(content_hash, images=tuple(data.split("\n")))
        skip, canonical, alternates, images, notes = json.loads(data)
        return cls(
            content_hash,
            (skip[0], skip[1]) if skip else None,
            canonical,
            tuple((h, u) for h, u in alternates),
            tuple(images),
            tuple((c, m, v) for c, m, v in notes),
        )


def scan_folder(
    root: str | os.PathLike[str],
    base_url: str,
    *,
    clean_urls: bool = False,
    include: Iterable[str] = ("*.html", "*.htm"),
    exclude: Iterable[str] = (),
    images: bool = False,
    allow_hosts: Iterable[str] = (),
    report: DiagnosticHandler,
    explain: Callable[[Skip], None] | None = None,
    volatile_selectors: Iterable[str] = (),
    volatile_patterns: Iterable[str | re.Pattern[str]] = (),
    max_page_bytes: int = DEFAULT_MAX_PAGE_BYTES,
    state: StateRun | None = None,
    default_files: Iterable[str] | None = None,
) -> FolderScan:
    """The pages of the static site in `root`, published at `base_url` (the URL of `root`), in sorted order.

    See the module docstring for the rules. `report` receives diagnostics (`page-unreadable`,
    `encoding-error`, `invalid-url` for a bad alternate or image URL, as warnings where the page is kept);
    `explain` receives each page left out. Nothing is read until the result is iterated.

    With a `state` run, what each file gave is kept in the state store's file cache (inside the run's
    transaction), and a later scan with the same options takes it from there, without opening the file,
    while the file's size, mtime, ctime and inode are unchanged: the same pages, skips and diagnostics.

    `default_files`: the names a folder's URL serves (default `INDEX_NAMES`): such a file is listed as its
    folder's URL.

    Raises `InvalidUrlError` for a bad `base_url`, `UnsupportedSelectorError` for an unsupported volatile
    selector and `UsageError` for an invalid volatile regular expression.
    """
    scope = Scope(base_url, tuple(allow_hosts))
    index_names = INDEX_NAMES if default_files is None else tuple(n.lower() for n in default_files)
    real_root = os.path.realpath(os.fspath(root))
    includes = tuple(p.lower() for p in include)
    excludes = tuple(p.lower() for p in exclude)
    selectors = tuple(volatile_selectors)
    volatile_xpath(selectors)  # fail early on a bad selector
    patterns = compile_patterns(volatile_patterns)
    fingerprint = _fingerprint(
        scope, tuple(allow_hosts), clean_urls, images, selectors, patterns, max_page_bytes
    )
    if index_names != INDEX_NAMES:
        fingerprint += "|" + "/".join(index_names)

    include_name, include_path = _globs(includes)
    exclude_name, exclude_path = _globs(excludes)

    def selected(rel: str, name: str) -> bool:
        low_rel, low_name = rel.lower(), name.lower()
        return bool(include_name(low_name) or include_path(low_rel)) and not (
            exclude_name(low_name) or exclude_path(low_rel)
        )

    def analyse(path: str, name: str, size: int, url: str, rel: str) -> _Result:
        """Read the file; raises OSError."""
        if not name.lower().endswith(HTML_SUFFIXES):
            return _Result(_hash_bytes(path))
        if size > max_page_bytes:
            return _unreadable(f"{size:,} bytes, more than the {max_page_bytes:,} allowed")
        with open(path, "rb") as f:
            data = f.read()
        return _analyse_html(data, url, rel, scope, images, selectors, patterns)

    def pages(scan: FolderScan) -> Iterator[FolderPage]:
        pending: dict[str, FolderPage] = {}
        cache: FileCache | None = None
        stamp: FileStamp = (0, 0, 0, 0)
        if state is not None:
            from sitemapkit.generator.filecache import file_stamp

            cache = state.file_cache(os.fsencode(real_root), fingerprint)
        trusted_before = time.time_ns() - RACY_NS

        def skip(path: str, url: str | None, reason: str, detail: str = "") -> None:
            scan.skipped[reason] += 1
            if explain is not None:
                explain(Skip(Path(path), url, reason, detail))

        def diag(code: str, message: str, path: str, severity: Severity | None = None) -> None:
            report(Diagnostic.make(code, message, source=path, severity=severity))

        for path, rel, key, is_link in _walk(real_root, skip):
            name = rel.rsplit("/", 1)[-1]
            if not selected(rel, name):
                continue
            scan.files += 1
            if is_link:
                target = os.path.realpath(path)
                if not (target + os.sep).startswith(real_root + os.sep):
                    skip(path, None, "symlink-outside-root", f"links to {target}")
                    continue
            url = _url_of(scope.folder, rel, clean_urls, index_names)
            if _is_error_page(rel):
                skip(path, url, "error-page", "an error page, by its name")
                continue
            try:
                st = os.stat(path)
                if not stat.S_ISREG(st.st_mode):
                    continue
                found = None
                if cache is not None and not is_link:  # a link may change its target, not its own times
                    stamp = file_stamp(st)
                    found = cache.get(key, stamp)
                if found is not None:
                    result = _Result.load(*found)
                    scan.cached += 1
                else:
                    result = analyse(path, name, st.st_size, url, rel)
                    if cache is not None and not is_link:
                        trusted = st.st_mtime_ns < trusted_before
                        cache.put(key, stamp, result.content_hash, result.dump(), trusted=trusted)
            except OSError as exc:
                reason = f"cannot be read ({exc.strerror or exc})"
                diag("page-unreadable", f"{reason}; the page is left out", path)
                skip(path, url, "unreadable", reason)
                continue
            for code, message, severity in result.notes:
                diag(code, message, path, Severity(severity) if severity else None)
            if result.skip is not None:
                skip(path, url, *result.skip)
                continue
            entry = UrlEntry(
                url,
                alternates=tuple(Alternate(h, u) for h, u in result.alternates),
                images=tuple(Image(u) for u in result.images),
                sitemap=path,
            )
            page = FolderPage(entry, path, st.st_mtime, cast(str, result.content_hash))
            canonical = result.canonical
            if canonical is not None:
                if canonical not in scope:
                    skip(
                        path, url, "canonical", f"canonical {canonical} is outside the scope; nothing listed"
                    )
                elif _served_by_file(canonical, scope.folder, real_root, selected):
                    skip(path, url, "canonical", f"canonical {canonical} is listed by its own file")
                elif canonical in pending:
                    skip(path, url, "canonical", f"canonical {canonical} is listed already")
                else:
                    skip(path, url, "canonical", f"canonical {canonical} is listed instead")
                    pending[canonical] = replace(page, entry=replace(entry, loc=canonical))
                continue
            yield page
        if cache is not None:
            cache.close()
        for canonical in sorted(pending):
            yield pending[canonical]

    return FolderScan(pages)


def _globs(patterns: tuple[str, ...]) -> tuple[Callable[[str], object], Callable[[str], object]]:
    """Match functions for the globs without `/` (against the name) and with `/` (the relative path),
    each one regex for all (`fnmatchcase` per glob and file costs a call and a cache lookup each)."""

    def match(group: list[str]) -> Callable[[str], object]:
        if not group:
            return lambda text: None
        return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in group), re.DOTALL).match

    return match([p for p in patterns if "/" not in p]), match([p for p in patterns if "/" in p])


def _fingerprint(
    scope: Scope,
    allow_hosts: tuple[str, ...],
    clean_urls: bool,
    images: bool,
    selectors: tuple[str, ...],
    patterns: tuple[re.Pattern[str], ...],
    max_page_bytes: int,
) -> str:
    """A digest of everything besides a file's bytes that what a scan makes of the file depends on."""
    parts = [
        CACHE_VERSION,
        etree.LXML_VERSION,
        etree.LIBXML_VERSION,
        scope.folder,
        allow_hosts,
        clean_urls,
        images,
        DEFAULT_VOLATILE_SELECTORS,
        selectors,
        [[p.pattern, p.flags] for p in patterns],
        max_page_bytes,
    ]
    text = json.dumps(parts, default=str)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _unreadable(reason: str) -> _Result:
    return _Result(
        skip=("unreadable", reason), notes=(("page-unreadable", f"{reason}; the page is left out", None),)
    )


def _analyse_html(
    data: bytes,
    url: str,
    rel: str,
    scope: Scope,
    images: bool,
    selectors: tuple[str, ...],
    patterns: tuple[re.Pattern[str], ...],
) -> _Result:
    """What the page `data` (served at `url`, the file `rel`) gives: one parse for the metadata, the
    images and the content hash."""
    try:
        root_el, warning = parse_html(data)
    except PageError as exc:
        return _unreadable(str(exc))
    notes: list[Note] = []
    if warning is not None:
        notes.append(("encoding-error", warning, Severity.WARNING.value))
    meta = read_head(root_el)
    base = resolve_link(meta.base, url) if meta.base else url
    base = base or url
    if meta.noindex is not None:
        return _Result(skip=("noindex", meta.noindex), notes=tuple(notes))
    if meta.refresh is not None:
        target_url = resolve_link(meta.refresh, base)
        if target_url is None or target_url != url:
            return _Result(
                skip=("redirect", f"meta refresh to {target_url or meta.refresh!r}"), notes=tuple(notes)
            )
    canonical: str | None = None
    if meta.canonical is not None:
        canonical = resolve_link(meta.canonical, base)
        if canonical is None:
            notes.append(
                (
                    "invalid-url",
                    f"<link rel=canonical> {meta.canonical!r} is not a valid URL; ignored",
                    Severity.WARNING.value,
                )
            )
        elif canonical == url or canonical in _aliases(url, rel):
            canonical = None
    alternates = alternates_of(meta.alternates, base, notes)
    srcs = images_of(root_el, base, scope, notes) if images else ()
    return _Result(hash_tree(root_el, selectors, patterns), None, canonical, alternates, srcs, tuple(notes))


def _walk(
    root: str, skip: Callable[[str, str | None, str, str], None]
) -> Iterator[tuple[str, str, bytes, bool]]:
    """(path, path relative to root with `/`, key, is a symlink) for every non-hidden file, depth first in
    sorted order: in each folder the index page first, then files and sub-folders by name.

    The keys ascend as bytes in the same order, for the file cache's merge with its stored rows: a path's
    names, each as a flag byte (1 for an index page, 2 for any other) and the name in UTF-8 (surrogates
    passed through, which keeps code point order), joined by NUL (below every byte of a name)."""

    def listing(folder: str, prefix: str, key: bytes) -> Iterator[tuple[os.DirEntry[str], str, bytes]]:
        try:
            with os.scandir(folder) as it:
                entries = [e for e in it if not e.name.startswith(".")]
        except OSError:
            return iter(())
        entries.sort(key=lambda e: (e.name not in INDEX_NAMES, e.name))
        return (
            (
                e,
                prefix + e.name,
                key
                + (b"\x01" if e.name in INDEX_NAMES else b"\x02")
                + e.name.encode("utf-8", "surrogatepass"),
            )
            for e in entries
        )

    stack = [listing(root, "", b"")]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            continue
        e, rel, key = item
        try:
            if e.is_dir(follow_symlinks=False):
                stack.append(listing(e.path, rel + "/", key + b"\x00"))
                continue
            link = e.is_symlink()
            if link and os.path.isdir(e.path):
                skip(e.path, None, "symlinked-folder", f"links to {os.path.realpath(e.path)}")
                continue
        except OSError:
            continue
        yield e.path, rel, key, link


def _url_of(folder: str, rel: str, clean_urls: bool, index_names: tuple[str, ...] = INDEX_NAMES) -> str:
    head, _, name = rel.rpartition("/")
    low = name.lower()
    if low in index_names:
        rel = head + "/" if head else ""
    elif clean_urls and low.endswith(HTML_SUFFIXES):
        rel = rel[: rel.rfind(".")]
    if _PLAIN_PATH.fullmatch(rel):  # nothing to quote (the common case; quote takes 3 µs)
        return folder + rel
    return folder + quote(rel, safe=_URL_SAFE, errors="surrogateescape")


def _aliases(url: str, rel: str) -> set[str]:
    """The URLs a web server answers with this file: the page URL, with and without the extension,
    and `index.html` written out."""
    head, _, name = rel.rpartition("/")
    low = name.lower()
    out = {url}
    if low in INDEX_NAMES:
        out.add(url + quote(name))
        if url.endswith("/") and head:
            out.add(url[:-1])
    elif low.endswith(HTML_SUFFIXES):
        stem = name[: name.rfind(".")]
        base = url[: url.rfind("/") + 1]
        out.update({base + quote(stem, safe=_URL_SAFE), base + quote(name, safe=_URL_SAFE)})
    return out


def _is_error_page(rel: str) -> bool:
    parts = rel.split("/")
    name = parts[-1]
    stem, _, ext = name.rpartition(".")
    if ("." + ext.lower()) in HTML_SUFFIXES and _ERROR_STEM.fullmatch(stem):
        return True
    return name.lower() in INDEX_NAMES and len(parts) > 1 and _ERROR_STEM.fullmatch(parts[-2]) is not None


def _served_by_file(url: str, folder: str, root: str, selected: Callable[[str, str], bool]) -> bool:
    """True when a file of the folder serves `url` (so its own scan decides about it)."""
    if not url.startswith(folder) or "?" in url:
        return False
    rel = unquote(url[len(folder) :], errors="surrogateescape")
    if rel.endswith("/") or not rel:
        candidates = [rel + n for n in INDEX_NAMES]
    else:
        candidates = [rel, *(rel + s for s in HTML_SUFFIXES), *(rel + "/" + n for n in INDEX_NAMES)]
    for candidate in candidates:
        if any(part.startswith(".") for part in candidate.split("/")):
            continue
        path = os.path.join(root, *candidate.split("/"))
        if os.path.isfile(path) and selected(candidate, candidate.rsplit("/", 1)[-1]):
            return True
    return False
