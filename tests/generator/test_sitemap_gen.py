"""`sitemapkit build config.xml`: Google's sitemap_gen.py configuration read as it is.

The expected outputs follow sitemap_gen's documented behaviour (its README, example_config.xml and
example_urllist.txt): URLs must start with base_url, filters see the whole URL in file order and the first
match decides, a directory lists its files with their mtime as lastmod and its default_file as the folder's
URL, access logs count GET/HEAD answered 200, and store_into names the files."""

from __future__ import annotations

import datetime as dt
import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sitemapkit.core.model import UrlEntry
from sitemapkit.generator.config import ConfigError, load_config
from sitemapkit.generator.sitemap_gen import PING_NOTE, is_sitemap_gen_config, load_any, to_toml
from sitemapkit.reader.parser import parse_file

BASE = "http://www.example.com/"
MTIME = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.UTC)

CONFIG = """<?xml version="1.0" encoding="UTF-8"?>
<!-- every element and attribute of sitemap_gen.py 1.4 and 1.5 -->
<site
  base_url="http://www.example.com/"
  store_into="htdocs/sitemap.xml.gz"
  verbose="2"
  suppress_search_engine_notify="1"
  default_encoding="ISO-8859-1"
  sitemap_type="web"
>
  <url href="http://www.example.com/stats?q=name" />
  <url
     href="/stats?q=age"
     lastmod="2004-11-14T01:00:00-07:00"
     changefreq="yearly"
     priority="0.3"
  />
  <url href="http://elsewhere.example.org/outside" />
  <urllist path="lists/*.txt" encoding="UTF-8" />
  <urllist path="latin1.lst" />
  <directory path="htdocs" url="http://www.example.com/" default_file="index.html"
             remove_empty_directories="true" />
  <directory path="manual" url="/docs/" />
  <accesslog path="logs/access.log*" encoding="latin-1" />
  <accesslog path="logs/ex*.log" />
  <sitemap path="old/sitemap_index.xml" />
  <filter action="pass" type="wildcard" pattern="*/keep/*~" />
  <filter action="drop" type="wildcard" pattern="*~" />
  <filter action="drop" type="regexp" pattern="/\\.[^/]*" />
  <filter action="drop" type="wildcard" pattern="*icons*" />
  <filter type="regexp" pattern="/private/" />
  <filter action="DROP" type="WILDCARD" pattern="http://www.example.com/press/*.gif" />
</site>
"""

URLLIST = """\
# example_urllist.txt's own examples
http://www.example.com/foo/bar
http://www.example.com/foo/xxx.pdf lastmod=2003-12-31T14:05:06+00:00
http://www.example.com/foo/yyy?x=12&y=23 changefreq=weekly priority=0.3
http://www.example.com/d junk
http://www.example.com/bad changefreq=sometimes priority=2
http://www.example.com/backup.html~
http://www.example.com/keep/backup.html~
http://www.example.com/private/plans
https://www.example.com/wrong-scheme
"""

CLF = '1.2.3.4 - - [01/Mar/2024:10:00:00 +0000] "GET {} HTTP/1.1" {} 512 "-" "Mozilla/5.0"\n'
IIS = """\
#Software: Microsoft Internet Information Services 6.0
#Fields: date time cs-method cs-uri-stem cs-uri-query sc-status
2024-03-01 10:00:00 GET /iis/page.asp id=1 200
2024-03-01 10:00:01 GET /iis/moved.asp - 301
"""
OLD_INDEX = """<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.google.com/schemas/sitemap/0.84">
  <sitemap><loc>http://www.example.com/old/sitemap1.xml.gz</loc></sitemap>
  <sitemap><loc>http://www.example.com/old/sitemap2.xml</loc></sitemap>
</sitemapindex>
"""
OLD_084 = """<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.google.com/schemas/sitemap/0.84">
  <url><loc>http://www.example.com/archive/2005</loc><lastmod>2005-06-01</lastmod>
    <changefreq>never</changefreq><priority>0.2</priority></url>
</urlset>
"""
OLD_09 = """<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>http://www.example.com/archive/2007</loc><lastmod>2007-11-01T10:00:00+00:00</lastmod></url>
</urlset>
"""


