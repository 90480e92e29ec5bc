"""gzip output per compressor: the same XML whichever compresses it, stable bytes per compressor and
level, and a clean fallback to the standard zlib when zlib-ng cannot be imported."""

from __future__ import annotations

import errno
import gzip
import io
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sitemapkit.core.errors import PublishError
from sitemapkit.generator import deflate
from sitemapkit.generator.deflate import COMPRESSORS, ENV, GzipWriter, compressor
from sitemapkit.generator.writer import SitemapWriter

BASE = "https://example.com/"
URLS = [f"{BASE}catalog/item-{i}?colour=blue&size={i % 40}" for i in range(2_000)]


def write_set(out: Path, level: int = 6) -> dict[str, bytes]:
    with SitemapWriter(out, BASE, gzip=True, gzip_level=level, max_urls=700) as w:
        for i, url in enumerate(URLS):
            w.add(url, lastmod=f"2026-{i % 12 + 1:02d}-{i % 28 + 1:02d}")
    return {p.name: p.read_bytes() for p in sorted(out.glob("*.xml.gz"))}


@pytest.mark.parametrize("level", [1, 6, 9])
def test_each_compressor_writes_the_same_xml_and_stable_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, level: int
) -> None:
    pytest.importorskip("zlib_ng")  # a dependency: installed wherever the wheel exists
    outputs: dict[str, dict[str, bytes]] = {}
    for name in COMPRESSORS:
        monkeypatch.setenv(ENV, name)
        assert compressor() == name
        first = write_set(tmp_path / f"{name}-a", level)
        again = write_set(tmp_path / f"{name}-b", level)
        assert first == again  # byte-identical reruns for a compressor and level
        assert len(first) == 4  # three sitemaps and the index
        outputs[name] = first
        if shutil.which("gzip"):
            for path in (tmp_path / f"{name}-a").glob("*.gz"):
                subprocess.run(["gzip", "-t", str(path)], check=True)
    xml = {name: {k: gzip.decompress(v) for k, v in files.items()} for name, files in outputs.items()}
    assert xml["zlib-ng"] == xml["zlib"]
    assert b"&amp;size=" in xml["zlib"]["sitemap-1.xml.gz"]


def test_zlib_output_is_what_gzip_module_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the standard zlib, the bytes are gzip.GzipFile's (no name, mtime 0), as before zlib-ng."""
    monkeypatch.setenv(ENV, "zlib")
    data = "".join(f"<url><loc>{u}</loc></url>\n" for u in URLS).encode()
    for level in (0, 1, 6, 9):
        ours, theirs = io.BytesIO(), io.BytesIO()
        chunks = [data[i : i + 10_000] for i in range(0, len(data), 10_000)]  # level 0 depends on them
        with GzipWriter(ours, level) as z:
            for chunk in chunks:
                z.write(chunk)
        with gzip.GzipFile(filename="", mode="wb", fileobj=theirs, compresslevel=level, mtime=0) as g:
            for chunk in chunks:
                g.write(chunk)
        assert ours.getvalue() == theirs.getvalue()


