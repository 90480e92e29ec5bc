"""The public API is what `sitemapkit` exports (as httpx checks its own): every name in `__all__` resolves
and is documented, `__all__` is exactly what the package exports, every public error is a
`SitemapkitError`, and the async forms of crawl, audit and harvest run inside an event loop the caller
already has."""

from __future__ import annotations

import ast
import asyncio
import inspect
import subprocess
import sys
import threading
import types
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

import sitemapkit
from tests.support.localserver import LocalServer

HTML = "text/html; charset=utf-8"
ERRORS = (
    "ConfigError",
    "FetchError",
    "IndexNowError",
    "InputError",
    "InvalidDateError",
    "InvalidUrlError",
    "PublishError",
    "StrictModeError",
    "UsageError",
)


def _exported() -> set[str]:
    """The names `sitemapkit` makes public: those bound in the package (not its subpackages, not the
    `from __future__` and `TYPE_CHECKING` of its own code) and those it loads on first use."""
    bound = {
        name
        for name, value in vars(sitemapkit).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name not in ("annotations", "TYPE_CHECKING")
    }
    return bound | set(sitemapkit._LAZY)  # type: ignore[attr-defined]


def test_all_is_what_the_package_exports() -> None:
    assert sorted(sitemapkit.__all__) == sorted(set(sitemapkit.__all__)), "a name twice in __all__"
    assert set(sitemapkit.__all__) == _exported()


@pytest.mark.parametrize("name", sitemapkit.__all__)
def test_every_public_name_resolves_and_is_documented(name: str) -> None:
    value = getattr(sitemapkit, name)
    assert not isinstance(value, types.ModuleType), f"sitemapkit.{name} is a module"
    if inspect.isclass(value) or inspect.isfunction(value):
        doc = inspect.getdoc(value)
        assert doc and doc.strip(), f"sitemapkit.{name} has no docstring"
    else:  # a constant: its module documents it
        assert name == "CODES"


def test_the_entry_points_and_their_async_forms() -> None:
    from sitemapkit import FetchError, aaudit, abuild, acrawl, aharvest, audit, build, crawl, harvest

    assert issubclass(FetchError, sitemapkit.SitemapkitError)
    for sync, asynchronous in [(crawl, acrawl), (audit, aaudit), (harvest, aharvest), (build, abuild)]:
        assert inspect.isfunction(sync) and not inspect.iscoroutinefunction(sync), sync
        assert inspect.iscoroutinefunction(asynchronous), asynchronous
        assert inspect.signature(sync) == inspect.signature(asynchronous), sync.__name__


