"""Benchmark: `sitemapkit generate --dir` on a synthetic 100,000-page static site, with a state store, then
the same build again with nothing changed; and the folder scan alone beside the floor and two parsers.

    python bench/bench_folder.py [--pages 100000] [--no-parsers]

Each contender runs in a fresh Python process (bench/common.py), so its peak RSS (VmHWM) is its own.

The site: pages of about 3 KB as a static site generator writes them (head metadata, a generator tag and a
build-time script, six paragraphs, navigation, a footer with the build time), 1 in 3 as `name/index.html`;
a fifth in hreflang groups of four languages that name each other, 0 to 3 images a page plus a shared
logo, a self-canonical on most pages, a few `noindex` pages and canonicals to another page, and a
`404.html` in each section.

1. generate, first run: an empty state store and an empty output folder; every page read and parsed.
2. generate, unchanged rerun: the same command again. The file cache in the state store answers for
   every page (the bench counts the site files opened, with an audit hook, in both runs), and the writer
   keeps every sitemap whose bytes did not change: the bench checks each output file's inode, mtime and
   bytes before and after, and prints whether anything was rewritten.
3. (unless `--no-parsers`) the scan alone: `scan_folder` without a store against the floor (walk and read
   every file) and the same extraction written inline with lxml.html and with selectolax (lexbor).

selectolax is not a dependency: it is tried only if importable, or if installed into
`bench/.work/selectolax-pkg` (`pip install --target bench/.work/selectolax-pkg selectolax`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import WORK, Result, print_table, run_python

SITE = WORK / "site"
SITE_VERSION = 2  # bump when make_site changes
OUT = WORK / "folder-out"
STATE = WORK / "folder-state.db"
SELECTOLAX = WORK / "selectolax-pkg"
BASE = "https://www.example.com/"
LANGS = ("en", "de", "fr", "es")
WORDS = ("lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "tempor")


def rel_of(i: int) -> str:
    section = f"section-{i % 100}"
    return f"{section}/page-{i}/index.html" if i % 3 == 0 else f"{section}/page-{i}.html"


def url_path(i: int) -> str:
    return "/" + rel_of(i).removesuffix("index.html")


def make_site(n: int) -> Path:
    """The site in bench/.work/site (kept between runs; rebuilt when `n` or the layout changes)."""
    stamp = SITE / f".pages-{n}-v{SITE_VERSION}"
    if stamp.exists():
        return SITE
    shutil.rmtree(SITE, ignore_errors=True)
    print(f"writing a {n:,}-page site to {SITE} ...", flush=True)
    rng = random.Random(42)
    SITE.mkdir(parents=True)
    for i in range(n):
        section = f"section-{i % 100}"
        head = ""
        if i % 500 == 7:
            head += '<meta name="robots" content="noindex, follow">\n'
        if i % 500 == 13 and i > 0:
            head += f'<link rel="canonical" href="{BASE.rstrip("/")}{url_path(i - 1)}">\n'
        else:
            head += f'<link rel="canonical" href="{BASE.rstrip("/")}{url_path(i)}">\n'
        if i % 20 < 4:  # a group of four pages, one per language, naming each other
            first = i - i % 20
            head += "".join(
                f'<link rel="alternate" hreflang="{lang}" href="{url_path(first + k)}">\n'
                for k, lang in enumerate(LANGS)
                if first + k < n
            )
        imgs = "".join(f'<img src="/img/{i}-{k}.jpg" alt="picture {k}">' for k in range(i % 4))
        paragraphs = "".join(
            "<p>" + " ".join(rng.choice(WORDS) for _ in range(40)) + "</p>\n" for _ in range(6)
        )
        path = SITE / rel_of(i)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Page {i}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="description" content="About page {i}">
<meta name="generator" content="Hugo 0.120 built 2026-01-0{i % 9 + 1}">
{head}<link rel="stylesheet" href="/css/main.1a2b3c.css">
<script>window.BUILD = "2026-01-01T10:00:00Z";</script></head>
<body><header><a href="/"><img src="/img/logo.svg" alt="Example"></a>
<nav><a href="/">Home</a> <a href="/{section}/">{section}</a></nav></header>
<main><h1>Page {i}</h1>{paragraphs}{imgs}</main>
<footer><span data-build-time>Built 2026-01-01</span></footer></body></html>
""",
            encoding="utf-8",
        )
    for section in {f"section-{i % 100}" for i in range(n)}:
        (SITE / section / "404.html").write_text("<html><body>Not found</body></html>")
    for name in ("404.html", "robots.txt", "css/main.1a2b3c.css"):
        (SITE / name).parent.mkdir(parents=True, exist_ok=True)
        (SITE / name).write_text("x")
    # The file cache does not trust a file modified within 2 s of a scan (racy mtimes): let the last
    # writes age past that before the first run, as any built site has by the time it is rebuilt.
    time.sleep(2.5)
    stamp.write_text("")
    return SITE


