"""`UrlRun`, entries as columns: what the parser hands on, in a module that imports neither lxml nor the
parser (the child process that writes `sitemapkit parse`'s output imports this, not them). The `UrlEntry`
objects it gives are made fast by `core.model.new_url_entry`."""

from __future__ import annotations

from sitemapkit.core.model import Lastmod, UrlEntry, new_url_entry


class UrlRun:
    """Consecutive `<url>` entries of one sitemap that the fast path read, held as columns: what
    `SitemapParser(runs=True)` (and so `Reader.runs()`) gives in place of the entries, so that a writer
    formats them without making an object for each.

    Each list holds one value per entry, in document order; the entries have no extension data
    (images, videos, news, alternates). Every `loc` is ASCII without `"`, `\\`, `<`, `>`, spaces or
    control characters (the fast path reads no other), so JSON may quote it as it is. `entries()` gives
    the very `UrlEntry` objects the parser would have made.
    """

    __slots__ = (
        "_line",
        "_start",
        "_text",
        "changefreqs",
        "lastmod_texts",
        "lastmods",
        "locs",
        "priorities",
        "sitemap",
        "starts",
    )

    def __init__(self, sitemap: str, text: str | None = None, start: int = 0, line: int = 0) -> None:
        self.sitemap = sitemap
        self.locs: list[str] = []
        self.lastmods: list[Lastmod | None] = []
        self.lastmod_texts: list[str | None] = []
        """The `<lastmod>` texts as written (see `UrlEntry.lastmod_text`); empty in a run made without them
        (such as the one `sitemapkit parse` rebuilds in its writer process)."""
        self.changefreqs: list[str | None] = []
        self.priorities: list[float | None] = []
        self.starts: list[int] = []
        """Where each entry starts in `_text` (the piece of the document the parser read it from), which
        is in line `_line` at `_start`: the lines are counted from these when asked for."""
        self._text = text
        self._start = start
        self._line = line

    def __len__(self) -> int:
        return len(self.locs)

    def __repr__(self) -> str:
        return f"<UrlRun of {len(self.locs)} entries of {self.sitemap}>"

    def __getitem__(self, index: slice) -> UrlRun:
        """The entries `index` (a slice) selects, as a run."""
        part = UrlRun(self.sitemap, self._text, self._start, self._line)
        part.locs = self.locs[index]
        part.lastmods = self.lastmods[index]
        part.lastmod_texts = self.lastmod_texts[index]
        part.changefreqs = self.changefreqs[index]
        part.priorities = self.priorities[index]
        part.starts = self.starts[index]
        return part

    def lines(self) -> list[int | None]:
        """The line of the document where each entry starts (None for a run made without its text)."""
        if self._text is None:
            return [None] * len(self.locs)
        count = self._text.count
        at, line = self._start, self._line
        out: list[int | None] = []
        for start in self.starts:
            line += count("\n", at, start)
            at = start
            out.append(line)
        return out

    def entries(self) -> list[UrlEntry]:
        """The entries, as `UrlEntry` objects."""
        new, source = new_url_entry, self.sitemap
        texts = self.lastmod_texts or [None] * len(self.locs)
        return [
            new(loc, lastmod, changefreq, priority, source, line, (), text)
            for loc, lastmod, changefreq, priority, line, text in zip(
                self.locs, self.lastmods, self.changefreqs, self.priorities, self.lines(), texts, strict=True
            )
        ]


class Part:
    """The entries of one sitemap that a leaf worker (`reader.leaves`) parsed and formatted: a file of
    `count` entries at `path`, already in the output's format (JSONL or CSV text, or the writer child's
    payloads for Parquet), which the writer puts in its place in the output and removes. What
    `Reader.parts()` yields in place of the entries it did not parse itself."""

    __slots__ = ("count", "path")

    def __init__(self, path: str, count: int) -> None:
        self.path = path
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        return f"<Part of {self.count} entries in {self.path}>"

    def __reduce__(self) -> tuple[type[Part], tuple[str, int]]:
        return Part, (self.path, self.count)
