"""`generate --gzip` on the input shapes people have, 1,000,000 URLs each: a `URL<TAB>lastmod` list, the
4-field sitemap_gen-style list (`URL<TAB>lastmod<TAB>changefreq<TAB>priority`), a CSV
`loc,lastmod,changefreq,priority`, JSONL with an image per line, and the 4-field list with 2% odd lines
(relative, duplicate, future date, bad priority, capitals). For each, the CLI as a whole process writing its
real gzip output beside a naive loop (csv or json module, the URL escaped, the other fields written as they
stand, gzip level 6, no checks) in the same run: three alternating runs each, the median counts.
`--against SRC` also runs the CLI of another checkout (its `src` folder, such as a clean checkout of the
commit before a change) in turn with the two, so before and after see the same machine.
Run: `python bench/bench_generate_shapes.py [--urls N] [--only SHAPE] [--against SRC]`."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import WORK, Result, busy, print_table, run_cli, run_python

BASE = "https://www.example.com/"


def _url(i: int) -> str:
    return f"{BASE}catalog/category-{i % 250}/item-{i}?colour=blue&size={i % 40}"


def _date(i: int) -> str:
    return f"2025-{i % 12 + 1:02d}-{i % 28 + 1:02d}"


_FREQS = ("daily", "weekly", "monthly")
_PRIORITIES = ("0.5", "0.8", "1.0", "0.3")


def _odd(i: int, line: str) -> str:
    """One of the odd lines, for every 50th line (2%)."""
    kind = (i // 50) % 5
    if kind == 0:
        return line.replace(BASE, "/", 1)  # relative: resolved against the base URL
    if kind == 1:
        return f"{_url(i - 1)}\t{_date(i)}\tdaily\t0.5"  # a duplicate of the line before
    if kind == 2:
        return line.replace("2025-", "2999-", 1)  # a lastmod in the future: left out
    if kind == 3:
        return line.rsplit("\t", 1)[0] + "\t1.5"  # priority out of range: dropped
    return line.replace("https://www.example.com/catalog", "HTTPS://WWW.Example.com/Catalog", 1)


def make_input(shape: str, n: int) -> Path:
    suffix = {"csv": ".csv", "jsonl": ".jsonl"}.get(shape, ".txt")
    path = WORK / f"shape-{shape}-{n}{suffix}"
    if path.exists():
        return path
    WORK.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        if shape == "csv":
            f.write("loc,lastmod,changefreq,priority\n")
        for i in range(n):
            url, date, freq, prio = _url(i), _date(i), _FREQS[i % 3], _PRIORITIES[i % 4]
            if shape == "list2":
                f.write(f"{url}\t{date}T{i % 24:02d}:{i % 60:02d}:00+00:00\n")
            elif shape == "csv":
                f.write(f"{url},{date},{freq},{prio}\n")
            elif shape == "jsonl":
                image = f"{BASE}img/{i}.jpg"
                f.write(f'{{"loc": "{url}", "lastmod": "{date}", "images": [{{"loc": "{image}"}}]}}\n')
            else:
                line = f"{url}\t{date}\t{freq}\t{prio}"
                if shape == "odd" and i % 50 == 49:
                    line = _odd(i, line)
                f.write(line + "\n")
    return path


_NAIVE = """
import csv, gzip, json, os
from xml.sax.saxutils import escape
os.makedirs({out!r}, exist_ok=True)
result = 0
with open({src!r}, encoding="utf-8", newline="") as f, gzip.open(
    os.path.join({out!r}, "sitemap.xml.gz"), "wt", encoding="utf-8", compresslevel=6
) as w:
    w.write('<?xml version="1.0" encoding="UTF-8"?>\\n<urlset xmlns="http://www.sitemaps.org/schemas/'
            'sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">\\n')
    if {shape!r} == "jsonl":
        rows = ((o["loc"], o.get("lastmod"), o.get("images", [])) for o in map(json.loads, f))
        for loc, lastmod, images in rows:
            parts = ["<url><loc>", escape(loc), "</loc>"]
            if lastmod:
                parts += ["<lastmod>", escape(lastmod), "</lastmod>"]
            for image in images:
                parts += ["<image:image><image:loc>", escape(image["loc"]), "</image:loc></image:image>"]
            parts.append("</url>\\n")
            w.write("".join(parts))
            result += 1
    elif {shape!r} == "list2":
        for loc, lastmod in csv.reader(f, delimiter="\\t"):
            w.write("<url><loc>" + escape(loc) + "</loc><lastmod>" + lastmod + "</lastmod></url>\\n")
            result += 1
    else:
        reader = csv.reader(f, delimiter="," if {shape!r} == "csv" else "\\t")
        if {shape!r} == "csv":
            next(reader)
        for loc, lastmod, changefreq, priority in reader:
            w.write(
                "<url><loc>" + escape(loc) + "</loc><lastmod>" + lastmod + "</lastmod><changefreq>"
                + changefreq + "</changefreq><priority>" + priority + "</priority></url>\\n"
            )
            result += 1
    w.write("</urlset>\\n")
