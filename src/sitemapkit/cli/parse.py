"""`sitemapkit parse`: read any site's sitemaps and print their URLs (JSONL or CSV) or their tree."""

from __future__ import annotations

import csv
import json
import os
import signal
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import IO, Any, TextIO, TypeVar, cast

import click

from sitemapkit.cli._output import DiagnosticPrinter, fail, interruption, max_diagnostics_option, plural
from sitemapkit.cli.options import (
    connect_timeout,
    fetch_missing_option,
    follow_cross_host_option,
    max_duration_option,
    network_options,
    per_host_option,
    workers_option,
)
from sitemapkit.core.dates import format_w3c
from sitemapkit.core.errors import InputError, Terminated, UsageError
from sitemapkit.core.escape import csv_cell, for_terminal
from sitemapkit.core.files import atomic_write, sweep_stale_temps
from sitemapkit.core.model import UrlEntry
from sitemapkit.reader.export_child import ChildWriterError, write_reader
from sitemapkit.reader.leaves import LeafWorkerError
from sitemapkit.reader.parquet import require_pyarrow
from sitemapkit.reader.runs import Part, UrlRun
from sitemapkit.reader.walk import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_CHILDREN,
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_SITEMAPS,
    Reader,
    SitemapNode,
    read,
)

TREE_COLUMNS = (
    "depth",
    "url",
    "kind",
    "status",
    "url_count",
    "bytes",
    "lastmod",
    "children",
    "error",
    "final_url",
    "compressed",
    "uncompressed_bytes",
    "truncated",
)

T = TypeVar("T")


@click.command()
@click.argument("source")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "csv", "parquet"]),
    default=None,
    help="Output format: jsonl (default), csv or parquet (needs the sitemapkit[parquet] extra). "
    "With --sitemaps: a text tree (default), jsonl or csv.",
)
@click.option("--sitemaps", "show_tree", is_flag=True, help="Print the sitemap tree instead of the URLs.")
@click.option(
    "--max-depth",
    default=DEFAULT_MAX_DEPTH,
    show_default=True,
    type=click.IntRange(0),
    help="Index levels followed below the first sitemap.",
)
@per_host_option(DEFAULT_CONCURRENCY)
@click.option(
    "--max-download",
    metavar="BYTES",
    default=DEFAULT_MAX_BYTES,
    show_default=True,
    type=click.IntRange(1),
    help="Most bytes downloaded per sitemap; the rest is skipped with a diagnostic.",
)
@max_duration_option
@click.option(
    "--max-children",
    metavar="N",
    default=DEFAULT_MAX_CHILDREN,
    show_default=True,
    type=click.IntRange(0),
    help="Children of one index followed; the rest are reported, not fetched.",
)
@click.option(
    "--max-sitemaps",
    metavar="N",
    default=DEFAULT_MAX_SITEMAPS,
    show_default=True,
    type=click.IntRange(1),
    help="Sitemaps one walk records; past it, children are reported, not fetched.",
)
@network_options()
@follow_cross_host_option
@fetch_missing_option
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    default="-",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write to FILE instead of standard output.",
)
@workers_option
@max_diagnostics_option
def parse(
    source: str,
    fmt: str | None,
    show_tree: bool,
    max_depth: int,
    concurrency: int,
    max_download: int,
    max_duration: float,
    max_children: int,
    max_sitemaps: int,
    timeout: float,
    retries: int,
    user_agent: str,
    allow_private: bool,
    follow_cross_host: bool,
    fetch_missing: bool,
    output: str,
    workers: int | None,
    max_diagnostics: int,
) -> None:
    """Read the sitemaps of SOURCE and print every URL entry, one per line.

    SOURCE is a sitemap file ('-' for standard input), a sitemap URL, or a site
    (https://example.com/): its sitemaps are found through robots.txt, or else
    well-known paths. Indexes are followed; gzip, text lists, RSS and Atom are read.
    A local index's children are read from its folder (by their URL path); the
    network is used for those not found there only with --fetch-missing.
    Problems go to stderr, each naming its file or URL.
    Nothing is fetched from a
    private or loopback address (unless it is SOURCE's own) or from another site
    than the index naming it: see --allow-private and --follow-cross-host.

    Exit status: 0 when the walk completed (even with problems), 1 when nothing
    could be read from SOURCE, 2 for bad options.

    \b
    Examples:
      sitemapkit parse https://example.com/ > urls.jsonl
      sitemapkit parse https://example.com/sitemap_index.xml --format csv -o urls.csv
      sitemapkit parse https://example.com/ --format parquet -o urls.parquet
      sitemapkit parse https://example.com/ --sitemaps
    """
    if fmt == "parquet":
        if show_tree:
            raise click.UsageError("--sitemaps prints the tree as text, jsonl or csv, not parquet")
        if output == "-" and _stdout().isatty():
            raise click.UsageError("Parquet is binary: redirect standard output or use -o FILE")
        try:
            require_pyarrow()
        except UsageError as exc:
            raise click.UsageError(str(exc)) from None
    printer = DiagnosticPrinter(limit=max_diagnostics)
    try:
        reader = read(
            source,
            max_depth=max_depth,
            concurrency=concurrency,
            max_download=max_download,
            connect_timeout=connect_timeout(timeout),
            read_timeout=timeout,
            retries=retries,
            user_agent=user_agent,
            max_duration=max_duration,
            max_children=max_children,
            max_sitemaps=max_sitemaps,
            allow_private=allow_private,
            follow_cross_host=follow_cross_host,
            fetch_missing=fetch_missing,
            on_diagnostic=printer,
        )
    except UsageError as exc:
        raise click.UsageError(for_terminal(str(exc))) from None
    except InputError as exc:
        fail(str(exc))
    try:
        _write(reader, fmt, show_tree, output, workers)
    except UsageError as exc:
        reader.close()
        fail(str(exc), status=2)
    except ChildWriterError as exc:
        reader.close()
        fail(f"{output}: cannot write ({exc})")
    except _NothingRead:
        pass  # said below, after the diagnostics; the output file, if any, is left as it was
    except (KeyboardInterrupt, Terminated) as exc:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C does not cut the clean-up short
        reader.close()
        how, status = interruption(exc)
        fail(how, status=status)
    except LeafWorkerError as exc:
        reader.close()
        fail(str(exc))
    except BrokenPipeError:
        # The consumer (`| head`) has what it wanted; stop quietly.
        reader.close()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
    except OSError as exc:
        reader.close()
        fail(f"{output}: cannot write ({exc.strerror or exc})")
    printer.finish()
    _summary(reader)
    if not reader.any_read:
        fail(f"nothing could be read from {source}")


