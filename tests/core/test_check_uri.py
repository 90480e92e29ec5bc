"""`urls.check_uri`: a <loc> judged as written, with the host and port checked too."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemapkit.core.errors import InvalidUrlError
from sitemapkit.core.urls import check_uri, normalize_url
from sitemapkit.reader.entries import PLAIN_URL


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/",
        "http://example.com",
        "https://Example.COM/a?b=1&c=2#top",
        "https://example.com:8080/",
        "https://example.com:65535/",
        "https://example.com:0/",
        "https://example.com:/",
        "https://a_b.example.com/",
        "https://xn--bcher-kva.de/",
        "https://example.com./",
        "http://192.0.2.1:8080/x",
        "https://[2001:db8::1]/",
        "https://[::1]:443/x",
        "https://example.com/%C3%BC",
        "https://user@example.com/",
    ],
)
def test_valid(url: str) -> None:
    assert check_uri(url) is None


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://example.com:99999/", "port '99999' is not a number from 0 to 65535"),
        ("https://example.com:65536/", "port '65536'"),
        ("https://[::1]:70000/", "port '70000'"),
        ("https://example.com:8a/", "port '8a'"),
        ("https://example.com:1:2/", "port '1:2'"),
        ("https://exa$mple.com/", "host 'exa$mple.com' is not a valid name"),
        ("https://exa!mple.com/", "host 'exa!mple.com'"),
        ("https://example..com/", "host 'example..com'"),
        ("https://-example.com/", "host '-example.com'"),
        ("https://.example.com/", "host '.example.com'"),
        ("https://%41.com/", "host '%41.com'"),
        ("https://:80/", "no host"),
        ("https://[2001:db8::zz]/", "2001:db8::zz"),
        ("https://example.com:٣/", "characters not allowed raw"),
        ("https://example.com/a b", "characters not allowed raw"),
        ("/relative", "relative URL"),
        ("ftp://example.com/", "scheme 'ftp'"),
        ("https://example.com/%zz", "'%'"),
        (" https://example.com/", "surrounding whitespace"),
        ("", "empty URL"),
        ("https://example.com/" + "a" * 2028, "too long"),
    ],
)
def test_invalid(url: str, problem: str) -> None:
    found = check_uri(url)
    assert found is not None and problem in found, found


@settings(max_examples=100, deadline=None)
@given(st.from_regex(PLAIN_URL, fullmatch=True))
def test_the_parsers_one_regex_check_is_a_subset(url: str) -> None:
    """The parser takes a <loc> matching `PLAIN_URL` without calling `check_uri`: it must agree."""
    if len(url) < 2048:
        assert check_uri(url) is None


HOSTS = st.sampled_from(
    ["example.com", "EXAMPLE.com", "a_b.c", "bücher.de", "[::1]", "1.2.3.4", "x-.y", "-x.y", "a..b", "a.b."]
)
PORTS = st.sampled_from(["", ":", ":0", ":80", ":443", ":8080", ":65535", ":65536", ":99999", ":x"])
PATHS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=20)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["http", "https", "HTTP"]), HOSTS, PORTS, PATHS)
def test_what_the_generator_writes_is_valid(scheme: str, host: str, port: str, path: str) -> None:
    """Every URL `normalize_url` returns (what `sitemapkit generate` writes) passes `check_uri`."""
    try:
        url = normalize_url(f"{scheme}://{host}{port}/{path}")
    except InvalidUrlError:
        return
    assert check_uri(url) is None, url
