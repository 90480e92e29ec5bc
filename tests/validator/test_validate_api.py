"""`validate` is the blocking form of `avalidate`: one declaration of the parameters."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest

from sitemapkit.core.errors import UsageError
from sitemapkit.core.model import UrlEntry
from sitemapkit.validator.run import avalidate, validate


def test_validate_takes_what_avalidate_takes(tmp_path: Path) -> None:
    assert inspect.signature(validate).parameters == inspect.signature(avalidate).parameters
    path = tmp_path / "s.txt"
    path.write_text("https://example.com/a\nhttps://example.com/b\n")
    seen: list[UrlEntry] = []
    report = validate(path, url="https://example.com/s.txt", on_entry=seen.append, user_named=False)
    assert report.ok and [e.loc for e in seen] == ["https://example.com/a", "https://example.com/b"]

    async def main() -> None:  # and, as before, not inside a running loop: the error names the async form
        with pytest.raises(UsageError, match="avalidate"):
            validate(path)
        assert (await avalidate(path, url="https://example.com/s.txt")).ok

    asyncio.run(main())


@pytest.mark.parametrize(
    "bad",
    [{"timeout": 0}, {"max_duration": -1.0}, {"keep": -1}, {"max_uncompressed": 0}],
    ids=lambda bad: next(iter(bad)),
)
def test_a_bad_value_is_a_usage_error(tmp_path: Path, bad: dict[str, object]) -> None:
    path = tmp_path / "s.txt"
    path.write_text("https://example.com/a\n")
    with pytest.raises(UsageError, match=next(iter(bad))):
        validate(path, **bad)  # type: ignore[arg-type]
