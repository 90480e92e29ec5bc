"""`<video:video>`: the video extension (http://www.google.com/schemas/sitemap-video/1.1)."""

from __future__ import annotations

import re
from typing import Any, Final

from lxml import etree

from sitemapkit.core.constants import MAX_VIDEO_DESCRIPTION, MAX_VIDEO_DURATION, MAX_VIDEO_TAGS, NS_VIDEO
from sitemapkit.core.languages import REGION_CODES
from sitemapkit.core.model import Video
from sitemapkit.reader.context import Context
from sitemapkit.reader.values import DECIMAL, element_text

_INTEGER: Final = re.compile(r"[+-]?\d+")
_URLS: Final = frozenset({"thumbnail_loc", "content_loc", "player_loc", "gallery_loc"})
_TEXT: Final = frozenset({"title", "description", "category", "uploader"})
_BOOLS: Final = frozenset({"family_friendly", "requires_subscription", "live"})
_DATES: Final = frozenset({"expiration_date", "publication_date"})
_PLATFORMS: Final = frozenset({"web", "mobile", "tv"})
FIELDS: Final = (
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


class VideoHandler:
    """Reads one `<video:video>` into a `Video`."""

    namespace: Final = NS_VIDEO
    element: Final = "video"
    names: Final = ("video", *FIELDS)

    def __init__(self, context: Context) -> None:
        self._context = context

    def read(self, el: etree._Element, page: str | None, nth: int = 1) -> Video:
        """The video `el` describes, in the page `page` (a video with problems is reported and kept)."""
        context = self._context
        fields: dict[str, Any] = {}
        seen: set[str] = set()
        tags: list[str] = []
        for local, child, line in context.children(el, NS_VIDEO, page, "<video:video>"):
            if local == "tag":
                tags.append(element_text(child).strip())
                continue
            if local not in FIELDS:
                context.unknown(local, NS_VIDEO, line, page, "<video:video>")
                continue
            if local in seen:
                context.too_many(f"video:{local}", line, page)
                continue
            seen.add(local)
            self._field(child, local, line, page, fields)
        if len(tags) > MAX_VIDEO_TAGS:
            context.report(
                "invalid-value",
                f"The video has {len(tags)} <video:tag> elements; at most {MAX_VIDEO_TAGS} are allowed "
                f"(the first {MAX_VIDEO_TAGS} were read).",
                context.line(el),
                url=page,
            )
            tags = tags[:MAX_VIDEO_TAGS]
        missing = [t for t in ("thumbnail_loc", "title", "description") if t not in seen]
        if "content_loc" not in seen and "player_loc" not in seen:
            missing.append("content_loc or player_loc")
        if missing:
            context.report(
                "video-missing-tag",
                "<video:video> lacks "
                + ", ".join(f"<video:{m}>" for m in missing)
                + "; Google ignores videos without them.",
                context.line(el),
                url=page,
            )
        for tag in ("content_loc", "player_loc"):
            if page is not None and fields.get(tag) == page:
                context.report(
                    "video-location-is-page",
                    f"<video:{tag}> is the page's own URL; point it at the video file or player.",
                    context.line(el),
                    url=page,
                )
        return Video(**fields, tags=tuple(tags))

    def _field(
        self, child: etree._Element, local: str, line: int | None, page: str | None, fields: dict[str, Any]
    ) -> None:
        context = self._context
        text = element_text(child).strip()
        name = f"video:{local}"

        def invalid(why: str) -> None:
            context.report("invalid-value", f"<{name}> {text[:100]!r} {why}; it was ignored.", line, url=page)

        if local in _URLS:
            if local == "gallery_loc":
                context.deprecated(name, line, page)
            if local == "player_loc":
                for attr in ("allow_embed", "autoplay"):
                    if child.get(attr) is not None:
                        context.deprecated(f"video:player_loc {attr}=", line, page)
            value = context.extension_url(child, name, page)
            if value is not None:
                fields[local] = value
        elif local in _TEXT:
            if local == "category":
                context.deprecated(name, line, page)
            if local == "description" and len(text) > MAX_VIDEO_DESCRIPTION:
                context.report(
                    "invalid-value",
                    f"<{name}> has {len(text):,} characters; at most {MAX_VIDEO_DESCRIPTION:,} are "
                    "allowed (it was read in full).",
                    line,
                    url=page,
                )
            if local == "uploader":
                if len(text) > 255:
                    context.report(
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
            if DECIMAL.fullmatch(text) is None or not 0.0 <= float(text) <= 5.0:
                invalid("is not a number from 0.0 to 5.0")
            else:
                fields[local] = float(text)
        elif local == "view_count":
            if _INTEGER.fullmatch(text) is None or int(text) < 0:
                invalid("is not a whole number of views")
            else:
                fields[local] = int(text)
        elif local in _DATES:
            date = context.date(text, name, line, page)
            if date is not None:
                fields[local] = date
        elif local in _BOOLS:
            if text.lower() not in ("yes", "no"):
                invalid("must be yes or no")
            else:
                if text not in ("yes", "no"):
                    context.report(
                        "invalid-value", f"<{name}> {text!r} must be lowercase yes or no.", line, url=page
                    )
                fields[local] = text.lower() == "yes"
        elif local in ("restriction", "platform"):
            self._list(child, local, text, line, page, fields)
        else:  # price, tvshow, id: deprecated, not in the model
            context.deprecated(name, line, page, kept=False)

    def _list(
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
            self._context.report(
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
            self._context.report(
                "invalid-value",
                f"<{name}> lists {' '.join(bad)!r}; only {allowed} are allowed (read as written).",
                line,
                url=page,
            )
        fields[local] = " ".join(tokens)
        fields[f"{local}_relationship"] = relationship
