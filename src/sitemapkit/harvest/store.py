"""The dataset on disk: URL part files written as the harvest goes, the manifest of finished sites, resume.

Layout of DATASET:

    urls/part-<worker>-<n>.parquet   URL rows, in row groups; a part is written as `.part-...<random>.tmp`
                                     (`core.files.AtomicFile`) and renamed when closed, so a reader never
                                     sees a half-written file
    _manifest/<worker>.jsonl         one line per finished site (its row, its sitemaps, its counts), appended
                                     only after every URL row of the site is in a renamed part
    sites.parquet, sitemaps.parquet, summary.json   written at the end, from the manifest

A kill at any moment leaves parts and manifest lines that agree, except for rows of sites with no manifest
line yet: `--resume` deletes the unfinished `.tmp` files (those no live writer holds), rewrites any part
holding rows of an unfinished site without them, and reads only the sites the manifest lacks. Files
starting with `_` or `.` are skipped by pyarrow, DuckDB globs and Spark, so `urls/` reads as one dataset.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Final

from sitemapkit.core.errors import InputError, UsageError
from sitemapkit.core.files import AtomicFile, open_new_nofollow, sweep_stale_temps
from sitemapkit.core.model import UrlEntry
from sitemapkit.harvest.rows import COUNTED, DICTIONARY_COLUMNS, UrlBuffer, pyarrow, url_schema
from sitemapkit.reader.runs import UrlRun

URLS: Final = "urls"
MANIFEST: Final = "_manifest"
OUTPUTS: Final = ("sites.parquet", "sitemaps.parquet", "summary.json")


def new_worker_id(prefix: str) -> str:
    """A name for one worker's files, unique across runs and resumes."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


class PartWriter:
    """One worker's output: URL rows into rotating part files, finished sites into its manifest.

    A finished site is committed (its manifest line written) only once the part holding its last rows is
    closed: parts close every `rows_per_file` rows, every `commit_seconds`, and at the end.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        worker: str,
        *,
        rows_per_file: int = 1_000_000,
        row_group_rows: int = 65_536,
        commit_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.root = Path(root)
        self.worker = worker
        self.rows_per_file = rows_per_file
        self.row_group_rows = min(row_group_rows, rows_per_file)
        self.commit_seconds = commit_seconds
        self._clock = clock
        self._schema = url_schema()
        self._buffer = UrlBuffer()
        self._writer: Any = None
        self._file: AtomicFile | None = None
        self._part_rows = 0
        self._opened = 0.0
        self._seq = 0
        self._pending: list[dict[str, Any]] = []
        self._manifest: IO[str] | None = None
        self.files: list[str] = []
        self.rows = 0
        self._closed = False

    def add_batch(self, site: str, entries: Sequence[UrlEntry] | UrlRun) -> tuple[int, ...]:
        """Buffer the rows of `entries` (or of a run of them), all of `site`; returns how many of them have
        each of `COUNTED` (row groups stay `row_group_rows` long: a batch is split where one fills)."""
        if self._closed:  # a site task that outlived its run: nothing is written
            return UrlBuffer().add(site, entries)
        counts = [0] * len(COUNTED)
        while len(entries):
            room = self.row_group_rows - self._buffer.rows
            part, entries = (entries, ()) if len(entries) <= room else (entries[:room], entries[room:])
            for i, count in enumerate(self._buffer.add(site, part)):
                counts[i] += count
            if self._buffer.rows >= self.row_group_rows:
                self._flush()
                if self._part_rows >= self.rows_per_file or self._due():
                    self.rotate()
        return tuple(counts)

    def site_done(self, record: dict[str, Any]) -> None:
        """A site is finished: commit its manifest line as soon as its rows are all in closed parts."""
        self._pending.append(record)
        if self._writer is None and not self._buffer.rows:
            self._commit()
        elif self._due():
            self.rotate()

    def _due(self) -> bool:
        return self._writer is not None and self._clock() - self._opened >= self.commit_seconds

    def _flush(self) -> None:
        if not self._buffer.rows:
            return
        pa = pyarrow()
        if self._writer is None:
            self._seq += 1
            out = AtomicFile(self.root / URLS / f"part-{self.worker}-{self._seq:05d}.parquet")
            try:
                self._writer = pa.parquet.ParquetWriter(
                    out.file, self._schema, compression="zstd", use_dictionary=list(DICTIONARY_COLUMNS)
                )
            except BaseException:
                out.discard()
                raise
            self._file = out
            self._opened = self._clock()
        self._writer.write_table(self._buffer.table(self._schema), row_group_size=self.row_group_rows)
        self._part_rows += self._buffer.rows
        self.rows += self._buffer.rows
        self._buffer = UrlBuffer()

    def rotate(self) -> None:
        """Close the current part (publishing it under its final name), then commit the finished sites."""
        self._flush()
        if self._writer is not None:
            assert self._file is not None
            self._writer.close()
            self._file.commit()
            self.files.append(os.path.basename(self._file.path))
            self._writer = None
            self._file = None
            self._part_rows = 0
        self._commit()

    def _commit(self) -> None:
        if not self._pending:
            return
        if self._manifest is None:
            path = self.root / MANIFEST / f"{self.worker}.jsonl"
            self._manifest = open_new_nofollow(path, "a")  # (kept open across commits)
        self._manifest.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in self._pending))
        self._manifest.flush()
        os.fsync(self._manifest.fileno())
        self._pending.clear()

    def close(self) -> None:
        """Publish everything written (the normal end)."""
        self.rotate()
        self._closed = True
        if self._manifest is not None:
            self._manifest.close()
            self._manifest = None

    def abandon(self) -> None:
        """Stop without publishing the open part (its sites stay unfinished, for `--resume`)."""
        self._closed = True
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
            self._writer = None
        if self._file is not None:
            self._file.discard()
            self._file = None
        if self._manifest is not None:
            self._manifest.close()
            self._manifest = None


def records(root: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Every finished site's manifest record, first one per site only.

    A last line without its newline that is not JSON is the one a kill cut short: skipped (that site is
    not finished). Any other line that is not a record as `PartWriter` writes them is an `InputError`
    naming the file and line: the manifest was changed by something else, and the dataset is not trusted.
    """
    seen: set[str] = set()
    folder = Path(root) / MANIFEST
    if not folder.is_dir():
        return
    for path in sorted(folder.glob("*.jsonl")):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise InputError(f"{path}: cannot read the manifest ({exc.strerror or exc})") from None
        lines = data.split(b"\n")
        torn = lines.pop()  # b"" after a final newline; else a line a kill cut short
        for number, line in enumerate(lines, 1):
            record = _record(path, number, line)
            if record["site"] not in seen:
                seen.add(record["site"])
                yield record
        if torn:
            try:
                record = _record(path, len(lines) + 1, torn)
            except InputError:
                continue  # cut short by a kill: that site is not finished
            if record["site"] not in seen:
                seen.add(record["site"])
                yield record


