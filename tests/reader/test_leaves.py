"""`sitemapkit parse` on both cores: the sitemaps below an index are parsed and formatted by leaf worker
processes (`reader.leaves`, `Reader.parts`), and the output, the diagnostics (their order too) and the tree
are what the walk gives when it parses everything itself, for every kind of sitemap a walk meets: gzip,
text, feeds, extensions, bad entries, a nested index, a loop, a 404, a redirect, a cross-host child, a body
cut by the download cap, a cut-off file, HTML, an empty body, local files."""

from __future__ import annotations

import asyncio
import gzip
import io
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.errors import UsageError
from sitemapkit.reader.export_child import write_reader
from sitemapkit.reader.leaves import LeafPool, LeafWorkerError
from sitemapkit.reader.walk import read
from tests.reader.test_export_child import _children_of
from tests.support.localserver import LocalServer
from tests.support.rawserver import RawServer
from tests.support.sitemaps import HEAD, NS

HELD_ARGS = ("--timeout", "600", "--workers", "2")
"""For runs whose answers are held: the client does not give up first; two leaf workers on any machine."""
CAP = 40_000
"""The download cap of these walks: `big.xml` is over it."""


def _urls(n: int, start: int = 0, base: str = "https://www.example.com") -> str:
    return "".join(
        f"<url><loc>{base}/p/{i}.html?a=1&amp;b=2</loc><lastmod>2024-0{1 + i % 9}-1{i % 10}</lastmod>"
        f"<changefreq>weekly</changefreq><priority>0.{i % 10}</priority></url>\n"
        for i in range(start, start + n)
    )


def _urlset(body: str, extra_ns: str = "") -> str:
    return f'{HEAD}<urlset xmlns="{NS}"{extra_ns}>\n{body}</urlset>\n'


RICH = _urlset(
    "<url><loc>https://www.example.com/img</loc><image:image><image:loc>https://www.example.com/i.png"
    "</image:loc></image:image></url>\n"
    '<url><loc>https://www.example.com/en</loc><xhtml:link rel="alternate" hreflang="de" '
    'href="https://www.example.com/de"/></url>\n'
    "<url><loc>/relative</loc></url>\n"
    "<url><loc>https://www.example.com/bad-date</loc><lastmod>2024-13-45</lastmod></url>\n"
    "<url><loc>https://www.example.com/bad-priority</loc><priority>7</priority></url>\n"
    "<url><loc>https://www.example.com/ünïcode</loc></url>\n" + _urls(50, 900),
    ' xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"'
    ' xmlns:xhtml="http://www.w3.org/1999/xhtml"',
)
RSS = (
    '<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>'
    "<item><link>https://www.example.com/feed-1</link><pubDate>Mon, 01 Jan 2024 00:00:00 GMT</pubDate></item>"
    "<item><link>https://www.example.com/feed-2</link></item></channel></rss>"
)


def _serve(server: LocalServer, other: LocalServer | None = None) -> str:
    """The tree: an index of every kind of child (see the module); returns the index's URL."""
    url = server.url
    server.route("/a.xml.gz", gzip.compress(_urlset(_urls(3000)).encode()), content_type="application/gzip")
    server.route("/b.xml", RICH)
    server.route(
        "/c.txt",
        "https://www.example.com/t1\nnot a url\nhttps://www.example.com/t2\n",
        content_type="text/plain",
    )
    server.route("/d.xml", _urlset(_urls(40, 5000)))
    server.route(
        "/nested.xml",
        f'{HEAD}<sitemapindex xmlns="{NS}"><sitemap><loc>{url("/d.xml")}</loc></sitemap>'
        f"<sitemap><loc>{url('/a.xml.gz')}</loc></sitemap></sitemapindex>",
    )
    server.redirect("/moved.xml", url("/e.xml"))
    server.route("/e.xml", _urlset(_urls(20, 7000)))
    server.route("/big.xml", _urlset(_urls(800, 8000)))  # over CAP: cut, its complete entries kept
    server.route("/cut.xml", _urlset(_urls(30, 9000))[:-700])  # the file ends inside an entry
    server.route(
        "/page.html", "<!DOCTYPE html><html><body>not a sitemap</body></html>", content_type="text/html"
    )
    server.route("/empty.xml", "")
    server.route("/feed.rss", RSS, content_type="application/rss+xml")
    children = [
        url("/a.xml.gz"),
        url("/b.xml"),
        url("/c.txt"),
        url("/nested.xml"),
        url("/missing.xml"),
        url("/moved.xml"),
        url("/big.xml"),
        url("/cut.xml"),
        url("/page.html"),
        url("/empty.xml"),
        url("/feed.rss"),
        url("/index.xml"),  # itself: a loop
    ]
    if other is not None:
        other.route("/x.xml", _urlset(_urls(5)))
        children.insert(3, other.url("/x.xml"))  # another host: refused (cross-host)
    body = "".join(f"<sitemap><loc>{c}</loc></sitemap>\n" for c in children)
    return server.route("/index.xml", f'{HEAD}<sitemapindex xmlns="{NS}">\n{body}</sitemapindex>\n')


