"""`sitemapkit harvest`: read the sitemaps of many sites into a Parquet dataset."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from sitemapkit.cli._output import fail, interruption, plural
from sitemapkit.cli.options import connect_timeout, network_options, per_host_option, workers_option
from sitemapkit.core.errors import SitemapkitError, Terminated, UsageError
from sitemapkit.core.runner import run_stoppable
from sitemapkit.harvest.options import HarvestOptions
from sitemapkit.harvest.run import HarvestProgress, ProgressHandler, aharvest
from sitemapkit.reader.parquet import arrow_without_pandas

_DEFAULTS = HarvestOptions()


@click.command()
@click.argument("sites", type=click.Path(dir_okay=False, allow_dash=False))
@click.option("--out", "out", metavar="DATASET", required=True, help="The dataset folder to write.")
@click.option("--resume", is_flag=True, help="Finish a harvest that was stopped: finished sites are kept.")
@click.option(
    "--engine",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="local: worker processes on this machine (sites of one host in one of them); ray: actors on a "
    "Ray cluster (sitemapkit[ray]).",
)
@click.option(
    "--ray-address", metavar="ADDR", default=None, help="Ray cluster to join (default: start a local Ray)."
)
@workers_option
@click.option(
    "--concurrency",
    metavar="SITES",
    type=click.IntRange(1),
    default=_DEFAULTS.concurrency,
    show_default=True,
    help="Sites read at once: in all (local), per actor (ray); not requests to one host: that is --per-host.",
)
@per_host_option(_DEFAULTS.per_host, "--per-host")
@click.option("--max-urls-per-site", type=click.IntRange(0), default=None, help="Stop a site after N URLs.")
@click.option(
    "--max-sitemaps-per-site",
    type=click.IntRange(0),
    default=_DEFAULTS.max_sitemaps_per_site,
    show_default=True,
    help="Stop a site after N sitemaps with URLs.",
)
@click.option(
    "--max-depth",
    type=click.IntRange(0),
    default=_DEFAULTS.max_depth,
    show_default=True,
    help="Index levels followed below each sitemap robots.txt names.",
)
@click.option(
    "--site-timeout",
    metavar="S",
    type=click.FloatRange(0, min_open=True),
    default=_DEFAULTS.site_timeout,
    show_default=True,
    help="Longest one site may take; what it gave so far is kept.",
)
@network_options()
@click.option(
    "--rows-per-file",
    type=click.IntRange(1),
    default=_DEFAULTS.rows_per_file,
    show_default=True,
    help="URL rows per part file (finished sites are committed when a part closes).",
)
@click.option(
    "--commit-seconds",
    type=click.FloatRange(0),
    default=_DEFAULTS.commit_seconds,
    show_default=True,
    help="Close a part file, committing finished sites, at least this often.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress and no summary on stderr.")
def harvest(
    sites: str,
    out: str,
    resume: bool,
    engine: str,
    ray_address: str | None,
    workers: int | None,
    concurrency: int,
    per_host: int,
    max_urls_per_site: int | None,
    max_sitemaps_per_site: int,
    max_depth: int,
    site_timeout: float,
    timeout: float,
    retries: int,
    user_agent: str,
    allow_private: bool,
    rows_per_file: int,
    commit_seconds: float,
    quiet: bool,
) -> None:
    """Read the sitemaps of every site in SITES into the Parquet dataset DATASET.

    SITES is a file with one host or base URL a line (.gz allowed; # comments).
    Each site's sitemaps are found through robots.txt (or else well-known paths) and
    read whole, politely: robots.txt rules and Crawl-delay for our user agent,
    Retry-After, at most --per-host requests in flight per host. DATASET gets urls/
    (one row per URL, Parquet parts), sites.parquet, sitemaps.parquet and
    summary.json, readable by DuckDB, Polars, pandas or Spark.

    Stopped (Ctrl-C, a kill, a crash)? Run the same command with --resume.

    \b
    Examples:
      sitemapkit harvest sites.txt --out crawl/
      sitemapkit harvest sites.txt.gz --out crawl/ --resume
      sitemapkit harvest sites.txt --out /shared/crawl --engine ray --ray-address auto
    """
    options = HarvestOptions(
        concurrency=concurrency,
        per_host=per_host,
        max_urls_per_site=max_urls_per_site,
        max_sitemaps_per_site=max_sitemaps_per_site,
        max_depth=max_depth,
        site_timeout=site_timeout,
        connect_timeout=connect_timeout(timeout),
        read_timeout=timeout,
        retries=retries,
        user_agent=user_agent,
        allow_private=allow_private,
        rows_per_file=rows_per_file,
        commit_seconds=commit_seconds,
    )
    try:
        arrow_without_pandas()  # this process is the command's own
        with _progress(quiet) as on_progress:
            summary = run_stoppable(  # Ctrl-C and SIGTERM stop every worker first
                aharvest(
                    sites,
                    out,
                    engine="ray" if engine == "ray" else "local",
                    options=options,
                    resume=resume,
                    workers=workers,
                    ray_address=ray_address,
                    on_progress=on_progress,
                )
            )
    except UsageError as exc:
        raise click.UsageError(str(exc)) from None
    except SitemapkitError as exc:  # the SITES or the dataset cannot be read, a worker process failed
        fail(str(exc))
    except (KeyboardInterrupt, Terminated) as exc:
        how, status = interruption(exc)
        fail(f"{how}; finished sites are kept: run again with --resume to finish {out}", status)
    except OSError as exc:
        fail(f"{out}: cannot write ({exc.strerror or exc})")
    if not quiet:
        click.echo(_describe(summary), err=True)
        click.echo(f"dataset: {out} (summary in {out.rstrip('/')}/summary.json)", err=True)


def progress_line(p: HarvestProgress) -> str:
    """`120/1,000 sites, 600,000 URLs, 50,000 URLs/s, 3 errors, ETA 1m20s`."""
    eta = p.eta
    left = "-" if eta is None else (f"{eta / 60:.0f}m{eta % 60:02.0f}s" if eta >= 60 else f"{eta:.0f}s")
    return (
        f"{p.sites_done:,}/{p.sites_total:,} sites, {p.urls:,} URLs, {p.urls_per_second:,.0f} URLs/s, "
        f"{p.errors:,} errors ({p.site_errors:,} sites failed), ETA {left}"
    )


@contextmanager
def _progress(quiet: bool) -> Iterator[ProgressHandler | None]:
    """A live bar on a terminal; a line every 10 s when stderr is a file (a log); nothing with --quiet."""
    if quiet:
        yield None
        return
    if not sys.stderr.isatty():
        last = [0.0]

        def log(p: HarvestProgress) -> None:
            now = time.monotonic()
            if now - last[0] >= 10.0 or p.sites_done == p.sites_total:
                last[0] = now
                click.echo("harvest: " + progress_line(p), err=True)

        yield log
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("harvest"),
        BarColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("", total=None)

        def update(p: HarvestProgress) -> None:
            bar.update(task, total=p.sites_total, completed=p.sites_done, description=progress_line(p))

        yield update


def _describe(summary: dict[str, Any]) -> str:
    """The summary (`DATASET/summary.json`) as a few lines of text."""
    share = summary.get("share_of_urls", {})
    lines = [
        f"{plural(summary['sites'], 'site')} ({summary['sites_with_sitemaps']:,} with sitemaps: "
        f"{summary['sites_via_robots']:,} via robots.txt, "
        f"{summary['sites_via_well_known']:,} via a well-known path; "
        f"{summary['sites_with_errors']:,} with errors)",
        f"{plural(summary['sitemaps_read'], 'sitemap')} read, {plural(summary['urls'], 'URL')}",
        "URLs with " + ", ".join(f"{k} {v:.1%}" for k, v in share.items()),
    ]
    if summary.get("formats"):
        lines.append("formats: " + ", ".join(f"{k} {v:,}" for k, v in summary["formats"].items()))
    if summary.get("site_errors"):
        lines.append("site errors: " + ", ".join(f"{k} {v:,}" for k, v in summary["site_errors"].items()))
    if summary.get("error_classes"):
        top = list(summary["error_classes"].items())[:8]
        lines.append("error classes: " + ", ".join(f"{k} {v:,}" for k, v in top))
    if summary.get("seconds"):
        lines.append(
            f"this run: {plural(summary.get('sites_this_run', 0), 'site')}, "
            f"{plural(summary.get('urls_this_run', 0), 'URL')} "
            f"in {summary['seconds']:.1f} s ({summary.get('urls_per_second', 0):,.0f} URLs/s)"
        )
    return "\n".join(lines)
