"""The extension elements of a `<url>`, each handed to the handler of its namespace (reader/ext/): the
image, video, news and xhtml (hreflang) handlers. A namespace without a handler is no extension: its tags
are reported only when they are in the sitemap's own namespace."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from sitemapkit.reader.context import Context
from sitemapkit.reader.values import split_tag

if TYPE_CHECKING:
    from lxml import etree

    from sitemapkit.core.model import Alternate, Image, News, Video

T_co = TypeVar("T_co", covariant=True)

Found = tuple["tuple[Image, ...]", "tuple[Video, ...]", "News | None", "tuple[Alternate, ...]"]
"""What the extensions of one `<url>` hold: its images, videos, news (one at most) and alternates."""


class Handler(Protocol[T_co]):
    """Reads the elements of one extension namespace. A handler keeps its own state (a count over the
    sitemap, say) and reports through the parser's `Context`."""

    @property
    def namespace(self) -> str:
        """The namespace it reads."""

    @property
    def element(self) -> str:
        """The local name of its element among a `<url>`'s children (`image`, `video`, `news`, `link`)."""

    @property
    def names(self) -> tuple[str, ...]:
        """Every tag name of its namespace (the hints for a misspelt one)."""

    def read(self, el: etree._Element, page: str | None, nth: int = 1) -> T_co | None:
        """What `el`, the `nth` of its kind in the `<url>` whose `<loc>` is `page`, holds; None when
        nothing (each problem reported)."""


class Extensions:
    """Hands each extension element of a `<url>` to the handler of its namespace."""

    def __init__(
        self,
        context: Context,
        image: Handler[Image],
        video: Handler[Video],
        news: Handler[News],
        xhtml: Handler[Alternate],
    ) -> None:
        self._context = context
        handlers: tuple[Handler[Any], ...] = (image, video, news, xhtml)
        # the handler of each namespace, and where its values go in `Found`
        self._handlers: dict[str, tuple[Handler[Any], int]] = {}
        for slot, handler in enumerate(handlers):
            self._handlers[handler.namespace] = (handler, slot)
            context.add_names(handler.namespace, handler.names)

    def handler_for(self, namespace: str) -> Handler[Any] | None:
        """The handler of `namespace`, or None when it is no extension's."""
        found = self._handlers.get(namespace)
        return found[0] if found is not None else None

    def read(self, children: list[etree._Element], page: str | None) -> Found:
        """Read the extension elements among `children` of the `<url>` whose `<loc>` is `page` (None when it
        has none usable), in document order; report the others."""
        context = self._context
        handlers = self._handlers
        values: list[list[Any]] = [[], [], [], []]
        seen: list[int] = [0, 0, 0, 0]
        for child in children:
            tag = child.tag
            if not isinstance(tag, str):
                continue
            ns, local = split_tag(tag)
            found = handlers.get(ns)
            if found is not None and local == found[0].element:
                handler, slot = found
                seen[slot] += 1
                value = handler.read(child, page, seen[slot])
                if value is not None:
                    values[slot].append(value)
            elif ns in context.core_ns:
                context.unknown(local, ns, context.line(child), page, "<url>")
            elif found is not None:
                context.unknown(local, ns, context.line(child), page, "<url> in that namespace")
        images, videos, news, alternates = values
        return cast("Found", (tuple(images), tuple(videos), news[0] if news else None, tuple(alternates)))