def _run(
    source: str, fmt: str, workers: int, tmp_path: Path, **options: Any
) -> tuple[bytes, list[Diagnostic], list[dict[str, Any]]]:
    """`write_reader` to a file: its bytes, the diagnostics in order, the tree's nodes."""
    seen: list[Diagnostic] = []
    reader = read(source, max_download=CAP, on_diagnostic=seen.append, **options)
    out = tmp_path / f"out-{workers}.{fmt}"
    mode = "wb" if fmt == "parquet" else "w"
    with open(out, mode, **({} if fmt == "parquet" else {"encoding": "utf-8", "newline": ""})) as f:
        write_reader(fmt, reader, f, workers=workers)
    return out.read_bytes(), seen, [node.to_dict() for node in reader.sitemaps]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_leaf_workers_give_the_bytes_diagnostics_and_tree_of_one_process(
    server: LocalServer, tmp_path: Path, fmt: str
) -> None:
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    other = LocalServer("127.0.0.2").start()
    try:
        index = _serve(server, other)
        alone = _run(index, fmt, 0, tmp_path)
        asked_alone = sorted(r.path for r in server.requests)
        server.requests.clear()
        both = _run(index, fmt, 2, tmp_path)
        asked_both = sorted(r.path for r in server.requests)
    finally:
        other.stop()
    if fmt == "parquet":  # row groups follow how the bodies came in pieces: the rows are what is promised
        pq = pytest.importorskip("pyarrow.parquet")
        tables = [pq.read_table(io.BytesIO(run[0])) for run in (alone, both)]
        assert tables[0].equals(tables[1]) and tables[0].num_rows > 3000
    else:
        assert both[0] == alone[0]
    assert both[1] == alone[1]  # the same diagnostics, in the same order
    assert both[2] == alone[2]
    assert asked_both == asked_alone  # each sitemap fetched as often (once) either way
    assert not other.requests  # the cross-host child was refused in both
    codes = {d.code for d in both[1]}
    # the tree met what it was built to show
    assert {"http-error", "download-too-large", "fetch-loop", "cross-host", "nested-index"} <= codes
    assert fmt == "parquet" or both[0].count(b"\n") > 3000


