"""robots.txt `Sitemap:` lines: list the published sitemaps, drop the ones no longer published, and keep
every other byte of the file as it was.

The `Sitemap:` lines sitemapkit owns sit in one block between two comment lines (`begin_marker()` and
`end_marker()`), so no file beside robots.txt has to remember them. The block's `Sitemap:` lines are
rewritten on each run; nothing else is changed, except a `Sitemap:` line named explicitly for removal. A
wanted URL that is already listed elsewhere in the file is left where it is and not repeated in the block.
Several sets of sitemaps (`generate --name`) can each keep a block of their own, told apart by name.
"""

from __future__ import annotations

import difflib
import itertools
import os
import re
import stat
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from sitemapkit.core.constants import MAX_ROBOTS_BYTES
from sitemapkit.core.diagnostics import Diagnostic, DiagnosticHandler, Severity
from sitemapkit.core.errors import InputError, InvalidUrlError, PublishError, UsageError, note_published
from sitemapkit.core.files import atomic_write, sweep_stale_temps
from sitemapkit.core.urls import normalize_url
from sitemapkit.reader.polite import RobotsRules

BEGIN_MARKER = "# BEGIN sitemapkit (managed Sitemap lines)"
"""The comment line that opens the (unnamed) block of `Sitemap:` lines sitemapkit rewrites."""
END_MARKER = "# END sitemapkit"
"""The comment line that closes it."""

CHECKED_AGENTS: tuple[str, ...] = ("*", "Googlebot")
"""The user agents whose rules are checked for a disallowed sitemap or site root."""

_BOM = b"\xef\xbb\xbf"
_LINE = re.compile(rb"([^\r\n]*)(\r\n|\r|\n|\Z)")
_MARKER = re.compile(
    r"#+\s*(begin|end)\s+sitemapkit(?![\w-])(?:[ \t]+([A-Za-z0-9][A-Za-z0-9_.-]*))?", re.IGNORECASE
)
_BLOCK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")

RobotsStatus = Literal["created", "updated", "unchanged"]


@dataclass(frozen=True, slots=True)
class RobotsEdit:
    """The outcome of `edit_robots_text`: the new bytes and the sitemap URLs added, removed and kept."""

    data: bytes
    added: tuple[str, ...]
    """Wanted URLs that no `Sitemap:` line named before."""
    removed: tuple[str, ...]
    """URLs that a `Sitemap:` line named before and none names now."""
    kept: tuple[str, ...]
    """Wanted URLs that were already listed (in the block or elsewhere)."""


@dataclass(frozen=True, slots=True)
class RobotsResult:
    """What `update_robots` did (or, with `dry_run`, would do) to a robots.txt file."""

    path: Path
    status: RobotsStatus
    dry_run: bool
    added: tuple[str, ...]
    removed: tuple[str, ...]
    kept: tuple[str, ...]
    diagnostics: tuple[Diagnostic, ...] = ()
    before: bytes = field(default=b"", repr=False)
    after: bytes = field(default=b"", repr=False)

    @property
    def changed(self) -> bool:
        return self.status != "unchanged"

    def diff(self) -> str:
        """A unified diff from the old file to the new one (empty when unchanged)."""
        return unified_diff(self.before, self.after, str(self.path), created=self.status == "created")

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "status": self.status,
            "dry_run": self.dry_run,
            "added": list(self.added),
            "removed": list(self.removed),
            "kept": list(self.kept),
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }


@dataclass(slots=True)
class _Line:
    content: bytes
    eol: bytes | None
    """b"\\r\\n", b"\\n", b"\\r", b"" for a last line without one; None for a new line (the file's usual)."""


def begin_marker(name: str | None = None) -> str:
    """The comment line that opens the block named `name` (None: the unnamed block).

    >>> begin_marker("posts")
    '# BEGIN sitemapkit posts (managed Sitemap lines)'
    """
    return BEGIN_MARKER if name is None else BEGIN_MARKER.replace("sitemapkit", f"sitemapkit {name}", 1)


def end_marker(name: str | None = None) -> str:
    """The comment line that closes the block named `name` (None: the unnamed block)."""
    return END_MARKER if name is None else f"{END_MARKER} {name}"