def touch(path: Path, text: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text or "<html><head><title>t</title></head><body>x</body></html>")
    os.utime(path, (MTIME.timestamp(), MTIME.timestamp()))


def make_site(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.xml").write_text(CONFIG)
    (root / "lists").mkdir()
    (root / "lists" / "a.txt").write_text(URLLIST)
    (root / "lists" / "b.txt").write_text("http://www.example.com/from-b\n")
    (root / "latin1.lst").write_bytes("http://www.example.com/café lastmod=2024-01-01\n".encode("latin-1"))
    touch(root / "htdocs" / "index.html")
    touch(root / "htdocs" / "about.html")
    touch(root / "htdocs" / "icons" / "logo.gif", "GIF89a")
    touch(root / "htdocs" / "press" / "photo.gif", "GIF89a")
    touch(root / "htdocs" / "press" / "index.html")
    touch(root / "htdocs" / "report.pdf", "%PDF")
    touch(root / "htdocs" / "notes.txt~", "backup")
    touch(root / "htdocs" / ".htaccess", "Deny")
    touch(root / "manual" / "intro.html")
    touch(root / "manual" / "index.html")  # no default_file on this directory: listed as a file
    (root / "logs").mkdir()
    lines = [CLF.format("/from-log.html", 200), CLF.format("/caf\xe9-log", 200), CLF.format("/redirect", 302)]
    lines.append(CLF.format("/style.css", 200))
    (root / "logs" / "access.log").write_bytes("".join(lines).encode("latin-1"))
    (root / "logs" / "access.log.1.gz").write_bytes(gzip.compress(CLF.format("/rotated", 200).encode()))
    (root / "logs" / "ex240301.log").write_text(IIS)
    (root / "old").mkdir()
    (root / "old" / "sitemap_index.xml").write_text(OLD_INDEX)
    (root / "old" / "sitemap1.xml.gz").write_bytes(gzip.compress(OLD_084.encode()))
    (root / "old" / "sitemap2.xml").write_text(OLD_09)
    return root / "config.xml"


def sitemapkit(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sitemapkit", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def entries_of(path: Path) -> dict[str, UrlEntry]:
    return {e.loc: e for e in parse_file(path) if isinstance(e, UrlEntry)}


EXPECTED = {
    # <url>: absolute, and relative joined to base_url (the one on another host is left out)
    BASE + "stats?q=name": (None, None, None),
    BASE + "stats?q=age": (dt.datetime(2004, 11, 14, 8, 0, tzinfo=dt.UTC), "yearly", 0.3),
    # <urllist>: lists/*.txt in sorted order, then the Latin-1 list (default_encoding)
    BASE + "foo/bar": (None, None, None),
    BASE + "foo/xxx.pdf": (dt.datetime(2003, 12, 31, 14, 5, 6, tzinfo=dt.UTC), None, None),
    BASE + "foo/yyy?x=12&y=23": (None, "weekly", 0.3),
    BASE + "d": (None, None, None),  # 'junk' reported
    BASE + "bad": (None, None, None),  # bad changefreq and priority reported and dropped
    BASE + "keep/backup.html~": (None, None, None),  # the pass filter comes first
    BASE + "from-b": (None, None, None),
    BASE + "caf%C3%A9": (dt.date(2024, 1, 1), None, None),
    # <directory>: every file, default_file as the folder's URL, mtime as lastmod
    BASE: (MTIME, None, None),
    BASE + "about.html": (MTIME, None, None),
    BASE + "press/": (MTIME, None, None),
    BASE + "report.pdf": (MTIME, None, None),
    BASE + "docs/index.html": (MTIME, None, None),
    BASE + "docs/intro.html": (MTIME, None, None),
    # <accesslog>: GET/HEAD answered 200, any file type, gzip too, Latin-1 decoded, IIS read
    BASE + "from-log.html": (None, None, None),
    BASE + "caf%C3%A9-log": (None, None, None),
    BASE + "style.css": (None, None, None),
    BASE + "rotated": (None, None, None),
    BASE + "iis/page.asp?id=1": (None, None, None),
    # <sitemap>: an 0.84 index with an 0.84 and a 0.9 child, read from its folder
    BASE + "archive/2005": (dt.date(2005, 6, 1), "never", 0.2),
    BASE + "archive/2007": (dt.datetime(2007, 11, 1, 10, 0, tzinfo=dt.UTC), None, None),
}


def test_every_element_and_attribute(tmp_path: Path) -> None:
    config = make_site(tmp_path / "site")
    run = sitemapkit("build", str(config))
    assert run.returncode == 0, run.stderr
    out = tmp_path / "site" / "htdocs"
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("sitemap")) == ["sitemap.xml.gz"]
    found = entries_of(out / "sitemap.xml.gz")
    assert {loc: (e.lastmod, e.changefreq, e.priority) for loc, e in found.items()} == EXPECTED
    # dropped by the filters: *~, hidden files, *icons*, /private/ (default action drop), press/*.gif
    for gone in (
        "backup.html~",
        "notes.txt~",
        ".htaccess",
        "icons/logo.gif",
        "private/plans",
        "press/photo.gif",
    ):
        assert BASE + gone not in found
    assert BASE + "sitemap.xml.gz" not in found  # its own output, which the directory holds after a run
    problems = run.stderr
    assert "lists/a.txt:5: error [invalid-value] 'junk' is not a key=value field" in problems
    assert "lists/a.txt:6:" in problems and "changefreq 'sometimes'" in problems
    assert "wrong-scheme" in problems  # not under base_url: reported, left out
    assert "elsewhere.example.org" in problems
    assert PING_NOTE not in problems  # suppress_search_engine_notify="1"
    # a second run over its own output is the same
    again = sitemapkit("build", str(config))
    assert again.returncode == 0, again.stderr
    assert entries_of(out / "sitemap.xml.gz").keys() == found.keys()


def test_print_toml_builds_the_same_sitemap(tmp_path: Path) -> None:
    config = make_site(tmp_path / "site")
    printed = sitemapkit("build", "--print-toml", str(config))
    assert printed.returncode == 0, printed.stderr
    toml = tmp_path / "site" / "sitemapkit.toml"
    toml.write_text(printed.stdout.replace('dir = "htdocs"', 'dir = "copy"'))
    assert to_toml(load_config(toml)) == printed.stdout.replace('dir = "htdocs"', 'dir = "copy"').replace(
        "config.xml", "sitemapkit.toml"
    )
    for args in (["build", str(config)], ["build", str(toml)]):
        run = sitemapkit(*args)
        assert run.returncode == 0, run.stderr
    assert entries_of(tmp_path / "site" / "copy" / "sitemap.xml.gz") == entries_of(
        tmp_path / "site" / "htdocs" / "sitemap.xml.gz"
    )


def test_ping_settings_are_accepted_with_one_note(tmp_path: Path) -> None:
    (tmp_path / "urls.txt").write_text(BASE + "a\n")
    config = tmp_path / "config.xml"
    config.write_text(
        f'<site base_url="{BASE}" store_into="out/sitemap.xml" suppress_search_engine_notify="0">'
        '<urllist path="urls.txt"/></site>'
    )
    run = sitemapkit("build", str(config))
    assert run.returncode == 0, run.stderr
    assert (
        run.stderr.count("ping") == 1
        and "sitemapkit robots" in run.stderr
        and "sitemapkit indexnow" in run.stderr
    )
    assert (tmp_path / "out" / "sitemap.xml").is_file()


def test_store_into_names_the_files_as_sitemap_gen_did(tmp_path: Path) -> None:
    (tmp_path / "urls.txt").write_text("".join(f"{BASE}p{i}\n" for i in range(50_001)))
    config = tmp_path / "config.xml"
    config.write_text(
        f'<site base_url="{BASE}" store_into="www/maps.xml" suppress_search_engine_notify="1">'
        '<urllist path="urls.txt"/></site>'
    )
    run = sitemapkit("build", str(config))
    assert run.returncode == 0, run.stderr
    out = tmp_path / "www"
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "maps.xml",
        "maps1.xml",
        "maps_index.xml",
    ]
    index = [e.loc for e in parse_file(out / "maps_index.xml")]
    assert index == [BASE + "maps.xml", BASE + "maps1.xml"]
    assert len(entries_of(out / "maps.xml")) == 50_000 and list(entries_of(out / "maps1.xml")) == [
        BASE + "p50000"
    ]


