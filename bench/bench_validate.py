"""Benchmark: `sitemapkit.validate` on a 55 MB sitemap and on a 1,000,000-URL tree, beside baselines.

    python bench/bench_validate.py [--children 20] [--urls 50000] [--skip-xsd]

Each contender runs in a fresh Python process (bench/common.py), so its peak RSS (VmHWM) is its own.

- 55 MB file (over both limits: ~370,000 URLs, 55,000,000+ bytes): sitemapkit.validate against the bare
  parser over the same file, and against an XSD check with lxml (what `xmllint --schema` does: the whole
  document parsed into a tree, then validated against sitemap.xsd).
- 1,000,000-URL tree over HTTP (an index of gzipped sitemaps served by `python -m http.server` in another
  process; every tenth page has hreflang alternates): sitemapkit.validate against the bare parser over the
  same bodies fetched sequentially, and validate on a quarter of the tree to show how memory grows (the
  duplicate and hreflang checks keep one 64-bit hash per URL, about 80 bytes).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import WORK, Result, print_table, run_python, serve_folder, write_index_templates

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
XHTML = "http://www.w3.org/1999/xhtml"
XSD = (
    Path(os.environ.get("SITEMAPKIT_SHARED", Path(__file__).resolve().parents[2] / "shared")) / "data" / "xsd"
)
BIG_BYTES = 55_000_000
PUBLIC = "https://www.example.com/sitemap.xml"


def build_big(path: Path) -> int:
    """A single urlset of just over 55 MB (lastmod, changefreq, priority; an image on every tenth URL)."""
    if path.exists() and path.stat().st_size > BIG_BYTES:
        return int(path.with_suffix(".count").read_text())
    base = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    count = 0
    size = 0
    with open(path, "w", encoding="utf-8") as f:
        head = f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">\n'
        f.write(head)
        size += len(head)
        while size < BIG_BYTES:
            lastmod = (base + dt.timedelta(minutes=count * 7)).isoformat()
            image = (
                f"<image:image><image:loc>https://cdn.example.com/img/{count}.jpg</image:loc></image:image>"
                if count % 10 == 0
                else ""
            )
            line = (
                f"<url><loc>https://www.example.com/products/item-{count}?ref=home&amp;page={count % 7}</loc>"
                f"<lastmod>{lastmod}</lastmod><changefreq>weekly</changefreq>"
                f"<priority>0.{count % 10}</priority>{image}</url>\n"
            )
            f.write(line)
            size += len(line)
            count += 1
        f.write("</urlset>\n")
    path.with_suffix(".count").write_text(str(count))
    return count


def build_tree(folder: Path, children: int, urls: int) -> None:
    """sitemap_index.xml (all children) and sitemap_quarter.xml (a quarter), with gzipped children."""
    marker = folder / f".built-{children}x{urls}"
    if marker.exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    day = dt.date(2024, 1, 1)
    names = []
    for c in range(1, children + 1):
        name = f"sitemap-{c:02d}.xml.gz"
        names.append(name)
        parts = [f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}" xmlns:xhtml="{XHTML}">\n']
        for i in range(urls):
            n = (c - 1) * urls + i
            loc = f"{{base}}/products/item-{n}.html?ref=sitemap&amp;v=2"
            links = ""
            if n % 10 == 0:
                en, de = f"{{base}}/products/item-{n}.html?ref=sitemap&amp;v=2", f"{{base}}/de/item-{n}.html"
                links = (
                    f'<xhtml:link rel="alternate" hreflang="en" href="{en}"/>'
                    f'<xhtml:link rel="alternate" hreflang="de" href="{de}"/>'
                )
            elif n % 10 == 1:  # the German version of the page before
                loc = f"{{base}}/de/item-{n - 1}.html"
                en = f"{{base}}/products/item-{n - 1}.html?ref=sitemap&amp;v=2"
                links = (
                    f'<xhtml:link rel="alternate" hreflang="de" href="{loc}"/>'
                    f'<xhtml:link rel="alternate" hreflang="en" href="{en}"/>'
                )
            lastmod = (day + dt.timedelta(days=n % 365)).isoformat()
            parts.append(
                f"<url><loc>{loc}</loc><lastmod>{lastmod}</lastmod><changefreq>weekly</changefreq>"
                f"<priority>0.6</priority>{links}</url>\n"
            )
        parts.append("</urlset>\n")
        (folder / (name + ".in")).write_bytes("".join(parts).encode())

    write_index_templates(folder, names)
    marker.touch()


def serve(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Fill in the server's address, then start `python -m http.server` on a free port."""

    def prepare(base: str) -> None:
        for template in folder.glob("*.in"):
            data = template.read_bytes().replace(b"{base}", base.encode())
            target = folder / template.name[: -len(".in")]
            target.write_bytes(gzip.compress(data, 6) if target.suffix == ".gz" else data)

    return serve_folder(folder, prepare)


