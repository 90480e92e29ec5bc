"""The end of a harvest: sites.parquet and sitemaps.parquet from the manifest, and the adoption summary."""

from __future__ import annotations

import contextlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from sitemapkit.core.files import AtomicFile, atomic_write
from sitemapkit.harvest.rows import SITE_COLUMNS, SITEMAP_COLUMNS, flat_schema, pyarrow, rows_table
from sitemapkit.harvest.site import STAT_KEYS
from sitemapkit.harvest.store import records

_CHUNK = 50_000


class _TableWriter:
    """Rows into one Parquet file, a row group per chunk, published by rename on close (an `AtomicFile`);
    `discard` drops it."""

    def __init__(self, path: Path, columns: tuple[tuple[str, str], ...]) -> None:
        pa = pyarrow()
        self.path = path
        self.schema = flat_schema(columns)
        self.file = AtomicFile(path)
        try:
            self.writer = pa.parquet.ParquetWriter(self.file.file, self.schema, compression="zstd")
        except BaseException:
            self.file.discard()
            raise
        self.rows: list[dict[str, Any]] = []

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        if len(self.rows) >= _CHUNK:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            self.writer.write_table(rows_table(self.rows, self.schema))
            self.rows = []

    def close(self) -> None:
        self.flush()
        self.writer.close()
        self.file.commit()

    def discard(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()
        self.file.discard()


def finish(root: str | os.PathLike[str], run: dict[str, Any]) -> dict[str, Any]:
    """Write sites.parquet, sitemaps.parquet and summary.json from the manifest; returns the summary.

    `run` holds what only the caller knows (engine, workers, seconds, sites listed) and goes into the summary.
    """
    path = Path(root)
    sites = _TableWriter(path / "sites.parquet", SITE_COLUMNS)
    try:
        sitemaps = _TableWriter(path / "sitemaps.parquet", SITEMAP_COLUMNS)
    except BaseException:
        sites.discard()
        raise
    totals: Counter[str] = Counter()
    formats: Counter[str] = Counter()
    codes: Counter[str] = Counter()
    warnings: Counter[str] = Counter()
    site_errors: Counter[str] = Counter()
    count = Counter[str]()
    try:
        for record in records(path):
            row = record["row"]
            row.setdefault("sitemaps_cut_short", 0)  # (not in the rows of a version before it)
            sites.add(row)
            for sitemap in record.get("sitemaps", []):
                sitemaps.add(sitemap)
            stats = record.get("stats", {})
            totals.update({k: int(stats.get(k, 0)) for k in STAT_KEYS})
            formats.update(stats.get("kinds", {}))
            codes.update(stats.get("codes", {}))
            warnings.update(stats.get("warnings", {}))
            count["sites"] += 1
            count["sitemaps_read"] += int(row.get("sitemaps_read") or 0)
            count["sitemaps_cut_short"] += int(row.get("sitemaps_cut_short") or 0)
            if row.get("sitemaps_read"):
                count["sites_with_sitemaps"] += 1
            if row.get("via"):
                count[f"sites_via_{str(row['via']).replace('-', '_')}"] += 1
            if row.get("error_code"):
                site_errors[str(row["error_code"])] += 1
            if row.get("truncated"):
                count["sites_truncated"] += 1
            if row.get("errors"):
                count["sites_with_errors"] += 1
        sites.close()
        sitemaps.close()
    except BaseException:
        for writer in (sites, sitemaps):
            writer.discard()
        raise
    urls = totals["urls"]
    seconds = float(run.get("seconds") or 0.0)
    summary: dict[str, Any] = {
        "sites": count["sites"],
        "sites_with_sitemaps": count["sites_with_sitemaps"],
        "sites_via_robots": count["sites_via_robots"],
        "sites_via_well_known": count["sites_via_well_known"],
        "sites_with_errors": count["sites_with_errors"],
        "sites_truncated": count["sites_truncated"],
        "sitemaps_read": count["sitemaps_read"],
        "sitemaps_cut_short": count["sitemaps_cut_short"],
        "urls": urls,
        "share_of_urls": {k: round(totals[k] / urls, 4) if urls else 0.0 for k in STAT_KEYS if k != "urls"},
        "formats": dict(formats.most_common()),
        "site_errors": dict(site_errors.most_common()),
        "error_classes": dict(codes.most_common()),
        "warning_classes": dict(warnings.most_common()),
        **run,
    }
    if seconds > 0:
        summary["sites_per_second"] = round(int(run.get("sites_this_run", 0)) / seconds, 2)
        summary["urls_per_second"] = round(int(run.get("urls_this_run", 0)) / seconds, 1)
    with atomic_write(path / "summary.json", "w") as f:
        f.write(json.dumps(summary, indent=2) + "\n")
    return summary
