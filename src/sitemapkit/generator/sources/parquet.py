"""Parquet input: a `.parquet` file, or a folder of part files (a dataset such as a harvest's `urls/`).

Needs pyarrow, the optional extra `sitemapkit[parquet]`. The columns are named as a CSV file's: `loc` (or
`url`, `address`) required; `lastmod`, `changefreq`, `priority` optional (strings, or a timestamp or date
`lastmod` and a number `priority`; without a `lastmod` column, `lastmod_text` or a harvest's `lastmod_utc`
stands for it). The extensions are nested columns in the shape `sitemapkit parse -o x.parquet` and
`sitemapkit harvest` write them: `images`, `videos`, `alternates` (lists of structs) and `news` (a struct).
Other columns (a harvest's `site`, `sitemap`, `*_count`) are ignored.

The file is read in record batches of `BATCH_ROWS` rows (memory stays flat). A batch without extensions
comes as a `ParquetBlock`, the columns the writer's columnar lane takes as a CSV file's (see
`SitemapWriter.add_records`); a batch with some comes as a `RecordBatch` whose rows with extensions are
`UrlEntry`s. Rows are numbered from 1 in each file: a diagnostic names the file and the row as its line.
A bad extension item (one image, video, alternate, the news entry) is reported and dropped, the rest kept.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from sitemapkit.core.dates import format_w3c
from sitemapkit.core.diagnostics import Diagnostic, DiagnosticHandler, Severity, printable
from sitemapkit.core.errors import InputError, UsageError
from sitemapkit.core.model import UrlEntry
from sitemapkit.generator.sources.jsonl import read_extension
from sitemapkit.generator.sources.lists import RecordBatch
from sitemapkit.generator.sources.records import TextRecord, entry_from_text, with_extensions
from sitemapkit.generator.sources.textblocks import FIELDS, ColumnBlock, FieldReporter

PARQUET_HINT: Final = "Parquet input needs pyarrow: pip install 'sitemapkit[parquet]'"
BATCH_ROWS: Final = 16_384
"""Rows of a Parquet file read at a time."""

_ALIASES: Final = {"url": "loc", "address": "loc"}
_EXTENSIONS: Final = ("images", "videos", "news", "alternates")
_LASTMODS: Final = ("lastmod", "lastmod_text", "lastmod_utc")
"""The columns that give the lastmod, the first one present."""
_IGNORED: Final = frozenset(
    {"site", "sitemap", "image_count", "video_count", "news_count", "alternate_count", *_LASTMODS}
)
"""Columns a harvest or `parse` writes that are not read (or read only in the absence of another)."""


def _arrow() -> tuple[Any, Any, Any]:
    """pyarrow, pyarrow.compute and pyarrow.parquet, or a `UsageError` naming the `parquet` extra."""
    try:
        import pyarrow
        import pyarrow.compute
        import pyarrow.parquet
    except ImportError:
        raise UsageError(PARQUET_HINT) from None
    return pyarrow, pyarrow.compute, pyarrow.parquet


def is_parquet(name: str) -> bool:
    """Whether the SOURCE `name` is read as Parquet: a `.parquet` file, or a folder holding part files."""
    if name.lower().endswith(".parquet"):
        return True
    path = Path(name)
    return name != "-" and path.is_dir() and any(True for _ in _parts(path))


def has_alternates(name: str) -> bool:
    """Whether the Parquet file (or a part file of the folder) `name` has an `alternates` column with some
    alternates in it (hreflang groups to complete; `harvest` and `parse` write the column always, empty where
    a site has none: only that column is read to tell); False when it cannot be told (reading it reports
    why)."""
    try:
        pa, pc, pq = _arrow()
    except UsageError:
        return False
    path = Path(name)
    for part in _parts(path) if path.is_dir() else [path]:
        try:
            names = pq.read_schema(part).names
        except Exception:  # not Parquet, unreadable: reported when it is read
            return False
        column = next((n for n in names if n.strip().lower() == "alternates"), None)
        if column is None:
            continue
        try:
            values = pq.read_table(part, columns=[column]).column(0)
            if not pa.types.is_list(values.type) and not pa.types.is_large_list(values.type):
                return True  # not as harvest writes it: reading it says what it holds
            if (pc.max(pc.list_value_length(values)).as_py() or 0) > 0:
                return True
        except Exception:  # (reading the rows reports why)
            return True
    return False


def _parts(folder: Path) -> Iterator[Path]:
    """The part files of a dataset folder in name order, as pyarrow and DuckDB see the dataset: `*.parquet`
    files, none under a name starting with `_` or `.` (a harvest's temporaries, `_SUCCESS` markers)."""
    for path in sorted(folder.rglob("*.parquet")):
        if not any(p.startswith(("_", ".")) for p in path.relative_to(folder).parts) and path.is_file():
            yield path


class ParquetBlock(ColumnBlock):
    """Rows of a Parquet batch without extensions as columns (loc, lastmod, changefreq, priority; the cells
    as text, None where a row has none), for the writer's columnar lane; `record(i)` gives row i's
    record for the rows the lane leaves to the general path."""

    __slots__ = ("_source",)

    def __init__(self, columns: list[Sequence[str | None]], first: int, source: str) -> None:
        super().__init__(columns, set(), "", first, ",", _no_row, escaped=False)
        self._source = source

    def record(self, index: int) -> TextRecord:
        loc, lastmod, changefreq, priority = (column[index] for column in self.columns)
        return TextRecord(
            (loc or "").strip(), lastmod, changefreq, priority, self._source, self.first + index
        )


def _no_row(row: list[str], number: int) -> None:  # pragma: no cover - ParquetBlock.record reads the rows
    return None


def _texts(pa: Any, pc: Any, array: Any, name: str, source: str) -> list[str | None]:
    """A flat column's cells as text (None for null): strings as they are, numbers as Python writes them,
    timestamps and dates as W3C Datetime."""
    kind = array.type
    if pa.types.is_dictionary(kind):
        array = array.dictionary_decode()
        kind = array.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        values: list[Any] = array.to_pylist()
        return values
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        return [None if v is None else format_w3c(v) for v in array.to_pylist()]
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):
        return [None if v is None else str(v) for v in array.to_pylist()]
    try:
        values = pc.cast(array, pa.string()).to_pylist()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise InputError(f"{source}: the column {name!r} is {kind}, which cannot be read as text") from None
    return values


