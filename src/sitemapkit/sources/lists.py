"""URL list, CSV and JSONL input files.

- A URL list has one URL per line, optionally followed by TAB-separated fields (lastmod, changefreq,
  priority), positional or `key=value`; Google's sitemap_gen.py form `URL lastmod=... priority=...` works too.
  `#` comments and blank lines are ignored.
- `.csv` needs a header naming `loc` and optionally `lastmod`, `changefreq`, `priority`.
- `.jsonl` holds one object per line with those keys.
- `.gz` inputs are decompressed; `-` reads standard input. UTF-8, with or without a BOM.

Bad lines become diagnostics with file and line; a bad optional field is dropped and the URL kept.
"""

from __future__ import annotations

import csv
import gzip
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, cast

from sitemapkit.constants import CHANGEFREQS
from sitemapkit.dates import parse_w3c
from sitemapkit.diagnostics import Diagnostic, DiagnosticHandler
from sitemapkit.errors import InputError, InvalidDateError
from sitemapkit.model import Lastmod, UrlEntry

FIELDS = ("lastmod", "changefreq", "priority")


def open_input(name: str) -> IO[bytes]:
    """Open an input file (or `-` for stdin) as bytes, decompressing gzip (detected by its magic bytes)."""
    if name == "-":
        stdin = sys.stdin.buffer
        peek = getattr(stdin, "peek", None)
        if peek is not None and peek(2)[:2] == b"\x1f\x8b":
            return cast(IO[bytes], gzip.GzipFile(fileobj=stdin, mode="rb"))
        return stdin
    try:
        with open(name, "rb") as probe:
            magic = probe.read(2)
        if magic == b"\x1f\x8b":
            return cast(IO[bytes], gzip.open(name, "rb"))
        return open(name, "rb")
    except OSError as exc:
        raise InputError(f"{name}: cannot open ({exc.strerror or exc})") from None


def _kind(name: str) -> str:
    base = name[:-3] if name.endswith(".gz") else name
    suffix = Path(base).suffix.lower()
    return {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}.get(suffix, "list")


class _FieldParser:
    """Parses the optional fields of one input, reporting bad values against file and line."""

    def __init__(self, source: str, report: DiagnosticHandler) -> None:
        self.source = source
        self.report = report

    def entry(self, loc: str, fields: dict[str, str], line: int) -> UrlEntry:
        lastmod: Lastmod | None = None
        changefreq: str | None = None
        priority: float | None = None
        for key, raw in fields.items():
            value = raw.strip()
            if not value:
                continue
            if key == "lastmod":
                try:
                    lastmod = parse_w3c(value, allow_naive=True)
                except InvalidDateError:
                    self._bad("invalid-date", f"lastmod {value!r} is not a W3C Datetime", line, loc)
            elif key == "changefreq":
                if value.lower() in CHANGEFREQS:
                    changefreq = value.lower()
                else:
                    allowed = ", ".join(sorted(CHANGEFREQS))
                    self._bad("invalid-value", f"changefreq {value!r} is not one of {allowed}", line, loc)
            elif key == "priority":
                try:
                    number = float(value)
                except ValueError:
                    number = -1.0
                if 0.0 <= number <= 1.0:
                    priority = number
                else:
                    self._bad(
                        "invalid-value", f"priority {value!r} is not a number from 0.0 to 1.0", line, loc
                    )
        return UrlEntry(loc, lastmod, changefreq, priority, sitemap=self.source, line=line)

    def _bad(self, code: str, message: str, line: int, url: str) -> None:
        self.report(
            Diagnostic.make(code, message + "; the field is dropped", source=self.source, line=line, url=url)
        )

    def bad_line(self, message: str, line: int) -> None:
        self.report(Diagnostic.make("bad-line", message, source=self.source, line=line))


def _lines(stream: IO[bytes], fields: _FieldParser) -> Iterator[tuple[int, str]]:
    """Decoded lines (1-based numbers) with the BOM and line ending removed; undecodable lines reported."""
    for number, raw in enumerate(stream, start=1):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            fields.bad_line(f"not UTF-8 (byte {exc.start + 1} of the line); the line is skipped", number)
            continue
        yield number, text.rstrip("\r\n")


