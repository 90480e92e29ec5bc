"""`sitemapkit parse` writes its output in a child process: the same bytes as this process writes, and
every failure of the child (a full disk, a closed pipe, a dead child, a broken pyarrow, Ctrl-C) a clean
message, with no partial file left."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from sitemapkit.core.model import UrlEntry
from sitemapkit.reader.export import write_csv, write_jsonl
from sitemapkit.reader.export_child import ChildWriter, ChildWriterError, write_entries
from sitemapkit.reader.runs import UrlRun
from sitemapkit.reader.walk import aread, read
from tests.reader.test_runs import _serve_tree
from tests.support.localserver import LocalServer

SRC = str(Path(__file__).resolve().parents[2] / "src")


def cli(*args: str, env: dict[str, str] | None = None, **kw: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "sitemapkit", "parse", *args],
        capture_output=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        **kw,  # type: ignore[call-overload]
    )


def _children_of(pid: int) -> dict[int, str]:
    """The live processes whose parent is `pid`: their command lines by process id."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError, IndexError):
            continue
    return found


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_the_child_writes_what_this_process_writes(server: LocalServer, tmp_path: Path, fmt: str) -> None:
    index = _serve_tree(server)
    expected = io.StringIO()
    (write_csv if fmt == "csv" else write_jsonl)(list(read(index)), expected)
    out = tmp_path / f"urls.{fmt}"
    proc = cli(index, "--format", fmt, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_text("utf-8") == expected.getvalue()
    assert len(expected.getvalue().splitlines()) > 2000
    # and to standard output (the child writes to the descriptor it inherits)
    proc = cli(index, "--format", fmt)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == expected.getvalue()
    assert not list(tmp_path.glob(".*.tmp"))


def test_the_child_writes_parquet_as_this_process_does(server: LocalServer, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    from sitemapkit.reader.parquet import write_parquet

    index = _serve_tree(server)
    write_parquet(list(read(index)), str(tmp_path / "here.parquet"))
    proc = cli(index, "--format", "parquet", "-o", str(tmp_path / "child.parquet"))
    assert proc.returncode == 0, proc.stderr
    assert pq.read_table(tmp_path / "child.parquet").equals(pq.read_table(tmp_path / "here.parquet"))


def test_a_full_disk_is_a_clean_error(server: LocalServer) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    proc = cli(_serve_tree(server), "-o", "/dev/full")
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert "/dev/full: cannot write (No space left on device)" in err
    assert "Traceback" not in err


def test_a_closed_pipe_ends_the_run_quietly(server: LocalServer) -> None:
    index = _serve_tree(server)
    proc = subprocess.Popen(
        [sys.executable, "-m", "sitemapkit", "parse", index],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b'{"loc":')
    proc.stdout.close()  # as `| head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert "Traceback" not in err and "Broken pipe" not in err


def test_a_broken_pyarrow_is_a_usage_error(server: LocalServer, tmp_path: Path) -> None:
    """pyarrow is found (so the command starts) but cannot be imported by the process that writes."""
    fake = tmp_path / "fake" / "pyarrow"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('libarrow.so: cannot open shared object file')\n")
    out = tmp_path / "urls.parquet"
    out.write_bytes(b"old")
    path = os.pathsep.join([str(fake.parent), SRC, os.environ.get("PYTHONPATH", "")])
    proc = cli(_serve_tree(server), "--format", "parquet", "-o", str(out), env={"PYTHONPATH": path})
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "pip install 'sitemapkit[parquet]'" in err and "Traceback" not in err
    assert out.read_bytes() == b"old" and not list(tmp_path.glob(".*.tmp"))  # the old file kept


def test_a_child_that_dies_is_an_error(tmp_path: Path) -> None:
    entries = [UrlEntry(f"https://e.com/{i}") for i in range(20_000)]
    with open(tmp_path / "out.jsonl", "w") as out:
        writer = ChildWriter.start("jsonl", out)
        assert writer is not None

        def dying() -> Iterator[UrlEntry]:
            for i, entry in enumerate(entries):
                if i == 5000:
                    writer.process.kill()
                    writer.process.wait()
                yield entry

        with pytest.raises(ChildWriterError, match="ended with status -9"):
            writer.write(dying())
    assert writer.process.returncode == -9


def test_without_a_file_descriptor_the_writing_stays_here() -> None:
    out = io.StringIO()
    assert ChildWriter.start("jsonl", out) is None
    run = UrlRun("https://e.com/s.xml")
    run.locs, run.lastmods, run.changefreqs, run.priorities = ["https://e.com/a"], [None], [None], [None]
    assert write_entries("jsonl", [run, UrlEntry("https://e.com/b")], out) == 2
    assert out.getvalue().count('"loc":') == 2


class HeldSecond:
    """The tree of `_serve_tree`, its second sitemap held (unanswered) until `release` is set (or two minutes
    pass): what a run does before that answer it does whatever the machine's speed. Runs are given `ARGS`,
    so that the client does not give up on the held answer first."""

    ARGS = ("--timeout", "600")

    def __init__(self, server: LocalServer) -> None:
        self.index = _serve_tree(server)
        self.server = server
        self.release = threading.Event()
        self.answered = False
        body = server.routes["/two.xml.gz"].body

        def held(_: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
            self.release.wait(120)
            self.answered = True
            return 200, {"Content-Type": "application/gzip"}, body

        server.handle("/two.xml.gz", held)

    def wait_until_both_asked(self, proc: subprocess.Popen[bytes]) -> None:
        """Until the run has asked for both sitemaps: the first one read, the second one awaited."""
        deadline = time.monotonic() + 60  # a hang guard, not a timing claim
        while not {"/one.xml", "/two.xml.gz"} <= {r.path for r in self.server.requests}:
            assert time.monotonic() < deadline and proc.poll() is None, (
                "the run never asked for both sitemaps"
            )
            time.sleep(0.05)


@pytest.fixture
def held_second(server: LocalServer) -> Iterator[HeldSecond]:
    held = HeldSecond(server)
    yield held
    held.release.set()


def test_ctrl_c_stops_the_child_and_publishes_nothing(held_second: HeldSecond, tmp_path: Path) -> None:
    out = tmp_path / "urls.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sitemapkit", "parse", held_second.index, *HeldSecond.ARGS, "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    held_second.wait_until_both_asked(proc)
    child = [pid for pid, c in _children_of(proc.pid).items() if "export_child" in c]
    assert child, "the child writer did not start"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert not held_second.answered  # stopped while the second sitemap was awaited
    assert proc.returncode == 130, err
    assert b"interrupted" in err and b"Traceback" not in err
    assert not out.exists() and not list(tmp_path.glob(".*.tmp"))
    assert not Path(f"/proc/{child[0]}").exists()  # stopped and reaped, not left behind


# --- what a hostile review found -------------------------------------------------------------------------


def _fake_pyarrow(folder: Path, body: str) -> dict[str, str]:
    """An environment where `import pyarrow` runs `body` (a broken install)."""
    (folder / "pyarrow").mkdir(parents=True)
    (folder / "pyarrow" / "__init__.py").write_text(body)
    return {"PYTHONPATH": os.pathsep.join([str(folder), SRC, os.environ.get("PYTHONPATH", "")])}


def test_output_streams_while_the_walk_goes_on(held_second: HeldSecond) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "sitemapkit", "parse", held_second.index, *HeldSecond.ARGS],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    try:
        assert proc.stdout.readline().startswith(b'{"loc":')
        assert not held_second.answered  # the first line came out before the second sitemap's answer
        held_second.release.set()
        rest = proc.stdout.read()
        assert proc.wait(60) == 0
        assert (
            len(rest.splitlines()) == 2100
        )  # the second sitemap's entries too: it was awaited, not abandoned
    finally:
        proc.kill()
        proc.wait()


def test_a_killed_parent_leaves_no_output_that_looks_complete(
    held_second: HeldSecond, tmp_path: Path
) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "k.parquet"
    with open(out, "wb") as f:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "sitemapkit",
                "parse",
                held_second.index,
                *HeldSecond.ARGS,
                "--format",
                "parquet",
            ],
            stdout=f,
            stderr=subprocess.DEVNULL,
        )
    held_second.wait_until_both_asked(proc)
    child = [pid for pid, c in _children_of(proc.pid).items() if "export_child" in c]
    assert child, "the child writer did not start"
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 30  # a hang guard
    while Path(f"/proc/{child[0]}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # an orphan now: it sees the end of its input
    assert not Path(f"/proc/{child[0]}").exists()
    with pytest.raises(Exception, match=r"(?i)parquet|magic|footer|size"):
        pq.read_table(out)


def test_output_file_with_standard_input_closed(server: LocalServer, tmp_path: Path) -> None:
    out = tmp_path / "urls.jsonl"
    proc = cli(_serve_tree(server), "-o", str(out), stdin=None, preexec_fn=lambda: os.close(0))
    assert proc.returncode == 0, proc.stderr
    assert len(out.read_text().splitlines()) == 2101


def test_standard_output_closed_is_a_clean_error(server: LocalServer) -> None:
    proc = cli(_serve_tree(server), preexec_fn=lambda: os.close(1))
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    assert "standard output is closed" in err and "Traceback" not in err


def test_a_child_that_fails_otherwise_says_it_in_one_line(server: LocalServer, tmp_path: Path) -> None:
    out = tmp_path / "keep.parquet"
    out.write_bytes(b"old")
    env = _fake_pyarrow(tmp_path / "fake", "raise RuntimeError('boom')\n")
    proc = cli(_serve_tree(server), "--format", "parquet", "-o", str(out), env=env)
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    assert f"{out}: cannot write (RuntimeError: boom)" in err and "Traceback" not in err
    assert out.read_bytes() == b"old"


def test_a_child_that_says_much_does_not_hang_and_is_noticed_at_once(
    held_second: HeldSecond, tmp_path: Path
) -> None:
    env = _fake_pyarrow(
        tmp_path / "fake", "import sys\nsys.stderr.write('x' * 200_000)\nraise ImportError('no libarrow')\n"
    )
    proc = cli(
        held_second.index, *HeldSecond.ARGS, "--format", "parquet", "-o", str(tmp_path / "x.parquet"), env=env
    )
    assert proc.returncode == 2, proc.stderr[-500:]
    assert b"pip install 'sitemapkit[parquet]'" in proc.stderr
    assert not held_second.answered  # at the first batch, not after the second sitemap's answer


def test_the_child_keeps_the_parents_isolation(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "sitemapkit"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise SystemExit('SHADOWED sitemapkit imported')\n")
    source = tmp_path / "urls.txt"
    source.write_text("https://example.com/a\nhttps://example.com/b\n")
    proc = subprocess.run(
        [sys.executable, "-I", "-m", "sitemapkit", "parse", str(source), "-o", str(tmp_path / "o.jsonl")],
        capture_output=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(shadow.parent)},
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "o.jsonl").read_text().count('"loc"') == 2


def test_nothing_read_keeps_the_old_file(server: LocalServer, tmp_path: Path) -> None:
    out = tmp_path / "urls.jsonl"
    out.write_text("old\n")
    proc = cli(server.url("/missing.xml"), "-o", str(out))
    assert proc.returncode == 1
    assert b"nothing could be read" in proc.stderr
    assert out.read_text() == "old\n" and not list(tmp_path.glob(".*.tmp"))


def test_a_reader_is_read_one_way(server: LocalServer) -> None:
    index = _serve_tree(server)
    reader = read(index)
    next(iter(reader.runs()))
    with pytest.raises(RuntimeError, match="one way"):
        iter(reader)
    reader.close()
    reader = read(index)
    next(iter(reader))
    with pytest.raises(RuntimeError, match="one way"):
        reader.runs()
    reader.close()

    async def both() -> None:
        async with aread(index) as areader:
            areader.batches(runs=True)
            with pytest.raises(RuntimeError, match="one way"):
                areader.batches()

    asyncio.run(both())


def test_a_file_name_that_is_not_utf8_is_shown_not_fatal(tmp_path: Path) -> None:
    """The entries' `sitemap` and the tree name the file as text any output holds (U+FFFD for the byte
    that is not UTF-8), instead of failing to write it."""
    name = os.fsdecode(b"caf\xe9.txt")
    (tmp_path / name).write_text("https://example.com/a\n")
    proc = cli(str(tmp_path / name))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["sitemap"] == str(tmp_path / "caf\ufffd.txt")
    proc = cli(str(tmp_path / name), "--sitemaps", "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["url"] == str(tmp_path / "caf\ufffd.txt")