GENERATE = """
import json, os, sys, time
cpu = time.process_time()
from sitemapkit.generator.run import FolderSource, generate
site = os.path.realpath({site!r}) + os.sep
opened = [0]
def audit(event, args):
    if event == "open" and isinstance(args[0], str) and args[0].startswith(site):
        opened[0] += 1
sys.addaudithook(audit)
r = generate([], {out!r}, {base!r}, folder=FolderSource({site!r}, images=True), state={db!r})
s = r.sources
summary = {{"pages": s["folder"]["pages"], "skipped": s["folder"]["skipped"], "state": s["state"],
            "opened": opened[0], "files": len(r.files) + (r.index is not None), "unchanged": len(r.unchanged),
            "urls": r.urls, "cpu_seconds": round(time.process_time() - cpu, 2)}}
with open({summary!r}, "w") as f:
    json.dump(summary, f)
result = s["folder"]["pages"]
"""

FLOOR = """
import os
result = 0
total = 0
for folder, dirs, files in os.walk({site!r}):
    dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    for name in sorted(files):
        if name.endswith(".html"):
            with open(os.path.join(folder, name), "rb") as f:
                total += len(f.read())
            result += 1
"""

SCAN = """
from sitemapkit.generator.sources.folder import scan_folder
errors = []
result = 0
for page in scan_folder({site!r}, {base!r}, images=True, report=errors.append):
    result += 1
"""

# The same extraction inline for both parsers: parse, read robots/canonical/hreflang from <meta>/<link>,
# <img src>, and hash the text nodes without script/style/[data-build-time].
LXML = """
import hashlib, os
import lxml.html
from lxml import etree
parser = lxml.html.HTMLParser(remove_comments=True, no_network=True)
head = etree.XPath("//meta | //link[@rel]")
imgs = etree.XPath("//img/@src")
volatile = etree.XPath("//script | //style | //*[@data-build-time]")
texts = etree.XPath("//text()")
result = 0
for folder, dirs, files in os.walk({site!r}):
    dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    for name in sorted(files):
        if not name.endswith(".html"):
            continue
        with open(os.path.join(folder, name), "rb") as f:
            data = f.read()
        root = etree.fromstring(data.decode("utf-8"), parser)
        meta = [(e.get("name"), e.get("rel"), e.get("hreflang"), e.get("href"), e.get("content"))
                for e in head(root)]
        srcs = list(imgs(root))
        for e in volatile(root):
            e.drop_tree()
        blob = "\\x1f".join(" ".join(t.split()) for t in texts(root))
        hashlib.blake2b(blob.encode(), digest_size=16).hexdigest()
        result += 1
"""

SELECTOLAX_CODE = """
import hashlib, os, sys
sys.path.insert(0, {pkg!r})
from selectolax.lexbor import LexborHTMLParser
result = 0
for folder, dirs, files in os.walk({site!r}):
    dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    for name in sorted(files):
        if not name.endswith(".html"):
            continue
        with open(os.path.join(folder, name), "rb") as f:
            data = f.read()
        tree = LexborHTMLParser(data.decode("utf-8"))
        meta = [(n.attributes.get("name"), n.attributes.get("rel"), n.attributes.get("hreflang"),
                 n.attributes.get("href"), n.attributes.get("content")) for n in tree.css("meta, link[rel]")]
        srcs = [n.attributes.get("src") for n in tree.css("img[src]")]
        tree.strip_tags(["script", "style"])
        for n in tree.css("[data-build-time]"):
            n.decompose()
        text = tree.root.text(separator="\\x1f") if tree.root is not None else ""
        blob = "\\x1f".join(" ".join(t.split()) for t in text.split("\\x1f"))
        hashlib.blake2b(blob.encode(), digest_size=16).hexdigest()
        result += 1
"""