def test_the_functions_win_over_the_subpackages_of_the_same_name() -> None:
    """`crawl`, `audit` and `harvest` are also subpackages; importing those first (as the CLI does) must
    not turn `sitemapkit.crawl` into a module. Checked in a fresh interpreter, where nothing is loaded."""
    code = (
        "import sitemapkit.crawl.run, sitemapkit.audit.run, sitemapkit.harvest.run, inspect\n"
        "from sitemapkit import crawl, audit, harvest\n"
        "import sitemapkit\n"
        "for f in (crawl, audit, harvest, sitemapkit.crawl, sitemapkit.audit, sitemapkit.harvest):\n"
        "    assert inspect.isfunction(f), f\n"
        "from sitemapkit.crawl.run import CrawlSource\n"
        "from sitemapkit.audit import AuditReport\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("name", ERRORS)
def test_every_public_error_is_a_sitemapkit_error(name: str) -> None:
    error = getattr(sitemapkit, name)
    assert name in sitemapkit.__all__
    assert issubclass(error, sitemapkit.SitemapkitError)


def test_every_exception_exported_is_listed_here() -> None:
    exported = {
        name
        for name in sitemapkit.__all__
        if inspect.isclass(getattr(sitemapkit, name)) and issubclass(getattr(sitemapkit, name), BaseException)
    }
    assert exported == {*ERRORS, "SitemapkitError"}


@pytest.mark.parametrize(
    "call",
    [
        lambda: sitemapkit.crawl("http://127.0.0.1:9/", "out", concurrency=0),
        lambda: sitemapkit.crawl("ftp://example.com/", "out"),
        lambda: sitemapkit.audit("not a url at all"),
        lambda: sitemapkit.audit("https://example.com/", sample=0),
        lambda: sitemapkit.harvest(["https://example.com/"], "ds", engine="spark"),  # type: ignore[arg-type]
        lambda: list(sitemapkit.read("https://example.com/", concurrency=0)),
        lambda: list(sitemapkit.read("https://example.com/", max_depth=-1)),
    ],
)
def test_bad_arguments_raise_usage_error(call: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    if "harvest" in inspect.getsource(call):
        pytest.importorskip("pyarrow")
    with pytest.raises(sitemapkit.UsageError):
        call()
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


def _site(server: LocalServer) -> str:
    page = "<html><head><title>{0}</title></head><body><h1>{0}</h1>{1}<p>{2}</p></body></html>"
    words = " ".join(f"word{i}" for i in range(200))
    server.route("/", page.format("home", '<a href="/a">a</a>', words), content_type=HTML)
    server.route("/a", page.format("a", '<a href="/">home</a>', words + " a"), content_type=HTML)
    server.route(
        "/robots.txt",
        f"User-agent: *\nAllow: /\nSitemap: {server.url('/sitemap.xml')}\n",
        content_type="text/plain",
    )
    server.route(
        "/sitemap.xml",
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{server.url('/')}</loc></url><url><loc>{server.url('/a')}</loc></url></urlset>",
    )
    return server.url("/")


def test_the_async_forms_run_inside_a_running_loop(server: LocalServer, tmp_path: Path) -> None:
    """One `asyncio.run` awaits acrawl, aaudit and aharvest in turn (a sync form would fail there:
    `asyncio.run() cannot be called from a running event loop`), and the loop stays responsive."""
    pytest.importorskip("pyarrow")
    site = _site(server)

    async def main() -> tuple[Any, Any, Any, int]:
        ticks = 0

        async def heartbeat() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0)
                ticks += 1

        beat = asyncio.create_task(heartbeat())
        try:
            result = await sitemapkit.acrawl(site, tmp_path / "out", sitemaps=False, timeout=10, retries=0)
            report = await sitemapkit.aaudit(site, timeout=10, retries=0)
            summary = await sitemapkit.aharvest(
                [site], tmp_path / "ds", options=sitemapkit.HarvestOptions(allow_private=True, retries=0)
            )
        finally:
            beat.cancel()
        return result, report, summary, ticks

    result, report, summary, ticks = asyncio.run(main())
    assert result.urls == 2 and (tmp_path / "out" / "sitemap.xml").is_file()
    assert isinstance(report, sitemapkit.AuditReport)
    assert sorted(row.url for row in report.rows) == [site, server.url("/a")]
    assert summary["urls"] == 2 and summary["sites"] == 1
    assert ticks > 0  # other tasks ran while the fetching awaited


def _slow_site(server: LocalServer, release: threading.Event) -> None:
    """/ links /a and /slow, which answers once `release` is set."""

    def slow(_: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        release.wait(30)
        return 200, {"Content-Type": HTML}, b"<html><head><title>slow</title></head><body>slow</body></html>"

    page = "<html><head><title>{0}</title></head><body>{1}</body></html>"
    server.route("/", page.format("home", '<a href="/a">a</a> <a href="/slow">s</a>'), content_type=HTML)
    server.route("/a", page.format("a", "a"), content_type=HTML)
    server.handle("/slow", slow)


def _cancelled_acrawl(server: LocalServer, **kwargs: Any) -> Any:
    """`acrawl` of the slow site, its task cancelled once /slow was asked for: what awaiting it gave (the
    result, or the exception)."""
    release = threading.Event()
    _slow_site(server, release)

    async def main() -> Any:
        task = asyncio.create_task(
            sitemapkit.acrawl(server.url("/"), concurrency=1, sitemaps=False, **kwargs)
        )
        while "/slow" not in [r.path for r in server.requests]:
            await asyncio.sleep(0.01)
        task.cancel()
        try:
            return await task
        except asyncio.CancelledError as exc:
            return exc

    try:
        return asyncio.run(main())
    finally:
        release.set()


def test_cancelling_acrawl_publishes_nothing_and_a_resumed_crawl_finishes(
    server: LocalServer, tmp_path: Path
) -> None:
    """A cancelled `acrawl` raises CancelledError, publishes nothing, and keeps in its crawl file what it
    fetched."""
    out, db = tmp_path / "out", tmp_path / "crawl.db"
    assert isinstance(_cancelled_acrawl(server, out_dir=out, crawl_db=db), asyncio.CancelledError)
    assert not out.exists()
    before = [r.path for r in server.requests]
    result = sitemapkit.crawl(server.url("/"), out, sitemaps=False, crawl_db=db, resume=True)
    assert result.urls == 3
    again = [r.path for r in server.requests][len(before) :]
    assert "/" not in again and "/a" not in again  # fetched before the cancel: not fetched again


def test_cancelling_acrawl_with_publish_partial_publishes_what_was_listed(
    server: LocalServer, tmp_path: Path
) -> None:
    """With `publish_partial`, a cancelled `acrawl` is stopped as Ctrl-C stops `crawl` (whose event loop
    cancels it): what was listed is published and its result returned, marked incomplete."""
    out = tmp_path / "out"
    result = _cancelled_acrawl(server, out_dir=out, crawl_db=tmp_path / "crawl.db", publish_partial=True)
    assert isinstance(result, sitemapkit.PublishResult), result
    assert result.urls == 2 and result.sources["crawl"]["complete"] is False
    assert (out / "sitemap.xml").is_file()


def test_build_runs_a_config_file(tmp_path: Path) -> None:
    (tmp_path / "urls.txt").write_text("https://example.com/\nhttps://example.com/a\n")
    (tmp_path / "sitemapkit.toml").write_text(
        'base_url = "https://example.com/"\n[output]\ndir = "public"\n'
        '[[source]]\ntype = "list"\npath = "urls.txt"\n'
    )
    result = sitemapkit.build(tmp_path / "sitemapkit.toml")
    assert result.urls == 2
    again = asyncio.run(sitemapkit.abuild(tmp_path / "sitemapkit.toml"))
    assert again.urls == 2
    (tmp_path / "bad.toml").write_text('base_url = "https://example.com/"\n[outputt]\n')
    with pytest.raises(sitemapkit.ConfigError, match=r"bad\.toml"):
        sitemapkit.build(tmp_path / "bad.toml")


# Namespaces the docs teach beside the top level, each a package with its own documented `__all__`: serving
# sitemaps from a web app, and IndexNow submissions.
PUBLIC_NAMESPACES = ("sitemapkit.publisher.web", "sitemapkit.publisher.indexnow")


def _internal_paths(code: str) -> list[str]:
    """The imports and `sitemapkit.X` attributes of `code` that reach past the public API."""
    found = []
    for node in ast.walk(ast.parse(code)):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module == "sitemapkit.publisher":
            modules = [f"{node.module}.{alias.name}" for alias in node.names]  # its submodules
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module]
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "sitemapkit"
            and node.attr not in sitemapkit.__all__
        ):
            found.append(f"sitemapkit.{node.attr}")
        for module in modules:
            if module.split(".")[0] != "sitemapkit" or module == "sitemapkit":
                continue
            if module == "sitemapkit.publisher" or module.startswith(PUBLIC_NAMESPACES):
                continue
            found.append(module)
    return found


def test_the_docs_examples_use_only_public_paths() -> None:
    from tests.project.test_readme import BLOCKS

    internal = {where: paths for where, code in BLOCKS if (paths := _internal_paths(code))}
    assert internal == {}


def test_one_retries_default_in_every_wing() -> None:
    """`retries` means the same everywhere and has one default (it was 3 in read and fetch, 2 elsewhere)."""

    from sitemapkit.core.constants import DEFAULT_RETRIES
    from sitemapkit.harvest.options import HarvestOptions
    from sitemapkit.reader.fetch import FetchOptions
    from sitemapkit.reader.walk import ReadOptions

    defaults = {
        "FetchOptions": FetchOptions().retries,
        "ReadOptions": ReadOptions().retries,
        "read": inspect.signature(sitemapkit.read).parameters["retries"].default,
        "NetworkOptions": sitemapkit.NetworkOptions().retries,
        "HarvestOptions": HarvestOptions().retries,
    }
    assert defaults == dict.fromkeys(defaults, DEFAULT_RETRIES)
