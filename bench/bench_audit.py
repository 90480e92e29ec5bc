"""Benchmark: `sitemapkit audit` of a 50,000-URL sitemap on a loopback site, beside advertools.

    python bench/bench_audit.py [--urls 50000] [--concurrency 8]

The site (bench/siteserver.py in its own process, serving files written once under bench/.work) has a
robots.txt naming one sitemap of N URLs, each a small HTML page with a canonical link and a JSON-LD
dateModified. Each contender runs in a fresh process (bench/common.py) with the same per-host concurrency:

- sitemapkit audit: validate the sitemap, then GET every page (robots.txt, pacing, retries), read its
  head (robots meta, canonical, hreflang, title, dateModified) and judge it;
- advertools: `sitemap_to_df`, then `crawl_headers` (a Scrapy crawl of HEAD requests, in a child process;
  its peak RSS is added to the parent's) - status codes and headers only, no page is read.

The server (one asyncio process, keep-alive) is the same for both and shares the machine's cores with them:
the numbers compare the tools under the same limit, not their ceilings.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import WORK, Result, print_table, run_command, run_python, serve_folder

PAGE = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Product {n}</title>'
    '<link rel="canonical" href="{{base}}/p/{n}.html">'
    '<script type="application/ld+json">{{"@type": "Product", "dateModified": "2026-05-{day:02d}"}}</script>'
    "</head><body><h1>Product {n}</h1><p>{words}</p></body></html>"
)
WORDS = "A plain product page with enough words to look like one. " * 12


def build(folder: Path, urls: int) -> None:
    marker = folder / f".built-{urls}"
    if marker.exists():
        return
    (folder / "p").mkdir(parents=True, exist_ok=True)
    for i in range(urls):
        (folder / "p" / f"{i}.html.in").write_text(PAGE.format(n=i, day=i % 28 + 1, words=WORDS))
    entries = "".join(
        f"<url><loc>{{base}}/p/{i}.html</loc><lastmod>2026-05-{i % 28 + 1:02d}</lastmod></url>\n"
        for i in range(urls)
    )
    (folder / "sitemap.xml.in").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{entries}</urlset>\n'
    )
    (folder / "robots.txt.in").write_text("User-agent: *\nAllow: /\nSitemap: {base}/sitemap.xml\n")
    marker.touch()


def prepare(folder: Path) -> Callable[[str], None]:
    def fill(base: str) -> None:
        for template in folder.rglob("*.in"):
            text = template.read_text().replace("{base}", base)
            template.with_name(template.name[: -len(".in")]).write_text(text)

    return fill


AUDIT = """
from sitemapkit.audit.run import audit
report = audit({site!r}, concurrency={concurrency}, retries=0)
assert len(report.rows) == {urls}, report.summary()
assert report.findings == [], [f.to_dict() for f in report.findings[:3]]
result = len(report.rows)
"""

ADVERTOOLS = """
import json, os, resource, sys, time
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
t0 = time.perf_counter()
import advertools as adv
import pandas as pd
df = adv.sitemap_to_df({sitemap!r})
out = {out!r}
if os.path.exists(out):
    os.unlink(out)
adv.crawl_headers(
    df["loc"].tolist(),
    out,
    custom_settings={{
        "CONCURRENT_REQUESTS_PER_DOMAIN": {concurrency},
        "CONCURRENT_REQUESTS": {concurrency},
        "ROBOTSTXT_OBEY": True,
        "LOG_LEVEL": "ERROR",
    }},
)
headers = pd.read_json(out, lines=True)
assert len(headers) == {urls} and set(headers["status"]) == {{200}}, headers["status"].value_counts()
elapsed = time.perf_counter() - t0
own = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print("BENCH_RESULT " + json.dumps({{"count": len(headers), "seconds": elapsed, "peak_kb": own + child}}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--urls", type=int, default=50_000)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=1, help="Run both contenders this many times, interleaved.")
    args = ap.parse_args()
    folder = WORK / "audit_site"
    build(folder, args.urls)
    server, base = serve_folder(folder, prepare(folder), fast=True)
    try:
        results: list[Result] = []
        for _ in range(args.rounds):
            results.append(
                run_python(
                    "sitemapkit audit",
                    AUDIT.format(site=base + "/", concurrency=args.concurrency, urls=args.urls),
                    note="GET + page head read and judged",
                )
            )
            try:
                import advertools  # noqa: F401
            except ImportError:
                results.append(Result("advertools", 0, 0.0, 0.0, "skipped: pip install -e '.[bench]'"))
                continue
            results.append(
                run_command(
                    "advertools to_df+crawl_headers",
                    [
                        sys.executable,
                        "-c",
                        ADVERTOOLS.format(
                            sitemap=base + "/sitemap.xml",
                            out=str(WORK / "advertools-headers.jl"),
                            concurrency=args.concurrency,
                            urls=args.urls,
                        ),
                    ],
                    note="HEAD only (Scrapy child's peak added)",
                )
            )
        print_table(
            f"Audit a {args.urls:,}-URL sitemap on a loopback site (concurrency {args.concurrency})",
            results,
            "advertools to_df+crawl_headers",
        )
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