def run_blocked(module: str, code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter where importing `module` fails as if it were not installed."""
    prelude = f"""
        import sys
        sys.modules[{module!r}] = None  # makes `import {module}` raise ImportError
    """
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(prelude) + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )


def test_without_zlib_ng_gzip_falls_back_to_zlib(tmp_path: Path) -> None:
    code = f"""
        import gzip, pathlib
        from sitemapkit.generator.deflate import compressor
        from sitemapkit.generator.writer import SitemapWriter
        assert compressor() == "zlib", compressor()
        with SitemapWriter("out", {BASE!r}, gzip=True) as w:
            w.add("{BASE}a")
        print(gzip.decompress(pathlib.Path("out/sitemap.xml.gz").read_bytes()).count(b"<url>"))
    """
    proc = run_blocked("zlib_ng", code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "1"


def test_asking_for_a_missing_compressor_falls_back_to_zlib(tmp_path: Path) -> None:
    code = """
        import os
        os.environ["SITEMAPKIT_DEFLATE"] = "zlib-ng"
        from sitemapkit.generator.deflate import compressor
        print(compressor())
    """
    proc = run_blocked("zlib_ng", code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "zlib"


def test_files_waiting_for_the_compressor_are_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow compressor holds the main loop back: at most two finished bodies wait on disk for it, however
    many files the run writes (so memory and temporary space stay flat)."""
    from sitemapkit.generator.assembly import Assembler

    real = Assembler.assemble
    waiting: list[int] = []

    def slow(self: Assembler, out: object, header: bytes, spool: Path, worker: object) -> None:
        time.sleep(0.02)
        waiting.append(len(list(tmp_path.glob(".sitemap-*.body.*.tmp"))))
        real(self, out, header, spool, worker)  # type: ignore[arg-type]

    monkeypatch.setattr(Assembler, "assemble", slow)
    with SitemapWriter(tmp_path, BASE, gzip=True, max_urls=10) as w:
        for url in URLS[:300]:
            w.add(url)
    assert len(waiting) == 30
    # the one being compressed, two finished ones queued, and the one being filled
    assert max(waiting) <= 4
    assert len(list(tmp_path.glob("sitemap-*.xml.gz"))) == 30


# -- the gzip process ------------------------------------------------------------------------------


def test_a_multi_file_set_is_gzipped_in_a_child_process_with_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[deflate.GzipWorker] = []
    start = deflate.GzipWorker.start.__func__  # type: ignore[attr-defined]

    def spy(cls: type[deflate.GzipWorker]) -> deflate.GzipWorker | None:
        worker: deflate.GzipWorker | None = start(cls)
        if worker is not None:
            started.append(worker)
        return worker

    monkeypatch.setattr(deflate.GzipWorker, "start", classmethod(spy))
    in_child = write_set(tmp_path / "child")
    assert len(started) == 1  # one child for the whole set
    assert started[0]._process.returncode == 0  # it ended with its input
    monkeypatch.setattr(deflate.GzipWorker, "start", classmethod(lambda cls: None))
    in_thread = write_set(tmp_path / "thread")  # where no child can start: a thread, the same bytes
    assert in_child == in_thread
    assert len(in_child) == 4


def test_a_single_file_is_gzipped_without_a_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(cls: type[deflate.GzipWorker]) -> None:
        raise AssertionError("no child process for a one-file set")

    monkeypatch.setattr(deflate.GzipWorker, "start", classmethod(refuse))
    with SitemapWriter(tmp_path, BASE, gzip=True) as w:
        w.add(BASE + "a")
    assert gzip.decompress((tmp_path / "sitemap.xml.gz").read_bytes()).count(b"<url>") == 1


def test_a_failed_job_in_the_child_is_the_oserror_it_met(tmp_path: Path) -> None:
    worker = deflate.GzipWorker.start()
    assert worker is not None
    try:
        with pytest.raises(OSError) as info:
            worker.run(str(tmp_path / "out.gz"), b"<h>", str(tmp_path / "missing"), b"</h>", 6, compressor())
        assert info.value.errno == errno.ENOENT
        assert info.value.filename == str(tmp_path / "missing")
        (tmp_path / "body").write_bytes(b"<x/>")  # and the child goes on with the next job
        worker.run(str(tmp_path / "out.gz"), b"<h>", str(tmp_path / "body"), b"</h>", 6, compressor())
        assert gzip.decompress((tmp_path / "out.gz").read_bytes()) == b"<h><x/></h>"
        assert not (tmp_path / "body").exists()
    finally:
        worker.close()


def test_a_child_that_dies_fails_the_run_and_publishes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "sitemap.xml.gz").write_bytes(b"old")
    w = SitemapWriter(out, BASE, gzip=True, max_urls=100)
    for url in URLS[:250]:
        w.add(url)
    worker = w._assembler.worker
    assert isinstance(worker, deflate.GzipWorker)
    worker._process.kill()
    worker._process.wait()
    added = 250
    with pytest.raises(PublishError, match="gzip process ended unexpectedly"):
        for url in URLS[250:]:
            w.add(url)
            added += 1
        w.close()
    assert added < 600  # the run failed within a few files, not at the end of the input
    assert sorted(p.name for p in out.iterdir()) == ["sitemap.xml.gz"]  # as it was: no temporary left
    assert (out / "sitemap.xml.gz").read_bytes() == b"old"


