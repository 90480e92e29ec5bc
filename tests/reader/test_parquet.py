"""Parquet output: read back with pyarrow it equals the JSONL; row groups; a clean error without pyarrow."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings

from sitemapkit.cli import main
from sitemapkit.core.model import UrlEntry
from sitemapkit.reader.export import write_jsonl
from tests.cli.test_cli_parse import tree_site, urlset
from tests.reader.test_export import FULL, _entries
from tests.support.localserver import LocalServer

pq = pytest.importorskip("pyarrow.parquet")  # the `parquet` extra, which `make test` installs

from sitemapkit.reader.parquet import write_parquet  # noqa: E402


def as_jsonl(row: Any, top: bool = True) -> Any:
    """A row read back from Parquet in the JSONL shape: nested fields that are null are left out (JSONL
    writes only the fields that are set), top-level keys all kept."""
    if isinstance(row, dict):
        return {k: as_jsonl(v, False) for k, v in row.items() if top or v is not None}
    if isinstance(row, list):
        return [as_jsonl(v, False) for v in row]
    return row


def jsonl_rows(entries: list[UrlEntry]) -> list[dict[str, Any]]:
    out = io.StringIO()
    write_jsonl(entries, out)
    return [json.loads(line) for line in out.getvalue().split("\n")[:-1]]  # not splitlines: U+2028


def test_parquet_read_back_equals_the_jsonl_in_row_groups() -> None:
    plain = [
        UrlEntry(
            f"https://e.com/{i}", dt.date(2024, 1, 1) + dt.timedelta(days=i % 400), "daily", 0.5, sitemap="s"
        )
        for i in range(10_000)
    ]
    entries = [*plain, FULL, UrlEntry("https://e.com/bare"), *plain[:5000]]
    buf = io.BytesIO()
    assert write_parquet(entries, buf, row_group_size=4096) == len(entries)
    data = buf.getvalue()
    assert data[:4] == b"PAR1"
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    assert meta.num_row_groups == 4  # 4 x 4096 rows, the last one short: memory is per group
    rows = pq.read_table(io.BytesIO(data)).to_pylist()
    assert [as_jsonl(r) for r in rows] == jsonl_rows(entries)


@settings(max_examples=50, deadline=None)
@given(entries=_entries)
def test_parquet_equals_jsonl_for_any_entries(entries: list[UrlEntry]) -> None:
    """Nulls, non-ASCII text, repeated and odd values (NaN is the one value that equals nothing)."""
    entries = [e for e in entries if e.priority == e.priority]
    buf = io.BytesIO()
    write_parquet([*entries, FULL], buf)
    rows = pq.read_table(io.BytesIO(buf.getvalue())).to_pylist()
    assert [as_jsonl(r) for r in rows] == jsonl_rows([*entries, FULL])


def test_no_entries_is_an_empty_table_with_the_schema() -> None:
    buf = io.BytesIO()
    assert write_parquet([], buf) == 0
    table = pq.read_table(io.BytesIO(buf.getvalue()))
    assert table.num_rows == 0 and table.column_names[:2] == ["loc", "lastmod"]


def test_cli_parquet_file_equals_cli_jsonl(server: LocalServer, tmp_path: Path) -> None:
    site = tree_site(server)
    out = tmp_path / "urls.parquet"
    runner = CliRunner()
    result = runner.invoke(main, ["parse", site, "--format", "parquet", "-o", str(out)])
    assert result.exit_code == 0, result.output
    jsonl = runner.invoke(main, ["parse", site])
    expected = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert len(expected) == 2
    assert [as_jsonl(r) for r in pq.read_table(out).to_pylist()] == expected


def test_cli_parquet_to_a_pipe(tmp_path: Path) -> None:
    """Standard output that cannot seek (a pipe) takes Parquet too."""
    proc = subprocess.run(
        [sys.executable, "-m", "sitemapkit", "parse", "-", "--format", "parquet"],
        input=urlset("<loc>https://example.com/x</loc>").encode(),
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert pq.read_table(io.BytesIO(proc.stdout)).column("loc").to_pylist() == ["https://example.com/x"]


def test_parquet_with_sitemaps_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["parse", "-", "--sitemaps", "--format", "parquet"], input="")
    assert result.exit_code == 2
    assert "not parquet" in result.output


def test_without_pyarrow_the_error_names_the_extra(tmp_path: Path) -> None:
    code = """
        import sys
        sys.modules["pyarrow"] = None  # `import pyarrow` fails as if it were not installed
        sys.argv = ["sitemapkit", "parse", "-", "--format", "parquet", "-o", "out.parquet"]
        from sitemapkit.cli import main
        main()
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        input=urlset("<loc>https://example.com/x</loc>"),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "pip install 'sitemapkit[parquet]'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "out.parquet").exists()
    # JSONL needs no pyarrow
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code).replace('"--format", "parquet", ', "")],
        input=urlset("<loc>https://example.com/x</loc>"),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "out.parquet").read_text())["loc"] == "https://example.com/x"


