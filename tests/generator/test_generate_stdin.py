"""`sitemapkit generate -` reads standard input as what it holds, not always as a URL list: JSONL (what
`sitemapkit parse --format jsonl` prints), a CSV with a header, an XML sitemap or index (gzip or not), or a
URL list. Each is run as a whole process with its input through a real pipe, and gives the files the same
input gives as a file named for its kind."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

BASE = "https://example.com/"


def _generate(source: str, out: Path, stdin: bytes | None = None, cwd: Path | None = None) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "sitemapkit", "generate", source, "--base-url", BASE, "--out", str(out)],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        timeout=120,
    )
    return proc.returncode, proc.stderr.decode()


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if not p.name.startswith(".")}


def _same_as_file(tmp_path: Path, name: str, data: bytes) -> dict[str, bytes]:
    """Generate from `data` on standard input and from a file `name` holding it: the same files."""
    (tmp_path / name).write_bytes(data)
    code, err = _generate("-", tmp_path / "piped", data)
    assert code == 0, err
    code, err = _generate(str(tmp_path / name), tmp_path / "named")
    assert code == 0, err
    piped = _files(tmp_path / "piped")
    assert piped == _files(tmp_path / "named")
    return piped


JSONL = [
    {"loc": f"{BASE}a", "lastmod": "2024-01-01", "images": [{"loc": f"{BASE}a.png"}]},
    {
        "loc": f"{BASE}b",
        "alternates": [{"hreflang": "en", "href": f"{BASE}b"}, {"hreflang": "de", "href": f"{BASE}de/b"}],
    },
    {"loc": f"{BASE}de/b", "changefreq": "daily"},
]


@pytest.mark.parametrize("compress", [False, True])
def test_jsonl_as_parse_prints_it(tmp_path: Path, compress: bool) -> None:
    data = "".join(json.dumps(row) + "\n" for row in JSONL).encode()
    name = "in.jsonl.gz" if compress else "in.jsonl"
    files = _same_as_file(tmp_path, name, gzip.compress(data) if compress else data)
    xml = files["sitemap.xml"]
    assert b"<image:loc>https://example.com/a.png</image:loc>" in xml
    # the alternates completed into a group, as for the file: the German page lists the English one too
    assert xml.count(b'hreflang="de"') == 2


def test_a_one_column_csv(tmp_path: Path) -> None:
    xml = _same_as_file(tmp_path, "in.csv", b"URL\r\nhttps://example.com/a\r\n")["sitemap.xml"]
    assert b"<loc>https://example.com/a</loc>" in xml


def test_csv_with_a_header(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbfloc,lastmod,priority\nhttps://example.com/a,2024-01-01,0.5\n/b,2024-01-02,\n"
    xml = _same_as_file(tmp_path, "in.csv", data)["sitemap.xml"]
    assert b"<loc>https://example.com/b</loc><lastmod>2024-01-02</lastmod></url>" in xml


@pytest.mark.parametrize(
    "data",
    [
        b"\n\n  https://example.com/a\t2024-01-01\n/b\n",
        b"https://example.com/url,loc\n",  # a URL that names the header words: still a URL
        b"",
    ],
)
def test_url_lists_stay_url_lists(tmp_path: Path, data: bytes) -> None:
    if not data:
        code, err = _generate("-", tmp_path / "out", data)
        assert code != 0 and "Traceback" not in err and "nothing to publish" in err
        return
    _same_as_file(tmp_path, "in.txt", data)


def test_an_xml_sitemap_gzipped(tmp_path: Path) -> None:
    urls = "".join(
        f"<url><loc>{BASE}p{i}</loc><lastmod>2024-02-0{i % 9 + 1}</lastmod></url>" for i in range(50)
    )
    data = gzip.compress(
        f'<?xml version="1.0"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'.encode()
    )
    xml = _same_as_file(tmp_path, "old.xml.gz", data)["sitemap.xml"]
    assert xml.count(b"<url>") == 50


def test_an_index_on_stdin_reads_its_children_from_the_current_folder(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "maps").mkdir(parents=True)
    (site / "maps" / "s1.xml").write_text(
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://example.com/x</loc>'
        "</url></urlset>"
    )
    index = (
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<sitemap><loc>https://example.com/maps/s1.xml</loc></sitemap>"
        "<sitemap><loc>https://example.com/maps/missing.xml</loc></sitemap></sitemapindex>"
    )
    code, err = _generate("-", tmp_path / "out", index.encode(), cwd=site)
    assert code == 0, err
    assert b"<loc>https://example.com/x</loc>" in (tmp_path / "out" / "sitemap.xml").read_bytes()
    assert "<stdin>" in err and "missing.xml" in err
    assert "not in the current folder (the index came on standard input)" in err


def test_an_html_page_on_stdin_is_reported_not_read_line_by_line(tmp_path: Path) -> None:
    code, err = _generate("-", tmp_path / "out", b"<!doctype html><html><body>Not found</body></html>\n")
    assert code != 0
    assert "[unsupported-format]" in err and "Traceback" not in err
    assert "invalid-url" not in err


def _build(config: Path, stdin: bytes) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "sitemapkit", "build", str(config)],
        input=stdin,
        capture_output=True,
        timeout=120,
    )
    return proc.returncode, proc.stderr.decode()


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("jsonl", b'{"loc": "https://example.com/a"}\n'),
        ("csv", b"loc\nhttps://example.com/a\n"),
        ("list", b"https://example.com/a\n"),
        (
            "sitemap",
            gzip.compress(
                b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                b"<url><loc>https://example.com/a</loc></url></urlset>"
            ),
        ),
    ],
)
def test_a_config_declares_what_standard_input_holds(tmp_path: Path, kind: str, data: bytes) -> None:
    config = tmp_path / "sitemapkit.toml"
    body = f'base_url = "{BASE}"\n\n[output]\ndir = "out"\n\n[[source]]\ntype = "{kind}"\npath = "-"\n'
    config.write_text(body)
    code, err = _build(config, data)
    assert code == 0, err
    assert b"<loc>https://example.com/a</loc>" in (tmp_path / "out" / "sitemap.xml").read_bytes()
    # the same bytes under another declared type: refused, naming what they are, nothing published
    other = "list" if kind != "list" else "jsonl"
    config.write_text(body.replace(f'type = "{kind}"', f'type = "{other}"').replace('"out"', '"out2"'))
    code, err = _build(config, data)
    assert code == 1 and "Traceback" not in err
    assert f"but the configuration declares type = '{other}'" in err
    assert not list((tmp_path / "out2").glob("sitemap*"))


def test_the_kind_does_not_depend_on_how_a_pipe_splits_the_writes(tmp_path: Path) -> None:
    """The first non-blank line is read whole before the kind is told, however the writer splits it."""
    script = (
        "import sys, time\n"
        "for piece in sys.argv[1:]:\n"
        "    sys.stdout.buffer.write(piece.encode('latin-1').decode('unicode_escape').encode('latin-1'))\n"
        "    sys.stdout.flush(); time.sleep(0.3)\n"
    )
    cases = [
        ["\\xef\\xbb\\xbf", "  \\n", '{"loc": "https://example.com/a"}\\n'],
        ["lo", "c,lastmod\\n", "https://example.com/a,2024-01-01\\n"],
    ]
    for i, pieces in enumerate(cases):
        writer = subprocess.Popen([sys.executable, "-c", script, *pieces], stdout=subprocess.PIPE)
        out = tmp_path / f"out{i}"
        proc = subprocess.run(
            [sys.executable, "-m", "sitemapkit", "generate", "-", "--base-url", BASE, "--out", str(out)],
            stdin=writer.stdout,
            capture_output=True,
            timeout=120,
        )
        writer.wait()
        assert proc.returncode == 0, proc.stderr.decode()
        xml = (out / "sitemap.xml").read_bytes()
        assert b"<loc>https://example.com/a</loc>" in xml, xml


def test_closed_standard_input_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; os.close(0); sys.stdin = None; import runpy; "
            f"sys.argv = ['sitemapkit', 'generate', '-', '--base-url', {BASE!r}, "
            f"'--out', {str(tmp_path / 'o')!r}]; runpy.run_module('sitemapkit', run_name='__main__')",
        ],
        capture_output=True,
        timeout=120,
    )
    err = proc.stderr.decode()
    assert proc.returncode != 0 and "Traceback" not in err
    assert "no standard input" in err
