"""Entries as Parquet, for DuckDB, Polars, Spark and pandas: the JSONL shape as typed columns.

Needs pyarrow, the optional extra `sitemapkit[parquet]`. One row per entry with the JSONL keys as
columns: `loc`, `lastmod` (W3C Datetime text, as in JSONL), `changefreq`, `sitemap` (strings),
`priority` (double), `images`, `videos`, `alternates` (lists of structs) and `news` (a struct). Unset
extension fields are null. Written in row groups of `ROW_GROUP` rows, so memory stays flat.
"""

from __future__ import annotations

import array
import datetime as dt
import importlib.util
import itertools
import sys
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, TYPE_CHECKING, Any, Final

from sitemapkit.core.dates import format_w3c
from sitemapkit.core.errors import UsageError
from sitemapkit.core.model import Lastmod, UrlEntry
from sitemapkit.reader.export import BATCH, chunks, entry_to_dict
from sitemapkit.reader.runs import UrlRun

if TYPE_CHECKING:
    import pyarrow as pa

ROW_GROUP: Final = 16_384
"""Rows in a row group. Half of 32,768 takes 7 MB off the peak of `sitemapkit parse` on 1M URLs, at no cost
in time, for a file 8% larger."""
_DICTIONARY: Final = ("lastmod", "changefreq", "priority", "sitemap")
"""The flat columns whose values repeat, dictionary-encoded. Not `loc`: its values are distinct, and
trying a dictionary on it first cost the writer time and made the file larger (1M URLs of the bench:
2.5 MB, against 1.6 MB without)."""
EXTRA_HINT: Final = "Parquet output needs pyarrow: pip install 'sitemapkit[parquet]'"


def _pyarrow() -> tuple[Any, Any]:
    """pyarrow and pyarrow.parquet, or a `UsageError` naming the extra to install."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise UsageError(EXTRA_HINT) from None
    return pyarrow, pyarrow.parquet


def require_pyarrow() -> None:
    """Raise `UsageError` (naming the `parquet` extra) unless pyarrow is installed (found, not imported:
    `sitemapkit parse` imports it in the process that writes the file)."""
    try:
        found = importlib.util.find_spec("pyarrow") is not None
    except ValueError:  # pragma: no cover - a module object without a spec in sys.modules
        found = True
    if not found:
        raise UsageError(EXTRA_HINT)


class _NoPandas:
    """An import hook under which `import pandas` fails (see `arrow_without_pandas`)."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is not used here")


def arrow_without_pandas() -> None:
    """Have pyarrow take pandas as missing, in a process of sitemapkit's own (the harvest CLI, a Ray
    actor, the writer child): pyarrow imports pandas, where installed, at its first conversion of Python
    values, for nothing these processes use (0.2 s and about 60 MB here). Not for a library call, whose
    caller may want pyarrow's pandas support. Does nothing once pandas is imported, or without pyarrow
    (whose absence the caller reports in its own words)."""
    if "pandas" in sys.modules:
        return
    try:
        import pyarrow as pa
    except ImportError:
        return
    hook = _NoPandas()
    sys.meta_path.insert(0, hook)
    try:  # pyarrow looks for pandas once: in its shim, and in the C++ converter's static data
        pa.array([None, "x"])
    finally:
        sys.meta_path.remove(hook)


def schema() -> pa.Schema:
    """The Parquet schema of entries (see the module docstring)."""
    pa, _ = _pyarrow()
    s, f64, i64, b = pa.string(), pa.float64(), pa.int64(), pa.bool_()
    video = {
        "thumbnail_loc": s,
        "title": s,
        "description": s,
        "content_loc": s,
        "player_loc": s,
        "duration": i64,
        "expiration_date": s,
        "rating": f64,
        "view_count": i64,
        "publication_date": s,
        "family_friendly": b,
        "restriction": s,
        "restriction_relationship": s,
        "platform": s,
        "platform_relationship": s,
        "requires_subscription": b,
        "uploader": s,
        "uploader_info": s,
        "live": b,
        "tags": pa.list_(s),
        "category": s,
        "gallery_loc": s,
    }
    image = ("loc", "caption", "title", "geo_location", "license")
    news = ("publication_name", "publication_language", "publication_date", "title", "keywords")
    return pa.schema(
        [
            pa.field("loc", s, nullable=False),
            ("lastmod", s),
            ("changefreq", s),
            ("priority", f64),
            ("sitemap", s),
            ("images", pa.list_(pa.struct([(n, s) for n in image]))),
            ("videos", pa.list_(pa.struct(list(video.items())))),
            ("news", pa.struct([(n, s) for n in (*news, "stock_tickers")])),
            ("alternates", pa.list_(pa.struct([("hreflang", s), ("href", s)]))),
        ]
    )


