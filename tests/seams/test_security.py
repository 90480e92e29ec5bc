"""What a hostile sitemap, server or file can make sitemapkit do: real misbehaving servers on loopback,
crafted files, each at the CLI where a user meets it (issue 12)."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sitemapkit.cli import main
from sitemapkit.core.constants import MAX_ROBOTS_BYTES
from sitemapkit.generator.writer import SitemapWriter
from sitemapkit.reader.fetch import FetchOptions, FetchPolicy, address_problem, site_of
from sitemapkit.reader.walk import read
from tests.support.localserver import LocalServer, Route
from tests.support.rawserver import raw_server
from tests.support.sitemaps import index, urlset

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def other() -> Iterator[LocalServer]:
    """A second loopback server on another port: the internal service a hostile sitemap points at."""
    s = LocalServer().start()
    try:
        yield s
    finally:
        s.stop()


def secret(other: LocalServer) -> None:
    other.route("/admin", "SECRET_TOKEN=abc123\nDB_PASSWORD=hunter2\n", content_type="text/plain")
    other.route("/a.xml", urlset("https://example.com/internal"))


# -- the fetch policy: private addresses ---------------------------------------------------------------


def test_index_child_on_another_loopback_port_is_not_fetched(server: LocalServer, other: LocalServer) -> None:
    secret(other)
    url = server.route("/index.xml", index(other.url("/admin"), other.url("/a.xml")))
    result = cli("parse", url)
    assert result.exit_code == 0, result.output
    assert other.requests == []
    assert result.stdout == ""
    assert result.stderr.count("[private-address]") == 2
    assert "SECRET_TOKEN" not in result.output and "is a loopback address" in result.stderr

    report = cli("validate", url, "--format", "json")
    assert other.requests == []
    codes = [d["code"] for d in json.loads(report.stdout)["diagnostics"]]
    assert codes.count("private-address") == 2 and "SECRET_TOKEN" not in report.stdout
    assert report.exit_code == 1


@pytest.mark.parametrize("host", ["localhost", "0x7f000001", "127.1"])
def test_other_spellings_of_loopback_are_other_sites(
    server: LocalServer, other: LocalServer, host: str
) -> None:
    secret(other)
    url = server.route("/index.xml", index(f"http://{host}:{other.port}/admin"))
    result = cli("parse", url)
    assert other.requests == []
    assert "[cross-host]" in result.stderr
    # Allowed to leave the site, the address check still holds: the name resolves to loopback.
    result = cli("parse", url, "--follow-cross-host")
    assert other.requests == []
    assert "[private-address]" in result.stderr


def test_redirect_to_another_port_is_not_followed(server: LocalServer, other: LocalServer) -> None:
    secret(other)
    server.redirect("/sitemap.xml", other.url("/a.xml"), status=302)
    server.route("/index.xml", index(server.url("/sitemap.xml")))
    for command in ("parse", "validate"):
        result = cli(command, server.url("/index.xml"))
        assert "[private-address]" in result.output + result.stderr, command
    assert other.requests == []
    assert [r.path for r in server.requests].count("/sitemap.xml") == 2


def test_redirect_to_another_site_is_refused_as_cross_host(server: LocalServer, other: LocalServer) -> None:
    server.redirect("/sitemap.xml", f"http://localhost:{other.port}/a.xml", status=302)
    result = cli("parse", server.url("/sitemap.xml"))
    assert "[cross-host]" in result.stderr and other.requests == []
    assert result.exit_code == 1


def test_robots_sitemap_line_to_a_private_address_is_not_fetched(
    server: LocalServer, other: LocalServer
) -> None:
    secret(other)
    server.route("/robots.txt", f"Sitemap: {other.url('/a.xml')}\n", content_type="text/plain")
    result = cli("parse", server.url("/"))
    assert other.requests == [] and "[private-address]" in result.stderr
    report = cli("validate", server.url("/"))
    assert other.requests == [] and "[private-address]" in report.stdout


def test_allow_private_lets_the_user_reach_internal_hosts(server: LocalServer, other: LocalServer) -> None:
    secret(other)
    url = server.route("/index.xml", index(other.url("/a.xml")))
    result = cli("parse", url, "--allow-private")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["loc"] == "https://example.com/internal"
    # the child is on a host the index chose: its robots.txt is asked first (issue: URLs a site chose get
    # the site's policy)
    assert [r.path for r in other.requests] == ["/robots.txt", "/a.xml"]


def test_the_named_origin_is_trusted_and_its_children_followed(server: LocalServer) -> None:
    server.route("/a.xml", urlset("https://example.com/a"))
    url = server.route("/index.xml", index(server.url("/a.xml")))
    result = cli("parse", url)
    assert json.loads(result.stdout)["loc"] == "https://example.com/a"


def test_policy_units() -> None:
    assert site_of("https://www.example.com/x") == site_of("https://cdn.example.com/") == "example.com"
    assert site_of("https://shop.example.co.uk/") == "example.co.uk"
    assert site_of("https://a.co.uk/") != site_of("https://b.co.uk/")
    assert site_of("http://127.0.0.1:8/") == "127.0.0.1"
    for address in (
        "127.0.0.1",
        "10.1.2.3",
        "169.254.169.254",
        "::1",
        "::ffff:127.0.0.1",
        "224.0.0.1",
        "0.0.0.0",
        "2002:7f00:1::",  # 6to4 of 127.0.0.1
        "2002:a00:1::1",  # 6to4 of 10.0.0.1
        "fec0::1",  # site-local
    ):
        assert address_problem(address) is not None, address
    assert address_problem("93.184.215.14") is None
    assert address_problem("2002:5db8:d70e::1") is None  # 6to4 of a public address
    assert address_problem("2606:2800:220:1:248:1893:25c8:1946") is None
    # a trusted international name is the one the transport judges: its IDNA 2008 form (not `fass.test`)
    idn = FetchPolicy().trusting("http://faß.test:8080/")
    assert idn.connect_problem("xn--fa-hia.test", 8080, "127.0.0.1") is None
    assert idn.connect_problem("fass.test", 8080, "127.0.0.1") is not None
    policy = FetchPolicy().trusting("http://127.0.0.1:8000/sitemap.xml")
    assert policy.connect_problem("127.0.0.1", 8000, "127.0.0.1") is None
    assert policy.connect_problem("127.0.0.1", 8001, "127.0.0.1") is not None
    assert policy.connect_problem("evil.example", 80, "10.0.0.1") is not None


# -- deadlines, retries, cut bodies: servers that misbehave on the wire ----------------------------------


def _trickle(
    first: bytes, each: Callable[[int], bytes], sent_all: threading.Event
) -> Callable[[socket.socket], None]:
    """A script sending `first`, then `each(n)` every 0.2 s for two minutes (no read timeout ever fires),
    and setting `sent_all` only if the client listened that long."""

    def script(conn: socket.socket) -> None:
        conn.sendall(first)
        for n in range(600):
            conn.sendall(each(n))  # raises once the client has hung up
            time.sleep(0.2)
        sent_all.set()

    return script


def test_slow_headers_are_bounded_by_max_duration() -> None:
    sent_all = threading.Event()
    with raw_server(_trickle(b"HTTP/1.1 200 OK\r\n", lambda n: f"X-Slow-{n}: y\r\n".encode(), sent_all)) as s:
        result = cli("parse", s.url("/sitemap.xml"), "--max-duration", "1", "--timeout", "5")
    # the client gave up while the server was still sending headers (not after its two minutes)
    assert not sent_all.is_set()
    assert "no complete answer within 1 s (--max-duration)" in result.stderr
    assert result.exit_code == 1


def test_read_api_honours_fetch_options_max_duration() -> None:
    sent_all = threading.Event()
    first = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + HEAD.encode()
    with raw_server(_trickle(first, lambda _: b" ", sent_all)) as s:
        reader = read(s.url("/sitemap.xml"), fetch_options=FetchOptions(max_duration=1.0))
        assert list(reader) == []
        assert not sent_all.is_set()  # given up while the body still trickled in
    assert any("--max-duration" in d.message for d in reader.diagnostics)


def test_retry_after_sleeps_share_one_budget_per_walk(server: LocalServer) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    locs = [server.route(f"/s{n}.xml", "", status=503, headers={"Retry-After": "60"}) for n in range(10)]
    url = server.route("/index.xml", index(*locs))
    options = FetchOptions(sleep=sleep, retries=3, retry_after_max=60.0, retry_budget=150.0)
    reader = read(url, fetch_options=options)
    list(reader)
    # the budget pays for two Retry-After waits of 60 s: two sitemaps are asked again, no more (a wait
    # holds the whole host back, so the other downloads wait it out too, unpaid by the budget)
    asked = [r.path for r in server.requests if r.path.startswith("/s")]
    assert len(asked) == 12 and len(set(asked)) == 10
    assert slept and max(slept) <= 60.0
    assert [d.code for d in reader.diagnostics].count("http-error") == 10


def cpu_seconds() -> float:
    """CPU time used so far by this process and its finished children: unlike the wall clock, not
    stretched by other processes using the machine."""
    return sum(os.times()[:4])


def entries(n: int) -> bytes:
    return "".join(f"<url><loc>https://example.com/p{i}</loc></url>\n" for i in range(n)).encode()


@pytest.mark.parametrize("how", ["cut", "stall"])
def test_complete_entries_received_before_a_cut_or_a_stall_are_kept(how: str) -> None:
    body = f'{HEAD}<urlset xmlns="{NS}">\n'.encode() + entries(1000) + b"<url><loc>https://exa"
    outwaited = threading.Event()  # a stall the client sat through to its end (its timeout never fired)

    def script(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n" + body)
        if how == "stall":
            conn.settimeout(120)
            try:
                conn.recv(1)  # b"" when the client hangs up
            except TimeoutError:
                outwaited.set()

    with raw_server(script) as s:
        result = cli("parse", s.url("/sitemap.xml"), "--timeout", "1", "--format", "csv")
        report = cli("validate", s.url("/sitemap.xml"), "--timeout", "1", "--format", "json")
    assert not outwaited.is_set()
    assert result.stdout.count("https://example.com/p") == 1000, result.stderr
    assert "[http-error]" in result.stderr and "truncated" not in result.stdout
    assert json.loads(report.stdout)["summary"]["urls"] == 1000


# -- bounded walks ---------------------------------------------------------------------------------------


def peak_rss_mb(args: list[str], seconds: float) -> tuple[float, str]:
    """Run the CLI in a subprocess for at most `seconds`; its peak RSS (VmHWM) in MB and its stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "sitemapkit", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak = 0.0
    deadline = time.monotonic() + seconds
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(OSError), open(f"/proc/{proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]) / 1024)
            time.sleep(0.1)
    finally:
        proc.kill()
        _, err = proc.communicate()
    return peak, err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_an_index_of_indexes_bomb_stays_in_flat_memory(server: LocalServer) -> None:
    """Every sitemap an index of 50,000 more: the walk records at most --max-sitemaps nodes (the old walk
    queued every child of every index read, 25 MB more per index, 1.5 GB after 71 fetches)."""
    width = 50_000

    def handler(request: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        prefix = request.path.removesuffix(".xml")
        body = index(*(f"{server.base}{prefix}-{i}.xml" for i in range(width))).encode()
        return 200, {"Content-Type": "application/xml"}, body

    class EveryPath(dict[str, Route]):
        def get(self, key: str, default: object = None) -> Route:  # type: ignore[override]
            return Route(handler=handler)

    server.routes = EveryPath()
    peak, err = peak_rss_mb(["parse", server.url("/root.xml"), "--sitemaps"], 15.0)
    assert len(server.requests) >= 3, err  # it did walk on
    assert peak < 110, f"peak RSS {peak:.0f} MB"
    assert "[walk-limit]" in err


def test_walk_bounds_at_the_cli(server: LocalServer) -> None:
    for i in range(5):
        server.route(f"/c{i}.xml", index(*(server.url(f"/c{i}-{j}.xml") for j in range(5))))
        for j in range(5):
            server.route(f"/c{i}-{j}.xml", urlset(f"https://example.com/{i}/{j}"))
    url = server.route("/root.xml", index(*(server.url(f"/c{i}.xml") for i in range(5))))
    result = cli("parse", url, "--max-sitemaps", "8")
    assert result.stdout.count("https://example.com/") == 2  # root + its 5 + 2 of c0: 8 sitemaps
    assert "[walk-limit]" in result.stderr and "--max-sitemaps" in result.stderr
    fetched = {r.path for r in server.requests}
    assert "/c0-3.xml" not in fetched and "/c1-0.xml" not in fetched
    result = cli("parse", url, "--max-children", "2")
    assert result.stdout.count("https://example.com/") == 4
    assert "3 more children past the first 2" in result.stderr


# -- robots.txt: publishing and reading ------------------------------------------------------------------


def test_a_robots_txt_linked_outside_the_output_folder_is_not_rewritten(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere" / "important.txt"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(b"keep me\n")
    inode = elsewhere.stat().st_ino
    pub = tmp_path / "pub"
    pub.mkdir()
    (pub / "index.html").write_text("<html><title>x</title></html>")
    (pub / "robots.txt").symlink_to(elsewhere)
    result = cli(
        "generate", "--dir", str(pub), "--base-url", "https://example.com/", "--out", str(pub),
        "--robots", str(pub / "robots.txt"),
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "symbolic link" in result.output and "outside its folder" in result.output
    assert elsewhere.read_bytes() == b"keep me\n" and elsewhere.stat().st_ino == inode
    assert not (pub / "sitemap.xml").exists()  # refused before anything was published
    robots = cli("robots", "--robots", str(pub / "robots.txt"), "--sitemap", "https://example.com/s.xml")
    assert robots.exit_code != 0 and elsewhere.read_bytes() == b"keep me\n"


def test_a_robots_txt_linked_inside_its_folder_is_edited_in_place_of_the_target(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    real = tmp_path / "real" / "robots.txt"
    real.write_bytes(b"User-agent: *\n")
    (tmp_path / "robots.txt").symlink_to(real)
    result = cli("robots", "--robots", str(tmp_path / "robots.txt"), "--sitemap", "https://example.com/s.xml")
    assert result.exit_code == 0, result.output
    assert (
        tmp_path / "robots.txt"
    ).is_symlink() and b"Sitemap: https://example.com/s.xml" in real.read_bytes()


def test_a_robots_txt_with_bytes_that_are_not_utf8_is_edited_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "r.txt"
    path.write_bytes(b"User-agent: *\x0bDisallow: /caf\xe9 # website\n")
    result = cli("robots", "--robots", str(path), "--sitemap", "https://example.com/sitemap.xml")
    assert result.exit_code == 0, result.output
    assert "[encoding-error]" in result.output
    data = path.read_bytes()
    assert data.startswith(b"User-agent: *\x0bDisallow: /caf\xe9 # website\n")
    assert b"Sitemap: https://example.com/sitemap.xml\n" in data


def test_a_robots_txt_cut_at_the_read_limit_does_not_use_its_cut_line(server: LocalServer) -> None:
    line = f"Sitemap: {server.url('/sitemap.xml')}\n".encode()
    pad = b"# " + b"x" * 97 + b"\n"
    body = line + pad * ((MAX_ROBOTS_BYTES - len(line) - 10) // len(pad))
    body += b"\n" * (MAX_ROBOTS_BYTES - 10 - len(body)) + line  # the limit falls inside this line
    server.route("/robots.txt", body, content_type="text/plain")
    server.route("/sitemap.xml", urlset("https://example.com/a"))
    result = cli("parse", server.url("/"))
    assert result.exit_code == 0, result.stderr
    assert {r.path for r in server.requests} == {"/robots.txt", "/sitemap.xml"}


def test_gzip_inside_gzip_content_encoding_is_streamed_and_keeps_what_came_before_the_cap(
    server: LocalServer,
) -> None:
    inner = gzip.compress(f'{HEAD}<urlset xmlns="{NS}">\n'.encode() + entries(1000) + b" " * 120_000_000, 1)
    url = server.route("/sitemap.xml", gzip.compress(inner, 1), headers={"Content-Encoding": "gzip, gzip"})
    result = cli("parse", url, "--format", "csv")
    assert result.stdout.count("https://example.com/p") == 1000, result.stderr
    assert "[compression-error]" in result.stderr and "decodes to more than" in result.stderr


# -- temporary files of killed runs ----------------------------------------------------------------------


def temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith((".tmp", ".lock")))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kill -9 and flock")
def test_temporary_files_of_a_killed_run_are_removed_by_the_next(tmp_path: Path) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text("".join(f"https://example.com/p{i}\n" for i in range(600_000)))
    out = tmp_path / "pub"
    out.mkdir()
    (out / ".robots.txt.0123abcd.tmp").write_text("not the writer's")  # a name sitemapkit's writer never uses
    args = ["generate", str(urls), "--base-url", "https://example.com/", "--out", str(out), "--hreflang"]
    args += ["complete", "--max-urls", "1000"]

    def writer_temps() -> list[str]:
        return [n for n in temps(out) if n.endswith(".tmp") and not n.startswith(".robots")]

    proc = subprocess.Popen([sys.executable, "-m", "sitemapkit", *args], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(writer_temps()) < 3:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert len(writer_temps()) >= 3 and any(n.endswith(".lock") for n in temps(out)), temps(out)
    urls.write_text("https://example.com/a\n")
    result = cli(*args[:4], "--out", str(out))
    assert result.exit_code == 0, result.output
    assert temps(out) == [".robots.txt.0123abcd.tmp"]
    assert (out / "sitemap.xml").is_file()


def test_a_live_run_keeps_its_temporary_files(tmp_path: Path) -> None:
    with SitemapWriter(tmp_path, "https://example.com/", max_urls=1, hreflang="complete") as first:
        first.add("https://example.com/a")
        first.add("https://example.com/b")
        held = temps(tmp_path)
        assert any(n.endswith(".tmp") for n in held) and any(n.endswith(".lock") for n in held)
        with SitemapWriter(tmp_path, "https://example.com/", name="other") as second:
            second.add("https://example.com/c")
            assert set(held) <= set(temps(tmp_path))
    assert temps(tmp_path) == []
    assert first.result is not None and first.result.urls == 2


# -- long lines in text inputs ---------------------------------------------------------------------------


def generate(tmp_path: Path, *inputs: Path, more: tuple[str, ...] = ()) -> Result:
    out = tmp_path / "out"
    return cli("generate", *map(str, inputs), "--base-url", "https://example.com/", "--out", str(out), *more)


def published(tmp_path: Path) -> str:
    return (tmp_path / "out" / "sitemap.xml").read_text()


@pytest.mark.parametrize("suffix", [".txt", ".jsonl", ".csv"])
def test_a_huge_line_in_a_text_input_is_skipped_with_its_line_number(tmp_path: Path, suffix: str) -> None:
    row = {
        ".txt": lambda u: u,
        ".jsonl": lambda u: json.dumps({"loc": u}),
        ".csv": lambda u: u,
    }[suffix]
    head = "loc\n" if suffix == ".csv" else ""
    path = tmp_path / f"urls{suffix}"
    huge = "https://example.com/" + "x" * 3_000_000
    path.write_text(
        head + row("https://example.com/a") + "\n" + row(huge) + "\n" + row("https://example.com/b") + "\n"
    )
    result = generate(tmp_path, path)
    assert result.exit_code == 0, result.output
    line = 3 if suffix == ".csv" else 2
    assert f"{path}:{line}: error [bad-line] longer than 1,048,576 bytes" in result.output
    text = published(tmp_path)
    assert "https://example.com/a" in text and "https://example.com/b" in text and "xxxx" not in text


def test_a_csv_cell_over_the_csv_field_limit_is_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "urls.csv"
    path.write_text(
        'loc,lastmod\nhttps://example.com/a,2024-01-01\n"' + "y" * 200_000 + '",x\nhttps://example.com/b,\n'
    )
    result = generate(tmp_path, path)
    assert result.exit_code == 0, result.output
    assert f"{path}:3: error [bad-line] not a valid CSV row (field larger than field limit" in result.output
    assert "https://example.com/b" in published(tmp_path)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_100_mb_line_is_read_in_flat_memory(tmp_path: Path) -> None:
    path = tmp_path / "urls.txt"
    with open(path, "wb") as f:
        f.write(b"https://example.com/a\nhttps://example.com/")
        for _ in range(100):
            f.write(b"x" * 1_000_000)
        f.write(b"\nhttps://example.com/b\n")
    args = ["generate", str(path), "--base-url", "https://example.com/", "--out", str(tmp_path / "out")]
    peak, err = peak_rss_mb(args, 120.0)
    assert f"{path}:2: error [bad-line] longer than" in err
    assert peak < 150, f"peak RSS {peak:.0f} MB"
    assert "https://example.com/b" in published(tmp_path)


def log_line(path: str, agent: str) -> str:
    return f'1.2.3.4 - - [10/Oct/2024:13:55:36 +0000] "GET {path} HTTP/1.1" 200 12 "-" "{agent}"\n'


def test_access_log_lines_with_huge_quoted_fields(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    log.write_text(
        log_line("/a", "x" * 900_000) + log_line("/big", "y" * 3_000_000) + log_line("/b", "Mozilla")
    )
    started = cpu_seconds()  # CPU time: what the machine's load does not stretch
    result = generate(tmp_path, more=("--log", str(log)))
    assert cpu_seconds() - started < 10  # 0.05 s here: the bound only catches a pathological cost
    assert result.exit_code == 0, result.output
    assert f"{log}:2: error [bad-line] longer than 1,048,576 bytes" in result.output
    text = published(tmp_path)
    assert "https://example.com/a" in text and "https://example.com/b" in text and "/big" not in text


def test_validate_follows_a_child_on_an_allowed_host(server: LocalServer, other: LocalServer) -> None:
    other.route("/a.xml", urlset(f"http://localhost:{other.port}/x"))
    url = server.route("/index.xml", index(f"http://localhost:{other.port}/a.xml"))
    report = cli("validate", url, "--format", "json")
    assert "cross-host" in report.stdout and other.requests == []
    report = cli("validate", url, "--format", "json", "--allow-host", "localhost", "--allow-private")
    assert "cross-host" not in report.stdout
    # the child is on a host the index chose: its robots.txt is asked first
    assert [r.path for r in other.requests] == ["/robots.txt", "/a.xml"]


def test_a_body_that_is_not_a_sitemap_is_never_echoed(server: LocalServer, other: LocalServer) -> None:
    secret(other)
    url = server.route("/index.xml", index(other.url("/admin")))
    result = cli("parse", url, "--allow-private")
    report = cli("validate", url, "--allow-private")
    for out in (result.stderr, report.stdout):
        assert "[unsupported-format]" in out and "is not an absolute http(s) URL" in out
        assert "[invalid-url]" not in out and "SECRET" not in out and "hunter2" not in out
    assert report.stdout.count("    | ") == 1  # the index line's excerpt; none of the body
    # (the index chose that host: its robots.txt is asked first, by each run)
    assert [r.path for r in other.requests] == ["/robots.txt", "/admin", "/robots.txt", "/admin"]


# -- the DOCTYPE screen and chunk boundaries -------------------------------------------------------------


def test_a_quoted_gt_does_not_get_a_doctype_past_the_screen(tmp_path: Path) -> None:
    path = tmp_path / "s.xml"
    path.write_text(
        '<!DOCTYPE urlset SYSTEM "x><urlset" [<!ENTITY x SYSTEM "http://127.0.0.1:9/">]>\n'
        f'<urlset xmlns="{NS}"><url><loc>https://example.com/a</loc></url></urlset>\n'
    )
    for command in ("parse", "validate"):
        result = cli(command, str(path))
        assert "[forbidden-doctype]" in result.stdout + result.stderr, command
        assert result.exit_code == 1


def test_a_quoted_gt_in_the_root_tag_at_a_chunk_boundary(tmp_path: Path) -> None:
    path = tmp_path / "s.xml"
    head = f'<urlset xmlns="{NS}" data-note="'
    pad = "x" * (65_535 - len(head) - 1)  # the quoted ">" lands at byte 65,535: the end of the first read
    path.write_text(
        head + pad + 'a>b">' + "".join(f"<url><loc>https://example.com/{i}</loc></url>" for i in range(5))
    )
    path.write_text(path.read_text() + "</urlset>\n")
    assert path.read_bytes().index(b"a>b") + 1 == 65_535
    result = cli("parse", str(path), "--format", "csv")
    assert result.stdout.count("https://example.com/") == 5, result.stderr


# -- CPU per hostile byte --------------------------------------------------------------------------------


@pytest.mark.parametrize(("junk", "limit"), [(b"&" * 20_000_000, 60.0), (b"\x00" * 8_000_000, 20.0)])
def test_runs_of_hostile_bytes_cost_linear_time(tmp_path: Path, junk: bytes, limit: float) -> None:
    """20 MB of `&` in one <loc> took 260 s (13 s a MB, each `&` fed to lxml alone), 8 MB of NUL 40 s.
    Measured in CPU time (`cpu_seconds`), which the machine's load does not stretch: about 1.8 s and
    1.6 s here, so the limits (33 and 12 times that) catch only the old cost."""
    path = tmp_path / "s.xml.gz"
    head = f'<urlset xmlns="{NS}"><url><loc>https://example.com/a</loc></url><url><loc>https://example.com/'
    tail = "</loc></url><url><loc>https://example.com/b</loc></url></urlset>"
    path.write_bytes(gzip.compress(head.encode() + junk + tail.encode(), 9))
    started = cpu_seconds()
    result = cli("parse", str(path), "--format", "csv")
    took = cpu_seconds() - started
    assert took < limit, f"{took:.1f} s of CPU"
    assert "https://example.com/a" in result.stdout and "https://example.com/b" in result.stdout


def test_a_file_of_broken_entries_stops_after_the_error_cap(tmp_path: Path) -> None:
    """Each broken entry costs a fresh XML parser: 200,000 of them took 40 s; past 1,000 fatal errors with
    fewer than one good entry per ten, reading stops."""
    path = tmp_path / "s.xml"
    head = f'<urlset xmlns="{NS}"><url><loc>https://example.com/a</loc></url>'
    path.write_bytes(head.encode() + b"<url>\x01</url>" * 150_000 + b"</urlset>")
    started = cpu_seconds()  # 0.12 s of CPU here: the bound (over 100 times that) catches only the old cost
    result = cli("parse", str(path), "--format", "csv", "--max-diagnostics", "5000")
    assert cpu_seconds() - started < 15
    assert "https://example.com/a" in result.stdout
    assert "too broken to read further" in result.stderr
    # a file with as many good entries as broken ones is read to its end
    good = "".join(f"<url><loc>https://example.com/{i}</loc></url><url>\x01</url>" for i in range(1500))
    path.write_text(f'<urlset xmlns="{NS}">{good}</urlset>')
    result = cli("parse", str(path), "--format", "csv")
    assert result.stdout.count("https://example.com/") == 1500