def test_adopting_sitemap_gen_output_needs_replace_existing(tmp_path: Path) -> None:
    (tmp_path / "urls.txt").write_text(BASE + "a\n")
    (tmp_path / "sitemap.xml").write_text("<urlset/>")  # what sitemap_gen.py wrote last night
    config = tmp_path / "config.xml"
    config.write_text(
        f'<site base_url="{BASE}" store_into="sitemap.xml" suppress_search_engine_notify="1">'
        '<urllist path="urls.txt"/></site>'
    )
    refused = sitemapkit("build", str(config))
    assert refused.returncode == 1 and "--replace-existing" in refused.stderr
    adopted = sitemapkit("build", "--replace-existing", str(config))
    assert adopted.returncode == 0, adopted.stderr
    assert list(entries_of(tmp_path / "sitemap.xml")) == [BASE + "a"]


def test_a_news_config_reads_lists_by_tag_order(tmp_path: Path) -> None:
    today = dt.date.today().isoformat()
    (tmp_path / "news.txt").write_text(
        f"http://www.example.com/n1\tdaily\t0.7\t{today}\t{today}\tsearch engine, robot\tGOOG\n"
    )
    config = tmp_path / "config.xml"
    config.write_text(
        f'<site base_url="{BASE}" store_into="out/sitemap.xml" sitemap_type="news" '
        'suppress_search_engine_notify="1">\n'
        '<urllist path="news.txt" encoding="UTF-8" tag_order="loc, changefreq, priority, lastmod, '
        'publication_date, \\\n keywords, stock_tickers"/></site>'
    )
    run = sitemapkit("build", str(config))
    assert run.returncode == 0, run.stderr
    (entry,) = entries_of(tmp_path / "out" / "sitemap.xml").values()
    assert (entry.changefreq, entry.priority, entry.lastmod) == ("daily", 0.7, dt.date.today())
    assert "news fields are not written" in run.stderr  # no publication name and language in config.xml
    assert "publication = " in sitemapkit("build", "--print-toml", str(config)).stdout


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        ('<urllist path="u.txt"/>\n<directroy path="."/>', 3, "unknown element <directroy>"),
        ('<urllist path="u.txt" encodng="UTF-8"/>', 2, "unknown attribute encodng"),
        ('<urllist path="u.txt"\n   tag_order="loc"/>', 3, "tag_order is for news lists"),
        ('<urllist path="none*.txt"/>', 2, "no file matches"),
        ('<url lastmod="2024-01-01"/>', 2, "href attribute is required"),
        ('<filter action="keep" pattern="*"/>', 2, 'action must be "pass" or "drop"'),
        ('<filter type="regexp" pattern="("/>', 2, "invalid regular expression"),
        ('<directory path="." url="http://other.example.org/"/>', 2, "not under base_url"),
        ('<directory path="." url="/" default_file="a/index.html"/>', 2, "default_file"),
        ('<directory path="." url="/" remove_empty_directories="maybe"/>', 2, "true or false"),
        ('<accesslog path="u.txt" encoding="klingon"/>', 2, "unknown encoding"),
        ('<url href="/a"><url href="/b"/></url>', 2, "directly inside <site>"),
    ],
)
def test_config_errors_name_the_file_and_line(tmp_path: Path, body: str, line: int, message: str) -> None:
    (tmp_path / "u.txt").write_text(BASE + "a\n")
    config = tmp_path / "config.xml"
    config.write_text(f'<site base_url="{BASE}" store_into="sitemap.xml">\n{body}\n</site>\n')
    with pytest.raises(ConfigError) as caught:
        load_any(config)
    assert str(caught.value).startswith(f"{config}:{line}:") and message in str(caught.value)