def test_leaf_workers_read_a_local_index_and_its_files(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    names = []
    for n in range(6):
        name = f"s{n}.xml" + (".gz" if n % 2 else "")
        body = _urlset(_urls(400, n * 1000)).encode()
        (site / name).write_bytes(gzip.compress(body) if n % 2 else body)
        names.append(name)
    (site / "s6.xml").write_text(RICH)
    names += ["s6.xml", "absent.xml"]
    body = "".join(f"<sitemap><loc>https://www.example.com/{n}</loc></sitemap>" for n in names)
    (site / "index.xml").write_text(f'{HEAD}<sitemapindex xmlns="{NS}">{body}</sitemapindex>')
    alone = _run(str(site / "index.xml"), "jsonl", 0, tmp_path)
    both = _run(str(site / "index.xml"), "jsonl", 2, tmp_path)
    assert both == alone
    assert alone[0].count(b"\n") == 6 * 400 + 55


def test_the_part_files_go_and_the_folder_stays_the_callers(server: LocalServer, tmp_path: Path) -> None:
    index = _serve(server)
    folder = tmp_path / "parts"
    folder.mkdir(mode=0o700)
    reader = read(index, max_download=CAP)
    items = list(reader.parts("jsonl", folder, workers=2))
    parts = [i for i in items if i.__class__.__name__ == "Part"]
    assert parts and all(Path(p.path).parent == folder for p in parts)  # type: ignore[union-attr]
    assert len(parts) == len(items) and sum(len(p) for p in parts) == reader.count  # every leaf a worker's
    # no body is left; each part is the writer's to copy and remove
    assert sorted(p.name for p in folder.iterdir()) == sorted(Path(p.path).name for p in parts)  # type: ignore[union-attr]


# --- hypothesis: any mix of children ---------------------------------------------------------------------

_BODIES = {
    "gz": (gzip.compress(_urlset(_urls(120)).encode()), "application/gzip"),
    "plain": (_urlset(_urls(60, 300)).encode(), "application/xml"),
    "rich": (RICH.encode(), "application/xml"),
    "text": (b"https://www.example.com/t\nbad\n", "text/plain"),
    "html": (b"<html><body>x</body></html>", "text/html"),
    "cut": (_urlset(_urls(30, 600)).encode()[:-500], "application/xml"),
    "empty": (b"", "application/xml"),
    "missing": (b"", ""),
}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.sampled_from(sorted(_BODIES)), min_size=1, max_size=9))
def test_any_mix_of_children_reads_the_same_with_workers(
    server: LocalServer, tmp_path_factory: pytest.TempPathFactory, kinds: list[str]
) -> None:
    tmp = tmp_path_factory.mktemp("mix")
    server.routes.clear()
    children = []
    for n, kind in enumerate(kinds):
        body, content_type = _BODIES[kind]
        path = f"/{n}-{kind}.xml"
        if kind != "missing":
            server.route(path, body, content_type=content_type)
        children.append(server.url(path))
    body = "".join(f"<sitemap><loc>{c}</loc></sitemap>" for c in children)
    index = server.route("/index.xml", f'<sitemapindex xmlns="{NS}">{body}</sitemapindex>')
    assert _run(index, "jsonl", 2, tmp) == _run(index, "jsonl", 0, tmp)


# --- the CLI ---------------------------------------------------------------------------------------------


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "sitemapkit", "parse", *args],
        capture_output=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_cli_workers_same_output_and_messages(server: LocalServer, tmp_path: Path) -> None:
    index = _serve(server)
    runs = {}
    for workers in ("1", "2"):
        out = tmp_path / f"{workers}.csv"
        done = _cli(
            index, "--format", "csv", "--max-download", str(CAP), "--workers", workers, "-o", str(out)
        )
        assert done.returncode == 0, done.stderr
        runs[workers] = (out.read_bytes(), done.stderr)
    assert runs["1"] == runs["2"]
    assert b"Traceback" not in runs["2"][1]


class HeldRun:
    """`sitemapkit parse -o FILE --workers 2` of `_serve`'s tree, in a TMPDIR of its own, with the answer
    for `/c.txt` held until `release` is set (or a minute passes); as a context, the run is ended and the
    answer released on the way out."""

    def __init__(self, server: LocalServer, tmp_path: Path) -> None:
        index = _serve(server)
        self.server = server
        self.release = threading.Event()
        route = server.routes["/c.txt"]

        def held(_: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
            self.release.wait(60)
            return 200, route.headers, route.body

        server.handle("/c.txt", held)
        self.temp = tmp_path / "temp"
        self.temp.mkdir()
        self.out = tmp_path / "urls.jsonl"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sitemapkit", "parse", index, *HELD_ARGS, "-o", str(self.out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "TMPDIR": str(self.temp)},
        )

    def workers(self) -> list[int]:
        """Once the run asked for the held sitemap (maybe ahead of its turn) and has its two leaf workers
        (the sitemaps before it handed to them): their process ids."""
        deadline = time.monotonic() + 60  # a hang guard, not a timing claim
        found: list[int] = []
        while "/c.txt" not in {r.path for r in self.server.requests} or len(found) < 2:
            assert time.monotonic() < deadline and self.proc.poll() is None, "the run never got there"
            time.sleep(0.05)
            found = [pid for pid, c in _children_of(self.proc.pid).items() if "sitemapkit.reader.leaves" in c]
        return found

    def __enter__(self) -> HeldRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.proc.kill()
        self.proc.wait()


