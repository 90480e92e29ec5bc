"""`read` and `aread` share one declaration of their parameters; `options=` takes them as a `ReadOptions`."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest

from sitemapkit.core.errors import UsageError
from sitemapkit.reader.walk import AsyncReader, Reader, ReadOptions, aread, read

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def tree(tmp_path: Path) -> Path:
    (tmp_path / "a.xml").write_text(
        f'<urlset xmlns="{NS}"><url><loc>https://example.com/a</loc></url></urlset>'
    )
    index = tmp_path / "index.xml"
    index.write_text(
        f'<sitemapindex xmlns="{NS}"><sitemap><loc>https://example.com/a.xml</loc></sitemap></sitemapindex>'
    )
    return index


def test_aread_has_reads_parameters() -> None:
    ours, theirs = inspect.signature(read), inspect.signature(aread)
    assert list(theirs.parameters.values()) == list(ours.parameters.values())
    assert "options" in ours.parameters and "max_depth" in ours.parameters
    assert theirs.return_annotation == "AsyncReader" and aread.__name__ == "aread"


def test_options_object_is_taken_by_both_forms(tmp_path: Path) -> None:
    index = tree(tmp_path)
    assert [e.loc for e in read(index)] == ["https://example.com/a"]
    shallow = read(index, options=ReadOptions(max_depth=0))
    assert isinstance(shallow, Reader) and list(shallow) == []
    assert [d.code for d in shallow.diagnostics] == ["too-deep"]

    async def main() -> list[str]:
        reader = aread(index, options=ReadOptions(max_depth=0))
        assert isinstance(reader, AsyncReader)
        return [e.loc async for e in reader]

    assert asyncio.run(main()) == []
    assert [e.loc for e in read(index, max_depth=0)] == []


def test_options_and_keyword_options_are_not_both_given(tmp_path: Path) -> None:
    index = tree(tmp_path)
    with pytest.raises(UsageError, match="max_depth"):
        read(index, options=ReadOptions(), max_depth=2)
    with pytest.raises(UsageError, match="ReadOptions"):
        aread(index, options={"max_depth": 2})  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="concurrency"):
        aread(index, concurrency=0)
    with pytest.raises(TypeError):
        read(index, max_depht=2)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "bad",
    [
        {"max_download": -1},
        {"max_uncompressed": 0},
        {"retries": -1},
        {"timeout": -1},
        {"connect_timeout": 0},
        {"max_duration": -2.0},
        {"max_depth": 1.5},
        {"max_sitemaps": 0},
    ],
    ids=lambda bad: next(iter(bad)),
)
def test_a_bad_value_is_a_usage_error_whichever_way_it_is_given(bad: dict[str, object]) -> None:
    """Raised when the reader is made, before anything is fetched (before, most were taken silently)."""
    with pytest.raises(UsageError, match=next(iter(bad))):
        read("https://127.0.0.1:9/sitemap.xml", **bad)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=next(iter(bad))):
        ReadOptions(**bad)  # type: ignore[arg-type]
