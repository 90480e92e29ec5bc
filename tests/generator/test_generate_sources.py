"""`generate` from a site folder and access logs, with the state store keeping lastmod honest."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sitemapkit.core.errors import PublishError, UsageError
from sitemapkit.generator.run import FolderSource, LogSource, generate
from sitemapkit.reader.parser import parse_file
from tests.support.helpers import published

BASE = "https://example.com/"


def page(title: str, body: str = "", head: str = "") -> str:
    return f"<!doctype html><html><head><title>{title}</title>{head}</head><body>{body}</body></html>"


def make_site(root: Path) -> None:
    (root / "docs").mkdir(parents=True)
    (root / "index.html").write_text(page("Home", "<p>Welcome</p><img src='/logo.png'>"))
    (root / "docs" / "index.html").write_text(
        page(
            "Docs",
            "<p>Read me</p>",
            '<link rel="alternate" hreflang="en" href="/docs/">'
            '<link rel="alternate" hreflang="de" href="/de/docs/">',
        )
    )
    (root / "secret.html").write_text(page("Draft", head='<meta name="robots" content="noindex">'))
    (root / "404.html").write_text(page("Not found"))
    (root / "style.css").write_text("body{}")


def lastmods(path: Path) -> dict[str, dt.date | None]:
    return {e.loc: e.lastmod for e in parse_file(path)}  # type: ignore[misc]


def test_folder_pages_become_urls_and_skips_are_explained(tmp_path: Path) -> None:
    make_site(tmp_path / "site")
    skips: list[object] = []
    result = generate(
        [], tmp_path / "out", BASE, folder=FolderSource(tmp_path / "site", images=True), explain=skips.append
    )
    entries = list(parse_file(tmp_path / "out" / "sitemap.xml"))
    assert sorted(e.loc for e in entries) == [BASE, BASE + "docs/"]
    assert all(
        e.lastmod is None for e in entries
    )  # no store, no mtime/git: no lastmod rather than a wrong one
    assert result.sources is not None and result.sources["folder"]["pages"] == 2
    assert sorted(result.sources["folder"]["skipped"]) == sorted({s.reason for s in skips})
    assert len(skips) == 2


def test_state_store_keeps_lastmod_until_content_changes(tmp_path: Path) -> None:
    site, out, state = tmp_path / "site", tmp_path / "out", tmp_path / ".sitemapkit" / "state.db"
    make_site(site)
    first = generate([], out, BASE, folder=FolderSource(site), state=state)
    assert first.sources is not None and first.sources["state"]["added"] == 2
    before = lastmods(out / "sitemap.xml")
    assert all(v is None for v in before.values())  # the first run has no history: no lastmod invented
    time.sleep(1.1)  # a later second, so a new lastmod would differ
    # a rebuild that only touches the files changes nothing
    for p in site.rglob("*.html"):
        os.utime(p)
    generate([], out, BASE, folder=FolderSource(site), state=state)
    assert lastmods(out / "sitemap.xml") == before
    # a real edit moves that page's lastmod, and only that one
    (site / "docs" / "index.html").write_text(page("Docs", "<p>Read me, now with more</p>"))
    third = generate([], out, BASE, folder=FolderSource(site), state=state)
    after = lastmods(out / "sitemap.xml")
    assert after[BASE] == before[BASE] and after[BASE + "docs/"] is not None
    assert third.sources is not None and third.sources["state"]["changed"] == 1


def test_a_failed_publish_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    site, out, state = tmp_path / "site", tmp_path / "out", tmp_path / "state.db"
    make_site(site)
    generate([], out, BASE, folder=FolderSource(site), state=state)
    (site / "new.html").write_text(page("New"))
    (out / "sitemap-1.xml").write_text("a file sitemapkit did not write")  # makes the next publish fail
    with pytest.raises(PublishError):
        generate([], out, BASE, folder=FolderSource(site), state=state, max_urls=2)
    from sitemapkit.generator.state import StateStore

    with StateStore(state) as store:
        assert len(store.runs()) == 1 and BASE + "new.html" not in {c.url for c in store.diff().added}


def test_mtime_lastmod_without_a_store(tmp_path: Path) -> None:
    make_site(tmp_path / "site")
    stamp = dt.datetime(2024, 3, 1, 12, 0, tzinfo=dt.UTC).timestamp()
    for p in (tmp_path / "site").rglob("*.html"):
        os.utime(p, (stamp, stamp))
    generate([], tmp_path / "out", BASE, folder=FolderSource(tmp_path / "site"), lastmod="mtime")
    assert set(lastmods(tmp_path / "out" / "sitemap.xml").values()) == {
        dt.datetime(2024, 3, 1, 12, tzinfo=dt.UTC)
    }


def test_access_logs_with_priority_from_hits(tmp_path: Path) -> None:
    line = '127.0.0.1 - - [10/Oct/2026:13:55:36 +0000] "GET {} HTTP/1.1" {} 2326 "-" "Mozilla/5.0"\n'
    log = tmp_path / "access.log.gz"
    log.write_bytes(
        gzip.compress(
            (
                "".join(line.format("/popular", 200) for _ in range(9))
                + line.format("/rare", 200)
                + line.format("/gone", 404)
                + line.format("/style.css", 200)
                + "junk\n"
            ).encode()
        )
    )
    result = generate([], tmp_path / "out", BASE, logs=LogSource((str(log),), priority_from_hits=True))
    entries = {e.loc: e.priority for e in parse_file(tmp_path / "out" / "sitemap.xml")}  # type: ignore[union-attr]
    assert entries[BASE + "popular"] == 1.0 and 0.0 < (entries[BASE + "rare"] or 0) < 1.0
    assert set(entries) == {BASE + "popular", BASE + "rare"}
    assert result.sources is not None and result.sources["logs"]["bad_lines"] == 1


def test_lists_with_a_store_record_urls_and_keep_their_lastmod(tmp_path: Path) -> None:
    src, state = tmp_path / "urls.txt", tmp_path / "state.db"
    src.write_text(f"{BASE}a\t2024-01-01\n{BASE}b\n")
    generate([str(src)], tmp_path / "out", BASE, state=state)
    src.write_text(f"{BASE}a\t2024-02-01\n")
    result = generate([str(src)], tmp_path / "out", BASE, state=state)
    assert lastmods(tmp_path / "out" / "sitemap.xml") == {BASE + "a": dt.date(2024, 2, 1)}
    assert result.sources is not None and result.sources["state"]["removed"] == 1


def test_needs_a_source_and_content_mode_needs_a_store(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        generate([], tmp_path / "out", BASE)
    with pytest.raises(UsageError, match="state"):
        generate([], tmp_path / "out", BASE, folder=FolderSource(tmp_path), lastmod="content")


def test_cli_dir_state_explain_and_json(tmp_path: Path) -> None:
    make_site(tmp_path / "site")
    args = [
        sys.executable,
        "-m",
        "sitemapkit",
        "generate",
        "--dir",
        str(tmp_path / "site"),
        "--base-url",
        BASE,
        "--out",
        str(tmp_path / "out"),
        "--state",
        str(tmp_path / "s.db"),
        "--explain",
    ]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "secret.html: skipped" in proc.stderr and "404.html: skipped" in proc.stderr
    assert "site folder: 2 pages listed" in proc.stdout and "state: 2 added" in proc.stdout
    proc = subprocess.run([*args[:-1], "--json"], capture_output=True, text=True, timeout=120)
    data = json.loads(proc.stdout)
    assert data["sources"]["state"]["unchanged"] == 2
    assert published(tmp_path / "out") == ["sitemap.xml"]
    proc = subprocess.run(
        [sys.executable, "-m", "sitemapkit", "generate", "--base-url", BASE, "--out", str(tmp_path / "o2")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("where", ["finalize", "commit"])
def test_ctrl_c_while_the_state_finishes_leaves_the_folder_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    # `--state` finalises its run before the writer's close, and commits after it: an interrupt in
    # either left the writer's temporary files and lock behind (hostile review)
    from sitemapkit.generator.state import StateRun

    urls = tmp_path / "urls.txt"
    urls.write_text("".join(f"{BASE}p/{i}\n" for i in range(100)))
    out = tmp_path / "out"
    state = tmp_path / "state.db"
    first = generate([str(urls)], out, BASE, state=state)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real = getattr(StateRun, where)

    def interrupted(self: StateRun, *args: object) -> object:
        real(self, *args)
        raise KeyboardInterrupt

    monkeypatch.setattr(StateRun, where, interrupted)
    urls.write_text("".join(f"{BASE}q/{i}\n" for i in range(100)))
    with pytest.raises(KeyboardInterrupt):
        generate([str(urls)], out, BASE, state=state)
    left = {p.name: p.read_bytes() for p in out.iterdir()}
    if where == "finalize":
        assert left == before  # nothing published, nothing left behind
    else:  # the commit comes after the publish: the new set, and nothing else
        assert set(left) == set(before) and left != before
    assert first.files