def test_cli_ctrl_c_stops_the_leaf_workers_and_leaves_no_file(server: LocalServer, tmp_path: Path) -> None:
    """While the third sitemap's answer is held, the run has its leaf workers; Ctrl-C ends them and
    removes their folder (in the run's TMPDIR)."""
    with HeldRun(server, tmp_path) as run:
        workers = run.workers()
        assert len(workers) == 2
        assert [p.name[:17] for p in run.temp.iterdir()] == ["sitemapkit-parts-"]
        run.proc.send_signal(signal.SIGINT)
        _, err = run.proc.communicate(timeout=30)
    assert run.proc.returncode == 130, err
    assert b"Traceback" not in err
    assert not run.out.exists()
    assert not list(run.temp.iterdir())  # the parts' folder went too
    for pid in workers:
        stat = Path(f"/proc/{pid}/stat")
        assert not stat.exists(), (stat.read_text() if stat.exists() else "", err)


# --- a worker that dies ----------------------------------------------------------------------------------


def test_a_worker_that_dies_is_a_clear_error(tmp_path: Path) -> None:
    async def go() -> str:
        pool = LeafPool("jsonl", 1, 10_000_000, str(tmp_path))
        try:
            job = await pool.begin("https://www.example.com/s.xml")
            assert job is not None
            job.feed(_urlset(_urls(10)).encode()[:200])
            os.kill(pool.pids()[0], signal.SIGKILL)
            with pytest.raises(LeafWorkerError) as caught:
                job.end("close", False)
                await job.result()
            return str(caught.value)
        finally:
            await pool.close()

    message = asyncio.run(go())
    assert "parse worker" in message and "ended" in message
    assert not list(tmp_path.iterdir())  # its body file went with the job


def test_parts_need_a_known_format(tmp_path: Path) -> None:
    (tmp_path / "x.xml").write_text(_urlset(_urls(1)))
    with pytest.raises(UsageError, match="format"):
        LeafPool("xml", 2, 1, str(tmp_path))
    with pytest.raises(UsageError, match="format"):
        read(str(tmp_path / "x.xml")).parts("xml", tmp_path)
    with pytest.raises(UsageError, match="workers"):
        read(str(tmp_path / "x.xml")).parts("csv", tmp_path, workers=-1)


