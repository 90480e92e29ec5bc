"""The fast path for runs of plain `<url>` elements: read with one regex each, while lxml reads a comment of
the same layout in their place."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, cast

from sitemapkit.core.constants import CHANGEFREQS, MAX_IMAGES_PER_URL, MAX_URL_LENGTH, MAX_URLS, NS_IMAGE
from sitemapkit.core.model import URL_DRAFT, Image, UrlEntry, new_image
from sitemapkit.reader.runs import UrlRun
from sitemapkit.reader.values import PLAIN_HOST, PRIORITIES

if TYPE_CHECKING:
    from lxml import etree

    from sitemapkit.reader.context import Context
    from sitemapkit.reader.entries import EntryReader, Tally
    from sitemapkit.reader.recovery import History, Resume

# --- plain <url> elements read without lxml ---------------------------------------------------------
#
# Most sitemaps are long runs of `<url><loc>...</loc><lastmod>...</lastmod>...</url>` with nothing else.
# Where the parser knows that the stream is between two children of the root (lxml has just reported a
# `<url>` child of the root that ends exactly where the bytes fed to it end), it reads such runs with one
# regex per element, and hands lxml a comment in their place, with the same line breaks and a last line
# of the same length: lxml's lines, columns and error positions after it, and the offsets the rest of the
# parser keeps, stay what they would have been. Only elements that the lxml path would read to the same
# entry with nothing to report are read this way; anything else (an attribute, a prefix, an entity other
# than &amp;, a comment, CDATA, an extension, a value with a problem) ends the run, and lxml reads it.
# `PlainRuns.feed` below does this; the property tests compare it with the lxml path.

_XWS = r"[ \t\r\n]*+"
_URL_CHAR = r"[A-Za-z0-9\-._~!$'()*+,;=:@/?]"  # what `entries._PLAIN_URL` allows in a path, but `&`
_PLAIN_LOC = "".join(  # `PLAIN_URL` with & written &amp;, and %XX escapes (which `check_uri` accepts)
    [r"https?://", PLAIN_HOST, r"(?>/", _URL_CHAR, r"*+(?:(?>&amp;|%[0-9A-Fa-f]{2})", _URL_CHAR, r"*+)*+|)"]
)
_PLAIN_BLOCK: Final = re.compile(
    # Possessive quantifiers and atomic groups, (?>X|) rather than (?:X)?: each part can match in one
    # way only, so this matches what the plain version would, but fails without backtracking.
    "".join(
        [
            r"<url>" + _XWS,
            r"<loc>(" + _PLAIN_LOC + r")</loc>" + _XWS,
            r"(?><lastmod>([0-9]{4}-[0-9]{2}-[0-9]{2}",
            r"(?>T[0-9]{2}:[0-9]{2}:[0-9]{2}(?>\.[0-9]++|)(?>Z|[+-][0-9]{2}:[0-9]{2})|)",
            r")</lastmod>" + _XWS + r"|)",
            r"(?><changefreq>([a-z]++)</changefreq>" + _XWS + r"|)",
            r"(?><priority>([0-9.]++)</priority>" + _XWS + r"|)",
            r"((?:<image:image>" + _XWS + r"<image:loc>" + _PLAIN_LOC + r"</image:loc>" + _XWS,
            r"</image:image>" + _XWS + r")*+)",
            r"</url>()" + _XWS,
        ]
    )
)
"""A plain `<url>` and the whitespace after it, matched on the latin-1 decoding of the UTF-8 bytes (so that
string offsets are byte offsets; every character it accepts is ASCII). Groups 1 to 4 are the texts of
`<loc>` (valid for `EntryReader.read_url` once `&amp;` is decoded), `<lastmod>` (in the schema's form),
`<changefreq>` and `<priority>`; group 5 holds the `<image:image>` elements, each with an `<image:loc>`
only; group 6 marks the end of `</url>`."""
_IMAGE_LOCS: Final = re.compile(r"<image:loc>([^<]*+)</image:loc>")
_XML_WS: Final = re.compile(_XWS)
_URL_END: Final = re.compile(
    r"</[^\s<>]*url[ \t\r\n]*>"
    r"|<[^\s<>/!?]*url(?:[ \t\r\n]+[^\s=<>/]+[ \t\r\n]*=[ \t\r\n]*(?:\"[^\"<]*\"|'[^'<]*'))*[ \t\r\n]*/>"
)
"""Every end of an element named `url` (with any prefix): its end tag, or an empty-element tag; and a few
more (in comments, CDATA, text, or of other names ending in url). A feed that ends with one of these and
holds no other ends between two children of the root if lxml reports a `<url>` child of it last."""
_NOT_PLAIN: Final = object()
_CHANGEFREQ_NAMES: Final[dict[str | None, object]] = {None: None, **{name: name for name in CHANGEFREQS}}
"""A `<changefreq>` text read as `EntryReader.read_url` would: the value, or _NOT_PLAIN (None: no such
element)."""
_PRIORITY_VALUES: Final[dict[str | None, object]] = dict(PRIORITIES.items())
_PRIORITY_VALUES[None] = None
_PEEK_MAX: Final = 8
"""`</url>` followed by an element that is not plain, in a row, before the parser looks only once a piece."""
_BLANK: Final = bytes(b if b in (0x0A, 0x0D) else 0x20 for b in range(256))
"""Maps every byte to a space except line breaks: the body of the comment that replaces plain elements."""
_REGION_MAX: Final = 1024 * 1024
"""Most bytes of plain elements one comment replaces (libxml2 refuses comments over 10 MB)."""
_CARRY_MAX: Final = 256
"""Longest unfinished tag at the end of a piece kept to find a `</url>` cut by the piece boundary."""


def _with_comments(data: bytes, start: int, end: int, regions: list[tuple[int, int, int]]) -> bytes:
    """`data[start:end]` with each region (a run of plain `<url>` elements from `r0` to `r1`, holding
    `breaks` line breaks) replaced by a comment, which lxml reads as nothing. The comment has the same
    line breaks, and its last line the same length, so lxml counts lines and columns after it as in the
    document; its first line is shorter, which no position lxml reports can fall in."""
    if not regions:
        return data[start:end]
    parts: list[bytes] = []
    at = start
    for r0, r1, breaks in regions:
        parts.append(data[at:r0])
        if breaks:
            nl = data.rfind(b"\n", r0, r1)
            parts.append(b"<!--" + b"\n" * breaks + data[nl + 1 : r1 - 3].translate(_BLANK) + b"-->")
        else:
            parts.append(b"<!--" + data[r0 + 4 : r1 - 3].translate(_BLANK) + b"-->")
        at = r1
    parts.append(data[at:end])
    return b"".join(parts)


FeedLxml = Callable[[bytes, int, int, int, bool, "bytes | None"], "Resume | None"]
"""The parser's `feed_lxml(data, base, first_line, line_start, final, fed)`: feed lxml `fed` in place of
`data`, whose place in the stream the other arguments give; on a fatal error, where to seek the next entry
from (see `Recovery.failed`)."""


class PlainRuns:
    """Reads runs of plain `<url>` elements without lxml, between the parser's feeds of lxml (see the
    module). Given the parser's `feed_lxml`; `reading()` says whether the parser still reads XML after a
    feed, `tail_root()` gives the root when the last element lxml reported was a `<url>` child of it.
    Set up for a document with `start`."""

    def __init__(
        self,
        context: Context,
        tally: Tally,
        entries: EntryReader,
        history: History,
        *,
        runs: bool,
        feed_lxml: FeedLxml,
        reading: Callable[[], bool],
        tail_root: Callable[[], etree._Element | None],
    ) -> None:
        self._context = context
        self._tally = tally
        self._entries = entries
        self._history = history
        self._runs = runs
        self._feed_lxml = feed_lxml
        self._reading = reading
        self._tail_root = tail_root
        self._namespace: str | None = None
        self._synced = False  # the stream fed so far ends between two children of the root
        self._end_carry = ""  # while not synced: the unfinished end tag at the end of the last piece
        self._trusted = True  # whether the next lxml feed may prove the stream is between children
        self._misses = 0  # see feed
        self._elide_root: etree._Element | None = None  # the root, once its default namespace matched
        self._elide_images = False  # in it, the prefix image is the image extension's

    def start(self, namespace: str | None) -> None:
        """Read plain elements of a root whose start tag declares `namespace` as the default one."""
        self._namespace = namespace

    def restart(self) -> None:
        """A new lxml parser reads on (after a fatal error): the stream is not known to be between
        children."""
        self._synced = False
        self._end_carry = ""
        self._trusted = True

    def feed(
        self, data: bytes, base: int, first_line: int, line_start: int, final: bool
    ) -> tuple[bytes, int, int, int] | None:
        """`feed_lxml` for a urlset that reads runs of plain `<url>` elements itself (see `_PLAIN_BLOCK`).

        Where the stream is not known to be between children of the root, lxml is fed up to the end of a
        `</url>` (`_URL_END`) that a plain element follows; when that feed holds no other `</url>` and lxml
        reports a `<url>` child of the root as its last element, the stream is between children there.
        """
        text = data.decode("latin-1")
        n = len(text)
        match = _PLAIN_BLOCK.match
        skip_ws = _XML_WS.match
        count = text.count
        cache = self._context.dates
        tally = self._tally
        append = tally.items.append
        runs = self._runs
        draft = cast("type[Any]", URL_DRAFT)  # not None: see _start_xml
        url_entry = UrlEntry
        changefreqs = _CHANGEFREQ_NAMES
        priorities = _PRIORITY_VALUES
        source = self._context.source
        store_date = self._context.store_date
        over_limit = self._entries.over_limit
        feed_lxml = self._feed_lxml
        seen = tally.seen  # kept in tally.seen while lxml reads
        elided = 0  # entries read here, not yet in tally.count
        regions: list[tuple[int, int, int]] = []  # plain runs in data[start:pos] (see _with_comments)
        # data[start:] is not fed to lxml yet; data[start] is in line start_line, which begins at start_begin
        start = pos = 0
        start_line, start_begin = first_line, line_start
        line_pos, line = 0, first_line  # data[line_pos] is in line `line` (for the entries read here)
        synced = self._synced
        carry, self._end_carry = self._end_carry, ""
        trusted = self._trusted  # False: the next feed may hold a </url> that went unseen
        ends = 0  # </url> in data[start:pos] while not synced
        misses = self._misses  # </url> not followed by a plain <url>: after _PEEK_MAX, one try a piece
        m: re.Match[str] | None = None
        while pos < n:
            if synced:
                if m is None:
                    pos = skip_ws(text, pos).end()  # type: ignore[union-attr]  # it always matches
                    m = match(text, pos)
                    if m is None:
                        if pos < n:
                            synced = False
                        continue
                run_start = pos
                line += count("\n", line_pos, pos)
                line_pos = pos
                run_line = line
                last: re.Match[str] | None = None
                columns: UrlRun | None = None  # with runs: the UrlRun that this run's entries go to
                while m is not None:
                    loc, lastmod_text, changefreq_text, priority_text, images_text, _ = m.groups()
                    if "&" in loc:
                        loc = loc.replace("&amp;", "&")
                    if len(loc) >= MAX_URL_LENGTH:
                        break
                    changefreq = changefreqs.get(changefreq_text, _NOT_PLAIN)
                    priority = priorities.get(priority_text, _NOT_PLAIN)
                    if changefreq is _NOT_PLAIN or priority is _NOT_PLAIN:
                        break
                    if lastmod_text is None:
                        lastmod = None
                    else:
                        lastmod = cache.get(lastmod_text)
                        if lastmod is None:
                            lastmod = store_date(lastmod_text)
                            if lastmod is None:
                                break
                    if images_text:
                        images = self._plain_images(images_text)
                        if images is None:
                            break
                    else:
                        images = ()
                    seen += 1
                    if seen > MAX_URLS:
                        line += count("\n", line_pos, pos)
                        line_pos = pos
                        tally.seen = seen
                        over_limit(line)
                    if runs and not images:
                        # the line of each entry is counted only if asked for (UrlRun.lines)
                        if columns is None:
                            line += count("\n", line_pos, pos)
                            line_pos = pos
                            columns = UrlRun(source, text, pos, line)
                            append(columns)
                            add_loc, add_lastmod = columns.locs.append, columns.lastmods.append
                            add_lastmod_text = columns.lastmod_texts.append
                            add_changefreq = columns.changefreqs.append
                            add_priority, add_start = columns.priorities.append, columns.starts.append
                        add_loc(loc)
                        add_lastmod(lastmod)
                        add_lastmod_text(lastmod_text)
                        add_changefreq(changefreq)  # type: ignore[arg-type]  # checked above
                        add_priority(priority)  # type: ignore[arg-type]  # checked above
                        add_start(pos)
                    else:
                        line += count("\n", line_pos, pos)
                        line_pos = pos
                        columns = None  # entries after this one start a new run
                        # new_url_entry, inline
                        entry = draft()
                        entry.loc = loc
                        entry.lastmod = lastmod
                        entry.changefreq = changefreq
                        entry.priority = priority
                        entry.images = images
                        entry.videos = ()
                        entry.news = None
                        entry.alternates = ()
                        entry.sitemap = source
                        entry.line = line
                        entry.lastmod_text = lastmod_text
                        entry.__class__ = url_entry
                        append(entry)
                    elided += 1
                    last = m
                    pos = m.end()
                    if pos - run_start > _REGION_MAX:
                        run_end = m.start(6)
                        line += count("\n", line_pos, run_end)
                        line_pos = run_end
                        regions.append((run_start, run_end, line - run_line))
                        line += count("\n", line_pos, pos)
                        line_pos = pos
                        run_start = pos
                        run_line = line
                        last = None
                    m = match(text, pos)
                if last is not None:
                    run_end = last.start(6)
                    line += count("\n", line_pos, run_end)
                    line_pos = run_end
                    regions.append((run_start, run_end, line - run_line))
                if m is not None or pos < n:
                    synced = False
                m = None
                continue
            # Not known to be between children: look for the next </url> that a plain element follows.
            if carry:
                scanned = carry + text
                found = _URL_END.search(scanned)
                end = found.end() - len(carry) if found is not None else -1
                carry = ""
            else:
                scanned = text
                found = _URL_END.search(text, pos)
                end = found.end() if found is not None else -1
            if end >= 0:
                ends += 1
                pos = end
            if end < 0 or misses >= _PEEK_MAX:
                # feed the rest; keep an unfinished tag at its end to find a </url> cut in two
                k = scanned.rfind("<")
                if k >= 0 and scanned.find(">", k) < 0:
                    carry = scanned[k:]
                    if len(carry) > _CARRY_MAX:  # an end tag this long could go unseen
                        carry = ""
                        trusted = False
                break
            after = skip_ws(text, end).end()  # type: ignore[union-attr]  # it always matches
            if after < n:
                m = match(text, after)
                if m is None:
                    misses += 1
                    continue
            tally.seen = seen
            tally.count += elided
            elided = 0
            resume = feed_lxml(
                data[start:end],
                base + start,
                start_line,
                start_begin,
                False,
                _with_comments(data, start, end, regions),
            )
            regions = []
            if resume is not None:
                kept, kept_base, kept_line, kept_line_start = resume
                return kept + data[end:], kept_base, kept_line, kept_line_start
            if not self._reading():
                return None
            seen = tally.seen
            synced = ends == 1 and trusted and self._root_matches()
            trusted = True
            ends = 0
            line += count("\n", line_pos, end)
            line_pos = end
            nl = text.rfind("\n", start, end)
            if nl >= 0:
                start_begin = base + nl + 1
            start_line = line
            start = end
            if synced:
                misses = 0
                pos = after
            else:
                m = None
        tally.seen = seen
        tally.count += elided
        if start < n or final:
            resume = feed_lxml(
                data[start:],
                base + start,
                start_line,
                start_begin,
                final,
                _with_comments(data, start, n, regions),
            )
            if resume is not None or not self._reading():
                return resume
        self._synced = synced
        self._end_carry = "" if synced else carry
        self._trusted = trusted
        self._misses = min(misses, _PEEK_MAX - 1)
        if synced:  # lxml has read all but trailing whitespace: no error lies before
            self._history.trim()
        return None

    def _root_matches(self) -> bool:
        """lxml's last element was a `<url>` child of the root, and the root's default namespace is the one
        its start tag was read with (what plain elements get). Notes whether its prefix `image` is the
        image extension's (for plain `<image:image>` elements)."""
        root = self._tail_root()
        if root is None:
            return False
        if root is not self._elide_root:
            nsmap = root.nsmap
            if nsmap.get(None) != self._namespace:
                return False
            self._elide_root = root
            self._elide_images = nsmap.get("image") == NS_IMAGE
        return True

    def _plain_images(self, section: str) -> tuple[Image, ...] | None:
        """The images of a run of plain `<image:image>` elements (see `_PLAIN_BLOCK`), or None when the lxml
        path would report something about them."""
        if not self._elide_images:
            return None
        locs = _IMAGE_LOCS.findall(section)
        if len(locs) > MAX_IMAGES_PER_URL:
            return None
        images: list[Image] = []
        for loc in locs:
            if "&" in loc:
                loc = loc.replace("&amp;", "&")
            if len(loc) >= MAX_URL_LENGTH:
                return None
            images.append(new_image(loc))
        return tuple(images)
