"""The access-log source: formats, gzip, filters, bad lines, hit counts and priorities."""

from __future__ import annotations

import datetime as dt
import gzip
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitemapkit.core.diagnostics import DiagnosticLog
from sitemapkit.core.errors import InputError
from sitemapkit.generator.sources.logs import (
    LogSummary,
    parse_log_line,
    parse_log_time,
    priority_from_hits,
    read_logs,
)

BASE = "https://example.com/"
T = "10/Oct/2026:13:55:36 +0000"


def common(target: str, status: int = 200, method: str = "GET", time: str = T) -> str:
    return f'127.0.0.1 - frank [{time}] "{method} {target} HTTP/1.1" {status} 2326'


def combined(target: str, status: int = 200, method: str = "GET", time: str = T) -> str:
    return common(target, status, method, time) + ' "https://ref.example/" "Mozilla/5.0 (X11; \\"q\\")"'


def vhost(target: str, status: int = 200, method: str = "GET", time: str = T) -> str:
    return "example.com:443 " + combined(target, status, method, time)


def run(paths: list[Path], base: str = BASE, **kw: object) -> tuple[LogSummary, DiagnosticLog]:
    log = DiagnosticLog()
    return read_logs(paths, base, report=log, **kw), log  # type: ignore[arg-type]


def hits(summary: LogSummary) -> dict[str, int]:
    return {p.url: p.hits for p in summary.pages}


def test_parse_each_format() -> None:
    c = parse_log_line(common("/a"))
    assert c is not None and c.format == "common" and c.status == 200 and c.size == 2326
    assert c.request == "GET /a HTTP/1.1" and c.referer is None and c.vhost is None
    b = parse_log_line(combined("/a"))
    assert b is not None and b.format == "combined" and b.agent == 'Mozilla/5.0 (X11; "q")'
    v = parse_log_line(vhost("/a"))
    assert (
        v is not None
        and v.format == "vhost_combined"
        and v.vhost == "example.com"
        and v.client == "127.0.0.1"
    )
    nginx_extra = combined("/a") + ' "-" rt=0.012'
    assert parse_log_line(nginx_extra) is not None
    assert parse_log_line("garbage") is None
    assert parse_log_line(common("/a").replace("2326", "-")) is not None


def test_parse_log_time() -> None:
    assert parse_log_time("10/Oct/2000:13:55:36 -0700") == dt.datetime(
        2000, 10, 10, 13, 55, 36, tzinfo=dt.timezone(dt.timedelta(hours=-7))
    )
    assert parse_log_time("10/Foo/2000:13:55:36 -0700") is None
    assert parse_log_time("31/Feb/2000:13:55:36 +0000") is None


def test_mixed_format_gzip_logs_with_junk(tmp_path: Path) -> None:
    a = tmp_path / "access.log"
    a.write_text(
        "\n".join(
            [
                common("/a"),
                common("/b", time="10/Oct/2026:14:00:00 +0200"),
                "",
                "this is junk",
                combined("/a"),  # a combined line in a common file: still read
            ]
        )
        + "\n"
    )
    b = tmp_path / "access.log.1"  # gzip without a .gz name: recognised by the magic bytes
    with gzip.open(b, "wt") as f:
        for i in range(3):
            f.write(combined("/a", time=f"11/Oct/2026:0{i}:00:00 +0000") + "\n")
        f.write("\x00\x01binary junk\n")
    c = tmp_path / "other_vhosts_access.log.gz"
    with gzip.open(c, "wt") as f:
        f.write(vhost("/c") + "\r\n" + vhost("/a") + "\r\n")
    summary, log = run([a, b, c])
    assert hits(summary) == {
        "https://example.com/a": 6,
        "https://example.com/b": 1,
        "https://example.com/c": 1,
    }
    assert summary.stats.formats == {str(a): "common", str(b): "combined", str(c): "vhost_combined"}
    assert summary.stats.bad == 2 and summary.stats.files == 3 and summary.stats.kept == 8
    assert [(d.code, d.source, d.line) for d in log] == [("bad-line", str(a), 4), ("bad-line", str(b), 4)]
    last = {p.url: p.last_seen for p in summary.pages}
    assert last["https://example.com/a"] == dt.datetime(2026, 10, 11, 2, 0, tzinfo=dt.UTC)
    assert last["https://example.com/b"] == dt.datetime(2026, 10, 10, 12, 0, tzinfo=dt.UTC)
    assert summary.max_hits == 6


