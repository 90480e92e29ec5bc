"""The local Ray that `harvest --engine ray` starts (no `--ray-address`) is locked down: every listener of
its processes on loopback, token authentication on (a request without the token is refused), its session
folder inside a folder only this user can enter, removed after the run, after SIGTERM too."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.sitefarm import Page, SiteFarm, urlset

pq = pytest.importorskip("pyarrow.parquet")
ray = pytest.importorskip("ray")

from sitemapkit.harvest import HarvestOptions, harvest  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
OPTIONS = HarvestOptions(
    allow_private=True, retries=0, connect_timeout=2.0, read_timeout=20.0, site_timeout=30.0
)
pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads listeners from /proc")


def _listeners(pids: set[int]) -> list[tuple[int, str, int]]:
    """(pid, address, port) of every TCP socket in LISTEN state that one of `pids` holds (from /proc)."""
    by_inode: dict[str, tuple[str, int]] = {}
    for table, size in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        with open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                if fields[3] != "0A":  # LISTEN
                    continue
                hexaddr, hexport = fields[1].split(":")
                raw = bytes.fromhex(hexaddr)
                # each 32-bit word is in host order (little-endian here)
                words = b"".join(raw[i : i + 4][::-1] for i in range(0, size, 4))
                if size == 4:
                    address = ".".join(str(b) for b in words)
                elif words[:12] == bytes(10) + b"\xff\xff":  # ::ffff:a.b.c.d
                    address = ".".join(str(b) for b in words[12:])
                else:
                    address = ":".join(words[i : i + 2].hex() for i in range(0, 16, 2))
                by_inode[fields[9]] = (address, int(hexport, 16))
    found = []
    for pid in pids:
        with_fds = Path(f"/proc/{pid}/fd")
        try:
            links = [os.readlink(fd) for fd in with_fds.iterdir()]
        except OSError:  # gone, or not ours to look at
            continue
        for link in links:
            if link.startswith("socket:[") and link[8:-1] in by_inode:
                found.append((pid, *by_inode[link[8:-1]]))
    return found


def _descendants(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found = {root}
    grew = True
    while grew:
        grew = False
        for child, parent in parents.items():
            if parent in found and child not in found:
                found.add(child)
                grew = True
    return found


def _is_loopback(address: str) -> bool:
    return address.startswith("127.") or address == "0000:0000:0000:0000:0000:0000:0000:0001"


def _names(pids: set[int]) -> dict[int, str]:
    names = {}
    for pid in pids:
        with_comm = Path(f"/proc/{pid}/comm")
        try:
            names[pid] = with_comm.read_text().strip()
        except OSError:
            continue
    return names


PROBE = """
import sys
from ray._raylet import GcsClient
client = GcsClient(address=sys.argv[1], cluster_id=sys.argv[2])
try:
    client.internal_kv_get(b"probe", None, timeout=10)
    print("answered")
except Exception as exc:
    print("refused", type(exc).__name__, exc)
