"""URLs for sitemaps: IRI to URI, percent-encoding that never doubles, and the sitemap's scope."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urljoin, urlsplit

import idna

from sitemapkit.core.constants import MAX_URL_LENGTH
from sitemapkit.core.errors import InvalidUrlError

# Characters RFC 3986 allows raw in path, query and fragment (besides %XX escapes).
_ALLOWED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@/?")
# The common case, checked by one regex: lowercase ASCII host, optional port, RFC 3986 characters only.
_FAST = re.compile(
    r"(https?)://([a-z0-9]++(?:[.-]++[a-z0-9]++)*+)(?::([0-9]{1,5}+))?+(/[A-Za-z0-9\-._~!$&'()*+,;=:@/%?#]*+)?+"
)
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_HEX = "0123456789ABCDEF"
_DEFAULT_PORTS = {"http": 80, "https": 443}


# What `_quote` must change: a run of characters not allowed raw (a `%` among them unless it starts an
# escape), or an escape with a lowercase hex digit. A part with none of these is returned as it is.
_TO_QUOTE = re.compile(
    r"[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]+|%(?![0-9A-Fa-f]{2})|%[0-9a-f][0-9A-Fa-f]|%[0-9A-F][a-f]"
)
_BYTE_ESCAPES = [f"%{byte:02X}" for byte in range(256)]


def _quote_run(match: re.Match[str]) -> str:
    text = match.group()
    if len(text) == 3 and text[0] == "%":  # an escape with a lowercase digit (a run has no "%")
        return text.upper()
    return "".join(map(_BYTE_ESCAPES.__getitem__, text.encode("utf-8", "surrogatepass")))


_NOT_RAW = re.compile(r"[^A-Za-z0-9\-._~!$&'()*+,;=:@/?]")
"""A character that `_quote` may change (a `%` among them): a part with none is returned as it is."""


def _quote(part: str) -> str:
    """Percent-encode what RFC 3986 does not allow raw, as UTF-8; keep valid `%XX` escapes (uppercased)."""
    if _NOT_RAW.search(part) is None:  # the usual case (a regex search: 6 times quicker than translate)
        return part
    if "%" not in part:  # no escape to keep: each character to encode replaced where it stands
        for char in set(_NOT_RAW.findall(part)):  # (the escapes hold none of them)
            escaped = _CHAR_ESCAPES.get(char)
            if escaped is None:
                escaped = "".join(map(_BYTE_ESCAPES.__getitem__, char.encode("utf-8", "surrogatepass")))
                if len(_CHAR_ESCAPES) < 4096:
                    _CHAR_ESCAPES[char] = escaped
            part = part.replace(char, escaped)
        return part
    return _TO_QUOTE.sub(_quote_run, part)  # (the part itself when nothing matches)


_CHAR_ESCAPES: dict[str, str] = {chr(b): f"%{b:02X}" for b in range(128) if chr(b) not in _ALLOWED}
"""The escape of each character `_quote` encodes (the ASCII ones, and those met lately)."""


def _quote_reference(part: str) -> str:
    """`_quote` character by character: the reference the property tests hold `_quote` to."""
    out: list[str] = []
    n = len(part)
    i = 0
    while i < n:
        ch = part[i]
        if ch in _ALLOWED:
            out.append(ch)
        elif ch == "%" and i + 2 < n and _is_hex(part[i + 1 : i + 3]):
            out.append(part[i : i + 3].upper())
            i += 3
            continue
        else:
            for byte in ch.encode("utf-8", "surrogatepass"):
                out.append("%" + _HEX[byte >> 4] + _HEX[byte & 15])
        i += 1
    return "".join(out)


def _is_hex(two: str) -> bool:
    return len(two) == 2 and all(c in "0123456789abcdefABCDEF" for c in two)


def _encode_host(host: str, url: str) -> str:
    if not host:
        raise InvalidUrlError(url, "no host")
    if host.startswith("["):  # IPv6 literal: its canonical text (RFC 5952), so [0:0::1] is [::1]
        try:
            address = ipaddress.IPv6Address(host[1:-1].split("%", 1)[0])
        except ValueError:
            raise InvalidUrlError(url, "host is not a valid IPv6 address") from None
        mapped = address.ipv4_mapped
        return f"[::ffff:{mapped}]" if mapped is not None else f"[{address.compressed}]"
    host = host.rstrip(".").lower() if host.endswith(".") and len(host) > 1 else host
    if host.isascii():
        h = host.lower()
        if not re.fullmatch(r"[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?", h) or ".." in h:
            raise InvalidUrlError(url, "host is not a valid name")
        return h
    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except idna.IDNAError as exc:
        raise InvalidUrlError(url, f"host cannot be IDNA-encoded ({exc})") from None


def normalize_url(text: str, base_url: str | None = None) -> str:
    """Return `text` as an absolute http(s) URI in RFC 3986 form, or raise `InvalidUrlError`.

    - surrounding whitespace is removed; a URL starting with `/` is resolved against `base_url`;
    - the scheme and host are lowercased, the host IDNA-encoded, a default port dropped,
      an empty path made `/`;
    - non-ASCII and characters not allowed raw (space, `"`, `<`, `>`, ...) are UTF-8 percent-encoded;
      an existing `%XX` escape is kept (never encoded twice);
    - URLs of 2,048 characters or more are refused with code `url-too-long`.

    >>> normalize_url("HTTP://Example.COM:80/ümlat.php?q=a b")
    'http://example.com/%C3%BCmlat.php?q=a%20b'
    """
    s = text.strip()
    if not s:
        raise InvalidUrlError(text, "empty URL")
    m = _FAST.fullmatch(s)
    port = m.group(3) if m is not None else None
    if (
        m is not None
        and "%" not in s
        and "#" not in s
        and (port is None or (int(port) <= 65535 and (port[0] != "0" or port == "0")))  # (`:0080` is `:80`)
        and ".." not in m.group(2)  # an empty host label: the slow path says why it is invalid
        and "/." not in s[m.end(2) :]  # no dot segments to remove
    ):
        if port is not None and int(port) == _DEFAULT_PORTS[m.group(1)]:
            s = f"{m.group(1)}://{m.group(2)}{m.group(4) or '/'}"
        elif m.group(4) is None:
            s += "/"
        if len(s) >= MAX_URL_LENGTH:
            raise InvalidUrlError(
                s, f"URL has {len(s)} characters (must be under {MAX_URL_LENGTH})", code="url-too-long"
            )
        return s
    if s[0] == "/":
        if base_url is None or s[1:2] == "/":
            return _normalize_slow(s, text, base_url)
        joined = _joined(s, base_url)
        if joined is None:
            return _normalize_slow(s, text, base_url)
        s = joined
    m = _SPLIT.fullmatch(s)
    url = _normalized_parts(m) if m is not None else None
    return url if url is not None else _normalize_slow(s, text, base_url)


# The shape of most URLs the fast path leaves: an http(s) URL with an ASCII host name, an optional port, and
# any path, query and fragment (no TAB or line break), split where `urlsplit` splits it.
_SPLIT = re.compile(
    r"((?i:https?))://([A-Za-z0-9_.-]+)(?::([0-9]*))?(/[^?#\t\r\n]*)?(?:\?([^#\t\r\n]*))?(?:#([^\t\r\n]*))?"
)
_ASCII_HOST = re.compile(r"[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?")
# A relative URL that `urljoin` appends to the base's origin as it stands: no `;` (parameters) in its path,
# no empty query or fragment (dropped), no dot segment in its path and no `//` (which some Python versions
# drop) (checked apart).
_PLAIN_RELATIVE = re.compile(r"(/[^?#;\t\r\n]*)(?:\?[^#\t\r\n]+)?(?:#[^\t\r\n]+)?")
_ORIGINS: dict[str, str | None] = {}


def _joined(s: str, base_url: str) -> str | None:
    """`urljoin(base_url, s)` for a relative `s` (`/path`) in `_PLAIN_RELATIVE` form and an http(s) base with
    a host; else None (the slow path joins it)."""
    m = _PLAIN_RELATIVE.fullmatch(s)
    if m is None or "//" in m[1] or "/." in m[1]:
        return None
    origin = _ORIGINS.get(base_url, "")
    if origin == "":
        origin = _origin(base_url)
        if len(_ORIGINS) < 64:
            _ORIGINS[base_url] = origin
    return None if origin is None else origin + s


def _origin(base_url: str) -> str | None:
    """`scheme://netloc` of `base_url` as `urljoin` takes them, for an http(s) URL with a host; else None."""
    try:
        parts = urlsplit(base_url)
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}"


def _normalized_parts(m: re.Match[str]) -> str | None:
    """`_normalize_slow`'s URL for a URL split by `_SPLIT`, or None for one it would refuse (the slow path
    then says why)."""
    scheme, host, port, path, query, fragment = m.groups()
    origin = _ORIGIN_OF.get((scheme, host, port))
    if origin is None:
        origin = _normalized_origin(scheme, host, port)
        if origin is None:
            return None
        if len(_ORIGIN_OF) >= 1024:
            _ORIGIN_OF.clear()
        _ORIGIN_OF[scheme, host, port] = origin
    url = origin + (_remove_dot_segments(_quote(path)) or "/" if path else "/")
    if query or (query is not None and fragment is None):
        url += "?" + _quote(query)
    if fragment:
        url += "#" + _quote(fragment)
    if len(url) >= MAX_URL_LENGTH:
        return None
    return url


_ORIGIN_OF: dict[tuple[str, str, str | None], str] = {}
"""The `scheme://host[:port]` of scheme, host and port texts seen lately (a site's URLs share a few)."""


def _normalized_origin(scheme: str, host: str, port: str | None) -> str | None:
    """`scheme://host[:port]` normalised, or None when the slow path would refuse them."""
    scheme = scheme.lower()
    host = host.lower()
    if host.endswith(".") and len(host) > 1:
        host = host.rstrip(".")
    if _ASCII_HOST.fullmatch(host) is None or ".." in host:
        return None
    if port:
        number = int(port)
        if number > 65535:
            return None
        if number != _DEFAULT_PORTS[scheme]:
            host = f"{host}:{number}"
    return f"{scheme}://{host}"


def url_key(url: str) -> str:
    """The one identity of a URL across sitemapkit (loops, repeats, "fetched already"): the URL in
    `normalize_url` form without its fragment; the text as given, less its fragment, when it cannot be
    normalised.

    >>> url_key("HTTPS://Example.com:443/a#top") == url_key("https://example.com/a")
    True
    """
    try:
        return normalize_url(url).split("#", 1)[0]
    except InvalidUrlError:
        return url.strip().split("#", 1)[0]


def _normalize_slow(s: str, original: str, base_url: str | None) -> str:
    if s.startswith("/") and not s.startswith("//"):
        if base_url is None:
            raise InvalidUrlError(original, "relative URL and no base URL to resolve it against")
        try:
            s = urljoin(base_url, s)
        except ValueError as exc:  # `/\t/[`: urljoin drops the TAB, and `//[` is no valid host
            raise InvalidUrlError(original, f"cannot be parsed ({exc})") from None
    if any(c in s for c in "\t\r\n"):
        raise InvalidUrlError(original, "URL contains a tab or line break")
    try:
        parts = urlsplit(s)
    except ValueError as exc:
        raise InvalidUrlError(original, f"cannot be parsed ({exc})") from None
    scheme = parts.scheme.lower()
    if not scheme:
        raise InvalidUrlError(original, "relative URL (no scheme)")
    if scheme not in _DEFAULT_PORTS:
        raise InvalidUrlError(original, f"scheme {scheme!r} is not http or https")
    if not parts.netloc:
        raise InvalidUrlError(original, "no host")
    if "@" in parts.netloc:
        raise InvalidUrlError(original, "user information in a sitemap URL")
    try:
        port = parts.port
    except ValueError:
        raise InvalidUrlError(original, "port is not a number from 0 to 65535") from None
    hostname = (
        parts.netloc.rsplit(":", 1)[0] if port is not None or parts.netloc.endswith(":") else parts.netloc
    )
    host = _encode_host(hostname, original)
    netloc = host if port is None or port == _DEFAULT_PORTS[scheme] else f"{host}:{port}"
    path = _remove_dot_segments(_quote(parts.path)) or "/"
    url = f"{scheme}://{netloc}{path}"
    if parts.query or (s.endswith("?") and "#" not in s):
        url += "?" + _quote(parts.query)
    if parts.fragment:
        url += "#" + _quote(parts.fragment)
    if len(url) >= MAX_URL_LENGTH:
        raise InvalidUrlError(
            url, f"URL has {len(url)} characters (must be under {MAX_URL_LENGTH})", code="url-too-long"
        )
    return url


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4: `/a/./b/../c` is `/a/c` (so `/docs/../admin` cannot pass as under `/docs/`).
    `%2E` is an unreserved character spelled out, so it counts as a dot."""
    if "/." not in path and "/%2E" not in path:  # (a path here starts with "/", or is empty)
        return path
    segments = path.replace("%2E", ".").split("/")
    if "." not in segments and ".." not in segments:
        return path
    out: list[str] = []
    for segment in segments[1:]:
        if segment == "..":
            if out:
                out.pop()
        elif segment != ".":
            out.append(segment)
    trailing = segments[-1] in (".", "..")
    return "/" + "/".join(out) + ("/" if trailing and out else "")


_HOST_NAME = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?\.?")
"""A host name as `check_uri` accepts it (what `normalize_url` would keep, in any case; a final dot)."""


def check_uri(url: str) -> str | None:
    """Say what is wrong with `url` as a `<loc>` value as written (no repair), or None if it is valid.

    Valid: an absolute http(s) URL in RFC 3986 form, whose host is a name of letters, digits, `-`, `_`
    and single dots, or an IPv6 literal in brackets, with a port (if any) from 0 to 65535."""
    if not url:
        return "empty URL"
    if url != url.strip():
        return "URL has surrounding whitespace"
    m = _FAST.fullmatch(url) if url.isascii() else None
    if (
        m is not None
        and _BAD_PERCENT.search(url) is None
        and ".." not in m.group(2)
        and (m.group(3) is None or int(m.group(3)) <= 65535)
    ):
        return None if len(url) < MAX_URL_LENGTH else "too long"
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        return f"cannot be parsed ({exc})"
    if not parts.scheme:
        return "relative URL (no scheme)"
    if parts.scheme.lower() not in _DEFAULT_PORTS:
        return f"scheme {parts.scheme!r} is not http or https"
    if not parts.netloc:
        return "no host"
    bad = sorted({c for c in url if c not in _ALLOWED and c not in "%#[]"})
    if bad:
        return "characters not allowed raw in a URL: " + " ".join(repr(c) for c in bad)
    if _BAD_PERCENT.search(url):
        return "a '%' that does not start a %XX escape"
    return _authority_problem(parts.netloc)


def _authority_problem(netloc: str) -> str | None:
    """What is wrong with the host and port of a URL (for `check_uri`), or None."""
    hostport = netloc.rpartition("@")[2]
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            return "the IPv6 address has no closing ']'"
        host, rest = hostport[1:end], hostport[end + 1 :]

        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return f"host [{host}] is not an IPv6 address"
    else:
        host, colon, port = hostport.partition(":")
        rest = colon + port
        if not host:
            return "no host"
        if _HOST_NAME.fullmatch(host) is None or ".." in host:
            return f"host {host!r} is not a valid name (letters, digits, '-', '_' and single dots)"
    if rest:
        port = rest[1:]
        if rest[0] != ":" or (port and not (port.isascii() and port.isdigit() and int(port) <= 65535)):
            return f"port {rest.lstrip(':')!r} is not a number from 0 to 65535"
    return None


def folder_of(url: str) -> str:
    """The folder of a sitemap URL: everything up to and including the last `/` of its path."""
    parts = urlsplit(url)
    path = parts.path or "/"
    return f"{parts.scheme}://{parts.netloc}{path[: path.rfind('/') + 1]}"


class Scope:
    """Which URLs a sitemap published in `folder` may list.

    A URL is in scope when it has the folder's scheme, host and port and lies under its path,
    or when its host is one of `allow_hosts` (cross-submission through robots.txt).
    """

    __slots__ = ("allow_hosts", "folder")

    def __init__(self, folder: str, allow_hosts: tuple[str, ...] | list[str] = ()) -> None:
        folder = normalize_url(folder)
        if "?" in folder or "#" in folder:
            raise InvalidUrlError(folder, "a folder URL has no query or fragment")
        if not folder.endswith("/"):
            folder += "/"
        self.folder = folder
        self.allow_hosts = frozenset(_encode_host(h.strip().lower(), h) for h in allow_hosts)

    @classmethod
    def for_sitemap(cls, sitemap_url: str, allow_hosts: tuple[str, ...] | list[str] = ()) -> Scope:
        """The scope of a sitemap file published at `sitemap_url` (its folder)."""
        return cls(folder_of(normalize_url(sitemap_url)), allow_hosts)

    def __contains__(self, url: str) -> bool:
        if url.startswith(self.folder):
            return True
        if self.allow_hosts:
            host = (urlsplit(url).hostname or "").lower()
            return host in self.allow_hosts or f"[{host}]" in self.allow_hosts
        return False

    def explain(self, url: str) -> str:
        """Why `url` is out of scope, as a sentence."""
        a, b = urlsplit(url), urlsplit(self.folder)
        if a.scheme != b.scheme:
            return f"scheme {a.scheme!r} differs from the sitemap's {b.scheme!r}"
        if a.hostname != b.hostname:
            return f"host {a.hostname!r} differs from the sitemap's {b.hostname!r}"
        if a.port != b.port:
            default = {"http": 80, "https": 443}.get(b.scheme)
            return f"port {a.port or default} differs from the sitemap's {b.port or default}"
        return f"not under the sitemap's folder {self.folder}"

    def __repr__(self) -> str:
        return f"Scope({self.folder!r}, allow_hosts={sorted(self.allow_hosts)!r})"
