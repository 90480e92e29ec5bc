from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitemapkit.core.errors import InvalidUrlError
from sitemapkit.core.urls import Scope, check_uri, folder_of, normalize_url


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://www.example.com/", "http://www.example.com/"),
        ("HTTP://WWW.Example.COM", "http://www.example.com/"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("http://example.com:8080/a", "http://example.com:8080/a"),
        ("http://www.example.com/ümlat.php&q=name", "http://www.example.com/%C3%BCmlat.php&q=name"),
        ('http://example.com/a b"c<d>e', "http://example.com/a%20b%22c%3Cd%3Ee"),
        ("http://example.com/%C3%BC", "http://example.com/%C3%BC"),
        ("http://example.com/%c3%bc", "http://example.com/%C3%BC"),
        ("http://example.com/100%", "http://example.com/100%25"),
        ("http://example.com/%zz", "http://example.com/%25zz"),
        ("https://bücher.de/", "https://xn--bcher-kva.de/"),
        ("https://example.com/?q=日本", "https://example.com/?q=%E6%97%A5%E6%9C%AC"),
        ("https://example.com/p#frag ment", "https://example.com/p#frag%20ment"),
        ("  https://example.com/x \n", "https://example.com/x"),
        ("https://example.com/a?b=1&c='2'", "https://example.com/a?b=1&c='2'"),
    ],
)
def test_normalize(raw: str, expected: str) -> None:
    assert normalize_url(raw) == expected


def test_relative_path_resolves_against_base() -> None:
    assert normalize_url("/about us", "https://example.com/docs/") == "https://example.com/about%20us"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "empty"),
        ("/about", "no base"),
        ("about.html", "no scheme"),
        ("ftp://example.com/", "not http"),
        ("mailto:a@example.com", "not http"),
        ("http://", "no host"),
        ("http://user:pw@example.com/", "user information"),
        ("http://example.com:99999/", "port"),
        ("http://exa mple.com/", "host"),
        ("http://example.com/a\tb", "tab"),
    ],
)
def test_invalid_urls_are_refused_with_a_reason(raw: str, reason: str) -> None:
    with pytest.raises(InvalidUrlError) as info:
        normalize_url(raw)
    assert info.value.code == "invalid-url"
    assert reason in info.value.reason


def test_too_long_has_its_own_code() -> None:
    with pytest.raises(InvalidUrlError) as info:
        normalize_url("https://example.com/" + "a" * 2030)
    assert info.value.code == "url-too-long"
    assert normalize_url("https://example.com/" + "a" * 2027)  # 2,047 characters: allowed


def test_check_uri_judges_the_text_as_written() -> None:
    assert check_uri("https://example.com/a?b=1") is None
    assert check_uri("/relative") is not None
    assert check_uri(" https://example.com/") is not None
    assert check_uri("https://example.com/a b") is not None
    assert check_uri("https://example.com/%zz") is not None
    assert check_uri("https://example.com/ü") is not None


def test_scope_is_scheme_host_port_and_folder() -> None:
    scope = Scope.for_sitemap("http://example.com/catalog/sitemap.xml")
    assert "http://example.com/catalog/show?item=23" in scope
    assert "http://example.com/catalog/show?item=233&user=3453" in scope
    assert "http://example.com/image/show?item=23" not in scope
    assert "https://example.com/catalog/page1.html" not in scope
    assert "http://www.example.com/catalog/" not in scope
    assert "http://example.com:8080/catalog/" not in scope
    assert "scheme" in scope.explain("https://example.com/catalog/page1.html")
    assert "folder" in scope.explain("http://example.com/image/show")


def test_allow_host_admits_cross_submission() -> None:
    scope = Scope("https://example.com/", ["Cdn.Example.NET"])
    assert "https://cdn.example.net/page" in scope
    assert "https://other.example.net/page" not in scope


def test_folder_of() -> None:
    assert folder_of("https://example.com/a/b/sitemap.xml?x=1") == "https://example.com/a/b/"
    assert folder_of("https://example.com") == "https://example.com/"


url_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\t\r\n#"), max_size=40
)


@given(path=url_text, query=url_text)
def test_normalize_is_idempotent_and_yields_valid_uris(path: str, query: str) -> None:
    raw = f"https://example.com/{path}?{query}"
    try:
        once = normalize_url(raw)
    except InvalidUrlError:
        return
    assert normalize_url(once) == once  # never encodes an existing %XX twice
    assert check_uri(once) is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("https://example.com/docs/../admin", "https://example.com/admin"),
        ("https://example.com/a/./b/../c", "https://example.com/a/c"),
        ("https://example.com/a/..", "https://example.com/"),
        ("https://example.com/a/%2e%2e/b", "https://example.com/b"),
        ("https://example.com/.well-known/x", "https://example.com/.well-known/x"),
        ("https://example.com/x?q=/../y", "https://example.com/x?q=/../y"),
    ],
)
def test_dot_segments_are_removed(raw: str, expected: str) -> None:
    assert normalize_url(raw) == expected


def test_dot_segments_cannot_escape_the_scope() -> None:
    scope = Scope("https://example.com/docs/")
    assert normalize_url("https://example.com/docs/../admin") not in scope


@pytest.mark.parametrize(
    "base", ["https://example.com/?a=b", "https://example.com/x#frag", "ftp://example.com/"]
)
def test_a_folder_url_has_no_query_or_fragment(base: str) -> None:
    with pytest.raises(InvalidUrlError):
        Scope(base)


@pytest.mark.parametrize("raw", ["/\t/[", "/\n/[x"])
def test_a_relative_url_urljoin_cannot_parse_is_refused_not_a_crash(raw: str) -> None:
    with pytest.raises(InvalidUrlError, match="cannot be parsed"):
        normalize_url(raw, "https://www.example.com/")
