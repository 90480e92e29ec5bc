"""`generate`: input files -> entries -> pipeline -> writer -> published sitemaps, as one function."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from sitemapkit.diagnostics import DiagnosticHandler
from sitemapkit.sources.lists import is_url_list, list_batches, read_source
from sitemapkit.writer import IndexMode, PublishResult, SitemapWriter


def generate(
    sources: Iterable[str],
    out_dir: str | os.PathLike[str],
    base_url: str,
    *,
    gzip: bool = False,
    gzip_level: int = 6,
    max_urls: int = 50_000,
    max_bytes: int = 52_428_800,
    index: IndexMode = "auto",
    name: str = "sitemap",
    xsl: str | None = None,
    allow_hosts: Iterable[str] = (),
    strict: bool = False,
    on_diagnostic: DiagnosticHandler | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> PublishResult:
    """Generate and publish sitemaps for the URLs in `sources` (URL lists, `.csv`, `.jsonl`, `.gz`, `-`).

    Raises `InputError` when an input cannot be read and `PublishError` when nothing could be published;
    in both cases the output folder is left as it was.
    """
    writer = SitemapWriter(
        out_dir,
        base_url,
        gzip=gzip,
        gzip_level=gzip_level,
        max_urls=max_urls,
        max_bytes=max_bytes,
        index=index,
        name=name,
        xsl=xsl,
        allow_hosts=allow_hosts,
        strict=strict,
        on_diagnostic=on_diagnostic,
    )
    with writer:
        read = 0
        for name in sources:
            if is_url_list(name):
                with list_batches(name, writer.log) as (batches, parse_line):
                    for first, lines, clean in batches:
                        writer.add_lines(lines, first, parse_line, clean=clean)
                        read += len(lines)
                        if on_progress is not None:
                            on_progress(read)
            else:
                for entry in read_source(name, writer.log):
                    writer.add_entry(entry)
                    read += 1
                    if on_progress is not None and not read % 10_000:
                        on_progress(read)
    assert writer.result is not None
    return writer.result