def _extension_rows(pa: Any, pc: Any, array: Any) -> list[int]:
    """The rows in which an extension column holds something (a non-empty list, a news struct)."""
    if pa.types.is_struct(array.type):
        mask = array.is_valid()
    else:
        mask = pc.fill_null(pc.greater(pc.list_value_length(array), 0), False)
    rows: list[int] = pc.indices_nonzero(mask).to_pylist()
    return rows


def _extension(loc: str, key: str, value: Any, fields: FieldReporter, row: int) -> Any:
    """One extension of a row, item by item (`read_extension`), a struct's null fields left out."""
    cleaned = _set(value) if key == "news" else [_set(item) for item in value]
    return read_extension(loc or "-", key, cleaned, fields, row, unit="row")


def _set(item: Any) -> Any:
    """A struct's fields that are set (a null is a field left out)."""
    if isinstance(item, dict):
        return {k: v for k, v in item.items() if v is not None}
    return item


def _file_batches(path: str, shown: str, note: DiagnosticHandler) -> Iterator[ParquetBlock | RecordBatch]:
    """The batches of one Parquet file (see the module docstring); diagnostics of a `RecordBatch`'s reading
    go into its `notes` (those of row i before it), the others to `note`."""
    pa, pc, pq = _arrow()
    try:
        file = pq.ParquetFile(path)
    except FileNotFoundError:
        raise InputError(f"{shown}: cannot open (No such file or directory)") from None
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"{shown}: not a Parquet file or cannot be read ({exc})") from None
    fields = FieldReporter(shown, note)
    names: dict[str, str] = {}
    for name in file.schema_arrow.names:
        key = name.strip().lower()
        names.setdefault(_ALIASES.get(key, key), name)
    if "loc" not in names:
        raise InputError(
            f"{shown}: a Parquet source needs a 'loc' column (or 'url', 'address') "
            f"(found: {', '.join(file.schema_arrow.names)})"
        )
    lastmod = next((names[c] for c in _LASTMODS if c in names), None)
    flat = [names["loc"], lastmod, names.get("changefreq"), names.get("priority")]
    extensions: dict[str, str] = {}
    for key in _EXTENSIONS:
        if key not in names:
            continue
        kind = file.schema_arrow.field(names[key]).type
        nested = (
            pa.types.is_struct(kind)
            if key == "news"
            else pa.types.is_list(kind) or pa.types.is_large_list(kind)
        )
        if nested:
            extensions[key] = names[key]
        else:
            shape = "a struct" if key == "news" else "a list of structs"
            note(
                Diagnostic.make(
                    "bad-line",
                    f"the column {names[key]!r} is {kind}, not {shape} as `parse -o x.parquet` writes it; "
                    "it is not read",
                    source=fields.source,
                    severity=Severity.WARNING,
                )
            )
    for key in names.keys() - {"loc", *FIELDS, *_EXTENSIONS, *_IGNORED}:
        near = difflib.get_close_matches(key, (*FIELDS, *_EXTENSIONS), n=1, cutoff=0.7)
        if near:
            note(
                Diagnostic.make(
                    "bad-line",
                    f"column {names[key]!r} is not read; did you mean {near[0]!r}?",
                    source=fields.source,
                    severity=Severity.WARNING,
                )
            )
    wanted = list(dict.fromkeys(c for c in (*flat, *extensions.values()) if c is not None))
    first = 1
    try:
        for batch in file.iter_batches(batch_size=BATCH_ROWS, columns=wanted, use_threads=False):
            n = batch.num_rows
            if not n:
                continue
            columns: list[Sequence[str | None]] = []
            for column in flat:
                if column is None:
                    columns.append([None] * n)
                    continue
                columns.append(_texts(pa, pc, batch.column(column), column, fields.source))
            locs = columns[0]
            if None in locs:
                columns[0] = locs = ["" if loc is None else loc for loc in locs]
            found: dict[int, dict[str, Any]] = {}
            for key, column in extensions.items():
                array = batch.column(column)
                rows = _extension_rows(pa, pc, array)
                if rows:
                    for row, value in zip(rows, array.take(rows).to_pylist(), strict=True):
                        found.setdefault(row, {})[key] = value
            if not found:
                yield ParquetBlock(columns, first, fields.source)
            else:
                yield _mixed(columns, found, first, n, fields, note)
            first += n
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"{shown}: cannot be read ({exc})") from None