VALIDATE = """
from sitemapkit.validator.run import validate
report = validate({source!r}, url={url!r})
assert report.urls == {expected}, (report.urls, report.summary())
result = report.urls
"""

PARSE_FILE = """
from sitemapkit.reader.parser import parse_file
result = sum(1 for _ in parse_file({path!r}))
"""

XSD_WHOLE = """
from lxml import etree
wrapper = '''<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified">
  <xs:import namespace="http://www.sitemaps.org/schemas/sitemap/0.9" schemaLocation="{xsd}/sitemap.xsd"/>
  <xs:import namespace="http://www.google.com/schemas/sitemap-image/1.1"
             schemaLocation="{xsd}/sitemap-image.xsd"/>
</xs:schema>'''
schema = etree.XMLSchema(etree.fromstring(wrapper.encode()))
doc = etree.parse({path!r}, etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True))
assert schema.validate(doc), schema.error_log.last_error
result = sum(1 for _ in doc.getroot())
"""

PARSER_TREE = """
import httpx
from sitemapkit.reader.parser import SitemapParser
result = 0
def entries(client, url):
    parser = SitemapParser(url)
    with client.stream("GET", url) as response:
        for piece in response.iter_bytes(65536):
            yield from parser.feed(piece)
    yield from parser.close()
with httpx.Client() as client:
    for child in [e.loc for e in entries(client, {index!r})]:
        result += sum(1 for _ in entries(client, child))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--children", type=int, default=20)
    ap.add_argument("--urls", type=int, default=50_000)
    ap.add_argument("--skip-xsd", action="store_true", help="Leave out the lxml XSD baseline.")
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)

    big = WORK / "validate-55mb.xml"
    count = build_big(big)
    print(f"file: {big.stat().st_size:,} bytes, {count:,} URLs")
    results: list[Result] = [
        run_python("parser only: parse_file", PARSE_FILE.format(path=str(big))),
        run_python(
            "sitemapkit.validate",
            VALIDATE.format(source=str(big), url=PUBLIC, expected=count),
            note="file-too-large, too-many-urls found",
        ),
    ]
    if args.skip_xsd or not (XSD / "sitemap.xsd").is_file():
        results.append(Result("lxml XSD (xmllint --schema)", 0, 0.0, 0.0, "skipped"))
    else:
        results.append(
            run_python(
                "lxml XSD (xmllint --schema)",
                XSD_WHOLE.format(xsd=XSD.as_uri(), path=str(big)),
                note="valid by the schema: it checks no limit",
            )
        )
    print_table(f"Validate one {big.stat().st_size / 1e6:.0f} MB sitemap", results, "parser only: parse_file")

    folder = WORK / "validate_tree"
    t0 = time.perf_counter()
    build_tree(folder, args.children, args.urls)
    built = time.perf_counter() - t0
    print(f"\ntree: {args.children} x {args.urls:,} URLs in {folder} ({built:.1f} s to build)")
    proc, base = serve(folder)
    total = args.children * args.urls
    quarter = max(1, args.children // 4) * args.urls
    try:
        tree = [
            run_python("parser only, sequential", PARSER_TREE.format(index=f"{base}/sitemap_index.xml")),
            run_python(
                "sitemapkit.validate",
                VALIDATE.format(source=f"{base}/sitemap_index.xml", url=None, expected=total),
            ),
            run_python(
                "sitemapkit.validate (quarter tree)",
                VALIDATE.format(source=f"{base}/sitemap_quarter.xml", url=None, expected=quarter),
                note="memory grows by a hash per URL",
            ),
        ]
    finally:
        proc.terminate()
        proc.wait()
    print_table(
        f"Validate a {total:,}-URL tree over HTTP ({args.children} gzipped sitemaps)", tree, tree[0].name
    )


if __name__ == "__main__":
    main()