_RECORD_KEYS: Final = (("site", str), ("row", dict), ("sitemaps", list), ("stats", dict))


def _record(path: Path, number: int, line: bytes) -> dict[str, Any]:
    """One manifest line as a record, or an `InputError` saying where and what is wrong."""
    where = f"{path}:{number}"
    try:
        record = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{where}: not a manifest record (not JSON: {exc}); {_TAMPERED}") from None
    if not isinstance(record, dict):
        raise InputError(f"{where}: not a manifest record (not a JSON object); {_TAMPERED}")
    for key, kind in _RECORD_KEYS:
        if not isinstance(record.get(key), kind):
            raise InputError(
                f"{where}: not a manifest record ({key!r} missing or not a {kind.__name__}); {_TAMPERED}"
            )
    if (
        not all(isinstance(m, dict) for m in record["sitemaps"])
        or record["row"].get("site") != record["site"]
    ):
        raise InputError(f"{where}: not a manifest record (its rows do not match); {_TAMPERED}")
    return record


_TAMPERED: Final = "the dataset was changed by something other than sitemapkit harvest; nothing was changed"


def prepare(root: str | os.PathLike[str], *, resume: bool) -> set[str]:
    """Make DATASET ready for a run; returns the sites already finished (empty unless resuming).

    Without `resume`, DATASET must not exist or be empty. With it, whatever a killed run left is made
    consistent with its manifest (see the module docstring).
    """
    path = Path(root)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{path}: exists and is not a folder")
    if not resume and path.is_dir() and any(path.iterdir()):
        raise UsageError(
            f"{path}: exists and is not empty; use --resume to finish that harvest, or another path"
        )
    (path / URLS).mkdir(parents=True, exist_ok=True)
    (path / MANIFEST).mkdir(exist_ok=True)
    if not resume:
        return set()
    # Everything is checked before anything is changed: a manifest or a part that sitemapkit did not
    # write stops the run with the file named, and the dataset stays as it was.
    done = {str(r["site"]) for r in records(path)}
    parts = {part: _part_sites(part) for part in sorted((path / URLS).glob("*.parquet"))}
    for name in OUTPUTS:
        (path / name).unlink(missing_ok=True)
    for folder in (path / URLS, path):  # a killed run's temporary files, whatever their age
        sweep_stale_temps(folder, None, stale_after=0)
    for part, sites in parts.items():
        _drop_unfinished(part, sites, done)
    return done


def _part_sites(part: Path) -> list[str]:
    """The sites that have rows in `part`, or an `InputError` if it is not a part this harvest wrote."""
    pa = pyarrow()
    try:
        schema = pa.parquet.read_schema(part)
        if schema.names != url_schema().names:
            raise InputError(f"{part}: not a part of a harvest (its columns differ); {_TAMPERED}")
        column = pa.parquet.read_table(part, columns=["site"]).column("site")
        return [str(site) for site in column.unique().to_pylist()]
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(f"{part}: not a Parquet file this harvest wrote ({exc}); {_TAMPERED}") from None


def _drop_unfinished(part: Path, sites: list[str], done: set[str]) -> None:
    """Rewrite `part` without the rows of sites not in `done` (delete it if none is left)."""
    if all(site in done for site in sites):
        return
    pa = pyarrow()
    pq = pa.parquet
    keep = pa.array(sorted(done & set(sites)), type=pa.string())
    kept = 0
    out = AtomicFile(part)
    try:
        source = pq.ParquetFile(part)
        try:
            with pq.ParquetWriter(out.file, source.schema_arrow, compression="zstd") as writer:
                for batch in source.iter_batches():
                    table = pa.Table.from_batches([batch])
                    table = table.filter(pa.compute.is_in(table.column("site"), value_set=keep))
                    if table.num_rows:
                        writer.write_table(table)
                        kept += table.num_rows
        finally:
            source.close()
    except pa.ArrowException as exc:  # a damaged page the first look did not reach: the part stays
        out.discard()
        raise InputError(f"{part}: cannot be read whole ({exc}); {_TAMPERED}") from None
    except BaseException:
        out.discard()
        raise
    if kept:
        out.commit()
    else:
        out.discard()
        part.unlink()
