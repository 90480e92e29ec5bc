"""The files a harvest writes (URL parts, sites/sitemaps Parquet, summary.json, the manifest) go through
`core.files`: temporary names from `mkstemp` beside the file, so a symbolic link planted at a name the
harvest used to write (`.summary.json.tmp`, `urls/.part-<worker>-00001.parquet.tmp`, ...) is never
written through, and a killed harvest's temporary files are swept by `--resume`, except one a live
writer holds."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from sitemapkit.core.files import atomic_write
from tests.support.sitefarm import Page, Site, SiteFarm, address, index, urlset

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from sitemapkit.harvest import HarvestOptions, harvest  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
WORKER = "local-0123456789"
PRECIOUS = "precious: not sitemapkit's to write\n"
OPTIONS = HarvestOptions(allow_private=True, retries=0, rows_per_file=5)


@pytest.fixture
def farm() -> Any:
    with SiteFarm() as f:
        yield f


def _locs(site: Site, n: int, prefix: str = "p") -> list[str]:
    return [site.url(f"/{prefix}/{i}") for i in range(n)]


def _urls(dataset: Path) -> list[tuple[str, str]]:
    table = pq.read_table(dataset / "urls", columns=["site", "loc"])
    return sorted(zip(table.column("site").to_pylist(), table.column("loc").to_pylist(), strict=True))


def _table(path: Path, drop: tuple[str, ...], key: str) -> list[dict[str, Any]]:
    rows = [{k: v for k, v in r.items() if k not in drop} for r in pq.read_table(path).to_pylist()]
    return sorted(rows, key=lambda r: str(r[key]))


OLD_NAMES = (
    ".summary.json.tmp",
    ".sites.parquet.tmp",
    ".sitemaps.parquet.tmp",
    *(f"urls/.part-{WORKER}-{n:05d}.parquet.tmp" for n in range(1, 7)),
)


def test_links_planted_at_the_old_temporary_names_are_not_written_through(
    farm: SiteFarm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The links are planted by the site itself when the harvest first asks it something (after the
    dataset is prepared, before anything is written); the worker's name is fixed so that the part names
    are known (the old code wrote `urls/.part-<worker>-<n>.parquet.tmp` through such a link, and
    `.summary.json.tmp`, `.sites.parquet.tmp` under any worker name)."""
    monkeypatch.setattr(sys.modules["sitemapkit.harvest.run"], "new_worker_id", lambda prefix: WORKER)
    out = tmp_path / "ds"
    outside = tmp_path / "outside"
    outside.mkdir()
    victims = {name: outside / f"victim-{i}" for i, name in enumerate(OLD_NAMES)}
    for victim in victims.values():
        victim.write_text(PRECIOUS)
    planted: list[str] = []

    def plant_then(page: Page) -> Any:
        def route(_: int) -> Page:
            if not planted:
                for name, victim in victims.items():
                    (out / name).symlink_to(victim)
                    planted.append(name)
            return page

        return route

    site = farm.add(address(0))
    site.route("/robots.txt", plant_then(Page(b"User-agent: *\nAllow: /\nSitemap: /sitemap.xml\n")))
    site.route("/sitemap.xml", plant_then(Page(urlset(_locs(site, 20)))))
    summary = harvest([site.base], out, options=OPTIONS)

    assert planted == list(OLD_NAMES)
    for victim in victims.values():
        assert victim.read_text() == PRECIOUS, victim
    for name in OLD_NAMES:  # left as planted: neither written through nor renamed into place
        assert (out / name).is_symlink(), name
    for name in ("summary.json", "sites.parquet", "sitemaps.parquet"):
        assert (out / name).is_file() and not (out / name).is_symlink(), name
    parts = sorted((out / "urls").glob("*.parquet"))
    assert [p.name for p in parts] == [f"part-{WORKER}-{n:05d}.parquet" for n in range(1, 5)]
    assert not any(p.is_symlink() for p in parts)
    assert summary["urls"] == 20 and summary["sites"] == 1
    assert (out / "summary.json").read_text(encoding="utf-8").startswith("{\n")
    assert _urls(out) == [(site.base, loc) for loc in sorted(_locs(site, 20))]

    # the same dataset as a harvest with nothing planted
    clean = harvest([site.base], tmp_path / "clean", options=OPTIONS)
    assert {k: v for k, v in clean.items() if "second" not in k} == {
        k: v for k, v in summary.items() if "second" not in k
    }
    assert _urls(tmp_path / "clean") == _urls(out)
    assert _table(tmp_path / "clean" / "sites.parquet", ("seconds",), "site") == _table(
        out / "sites.parquet", ("seconds",), "site"
    )
    drop = ("read_seconds",)
    assert _table(tmp_path / "clean" / "sitemaps.parquet", drop, "url") == _table(
        out / "sitemaps.parquet", drop, "url"
    )

    # --resume sweeps the links (never what they lead to) and leaves the dataset as it was
    again = harvest([site.base], out, options=OPTIONS, resume=True)
    assert again["sites_resumed"] == 1 and again["urls"] == 20
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]
    for victim in victims.values():
        assert victim.read_text() == PRECIOUS, victim
    assert _urls(out) == _urls(tmp_path / "clean")