def test_output_goes_on_while_a_later_body_is_held(tmp_path: Path) -> None:
    """The second sitemap answers at once but sends half its body, then waits: the first one's entries
    (parsed by a leaf worker) come out meanwhile, as they do when the walk parses everything itself."""
    release, finished = threading.Event(), threading.Event()
    second = _urlset(_urls(500, 1000)).encode()

    def answer(conn: socket.socket) -> None:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\n"
            + f"Content-Length: {len(second)}\r\n\r\n".encode()
            + second[: len(second) // 2]
        )
        release.wait(60)
        conn.sendall(second[len(second) // 2 :])
        finished.set()

    files: dict[str, bytes] = {}
    raw = RawServer(answer, files, answered=frozenset({"/two.xml"}))
    files["/one.xml"] = _urlset(_urls(300)).encode()
    body = "".join(f"<sitemap><loc>{raw.url(p)}</loc></sitemap>" for p in ("/one.xml", "/two.xml"))
    files["/index.xml"] = f'<sitemapindex xmlns="{NS}">{body}</sitemapindex>'.encode()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sitemapkit", "parse", raw.url("/index.xml"), *HELD_ARGS],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith(b'{"loc":"https://www.example.com/p/0.html')
        assert not finished.is_set()  # the first line came out before the second body's end
        workers = [pid for pid, c in _children_of(proc.pid).items() if "sitemapkit.reader.leaves" in c]
        assert len(workers) == 2  # the first sitemap was a worker's
        release.set()
        rest = proc.stdout.read()  # not communicate(): it would skip what readline() buffered
        assert proc.wait(60) == 0, proc.stderr.read()  # type: ignore[union-attr]
        assert len(rest.splitlines()) == 799
    finally:
        release.set()
        proc.kill()
        proc.communicate()
        raw.stop()


# --- what a hostile review found -------------------------------------------------------------------------


def test_a_killed_worker_is_one_line_and_publishes_nothing(server: LocalServer, tmp_path: Path) -> None:
    with HeldRun(server, tmp_path) as run:
        for pid in run.workers():
            os.kill(pid, signal.SIGKILL)
        run.release.set()
        _, err = run.proc.communicate(timeout=60)
    assert run.proc.returncode == 1, err
    lines = err.decode().strip().splitlines()
    assert "parse worker" in lines[-1] and "Traceback" not in err.decode(), err
    assert not any("pipe closed" in line for line in lines)
    assert not run.out.exists() and not list(run.temp.iterdir())


def test_two_quick_ctrl_c_give_no_traceback(server: LocalServer, tmp_path: Path) -> None:
    with HeldRun(server, tmp_path) as run:
        run.workers()
        run.proc.send_signal(signal.SIGINT)
        time.sleep(0.02)
        run.proc.send_signal(signal.SIGINT)
        _, err = run.proc.communicate(timeout=60)
    assert run.proc.returncode == 130, err
    assert b"Traceback" not in err and b"Exception ignored" not in err, err


def test_a_full_temporary_folder_is_one_line(server: LocalServer, tmp_path: Path) -> None:
    """TMPDIR on a 256 KiB file system: a body of 400 KB cannot be handed over; one line says so and what
    to do, and `--workers 1` reads it all."""
    mount = tmp_path / "small"
    mount.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True
        ).returncode
    ):
        pytest.skip("cannot mount a small tmpfs here")
    try:
        server.route("/big.xml", _urlset(_urls(2000)))
        server.route("/small.xml", _urlset(_urls(10, 5000)))
        body = "".join(f"<sitemap><loc>{server.url(p)}</loc></sitemap>" for p in ("/big.xml", "/small.xml"))
        index = server.route("/index.xml", f'<sitemapindex xmlns="{NS}">{body}</sitemapindex>')
        env = {"TMPDIR": str(mount)}
        both = _cli(index, "--workers", "2", env=env)
        assert both.returncode == 1, both.stderr
        assert b"Traceback" not in both.stderr
        assert b"--workers 1" in both.stderr.strip().splitlines()[-1]
        assert not list(mount.iterdir())
        one = _cli(index, "--workers", "1", env=env)
        assert one.returncode == 0 and one.stdout.count(b"\n") == 2010
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_many_diagnostics_in_a_leaf_read_the_same(server: LocalServer, tmp_path: Path) -> None:
    """A leaf with 20,000 bad entries and a cut end: the worker streams its diagnostics through a file,
    and they come out in the walk's order, the read ones before what the walk said about the cut."""
    bad = "".join(f"<url><loc>/relative/{i}</loc></url>\n" for i in range(20_000))
    server.route("/bad.xml", _urlset(bad + _urls(100)))
    server.route("/ok.xml", _urlset(_urls(50, 900)))
    body = "".join(
        f"<sitemap><loc>{server.url(p)}</loc></sitemap>" for p in ("/ok.xml", "/bad.xml", "/ok.xml")
    )
    index = server.route("/index.xml", f'<sitemapindex xmlns="{NS}">{body}</sitemapindex>')
    runs = [
        _cli(index, "--workers", w, "--max-diagnostics", "100000", "--max-download", "600000") for w in "12"
    ]
    assert runs[0].returncode == runs[1].returncode == 0
    assert runs[0].stdout == runs[1].stdout and runs[0].stderr == runs[1].stderr
    assert runs[1].stderr.count(b"\n") > 15_000 and b"download-too-large" in runs[1].stderr


def test_the_folders_of_killed_runs_are_swept(server: LocalServer, tmp_path: Path) -> None:
    temp = tmp_path / "temp"
    temp.mkdir()
    dead = temp / "sitemapkit-parts-999999999-abc"  # no such process
    dead.mkdir()
    (dead / "1.jsonl").write_text("left by a killed run\n")
    alive = temp / f"sitemapkit-parts-{os.getpid()}-abc"  # this test's process: alive
    alive.mkdir()
    index = _serve(server)
    done = _cli(index, "--workers", "2", env={"TMPDIR": str(temp)})
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in temp.iterdir()) == [alive.name]
