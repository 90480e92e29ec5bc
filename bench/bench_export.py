"""Formatting entries as JSONL: sitemapkit's batch writer against orjson and msgspec, in one process.

    python bench/bench_export.py [--entries 200000]

Entries are the 1M-tree's shape (loc, date, changefreq, priority, sitemap). Each contender formats the same
list to one string; CPU seconds per million entries, best of three. This is how the writer was chosen: a
serialiser needs the JSONL dict built first (`entry_to_dict`), which costs more than the whole batch writer.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import time
from collections.abc import Callable

from sitemapkit.core.model import UrlEntry
from sitemapkit.reader.export import entry_to_dict, entry_to_json, write_jsonl


def contenders() -> dict[str, Callable[[list[UrlEntry]], object]]:
    def batch_writer(entries: list[UrlEntry]) -> object:
        out = io.StringIO()
        write_jsonl(entries, out)
        return out.getvalue()

    found: dict[str, Callable[[list[UrlEntry]], object]] = {
        "sitemapkit write_jsonl (batched)": batch_writer,
        "entry_to_json per entry (before)": lambda es: "".join(entry_to_json(e) + "\n" for e in es),
        "json.dumps(entry_to_dict)": lambda es: "".join(
            json.dumps(entry_to_dict(e), ensure_ascii=False, separators=(",", ":")) + "\n" for e in es
        ),
    }
    try:
        import orjson

        found["orjson.dumps(entry_to_dict)"] = lambda es: b"".join(
            orjson.dumps(entry_to_dict(e), option=orjson.OPT_APPEND_NEWLINE) for e in es
        )
    except ImportError:
        pass
    try:
        import msgspec

        enc = msgspec.json.Encoder()
        found["msgspec encode(entry_to_dict)"] = lambda es: b"".join(
            enc.encode(entry_to_dict(e)) + b"\n" for e in es
        )
    except ImportError:
        pass
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=200_000)
    args = ap.parse_args()
    day = dt.date(2024, 1, 1)
    entries = [
        UrlEntry(
            f"http://www.example.com/products/item-{n}.html?ref=sitemap&v=2",
            day + dt.timedelta(days=n % 365),
            "weekly",
            0.6,
            sitemap=f"http://127.0.0.1:8000/sitemap-{n // 50_000 + 1:02d}.xml.gz",
        )
        for n in range(args.entries)
    ]
    print(f"\n## format {args.entries:,} entries as JSONL (CPU seconds per 1M entries, best of 3)")
    for name, fn in contenders().items():
        best = float("inf")
        for _ in range(3):
            t0 = time.process_time()
            fn(entries)
            best = min(best, time.process_time() - t0)
        print(f"{name:<36} {best / args.entries * 1e6:>6.2f} s")


if __name__ == "__main__":
    main()
