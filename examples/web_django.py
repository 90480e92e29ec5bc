"""Serve sitemaps from a Django project: a small view helper over `SitemapServer`, fed by a QuerySet.

    python examples/web_django.py           # then open http://127.0.0.1:8000/sitemap.xml

A QuerySet is a count-and-slice source as it is: `count()` runs `SELECT COUNT(*)`, a slice `LIMIT ...
OFFSET ...`, so no request loads every row. This single-file project lists one page per user of
`django.contrib.auth` (think author profiles); in your project use your own model, ordered by a unique key:

    CountSliceSource(Article.objects.filter(published=True).order_by("id"),
                     to_entry=lambda a: UrlEntry(a.get_absolute_url(), a.updated))

Django could instead mount the WSGI app around its own (`wsgi_app(source, fallback=application)`); the
view keeps routing in `urlpatterns` and takes the host from `request.get_host()`, which Django checks
against `ALLOWED_HOSTS`.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import django
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import re_path

from sitemapkit import UrlEntry
from sitemapkit.publisher.web import CountSliceSource, SitemapServer

BASE_URL = "http://127.0.0.1:8000"  # in production: your public origin, e.g. "https://www.example.com"
urlpatterns: list[Any] = []


def sitemap_view(server: SitemapServer) -> Callable[[HttpRequest], HttpResponse]:
    """A Django view answering the sitemap routes of `server` (route it with
    `re_path(r"^sitemap(-[0-9]+)?\\.xml$", view)`)."""

    def view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        answer = server.respond(
            request.method or "GET",
            request.path_info,
            {name.lower(): value for name, value in request.headers.items()},
            scheme=request.scheme or "http",
            host=request.get_host(),
            root_path=request.META.get("SCRIPT_NAME", ""),
        )
        response = HttpResponse(answer.body, status=answer.status)
        for name, value in answer.headers:
            response[name] = value
        return response

    return view


def configure(db_path: str, base_url: str = BASE_URL, page_size: int = 50_000) -> None:
    """Settings and URLs of this one-file project (Django allows settings once per process)."""
    settings.configure(
        DEBUG=False,
        ALLOWED_HOSTS=["127.0.0.1", "localhost"],
        ROOT_URLCONF=__name__,
        INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth"],
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": db_path}},
        USE_TZ=True,
    )
    django.setup()
    from django.contrib.auth.models import User

    authors = User.objects.filter(is_active=True).order_by("id")
    source = CountSliceSource(authors, to_entry=lambda u: UrlEntry(f"/authors/{u.username}/", u.date_joined))
    server = SitemapServer(source, base_url=base_url, page_size=page_size)
    urlpatterns.append(re_path(r"^sitemap(-[0-9]+)?\.xml$", sitemap_view(server)))


def create_demo_data(authors: int = 2_500) -> None:
    from django.contrib.auth.models import User
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    start = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    User.objects.bulk_create(
        User(username=f"author{i}", date_joined=start + dt.timedelta(hours=5 * i), is_active=i % 9 != 0)
        for i in range(authors)
    )


if __name__ == "__main__":
    configure(os.path.join(tempfile.mkdtemp(), "site.db"), page_size=1_000)
    create_demo_data()
    from django.core.management import execute_from_command_line

    execute_from_command_line([sys.argv[0], "runserver", "127.0.0.1:8000", "--noreload"])
