"""Generate sitemaps for 1,000,000 URLs, gzip on and off: sitemapkit against a naive baseline, the raw zlib
floor and sitemap.js, each in a fresh process. Run: `python bench/bench_generate.py [--urls N]`."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import WORK, Result, print_table, run_command, run_python

BENCH = Path(__file__).resolve().parent


def make_input(n: int) -> Path:
    path = WORK / f"urls-{n}.txt"
    if not path.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        with open(path, "w") as f:
            for i in range(n):
                f.write(
                    f"https://www.example.com/catalog/category-{i % 250}/item-{i}?colour=blue&size={i % 40}"
                    f"\t2026-{i % 12 + 1:02d}-{i % 28 + 1:02d}T{i % 24:02d}:{i % 60:02d}:00+00:00\n"
                )
    return path


def sitemapkit(src: Path, out: Path, gz: bool) -> str:
    return f"""
import shutil
from sitemapkit.generator.run import generate
shutil.rmtree({str(out)!r}, ignore_errors=True)
r = generate([{str(src)!r}], {str(out)!r}, "https://www.example.com/", gzip={gz})
result = r.urls
"""


def naive(src: Path, out: Path, gz: bool, level: int = 6) -> str:
    opener = (
        f"gzip.open(dst, 'wt', encoding='utf-8', compresslevel={level})"
        if gz
        else "open(dst, 'w', encoding='utf-8')"
    )
    return f"""
import gzip, os
from xml.sax.saxutils import escape
os.makedirs({str(out)!r}, exist_ok=True)
dst = os.path.join({str(out)!r}, "sitemap.xml" + (".gz" if {gz} else ""))
result = 0
with open({str(src)!r}, encoding="utf-8") as f, {opener} as w:
    w.write('<?xml version="1.0" encoding="UTF-8"?>\\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\\n')
    for line in f:
        loc, lastmod = line.rstrip("\\n").split("\\t")
        w.write("<url><loc>" + escape(loc) + "</loc><lastmod>" + lastmod + "</lastmod></url>\\n")
        result += 1
    w.write("</urlset>\\n")
"""


def zlib_floor(sitemaps: Path) -> str:
    return f"""
import glob, gzip, zlib
result = 0
for name in sorted(glob.glob({str(sitemaps)!r} + "/sitemap-*.xml")):
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    with open(name, "rb") as f:
        while chunk := f.read(1 << 20):
            c.compress(chunk)
    c.flush()
    with open(name, "rb") as f:
        result += f.read().count(b"<url>")
"""


def sitemapjs_ready() -> str | None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node/npm not found"
    if not (BENCH / "node_modules" / "sitemap").is_dir():
        proc = subprocess.run(
            ["npm", "install", "--no-save", "--no-audit", "--no-fund", "sitemap@9"],
            cwd=BENCH,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            return "npm install sitemap failed: " + proc.stderr.strip().splitlines()[-1]
    return None


def main() -> None:
    """Run the benchmark; the input and outputs go to bench/.work/."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--urls", type=int, default=1_000_000)
    args = ap.parse_args()
    src = make_input(args.urls)
    js_problem = sitemapjs_ready()
    for gz in (True, False):
        label = "gzip" if gz else "plain"
        results: list[Result] = [
            run_python(
                "naive baseline (escape + write)",
                naive(src, WORK / f"naive-{label}", gz),
                note="gzip level 6, as sitemapkit's default" if gz else "",
            ),
            run_python(
                "sitemapkit generate",
                sitemapkit(src, WORK / f"sk-{label}", gz),
                note="normalise, scope, dedupe, split, index",
            ),
        ]
        if gz:
            results.append(
                run_python(
                    "naive, gzip.open default (level 9)", naive(src, WORK / "naive-gzip9", gz, level=9)
                )
            )
            # the zlib floor compresses exactly the bytes sitemapkit wrote uncompressed
            results.append(run_python("raw zlib floor (same bytes)", zlib_floor(WORK / "sk-plain-for-floor")))
        if js_problem is None:
            results.append(
                run_command(
                    "sitemap.js 9 (node)",
                    [
                        "node",
                        str(BENCH / "sitemapjs_generate.js"),
                        str(src),
                        str(WORK / f"js-{label}"),
                        label,
                    ],
                )
            )
        else:
            results.append(Result("sitemap.js 9 (node)", 0, 0.0, 0.0, "SKIPPED: " + js_problem))
        print_table(
            f"generate {args.urls:,} URLs, {label}", results, baseline="naive baseline (escape + write)"
        )


if __name__ == "__main__":
    # the floor needs the uncompressed output on disk first
    from sitemapkit.generator.run import generate as _generate

    _args = sys.argv[1:]
    _n = int(_args[_args.index("--urls") + 1]) if "--urls" in _args else 1_000_000
    shutil.rmtree(WORK / "sk-plain-for-floor", ignore_errors=True)
    _generate([str(make_input(_n))], WORK / "sk-plain-for-floor", "https://www.example.com/")
    main()
