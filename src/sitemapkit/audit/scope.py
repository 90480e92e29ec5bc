"""Where a sitemap may list URLs, judged as search engines judge it.

The validator reports `url-not-allowed` once per URL outside a sitemap's folder (sitemaps.org's location
rule). For an audit that is the wrong measure twice over: a sitemap named in the host's robots.txt, or
listed by an index named there, may list any URL of that host (sitemaps.org, "Sitemaps & Cross
Submits"), so there is nothing to report; and where there is, it is one mistake per sitemap file (the
file sits in the wrong folder), not one per URL. `ScopeCheck` takes those diagnostics as the validator
emits them and turns them into at most one finding per file and kind: `urls-outside-folder` (same host)
or `urls-on-other-host`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sitemapkit.audit.findings import Finding
from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.urls import folder_of, url_key
from sitemapkit.reader.polite import origin_of

if TYPE_CHECKING:
    from sitemapkit.reader.fetch import FetchOptions

EXAMPLES = 5
"""URLs quoted in a finding's evidence."""


@dataclass(slots=True)
class _Outside:
    count: int = 0
    line: int | None = None
    examples: list[str] = field(default_factory=list)

    def add(self, other: _Outside) -> None:
        self.count += other.count
        if self.line is None or (other.line is not None and other.line < self.line):
            self.line = other.line
        self.examples = (self.examples + other.examples)[:EXAMPLES]


class ScopeCheck:
    """Collects the validator's `url-not-allowed` diagnostics (`take`), then gives the findings they
    amount to (`findings`) once the sitemap tree and what robots.txt submits are known."""

    def __init__(self, site: str) -> None:
        self.site = origin_of(site)
        """The origin whose robots.txt was read: a sitemap it submits may list any URL of it."""
        self._by_file: dict[tuple[str, bool, bool], _Outside] = {}
        """(sitemap, on the sitemap's own origin, on the site's origin): the URLs out of its scope."""

    def take(self, d: Diagnostic) -> bool:
        """Keep `d` when it is a `url-not-allowed` about a URL of a sitemap file (True); False for any
        other diagnostic, which the caller reports as it is."""
        if d.code != "url-not-allowed" or d.source is None or d.url is None:
            return False
        where = origin_of(d.url)
        own = "://" in d.source and where == origin_of(d.source)
        item = self._by_file.setdefault((d.source, own, where == self.site), _Outside())
        item.count += 1
        if item.line is None:
            item.line = d.line
        if len(item.examples) < EXAMPLES:
            item.examples.append(d.url)
        return True

    def findings(self, files: list[dict[str, Any]], submitted: set[str]) -> list[Finding]:
        """One finding per sitemap file and kind, none where robots.txt allows the URLs; `files` are the
        validator's (their error counts are brought in line with the findings), `submitted` the keys
        (`url_key`) of the sitemaps robots.txt names and of those listed by an index it names."""
        by_source = {f["source"]: f for f in files}
        parent = {f["source"]: f.get("parent") for f in files}

        def via_robots(source: str) -> str | None:
            """The sitemap robots.txt submits that `source` is, or is under."""
            seen: set[str] = set()
            node: str | None = source
            while node is not None and node not in seen:
                seen.add(node)
                if url_key(node) in submitted:
                    return node
                node = parent.get(node)
            return None

        groups: dict[tuple[str, bool], _Outside] = {}
        for (source, own, on_site), item in self._by_file.items():
            info = by_source.get(source)
            if info is not None:  # the validator counted each URL as an error
                info["errors"] = max(0, int(info.get("errors") or 0) - item.count)
            if on_site and via_robots(source) is not None:
                continue  # robots.txt submits the file: any URL of its host is allowed
            groups.setdefault((source, own), _Outside()).add(item)
        out: list[Finding] = []
        for (source, own), item in groups.items():
            info = by_source.get(source)
            what = "sitemaps" if info is not None and info.get("kind") == "sitemapindex" else "URLs"
            folder = folder_of(source)
            evidence: dict[str, Any] = {"count": item.count, "examples": item.examples, "folder": folder}
            shown = f"{item.count:,} {what if item.count != 1 else what[:-1]}"
            if not own:
                code = "urls-on-other-host"
                message = (
                    f"Lists {shown} of another host, scheme or port (such as {item.examples[0]}): they are "
                    f"dropped unless that host's robots.txt names {source}. List only URLs of "
                    f"{origin_of(source)}, or name this sitemap in the other host's robots.txt (and audit "
                    "with --allow-host)."
                )
            else:
                code = "urls-outside-folder"
                top = _root_copy(source)
                name = _top(source, parent)
                message = (
                    f"Lists {shown} outside its folder {folder} (such as {item.examples[0]}), and robots.txt "
                    f"names neither it nor an index above it: engines that apply the sitemaps.org location "
                    f"rule drop them. Move it to {top}, or add 'Sitemap: {name}' to {self.site}/robots.txt."
                )
                evidence.update(move_to=top, robots_line=f"Sitemap: {name}")
            if info is not None:  # one finding now stands for them all
                counted = "errors" if code == "urls-on-other-host" else "warnings"
                info[counted] = int(info.get(counted) or 0) + 1
            out.append(Finding.make(code, None, message, sitemap=source, line=item.line, evidence=evidence))
        return out


def _root_copy(sitemap: str) -> str:
    """Where `sitemap` would list anything of its host: the same file name at the site's root."""
    name = sitemap.rsplit("/", 1)[-1].split("?", 1)[0] or "sitemap.xml"
    return f"{origin_of(sitemap)}/{name}"


def _top(source: str, parent: dict[str, str | None]) -> str:
    """The topmost index above `source` (itself when it has none)."""
    seen = {source}
    while (up := parent.get(source)) is not None and up not in seen:
        seen.add(up)
        source = up
    return source


async def listed_by(indexes: list[str], fetch: FetchOptions) -> set[str]:
    """The keys of the sitemaps that `indexes` (robots.txt's sitemaps) list, for those that are indexes:
    each is read down to its own `<sitemap>` entries only (a urlset is left at its first entry)."""
    from sitemapkit.reader.walk import aread

    found: set[str] = set()
    for url in indexes:
        reader = aread(url, max_depth=0, fetch_options=fetch)
        async with reader:
            async for _ in reader:
                break  # a urlset: it lists no sitemap
        if reader.tree is not None:
            found.update(url_key(child.url) for child in reader.tree.children)
    return found


__all__ = ["ScopeCheck", "listed_by", "url_key"]