_NOT_NULL: Final = bytes.maketrans(b"\x00\x01", b"01")


def _bitmap(flags: list[bool]) -> bytes:
    """Arrow's bitmap of `flags`: bit i (least significant first) of the bytes is flags[i]."""
    if not flags:
        return b""
    bits = bytes(flags).translate(_NOT_NULL)[::-1]  # b"0"/b"1", the last flag first
    return int(bits, 2).to_bytes((len(flags) + 7) // 8, "little")


def _column(pa: Any, values: list[Any], kind: pa.DataType) -> pa.Array:
    """An Arrow array of `values` (None for null) of type `kind`, built from buffers.

    `pa.array` would do, but its conversion of Python objects imports pandas when pandas is installed,
    which costs about 45 MB of memory before the first row: building the buffers here costs nothing
    of the sort, and is faster for the plain columns."""
    n = len(values)
    nulls = values.count(None)
    validity = None
    if nulls:
        validity = pa.py_buffer(_bitmap([v is not None for v in values]))
    if kind == pa.string():
        texts = [v or "" for v in values] if nulls else values
        joined = "".join(texts)
        data = joined.encode()
        lengths = map(len, texts) if len(data) == len(joined) else (len(t.encode()) for t in texts)
        offsets = array.array("i", [0])
        offsets.extend(itertools.accumulate(lengths))
        return pa.Array.from_buffers(kind, n, [validity, pa.py_buffer(offsets), pa.py_buffer(data)], nulls)
    if kind in (pa.float64(), pa.int64()):
        code = "d" if kind == pa.float64() else "q"
        numbers = array.array(code, [0 if v is None else v for v in values] if nulls else values)
        return pa.Array.from_buffers(kind, n, [validity, pa.py_buffer(numbers)], nulls)
    if kind == pa.bool_():
        bits = pa.py_buffer(_bitmap([bool(v) for v in values]))
        return pa.Array.from_buffers(kind, n, [validity, bits], nulls)
    if pa.types.is_list(kind):  # lists are never null here: JSONL writes [] for none
        offsets = array.array("i", [0])
        offsets.extend(itertools.accumulate(len(v or ()) for v in values))
        flat = [item for v in values if v for item in v]
        return pa.ListArray.from_arrays(
            pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(offsets)]),
            _column(pa, flat, kind.value_type),
        )
    if pa.types.is_struct(kind):
        fields = [kind.field(i) for i in range(kind.num_fields)]
        children = [_column(pa, [v.get(f.name) if v else None for v in values], f.type) for f in fields]
        mask = None
        if nulls:
            mask = pa.Array.from_buffers(
                pa.bool_(), n, [None, pa.py_buffer(_bitmap([v is None for v in values]))]
            )
        return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    raise TypeError(f"no Parquet column for {kind}")  # pragma: no cover - the schema has no other type


