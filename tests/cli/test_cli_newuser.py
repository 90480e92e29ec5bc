"""Regression tests for what a new user hit end to end (issue 11), each at the level the user meets it:
the command line, run in a subprocess (or click's CliRunner where the output is all that matters)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from sitemapkit.cli import main
from tests.support.helpers import locs, published
from tests.support.localserver import LocalServer

BASE = "https://example.com/"


def run(*args: str, cwd: Path | None = None, user: str | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m sitemapkit ARGS` in a subprocess; as `user` (through setpriv) when given."""
    command = [sys.executable, "-m", "sitemapkit", *args]
    env = dict(os.environ)
    if user is not None:
        command = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *command]
        src = str(Path(__file__).resolve().parents[2] / "src")
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=cwd, env=env)


@pytest.fixture
def unprivileged() -> Iterator[tuple[Path, str | None]]:
    """A folder and the user to run the CLI as, so that permissions are enforced: the current user when it
    is not root; as root, `nobody` through setpriv (the folder is then open to it); else the test skips."""
    if os.geteuid() != 0:
        with tempfile.TemporaryDirectory() as folder:
            yield Path(folder), None
        return
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: permissions cannot be enforced")
    import pwd

    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("running as root and there is no user 'nobody' to drop privileges to")
    probe = run("--version", user=str(nobody.pw_uid))
    if probe.returncode != 0:  # say a checkout under a folder only root may enter (mktemp -d makes 0700)
        pytest.skip(f"'nobody' cannot run sitemapkit from this checkout: {probe.stderr.strip()[-200:]}")
    folder = Path(tempfile.mkdtemp(prefix="sitemapkit-nobody-"))
    try:
        folder.chmod(0o755)
        os.chown(folder, nobody.pw_uid, nobody.pw_gid)
        yield folder, str(nobody.pw_uid)
    finally:
        for dirpath, dirnames, _ in os.walk(folder):
            for d in dirnames:
                os.chmod(os.path.join(dirpath, d), 0o755)
        shutil.rmtree(folder)


def _chown_tree(root: Path, user: str | None) -> None:
    if user is None:
        return
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            os.chown(os.path.join(dirpath, name), int(user), -1)
    os.chown(root, int(user), -1)


def page(text: str = "x", head: str = "") -> str:
    return f"<html><head><title>t</title>{head}</head><body><p>{text}</p></body></html>"


# 1. crashes -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("state", [False, True])
def test_a_file_name_that_is_not_utf8_is_listed_percent_encoded(tmp_path: Path, state: bool) -> None:
    site = tmp_path / "p"
    site.mkdir()
    (site / "b.html").write_text(page())
    with open(os.path.join(os.fsencode(site), b"caf\xe9.html"), "w") as f:
        f.write(page("caf"))
    out = tmp_path / "o"
    args = ["generate", "--dir", str(site), "--base-url", BASE, "--out", str(out), "--explain"]
    proc = run(*args, *(["--state", str(tmp_path / "s.db")] if state else []))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert locs(out / "sitemap.xml") == [f"{BASE}b.html", f"{BASE}caf%E9.html"]


