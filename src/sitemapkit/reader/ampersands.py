"""Stray-ampersand repair: escape each raw `&` that starts no reference, so that a hand-edited sitemap
still reads."""

from __future__ import annotations

import re
from typing import Final

_STRAY = re.compile(rb"&(?!(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);)")
_STRAYS = re.compile(
    rb"&(?!(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);)(?:&(?!(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);))*"
)
"""A run of stray `&`: taken as one match, so that a megabyte of them costs a few C calls, not a million.
It starts with a literal `&`, so the engine jumps from `&` to `&` (a leading group made it try a match at
every byte: 6.6 ms instead of 0.1 ms on the first piece of a 2,500-URL sitemap)."""
_NORMAL, _CDATA, _COMMENT, _PI = 0, 1, 2, 3
_CLOSERS: Final = {_CDATA: b"]]>", _COMMENT: b"-->", _PI: b"?>"}
_REF_MAX: Final = 12


class StrayAmpersands:
    """Escape `&` that starts no character or predefined entity reference, outside CDATA, comments and PIs.

    A raw `&` (`Tom & Jerry`) is the most common hand-editing mistake; escaping it reads the text the
    author meant and keeps the rest of the document. Each one is reported. Bytes that might be the start
    of a marker cut by a chunk boundary are held back until the next chunk.
    """

    def __init__(self) -> None:
        self._state = _NORMAL
        self._tail = b""

    def fix(self, chunk: bytes, final: bool) -> tuple[bytes, list[int]]:
        """Return the escaped bytes and the offsets (in them) of each stray `&` found."""
        data = self._tail + chunk if self._tail else chunk
        self._tail = b""
        if (
            self._state == _NORMAL
            and (b"!" not in data or b"<!" not in data)
            and (b"?" not in data or b"<?" not in data)
        ):
            # The common case: nothing to escape. A reference or a `<` the chunk boundary may have cut is
            # held back for the next chunk, as the full scan below would hold it. (`!` and `?` are found
            # by memchr; `<!` and `<?`, which stop at every `<`, about 50 us a 64 KiB piece of a sitemap,
            # are looked for only when there is one.)
            cut = len(data)
            if not final:
                amp = data.rfind(b"&", cut - _REF_MAX)
                if amp >= 0 and data.find(b";", amp) < 0:
                    cut = amp
                if data[cut - 1 : cut] == b"<":
                    cut -= 1
            head = data[:cut] if cut < len(data) else data
            # every & the start of an &amp; (URLs with queries): two counts in C, where the search stops
            # at each & to look ahead
            if b"&" not in head or head.count(b"&") == head.count(b"&amp;") or _STRAY.search(head) is None:
                if cut < len(data):
                    self._tail = data[cut:]
                return head, []
        runs: list[tuple[int, int]] = []  # (offset, length) of each run of stray `&`
        n = len(data)
        cut = n
        pos = 0
        state = self._state
        next_bang = next_pi = -2
        while pos < n:
            if state == _NORMAL:
                if next_bang != -1 and next_bang < pos:
                    next_bang = data.find(b"<!", pos)
                if next_pi != -1 and next_pi < pos:
                    next_pi = data.find(b"<?", pos)
                j = min(x for x in (next_bang, next_pi, n) if x >= 0)
                held = False
                for m in _STRAYS.finditer(data, pos, j):
                    first, end = m.span()
                    if not final and end - 1 > n - _REF_MAX:
                        end = max(first, n - _REF_MAX + 1)  # the last few may start a reference
                        if end > first:
                            runs.append((first, end - first))
                        cut = end
                        held = True
                        break
                    runs.append((first, end - first))
                if held:
                    break
                if j >= n:
                    if not final and data[-1:] == b"<":
                        cut = n - 1
                    break
                if not final and j + 9 > n:
                    cut = j
                    break
                if data.startswith(b"<![CDATA[", j):
                    state, pos = _CDATA, j + 9
                elif data.startswith(b"<!--", j):
                    state, pos = _COMMENT, j + 4
                elif data.startswith(b"<?", j):
                    state, pos = _PI, j + 2
                else:
                    pos = j + 2
            else:
                closer = _CLOSERS[state]
                k = data.find(closer, pos)
                if k < 0:
                    if not final:
                        cut = max(pos, n - 2)
                    break
                state, pos = _NORMAL, k + len(closer)
        self._state = state
        if cut < n:
            self._tail = data[cut:]
            data = data[:cut]
        strays: list[int] = []
        if runs:
            # each stray `&` becomes `&amp;`; in the output, each earlier stray added four bytes
            parts: list[bytes] = []
            last = 0
            added = 0
            for first, count in runs:
                parts.append(data[last:first])
                parts.append(b"&amp;" * count)
                strays.extend(range(first + added, first + added + 5 * count, 5))
                added += 4 * count
                last = first + count
            parts.append(data[last:])
            out = b"".join(parts)
        else:
            out = data
        return out, strays
