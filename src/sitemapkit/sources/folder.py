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

HTML is parsed by libxml2's HTML parser (`lxml.etree.HTMLParser`: no network, comments dropped): one parse
per page serves the metadata, the images and the content hash. selectolax was measured too (see
`bench/bench_folder.py`) and not adopted.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import re
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote, unquote, urljoin

from lxml import etree

from sitemapkit.diagnostics import Diagnostic, DiagnosticHandler, Severity
from sitemapkit.errors import InvalidUrlError
from sitemapkit.model import Alternate, Image, UrlEntry
from sitemapkit.urls import Scope, normalize_url

HTML_SUFFIXES = (".html", ".htm", ".xhtml")
INDEX_NAMES = ("index.html", "index.htm", "index.xhtml")
DEFAULT_MAX_PAGE_BYTES = 32 * 1024 * 1024

DEFAULT_VOLATILE_SELECTORS: tuple[str, ...] = (
    "script",
    "style",
    "noscript",
    "template",
    "[data-build-time]",
    "meta[name=generator]",
    "meta[name=csrf-token]",
    "meta[name=csrf-param]",
    "input[name=csrf_token]",
    "input[name=csrfmiddlewaretoken]",
    "input[name=authenticity_token]",
    "input[name=_token]",
    "input[name=_csrf]",
)
"""Elements left out of `content_hash` by default (CSS selectors; see `css_to_xpath` for the subset)."""