def test_a_source_file_name_that_is_not_utf8_is_named_in_diagnostics(tmp_path: Path) -> None:
    name = os.path.join(os.fsencode(tmp_path), b"urls-\xe9.csv")
    with open(name, "w") as f:
        f.write(f"loc,lastmod\n{BASE}a,2024-01-01\n{BASE}b,not-a-date\n")
    out = tmp_path / "o"
    proc = run("generate", os.fsdecode(name), "--base-url", BASE, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "urls-\\xe9.csv:3: " in proc.stderr
    assert locs(out / "sitemap.xml") == [f"{BASE}a", f"{BASE}b"]


def test_an_output_folder_that_cannot_be_written_is_a_clean_error(
    unprivileged: tuple[Path, str | None],
) -> None:
    root, user = unprivileged
    (root / "site").mkdir()
    (root / "site" / "a.html").write_text(page())
    out = root / "out"
    out.mkdir()
    _chown_tree(root, user)
    out.chmod(0o555)
    proc = run("generate", "--dir", "site", "--base-url", BASE, "--out", "out", cwd=root, user=user)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (
        "sitemapkit generate: out: cannot write in the output folder (Permission denied); "
        "nothing was published"
    )
    assert list(out.iterdir()) == []


def test_a_state_store_or_robots_txt_that_cannot_be_written_publishes_nothing(
    unprivileged: tuple[Path, str | None],
) -> None:
    root, user = unprivileged
    (root / "site").mkdir()
    (root / "site" / "a.html").write_text(page())
    locked = root / "locked"
    locked.mkdir()
    (locked / "robots.txt").write_text("User-agent: *\nDisallow:\n")
    _chown_tree(root, user)
    locked.chmod(0o555)
    common = ("generate", "--dir", "site", "--base-url", BASE, "--out", "out")
    for extra, message in [
        (("--state", "locked/s.db"), "sitemapkit generate: locked/s.db: cannot create the state database"),
        (
            ("--state", "locked/sub/s.db"),
            "sitemapkit generate: locked/sub: cannot create the folder (Permission denied)",
        ),
        (("--robots", "locked/robots.txt"), "sitemapkit generate: locked/robots.txt: cannot be written"),
    ]:
        proc = run(*common, *extra, cwd=root, user=user)
        assert proc.returncode == 1, extra
        assert proc.stderr.startswith(message), proc.stderr
        assert not (root / "out" / "sitemap.xml").exists()


# 3-5. silent losses ------------------------------------------------------------------------------------


def test_an_unreadable_subfolder_is_reported_and_its_pages_are_not_recorded_as_removed(
    unprivileged: tuple[Path, str | None],
) -> None:
    root, user = unprivileged
    site = root / "pub"
    (site / "sub").mkdir(parents=True)
    (site / "a.html").write_text(page("a"))
    (site / "c.html").write_text(page("c"))
    (site / "sub" / "b.html").write_text(page("b"))
    _chown_tree(root, user)
    args = ("generate", "--dir", "pub", "--base-url", BASE, "--out", "out", "--state", "s.db", "--json")
    first = run(*args, cwd=root, user=user)
    assert first.returncode == 0, first.stderr
    (site / "sub").chmod(0)
    (site / "c.html").chmod(0)
    second = run(*args, cwd=root, user=user)
    (site / "sub").chmod(0o755)
    (site / "c.html").chmod(0o644)
    assert second.returncode == 0, second.stderr
    summary = json.loads(second.stdout)
    problems = sorted((d["source"].rsplit("/", 1)[-1], d["message"]) for d in summary["diagnostics"])
    assert [p[0] for p in problems] == ["c.html", "sub"]
    assert all(d["code"] == "page-unreadable" for d in summary["diagnostics"])
    assert problems[0][1].startswith("cannot be read (Permission denied)")
    assert problems[1][1].startswith("the folder cannot be read (Permission denied)")
    assert summary["sources"]["state"]["removed"] == 0
    assert summary["totals"]["errors"] == 2
    assert locs(root / "out" / "sitemap.xml") == [f"{BASE}a.html"]
    diff = run("diff", "--state", "s.db", cwd=root, user=user)
    assert "sub/b.html" not in diff.stdout and "c.html" not in diff.stdout, diff.stdout


def test_include_adds_to_the_html_pages(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "a.html").write_text(page())
    (site / "doc.pdf").write_bytes(b"%PDF-1.4")
    (site / "b.txt").write_text("b")
    out = tmp_path / "out"
    args = ["generate", "--dir", str(site), "--base-url", BASE, "--out", str(out), "--include", "*.pdf"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert locs(out / "sitemap.xml") == [f"{BASE}a.html", f"{BASE}doc.pdf"]
    result = CliRunner().invoke(main, [*args, "--exclude", "*.html"])  # only some pages: exclude the rest
    assert locs(out / "sitemap.xml") == [f"{BASE}doc.pdf"]
    help_text = CliRunner().invoke(main, ["generate", "--help"]).output
    assert "HTML pages are always listed" in help_text and "--exclude the others" in help_text


def test_index_never_refuses_several_files_it_could_not_announce(tmp_path: Path) -> None:
    src = tmp_path / "urls.txt"
    src.write_text("".join(f"{BASE}p{i}\n" for i in range(5)))
    out, robots = tmp_path / "out", tmp_path / "robots.txt"
    args = ["generate", str(src), "--base-url", BASE, "--out", str(out), "--index", "never"]
    result = CliRunner().invoke(main, [*args, "--max-urls", "2", "--robots", str(robots), "--json"])
    assert result.exit_code == 1
    assert "the 5 URLs need 3 files, but without an index only one file can be announced" in result.stderr
    assert list(out.iterdir()) == [] and not robots.exists()
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0 and "submit: https://example.com/sitemap.xml" in result.output


# 6-15. wrong output ----------------------------------------------------------------------------------


def test_space_separated_fields_of_a_url_list(tmp_path: Path) -> None:
    src = tmp_path / "urls.txt"
    src.write_text(
        f"{BASE}a 2024-01-01\n{BASE}b 2024-01-02 daily 0.5\n{BASE}c lastmod=2024-01-03 priority=0.3\n"
        f"{BASE}d e f\n{BASE}g\t2024-01-04\tweekly\n{BASE}h 2024-01-05\n"
    )
    out = tmp_path / "out"
    proc = run("generate", str(src), "--base-url", BASE, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    xml = (out / "sitemap.xml").read_text()
    assert f"<loc>{BASE}a</loc><lastmod>2024-01-01</lastmod>" in xml
    assert (
        f"<loc>{BASE}b</loc><lastmod>2024-01-02</lastmod><changefreq>daily</changefreq>"
        "<priority>0.5</priority>" in xml
    )
    assert f"<loc>{BASE}c</loc><lastmod>2024-01-03</lastmod><priority>0.3</priority>" in xml
    assert f"<loc>{BASE}d%20e%20f</loc>" in xml
    assert f"<loc>{BASE}h</loc><lastmod>2024-01-05</lastmod>" in xml
    warnings = proc.stderr.strip().splitlines()
    assert len(warnings) == 2, proc.stderr
    assert warnings[0].startswith(f"{src}:1: warning [bad-line] fields separated by spaces, not TABs")
    assert warnings[1].startswith(f"{src}:4: warning [bad-line] the URL '{BASE}d e f' has spaces in it")


@pytest.mark.parametrize("clean_urls", [False, True])
def test_the_declared_canonical_wins_over_the_file_name(tmp_path: Path, clean_urls: bool) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "clean.html").write_text(page("c", f'<link rel="canonical" href="{BASE}clean">'))
    (site / "self.html").write_text(page("s", f'<link rel="canonical" href="{BASE}self.html">'))
    (site / "plain.html").write_text(page("p"))
    (site / "http.html").write_text(page("h", '<link rel="canonical" href="http://example.com/http.html">'))
    out = tmp_path / "out"
    args = ["generate", "--dir", str(site), "--base-url", BASE, "--out", str(out)]
    proc = run(*args, *(["--clean-urls"] if clean_urls else []))
    assert proc.returncode == 0, proc.stderr
    plain = f"{BASE}plain" if clean_urls else f"{BASE}plain.html"
    assert locs(out / "sitemap.xml") == [f"{BASE}clean", plain, f"{BASE}self.html"]
    assert "http.html: warning [url-not-allowed] <link rel=canonical> http://example.com/http.html" in (
        proc.stderr
    )


def test_a_first_state_build_invents_no_lastmod_and_validates_clean(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    for i in range(150):
        (site / f"p{i:03}.html").write_text(page(f"page {i}"))
    ld = '<script type="application/ld+json">{"@type": "Article", "dateModified": "2024-03-01T10:00:00Z"}'
    (site / "article.html").write_text(page("a", ld + "</script>"))
    og = '<meta property="article:modified_time" content="2024-04-01">'
    (site / "news.html").write_text(page("n", og))
    out, state = tmp_path / "out", tmp_path / "state.db"
    args = ["generate", "--dir", str(site), "--base-url", BASE, "--out", str(out), "--state", str(state)]
    first = run(*args)
    assert first.returncode == 0, first.stderr
    xml = (out / "sitemap.xml").read_text()
    assert xml.count("<lastmod>") == 2
    assert f"<loc>{BASE}article.html</loc><lastmod>2024-03-01T10:00:00+00:00</lastmod>" in xml
    assert f"<loc>{BASE}news.html</loc><lastmod>2024-04-01</lastmod>" in xml
    check = run("validate", str(out / "sitemap.xml"), "--url", f"{BASE}sitemap.xml")
    assert check.returncode == 0 and "lastmod-uniform" not in check.stdout + check.stderr, check.stdout
    # the store moves lastmod only on real changes, to the run's time
    (site / "p007.html").write_text(page("page 7, edited"))
    (site / "p200.html").write_text(page("a new page"))
    second = run(*args)
    assert second.returncode == 0, second.stderr
    xml = (out / "sitemap.xml").read_text()
    assert xml.count("<lastmod>") == 4
    assert f"<loc>{BASE}p007.html</loc><lastmod>" in xml and f"<loc>{BASE}p200.html</loc><lastmod>" in xml


def test_future_partial_and_impossible_dates_in_a_list(tmp_path: Path) -> None:
    src = tmp_path / "urls.txt"
    src.write_text(
        f"{BASE}a\t9999-12-31\n{BASE}b\t2024\n{BASE}c\t2024-05\n{BASE}d\t2024-05-01T10:00:00+15:00\n"
        f"{BASE}e\t2024-05-01T10:00:00+14:00\n"
    )
    out = tmp_path / "out"
    proc = run("generate", str(src), "--base-url", BASE, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    xml = (out / "sitemap.xml").read_text()
    assert f"<loc>{BASE}a</loc></url>" in xml and f"<loc>{BASE}d</loc></url>" in xml
    assert f"<loc>{BASE}b</loc><lastmod>2024-01-01</lastmod>" in xml
    assert f"<loc>{BASE}c</loc><lastmod>2024-05-01</lastmod>" in xml
    assert f"<loc>{BASE}e</loc><lastmod>2024-05-01T10:00:00+14:00</lastmod>" in xml
    assert f"{src}:1: warning [future-date] lastmod 9999-12-31 lies in the future" in proc.stderr
    assert f"{src}:2: warning [invalid-date] lastmod '2024' names a year" in proc.stderr
    assert f"{src}:3: warning [invalid-date] lastmod '2024-05' names a month" in proc.stderr
    assert f"{src}:4: error [invalid-date] lastmod '2024-05-01T10:00:00+15:00'" in proc.stderr
    assert "offset beyond 14 hours" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 4, proc.stderr
    bad = tmp_path / "bad.xml"
    bad.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        f"<url><loc>{BASE}d</loc><lastmod>2024-05-01T10:00:00+15:00</lastmod></url>\n</urlset>\n"
    )
    check = run("validate", str(bad))
    assert check.returncode == 1 and "error [invalid-date]" in check.stdout + check.stderr


def test_fragments_are_dropped_in_generate_and_flagged_by_validate(tmp_path: Path) -> None:
    src = tmp_path / "urls.txt"
    src.write_text(f"{BASE}x#a\n{BASE}x#b\n{BASE}x\n{BASE}y#top\n")
    out = tmp_path / "out"
    proc = run("generate", str(src), "--base-url", BASE, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert locs(out / "sitemap.xml") == [f"{BASE}x", f"{BASE}y"]
    assert proc.stderr.count("[invalid-url]") == 1 and proc.stderr.count("[duplicate-url]") == 2
    assert "has a fragment" in proc.stderr
    bad = tmp_path / "bad.xml"
    bad.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        f"<url><loc>{BASE}x#a</loc></url>\n<url><loc>{BASE}x</loc></url>\n</urlset>\n"
    )
    check = run("validate", str(bad), "--format", "json")
    codes = [(d["code"], d["severity"], d["line"]) for d in json.loads(check.stdout)["diagnostics"]]
    assert codes == [("invalid-url", "warning", 3), ("duplicate-url", "warning", 4)], codes


def test_json_runs_that_fail_print_a_json_summary(tmp_path: Path) -> None:
    src = tmp_path / "urls.txt"
    src.write_text(f"{BASE}a\nhttps://other.org/b\n")
    out = tmp_path / "out"
    # strict: a problem, so nothing is published
    proc = run("generate", str(src), "--base-url", BASE, "--out", str(out), "--strict", "--json")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["ok"] is False and "strict mode" in data["error"] and data["entry_url"] is None
    assert [d["code"] for d in data["diagnostics"]] == ["url-not-allowed"] and data["errors"] == 1
    # an input that cannot be read
    proc = run("generate", str(tmp_path / "missing.txt"), "--base-url", BASE, "--out", str(out), "--json")
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"].endswith(
        "cannot open (No such file or directory)"
    )
    # a usage error (exit 2) too
    proc = run("generate", "--base-url", BASE, "--out", str(out), "--json")
    assert proc.returncode == 2 and json.loads(proc.stdout)["ok"] is False
    # build with a broken config, robots.txt that cannot be read
    (tmp_path / "sitemapkit.toml").write_text("base_url = 1\n")
    proc = run("build", str(tmp_path / "sitemapkit.toml"), "--json")
    assert proc.returncode == 1 and json.loads(proc.stdout)["ok"] is False
    (tmp_path / "robots.txt").mkdir()
    args = ["robots", "--robots", str(tmp_path / "robots.txt"), "--sitemap", f"{BASE}sitemap.xml", "--json"]
    proc = run(*args)
    assert proc.returncode == 1 and json.loads(proc.stdout)["ok"] is False
    # and a run that succeeds says ok: true
    proc = run("generate", str(src), "--base-url", BASE, "--out", str(out), "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["ok"] is True


def test_exclude_is_one_rule_on_url_paths_for_every_source(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "drafts").mkdir(parents=True)
    (site / "a.html").write_text(page("a"))
    (site / "drafts" / "d.html").write_text(page("d"))
    urls = tmp_path / "urls.txt"
    urls.write_text(f"{BASE}drafts/x\n{BASE}b\n")
    log = tmp_path / "access.log"
    log.write_text(
        '127.0.0.1 - - [10/Oct/2024:13:55:36 +0000] "GET /drafts/y HTTP/1.1" 200 100\n'
        '127.0.0.1 - - [10/Oct/2024:13:55:36 +0000] "GET /c HTTP/1.1" 200 100\n'
    )
    out = tmp_path / "out"
    args = [str(urls), "--dir", str(site), "--log", str(log), "--base-url", BASE, "--out", str(out)]
    proc = run("generate", *args, "--exclude", "/drafts/*", "--exclude", "/nothing/*")
    assert proc.returncode == 0, proc.stderr
    assert locs(out / "sitemap.xml") == [f"{BASE}b", f"{BASE}a.html", f"{BASE}c"]
    assert proc.stderr.strip() == "warning: --exclude '/nothing/*' matched no URL (patterns match URL paths)"
    proc = run("generate", *args, "--exclude", "drafts/*")  # a file-style glob: told how to write it
    assert proc.returncode == 2 and "write '/drafts/*'" in proc.stderr


def test_clean_urls_apply_to_every_source_of_the_build(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "a").mkdir(parents=True)
    (site / "p1.html").write_text(page("1"))
    (site / "a" / "index.html").write_text(page("a"))
    log = tmp_path / "access.log"
    log.write_text(
        "".join(
            f'127.0.0.1 - - [10/Oct/2024:13:55:36 +0000] "GET {p} HTTP/1.1" 200 100\n'
            for p in ("/p1.html", "/a/index.html", "/p2.html", "/doc.pdf")
        )
    )
    urls = tmp_path / "urls.txt"
    urls.write_text(f"{BASE}p1.html\n/p3.htm\nhttps://cdn.example.net/x.html\n")
    out = tmp_path / "out"
    proc = run(
        "generate", str(urls), "--dir", str(site), "--clean-urls", "--log", str(log), "--base-url", BASE,
        "--out", str(out), "--allow-host", "cdn.example.net",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # the same page from several sources is one entry (merged), under its clean URL
    assert sorted(locs(out / "sitemap.xml")) == sorted(
        [
            f"{BASE}p1",
            f"{BASE}p3",
            "https://cdn.example.net/x.html",  # another host: not this folder's page
            f"{BASE}a/",
            f"{BASE}doc.pdf",
            f"{BASE}p2",
        ]
    )
    assert "[duplicate-url]" not in proc.stderr, proc.stderr  # p1 (list, log) and a/ (log) were merged


def test_access_logs_drop_probes_and_scanners_and_keep_absolute_form_requests(tmp_path: Path) -> None:
    def line(target: str, agent: str = "Mozilla/5.0 (X11; Linux x86_64)") -> str:
        return f'1.2.3.4 - - [10/Oct/2024:13:55:36 +0000] "GET {target} HTTP/1.1" 200 100 "-" "{agent}"\n'

    log = tmp_path / "access.log"
    log.write_text(
        line("/.env")
        + line("/.git/config")
        + line("/../../etc/passwd")
        + line("/a/%2e%2e/%2e%2e/etc/shadow")
        + line("/wp-login.php", "Mozilla/5.0 zgrab/0.x")
        + line("/admin", "sqlmap/1.7")
        + line("/page", "python-requests/2.31")
        + line("http://example.com/x")
        + line("https://EXAMPLE.com/y?z=1")
        + line("http://other.org/z")
        + line("/a/../b")
        + line("/kept")
        + line("/mine", "MyMonitor/1.0")
    )
    out = tmp_path / "out"
    args = ["generate", "--log", str(log), "--base-url", BASE, "--out", str(out)]
    proc = run(*args, "--exclude-agent", "mymonitor")
    assert proc.returncode == 0, proc.stderr
    assert locs(out / "sitemap.xml") == [f"{BASE}b", f"{BASE}kept", f"{BASE}x", f"{BASE}y?z=1"]
    help_text = CliRunner().invoke(main, ["generate", "--help"]).output
    assert "--exclude-agent" in help_text


def test_no_cap_hides_a_code_and_an_index_own_findings_come_first(tmp_path: Path) -> None:
    index = tmp_path / "sitemap.xml"
    index.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        + "".join(f"<sitemap><loc>{BASE}s{i}.xml</loc></sitemap>\n" for i in range(50_001))
        + "</sitemapindex>\n"
    )
    args = ["validate", str(index), "--url", f"{BASE}sitemap.xml"]
    text = CliRunner().invoke(main, args)
    assert text.exit_code == 1
    # the index's own findings first (the 50,001st child is past the walk's bound: walk-limit), then its
    # children's; every code counted in the summary however many are shown
    lines = [line for line in text.output.splitlines() if "error [" in line or "warning [" in line]
    assert len(lines) == 100 and "[too-many-sitemaps]" in lines[0] and "[walk-limit]" in lines[1]
    assert "[read-error]" in lines[2]
    assert "by code: read-error 50,000, too-many-sitemaps 1, walk-limit 1" in text.output
    data = json.loads(CliRunner().invoke(main, [*args, "--format", "json", "--max-errors", "5"]).output)
    assert [d["code"] for d in data["diagnostics"]][:3] == ["too-many-sitemaps", "walk-limit", "read-error"]
    assert data["summary"]["codes"] == {"read-error": 50_000, "too-many-sitemaps": 1, "walk-limit": 1}


@pytest.mark.parametrize("name", ["urls.txt", "urls.csv", "urls.jsonl"])
def test_diagnostics_do_not_echo_a_huge_input_line(tmp_path: Path, name: str) -> None:
    huge = "x" * 500_000  # long, but under the 1 MiB line bound (a longer line is skipped: test_security)
    src = tmp_path / name
    body = {
        "urls.txt": f"{BASE}{huge}\n{BASE}ok\n{BASE}b\tnot-a-date-{huge}\n",
        # a cell over the csv module's limit is a bad line, not a traceback
        "urls.csv": f"loc,lastmod\n{BASE}{huge},\n{BASE}ok,\n{BASE}b,not-a-date-{huge[:100_000]}\n",
        "urls.jsonl": f'{{"loc": "{BASE}{huge}"}}\n{{"loc": "{BASE}ok"}}\n'
        f'{{"loc": "{BASE}b", "lastmod": "{huge}"}}\n',
    }[name]
    src.write_text(body)
    out = tmp_path / "out"
    proc = run("generate", str(src), "--base-url", BASE, "--out", str(out))
    assert proc.returncode == 0, proc.stderr[:2000]
    assert locs(out / "sitemap.xml") == [f"{BASE}ok", f"{BASE}b"]
    assert 0 < len(proc.stderr) < 12_000, len(proc.stderr)
    assert "characters left out" in proc.stderr


# 16-25. misleading messages and rough edges ------------------------------------------------------------


def test_messages_say_what_is_wrong(tmp_path: Path) -> None:
    src = tmp_path / "urls.txt"
    src.write_text(
        f"{BASE}a\nhttps://example.com:8443/b\nhttp://example.com/c\nhttps://other.org/d\n"
        f"{BASE}{'x' * 600}\n{BASE}sub/ok\n"
    )
    out = tmp_path / "out"
    sub = "https://example.com/sub/"
    proc = run("generate", str(src), "--base-url", sub, "--out", str(out), "--max-bytes", "700")
    assert proc.returncode == 0, proc.stderr
    assert "port 8443 differs from the sitemap's 443" in proc.stderr and "None" not in proc.stderr
    hints = [line for line in proc.stderr.splitlines() if "[url-not-allowed]" in line]
    assert len(hints) == 5 and sum("--allow-host" in h for h in hints) == 1, hints  # only other.org
    proc = run("generate", str(src), "--base-url", BASE, "--out", str(out), "--max-bytes", "700")
    assert "a sitemap holding only this entry would take" in proc.stderr
    assert "for the header and footer), more than the 700 allowed" in proc.stderr
    proc = run("generate", str(src), "--base-url", BASE, "--out", str(out), "--max-bytes", "50")
    assert proc.returncode == 2 and "max_bytes must be from" in proc.stderr
    # another set's file, /dev/null, a folder given as a list
    (tmp_path / "three.txt").write_text(f"{BASE}1\n{BASE}2\n{BASE}3\n")
    three = ["generate", str(tmp_path / "three.txt"), "--base-url", BASE, "--out", str(tmp_path / "set")]
    assert run(*three, "--max-urls", "1").returncode == 0
    proc = run(*three, "--name", "sitemap-2")
    assert proc.returncode == 1 and "belongs to the sitemap set named 'sitemap'" in proc.stderr
    proc = run("generate", str(src), "--base-url", BASE, "--out", os.devnull)
    assert proc.returncode == 1 and "not a folder" in proc.stderr and "File exists" not in proc.stderr
    proc = run("generate", str(tmp_path), "--base-url", BASE, "--out", str(out))
    assert proc.returncode == 1 and f"use --dir {tmp_path}" in proc.stderr


def test_ctrl_c_exits_130_with_one_line(tmp_path: Path) -> None:
    import signal
    import time

    out = tmp_path / "out"
    command = [sys.executable, "-m", "sitemapkit", "generate", "-", "--base-url", BASE, "--out", str(out)]
    proc = subprocess.Popen(
        [*command, "--hreflang", "complete"], stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdin is not None
    proc.stdin.write(f"{BASE}x\n" * 1000)
    proc.stdin.flush()
    deadline = time.monotonic() + 60
    while not any(p.name.endswith(".tmp") for p in out.glob(".*")) and time.monotonic() < deadline:
        time.sleep(0.05)  # until the run has started writing (not a timing assertion)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip() == "sitemapkit generate: interrupted; nothing was published"
    assert list(out.iterdir()) == []


def test_options_that_do_not_apply_are_named_and_name_takes_a_file_name(tmp_path: Path) -> None:
    src = tmp_path / "urls.txt"
    src.write_text(f"{BASE}a\n")
    out = tmp_path / "out"
    args = ["generate", str(src), "--base-url", BASE, "--out", str(out), "--name", "x.xml"]
    proc = run(*args, "--clean-urls", "--min-hits", "5", "--images", "--volatile", ".x")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        "warning: --clean-urls, --images, --volatile only apply with --dir, which was not given; ignored",
        "warning: --min-hits only applies with --log, which was not given; ignored",
    ]
    assert published(out) == ["x.xml"]


def test_volatile_regex_leaves_text_out_of_the_content_hash(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "a.html").write_text(page("Built at build-1"))
    out, state = tmp_path / "out", tmp_path / "s.db"
    args = ["generate", "--dir", str(site), "--base-url", BASE, "--out", str(out), "--state", str(state)]
    args += ["--volatile-regex", r"build-\d+", "--json"]
    assert run(*args).returncode == 0
    (site / "a.html").write_text(page("Built at build-2"))
    second = json.loads(run(*args).stdout)
    assert second["sources"]["state"]["changed"] == 0 and second["sources"]["state"]["unchanged"] == 1


def test_csv_exports_as_they_come(tmp_path: Path) -> None:
    short = tmp_path / "short.csv"
    short.write_text(f"Address,Status,lastmod,priority\n{BASE}a,200\n{BASE}b,200,2024-01-02,0.5\n")
    semi = tmp_path / "semi.csv"
    semi.write_text(f"URL;lastmod\n{BASE}c;2024-01-03\n")
    typo = tmp_path / "typo.csv"
    typo.write_text(f"loc,lastmodified\n{BASE}d,2024-01-04\n")
    out = tmp_path / "out"
    proc = run("generate", str(short), str(semi), "--base-url", BASE, "--out", str(out), "--strict")
    assert proc.returncode == 0, proc.stderr  # extra columns and short rows are no problem, even --strict
    xml = (out / "sitemap.xml").read_text()
    assert f"<loc>{BASE}a</loc></url>" in xml
    assert f"<loc>{BASE}b</loc><lastmod>2024-01-02</lastmod><priority>0.5</priority>" in xml
    assert f"<loc>{BASE}c</loc><lastmod>2024-01-03</lastmod>" in xml
    proc = run("generate", str(typo), "--base-url", BASE, "--out", str(out))
    assert "column 'lastmodified' is not read; did you mean 'lastmod'?" in proc.stderr


def test_jsonl_drops_only_the_bad_extension_item_and_speaks_json(tmp_path: Path) -> None:
    src = tmp_path / "urls.jsonl"
    rows = [
        {
            "loc": f"{BASE}a",
            "images": [{"loc": f"{BASE}1.png"}, {"loc": {"x": None}}, {"loc": f"{BASE}2.png"}],
            "videos": [{"oops": True}],
        },
        {
            "loc": f"{BASE}b",
            "news": {"name": "X", "language": "en", "title": "t", "publication_date": "2024"},
        },
    ]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    proc = run("generate", str(src), "--base-url", BASE, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    xml = (out / "sitemap.xml").read_text()
    assert f"<image:loc>{BASE}1.png</image:loc>" in xml and f"<image:loc>{BASE}2.png</image:loc>" in xml
    assert 'images[1].loc: unexpected value {"x": null}; this image is dropped' in proc.stderr
    assert "videos[0]: unknown field oops" in proc.stderr
    assert "did you mean language -> publication_language, name -> publication_name?" in proc.stderr
    assert "{'x': None}" not in proc.stderr


def test_an_rss_date_without_a_known_zone_is_reported_and_left_out(tmp_path: Path) -> None:
    feed = tmp_path / "feed.xml"
    items = [
        ("a", "Tue, 10 Jun 2003 04:00:00 GMT"),
        ("b", "05 Jan 17 13:34:55"),
        ("c", "05 Jan 17 13:34:55 XYZ"),
        ("d", "Tue, 10 Jun 2003 04:00:00 +1500"),
    ]
    feed.write_text(
        '<?xml version="1.0"?>\n<rss version="2.0"><channel><title>t</title>\n'
        + "".join(f"<item><link>{BASE}{n}</link><pubDate>{d}</pubDate></item>\n" for n, d in items)
        + "</channel></rss>\n"
    )
    check = run("validate", str(feed), "--format", "json")
    bad = [(d["code"], d["url"]) for d in json.loads(check.stdout)["diagnostics"]]
    assert bad == [("invalid-date", f"{BASE}{n}") for n in "bcd"], bad
    parsed = run("parse", str(feed), "--format", "jsonl")
    lastmods = {row["loc"]: row["lastmod"] for row in map(json.loads, parsed.stdout.splitlines())}
    assert lastmods == {
        f"{BASE}a": "2003-06-10T04:00:00+00:00",
        f"{BASE}b": None,
        f"{BASE}c": None,
        f"{BASE}d": None,
    }


def test_the_summary_speaks_plainly(tmp_path: Path) -> None:
    src = tmp_path / "urls.txt"
    src.write_text(f"{BASE}a\n")
    out = tmp_path / "out"
    proc = run("generate", str(src), "--base-url", BASE, "--out", str(out), "--gzip")
    assert proc.returncode == 0, proc.stderr
    size = (out / "sitemap.xml.gz").stat().st_size
    assert f"sitemap.xml.gz  1 URL  {size:,} bytes gzipped, " in proc.stdout
    assert "published 1 URL in 1 file; 0 rejected, 0 duplicates; 0 errors, 0 warnings" in proc.stdout


def test_ipv6_hosts_are_canonical_and_a_name_that_does_not_resolve_is_not_retried(tmp_path: Path) -> None:
    src = tmp_path / "urls.txt"
    src.write_text("http://[0:0::1]:8080/c\nhttp://[::FFFF:1.2.3.4]:8080/d\n")
    out = tmp_path / "out"
    proc = run("generate", str(src), "--base-url", "http://[::1]:8080/", "--out", str(out))
    assert proc.returncode == 0 and "[url-not-allowed]" in proc.stderr  # only the second host differs
    assert locs(out / "sitemap.xml") == ["http://[::1]:8080/c"]
    proc = run("validate", "https://no-such-host.invalid/sitemap.xml")
    if "Temporary failure" in proc.stdout + proc.stderr:
        pytest.skip("this machine's resolver cannot say that a name does not exist")
    assert proc.returncode == 1 and "; 1 attempt)" in proc.stdout + proc.stderr


def test_build_stamps_and_cache_busting_queries_are_not_changes(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()

    def build(stamp: str, version: str, text: str = "Hello") -> None:
        body = f'<p>{text}</p><p>Last built: {stamp}</p><img src="/a.png?v={version}" alt="a">'
        (site / "a.html").write_text(f"<html><head><title>t</title></head><body>{body}</body></html>")

    out, state = tmp_path / "out", tmp_path / "s.db"
    args = [
        "generate",
        "--dir",
        str(site),
        "--base-url",
        BASE,
        "--out",
        str(out),
        "--state",
        str(state),
        "--json",
    ]
    build("2026-12-01T10:00:00Z", "abc123")
    assert run(*args).returncode == 0
    build("2026-12-02T11:30:00Z", "def456")
    assert json.loads(run(*args).stdout)["sources"]["state"]["changed"] == 0
    build("2026-12-03T09:00:00Z", "0a1b2c", "Hello, edited")
    assert json.loads(run(*args).stdout)["sources"]["state"]["changed"] == 1


def test_build_names_the_config_file_as_given(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text('base_url = "https://example.com/"\n[output]\ndir = 5\n')
    (tmp_path / "broken.toml").write_text("base_url = \n")
    for name in ("bad.toml", "broken.toml"):
        proc = run("build", name, cwd=tmp_path)
        assert proc.returncode == 1 and proc.stderr.startswith(f"sitemapkit build: {name}:"), proc.stderr


def test_parse_sitemaps_shows_the_size_of_robots_txt(server: LocalServer) -> None:
    sitemap = server.route(
        "/s.xml",
        '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{server.url('/a')}</loc></url></urlset>\n",
    )
    robots = f"User-agent: *\nDisallow:\nSitemap: {sitemap}\n"
    server.route("/robots.txt", robots, content_type="text/plain")
    result = CliRunner().invoke(main, ["parse", server.url("/"), "--sitemaps"])
    assert result.exit_code == 0, result.output
    first = result.stdout.splitlines()[0]
    assert first.startswith(f"{server.url('/robots.txt')}  robots  200  1 sitemap  {len(robots):,} bytes"), (
        first
    )


def test_filters_and_defaults_have_a_command_line_form(tmp_path: Path) -> None:
    src = tmp_path / "urls.txt"
    src.write_text(f"{BASE}blog/a\n{BASE}about\n{BASE}blog/b\t\tdaily\n")
    out = tmp_path / "out"
    args = ["generate", str(src), "--base-url", BASE, "--out", str(out), "--only", "/blog/*"]
    proc = run(*args, "--only", "/x/*", "--default", "/blog/*=weekly,0.6")
    assert proc.returncode == 0, proc.stderr
    xml = (out / "sitemap.xml").read_text()
    assert f"<loc>{BASE}blog/a</loc><changefreq>weekly</changefreq><priority>0.6</priority>" in xml
    assert f"<loc>{BASE}blog/b</loc><changefreq>daily</changefreq><priority>0.6</priority>" in xml
    assert "about" not in xml
    assert proc.stderr.strip() == "warning: --only '/x/*' matched no URL (patterns match URL paths)"
    proc = run(*args, "--default", "/blog/*=often")
    assert proc.returncode == 2 and "changefreq must be one of" in proc.stderr


@pytest.mark.parametrize("gz", [False, True])
def test_the_download_cap_is_reported_once(server: LocalServer, gz: bool) -> None:
    import gzip as gzip_module

    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        + "".join(f"<url><loc>https://example.com/{i}</loc></url>\n" for i in range(5000))
        + "</urlset>\n"
    ).encode()
    if gz:
        body = gzip_module.compress(body, compresslevel=0)  # stored: the cap cuts the gzip stream too
    url = server.route("/big.xml.gz" if gz else "/big.xml", body)
    result = CliRunner().invoke(main, ["parse", url, "--max-download", "20000"])
    assert result.exit_code == 0, result.stderr
    codes = [line.split("[", 1)[1].split("]", 1)[0] for line in result.stderr.splitlines() if "[" in line]
    assert codes == ["download-too-large"], result.stderr


def test_validate_counts_a_missing_child_as_a_file_with_or_without_url(
    tmp_path: Path, server: LocalServer
) -> None:
    index = tmp_path / "sitemap.xml"
    index.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        f"<sitemap><loc>{server.url('/sitemap-1.xml')}</loc></sitemap>\n</sitemapindex>\n"
    )
    without = CliRunner().invoke(main, ["validate", str(index)])
    with_url = CliRunner().invoke(main, ["validate", str(index), "--url", server.url("/sitemap.xml")])
    for result in (without, with_url):
        assert result.exit_code == 1
        assert result.output.splitlines()[-1] == "2 files, 0 URLs: 1 error, 0 warnings", result.output
