"""`generate --gzip` on inputs whose every line takes the general path (parsing, `Pipeline`, `render_url`),
none the bulk or columnar lanes: 200,000 lines each, the CLI as a whole process writing its real gzip output,
beside a naive loop (csv or json module, the URL escaped, the other fields written as they stand, gzip level
6, no checks), three alternating runs each, the median counts.

- `list`: a 4-field TAB list where each line needs normalising (capital scheme and host, non-ASCII path,
  relative URL, `%xx` escapes, a default port, raw `"<>` and spaces), its lastmod a date or a date-time in
  one of the W3C forms (`Z`, a fraction, an offset; the times all different), a changefreq spelled in
  capitals or a priority spelled otherwise than the writer writes it;
- `jsonl`: JSONL with an image per line whose URL has to be percent-encoded (an image URL in normal form
  takes the columnar lane; one that `normalize_url` changes, the general path).

With `--baseline SRC` (a checkout's `src`, such as a clean checkout of the commit before a change), that
checkout's CLI runs too, alternately, and the outputs are compared (gunzipped, byte for byte).
Run: `python bench/bench_generate_general.py [--urls N] [--only SHAPE] [--baseline SRC]`."""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_generate_shapes import count_items, median, naive
from common import WORK, Result, print_table, run_cli

BASE = "https://www.example.com/"
_FREQS = ("Daily", "weekly", "MONTHLY")
_PRIORITIES = ("0.5", "0.80", "1", ".3")


def _url(i: int) -> str:
    kind = i % 6
    if kind == 0:
        return f"HTTPS://WWW.Example.com/Catalog/category-{i % 250}/item-{i}?colour=blue&size={i % 40}"
    if kind == 1:
        return f"{BASE}katalog/kategorie-{i % 250}/größe-{i}?farbe=blau&q=a b"
    if kind == 2:
        return f"/catalog/category-{i % 250}/item-{i}?colour=blue&size={i % 40}"
    if kind == 3:
        return f"{BASE}catalog/%7euser/item-{i}?x=%2f{i}"
    if kind == 4:
        return f"https://www.example.com:443/catalog/item-{i}"
    return f'{BASE}catalog/item "{i}"<b>'


def _date(i: int) -> str:
    day = f"20{10 + i % 15}-{i % 12 + 1:02d}-{i % 28 + 1:02d}"
    time = f"{i % 24:02d}:{i // 24 % 60:02d}:{i // 1440 % 60:02d}"
    kind = i % 4
    if kind == 0:
        return day
    if kind == 1:
        return f"{day}T{time}Z"
    if kind == 2:
        return f"{day}T{time}.5+02:00"
    return f"{day}T{time}+00:00"


def make_input(shape: str, n: int) -> Path:
    path = WORK / f"general-{shape}-{n}.{'jsonl' if shape == 'jsonl' else 'txt'}"
    if path.exists():
        return path
    WORK.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            if shape == "jsonl":
                loc = f"{BASE}catalog/category-{i % 250}/item-{i}?colour=blue&size={i % 40}"
                image = f"{BASE}bilder/größe-{i}.jpg"  # (to be percent-encoded: the general path)
                f.write(f'{{"loc": "{loc}", "lastmod": "{_date(i)}", "images": [{{"loc": "{image}"}}]}}\n')
            else:
                f.write(f"{_url(i)}\t{_date(i)}\t{_FREQS[i % 3]}\t{_PRIORITIES[i % 4]}\n")
    return path


def cli(name: str, src: Path, out: Path, pythonpath: str | None = None) -> Result:
    shutil.rmtree(out, ignore_errors=True)
    args = ["generate", str(src), "--base-url", BASE, "--out", str(out), "--gzip"]
    saved = os.environ.get("PYTHONPATH")
    if pythonpath is not None:
        os.environ["PYTHONPATH"] = pythonpath
    try:
        return run_cli(name, args, WORK / f"general-stdout-{out.name}.txt", lambda _: count_items(src))
    finally:
        if pythonpath is not None:
            if saved is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = saved


def same_output(a: Path, b: Path) -> bool:
    """Whether two output folders hold the same sitemaps, gunzipped, byte for byte."""
    names = sorted(p.name for p in a.glob("*.xml.gz"))
    if names != sorted(p.name for p in b.glob("*.xml.gz")):
        return False
    return all(gzip.decompress((a / n).read_bytes()) == gzip.decompress((b / n).read_bytes()) for n in names)


SHAPES = {"list": "4-field list, every line odd", "jsonl": "JSONL with an image per line"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--urls", type=int, default=200_000)
    ap.add_argument("--only", choices=sorted(SHAPES), action="append")
    ap.add_argument("--baseline", help="another checkout's src folder, run alternately for comparison")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    for shape in args.only or list(SHAPES):
        src = make_input(shape, args.urls)
        runs: dict[str, list[Result]] = {"naive loop": [], "sitemapkit generate --gzip": []}
        if args.baseline:
            runs["baseline generate --gzip"] = []
        for _ in range(args.runs):  # alternating, so all see the same machine
            runs["naive loop"].append(naive(shape, src, WORK / f"general-naive-{shape}"))
            if args.baseline:
                out = WORK / f"general-base-{shape}"
                runs["baseline generate --gzip"].append(
                    cli("baseline generate --gzip", src, out, args.baseline)
                )
            mine = WORK / f"general-sk-{shape}"
            runs["sitemapkit generate --gzip"].append(cli("sitemapkit generate --gzip", src, mine))
        results = [median(r) for r in runs.values()]
        base = "baseline generate --gzip" if args.baseline else "naive loop"
        print_table(f"generate --gzip, {SHAPES[shape]}, {args.urls:,} URLs", results, base)
        for r in results:
            if r.count:
                print(f"{r.name}: {r.cpu / r.count * 1e6:.1f} us of CPU per record (median run's)")
        if args.baseline:
            same = same_output(WORK / f"general-base-{shape}", WORK / f"general-sk-{shape}")
            print("same output as the baseline" if same else "OUTPUT DIFFERS from the baseline")


if __name__ == "__main__":
    main()