def test_output_file_appears_only_when_complete(tmp_path: Path) -> None:
    """-o FILE is written under a temporary name and renamed at the end: a failed run leaves no file,
    and the one already there is kept."""
    out = tmp_path / "urls.parquet"
    out.write_bytes(b"old")
    bad = tmp_path / "not-a-sitemap.xml"
    bad.write_text("x" * 100)
    code = f"""
        import sys
        def broken(fmt, reader, out, wrap=None, *, workers=None):
            out.write(b"PAR1 half")
            raise OSError(28, "No space left on device")
        import sitemapkit.cli.parse as cli
        cli.write_reader = broken  # what writes the output, here or in a child process
        sys.argv = ["sitemapkit", "parse", {str(bad)!r}, "--format", "parquet", "-o", {str(out)!r}]
        from sitemapkit.cli import main
        main()
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1
    assert "cannot write (No space left on device)" in proc.stderr
    assert out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-a-sitemap.xml", "urls.parquet"]


def test_output_to_a_fifo_is_written_directly(tmp_path: Path) -> None:
    """-o naming something that is not a regular file (a FIFO here, /dev/null in real life) is written
    to, never replaced by a renamed temporary file."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def drain() -> None:
        with open(fifo, "rb") as f:
            got.append(f.read())

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    result = CliRunner().invoke(
        main, ["parse", "-", "-o", str(fifo)], input=urlset("<loc>https://e.com/x</loc>")
    )
    reader.join(10)
    assert result.exit_code == 0, result.output
    assert fifo.is_fifo()
    assert got and b'"loc":"https://e.com/x"' in got[0]


def test_arrow_without_pandas_keeps_pandas_out_of_a_process_of_our_own(tmp_path: Path) -> None:
    # pyarrow imports pandas at its first conversion where it is installed: 0.2 s and ~60 MB for nothing
    # the harvest CLI, its Ray actors and the parse writer child use. A stand-in pandas (first on the
    # path) notes each import, so the test holds whether or not pandas is installed.
    fake = tmp_path / "pandas"
    fake.mkdir()
    marker = tmp_path / "imported"
    (fake / "__init__.py").write_text(
        f"open({str(marker)!r}, 'a').write('x')\nraise ImportError('the stand-in pandas')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    convert = (
        "import datetime as dt\n"
        "pa.array(['x', None]); pa.array([0.5, None]); pa.array([dt.datetime(2024, 1, 1)])\n"
    )
    ours = (
        "from sitemapkit.reader.parquet import arrow_without_pandas\n"
        "import pyarrow as pa\n"
        "arrow_without_pandas()\n"
    )
    proc = subprocess.run([sys.executable, "-c", ours + convert], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    # the control: without it, pyarrow does try pandas (or the assertion above could not fail)
    proc = subprocess.run(
        [sys.executable, "-c", "import pyarrow as pa\n" + convert], env=env, capture_output=True
    )
    assert proc.returncode == 0 and marker.exists()