@pytest.mark.parametrize(
    ("site", "message"),
    [
        ('store_into="sitemap.xml"', "base_url attribute is required"),
        (f'base_url="{BASE}"', "store_into attribute is required"),
        (f'base_url="{BASE}" store_into="sitemap.txt"', "must end in .xml or .xml.gz"),
        ('base_url="/relative/" store_into="s.xml"', "absolute"),
        (f'base_url="{BASE}" store_into="s.xml" verbose="9"', "verbose"),
        (f'base_url="{BASE}" store_into="s.xml" sitemap_type="video"', "sitemap_type"),
        (f'base_url="{BASE}" store_into="s.xml" suppress_search_engine_notify="yes"', "suppress"),
        (f'base_url="{BASE}" store_into="s.xml" dest_url="{BASE}"', "unknown attribute dest_url"),
    ],
)
def test_site_attribute_errors(tmp_path: Path, site: str, message: str) -> None:
    (tmp_path / "u.txt").write_text(BASE + "a\n")
    config = tmp_path / "config.xml"
    config.write_text(f'<?xml version="1.0"?>\n<site {site}>\n<urllist path="u.txt"/></site>')
    run = sitemapkit("build", str(config))
    assert run.returncode == 1 and f"{config}:2:" in run.stderr and message in run.stderr, run.stderr