def test_a_link_at_the_manifests_name_is_refused(
    farm: SiteFarm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifest is appended to as the harvest goes: a link at its name stops the harvest with the
    file named (the old code appended the finished sites to the file the link led to)."""
    from sitemapkit.core.files import SymlinkRefused

    monkeypatch.setattr(sys.modules["sitemapkit.harvest.run"], "new_worker_id", lambda prefix: WORKER)
    out = tmp_path / "ds"
    victim = tmp_path / "victim"
    victim.write_text(PRECIOUS)
    link = out / "_manifest" / f"{WORKER}.jsonl"

    def robots(_: int) -> Page:
        if not link.is_symlink():
            link.symlink_to(victim)
        return Page(b"User-agent: *\nAllow: /\nSitemap: /sitemap.xml\n")

    site = farm.add(address(1))
    site.route("/robots.txt", robots)
    site.route("/sitemap.xml", urlset(_locs(site, 3)))
    with pytest.raises(SymlinkRefused, match=re.escape(str(link))):
        harvest([site.base], out, options=OPTIONS)
    assert victim.read_text() == PRECIOUS
    assert not (out / "summary.json").exists()


KILLED = textwrap.dedent(
    """
    import sys
    from sitemapkit.harvest import HarvestOptions, harvest
    options = HarvestOptions(allow_private=True, retries=0, row_group_rows=5, read_timeout=600.0)
    harvest([sys.argv[1]], sys.argv[2], options=options)
    """
)


def test_a_killed_harvests_temporary_files_are_swept_by_resume(farm: SiteFarm, tmp_path: Path) -> None:
    """kill -9 while a part is open (its rows half written, under a `mkstemp` name the sweep knows),
    with old-style leftovers (a file, a link) beside it and a temporary file a live writer holds: the
    resumed run removes every one nobody holds, and the dataset has every row once."""
    site = farm.add(address(2))
    site.route("/robots.txt", "User-agent: *\nAllow: /\nSitemap: /index.xml\n")
    site.route("/index.xml", index([site.url("/a.xml"), site.url("/b.xml")]))
    site.route("/a.xml", urlset(_locs(site, 20, "a")))
    held = {"on": True}  # while on, /b.xml answers only after ten minutes (or when the client gives up)
    b = urlset(_locs(site, 20, "b"))
    site.route("/b.xml", lambda _: Page(b, delay=600.0 if held["on"] else 0.0))
    out = tmp_path / "ds"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen([sys.executable, "-c", KILLED, site.base, str(out)], cwd=REPO, env=env)
    try:
        deadline = time.monotonic() + 120  # a hang guard, not a timing claim
        while not (site.asked.get("/b.xml") and list((out / "urls").glob(".*.tmp"))):
            assert time.monotonic() < deadline and proc.poll() is None, "the harvest never opened a part"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(30)
    left = [p.name for p in (out / "urls").iterdir()]
    assert len(left) == 1, left
    # the name `sweep_stale_temps` looks for: `.` + the part's final name + `.<random>.tmp`
    assert re.fullmatch(r"\.part-local-[0-9a-f]{10}-00001\.parquet\.[a-z0-9_]{8}\.tmp", left[0]), left
    assert not (out / "summary.json").exists()

    victim = tmp_path / "victim"
    victim.write_text(PRECIOUS)
    (out / ".summary.json.tmp").write_text("{")  # what an older sitemapkit left
    (out / "urls" / ".part-local-0000000000-00001.parquet.tmp").symlink_to(victim)
    for name in (".summary.json.tmp", "urls/.part-local-0000000000-00001.parquet.tmp"):
        os.utime(out / name, (time.time() - 3600,) * 2, follow_symlinks=False)
    held["on"] = False
    with (
        pytest.raises(KeyboardInterrupt),  # interrupted in the end: its temporary file goes with it
        atomic_write(out / "urls" / "part-other-00001.parquet") as f,  # a writer at work, holding it
    ):
        f.write(b"PAR1")
        (live,) = [p.name for p in out.rglob("*.tmp") if p.name.startswith(".part-other-")]
        summary = harvest([site.base], out, options=HarvestOptions(allow_private=True), resume=True)
        assert [p.name for p in out.rglob("*.tmp")] == [live]
        raise KeyboardInterrupt
    assert not list(out.rglob("*.tmp"))
    assert victim.read_text() == PRECIOUS
    assert summary["urls"] == 40
    expected = sorted([*_locs(site, 20, "a"), *_locs(site, 20, "b")])
    assert _urls(out) == [(site.base, loc) for loc in expected]