class _NothingRead(Exception):
    """Nothing could be read from SOURCE: the output file is not published (one already there stays)."""


def _write(reader: Reader, fmt: str | None, show_tree: bool, output: str, workers: int | None) -> None:
    """The entries as JSONL, CSV or Parquet, or the tree, to `output`; the sitemaps below an index parsed
    by `workers` processes (`Reader.parts`; 1: none)."""
    opened = _open_binary(output) if fmt == "parquet" else _open_output(output)
    with opened as out, _progress(reader) as tick:
        if show_tree:
            for _ in _counted(reader, tick):
                pass
        else:
            leaves = None if workers is None else workers if workers > 1 else 0
            wrap = None if tick is None else partial(_ticking, tick=tick)
            write_reader(fmt or "jsonl", reader, out, wrap, workers=leaves)
        if not reader.any_read and output != "-":
            raise _NothingRead
        if show_tree:  # never parquet (refused above): `out` is text
            _write_tree(reader.tree, fmt, cast("IO[str]", out))


def _summary(reader: Reader) -> None:
    log = reader.diagnostics
    if not log:
        return
    read_ok = sum(1 for node in reader.sitemaps if node.read_ok)
    problems = f"{plural(log.errors, 'error')}, {plural(log.warnings, 'warning')}"
    click.echo(f"{plural(reader.count, 'URL')} from {plural(read_ok, 'sitemap')}; {problems}", err=True)


def _stdout() -> TextIO:
    """Standard output, or a clean failure when the command was started without one (`>&-`)."""
    if sys.stdout is None:
        fail("-: cannot write (standard output is closed; use -o FILE)")
    return sys.stdout


@contextmanager
def _open_binary(path: str) -> Iterator[IO[bytes]]:
    if path == "-":
        yield _stdout().buffer
        sys.stdout.buffer.flush()
        return
    with _complete_file(path, True) as f:
        yield f


