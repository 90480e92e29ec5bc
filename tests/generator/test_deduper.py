"""`Deduper.claim_prefix`, the columnar lane's deduplication: the keys from the first on up to the first one
seen already (in an earlier batch or earlier in this one) are recorded, the rest are not; held to a
key-by-key reference."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sitemapkit.generator.pipeline import Deduper

keys = st.lists(st.integers(0, 30), max_size=25)


def _reference(seen: set[int], batch: list[int]) -> int:
    fresh: set[int] = set()
    for key in batch:
        if key in seen or key in fresh:
            break
        fresh.add(key)
    seen |= fresh
    return len(fresh)


@given(batches=st.lists(keys, max_size=6))
def test_claim_prefix_records_up_to_the_first_key_seen_already(batches: list[list[int]]) -> None:
    deduper, seen = Deduper(), set()
    for batch in batches:
        assert deduper.claim_prefix(batch) == _reference(seen, batch)
        assert deduper._seen == seen


def test_claim_prefix_cases() -> None:
    deduper = Deduper()
    assert deduper.claim_prefix([1, 2, 3]) == 3
    assert deduper.claim_prefix([4, 5, 4, 6]) == 2  # a repeat within the batch
    assert deduper.claim_prefix([7, 8, 9, 9]) == 3  # at the end
    assert deduper.claim_prefix([10, 2, 11]) == 1  # seen in an earlier batch
    assert deduper.claim_prefix([12, 13, 12, 3]) == 2  # a repeat before a key seen earlier
    assert deduper.claim_prefix([3]) == 0
    assert deduper.claim_prefix([]) == 0
    assert len(deduper) == 11