def check_sitemap_url(url: str) -> str:
    """Return `url` normalised (see `normalize_url`), or raise `UsageError` if it cannot be a `Sitemap:`
    value: it must be an absolute http(s) URL without a fragment (`#` starts a comment in robots.txt).

    >>> check_sitemap_url("HTTPS://Example.com/sitemap.xml")
    'https://example.com/sitemap.xml'
    """
    try:
        normalized = normalize_url(url)
    except InvalidUrlError as exc:
        raise UsageError(f"sitemap URL {url!r} must be an absolute http(s) URL ({exc.reason})") from None
    if "#" in normalized:
        raise UsageError(f"sitemap URL {url!r} has a fragment ('#' starts a comment in robots.txt)")
    return normalized


def edit_robots_text(
    data: bytes, sitemap_urls: Iterable[str] | None, *, remove: Iterable[str] = (), name: str | None = None
) -> RobotsEdit:
    """Rewrite the managed block of the robots.txt `data` so that it lists `sitemap_urls`.

    - Every line that is not sitemapkit's is kept byte for byte, in order: a BOM, CRLF, LF or CR line
      endings, bytes that are not UTF-8, and a missing final newline stay as they are. New lines use the
      most common line ending of those lines (LF for an empty file). Should the lines above a line that
      begins with a BOM all go, a BOM is put before it, so that its BOM does not become the file's.
    - A wanted URL already named by a `Sitemap:` line outside the block (any case, `sitemap :` too) is left
      there and not added again; `Sitemap:` lines of other sitemaps are kept.
    - The block's `Sitemap:` lines become exactly the wanted URLs not listed elsewhere; with none left, its
      BEGIN and END lines go too. Other lines someone put inside the block are kept (below its `Sitemap:`
      lines). A second block is merged into the first. A new block is appended at the end, after an empty
      line of its own; when a block at the end of the file goes, so do that line and the final newline the
      block brought, so adding a block and removing it again gives back the same bytes. A BEGIN line
      without its END takes the `Sitemap:` lines right below it.
    - `remove` names URLs whose `Sitemap:` lines go wherever they are (relative values match as written).
    - `sitemap_urls=None` leaves the block's URLs as they are (only `remove` applies).
    - `name` chooses the block (letters, digits, `.`, `_`, `-`): blocks of other names are left alone, like
      any other lines, and the URLs they list count as listed elsewhere.

    Applying the result again with the same arguments returns the same bytes. Raises `UsageError` for a
    sitemap URL that is not an absolute http(s) URL, or one that is also in `remove`, or a bad `name`.

    >>> edit = edit_robots_text(b"User-agent: *\\r\\nDisallow: /admin", ["https://example.com/sitemap.xml"])
    >>> print(edit.data.decode().replace("\\r", ""))
    User-agent: *
    Disallow: /admin
    <BLANKLINE>
    # BEGIN sitemapkit (managed Sitemap lines)
    Sitemap: https://example.com/sitemap.xml
    # END sitemapkit
    >>> edit.data.count(b"\\r\\n"), edit.data.endswith(b"# END sitemapkit")
    (5, True)
    """
    if name is not None and not _BLOCK_NAME.fullmatch(name):
        raise UsageError(f"block name {name!r}: use letters, digits, '.', '_' and '-' only")
    wanted = None if sitemap_urls is None else _unique(check_sitemap_url(u) for u in sitemap_urls)
    removal = {_key(u) for u in remove if u.strip()}
    clash = [u for u in wanted or () if u in removal]
    if clash:
        raise UsageError(f"{clash[0]} is both a sitemap to list and one to remove")

    bom = data.startswith(_BOM)
    lines = _split(data[3:] if bom else data)
    final_newline = not lines or lines[-1].eol != b""
    texts = [line.content.decode("utf-8", "surrogateescape") for line in lines]
    values = [[_key(v) for v in _sitemap_values(text)] for text in texts]
    kinds, block_of, closed = _classify(texts, values, name)

    before = _unique(v for vs in values for v in vs)
    managed = [vs[0] for vs, kind in zip(values, kinds, strict=True) if kind == "managed"]
    drop = [
        kind == "foreign" and bool(removal) and all(v in removal for v in vs)
        for vs, kind in zip(values, kinds, strict=True)
    ]
    elsewhere = {
        v
        for vs, kind, dropped in zip(values, kinds, drop, strict=True)
        if kind == "foreign" and not dropped
        for v in vs
    }
    listed = [u for u in managed if u not in removal] if wanted is None else wanted
    block_urls = [u for u in _unique(listed) if u not in elsewhere]
    opening = [
        _Line(begin_marker(name).encode(), None),
        *(_Line(b"Sitemap: " + u.encode("utf-8", "surrogateescape"), None) for u in block_urls),
    ]

    # Lines outside the blocks stay in place; so do other lines inside a block (after its Sitemap lines).
    out: list[_Line] = []
    last_kept = -1  # the last line of `lines` kept in `out`
    for i, (line, kind, block, dropped) in enumerate(zip(lines, kinds, block_of, drop, strict=True)):
        if kind == "begin" and block == 0 and block_urls:
            out.extend(opening)
            if not closed:
                out.append(_Line(end_marker(name).encode(), None))
        elif kind == "end" and block == 0 and block_urls:
            out.append(_Line(end_marker(name).encode(), None))
        elif kind == "other" or (kind == "foreign" and not dropped):
            out.append(line)
            last_kept = i
    # A block at the end of the file went, every line of it: so does an empty line above it, the one
    # sitemapkit writes there when it appends a block (so adding then removing gives the file back).
    tail = last_kept + 1 < len(lines) and kinds[last_kept + 1] == "begin"
    if tail and out and out[-1] is lines[last_kept] and not out[-1].content:
        out.pop()
    if block_urls and "begin" not in kinds:
        if out:
            out.append(_Line(b"", None))  # always one: its removal with the block must not guess
        out.extend([*opening, _Line(end_marker(name).encode(), None)])
    eol = _new_line_ending(out, final_newline)
    for line in out:
        if not line.eol:
            line.eol = eol  # a new line, or the old last line that had none (restored below if still last)
    for previous, line in itertools.pairwise(out):
        if previous.eol == b"\r" and not line.content and line.eol == b"\n":
            line.eol = b"\r\n"  # CR then an empty line's LF would read as one CRLF: the blank line would go
    if out and not final_newline and out[-1].content:
        out[-1].eol = b""
    if out and out[0].content.startswith(_BOM):
        # A line below the first began with a BOM, and the lines above it went: without a BOM of the file's
        # own before it, that line's BOM would become the file's, and the line would read differently.
        bom = True
    new = (_BOM if bom else b"") + b"".join(line.content + (line.eol or b"") for line in out)

    after = set(block_urls) | elsewhere
    return RobotsEdit(
        data=new,
        added=tuple(u for u in block_urls if u not in before),
        removed=tuple(u for u in before if u not in after),
        kept=tuple(u for u in (wanted if wanted is not None else listed) if u in before and u in after),
    )


