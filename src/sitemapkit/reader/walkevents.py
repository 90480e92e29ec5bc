"""What a tree walk is made of and tells (`reader.tree.TreeWalk`): the tree's nodes (`SitemapNode`), the
sitemaps waiting for their turn (`WalkItem`, `Refusal`), and what the walk reports to its consumer
(`WalkEvents`, and a `SitemapVisit` per sitemap for one that checks each file, the validator)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Final, Protocol

from sitemapkit.core.dates import format_w3c
from sitemapkit.core.diagnostics import Diagnostic
from sitemapkit.core.model import IndexEntry, Lastmod, UrlEntry
from sitemapkit.reader.discover import Discovery
from sitemapkit.reader.download import Download
from sitemapkit.reader.fetch import (
    ContentDecodingError,
    DownloadTooLargeError,
    FetchError,
    FetchRefusedError,
    FetchResponse,
)

if TYPE_CHECKING:
    from sitemapkit.reader.parser import SitemapParser
    from sitemapkit.reader.walk import ReadOptions

__all__ = [
    "DocumentFacts",
    "Refusal",
    "SitemapNode",
    "SitemapVisit",
    "WalkEvents",
    "WalkItem",
    "status_phrase",
]

SITEMAP_KINDS: Final = frozenset({"urlset", "sitemapindex", "text", "rss", "atom"})


class DocumentFacts(Protocol):
    """What a parser knows of the document it read: `SitemapParser`, or a leaf worker's `LeafResult`."""

    @property
    def kind(self) -> str | None: ...
    @property
    def ok(self) -> bool: ...
    @property
    def compressed(self) -> bool: ...
    @property
    def uncompressed_bytes(self) -> int: ...
    @property
    def truncated(self) -> bool: ...


@dataclass(eq=False, slots=True)
class SitemapNode:
    """One sitemap of the tree a walk went through, filled in as it is read.

    `kind` is the parser's (`urlset`, `sitemapindex`, `text`, `rss`, `atom`), or `robots` / `site` for
    the root of a discovered site, or None when the document was not read or not a sitemap (see `error`).
    `bytes` counts what was downloaded (compressed, if it was); `lastmod` is what the parent index said.
    """

    url: str
    kind: str | None = None
    status: int | None = None
    url_count: int = 0
    bytes: int = 0
    lastmod: Lastmod | None = None
    children: list[SitemapNode] = field(default_factory=list)
    error: str | None = None
    depth: int = 0
    final_url: str | None = None
    """Where redirects ended, when they did."""
    redirects: tuple[str, ...] = ()
    """The URLs that answered with a redirect, in order."""
    compressed: bool = False
    uncompressed_bytes: int = 0
    truncated: bool = False
    """Reading stopped early (a cap, a broken connection, a cut-off file); complete entries were kept."""
    lastmod_text: str | None = None  # `lastmod` as the parent index wrote it (`IndexEntry.lastmod_text`)

    def record(self, facts: DocumentFacts) -> None:
        """What a parser learned of the document (the walk's own, or a leaf worker's `LeafResult`)."""
        self.kind = facts.kind if facts.ok else None
        self.compressed = facts.compressed
        self.uncompressed_bytes = facts.uncompressed_bytes
        self.truncated = self.truncated or facts.truncated

    @property
    def read_ok(self) -> bool:
        """Whether this document was read and recognised as a sitemap (possibly with problems)."""
        return self.kind in SITEMAP_KINDS

    def walk(self) -> Iterator[SitemapNode]:
        """This node and all below it, depth-first in index order."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def to_dict(self) -> dict[str, Any]:
        """The node without its children, as JSON-ready values."""
        return {
            "url": self.url,
            "kind": self.kind,
            "status": self.status,
            "url_count": self.url_count,
            "bytes": self.bytes,
            "lastmod": format_w3c(self.lastmod) if self.lastmod is not None else None,
            "depth": self.depth,
            "children": len(self.children),
            "error": self.error,
            "final_url": self.final_url,
            "compressed": self.compressed,
            "uncompressed_bytes": self.uncompressed_bytes,
            "truncated": self.truncated,
        }


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why the walk does not read a child an index lists (decided when the index is parsed, told when the
    child's turn comes, so reports keep the walk's order).

    `code` is `fetch-loop`, `cross-host`, `too-deep` or `read-error` (a local index's child not next to
    it); `reason` says it in the reader's words; `path` is where a local child had to be, when it had to
    be somewhere (its public URL is under the index's public folder)."""

    code: str
    reason: str
    path: str | None = None


@dataclass(eq=False, slots=True)
class WalkItem:
    """A sitemap waiting for (or having) its turn in the walk: where it is read from, who listed it."""

    node: SitemapNode
    name: str
    """The name its diagnostics use: the URL, or the (shown) path of a local file."""
    ancestors: frozenset[str] = frozenset()
    """Every URL of the index chain above (including redirect hops), for loop detection."""
    parent: WalkItem | None = None
    line: int | None = None
    """The line of the parent index that lists it."""
    local: bool = False
    read: str | None = None
    """Where it is read from when that is not `node.url`: a local path, or a staging copy's URL."""
    public: str | None = None
    """Its public URL, where known (given, listed by its index, or where redirects ended)."""
    public_folder: str | None = None
    """For the root given a public URL (`validate --url`): that URL's folder."""
    read_folder: str | None = None
    """For a remote root given a public URL: the folder it was really fetched from (a staging copy)."""
    local_children: bool = True
    """For a local index: whether its children are looked for next to it (not for standard input)."""
    refusal: Refusal | None = None
    moved: bool = False
    """A discovered sitemap that an index read before its turn lists: read there, in the index's place."""
    download: Download | None = None
    visit: SitemapVisit | None = None

    @property
    def location(self) -> str:
        """The path or URL this sitemap is read from."""
        return self.read or self.node.url


