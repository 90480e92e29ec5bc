"""core/files: the atomic writer, the log opener and the sweep, on a real file system with real processes
(kill -9, Ctrl-C), and `parse -o` through them."""

from __future__ import annotations

import gzip as gzip_module
import os
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from sitemapkit.core.files import SymlinkRefused, atomic_write, open_new_nofollow, sweep_stale_temps

SITEMAP = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n'
    b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
    + b"".join(b"<url><loc>https://e.com/%d</loc></url>\n" % i for i in range(50))
    + b"</urlset>\n"
)


def temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_atomic_write_writes_the_file_with_default_permissions(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    with atomic_write(target, "w") as f:
        f.write("héllo\n")
        assert not target.exists()  # nothing published before the block ends
        assert len(temps(tmp_path)) == 1 and temps(tmp_path)[0].startswith(".out.txt.")
    assert target.read_text(encoding="utf-8") == "héllo\n"
    mask = os.umask(0o022)
    os.umask(mask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~mask  # not mkstemp's 0600
    assert temps(tmp_path) == []


def test_atomic_write_keeps_an_existing_files_permissions(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    target.chmod(0o640)
    with atomic_write(target) as f:
        f.write(b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


@pytest.mark.parametrize("exc", [ValueError("boom"), KeyboardInterrupt()])
def test_an_exception_leaves_the_old_file_and_no_temp(tmp_path: Path, exc: BaseException) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(type(exc)), atomic_write(target, "w") as f:
        f.write("half")
        raise exc
    assert target.read_text() == "old"
    assert temps(tmp_path) == []


def test_a_symlink_at_the_output_path_is_replaced_not_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    secret = victim / "authorized_keys"
    secret.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    link = out / "sitemap.xml"
    link.symlink_to(secret)
    with atomic_write(link, "w") as f:
        f.write("attacker-controlled content\n")
    assert secret.read_text() == "precious\n"
    assert not link.is_symlink() and link.read_text() == "attacker-controlled content\n"


def test_a_symlink_planted_at_the_temporary_name_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even a temporary name an attacker could predict (forced here) is created with O_EXCL: the planted
    link makes that name fail and another one is taken; the link's target is never written."""
    secret = tmp_path / "secret"
    secret.write_text("precious\n")
    names = iter(["fixed000", "fixed001"])
    monkeypatch.setattr(tempfile, "_get_candidate_names", lambda: names)
    (tmp_path / ".out.txt.fixed000.tmp").symlink_to(secret)
    with atomic_write(tmp_path / "out.txt", "w") as f:
        f.write("new\n")
    assert secret.read_text() == "precious\n"
    assert (tmp_path / "out.txt").read_text() == "new\n"


def test_open_new_nofollow_refuses_a_symlink_naming_it(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("precious\n")
    link = tmp_path / "crawl.log"
    link.symlink_to(secret)
    with pytest.raises(SymlinkRefused) as caught:
        open_new_nofollow(link)
    assert str(link) in str(caught.value) and "symbolic link" in str(caught.value)
    assert secret.read_text() == "precious\n"
    plain = tmp_path / "plain.log"
    plain.write_text("old old old\n")
    with open_new_nofollow(plain) as f:
        f.write("new\n")
    assert plain.read_text() == "new\n"  # truncated
    with open_new_nofollow(plain, "a") as f:
        f.write("more\n")
    assert plain.read_text() == "new\nmore\n"


WRITER = textwrap.dedent(
    """
    import sys, time
    from sitemapkit.core.files import atomic_write
    with atomic_write(sys.argv[1], "w") as f:
        f.write("partial")
        f.flush()
        print("ready", flush=True)
        time.sleep(60)
    """
)


def _start_writer(target: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_kill_9_leaves_a_temp_that_the_sweep_removes_but_a_live_writers_stays(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    dead = _start_writer(target)
    dead.send_signal(signal.SIGKILL)
    dead.wait()
    left = temps(tmp_path)
    assert len(left) == 1
    live = _start_writer(target)  # a writer running now, in another process
    try:
        both = temps(tmp_path)
        assert len(both) == 2
        # fresh files are left alone whoever holds them ...
        assert sweep_stale_temps(tmp_path, "out.txt") == []
        # ... and past the age guard only the one nobody holds goes
        assert sweep_stale_temps(tmp_path, "out.txt", stale_after=0) == left
        assert len(temps(tmp_path)) == 1 and temps(tmp_path) != left
    finally:
        live.kill()
        live.wait()
    assert not target.exists()


def test_the_sweep_touches_only_its_own_names(tmp_path: Path) -> None:
    keep = [".other.txt.abc.tmp", "out.txt", ".out.txt.abc.tmpx", "x.out.txt.abc.tmp"]
    for name in keep:
        (tmp_path / name).write_text("x")
    secret = tmp_path / "secret"
    secret.write_text("precious")
    (tmp_path / ".out.txt.lnk.tmp").symlink_to(secret)
    (tmp_path / ".out.txt.old.tmp").write_text("x")
    old = time.time() - 3600
    for p in tmp_path.iterdir():
        os.utime(p, (old, old), follow_symlinks=False)
    assert sweep_stale_temps(tmp_path, "out.txt") == [".out.txt.lnk.tmp", ".out.txt.old.tmp"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*keep, "secret"])
    assert secret.read_text() == "precious"


def test_atomic_file_is_the_sink_a_parquet_writer_keeps_open(tmp_path: Path) -> None:
    """`AtomicFile` (what `atomic_write` is made of) for a long-lived writer: a ParquetWriter writes into
    `.file`, the file object is closed before `commit()` (as a library may do with its sink), and the
    temporary file stays held (no sweep takes it) until `commit()` publishes it whole."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from sitemapkit.core.files import AtomicFile

    target = tmp_path / "t.parquet"
    target.write_bytes(b"old")
    target.chmod(0o640)
    out = AtomicFile(target)
    table = pa.table({"a": list(range(1000))})
    with pq.ParquetWriter(out.file, table.schema, compression="zstd") as writer:
        for _ in range(3):
            writer.write_table(table)
    assert not out.file.closed  # closing the ParquetWriter leaves its sink open ...
    out.file.close()  # ... and a sink closed before the commit is fine
    assert target.read_bytes() == b"old"
    (name,) = temps(tmp_path)
    assert name == os.path.basename(out.temp) and name.startswith(".t.parquet.")
    assert sweep_stale_temps(tmp_path, "t.parquet", stale_after=0) == []  # still held
    out.commit()
    assert pq.read_table(target).num_rows == 3000
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert temps(tmp_path) == []
    out.discard()  # after the commit: nothing
    assert pq.read_table(target).num_rows == 3000
    with pytest.raises(ValueError, match="already committed"):
        out.commit()


def test_atomic_file_discard_and_with_block(tmp_path: Path) -> None:
    from sitemapkit.core.files import AtomicFile

    target = tmp_path / "out.txt"
    target.write_text("old")
    out = AtomicFile(target, "w")
    out.file.write("half")
    out.discard()
    out.discard()
    assert target.read_text() == "old" and temps(tmp_path) == []
    with pytest.raises(ValueError):
        out.commit()
    with AtomicFile(target, "w", newline="") as done:
        done.file.write("new\r\n")
    assert target.read_bytes() == b"new\r\n" and done.done
    with pytest.raises(RuntimeError), AtomicFile(target, "w") as failed:
        failed.file.write("x")
        raise RuntimeError
    assert target.read_bytes() == b"new\r\n" and temps(tmp_path) == []
    with pytest.raises(ValueError, match="mode"):
        AtomicFile(target, "a")
    assert temps(tmp_path) == []


def test_the_sweep_without_a_name_takes_every_temp_of_the_folder(tmp_path: Path) -> None:
    """For a folder only sitemapkit writes (a harvest's dataset): every `.*.tmp` nobody holds goes."""
    keep = ["part-1.parquet", "x.tmp", ".x.tmpx", "_manifest.tmp"]
    gone = [".part-1.parquet.abcdefgh.tmp", ".summary.json.tmp", ".lnk.tmp"]
    for name in keep + gone[:2]:
        (tmp_path / name).write_text("x")
    secret = tmp_path / "secret"
    secret.write_text("precious")
    (tmp_path / ".lnk.tmp").symlink_to(secret)
    with atomic_write(tmp_path / "live.txt") as f:  # held by a writer at work
        (live,) = [n for n in temps(tmp_path) if n.startswith(".live.txt.")]
        assert sweep_stale_temps(tmp_path, None, stale_after=0) == sorted(gone)
        assert live in temps(tmp_path)
        f.write(b"x")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*keep, "live.txt", "secret"])
    assert secret.read_text() == "precious"


def test_ctrl_c_mid_write_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    proc = _start_writer(target)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    assert proc.returncode != 0
    assert temps(tmp_path) == []
    assert target.read_text() == "old"


# -- parse -o --------------------------------------------------------------------------------------------


def _parse(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sitemapkit", "parse", *args], capture_output=True, text=True, timeout=120
    )


def test_parse_output_through_a_planted_symlink_never_overwrites_its_target(tmp_path: Path) -> None:
    source = tmp_path / "sitemap.xml"
    source.write_bytes(SITEMAP)
    secret = tmp_path / "secret.txt"
    secret.write_text("precious\n")
    out = tmp_path / "urls.csv"
    out.symlink_to(secret)
    run = _parse(str(source), "--format", "csv", "-o", str(out))
    assert run.returncode == 0, run.stderr
    assert secret.read_text() == "precious\n"
    assert not out.is_symlink() and out.read_text().count("https://e.com/") == 50


def test_parse_sweeps_the_temps_a_killed_run_left(tmp_path: Path) -> None:
    """A `parse -o` killed with -9 leaves its temporary file; the next run into that file removes it (once
    it is a minute old and nobody holds it), and leaves no temporary file of its own."""
    source = tmp_path / "sitemap.xml"
    source.write_bytes(SITEMAP)
    out = tmp_path / "urls.jsonl"
    # a reader that never ends: parse reads standard input, writes a temp file, and waits for more
    proc = subprocess.Popen(
        [sys.executable, "-m", "sitemapkit", "parse", "-", "-o", str(out)],
        stdin=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None
    proc.stdin.write(SITEMAP[: len(SITEMAP) // 2])
    proc.stdin.flush()
    deadline = time.monotonic() + 60
    while not temps(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    left = temps(tmp_path)
    assert len(left) == 1 and left[0].startswith(".urls.jsonl.")
    old = time.time() - 120
    os.utime(tmp_path / left[0], (old, old))
    run = _parse(str(source), "-o", str(out))
    assert run.returncode == 0, run.stderr
    assert temps(tmp_path) == []
    assert out.read_text().count("https://e.com/") == 50


@pytest.mark.parametrize("gzip", [False, True])
def test_generate_never_follows_a_link_planted_at_its_predictable_temp_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gzip: bool
) -> None:
    """The writer's working files are `.LABEL.TOKEN.tmp`, and the token shows in its lock file's name
    while it runs: a user who can write to the output folder could plant links at the names to come.
    They are created exclusively: the run stops with an error naming the file, the linked file untouched.
    The files it publishes are `AtomicFile`s (`.NAME.TOKEN.<random>.tmp`): a link at the name the set's
    file had before (`.sitemap-1.TOKEN.tmp`) is neither followed nor in the way."""
    import secrets as secrets_module

    from click.testing import CliRunner

    from sitemapkit.cli import main

    monkeypatch.setattr(secrets_module, "token_hex", lambda n=None: "deadbeef")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    urls = tmp_path / "urls.txt"
    urls.write_text("".join(f"https://e.com/{i}\n" for i in range(10)))
    args = ["generate", str(urls), "--base-url", "https://e.com/", "--out", str(out), *(["--gzip"] * gzip)]
    final = out / ("sitemap.xml.gz" if gzip else "sitemap.xml")
    planted = ".sitemap-1.body.deadbeef.tmp"
    (out / planted).symlink_to(victim)
    result = CliRunner().invoke(main, args)
    assert victim.read_text() == "precious\n"
    assert result.exit_code == 1, result.output
    assert f"{planted}: cannot write (File exists); nothing was published" in result.output
    assert not final.exists()
    (out / planted).unlink(missing_ok=True)  # the failed run removes its temporary names
    for planted in (".sitemap-1.deadbeef.tmp", ".sitemap.xml.deadbeef.tmp", ".sitemap.xml.gz.deadbeef.tmp"):
        (out / planted).symlink_to(victim)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    data = final.read_bytes()
    assert (gzip_module.decompress(data) if gzip else data).count(b"<loc>") == 10
    assert victim.read_text() == "precious\n" and not final.is_symlink()


def test_a_set_of_atomic_files_is_committed_in_order_under_names_chosen_late(tmp_path: Path) -> None:
    """A multi-file transaction: files written under tagged temporary names, released (synced, no
    descriptor kept), then renamed in order to names chosen only at the end, a link at a final name
    replaced (never written through), the permissions those of the file each one replaces."""
    from sitemapkit.core.files import AtomicFile, commit_in_order

    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "b.xml").symlink_to(victim)
    (tmp_path / "a.xml").write_text("old")
    (tmp_path / "a.xml").chmod(0o640)
    first = AtomicFile(tmp_path / "part-1.xml", tag="deadbeef")
    second = AtomicFile(tmp_path / "part-2.xml", tag="deadbeef")
    assert os.path.basename(first.temp).startswith(".part-1.xml.deadbeef.")
    first.file.write(b"one")
    first.release()
    with open(second.temp, "r+b") as other:  # as a child process writes and syncs it through its own
        other.write(b"two")
        other.flush()
        os.fsync(other.fileno())
    second.release(synced=True)
    assert first.file.closed and not first.done
    order: list[str] = []
    real = os.replace

    def spy(src: str, dst: str) -> None:
        order.append(os.path.basename(dst))
        real(src, dst)

    os.replace = spy  # type: ignore[assignment]
    try:
        commit_in_order([(first, tmp_path / "a.xml"), (second, tmp_path / "b.xml")])
    finally:
        os.replace = real
    assert order == ["a.xml", "b.xml"]
    assert (tmp_path / "a.xml").read_bytes() == b"one" and stat.S_IMODE(
        (tmp_path / "a.xml").stat().st_mode
    ) == 0o640
    assert not (tmp_path / "b.xml").is_symlink() and (tmp_path / "b.xml").read_bytes() == b"two"
    assert victim.read_text() == "precious\n" and temps(tmp_path) == []
    with pytest.raises(ValueError, match="same folder"):
        AtomicFile(tmp_path / "c.xml").commit(tmp_path.parent / "c.xml")
    assert temps(tmp_path) == []


def test_a_failed_rename_discards_the_rest_of_the_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sitemapkit.core.files import AtomicFile, commit_in_order

    outs = [AtomicFile(tmp_path / f"{n}.xml") for n in "abc"]
    for out in outs:
        out.file.write(out.path.encode())
    real = os.replace

    def interrupted(src: str, dst: str) -> None:
        if dst.endswith("b.xml"):
            raise KeyboardInterrupt
        real(src, dst)

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        commit_in_order([(out, None) for out in outs])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.xml"]  # renamed stays; the rest discarded