def _mixed(
    columns: list[Sequence[str | None]],
    found: dict[int, dict[str, Any]],
    first: int,
    n: int,
    fields: FieldReporter,
    note: DiagnosticHandler,
) -> RecordBatch:
    """A batch with extensions: records for the plain rows, entries for the others."""
    batch = RecordBatch()
    source = fields.source
    for index, loc, lastmod, changefreq, priority in zip(range(n), *columns, strict=False):
        record = TextRecord((loc or "").strip(), lastmod, changefreq, priority, source, first + index)
        values = found.get(index)
        if values is None:
            batch.append(record)
            continue
        held: list[Diagnostic] = []
        row_fields = FieldReporter(source, held.append)
        entry = entry_from_text(record, held.append)
        ext = {
            key: _extension(entry.loc, key, value, row_fields, first + index) for key, value in values.items()
        }
        if held:
            batch.notes.setdefault(len(batch), []).extend(held)
        batch.append(with_extensions(entry, ext))
    return batch


def _batches(name: str, report: DiagnosticHandler) -> Generator[ParquetBlock | RecordBatch, None, None]:
    """The batches of a Parquet file or of every part file of a dataset folder, in name order."""
    _arrow()
    path = Path(name)
    if path.is_dir():
        parts = [str(p) for p in _parts(path)]
        if not parts:
            raise InputError(f"{printable(name, None)}: a folder without Parquet part files")
    else:
        parts = [name]
    for part in parts:
        yield from _file_batches(part, printable(part, None), report)


@contextmanager
def parquet_batches(name: str, report: DiagnosticHandler) -> Iterator[Iterator[ParquetBlock | RecordBatch]]:
    """The rows of a Parquet file (or dataset folder) in batches for `SitemapWriter.add_records` (with
    `batch.notes`), as `lists.record_batches` gives a CSV file's."""
    batches = _batches(name, report)
    try:
        yield batches
    finally:
        batches.close()


def read_parquet(name: str, report: DiagnosticHandler) -> Iterator[UrlEntry]:
    """The entries of a Parquet file (or dataset folder), one by one, with `sitemap=` its file and `line=`
    the row; a bad optional field is reported and dropped."""
    add: Callable[[TextRecord], UrlEntry] = lambda record: entry_from_text(record, report)  # noqa: E731
    for batch in _batches(name, report):
        if isinstance(batch, ParquetBlock):
            for index in range(len(batch.columns[0])):
                yield add(batch.record(index))
            continue
        for index, item in enumerate(batch):
            for diagnostic in batch.notes.get(index, ()):
                report(diagnostic)
            if isinstance(item, TextRecord):
                yield add(item)
            else:
                yield item if isinstance(item, UrlEntry) else item.entry(report)
        for diagnostic in batch.notes.get(len(batch), ()):
            report(diagnostic)
