"""`sitemapkit harvest`: many loopback sites (each its own address, robots.txt and tree) into a dataset."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.helpers import assert_paced
from tests.support.sitefarm import Page, Site, SiteFarm, address, gz, index, urlset

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from sitemapkit.harvest import HarvestOptions, harvest  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
OPTIONS = HarvestOptions(
    allow_private=True,
    retries=1,
    max_urls_per_site=1000,
    connect_timeout=2.0,
    read_timeout=5.0,
    site_timeout=8.0,
)
CLI_OPTIONS = ["--allow-private", "--max-urls-per-site", "1000", "--site-timeout", "10"]

EXTRAS = (
    "<url><loc>{base}rich</loc>"
    "<image:image><image:loc>{base}a.jpg</image:loc><image:title>A</image:title></image:image>"
    "<video:video><video:thumbnail_loc>{base}t.jpg</video:thumbnail_loc><video:title>V</video:title>"
    "<video:description>D</video:description><video:content_loc>{base}v.mp4</video:content_loc>"
    "<video:tag>x</video:tag><video:tag>y</video:tag></video:video>"
    "<news:news><news:publication><news:name>P</news:name><news:language>en</news:language>"
    "</news:publication><news:publication_date>2024-05-01</news:publication_date>"
    "<news:title>T</news:title></news:news>"
    '<xhtml:link rel="alternate" hreflang="de" href="{base}de/rich"/>'
    "</url>\n"
)


def _locs(site: Site, prefix: str, n: int) -> list[str]:
    return [site.url(f"/{prefix}/{i}") for i in range(n)]


def _robots(site: Site, *lines: str) -> None:
    site.route("/robots.txt", "User-agent: *\nAllow: /\n" + "".join(f"{line}\n" for line in lines))


def build(farm: SiteFarm, first: int = 0) -> tuple[dict[str, Site], dict[str, int]]:
    """The test sites and how many URL rows each must give (with OPTIONS)."""
    n = iter(range(first, first + 100))
    sites: dict[str, Site] = {}
    expect: dict[str, int] = {}

    def add(name: str, rows: int) -> Site:
        sites[name] = site = farm.add(address(next(n)))
        expect[name] = rows
        return site

    s = add("plain", 31)
    _robots(s, f"Sitemap: {s.url('/sitemap.xml')}")
    s.route("/sitemap.xml", urlset(_locs(s, "p", 30), extras=EXTRAS.format(base=s.base)))

    s = add("index", 30)
    _robots(s, "Sitemap: /index.xml")
    s.route("/index.xml", index([s.url("/a.xml"), s.url("/b.xml.gz"), s.url("/c.xml")]))
    s.route("/a.xml", urlset(_locs(s, "a", 10)))
    s.route("/b.xml.gz", gz(urlset(_locs(s, "b", 10))), headers={"Content-Type": "application/gzip"})
    s.route("/c.xml", urlset(_locs(s, "c", 10)))

    s = add("well-known-gz", 20)  # no robots.txt: found at a well-known path
    s.route("/sitemap.xml.gz", gz(urlset(_locs(s, "w", 20))), headers={"Content-Type": "application/gzip"})

    add("missing", 0)  # nothing at all

    s = add("broken", 5)  # cut off in the middle of the sixth entry
    _robots(s, "Sitemap: /sitemap.xml")
    whole = urlset(_locs(s, "k", 9))
    sixth = [i for i in range(len(whole)) if whole.startswith(b"<url>", i)][5]
    s.route("/sitemap.xml", whole[: sixth + 20])

    s = add("looping", 4)  # an index listing itself and an index listing it back
    _robots(s, "Sitemap: /loop.xml")
    s.route("/loop.xml", index([s.url("/loop.xml"), s.url("/back.xml"), s.url("/leaf.xml")]))
    s.route("/back.xml", index([s.url("/loop.xml")]))
    s.route("/leaf.xml", urlset(_locs(s, "l", 4)))

    s = add("huge", 1000)  # 3,000 URLs, capped at 1,000
    _robots(s, "Sitemap: /sitemap.xml")
    s.route("/sitemap.xml", urlset(_locs(s, "h", 3000)))

    s = add("slow", 20)  # every answer takes 0.2 s
    _robots(s, "Sitemap: /index.xml")
    s.route("/index.xml", index([s.url(f"/s{i}.xml") for i in range(4)]), delay=0.2)
    for i in range(4):
        s.route(f"/s{i}.xml", urlset(_locs(s, f"s{i}", 5)), delay=0.2)

    s = add("retry-after", 5)  # 503 with Retry-After: 1 first
    _robots(s, "Sitemap: /sitemap.xml")
    body = urlset(_locs(s, "r", 5))
    s.route("/sitemap.xml", lambda n: Page(b"busy", 503, {"Retry-After": "1"}) if n == 0 else Page(body))

    s = add("disallowed", 0)  # robots.txt shuts sitemapkit out
    s.route(
        "/robots.txt", "User-agent: sitemapkit\nDisallow: /\n\nUser-agent: *\nAllow: /\nSitemap: /s.xml\n"
    )
    s.route("/s.xml", urlset(_locs(s, "x", 3)))

    s = add("crawl-delay", 8)  # two roots, the second an index: every request 0.4 s apart
    s.route(
        "/robots.txt",
        "User-agent: *\nCrawl-delay: 0.4\n"
        f"Sitemap: {s.url('/one.xml')}\nSitemap: {s.url('/two.xml')}\nSitemap: {s.url('/one.xml')}\n",
    )
    s.route("/one.xml", urlset(_locs(s, "o", 3)))
    s.route("/two.xml", index([s.url("/two-a.xml"), s.url("/two-b.xml")]))
    s.route("/two-a.xml", urlset(_locs(s, "ta", 3)))
    s.route("/two-b.xml", urlset(_locs(s, "tb", 2)))

    s = add("hanging", 5)  # its second sitemap never answers: the site ends at --site-timeout
    _robots(s, "Sitemap: /a.xml", "Sitemap: /b.xml")
    s.route("/a.xml", urlset(_locs(s, "a", 5)))
    s.route("/b.xml", urlset(_locs(s, "b", 5)), delay=60)

    shared = address(next(n))  # two sites on one host (two ports): read one after the other
    for name in ("shared-a", "shared-b"):
        sites[name] = s = farm.add(shared)
        expect[name] = 7
        _robots(s, "Sitemap: /sitemap.xml")
        s.route("/sitemap.xml", urlset(_locs(s, name, 7)), delay=0.05)
    return sites, expect


def _closed_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _write_sites(path: Path, sites: dict[str, Site], extra: list[str] = ()) -> Path:  # type: ignore[assignment]
    path.write_text("# test sites\n" + "".join(f"{s.base}\n" for s in sites.values()) + "".join(extra))
    return path


def _rows_per_site(dataset: Path) -> Counter[str]:
    table = pq.read_table(dataset / "urls", columns=["site"])
    return Counter(table.column("site").to_pylist())


def _sites(dataset: Path) -> dict[str, dict[str, Any]]:
    return {row["site"]: row for row in pq.read_table(dataset / "sites.parquet").to_pylist()}


@pytest.fixture
def farm() -> Any:
    with SiteFarm() as f:
        yield f


def test_harvest_many_sites(farm: SiteFarm, tmp_path: Path) -> None:
    sites, expect = build(farm)
    down = address(90)
    down_site = f"http://{down}:{_closed_port(down)}/"
    sites_file = _write_sites(tmp_path / "sites.txt", sites, [down_site + "\n", sites["plain"].base + "\n"])
    progress: list[Any] = []
    summary = harvest(sites_file, tmp_path / "ds", options=OPTIONS, on_progress=progress.append)

    rows = _rows_per_site(tmp_path / "ds")
    for name, site in sites.items():
        assert rows.get(site.base, 0) == expect[name], name
    assert rows.get(down_site, 0) == 0

    # politeness: never more than one request in flight to one host, the shared host included
    for addr, host in farm.hosts.items():
        assert host.max_in_flight <= 1, addr
    assert farm.hosts[sites["shared-a"].address].max_in_flight == 1

    by_site = _sites(tmp_path / "ds")
    assert len(by_site) == len(sites) + 1  # the duplicate line counted once
    assert by_site[down_site]["error_code"] == "unreachable"
    assert by_site[sites["missing"].base]["error_code"] == "no-sitemap"
    assert by_site[sites["disallowed"].base]["error_code"] == "robots-disallowed"
    assert sites["disallowed"].requests() == ["/robots.txt"]
    assert by_site[sites["huge"].base]["truncated"] is True
    assert by_site[sites["hanging"].base]["error_code"] == "site-timeout"
    assert by_site[sites["hanging"].base]["truncated"] is True
    # ended by the site timeout (8 s), not by the answer of /b.xml, held a minute: the farm saw the
    # harvester hang up on every request for it before that minute
    hung = [end - start for start, end, path in farm.hosts[sites["hanging"].address].log if path == "/b.xml"]
    assert hung and max(hung) < 59, hung
    assert by_site[sites["well-known-gz"].base]["via"] == "well-known"
    assert by_site[sites["plain"].base]["via"] == "robots"
    assert by_site[sites["crawl-delay"].base]["crawl_delay"] == pytest.approx(0.4)

    # Crawl-delay spaces the requests the harvester makes; Retry-After is waited for
    log = farm.hosts[sites["crawl-delay"].address].log
    assert [p for *_, p in sorted(log)] == ["/robots.txt", "/one.xml", "/two.xml", "/two-a.xml", "/two-b.xml"]
    assert_paced([start for start, _, _ in log], 0.4)
    retry = sorted(farm.hosts[sites["retry-after"].address].log)
    assert [p for *_, p in retry] == ["/robots.txt", "/sitemap.xml", "/sitemap.xml"]
    # Retry-After: 1, from the 503's arrival, after the farm noted the first request's end (a busy machine
    # only makes the gap longer)
    assert retry[2][0] - retry[1][1] >= 0.85

    # the sitemaps table: the index tree, the loop refused, the gzipped child
    maps = pq.read_table(tmp_path / "ds" / "sitemaps.parquet").to_pylist()
    index_rows = {r["url"]: r for r in maps if r["site"] == sites["index"].base}
    assert index_rows[sites["index"].url("/b.xml.gz")]["compressed"] is True
    assert index_rows[sites["index"].url("/b.xml.gz")]["parent"] == sites["index"].url("/index.xml")
    assert index_rows[sites["index"].url("/index.xml")]["kind"] == "sitemapindex"
    assert index_rows[sites["index"].url("/index.xml")]["parent"] == sites["index"].url("/robots.txt")
    loops = [r for r in maps if r["site"] == sites["looping"].base and r["error_code"] == "fetch-loop"]
    assert len(loops) == 2
    # the sitemap the URL cap cut off: what was taken from it, not what the reader had read ahead
    (cut,) = [r for r in maps if r["site"] == sites["huge"].base and r["url"].endswith("/sitemap.xml")]
    assert (cut["kind"], cut["urls"], cut["truncated"], cut["status"]) == ("urlset", 1000, True, 200)
    assert cut["bytes"] > 0 and cut["uncompressed_bytes"] > 0

    # nested extension data, readable without sitemapkit
    table = pq.read_table(tmp_path / "ds" / "urls")
    rich = [r for r in table.to_pylist() if r["loc"].endswith("/rich")]
    assert len(rich) == 1
    r = rich[0]
    assert (r["image_count"], r["video_count"], r["news_count"], r["alternate_count"]) == (1, 1, 1, 1)
    assert r["images"][0]["title"] == "A"
    assert r["videos"][0]["tags"] == ["x", "y"]
    assert r["news"]["publication_name"] == "P"
    assert r["alternates"] == [{"hreflang": "de", "href": sites["plain"].url("/de/rich")}]
    plain = next(r for r in table.to_pylist() if r["loc"] == sites["plain"].url("/p/0"))
    assert plain["lastmod"] == "2024-05-01T10:00:00+02:00"
    assert plain["lastmod_utc"].isoformat() == "2024-05-01T08:00:00+00:00"
    assert plain["sitemap"] == sites["plain"].url("/sitemap.xml")

    # the summary: adoption figures, formats, error classes; and progress reached the end
    assert json.loads((tmp_path / "ds" / "summary.json").read_text()) == summary
    assert summary["urls"] == sum(expect.values())
    assert summary["sites"] == len(sites) + 1
    assert summary["share_of_urls"]["lastmod"] == pytest.approx(
        (sum(expect.values()) - 1) / summary["urls"], 1e-3
    )
    assert summary["formats"]["gzip"] == 2
    assert summary["formats"]["sitemapindex"] >= 3
    assert summary["site_errors"]["unreachable"] == 1
    assert summary["warning_classes"]["fetch-loop"] == 2
    assert summary["site_errors"]["no-sitemap"] == 1
    assert summary["error_classes"]["parse-error"] == 1  # the broken site
    assert progress[-1].sites_done == progress[-1].sites_total == len(sites) + 1


def test_per_host_two_allows_two_requests_in_flight(farm: SiteFarm, tmp_path: Path) -> None:
    """The politeness measurement can fail: with --per-host 2 the slow site does see two at once."""
    sites, expect = build(farm)
    slow = sites["slow"]
    for i in range(
        4
    ):  # a child asked alone is held 5 s, time for a second one to come, however busy the machine
        body = urlset(_locs(slow, f"s{i}", 5))
        slow.route(
            f"/s{i}.xml", lambda _, body=body: Page(body, delay=5.0 if slow.host.in_flight < 2 else 0.2)
        )
    options = HarvestOptions(allow_private=True, retries=1, per_host=2)
    harvest([slow.base], tmp_path / "ds", options=options)
    assert _rows_per_site(tmp_path / "ds")[slow.base] == expect["slow"]
    assert slow.host.max_in_flight == 2


def test_caps_per_site(farm: SiteFarm, tmp_path: Path) -> None:
    sites, _ = build(farm)
    chosen = [sites["index"].base, sites["huge"].base]
    options = HarvestOptions(allow_private=True, max_sitemaps_per_site=2, max_urls_per_site=150)
    harvest(chosen, tmp_path / "ds", options=options)
    rows = _rows_per_site(tmp_path / "ds")
    assert rows[sites["index"].base] == 20  # two of its three sitemaps
    assert rows[sites["huge"].base] == 150
    by_site = _sites(tmp_path / "ds")
    assert by_site[sites["index"].base]["cap"] == "more than 2 sitemaps with URLs"
    assert by_site[sites["huge"].base]["cap"] == "more than 150 URLs"
    assert all(row["truncated"] for row in by_site.values())


def test_discovery_client_recycled(farm: SiteFarm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared discovery client is replaced every RECYCLE_AFTER sites, and closed when its sites end."""
    from sitemapkit.harvest import worker

    monkeypatch.setattr(worker, "RECYCLE_AFTER", 2)
    closed: list[object] = []

    class Recorded(worker.Fetcher):  # the worker's one Fetcher() call is the discovery client's
        async def aclose(self) -> None:
            closed.append(self)
            await super().aclose()

    monkeypatch.setattr(worker, "Fetcher", Recorded)
    sites, expect = build(farm)
    harvest([s.base for s in sites.values()], tmp_path / "ds", options=OPTIONS, workers=1)  # (in process)
    rows = _rows_per_site(tmp_path / "ds")
    assert {name: rows.get(site.base, 0) for name, site in sites.items()} == expect
    assert len(closed) == len(set(map(id, closed))) == (len(sites) + 1) // 2


