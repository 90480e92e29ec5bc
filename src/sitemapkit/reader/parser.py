"""The sitemap parser: bytes in, entries and diagnostics out, streaming, tolerant and safe.

`SitemapParser` takes raw bytes as they arrive (plain or gzip, detected by its magic bytes) and returns
`UrlEntry`/`IndexEntry` objects as soon as each is complete. It reads XML `<urlset>` and `<sitemapindex>`
documents with the image, video, news and hreflang extensions, text sitemaps, RSS and Atom feeds, and
reports every problem it meets as a `Diagnostic` (with a line) instead of raising.

Pipeline for one document, each stage streaming:
gzip inflation with a size cap (safety.py) -> UTF-8 normalisation (safety.py) -> format sniffing and
DOCTYPE screening -> stray-`&` escaping -> lxml pull parsing -> per-entry reading and checks.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
from collections.abc import Callable, Iterator
from typing import Any, Final, Literal, NamedTuple, cast
from urllib.parse import urlsplit

from lxml import etree

from sitemapkit.core.constants import (
    CHANGEFREQS,
    MAX_BYTES,
    MAX_IMAGES_PER_URL,
    MAX_NEWS_PER_SITEMAP,
    MAX_URL_LENGTH,
    MAX_URLS,
    MAX_VIDEO_DESCRIPTION,
    MAX_VIDEO_DURATION,
    MAX_VIDEO_TAGS,
    NS_IMAGE,
    NS_NEWS,
    NS_SITEMAP,
    NS_SITEMAP_LEGACY,
    NS_VIDEO,
    NS_XHTML,
)
from sitemapkit.core.dates import parse_w3c
from sitemapkit.core.diagnostics import Diagnostic, Severity
from sitemapkit.core.errors import InvalidDateError, UsageError
from sitemapkit.core.model import Alternate, Image, IndexEntry, Lastmod, News, UrlEntry, Video
from sitemapkit.core.urls import check_uri
from sitemapkit.reader import feeds
from sitemapkit.reader.feeds import source_line
from sitemapkit.reader.safety import (
    GZIP_MAGIC,
    PIECE,
    CompressionError,
    GzipInflater,
    Utf8Normalizer,
    detect_encoding,
    doctype_problem,
    is_utf8_name,
    known_codec,
)

__all__ = [
    "LANGUAGE_CODES",
    "REGION_CODES",
    "Entry",
    "SitemapParser",
    "hreflang_problem",
    "parse_bytes",
    "parse_file",
]

Entry = UrlEntry | IndexEntry
Kind = Literal["urlset", "sitemapindex", "text", "rss", "atom"]
DiagnosticCallback = Callable[[Diagnostic], None]

NS_SITEMAP_HTTPS: Final = "https://www.sitemaps.org/schemas/sitemap/0.9"
CHUNK: Final = 64 * 1024
"""Bytes read at a time by `parse_file` and `parse_bytes`."""
DEFAULT_MAX_UNCOMPRESSED: Final = 100 * 1024 * 1024
_PIECE: Final = 4096
"""Compressed bytes fed at a time by `feed_pieces`."""

_LANGUAGES = """
    aa ab ae af ak am an ar as av ay az ba be bg bi bm bn bo br bs ca ce ch co cr cs cu cv cy da de dv
    dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz ia id ie ig ii
    ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln lo lt lu lv mg mh mi mk
    ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc
    sd se sg sh si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz
    ve vi vo wa wo xh yi yo za zh zu"""
LANGUAGE_CODES: Final = frozenset(_LANGUAGES.split())
"""ISO 639-1 two-letter language codes (lowercase)."""

_REGIONS = """
    AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV
    BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET
    FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM
    IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD
    ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE
    PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST
    SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS
    YE YT ZA ZM ZW"""
REGION_CODES: Final = frozenset(_REGIONS.split())
"""ISO 3166-1 alpha-2 country codes (uppercase)."""

_REGION_HINTS: Final = {"UK": "GB"}


def hreflang_problem(code: str) -> str | None:
    """Say what is wrong with an hreflang value, or None if it is valid.

    Valid: `x-default`, an ISO 639-1 language (`en`), optionally followed by an ISO 15924 script
    (`zh-Hant`) and/or an ISO 3166-1 alpha-2 region (`en-GB`, `zh-Hant-TW`); case does not matter.

    >>> hreflang_problem("en-GB") is None
    True
    >>> hreflang_problem("en_GB")
    "'en_GB' uses '_'; separate language and region with '-' (en-GB)"
    """
    value = code.strip()
    if value.lower() == "x-default":
        return None
    if "_" in value:
        return f"{value!r} uses '_'; separate language and region with '-' ({value.replace('_', '-')})"
    parts = value.split("-")
    if parts[0].lower() not in LANGUAGE_CODES:
        return f"{parts[0]!r} is not an ISO 639-1 two-letter language code"
    rest = parts[1:]
    if rest and len(rest[0]) == 4 and rest[0].isalpha():
        rest = rest[1:]  # a script subtag such as Hant
    if len(rest) > 1:
        return f"{value!r} has too many parts; use language-REGION, for example en-GB"
    if rest:
        region = rest[0].upper()
        if region not in REGION_CODES:
            hint = f" (use {_REGION_HINTS[region]})" if region in _REGION_HINTS else ""
            return f"{rest[0]!r} is not an ISO 3166-1 alpha-2 region code{hint}"
    return None


# --- values ------------------------------------------------------------------------------------------

_SCHEMA_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))?")
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
_INTEGER = re.compile(r"[+-]?\d+")
_NEWS_LANGUAGE = re.compile(r"[a-z]{2,3}|zh-cn|zh-tw", re.IGNORECASE)
_DATE_CACHE_SIZE: Final = 4096
_PRIORITIES: Final = {
    **{f"{k / 100:.2f}": k / 100 for k in range(101)},
    **{f"{k / 10:.1f}": k / 10 for k in range(11)},
    "0": 0.0,
    "1": 1.0,
}
"""Common `<priority>` spellings, read without a regex."""


def _date_value(text: str) -> tuple[Lastmod | None, str | None]:
    """Read a W3C Datetime: (value, problem). A value with a problem is a W3C form the schema rejects;
    no value means the text is not a date at all."""
    if _SCHEMA_DATE.fullmatch(text) is not None:
        try:
            if len(text) == 10:
                return dt.date.fromisoformat(text), None
            return dt.datetime.fromisoformat(text), None
        except ValueError:
            return None, "no such date or time"
    try:
        value = parse_w3c(text)
    except InvalidDateError as exc:
        reason = str(exc)
        if "without a timezone" in reason:
            return None, "the time has no timezone (add Z or +hh:mm)"
        if "not a valid date" in reason or "out of range" in reason:
            return None, "no such date or time"
        return None, "it is not in the form YYYY-MM-DD or YYYY-MM-DDThh:mm:ss+hh:mm"
    return (
        value,
        "the sitemap schema accepts only YYYY-MM-DD or a date-time with seconds (it was read anyway)",
    )


# A subset of what `urls.check_uri` accepts (no `%`, lowercase ASCII host), matched by one regex so the
# common URL costs one call; anything else goes through `check_uri`.
_PLAIN_HOST = r"[a-z0-9]++(?:-++[a-z0-9]++)*+(?:\.[a-z0-9]++(?:-++[a-z0-9]++)*+)*+(?::[0-9]{1,4}+)?+"
"""A lowercase name of letter-digit-hyphen labels and single dots, and a port under 10,000 (a subset of what
`check_uri` accepts)."""
_PLAIN_URL = re.compile(r"https?://" + _PLAIN_HOST + r"(?:/[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*+)?+")


_AUTHORITY_PROBLEMS: Final = ("host ", "port ", "no host", "the IPv6")
"""How `check_uri` starts what it says about a URL's host or port."""


def _usable_url(url: str) -> bool:
    """An absolute http(s) URL with a host, however badly escaped: worth keeping after a report."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def _split(tag: str) -> tuple[str, str]:
    if tag[:1] == "{":
        ns, _, local = tag[1:].partition("}")
        return ns, local
    return "", tag


def _text(el: etree._Element) -> str:
    text = el.text
    if len(el):
        return "".join(cast("Iterator[str]", el.itertext()))
    return text or ""


# --- format sniffing ---------------------------------------------------------------------------------

_PROLOG_MAX: Final = 256 * 1024
_NAME = rb"[A-Za-z_][\w.\-]*(?::[A-Za-z_][\w.\-]*)?"
_START_TAG = re.compile(rb"<(" + _NAME + rb")((?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*)\s*/?>")
_NAME_ONLY = re.compile(rb"<(" + _NAME + rb")")
_XMLNS = re.compile(rb"""\sxmlns(?::([\w.\-]+))?\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_DOCTYPE_END = re.compile(rb"\]\s*>")
_WS = b" \t\r\n"
_ROOT_KINDS: Final[dict[str, Kind]] = {
    "urlset": "urlset",
    "sitemapindex": "sitemapindex",
    "rss": "rss",
    "RDF": "rss",
    "feed": "atom",
}


class _Sniff(NamedTuple):
    """What the first bytes of a document are."""

    kind: Kind | None
    problem: str | None = None  # why it cannot be read (with kind None)
    code: str = "unsupported-format"
    skip: int = 0  # leading whitespace to drop before the XML declaration
    root: str | None = None  # qualified name of the root element
    root_start: bytes | None = None  # the root's start tag, as written
    namespace: str | None = None  # the root's namespace, from its start tag
    line: int = 1  # the line of what was found (the root's start tag, or the DOCTYPE)


def _sniff(buf: bytes, final: bool) -> _Sniff | None:
    """Decide the format from the start of a UTF-8 document, or None when more bytes are needed."""
    rest = buf.lstrip(_WS)
    skip = len(buf) - len(rest)
    if not rest:
        if not final:
            return None
        what = "is empty" if not buf else "holds only whitespace"
        return _Sniff(None, f"The body {what}; a sitemap needs a <urlset> or a list of URLs.")
    if rest.startswith(b"<<<<<<<"):
        return _Sniff(
            None,
            "The file holds git merge-conflict markers (<<<<<<<, =======, >>>>>>>); "
            "resolve the conflict and publish one sitemap.",
        )
    if rest.startswith(b"---"):
        return _Sniff(
            None,
            "The file starts with YAML front matter (---): it is an unrendered template "
            "(Jekyll/Liquid?); publish the generated sitemap, not its source.",
        )
    if rest[:2] in (b"{%", b"{{", b"{#"):
        return _Sniff(None, _template_message(rest[:2]))
    if rest[:1] != b"<":
        return _sniff_text(rest, final)
    pos = skip
    leading = 0
    if rest.startswith(b"<?xml") and rest[5:6] in (b" ", b"\t", b"\r", b"\n", b"?"):
        if skip:
            leading = skip
        end = buf.find(b"?>", pos)
        if end < 0:
            return _need_more(buf, final, "The XML declaration is not closed.")
        pos = end + 2
    while True:
        while pos < len(buf) and buf[pos] in _WS:
            pos += 1
        if pos >= len(buf) or (buf[pos] == 0x3C and pos + 10 > len(buf) and not final):
            return _need_more(buf, final, "The document has no root element.")
        if buf.startswith(b"<?", pos):
            end = buf.find(b"?>", pos)
            if end < 0:
                return _need_more(buf, final, "A processing instruction is not closed.")
            pos = end + 2
        elif buf.startswith(b"<!--", pos):
            end = buf.find(b"-->", pos + 4)
            if end < 0:
                return _need_more(buf, final, "A comment before the root element is not closed.")
            pos = end + 3
        elif buf[pos : pos + 9].upper() == b"<!DOCTYPE":
            gt = buf.find(b">", pos)
            bracket = buf.find(b"[", pos)
            if bracket >= 0 and (gt < 0 or bracket < gt):
                m = _DOCTYPE_END.search(buf, bracket)
                end = m.end() if m else -1
            else:
                end = gt + 1 if gt >= 0 else -1
            if end < 0:
                return _need_more(buf, final, "The DOCTYPE declaration is not closed.")
            doctype = buf[pos:end]
            problem = doctype_problem(doctype)
            if problem is not None:
                return _Sniff(
                    None,
                    f"Refused for safety: {problem}. Sitemaps need no DOCTYPE; remove it.",
                    code="forbidden-doctype",
                    line=buf.count(b"\n", 0, pos) + 1,
                )
            if re.match(rb"<!DOCTYPE\s+html\b", doctype, re.IGNORECASE):
                return _Sniff(None, _html_message())
            pos = end
        elif buf[pos] == 0x3C:
            return _sniff_root(buf, pos, final, skip=leading)
        else:
            if not final and len(buf) < pos + 40 and b"\n" not in buf[pos:]:
                return None  # the message quotes what comes: the same however the bytes arrive
            snippet = buf[pos : pos + 2]
            if snippet in (b"{%", b"{{", b"{#"):
                return _Sniff(None, _template_message(snippet))
            text = buf[pos : pos + 40].decode("utf-8", "replace").split("\n")[0]
            return _Sniff(None, f"Text {text!r} comes before the root element; this is not a sitemap.")


