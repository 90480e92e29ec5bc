"""Serve sitemaps from a Flask app, built on each request from an SQLite table.

    python examples/web_flask.py            # then open http://127.0.0.1:8000/sitemap.xml

The sitemap app wraps Flask's WSGI app: `/sitemap.xml`, `/sitemap-1.xml`, ... are answered by sitemapkit,
every other path by Flask. `FunctionSource` pages through the table with two queries, `COUNT(*)` for the
index and `LIMIT ? OFFSET ?` for a page, so no request ever loads every row.

Triggers keep the time of the latest change to the table (an insert, an update or a delete) in one row;
`version()` returns it, so a crawler's conditional request (`If-None-Match` or `If-Modified-Since`) is
answered 304 without reading a page. `max(updated)` would not do: deleting a product does not move it.
"""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import tempfile
from collections.abc import Sequence
from contextlib import closing
from typing import Any

from flask import Flask

from sitemapkit import UrlEntry, parse_w3c
from sitemapkit.publisher.web import FunctionSource, wsgi_app

BASE_URL = "http://127.0.0.1:8000"  # in production: your public origin, e.g. "https://www.example.com"


# the time of the latest change to `products`, in UTC; it only moves forward
CHANGE_LOG = """
CREATE TABLE products_changed (at TEXT NOT NULL);
INSERT INTO products_changed VALUES (strftime('%Y-%m-%d %H:%M:%f', 'now'));
CREATE TRIGGER products_insert AFTER INSERT ON products BEGIN
    UPDATE products_changed SET at = max(at, strftime('%Y-%m-%d %H:%M:%f', 'now')); END;
CREATE TRIGGER products_update AFTER UPDATE ON products BEGIN
    UPDATE products_changed SET at = max(at, strftime('%Y-%m-%d %H:%M:%f', 'now')); END;
CREATE TRIGGER products_delete AFTER DELETE ON products BEGIN
    UPDATE products_changed SET at = max(at, strftime('%Y-%m-%d %H:%M:%f', 'now')); END;
"""


def create_demo_db(path: str, products: int = 2_500) -> None:
    """A `products` table such as a shop has: a slug, a last-updated time, a published flag; and the
    time of its latest change."""
    start = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE products (id INTEGER PRIMARY KEY, slug TEXT, updated TEXT, published INT)")
        db.executescript(CHANGE_LOG)
        db.executemany(
            "INSERT INTO products (slug, updated, published) VALUES (?, ?, ?)",
            (
                (f"product-{i}", (start + dt.timedelta(hours=7 * i)).isoformat(), int(i % 10 != 0))
                for i in range(products)
            ),
        )


def sitemap_source(db_path: str) -> FunctionSource:
    """The published products, oldest id first, as sitemap entries (a connection per call, so the source
    is safe to use from the server's threads)."""

    def query(sql: str, args: Sequence[object] = ()) -> list[tuple[object, ...]]:
        with closing(sqlite3.connect(db_path)) as db:
            return db.execute(sql, args).fetchall()

    def count() -> int:
        return int(str(query("SELECT count(*) FROM products WHERE published")[0][0]))

    def page(offset: int, limit: int) -> list[UrlEntry]:
        rows = query(
            "SELECT slug, updated FROM products WHERE published ORDER BY id LIMIT ? OFFSET ?", (limit, offset)
        )
        return [UrlEntry(f"/products/{slug}", parse_w3c(str(updated))) for slug, updated in rows]

    def newest(offset: int, limit: int) -> dt.datetime | dt.date | None:
        (value,) = query(
            "SELECT max(updated) FROM "
            "(SELECT updated FROM products WHERE published ORDER BY id LIMIT ? OFFSET ?)",
            (limit, offset),
        )[0]
        return parse_w3c(str(value)) if value else None

    def version() -> dt.datetime:
        # when a product was last added, removed, published, unpublished or edited (kept by triggers):
        # a datetime version gives Last-Modified as well as the ETag
        (at,) = query("SELECT at FROM products_changed")[0]
        return dt.datetime.fromisoformat(str(at)).replace(tzinfo=dt.UTC)

    return FunctionSource(count, page, newest=newest, version=version)


def create_app(db_path: str, base_url: str = BASE_URL, page_size: int = 50_000, **options: Any) -> Flask:
    """The shop, with its sitemaps; `options` are more `SitemapServer` options."""
    app = Flask(__name__)

    @app.get("/")
    def home() -> str:
        return '<a href="/products/product-1">A product</a> <a href="/sitemap.xml">Sitemap</a>'

    @app.get("/products/<slug>")
    def product(slug: str) -> str:
        return f"<h1>{slug}</h1>"

    app.wsgi_app = wsgi_app(  # type: ignore[method-assign]
        sitemap_source(db_path), base_url=base_url, page_size=page_size, fallback=app.wsgi_app, **options
    )
    return app


if __name__ == "__main__":
    db_file = os.path.join(tempfile.mkdtemp(), "shop.db")
    create_demo_db(db_file)
    # 1,000 URLs a page only so that the demo's 2,250 products show an index with three pages
    create_app(db_file, page_size=1_000).run(host="127.0.0.1", port=8000)