def update_robots_text(
    data: bytes, sitemap_urls: Iterable[str] | None, *, remove: Iterable[str] = (), name: str | None = None
) -> bytes:
    """The bytes of `edit_robots_text(data, sitemap_urls, remove=remove, name=name)`."""
    return edit_robots_text(data, sitemap_urls, remove=remove, name=name).data


def robots_warnings(
    data: bytes, sitemap_urls: Iterable[str], *, source: str | None = None
) -> list[Diagnostic]:
    """Problems a robots.txt poses for its sitemaps: bytes that are not UTF-8 (`encoding-error`, a
    warning here), and rules that keep `*` or Googlebot from a sitemap URL (`robots-disallows-sitemap`)
    or from the root of its site (`robots-disallows-root`). The rules are read with `RobotsRules`, as if every
    URL were on the host that serves this robots.txt."""
    found: list[Diagnostic] = []
    body = data.removeprefix(_BOM)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = len(_split(body[: exc.start] + b"x"))  # the line the bad byte is on
        found.append(
            Diagnostic.make(
                "encoding-error",
                f"robots.txt is not UTF-8 (byte 0x{body[exc.start]:02x}); those bytes were kept as they "
                "are, but crawlers read robots.txt as UTF-8",
                source=source,
                line=line,
                severity=Severity.WARNING,
            )
        )
        text = body.decode("utf-8", "replace")
    rules = RobotsRules(200, text, "*")  # the one robots.txt reader (sitemapkit.reader.polite)
    urls = _unique(check_sitemap_url(u) for u in sitemap_urls)
    roots = _unique(f"{p.scheme}://{p.netloc}/" for p in map(urlsplit, urls))
    for code, what, targets in (
        ("robots-disallows-root", "the site root", roots),
        ("robots-disallows-sitemap", "the sitemap", urls),
    ):
        for url in targets:
            blocked = [agent for agent in CHECKED_AGENTS if not rules.allowed(url, agent)]
            if not blocked:
                continue
            agents = " and ".join("User-agent: *" if a == "*" else a for a in blocked)
            effect = (
                "crawlers that obey it will not crawl the site's pages"
                if what == "the site root"
                else "crawlers that obey it will not fetch the sitemap"
            )
            found.append(
                Diagnostic.make(
                    code,
                    f"robots.txt disallows {what} {url} for {agents}: {effect}. Add an Allow: line "
                    "for it or narrow the Disallow: rule",
                    source=source,
                    url=url,
                )
            )
    return found