"""


def _asked_without_token(gcs_address: str, cluster_id: str, tmp: Path) -> tuple[str, str]:
    """What GCS answers a client of another process: with no token at all (no RAY_AUTH_* in its
    environment and a HOME without ~/.ray), and, as the control, with this process's environment (where
    Ray finds its token by itself)."""
    bare = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    bare.update(HOME=str(tmp), RAY_AUTH_MODE="disabled")
    answers = []
    for env in (bare, dict(os.environ)):
        run = subprocess.run(
            [sys.executable, "-c", PROBE, gcs_address, cluster_id],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        answers.append(run.stdout.strip())
    return answers[0], answers[1]


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A short TMPDIR (Ray's Unix socket paths must stay under 108 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="rs", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_the_local_ray_is_locked_down(
    tmp_path: Path, short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if ray.is_initialized():
        pytest.skip("a Ray is already running in this process")
    monkeypatch.setenv("TMPDIR", str(short_tmp))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    tempfile.tempdir = None  # TMPDIR is read again
    seen: dict[str, Any] = {}

    def look(progress: Any) -> None:
        if seen or not ray.is_initialized():
            return
        node = ray._private.worker._global_node
        pids = _descendants(os.getpid())
        seen["names"] = _names(pids)
        seen["listeners"] = _listeners(pids)
        seen["session"] = Path(node.get_session_dir_path())
        home = seen["session"].parent.parent
        seen["home_mode"] = stat.S_IMODE(home.stat().st_mode), home.stat().st_uid
        seen["gcs"] = node.gcs_address
        seen["auth"] = _asked_without_token(node.gcs_address, node.cluster_id.hex(), tmp_path)
        seen["auth_mode"] = os.environ.get("RAY_AUTH_MODE")

    try:
        with SiteFarm() as farm:
            s = farm.add("127.0.0.1")
            s.route("/robots.txt", "User-agent: *\nSitemap: /s.xml\n")
            # a slow sitemap: the run lasts long enough for a look at it
            s.route("/s.xml", Page(urlset([s.url(f"/p/{i}") for i in range(20)]), delay=3.0))
            summary = harvest(
                [s.base], tmp_path / "ds", engine="ray", workers=1, options=OPTIONS, on_progress=look
            )
    finally:
        tempfile.tempdir = None
    assert summary["urls"] == 20
    assert seen, "no progress report came while Ray ran"
    names = seen["names"]
    assert {"gcs_server", "raylet"} <= set(names.values()), names
    listeners = seen["listeners"]
    ray_listeners = [
        (names.get(pid), a, p) for pid, a, p in listeners if names.get(pid) in ("gcs_server", "raylet")
    ]
    assert len(ray_listeners) >= 2, listeners  # GCS and the raylet at least: the check is not empty
    exposed = [
        (names.get(pid), address, port) for pid, address, port in listeners if not _is_loopback(address)
    ]
    assert exposed == [], exposed
    assert seen["gcs"].startswith("127.0.0.1:")
    without, control = seen["auth"]
    assert without.startswith("refused AuthenticationError") and "InvalidAuthToken" in without, without
    assert control == "answered"
    assert seen["auth_mode"] == "token"
    # the session folder: inside a folder of ours that only we can enter, gone after the run
    session: Path = seen["session"]
    home = session.parent.parent
    assert home.parent == short_tmp and home.name.startswith("skray-")
    assert seen["home_mode"] == (0o700, os.getuid())
    assert not home.exists()
    assert os.environ.get("RAY_AUTH_MODE") is None  # the environment is as it was
    assert os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER") is None


@pytest.mark.parametrize(
    ("signum", "status", "said"), [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGINT, 130, "interrupted")]
)
def test_the_folder_is_private_while_ray_runs(
    tmp_path: Path, short_tmp: Path, signum: int, status: int, said: str
) -> None:
    """Through the CLI: the folder's mode while the run goes on, then SIGTERM (or Ctrl-C): exit 143 (130),
    the folder and Ray's processes gone."""
    with SiteFarm() as farm:
        s = farm.add("127.0.0.1")
        s.route("/robots.txt", "User-agent: *\nSitemap: /s.xml\n")
        s.route("/s.xml", Page(urlset([s.url("/p")]), delay=60.0))
        sites = tmp_path / "sites.txt"
        sites.write_text(s.base + "\n")
        env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "TMPDIR": str(short_tmp)}
        env.pop("RAY_ADDRESS", None)
        env.pop("RAY_AUTH_MODE", None)
        run = subprocess.Popen(
            [
                *(sys.executable, "-m", "sitemapkit", "harvest", str(sites), "--out", str(tmp_path / "ds")),
                *("--engine", "ray", "--workers", "1", "--allow-private", "--site-timeout", "120"),
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 90
            while "/s.xml" not in s.requests() and s.host.in_flight == 0:  # the actor reads the site
                assert run.poll() is None, run.communicate()
                assert time.monotonic() < deadline, "the harvest never asked for the sitemap"
                time.sleep(0.2)
            (home,) = short_tmp.glob("skray-*")
            assert stat.S_IMODE(home.stat().st_mode) == 0o700
            assert home.stat().st_uid == os.getuid()
            assert list(home.glob("ray/session_*/sockets"))  # Ray's sockets are in there
            ray_pids = [p for p in _descendants(run.pid) if p != run.pid]
            assert ray_pids
            run.send_signal(signum)
            _, stderr = run.communicate(timeout=60)
        finally:
            if run.poll() is None:
                run.kill()
                run.communicate()
    assert run.returncode == status, stderr
    assert said in stderr and "Traceback" not in stderr
    assert not list(short_tmp.glob("skray-*"))
    deadline = time.monotonic() + 20
    while (
        left := [p for p in ray_pids if Path(f"/proc/{p}").exists() and _alive(p)]
    ) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert left == [], _names(set(left))


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_ray_auth_disabled_is_refused(tmp_path: Path, short_tmp: Path) -> None:
    sites = tmp_path / "sites.txt"
    sites.write_text("http://127.0.0.1:9/\n")
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "TMPDIR": str(short_tmp),
        "RAY_AUTH_MODE": "disabled",
    }
    env.pop("RAY_ADDRESS", None)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "sitemapkit",
            "harvest",
            str(sites),
            "--out",
            str(tmp_path / "ds"),
            "--engine",
            "ray",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2, run.stderr
    assert "RAY_AUTH_MODE" in run.stderr and "token" in run.stderr and "Traceback" not in run.stderr
    assert not list(short_tmp.iterdir())  # no Ray was started
