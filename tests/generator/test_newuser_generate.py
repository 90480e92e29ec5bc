"""What a new user (coming from sitemap_gen.py) hit in `generate` and `build`, each through the CLI.

- A URL that two sources list keeps the best valid lastmod: a future date from one source is reported and
  dropped for that source only, whichever source it is and in whichever order they are read.
"""

from __future__ import annotations

import datetime as dt
import gzip
import itertools
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from lxml import etree

from sitemapkit.cli import main
from tests.support.helpers import NS, raw_bytes

BASE = "https://example.com/"
PAGE = BASE + "a.html"
FUTURE = dt.date(2099, 1, 1)
OLD = dt.date(2025, 5, 1)
NEW = dt.date(2025, 6, 1)
HTML = "<html><head><title>A</title></head><body>a page</body></html>"
CLF = '1.2.3.4 - - [01/Mar/2025:10:00:00 +0000] "GET /a.html HTTP/1.1" 200 512 "-" "Mozilla/5.0"\n'


def lastmods(path: Path) -> dict[str, str | None]:
    """Each URL's <lastmod> text, read back with lxml."""
    doc = etree.fromstring(raw_bytes(path), etree.XMLParser(resolve_entities=False, no_network=True))
    return {
        str(u.findtext("sm:loc", namespaces=NS)): u.findtext("sm:lastmod", namespaces=NS)
        for u in doc.iterfind("sm:url", NS)
    }


def stamp(path: Path, day: dt.date) -> None:
    seconds = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp()
    os.utime(path, (seconds, seconds))


# -- generate: every source kind that can carry a lastmod ---------------------------------------------------
# Each writes its input for PAGE with `day` as the lastmod it gives (an access log gives none: it says when a
# page was fetched, not when it changed) and returns the CLI arguments that read it.

Maker = Callable[[Path, dt.date, str], list[str]]


def folder(root: Path, day: dt.date, tag: str) -> list[str]:
    site = root / f"site-{tag}"
    site.mkdir()
    (site / "a.html").write_text(HTML)
    stamp(site / "a.html", day)
    return ["--dir", str(site), "--lastmod", "mtime"]


def url_list(root: Path, day: dt.date, tag: str) -> list[str]:
    (root / f"urls-{tag}.txt").write_text(f"{PAGE}\t{day.isoformat()}\n")
    return [str(root / f"urls-{tag}.txt")]


def csv_file(root: Path, day: dt.date, tag: str) -> list[str]:
    (root / f"urls-{tag}.csv").write_text(f"loc,lastmod\n{PAGE},{day.isoformat()}\n")
    return [str(root / f"urls-{tag}.csv")]


def jsonl_file(root: Path, day: dt.date, tag: str) -> list[str]:
    (root / f"urls-{tag}.jsonl").write_text(json.dumps({"loc": PAGE, "lastmod": day.isoformat()}) + "\n")
    return [str(root / f"urls-{tag}.jsonl")]


def old_sitemap(root: Path, day: dt.date, tag: str) -> list[str]:
    (root / f"old-{tag}.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        f"<url><loc>{PAGE}</loc><lastmod>{day.isoformat()}</lastmod></url>\n</urlset>\n"
    )
    return [str(root / f"old-{tag}.xml")]


def access_log(root: Path, day: dt.date, tag: str) -> list[str]:
    (root / f"access-{tag}.log").write_text(CLF)
    return ["--log", str(root / f"access-{tag}.log")]


KINDS: dict[str, Maker] = {
    "folder": folder,
    "list": url_list,
    "csv": csv_file,
    "jsonl": jsonl_file,
    "sitemap": old_sitemap,
    "log": access_log,
}
PAIRS = [*itertools.permutations(KINDS, 2), ("list", "list"), ("sitemap", "sitemap")]
SCENARIOS = {
    "future-then-valid": (FUTURE, NEW),
    "valid-then-future": (NEW, FUTURE),
    "old-then-new": (OLD, NEW),
}


STREAMED = ("list", "csv", "jsonl")
"""URL lists, CSV and JSONL files stream (about 40 times faster than holding their entries back to merge):
a URL in two of them keeps the first's entry (the second is a reported duplicate), unless the first's date
was left out, in the future: that entry waits, and the second's date is merged in."""