def update_robots(
    path: str | os.PathLike[str],
    sitemap_urls: Iterable[str] | None,
    *,
    remove: Iterable[str] = (),
    name: str | None = None,
    dry_run: bool = False,
    on_diagnostic: DiagnosticHandler | None = None,
) -> RobotsResult:
    """List `sitemap_urls` (the published index or sitemaps) in the robots.txt at `path`.

    See `edit_robots_text` for what changes. The file is created if it is missing (unless there is
    nothing to list), left untouched when nothing changes, and otherwise replaced atomically (a temporary
    file in the same folder, then a rename) keeping its permissions; a symbolic link is followed only when
    it leads to a file inside the folder `path` is in (else `InputError`: a robots.txt linked to a file
    elsewhere must not be rewritten through the link). With `dry_run` nothing is written. Warnings (see
    `robots_warnings`) go to `on_diagnostic` and into the result.

    Raises `UsageError` for a bad sitemap URL, `InputError` when the file cannot be read, is larger than
    the 500 KiB that Google reads, is a symbolic link leading out of its folder, or is not a regular file (a
    FIFO, a device, a socket or a folder, after following symbolic links: such a file is neither read nor
    replaced), and `PublishError` when it cannot
    be written.
    """
    path = Path(path)
    target = Path(os.path.realpath(path))
    folder = Path(os.path.realpath(path.parent))
    if target.parent != folder and folder not in target.parents:
        raise InputError(
            f"{path}: is a symbolic link to {target}, outside its folder {path.parent}; sitemapkit edits no "
            "file outside the folder it publishes to. Nothing was read or written: replace the link with "
            "the file, or name the real file"
        )
    urls = None if sitemap_urls is None else list(sitemap_urls)
    removal = list(remove)
    before, existed = _read(path, target)
    edit = edit_robots_text(before, urls, remove=removal, name=name)
    if len(edit.data) > MAX_ROBOTS_BYTES:
        raise InputError(
            f"{path}: would grow to {len(edit.data):,} bytes, past the {MAX_ROBOTS_BYTES:,} bytes (500 KiB) "
            "that Google reads; the Sitemap: lines at its end would be ignored. Nothing was written"
        )
    status: RobotsStatus
    if edit.data == before and (existed or not edit.data):
        status = "unchanged"
    else:
        status = "updated" if existed else "created"
    listed = urls if urls is not None else edit.kept
    diagnostics = robots_warnings(edit.data, listed, source=str(path)) if (existed or edit.data) else []
    if on_diagnostic is not None:
        for d in diagnostics:
            on_diagnostic(d)
    if status != "unchanged" and not dry_run:
        _write_atomically(target, edit.data, path)
    return RobotsResult(
        path=path,
        status=status,
        dry_run=dry_run,
        added=edit.added,
        removed=edit.removed,
        kept=edit.kept,
        diagnostics=tuple(diagnostics),
        before=before,
        after=edit.data,
    )


