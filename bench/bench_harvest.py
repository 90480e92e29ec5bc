"""Harvest: N loopback sites x M URLs each, read by `sitemapkit harvest` (local engine, Ray with 1 and 2
workers) and by ultimate-sitemap-parser looping over the same sites, in the same run.

Every site is its own loopback address (127.0.0.2, 127.0.0.3, ...) with a robots.txt naming a sitemap
index of two urlsets, served from memory by one asyncio process (bench/siteserver.py's handler).
Each contender runs in a fresh process. Peak RSS: for the local engine, that of the whole process tree,
the VmHWM of the process plus the VmHWM of each worker process it starts (read from /proc while they
live): an upper bound, as the peaks need not coincide; the note adds the most the tree held at once (the
sum of resident sizes, sampled every 0.1 s). For Ray, the highest of the driver and any actor.

`cpu s` is the CPU time of the contender's process (for Ray: of the driver only, the actors are not its
children). `--compare DIR` adds `local-compare`, the local engine run from another checkout's `src/`
(say a worktree of main), for a before/after measured in the same run, on the same farm.

    python bench/bench_harvest.py                 # 1,000 sites x 5,000 URLs (the issue's size)
    python bench/bench_harvest.py --small         # 100 sites x 1,000 URLs, a quick look
    python bench/bench_harvest.py --sites 200 --urls 5000 --only local,usp
    python bench/bench_harvest.py --small --only local,local-compare --compare ../main
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from common import WORK, Result, busy, print_table, run_command
from siteserver import answer, handler

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
CONTENDERS = ("local", "local1", "local-compare", "ray1", "ray2", "usp")
DEFAULT = ("local", "local1", "ray1", "ray2", "usp")  # and local-compare, after local, given --compare

_MONITOR = """
import threading, time, os, json
PEAK = {"actor_kb": 0}
def _actors():
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:  # Ray names an actor's process so
                    if f.read().startswith(b"ray::HarvestActor"):
                        found.append(pid)
            except OSError:
                pass
    return found