class _Batches:
    """Entries turned into Arrow record batches as they come (Arrow's columns are compact, Python
    lists are not), collected until a row group is full."""

    NESTED: Final = ("images", "videos", "news", "alternates")

    def __init__(self, pa: Any, schema: pa.Schema) -> None:
        self.pa = pa
        self.schema = schema
        self.types = [schema.field(i).type for i in range(len(schema))]
        self.batches: list[pa.RecordBatch] = []
        self.rows = 0
        """Rows taken (in `batches`, and in the plain columns not yet made into a batch)."""
        self._dates: dict[object, str] = {}
        self._empty: list[pa.Array] = []
        # plain rows (no extension data) not yet in a batch, a list per column: a run is a few hundred
        # entries, and the reader hands over one entry between two runs, so these are gathered into
        # batches of `BATCH` rows or more (a record batch each would cost more than its rows)
        self._locs: list[str] = []
        self._lastmods: list[Lastmod | None] = []
        self._changefreqs: list[str | None] = []
        self._priorities: list[float | None] = []
        self._sitemaps: list[str | None] = []

    def _date(self, value: Lastmod | None) -> str | None:
        if value is None:
            return None
        text = format_w3c(value)
        if type(value) is dt.date and len(self._dates) < 4096:  # not date-times: see export.TextCache
            self._dates[value] = text
        return text

    def _plain(self, n: int) -> list[pa.Array]:
        """The nested columns of `n` plain entries: empty lists and no news (slices of columns made once,
        for the most rows asked for so far)."""
        if not self._empty or len(self._empty[0]) < n:
            self._empty = [_column(self.pa, [None] * max(n, BATCH), kind) for kind in self.types[5:]]
        return [array.slice(0, n) for array in self._empty]

    def add(self, batch: list[UrlEntry]) -> None:
        """Take entries."""
        self.rows += len(batch)
        if not [e for e in batch if e.images or e.videos or e.news is not None or e.alternates]:
            self._locs += [e.loc for e in batch]
            self._lastmods += [e.lastmod for e in batch]
            self._changefreqs += [e.changefreq for e in batch]
            self._priorities += [e.priority for e in batch]
            self._sitemaps += [e.sitemap for e in batch]
            if len(self._locs) >= BATCH:
                self._add_plain()
            return
        self._add_plain()
        pa, types, dates, date = self.pa, self.types, self._dates, self._date
        dicts = [entry_to_dict(e) for e in batch]
        arrays = [
            _column(pa, [e.loc for e in batch], types[0]),
            _column(pa, [dates.get(e.lastmod) or date(e.lastmod) for e in batch], types[1]),
            _column(pa, [e.changefreq for e in batch], types[2]),
            _column(pa, [e.priority for e in batch], types[3]),
            _column(pa, [e.sitemap for e in batch], types[4]),
            *[
                _column(pa, [d[name] for d in dicts], kind)
                for name, kind in zip(self.NESTED, types[5:], strict=True)
            ],
        ]
        self.batches.append(pa.RecordBatch.from_arrays(arrays, schema=self.schema))

    def add_run(self, run: UrlRun) -> None:
        """`add(run.entries())`, from the run's columns."""
        self.rows += len(run)
        self._locs += run.locs
        self._lastmods += run.lastmods
        self._changefreqs += run.changefreqs
        self._priorities += run.priorities
        self._sitemaps += [run.sitemap] * len(run)
        if len(self._locs) >= BATCH:
            self._add_plain()

    def _add_plain(self) -> None:
        """Make the plain rows taken so far into a batch."""
        n = len(self._locs)
        if not n:
            return
        pa, types, dates, date = self.pa, self.types, self._dates, self._date
        arrays = [
            _column(pa, self._locs, types[0]),
            _column(pa, [dates.get(d) or date(d) for d in self._lastmods], types[1]),
            _column(pa, self._changefreqs, types[2]),
            _column(pa, self._priorities, types[3]),
            _column(pa, self._sitemaps, types[4]),
            *self._plain(n),
        ]
        self.batches.append(pa.RecordBatch.from_arrays(arrays, schema=self.schema))
        self._locs, self._lastmods, self._changefreqs, self._priorities, self._sitemaps = [], [], [], [], []

    def table(self) -> pa.Table:
        self._add_plain()
        table = self.pa.Table.from_batches(self.batches, schema=self.schema)
        self.batches = []
        self.rows = 0
        return table


def write_parquet(
    entries: Iterable[UrlEntry | UrlRun], out: str | IO[bytes], *, row_group_size: int = ROW_GROUP
) -> int:
    """Write entries (and runs of them, see `Reader.runs`) to Parquet (a path or a binary file); returns
    how many rows. A row group holds `row_group_size` rows, rounded up to a whole batch of entries.

    Raises `UsageError` naming the `parquet` extra when pyarrow is not installed."""
    pa, pq = _pyarrow()
    table_schema = schema()
    target = out if isinstance(out, str) else _Stream(out)
    n = 0
    # pyarrow encodes and compresses a row group without the GIL: in a thread, on a second core, while
    # the next group is read. At most one group waits, so memory stays at about two groups.
    with (
        pq.ParquetWriter(
            target, table_schema, compression="zstd", use_dictionary=list(_DICTIONARY)
        ) as writer,
        ThreadPoolExecutor(1, thread_name_prefix="sitemapkit-parquet") as pool,
    ):
        pending: Future[None] | None = None
        group = _Batches(pa, table_schema)

        def flush() -> None:
            nonlocal n, pending
            table = group.table()
            if pending is not None:
                pending.result()
            # one row group each, not split further
            pending = pool.submit(writer.write_table, table, row_group_size=max(table.num_rows, 1))
            n += table.num_rows

        try:
            for batch in chunks(entries):
                if isinstance(batch, UrlRun):
                    group.add_run(batch)
                else:
                    group.add(batch)
                if group.rows >= row_group_size:
                    flush()
            if group.rows or not n:
                flush()
        finally:
            if pending is not None:
                pending.result()
    return n


class _Stream:
    """A write-only binary stream that knows its position without seeking, so Parquet can go to a pipe."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self._pos = 0
        self.closed = False

    def write(self, data: bytes) -> int:
        self._raw.write(data)
        self._pos += len(data)
        return len(data)

    def tell(self) -> int:
        return self._pos

    def flush(self) -> None:
        self._raw.flush()

    def close(self) -> None:
        self.closed = True
        self._raw.flush()

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False