def snapshot(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Each file's inode, mtime (ns) and content digest."""
    out = {}
    for p in sorted(folder.iterdir()):
        st = p.stat()
        out[p.name] = (st.st_ino, st.st_mtime_ns, hashlib.blake2b(p.read_bytes()).hexdigest())
    return out


def generate_run(name: str, site: str, summary: Path, note: str) -> tuple[Result, dict[str, object]]:
    code = GENERATE.format(site=site, out=str(OUT), base=BASE, db=str(STATE), summary=str(summary))
    result = run_python(name, code, note=note)
    info: dict[str, object] = json.loads(summary.read_text()) if summary.exists() else {}
    summary.unlink(missing_ok=True)
    return result, info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=1, help="run the pair N times and keep the fastest of each")
    ap.add_argument("--no-parsers", action="store_true", help="skip the scan-only and parser comparison")
    args = ap.parse_args()
    site = str(make_site(args.pages))
    summary = WORK / "folder-summary.json"
    firsts: list[tuple[Result, dict[str, object]]] = []
    seconds: list[tuple[Result, dict[str, object]]] = []
    rewritten: set[str] = set()
    for _ in range(max(1, args.repeat)):
        shutil.rmtree(OUT, ignore_errors=True)
        OUT.mkdir(parents=True)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{STATE}{suffix}").unlink(missing_ok=True)
        firsts.append(generate_run("generate --dir, first run", site, summary, "empty state store"))
        before = snapshot(OUT)
        seconds.append(generate_run("generate --dir, unchanged rerun", site, summary, "nothing changed"))
        after = snapshot(OUT)
        rewritten |= {name for name in after if before.get(name) != after[name]} | (set(before) - set(after))
    (first, info1), (second, info2) = (
        min(runs, key=lambda r: (r[0].count == 0, r[0].seconds)) for runs in (firsts, seconds)
    )  # the fastest that did not fail
    print_table(
        f"generate --dir --state, {args.pages:,}-page site (items: pages listed"
        + (f"; fastest of {args.repeat})" if args.repeat > 1 else ")"),
        [first, second],
        baseline="generate --dir, first run",
    )
    for label, info in (("first run", info1), ("rerun", info2)):
        print(f"{label}: {json.dumps(info)}")
    ratio = first.seconds / second.seconds if second.seconds else 0.0
    cpu1, cpu2 = info1.get("cpu_seconds"), info2.get("cpu_seconds")
    cpu_ratio = cpu1 / cpu2 if isinstance(cpu1, float) and isinstance(cpu2, float) and cpu2 else 0.0
    print(
        f"unchanged rerun: {second.seconds:.2f} s against {first.seconds:.2f} s, {ratio:.1f} times faster "
        f"(CPU time: {cpu_ratio:.1f} times); files opened: {info1.get('opened')}, then {info2.get('opened')}"
    )
    print(
        f"output folder: {len(after)} files; rewritten by an unchanged rerun: "
        + (", ".join(sorted(rewritten)) if rewritten else "none (inode, mtime and bytes all kept)")
    )

    if args.no_parsers:
        return
    results: list[Result] = [
        run_python("floor: os.walk + read bytes", FLOOR.format(site=site)),
        run_python(
            "sitemapkit scan_folder (lxml)", SCAN.format(site=site, base=BASE), note="URLs, images, hash"
        ),
        run_python("inline lxml.html extract+hash", LXML.format(site=site)),
    ]
    have_selectolax = SELECTOLAX.is_dir()
    try:
        import selectolax  # type: ignore[import-not-found]  # noqa: F401

        have_selectolax = True
    except ImportError:
        pass
    if have_selectolax:
        results.append(
            run_python(
                "inline selectolax (lexbor) extract+hash",
                SELECTOLAX_CODE.format(site=site, pkg=str(SELECTOLAX)),
            )
        )
    else:
        results.append(Result("inline selectolax", 0, 0.0, 0.0, "not installed (see the docstring)"))
    print_table(
        f"Static site scan, {args.pages:,} pages (pages/s)", results, baseline="floor: os.walk + read bytes"
    )


if __name__ == "__main__":
    main()
