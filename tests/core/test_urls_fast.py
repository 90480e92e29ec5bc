"""The fast paths of `normalize_url` held to its slow path (`urlsplit`, `urljoin` and the character-by-
character `_quote_reference`): the same URL, or the same refusal, for any text."""

from __future__ import annotations

from unittest.mock import patch

from hypothesis import example, given, settings
from hypothesis import strategies as st

from sitemapkit.core import urls
from sitemapkit.core.errors import InvalidUrlError
from sitemapkit.core.urls import normalize_url

_CHARS = "aZ09-._~/?#%;:@&'=+ \t\n\"<>[]\\|^`{}ü日\ud800\x00\x7fEfF"
_pieces = st.text(alphabet=_CHARS, max_size=12)
_schemes = st.sampled_from(["http", "https", "HTTP", "HtTpS", "ftp", "", "http:", "h"])
_hosts = st.sampled_from(
    [
        "example.com",
        "WWW.Example.COM",
        "a_b.example",
        "host.",
        "host..",
        ".",
        "..",
        "-a",
        "a-",
        "",
        "bücher.de",
        "[::1]",
        "user@host",
        "x" * 70,
        "EXAMPLE.com.",
        "1.2.3.4",
    ]
)
_ports = st.sampled_from(
    ["", ":", ":80", ":443", ":0080", ":8080", ":65535", ":65536", ":99999", ":x", ":+1", ":٣"]
)
_bases = st.sampled_from(
    [
        None,
        "https://www.example.com/",
        "HTTPS://Example.com:443/docs/",
        "http://h:8080/a?q#f",
        "mailto:x",
        "https://",
        "https:///x",
        "ftp://h/",
    ]
)


@st.composite
def _url_texts(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return draw(st.sampled_from(["/", "//", " /"])) + draw(_pieces) + draw(_pieces)
    sep = draw(st.sampled_from(["://", "://", ":/", ":"]))
    return draw(_schemes) + sep + draw(_hosts) + draw(_ports) + draw(_pieces) + draw(_pieces)


def _outcome(call: object) -> object:
    try:
        return call()  # type: ignore[operator]
    except InvalidUrlError as exc:
        return ("refused", exc.code, exc.reason, exc.url)


def _slow(text: str, base: str | None) -> object:
    with patch.object(urls, "_quote", urls._quote_reference):
        return _outcome(
            lambda: urls._normalize_slow(text.strip(), text, base) if text.strip() else normalize_url(text)
        )


@settings(max_examples=3000)
@given(_url_texts(), _bases)
@example("HTTPS://WWW.Example.com:0443/Größe?q=a b#f%7e", None)
@example("/a b/c?x=%zz#frag", "https://www.example.com/")
@example("/a?", "https://www.example.com/")
@example("/a#", "https://www.example.com/")
@example("/a//b", "https://www.example.com/")
@example("/a;p/b", "https://www.example.com/")
@example("/\n/[", "https://www.example.com/")
@example("http://h/%2e%2E/x", None)
@example("https://example.com/a?#f", None)
@example("https://example.com/a?", None)
@example("https://example.com/a#", None)
@example("https://example.com:0080", None)  # a port with a leading zero: the fast path kept it as written
@example("http://example.com:00/x", None)
@example("https://www.example.com/katalog/größe-1?q=a b", None)  # fails the fast regex at its end
@example("https://a-b.c-d.example.com:443/x y", None)
@example("https://a-.example.com/x", None)
@example("https://example.com./x", None)  # a host ending in a dot or a hyphen: not the fast path's
@example("https://example-/x", None)
def test_normalize_url_is_its_slow_path(text: str, base: str | None) -> None:
    assert _outcome(lambda: normalize_url(text, base)) == _slow(text, base)


@settings(max_examples=2000)
@given(st.text(alphabet=_CHARS, max_size=20) | st.text(max_size=20))
@example("%7e%7E%%41%4g%a")
@example('/a b "c" <d> ü ü \ud800 größe ')  # no escape to keep: each character replaced where it stands
@example("/%41 b ü")
def test_quote_is_its_reference(part: str) -> None:
    assert urls._quote(part) == urls._quote_reference(part)
