"""Render entries as sitemap XML text: exact escaping, schema order, only the namespaces in use."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable

from sitemapkit.core.constants import NS_IMAGE, NS_NEWS, NS_SITEMAP, NS_VIDEO, NS_XHTML
from sitemapkit.core.dates import format_w3c
from sitemapkit.core.model import Alternate, Image, IndexEntry, News, UrlEntry, Video

# Characters XML 1.0 forbids outright; they cannot be escaped, only removed.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")

EXTENSION_PREFIXES: dict[str, str] = {
    "image": NS_IMAGE,
    "video": NS_VIDEO,
    "news": NS_NEWS,
    "xhtml": NS_XHTML,
}
_PREFIX_ORDER = ("image", "video", "news", "xhtml")


def escape(text: str) -> str:
    """Escape text for element content or a double-quoted attribute: `& < > " '` become entities.

    Characters XML 1.0 cannot carry at all (most C0 controls) are removed.

    >>> escape("a&b <c> \\"d\\" 'e'")
    'a&amp;b &lt;c&gt; &quot;d&quot; &apos;e&apos;'
    """
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    if '"' in text:
        text = text.replace('"', "&quot;")
    if "'" in text:
        text = text.replace("'", "&apos;")
    if not text.isprintable() and _XML_INVALID.search(text):
        text = _XML_INVALID.sub("", text)
    return text


def escape_url(url: str) -> str:
    """Escape a normalised URL (only `&` and `'` can occur in one)."""
    if "&" in url:
        url = url.replace("&", "&amp;")
    if "'" in url:
        url = url.replace("'", "&apos;")
    return url


def xml_header(root: str, prefixes: Iterable[str] = (), xsl: str | None = None) -> str:
    """The XML declaration, optional stylesheet reference and root start tag."""
    used = set(prefixes)
    decls = "".join(f' xmlns:{p}="{EXTENSION_PREFIXES[p]}"' for p in _PREFIX_ORDER if p in used)
    pi = f'<?xml-stylesheet type="text/xsl" href="{escape(xsl)}"?>\n' if xsl else ""
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{pi}<{root} xmlns="{NS_SITEMAP}"{decls}>\n'


def xml_footer(root: str) -> str:
    return f"</{root}>\n"


def format_priority(value: float) -> str:
    """A priority as the writer writes it: `0.5`, `1.0`, `0.55`."""
    text = _PRIORITIES.get(value)
    if text is None:
        text = f"{value:.4f}".rstrip("0")
        if text.endswith("."):
            text += "0"
        if value and len(_PRIORITIES) < 1024:  # (not 0.0, equal to -0.0, written "-0.0")
            _PRIORITIES[value] = text
    return text


_PRIORITIES: dict[float, str] = {}
"""Priorities written lately, and their text (inputs use a few)."""
_priority = format_priority


def _yes_no(value: bool) -> str:
    return "yes" if value else "no"


def prefixes_of(entry: UrlEntry) -> set[str]:
    """The extension prefixes `entry` needs declared."""
    used: set[str] = set()
    if entry.images:
        used.add("image")
    if entry.videos:
        used.add("video")
    if entry.news is not None:
        used.add("news")
    if entry.alternates:
        used.add("xhtml")
    return used


def render_url(entry: UrlEntry, lastmod_text: str | None = None) -> str:
    """One `<url>` element (with a trailing newline). `entry.loc` must already be a normalised URL;
    `lastmod_text`: its lastmod as written, where the caller has it already."""
    loc = entry.loc
    if "&" in loc or "'" in loc:
        loc = escape_url(loc)
    text = "<url><loc>" + loc + "</loc>"
    lastmod = entry.lastmod
    if lastmod_text is not None:
        text += "<lastmod>" + lastmod_text + "</lastmod>"
    elif lastmod is not None:
        kind = type(lastmod)
        if kind is dt.date or (isinstance(lastmod, dt.datetime) and lastmod.utcoffset() is not None):
            text += "<lastmod>" + lastmod.isoformat() + "</lastmod>"  # (as format_w3c writes them)
        else:
            text += "<lastmod>" + format_w3c(lastmod) + "</lastmod>"
    if entry.changefreq is not None:
        text += "<changefreq>" + entry.changefreq + "</changefreq>"
    if entry.priority is not None:
        text += "<priority>" + _priority(entry.priority) + "</priority>"
    if not (entry.images or entry.videos or entry.news is not None or entry.alternates):
        return text + "</url>\n"
    parts = [text]
    for image in entry.images:
        _render_image(parts, image)
    for video in entry.videos:
        _render_video(parts, video)
    if entry.news is not None:
        _render_news(parts, entry.news)
    if entry.alternates:
        parts.append(render_alternates(entry.alternates))  # last: hreflang completion relies on it
    parts.append("</url>\n")
    return "".join(parts)


def render_alternates(alternates: Iterable[Alternate]) -> str:
    """The `<xhtml:link>` elements of a `<url>`, which come last in it."""
    parts: list[str] = []
    for alt in alternates:
        parts += ['<xhtml:link rel="alternate" hreflang="', escape(alt.hreflang), '" href="']
        parts += [escape_url(alt.href), '"/>']
    return "".join(parts)


def _text(parts: list[str], tag: str, value: str | None) -> None:
    if value is not None:
        parts += ["<", tag, ">", escape(value), "</", tag, ">"]


def _render_image(parts: list[str], image: Image) -> None:
    parts += ["<image:image><image:loc>", escape_url(image.loc), "</image:loc>"]
    _text(parts, "image:caption", image.caption)
    _text(parts, "image:geo_location", image.geo_location)
    _text(parts, "image:title", image.title)
    _text(parts, "image:license", image.license)
    parts.append("</image:image>")


def _render_video(parts: list[str], v: Video) -> None:
    # Element order follows sitemap-video.xsd (a sequence).
    parts.append("<video:video>")
    _text(parts, "video:thumbnail_loc", v.thumbnail_loc)
    _text(parts, "video:title", v.title)
    _text(parts, "video:description", v.description)
    _text(parts, "video:content_loc", v.content_loc)
    _text(parts, "video:player_loc", v.player_loc)
    if v.duration is not None:
        _text(parts, "video:duration", str(v.duration))
    if v.expiration_date is not None:
        _text(parts, "video:expiration_date", format_w3c(v.expiration_date))
    if v.rating is not None:
        _text(parts, "video:rating", _priority(v.rating))
    if v.view_count is not None:
        _text(parts, "video:view_count", str(v.view_count))
    if v.publication_date is not None:
        _text(parts, "video:publication_date", format_w3c(v.publication_date))
    for tag in v.tags:
        _text(parts, "video:tag", tag)
    _text(parts, "video:category", v.category)
    if v.family_friendly is not None:
        _text(parts, "video:family_friendly", _yes_no(v.family_friendly))
    if v.restriction is not None:
        rel = escape(v.restriction_relationship or "allow")
        parts += [f'<video:restriction relationship="{rel}">', escape(v.restriction), "</video:restriction>"]
    _text(parts, "video:gallery_loc", v.gallery_loc)
    if v.requires_subscription is not None:
        _text(parts, "video:requires_subscription", _yes_no(v.requires_subscription))
    if v.uploader is not None:
        info = f' info="{escape_url(v.uploader_info)}"' if v.uploader_info else ""
        parts += [f"<video:uploader{info}>", escape(v.uploader), "</video:uploader>"]
    if v.platform is not None:
        rel = escape(v.platform_relationship or "allow")
        parts += [f'<video:platform relationship="{rel}">', escape(v.platform), "</video:platform>"]
    if v.live is not None:
        _text(parts, "video:live", _yes_no(v.live))
    parts.append("</video:video>")


def _render_news(parts: list[str], n: News) -> None:
    parts.append("<news:news><news:publication>")
    _text(parts, "news:name", n.publication_name)
    _text(parts, "news:language", n.publication_language)
    parts.append("</news:publication>")
    _text(parts, "news:publication_date", format_w3c(n.publication_date))
    _text(parts, "news:title", n.title)
    _text(parts, "news:keywords", n.keywords)
    _text(parts, "news:stock_tickers", n.stock_tickers)
    parts.append("</news:news>")


def render_index_entry(entry: IndexEntry) -> str:
    """One `<sitemap>` element of an index (with a trailing newline)."""
    lastmod = f"<lastmod>{format_w3c(entry.lastmod)}</lastmod>" if entry.lastmod is not None else ""
    return f"<sitemap><loc>{escape_url(entry.loc)}</loc>{lastmod}</sitemap>\n"
