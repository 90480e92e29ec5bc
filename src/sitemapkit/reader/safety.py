"""Byte-level safety for the sitemap parser: bounded gzip inflation, DOCTYPE screening, encodings.

Everything here works on raw bytes before they reach an XML parser, so that a gzip bomb, an entity
expansion attack or a file in an unexpected encoding is dealt with in one place, while streaming.
"""

from __future__ import annotations

import codecs
import re
import zlib
from collections.abc import Iterator
from typing import Final

GZIP_MAGIC: Final = b"\x1f\x8b"
PIECE: Final = 64 * 1024
"""Most bytes one decompression step produces, so memory never grows with the input."""


class CompressionError(Exception):
    """The gzip data is corrupt, or ends before the end of the stream."""


class GzipInflater:
    """Inflate a gzip stream (one or more members) chunk by chunk, in pieces of at most `PIECE` bytes."""

    def __init__(self) -> None:
        self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._members = 0

    def inflate(self, chunk: bytes) -> Iterator[bytes]:
        """Decompress `chunk` piece by piece; raise `CompressionError` after the good pieces of bad data."""
        data = chunk
        while True:
            try:
                out = self._inflater.decompress(data, PIECE)
            except zlib.error as exc:
                raise CompressionError(f"the gzip data is corrupt ({exc})") from None
            if out:
                yield out
            if self._inflater.eof:
                self._members += 1
                rest = self._inflater.unused_data
                if not rest:
                    return
                if not rest.startswith(GZIP_MAGIC[: len(rest)]):
                    raise CompressionError("unexpected bytes follow the end of the gzip stream")
                self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
                data = rest
                continue
            data = self._inflater.unconsumed_tail
            if not data and len(out) < PIECE:
                return

    def finish(self) -> None:
        """Raise `CompressionError` if the stream stopped in the middle of a gzip member."""
        if not self._inflater.eof and (self._members == 0 or self._inflater.unconsumed_tail):
            raise CompressionError("the gzip stream ends early (the file is truncated)")


_DOCTYPE_ENTITY = re.compile(rb"<!ENTITY", re.IGNORECASE)


def doctype_problem(doctype: bytes) -> str | None:
    """Say why a `<!DOCTYPE ...>` declaration is refused, or None when it is harmless.

    Any entity declaration is refused (billion laughs, external entities), and so is any internal subset
    (`[...]`), where entities are declared: its end cannot be found safely without parsing it (a `]>`
    may hide in a comment or a processing instruction). A bare DOCTYPE, or one naming an external DTD,
    is allowed because DTDs are never loaded.
    """
    if _DOCTYPE_ENTITY.search(doctype):
        return "the DOCTYPE declares entities"
    if b"[" in doctype:
        return "the DOCTYPE has an internal subset, where entities are declared"
    return None


# --- encodings -------------------------------------------------------------------------------------

_BOMS: Final = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_DECLARED = re.compile(rb"""<\?xml[^>]*?\sencoding\s*=\s*["']([A-Za-z0-9._:-]+)["']""")
_UTF8_NAMES: Final = frozenset({"utf-8", "utf8", "us-ascii", "ascii"})


def detect_encoding(head: bytes) -> tuple[str, int, bool]:
    """From the first bytes of a document: (codec name, BOM length, whether the name was declared or guessed).

    Looks at a byte-order mark, then at the NUL pattern of UTF-16/32 without BOM, then at the
    XML declaration's `encoding`. Without any of these the document is UTF-8.
    """
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name, len(bom), True
    if head[:4] == b"<\x00?\x00":
        return "utf-16-le", 0, True
    if head[:4] == b"\x00<\x00?":
        return "utf-16-be", 0, True
    m = _DECLARED.match(head.lstrip(b" \t\r\n"))
    if m is not None:
        return m.group(1).decode("ascii").lower(), 0, True
    return "utf-8", 0, False


def is_utf8_name(name: str) -> bool:
    """True for the names of UTF-8 (and its subset ASCII)."""
    return name.lower() in _UTF8_NAMES


def known_codec(name: str) -> str | None:
    """The Python codec for a text encoding name, or None if Python does not know it as one.

    Codecs that are not text encodings (`rot13`, `base64`, `zlib`, ...) and those without an incremental
    decoder that can replace bad bytes (`idna`) count as unknown: a document cannot pick them."""
    try:
        info = codecs.lookup(name)
        if not getattr(info, "_is_text_encoding", True):
            return None
        codecs.getincrementaldecoder(info.name)("replace").decode(b"<?xml", False)
    except (LookupError, UnicodeError, TypeError, ValueError, AssertionError):
        return None
    return info.name


class Utf8Normalizer:
    """Turn a byte stream into valid UTF-8, chunk by chunk.

    UTF-8 input passes through unchanged (it is only validated; a multi-byte character cut by a chunk
    boundary is held back until its end arrives). Bytes that are not UTF-8 are read as Windows-1252
    (a superset of Latin-1) from the first bad byte on. Other codecs are transcoded.
    `bad_at` is, right after the `convert` call that met the first byte that is not UTF-8, that byte's
    offset in the call's output (else None).
    """

    def __init__(self, codec: str = "utf-8") -> None:
        self._utf8 = codec == "utf-8"
        self._carry = b""
        self._decoder: codecs.IncrementalDecoder | None = None
        self.bad_at: int | None = None
        if not self._utf8:
            self._decoder = codecs.getincrementaldecoder(codec)("replace")

    def convert(self, chunk: bytes, final: bool = False) -> bytes:
        """Return the UTF-8 bytes for `chunk` (possibly fewer until the rest of a character arrives)."""
        self.bad_at = None
        if self._decoder is not None:
            text = self._decoder.decode(chunk, final)
            if self._utf8:
                text = _repair_surrogates(text)
            out = text.encode("utf-8")
        else:
            data = self._carry + chunk if self._carry else chunk
            if data.isascii():
                self._carry = b""
                out = data
            else:
                try:
                    _, used = codecs.utf_8_decode(data, "strict", final)
                except UnicodeDecodeError as exc:
                    good = data[: exc.start]
                    self.bad_at = len(good)
                    self._carry = b""
                    self._decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
                    text = _repair_surrogates(self._decoder.decode(data[exc.start :], final))
                    out = good + text.encode("utf-8")
                else:
                    self._carry = data[used:]
                    out = data[:used]
        return out


def _repair_surrogates(text: str) -> str:
    """Replace bytes that `surrogateescape` kept (not UTF-8) by their Windows-1252 characters."""
    if not any("\udc80" <= c <= "\udcff" for c in text):
        return text
    return "".join(
        bytes([ord(c) - 0xDC00]).decode("cp1252", "replace") if "\udc80" <= c <= "\udcff" else c for c in text
    )
