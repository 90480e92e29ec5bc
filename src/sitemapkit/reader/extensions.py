"""Reading the image, video, news and hreflang extensions of a `<url>`, each problem reported."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

from sitemapkit.core.constants import (
    MAX_IMAGES_PER_URL,
    MAX_NEWS_PER_SITEMAP,
    MAX_URL_LENGTH,
    MAX_VIDEO_DESCRIPTION,
    MAX_VIDEO_DURATION,
    MAX_VIDEO_TAGS,
    NS_IMAGE,
    NS_NEWS,
    NS_VIDEO,
    NS_XHTML,
)
from sitemapkit.core.languages import LANGUAGE_CODES, REGION_CODES, hreflang_problem
from sitemapkit.core.model import Alternate, Image, Lastmod, News, Video
from sitemapkit.core.urls import check_uri
from sitemapkit.reader.entries import (
    CORE_NAMES,
    DECIMAL,
    KNOWN_NAMESPACES,
    PLAIN_URL,
    element_text,
    split_tag,
    usable_url,
)
from sitemapkit.reader.runs import new_image

if TYPE_CHECKING:
    from lxml import etree

    from sitemapkit.core.diagnostics import Severity

_INTEGER = re.compile(r"[+-]?\d+")
_NEWS_LANGUAGE = re.compile(r"[a-z]{2,3}|zh-cn|zh-tw", re.IGNORECASE)
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


class ExtensionReader:
    """The part of `SitemapParser` that reads the extension elements of a `<url>`."""

    # what it uses of the parser
    _core_ns: frozenset[str]
    _news_count: int

    if TYPE_CHECKING:

        def _report(
            self,
            code: str,
            message: str,
            line: int | None = None,
            *,
            url: str | None = None,
            column: int | None = None,
            severity: Severity | None = None,
        ) -> None: ...

        def _line(self, el: etree._Element) -> int | None: ...

        # EntryReader
        def _too_many(self, tag: str, line: int | None, url: str | None) -> None: ...

        def _date(
            self, text: str | None, tag: str, where: etree._Element | int | None, url: str | None
        ) -> Lastmod | None: ...

    def _unknown(self, local: str, ns: str, line: int | None, url: str | None, where: str) -> None:
        names = {
            NS_IMAGE: ("image", *_IMAGE_FIELDS),
            NS_VIDEO: ("video", *_VIDEO_FIELDS),
            NS_NEWS: ("news", "publication", "name", "language", "publication_date", "title"),
            NS_XHTML: ("link",),
        }.get(ns, CORE_NAMES)
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
            ns, local = split_tag(tag)
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
            elif ns in KNOWN_NAMESPACES:
                self._unknown(local, ns, self._line(child), loc, "<url> in that namespace")
        return tuple(images), tuple(videos), news, tuple(alternates)

    def _ext_url(self, el: etree._Element, tag: str, page: str | None) -> str | None:
        raw = element_text(el).strip()
        problem = check_uri(raw) if raw else "empty"
        if problem is None and len(raw) < MAX_URL_LENGTH:
            return raw
        line = self._line(el)
        if not raw:
            self._report("invalid-url", f"<{tag}> is empty; give an absolute URL.", line, url=page)
            return None
        usable = usable_url(raw)
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
                    and (PLAIN_URL.fullmatch(text) is not None or check_uri(text) is None)
                ):
                    loc = text
                else:
                    loc = self._ext_url(child, "image:loc", page)
                continue
            if not isinstance(tag, str):
                continue
            ns, local = split_tag(tag)
            if ns != NS_IMAGE or local not in _IMAGE_FIELDS:
                if ns == NS_IMAGE or ns in self._core_ns:
                    self._unknown(local, ns, self._line(child), page, "<image:image>")
                continue
            if local == "loc" or local in values:
                self._too_many(f"image:{local}", self._line(child), page)
                continue
            self._deprecated(f"image:{local}", self._line(child), page)
            values[local] = element_text(child).strip()
        if loc is None:
            if not has_loc:
                self._report(
                    "missing-tag",
                    "<image:image> has no <image:loc>; the image was skipped.",
                    self._line(el),
                    url=page,
                )
            return None
        return Image(loc, **values) if values else new_image(loc)

    def _video(self, el: etree._Element, page: str | None) -> Video:
        fields: dict[str, Any] = {}
        seen: set[str] = set()
        tags: list[str] = []
        for child in el:
            tag = child.tag
            if not isinstance(tag, str):
                continue
            ns, local = split_tag(tag)
            line = self._line(child)
            if ns != NS_VIDEO:
                if ns in self._core_ns or ns in KNOWN_NAMESPACES:
                    self._unknown(local, ns, line, page, "<video:video>")
                continue
            if local == "tag":
                tags.append(element_text(child).strip())
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
        text = element_text(child).strip()
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
            if DECIMAL.fullmatch(text) is None or not 0.0 <= float(text) <= 5.0:
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
            ns, local = split_tag(tag)
            line = self._line(child)
            if ns != NS_NEWS:
                if ns in self._core_ns or ns in KNOWN_NAMESPACES:
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
                    pns, plocal = split_tag(ptag)
                    if pns == NS_NEWS and plocal in ("name", "language"):
                        if plocal in values:
                            self._too_many(f"news:{plocal}", self._line(part), page)
                        else:
                            values[plocal] = element_text(part).strip()
                    elif pns == NS_NEWS or pns in self._core_ns:
                        self._unknown(plocal, pns, self._line(part), page, "<news:publication>")
            elif local == "publication_date":
                if date_seen:
                    self._too_many("news:publication_date", line, page)
                    continue
                date_seen = True
                date = self._date(element_text(child), "news:publication_date", line, page)
            elif local in ("title", "keywords", "stock_tickers"):
                if local in values:
                    self._too_many(f"news:{local}", line, page)
                    continue
                if local != "title":
                    self._deprecated(f"news:{local}", line, page)
                values[local] = element_text(child).strip()
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
            usable = usable_url(url) and len(url) < MAX_URL_LENGTH
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