def _need_more(buf: bytes, final: bool, problem: str) -> _Sniff | None:
    if final or len(buf) > _PROLOG_MAX:
        return _Sniff(None, f"{problem} No sitemap could be read.", code="parse-error")
    return None


def _template_message(marker: bytes) -> str:
    return (
        f"The file holds template tags ({marker.decode()} ... ): it is an unrendered template "
        "(Liquid, Jinja, Django, Tera?); publish the generated sitemap, not its source."
    )


def _html_message() -> str:
    return (
        "The body is an HTML page, not a sitemap (an error page or a 'soft 404'?); "
        "check the URL and that the server returns the sitemap file."
    )


def _sniff_root(buf: bytes, pos: int, final: bool, skip: int) -> _Sniff | None:
    line = buf.count(b"\n", 0, pos) + 1
    m = _START_TAG.match(buf, pos)
    if m is None:
        if not final and buf.find(b">", pos) < 0 and len(buf) <= _PROLOG_MAX:
            return None
        name_m = _NAME_ONLY.match(buf, pos)
        if name_m is None:
            return _Sniff(
                None, "The document does not start with an element; it is not a sitemap.", line=line
            )
        qname = name_m.group(1).decode("ascii")
        root_start = None
        ns = None
    else:
        qname = m.group(1).decode("ascii")
        root_start = m.group(0)
        prefix = qname.partition(":")[0] if ":" in qname else None
        ns = None
        for a in _XMLNS.finditer(m.group(2)):
            if (a.group(1).decode("ascii") if a.group(1) else None) == prefix:
                ns = (a.group(2) if a.group(2) is not None else a.group(3) or b"").decode("utf-8", "replace")
    local = qname.rpartition(":")[2]
    kind = _ROOT_KINDS.get(local)
    if kind is None:
        if local.lower() == "html":
            return _Sniff(None, _html_message(), line=line)
        return _Sniff(
            None,
            f"The root element is <{qname}>, not <urlset> or <sitemapindex>; this is not a sitemap.",
            line=line,
        )
    return _Sniff(kind, skip=skip, root=qname, root_start=root_start, namespace=ns, line=line)


def _sniff_text(rest: bytes, final: bool) -> _Sniff | None:
    nl = rest.find(b"\n")
    if nl < 0 and not final and len(rest) < 4096:
        return None
    first = (rest[:nl] if nl >= 0 else rest[:4096]).strip()
    if b"\x00" not in first and re.fullmatch(rb"[^\s<>{}\"\x00-\x1f]+", first):
        return _Sniff("text")
    text = first[:40].decode("utf-8", "replace")
    return _Sniff(None, f"The body is neither XML nor a list of URLs (it starts with {text!r}).")


# --- stray ampersands --------------------------------------------------------------------------------

_STRAY = re.compile(rb"&(?!(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);)")
_NORMAL, _CDATA, _COMMENT, _PI = 0, 1, 2, 3
_CLOSERS: Final = {_CDATA: b"]]>", _COMMENT: b"-->", _PI: b"?>"}
_REF_MAX: Final = 12


class _StrayAmpersands:
    """Escape `&` that starts no character or predefined entity reference, outside CDATA, comments and PIs.

    A raw `&` (`Tom & Jerry`) is the most common hand-editing mistake; escaping it reads the text the
    author meant and keeps the rest of the document. Each one is reported. Bytes that might be the start
    of a marker cut by a chunk boundary are held back until the next chunk.
    """

    def __init__(self) -> None:
        self._state = _NORMAL
        self._tail = b""

    def fix(self, chunk: bytes, final: bool) -> tuple[bytes, list[int]]:
        """Return the escaped bytes and the offsets (in them) of each stray `&` found."""
        data = self._tail + chunk if self._tail else chunk
        self._tail = b""
        if (
            self._state == _NORMAL
            and b"<!" not in data
            and b"<?" not in data
            and (final or data[-1:] != b"<")
            and (b"&" not in data or _STRAY.search(data) is None)
        ):
            return data, []
        strays: list[int] = []
        n = len(data)
        cut = n
        pos = 0
        state = self._state
        next_bang = next_pi = -2
        while pos < n:
            if state == _NORMAL:
                if next_bang != -1 and next_bang < pos:
                    next_bang = data.find(b"<!", pos)
                if next_pi != -1 and next_pi < pos:
                    next_pi = data.find(b"<?", pos)
                j = min(x for x in (next_bang, next_pi, n) if x >= 0)
                held = False
                for m in _STRAY.finditer(data, pos, j):
                    if not final and m.start() > n - _REF_MAX:
                        cut = m.start()
                        held = True
                        break
                    strays.append(m.start())
                if held:
                    break
                if j >= n:
                    if not final and data[-1:] == b"<":
                        cut = n - 1
                    break
                if not final and j + 9 > n:
                    cut = j
                    break
                if data.startswith(b"<![CDATA[", j):
                    state, pos = _CDATA, j + 9
                elif data.startswith(b"<!--", j):
                    state, pos = _COMMENT, j + 4
                elif data.startswith(b"<?", j):
                    state, pos = _PI, j + 2
                else:
                    pos = j + 2
            else:
                closer = _CLOSERS[state]
                k = data.find(closer, pos)
                if k < 0:
                    if not final:
                        cut = max(pos, n - 2)
                    break
                state, pos = _NORMAL, k + len(closer)
        self._state = state
        if cut < n:
            self._tail = data[cut:]
            data = data[:cut]
        if strays:
            parts: list[bytes] = []
            last = 0
            for s in strays:
                parts.append(data[last : s + 1])
                parts.append(b"amp;")
                last = s + 1
            parts.append(data[last:])
            out = b"".join(parts)
            # offsets in the output: each earlier stray added four bytes
            strays = [s + 4 * i for i, s in enumerate(strays)]
        else:
            out = data
        return out, strays


# --- the parser --------------------------------------------------------------------------------------

_LOC, _LASTMOD, _CHANGEFREQ, _PRIORITY = 0, 1, 2, 3
_CORE_NAMES: Final = ("loc", "lastmod", "changefreq", "priority")
_INDEX_NAMES: Final = ("loc", "lastmod")
_EXTENSION_RANK: Final = 4
_E_URL, _E_SITEMAP, _E_ITEM, _E_ROOT, _E_OTHER = 0, 1, 2, 3, 4
_KNOWN_NAMESPACES: Final = frozenset({NS_IMAGE, NS_VIDEO, NS_NEWS, NS_XHTML})
_IMAGE_FIELDS: Final = ("loc", "caption", "title", "geo_location", "license")
_IMAGE_LOC: Final = f"{{{NS_IMAGE}}}loc"
_VIDEO_URLS: Final = frozenset({"thumbnail_loc", "content_loc", "player_loc", "gallery_loc"})
_VIDEO_TEXT: Final = frozenset({"title", "description", "category", "uploader"})
_VIDEO_BOOLS: Final = frozenset({"family_friendly", "requires_subscription", "live"})
_VIDEO_DATES: Final = frozenset({"expiration_date", "publication_date"})
_PLATFORMS: Final = frozenset({"web", "mobile", "tv"})
_VIDEO_FIELDS: Final = (
    "thumbnail_loc",
    "title",
    "description",
    "content_loc",
    "player_loc",
    "duration",
    "expiration_date",
    "rating",
    "view_count",
    "publication_date",
    "family_friendly",
    "restriction",
    "platform",
    "requires_subscription",
    "uploader",
    "live",
    "tag",
    "category",
    "gallery_loc",
    "price",
    "tvshow",
)
_MAX_TEXT_LINE: Final = 64 * 1024
_LXML_LINE_LIMIT: Final = 65535
"""From this line on, lxml's `sourceline` needs `feeds.source_line`."""
_MAX_PARSE_ERRORS: Final = 1000
_HISTORY_MAX: Final = 4 * 1024 * 1024
"""Most bytes kept for finding a fatal XML error in (when no element completes for that long)."""

_START, _HEAD, _SNIFF, _XML, _SEEK, _TEXT, _SKIP = range(7)


def _draft_class(cls: type[Any]) -> type[Any] | None:
    """A plain class with the slots of the frozen, slotted dataclass `cls`: an instance of it, filled in
    with ordinary attribute stores, becomes a `cls` by assigning `__class__` (which Python allows between
    classes of the same layout). That skips the frozen `__init__`, which sets each field through
    `object.__setattr__`: the same object in about a quarter of the time. None if `cls` is not as expected.
    """
    names = tuple(f.name for f in dataclasses.fields(cls))
    if getattr(cls, "__slots__", None) != names or hasattr(cls, "__post_init__"):  # pragma: no cover
        return None
    draft = type(f"_Draft{cls.__name__}", (), {"__slots__": names})
    probe = draft()
    for name in names:
        setattr(probe, name, None)
    try:
        probe.__class__ = cls
    except TypeError:  # pragma: no cover - the layouts differ
        return None
    return draft


def _url_entry_maker() -> tuple[Callable[..., UrlEntry], type[Any] | None]:
    """`new(loc, lastmod, changefreq, priority, sitemap, line, images=())`: a `UrlEntry` (without videos,
    news or alternates) made through `_draft_class`, or by its constructor if that is not possible; and
    the draft class (None if not possible)."""

    def plain(
        loc: str,
        lastmod: Lastmod | None,
        changefreq: str | None,
        priority: float | None,
        sitemap: str,
        line: int | None,
        images: tuple[Image, ...] = (),
    ) -> UrlEntry:
        return UrlEntry(loc, lastmod, changefreq, priority, images, (), None, (), sitemap, line)

    draft = _draft_class(UrlEntry)
    if draft is None:  # pragma: no cover - the model changed: stay correct
        return plain, None

    def fast(
        loc: str,
        lastmod: Lastmod | None,
        changefreq: str | None,
        priority: float | None,
        sitemap: str,
        line: int | None,
        images: tuple[Image, ...] = (),
    ) -> UrlEntry:
        entry = draft()
        entry.loc = loc
        entry.lastmod = lastmod
        entry.changefreq = changefreq
        entry.priority = priority
        entry.images = images
        entry.videos = ()
        entry.news = None
        entry.alternates = ()
        entry.sitemap = sitemap
        entry.line = line
        entry.__class__ = UrlEntry
        return cast(UrlEntry, entry)

    sample = ("https://example.com/", dt.date(2024, 5, 1), "daily", 0.5, "s", 7, (Image("https://e.com/i"),))
    made = fast(*sample)
    if made != plain(*sample) or (made.sitemap, made.line) != sample[4:6]:  # pragma: no cover
        return plain, None
    return fast, draft


def _image_maker() -> Callable[[str], Image]:
    """`new(loc)`: an `Image` with only a `loc`, made as `_url_entry_maker` makes entries."""
    draft = _draft_class(Image)
    if draft is None or set(draft.__slots__) != {"loc", "caption", "title", "geo_location", "license"}:
        return Image  # pragma: no cover - the model changed: stay correct

    def fast(loc: str) -> Image:
        image = draft()
        image.loc = loc
        image.caption = image.title = image.geo_location = image.license = None
        image.__class__ = Image
        return cast(Image, image)

    if fast("https://e.com/i") != Image("https://e.com/i"):  # pragma: no cover
        return Image
    return fast


_new_url_entry, _URL_DRAFT = _url_entry_maker()
_new_image = _image_maker()

# --- plain <url> elements read without lxml ---------------------------------------------------------
#
# Most sitemaps are long runs of `<url><loc>...</loc><lastmod>...</lastmod>...</url>` with nothing else.
# Where the parser knows that the stream is between two children of the root (lxml has just reported a
# `<url>` child of the root that ends exactly where the bytes fed to it end), it reads such runs with one
# regex per element, and hands lxml a comment in their place, with the same line breaks and a last line
# of the same length: lxml's lines, columns and error positions after it, and the offsets the rest of the
# parser keeps, stay what they would have been. Only elements that the lxml path would read to the same
# entry with nothing to report are read this way; anything else (an attribute, a prefix, an entity other
# than &amp;, a comment, CDATA, an extension, a value with a problem) ends the run, and lxml reads it.
# `SitemapParser._feed_eliding` does this; the property tests compare it with the lxml path.