"""


def naive(shape: str, src: Path, out: Path) -> Result:
    shutil.rmtree(out, ignore_errors=True)
    return run_python("naive loop", _NAIVE.format(src=str(src), out=str(out), shape=shape))


def cli(src: Path, out: Path, against: str | None = None) -> Result:
    """The CLI on `src`; `against`: the `src` folder of another checkout to run instead (on PYTHONPATH)."""
    shutil.rmtree(out, ignore_errors=True)
    args = ["generate", str(src), "--base-url", BASE, "--out", str(out), "--gzip"]
    name = "sitemapkit generate --gzip" + (" (against)" if against else "")
    previous = os.environ.get("PYTHONPATH")
    if against:
        os.environ["PYTHONPATH"] = against
    try:
        return run_cli(name, args, WORK / "shape-stdout.txt", lambda _: count_items(src))
    finally:
        if against:
            if previous is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = previous


def count_items(src: Path) -> int:
    with open(src, "rb") as f:
        lines = sum(1 for _ in f)
    return lines - 1 if src.suffix == ".csv" else lines


def median(results: list[Result]) -> Result:
    ordered = sorted(results, key=lambda r: r.seconds)
    middle = ordered[len(ordered) // 2]
    middle.note = f"median of {len(results)}: " + ", ".join(f"{r.seconds:.2f}" for r in results) + " s"
    middle.note += "; cpu " + ", ".join(f"{r.cpu:.2f}" for r in results) + " s"
    middle.peak_mb = max(r.peak_mb for r in results)
    return middle


SHAPES = {
    "list2": "URL<TAB>lastmod list",
    "list4": "4-field list (sitemap_gen style)",
    "csv": "CSV loc,lastmod,changefreq,priority",
    "jsonl": "JSONL with an image per URL",
    "odd": "4-field list, 2% odd lines",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--urls", type=int, default=1_000_000)
    ap.add_argument("--only", choices=sorted(SHAPES), action="append")
    ap.add_argument("--against", metavar="SRC", help="the src folder of another checkout to run in turn")
    ap.add_argument("--busy", type=int, default=0, metavar="N", help="N CPU-bound processes beside.")
    args = ap.parse_args()
    with busy(args.busy):
        shapes(args)


def shapes(args: argparse.Namespace) -> None:
    """Every shape asked for, each contender three times in turn."""
    against = str(Path(args.against).resolve()) if args.against else None
    with open("/proc/loadavg") as f:  # a shared machine: the load says how far to trust the numbers
        print("load average at the start:", " ".join(f.read().split()[:3]))
    if args.busy:
        print(f"with {args.busy} CPU-bound process(es) beside every run")
    summary: list[str] = []
    for shape in args.only or list(SHAPES):
        src = make_input(shape, args.urls)
        ours: list[Result] = []
        theirs: list[Result] = []
        before: list[Result] = []
        for _ in range(3):  # alternating, so all see the same machine
            theirs.append(naive(shape, src, WORK / f"shape-naive-{shape}"))
            if against:
                before.append(cli(src, WORK / f"shape-against-{shape}", against))
            ours.append(cli(src, WORK / f"shape-sk-{shape}"))
        base, mine = median(theirs), median(ours)
        table = [base, median(before), mine] if against else [base, mine]
        print_table(f"generate --gzip, {SHAPES[shape]}, {args.urls:,} URLs", table, base.name)
        ratio = mine.rate / base.rate if base.rate and mine.rate else 0.0
        line = f"| {SHAPES[shape]} | {mine.seconds:.2f} s | {base.seconds:.2f} s | {ratio:.2f}x | "
        if against:
            old = table[1]
            old_ratio = old.rate / base.rate if base.rate and old.rate else 0.0
            line += f"{old.seconds:.2f} s ({old_ratio:.2f}x) | "
        summary.append(line + f"{mine.peak_mb:.0f} MB |")
    extra = " against |" if against else ""
    print(f"\n| input | sitemapkit (CLI) | naive loop | ratio |{extra} sitemapkit peak RSS |")
    print("|---|---|---|---|" + ("---|" if against else "") + "---|")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
