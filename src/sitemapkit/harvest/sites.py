"""The SITES list of a harvest: one host or base URL a line, grouped and sharded by host."""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections.abc import Iterable
from urllib.parse import urlsplit

from sitemapkit.core.errors import InputError

_BARE_HOST = re.compile(r"[\w-]+(?:\.[\w-]+)*\.?(?::[0-9]{1,5})?/?")


def site_url(text: str, where: str) -> str:
    """The site root (`scheme://host[:port]/`) a line names: a bare host means https.

    >>> site_url("Example.com", "sites.txt:1")
    'https://example.com/'
    >>> site_url("http://127.0.0.2:8080/blog/", "sites.txt:2")
    'http://127.0.0.2:8080/'
    """
    value = text.strip()
    if "://" not in value:
        if _BARE_HOST.fullmatch(value) is None:
            raise InputError(f"{where}: {value!r} is not a host or an http(s) URL")
        value = "https://" + value.rstrip("/")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        raise InputError(f"{where}: {text.strip()!r} is not a host or an http(s) URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname or " " in value:
        raise InputError(f"{where}: {text.strip()!r} is not a host or an http(s) URL")
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}{f':{port}' if port is not None else ''}/"


def read_sites(path: str | os.PathLike[str]) -> list[str]:
    """The distinct sites of a SITES file (`.gz` allowed), in file order. Blank lines and `#` comments
    are skipped; a line that is not a host or an http(s) URL is an `InputError` naming file and line."""
    name = os.fspath(path)
    opener = gzip.open if name.endswith(".gz") else open
    try:
        with opener(name, "rt", encoding="utf-8", errors="replace") as f:
            return normalize_sites(f, name)
    except (OSError, EOFError) as exc:
        raise InputError(f"{name}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None


def normalize_sites(lines: Iterable[str], name: str = "<sites>") -> list[str]:
    """The distinct site roots named by `lines`, in order (see `read_sites`)."""
    seen: dict[str, None] = {}
    for number, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if text:
            seen.setdefault(site_url(text, f"{name}:{number}"), None)
    return list(seen)


def host_of(site: str) -> str:
    """What politeness counts by: the host name, without scheme or port."""
    return (urlsplit(site).hostname or site).lower()


def group_by_host(sites: Iterable[str]) -> list[list[str]]:
    """Sites sharing a host name, together (they are read one after another), in first-seen order."""
    groups: dict[str, list[str]] = {}
    for site in sites:
        groups.setdefault(host_of(site), []).append(site)
    return list(groups.values())


def shard(sites: Iterable[str], count: int) -> list[list[str]]:
    """`count` shards of `sites`, by a stable hash of the host, so one host is always in one shard."""
    shards: list[list[str]] = [[] for _ in range(count)]
    for site in sites:
        shards[zlib.crc32(host_of(site).encode()) % count].append(site)
    return shards