def unified_diff(before: bytes, after: bytes, name: str, *, created: bool = False) -> str:
    """A unified diff of two versions of a text file, for people: undecodable bytes shown as `\\xNN`,
    a missing final newline marked as `diff` marks it."""
    if before == after:
        return ""
    old = before.decode("utf-8", "backslashreplace").splitlines(keepends=True)
    new = after.decode("utf-8", "backslashreplace").splitlines(keepends=True)
    lines = difflib.unified_diff(old, new, "/dev/null" if created else f"a/{name}", f"b/{name}")
    out: list[str] = []
    for line in lines:
        if line.startswith(("---", "+++")) or line.endswith(("\n", "\r")):
            out.append(line if line.endswith("\n") else line + "\n")
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _split(body: bytes) -> list[_Line]:
    """Lines and their endings, as in RFC 9309 (CR, LF or CRLF); nothing is lost."""
    lines = [_Line(m.group(1), m.group(2)) for m in _LINE.finditer(body)]
    if lines and not lines[-1].content and not lines[-1].eol:
        lines.pop()  # the empty match at the end of the body
    return lines


def _sitemap_values(text: str) -> list[str]:
    """The values of the `Sitemap:` directives in one line, read exactly as protego reads them (any case,
    `Sitemap :`, `site-map:`, a missing colon, a trailing comment)."""
    if "site" not in text.lower():
        return []
    # protego cannot take the lone surrogates that stand for bytes which are not UTF-8 (it would crash
    # quoting a rule on the same line): it gets U+FFFD in their place
    clean = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if clean.startswith("\ufeff"):  # a BOM inside the file starts no directive (as protego reads it)
        return []
    return RobotsRules(200, clean, "*").sitemaps


LineKind = Literal["begin", "end", "managed", "foreign", "other"]


def _classify(
    texts: Sequence[str], values: Sequence[list[str]], name: str | None
) -> tuple[list[LineKind], list[int], bool]:
    """What each line is, which block named `name` (numbered from 0) it lies in (-1: none), and whether the
    first such block has its END line.

    A block runs from its BEGIN line to its END line, unless any other BEGIN or END line comes first;
    without its END, it is the BEGIN line and the `Sitemap:` lines right below it. Inside a block,
    `Sitemap:` lines are sitemapkit's ("managed"); any other line is the user's. An END line outside a
    block is a leftover. The BEGIN and END lines of blocks of other names are ordinary lines.
    """
    n = len(texts)
    marks = [_marker(text) for text in texts]
    ours = [mark is not None and mark[1] == name for mark in marks]
    kinds: list[LineKind] = ["foreign" if found else "other" for found in values]
    block_of = [-1] * n
    closed: list[bool] = []

    def simple(i: int) -> bool:  # one Sitemap: line and nothing that other parsers take for a line break
        return marks[i] is None and len(values[i]) == 1 and len(texts[i].splitlines()) <= 1

    i = 0
    while i < n:
        mark = marks[i]
        if mark is None or not ours[i] or mark[0] == "end":
            if mark is not None and ours[i]:
                kinds[i] = "end"
            i += 1
            continue
        block = len(closed)
        kinds[i], block_of[i] = "begin", block
        end = i + 1
        while end < n and marks[end] is None:
            end += 1
        has_end = end < n and ours[end] and marks[end] == ("end", name)
        closed.append(has_end)
        stop = end
        if not has_end:
            stop = i + 1
            while stop < n and simple(stop):
                stop += 1
        for j in range(i + 1, stop):
            block_of[j] = block
            if simple(j):
                kinds[j] = "managed"
        if has_end:
            kinds[end], block_of[end] = "end", block
            stop = end + 1
        i = stop
    return kinds, block_of, bool(closed) and closed[0]


def _marker(text: str) -> tuple[Literal["begin", "end"], str | None] | None:
    """Whether a line is the BEGIN or the END line of a block (any case and spacing), and the block's name."""
    if "sitemapkit" not in text.lower() or len(text.splitlines()) > 1:
        return None
    m = _MARKER.match(text.strip())
    if m is None:
        return None
    return ("begin" if m.group(1).lower() == "begin" else "end"), m.group(2)