def test_methods_statuses_assets_and_scope(tmp_path: Path) -> None:
    lines = [
        combined("/docs/ok"),
        combined("/docs/head", method="HEAD"),
        combined("/docs/notmod", status=304),
        combined("/docs/post", method="POST"),
        combined("/docs/missing", status=404),
        combined("/docs/moved", status=301),
        combined("/docs/err", status=500),
        combined("/docs/style.css"),
        combined("/docs/img/logo.PNG?v=2"),
        combined("/docs/font.woff2"),
        combined("/docs/paper.pdf"),
        combined("/other/page"),
        combined("https://example.com/docs/absolute"),
        combined("https://evil.org/docs/x"),
        combined("*", method="OPTIONS"),
        "1.2.3.4 - - [" + T + '] "-" 400 0 "-" "-"',
        "1.2.3.4 - - [" + T + '] "\\x16\\x03\\x01" 200 0 "-" "-"',
    ]
    path = tmp_path / "log"
    path.write_text("\n".join(lines) + "\n")
    summary, log = run([path], "https://example.com/docs/")
    assert sorted(hits(summary)) == [
        "https://example.com/docs/absolute",
        "https://example.com/docs/head",
        "https://example.com/docs/notmod",
        "https://example.com/docs/ok",
        "https://example.com/docs/paper.pdf",
    ]
    d = summary.stats.dropped
    assert d["method"] == 4 and d["status"] == 3 and d["asset"] == 3 and d["out-of-scope"] == 2
    assert d["bad-request"] == 0
    assert not list(log)