def test_cli_bad_input_and_existing_dataset(farm: SiteFarm, tmp_path: Path) -> None:
    bad = tmp_path / "sites.txt"
    bad.write_text("example.com\nftp://example.com/\n")
    run = _cli(bad, tmp_path / "ds")
    assert run.returncode == 1
    assert f"{bad}:2:" in run.stderr and "Traceback" not in run.stderr
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    good = tmp_path / "good.txt"
    good.write_text("example.com\n")
    run = _cli(good, tmp_path / "full")
    assert run.returncode == 2
    assert "--resume" in run.stderr and "Traceback" not in run.stderr


def _cli(sites: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sitemapkit", "harvest", str(sites), "--out", str(out), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )


def _manifest_sites(dataset: Path) -> set[str]:
    done = set()
    for path in (dataset / "_manifest").glob("*.jsonl"):
        for line in path.read_text().splitlines():
            with contextlib.suppress(ValueError):
                done.add(json.loads(line)["site"])
    return done


def _sites_in_parts(dataset: Path) -> set[str]:
    found: set[str] = set()
    for part in (dataset / "urls").glob("*.parquet"):
        found.update(pq.read_table(part, columns=["site"]).column("site").to_pylist())
    return found


def children(pid: int) -> list[int]:
    """The live child processes of `pid` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            state, ppid = stat.rsplit(")", 1)[1].split()[:2]
            if int(ppid) == pid and state != "Z":
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pids: list[int], patience: float = 60.0) -> None:
    """Wait for `pids` to end (a hang guard, not a timing claim)."""
    deadline = time.monotonic() + patience
    while any(alive(pid) for pid in pids):
        assert time.monotonic() < deadline, [pid for pid in pids if alive(pid)]
        time.sleep(0.1)


def test_resume_after_kill(farm: SiteFarm, tmp_path: Path) -> None:
    """Killed (SIGKILL) while a site's rows are already in published parts, then --resume: every site
    exactly once, no duplicate rows."""
    sites, expect = build(farm)
    big = farm.add(address(60))
    _robots(big, "Sitemap: /index.xml")
    big.route("/index.xml", index([big.url(f"/c{i}.xml") for i in range(10)]))
    for i in range(10):
        big.route(f"/c{i}.xml", urlset(_locs(big, f"c{i}", 100)), delay=0.2)
    held = {"on": False}  # while on, /c5.xml answers only after a minute (or when the client gives up)
    c5 = urlset(_locs(big, "c5", 100))
    big.route("/c5.xml", lambda _: Page(c5, delay=60.0 if held["on"] else 0.2))
    sites["big"], expect["big"] = big, 1000
    del sites["hanging"], expect["hanging"]  # (the timeout is another test's); here no site may time out
    sites_file = _write_sites(tmp_path / "sites.txt", sites)
    out = tmp_path / "ds"
    args = ["--allow-private", "--max-urls-per-site", "1000", "--rows-per-file", "100", "--concurrency", "4"]
    args += ["--workers", "2"]  # worker processes: killing the parent ends them too
    command = [sys.executable, "-m", "sitemapkit", "harvest", str(sites_file), "--out", str(out), *args, "-q"]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen(command, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if out.exists() and big.base in _sites_in_parts(out) - _manifest_sites(out):
                break
            time.sleep(0.2)  # the farm shares this process: polling must leave it time
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        workers = children(proc.pid)
        assert len(workers) == 2, workers
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(10)
    wait_gone(workers)  # no worker outlives its parent (each stops once its stdin, a pipe from it, ends)
    done_before = _manifest_sites(out)
    assert big.base not in done_before
    assert big.base in _sites_in_parts(out)  # rows of an unfinished site, to be discarded
    assert not (out / "summary.json").exists()

    # a resumed run stopped by SIGTERM while it waits for /c5.xml (so demonstrably mid-way: it cannot
    # finish before the signal) ends promptly, keeping what it finished
    held["on"] = True
    asked = big.asked.get("/c5.xml", 0)
    proc = subprocess.Popen([*command, "--resume"], cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60  # a hang guard, not a timing claim
        while big.asked.get("/c5.xml", 0) == asked:
            assert time.monotonic() < deadline and proc.poll() is None, "the resumed run never asked /c5.xml"
            time.sleep(0.05)
        workers = children(proc.pid)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)  # well before /c5.xml's minute is up
        assert not [pid for pid in workers if alive(pid)]  # stopped, and waited for
    finally:
        held["on"] = False
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert "Traceback" not in err
    # one line that says what to do (it said nothing at all before)
    assert (
        err.strip()
        .splitlines()[-1]
        .endswith(f"stopped by SIGTERM; finished sites are kept: run again with --resume to finish {out}")
    ), err
    assert not (out / "summary.json").exists()

    run = subprocess.run(
        [*command[:-1], "--resume"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    # progress (a line in a log, the last one at the end) and the summary, on stderr
    assert re.search(r"harvest: (\d+)/\1 sites, ", run.stderr) and "ETA" in run.stderr
    assert re.search(r"\d+ sitemaps read, [\d,]+ URLs\n", run.stderr) and "URLs with lastmod" in run.stderr
    assert "site-timeout" not in json.loads((out / "summary.json").read_text())["site_errors"]
    rows = _rows_per_site(out)
    assert {name: rows.get(site.base, 0) for name, site in sites.items()} == expect
    table = pq.read_table(out / "urls", columns=["site", "sitemap", "loc"])
    keys = list(zip(*(table.column(c).to_pylist() for c in ("site", "sitemap", "loc")), strict=True))
    assert len(keys) == len(set(keys)) == sum(expect.values())
    listed = pq.read_table(out / "sites.parquet", columns=["site"]).column("site").to_pylist()
    assert sorted(listed) == sorted(s.base for s in sites.values())
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sites_resumed"] >= len(done_before)
    assert summary["urls"] == sum(expect.values())
    assert not list(out.rglob("*.tmp"))


@pytest.fixture(scope="module")
def local_ray() -> Any:
    """A local Ray of 2 CPUs for this module, or a clean skip where Ray is missing or cannot start."""
    ray = pytest.importorskip("ray")
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    except Exception as exc:  # any reason Ray cannot start here is a skip, not a failure
        pytest.skip(f"Ray cannot start: {exc}")
    try:
        yield ray
    finally:
        ray.shutdown()


def _table(path: Path, drop: tuple[str, ...], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    rows = [{k: v for k, v in r.items() if k not in drop} for r in pq.read_table(path).to_pylist()]
    return sorted(rows, key=lambda r: tuple(str(r[k]) for k in keys))


def test_ray_engine_gives_the_same_dataset(local_ray: Any, farm: SiteFarm, tmp_path: Path) -> None:
    sites, expect = build(farm)
    listed = [s.base for s in sites.values()]
    local = harvest(listed, tmp_path / "local", options=OPTIONS)
    progress: list[Any] = []
    on_ray = harvest(
        listed, tmp_path / "ray", engine="ray", workers=2, options=OPTIONS, on_progress=progress.append
    )
    assert on_ray["engine"] == "ray" and on_ray["workers"] == 2
    for key in ("sites", "urls", "sitemaps_read", "share_of_urls", "formats", "site_errors"):
        assert on_ray[key] == local[key], key
    assert progress[-1].sites_done == len(sites)
    # both actors wrote their own parts and manifests into the one dataset
    assert len({p.name.split("-")[1] for p in (tmp_path / "ray" / "urls").glob("*.parquet")}) == 2
    url_keys = ("site", "sitemap", "loc")
    ray_urls = _table(tmp_path / "ray" / "urls", (), url_keys)
    assert ray_urls == _table(tmp_path / "local" / "urls", (), url_keys)
    site_drop = ("seconds",)
    assert _table(tmp_path / "ray" / "sites.parquet", site_drop, ("site",)) == _table(
        tmp_path / "local" / "sites.parquet", site_drop, ("site",)
    )
    # bytes read from a sitemap a cap cut off depend on how far the reader had read ahead
    map_drop, map_keys = ("read_seconds", "bytes", "uncompressed_bytes"), ("site", "url", "parent")
    assert _table(tmp_path / "ray" / "sitemaps.parquet", map_drop, map_keys) == _table(
        tmp_path / "local" / "sitemaps.parquet", map_drop, map_keys
    )
    for addr, host in farm.hosts.items():
        assert host.max_in_flight <= 1, addr
    assert sum(_rows_per_site(tmp_path / "ray").values()) == sum(expect.values())


def test_sites_file_gz_comments_duplicates_and_errors(tmp_path: Path) -> None:
    import gzip

    from sitemapkit.core.errors import InputError
    from sitemapkit.harvest.sites import group_by_host, read_sites, shard

    path = tmp_path / "sites.txt.gz"
    with gzip.open(path, "wt") as f:
        f.write("# a list\nExample.com\n\nhttps://example.com/blog/  # same site\nhttp://example.com:8080/\n")
    sites = read_sites(path)
    assert sites == ["https://example.com/", "http://example.com:8080/"]
    assert group_by_host(sites) == [sites]  # one host: read one after the other
    assert sum(len(s) for s in shard([f"https://s{i}.example/" for i in range(50)], 3)) == 50
    bad = tmp_path / "bad.txt"
    bad.write_text("example.com\nmailto:x@example.com\n")
    with pytest.raises(InputError, match=r"bad\.txt:2: 'mailto:x@example\.com'"):
        read_sites(bad)


def test_allow_private_reaches_the_fetch_policy() -> None:
    assert HarvestOptions(allow_private=True).fetch_options().policy.allow_private is True
    assert HarvestOptions().fetch_options().policy.allow_private is False
    assert HarvestOptions(allow_private=True).discovery_fetch_options(4).policy.allow_private is True


def test_cli_engine_ray_starts_its_own_ray(farm: SiteFarm, tmp_path: Path) -> None:
    """`--engine ray` without `--ray-address`: a local Ray for the run, then the same rows."""
    pytest.importorskip("ray")
    sites, expect = build(farm)
    chosen = {name: sites[name] for name in ("plain", "index", "well-known-gz")}
    sites_file = _write_sites(tmp_path / "sites.txt", chosen)
    run = _cli(sites_file, tmp_path / "ds", *CLI_OPTIONS, "--engine", "ray", "--workers", "2")
    if run.returncode != 0 and "cannot start or reach" in run.stderr:
        pytest.skip(f"Ray cannot start: {run.stderr.strip()[-300:]}")
    assert run.returncode == 0, run.stderr
    rows = _rows_per_site(tmp_path / "ds")
    assert {name: rows[site.base] for name, site in chosen.items()} == {name: expect[name] for name in chosen}
    assert json.loads((tmp_path / "ds" / "summary.json").read_text())["workers"] == 2


def test_url_rows_match_a_row_by_row_layout(tmp_path: Path) -> None:
    """The writer lays rows out a batch and a column at a time; each row must hold what that entry says,
    laid out one dict per row by pyarrow itself, whatever the mix (extension data in some rows, dates
    shared between rows, one instant written with two offsets), through row groups and part files."""
    import dataclasses
    import datetime as dt
    import random

    from sitemapkit.core.dates import format_w3c
    from sitemapkit.core.model import Alternate, Image, News, UrlEntry, Video
    from sitemapkit.harvest.rows import COUNTED, url_schema
    from sitemapkit.harvest.store import PartWriter, prepare

    rng = random.Random(17)
    plus2 = dt.datetime(2024, 5, 1, 10, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    dates = [None, dt.date(2024, 1, 2), plus2, plus2.astimezone(dt.UTC), dt.datetime(2023, 3, 4, 5, 6, 7)]

    def entry(i: int, sitemap: str) -> UrlEntry:
        def some(make: Any, most: int) -> tuple[Any, ...]:
            return tuple(make(k) for k in range(rng.choice([0, 0, 0, *range(1, most + 1)])))

        return UrlEntry(
            f"{sitemap}/{i}",
            rng.choice(dates),
            rng.choice([None, "daily"]),
            rng.choice([None, 0.5, 1.0]),
            images=some(lambda k: Image(f"https://i/{i}/{k}", title=rng.choice([None, "t"])), 2),
            videos=some(
                lambda k: Video(
                    title=f"v{k}", duration=k, expiration_date=rng.choice(dates), live=True, tags=("a", "b")
                ),
                1,
            ),
            news=rng.choice([None, None, News("P", "en", rng.choice(dates[1:]), "T")]),  # type: ignore[arg-type]
            alternates=some(lambda k: Alternate(f"x{k}", f"https://a/{i}/{k}"), 2),
            sitemap=sitemap,
        )

    def expected(site: str, e: UrlEntry) -> dict[str, Any]:
        def w3c(value: Any) -> str | None:
            return format_w3c(value) if value is not None else None

        def video(v: Video) -> dict[str, Any]:
            out = dataclasses.asdict(v)
            out.update(
                expiration_date=w3c(v.expiration_date),
                publication_date=w3c(v.publication_date),
                tags=list(v.tags),
            )
            return out

        utc = None
        if isinstance(e.lastmod, dt.datetime):
            utc = e.lastmod.replace(tzinfo=e.lastmod.tzinfo or dt.UTC).astimezone(dt.UTC)
        elif e.lastmod is not None:
            utc = dt.datetime(e.lastmod.year, e.lastmod.month, e.lastmod.day, tzinfo=dt.UTC)
        news = None
        if e.news is not None:
            news = dataclasses.asdict(e.news) | {"publication_date": w3c(e.news.publication_date)}
        return {
            "site": site,
            "sitemap": e.sitemap,
            "loc": e.loc,
            "lastmod": w3c(e.lastmod),
            "lastmod_utc": utc,
            "changefreq": e.changefreq,
            "priority": e.priority,
            "image_count": len(e.images),
            "video_count": len(e.videos),
            "news_count": int(e.news is not None),
            "alternate_count": len(e.alternates),
            "images": [dataclasses.asdict(i) for i in e.images],
            "videos": [video(v) for v in e.videos],
            "news": news,
            "alternates": [dataclasses.asdict(a) for a in e.alternates],
        }

    prepare(tmp_path / "ds", resume=False)
    writer = PartWriter(tmp_path / "ds", "w", rows_per_file=40, row_group_rows=7)
    rows: list[dict[str, Any]] = []
    counts = Counter[str]()
    for b in range(30):
        site = f"https://s{b % 3}.example/"
        batch = [entry(i, f"{site}map{b}") for i in range(rng.choice([1, 3, 7, 12]))]
        rows += [expected(site, e) for e in batch]
        got = writer.add_batch(site, batch)
        counts.update(dict(zip(COUNTED, got, strict=True)))
        assert got == tuple(
            sum(1 for r in rows[-len(batch) :] if r[k] not in (None, []))
            for k in ("lastmod", "changefreq", "priority", "images", "videos", "news", "alternates")
        )
    writer.close()
    assert 0 < counts["images"] < len(rows) and 0 < counts["news"] < len(rows)
    parts = [pq.ParquetFile(tmp_path / "ds" / "urls" / name) for name in writer.files]
    assert len(parts) > 2
    for part in parts:  # full row groups but the last of each part
        sizes = [part.metadata.row_group(g).num_rows for g in range(part.num_row_groups)]
        assert all(size == 7 for size in sizes[:-1]) and 0 < sizes[-1] <= 7
    written = pa.concat_tables([part.read() for part in parts])
    assert written.schema == url_schema()
    assert written.to_pylist() == pa.Table.from_pylist(rows, schema=url_schema()).to_pylist()


def test_the_summary_text_counts_in_words() -> None:
    from sitemapkit.cli.harvest import _describe

    summary = {
        "sites": 1,
        "sites_with_sitemaps": 1,
        "sites_via_robots": 1,
        "sites_via_well_known": 0,
        "sites_with_errors": 0,
        "sitemaps_read": 1,
        "urls": 1,
        "share_of_urls": {"lastmod": 1.0},
        "seconds": 0.5,
        "sites_this_run": 1,
        "urls_this_run": 1,
        "urls_per_second": 2,
    }
    text = _describe(summary)
    assert text.startswith("1 site (1 with sitemaps")
    assert "1 sitemap read, 1 URL\n" in text and "this run: 1 site, 1 URL in 0.5 s" in text


def test_the_collector_threshold_is_raised_while_a_worker_runs_then_restored(
    farm: SiteFarm, tmp_path: Path
) -> None:
    import gc

    from sitemapkit.harvest.worker import GC_THRESHOLD

    sites, _ = build(farm)
    seen: list[tuple[int, int, int]] = []
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 11, 12)
        harvest(
            [sites["slow"].base],
            tmp_path / "ds",
            options=OPTIONS,
            on_progress=lambda _: seen.append(gc.get_threshold()),
        )
        assert seen[0] == (GC_THRESHOLD, 11, 12)  # ticks come from inside the run
        assert gc.get_threshold() == (700, 11, 12)
    finally:
        gc.set_threshold(*before)


def test_harvest_cli_without_pyarrow_names_the_extra(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "sys.modules['pyarrow'] = None\n"  # `import pyarrow` fails as if it were not installed
        "sys.argv = ['sitemapkit', 'harvest', 'sites.txt', '--out', 'ds']\n"
        "from sitemapkit.cli import main\n"
        "main()\n"
    )
    (tmp_path / "sites.txt").write_text("example.com\n")
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert proc.returncode == 2, proc.stderr
    assert "harvest writes Parquet with pyarrow: pip install 'sitemapkit[parquet]'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "ds").exists()
