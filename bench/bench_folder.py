"""Scan a synthetic 100,000-page static site: `scan_folder` (with content hashes) against the floor (walk and
read every file) and two parsers doing the same extraction inline (lxml.html, selectolax), each in a fresh
process. Run: `python bench/bench_folder.py [--pages N]`.

selectolax is not a dependency: it is tried only if importable, or if installed into
`bench/.work/selectolax-pkg` (`pip install --target bench/.work/selectolax-pkg selectolax`)."""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import WORK, Result, print_table, run_python

SITE = WORK / "site"
SELECTOLAX = WORK / "selectolax-pkg"
LANGS = ("en", "de", "fr", "es")
WORDS = ("lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "tempor")


def make_site(n: int) -> Path:
    stamp = SITE / f".pages-{n}"
    if stamp.exists():
        return SITE
    rng = random.Random(42)
    SITE.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        section = f"section-{i % 100}"
        rel = f"{section}/page-{i}/index.html" if i % 3 == 0 else f"{section}/page-{i}.html"
        url = f"https://www.example.com/{rel.removesuffix('index.html')}"
        alternates = ""
        if i % 4 == 0:
            alternates = "".join(
                f'<link rel="alternate" hreflang="{lang}" href="/{lang}/{section}/page-{i}.html">\n'
                for lang in LANGS
            )
        imgs = "".join(f'<img src="/img/{i}-{k}.jpg" alt="picture {k}">' for k in range(i % 4))
        paragraphs = "".join(
            "<p>" + " ".join(rng.choice(WORDS) for _ in range(40)) + "</p>\n" for _ in range(6)
        )
        path = SITE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Page {i}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="description" content="About page {i}">
<meta name="generator" content="Hugo 0.120 built 2026-01-0{i % 9 + 1}">
<link rel="canonical" href="{url}">
{alternates}<link rel="stylesheet" href="/css/main.1a2b3c.css">
<script>window.BUILD = "2026-01-01T10:00:00Z";</script></head>
<body><header><nav><a href="/">Home</a> <a href="/{section}/">{section}</a></nav></header>
<main><h1>Page {i}</h1>{paragraphs}{imgs}</main>
<footer><span data-build-time>Built 2026-01-01</span></footer></body></html>
""",
            encoding="utf-8",
        )
    for name in ("404.html", "robots.txt", "css/main.1a2b3c.css"):
        (SITE / name).parent.mkdir(parents=True, exist_ok=True)
        (SITE / name).write_text("x")
    stamp.write_text("")
    return SITE


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
from sitemapkit.sources.folder import scan_folder
errors = []
result = 0
for page in scan_folder({site!r}, "https://www.example.com/", images=True, report=errors.append):
    result += 1
assert not errors, errors[:3]
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pages", type=int, default=100_000)
    args = ap.parse_args()
    site = str(make_site(args.pages))
    results: list[Result] = [
        run_python("floor: os.walk + read bytes", FLOOR.format(site=site)),
        run_python("sitemapkit scan_folder (lxml)", SCAN.format(site=site), note="+ URLs, images, hash"),
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
