"""`sitemapkit diff`: the changes of the last build, as text or JSON; exit codes."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sitemapkit.cli import main
from sitemapkit.generator.state import StateStore

U = "https://example.com/"


def _run(db: Path, now: dt.datetime, pages: dict[str, str]) -> None:
    with StateStore(db) as store, store.run(now=now) as run:
        for url, digest in pages.items():
            run.observe(U + url, content_hash=digest)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "state.db"
    _run(path, dt.datetime(2024, 1, 1, tzinfo=dt.UTC), {"a": "1", "b": "1", "c": "1"})
    _run(path, dt.datetime(2024, 2, 1, tzinfo=dt.UTC), {"a": "2", "b": "1", "d": "1"})
    return path


def test_text(db: Path) -> None:
    result = CliRunner().invoke(main, ["diff", "--state", str(db)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"+ {U}d\t2024-02-01T00:00:00+00:00",
        f"~ {U}a\t2024-02-01T00:00:00+00:00",
        f"- {U}c\t-",  # the first run has no history: it gave no lastmod
        "1 added, 1 changed, 1 removed in run 2 (2024-02-01T00:00:00+00:00) since run 1",
    ]


def test_json_and_since(db: Path) -> None:
    result = CliRunner().invoke(main, ["diff", "--state", str(db), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["since_run"], data["to_run"]) == (1, 2)
    assert [c["url"] for c in data["added"]] == [U + "d"]
    assert data["changed"][0] == {
        "kind": "changed",
        "url": U + "a",
        "lastmod": "2024-02-01T00:00:00+00:00",
        "when": "2024-02-01T00:00:00+00:00",
    }
    assert data["removed"][0]["when"] == "2024-02-01T00:00:00+00:00"
    everything = json.loads(
        CliRunner().invoke(main, ["diff", "--state", str(db), "--since", "0", "--format", "json"]).output
    )
    assert [c["url"] for c in everything["added"]] == [U + "a", U + "b", U + "d"]


def test_unchanged_rebuild_shows_nothing(db: Path) -> None:
    _run(db, dt.datetime(2024, 3, 1, tzinfo=dt.UTC), {"a": "2", "b": "1", "d": "1"})
    result = CliRunner().invoke(main, ["diff", "--state", str(db)])
    assert result.exit_code == 0
    assert result.output.startswith("0 added, 0 changed, 0 removed in run 3")


def test_default_state_path_and_empty_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    StateStore(tmp_path / ".sitemapkit" / "state.db").close()
    result = CliRunner().invoke(main, ["diff"])
    assert result.exit_code == 0
    assert "no build recorded" in result.output


def test_missing_and_corrupt_state_exit_1(tmp_path: Path) -> None:
    missing = tmp_path / "nope.db"
    result = CliRunner().invoke(main, ["diff", "--state", str(missing)])
    assert result.exit_code == 1
    assert f"sitemapkit diff: {missing}: no state database here" in result.output
    assert not missing.exists()
    corrupt = tmp_path / "bad.db"
    corrupt.write_bytes(b"garbage" * 1000)
    result = CliRunner().invoke(main, ["diff", "--state", str(corrupt)])
    assert result.exit_code == 1
    assert "bad.db: not a readable sitemapkit state database" in result.output


def test_usage_errors_exit_2(db: Path) -> None:
    assert CliRunner().invoke(main, ["diff", "--format", "xml"]).exit_code == 2
    assert CliRunner().invoke(main, ["diff", "--bogus"]).exit_code == 2
    assert CliRunner().invoke(main, ["diff", "--since", "-1"]).exit_code == 2