def test_percent_encoding_preserved_and_escapes(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_bytes(
        (combined("/caf%c3%a9?q=a%20b") + "\n" + combined("/\\xc3\\xbcber") + "\n").encode()
        + combined("/raw-ü").encode("utf-8")
        + b"\n"
        + combined("/raw-latin-").encode().replace(b"latin-", b"latin-\xfc")
        + b"\n"
    )
    summary, _ = run([path])
    assert sorted(hits(summary)) == [
        "https://example.com/%C3%BCber",
        "https://example.com/caf%C3%A9?q=a%20b",
        "https://example.com/raw-%C3%BC",
        "https://example.com/raw-latin-%FC",
    ]


def test_min_hits_strip_query_exclude(tmp_path: Path) -> None:
    path = tmp_path / "log"
    lines = [combined("/a?x=1"), combined("/a?x=2"), combined("/a"), combined("/b"), combined("/admin/x")]
    lines += [combined("/admin/x"), combined("/p?session=9"), combined("/p?session=9"), combined("/tmp-1")]
    lines += [combined("/tmp-1")]
    path.write_text("\n".join(lines) + "\n")
    summary, _ = run([path])
    assert hits(summary)["https://example.com/a?x=1"] == 1
    summary, _ = run([path], strip_query=True, min_hits=2, exclude=["/admin/*", "re:^/tmp-\\d+$"])
    assert hits(summary) == {"https://example.com/a": 3, "https://example.com/p": 2}
    assert summary.stats.dropped["excluded"] == 4 and summary.stats.dropped["min-hits"] == 1
    summary, _ = run([path], exclude=["*?session=*"], assets=())
    assert "https://example.com/p?session=9" not in hits(summary)


def test_bad_line_samples_and_unknown_format(tmp_path: Path) -> None:
    path = tmp_path / "error.log"
    path.write_text("".join(f"[error] something {i}\n" for i in range(12)))
    summary, log = run([path])
    assert summary.pages == () and summary.stats.bad == 12
    codes = [(d.code, d.line) for d in log]
    assert codes[:5] == [("bad-line", n) for n in range(1, 6)]
    assert codes[5] == ("bad-line", None) and "7 more" in list(log)[5].message
    assert codes[6] == ("unknown-log-format", None)


def test_unreadable_logs_raise_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        run([tmp_path / "missing.log"])
    broken = tmp_path / "broken.gz"
    broken.write_bytes(gzip.compress((combined("/a") + "\n").encode() * 100)[:-20])
    with pytest.raises(InputError):
        run([broken])


def test_entries_priority_and_lastmod(tmp_path: Path) -> None:
    path = tmp_path / "log"
    path.write_text("\n".join([combined("/a")] * 100 + [combined("/b")]) + "\n")
    summary, _ = run([path])
    entries = list(summary.entries())
    assert [(e.loc, e.priority, e.lastmod) for e in entries] == [
        ("https://example.com/a", 1.0, None),
        ("https://example.com/b", 0.2, None),
    ]
    with_dates = list(summary.entries(lastmod=True, priority=False))
    assert with_dates[0].lastmod == dt.datetime(2026, 10, 10, 13, 55, 36, tzinfo=dt.UTC)
    assert with_dates[0].priority is None


def test_priority_from_hits() -> None:
    assert priority_from_hits(0, 100) == 0.0
    assert priority_from_hits(5, 0) == 0.0
    assert priority_from_hits(100, 100) == 1.0
    assert priority_from_hits(200, 100) == 1.0
    assert priority_from_hits(1, 1_000_000) == 0.1
    assert priority_from_hits(1000, 1_000_000) == 0.5
    values = [priority_from_hits(h, 10_000) for h in range(0, 10_001, 7)]
    assert values == sorted(values)
    assert all(v == round(v, 1) and 0.0 <= v <= 1.0 for v in values)


# ------------------------------------------------------------------------------------- properties


@given(st.text(max_size=300))
def test_garbage_never_crashes(text: str) -> None:
    line = text.replace("\n", " ").replace("\r", " ")
    parsed = parse_log_line(line)
    if parsed is not None:
        parse_log_time(parsed.time)


_token = st.text(
    st.characters(min_codepoint=33, max_codepoint=126, exclude_characters='"\\[]'), min_size=1, max_size=12
)
_quoted = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30)


@given(
    client=_token,
    user=_token,
    method=st.sampled_from(["GET", "HEAD", "POST"]),
    target=_token.map(lambda s: "/" + s),
    status=st.integers(100, 599),
    size=st.one_of(st.none(), st.integers(0, 10**9)),
    referer=_quoted,
    agent=_quoted,
    fmt=st.sampled_from(["common", "combined", "vhost_combined"]),
    when=st.datetimes(min_value=dt.datetime(1990, 1, 1), max_value=dt.datetime(2100, 1, 1)),
)
def test_generated_lines_parse_back(
    client: str,
    user: str,
    method: str,
    target: str,
    status: int,
    size: int | None,
    referer: str,
    agent: str,
    fmt: str,
    when: dt.datetime,
) -> None:
    def esc(s: str) -> str:
        return s.replace("\\", "\\\\").replace('"', '\\"')

    time = when.strftime("%d/%b/%Y:%H:%M:%S +0000")
    request = f"{method} {target} HTTP/1.1"
    line = f'{client} - {user} [{time}] "{request}" {status} {"-" if size is None else size}'
    if fmt != "common":
        line += f' "{esc(referer)}" "{esc(agent)}"'
    if fmt == "vhost_combined":
        line = "www.example.com:80 " + line
    parsed = parse_log_line(line)
    assert parsed is not None
    assert parsed.format == fmt
    assert (parsed.client, parsed.request, parsed.status, parsed.size) == (client, request, status, size)
    if fmt != "common":
        assert (parsed.referer, parsed.agent) == (referer, agent)
    assert parse_log_time(parsed.time) == when.replace(microsecond=0, tzinfo=dt.UTC)
