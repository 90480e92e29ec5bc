"""`<image:image>`: the image extension (http://www.google.com/schemas/sitemap-image/1.1)."""

from __future__ import annotations

from typing import Final

from lxml import etree

from sitemapkit.core.constants import MAX_IMAGES_PER_URL, MAX_URL_LENGTH, NS_IMAGE
from sitemapkit.core.model import Image, new_image
from sitemapkit.core.urls import check_uri
from sitemapkit.reader.context import Context
from sitemapkit.reader.values import PLAIN_URL, element_text, split_tag

FIELDS: Final = ("loc", "caption", "title", "geo_location", "license")
_LOC: Final = f"{{{NS_IMAGE}}}loc"


class ImageHandler:
    """Reads one `<image:image>` into an `Image`; at most `MAX_IMAGES_PER_URL` of them in one `<url>`."""

    namespace: Final = NS_IMAGE
    element: Final = "image"
    names: Final = ("image", *FIELDS)

    def __init__(self, context: Context) -> None:
        self._context = context

    def read(self, el: etree._Element, page: str | None, nth: int = 1) -> Image | None:
        """The image `el` describes (the `nth` of its `<url>`, whose `<loc>` is `page`), or None."""
        context = self._context
        if nth > MAX_IMAGES_PER_URL:
            if nth == MAX_IMAGES_PER_URL + 1:
                context.report(
                    "too-many-images",
                    f"The URL has more than {MAX_IMAGES_PER_URL:,} images; only the first "
                    f"{MAX_IMAGES_PER_URL:,} were read.",
                    context.line(el),
                    url=page,
                )
            return None
        values: dict[str, str] = {}
        loc: str | None = None
        has_loc = False
        for child in el:
            tag = child.tag
            if tag == _LOC and not has_loc:
                has_loc = True
                text = child.text
                if (
                    text is not None
                    and len(text) < MAX_URL_LENGTH
                    and (PLAIN_URL.fullmatch(text) is not None or check_uri(text) is None)
                ):
                    loc = text
                else:
                    loc = context.extension_url(child, "image:loc", page)
                continue
            if not isinstance(tag, str):
                continue
            ns, local = split_tag(tag)
            if ns != NS_IMAGE or local not in FIELDS:
                if ns == NS_IMAGE or ns in context.core_ns:
                    context.unknown(local, ns, context.line(child), page, "<image:image>")
                continue
            if local == "loc" or local in values:
                context.too_many(f"image:{local}", context.line(child), page)
                continue
            context.deprecated(f"image:{local}", context.line(child), page)
            values[local] = element_text(child).strip()
        if loc is None:
            if not has_loc:
                context.report(
                    "missing-tag",
                    "<image:image> has no <image:loc>; the image was skipped.",
                    context.line(el),
                    url=page,
                )
            return None
        return Image(loc, **values) if values else new_image(loc)
