"""The framework examples in examples/ (Flask, Starlette) run under real servers, and what they serve reads
back completely and validates with zero diagnostics."""

from __future__ import annotations

import datetime as dt
import importlib.util
import re
import sqlite3
import sys
from contextlib import closing
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

import sitemapkit
from tests.publisher.test_web import serve_asgi, serve_wsgi

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


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
    with closing(sqlite3.connect(db)) as conn, conn:  # the data last changed at 10:00, by the server's clock
        conn.execute("UPDATE products_changed SET at = '2024-06-01 10:00:00.000'")
    now = [dt.datetime(2024, 6, 1, 11, 0, tzinfo=dt.UTC).timestamp()]  # the server starts at 11:00
    with serve_wsgi(lambda environ, start_response: holder["app"](environ, start_response)) as base:
        holder["app"] = example.create_app(db, base_url=base, page_size=1_000, wall_clock=lambda: now[0])
        now[0] += 60
        assert "Sitemap" in httpx.get(base + "/").text  # Flask still answers its own routes
        assert httpx.get(base + "/products/product-3").text == "<h1>product-3</h1>"
        reader = sitemapkit.read(base + "/sitemap.xml")
        locs = [e.loc for e in reader]
        published = [f"{base}/products/product-{i}" for i in range(2_500) if i % 10 != 0]
        assert locs == published
        assert [n.url_count for n in reader.tree.children] == [1_000, 1_000, 250]
        report = sitemapkit.validate(base + "/sitemap.xml")
        assert [str(d) for d in report] == []
        # the version function (the time of the latest change) gives ETags and Last-Modified
        first = httpx.get(base + "/sitemap-2.xml")
        assert first.headers["last-modified"] == "Sat, 01 Jun 2024 11:00:00 GMT"  # the server's start
        assert "/products/product-1501<" in first.text
        for validator in (
            {"If-None-Match": first.headers["etag"]},
            {"If-Modified-Since": first.headers["last-modified"]},
        ):
            assert httpx.get(base + "/sitemap-2.xml", headers=validator).status_code == 304
        # a product deleted: no lastmod moves, but the trigger moves the change time (to the real now)
        with closing(sqlite3.connect(db)) as conn, conn:
            conn.execute("DELETE FROM products WHERE slug = 'product-1501'")
            (at,) = conn.execute("SELECT at FROM products_changed").fetchone()
        changed = dt.datetime.fromisoformat(at).replace(tzinfo=dt.UTC)
        now[0] = changed.timestamp() + 5  # the server's clock agrees with the database's again
        since = {"If-Modified-Since": first.headers["last-modified"]}
        again = httpx.get(base + "/sitemap-2.xml", headers=since)
        assert again.status_code == 200 and "/products/product-1501<" not in again.text
        assert again.headers["last-modified"] == changed.strftime("%a, %d %b %Y %H:%M:%S GMT")


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
        # an article deleted and another added: the same count, every later page shifts by two URLs
        with closing(sqlite3.connect(db)) as conn, conn:
            conn.execute("DELETE FROM articles WHERE slug = 'article-3'")
            conn.execute("INSERT INTO articles (slug, updated) VALUES ('article-new', '2024-06-01')")
        pages = {n: httpx.get(f"{base}/sitemap-{n}.xml").text for n in (3, 2, 1)}
        served = [loc for n in (1, 2, 3) for loc in re.findall(r"<loc>([^<]*)</loc>", pages[n])]
        articles = [i for i in range(1_500) if i != 3]
        expected = [f"{base}/{lang}/article-{i}" for i in articles for lang in ("de", "en")]
        assert served == [*expected, f"{base}/de/article-new", f"{base}/en/article-new"]


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