def expected(kinds: tuple[str, str], days: tuple[dt.date, dt.date]) -> str | None:
    """The best valid lastmod of the two sources: the newest not in the future (a log gives none)."""
    valid = [d for k, d in zip(kinds, days, strict=True) if k != "log" and d != FUTURE]
    if set(kinds) <= set(STREAMED) and days[0] != FUTURE:
        return days[0].isoformat()  # streamed: the first, written at once, stands
    return max(valid).isoformat() if valid else None


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize(("first", "second"), PAIRS)
def test_generate_keeps_the_best_valid_lastmod_of_two_sources(
    tmp_path: Path, first: str, second: str, scenario: str
) -> None:
    days = SCENARIOS[scenario]
    args = [*KINDS[first](tmp_path, days[0], "1"), *KINDS[second](tmp_path, days[1], "2")]
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["generate", *args, "--base-url", BASE, "--out", str(out)])
    assert result.exit_code == 0, result.output
    found = lastmods(out / "sitemap.xml")
    assert list(found) == [PAGE], found  # one entry
    want = expected((first, second), days)
    got = found[PAGE]
    assert (got[:10] if got else None) == want, (result.stderr, got)
    merged = not set((first, second)) <= set(STREAMED) or days[0] == FUTURE
    read = (first, second) if merged else (first,)  # a duplicate is left out before its date is read
    carriers = [k for k, d in zip(read, days, strict=False) if d == FUTURE and k != "log"]
    assert result.stderr.count("[future-date]") == len(carriers), result.stderr
    assert ("[duplicate-url]" not in result.stderr) == merged, result.stderr  # merged, not a duplicate