_ERROR_STEM = re.compile(r"[45](?:\d\d|\dx|xx)|not[-_]?found", re.IGNORECASE)
_META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]{1,40})""", re.I)
_XML_DECL = re.compile(r"\A\s*<\?xml[^>]*>")
_REFRESH_URL = re.compile(r"""^\s*\d*(?:\.\d*)?\s*[;,]?\s*(?:url\s*=\s*)?["']?([^"']*)["']?\s*$""", re.I)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f]")
_URL_SAFE = "/!$&'()*+,;=:@-._~"

# Attributes that are content: links, media, alternative text, titles and descriptive metadata.
# Asset references (stylesheets, scripts, preloads) and `nonce`/`integrity` are never hashed: they change
# with every build without any change a reader would see.
_HASHED_ATTRS = etree.XPath(
    "//a/@href | //area/@href | //img/@src | //img/@srcset | //img/@alt | //iframe/@src"
    " | //video/@src | //audio/@src | //source/@src | //object/@data | //embed/@src"
    " | //link[@hreflang]/@hreflang | //link[@hreflang]/@href"
    " | //meta[@name='description' or @name='robots' or @name='googlebot' or @name='keywords'"
    " or starts-with(@property, 'og:')]/@content"
    " | //@title | //@lang | //input[@type='submit' or @type='button']/@value"
)
_TEXT = etree.XPath("//text()")
_HEAD_TAGS = etree.XPath("//meta | //link[@rel] | //base[@href]")
_IMG_SRC = etree.XPath("//img/@src")


def _select(xpath: etree.XPath, root: Any) -> list[Any]:
    return cast(list[Any], xpath(root))


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
    path: Path
    mtime: float
    content_hash: str


# ---------------------------------------------------------------------------------------------------------
# CSS selectors (a small subset) to XPath


_SIMPLE = re.compile(
    r"""(?P<tag>[A-Za-z*][A-Za-z0-9_-]*)?(?P<rest>(?:\#[\w-]+|\.[\w-]+|\[[^\]]+\])*)""", re.VERBOSE
)
_PART = re.compile(
    r"\#([\w-]+)|\.([\w-]+)|\[\s*([\w:-]+)\s*(?:([~^$*|]?=)\s*(\"[^\"]*\"|'[^']*'|[^\]\s]*))?\s*\]"
)


def css_to_xpath(selector: str) -> str:
    """XPath for a CSS selector of the subset: type (`div`, `*`), `#id`, `.class`, `[attr]`, `[attr=v]`,
    `[attr~=v]`, `[attr^=v]`, `[attr$=v]`, `[attr*=v]`, compounds of these, the descendant (space) and child
    (`>`) combinators, and `,` lists. Raises `ValueError` for anything else.

    >>> css_to_xpath("div.ad > span[data-x]")
    "descendant-or-self::div[contains(concat(' ', normalize-space(@class), ' '), ' ad ')]/span[@data-x]"
    """
    alternatives = []
    for group in selector.split(","):
        tokens = group.replace(">", " > ").split()
        if not tokens or tokens[0] == ">" or tokens[-1] == ">":
            raise ValueError(f"unsupported CSS selector {selector!r}")
        path = "descendant-or-self::"
        axis = ""
        for token in tokens:
            if token == ">":
                if axis == "/":
                    raise ValueError(f"unsupported CSS selector {selector!r}")
                axis = "/"
                continue
            path += axis + _simple_to_xpath(token, selector)
            axis = "//"
        alternatives.append(path)
    return " | ".join(alternatives)


def _simple_to_xpath(token: str, selector: str) -> str:
    m = _SIMPLE.fullmatch(token)
    if m is None or (not m["tag"] and not m["rest"]):
        raise ValueError(f"unsupported CSS selector {selector!r}")
    out = (m["tag"] or "*").lower()
    for part in _PART.finditer(m["rest"]):
        ident, cls, attr, op, value = part.groups()
        if ident is not None:
            out += f"[@id={_xpath_str(ident)}]"
        elif cls is not None:
            out += f"[contains(concat(' ', normalize-space(@class), ' '), {_xpath_str(' ' + cls + ' ')})]"
        else:
            a = "@" + attr.lower()
            if op is None:
                out += f"[{a}]"
                continue
            v = value[1:-1] if value[:1] in ("'", '"') else value
            s = _xpath_str(v)
            out += {
                "=": f"[{a}={s}]",
                "~=": f"[contains(concat(' ', normalize-space({a}), ' '), {_xpath_str(' ' + v + ' ')})]",
                "^=": f"[starts-with({a}, {s})]",
                "$=": f"[substring({a}, string-length({a}) - string-length({s}) + 1) = {s}]",
                "*=": f"[contains({a}, {s})]",
                "|=": f"[{a}={s} or starts-with({a}, {_xpath_str(v + '-')})]",
            }[op]
    if "".join(p.group(0) for p in _PART.finditer(m["rest"])) != m["rest"]:
        raise ValueError(f"unsupported CSS selector {selector!r}")
    return out


def _predicate(path: str) -> str:
    """`descendant-or-self::tag[a][b]` as the predicate `(self::tag and (a) and (b))`."""
    step = path.removeprefix("descendant-or-self::")
    tag, _, rest = step.partition("[")
    preds = [f"self::{tag}"] if tag != "*" else []
    depth, start = 0, 0
    body = "[" + rest if rest else ""
    for i, ch in enumerate(body):
        if ch == "[":
            depth += 1
            if depth == 1:
                start = i + 1
        elif ch == "]":
            depth -= 1
            if depth == 0:
                preds.append(f"({body[start:i]})")
    return "(" + (" and ".join(preds) or "true()") + ")"


def _xpath_str(value: str) -> str:
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    return "concat(" + ', "\'", '.join(f"'{p}'" for p in value.split("'")) + ")"


_volatile_cache: dict[tuple[str, ...], etree.XPath] = {}


def _volatile_xpath(extra: tuple[str, ...]) -> etree.XPath:
    xp = _volatile_cache.get(extra)
    if xp is None:
        simple: list[str] = []
        paths: list[str] = []
        for selector in (*DEFAULT_VOLATILE_SELECTORS, *extra):
            for group in selector.split(","):
                if _SIMPLE.fullmatch(group.strip()) and group.strip():
                    simple.append(_predicate(css_to_xpath(group.strip())))
                else:
                    paths.append(css_to_xpath(group))
        xp = etree.XPath(" | ".join([f"//*[{' or '.join(simple)}]", *paths] if simple else paths))
        if len(_volatile_cache) < 64:
            _volatile_cache[extra] = xp
    return xp


# ---------------------------------------------------------------------------------------------------------
# Decoding and parsing


class PageError(Exception):
    """A page that cannot be read as HTML (empty, binary, unparsable)."""


_PARSER = etree.HTMLParser(remove_comments=True, remove_pis=True, no_network=True, default_doctype=False)  # type: ignore[call-arg]
_CP1252_ALIASES = frozenset({"iso-8859-1", "iso8859-1", "latin-1", "latin1", "l1", "us-ascii", "ascii"})


def decode_html(data: bytes) -> tuple[str, str | None]:
    """The text of an HTML page and a warning (or None): BOM, then `<meta charset>`, then UTF-8.
    ISO-8859-1 and ASCII labels mean windows-1252 (as browsers read them).
    Raises `PageError` for empty or binary data."""
    warning: str | None = None
    if data.startswith(codecs.BOM_UTF8):
        encoding, data = "utf-8", data[3:]
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    else:
        if b"\x00" in data[:4096]:
            raise PageError("binary data (NUL bytes), not an HTML page")
        encoding = "utf-8"
        m = _META_CHARSET.search(data, 0, 4096)
        if m is not None:
            label = m.group(1).decode("ascii").lower()
            label = "cp1252" if label in _CP1252_ALIASES else label
            try:
                encoding = codecs.lookup(label).name
            except LookupError:
                warning = f"unknown charset {label!r}; read as UTF-8"
            if encoding in ("utf-16", "utf-16-le", "utf-16-be", "utf-32"):
                encoding = "utf-8"  # a meta tag readable as ASCII cannot be in UTF-16
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        if encoding == "utf-8" and _undeclared(data):
            text = data.decode("cp1252", "replace")
            warning = f"not UTF-8 (byte {exc.start + 1}) and no charset declared; read as windows-1252"
        else:
            text = data.decode(encoding, "replace")
            warning = f"not valid {encoding} (byte {exc.start + 1}); bad bytes replaced"
    if not text.strip():
        raise PageError("empty file")
    sample = text[:4096]
    if "\x00" in sample or len(_CONTROL.findall(sample)) > len(sample) // 10:
        raise PageError("binary data (control characters), not an HTML page")
    return text, warning


def _undeclared(data: bytes) -> bool:
    """True when the page declares no charset in its first 4 KiB."""
    return _META_CHARSET.search(data, 0, 4096) is None


def parse_html(data: bytes) -> tuple[Any, str | None]:
    """The root element of an HTML page and an encoding warning (or None); raises `PageError`."""
    text, warning = decode_html(data)
    if text.lstrip().startswith("<?xml"):
        text = _XML_DECL.sub("", text, count=1)
    try:
        root = etree.fromstring(text, _PARSER)
    except (etree.LxmlError, ValueError) as exc:
        raise PageError(f"cannot be parsed as HTML ({exc})") from None
    if root is None:
        raise PageError("no HTML content")
    return root, warning


# ---------------------------------------------------------------------------------------------------------
# Content hash


def content_hash(
    html_bytes: bytes,
    *,
    volatile_selectors: Iterable[str] = (),
    volatile_patterns: Iterable[str | re.Pattern[str]] = (),
) -> str:
    """A 128-bit BLAKE2b hex digest of what a reader of the page sees, stable across rebuilds.

    Hashed: every text node with its whitespace collapsed (so re-indenting or re-wrapping the HTML changes
    nothing), then the content attributes: link targets, image sources and alternative text, `title`,
    `lang`, hreflang links, and the description/robots/keywords/Open Graph metadata.

    Left out: the elements matched by `DEFAULT_VOLATILE_SELECTORS` (`<script>`, `<style>`, `<noscript>`,
    `<template>`, anything with `data-build-time`, `<meta name="generator">`, CSRF token fields) plus
    `volatile_selectors`; comments; asset references and attributes such as `nonce` and `integrity`; and
    whatever `volatile_patterns` (regular expressions) match in the hashed text, e.g. `r"Built at \\S+"`.

    Raises `PageError` when the bytes are not an HTML page.
    """
    root, _ = parse_html(html_bytes)
    patterns = tuple(re.compile(p) if isinstance(p, str) else p for p in volatile_patterns)
    return _hash_tree(root, tuple(volatile_selectors), patterns)


def _hash_tree(root: Any, selectors: tuple[str, ...], patterns: tuple[re.Pattern[str], ...]) -> str:
    for element in _select(_volatile_xpath(selectors), root):
        _drop(element)
    texts = [" ".join(t.split()) for t in _select(_TEXT, root)]
    attrs = [" ".join(a.split()) for a in _select(_HASHED_ATTRS, root)]
    blob = "\x1f".join(t for t in texts if t) + "\x1e" + "\x1f".join(attrs)
    for pattern in patterns:
        blob = pattern.sub("", blob)
    return hashlib.blake2b(blob.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _drop(element: Any) -> None:
    """Remove `element` and its subtree, keeping the text that follows it."""
    parent = element.getparent()
    if parent is None:
        return
    if element.tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + element.tail
        else:
            parent.text = (parent.text or "") + element.tail
    parent.remove(element)


def _hash_bytes(path: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------------------
# The walk


@dataclass(slots=True)
class _Meta:
    base: str | None = None
    canonical: str | None = None
    noindex: str | None = None
    refresh: str | None = None
    alternates: list[tuple[str, str]] = field(default_factory=list)


def _read_head(root: Any) -> _Meta:
    meta = _Meta()
    for el in _select(_HEAD_TAGS, root):
        tag = el.tag
        if tag == "meta":
            name = (el.get("name") or "").strip().lower()
            if name in ("robots", "googlebot"):
                tokens = re.split(r"[\s,]+", (el.get("content") or "").lower())
                if "noindex" in tokens or "none" in tokens:
                    meta.noindex = f'<meta name="{name}" content="{el.get("content", "").strip()}">'
            elif (el.get("http-equiv") or "").strip().lower() == "refresh" and meta.refresh is None:
                m = _REFRESH_URL.match(el.get("content") or "")
                if m is not None and m.group(1).strip():
                    meta.refresh = m.group(1).strip()
        elif tag == "link":
            rel = (el.get("rel") or "").lower().split()
            href = (el.get("href") or "").strip()
            if not href:
                continue
            if "canonical" in rel and meta.canonical is None:
                meta.canonical = href
            elif "alternate" in rel and el.get("hreflang"):
                meta.alternates.append((el.get("hreflang", "").strip(), href))
        elif tag == "base" and meta.base is None:
            meta.base = (el.get("href") or "").strip() or None
    return meta


class FolderScan(Iterator[FolderPage]):
    """The pages of a folder, as an iterator; counts are complete once it is exhausted.

    `files`: files selected by `include`/`exclude`; `pages`: pages yielded; `skipped`: `Skip` reasons
    counted."""

    def __init__(self, pages: Callable[[FolderScan], Iterator[FolderPage]]) -> None:
        self.files = 0
        self.pages = 0
        self.skipped: Counter[str] = Counter()
        self._it = pages(self)

    def __next__(self) -> FolderPage:
        page = next(self._it)
        self.pages += 1
        return page


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
) -> FolderScan:
    """The pages of the static site in `root`, published at `base_url` (the URL of `root`), in sorted order.

    See the module docstring for the rules. `report` receives diagnostics (`page-unreadable`,
    `encoding-error`, `invalid-url` for a bad alternate or image URL, as warnings where the page is kept);
    `explain` receives each page left out. Nothing is read until the result is iterated.
    Raises `InvalidUrlError` for a bad `base_url` and `ValueError` for an unsupported volatile selector.
    """
    scope = Scope(base_url, tuple(allow_hosts))
    real_root = os.path.realpath(os.fspath(root))
    includes = tuple(p.lower() for p in include)
    excludes = tuple(p.lower() for p in exclude)
    selectors = tuple(volatile_selectors)
    _volatile_xpath(selectors)  # fail early on a bad selector
    patterns = tuple(re.compile(p) if isinstance(p, str) else p for p in volatile_patterns)

    def selected(rel: str, name: str) -> bool:
        low_rel, low_name = rel.lower(), name.lower()

        def hit(pattern: str) -> bool:
            return fnmatchcase(low_rel if "/" in pattern else low_name, pattern)

        return any(map(hit, includes)) and not any(map(hit, excludes))

    def pages(scan: FolderScan) -> Iterator[FolderPage]:
        pending: dict[str, FolderPage] = {}

        def skip(path: Path, url: str | None, reason: str, detail: str = "") -> None:
            scan.skipped[reason] += 1
            if explain is not None:
                explain(Skip(path, url, reason, detail))

        def diag(code: str, message: str, path: str, severity: Severity | None = None) -> None:
            report(Diagnostic.make(code, message, source=path, severity=severity))

        for path, rel, is_link in _walk(real_root, skip):
            name = rel.rsplit("/", 1)[-1]
            if not selected(rel, name):
                continue
            scan.files += 1
            p = Path(path)
            if is_link:
                target = os.path.realpath(path)
                if not (target + os.sep).startswith(real_root + os.sep):
                    skip(p, None, "symlink-outside-root", f"links to {target}")
                    continue
            url = _url_of(scope.folder, rel, clean_urls)
            if _is_error_page(rel):
                skip(p, url, "error-page", "an error page, by its name")
                continue
            try:
                st = os.stat(path)
                if not stat.S_ISREG(st.st_mode):
                    continue
                is_html = name.lower().endswith(HTML_SUFFIXES)
                if not is_html:
                    yield FolderPage(UrlEntry(url, sitemap=path), p, st.st_mtime, _hash_bytes(path))
                    continue
                if st.st_size > max_page_bytes:
                    raise PageError(f"{st.st_size:,} bytes, more than the {max_page_bytes:,} allowed")
                with open(path, "rb") as f:
                    data = f.read()
                root_el, warning = parse_html(data)
            except (OSError, PageError) as exc:
                reason = str(exc)
                if isinstance(exc, OSError):
                    reason = f"cannot be read ({exc.strerror or exc})"
                diag("page-unreadable", f"{reason}; the page is left out", path)
                skip(p, url, "unreadable", reason)
                continue
            if warning is not None:
                diag("encoding-error", warning, path, Severity.WARNING)
            meta = _read_head(root_el)
            base = _resolve(meta.base, url) if meta.base else url
            base = base or url
            if meta.noindex is not None:
                skip(p, url, "noindex", meta.noindex)
                continue
            if meta.refresh is not None:
                target_url = _resolve(meta.refresh, base)
                if target_url is None or target_url != url:
                    skip(p, url, "redirect", f"meta refresh to {target_url or meta.refresh!r}")
                    continue
            canonical: str | None = None
            if meta.canonical is not None:
                canonical = _resolve(meta.canonical, base)
                if canonical is None:
                    diag(
                        "invalid-url",
                        f"<link rel=canonical> {meta.canonical!r} is not a valid URL; ignored",
                        path,
                        Severity.WARNING,
                    )
                elif canonical in _aliases(url, rel):
                    canonical = None
            entry = UrlEntry(
                url,
                alternates=_alternates(meta.alternates, base, path, report),
                images=_images(root_el, base, scope, path, report) if images else (),
                sitemap=path,
            )
            page = FolderPage(entry, p, st.st_mtime, _hash_tree(root_el, selectors, patterns))
            if canonical is not None:
                if canonical not in scope:
                    skip(p, url, "canonical", f"canonical {canonical} is outside the scope; nothing listed")
                elif _served_by_file(canonical, scope.folder, real_root, selected):
                    skip(p, url, "canonical", f"canonical {canonical} is listed by its own file")
                elif canonical in pending:
                    skip(p, url, "canonical", f"canonical {canonical} is listed already")
                else:
                    skip(p, url, "canonical", f"canonical {canonical} is listed instead")
                    pending[canonical] = replace(page, entry=replace(entry, loc=canonical))
                continue
            yield page
        for canonical in sorted(pending):
            yield pending[canonical]

    return FolderScan(pages)


def _walk(root: str, skip: Callable[[Path, str | None, str, str], None]) -> Iterator[tuple[str, str, bool]]:
    """(path, path relative to root with `/`, is a symlink) for every non-hidden file, depth first in sorted
    order: in each folder the index page first, then files and sub-folders by name."""

    def listing(folder: str, prefix: str) -> Iterator[tuple[os.DirEntry[str], str]]:
        try:
            with os.scandir(folder) as it:
                entries = [e for e in it if not e.name.startswith(".")]
        except OSError:
            return iter(())
        entries.sort(key=lambda e: (e.name not in INDEX_NAMES, e.name))
        return ((e, prefix + e.name) for e in entries)

    stack = [listing(root, "")]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            continue
        e, rel = item
        try:
            if e.is_dir(follow_symlinks=False):
                stack.append(listing(e.path, rel + "/"))
                continue
            link = e.is_symlink()
            if link and os.path.isdir(e.path):
                skip(Path(e.path), None, "symlinked-folder", f"links to {os.path.realpath(e.path)}")
                continue
        except OSError:
            continue
        yield e.path, rel, link


def _url_of(folder: str, rel: str, clean_urls: bool) -> str:
    head, _, name = rel.rpartition("/")
    low = name.lower()
    if low in INDEX_NAMES:
        rel = head + "/" if head else ""
    elif clean_urls and low.endswith(HTML_SUFFIXES):
        rel = rel[: rel.rfind(".")]
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


def _resolve(href: str, base: str) -> str | None:
    href = href.strip()
    try:
        joined = urljoin(base, href)
        url = normalize_url(joined)
    except (InvalidUrlError, ValueError):
        return None
    return url.split("#", 1)[0]


def _alternates(
    pairs: list[tuple[str, str]], base: str, path: str, report: DiagnosticHandler
) -> tuple[Alternate, ...]:
    out: dict[tuple[str, str], None] = {}
    for hreflang, href in pairs:
        url = _resolve(href, base)
        if url is None:
            report(
                Diagnostic.make(
                    "invalid-url",
                    f"hreflang {hreflang!r} link {href!r} is not a valid URL; it is left out",
                    source=path,
                    severity=Severity.WARNING,
                )
            )
            continue
        out[(hreflang, url)] = None
    return tuple(Alternate(h, u) for h, u in out)


def _images(root: Any, base: str, scope: Scope, path: str, report: DiagnosticHandler) -> tuple[Image, ...]:
    seen: dict[str, None] = {}
    for src in _select(_IMG_SRC, root):
        src = src.strip()
        if not src or src[:11].lower().startswith(("data:", "javascript:", "blob:")):
            continue
        url = _resolve(src, base)
        if url is None:
            report(
                Diagnostic.make(
                    "invalid-url",
                    f"<img src={src[:200]!r}> is not a valid URL; the image is left out",
                    source=path,
                    severity=Severity.WARNING,
                )
            )
            continue
        if url in scope:
            seen[url] = None
    return tuple(Image(u) for u in seen)