_XWS = r"[ \t\r\n]*+"
_URL_CHAR = r"[A-Za-z0-9\-._~!$'()*+,;=:@/?]"  # what `_PLAIN_URL` allows in a path, but `&`
_PLAIN_LOC = "".join(  # `_PLAIN_URL` with & written &amp;, and %XX escapes (which `check_uri` accepts)
    [r"https?://", _PLAIN_HOST, r"(?>/", _URL_CHAR, r"*+(?:(?>&amp;|%[0-9A-Fa-f]{2})", _URL_CHAR, r"*+)*+|)"]
)
_PLAIN_BLOCK: Final = re.compile(
    # Possessive quantifiers and atomic groups, (?>X|) rather than (?:X)?: each part can match in one
    # way only, so this matches what the plain version would, but fails without backtracking.
    "".join(
        [
            r"<url>" + _XWS,
            r"<loc>(" + _PLAIN_LOC + r")</loc>" + _XWS,
            r"(?><lastmod>([0-9]{4}-[0-9]{2}-[0-9]{2}",
            r"(?>T[0-9]{2}:[0-9]{2}:[0-9]{2}(?>\.[0-9]++|)(?>Z|[+-][0-9]{2}:[0-9]{2})|)",
            r")</lastmod>" + _XWS + r"|)",
            r"(?><changefreq>([a-z]++)</changefreq>" + _XWS + r"|)",
            r"(?><priority>([0-9.]++)</priority>" + _XWS + r"|)",
            r"((?:<image:image>" + _XWS + r"<image:loc>" + _PLAIN_LOC + r"</image:loc>" + _XWS,
            r"</image:image>" + _XWS + r")*+)",
            r"</url>()" + _XWS,
        ]
    )
)
"""A plain `<url>` and the whitespace after it, matched on the latin-1 decoding of the UTF-8 bytes (so that
string offsets are byte offsets; every character it accepts is ASCII). Groups 1 to 4 are the texts of
`<loc>` (valid for `_read_url_checked` once `&amp;` is decoded), `<lastmod>` (in the schema's form),
`<changefreq>` and `<priority>`; group 5 holds the `<image:image>` elements, each with an `<image:loc>`
only; group 6 marks the end of `</url>`."""
_IMAGE_LOCS: Final = re.compile(r"<image:loc>([^<]*+)</image:loc>")
_XML_WS: Final = re.compile(_XWS)
_URL_END: Final = re.compile(
    r"</[^\s<>]*url[ \t\r\n]*>"
    r"|<[^\s<>/!?]*url(?:[ \t\r\n]+[^\s=<>/]+[ \t\r\n]*=[ \t\r\n]*(?:\"[^\"<]*\"|'[^'<]*'))*[ \t\r\n]*/>"
)
"""Every end of an element named `url` (with any prefix): its end tag, or an empty-element tag; and a few
more (in comments, CDATA, text, or of other names ending in url). A feed that ends with one of these and
holds no other ends between two children of the root if lxml reports a `<url>` child of it last."""
_NOT_PLAIN: Final = object()
_CHANGEFREQ_NAMES: Final[dict[str | None, object]] = {None: None, **{name: name for name in CHANGEFREQS}}
"""A `<changefreq>` text read as `_read_url` would: the value, or _NOT_PLAIN (None: no such element)."""
_PRIORITY_VALUES: Final[dict[str | None, object]] = dict(_PRIORITIES.items())
_PRIORITY_VALUES[None] = None
_PEEK_MAX: Final = 8
"""`</url>` followed by an element that is not plain, in a row, before the parser looks only once a piece."""
_BLANK: Final = bytes(b if b in (0x0A, 0x0D) else 0x20 for b in range(256))
"""Maps every byte to a space except line breaks: the body of the comment that replaces plain elements."""
_REGION_MAX: Final = 1024 * 1024
"""Most bytes of plain elements one comment replaces (libxml2 refuses comments over 10 MB)."""
_CARRY_MAX: Final = 256
"""Longest unfinished tag at the end of a piece kept to find a `</url>` cut by the piece boundary."""


def _with_comments(data: bytes, start: int, end: int, regions: list[tuple[int, int, int]]) -> bytes:
    """`data[start:end]` with each region (a run of plain `<url>` elements from `r0` to `r1`, holding
    `breaks` line breaks) replaced by a comment, which lxml reads as nothing. The comment has the same
    line breaks, and its last line the same length, so lxml counts lines and columns after it as in the
    document; its first line is shorter, which no position lxml reports can fall in."""
    if not regions:
        return data[start:end]
    parts: list[bytes] = []
    at = start
    for r0, r1, breaks in regions:
        parts.append(data[at:r0])
        if breaks:
            nl = data.rfind(b"\n", r0, r1)
            parts.append(b"<!--" + b"\n" * breaks + data[nl + 1 : r1 - 3].translate(_BLANK) + b"-->")
        else:
            parts.append(b"<!--" + data[r0 + 4 : r1 - 3].translate(_BLANK) + b"-->")
        at = r1
    parts.append(data[at:end])
    return b"".join(parts)


def _char_bytes(data: bytes, pos: int, chars: int) -> int:
    """How many bytes the first `chars` characters of the UTF-8 `data[pos:]` take (at most the rest)."""
    if chars <= 0:
        return 0
    head = data[pos : pos + chars]
    if head.isascii():
        return len(head)
    return len(data[pos : pos + 4 * chars].decode("utf-8", "ignore")[:chars].encode("utf-8"))


