"""Where a served sitemap's entries come from: a count and any slice of them, in a stable order.

The web app never holds every URL at once. To list the pages in the index it asks how many entries there
are; to serve page N it asks for that page's slice. `PagedSource` is that contract; the adapters below fit
the common shapes to it, and `as_source` picks one for an object.

- a sequence (`list`, `tuple`, anything with `len()` and slicing): `SequenceSource`; the index costs
  `len()`, a page one slice;
- an object with `count()` and slicing (a Django QuerySet, an SQLAlchemy `Query`): `CountSliceSource`;
  the index costs `count()`, a page one slice (`LIMIT ... OFFSET ...`);
- two functions `count()` and `page(offset, limit)`: `FunctionSource`; one call each;
- a cursor `fetch(after_key, limit)` returning `(key, item)` pairs: `KeysetSource`; the index costs
  `count()` (or a walk over every row), a page one fetch once the walk has learned its first key;
- a function returning a new iterable on each call: `IterableSource`; the index costs a full pass, a page a
  pass up to its end.

Items are `UrlEntry` objects or URL strings (a string starting with `/` is resolved against the site);
`to_entry` maps anything else (a model instance, a row) to one. The order must be stable between requests
(`ORDER BY` a unique key), or pages will overlap and miss entries.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any, Protocol, TypeAlias, runtime_checkable

from sitemapkit.dates import sort_key
from sitemapkit.model import Lastmod, UrlEntry

Item: TypeAlias = UrlEntry | str
"""What a source yields: an entry, or a URL string."""

ToEntry: TypeAlias = Callable[[Any], Item]


@runtime_checkable
class PagedSource(Protocol):
    """The contract the web app serves from.

    - `count()`: how many entries there are now;
    - `entries(offset, limit)`: the entries at positions `offset` to `offset + limit - 1` (fewer at the end,
      none past it), in the same order every time.

    Two optional methods make responses cheaper; the adapters have both and return None when they do not
    know:

    - `newest(offset, limit) -> Lastmod | None`: the newest `lastmod` of that slice, without reading it.
      The index then lists each page's `<lastmod>` (one call per page), and pages get `Last-Modified`.
    - `version() -> Hashable | None`: a value that changes whenever any entry changes (for example
      `(max(updated_at), count(*))`). The `ETag` is then made from it, so a conditional request is answered
      304 without reading a single entry.
    """

    def count(self) -> int: ...

    def entries(self, offset: int, limit: int) -> Iterable[Item]: ...


class BaseSource:
    """Shared optional parts of the adapters: `to_entry`, `newest` and `version` callables."""

    def __init__(
        self,
        *,
        to_entry: ToEntry | None = None,
        newest: Callable[[int, int], Lastmod | None] | None = None,
        version: Callable[[], Hashable | None] | None = None,
    ) -> None:
        self._to_entry = to_entry
        self._newest = newest
        self._version = version

    def _mapped(self, items: Iterable[Any]) -> Iterable[Item]:
        return items if self._to_entry is None else map(self._to_entry, items)

    def newest(self, offset: int, limit: int) -> Lastmod | None:
        """The newest lastmod of a slice, when a `newest` function was given (else None: unknown)."""
        return self._newest(offset, limit) if self._newest is not None else None

    def version(self) -> Hashable | None:
        """The current version, when a `version` function was given (else None: unknown)."""
        return self._version() if self._version is not None else None


class SequenceSource(BaseSource):
    """A sequence held in memory, or anything with `len()` and slicing.

    `newest` is computed by scanning the slice (entries with a `lastmod`), so the index carries each
    page's `<lastmod>`; pass `lastmods=False` to skip that scan.

    >>> src = SequenceSource(["https://example.com/a", "https://example.com/b"])
    >>> src.count(), list(src.entries(1, 10))
    (2, ['https://example.com/b'])
    """

    def __init__(
        self,
        items: Sequence[Any],
        *,
        to_entry: ToEntry | None = None,
        lastmods: bool = True,
        version: Callable[[], Hashable | None] | None = None,
    ) -> None:
        super().__init__(to_entry=to_entry, version=version)
        self.items = items
        self._lastmods = lastmods

    def count(self) -> int:
        return len(self.items)

    def entries(self, offset: int, limit: int) -> Iterable[Item]:
        return self._mapped(self.items[offset : offset + limit])

    def newest(self, offset: int, limit: int) -> Lastmod | None:
        return newest_of(self.entries(offset, limit)) if self._lastmods else None


class CountSliceSource(BaseSource):
    """An object with `count()` and slicing, such as a Django QuerySet (`Page.objects.order_by("id")`)
    or an SQLAlchemy `Query`: `count()` runs `SELECT COUNT(*)`, a slice runs `LIMIT ... OFFSET ...`.

    Order it by a unique key. `OFFSET` costs grow with the offset in most databases; for millions of rows
    a `KeysetSource` reads each page from an index instead.
    """

    def __init__(
        self,
        query: Any,
        *,
        to_entry: ToEntry | None = None,
        newest: Callable[[int, int], Lastmod | None] | None = None,
        version: Callable[[], Hashable | None] | None = None,
    ) -> None:
        super().__init__(to_entry=to_entry, newest=newest, version=version)
        self.query = query

    def count(self) -> int:
        return int(self.query.count())

    def entries(self, offset: int, limit: int) -> Iterable[Item]:
        return self._mapped(self.query[offset : offset + limit])


class FunctionSource(BaseSource):
    """Two functions: `count()` and `page(offset, limit)` (for example two SQL queries, the second with
    `ORDER BY id LIMIT ? OFFSET ?`). `newest(offset, limit)` and `version()` are optional."""

    def __init__(
        self,
        count: Callable[[], int],
        page: Callable[[int, int], Iterable[Any]],
        *,
        to_entry: ToEntry | None = None,
        newest: Callable[[int, int], Lastmod | None] | None = None,
        version: Callable[[], Hashable | None] | None = None,
    ) -> None:
        super().__init__(to_entry=to_entry, newest=newest, version=version)
        self._count = count
        self._page = page

    def count(self) -> int:
        return int(self._count())

    def entries(self, offset: int, limit: int) -> Iterable[Item]:
        return self._mapped(self._page(offset, limit))


class KeysetSource(BaseSource):
    """A cursor: `fetch(after, limit)` returns up to `limit` `(key, item)` pairs with keys greater than
    `after` (None: from the start), in key order, for example
    `SELECT id, url FROM pages WHERE id > ? ORDER BY id LIMIT ?`.

    Page N starts after the key that ends page N-1. Those boundary keys are learned by walking (`limit`
    rows a fetch, one batch in memory at a time) and remembered, so after the first walk each page costs one
    fetch. Without a `count` function, `count()` walks every row (the index then costs a full pass). When
    the count changes, the remembered keys are dropped: pages are re-derived from the data as it is now.
    """

    _MAX_BOUNDARIES = 100_000

    def __init__(
        self,
        fetch: Callable[[Any, int], Iterable[tuple[Any, Any]]],
        *,
        count: Callable[[], int] | None = None,
        to_entry: ToEntry | None = None,
        version: Callable[[], Hashable | None] | None = None,
        batch: int = 50_000,
    ) -> None:
        super().__init__(to_entry=to_entry, version=version)
        if batch < 1:
            raise ValueError("batch must be at least 1")
        self._fetch = fetch
        self._count_fn = count
        self._batch = batch
        self._lock = threading.Lock()
        self._after: dict[int, Any] = {0: None}
        """offset -> the key of the entry just before it (None for offset 0)."""
        self._last_count: int | None = None

    def _remember(self, offset: int, key: Any) -> None:
        with self._lock:
            if len(self._after) >= self._MAX_BOUNDARIES:
                self._after = {0: None}
            self._after[offset] = key

    def _start(self, offset: int) -> tuple[int, Any]:
        with self._lock:
            known = max(o for o in self._after if o <= offset)
            return known, self._after[known]

    def count(self) -> int:
        if self._count_fn is not None:
            n = int(self._count_fn())
        else:
            n, after = 0, None
            while True:
                got = 0
                for key, _ in self._fetch(after, self._batch):
                    got += 1
                    after = key
                n += got
                if got < self._batch:
                    break
                self._remember(n, after)
        with self._lock:
            if self._last_count is not None and n != self._last_count:
                self._after = {0: None}
            self._last_count = n
        return n

    def entries(self, offset: int, limit: int) -> Iterable[Item]:
        position, after = self._start(offset)
        while position < offset:  # walk to the page's first entry, remembering the way
            step = min(limit, offset - position)
            got = 0
            for key, _ in self._fetch(after, step):
                got += 1
                after = key
            position += got
            if got < step:
                return []  # the data ends before this page
            self._remember(position, after)
        rows = list(self._fetch(after, limit))
        if len(rows) == limit:
            self._remember(offset + limit, rows[-1][0])
        return self._mapped(item for _, item in rows)


class IterableSource(BaseSource):
    """A function returning a new iterable of items on each call (a generator function, a file reader).

    The fallback for sources that cannot count or slice: `count()` is a full pass and page N a pass up to
    its end, so each request costs time in proportion to the data, though memory stays at one page.
    """

    def __init__(self, factory: Callable[[], Iterable[Any]], *, to_entry: ToEntry | None = None) -> None:
        super().__init__(to_entry=to_entry)
        self._factory = factory

    def count(self) -> int:
        return sum(1 for _ in self._factory())

    def entries(self, offset: int, limit: int) -> Iterable[Item]:
        return self._mapped(islice(self._factory(), offset, offset + limit))


def newest_of(items: Iterable[Item]) -> Lastmod | None:
    """The newest `lastmod` among entries (strings and entries without one are skipped)."""
    best: Lastmod | None = None
    best_key: dt.datetime | None = None
    for item in items:
        if isinstance(item, UrlEntry) and isinstance(item.lastmod, dt.date):
            key = sort_key(item.lastmod)
            if best_key is None or key > best_key:
                best, best_key = item.lastmod, key
    return best


def as_source(obj: Any) -> PagedSource:
    """The `PagedSource` for `obj`:

    - a `PagedSource` (has `count()` and `entries()`) is used as is;
    - a sequence (`list`, `tuple`, or anything with `len()` and slicing) becomes a `SequenceSource`;
    - an object with `count()` and slicing (Django QuerySet, SQLAlchemy Query) a `CountSliceSource`;
    - a function taking no argument, called for a new iterable on every request, an `IterableSource`;
    - any other re-iterable collection an `IterableSource`.

    A one-shot iterator or generator is refused (it could serve only one request), as is a bare string.
    A cursor function `fetch(after, limit)` must be wrapped in `KeysetSource` explicitly.
    """
    if isinstance(obj, (str, bytes)):
        raise TypeError("a source is a collection of URLs or entries, not a single string")
    if callable(getattr(obj, "count", None)) and callable(getattr(obj, "entries", None)):
        return obj  # type: ignore[no-any-return]
    if isinstance(obj, Sequence) or (
        not isinstance(obj, Mapping) and hasattr(obj, "__len__") and hasattr(obj, "__getitem__")
    ):
        if hasattr(obj, "count") and not isinstance(obj, Sequence) and _counts_itself(obj):
            return CountSliceSource(obj)
        return SequenceSource(obj)
    if hasattr(obj, "__getitem__") and hasattr(obj, "count") and _counts_itself(obj):
        return CountSliceSource(obj)
    if isinstance(obj, Iterator):
        raise TypeError(
            "a generator or iterator can be read only once, but every request reads the source again: "
            "pass a function that returns a new one (IterableSource), or a sequence"
        )
    if callable(obj):
        return IterableSource(obj)
    if isinstance(obj, Iterable):
        return IterableSource(lambda: obj)
    raise TypeError(f"cannot serve sitemaps from a {type(obj).__name__}; see sitemapkit.web.sources")


def _counts_itself(obj: Any) -> bool:
    """True when `obj.count` takes no argument (a QuerySet's, not `list.count(value)`)."""
    import inspect

    try:
        signature = inspect.signature(obj.count)
    except (TypeError, ValueError):
        return False
    return all(
        p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        for p in signature.parameters.values()
    )
