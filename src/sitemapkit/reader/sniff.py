"""Format sniffing: what the first bytes of a UTF-8 document are (a urlset, a sitemap index, a feed, a text
sitemap, or why it is none), with the DOCTYPE screened for safety before any XML parser sees it."""

from __future__ import annotations

import re
from typing import Final, Literal, NamedTuple

from sitemapkit.reader.safety import doctype_problem

Kind = Literal["urlset", "sitemapindex", "text", "rss", "atom"]

_PROLOG_MAX: Final = 256 * 1024
_NAME = rb"[A-Za-z_][\w.\-]*(?::[A-Za-z_][\w.\-]*)?"
_START_TAG = re.compile(rb"<(" + _NAME + rb")((?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*)\s*/?>")
_NAME_ONLY = re.compile(rb"<(" + _NAME + rb")")
_XMLNS = re.compile(rb"""\sxmlns(?::([\w.\-]+))?\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_DOCTYPE_END = re.compile(rb"\]\s*>")
_DOCTYPE_HEAD = re.compile(rb"""<!DOCTYPE(?:[^\[>"']|"[^"]*"|'[^']*')*""", re.IGNORECASE)
"""A DOCTYPE up to its internal subset (`[`) or its end (`>`), quoted literals skipped whole: a `>` or a
`[` inside `SYSTEM "x><urlset"` ends nothing."""
_TAG_END = re.compile(rb"""<[^\s>/"']*(?:[^>"']|"[^"]*"|'[^']*')*>""")
"""A start tag up to its real `>` (one inside a quoted attribute value does not end it)."""
WHITESPACE = b" \t\r\n"
_ROOT_KINDS: Final[dict[str, Kind]] = {
    "urlset": "urlset",
    "sitemapindex": "sitemapindex",
    "rss": "rss",
    "RDF": "rss",
    "feed": "atom",
}


class Sniff(NamedTuple):
    """What the first bytes of a document are."""

    kind: Kind | None
    problem: str | None = None  # why it cannot be read (with kind None)
    code: str = "unsupported-format"
    skip: int = 0  # leading whitespace to drop before the XML declaration
    root: str | None = None  # qualified name of the root element
    root_start: bytes | None = None  # the root's start tag, as written
    namespace: str | None = None  # the root's namespace, from its start tag
    line: int | None = 1  # the line of what was found (the root's start tag, the DOCTYPE); None: no line
    # (a body that is not a sitemap is not quoted line by line: no excerpt of it is shown)


def sniff_format(buf: bytes, final: bool) -> Sniff | None:
    """Decide the format from the start of a UTF-8 document, or None when more bytes are needed."""
    rest = buf.lstrip(WHITESPACE)
    skip = len(buf) - len(rest)
    if not rest:
        if not final:
            return None
        what = "is empty" if not buf else "holds only whitespace"
        return Sniff(None, f"The body {what}; a sitemap needs a <urlset> or a list of URLs.")
    if rest.startswith(b"<<<<<<<"):
        return Sniff(
            None,
            "The file holds git merge-conflict markers (<<<<<<<, =======, >>>>>>>); "
            "resolve the conflict and publish one sitemap.",
        )
    if rest.startswith(b"---"):
        return Sniff(
            None,
            "The file starts with YAML front matter (---): it is an unrendered template "
            "(Jekyll/Liquid?); publish the generated sitemap, not its source.",
        )
    if rest[:2] in (b"{%", b"{{", b"{#"):
        return Sniff(None, _template_message(rest[:2]))
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
        while pos < len(buf) and buf[pos] in WHITESPACE:
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
            head = _DOCTYPE_HEAD.match(buf, pos)
            assert head is not None
            stop = head.end()
            if stop >= len(buf):
                end = -1  # the head (or a quoted literal in it) runs on past what has arrived
            elif buf[stop] == 0x5B:  # "[": an internal subset, refused below whatever it holds
                m = _DOCTYPE_END.search(buf, stop)
                end = m.end() if m else -1
            else:
                end = stop + 1
            if end < 0:
                return _need_more(buf, final, "The DOCTYPE declaration is not closed.")
            doctype = buf[pos:end]
            problem = doctype_problem(doctype)
            if problem is not None:
                return Sniff(
                    None,
                    f"Refused for safety: {problem}. Sitemaps need no DOCTYPE; remove it.",
                    code="forbidden-doctype",
                    line=buf.count(b"\n", 0, pos) + 1,
                )
            if re.match(rb"<!DOCTYPE\s+html\b", doctype, re.IGNORECASE):
                return Sniff(None, _html_message())
            pos = end
        elif buf[pos] == 0x3C:
            return _sniff_root(buf, pos, final, skip=leading)
        else:
            if not final and len(buf) < pos + 40 and b"\n" not in buf[pos:]:
                return None  # the message quotes what comes: the same however the bytes arrive
            snippet = buf[pos : pos + 2]
            if snippet in (b"{%", b"{{", b"{#"):
                return Sniff(None, _template_message(snippet))
            text = buf[pos : pos + 40].decode("utf-8", "replace").split("\n")[0]
            return Sniff(None, f"Text {text!r} comes before the root element; this is not a sitemap.")


def _need_more(buf: bytes, final: bool, problem: str) -> Sniff | None:
    if final or len(buf) > _PROLOG_MAX:
        return Sniff(None, f"{problem} No sitemap could be read.", code="parse-error")
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


def _sniff_root(buf: bytes, pos: int, final: bool, skip: int) -> Sniff | None:
    line = buf.count(b"\n", 0, pos) + 1
    m = _START_TAG.match(buf, pos)
    if m is None:
        if not final and _TAG_END.match(buf, pos) is None and len(buf) <= _PROLOG_MAX:
            return None  # the start tag has not all arrived (a quoted ">" does not end it)
        name_m = _NAME_ONLY.match(buf, pos)
        if name_m is None:
            return Sniff(None, "The document does not start with an element; it is not a sitemap.", line=line)
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
            return Sniff(None, _html_message(), line=line)
        return Sniff(
            None,
            f"The root element is <{qname}>, not <urlset> or <sitemapindex>; this is not a sitemap.",
            line=line,
        )
    return Sniff(kind, skip=skip, root=qname, root_start=root_start, namespace=ns, line=line)


def _sniff_text(rest: bytes, final: bool) -> Sniff | None:
    nl = rest.find(b"\n")
    if nl < 0 and not final and len(rest) < 4096:
        return None
    first = (rest[:nl] if nl >= 0 else rest[:4096]).strip()
    if re.fullmatch(rb"(?i)https?://[^\s<>{}\"\x00-\x1f]+", first):
        return Sniff("text")
    # Not a URL list. Nothing of it is quoted (it may be a secret a server was tricked into sending).
    return Sniff(
        None,
        f"The body is neither XML nor a list of URLs (its first line, {len(first):,} bytes, is not an "
        "absolute http(s) URL, and a text sitemap lists only those, one a line); not read further.",
        line=None,
    )
