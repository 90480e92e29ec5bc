"""`sitemapkit build` and its config file: every bad key or value named with its line; builds that work."""

from __future__ import annotations

import gzip
import json
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sitemapkit import parse_file, validate
from sitemapkit.cli import main
from sitemapkit.core.model import UrlEntry
from sitemapkit.generator.config import ConfigError, build, load_config

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BASE = "https://example.com/"


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sitemapkit.toml"
    path.write_text(text, "utf-8")
    return path


MINIMAL = """\
base_url = "https://example.com/"

[output]
dir = "out"

[[source]]
type = "list"
path = "urls.txt"
"""


@pytest.fixture
def site(tmp_path: Path) -> Path:
    (tmp_path / "urls.txt").write_text("".join(f"{BASE}page/{i}\n" for i in range(5)) + f"{BASE}tmp/x\n")
    return tmp_path


def locs(out: Path, name: str = "sitemap.xml") -> list[str]:
    return [e.loc for e in parse_file(out / name) if isinstance(e, UrlEntry)]


def test_the_bundled_example_builds_and_validates_cleanly(tmp_path: Path) -> None:
    for name in ("sitemapkit.toml", "media.jsonl"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    shutil.copytree(EXAMPLES / "site", tmp_path / "site")
    codes: list[str] = []
    result = build(tmp_path / "sitemapkit.toml", on_diagnostic=lambda d: codes.append(d.code))
    assert codes == []
    out = tmp_path / "build"
    assert result.entry_url == "https://www.example.com/sitemap.xml.gz"
    report = validate(str(out / "sitemap.xml.gz"), url="https://www.example.com/sitemap.xml.gz")
    assert [d.code for d in report.diagnostics] == []
    entries = {e.loc: e for e in parse_file(out / "sitemap.xml.gz") if isinstance(e, UrlEntry)}
    assert "https://www.example.com/drafts/video" not in entries  # the filters' exclude
    assert entries["https://www.example.com/en/guide/install"].priority == 0.6  # a per-pattern default
    fr_guide = entries["https://www.example.com/fr/guide/"]  # declares nothing: completed from en/guide
    assert {a.hreflang for a in fr_guide.alternates} == {"en", "fr"}
    assert (tmp_path / "build" / ".sitemapkit" / "state.db").is_file()
    # an unchanged rebuild rewrites nothing
    before = {p: p.stat().st_mtime_ns for p in out.iterdir() if p.is_file()}
    again = build(tmp_path / "sitemapkit.toml")
    assert {p: p.stat().st_mtime_ns for p in out.iterdir() if p.is_file()} == before
    assert set(again.unchanged) == {"sitemap.xml.gz", "sitemap.xsl"}


def test_filters_and_defaults(site: Path) -> None:
    path = config(
        site,
        MINIMAL
        + """
[filters]
include = ["/page/*", "/tmp/*"]
exclude = ["re:/page/[34]$", "/tmp/*"]

[[defaults]]
match = "/page/1"
changefreq = "daily"
priority = 1

[[defaults]]
match = "/page/*"
priority = 0.2
""",
    )
    result = build(path)
    assert result.filtered == 3
    entries = [e for e in parse_file(site / "out" / "sitemap.xml") if isinstance(e, UrlEntry)]
    assert [(e.loc.removeprefix(BASE), e.changefreq, e.priority) for e in entries] == [
        ("page/0", None, 0.2),
        ("page/1", "daily", 1.0),  # the first matching default wins
        ("page/2", None, 0.2),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gzipp = true\n" + MINIMAL, r"sitemapkit\.toml:1: gzipp: unknown key"),
        (
            MINIMAL.replace('dir = "out"', 'dir = "out"\ngzipp = true'),
            r":5: output\.gzipp: unknown key \(did you mean 'gzip'\?\)",
        ),
        (MINIMAL.replace('dir = "out"', 'dir = "out"\ngzip = "yes"'), r":5: output\.gzip: must be a boolean"),
        (
            MINIMAL.replace('dir = "out"', 'dir = "out"\nmax_urls = 60000'),
            r":5: output\.max_urls: must be from 1 to 50,000 \(got 60,000\)",
        ),
        (
            MINIMAL.replace('dir = "out"', 'dir = "out"\nindex = "sometimes"'),
            r":5: output\.index: must be one of auto, always, never",
        ),
        (MINIMAL.replace('type = "list"', 'type = "sql"'), r":7: source\[1\]\.type: must be one of list"),
        (
            MINIMAL.replace('path = "urls.txt"', 'path = "urls.txt"\nmin_hits = 3'),
            r":9: source\[1\]\.min_hits: unknown key",
        ),
        (
            MINIMAL.replace('path = "urls.txt"', 'path = "urls.csv"'),
            r":8: source\[1\]\.path: 'urls\.csv' is read as csv",
        ),
        (
            MINIMAL.replace('base_url = "https://example.com/"', ""),
            r"sitemapkit\.toml: the key 'base_url' is required",
        ),
        (MINIMAL.replace('"https://example.com/"', '"https://example.com/?q=1"'), r":1: base_url: "),
        (
            MINIMAL + '\n[filters]\nexclude = ["re:(unclosed"]\n',
            r":11: filters\.exclude: invalid regular expression",
        ),
        (
            MINIMAL + '\n[[defaults]]\nmatch = "/a/*"\nchangefreq = "sometimes"\n',
            r":12: defaults\[1\]\.changefreq: changefreq must be one of always",
        ),
        (
            MINIMAL + '\n[[defaults]]\nmatch = "/a/*"\npriority = 1.5\n',
            r":12: defaults\[1\]\.priority: priority must be",
        ),
        ('lastmod = "content"\nstate = false\n' + MINIMAL, r":1: lastmod: 'content' needs a state file"),
        ("state = true\n" + MINIMAL, r":1: state: must be a path, or false"),
        ('allow_hosts = ["bad host"]\n' + MINIMAL, r":1: allow_hosts: "),
        (
            MINIMAL.replace('path = "urls.txt"', 'path = "missing.txt"'),
            r":8: source\[1\]\.path: .*missing\.txt does not exist",
        ),
        (MINIMAL + "\n[source.extra]\nx = 1\n", r":10: source\[1\]\.extra: unknown key"),
        (
            MINIMAL + '\n[[source]]\ntype = "folder"\npath = "."\nvolatile = ["!!x"]\n',
            r":13: source\[2\]\.volatile: unsupported CSS selector '!!x'",
        ),
        (
            MINIMAL + '\n[[source]]\ntype = "folder"\npath = "."\nvolatile_regex = ["(x"]\n',
            r":13: source\[2\]\.volatile_regex: invalid regular expression '\(x'",
        ),
        (MINIMAL + "strict = true\nstrict = false\n", r":10:\d+: invalid TOML"),
        (
            MINIMAL.replace("[[source]]\n", "").replace('type = "list"\npath = "urls.txt"\n', ""),
            r"no \[\[source\]\]",
        ),
        (
            MINIMAL + '\n[[source]]\ntype = "folder"\npath = "nowhere"\n',
            r":12: source\[2\]\.path: .*nowhere is not a folder",
        ),
    ],
)
def test_bad_config_names_file_line_and_key(site: Path, text: str, message: str) -> None:
    path = config(site, text)
    with pytest.raises(ConfigError, match=message):
        load_config(path)
    result = CliRunner().invoke(main, ["build", str(path)])
    assert result.exit_code == 1
    assert "sitemapkit build: " in result.output and "Traceback" not in result.output
    assert not (site / "out").exists()  # nothing was built


