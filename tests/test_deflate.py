"""gzip output per compressor: the same XML whichever compresses it, stable bytes per compressor and
level, and a clean fallback to the standard zlib when zlib-ng cannot be imported."""

from __future__ import annotations

import errno
import gzip
import io
import shutil
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
    real = SitemapWriter._assemble
    waiting: list[int] = []

    def slow(self: SitemapWriter, temp: Path, header: bytes, spool: Path, worker: object) -> None:
        time.sleep(0.02)
        waiting.append(len(list(tmp_path.glob(".sitemap-*.body.*.tmp"))))
        real(self, temp, header, spool, worker)  # type: ignore[arg-type]

    monkeypatch.setattr(SitemapWriter, "_assemble", slow)
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
    worker = w._gzip_worker
    assert isinstance(worker, deflate.GzipWorker)
    worker._process.kill()
    worker._process.wait()
    for url in URLS[250:500]:
        w.add(url)
    with pytest.raises(PublishError, match="gzip process ended unexpectedly"):
        w.close()
    assert sorted(p.name for p in out.iterdir()) == ["sitemap.xml.gz"]  # as it was: no temporary left
    assert (out / "sitemap.xml.gz").read_bytes() == b"old"
