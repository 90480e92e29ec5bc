"""The framework examples in examples/ (Flask, Starlette) run under real servers, and what they serve reads
back completely and validates with zero diagnostics."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

import sitemapkit
from tests.test_web import serve_asgi, serve_wsgi

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # Django imports its URLconf by name
    spec.loader.exec_module(module)
    return module


def test_flask_example(tmp_path: Path) -> None:
    pytest.importorskip("flask")
    example = load("web_flask")
    db = str(tmp_path / "shop.db")
    example.create_demo_db(db, products=2_500)
    holder: dict[str, Any] = {}
    with serve_wsgi(lambda environ, start_response: holder["app"](environ, start_response)) as base:
        holder["app"] = example.create_app(db, base_url=base, page_size=1_000)
        assert "Sitemap" in httpx.get(base + "/").text  # Flask still answers its own routes
        assert httpx.get(base + "/products/product-3").text == "<h1>product-3</h1>"
        reader = sitemapkit.read(base + "/sitemap.xml")
        locs = [e.loc for e in reader]
        published = [f"{base}/products/product-{i}" for i in range(2_500) if i % 10 != 0]
        assert locs == published
        assert [n.url_count for n in reader.tree.children] == [1_000, 1_000, 250]
        report = sitemapkit.validate(base + "/sitemap.xml")
        assert [str(d) for d in report] == []
        # the version function gives ETags without reading the page
        first = httpx.get(base + "/sitemap-2.xml")
        again = httpx.get(base + "/sitemap-2.xml", headers={"If-None-Match": first.headers["etag"]})
        assert again.status_code == 304


def test_starlette_example(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    example = load("web_starlette")
    db = str(tmp_path / "blog.db")
    example.create_demo_db(db, articles=1_500)
    holder: dict[str, Any] = {}

    async def trampoline(scope: Any, receive: Any, send: Any) -> None:
        await holder["app"](scope, receive, send)

    with serve_asgi(trampoline) as base:
        holder["app"] = example.create_app(db, base_url=base, page_size=1_000)
        assert httpx.get(base + "/de/article-7").text == "<h1>article-7</h1>"
        reader = sitemapkit.read(base + "/sitemap.xml")
        locs = [e.loc for e in reader]
        assert locs == [f"{base}/{lang}/article-{i}" for i in range(1_500) for lang in ("de", "en")]
        assert [n.url_count for n in reader.tree.children] == [1_000, 1_000, 1_000]
        assert httpx.get(base + "/sitemap-4.xml").status_code == 404
        report = sitemapkit.validate(base + "/sitemap.xml")
        assert [str(d) for d in report] == []


def test_django_example(tmp_path: Path) -> None:
    pytest.importorskip("django")
    from django.conf import settings

    if settings.configured:
        pytest.skip("Django settings are already configured in this process")
    example = load("web_django")
    holder: dict[str, Any] = {}
    with serve_wsgi(lambda environ, start_response: holder["app"](environ, start_response)) as base:
        example.configure(str(tmp_path / "site.db"), base_url=base, page_size=1_000)
        example.create_demo_data(authors=2_500)
        from django.core.wsgi import get_wsgi_application

        holder["app"] = get_wsgi_application()
        reader = sitemapkit.read(base + "/sitemap.xml")
        locs = [e.loc for e in reader]
        assert locs == [f"{base}/authors/author{i}/" for i in range(2_500) if i % 9 != 0]
        assert [n.url_count for n in reader.tree.children] == [1_000, 1_000, 222]
        assert [str(d) for d in sitemapkit.validate(base + "/sitemap.xml")] == []
        head = httpx.head(base + "/sitemap-1.xml")
        assert head.status_code == 200 and head.content == b"" and int(head.headers["content-length"]) > 0
        assert httpx.get(base + "/sitemap.xml", headers={"Host": "evil.example"}).status_code == 400
        assert httpx.post(base + "/sitemap.xml").status_code == 405