def test_detection_by_content(tmp_path: Path) -> None:
    assert is_sitemap_gen_config(b'\xef\xbb\xbf<?xml version="1.0"?>\n<!-- c -->\n<site base_url="x"/>')
    assert not is_sitemap_gen_config(b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"/>')
    assert not is_sitemap_gen_config(b'base_url = "https://example.com/"\n')
    toml_named_xml = tmp_path / "build.xml"  # a TOML file, whatever its name
    toml_named_xml.write_text(f'base_url = "{BASE}"\n[output]\ndir = "out"\n[[url]]\nloc = "{BASE}a"\n')
    assert load_any(toml_named_xml).records[0].loc == BASE + "a"
    with pytest.raises(ConfigError, match="not TOML"):
        load_config(make_site(tmp_path / "site"))


def test_toml_url_and_filter_tables(tmp_path: Path) -> None:
    toml = tmp_path / "sitemapkit.toml"
    toml.write_text(
        f'base_url = "{BASE}"\nstate = false\n[output]\ndir = "out"\n\n'
        f'[[url]]\nloc = "{BASE}a~"\n\n[[url]]\nloc = "/b"\nchangefreq = "sometimes"\npriority = 0.5\n\n'
        '[[filter]]\naction = "drop"\npattern = "*~"\n'
    )
    run = sitemapkit("build", str(toml))
    assert run.returncode == 0, run.stderr
    assert f"{toml}:9: error [invalid-value] changefreq 'sometimes'" in run.stderr
    (entry,) = entries_of(tmp_path / "out" / "sitemap.xml").values()
    assert (entry.loc, entry.changefreq, entry.priority) == (BASE + "b", None, 0.5)
    toml.write_text(toml.read_text() + 'type = "glob"\n')
    with pytest.raises(ConfigError, match=r":17: filter\[1\]\.type: must be one of wildcard, regexp"):
        load_config(toml)


def test_to_toml_of_a_sitemapkit_toml_reads_back_the_same(tmp_path: Path) -> None:
    import dataclasses
    import shutil

    examples = Path(__file__).resolve().parents[2] / "examples"
    shutil.copytree(examples, tmp_path / "ex", ignore=shutil.ignore_patterns("out", "build"))
    original = load_config(tmp_path / "ex" / "sitemapkit.toml")
    again = tmp_path / "ex" / "again.toml"
    again.write_text(to_toml(original))
    assert dataclasses.replace(load_config(again), path=original.path) == original
