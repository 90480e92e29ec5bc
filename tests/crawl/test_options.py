"""The option groups (`sitemapkit.NetworkOptions`, `ScopeOptions`, `PublishOptions`): each setting declared
once; the flat keywords of `crawl` and `audit` are exactly the groups' fields; a keyword wins over the field
of an object given too; and a bad value is a `UsageError` before anything is fetched or written."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import sitemapkit
from sitemapkit import NetworkOptions, PublishOptions, ScopeOptions, UsageError
from sitemapkit.crawl.options import SETTINGS, CrawlSettings, UnknownSettingError, merged
from tests.support.localserver import LocalServer


@pytest.mark.parametrize("kind", list(SETTINGS))
def test_the_keywords_are_the_fields(kind: type[Any]) -> None:
    """Each group's typed dict (what mypy checks the keywords against) names exactly its fields, and each
    field has a default and a docstring in the class's source."""
    fields = [f.name for f in dataclasses.fields(kind)]
    assert list(typing.get_type_hints(SETTINGS[kind])) == fields
    assert all(f.default is not dataclasses.MISSING for f in dataclasses.fields(kind))
    source = inspect.getsource(kind)
    for name in fields:
        after = source.split(f"\n    {name}: ", 1)[1].split("\n", 2)
        assert after[1].strip().startswith('"""'), f"{kind.__name__}.{name} has no docstring"
    assert kind() == kind()  # frozen, comparable: the defaults are the one declaration


def test_crawl_takes_every_field_of_its_groups() -> None:
    keys = set(typing.get_type_hints(CrawlSettings))
    fields = {
        f.name for kind in (NetworkOptions, ScopeOptions, PublishOptions) for f in dataclasses.fields(kind)
    }
    assert keys == fields
    signature = inspect.signature(sitemapkit.crawl)
    assert signature == inspect.signature(sitemapkit.acrawl)
    assert {"scope", "network", "publish"} <= set(signature.parameters)
    assert not keys & set(signature.parameters)  # each setting in one place: its group
    audit = inspect.signature(sitemapkit.audit)
    assert "network" in audit.parameters
    assert not {f.name for f in dataclasses.fields(NetworkOptions)} & set(audit.parameters)


def test_a_keyword_wins_over_the_objects_field() -> None:
    given = NetworkOptions(rate=1.0, timeout=5.0)
    settings: dict[str, Any] = {"rate": 4.0, "gzip": True}
    assert merged(given, NetworkOptions, settings) == NetworkOptions(rate=4.0, timeout=5.0)
    assert settings == {"gzip": True}  # the other groups' keywords are left for them
    assert merged(None, PublishOptions, settings) == PublishOptions(gzip=True) and settings == {}
    assert PublishOptions(name="news.xml.gz").name == "news"
    assert ScopeOptions(include=["/a/*"]).include == ("/a/*",)


BAD_CRAWLS: list[tuple[str, dict[str, Any]]] = [
    ("timeout", {"timeout": 0}),
    ("retries", {"retries": -1}),
    ("retries", {"retries": 11}),
    ("concurrency", {"concurrency": 0}),
    ("concurrency", {"concurrency": 1000}),
    ("rate", {"rate": 0}),
    ("gzip_level", {"gzip_level": 12}),
    ("max_urls", {"max_urls": 50_001}),
    ("trap_limit", {"trap_limit": 0}),
    ("max_pages", {"max_pages": -1}),
    ("include", {"include": "/a/*"}),
    ("index", {"index": "sometimes"}),
    ("name", {"name": "a/b"}),
    ("gzip_level", {"publish": PublishOptions(), "gzip_level": 12}),
    ("gzipp", {"gzipp": True}),
    ("NetworkOptions", {"network": ScopeOptions()}),
    ("allow_hosts", {"allow_hosts": ["not a host/x"]}),
]


@pytest.mark.parametrize(("word", "kwargs"), BAD_CRAWLS)
def test_a_bad_crawl_argument_is_a_usage_error_before_anything_is_fetched(
    server: LocalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, word: str, kwargs: dict[str, Any]
) -> None:
    server.route("/", "<html><body>home</body></html>", content_type="text/html")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match=word):
        sitemapkit.crawl(server.url("/"), "out", sitemaps=False, **kwargs)
    assert server.requests == [] and list(tmp_path.iterdir()) == []


def test_an_unknown_keyword_is_also_a_type_error(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'gzipp'") as caught:
        sitemapkit.crawl("https://example.com/", tmp_path / "out", gzipp=True)  # type: ignore[call-arg]
    assert isinstance(caught.value, UnknownSettingError) and isinstance(caught.value, UsageError)


BAD_AUDITS: list[tuple[str, Callable[[str], Any]]] = [
    ("timeout", lambda url: sitemapkit.audit(url, timeout=-1)),
    ("retries", lambda url: sitemapkit.audit(url, retries=99)),
    ("max_pages", lambda url: sitemapkit.audit(url, crawl=True, max_pages=-1)),
    ("max_depth", lambda url: sitemapkit.audit(url, crawl=True, max_depth=-1)),
    ("allow_hosts", lambda url: sitemapkit.audit(url, allow_hosts="example.com")),
    ("rate", lambda url: sitemapkit.audit(url, network=NetworkOptions(), rate=0)),
    ("baseline", lambda url: sitemapkit.audit(url, baseline=[1])),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("word", "call"), BAD_AUDITS)
def test_a_bad_audit_argument_is_a_usage_error_before_anything_is_fetched(
    server: LocalServer, word: str, call: Callable[[str], Any]
) -> None:
    with pytest.raises(UsageError, match=word):
        call(server.url("/"))
    assert server.requests == []


def test_the_blocking_forms_refuse_a_running_loop() -> None:
    """`crawl` and `audit` are `blocking_form`s: inside an event loop they say to await the async form."""
    import asyncio

    async def main() -> None:
        with pytest.raises(UsageError, match=r"await acrawl"):
            sitemapkit.crawl("https://example.com/", "out")
        with pytest.raises(UsageError, match=r"await aaudit"):
            sitemapkit.audit("https://example.com/")

    asyncio.run(main())


def test_build_takes_the_publish_keywords_over_its_file(tmp_path: Path) -> None:
    """`build(path, **PublishOptions fields)` overrides the file, checked (and normalized) as the group is."""
    (tmp_path / "urls.txt").write_text("https://example.com/\nhttps://example.com/a\n")
    config = tmp_path / "sitemapkit.toml"
    config.write_text(
        'base_url = "https://example.com/"\n[output]\ndir = "public"\n'
        '[[source]]\ntype = "list"\npath = "urls.txt"\n'
    )
    result = sitemapkit.build(config, gzip=True, name="pages.xml")
    assert [f.path.name for f in result.files] == ["pages.xml.gz"]
    with pytest.raises(UsageError, match="gzip_level"):
        sitemapkit.build(config, gzip_level=12)
    with pytest.raises(UnknownSettingError, match="lastmodd"):
        sitemapkit.build(config, lastmodd="git")  # type: ignore[call-arg]
    assert inspect.signature(sitemapkit.build) == inspect.signature(sitemapkit.abuild)