def test_a_url_twice_in_one_held_file_is_still_a_duplicate(tmp_path: Path) -> None:
    """An entry held back to be merged (an old sitemap's; a list's whose date lies in the future) is merged
    with other sources' only: a repeat in its own file stays a reported duplicate, the first kept."""
    old = tmp_path / "old.xml"
    old.write_text(
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        f"<url><loc>{PAGE}</loc><lastmod>2025-01-01</lastmod></url>\n"
        f"<url><loc>{PAGE}</loc><lastmod>2025-03-01</lastmod></url>\n</urlset>\n"
    )
    first = tmp_path / "a.txt"
    first.write_text(f"{BASE}b\t2099-01-01\n{BASE}b\t2025-03-01\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main, ["generate", str(old), str(first), "--base-url", BASE, "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert f"{old}:3: warning [duplicate-url]" in result.stderr
    assert f"{first}:2: warning [duplicate-url]" in result.stderr
    assert lastmods(out / "sitemap.xml") == {PAGE: "2025-01-01", BASE + "b": None}


def test_a_future_mtime_is_reported_and_left_out(tmp_path: Path) -> None:
    """A folder's --lastmod mtime date is a source's date like any other: a future one is not published."""
    args = folder(tmp_path, FUTURE, "1")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["generate", *args, "--base-url", BASE, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert lastmods(out / "sitemap.xml") == {PAGE: None}
    assert f"{tmp_path / 'site-1' / 'a.html'}: warning [future-date] lastmod 2099-01-01" in result.stderr


# -- build config.xml: the same through sitemap_gen.py's elements --------------------------------------------


def _url(root: Path, day: dt.date, tag: str) -> str:
    return f'<url href="/a.html" lastmod="{day.isoformat()}"/>'


def _urllist(root: Path, day: dt.date, tag: str) -> str:
    (root / f"list-{tag}.txt").write_text(f"{PAGE} lastmod={day.isoformat()}\n")
    return f'<urllist path="list-{tag}.txt"/>'


def _directory(root: Path, day: dt.date, tag: str) -> str:
    site = root / f"docroot-{tag}"
    site.mkdir()
    (site / "a.html").write_text(HTML)
    stamp(site / "a.html", day)
    return f'<directory path="docroot-{tag}" url="{BASE}"/>'


def _accesslog(root: Path, day: dt.date, tag: str) -> str:
    (root / f"access-{tag}.log.gz").write_bytes(gzip.compress(CLF.encode()))
    return f'<accesslog path="access-{tag}.log*"/>'


def _sitemap(root: Path, day: dt.date, tag: str) -> str:
    old_sitemap(root, day, tag)
    return f'<sitemap path="old-{tag}.xml"/>'


ELEMENTS: dict[str, Callable[[Path, dt.date, str], str]] = {
    "url": _url,
    "urllist": _urllist,
    "directory": _directory,
    "accesslog": _accesslog,
    "sitemap": _sitemap,
}


@pytest.mark.parametrize("scenario", ["future-then-valid", "valid-then-future"])
@pytest.mark.parametrize(("first", "second"), list(itertools.permutations(ELEMENTS, 2)))
def test_build_config_xml_keeps_the_best_valid_lastmod(
    tmp_path: Path, first: str, second: str, scenario: str
) -> None:
    days = SCENARIOS[scenario]
    inputs = ELEMENTS[first](tmp_path, days[0], "1") + "\n" + ELEMENTS[second](tmp_path, days[1], "2")
    config = tmp_path / "config.xml"
    config.write_text(
        f'<?xml version="1.0" encoding="UTF-8"?>\n<site base_url="{BASE}" store_into="www/sitemap.xml" '
        f'suppress_search_engine_notify="1">\n{inputs}\n</site>\n'
    )
    result = CliRunner().invoke(main, ["build", str(config)])
    assert result.exit_code == 0, result.output
    found = lastmods(tmp_path / "www" / "sitemap.xml")
    kinds = tuple("log" if k == "accesslog" else k for k in (first, second))
    want = expected((kinds[0], kinds[1]), days)
    got = found[PAGE]
    assert (got[:10] if got else None) == want, (result.stderr, got)
    assert "[duplicate-url]" not in result.stderr


# -- sitemap_gen.py parity: a long URL in an access log, a relative URL in a <urllist> ----------------------

IIS_HEADER = (
    "#Software: Microsoft Internet Information Services 10.0\n#Version: 1.0\n"
    "#Fields: date time s-ip cs-method cs-uri-stem cs-uri-query s-port c-ip cs(User-Agent) sc-status\n"
)


def iis_line(stem: str, query: str = "-") -> str:
    return f"2025-06-01 00:00:01 10.0.0.1 GET {stem} {query} 80 10.0.0.2 Mozilla/5.0 200\n"


def test_a_too_long_url_in_an_iis_log_is_reported_with_file_and_line(tmp_path: Path) -> None:
    log = tmp_path / "u_ex250601.log"
    log.write_text(IIS_HEADER + iis_line("/ok.html") + iis_line("/long.html", "q=" + "y" * 2100))
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["generate", "--log", str(log), "--base-url", BASE, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert lastmods(out / "sitemap.xml") == {BASE + "ok.html": None}
    assert f"{log}:5: error [url-too-long] the requested URL has 2132 characters" in result.stderr
    assert "it begins '/long.html?q=yyy" in result.stderr


def test_invalid_urls_in_a_combined_log_are_reported_five_then_counted(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    long = "/p?" + "x" * 2100
    log.write_text(CLF + "".join(CLF.replace("/a.html", f"{long}{i}") for i in range(7)))
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["generate", "--log", str(log), "--base-url", BASE, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert lastmods(out / "sitemap.xml") == {PAGE: None}
    shown = [line for line in result.stderr.splitlines() if "[url-too-long]" in line]
    assert [line.split(": error")[0] for line in shown] == [f"{log}:{n}" for n in range(2, 7)]
    assert f"{log}: error [invalid-url] 2 more requests for invalid URLs not shown (7 in all" in result.stderr


def test_build_config_xml_reports_a_too_long_url_of_its_accesslog(tmp_path: Path) -> None:
    (tmp_path / "ex250601.log").write_text(IIS_HEADER + iis_line("/ok.html") + iis_line("/x" * 1100))
    config = tmp_path / "config.xml"
    config.write_text(
        f'<site base_url="{BASE}" store_into="www/sitemap.xml" suppress_search_engine_notify="1">'
        '<accesslog path="ex*.log"/></site>'
    )
    result = CliRunner().invoke(main, ["build", str(config)])
    assert result.exit_code == 0, result.output
    assert lastmods(tmp_path / "www" / "sitemap.xml") == {BASE + "ok.html": None}
    assert f"{tmp_path / 'ex250601.log'}:5: error [url-too-long]" in result.stderr


RELATIVE_LIST = f"{PAGE} lastmod=2025-06-01\n/relative/page.html\nother.html changefreq=daily\n"


def test_build_config_xml_drops_a_relative_urllist_url_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "urls.txt").write_text(RELATIVE_LIST)
    config = tmp_path / "config.xml"
    config.write_text(
        f'<site base_url="{BASE}" store_into="www/sitemap.xml" suppress_search_engine_notify="1">'
        '<urllist path="urls.txt"/><url href="/joined.html"/></site>'
    )
    result = CliRunner().invoke(main, ["build", str(config)])
    assert result.exit_code == 0, result.output
    # as sitemap_gen.py: a <urllist> URL must be full; a <url href> is joined to base_url
    assert lastmods(tmp_path / "www" / "sitemap.xml") == {PAGE: "2025-06-01", BASE + "joined.html": None}
    for line, url in ((2, "/relative/page.html"), (3, "other.html")):
        assert (
            f"{tmp_path / 'urls.txt'}:{line}: warning [invalid-url] '{url}' is a relative URL"
            in result.stderr
        )


def test_a_toml_list_in_sitemap_gen_form_drops_a_relative_url_and_a_plain_one_joins_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "strict.txt").write_text("/strict.html\n")
    (tmp_path / "plain.txt").write_text("/plain.html\n")
    sources = '[[source]]\ntype = "list"\npath = "strict.txt"\nsitemap_gen = true\n\n'
    toml = write_toml(tmp_path, sources + '[[source]]\ntype = "list"\npath = "plain.txt"\n')
    result = CliRunner().invoke(main, ["build", str(toml)])
    assert result.exit_code == 0, result.output
    assert list(lastmods(tmp_path / "out" / "sitemap.xml")) == [BASE + "plain.html"]
    assert (
        f"{tmp_path / 'strict.txt'}:1: warning [invalid-url] '/strict.html' is a relative URL"
        in result.stderr
    )


def test_build_config_xml_drops_a_relative_url_of_a_news_list(tmp_path: Path) -> None:
    (tmp_path / "news.txt").write_text(f"/n1\tdaily\n{BASE}n2\tdaily\n")
    config = tmp_path / "config.xml"
    config.write_text(
        f'<site base_url="{BASE}" store_into="www/sitemap.xml" sitemap_type="news" '
        'suppress_search_engine_notify="1"><urllist path="news.txt" tag_order="loc, changefreq"/></site>'
    )
    result = CliRunner().invoke(main, ["build", str(config)])
    assert result.exit_code == 0, result.output
    assert list(lastmods(tmp_path / "www" / "sitemap.xml")) == [BASE + "n2"]
    assert f"{tmp_path / 'news.txt'}:1: warning [invalid-url] '/n1' is a relative URL" in result.stderr


def test_generate_still_resolves_a_relative_url_of_a_plain_list(tmp_path: Path) -> None:
    """`generate`'s documented behaviour: a line starting with / is resolved against --base-url."""
    (tmp_path / "urls.txt").write_text(f"{PAGE}\t2025-06-01\n/relative/page.html\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main, ["generate", str(tmp_path / "urls.txt"), "--base-url", BASE, "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert lastmods(out / "sitemap.xml") == {PAGE: "2025-06-01", BASE + "relative/page.html": None}
    assert result.stderr == ""


# -- globs in sitemapkit.toml, and --print-toml keeping config.xml's --------------------------------


def clf(path: str, day: int = 1) -> str:
    return f'1.2.3.4 - - [0{day}/Mar/2025:10:00:00 +0000] "GET {path} HTTP/1.1" 200 5 "-" "Mozilla/5.0"\n'


def test_print_toml_keeps_a_glob_that_then_takes_a_rotated_log(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "access.log").write_text(clf("/a.html"))
    (logs / "access.log.1.gz").write_bytes(gzip.compress(clf("/b.html").encode()))
    config = tmp_path / "config.xml"
    config.write_text(
        f'<site base_url="{BASE}" store_into="www/sitemap.xml" suppress_search_engine_notify="1">\n'
        '  <accesslog path="logs/access.log*"/>\n</site>\n'
    )
    printed = CliRunner().invoke(main, ["build", "--print-toml", str(config)])
    assert printed.exit_code == 0, printed.output
    assert 'path = ["logs/access.log*"]' in printed.stdout  # the pattern, not today's two file names
    toml = tmp_path / "sitemapkit.toml"
    toml.write_text(printed.stdout.replace('dir = "www"', 'dir = "from-toml"'))
    # logrotate: access.log.1.gz -> .2.gz, access.log -> .1, a new access.log
    (logs / "access.log.1.gz").rename(logs / "access.log.2.gz")
    (logs / "access.log").rename(logs / "access.log.1")
    (logs / "access.log").write_text(clf("/c.html", 2))
    for args, out in ((["build", str(toml)], "from-toml"), (["build", str(config)], "www")):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        assert "3 lines, 3 pages" in result.stdout
        assert sorted(lastmods(tmp_path / out / "sitemap.xml")) == [
            BASE + p for p in ("a.html", "b.html", "c.html")
        ]


def write_toml(root: Path, sources: str) -> Path:
    toml = root / "sitemapkit.toml"
    toml.write_text(f'base_url = "{BASE}"\nstate = false\n\n[output]\ndir = "out"\n\n{sources}')
    return toml


def test_a_toml_list_glob_is_expanded_sorted_at_build_time(tmp_path: Path) -> None:
    from sitemapkit.generator.config import load_config

    (tmp_path / "lists").mkdir()
    for name in ("b.txt", "a.txt", "notes.md"):
        (tmp_path / "lists" / name).write_text(f"{BASE}{name}\n")
    (tmp_path / "lists" / "c.txt").mkdir()  # a folder is not a file: not matched
    toml = write_toml(tmp_path, '[[source]]\ntype = "list"\npath = "lists/*.txt"\n')
    loaded = load_config(toml)
    assert loaded.lists == (str(tmp_path / "lists" / "*.txt"),)  # kept a pattern until the build runs
    (tmp_path / "lists" / "0.txt").write_text(f"{BASE}zero\n")  # after the load, before the run
    result = CliRunner().invoke(main, ["build", str(toml)])
    assert result.exit_code == 0, result.output
    assert list(lastmods(tmp_path / "out" / "sitemap.xml")) == [BASE + "zero", BASE + "a.txt", BASE + "b.txt"]


def test_a_toml_glob_that_matches_nothing_is_an_error_naming_the_line(tmp_path: Path) -> None:
    toml = write_toml(tmp_path, '[[source]]\ntype = "log"\npath = ["logs/access.log*"]\n')
    result = CliRunner().invoke(main, ["build", str(toml)])
    assert result.exit_code == 1
    assert f"{toml}:9: source[1].path: no file matches the pattern 'logs/access.log*'" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_glob_that_matched_at_load_and_matches_nothing_at_run_publishes_nothing(tmp_path: Path) -> None:
    from sitemapkit.generator.config import ConfigError, load_config

    (tmp_path / "u1.csv").write_text(f"loc\n{BASE}a\n")
    toml = write_toml(tmp_path, '[[source]]\ntype = "csv"\npath = "u*.csv"\n')
    loaded = load_config(toml)
    (tmp_path / "u1.csv").unlink()
    with pytest.raises(ConfigError, match=r"no file matches the pattern .*u\*\.csv"):
        loaded.run()
    assert not (tmp_path / "out").exists()


def test_a_toml_glob_checks_the_kind_of_each_file_and_a_bracketed_name_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "x1.csv").write_text(f"loc\n{BASE}a\n")
    (tmp_path / "x2.txt").write_text(f"{BASE}b\n")
    toml = write_toml(tmp_path, '[[source]]\ntype = "csv"\npath = "x*"\n')
    result = CliRunner().invoke(main, ["build", str(toml)])
    assert result.exit_code == 1 and "x2.txt' is read as list (by its extension), not csv" in result.stderr
    (tmp_path / "x2.txt").unlink()
    (tmp_path / "urls[1].txt").write_text(f"{BASE}bracketed\n")  # an existing file is itself, not a pattern
    toml = write_toml(tmp_path, '[[source]]\ntype = "list"\npath = "urls[1].txt"\n')
    result = CliRunner().invoke(main, ["build", str(toml)])
    assert result.exit_code == 0, result.output
    assert list(lastmods(tmp_path / "out" / "sitemap.xml")) == [BASE + "bracketed"]
