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

With a state run (`state=`), what each file gave is kept in the store's file cache (`state.FileCache`)
under the file's place in the walk and its stamp (size, mtime and ctime in nanoseconds, inode), and a
later scan with the same options (`_fingerprint`) takes it from there without opening the file: the same
pages, skips and diagnostics. What depends on other files (a canonical's target being served by a file)
is decided afresh every time. A file modified within `RACY_NS` of the scan's start is read again next
time; symbolic links are always read. Walk and cache rows advance together in key order (`_walk`), so
nothing grows with the size of the site.
"""

from __future__ import annotations

import codecs
import fnmatch
import hashlib
import json
import os
import re
import stat
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote, unquote, urljoin

from lxml import etree

from sitemapkit.core.diagnostics import Diagnostic, DiagnosticHandler, Severity
from sitemapkit.core.errors import InvalidUrlError, UsageError
from sitemapkit.core.model import Alternate, Image, UrlEntry
from sitemapkit.core.urls import Scope, normalize_url

if TYPE_CHECKING:
    from sitemapkit.generator.state import FileCache, FileStamp, StateRun

HTML_SUFFIXES = (".html", ".htm", ".xhtml")
INDEX_NAMES = ("index.html", "index.htm", "index.xhtml")
DEFAULT_MAX_PAGE_BYTES = 32 * 1024 * 1024
CACHE_VERSION = 1
"""Part of the file cache's fingerprint: bump it when what a scan makes of a file changes."""
RACY_NS = 2_000_000_000
"""A file whose mtime is less than this (2 s) before the scan started, or later, is cached untrusted and
read again by the next run: it may change again within its mtime's granularity without the mtime moving
(git's "racy clean" problem; FAT and some network file systems count in whole or even two seconds)."""

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
_CONTROL_BYTES = bytes(range(0x09)) + b"\x0b" + bytes(range(0x0E, 0x20))
_URL_SAFE = "/!$&'()*+,;=:@-._~"
_PLAIN_PATH = re.compile(r"[A-Za-z0-9/!$&'()*+,;=:@\-._~]*")  # what `quote(safe=_URL_SAFE)` leaves as is

# Attributes that are content: links, media, alternative text, titles and descriptive metadata.
# Asset references (stylesheets, scripts, preloads) and `nonce`/`integrity` are never hashed: they change
# with every build without any change a reader would see. `_hashed_attrs` collects, in document order:
# `title` and `lang` of any element; the attributes below of their element; `hreflang`/`href` of a
# `<link hreflang>`; `content` of `<meta>` description/robots/googlebot/keywords/`og:*`; `value` of an
# `<input type=submit|button>`.
_HASHED_BY_TAG: dict[str, frozenset[str]] = {
    "a": frozenset({"href"}),
    "area": frozenset({"href"}),
    "img": frozenset({"src", "srcset", "alt"}),
    "iframe": frozenset({"src"}),
    "video": frozenset({"src"}),
    "audio": frozenset({"src"}),
    "source": frozenset({"src"}),
    "object": frozenset({"data"}),
    "embed": frozenset({"src"}),
}
_HASHED_ANY = frozenset({"title", "lang"})
_HASHED_LINK = frozenset({"hreflang", "href"})
_HASHED_META_NAMES = frozenset({"description", "robots", "googlebot", "keywords"})
_HASHED_CONTENT = frozenset({"content"})
_HASHED_VALUE = frozenset({"value"})
_NOTHING: frozenset[str] = frozenset()
_TEXT = etree.XPath("//text()", smart_strings=False)


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
    file: str
    mtime: float
    content_hash: str

    @property
    def path(self) -> Path:
        """The file as a `Path` (made when asked for: a `Path` per page costs more than a cached page)."""
        return Path(self.file)


# ---------------------------------------------------------------------------------------------------------
# CSS selectors (a small subset) to XPath


_SIMPLE = re.compile(
    r"""(?P<tag>[A-Za-z*][A-Za-z0-9_-]*)?(?P<rest>(?:\#[\w-]+|\.[\w-]+|\[[^\]]+\])*)""", re.VERBOSE
)
_PART = re.compile(
    r"\#([\w-]+)|\.([\w-]+)|\[\s*([\w:-]+)\s*(?:([~^$*|]?=)\s*(\"[^\"]*\"|'[^']*'|[^\]\s]*))?\s*\]"
)


class UnsupportedSelectorError(UsageError, ValueError):
    """A volatile selector outside the CSS subset `css_to_xpath` understands (a usage error)."""

    def __init__(self, selector: str) -> None:
        super().__init__(
            f"unsupported CSS selector {selector!r} (supported: type, #id, .class, [attr], [attr=v] and the "
            "~= ^= $= *= |= forms, the descendant and > combinators, and , lists)"
        )


def css_to_xpath(selector: str) -> str:
    """XPath for a CSS selector of the subset: type (`div`, `*`), `#id`, `.class`, `[attr]`, `[attr=v]`,
    `[attr~=v]`, `[attr^=v]`, `[attr$=v]`, `[attr*=v]`, compounds of these, the descendant (space) and child
    (`>`) combinators, and `,` lists. Raises `UnsupportedSelectorError` (a `UsageError` and a `ValueError`)
    for anything else.

    >>> css_to_xpath("div.ad > span[data-x]")
    "descendant-or-self::div[contains(concat(' ', normalize-space(@class), ' '), ' ad ')]/span[@data-x]"
    """
    alternatives = []
    for group in selector.split(","):
        tokens = group.replace(">", " > ").split()
        if not tokens or tokens[0] == ">" or tokens[-1] == ">":
            raise UnsupportedSelectorError(selector)
        path = "descendant-or-self::"
        axis = ""
        for token in tokens:
            if token == ">":
                if axis == "/":
                    raise UnsupportedSelectorError(selector)
                axis = "/"
                continue
            path += axis + _simple_to_xpath(token, selector)
            axis = "//"
        alternatives.append(path)
    return " | ".join(alternatives)


def compile_patterns(patterns: Iterable[str | re.Pattern[str]]) -> tuple[re.Pattern[str], ...]:
    """The volatile regular expressions, compiled; `UsageError` names one that is invalid."""
    compiled = []
    for p in patterns:
        if isinstance(p, str):
            try:
                p = re.compile(p)
            except re.error as exc:
                raise UsageError(f"invalid regular expression {p!r}: {exc}") from None
        compiled.append(p)
    return tuple(compiled)


def _simple_to_xpath(token: str, selector: str) -> str:
    m = _SIMPLE.fullmatch(token)
    if m is None or (not m["tag"] and not m["rest"]):
        raise UnsupportedSelectorError(selector)
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
        raise UnsupportedSelectorError(selector)
    return out


def _split_step(path: str) -> tuple[str, list[str]]:
    """`descendant-or-self::tag[a][b]` as `("tag", ["a", "b"])`."""
    step = path.removeprefix("descendant-or-self::")
    tag, _, rest = step.partition("[")
    preds: list[str] = []
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
                preds.append(body[start:i])
    return tag, preds


def _xpath_str(value: str) -> str:
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    return "concat(" + ', "\'", '.join(f"'{p}'" for p in value.split("'")) + ")"


_volatile_cache: dict[tuple[str, ...], etree.XPath] = {}


def _volatile_xpath(extra: tuple[str, ...]) -> etree.XPath:
    """One XPath for the volatile selectors: compound selectors grouped by element name (`//meta[(a) or
    (b)]`, one pass over the tree per name), the others as they are, all in one union. Much cheaper for
    libxml2 than a single `//*[self::a or self::b ...]` (measured: 11 against 49 µs a page)."""
    xp = _volatile_cache.get(extra)
    if xp is None:
        by_tag: dict[str, list[str] | None] = {}  # None: the bare name, every such element
        paths: list[str] = []
        for selector in (*DEFAULT_VOLATILE_SELECTORS, *extra):
            for group in selector.split(","):
                group = group.strip()
                if group and _SIMPLE.fullmatch(group):
                    tag, preds = _split_step(css_to_xpath(group))
                    conds = by_tag.setdefault(tag, [])
                    if conds is not None:
                        if preds:
                            conds.append(
                                preds[0] if len(preds) == 1 else " and ".join(f"({p})" for p in preds)
                            )
                        else:
                            by_tag[tag] = None
                else:
                    paths.append(css_to_xpath(group))
        for tag, conds in by_tag.items():
            if conds is None:
                paths.append(f"//{tag}")
            else:
                paths.append(
                    f"//{tag}[{conds[0] if len(conds) == 1 else ' or '.join(f'({c})' for c in conds)}]"
                )
        xp = etree.XPath(" | ".join(paths))
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
    if sample.isascii():  # the common case, counted in C (the regex takes 7 µs for 4 KiB)
        raw = sample.encode("ascii")
        controls = len(raw) - len(raw.translate(None, _CONTROL_BYTES))
    else:
        controls = len(_CONTROL.findall(sample))
    if "\x00" in sample or controls > len(sample) // 10:
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
    patterns = compile_patterns(volatile_patterns)
    return _hash_tree(root, tuple(volatile_selectors), patterns)


def _hash_tree(root: Any, selectors: tuple[str, ...], patterns: tuple[re.Pattern[str], ...]) -> str:
    for element in _select(_volatile_xpath(selectors), root):
        _drop(element)
    texts = filter(None, map(" ".join, map(str.split, _select(_TEXT, root))))
    attrs = map(" ".join, map(str.split, _hashed_attrs(root)))
    blob = "\x1f".join(texts) + "\x1e" + "\x1f".join(attrs)
    for pattern in patterns:
        blob = pattern.sub("", blob)
    return hashlib.blake2b(blob.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _hashed_attrs(root: Any) -> list[str]:
    """The content attributes' values in document order (see `_HASHED_BY_TAG`). One pass in Python: half
    the time of the equivalent XPath union (a pass over the tree per term)."""
    out: list[str] = []
    for el in root.iter(etree.Element):
        items = el.items()
        if not items:
            continue
        tag = el.tag
        names = _HASHED_BY_TAG.get(tag, _NOTHING)
        if tag == "link" and el.get("hreflang") is not None:
            names = _HASHED_LINK
        elif tag == "meta" and (
            el.get("name") in _HASHED_META_NAMES or (el.get("property") or "").startswith("og:")
        ):
            names = _HASHED_CONTENT
        elif tag == "input" and el.get("type") in ("submit", "button"):
            names = _HASHED_VALUE
        for name, value in items:
            if name in _HASHED_ANY or name in names:
                out.append(value)
    return out


def _drop(element: Any) -> None:
    """Remove `element` and its subtree, keeping the text that follows it."""
    parent = element.getparent()
    if parent is None:
        return
    if element.tail:
        previous = element.getprevious()
        if previous is not None:
            _set_text(previous, "tail", (previous.tail or "") + element.tail)
        else:
            _set_text(parent, "text", (parent.text or "") + element.tail)
    parent.remove(element)


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _set_text(element: Any, attr: str, text: str) -> None:
    """Set `element.text` or `.tail`. The HTML parser keeps control characters that lxml refuses to set
    (`ValueError`); those become spaces (which, as text, most of them are)."""
    try:
        setattr(element, attr, text)
    except ValueError:
        setattr(element, attr, _NOT_XML.sub(" ", text))


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
    for el in root.iter("meta", "link", "base"):
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
_Note = tuple[str, str, str | None]  # a diagnostic to report: code, message, severity (None: the default)


@dataclass(frozen=True, slots=True)
class _Result:
    """What one file gave, before the rules that depend on other files (canonical): the part of a scan
    the file cache keeps. `skip` is (reason, detail) for a page left out by its own content."""

    content_hash: str | None = None
    skip: tuple[str, str] | None = None
    canonical: str | None = None
    alternates: tuple[tuple[str, str], ...] = ()
    images: tuple[str, ...] = ()
    notes: tuple[_Note, ...] = ()

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
) -> FolderScan:
    """The pages of the static site in `root`, published at `base_url` (the URL of `root`), in sorted order.

    See the module docstring for the rules. `report` receives diagnostics (`page-unreadable`,
    `encoding-error`, `invalid-url` for a bad alternate or image URL, as warnings where the page is kept);
    `explain` receives each page left out. Nothing is read until the result is iterated.

    With a `state` run, what each file gave is kept in the state store's file cache (inside the run's
    transaction), and a later scan with the same options takes it from there, without opening the file,
    while the file's size, mtime, ctime and inode are unchanged: the same pages, skips and diagnostics.

    Raises `InvalidUrlError` for a bad `base_url`, `UnsupportedSelectorError` for an unsupported volatile
    selector and `UsageError` for an invalid volatile regular expression.
    """
    scope = Scope(base_url, tuple(allow_hosts))
    real_root = os.path.realpath(os.fspath(root))
    includes = tuple(p.lower() for p in include)
    excludes = tuple(p.lower() for p in exclude)
    selectors = tuple(volatile_selectors)
    _volatile_xpath(selectors)  # fail early on a bad selector
    patterns = compile_patterns(volatile_patterns)
    fingerprint = _fingerprint(
        scope, tuple(allow_hosts), clean_urls, images, selectors, patterns, max_page_bytes
    )

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
            from sitemapkit.generator.state import file_stamp

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
            url = _url_of(scope.folder, rel, clean_urls)
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
    notes: list[_Note] = []
    if warning is not None:
        notes.append(("encoding-error", warning, Severity.WARNING.value))
    meta = _read_head(root_el)
    base = _resolve(meta.base, url) if meta.base else url
    base = base or url
    if meta.noindex is not None:
        return _Result(skip=("noindex", meta.noindex), notes=tuple(notes))
    if meta.refresh is not None:
        target_url = _resolve(meta.refresh, base)
        if target_url is None or target_url != url:
            return _Result(
                skip=("redirect", f"meta refresh to {target_url or meta.refresh!r}"), notes=tuple(notes)
            )
    canonical: str | None = None
    if meta.canonical is not None:
        canonical = _resolve(meta.canonical, base)
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
    alternates = _alternates(meta.alternates, base, notes)
    srcs = _images(root_el, base, scope, notes) if images else ()
    return _Result(_hash_tree(root_el, selectors, patterns), None, canonical, alternates, srcs, tuple(notes))


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


def _url_of(folder: str, rel: str, clean_urls: bool) -> str:
    head, _, name = rel.rpartition("/")
    low = name.lower()
    if low in INDEX_NAMES:
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


# Links that `urljoin` would return unchanged (an absolute http(s) URL) or as the base's origin + the link
# (a path from the root): no dot segments (checked apart), no `;params`, no empty `?` or `#`. Most links on
# generated sites are one of the two, and this skips `urljoin`'s parse and unparse (measured 8 µs a link).
_PATH_CHARS = r"[A-Za-z0-9\-._~!$&'()*+,=:@/%]*"
_QUERY = r"(?:\?[A-Za-z0-9\-._~!$&'()*+,;=:@/%?]+)?"
_ROOT_PATH = re.compile(r"/(?!/)" + _PATH_CHARS + _QUERY)
_ABSOLUTE = re.compile(r"https?://[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?:/" + _PATH_CHARS + ")?" + _QUERY)


def _resolve(href: str, base: str) -> str | None:
    """`href` resolved against `base` (a normalised URL) and normalised, without its fragment; or None.
    The same as `normalize_url(urljoin(base, href))`, with fast paths for the common forms."""
    href = href.strip()
    try:
        if "/." in href:
            joined = urljoin(base, href)
        elif _ROOT_PATH.fullmatch(href):
            joined = base[: base.find("/", base.find("//") + 2)] + href
        elif _ABSOLUTE.fullmatch(href):
            joined = href
        else:
            joined = urljoin(base, href)
        url = normalize_url(joined)
    except (InvalidUrlError, ValueError):
        return None
    return url.split("#", 1)[0]


def _alternates(pairs: list[tuple[str, str]], base: str, notes: list[_Note]) -> tuple[tuple[str, str], ...]:
    out: dict[tuple[str, str], None] = {}
    for hreflang, href in pairs:
        url = _resolve(href, base)
        if url is None:
            notes.append(
                (
                    "invalid-url",
                    f"hreflang {hreflang!r} link {href!r} is not a valid URL; it is left out",
                    Severity.WARNING.value,
                )
            )
            continue
        out[(hreflang, url)] = None
    return tuple(out)


def _images(root: Any, base: str, scope: Scope, notes: list[_Note]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for src in [el.get("src") for el in root.iter("img")]:
        if src is None:
            continue
        src = src.strip()
        if not src or src[:11].lower().startswith(("data:", "javascript:", "blob:")):
            continue
        url = _resolve(src, base)
        if url is None:
            notes.append(
                (
                    "invalid-url",
                    f"<img src={src[:200]!r}> is not a valid URL; the image is left out",
                    Severity.WARNING.value,
                )
            )
            continue
        if url in scope:
            seen[url] = None
    return tuple(seen)
