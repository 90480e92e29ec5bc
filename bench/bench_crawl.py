"""Benchmark: `sitemapkit crawl` against a small Scrapy spider, on the same generated loopback site, with the
same per-host concurrency: pages/s and peak RSS, at 10,000 and 100,000 pages.

    python bench/bench_crawl.py [--pages 10000 100000] [--concurrency 2]

The site: static pages of about 3 KB (a head with canonical and description, six paragraphs, a navigation
bar, 10 links down a tree of pages and 5 links across it), served from the files by a small asyncio server
(HTTP/1.1 keep-alive, each answer in one write; several thousand pages a second, so not the bottleneck) in
its own process. Every page is reachable from `/`.

Both contenders fetch every page once, obey robots.txt and follow every `<a href>` in scope:

- sitemapkit: `sitemapkit.crawl.run.crawl(...)` with `sitemaps=False` (the site has no sitemap), writing the
  sitemap and its SQLite crawl file;
- Scrapy: a spider that follows `a::attr(href)` on each HTML page and reads the canonical and meta robots
  (the facts a sitemap needs), with `CONCURRENT_REQUESTS_PER_DOMAIN` set to the same concurrency, its
  in-memory duplicate filter, and no output. Scrapy is in the `bench` extra (`pip install -e '.[bench]'`).

Each runs in a fresh process, one after the other, so that its peak RSS (VmHWM) is its own; the machine is
shared, so the numbers are noisy: compare the two in the same run.
"""

from __future__ import annotations

import argparse
import random
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import WORK, Result, print_table, run_command, run_python

WORDS = [
    *[
        "sitemap",
        "crawler",
        "page",
        "index",
        "link",
        "search",
        "engine",
        "content",
        "update",
        "robots",
        "canonical",
        "honest",
        "modified",
    ],
    *["static", "site", "folder", "section", "article", "archive", "product", "category", "review"],
]

SERVER = """
import asyncio, os, sys

port, folder = int(sys.argv[1]), sys.argv[2]
TYPES = {".html": b"text/html; charset=utf-8", ".txt": b"text/plain"}


def answer(path):
    if path == "/":
        path = "/index.html"
    file = os.path.join(folder, path.lstrip("/"))
    if ".." in path or not os.path.isfile(file):
        return b"HTTP/1.1 404 Not Found\\r\\nContent-Length: 0\\r\\n\\r\\n"
    with open(file, "rb") as f:
        body = f.read()
    kind = TYPES.get(os.path.splitext(file)[1], b"application/octet-stream")
    head = b"HTTP/1.1 200 OK\\r\\nContent-Type: %s\\r\\nContent-Length: %d\\r\\n\\r\\n" % (kind, len(body))
    return head + body


async def client(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\\r\\n\\r\\n")
            path = head.split(b" ", 2)[1].decode("latin-1").split("?", 1)[0]
            writer.write(answer(path))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(client, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


asyncio.run(main())
"""


def build_site(pages: int) -> Path:
    folder = WORK / f"crawlsite-{pages}"
    if (folder / "done").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "p").mkdir(parents=True)
    rng = random.Random(pages)
    (folder / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    for i in range(pages):
        down = [f"/p/{j}.html" for j in range(10 * i + 1, min(pages, 10 * i + 11))]
        across = [f"/p/{rng.randrange(pages)}.html" for _ in range(5)]
        nav = "".join(f'<a href="/p/{n}.html">section {n}</a> ' for n in range(1, 8))
        paras = "".join("<p>" + " ".join(rng.choice(WORDS) for _ in range(60)) + "</p>\n" for _ in range(6))
        links = "".join(f'<li><a href="{u}">{u}</a></li>' for u in down + across)
        url = "/" if i == 0 else f"/p/{i}.html"
        html = (
            f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Page {i}</title>'
            f'<link rel="canonical" href="{url}"><meta name="description" content="page {i}">'
            f"</head><body><nav>{nav}</nav><main><h1>Page {i}</h1>{paras}<ul>{links}</ul></main>"
            "<footer>footer</footer></body></html>"
        )
        path = folder / "index.html" if i == 0 else folder / "p" / f"{i}.html"
        path.write_text(html)
    (folder / "done").write_text("")
    return folder


SITEMAPKIT = """
from sitemapkit.crawl.run import crawl
r = crawl({base!r} + "/", {out!r}, sitemaps=False, concurrency={concurrency}, crawl_db={db!r})
result = r.sources["crawl"]["fetched"]
"""

SCRAPY = """
import json, sys, time

import scrapy
from scrapy.crawler import CrawlerProcess

base, concurrency = sys.argv[1], int(sys.argv[2])
count = [0]


class Site(scrapy.Spider):
    name = "site"
    start_urls = [base + "/"]
    allowed_domains = ["127.0.0.1"]

    def parse(self, response):
        count[0] += 1
        if not response.headers.get(b"Content-Type", b"").startswith(b"text/html"):
            return
        response.css("link[rel=canonical]::attr(href)").get()
        response.css("meta[name=robots]::attr(content)").get()
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, self.parse)


t0 = time.perf_counter()
process = CrawlerProcess(settings={
    "LOG_LEVEL": "ERROR",
    "ROBOTSTXT_OBEY": True,
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency,
    "DOWNLOAD_DELAY": 0,
    "TELNETCONSOLE_ENABLED": False,
    "COOKIES_ENABLED": False,
    "USER_AGENT": "bench-scrapy",
})
process.crawl(Site)
process.start()
elapsed = time.perf_counter() - t0
peak_kb = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print("BENCH_RESULT " + json.dumps({"count": count[0], "seconds": elapsed, "peak_kb": peak_kb}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pages", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--concurrency", type=int, default=2)
    args = ap.parse_args()
    try:
        import scrapy  # noqa: F401

        have_scrapy = True
    except ImportError:
        have_scrapy = False
        print("scrapy is not installed (pip install -e '.[bench]'): measuring sitemapkit alone")
    for pages in args.pages:
        folder = build_site(pages)
        server, base = serve(folder)
        try:
            results: list[Result] = []
            out = WORK / f"crawl-out-{pages}"
            shutil.rmtree(out, ignore_errors=True)
            db = str(WORK / f"crawl-{pages}.db")
            fmt = {"base": base, "concurrency": args.concurrency, "out": str(out), "db": db}
            results.append(run_python("sitemapkit crawl", SITEMAPKIT.format(**fmt)))
            if have_scrapy:
                spider = WORK / "bench_scrapy_spider.py"
                spider.write_text(SCRAPY)
                argv = [sys.executable, str(spider), base, str(args.concurrency)]
                results.append(run_command("scrapy spider", argv, note=f"scrapy {scrapy_version()}"))
        finally:
            server.kill()
            server.wait()
        print_table(
            f"crawl {pages:,} pages, concurrency {args.concurrency} per host (items = pages fetched)",
            results,
            baseline="scrapy spider" if have_scrapy else None,
        )
    return 0


def serve(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Serve `folder` over HTTP/1.1 with keep-alive on a free 127.0.0.1 port, in its own process."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = WORK / "bench_crawl_server.py"
    script.write_text(SERVER)
    proc = subprocess.Popen([sys.executable, str(script), str(port), str(folder)])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("the local HTTP server did not start")


def scrapy_version() -> str:
    import scrapy

    return str(scrapy.__version__)


if __name__ == "__main__":
    sys.exit(main())