@pytest.mark.skipif(os.name != "posix", reason="sessions and signals of POSIX")
def test_ctrl_c_is_the_parents_to_handle(tmp_path: Path) -> None:
    """A program that catches SIGINT and goes on keeps its run: the gzip child is out of the terminal's
    process group (a Ctrl-C never reaches it) and ignores SIGINT sent to it anyway."""
    w = SitemapWriter(tmp_path, BASE, gzip=True, max_urls=100)
    for url in URLS[:250]:
        w.add(url)
    worker = w._assembler.worker
    assert isinstance(worker, deflate.GzipWorker)
    w._assembler.wait()  # the child has answered: it is serving
    child = worker._process.pid
    assert os.getsid(child) != os.getsid(0)
    os.kill(child, signal.SIGINT)
    for url in URLS[250:400]:
        w.add(url)
    # the child has compressed a file since the signal (not "0.2 s have passed"): a SIGINT it did not
    # ignore would have ended it before that answer
    w._assembler.wait()
    assert worker._process.poll() is None and w._assembler.worker is worker
    for url in URLS[400:]:
        w.add(url)
    assert w.close().urls == len(URLS)


def test_a_full_disk_while_adding_is_a_clean_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No space left while a file fills (here every body goes to /dev/full): PublishError naming the
    problem, nothing published, no temporary file left, on the bulk lane as on the general path."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    from sitemapkit.generator.parts import Part, Parts
    from sitemapkit.generator.sources.lists import list_batches

    def full(self: Parts) -> object:
        return Part(self._temp("body"), open("/dev/full", "wb"))

    monkeypatch.setattr(Parts, "new_part", full)
    source = tmp_path / "urls.txt"
    source.write_text("".join(f"{url}\n" for url in URLS).replace("&", "-"))
    for bulk in (True, False):
        out = tmp_path / f"out-{bulk}"
        with pytest.raises(PublishError, match="No space left"), SitemapWriter(out, BASE, max_urls=100) as w:
            if bulk:
                with list_batches(str(source), w.log) as (batches, parse_line):
                    for first, lines, clean in batches:
                        w.add_lines(lines, first, parse_line, clean=clean)
            else:
                for url in URLS:
                    w.add(url)
        assert list(out.iterdir()) == []


def test_ctrl_c_during_the_renames_completes_them_then_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupt while the finished files are renamed into place waits for the renames (the set is
    published whole, never half) and is raised after, saying that the sitemaps were published."""
    from click.testing import CliRunner

    from sitemapkit.cli import main
    from sitemapkit.core.errors import InterruptedAfterPublish

    commit = SitemapWriter._commit

    def interrupted(self: SitemapWriter, renames: list[tuple[Path, Path]]) -> object:
        signal.raise_signal(signal.SIGINT)  # as if Ctrl-C came just now
        return commit(self, renames)

    monkeypatch.setattr(SitemapWriter, "_commit", interrupted)
    w = SitemapWriter(tmp_path / "api", BASE, max_urls=700)
    for url in URLS:
        w.add(url)
    with pytest.raises(InterruptedAfterPublish):
        w.close()
    assert w.result is not None and w.result.urls == len(URLS)
    assert sorted(p.name for p in (tmp_path / "api").iterdir() if not p.name.startswith(".")) == [
        "sitemap-1.xml",
        "sitemap-2.xml",
        "sitemap-3.xml",
        "sitemap.xml",
    ]
    (tmp_path / "urls.txt").write_text("".join(f"{url}\n" for url in URLS))
    out = tmp_path / "cli"
    result = CliRunner().invoke(
        main, ["generate", str(tmp_path / "urls.txt"), "--base-url", BASE, "--out", str(out)]
    )
    assert result.exit_code == 130
    assert "interrupted; it came while the finished sitemaps were being put in place" in result.output
    assert (out / "sitemap.xml").exists()
