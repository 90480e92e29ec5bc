"""The options of a harvest, and the one place where they become the reader's options."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Final

from sitemapkit.core.constants import DEFAULT_RETRIES, USER_AGENT
from sitemapkit.reader.fetch import FetchOptions
from sitemapkit.reader.polite import Politeness
from sitemapkit.reader.walk import DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, ReadOptions

DISCOVERY_KEEPALIVE: Final = 8
"""Idle connections the shared robots.txt/discovery client keeps (see `discovery_fetch_options`)."""


@dataclass(frozen=True, slots=True)
class HarvestOptions:
    """How a harvest reads each site and writes the dataset. Every field has a safe default."""

    concurrency: int = 256
    """Sites read at once (each with at most `per_host` requests in flight): in all for the local engine
    (shared out between its worker processes), per actor for Ray."""
    per_host: int = 1
    """Requests in flight to one host, at most; sites sharing a host are read one after another."""
    max_urls_per_site: int | None = None
    max_sitemaps_per_site: int | None = 10_000
    """Most sitemaps that give URLs read for one site."""
    max_depth: int = DEFAULT_MAX_DEPTH
    max_download: int = DEFAULT_MAX_BYTES
    max_uncompressed: int = DEFAULT_MAX_BYTES
    site_timeout: float = 900.0
    """Longest one site may take, all requests included; a site that takes longer keeps what it gave."""
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    retries: int = DEFAULT_RETRIES
    max_crawl_delay: float = 30.0
    """robots.txt `Crawl-delay` is honoured up to this many seconds."""
    user_agent: str = USER_AGENT
    allow_private: bool = False
    """Fetch sites on loopback and private addresses (tests, an intranet)."""
    rows_per_file: int = 1_000_000
    row_group_rows: int = 65_536
    commit_seconds: float = 60.0
    """A part file is closed (and the sites finished in it committed) at least this often."""

    def read_options(self) -> ReadOptions:
        """The reader's options for one site's walk."""
        return ReadOptions(
            max_depth=self.max_depth,
            concurrency=self.per_host,
            max_download=self.max_download,
            max_uncompressed=self.max_uncompressed,
            connect_timeout=self.connect_timeout,
            read_timeout=self.read_timeout,
            user_agent=self.user_agent,
            retries=self.retries,
            prefetch_buffer=128 * 1024,  # x concurrency: what a site may hold of a body not yet parsed
        )

    def fetch_options(self) -> FetchOptions:
        """The fetch options of one site: the walk's own, the fetch policy allowing private addresses
        with `allow_private`."""
        options = self.read_options().fetch_options(FetchOptions(max_connections=self.per_host))
        if self.allow_private:
            options = dataclasses.replace(
                options, policy=dataclasses.replace(options.policy, allow_private=True)
            )
        return options

    def politeness(self) -> Politeness:
        """The politeness layer of one worker: robots.txt for `user_agent`, `Crawl-delay` honoured up to
        `max_crawl_delay`, `per_host` requests in flight to one host."""
        return Politeness(
            user_agent=self.user_agent or USER_AGENT,
            max_crawl_delay=self.max_crawl_delay,
            per_host=self.per_host,
        )

    def discovery_fetch_options(self, lanes: int) -> FetchOptions:
        """The fetch options of the client a worker shares for robots.txt and discovery: as many requests
        at once as the lanes make, but few idle connections kept (each is of a site likely done with: a
        socket and its buffers held for nothing)."""
        return dataclasses.replace(
            self.fetch_options(), max_connections=max(1, lanes) * self.per_host, keepalive=DISCOVERY_KEEPALIVE
        )
