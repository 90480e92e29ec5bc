"""Benchmark: parse a realistic 50,000-URL sitemap (plain and gzip) against floors and other libraries.

Run: `python bench/bench_parse_file.py`. Each contender runs in a fresh process (see common.py), so peak RSS
is its own; the best of three runs is shown, and the time includes importing the library (byte-compiled
first, as an installed copy is). The floors only count `<loc>` texts (the lxml one keeps every `<url>` in
memory); the other contenders build full entries.
"""

from __future__ import annotations

import compileall
import datetime as dt
import gzip
import importlib.util
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import WORK, Result, print_table, run_python

URLS = 50_000
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def generate(path: Path) -> None:
    """A sitemap like a shop's: lastmod/changefreq/priority on every URL, two images on every tenth."""
    rng = random.Random(7)
    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    freqs = ["daily", "weekly", "monthly"]
    with open(path, "w", encoding="utf-8") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n')
        f.write(f'<urlset xmlns="{NS}" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">\n')
        for i in range(URLS):
            lastmod = (base + dt.timedelta(seconds=rng.randrange(30_000_000))).isoformat()
            f.write(
                f"  <url>\n    <loc>https://www.example.com/products/item-{i}?ref=home&amp;page={i % 7}"
                "</loc>\n"
                f"    <lastmod>{lastmod}</lastmod>\n    <changefreq>{freqs[i % 3]}</changefreq>\n"
                f"    <priority>0.{i % 10}</priority>\n"
            )
            if i % 10 == 0:
                for j in range(2):
                    f.write(
                        f"    <image:image>\n      <image:loc>https://cdn.example.com/img/{i}-{j}.jpg</image:loc>\n"
                        "    </image:image>\n"
                    )
            f.write("  </url>\n")
        f.write("</urlset>\n")


OURS = """
from sitemapkit.reader.parser import parse_file
result = sum(1 for _ in parse_file({path!r}))
"""

LXML_FLOOR = """
from lxml import etree
result = 0
for _, el in etree.iterparse({path!r}, events=("end",), tag="{{{ns}}}loc"):
    if el.text:
        result += 1
    el.clear()
"""

EXPAT_FLOOR = """
import xml.parsers.expat
parser = xml.parsers.expat.ParserCreate(namespace_separator=" ")
parser.buffer_text = True
state = {{"in_loc": False, "count": 0}}
text = []
def start(name, attrs):
    if name == "{ns} loc":
        state["in_loc"] = True
        text.clear()
def end(name):
    if name == "{ns} loc":
        state["in_loc"] = False
        if "".join(text):
            state["count"] += 1
def data(chunk):
    if state["in_loc"]:
        text.append(chunk)
parser.StartElementHandler, parser.EndElementHandler, parser.CharacterDataHandler = start, end, data
with open({path!r}, "rb") as f:
    parser.ParseFile(f)
result = state["count"]
"""

USP = """
from usp.fetch_parse import SitemapFetcher
from usp.objects.sitemap import AbstractPagesSitemap
from usp.web_client.abstract_client import AbstractWebClient, AbstractWebClientSuccessResponse

class Response(AbstractWebClientSuccessResponse):
    def __init__(self, data): self._data = data
    def status_code(self): return 200
    def status_message(self): return "OK"
    def header(self, case_insensitive_name): return None
    def raw_data(self): return self._data
    def url(self): return "https://www.example.com/sitemap.xml"

class LocalFile(AbstractWebClient):
    def set_max_response_data_length(self, max_response_data_length): pass
    def get(self, url):
        with open({path!r}, "rb") as f:
            return Response(f.read())

tree = SitemapFetcher(url="https://www.example.com/sitemap.xml", recursion_level=0,
                      web_client=LocalFile()).sitemap()
result = len(list(tree.all_pages()))
"""

ADVERTOOLS = """
import advertools as adv
result = len(adv.sitemap_to_df("file://" + {path!r}))
"""

SCRAPY = """
from scrapy.utils.sitemap import Sitemap
with open({path!r}, "rb") as f:
    data = f.read()
result = sum(1 for _ in Sitemap(data))
"""


RUNS = 3


def best(name: str, code: str, note: str = "") -> Result:
    """The fastest of `RUNS` fresh-process runs (the machine may be shared); peak RSS of that run."""
    runs = [run_python(name, code, note=note) for _ in range(RUNS)]
    ok = [r for r in runs if r.count]
    return min(ok, key=lambda r: r.seconds) if ok else runs[0]


def available(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


SRC = Path(__file__).resolve().parent.parent / "src" / "sitemapkit"


def byte_compile() -> None:
    """Byte-compile sitemapkit's sources, as pip does when it installs a package (the peers measured here
    were installed so). With PYTHONDONTWRITEBYTECODE set, an editable install would otherwise compile
    every module from source in every contender process, which no installed copy does."""
    compileall.compile_dir(SRC, quiet=1)


def main() -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    byte_compile()
    plain = WORK / "parse-50k.xml"
    packed = WORK / "parse-50k.xml.gz"
    if not plain.exists():
        generate(plain)
    if not packed.exists():
        packed.write_bytes(gzip.compress(plain.read_bytes(), 6))
    print(f"file: {plain.stat().st_size:,} bytes, {URLS:,} URLs; gzip {packed.stat().st_size:,} bytes")

    results: list[Result] = [
        best("floor: lxml iterparse <loc> only", LXML_FLOOR.format(path=str(plain), ns=NS)),
        best("floor: expat <loc> only", EXPAT_FLOOR.format(path=str(plain), ns=NS)),
        best("sitemapkit parse_file (plain)", OURS.format(path=str(plain))),
        best("sitemapkit parse_file (gzip)", OURS.format(path=str(packed))),
    ]
    others = [
        ("usp", "ultimate-sitemap-parser", USP, "via an injected local web client"),
        ("advertools", "advertools sitemap_to_df", ADVERTOOLS, "file:// URL of the local file"),
        ("scrapy", "scrapy Sitemap (bytes)", SCRAPY, "yields dicts of <url> children"),
    ]
    for module, name, code, note in others:
        if available(module):
            results.append(best(name, code.format(path=str(plain)), note=note))
        else:
            results.append(
                Result(name, 0, 0.0, 0.0, f"skipped: {module} not installed (pip install -e '.[bench]')")
            )
    print_table(
        "Parse a 50,000-URL sitemap (fresh process each)",
        results,
        baseline="floor: lxml iterparse <loc> only",
    )
    print_table("The same, against the expat floor", results[:4], baseline="floor: expat <loc> only")


if __name__ == "__main__":
    main()
