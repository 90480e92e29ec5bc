"""Serve sitemaps from a Starlette (or FastAPI) app, built on each request from an SQLite table.

    python examples/web_starlette.py        # then open http://127.0.0.1:8000/sitemap.xml

The sitemap app is an ASGI app: here a Starlette route hands it every path that starts with `/sitemap`.
With FastAPI, wrap the whole app instead: `app = asgi_app(source, base_url=..., fallback=fastapi_app)`.
The source is a cursor over the table (keyset pagination, `WHERE id > ? ORDER BY id LIMIT ?`), which stays
fast for millions of rows where `OFFSET` would not; the count comes from its own query. A change counter
that triggers move on every insert, update and delete is its `version()`: the cursor remembers where each
page starts for as long as it is unchanged, so a page costs one query.
"""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import tempfile
from collections.abc import Sequence
from contextlib import closing

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from sitemapkit import Alternate, UrlEntry, parse_w3c
from sitemapkit.publisher.web import KeysetSource, asgi_app

BASE_URL = "http://127.0.0.1:8000"  # in production: your public origin, e.g. "https://www.example.com"


def create_demo_db(path: str, articles: int = 2_500) -> None:
    """An `articles` table, each article in English and German."""
    start = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    with closing(sqlite3.connect(path)) as db, db:
        db.executescript(
            """
            CREATE TABLE articles (id INTEGER PRIMARY KEY, slug TEXT, updated TEXT);
            CREATE TABLE articles_changes (n INTEGER NOT NULL);
            INSERT INTO articles_changes VALUES (0);
            CREATE TRIGGER articles_insert AFTER INSERT ON articles BEGIN
                UPDATE articles_changes SET n = n + 1; END;
            CREATE TRIGGER articles_update AFTER UPDATE ON articles BEGIN
                UPDATE articles_changes SET n = n + 1; END;
            CREATE TRIGGER articles_delete AFTER DELETE ON articles BEGIN
                UPDATE articles_changes SET n = n + 1; END;
            """
        )
        db.executemany(
            "INSERT INTO articles (slug, updated) VALUES (?, ?)",
            ((f"article-{i}", (start + dt.timedelta(minutes=90 * i)).isoformat()) for i in range(articles)),
        )


def sitemap_source(db_path: str, base_url: str) -> KeysetSource:
    """Both language versions of each article, linked to each other with hreflang alternates."""

    def query(sql: str, args: Sequence[object] = ()) -> list[tuple[object, ...]]:
        with closing(sqlite3.connect(db_path)) as db:  # a connection per call: the source runs in threads
            return db.execute(sql, args).fetchall()

    def fetch(after: tuple[int, str] | None, limit: int) -> list[tuple[tuple[int, str], UrlEntry]]:
        # two rows per article, keyed by (id, language); the cursor resumes after the last key served
        last_id, last_lang = after or (0, "")
        rows = query(
            "SELECT id, lang, slug, updated FROM articles, (SELECT 'de' AS lang UNION ALL SELECT 'en') "
            "WHERE (id, lang) > (?, ?) ORDER BY id, lang LIMIT ?",
            (last_id, last_lang, limit),
        )
        out = []
        for article_id, lang, slug, updated in rows:
            alternates = (
                Alternate("de", f"{base_url}/de/{slug}"),
                Alternate("en", f"{base_url}/en/{slug}"),
            )
            entry = UrlEntry(f"/{lang}/{slug}", parse_w3c(str(updated)), alternates=alternates)
            out.append(((int(str(article_id)), str(lang)), entry))
        return out

    def count() -> int:
        return 2 * int(str(query("SELECT count(*) FROM articles")[0][0]))

    def version() -> int:
        return int(str(query("SELECT n FROM articles_changes")[0][0]))

    return KeysetSource(fetch, count=count, version=version)


async def home(request: Request) -> HTMLResponse:
    return HTMLResponse('<a href="/en/article-1">An article</a> <a href="/sitemap.xml">Sitemap</a>')


async def article(request: Request) -> HTMLResponse:
    return HTMLResponse(f"<h1>{request.path_params['slug']}</h1>")


def create_app(db_path: str, base_url: str = BASE_URL, page_size: int = 50_000) -> Starlette:
    sitemaps = asgi_app(sitemap_source(db_path, base_url), base_url=base_url, page_size=page_size)
    return Starlette(
        routes=[
            Route("/", home),
            Route("/sitemap{rest:path}", sitemaps),  # /sitemap.xml, /sitemap-1.xml, ...
            Route("/{lang:str}/{slug:str}", article),
        ]
    )


if __name__ == "__main__":
    db_file = os.path.join(tempfile.mkdtemp(), "blog.db")
    create_demo_db(db_file)
    # 2,000 URLs a page only so that the demo's 5,000 URLs show an index with three pages
    uvicorn.run(create_app(db_file, page_size=2_000), host="127.0.0.1", port=8000)