@contextmanager
def _open_output(path: str) -> Iterator[IO[str]]:
    if path == "-":
        yield _stdout()
        sys.stdout.flush()
        return
    with _complete_file(path, False) as f:
        yield f


@contextmanager
def _complete_file(path: str, binary: bool) -> Iterator[Any]:
    """`path` written by `atomic_write` (a temporary name beside it, renamed into place once complete), so
    an interrupted or failed run leaves no partial file; the temporary files a killed earlier run left
    (`kill -9`) are swept first. A symbolic link at `path` is replaced, never written through. A path that
    is a character device or a FIFO (/dev/null, a named pipe; or a link to one, as /dev/stdout is) is
    written directly."""
    try:
        st: os.stat_result | None = os.stat(path)
    except OSError:
        st = None
    if st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        if binary:
            with open(path, "wb") as f:
                yield f
        else:
            with open(path, "w", encoding="utf-8", newline="") as f:
                yield f
        return
    folder, name = os.path.split(os.path.abspath(path))
    sweep_stale_temps(folder, name)
    with atomic_write(path, "wb" if binary else "w", newline="") as f:
        yield f


def _counted(reader: Reader, tick: Callable[[], None] | None) -> Iterable[UrlEntry | UrlRun]:
    """The reader's entries, runs of them whole (`Reader.runs`, which the writers format from their
    columns), ticking the progress line every 1,000 entries or so (the reader itself without one)."""
    return reader.runs() if tick is None else _ticking(reader.runs(), tick)


def _ticking(items: Iterator[T], tick: Callable[[], None]) -> Iterator[T]:
    n = 0
    for item in items:
        n += len(item) if isinstance(item, UrlRun | Part) else 1
        if n >= 1000:
            n = 0
            tick()
        yield item
    tick()


@contextmanager
def _progress(reader: Reader) -> Iterator[Callable[[], None] | None]:
    """A live line on stderr (URLs so far, sitemap being read) when stderr is a terminal; else nothing."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.completed:,} URLs"),
        TimeElapsedColumn(),
        TextColumn("{task.description}", markup=False),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("", total=None)

        def tick() -> None:
            current = reader.current
            description = for_terminal(current.url, 200) if current else ""
            bar.update(task, completed=reader.count, description=description)

        yield tick


def _levels(root: SitemapNode | None) -> Iterator[tuple[int, SitemapNode]]:
    stack = [(0, root)] if root is not None else []
    while stack:
        level, node = stack.pop()
        yield level, node
        stack.extend((level + 1, child) for child in reversed(node.children))


def _write_tree(root: SitemapNode | None, fmt: str | None, out: IO[str]) -> None:
    levels = list(_levels(root))
    nodes = [node for _, node in levels]
    if fmt == "jsonl":
        for node in nodes:
            out.write(json.dumps(node.to_dict(), ensure_ascii=False) + "\n")
    elif fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(TREE_COLUMNS)
        for node in nodes:
            d = node.to_dict()
            writer.writerow([_tree_cell(d[c]) for c in TREE_COLUMNS])
    else:
        for level, node in levels:
            out.write("  " * level + _tree_line(node) + "\n")


def _tree_cell(value: object) -> object:
    """A cell of the tree's CSV: text through `csv_cell` (a URL or error a spreadsheet would take for a
    formula), numbers and flags as they are."""
    if value is None:
        return ""
    return csv_cell(value) if isinstance(value, str) else value


def _tree_line(node: SitemapNode) -> str:
    """`url  kind  status  N URLs  B bytes  lastmod ...`, each text of it through `for_terminal`."""
    parts = [
        for_terminal(node.url),
        node.kind or "-",
        str(node.status) if node.status is not None else "-",
        plural(node.url_count, "URL"),
        plural(node.bytes, "byte"),
    ]
    if node.kind in ("sitemapindex", "robots", "site"):
        parts[3] = plural(len(node.children), "sitemap")
    if node.lastmod is not None:
        parts.append(f"lastmod {format_w3c(node.lastmod)}")
    if node.final_url:
        parts.append(f"-> {for_terminal(node.final_url)}")
    if node.truncated:
        parts.append("truncated")
    if node.error:
        parts.append(f"error: {for_terminal(node.error)}")
    return "  ".join(parts)
