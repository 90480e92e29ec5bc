"""Benchmark: read a 1,000,000-URL sitemap tree over HTTP (an index of 20 gzipped sitemaps of 50,000 URLs).

    python bench/bench_parse_tree.py [--children 20] [--urls 50000] [--skip-peers]

The tree is built once in bench/.work/parse_tree/ and served by `python -m http.server` on 127.0.0.1 in a
separate process. Each contender runs in a fresh Python process (bench/common.py), so its peak RSS is its own:

- sitemapkit.read(index_url), counting entries (and on a quarter of the tree, to show RSS does not grow);
- sitemapkit's parser alone on the same bodies, fetched sequentially (the walk's cost is the difference);
- a floor: httpx download + gzip + lxml iterparse of <loc> only, sequential, no checks at all;
- ultimate-sitemap-parser, advertools and scrapy's Sitemap when importable (`pip install -e '.[bench]'`);
- and to a file, as people run it: `sitemapkit parse INDEX --format jsonl|csv|parquet > FILE`, each a whole
  process (start-up included), beside ultimate-sitemap-parser writing the same URLs as JSONL.
"""

from __future__ import annotations

import argparse
import compileall
import datetime as dt
import gzip
import importlib.util
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import WORK, Result, busy, print_table, run_cli, run_python, serve_folder, write_index_templates

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def build_tree(folder: Path, children: int, urls: int) -> None:
    """Write sitemap_index.xml (all children), sitemap_quarter.xml (a quarter of them), the gzipped
    children and a robots.txt naming the index. Skipped when already built with the same shape."""
    marker = folder / f".built-{children}x{urls}"
    if marker.exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    base = "http://www.example.com"
    day = dt.date(2024, 1, 1)
    names = []
    for c in range(1, children + 1):
        name = f"sitemap-{c:02d}.xml.gz"
        names.append(name)
        parts = [f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}">\n']
        for i in range(urls):
            n = (c - 1) * urls + i
            lastmod = (day + dt.timedelta(days=n % 365)).isoformat()
            parts.append(
                f"<url><loc>{base}/products/item-{n}.html?ref=sitemap&amp;v=2</loc>"
                f"<lastmod>{lastmod}</lastmod><changefreq>weekly</changefreq><priority>0.6</priority></url>\n"
            )
        parts.append("</urlset>\n")
        (folder / name).write_bytes(gzip.compress("".join(parts).encode(), 6))

    write_index_templates(folder, names)
    marker.touch()


