"""The extension elements of a `<url>`, each handed to the handler of its namespace (reader/ext/): the
image, video, news and xhtml (hreflang) handlers. A namespace without a handler is no extension: its tags
are reported only when they are in the sitemap's own namespace."""

from __future__ import annotations

from collections.abc import Callable
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
        self._handlers = {handler.namespace: handler for handler in handlers}
        # by namespace: its handler's element, its read method, and where its values go in `Found`
        self._readers: dict[str, tuple[str, Callable[..., Any], int]] = {}
        for slot, handler in enumerate(handlers):
            self._readers[handler.namespace] = (handler.element, handler.read, slot)
            context.add_names(handler.namespace, handler.names)

    def handler_for(self, namespace: str) -> Handler[Any] | None:
        """The handler of `namespace`, or None when it is no extension's."""
        return self._handlers.get(namespace)

    def read(self, children: list[etree._Element], page: str | None) -> Found:
        """Read the extension elements among `children` of the `<url>` whose `<loc>` is `page` (None when it
        has none usable), in document order; report the others."""
        context = self._context
        readers = self._readers
        values: list[list[Any]] = [[], [], [], []]
        seen: list[int] = [0, 0, 0, 0]
        for child in children:
            tag = child.tag
            if not isinstance(tag, str):
                continue
            ns, local = split_tag(tag)
            reader = readers.get(ns)
            if reader is not None and local == reader[0]:
                _, read, slot = reader
                nth = seen[slot] = seen[slot] + 1
                value = read(child, page, nth)
                if value is not None:
                    values[slot].append(value)
            elif ns in context.core_ns:
                context.unknown(local, ns, context.line(child), page, "<url>")
            elif reader is not None:
                context.unknown(local, ns, context.line(child), page, "<url> in that namespace")
        images, videos, news, alternates = values
        return cast("Found", (tuple(images), tuple(videos), news[0] if news else None, tuple(alternates)))