def test_unreadable_config_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "latin1.toml"
    bad.write_bytes(b'base_url = "https://example.com/"\n# caf\xe9\n')
    with pytest.raises(ConfigError, match=r"latin1\.toml:2: not UTF-8"):
        load_config(bad)


def test_cli_build_check_json_and_default_path(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config(site, MINIMAL)
    monkeypatch.chdir(site)
    runner = CliRunner()
    result = runner.invoke(main, ["build", "--check"])
    assert result.exit_code == 0, result.output
    assert not (site / "out").exists()
    result = runner.invoke(main, ["build", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["totals"]["urls"] == 6 and data["entry_url"] == BASE + "sitemap.xml"
    monkeypatch.chdir(site / "out")
    result = runner.invoke(main, ["build"])
    assert result.exit_code == 1 and "sitemapkit.toml: no such config file" in result.output


def test_several_sources_of_each_kind(tmp_path: Path) -> None:
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / f"{name}.html").write_text(f"<title>{name}</title>")
    (tmp_path / "one.txt").write_text(BASE + "one\n")
    (tmp_path / "two.jsonl").write_text(json.dumps({"loc": BASE + "two"}) + "\n")
    with gzip.open(tmp_path / "access.log.gz", "wt") as log:
        log.write('1.2.3.4 - - [10/Oct/2026:13:55:36 +0000] "GET /logged HTTP/1.1" 200 100 "-" "x"\n')
    path = config(
        tmp_path,
        """\
base_url = "https://example.com/"
[output]
dir = "out"
[[source]]
type = "folder"
path = "a"
clean_urls = true
[[source]]
type = "folder"
path = "b"
[[source]]
type = "list"
path = ["one.txt"]
[[source]]
type = "jsonl"
path = "two.jsonl"
[[source]]
type = "log"
path = "access.log.gz"
""",
    )
    build(path)
    assert sorted(locs(tmp_path / "out")) == [BASE + p for p in ("a", "b.html", "logged", "one", "two")]


# -- rebuilding unchanged input: byte-identical sitemaps, identical lastmods ---------------------------

pages = st.dictionaries(
    st.from_regex(r"[a-z]{1,8}(/[a-z]{1,8})?", fullmatch=True),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=40),
    min_size=1,
    max_size=12,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(site_pages=pages, lastmod=st.sampled_from(["content", "mtime"]), use_gzip=st.booleans())
def test_rebuilding_unchanged_input_is_byte_identical(
    site_pages: dict[str, str], lastmod: str, use_gzip: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        public = root / "public"
        for name, text in site_pages.items():
            file = public / f"{name}.html"
            if file.parent.is_file() or file.with_suffix("").is_file():
                continue
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(f"<html><head><title>{name}</title></head><body>{text}</body></html>", "utf-8")
        (root / "urls.txt").write_text(f"{BASE}listed\t2024-01-02\n")
        path = config(
            root,
            f"""\
base_url = "{BASE}"
state = "state/state.db"
lastmod = "{lastmod}"
[output]
dir = "out"
gzip = {"true" if use_gzip else "false"}
max_urls = 3
[[source]]
type = "folder"
path = "public"
[[source]]
type = "list"
path = "urls.txt"
""",
        )
        build(path)
        first = {p.name: p.read_bytes() for p in (root / "out").iterdir()}
        stamps = {p.name: p.stat().st_mtime_ns for p in (root / "out").iterdir()}
        again = build(path)
        assert {p.name: p.read_bytes() for p in (root / "out").iterdir()} == first
        assert {p.name: p.stat().st_mtime_ns for p in (root / "out").iterdir()} == stamps
        assert len(again.unchanged) == len(again.files) + (again.index is not None)