def _read_list(stream: IO[bytes], fields: _FieldParser) -> Iterator[UrlEntry]:
    for number, text in _lines(stream, fields):
        line = text.strip()
        if not line or line.startswith("#"):
            continue
        if "\t" in text:
            url, *rest = text.split("\t")
            values = _fields_from(rest, fields, number, positional=True)
        else:
            url, *rest = line.split()
            if rest and all("=" in token for token in rest):
                values = _fields_from(rest, fields, number, positional=False)
            else:  # a URL with raw spaces in it: encoded later
                url, values = line, {}
        if values is not None:
            yield fields.entry(url.strip(), values, number)


def _fields_from(
    tokens: list[str], fields: _FieldParser, line: int, *, positional: bool
) -> dict[str, str] | None:
    values: dict[str, str] = {}
    for position, token in enumerate(tokens):
        token = token.strip()
        if not token:
            continue
        key, eq, value = token.partition("=")
        if eq and key.strip().lower() in FIELDS:
            values[key.strip().lower()] = value
        elif positional and position < len(FIELDS):
            values[FIELDS[position]] = token
        else:
            fields.bad_line(
                f"unknown field {token!r} (expected lastmod, changefreq, priority); ignored", line
            )
    return values


def _read_csv(stream: IO[bytes], fields: _FieldParser) -> Iterator[UrlEntry]:
    lines = _lines(stream, fields)
    numbers: list[int] = []

    def texts() -> Iterator[str]:
        for number, text in lines:
            numbers.append(number)
            yield text

    reader = csv.reader(texts())
    header = next(reader, None)
    if header is None:
        return
    columns = [h.strip().lower() for h in header]
    if "loc" not in columns:
        raise InputError(
            f"{fields.source}:1: the CSV header must name a 'loc' column (found: {', '.join(header)})"
        )
    unknown = [c for c in columns if c not in ("loc", *FIELDS)]
    if unknown:
        fields.bad_line(f"unknown column(s) {', '.join(unknown)} ignored", 1)
    loc_index = columns.index("loc")
    for row in reader:
        number = numbers[-1]
        numbers.clear()
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(columns):
            fields.bad_line(
                f"{len(row)} cells where the header has {len(columns)}; the line is skipped", number
            )
            continue
        values = {c: row[i] for i, c in enumerate(columns) if c in FIELDS}
        yield fields.entry(row[loc_index].strip(), values, number)


def _read_jsonl(stream: IO[bytes], fields: _FieldParser) -> Iterator[UrlEntry]:
    warned: set[str] = set()
    for number, text in _lines(stream, fields):
        if not text.strip():
            continue
        try:
            obj: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            fields.bad_line(f"not valid JSON ({exc.msg} at column {exc.colno}); the line is skipped", number)
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("loc"), str):
            fields.bad_line("expected an object with a string 'loc'; the line is skipped", number)
            continue
        for key in obj.keys() - {"loc", *FIELDS} - warned:
            warned.add(key)
            fields.bad_line(f"unknown key {key!r} ignored (reported once per file)", number)
        values = {k: str(obj[k]) for k in FIELDS if obj.get(k) is not None}
        yield fields.entry(obj["loc"], values, number)


_READERS = {"list": _read_list, "csv": _read_csv, "jsonl": _read_jsonl}


def read_source(name: str, report: DiagnosticHandler) -> Iterator[UrlEntry]:
    """Stream the entries of one input file (`-` for stdin). Entries carry `sitemap=name` and `line`.

    Raises `InputError` if the file cannot be opened or read at all.
    """
    stream = open_input(name)
    fields = _FieldParser("<stdin>" if name == "-" else name, report)
    try:
        yield from _READERS[_kind(name)](stream, fields)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(f"{fields.source}: cannot be read ({exc})") from None
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def read_sources(names: Iterable[str], report: DiagnosticHandler) -> Iterator[UrlEntry]:
    """The entries of several inputs, one after another."""
    for name in names:
        yield from read_source(name, report)