def serve(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start `python -m http.server` on a free port; write the index files with its address."""

    def prepare(base: str) -> None:
        for template in folder.glob("*.xml.in"):
            (folder / template.name[: -len(".in")]).write_text(template.read_text().replace("{base}", base))
        (folder / "robots.txt").write_text(f"User-agent: *\nAllow: /\nSitemap: {base}/sitemap_index.xml\n")

    return serve_folder(folder, prepare)


SITEMAPKIT = """
from sitemapkit.reader.walk import read
result = sum(1 for _ in read({index!r}))
"""

PARSER_ONLY = """
import httpx
from sitemapkit.reader.parser import parse_bytes
result = 0
with httpx.Client() as client:
    children = [e.loc for e in parse_bytes(client.get({index!r}).content)]
    for url in children:
        for _ in parse_bytes(client.get(url).content, url):
            result += 1
"""

FLOOR = """
import gzip, io, httpx
from lxml import etree
NS = "{{http://www.sitemaps.org/schemas/sitemap/0.9}}"
def locs(data, tag):
    for _, el in etree.iterparse(io.BytesIO(data), tag=NS + tag):
        yield el.findtext(NS + "loc")
        el.clear()
        while el.getprevious() is not None:
            del el.getparent()[0]
result = 0
with httpx.Client() as client:
    children = list(locs(client.get({index!r}).content, "sitemap"))
    for url in children:
        body = client.get(url).content
        if body[:2] == b"\\x1f\\x8b":
            body = gzip.decompress(body)
        for _ in locs(body, "url"):
            result += 1
"""

USP = """
import logging
logging.disable(logging.CRITICAL)
from usp.tree import sitemap_tree_for_homepage
tree = sitemap_tree_for_homepage({base!r} + "/", use_robots=True, use_known_paths=False)
result = sum(1 for _ in tree.all_pages())
"""

USP_JSONL = """
import json, logging
logging.disable(logging.CRITICAL)
from usp.tree import sitemap_tree_for_homepage
tree = sitemap_tree_for_homepage({base!r} + "/", use_robots=True, use_known_paths=False)
result = 0
with open({out!r}, "w", encoding="utf-8") as f:
    for page in tree.all_pages():
        f.write(json.dumps(page.to_dict(), default=str) + "\\n")
        result += 1
"""

ADVERTOOLS = """
import logging
logging.disable(logging.CRITICAL)
import advertools as adv
result = len(adv.sitemap_to_df({index!r}))
"""

SCRAPY = """
import gzip, httpx
from scrapy.utils.sitemap import Sitemap
result = 0
with httpx.Client() as client:
    index = Sitemap(client.get({index!r}).content)
    for child in index:
        body = client.get(child["loc"]).content
        if body[:2] == b"\\x1f\\x8b":
            body = gzip.decompress(body)
        for _ in Sitemap(body):
            result += 1
"""


SRC = Path(__file__).resolve().parent.parent / "src" / "sitemapkit"


def byte_compile() -> None:
    """Byte-compile sitemapkit's sources, as pip does when it installs a package (the peers measured here
    were installed so). With PYTHONDONTWRITEBYTECODE set, an editable install would otherwise compile
    every module from source in every contender process, which no installed copy does."""
    compileall.compile_dir(SRC, quiet=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--children", type=int, default=20)
    ap.add_argument("--urls", type=int, default=50_000)
    ap.add_argument("--skip-peers", action="store_true", help="Only sitemapkit and the floor.")
    ap.add_argument(
        "--busy", type=int, default=0, metavar="N", help="N CPU-bound processes beside every run."
    )
    args = ap.parse_args()
    byte_compile()

    folder = WORK / "parse_tree"
    t0 = time.perf_counter()
    build_tree(folder, args.children, args.urls)
    print(
        f"tree: {args.children} x {args.urls:,} URLs in {folder} ({time.perf_counter() - t0:.1f} s to build)"
    )
    proc, base = serve(folder)
    index, quarter = f"{base}/sitemap_index.xml", f"{base}/sitemap_quarter.xml"
    total = args.children * args.urls
    if args.busy:
        print(f"with {args.busy} CPU-bound process(es) beside every run")
    with busy(args.busy):
        try:
            results: list[Result] = [
                run_python("floor (httpx+gzip+lxml, loc only)", FLOOR.format(index=index)),
                run_python("sitemapkit.read", SITEMAPKIT.format(index=index)),
                run_python(
                    "sitemapkit parser only, sequential",
                    PARSER_ONLY.format(index=index),
                    note="bodies via httpx, no walk: what the parser costs",
                ),
                run_python(
                    "sitemapkit.read (quarter tree)",
                    SITEMAPKIT.format(index=quarter),
                    note="peak RSS should match the full tree's",
                ),
            ]
            peers = [
                ("usp", "ultimate-sitemap-parser", USP.format(base=base)),
                ("advertools", "advertools.sitemap_to_df", ADVERTOOLS.format(index=index)),
                ("scrapy", "scrapy Sitemap (bodies via httpx)", SCRAPY.format(index=index)),
            ]
            for module, name, code in [] if args.skip_peers else peers:
                if importlib.util.find_spec(module) is None:
                    results.append(Result(name, 0, 0.0, 0.0, "not installed (pip install -e '.[bench]')"))
                    continue
                results.append(run_python(name, code))
            exports = to_files(base, index, skip_peers=args.skip_peers)
        finally:
            proc.terminate()
            proc.wait()
    for r in results:
        if r.count and r.count != total and "quarter" not in r.name:
            r.note = (r.note + f" (expected {total:,})").strip()
    print_table(
        f"read a {total:,}-URL tree over HTTP ({args.children} gzipped sitemaps)", results, "sitemapkit.read"
    )
    ours = next(r for r in results if r.name == "sitemapkit.read")
    for r in results:
        if r is not ours and r.rate and ours.rate and not r.name.startswith("sitemapkit"):
            print(f"sitemapkit.read is {ours.rate / r.rate:.2f}x {r.name}")
    for r in exports:
        if r.count and r.count != total:
            r.note = (r.note + f" (expected {total:,})").strip()
    print_table(f"the same tree to a file, whole processes ({total:,} URLs)", exports, USP_NAME)
    peer = next((r for r in exports if r.name == USP_NAME and r.rate), None)
    for r in exports:
        if peer is not None and r is not peer and r.rate:
            print(f"{r.name} is {r.rate / peer.rate:.2f}x {peer.name}, peak {r.peak_mb:.0f} MB")


USP_NAME = "ultimate-sitemap-parser -> JSONL"


def _lines(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def _parquet_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(path).metadata.num_rows)


def to_files(base: str, index: str, *, skip_peers: bool) -> list[Result]:
    """`sitemapkit parse --format F > FILE` for each format, and ultimate-sitemap-parser writing JSONL."""
    out = WORK / "parse_out"
    out.mkdir(parents=True, exist_ok=True)
    results: list[Result] = []
    if skip_peers:
        pass
    elif importlib.util.find_spec("usp") is None:
        results.append(Result(USP_NAME, 0, 0.0, 0.0, "not installed (pip install -e '.[bench]')"))
    else:
        code = USP_JSONL.format(base=base, out=str(out / "usp.jsonl"))
        results.append(run_python(USP_NAME, code, note="json.dumps(page.to_dict()) per URL"))
    counters = {"jsonl": _lines, "csv": lambda p: _lines(p) - 1, "parquet": _parquet_rows}
    for fmt, count in counters.items():
        if fmt == "parquet" and importlib.util.find_spec("pyarrow") is None:
            results.append(Result("sitemapkit parse --format parquet", 0, 0.0, 0.0, "pyarrow not installed"))
            continue
        results.append(
            run_cli(
                f"sitemapkit parse --format {fmt}",
                ["parse", index, "--format", fmt],
                out / f"urls.{fmt}",
                count,
                note="> file, the whole process",
            )
        )
    # one core: the walk parses every sitemap itself (what parse did before its leaf workers)
    results.append(
        run_cli(
            "sitemapkit parse --format jsonl --workers 1",
            ["parse", index, "--format", "jsonl", "--workers", "1"],
            out / "urls-one-core.jsonl",
            _lines,
            note="one process parses (no leaf workers)",
        )
    )
    if (out / "urls.jsonl").read_bytes() != (out / "urls-one-core.jsonl").read_bytes():
        results[-1].note += "; NOT THE SAME BYTES as with workers"
    else:
        results[-1].note += "; same bytes as with workers"
    return results


if __name__ == "__main__":
    main()