class SitemapParser:
    """Incremental sitemap parser: feed raw bytes as they arrive, get entries as they complete.

    gzip is detected by its magic bytes (1f 8b), never by a name. The format (urlset, sitemapindex,
    text, RSS, Atom) is sniffed from the content. Problems are passed to `on_diagnostic`; the parser
    never raises on bad input. After `close()`:

    - `kind`: the format, or None when the input is not a sitemap;
    - `ok`: False when nothing sitemap-like could be read (HTML, empty body, unknown root, refused DOCTYPE,
      or a fatal error before the root element);
    - `truncated`: the input ended early, hit `max_uncompressed`, or broke off with a fatal error;
    - `compressed`, `uncompressed_bytes`, `count` (entries returned), `namespace` (of the root element).
    """

    _ELISION = True
    """Read plain `<url>` elements without lxml (see `_PLAIN_BLOCK`); tests turn it off to compare."""
    _FAST_READ = True
    """Read common `<url>` elements from lxml in one pass (see `_read_url`); tests turn it off to compare."""

    def __init__(
        self,
        source: str,
        *,
        on_diagnostic: DiagnosticCallback | None = None,
        max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED,
    ) -> None:
        self.source = source
        self.max_uncompressed = max_uncompressed
        self.kind: Kind | None = None
        self.ok = True
        self.truncated = False
        self.compressed = False
        self.uncompressed_bytes = 0
        self.count = 0
        self.namespace: str | None = None
        self._on_diagnostic = on_diagnostic
        self._stage = _START
        self._stopped = False
        self._closed = False
        self._out: list[Entry] = []
        self._head = b""
        self._inflater: GzipInflater | None = None
        self._normalizer: Utf8Normalizer | None = None
        self._norm_lines = 0
        self._encoding_reported = False
        self._buf = b""
        self._strip_lines = 0
        self._amp = _StrayAmpersands()
        self._xml: etree.XMLPullParser | None = None
        self._line_offset = 0
        self._root: etree._Element | None = None
        self._last: etree._Element | None = None  # the last entry read, kept (cleared) until the next one
        self._root_local = ""
        self._root_start: bytes | None = None
        self._root_line = 1
        self._root_closed = False
        self._resume: re.Pattern[bytes] | None = None
        self._entry_names: tuple[str, ...] = ()
        self._seek_buf = b""
        self._seek_line = 0
        self._seek_line_start = 0
        self._resumed_at = -1
        # (bytes, offset, line, line start, characters from the parser's column 1 to the offset)
        self._history: list[tuple[bytes, int, int, int, int]] = []
        self._column_chars = 0
        self._history_bytes = 0
        self._stream_pos = 0
        self._xml_lines = 0  # newlines in the escaped bytes handed to lxml
        self._last_newline = -1
        self._parse_errors = 0
        self._entries_seen = 0
        self._news_count = 0
        self._text_line = 0
        self._text_overlong = False
        self._core: dict[str, int] = {}
        self._fast_tags: tuple[
            str, ...
        ] = ()  # <loc>, <lastmod>, <changefreq>, <priority> in the root namespace
        self._core_ns: frozenset[str] = frozenset()
        self._tag_kinds: dict[str, int] = {}
        self._date_cache: dict[str, Lastmod] = {}
        # plain <url> elements read without lxml (see _PLAIN_BLOCK)
        self._elide = False  # the document may have them: a urlset with an unprefixed root start tag
        self._synced = False  # the stream fed so far ends between two children of the root
        self._end_carry = ""  # while not synced: the unfinished end tag at the end of the last piece
        self._trusted = True  # whether the next lxml feed may prove the stream is between children
        self._misses = 0  # see _feed_eliding
        self._tail_entry = False  # the last element lxml reported was a <url> child of the root
        self._elide_root: etree._Element | None = None  # the root, once its default namespace matched
        self._elide_images = False  # in it, the prefix image is the image extension's

    # -- public API ------------------------------------------------------------------------------------

    def feed(self, chunk: bytes) -> list[Entry]:
        """Take the next bytes of the document; return the entries they complete."""
        if self._closed:
            raise UsageError("feed() called after close()")
        if chunk and not self._stopped:
            self._raw(bytes(chunk), final=False)
        return self._take()

    def feed_pieces(self, chunk: bytes) -> Iterator[list[Entry]]:
        """Like `feed`, in bounded batches: compressed input is fed 4 KiB at a time, so that one chunk of a
        highly compressible body (deflate expands up to about 1,000 times) never yields more than a few MB
        of entries at once. Streaming callers consume each batch before the next is inflated."""
        if not (self.compressed or chunk[:2] == GZIP_MAGIC) or len(chunk) <= _PIECE:
            yield self.feed(chunk)
            return
        for start in range(0, len(chunk), _PIECE):
            yield self.feed(chunk[start : start + _PIECE])

    def close(self) -> list[Entry]:
        """Signal the end of the input; return the remaining entries. Flushes the last text line."""
        if self._closed:
            return []
        self._closed = True
        if not self._stopped:
            self._raw(b"", final=True)
        self._finish()
        return self._take()

    # -- plumbing ----------------------------------------------------------------------------------------

    def _take(self) -> list[Entry]:
        out = self._out
        self._out = []
        return out

    def _report(
        self,
        code: str,
        message: str,
        line: int | None = None,
        *,
        url: str | None = None,
        column: int | None = None,
        severity: Severity | None = None,
    ) -> None:
        if self._on_diagnostic is not None:
            self._on_diagnostic(
                Diagnostic.make(
                    code,
                    message,
                    source=self.source,
                    line=line,
                    column=column,
                    url=url,
                    severity=severity,
                )
            )

    def _stop(self) -> None:
        self._stopped = True
        self.truncated = True

    def _raw(self, chunk: bytes, final: bool) -> None:
        """Stage 1: detect gzip, inflate, count and cap the uncompressed size."""
        if self._stage == _START:
            self._head += chunk
            if len(self._head) < 2 and not final:
                return
            chunk, self._head = self._head, b""
            self._stage = _HEAD
            if chunk.startswith(GZIP_MAGIC):
                self.compressed = True
                self._inflater = GzipInflater()
        if self._inflater is None:
            # in slices of at most PIECE bytes, as inflated data comes: the parser's copies of a slice
            # then stay in the CPU's cache (reading 256 KiB at once is about 10% slower)
            if len(chunk) <= PIECE:
                self._uncompressed(chunk, final)
                return
            last = (len(chunk) - 1) // PIECE * PIECE
            for at in range(0, last + 1, PIECE):
                self._uncompressed(chunk[at : at + PIECE], final and at == last)
                if self._stopped:
                    return
            return
        try:
            for piece in self._inflater.inflate(chunk):
                self._uncompressed(piece, False)
                if self._stopped:
                    return
            if final:
                self._inflater.finish()
        except CompressionError as exc:
            self._report(
                "compression-error",
                f"{str(exc).capitalize()}; entries before the damage were kept. Re-create the .gz file.",
            )
            self._stop()
            return
        if final:
            self._uncompressed(b"", True)

    def _uncompressed(self, data: bytes, final: bool) -> None:
        before = self.uncompressed_bytes
        total = before + len(data)
        if total > self.max_uncompressed:
            data = data[: max(0, self.max_uncompressed - before)]
            total = self.max_uncompressed
            if data:
                self.uncompressed_bytes = total
                self._decoded(data, False)
            if self.compressed:
                self._report(
                    "compression-error",
                    f"The data grows past {self.max_uncompressed:,} bytes when decompressed (a gzip bomb?); "
                    "reading stopped there.",
                )
            else:
                self._report(
                    "file-too-large",
                    f"The file is larger than the {self.max_uncompressed:,}-byte reading limit; "
                    "reading stopped there.",
                )
            self._stop()
            return
        self.uncompressed_bytes = total
        if before <= MAX_BYTES < total:
            self._report(
                "file-too-large",
                f"The sitemap is larger than {MAX_BYTES:,} bytes uncompressed; split it into several "
                "sitemaps listed in a sitemap index.",
            )
        self._decoded(data, final)

    def _decoded(self, data: bytes, final: bool) -> None:
        """Stage 2: pick the encoding from the first bytes, then normalise everything to UTF-8."""
        if self._normalizer is None:
            self._head += data
            head = self._head
            stripped = head.lstrip(_WS)
            if not final and (
                len(head) < 4 or (stripped.startswith(b"<?xml") and b"?>" not in head and len(head) < 1024)
            ):
                return
            self._head = b""
            codec, bom, _ = detect_encoding(head)
            self._normalizer = self._make_normalizer(codec)
            data = head[bom:]
        normalizer = self._normalizer
        out = normalizer.convert(data, final)
        if normalizer.bad_at is not None and not self._encoding_reported:
            self._encoding_reported = True
            line = self._norm_lines + out.count(b"\n", 0, normalizer.bad_at) + 1
            self._report(
                "encoding-error",
                "The file is not valid UTF-8 from here on; the bytes were read as Windows-1252. "
                "Save the file as UTF-8.",
                line,
            )
        self._norm_lines += out.count(b"\n")
        self._utf8(out, final)

    def _make_normalizer(self, codec: str) -> Utf8Normalizer:
        if is_utf8_name(codec):
            return Utf8Normalizer()
        known = known_codec(codec)
        if known is None:
            self._encoding_reported = True
            self._report(
                "encoding-error",
                f"The file declares the unknown encoding {codec!r}; it was read as UTF-8. "
                "Sitemaps must be UTF-8.",
                1,
            )
            return Utf8Normalizer()
        self._encoding_reported = True
        self._report(
            "encoding-error",
            f"The file is encoded as {codec.upper()}, not UTF-8; it was read as {codec.upper()}. "
            'Save it as UTF-8 (and declare encoding="UTF-8").',
            1,
        )
        return Utf8Normalizer(known)

    def _utf8(self, data: bytes, final: bool) -> None:
        """Stage 3: sniff the format, then hand the bytes to the XML or text reader."""
        stage = self._stage
        if stage in (_XML, _SEEK):
            self._xml_bytes(data, final)
        elif stage == _TEXT:
            self._text_bytes(data, final)
        elif stage in (_HEAD, _SNIFF):
            self._stage = _SNIFF
            self._buf += data
            sniff = _sniff(self._buf, final)
            if sniff is None:
                return
            buf, self._buf = self._buf, b""
            if sniff.kind is None:
                self._report(sniff.code, sniff.problem or "Not a sitemap.", sniff.line)
                self.ok = False
                self._stage = _SKIP
                return
            self.kind = sniff.kind
            if sniff.kind == "text":
                self._stage = _TEXT
                self._text_bytes(buf, final)
                return
            if sniff.skip:
                self._strip_lines = buf.count(b"\n", 0, sniff.skip)
                self._report(
                    "leading-whitespace",
                    "Whitespace comes before the XML declaration <?xml ...?>, which must be the very first "
                    "thing in the file; remove it (the file was read anyway).",
                    1,
                )
                buf = buf[sniff.skip :]
            self._start_xml(sniff)
            self._xml_bytes(buf, final)

    # -- XML ---------------------------------------------------------------------------------------------

    def _start_xml(self, sniff: _Sniff) -> None:
        assert sniff.root is not None and sniff.kind is not None
        local = sniff.root.rpartition(":")[2]
        prefix = sniff.root[: -len(local)]
        self._root_local = local
        self._root_start = sniff.root_start
        self._root_line = sniff.line
        kind = sniff.kind
        entries: tuple[str, ...]
        if kind in ("urlset", "sitemapindex"):
            entries = ("url", "sitemap")
        elif kind == "rss":
            entries = ("item",)
        else:
            entries = ("entry",)
        alternatives = b"|".join(re.escape(e.encode()) for e in entries)
        self._resume = re.compile(
            rb"<(?:[A-Za-z_][\w.\-]*:)?(?:"
            + alternatives
            + rb")[\s/>]|</"
            + re.escape(prefix.encode())
            + re.escape(local.encode())
            + rb"\s*>"
        )
        self._line_offset = self._strip_lines
        self._entry_names = entries
        self._xml = self._new_lxml_parser(entries)
        if sniff.root_start is not None:
            self._set_namespace(sniff.namespace)
            self._elide = self._ELISION and kind == "urlset" and not prefix and _URL_DRAFT is not None
        self._stage = _XML

    def _new_lxml_parser(self, entries: tuple[str, ...]) -> etree.XMLPullParser:
        tags = [f"{{*}}{e}" for e in entries] + [f"{{*}}{self._root_local}"]
        return etree.XMLPullParser(
            events=("end",),
            tag=tags,
            encoding="utf-8",
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            huge_tree=False,
            remove_comments=True,
            remove_pis=True,
        )

    def _set_namespace(self, ns: str | None) -> None:
        """Record the root namespace, report a wrong one, and prepare the tag tables."""
        self.namespace = ns or None
        kind = self.kind
        if kind in ("urlset", "sitemapindex"):
            root = f"<{self._root_local}>"
            if ns == NS_SITEMAP:
                pass
            elif ns == NS_SITEMAP_LEGACY:
                self._report(
                    "incorrect-namespace",
                    f"{root} uses the old Google namespace {NS_SITEMAP_LEGACY}; it was read, but use "
                    f'xmlns="{NS_SITEMAP}".',
                    self._root_line,
                    severity=Severity.WARNING,
                )
            elif ns == NS_SITEMAP_HTTPS:
                self._report(
                    "incorrect-namespace",
                    f"{root} uses the namespace {ns}; it must be {NS_SITEMAP} (http, not https). "
                    "It was read anyway.",
                    self._root_line,
                )
            elif not ns:
                self._report(
                    "incorrect-namespace",
                    f'{root} has no namespace; add xmlns="{NS_SITEMAP}". It was read anyway.',
                    self._root_line,
                )
            else:
                self._report(
                    "incorrect-namespace",
                    f"{root} has the namespace {ns}; it must be {NS_SITEMAP}. It was read anyway.",
                    self._root_line,
                )
        core_ns = {ns or "", NS_SITEMAP, NS_SITEMAP_LEGACY, NS_SITEMAP_HTTPS, ""}
        self._core_ns = frozenset(core_ns)
        names = _CORE_NAMES if kind != "sitemapindex" else _INDEX_NAMES
        self._core = {
            (f"{{{n}}}{name}" if n else name): rank for n in core_ns for rank, name in enumerate(names)
        }
        if kind == "urlset":
            self._fast_tags = tuple(f"{{{ns}}}{name}" if ns else name for name in _CORE_NAMES)

    def _xml_bytes(self, data: bytes, final: bool) -> None:
        fixed, strays = self._amp.fix(data, final)
        if not strays and b"\x00" not in fixed:
            self._xml_piece(fixed, final)
            return
        # Deal with each stray `&` and NUL where it is in the stream, after lxml has read (and the
        # entries report) everything before it, so that what is reported, and in which order, never
        # depends on where the chunks were cut.
        marks = strays
        if b"\x00" in fixed:
            marks = sorted(strays + [m.start() for m in re.finditer(b"\x00", fixed)])
        start = 0
        for offset in marks:
            self._xml_piece(fixed[start:offset], False)
            start = offset
            if self._stage not in (_XML, _SEEK):
                return
            if fixed[offset] == 0:
                self._nul()
            else:
                self._parse_error(
                    "A raw '&' that starts no entity reference; write it as &amp; (it was read as '&').",
                    self._stream_line(),
                    self._stream_pos - self._last_newline,
                )
        self._xml_piece(fixed[start:], final)

    def _xml_piece(self, fixed: bytes, final: bool) -> None:
        """Hand escaped bytes to lxml, keeping count of their lines and offsets in the stream."""
        first_line = self._stream_line()
        base = self._stream_pos
        line_start = self._last_newline + 1
        last_nl = fixed.rfind(b"\n")
        if last_nl >= 0:
            self._last_newline = base + last_nl
            self._xml_lines += fixed.count(b"\n")
        self._stream_pos += len(fixed)
        self._pump(fixed, base, first_line, line_start, final)

    def _parse_error(self, message: str, line: int | None, column: int | None = None) -> None:
        self._parse_errors += 1
        if self._parse_errors <= _MAX_PARSE_ERRORS:
            self._report("parse-error", message, line, column=column)
        elif self._parse_errors == _MAX_PARSE_ERRORS + 1:
            self._report("parse-error", f"More than {_MAX_PARSE_ERRORS} parse errors; no more are reported.")

    def _pump(self, data: bytes, base: int, first_line: int, line_start: int, final: bool) -> None:
        """Feed lxml; after a fatal error, seek the next entry and go on with a fresh parser.

        `base` is the offset of `data` in the (escaped) document stream, `first_line` the line it starts
        in and `line_start` the offset where that line starts.
        """
        while True:
            if self._stage == _XML:
                if self._elide:
                    resume = self._feed_eliding(data, base, first_line, line_start, final)
                else:
                    resume = self._feed_lxml(data, base, first_line, line_start, final)
                if resume is None:
                    return
                data, base, first_line, line_start = resume
                self._seek_buf, self._seek_line, self._seek_line_start = b"", first_line, line_start
            elif self._stage == _SEEK:
                found = self._seek(data, base, final)
                if found is None:
                    return
                data, base, first_line, line_start = found
            else:
                return

    def _feed_eliding(
        self, data: bytes, base: int, first_line: int, line_start: int, final: bool
    ) -> tuple[bytes, int, int, int] | None:
        """`_feed_lxml` for a urlset that reads runs of plain `<url>` elements itself (see `_PLAIN_BLOCK`).

        Where the stream is not known to be between children of the root, lxml is fed up to the end of a
        `</url>` (`_URL_END`) that a plain element follows; when that feed holds no other `</url>` and lxml
        reports a `<url>` child of the root as its last element, the stream is between children there.
        """
        text = data.decode("latin-1")
        n = len(text)
        match = _PLAIN_BLOCK.match
        skip_ws = _XML_WS.match
        count = text.count
        cache = self._date_cache
        append = self._out.append
        draft = cast("type[Any]", _URL_DRAFT)  # not None: see _start_xml
        url_entry = UrlEntry
        changefreqs = _CHANGEFREQ_NAMES
        priorities = _PRIORITY_VALUES
        source = self.source
        seen = self._entries_seen  # kept in self._entries_seen while lxml reads
        elided = 0  # entries read here, not yet in self.count
        regions: list[tuple[int, int, int]] = []  # plain runs in data[start:pos] (see _with_comments)
        # data[start:] is not fed to lxml yet; data[start] is in line start_line, which begins at start_begin
        start = pos = 0
        start_line, start_begin = first_line, line_start
        line_pos, line = 0, first_line  # data[line_pos] is in line `line` (for the entries read here)
        synced = self._synced
        carry, self._end_carry = self._end_carry, ""
        trusted = self._trusted  # False: the next feed may hold a </url> that went unseen
        ends = 0  # </url> in data[start:pos] while not synced
        misses = self._misses  # </url> not followed by a plain <url>: after _PEEK_MAX, one try a piece
        m: re.Match[str] | None = None
        while pos < n:
            if synced:
                if m is None:
                    pos = skip_ws(text, pos).end()  # type: ignore[union-attr]  # it always matches
                    m = match(text, pos)
                    if m is None:
                        if pos < n:
                            synced = False
                        continue
                run_start = pos
                line += count("\n", line_pos, pos)
                line_pos = pos
                run_line = line
                last: re.Match[str] | None = None
                while m is not None:
                    loc, lastmod_text, changefreq_text, priority_text, images_text = m.group(1, 2, 3, 4, 5)
                    if "&" in loc:
                        loc = loc.replace("&amp;", "&")
                    if len(loc) >= MAX_URL_LENGTH:
                        break
                    changefreq = changefreqs.get(changefreq_text, _NOT_PLAIN)
                    priority = priorities.get(priority_text, _NOT_PLAIN)
                    if changefreq is _NOT_PLAIN or priority is _NOT_PLAIN:
                        break
                    if lastmod_text is None:
                        lastmod = None
                    else:
                        lastmod = cache.get(lastmod_text)
                        if lastmod is None:
                            lastmod = self._store_date(lastmod_text)
                            if lastmod is None:
                                break
                    if images_text:
                        images = self._plain_images(images_text)
                        if images is None:
                            break
                    else:
                        images = ()
                    line += count("\n", line_pos, pos)
                    line_pos = pos
                    seen += 1
                    if seen > MAX_URLS:
                        self._entries_seen = seen
                        self._count_limit(line)
                    # _new_url_entry, inline
                    entry = draft()
                    entry.loc = loc
                    entry.lastmod = lastmod
                    entry.changefreq = changefreq
                    entry.priority = priority
                    entry.images = images
                    entry.videos = ()
                    entry.news = None
                    entry.alternates = ()
                    entry.sitemap = source
                    entry.line = line
                    entry.__class__ = url_entry
                    append(entry)
                    elided += 1
                    last = m
                    pos = m.end()
                    if pos - run_start > _REGION_MAX:
                        run_end = m.start(6)
                        line += count("\n", line_pos, run_end)
                        line_pos = run_end
                        regions.append((run_start, run_end, line - run_line))
                        line += count("\n", line_pos, pos)
                        line_pos = pos
                        run_start = pos
                        run_line = line
                        last = None
                    m = match(text, pos)
                if last is not None:
                    run_end = last.start(6)
                    line += count("\n", line_pos, run_end)
                    line_pos = run_end
                    regions.append((run_start, run_end, line - run_line))
                if m is not None or pos < n:
                    synced = False
                m = None
                continue
            # Not known to be between children: look for the next </url> that a plain element follows.
            if carry:
                scanned = carry + text
                found = _URL_END.search(scanned)
                end = found.end() - len(carry) if found is not None else -1
                carry = ""
            else:
                scanned = text
                found = _URL_END.search(text, pos)
                end = found.end() if found is not None else -1
            if end >= 0:
                ends += 1
                pos = end
            if end < 0 or misses >= _PEEK_MAX:
                # feed the rest; keep an unfinished tag at its end to find a </url> cut in two
                k = scanned.rfind("<")
                if k >= 0 and scanned.find(">", k) < 0:
                    carry = scanned[k:]
                    if len(carry) > _CARRY_MAX:  # an end tag this long could go unseen
                        carry = ""
                        trusted = False
                break
            after = skip_ws(text, end).end()  # type: ignore[union-attr]  # it always matches
            if after < n:
                m = match(text, after)
                if m is None:
                    misses += 1
                    continue
            self._entries_seen = seen
            self.count += elided
            elided = 0
            resume = self._feed_lxml(
                data[start:end],
                base + start,
                start_line,
                start_begin,
                False,
                _with_comments(data, start, end, regions),
            )
            regions = []
            if resume is not None:
                kept, kept_base, kept_line, kept_line_start = resume
                return kept + data[end:], kept_base, kept_line, kept_line_start
            if self._stage != _XML:
                return None
            seen = self._entries_seen
            synced = ends == 1 and trusted and self._tail_entry and self._root_matches()
            trusted = True
            ends = 0
            line += count("\n", line_pos, end)
            line_pos = end
            nl = text.rfind("\n", start, end)
            if nl >= 0:
                start_begin = base + nl + 1
            start_line = line
            start = end
            if synced:
                misses = 0
                pos = after
            else:
                m = None
        self._entries_seen = seen
        self.count += elided
        if start < n or final:
            resume = self._feed_lxml(
                data[start:],
                base + start,
                start_line,
                start_begin,
                final,
                _with_comments(data, start, n, regions),
            )
            if resume is not None or self._stage != _XML:
                return resume
        self._synced = synced
        self._end_carry = "" if synced else carry
        self._trusted = trusted
        self._misses = min(misses, _PEEK_MAX - 1)
        history = self._history
        if synced and len(history) > 1:  # lxml has read all but trailing whitespace: no error lies before
            del history[:-1]
            self._history_bytes = len(history[0][0])
        return None

    def _root_matches(self) -> bool:
        """The root's default namespace is the one its start tag was read with (what plain elements get).
        Notes whether its prefix `image` is the image extension's (for plain `<image:image>` elements)."""
        root = self._root
        if root is None:
            return False
        if root is not self._elide_root:
            nsmap = root.nsmap
            if nsmap.get(None) != self.namespace:
                return False
            self._elide_root = root
            self._elide_images = nsmap.get("image") == NS_IMAGE
        return True

    def _plain_images(self, section: str) -> tuple[Image, ...] | None:
        """The images of a run of plain `<image:image>` elements (see `_PLAIN_BLOCK`), or None when the lxml
        path would report something about them."""
        if not self._elide_images:
            return None
        locs = _IMAGE_LOCS.findall(section)
        if len(locs) > MAX_IMAGES_PER_URL:
            return None
        images: list[Image] = []
        for loc in locs:
            if "&" in loc:
                loc = loc.replace("&amp;", "&")
            if len(loc) >= MAX_URL_LENGTH:
                return None
            images.append(_new_image(loc))
        return tuple(images)

    def _feed_lxml(
        self,
        data: bytes,
        base: int,
        first_line: int,
        line_start: int,
        final: bool,
        fed: bytes | None = None,
    ) -> tuple[bytes, int, int, int] | None:
        """Feed `data`; on a fatal error return where to seek the next entry from (see `_lxml_failed`).

        The bytes fed are kept in `_history` from the last feed that completed an element on: libxml2
        holds back an unfinished construct, so an error it finds may lie in bytes fed earlier, and the
        seek must start there whatever the chunk boundaries were. `fed`, when given, is what lxml reads
        instead of `data`: the same bytes with plain elements replaced by comments of the same layout.
        """
        xml = self._xml
        if xml is None:
            return None
        history = self._history
        if data:
            history.append((data, base, first_line, line_start, self._column_chars))
            self._history_bytes += len(data)
            # characters from the parser's column 1 to the end of `data`: lxml counts columns in those
            nl = data.rfind(b"\n")
            tail = data if nl < 0 else data[nl + 1 :]
            chars = len(tail) if tail.isascii() else len(tail.decode("utf-8", "replace"))
            self._column_chars = chars if nl >= 0 else self._column_chars + chars
        error: etree.XMLSyntaxError | None = None
        at_close = False
        try:
            if data:
                xml.feed(data if fed is None else fed)
            if final:
                at_close = True
                root = xml.close()
                if self._root is None and self._entries_seen == 0:
                    self._root = root
                    self._set_namespace_late(root)
                self._root_closed = True
        except etree.XMLSyntaxError as exc:
            error = exc
        progressed = self._drain(xml)
        if error is None:
            if len(history) > 1 and (progressed or self._history_bytes > _HISTORY_MAX):
                # lxml got past the start of the newest piece: an error cannot lie before it
                # (or, for a construct longer than _HISTORY_MAX, seek from the newest piece).
                del history[:-1]
                self._history_bytes = len(history[0][0])
            return None
        self._xml = None
        return self._lxml_failed(error, at_close)

    def _lxml_failed(self, exc: etree.XMLSyntaxError, at_close: bool) -> tuple[bytes, int, int, int] | None:
        """Report a fatal lxml error; return the bytes from the error on, with their stream offset, line
        and line start, to seek the next entry in (None when reading stops)."""
        history, self._history = self._history, []
        self._history_bytes = 0
        if history:
            _, start, start_line, start_line_start, start_chars = history[0]
            kept = b"".join(piece[0] for piece in history) if len(history) > 1 else history[0][0]
        else:
            start, start_line, start_line_start = (
                self._stream_pos,
                self._stream_line(),
                self._last_newline + 1,
            )
            start_chars = self._column_chars
            kept = b""
        # lxml raises the parser's first error; that may be one libxml2 went on after (an undeclared
        # namespace prefix), met before entries that were already read. The error that stopped the
        # parser is the newest one in the (thread's) error log.
        last = cast("Any", exc.error_log).last_error  # the stubs lack it
        if last is not None and last.level == etree.ErrorLevels.FATAL:
            msg, lineno, parser_column = str(last.message), last.line, last.column
        else:
            msg, lineno = str(exc.msg or exc), exc.lineno
            parser_column = exc.position[1] if exc.position else 1
        msg = msg.split(", line ")[0].rstrip(".")
        line = (lineno or 1) + self._line_offset
        # Where the error is in the stream: lxml gives a line and a column in characters (counted from
        # where the parser started reading the line); find the line in `kept`, then the byte.
        if line > start_line:
            offset = 0
            for _ in range(line - start_line):
                nl = kept.find(b"\n", offset)
                if nl < 0:
                    break
                offset = nl + 1
            line_start = start + offset
            at = line_start + _char_bytes(kept, offset, parser_column - 1)
        elif line == start_line:
            line_start = start_line_start
            skip = parser_column - 1 - start_chars
            at = start + _char_bytes(kept, 0, skip) if skip > 0 else start
        else:
            line_start = at = start
        if last is not None and last.level != etree.ErrorLevels.FATAL and at_close and self._root_closed:
            # only namespace errors, in a complete document: it was read
            self._stage = _SKIP
            # (namespace errors do not stop libxml2: this one may lie before the bytes still kept)
            self._parse_error(f"The XML is not well-formed: {msg}.", line, parser_column)
            return None
        if not self._fatal(msg, line, at - line_start + 1, at_close):
            return None
        cut = min(len(kept), max(0, at - start))
        nl = kept.rfind(b"\n", 0, cut)
        return (
            kept[cut:],
            start + cut,
            start_line + kept.count(b"\n", 0, cut),
            start + nl + 1 if nl >= 0 else start_line_start,
        )

    def _fatal(self, msg: str, line: int, column: int, at_close: bool) -> bool:
        """Report a fatal XML error; say whether to seek the next entry (else reading stops)."""
        self._stage = _SKIP
        if self._root_closed:
            self._parse_error(
                f"After the end of the root element: {msg}. Remove what follows </{self._root_local}>.",
                line,
                column,
            )
            return False
        if at_close:
            self._parse_error(
                f"The document ends before </{self._root_local}> ({msg}): the file is truncated "
                f"or a tag is not closed. Complete entries before line {line} were kept.",
                line,
                column,
            )
            self.truncated = True
            return False
        self._parse_error(f"The XML is not well-formed: {msg}.", line, column)
        if self._root_start is None:
            if self._entries_seen == 0:
                self.kind = None
                self.ok = False
            self.truncated = True
            return False
        self._stage = _SEEK
        return True

    def _nul(self) -> None:
        """A NUL byte, never allowed in XML, is next in the stream: stop the parser here.

        libxml2 looks ahead for the ends of constructs with C string functions, which stop at a NUL, so
        when it reports one depends on where the chunks were cut; this makes it the same every time.
        """
        if self._stage != _XML or self._xml is None:
            return
        self._xml = None
        self._history = []
        self._history_bytes = 0
        line = self._stream_line()
        line_start = self._last_newline + 1
        if self._fatal(
            "Invalid character: Char 0x0 out of allowed range", line, self._stream_pos - line_start + 1, False
        ):
            self._seek_buf, self._seek_line, self._seek_line_start = b"", line, line_start

    def _stream_line(self) -> int:
        """The line the next escaped byte is in."""
        return self._strip_lines + self._xml_lines + 1

    def _seek(self, data: bytes, base: int, final: bool) -> tuple[bytes, int, int, int] | None:
        """Look for the next entry start tag (or the root end tag) after a fatal error.

        Returns the bytes from that tag on, their stream offset, line and line start, with a new parser
        ready to read them.
        """
        assert self._resume is not None and self._root_start is not None
        buf = self._seek_buf + data if self._seek_buf else data
        buf_base = base - len(self._seek_buf)
        m = self._resume.search(buf, max(0, self._resumed_at + 1 - buf_base))
        if m is None:
            keep = len(buf) - min(len(buf), 64)
            nl = buf.rfind(b"\n", 0, keep)
            if nl >= 0:
                self._seek_line += buf.count(b"\n", 0, keep)
                self._seek_line_start = buf_base + nl + 1
            self._seek_buf = buf[keep:]
            if final:
                self.truncated = True
                self._stage = _SKIP
            return None
        self._seek_buf = b""
        at = m.start()
        line = self._seek_line + buf.count(b"\n", 0, at)
        nl = buf.rfind(b"\n", 0, at)
        line_start = buf_base + nl + 1 if nl >= 0 else self._seek_line_start
        if m.group(0).startswith(b"</"):
            self._root_closed = True
            self._stage = _SKIP
            return None
        self._resumed_at = buf_base + at
        self._column_chars = 0
        self._xml = self._new_lxml_parser(self._entry_names)
        self._root = None
        self._synced = False
        self._end_carry = ""
        self._trusted = True
        self._stage = _XML
        # The new parser reads the root start tag, a line break, then the bytes from `at` on.
        self._line_offset = line - self._root_start.count(b"\n") - 2
        try:
            self._xml.feed(self._root_start + b"\n")
        except etree.XMLSyntaxError:  # pragma: no cover - this start tag was parsed once already
            self._stage = _SKIP
            return None
        return buf[at:], buf_base + at, line, line_start

    def _drain(self, xml: etree.XMLPullParser) -> bool:
        """Read the entries lxml completed; say whether it reported any element at all."""
        kinds = self._tag_kinds
        out = self._out
        before = len(out)
        root = self._root
        last = self._last
        events = cast("Iterator[tuple[str, etree._Element]]", xml.read_events())
        el: etree._Element | None = None
        tail = False
        for _, el in events:
            tail = False
            tag = el.tag
            kind = kinds.get(tag)
            if kind is None:
                kind = self._classify(tag)
            parent = el.getparent()
            if kind in (_E_URL, _E_SITEMAP):
                if parent is not root:
                    if not self._adopt_root(parent, el):
                        continue
                    root = self._root
                tail = kind == _E_URL
                entry: Entry | None = self._read_url(el) if kind == _E_URL else self._read_sitemap(el)
            elif kind == _E_ITEM:
                entry = self._read_feed_item(el)
            elif kind == _E_ROOT:
                if parent is None:
                    self._root_end(el)
                continue
            else:
                self._misplaced(el)
                continue
            if entry is not None:
                out.append(entry)
            el.clear()
            if parent is not None:
                prev = el.getprevious()
                while prev is not None:
                    if prev is not last and kind != _E_ITEM:
                        self._unexpected_child(prev)
                    del parent[0]
                    prev = el.getprevious()
            last = el
        self._last = last
        self._tail_entry = tail
        self.count += len(out) - before
        return el is not None

    def _classify(self, tag: Any) -> int:
        kind = _E_OTHER
        if isinstance(tag, str):
            ns, local = _split(tag)
            root_kind = self.kind
            if local == self._root_local:
                kind = _E_ROOT
            elif root_kind == "urlset" and local == "url" and ns in self._core_ns:
                kind = _E_URL
            elif root_kind == "sitemapindex" and local == "sitemap" and ns in self._core_ns:
                kind = _E_SITEMAP
            elif (root_kind == "rss" and local == "item") or (
                root_kind == "atom" and local == "entry" and ns in (feeds.NS_ATOM, feeds.NS_ATOM_03)
            ):
                kind = _E_ITEM
            self._tag_kinds[tag] = kind
        return kind

    def _adopt_root(self, parent: etree._Element | None, el: etree._Element) -> bool:
        """The first entry tells which element is the root; later ones must be its children."""
        if self._root is None and parent is not None and parent.getparent() is None:
            self._root = parent
            self._set_namespace_late(parent)
            return True
        self._misplaced(el)
        return False

    def _misplaced(self, el: etree._Element) -> None:
        local = _split(el.tag)[1] if isinstance(el.tag, str) else "?"
        parent = el.getparent()
        where = f"inside <{_split(parent.tag)[1]}>" if parent is not None else "here"
        self._report(
            "unknown-tag",
            f"<{local}> does not belong {where} in a {self.kind}; it was ignored.",
            self._line(el),
            severity=Severity.WARNING,
        )
        el.clear()

    def _set_namespace_late(self, root: etree._Element) -> None:
        """Without a readable root start tag, the namespace is taken from lxml's root element."""
        if self._root_start is None and not self._core:
            self._set_namespace(etree.QName(root).namespace)

    def _unexpected_child(self, el: etree._Element) -> None:
        tag = el.tag
        if not isinstance(tag, str):
            return
        if tag in self._tag_kinds:  # an entry, or reported when it ended
            return
        ns, local = _split(tag)
        expected = "url" if self.kind == "urlset" else "sitemap"
        if ns in self._core_ns or ns in _KNOWN_NAMESPACES:
            self._report(
                "unknown-tag",
                f"<{local}> is not allowed directly inside <{self._root_local}>; only <{expected}> is. "
                "It was ignored.",
                self._line(el),
            )

    def _root_end(self, root: etree._Element) -> None:
        self._root_closed = True
        if self._root is None:
            self._root = root
            self._set_namespace_late(root)
        for child in root:
            if child.tag != root.tag:
                kind = self._tag_kinds.get(child.tag) if isinstance(child.tag, str) else None
                if kind not in (_E_URL, _E_SITEMAP, _E_ITEM) and self.kind in ("urlset", "sitemapindex"):
                    self._unexpected_child(child)

    def _line(self, el: etree._Element) -> int | None:
        line = source_line(el)
        return line + self._line_offset if line is not None else None

    # -- entries ---------------------------------------------------------------------------------------

    def _count_entry(self, line: int | None) -> None:
        self._entries_seen += 1
        if self._entries_seen > MAX_URLS:
            self._count_limit(line)

    def _count_limit(self, line: int | None) -> None:
        if self._entries_seen != MAX_URLS + 1:
            return
        if self.kind == "sitemapindex":
            self._report(
                "too-many-sitemaps",
                f"The index lists more than {MAX_URLS:,} sitemaps; split it into several indexes.",
                line,
            )
        else:
            self._report(
                "too-many-urls",
                f"The sitemap lists more than {MAX_URLS:,} URLs; split it and list the parts in a "
                "sitemap index.",
                line,
            )

    def _loc(self, raw: str | None, line: int | None, tag: str = "<loc>") -> str | None:
        """Check a page URL as written: return it (stripped) if usable, else report and return None."""
        if raw is None:
            self._report("invalid-url", f"{tag} is empty; give the page's absolute URL.", line)
            return None
        loc = raw
        if raw[:1] <= " " or raw[-1:] <= " ":
            loc = raw.strip()
            if not loc:
                self._report("invalid-url", f"{tag} is empty; give the page's absolute URL.", line)
                return None
            self._report(
                "invalid-value",
                f"{tag} has whitespace or line breaks around the URL; it was stripped, but write the "
                "URL alone.",
                line,
                url=loc,
                severity=Severity.WARNING,
            )
        problem = check_uri(loc)
        if problem is None and len(loc) < MAX_URL_LENGTH:
            return loc
        if problem == "too long" or len(loc) >= MAX_URL_LENGTH:
            self._report(
                "url-too-long",
                f"The URL has {len(loc):,} characters; it must be shorter than {MAX_URL_LENGTH:,}. "
                "It was skipped.",
                line,
                url=loc[:200],
            )
            return None
        if _usable_url(loc):
            self._report(
                "invalid-url",
                f"{tag} is not in RFC 3986 form ({problem}); percent-encode it (it was read as written)."
                if not problem or not problem.startswith(_AUTHORITY_PROBLEMS)
                else f"{tag} has a bad host or port ({problem}); fix it (it was read as written).",
                line,
                url=loc,
            )
            return loc
        self._report(
            "invalid-url",
            f"{tag} {loc!r} is not an absolute http(s) URL ({problem}); it was skipped. "
            "Write the full URL with scheme and host.",
            line,
            url=loc,
        )
        return None

    def _schema_date(self, text: str) -> Lastmod | None:
        """A date or date-time exactly in the schema's form, remembered; else None (nothing reported)."""
        if _SCHEMA_DATE.fullmatch(text) is None:
            return None
        return self._store_date(text)

    def _store_date(self, text: str) -> Lastmod | None:
        """`_schema_date` for a text known to be in the schema's form."""
        try:
            value: Lastmod = (
                dt.datetime.fromisoformat(text) if len(text) > 10 else dt.date.fromisoformat(text)
            )
        except ValueError:
            return None
        cache = self._date_cache
        if len(cache) >= _DATE_CACHE_SIZE:
            cache.clear()
        cache[text] = value
        return value

    def _date(
        self, text: str | None, tag: str, where: etree._Element | int | None, url: str | None
    ) -> Lastmod | None:
        """Read a W3C Datetime; report it (at `where`, an element or a line) when the schema rejects it."""
        cache = self._date_cache
        if text is not None:
            cached = cache.get(text)
            if cached is not None:
                return cached
            if _SCHEMA_DATE.fullmatch(text) is not None:
                try:
                    value: Lastmod = (
                        dt.datetime.fromisoformat(text) if len(text) > 10 else dt.date.fromisoformat(text)
                    )
                except ValueError:
                    pass
                else:
                    if len(cache) >= _DATE_CACHE_SIZE:
                        cache.clear()
                    cache[text] = value
                    return value
        s = (text or "").strip()
        found, problem = _date_value(s) if s else (None, "it is empty")
        if problem is None:
            return found
        line = self._line(where) if isinstance(where, etree._Element) else where
        kept = "" if found is not None else " It was ignored."
        self._report(
            "invalid-date",
            f"<{tag}> {s!r} is not a valid date: {problem}. Write a W3C Datetime such as 2024-05-01 or "
            f"2024-05-01T12:00:00+00:00.{kept}",
            line,
            url=url,
        )
        return found

    def _too_many(self, tag: str, line: int | None, url: str | None) -> None:
        self._report(
            "too-many-tags",
            f"<{tag}> appears more than once; only the first was read. Keep one.",
            line,
            url=url,
        )

    def _read_url(self, el: etree._Element) -> UrlEntry | None:
        line: int | None = el.sourceline  # type: ignore[assignment]
        if line is not None:
            if line >= _LXML_LINE_LIMIT:
                line = self._line(el)
            else:
                line += self._line_offset
        self._entries_seen += 1
        if self._entries_seen > MAX_URLS:
            self._count_limit(line)
        # The common <url>: <loc>, then any of <lastmod>, <changefreq>, <priority> in that order, in the
        # root's namespace, each a plain valid value: read in one pass with nothing to report. Anything
        # else is read by `_read_url_checked`, which reports it.
        children = list(el)
        n = len(children)
        tags = self._fast_tags
        if n and n <= 4 and tags and self._FAST_READ:
            child = children[0]
            text = child.text
            if (
                child.tag == tags[0]
                and text
                and text[0] > " "
                and text[-1] > " "
                and len(text) < MAX_URL_LENGTH
                and _PLAIN_URL.fullmatch(text) is not None
                and not len(child)
            ):
                loc = text
                lastmod: Lastmod | None = None
                changefreq: str | None = None
                priority: float | None = None
                i = 1
                if i < n:
                    child = children[i]
                    if child.tag == tags[1]:
                        text = child.text
                        if text is None:
                            return self._read_url_checked(el, line)
                        lastmod = self._date_cache.get(text)
                        if lastmod is None:
                            lastmod = self._schema_date(text)
                            if lastmod is None:
                                return self._read_url_checked(el, line)
                        i += 1
                if i < n:
                    child = children[i]
                    if child.tag == tags[2]:
                        changefreq = child.text
                        if changefreq not in CHANGEFREQS:
                            return self._read_url_checked(el, line)
                        i += 1
                if i < n:
                    child = children[i]
                    if child.tag == tags[3]:
                        text = child.text
                        priority = _PRIORITIES.get(text) if text is not None else None
                        if priority is None:
                            return self._read_url_checked(el, line)
                        i += 1
                if i == n:
                    return _new_url_entry(loc, lastmod, changefreq, priority, self.source, line)
        return self._read_url_checked(el, line)

    def _read_url_checked(self, el: etree._Element, line: int | None) -> UrlEntry | None:
        core = self._core
        loc_el = lastmod_el = changefreq_el = priority_el = None
        rank = 0
        extensions: list[etree._Element] | None = None
        disorder: etree._Element | None = None
        for child in el:
            r = core.get(child.tag)
            if r is None:
                if extensions is None:
                    extensions = []
                extensions.append(child)
                rank = _EXTENSION_RANK
                continue
            if r < rank and disorder is None:
                disorder = child
            rank = r
            if r == _LOC:
                if loc_el is None:
                    loc_el = child
                    continue
            elif r == _LASTMOD:
                if lastmod_el is None:
                    lastmod_el = child
                    continue
            elif r == _CHANGEFREQ:
                if changefreq_el is None:
                    changefreq_el = child
                    continue
            elif priority_el is None:
                priority_el = child
                continue
            self._too_many(_CORE_NAMES[r], self._line(child), None)
        loc: str | None = None
        if loc_el is None:
            self._report("missing-tag", "<url> has no <loc>; every <url> needs one. It was skipped.", line)
        else:
            text = loc_el.text
            if (
                text is not None
                and text[0] > " "
                and text[-1] > " "
                and len(text) < MAX_URL_LENGTH
                and (_PLAIN_URL.fullmatch(text) is not None or check_uri(text) is None)
                and not len(loc_el)
            ):
                loc = text
            else:
                loc = self._loc(_text(loc_el), self._line(loc_el))
        if disorder is not None:
            self._report(
                "tag-order",
                f"<{_split(disorder.tag)[1]}> comes out of order; write <loc>, <lastmod>, <changefreq>, "
                "<priority>, then extension tags.",
                self._line(disorder),
                url=loc,
            )
        lastmod: Lastmod | None = None
        changefreq: str | None = None
        priority: float | None = None
        if lastmod_el is not None:
            text = lastmod_el.text
            lastmod = self._date_cache.get(text) if text is not None else None
            if lastmod is None:
                lastmod = self._date(text, "lastmod", lastmod_el, loc)
        if changefreq_el is not None:
            text = changefreq_el.text
            changefreq = text if text in CHANGEFREQS else self._changefreq(changefreq_el, loc)
        if priority_el is not None:
            text = priority_el.text
            priority = _PRIORITIES.get(text) if text is not None else None
            if priority is None:
                priority = self._priority(priority_el, loc)
        if extensions is None:
            if loc is None:
                return None
            return _new_url_entry(loc, lastmod, changefreq, priority, self.source, line)
        images, videos, news, alternates = self._extensions(extensions, loc, line)
        if loc is None:
            return None
        if not videos and news is None and not alternates:
            return _new_url_entry(loc, lastmod, changefreq, priority, self.source, line, images)
        return UrlEntry(
            loc, lastmod, changefreq, priority, images, videos, news, alternates, self.source, line
        )

    def _changefreq(self, el: etree._Element, loc: str | None) -> str | None:
        raw = (el.text or "").strip()
        if raw in CHANGEFREQS:
            return raw
        allowed = ", ".join(sorted(CHANGEFREQS))
        if raw.lower() in CHANGEFREQS:
            self._report(
                "invalid-value",
                f"<changefreq> {raw!r} must be lowercase ({raw.lower()}); it was read as {raw.lower()!r}.",
                self._line(el),
                url=loc,
            )
            return raw.lower()
        self._report(
            "invalid-value",
            f"<changefreq> {raw!r} is not one of {allowed}; it was ignored.",
            self._line(el),
            url=loc,
        )
        return None

    def _priority(self, el: etree._Element, loc: str | None) -> float | None:
        raw = (el.text or "").strip()
        if _DECIMAL.fullmatch(raw) is not None:
            value = float(raw)
            if 0.0 <= value <= 1.0:
                return value
        self._report(
            "invalid-value",
            f"<priority> {raw!r} is not a decimal from 0.0 to 1.0; it was ignored.",
            self._line(el),
            url=loc,
        )
        return None

    def _read_sitemap(self, el: etree._Element) -> IndexEntry | None:
        line = self._line(el)
        self._count_entry(line)
        core = self._core
        loc_el = lastmod_el = None
        for child in el:
            tag = child.tag
            r = core.get(tag)
            if r == _LOC:
                if loc_el is not None:
                    self._too_many("loc", self._line(child), None)
                else:
                    loc_el = child
            elif r == _LASTMOD:
                if lastmod_el is not None:
                    self._too_many("lastmod", self._line(child), None)
                else:
                    lastmod_el = child
            elif isinstance(tag, str):
                ns, local = _split(tag)
                if ns in self._core_ns or ns in _KNOWN_NAMESPACES:
                    self._unknown(local, ns, self._line(child), None, "<sitemap> (only <loc> and <lastmod>)")
        if loc_el is None:
            self._report(
                "missing-tag", "<sitemap> has no <loc>; every <sitemap> needs one. It was skipped.", line
            )
            return None
        loc = self._loc(_text(loc_el), self._line(loc_el))
        if loc is None:
            return None
        lastmod = None
        if lastmod_el is not None:
            lastmod = self._date(lastmod_el.text, "lastmod", lastmod_el, loc)
        return IndexEntry(loc, lastmod, self.source, line)

    def _read_feed_item(self, el: etree._Element) -> UrlEntry | None:
        line = self._line(el)
        self._count_entry(line)
        item = feeds.rss_item(el) if self.kind == "rss" else feeds.atom_entry(el)
        what = "<item>" if self.kind == "rss" else "<entry>"
        if item.link is None:
            self._report("missing-tag", f"{what} has no <link>; it was skipped.", line)
            return None
        link_line = item.link_line + self._line_offset if item.link_line is not None else line
        loc = self._loc(item.link, link_line, "<link>")
        if loc is None:
            return None
        lastmod: Lastmod | None = None
        if item.date is not None:
            if item.date_format == "rfc822":
                lastmod = feeds.parse_rfc822(item.date)
                if lastmod is None:
                    self._report(
                        "invalid-date",
                        f"<{item.date_tag}> {item.date.strip()!r} is not an RFC 822 date "
                        "(Tue, 10 Jun 2003 04:00:00 GMT); it was ignored.",
                        line,
                        url=loc,
                    )
            else:
                lastmod = self._date(item.date, item.date_tag, line, loc)
        return UrlEntry(loc, lastmod, sitemap=self.source, line=line)

    # -- extensions ------------------------------------------------------------------------------------

    def _unknown(self, local: str, ns: str, line: int | None, url: str | None, where: str) -> None:
        names = {
            NS_IMAGE: ("image", *_IMAGE_FIELDS),
            NS_VIDEO: ("video", *_VIDEO_FIELDS),
            NS_NEWS: ("news", "publication", "name", "language", "publication_date", "title"),
            NS_XHTML: ("link",),
        }.get(ns, _CORE_NAMES)
        import difflib  # only for this hint: not worth importing for every document

        close = difflib.get_close_matches(local, names, n=1)
        hint = f" (did you mean <{close[0]}>?)" if close else ""
        self._report(
            "unknown-tag",
            f"<{local}> is not a tag of {where}{hint}; it was ignored.",
            line,
            url=url,
        )

    def _extensions(
        self, children: list[etree._Element], loc: str | None, line: int | None
    ) -> tuple[tuple[Image, ...], tuple[Video, ...], News | None, tuple[Alternate, ...]]:
        images: list[Image] = []
        videos: list[Video] = []
        alternates: list[Alternate] = []
        news: News | None = None
        news_seen = False
        image_count = 0
        for child in children:
            tag = child.tag
            if not isinstance(tag, str):
                continue
            ns, local = _split(tag)
            if ns == NS_IMAGE and local == "image":
                image_count += 1
                if image_count == MAX_IMAGES_PER_URL + 1:
                    self._report(
                        "too-many-images",
                        f"The URL has more than {MAX_IMAGES_PER_URL:,} images; only the first "
                        f"{MAX_IMAGES_PER_URL:,} were read.",
                        self._line(child),
                        url=loc,
                    )
                if image_count <= MAX_IMAGES_PER_URL:
                    image = self._image(child, loc)
                    if image is not None:
                        images.append(image)
            elif ns == NS_VIDEO and local == "video":
                videos.append(self._video(child, loc))
            elif ns == NS_NEWS and local == "news":
                if news_seen:
                    self._too_many("news:news", self._line(child), loc)
                    continue
                news_seen = True
                news = self._news(child, loc)
            elif ns == NS_XHTML and local == "link":
                alternate = self._alternate(child, loc)
                if alternate is not None:
                    alternates.append(alternate)
            elif ns in self._core_ns:
                self._unknown(local, ns, self._line(child), loc, "<url>")
            elif ns in _KNOWN_NAMESPACES:
                self._unknown(local, ns, self._line(child), loc, "<url> in that namespace")
        return tuple(images), tuple(videos), news, tuple(alternates)

    def _ext_url(self, el: etree._Element, tag: str, page: str | None) -> str | None:
        raw = _text(el).strip()
        problem = check_uri(raw) if raw else "empty"
        if problem is None and len(raw) < MAX_URL_LENGTH:
            return raw
        line = self._line(el)
        if not raw:
            self._report("invalid-url", f"<{tag}> is empty; give an absolute URL.", line, url=page)
            return None
        usable = _usable_url(raw)
        if problem is None or problem == "too long":
            problem = f"{len(raw):,} characters; the limit is {MAX_URL_LENGTH - 1:,}"
        ignored = " (it was read as written)" if usable else "; it was ignored"
        self._report(
            "invalid-url", f"<{tag}> {raw[:200]!r} is not a valid URL ({problem}){ignored}.", line, url=page
        )
        return raw if usable else None

    def _deprecated(self, tag: str, line: int | None, url: str | None, kept: bool = True) -> None:
        what = "it was read, but" if kept else "it was ignored, and"
        self._report(
            "deprecated-tag",
            f"<{tag}> is deprecated (Google no longer uses it); {what} it can be removed.",
            line,
            url=url,
        )

    def _image(self, el: etree._Element, page: str | None) -> Image | None:
        values: dict[str, str] = {}
        loc: str | None = None
        has_loc = False
        for child in el:
            tag = child.tag
            if tag == _IMAGE_LOC and not has_loc:
                has_loc = True
                text = child.text
                if (
                    text is not None
                    and len(text) < MAX_URL_LENGTH
                    and (_PLAIN_URL.fullmatch(text) is not None or check_uri(text) is None)
                ):
                    loc = text
                else:
                    loc = self._ext_url(child, "image:loc", page)
                continue
            if not isinstance(tag, str):
                continue
            ns, local = _split(tag)
            if ns != NS_IMAGE or local not in _IMAGE_FIELDS:
                if ns == NS_IMAGE or ns in self._core_ns:
                    self._unknown(local, ns, self._line(child), page, "<image:image>")
                continue
            if local == "loc" or local in values:
                self._too_many(f"image:{local}", self._line(child), page)
                continue
            self._deprecated(f"image:{local}", self._line(child), page)
            values[local] = _text(child).strip()
        if loc is None:
            if not has_loc:
                self._report(
                    "missing-tag",
                    "<image:image> has no <image:loc>; the image was skipped.",
                    self._line(el),
                    url=page,
                )
            return None
        return Image(loc, **values) if values else _new_image(loc)

    def _video(self, el: etree._Element, page: str | None) -> Video:
        fields: dict[str, Any] = {}
        seen: set[str] = set()
        tags: list[str] = []
        for child in el:
            tag = child.tag
            if not isinstance(tag, str):
                continue
            ns, local = _split(tag)
            line = self._line(child)
            if ns != NS_VIDEO:
                if ns in self._core_ns or ns in _KNOWN_NAMESPACES:
                    self._unknown(local, ns, line, page, "<video:video>")
                continue
            if local == "tag":
                tags.append(_text(child).strip())
                continue
            if local not in _VIDEO_FIELDS:
                self._unknown(local, ns, line, page, "<video:video>")
                continue
            if local in seen:
                self._too_many(f"video:{local}", line, page)
                continue
            seen.add(local)
            self._video_field(child, local, line, page, fields)
        if len(tags) > MAX_VIDEO_TAGS:
            self._report(
                "invalid-value",
                f"The video has {len(tags)} <video:tag> elements; at most {MAX_VIDEO_TAGS} are allowed "
                f"(the first {MAX_VIDEO_TAGS} were read).",
                self._line(el),
                url=page,
            )
            tags = tags[:MAX_VIDEO_TAGS]
        missing = [t for t in ("thumbnail_loc", "title", "description") if t not in seen]
        if "content_loc" not in seen and "player_loc" not in seen:
            missing.append("content_loc or player_loc")
        if missing:
            self._report(
                "video-missing-tag",
                "<video:video> lacks "
                + ", ".join(f"<video:{m}>" for m in missing)
                + "; Google ignores videos without them.",
                self._line(el),
                url=page,
            )
        for tag in ("content_loc", "player_loc"):
            if page is not None and fields.get(tag) == page:
                self._report(
                    "video-location-is-page",
                    f"<video:{tag}> is the page's own URL; point it at the video file or player.",
                    self._line(el),
                    url=page,
                )
        return Video(**fields, tags=tuple(tags))

    def _video_field(
        self, child: etree._Element, local: str, line: int | None, page: str | None, fields: dict[str, Any]
    ) -> None:
        text = _text(child).strip()
        name = f"video:{local}"

        def invalid(why: str) -> None:
            self._report("invalid-value", f"<{name}> {text[:100]!r} {why}; it was ignored.", line, url=page)

        if local in _VIDEO_URLS:
            if local == "gallery_loc":
                self._deprecated(name, line, page)
            if local == "player_loc":
                for attr in ("allow_embed", "autoplay"):
                    if child.get(attr) is not None:
                        self._deprecated(f"video:player_loc {attr}=", line, page)
            value = self._ext_url(child, name, page)
            if value is not None:
                fields[local] = value
        elif local in _VIDEO_TEXT:
            if local == "category":
                self._deprecated(name, line, page)
            if local == "description" and len(text) > MAX_VIDEO_DESCRIPTION:
                self._report(
                    "invalid-value",
                    f"<{name}> has {len(text):,} characters; at most {MAX_VIDEO_DESCRIPTION:,} are "
                    "allowed (it was read in full).",
                    line,
                    url=page,
                )
            if local == "uploader":
                if len(text) > 255:
                    self._report(
                        "invalid-value",
                        f"<{name}> has {len(text)} characters; at most 255 are allowed (it was read).",
                        line,
                        url=page,
                    )
                info = child.get("info")
                if info is not None:
                    fields["uploader_info"] = info.strip()
            fields[local] = text
        elif local == "duration":
            if _INTEGER.fullmatch(text) is None or not 1 <= int(text) <= MAX_VIDEO_DURATION:
                invalid(f"is not a whole number of seconds from 1 to {MAX_VIDEO_DURATION:,}")
            else:
                fields[local] = int(text)
        elif local == "rating":
            if _DECIMAL.fullmatch(text) is None or not 0.0 <= float(text) <= 5.0:
                invalid("is not a number from 0.0 to 5.0")
            else:
                fields[local] = float(text)
        elif local == "view_count":
            if _INTEGER.fullmatch(text) is None or int(text) < 0:
                invalid("is not a whole number of views")
            else:
                fields[local] = int(text)
        elif local in _VIDEO_DATES:
            date = self._date(text, name, line, page)
            if date is not None:
                fields[local] = date
        elif local in _VIDEO_BOOLS:
            if text.lower() not in ("yes", "no"):
                invalid("must be yes or no")
            else:
                if text not in ("yes", "no"):
                    self._report(
                        "invalid-value", f"<{name}> {text!r} must be lowercase yes or no.", line, url=page
                    )
                fields[local] = text.lower() == "yes"
        elif local in ("restriction", "platform"):
            self._video_list(child, local, text, line, page, fields)
        else:  # price, tvshow, id: deprecated, not in the model
            self._deprecated(name, line, page, kept=False)

    def _video_list(
        self,
        child: etree._Element,
        local: str,
        text: str,
        line: int | None,
        page: str | None,
        fields: dict[str, Any],
    ) -> None:
        name = f"video:{local}"
        relationship = (child.get("relationship") or "").strip()
        if relationship not in ("allow", "deny"):
            self._report(
                "invalid-value",
                f'<{name}> needs relationship="allow" or "deny" (found {relationship!r}); it was ignored.',
                line,
                url=page,
            )
            return
        tokens = text.split()
        if local == "restriction":
            bad = [t for t in tokens if t not in REGION_CODES]
            allowed = "uppercase ISO 3166-1 alpha-2 country codes"
        else:
            bad = [t for t in tokens if t not in _PLATFORMS]
            allowed = "web, mobile and tv"
        if bad:
            self._report(
                "invalid-value",
                f"<{name}> lists {' '.join(bad)!r}; only {allowed} are allowed (read as written).",
                line,
                url=page,
            )
        fields[local] = " ".join(tokens)
        fields[f"{local}_relationship"] = relationship

    def _news(self, el: etree._Element, page: str | None) -> News | None:
        values: dict[str, str] = {}
        date: Lastmod | None = None
        date_seen = False
        for child in el:
            tag = child.tag
            if not isinstance(tag, str):
                continue
            ns, local = _split(tag)
            line = self._line(child)
            if ns != NS_NEWS:
                if ns in self._core_ns or ns in _KNOWN_NAMESPACES:
                    self._unknown(local, ns, line, page, "<news:news>")
                continue
            if local == "publication":
                if "publication" in values:
                    self._too_many("news:publication", line, page)
                    continue
                values["publication"] = ""
                for part in child:
                    ptag = part.tag
                    if not isinstance(ptag, str):
                        continue
                    pns, plocal = _split(ptag)
                    if pns == NS_NEWS and plocal in ("name", "language"):
                        if plocal in values:
                            self._too_many(f"news:{plocal}", self._line(part), page)
                        else:
                            values[plocal] = _text(part).strip()
                    elif pns == NS_NEWS or pns in self._core_ns:
                        self._unknown(plocal, pns, self._line(part), page, "<news:publication>")
            elif local == "publication_date":
                if date_seen:
                    self._too_many("news:publication_date", line, page)
                    continue
                date_seen = True
                date = self._date(_text(child), "news:publication_date", line, page)
            elif local in ("title", "keywords", "stock_tickers"):
                if local in values:
                    self._too_many(f"news:{local}", line, page)
                    continue
                if local != "title":
                    self._deprecated(f"news:{local}", line, page)
                values[local] = _text(child).strip()
            elif local in ("genres", "access"):
                self._deprecated(f"news:{local}", line, page, kept=False)
            else:
                self._unknown(local, ns, line, page, "<news:news>")
        missing = [f"<news:{t}>" for t in ("name", "language", "title") if not values.get(t)]
        if not date_seen:
            missing.insert(2, "<news:publication_date>")
        if missing:
            self._report(
                "missing-tag",
                "<news:news> lacks " + ", ".join(missing) + "; the news block was ignored.",
                self._line(el),
                url=page,
            )
            return None
        if date is None:
            return None
        language = values["language"]
        if _NEWS_LANGUAGE.fullmatch(language) is None or (
            len(language) == 2 and language.lower() not in LANGUAGE_CODES
        ):
            self._report(
                "invalid-value",
                f"<news:language> {language!r} is not an ISO 639 code (like en, or zh-cn / zh-tw); "
                "it was read as written.",
                self._line(el),
                url=page,
            )
        self._news_count += 1
        if self._news_count == MAX_NEWS_PER_SITEMAP + 1:
            self._report(
                "news-too-many",
                f"More than {MAX_NEWS_PER_SITEMAP:,} URLs carry <news:news>; split the news sitemap.",
                self._line(el),
                url=page,
            )
        return News(
            values["name"],
            language,
            date,
            values["title"],
            values.get("keywords"),
            values.get("stock_tickers"),
        )

    def _alternate(self, el: etree._Element, page: str | None) -> Alternate | None:
        line = self._line(el)
        rel = (el.get("rel") or "").strip()
        hreflang = el.get("hreflang")
        href = el.get("href")
        if rel.lower() != "alternate":
            self._report(
                "invalid-value",
                f'<xhtml:link> has rel={rel!r}; hreflang links need rel="alternate". It was ignored.',
                line,
                url=page,
            )
            return None
        missing = [a for a, v in (("hreflang", hreflang), ("href", href)) if v is None or not v.strip()]
        if missing:
            self._report(
                "missing-tag",
                "<xhtml:link> lacks the " + " and ".join(missing) + " attribute; the alternate was ignored.",
                line,
                url=page,
            )
            return None
        assert hreflang is not None and href is not None
        problem = hreflang_problem(hreflang)
        if problem is not None:
            self._report(
                "hreflang-invalid",
                f"hreflang {hreflang!r} is not valid: {problem}. It was read as written.",
                line,
                url=page,
            )
        url = href.strip()
        check = check_uri(url)
        if check is not None or len(url) >= MAX_URL_LENGTH:
            usable = _usable_url(url) and len(url) < MAX_URL_LENGTH
            ignored = "read as written" if usable else "the alternate was ignored"
            self._report(
                "invalid-url",
                f"<xhtml:link> href {url[:200]!r} is not a valid absolute URL ({check or 'too long'}); "
                f"{ignored}.",
                line,
                url=page,
            )
            if not usable:
                return None
        return Alternate(hreflang.strip(), url)

    # -- text ----------------------------------------------------------------------------------------------

    def _text_bytes(self, data: bytes, final: bool) -> None:
        buf = self._buf + data if self._buf else data
        lines = buf.split(b"\n")
        rest = lines.pop()
        for raw in lines:
            self._text_entry(raw)
        if final:
            if rest:
                self._text_entry(rest)
            rest = b""
        elif len(rest) > _MAX_TEXT_LINE:
            if not self._text_overlong:
                self._text_line += 1
                self._text_overlong = True
                self._count_entry(self._text_line)
                self._report(
                    "url-too-long",
                    f"Line {self._text_line} has more than {_MAX_TEXT_LINE:,} bytes; it was skipped.",
                    self._text_line,
                )
            rest = b""
        self._buf = rest

    def _text_entry(self, raw: bytes) -> None:
        if self._text_overlong:  # the rest of a line already reported as too long
            self._text_overlong = False
            return
        self._text_line += 1
        s = raw.strip()
        if not s:
            return
        line = self._text_line
        self._count_entry(line)
        loc = self._loc(s.decode("utf-8", "replace"), line, "The line")
        if loc is not None:
            self.count += 1
            self._out.append(UrlEntry(loc, sitemap=self.source, line=line))

    # -- end ---------------------------------------------------------------------------------------------

    def _finish(self) -> None:
        if self.kind is None:
            self.ok = False
            return
        if self.kind != "text" and not self._root_closed:
            self.truncated = True
        if self._entries_seen == 0 and not self.truncated:
            what = {"sitemapindex": "sitemap index", "text": "text sitemap"}.get(self.kind, self.kind)
            listed = "sitemaps" if self.kind == "sitemapindex" else "URLs"
            self._report("empty-sitemap", f"The {what} lists no {listed}.")

    @property
    def skipped(self) -> int:
        """Entries met in the document but not returned because of a problem (each was reported)."""
        return self._entries_seen - self.count


def parse_bytes(
    data: bytes,
    source: str = "<bytes>",
    *,
    on_diagnostic: DiagnosticCallback | None = None,
    max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED,
) -> Iterator[Entry]:
    """Parse a whole document held in memory (plain or gzip); yield its entries."""
    parser = SitemapParser(source, on_diagnostic=on_diagnostic, max_uncompressed=max_uncompressed)
    view = memoryview(data)
    for start in range(0, len(data), CHUNK):
        for batch in parser.feed_pieces(bytes(view[start : start + CHUNK])):
            yield from batch
    yield from parser.close()


def parse_file(
    path: str | os.PathLike[str],
    *,
    source: str | None = None,
    on_diagnostic: DiagnosticCallback | None = None,
    max_uncompressed: int = DEFAULT_MAX_UNCOMPRESSED,
) -> Iterator[Entry]:
    """Parse a sitemap file (plain or gzip, any supported format), reading it in chunks; yield its entries."""
    parser = SitemapParser(
        source if source is not None else os.fspath(path),
        on_diagnostic=on_diagnostic,
        max_uncompressed=max_uncompressed,
    )
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            for batch in parser.feed_pieces(chunk):
                yield from batch
    yield from parser.close()
