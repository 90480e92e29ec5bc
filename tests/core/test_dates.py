from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemapkit.core.dates import format_w3c, is_naive, parse_w3c, schema_accepts, sort_key
from sitemapkit.core.errors import InvalidDateError

UTC = dt.UTC


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1997", dt.date(1997, 1, 1)),
        ("1997-07", dt.date(1997, 7, 1)),
        ("1997-07-16", dt.date(1997, 7, 16)),
        (
            "1997-07-16T19:20+01:00",
            dt.datetime(1997, 7, 16, 19, 20, tzinfo=dt.timezone(dt.timedelta(hours=1))),
        ),
        (
            "1997-07-16T19:20:30+01:00",
            dt.datetime(1997, 7, 16, 19, 20, 30, tzinfo=dt.timezone(dt.timedelta(hours=1))),
        ),
        (
            "1997-07-16T19:20:30.45+01:00",
            dt.datetime(1997, 7, 16, 19, 20, 30, 450000, tzinfo=dt.timezone(dt.timedelta(hours=1))),
        ),
        ("2004-12-23T18:00:15Z", dt.datetime(2004, 12, 23, 18, 0, 15, tzinfo=UTC)),
        (
            "2004-12-23T18:00:15-05:30",
            dt.datetime(2004, 12, 23, 18, 0, 15, tzinfo=dt.timezone(-dt.timedelta(hours=5, minutes=30))),
        ),
        ("  2005-01-01 ", dt.date(2005, 1, 1)),
    ],
)
def test_parses_every_w3c_form(text: str, expected: dt.date) -> None:
    assert parse_w3c(text) == expected
    assert type(parse_w3c(text)) is type(expected)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "2024-13-01",
        "2024-02-30",
        "2024-01-01T25:00:00Z",
        "2024-01-01T10:00:00",
        "2024-1-5",
        "2024-01-01 10:00:00Z",
        "2024-01-01T10:00:00Z 2024-01-02",
        "yesterday",
        "2024-01-01T10:00:00+25:00",
    ],
)
def test_rejects_what_is_not_w3c(text: str) -> None:
    with pytest.raises(InvalidDateError):
        parse_w3c(text)


def test_naive_time_only_when_allowed() -> None:
    value = parse_w3c("2024-01-01T10:00:00", allow_naive=True)
    assert is_naive(value)
    assert format_w3c(value) == "2024-01-01T10:00:00+00:00"


@pytest.mark.parametrize(
    ("text", "accepted"),
    [
        ("2005-01-01", True),
        ("2004-12-23T18:00:15+00:00", True),
        ("2004-12-23T18:00:15.5Z", True),
        ("2005", False),
        ("2005-01", False),
        ("2004-12-23T18:00+00:00", False),
        ("2004-12-23T18:00:15", False),
        ("2024-02-30", False),
    ],
)
def test_schema_accepts_only_date_or_full_datetime(text: str, accepted: bool) -> None:
    assert schema_accepts(text) is accepted


def test_format_keeps_offset_and_fraction() -> None:
    tz = dt.timezone(dt.timedelta(hours=2))
    assert format_w3c(dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=tz)) == "2024-05-01T12:00:00+02:00"
    assert (
        format_w3c(dt.datetime(2024, 5, 1, 12, 0, 0, 500, tzinfo=UTC)) == "2024-05-01T12:00:00.000500+00:00"
    )
    assert format_w3c(dt.date(2024, 5, 1)) == "2024-05-01"


def test_sort_key_orders_dates_and_times_together() -> None:
    values = [dt.datetime(2024, 1, 1, 23, tzinfo=dt.timezone(-dt.timedelta(hours=5))), dt.date(2024, 1, 2)]
    assert max(values, key=sort_key) == values[0]  # 2024-01-02T04:00Z is after 2024-01-02T00:00Z


datetimes = st.datetimes(
    min_value=dt.datetime(1, 1, 2),
    max_value=dt.datetime(9999, 12, 30),
    timezones=st.sampled_from(
        [UTC, dt.timezone(dt.timedelta(hours=5, minutes=45)), dt.timezone(-dt.timedelta(hours=8))]
    ),
)


