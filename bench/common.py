"""Shared benchmark plumbing: run a contender in a fresh process, report throughput and peak RSS.

Each measurement runs in its own Python (or Node) process so that peak RSS belongs to that contender alone.
Peak RSS is VmHWM from /proc/self/status: unlike getrusage's ru_maxrss it is not inherited across exec.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

WORK = Path(__file__).resolve().parent / ".work"

_PY_WRAPPER = """
import json, sys, time
t0 = time.perf_counter()
ns = {{}}
exec(compile({code!r}, "<bench>", "exec"), ns)
count = ns["result"]
elapsed = time.perf_counter() - t0
peak_kb = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print("BENCH_RESULT " + json.dumps({{"count": count, "seconds": elapsed, "peak_kb": peak_kb}}))
"""


@dataclass
class Result:
    name: str
    count: int
    seconds: float
    peak_mb: float
    note: str = ""
    cpu: float = 0.0
    """User + system CPU seconds of the whole process (threads included): steadier than wall time on a
    busy machine, but blind to work done in parallel."""

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds else 0.0


def run_python(name: str, code: str, *, python: str = sys.executable, note: str = "") -> Result:
    """Run `code` (which must set a variable `result` to the item count) in a fresh interpreter."""
    wrapper = _PY_WRAPPER.format(code=textwrap.dedent(code))
    return _run(name, [python, "-c", wrapper], note)


def run_command(name: str, argv: list[str], *, note: str = "", cwd: Path | None = None) -> Result:
    """Run a command that prints `BENCH_RESULT {"count","seconds","peak_kb"}` on its last line."""
    return _run(name, argv, note, cwd)


_CLI_WRAPPER = """
import atexit, sys
def _peak():
    kb = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    sys.stderr.write("\\nBENCH_PEAK_KB %d\\n" % kb)
atexit.register(_peak)
sys.argv = {argv!r}
from sitemapkit.cli import main
sys.exit(main())
"""


def run_cli(
    name: str, args: list[str], stdout: Path, count: Callable[[Path], int], *, note: str = ""
) -> Result:
    """Run `sitemapkit ARGS > stdout` as a whole process, as the console script does: the time is the
    wall time from start to exit (interpreter start-up and imports included), the peak is the process's
    VmHWM at exit, or if larger the peak of the whole process tree's RSS (its child processes included,
    such as the gzip process of `generate`), sampled every 10 ms. `count(stdout)` says how many items the
    output holds."""
    argv = [sys.executable, "-c", _CLI_WRAPPER.format(argv=["sitemapkit", *args])]
    stdout.unlink(missing_ok=True)  # (truncating the last run's file would be charged to this one)
    os.sync()  # the earlier runs' output written back first (see `_run`)
    t0, cpu0 = time.perf_counter(), _children_cpu()
    with open(stdout, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, text=True)
        tree_kb = 0
        while proc.poll() is None:
            tree_kb = max(tree_kb, _tree_rss_kb(proc.pid))
            time.sleep(0.01)
        assert proc.stderr is not None
        err = proc.stderr.read()
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    peaks = [line for line in err.splitlines() if line.startswith("BENCH_PEAK_KB ")]
    if proc.returncode != 0 or not peaks:
        tail = err.strip().splitlines()[-5:]
        return Result(name, 0, wall, 0.0, "FAILED: " + " | ".join(tail))
    peak_kb = max(int(peaks[-1].split()[1]), tree_kb)
    return Result(name, count(stdout), wall, peak_kb / 1024, note, cpu)


def _tree_rss_kb(pid: int) -> int:
    """The resident memory of process `pid` and all its descendants, from /proc (0 where unreadable)."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                total += next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
            with open(f"/proc/{p}/task/{p}/children") as f:
                stack.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return total


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(name: str, argv: list[str], note: str, cwd: Path | None = None) -> Result:
    # the previous run's output written back to disk first: its write-back is not charged to this run (a
    # 240 MB JSONL file written just before otherwise throttles the next writer's 240 MB)
    os.sync()
    t0, cpu0 = time.perf_counter(), _children_cpu()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=cwd)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("BENCH_RESULT "):
            data = json.loads(line[len("BENCH_RESULT ") :])
            note = note or str(data.get("note", ""))  # a contender may say more about its run
            seconds, peak = float(data["seconds"]), data["peak_kb"] / 1024
            return Result(name, int(data["count"]), seconds, peak, note, cpu)
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
    return Result(name, 0, wall, 0.0, "FAILED: " + " | ".join(tail))


def print_table(title: str, results: list[Result], baseline: str | None = None) -> None:
    """Print one table: items, seconds, items/s, peak RSS, the ratio to `baseline`'s items/s, and the
    process's CPU seconds (start-up included)."""
    base = next((r for r in results if r.name == baseline), None)
    print(f"\n## {title}")
    print(
        f"{'contender':<34} {'items':>10} {'seconds':>8} {'items/s':>11} {'peak MB':>8} {'x base':>7}"
        f" {'cpu s':>7}  note"
    )
    for r in results:
        ratio = f"{r.rate / base.rate:.2f}" if base and base.rate and r.rate else "-"
        line = f"{r.name:<34} {r.count:>10,} {r.seconds:>8.2f} {r.rate:>11,.0f} {r.peak_mb:>8.1f} {ratio:>7}"
        line += f" {r.cpu:>7.2f}"
        print(f"{line}  {r.note}")
    sys.stdout.flush()


def serve_folder(
    folder: Path, prepare: Callable[[str], None], *, fast: bool = False
) -> tuple[subprocess.Popen[bytes], str]:
    """Serve `folder` with `python -m http.server` (or, `fast`, bench/siteserver.py: keep-alive, files in
    memory) on a free 127.0.0.1 port, in its own process.

    `prepare(base)` runs first with the server's address (`http://127.0.0.1:PORT`), to write files that
    name it. Returns the process (the caller kills it) and the address."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    prepare(base)
    argv = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(folder)]
    if fast:
        server = Path(__file__).resolve().parent / "siteserver.py"
        argv = [sys.executable, str(server), str(folder), str(port)]
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120  # the fast server first reads every file into memory
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, base
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("the local HTTP server did not start")


def write_index_templates(folder: Path, names: list[str]) -> None:
    """`sitemap_index.xml.in` listing every child in `names` and `sitemap_quarter.xml.in` listing the first
    quarter, with `{base}` where the server's address goes (filled in by `serve_folder`'s `prepare`)."""

    def index(listed: list[str]) -> str:
        entries = "".join(
            f"<sitemap><loc>{{base}}/{n}</loc><lastmod>2024-05-01</lastmod></sitemap>\n" for n in listed
        )
        ns = "http://www.sitemaps.org/schemas/sitemap/0.9"
        header = f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="{ns}">\n'
        return f"{header}{entries}</sitemapindex>\n"

    (folder / "sitemap_index.xml.in").write_text(index(names))
    (folder / "sitemap_quarter.xml.in").write_text(index(names[: max(1, len(names) // 4)]))


@contextlib.contextmanager
def busy(processes: int) -> Iterator[None]:
    """`processes` CPU-bound processes beside the run (a busy machine), stopped at the end."""
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
        for _ in range(processes)
    ]
    try:
        yield
    finally:
        for p in spinners:
            p.kill()
            p.wait()
