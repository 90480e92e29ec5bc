"""`harvest --resume` on a dataset that something else changed (a part that is not Parquet, a manifest line
that is not a record) stops with an error naming the file (and line), exit status 1, and changes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.sitefarm import SiteFarm, urlset

pytest.importorskip("pyarrow")

REPO = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sitemapkit", "harvest", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        timeout=120,
    )


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A finished harvest of three sites (SITES file, DATASET), to copy and tamper with."""
    root = tmp_path_factory.mktemp("ds")
    with SiteFarm() as farm:
        bases = []
        for n in range(3):
            s = farm.add(f"127.0.0.{n + 2}")
            s.route("/robots.txt", "User-agent: *\nSitemap: /s.xml\n")
            s.route("/s.xml", urlset([s.url(f"/p/{i}") for i in range(5)]))
            bases.append(s.base)
        sites = root / "sites.txt"
        sites.write_text("".join(f"{b}\n" for b in bases))
        run = _cli(str(sites), "--out", str(root / "ds"), "--allow-private", "--quiet", "--workers", "1")
        assert run.returncode == 0, run.stderr
    return sites, root / "ds"


def _copy(dataset: Path, to: Path) -> Path:
    for name, data in _snapshot(dataset).items():
        (to / name).parent.mkdir(parents=True, exist_ok=True)
        (to / name).write_bytes(data)
    return to


def _manifest(ds: Path) -> Path:
    (path,) = (ds / "_manifest").glob("*.jsonl")
    return path


def _refused(sites: Path, ds: Path, *expected: str) -> None:
    before = _snapshot(ds)
    run = _cli(str(sites), "--out", str(ds), "--resume", "--allow-private", "--quiet")
    assert run.returncode == 1, run.stderr
    assert "Traceback" not in run.stderr
    for text in expected:
        assert text in run.stderr, run.stderr
    assert "nothing was changed" in run.stderr
    assert _snapshot(ds) == before  # not one file removed, rewritten or added


def test_a_part_that_is_not_parquet(dataset: tuple[Path, Path], tmp_path: Path) -> None:
    sites, source = dataset
    ds = _copy(source, tmp_path / "ds")
    bad = ds / "urls" / "part-local-0000000000-00009.parquet"
    bad.write_bytes(b"garbage, not Parquet\n" * 10)
    # a manifest line cut short by a kill is there too: what --resume must redo, and must not yet do
    with open(_manifest(ds), "a") as f:
        f.write('{"site":"http://127.0.0.9:1/","row":')
    _refused(sites, ds, f"{bad}:", "not a Parquet file")


def test_a_part_with_other_columns(dataset: tuple[Path, Path], tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sites, source = dataset
    ds = _copy(source, tmp_path / "ds")
    other = ds / "urls" / "part-other.parquet"
    pq.write_table(pa.table({"site": ["x"], "n": [1]}), other)
    _refused(sites, ds, f"{other}:", "columns differ")


@pytest.mark.parametrize(
    "line", ['{"sitemaps":5}', "this is not JSON", "[1, 2]", '{"site":"x","row":{},"sitemaps":[],"stats":{}}']
)
def test_a_manifest_line_that_is_not_a_record(dataset: tuple[Path, Path], tmp_path: Path, line: str) -> None:
    sites, source = dataset
    ds = _copy(source, tmp_path / "ds")
    manifest = _manifest(ds)
    lines = manifest.read_text().splitlines(keepends=True)
    manifest.write_text(lines[0] + line + "\n" + "".join(lines[1:]))
    _refused(sites, ds, f"{manifest}:2:", "not a manifest record")


def test_a_torn_last_line_is_what_a_kill_leaves(dataset: tuple[Path, Path], tmp_path: Path) -> None:
    """The neighbour case: a last line without its newline is a site a kill cut short, read again."""
    sites, source = dataset
    ds = _copy(source, tmp_path / "ds")
    manifest = _manifest(ds)
    lines = manifest.read_text().splitlines(keepends=True)
    manifest.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])
    for name in ("sites.parquet", "sitemaps.parquet", "summary.json"):
        (ds / name).unlink()
    with SiteFarm() as farm:  # the sites are gone: the site read again is unreachable, and says so
        run = _cli(str(sites), "--out", str(ds), "--resume", "--allow-private", "--quiet", "--timeout", "2")
        assert farm is not None
    assert run.returncode == 0, run.stderr
    assert (ds / "summary.json").exists()