@given(st.one_of(st.dates(min_value=dt.date(1000, 1, 1)), datetimes))
def test_format_then_parse_round_trips(value: dt.date) -> None:
    text = format_w3c(value)
    assert schema_accepts(text)
    back = parse_w3c(text)
    assert back == value
    assert format_w3c(back) == text


@pytest.mark.parametrize("text", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:00:00-05:00"])
def test_instants_outside_the_representable_range_are_invalid_not_a_crash(text: str) -> None:
    with pytest.raises(InvalidDateError):
        parse_w3c(text)


def test_sort_key_clamps_at_the_ends_of_time() -> None:
    early = dt.datetime(1, 1, 1, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert sort_key(early) == dt.datetime.min.replace(tzinfo=UTC)


_digit = st.sampled_from("0123456789")


@st.composite
def _canonical_shaped(draw: st.DrawFn) -> str:
    """Strings in the two shapes the fast path takes, with any digits (most are not valid dates)."""
    d = [draw(_digit) for _ in range(16)]
    date = f"{d[0]}{d[1]}{d[2]}{d[3]}-{d[4]}{d[5]}-{d[6]}{d[7]}"
    if draw(st.booleans()):
        return date
    sign = draw(st.sampled_from("+-"))
    return (
        f"{date}T{d[8]}{d[9]}:{d[10]}{d[11]}:{d[12]}{d[13]}{sign}{d[14]}{d[15]}:{draw(_digit)}{draw(_digit)}"
    )


@given(st.one_of(_canonical_shaped(), datetimes.map(format_w3c), st.dates().map(format_w3c)))
def test_the_fast_path_parses_as_the_regular_expression_does(text: str) -> None:
    from sitemapkit.core.dates import _parse

    def outcome(parse: Callable[[], object]) -> object:
        try:
            value = parse()
        except InvalidDateError:
            return "invalid"
        return (type(value), value, getattr(value, "utcoffset", lambda: None)())

    assert outcome(lambda: parse_w3c(text)) == outcome(lambda: _parse(text, text, False))


def _two(low: int, high: int, *edges: str) -> st.SearchStrategy[str]:
    """Two digits: from `low` to `high`, or (as often as any one of those) one of `edges`."""
    return st.sampled_from([f"{i:02d}" for i in range(low, high + 1)] + list(edges))


@st.composite
def _time_shaped(draw: st.DrawFn) -> str:
    """Date-times in and around the forms the fast path takes: seconds or not, fractions of 0 to 8 digits,
    `Z`, `z` or an offset (up to 20 hours), `T` or `t`, digits mostly in range (some are not valid)."""
    year = draw(st.sampled_from(["2025", "0001", "9999", "1999"]))
    text = f"{year}-{draw(_two(1, 12, '00', '13'))}-{draw(_two(1, 28, '29', '31', '32'))}"
    text += draw(st.sampled_from("TTt")) + f"{draw(_two(0, 23, '24'))}:{draw(_two(0, 59, '60'))}"
    if draw(st.booleans()):
        text += f":{draw(_two(0, 59, '60', '61'))}"
        if draw(st.booleans()):
            text += "." + draw(st.text(alphabet="0123456789", max_size=8))
    zone = draw(st.sampled_from(["Z", "z", "", "+", "-", "+00:00", "-00:00"]))
    if zone in ("+", "-"):
        zone += f"{draw(_two(0, 15, '20', '23', '24'))}:{draw(_two(0, 59, '60', '99'))}"
    return text + zone


@settings(max_examples=1000)
@given(_time_shaped())
def test_the_time_fast_path_parses_as_the_regular_expression_does(text: str) -> None:
    from sitemapkit.core.dates import _canonical, _parse

    def outcome(parse: Callable[[], object]) -> object:
        try:
            value = parse()
        except InvalidDateError:
            return "invalid"
        assert isinstance(value, dt.date)
        return (type(value), value, format_w3c(value), getattr(value, "utcoffset", lambda: None)())

    fast = _canonical(text)
    if fast is not None:
        assert outcome(lambda: fast) == outcome(lambda: _parse(text, text, False))
    assert outcome(lambda: parse_w3c(text)) == outcome(lambda: _parse(text, text, False))
    assert outcome(lambda: parse_w3c(text)) == outcome(lambda: _parse(text, text, False))  # once cached