class SitemapVisit:
    """What a consumer does with one sitemap while the walk reads it; the base does nothing.

    `body` is called when the body starts (`response` None for a local file), then `piece` for each piece
    of it (compressed, as it came), `entries` for each list the parser makes; `finish` once the body ended
    (`complete`: not cut short by a cap or the network), and `close` always, last."""

    def body(self, response: FetchResponse | None) -> None:
        """The body starts."""

    def piece(self, data: bytes) -> None:
        """One piece of the body, as read."""

    def parsed(self, diagnostic: Diagnostic) -> None:
        """A diagnostic of the parser about this sitemap."""

    def entries(self, out: list[UrlEntry | IndexEntry]) -> list[IndexEntry]:
        """Entries as parsed; returns the index entries (children) the walk may follow."""
        return [entry for entry in out if isinstance(entry, IndexEntry)]

    def finish(self, parser: SitemapParser, complete: bool) -> None:
        """The body ended (read whole when `complete`)."""

    def close(self) -> None:
        """The sitemap's turn is over, however it went."""


class WalkEvents:
    """What the walk meets, told to its consumer. This base reports the reader's diagnostics through
    `diagnostic`; a subclass (the validator's) reports its own and opens a `SitemapVisit` per sitemap."""

    close_cut_body: bool = True
    """Parse the end of a body that a cap or the network cut short (its last complete entries)."""
    lists: str = "lists"
    """How a cross-host refusal words the index listing a child (`FetchPolicy.cross_host_reason`)."""

    def __init__(self, diagnostic: Callable[[Diagnostic], None], max_download: int) -> None:
        self.diagnostic = diagnostic
        self.max_download = max_download

    def say(self, code: str, message: str, source: str) -> None:
        self.diagnostic(Diagnostic.make(code, message, source=source))

    def open(self, item: WalkItem) -> SitemapVisit | None:
        """A sitemap's turn begins; a visit, to see its body and entries (None: no need)."""
        return None

    def parsed(self, item: WalkItem, d: Diagnostic) -> None:
        """A diagnostic of the parser (when the item has no visit)."""
        self.diagnostic(d)

    def no_sitemap(self, found: Discovery, message: str) -> None:
        self.say("no-sitemap", message, found.site)

    def fetch_failed(self, item: WalkItem, exc: FetchError) -> None:
        """Nothing of the sitemap could be fetched (refused by the policy or robots.txt, or failed)."""
        if isinstance(exc, FetchRefusedError):
            self.say(exc.code, exc.reason, item.node.url)
        else:
            self.say("http-error", f"could not fetch: {exc.reason}", item.node.url)

    def redirect_loop(self, item: WalkItem, url: str, message: str) -> None:
        self.say("fetch-loop", message, item.node.url)

    def http_status(self, item: WalkItem, response: FetchResponse) -> None:
        tries = f" (after {response.attempts} attempts)" if response.attempts > 1 else ""
        self.say(
            "http-error", f"HTTP {response.status} {status_phrase(response.status)}{tries}", item.node.url
        )

    def cut(self, item: WalkItem, exc: FetchError) -> None:
        """The body was cut short: a download cap, a decoding failure, a broken connection."""
        if isinstance(exc, DownloadTooLargeError):
            message = f"more than {self.max_download:,} bytes; reading stopped, complete entries kept"
            self.say("download-too-large", message, item.name)
        elif isinstance(exc, ContentDecodingError):
            self.say("compression-error", exc.reason, item.name)
        else:
            self.say("http-error", exc.reason, item.name)

    def unreadable(self, item: WalkItem, error: str) -> None:
        self.say("read-error", error, item.name)

    def nested_index(self, item: WalkItem) -> None:
        self.say("nested-index", "a sitemap index listed by another sitemap index", item.name)

    def over(self, item: WalkItem, over_index: int, over_walk: int, options: ReadOptions) -> None:
        """Children of `item` a bound left out: past `max_children` of it, past `max_sitemaps` of the walk."""
        if over_index:
            self.say(
                "walk-limit",
                f"{over_index:,} more children past the first {options.max_children:,} of this "
                "index were not followed (--max-children)",
                item.node.url,
            )
        if over_walk:
            self.say(
                "walk-limit",
                f"{over_walk:,} children were not followed: the walk already holds "
                f"{options.max_sitemaps:,} sitemaps (--max-sitemaps)",
                item.node.url,
            )

    def refused(self, item: WalkItem, refusal: Refusal, options: ReadOptions) -> None:
        """A child of `item.parent` is not read (its turn in the walk)."""
        assert item.parent is not None
        parent, url = item.parent, item.node.url
        if refusal.code == "fetch-loop":
            self.say("fetch-loop", f"{refusal.reason}: {url}; not followed", parent.node.url)
        elif refusal.code == "too-deep":
            self.say(
                "too-deep",
                f"{url} is at index depth {item.node.depth}, deeper than the maximum {options.max_depth}; "
                "not followed",
                parent.node.url,
            )
        elif refusal.code == "read-error":
            self.say(
                "read-error",
                f"{url} is not next to the index (looked for its URL path in the index's folder); "
                "not fetched (pass --fetch-missing to fetch it)",
                parent.location,
            )
        else:
            self.say(refusal.code, refusal.reason, parent.node.url)


def status_phrase(status: int) -> str:
    """The reason phrase of an HTTP status ('' for one without)."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""