def _key(value: str) -> str:
    """What two `Sitemap:` values are compared by: the normalised URL, or the value as written."""
    value = value.strip()
    try:
        return normalize_url(value)
    except InvalidUrlError:
        return value


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _new_line_ending(out: Sequence[_Line], final_newline: bool) -> bytes:
    """The line ending for new lines, from the user's lines in `out` (never from sitemapkit's own): the most
    common one (the first seen wins a tie); else that of the user's last non-empty line; else LF.

    Empty lines and the user's last non-empty line are not counted: those are the lines whose endings a
    run may set (a missing final newline, an empty line's LF after a CR, the blank line before a new
    block), so the next run counts exactly the same endings and picks the same one. For the same reason
    the last line's ending is taken as it will be written: none, when it ends the file without a newline.
    """
    kept = [line for line in out if line.eol is not None and line.content]
    counts = Counter(line.eol for line in kept[:-1] if line.eol)
    if counts:
        best = max(counts.values())
        return next(eol for eol in counts if counts[eol] == best)
    if kept and (final_newline or kept[-1] is not out[-1]):
        return kept[-1].eol or b"\n"
    return b"\n"


def _not_regular(path: Path, target: Path, mode: int) -> str | None:
    """Why the file at `target` (what `path` leads to) cannot be robots.txt, or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return f"{path}: is a folder, not a robots.txt file"
    kind = next(
        (
            what
            for test, what in (
                (stat.S_ISFIFO, "a named pipe (FIFO)"),
                (stat.S_ISCHR, "a character device"),
                (stat.S_ISBLK, "a block device"),
                (stat.S_ISSOCK, "a socket"),
            )
            if test(mode)
        ),
        "a special file",
    )
    where = f" ({target})" if target != Path(os.path.abspath(path)) else ""
    return (
        f"{path}: is {kind}{where}, not a regular file; robots.txt must be one (nothing was read or written)"
    )


def _read(path: Path, target: Path) -> tuple[bytes, bool]:
    """The bytes of the file (b"" if missing) and whether it exists; refuses one over 500 KiB, and anything
    but a regular file (a FIFO would block, a device is no robots.txt and must not be replaced)."""
    try:
        why = _not_regular(path, target, os.stat(target).st_mode)
    except FileNotFoundError:
        if not target.parent.is_dir():
            raise InputError(f"{path}: the folder {path.parent} does not exist") from None
        return b"", False
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if why is not None:
        raise InputError(why)
    try:
        # O_NONBLOCK: should a FIFO take the file's place after the check, opening it does not wait
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with open(fd, "rb") as handle:
            why = _not_regular(path, target, os.fstat(fd).st_mode)
            if why is not None:
                raise InputError(why)
            data = handle.read(MAX_ROBOTS_BYTES + 1)
    except FileNotFoundError:
        raise InputError(f"{path}: disappeared while being read") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_ROBOTS_BYTES:
        size = os.stat(target).st_size
        raise InputError(
            f"{path}: {size:,} bytes, more than the {MAX_ROBOTS_BYTES:,} bytes (500 KiB) of robots.txt that "
            "Google reads; Sitemap: lines past that point would be ignored. Shorten the file; it was not "
            "changed"
        )
    return data, True


def _write_atomically(target: Path, data: bytes, shown: Path) -> None:
    """Replace `target` with `data` through `atomic_write` (a temporary file in the same folder, synced,
    then renamed), keeping the old file's permissions (and owner, where allowed); a new file gets the
    default permissions (umask applies). Temporary files a killed earlier run left are swept first."""
    try:
        old: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        old = None
    except OSError as exc:
        raise PublishError(
            f"{shown}: cannot be written ({exc.strerror or exc}); it was left as it was"
        ) from None
    why = None if old is None else _not_regular(shown, target, old.st_mode)
    if why is not None:
        raise PublishError(why)  # never replace a device, a FIFO or a folder
    sweep_stale_temps(target.parent, target.name)
    try:
        with atomic_write(target) as f:
            f.write(data)
    except OSError as exc:
        raise PublishError(
            f"{shown}: cannot be written ({exc.strerror or exc}); it was left as it was"
        ) from None
    note_published()
