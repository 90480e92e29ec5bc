"""The local engine's worker processes: the same dataset as one process, a host read by one process only
(politeness across processes, read from the farm's log), a worker killed (a clear error, nothing of the
end published, `--resume` finishes), and no worker outliving its parent."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.harvest.test_harvest import (
    CLI_OPTIONS,
    OPTIONS,
    REPO,
    _locs,
    _robots,
    _rows_per_site,
    _table,
    _write_sites,
    alive,
    build,
    children,
    wait_gone,
)
from tests.support.helpers import assert_paced
from tests.support.sitefarm import Page, Site, SiteFarm, address, index, urlset

pq = pytest.importorskip("pyarrow.parquet")

from sitemapkit.harvest import HarvestOptions, harvest  # noqa: E402
from sitemapkit.harvest.sites import shard  # noqa: E402


@pytest.fixture
def farm() -> Any:
    with SiteFarm() as f:
        yield f


def _workers_of(dataset: Path) -> set[str]:
    """The workers that wrote parts or manifest lines (`part-<worker>-<n>`, `<worker>.jsonl`)."""
    parts = {p.name.split("-")[1] for p in (dataset / "urls").glob("*.parquet")}
    return parts | {p.name.split("-")[0] for p in (dataset / "_manifest").glob("*.jsonl")}


def test_two_workers_give_the_dataset_of_one(farm: SiteFarm, tmp_path: Path) -> None:
    sites, expect = build(farm)
    del sites["hanging"], expect["hanging"]  # (its 8 s timeout is another test's)
    listed = [s.base for s in sites.values()]
    assert all(shard(listed, 2)), "the test sites must fall in both shards"
    one = harvest(listed, tmp_path / "one", options=OPTIONS, workers=1)
    progress: list[Any] = []
    two = harvest(listed, tmp_path / "two", options=OPTIONS, workers=2, on_progress=progress.append)
    assert (one["workers"], two["workers"]) == (1, 2)
    assert len(_workers_of(tmp_path / "one")) == 1
    assert len(_workers_of(tmp_path / "two")) == 2  # two processes, each its own parts and manifest
    assert progress[-1].sites_done == progress[-1].sites_total == len(sites)
    skip = {"seconds", "sites_per_second", "urls_per_second", "workers"}
    assert {k: v for k, v in two.items() if k not in skip} == {k: v for k, v in one.items() if k not in skip}
    for dataset, summary in (("one", one), ("two", two)):
        assert json.loads((tmp_path / dataset / "summary.json").read_text()) == summary
    url_keys = ("site", "sitemap", "loc")
    assert _table(tmp_path / "two" / "urls", (), url_keys) == _table(tmp_path / "one" / "urls", (), url_keys)
    site_drop = ("seconds",)
    assert _table(tmp_path / "two" / "sites.parquet", site_drop, ("site",)) == _table(
        tmp_path / "one" / "sites.parquet", site_drop, ("site",)
    )
    # bytes read from a sitemap a cap cut off depend on how far the reader had read ahead
    map_drop, map_keys = ("read_seconds", "bytes", "uncompressed_bytes"), ("site", "url", "parent")
    assert _table(tmp_path / "two" / "sitemaps.parquet", map_drop, map_keys) == _table(
        tmp_path / "one" / "sitemaps.parquet", map_drop, map_keys
    )
    assert {name: _rows_per_site(tmp_path / "two").get(s.base, 0) for name, s in sites.items()} == expect
    for addr, host in farm.hosts.items():
        assert host.max_in_flight <= 1, addr


def _shared_host(farm: SiteFarm, n: int, count: int, delay: float) -> list[Site]:
    """`count` sites on one address (one host, each its own port), each with Crawl-delay `delay` and three
    sitemaps under its own folder (so that the farm's one log of the address tells the sites apart)."""
    shared = address(n)
    sites = []
    for k in range(count):
        s = farm.add(shared)
        maps = [f"/k{k}/{x}.xml" for x in ("a", "b", "c")]
        s.route(
            "/robots.txt", f"User-agent: *\nCrawl-delay: {delay}\n" + "".join(f"Sitemap: {m}\n" for m in maps)
        )
        for m in maps:
            s.route(m, urlset(_locs(s, m.strip("/").replace("/", "-"), 5)), delay=0.05)
        sites.append(s)
    return sites


def test_a_host_is_read_by_one_worker_however_many_sites_it_has(farm: SiteFarm, tmp_path: Path) -> None:
    """Six sites on one host among others, two workers, `per_host` 1: the host never sees two requests at
    once (a split of its sites between the processes would overlap them), and each site's requests keep
    their Crawl-delay. Read from the farm's log, not from a clock of the test."""
    shared = _shared_host(farm, 0, 6, 0.3)
    others = []
    for n in range(1, 9):
        s = farm.add(address(n))
        _robots(s, "Sitemap: /s.xml")
        s.route("/s.xml", urlset(_locs(s, "o", 20)), delay=0.2)
        others.append(s)
    listed = [s.base for s in shared + others]
    assert all(shard(listed, 2))
    summary = harvest(
        listed, tmp_path / "ds", options=HarvestOptions(allow_private=True, retries=1), workers=2
    )
    assert summary["workers"] == 2 and len(_workers_of(tmp_path / "ds")) == 2
    assert summary["urls"] == 6 * 15 + 8 * 20
    host = shared[0].host
    assert host.max_in_flight == 1, host.max_in_flight
    log = sorted(host.log)
    for (_, end, _), (start, _, _) in itertools.pairwise(log):
        assert start >= end - 0.01  # one after another (the farm notes an end just after the answer)
    for k in range(6):
        starts = [start for start, _, path in log if path.startswith(f"/k{k}/")]
        assert len(starts) == 3
        assert_paced(starts, 0.3)


def _cli(sites: Path, out: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "sitemapkit", "harvest", str(sites), "--out", str(out), *CLI_OPTIONS, *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        stderr=subprocess.PIPE,
        text=True,
    )


def _held_sites(farm: SiteFarm, held: dict[str, bool]) -> tuple[list[Site], list[Site]]:
    """Sites in both shards of two, one in each holding its /late.xml while `held["on"]` (a minute, or
    until the client gives up), and others that finish at once."""
    quick: list[Site] = []
    slow: dict[int, Site] = {}  # by shard
    n = 0
    while len(slow) < 2 or len(quick) < 6:
        s = farm.add(address(n))
        n += 1
        _robots(s, "Sitemap: /index.xml")
        where = 0 if shard([s.base], 2)[0] else 1
        if where not in slow:
            s.route("/index.xml", index([s.url("/early.xml"), s.url("/late.xml")]))
            s.route("/early.xml", urlset(_locs(s, "e", 10)))
            body = urlset(_locs(s, "l", 10))
            s.route("/late.xml", lambda _, body=body: Page(body, delay=60.0 if held["on"] else 0.0))
            slow[where] = s
        else:
            s.route("/index.xml", index([s.url("/only.xml")]))
            s.route("/only.xml", urlset(_locs(s, "q", 10)))
            quick.append(s)
    return quick, list(slow.values())


def test_workers_end_with_their_parent_and_a_killed_worker_fails_the_run_cleanly(
    farm: SiteFarm, tmp_path: Path
) -> None:
    held = {"on": True}
    quick, slow = _held_sites(farm, held)
    sites_file = _write_sites(tmp_path / "sites.txt", {s.base: s for s in quick + slow})
    out = tmp_path / "ds"

    def both_waiting(proc: subprocess.Popen[str], asked: dict[str, int]) -> list[int]:
        """Wait until each held site was asked /late.xml again; the worker processes then."""
        deadline = time.monotonic() + 60  # a hang guard, not a timing claim
        while any(s.asked.get("/late.xml", 0) <= asked.get(s.base, 0) for s in slow):
            assert time.monotonic() < deadline and proc.poll() is None, "the held sites were never asked"
            time.sleep(0.05)
        return children(proc.pid)

    # the parent killed: its workers stop too (each once its stdin ends)
    proc = _cli(sites_file, out, "--workers", "2", "-q")
    try:
        workers = both_waiting(proc, {})
        assert len(workers) == 2, workers
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(10)
    wait_gone(workers)
    assert not (out / "summary.json").exists() and not (out / "sites.parquet").exists()

    # a worker killed: the run stops the other and fails with a clear message; nothing of the end is
    # written, and the parts the killed worker was writing stay unpublished (`.tmp`, swept on --resume)
    asked = {s.base: s.asked.get("/late.xml", 0) for s in slow}
    proc = _cli(sites_file, out, "--workers", "2", "--resume", "-q")
    try:
        workers = both_waiting(proc, asked)
        assert len(workers) == 2, workers
        os.kill(workers[0], signal.SIGKILL)
        _, err = proc.communicate(timeout=60)  # well before the held answers' minute is up
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert f"(process {workers[0]}) was killed by SIGKILL" in last and "--resume" in last, err
    assert not [pid for pid in workers if alive(pid)]
    for name in ("summary.json", "sites.parquet", "sitemaps.parquet"):
        assert not (out / name).exists(), name
    for part in (out / "urls").glob("*.parquet"):  # what is published is whole (a `.tmp` is not)
        assert pq.read_metadata(part).num_rows > 0, part

    # --resume with two workers finishes it: every site once, no duplicate rows, no temporary file left
    held["on"] = False
    command = [sys.executable, "-m", "sitemapkit", "harvest", str(sites_file), "--out", str(out)]
    run = subprocess.run(
        [*command, *CLI_OPTIONS, "--workers", "2", "--resume", "-q"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    rows = _rows_per_site(out)
    assert {s.base: rows.get(s.base, 0) for s in quick + slow} == {
        **{s.base: 10 for s in quick},
        **{s.base: 20 for s in slow},
    }
    table = pq.read_table(out / "urls", columns=["site", "sitemap", "loc"])
    keys = list(zip(*(table.column(c).to_pylist() for c in ("site", "sitemap", "loc")), strict=True))
    assert len(keys) == len(set(keys)) == 6 * 10 + 2 * 20
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sites"] == 8 and summary["urls"] == 100
    assert not list(out.rglob("*.tmp"))
    for addr, host in farm.hosts.items():
        assert host.max_in_flight <= 1, addr
