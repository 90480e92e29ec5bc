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
  `count()` (or a walk over every row), a page one fetch once its first key is known at the current
  `version()` (without `version`, a walk over the rows before it);
- a function returning a new iterable on each call: `IterableSource`; the index costs a full pass, a page a
  pass up to its end.

Items are `UrlEntry` objects or URL strings; a string starting with `/` is a path on the site (resolved
against the origin of `base_url`, as a browser would, so under a mount point it must include it: what
`url_for()` or `reverse()` give). `to_entry` maps anything else (a model instance, a row) to one. The order
must be stable between requests (`ORDER BY` a unique key), or pages will overlap and miss entries.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from itertools import islice
from typing import Any, Protocol, TypeAlias, runtime_checkable

from sitemapkit.core.dates import sort_key
from sitemapkit.core.errors import UsageError
from sitemapkit.core.model import Lastmod, UrlEntry

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
      The index then lists each page's `<lastmod>` (one call per page).
    - `version() -> Hashable | None`: a value that changes whenever the entries change in any way: one
      added, removed, edited or moved. `max(updated_at)` alone is not one (a removal, or an entry added
      with an old date, leaves it as it was); a counter or a time that every insert, update and delete
      moves forward is (kept by triggers, or by the code that writes). The `ETag` is then made from it, so
      a conditional request is answered 304 without reading a single entry. When it is a `datetime` (the
      time of the latest change; naive means UTC), responses also get `Last-Modified` and
      `If-Modified-Since` is honoured; see `SitemapServer`.
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

    Page N holds the rows at positions `(N-1) * size` to `N * size - 1` in key order, as the data is when
    the page is requested. Its first row follows the key that ends the rows before it, which is found by
    walking from the first row (`batch` rows a fetch, one batch in memory at a time) or remembered:

    - with `version=` (a function that returns a new value whenever a row is added, removed or changes
      its key; see `PagedSource`), each key learned is remembered for the version it was learned at: a
      page whose start is known costs one fetch, and everything remembered is dropped as soon as
      `version()` returns another value. So the pages served at one version partition that version's rows
      exactly (every row on exactly one page), in whatever order they are requested and in however many
      processes (each learns its own). A request that runs while the data changes sees the new rows;
    - without `version=`, nothing is remembered from one request to the next, because no count or key
      can tell that rows were added and removed in between (the count stays the same when one row goes
      and another comes): page N first walks over the `(N-1) * size` rows before it, about what `OFFSET`
      costs the database, plus sending those rows. Give `version=` for large tables.

    Without a `count` function, `count()` walks every row (the index then costs a full pass).
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
            raise UsageError("batch must be at least 1")
        self._fetch = fetch
        self._count_fn = count
        self._batch = batch
        self._lock = threading.Lock()
        self._known: tuple[Hashable, dict[int, Any]] | None = None
        """The version the boundaries were learned at, and offset -> the key just before that offset."""

    def _start(self, version: Hashable | None, offset: int) -> tuple[int, Any]:
        """The nearest known position at or before `offset` and the key before it (0, None: the start)."""
        if version is None:
            return 0, None
        with self._lock:
            if self._known is None or self._known[0] != version:
                self._known = (version, {0: None})
                return 0, None
            known = self._known[1]
            if offset in known:
                return offset, known[offset]
            best = max(o for o in known if o <= offset)
            return best, known[best]

    def _remember(self, version: Hashable | None, learned: Mapping[int, Any]) -> None:
        """Keep boundaries learned at `version`, unless the data has moved on to another version since."""
        if version is None or not learned:
            return
        with self._lock:
            if self._known is None or self._known[0] != version:
                return
            known = self._known[1]
            if len(known) + len(learned) > self._MAX_BOUNDARIES:
                known.clear()
                known[0] = None
            known.update(learned)

    def count(self) -> int:
        if self._count_fn is not None:
            return int(self._count_fn())
        version = self.version()
        self._start(version, 0)
        n, after = 0, None
        learned: dict[int, Any] = {}
        while True:
            got = 0
            for key, _ in self._fetch(after, self._batch):
                got += 1
                after = key
            n += got
            if got < self._batch:
                break
            if len(learned) < self._MAX_BOUNDARIES:
                learned[n] = after
        self._remember(version, learned)
        return n

    def entries(self, offset: int, limit: int) -> Iterable[Item]:
        version = self.version()
        position, after = self._start(version, offset)
        learned: dict[int, Any] = {}
        remember = version is not None
        while position < offset:  # walk to the page's first row, noting where other pages start on the way
            step = min(self._batch, offset - position)
            got = 0
            for key, _ in self._fetch(after, step):
                got += 1
                position += 1
                after = key
                if remember and position % limit == offset % limit:
                    learned[position] = key
                    remember = len(learned) < self._MAX_BOUNDARIES
            if got < step:
                self._remember(version, learned)
                return []  # the data ends before this page
        rows = list(self._fetch(after, limit))
        if len(rows) == limit:
            learned[offset + limit] = rows[-1][0]
        self._remember(version, learned)
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
    raise TypeError(
        f"cannot serve sitemaps from a {type(obj).__name__}; see sitemapkit.publisher.web.sources"
    )


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