def _watch():
    # the whole of /proc is scanned only until the actors are found (a scan costs the driver CPU that
    # the actors would use); then their VmHWM (peak RSS) is read, as long as they live
    pids = []
    while True:
        if len(pids) < WORKERS:
            pids = _actors()
        for pid in pids:
            try:
                with open(f"/proc/{pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            PEAK["actor_kb"] = max(PEAK["actor_kb"], int(line.split()[1]))
            except OSError:
                pids = []
        time.sleep(0.2 if len(pids) < WORKERS else 0.5)
threading.Thread(target=_watch, daemon=True).start()
"""

_TREE = """
import threading, time, os, glob
TREE = {}
SUM = {"kb": 0}
def _kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return 0
def _tree():
    # the worker processes (children of this one): the most each held while it lived, and the most the
    # whole tree held at once (the sum of the resident sizes, sampled)
    while True:
        total = _kb("self", "VmRSS:")
        for path in glob.glob(f"/proc/{os.getpid()}/task/*/children"):
            try:
                pids = open(path).read().split()
            except OSError:
                continue
            for pid in pids:
                try:
                    TREE[pid] = max(TREE.get(pid, 0), _kb(pid, "VmHWM:"))
                    total += _kb(pid, "VmRSS:")
                except OSError:
                    pass
        SUM["kb"] = max(SUM["kb"], total)
        time.sleep(0.1)
threading.Thread(target=_tree, daemon=True).start()
"""

_HARVEST = """
import sys, time, json, shutil
sys.path.insert(0, {repo!r})
WORKERS = {workers}
TREE = {{}}
{monitor}
from sitemapkit.harvest import HarvestOptions, harvest
sites = open({sites!r}).read().split()
out = {out!r}
shutil.rmtree(out, ignore_errors=True)
workers = {workers}
if workers:
    import ray
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
t0 = time.perf_counter()
summary = harvest(sites, out, engine="ray" if workers else "local", workers=workers or {local_workers},
                  options=HarvestOptions(allow_private=True, concurrency={concurrency}))
seconds = time.perf_counter() - t0
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
note = f"{{summary['sites_with_sitemaps']}} sites read"
if workers:
    time.sleep(0.3)
    note += f"; driver {{peak / 1024:.0f}} MB, largest actor {{PEAK['actor_kb'] / 1024:.0f}} MB"
    peak = max(peak, PEAK["actor_kb"])
elif TREE:
    time.sleep(0.3)
    bound = peak + sum(TREE.values())
    note += (f"; {{len(TREE)}} workers; tree sampled {{SUM['kb'] / 1024:.0f}} MB; peaks: parent "
             f"{{peak / 1024:.0f}} + " + " + ".join(f"{{kb / 1024:.0f}}" for kb in TREE.values())
             + f" = {{bound / 1024:.0f}} MB")
    peak = bound
print("BENCH_RESULT " + json.dumps({{"count": summary["urls"], "seconds": seconds, "peak_kb": peak,
                                     "note": note}}))
"""

_USP = """
import sys, time, json, logging
logging.disable(logging.CRITICAL)
from usp.tree import sitemap_tree_for_homepage
sites = open({sites!r}).read().split()
t0 = time.perf_counter()
count = 0
read = 0
for site in sites:
    tree = sitemap_tree_for_homepage(site)
    n = sum(1 for _ in tree.all_pages())
    count += n
    read += n > 0
seconds = time.perf_counter() - t0
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print("BENCH_RESULT " + json.dumps({{"count": count, "seconds": seconds, "peak_kb": peak,
                                     "note": f"{{read}} sites read"}}))
"""


def serve(sites: int, urls: int, listing: Path) -> None:
    """The farm process: one asyncio server per site address (127.0.0.2, ...), all on one port, each
    answering robots.txt, an index and its two urlsets from memory; write their list, serve until stdin
    closes."""
    half = max(1, urls // 2)
    addresses = [address(n) for n in range(sites)]
    port = _port_under_10000(addresses[0])

    def urlset(base: str, part: str, n: int) -> bytes:
        rows = "".join(
            f"<url><loc>{base}{part}/{i}</loc><lastmod>2024-05-01T10:00:00+02:00</lastmod>"
            "<changefreq>daily</changefreq><priority>0.5</priority></url>\n"
            for i in range(n)
        )
        return (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}">\n{rows}</urlset>\n').encode()

    def site(host: str) -> dict[bytes, tuple[bytes, bytes]]:
        base = f"http://{host}:{port}/"
        children = "".join(f"<sitemap><loc>{base}{p}.xml</loc></sitemap>\n" for p in ("a", "b"))
        return {
            b"/robots.txt": answer(
                f"User-agent: *\nSitemap: {base}sitemap_index.xml\n".encode(), "text/plain"
            ),
            b"/sitemap_index.xml": answer(
                f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="{NS}">\n'
                f"{children}</sitemapindex>\n".encode(),
                "application/xml",
            ),
            b"/a.xml": answer(urlset(base, "a", half), "application/xml"),
            b"/b.xml": answer(urlset(base, "b", urls - half), "application/xml"),
        }

    async def farm() -> None:
        servers = [
            await asyncio.start_server(handler(site(host)), host, port, backlog=1024) for host in addresses
        ]
        listing.write_text("".join(f"http://{host}:{port}/\n" for host in addresses))
        print("READY", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        for server in servers:
            server.close()

    asyncio.run(farm())


def address(n: int) -> str:
    """The n-th loopback address from 127.0.0.2 on (n = 0, 1, ...)."""
    n += 2
    return f"127.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"


def _port_under_10000(host: str) -> int:
    """A port free on `host`, below 10,000 like real sites' (80, 443, 8080): the reader's fast path for
    plain URLs takes ports of at most four digits."""
    for port in range(8800, 10000):
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return port
    raise SystemExit("no free port below 10,000")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sites", type=int, default=1000)
    ap.add_argument("--urls", type=int, default=5000, help="URLs per site")
    ap.add_argument("--small", action="store_true", help="100 sites x 1,000 URLs")
    ap.add_argument("--concurrency", type=int, default=256, help="sites at once (local: all; ray: per actor)")
    ap.add_argument("--only", default=",".join(DEFAULT), help=f"comma-separated, of {', '.join(CONTENDERS)}")
    ap.add_argument("--compare", type=Path, help="another checkout, for the local-compare contender")
    ap.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--busy", type=int, default=0, metavar="N", help="N CPU-bound processes beside.")
    args = ap.parse_args()
    if args.small:
        args.sites, args.urls = 100, 1000
    if args.serve:
        serve(args.sites, args.urls, args.serve)
        return 0
    chosen = [c for c in args.only.split(",") if c]
    unknown = set(chosen) - set(CONTENDERS)
    if unknown:
        ap.error(f"unknown contender(s): {', '.join(sorted(unknown))}")
    if "local-compare" in chosen and not (args.compare and (args.compare / "src" / "sitemapkit").is_dir()):
        ap.error("local-compare needs --compare DIR, a checkout of sitemapkit (with src/sitemapkit)")
    if args.compare and "local-compare" not in chosen:
        chosen.insert(chosen.index("local") + 1 if "local" in chosen else 0, "local-compare")
    WORK.mkdir(exist_ok=True)
    listing = WORK / "harvest-sites.txt"
    farm = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--serve",
            str(listing),
            "--sites",
            str(args.sites),
            "--urls",
            str(args.urls),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert farm.stdout is not None
        if farm.stdout.readline().strip() != "READY":
            raise SystemExit("the site farm did not start")
        with busy(args.busy):
            results = [_run(name, listing, args.concurrency, args.compare) for name in chosen]
    finally:
        if farm.stdin is not None:
            farm.stdin.close()
        farm.wait(30)
    title = f"harvest: {args.sites:,} loopback sites x {args.urls:,} URLs (items = URLs; sites/s in note)"
    for r in results:
        r.note = f"{args.sites / r.seconds:,.1f} sites/s; {r.note}" if r.seconds and r.count else r.note
    print_table(title, results, baseline="ultimate-sitemap-parser" if "usp" in chosen else None)
    shutil.rmtree(WORK / "harvest-out", ignore_errors=True)
    return 0


def _run(name: str, listing: Path, concurrency: int, compare: Path | None = None) -> Result:
    if name == "usp":
        return run_command(
            "ultimate-sitemap-parser", [sys.executable, "-c", _USP.format(sites=str(listing))], cwd=BENCH
        )
    workers = {"local": 0, "local1": 0, "local-compare": 0, "ray1": 1, "ray2": 2}[name]
    src = compare.resolve() / "src" if name == "local-compare" and compare else REPO / "src"
    code = _HARVEST.format(
        repo=str(src),
        monitor=_MONITOR if workers else _TREE,
        local_workers=1 if name == "local1" else None,
        sites=str(listing),
        out=str(WORK / "harvest-out"),
        workers=workers,
        concurrency=concurrency,
    )
    label = f"sitemapkit harvest, ray {workers} worker(s)" if workers else "sitemapkit harvest, local"
    if name == "local1":
        label += ", 1 process"
    if name == "local-compare":
        label += f", {compare.name if compare else '?'}"
    return run_command(label, [sys.executable, "-c", code], cwd=BENCH)


if __name__ == "__main__":
    sys.exit(main())
