"""robots.txt `Sitemap:` lines: real files on disk for the edge cases, hypothesis for the byte-exact rules."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protego import Protego

from sitemapkit.core.constants import MAX_ROBOTS_BYTES
from sitemapkit.core.diagnostics import CODES, Diagnostic, Severity
from sitemapkit.core.errors import InputError, PublishError, UsageError
from sitemapkit.core.urls import normalize_url
from sitemapkit.generator.robots import (
    BEGIN_MARKER,
    END_MARKER,
    _write_atomically,
    begin_marker,
    edit_robots_text,
    end_marker,
    robots_warnings,
    update_robots,
    update_robots_text,
)

BOM = b"\xef\xbb\xbf"
BEGIN = BEGIN_MARKER.encode()
END = END_MARKER.encode()
S = "https://example.com/sitemap.xml"
S2 = "https://example.com/news-sitemap.xml"
OLD = "https://example.com/old-sitemap.xml"
OTHER = "https://cdn.example.net/sitemaps/products.xml"

GROUPS = (
    b"# robots.txt for example.com\n"
    b"\n"
    b"User-agent: Googlebot\n"
    b"Disallow: /search\n"
    b"Allow: /search/about\n"
    b"\n"
    b"User-agent: Bingbot\n"
    b"User-agent: Slurp\n"
    b"Crawl-delay: 5\n"
    b"Disallow: /tmp/  # scratch space\n"
    b"\n"
    b"User-agent: *\n"
    b"Disallow: /admin/\n"
)


def codes(diagnostics: tuple[Diagnostic, ...] | list[Diagnostic]) -> list[str]:
    return [d.code for d in diagnostics]


def block(*urls: str, eol: bytes = b"\n") -> bytes:
    """The managed block listing `urls`, without a line ending after its END line."""
    return eol.join([BEGIN, *(b"Sitemap: " + u.encode() for u in urls), END])


# --- files on disk -------------------------------------------------------------------------------


def test_missing_file_is_created_with_just_the_block(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    result = update_robots(path, [S])
    assert result.status == "created"
    assert path.read_bytes() == block(S) + b"\n"
    assert (result.added, result.removed, result.kept) == ((S,), (), ())
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
    assert [p.name for p in tmp_path.iterdir()] == ["robots.txt"]  # no temporary file left behind


def test_missing_file_and_nothing_to_list_creates_nothing(tmp_path: Path) -> None:
    result = update_robots(tmp_path / "robots.txt", [])
    assert result.status == "unchanged"
    assert not (tmp_path / "robots.txt").exists()


def test_missing_folder_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope.*does not exist"):
        update_robots(tmp_path / "nope" / "robots.txt", [S])


def test_folder_instead_of_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a folder"):
        update_robots(tmp_path, [S])


def test_groups_comments_and_blank_lines_are_kept_and_the_block_appended(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_bytes(GROUPS)
    result = update_robots(path, [S, S2])
    assert result.status == "updated"
    assert path.read_bytes() == GROUPS + b"\n" + block(S, S2) + b"\n"
    assert Protego.parse(path.read_text()).can_fetch("https://example.com/search", "Googlebot") is False
    assert list(Protego.parse(path.read_text()).sitemaps) == [S, S2]


def test_bom_and_crlf_are_kept_and_new_lines_use_crlf(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    original = BOM + GROUPS.replace(b"\n", b"\r\n")
    path.write_bytes(original)
    update_robots(path, [S])
    assert path.read_bytes() == original + b"\r\n" + block(S, eol=b"\r\n") + b"\r\n"


def test_dominant_line_ending_wins_in_a_mixed_file(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_bytes(b"User-agent: *\r\nDisallow: /a\nDisallow: /b\r\nDisallow: /c\r\n")
    update_robots(path, [S])
    assert path.read_bytes().endswith(b"/c\r\n\r\n" + block(S, eol=b"\r\n") + b"\r\n")


def test_cr_only_line_endings(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_bytes(b"User-agent: *\rDisallow: /x\r")
    update_robots(path, [S])
    assert path.read_bytes() == b"User-agent: *\rDisallow: /x\r\r" + block(S, eol=b"\r") + b"\r"


def test_no_final_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_bytes(b"User-agent: *\nDisallow: /private")
    update_robots(path, [S])
    assert path.read_bytes() == b"User-agent: *\nDisallow: /private\n\n" + block(S)
    assert update_robots(path, [S]).status == "unchanged"
    update_robots(path, [S, S2])
    assert path.read_bytes() == b"User-agent: *\nDisallow: /private\n\n" + block(S, S2)


def test_second_run_changes_nothing_and_does_not_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_bytes(GROUPS)
    update_robots(path, [S, S2])
    before = path.stat()
    result = update_robots(path, [S, S2])
    assert result.status == "unchanged"
    assert (result.added, result.removed, result.kept) == ((), (), (S, S2))
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


@pytest.mark.parametrize(
    "line",
    [
        b"sitemap: https://example.com/sitemap.xml",
        b"SITEMAP : https://example.com/sitemap.xml",
        b"Sitemap:https://example.com/sitemap.xml",
        b"  Sitemap:\thttps://EXAMPLE.com:443/sitemap.xml   # the main one",
        b"Sitemap https://example.com/sitemap.xml",
    ],
)
def test_an_existing_line_in_any_case_is_not_duplicated(tmp_path: Path, line: bytes) -> None:
    path = tmp_path / "robots.txt"
    original = b"User-agent: *\nDisallow:\n" + line + b"\n\n# other sites\nSitemap: " + OTHER.encode() + b"\n"
    path.write_bytes(original)
    result = update_robots(path, [S])
    assert result.status == "unchanged"
    assert result.kept == (S,)
    assert path.read_bytes() == original


def test_only_the_missing_urls_are_added_when_one_is_listed_elsewhere(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_bytes(b"sitemap: " + S.encode() + b"\nUser-agent: *\nDisallow:\n")
    result = update_robots(path, [S, S2])
    assert (result.added, result.kept) == ((S2,), (S,))
    assert (
        path.read_bytes() == b"sitemap: " + S.encode() + b"\nUser-agent: *\nDisallow:\n\n" + block(S2) + b"\n"
    )


def test_a_previously_managed_url_is_removed_and_foreign_lines_kept(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_bytes(GROUPS + b"Sitemap: " + OTHER.encode() + b"\n")
    update_robots(path, [S, OLD])
    result = update_robots(path, [S])
    assert (result.added, result.removed, result.kept) == ((), (OLD,), (S,))
    assert path.read_bytes() == GROUPS + b"Sitemap: " + OTHER.encode() + b"\n\n" + block(S) + b"\n"


def test_the_block_is_updated_where_it_is(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    head = b"# top\n\n"
    tail = b"\n" + GROUPS
    old_block = b"#  begin SITEMAPKIT\nsitemap: " + OLD.encode() + b"\n#END sitemapkit, by hand\n"
    path.write_bytes(head + old_block + tail)
    result = update_robots(path, [S, S2])
    assert (result.added, result.removed) == ((S, S2), (OLD,))
    assert path.read_bytes() == head + block(S, S2) + b"\n" + tail


def test_a_sitemap_line_added_below_the_block_is_not_taken_for_ours(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    update_robots(path, [S, OLD])
    with open(path, "ab") as handle:
        handle.write(b"Sitemap: " + OTHER.encode() + b"\n")
    result = update_robots(path, [S])
    assert (result.removed, result.kept) == ((OLD,), (S,))
    assert path.read_bytes() == block(S) + b"\nSitemap: " + OTHER.encode() + b"\n"


def test_other_lines_put_inside_the_block_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    inner = b"# note: keep this\nUser-agent: *\nDisallow: /x\n"
    path.write_bytes(BEGIN + b"\nSitemap: " + OLD.encode() + b"\n" + inner + END + b"\n")
    update_robots(path, [S])
    assert path.read_bytes() == BEGIN + b"\nSitemap: " + S.encode() + b"\n" + inner + END + b"\n"
    assert update_robots(path, [S]).status == "unchanged"
    update_robots(path, [])
    assert path.read_bytes() == inner


def test_a_begin_line_without_its_end_takes_only_the_sitemap_lines_below_it(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    original = BEGIN + b"\nSitemap: " + OLD.encode() + b"\n\nSitemap: " + OTHER.encode() + b"\n"
    path.write_bytes(original)
    result = update_robots(path, [S])
    assert result.removed == (OLD,)
    assert path.read_bytes() == block(S) + b"\n\nSitemap: " + OTHER.encode() + b"\n"


def test_a_second_block_is_merged_into_the_first_and_a_stray_end_dropped(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_bytes(block(OLD) + b"\n\n" + GROUPS + block(S2) + b"\n" + END + b"\n")
    update_robots(path, [S, S2])
    assert path.read_bytes() == block(S, S2) + b"\n\n" + GROUPS


def test_named_blocks_are_kept_apart(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    posts, pages = "https://example.com/posts.xml", "https://example.com/pages.xml"
    path.write_bytes(GROUPS + b"\n" + block(S) + b"\n")
    update_robots(path, [OLD], name="posts")
    update_robots(path, [pages, S], name="pages")  # S is in the unnamed block already
    result = update_robots(path, [posts, pages], name="posts")  # pages is in the "pages" block
    assert (result.added, result.removed, result.kept) == ((posts,), (OLD,), (pages,))
    named = b"\n".join(
        [begin_marker("posts").encode(), b"Sitemap: " + posts.encode(), end_marker("posts").encode()]
    )
    pages_block = b"\n".join(
        [begin_marker("pages").encode(), b"Sitemap: " + pages.encode(), end_marker("pages").encode()]
    )
    assert path.read_bytes() == GROUPS + b"\n" + block(S) + b"\n\n" + named + b"\n\n" + pages_block + b"\n"
    assert update_robots(path, [S]).status == "unchanged"  # the unnamed block ignores the named ones
    update_robots(path, [], name="posts")
    assert path.read_bytes() == GROUPS + b"\n" + block(S) + b"\n\n\n" + pages_block + b"\n"


@pytest.mark.parametrize("name", ["", "two words", "a/b", "-x", "ü"])
def test_a_bad_block_name_is_a_usage_error(name: str) -> None:
    with pytest.raises(UsageError, match="block name"):
        edit_robots_text(b"", [S], name=name)


def test_an_empty_list_removes_the_block_but_not_other_lines(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_bytes(GROUPS + b"\n" + block(S, OLD) + b"\nSitemap: " + OTHER.encode() + b"\n")
    result = update_robots(path, [])
    assert result.removed == (S, OLD)
    assert path.read_bytes() == GROUPS + b"\nSitemap: " + OTHER.encode() + b"\n"


def test_remove_takes_out_a_named_line_anywhere(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    original = (
        b"Sitemap: " + OLD.encode() + b"\r\nsitemap: /relative.xml\r\n" + GROUPS.replace(b"\n", b"\r\n")
    )
    path.write_bytes(original + block(S, eol=b"\r\n") + b"\r\n")
    result = update_robots(path, None, remove=["HTTPS://Example.com/old-sitemap.xml", "/relative.xml"])
    assert (result.status, result.removed, result.kept) == ("updated", (OLD, "/relative.xml"), (S,))
    assert path.read_bytes() == GROUPS.replace(b"\n", b"\r\n") + block(S, eol=b"\r\n") + b"\r\n"


def test_remove_without_sitemaps_keeps_the_managed_lines(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_bytes(block(S, OLD) + b"\n")
    result = update_robots(path, None, remove=[OLD])
    assert (result.removed, result.kept) == ((OLD,), (S,))
    assert path.read_bytes() == block(S) + b"\n"


def test_undecodable_bytes_are_kept_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    original = b"User-agent: *\nDisallow: /caf\xe9\n# \xff\xfe\x00 junk\n"
    path.write_bytes(original)
    seen: list[Diagnostic] = []
    result = update_robots(path, [S], on_diagnostic=seen.append)
    assert path.read_bytes() == original + b"\n" + block(S) + b"\n"
    assert codes(seen) == codes(result.diagnostics) == ["encoding-error"]
    assert seen[0].severity is Severity.WARNING and seen[0].line == 2
    assert "0xe9" in seen[0].message


def test_a_file_over_500_kib_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    original = b"User-agent: *\n" + b"Disallow: /some/long/path\n" * 25_000
    assert len(original) > MAX_ROBOTS_BYTES
    path.write_bytes(original)
    with pytest.raises(InputError, match=re.escape(str(path)) + r": 650,014 bytes, more than the 512,000"):
        update_robots(path, [S])
    assert path.read_bytes() == original


def test_a_file_of_exactly_500_kib_is_read_but_may_not_grow_past_it(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    original = b"User-agent: *\n" + b"#" * (MAX_ROBOTS_BYTES - 15) + b"\n"
    assert len(original) == MAX_ROBOTS_BYTES
    path.write_bytes(original)
    assert update_robots(path, []).status == "unchanged"
    with pytest.raises(InputError, match=r"would grow to .* Nothing was written"):
        update_robots(path, [S])
    assert path.read_bytes() == original


def test_permissions_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_bytes(GROUPS)
    path.chmod(0o640)
    update_robots(path, [S])
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_symbolic_link_is_followed_and_kept(tmp_path: Path) -> None:
    real = tmp_path / "shared" / "robots.txt"
    real.parent.mkdir()
    real.write_bytes(GROUPS)
    link = tmp_path / "robots.txt"
    link.symlink_to(real)
    update_robots(link, [S])
    assert link.is_symlink()
    assert real.read_bytes() == GROUPS + b"\n" + block(S) + b"\n"


def test_dry_run_writes_nothing_and_shows_a_diff(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    path.write_bytes(b"User-agent: *\nDisallow:\n" + block(OLD))
    result = update_robots(path, [S], dry_run=True)
    assert result.status == "updated" and result.dry_run
    assert path.read_bytes() == b"User-agent: *\nDisallow:\n" + block(OLD)
    assert result.diff() == (
        f"--- a/{path}\n+++ b/{path}\n@@ -1,5 +1,5 @@\n User-agent: *\n Disallow:\n"
        f" {BEGIN_MARKER}\n-Sitemap: {OLD}\n+Sitemap: {S}\n {END_MARKER}\n\\ No newline at end of file\n"
    )
    missing = update_robots(tmp_path / "new.txt", [S], dry_run=True)
    assert missing.status == "created" and not (tmp_path / "new.txt").exists()
    assert missing.diff().startswith("--- /dev/null\n")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("/sitemap.xml", "relative URL"),
        ("sitemap.xml", "relative URL"),
        ("ftp://example.com/sitemap.xml", "not http or https"),
        ("https:///sitemap.xml", "no host"),
        ("https://example.com/sitemap.xml#top", "fragment"),
    ],
)
def test_sitemap_urls_must_be_absolute_http(tmp_path: Path, url: str, reason: str) -> None:
    path = tmp_path / "robots.txt"
    with pytest.raises(UsageError, match=re.escape(repr(url)) + ".*" + reason):
        update_robots(path, [S, url])
    assert not path.exists()


def test_a_url_to_list_and_remove_at_once_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="both a sitemap to list and one to remove"):
        edit_robots_text(b"", [S], remove=["HTTPS://EXAMPLE.COM/sitemap.xml"])


# --- warnings about rules that keep crawlers away ------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        (b"User-agent: *\nDisallow: /\n", ["robots-disallows-root", "robots-disallows-sitemap"]),
        (b"User-agent: *\nDisallow: /sitemap\n", ["robots-disallows-sitemap"]),
        (b"User-agent: Googlebot\nDisallow: /*.xml$\n", ["robots-disallows-sitemap"]),
        (b"User-agent: *\nDisallow: /\nAllow: /$\nAllow: /sitemap.xml\n", []),
        (b"User-agent: BadBot\nDisallow: /\n", []),
        (b"User-agent: *\nDisallow:\n", []),
        (b"User-agent: *\nDisallow: /admin/\n", []),
    ],
)
def test_disallow_warnings(tmp_path: Path, rules: bytes, expected: list[str]) -> None:
    path = tmp_path / "robots.txt"
    path.write_bytes(rules)
    result = update_robots(path, [S])
    assert sorted(codes(result.diagnostics)) == expected
    for d in result.diagnostics:
        assert d.source == str(path) and d.severity is Severity.WARNING and d.code in CODES


def test_disallow_warning_names_the_agents_and_the_url() -> None:
    found = robots_warnings(b"User-agent: googlebot\nDisallow: /sitemap.xml\n", [S], source="robots.txt")
    assert [str(d) for d in found] == [
        f"robots.txt: warning [robots-disallows-sitemap] robots.txt disallows the sitemap {S} for Googlebot: "
        "crawlers that obey it will not fetch the sitemap. Add an Allow: line for it or narrow the "
        "Disallow: rule"
    ]
    assert found[0].url == S


def test_warnings_use_the_rules_after_a_bom() -> None:
    assert codes(robots_warnings(BOM + b"User-agent: *\nDisallow: /\n", [S])) == [
        "robots-disallows-root",
        "robots-disallows-sitemap",
    ]


# --- not a regular file --------------------------------------------------------------------------


@contextlib.contextmanager
def feeding(fifo: Path, data: bytes) -> Iterator[None]:
    """A writer for the FIFO while the block runs: should anything open the FIFO to read, the writer feeds it
    `data` and closes, so that reading ends (a bug shows as a wrong result, not as a test that hangs)."""
    stop = threading.Event()

    def feed() -> None:
        while not stop.is_set():
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO as long as no one reads
            except OSError:
                stop.wait(0.001)
                continue
            with contextlib.suppress(OSError):
                os.write(fd, data)
            os.close(fd)
            return

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        yield
    finally:
        stop.set()
        writer.join()


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "robots.txt"
    os.mkfifo(fifo)
    with feeding(fifo, b"User-agent: *\n"):
        for dry_run in (False, True):
            with pytest.raises(
                InputError, match=r"robots\.txt: is a named pipe \(FIFO\), not a regular file"
            ):
                update_robots(fifo, [S], dry_run=dry_run)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["robots.txt"]  # no temporary file either


def test_a_socket_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        with pytest.raises(InputError, match="is a socket, not a regular file"):
            update_robots(path, [S])
        assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_a_device_behind_a_symbolic_link_is_refused_and_left_alone(tmp_path: Path) -> None:
    device = tmp_path / "null"
    try:  # a device like /dev/null, made here so that a bug could only ever replace this one
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device file needs CAP_MKNOD")
    link = tmp_path / "robots.txt"
    link.symlink_to(device)
    with pytest.raises(InputError, match=rf"robots\.txt: is a character device \({re.escape(str(device))}\)"):
        update_robots(link, [S])
    assert stat.S_ISCHR(os.lstat(device).st_mode) and link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null", "robots.txt"]


def test_the_writer_never_replaces_what_is_not_a_regular_file(tmp_path: Path) -> None:
    # update_robots checks when it reads; the writer checks again, in case the file changed in between
    fifo = tmp_path / "robots.txt"
    os.mkfifo(fifo)
    with pytest.raises(PublishError, match="is a named pipe"):
        _write_atomically(fifo, b"Sitemap: " + S.encode() + b"\n", fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    with pytest.raises(PublishError, match="is a folder"):
        _write_atomically(tmp_path, b"x", tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["robots.txt"]


def test_a_dangling_symbolic_link_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "robots.txt"
    link.symlink_to(tmp_path / "real.txt")
    assert update_robots(link, [S]).status == "created"
    assert link.is_symlink() and (tmp_path / "real.txt").read_bytes() == block(S) + b"\n"


# --- adding then removing, reruns ----------------------------------------------------------------


def test_adding_then_removing_the_block_gives_the_file_back(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    original = BOM + b"User-agent: *\r\nDisallow: /admin"  # a BOM, CRLF and no final newline
    path.write_bytes(original)
    update_robots(path, [S])
    assert path.read_bytes() == original + b"\r\n\r\n" + block(S, eol=b"\r\n")
    assert update_robots(path, None, remove=[S]).status == "updated"
    assert path.read_bytes() == original
    update_robots(path, [S, S2])
    assert update_robots(path, []).status == "updated"  # an empty list removes the block the same way
    assert path.read_bytes() == original


@pytest.mark.parametrize(
    "original",
    [b"", BOM, b"\n", b"\r\n\r\n", GROUPS, GROUPS + b"\n", b"User-agent: *\rDisallow: /x", b"# one line\r"],
)
def test_adding_then_removing_gives_back_files_ending_in_blank_lines_too(
    tmp_path: Path, original: bytes
) -> None:
    path = tmp_path / "robots.txt"
    path.write_bytes(original)
    update_robots(path, [S])
    assert block(S) in path.read_bytes().replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    update_robots(path, None, remove=[S])
    assert path.read_bytes() == original


def test_a_blank_line_above_a_block_that_stays_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "robots.txt"
    middle = b"User-agent: *\n\n" + block(OLD) + b"\nDisallow: /x\n"
    path.write_bytes(middle)
    update_robots(path, [])  # not at the end of the file: only the block's own lines go
    assert path.read_bytes() == b"User-agent: *\n\nDisallow: /x\n"


def test_reruns_are_stable_with_rare_line_breaks_and_a_bom_inside(tmp_path: Path) -> None:
    # the stray END line goes, which brings the BOM of the second line to the start of the file; \x0c and
    # \x0b break lines for protego (and str.splitlines) but not for robots.txt
    path = tmp_path / "robots.txt"
    path.write_bytes(
        b"# END sitemapkit\n\xef\xbb\xbf\r\n# comment  \n\x0cSitemap: https://example.com/a"
        b"\x0bSitemap: https://example.com/b\r"
    )
    first = update_robots(path, [S, S2])
    assert first.status == "updated"
    assert path.read_bytes() == (
        BOM
        + b"\xef\xbb\xbf\r\n# comment  \n\x0cSitemap: https://example.com/a\x0bSitemap: https://example.com/b"
        b"\r\r\n" + block(S, S2, eol=b"\r\n") + b"\r\n"
    )
    second = update_robots(path, [S, S2])
    assert second.status == "unchanged" and second.after == first.after
    assert protego_sitemaps(path.read_bytes()) == ["https://example.com/a", "https://example.com/b", S, S2]


SM = "https://example.com/sitemap.xml"
NEW = "https://example.com/new.xml"
GONE = "https://example.com/other.xml"


@pytest.mark.parametrize(
    ("data", "wanted", "remove", "name"),
    [
        # a leftover END line goes and a BOM inside the file comes first; \x0b and \x0c in lines
        (
            b"# END sitemapkit posts\r\xef\xbb\xbf\r\nDisallow: /a\nUser-agent: *\r\n\x0c\r",
            [SM],
            [GONE],
            "posts",
        ),
        (b"# END sitemapkit\r\n\xef\xbb\xbf\r# begin sitemapkit posts\n  \n", [SM, NEW], [], None),
        (
            b"# END sitemapkit posts\n\xef\xbb\xbf# begin sitemapkit posts  Sitemap: /rel.xml\r\n",
            [SM],
            [],
            "posts",
        ),
        (
            b"sitemap:https://example.com/other.xml\n\xef\xbb\xbf\n# begin sitemapkit posts\r"
            b"# BEGIN sitemapkit (managed Sitemap lines)\r# END sitemapkit posts\nDisallow: /a\n",
            [NEW],
            [GONE],
            None,
        ),
        (
            b"# END sitemapkit posts\r\xef\xbb\xbf\rSitemap: https://example.com/sitemap.xml\n  \r\n"
            b"Disallow: /aSitemap: https://example.com/a\x0bSitemap: https://example.com/b\n",
            [NEW],
            [GONE],
            "posts",
        ),
        # the last line loses its line ending (the file had no final newline), the block is above it
        (
            b"# begin sitemapkit posts\r\nSitemap: /rel.xml\r\nDisallow: /a\r\nsitemap:https://example.com/other.xml",
            None,
            [GONE],
            "posts",
        ),
        (
            b"# BEGIN sitemapkit (managed Sitemap lines)\rSitemap: https://example.com/sitemap.xml\r\n"
            b"Allow: /\r# BEGIN sitemapkit (managed Sitemap lines)",
            [NEW],
            [],
            None,
        ),
    ],
)
def test_reruns_change_nothing_on_inputs_found_by_fuzzing(
    data: bytes, wanted: list[str] | None, remove: list[str], name: str | None
) -> None:
    once = update_robots_text(data, wanted, remove=remove, name=name)
    assert update_robots_text(once, wanted, remove=remove, name=name) == once


# --- properties of the pure function -------------------------------------------------------------

WANTED_POOL = [S, S2, "https://example.com/blog/sitemap_index.xml"]
OLD_POOL = [OLD, "https://example.com/sitemap-2019.xml.gz"]
FOREIGN_POOL = [OTHER, "https://shop.example.com/sitemap.xml"]
SHAPES = ["Sitemap: {}", "sitemap:{}", "SITEMAP : {}", "  Sitemap:\t{}  # note", "Sitemap {}", "site-map: {}"]
EOLS = [b"\n", b"\r\n", b"\r"]


@dataclass(frozen=True)
class Item:
    """A generated line and what it is: "other", "foreign" (a Sitemap: line that is not sitemapkit's),
    "begin", "end" or "managed" (a Sitemap: line inside a block)."""

    kind: str
    content: bytes
    url: str | None = None


def _no_site(data: bytes) -> bool:
    """Junk never forms a Sitemap: line, nor a BOM at the start of the file."""
    return "site" not in data.decode("utf-8", "replace").lower() and not data.startswith(BOM)


junk = st.one_of(
    st.binary(max_size=30).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b"")),
    st.text(max_size=30).map(
        lambda t: t.replace("\r", "").replace("\n", "").encode("utf-8", "surrogatepass")
    ),
).filter(_no_site)
rule_paths = st.sampled_from(["/", "/admin/", "/search?q=", "/*.pdf$", "", "/tmp/"])
# characters that break lines for str.splitlines() and protego, but not for robots.txt (CR, LF, CRLF only)
RARE_BREAKS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
rare_breaks = st.sampled_from(RARE_BREAKS).map(lambda c: c.encode())
other_lines = st.one_of(
    st.sampled_from(["*", "Googlebot", "bingbot"]).map(lambda a: Item("other", b"User-agent: " + a.encode())),
    rule_paths.map(lambda p: Item("other", b"Disallow: " + p.encode())),
    rule_paths.map(lambda p: Item("other", b"Allow: " + p.encode())),
    junk.map(lambda j: Item("other", b"# " + j)),
    st.sampled_from([b"", b"   ", b"Crawl-delay: 10", b"# BEGIN sitemapkits", b"# sitemapkit: BEGIN"]).map(
        lambda c: Item("other", c)
    ),
    junk.map(lambda j: Item("other", j)),
)


def sitemap_line(kind: str, url: str, shape: str, upper: bool) -> Item:
    written = url.replace("https://example.com", "HTTPS://Example.COM:443") if upper else url
    return Item(kind, shape.format(written).encode(), url)


def sitemap_lines(kind: str, pool: list[str]) -> st.SearchStrategy[Item]:
    return st.builds(
        sitemap_line, st.just(kind), st.sampled_from(pool), st.sampled_from(SHAPES), st.booleans()
    )


# a Sitemap: line that a rare line break hides from a line-by-line reader: never sitemapkit's
tricky_lines = st.builds(
    lambda j, c, u: Item("foreign", j + c + b"Sitemap: " + u.encode(), u),
    junk,
    rare_breaks,
    st.sampled_from(FOREIGN_POOL + WANTED_POOL),
)
# lines that begin with a BOM (below the first line, a BOM is just bytes: such a line is no directive), and
# lines of rare line breaks alone
odd_lines = st.one_of(
    st.builds(lambda j: Item("other", BOM + j), junk),
    st.builds(lambda u: Item("other", BOM + b"Sitemap: " + u.encode()), st.sampled_from(WANTED_POOL)),
    st.builds(lambda a, b: Item("other", a + b), rare_breaks, st.sampled_from([b"", b"# note", BOM])),
)
foreign_lines = st.one_of(sitemap_lines("foreign", FOREIGN_POOL + WANTED_POOL + OLD_POOL), tricky_lines)
begins = st.sampled_from([BEGIN, b"#begin SITEMAPKIT  ", b"  ## Begin sitemapkit: old text"])
ends = st.sampled_from([END, b"#end sitemapkit (by hand)"])
blocks = st.builds(
    lambda b, lines, e: [Item("begin", b), *lines, Item("end", e)],
    begins,
    st.lists(
        st.one_of(sitemap_lines("managed", WANTED_POOL + OLD_POOL), other_lines, tricky_lines), max_size=4
    ),
    ends,
)
# a block of another name is the user's, like any other lines
other_blocks = st.builds(
    lambda name, lines: [
        Item("other", begin_marker(name).encode()),
        *lines,
        Item("other", end_marker(name).encode()),
    ],
    st.sampled_from(["posts", "news-2024"]),
    st.lists(st.one_of(sitemap_lines("foreign", WANTED_POOL + OLD_POOL), other_lines), max_size=3),
)
unterminated_blocks = st.builds(
    lambda b, lines: [Item("begin", b), *lines],
    begins,
    st.lists(sitemap_lines("managed", WANTED_POOL + OLD_POOL), max_size=3),
)


@st.composite
def robots_files(draw: st.DrawFn, with_blocks: bool = True) -> tuple[bytes, list[Item], list[bytes]]:
    """A robots.txt of realistic lines, junk and managed blocks (unless not `with_blocks`), as bytes, with
    what each line is."""
    chunk = st.one_of(
        other_lines.map(lambda i: [i]),
        foreign_lines.map(lambda i: [i]),
        odd_lines.map(lambda i: [i]),
        other_blocks,
        *((blocks, unterminated_blocks) if with_blocks else ()),
    )
    chunks = draw(st.lists(chunk, max_size=14))
    items = [item for chunk in chunks for item in chunk]
    if with_blocks and draw(st.booleans()):
        items.insert(0, Item("end", draw(ends)))  # a leftover END line goes: the next line becomes the first
    # as documented, a BEGIN line without its END takes the Sitemap: lines right below it
    for i, item in enumerate(items):
        previous = items[i - 1] if i else None
        if (
            previous is not None
            and previous.kind in ("begin", "managed")
            and not _terminated(items, i - 1)
            and item.kind == "foreign"
            and len(item.content.decode("utf-8", "replace").splitlines()) == 1
        ):
            items[i] = Item("managed", item.content, item.url)
    eols = [draw(st.sampled_from(EOLS)) for _ in items]
    for i in range(1, len(items)):  # "\r" and then an empty line ending in "\n" would read as one CRLF
        if eols[i - 1] == b"\r" and not items[i].content and eols[i] == b"\n":
            eols[i] = b"\r"
    if items and items[-1].content and draw(st.booleans()):
        eols[-1] = b""
    body = b"".join(item.content + eol for item, eol in zip(items, eols, strict=True))
    # a first line that begins with a BOM needs the file's own before it, or that BOM would be the file's
    bom = draw(st.booleans()) or (bool(items) and items[0].content.startswith(BOM))
    return (BOM if bom else b"") + body, items, eols


def _terminated(items: list[Item], i: int) -> bool:
    """Whether the block that line `i` (a BEGIN or managed line) is in has its END line."""
    while items[i].kind != "begin":
        i -= 1
    for item in items[i + 1 :]:
        if item.kind in ("begin", "end"):
            return item.kind == "end"
    return False


def split_lines(data: bytes) -> list[tuple[bytes, bytes]]:
    lines: list[tuple[bytes, bytes]] = re.findall(rb"([^\r\n]*)(\r\n|\r|\n|\Z)", data)
    if lines and lines[-1] == (b"", b""):
        lines.pop()
    return lines


def protego_sitemaps(data: bytes) -> list[str]:
    text = data.removeprefix(BOM).decode("utf-8", "replace")
    return [normalize_url(u) for u in Protego.parse(text).sitemaps]


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    robots_files(),
    st.one_of(st.none(), st.lists(st.sampled_from(WANTED_POOL), max_size=3)),
    st.lists(st.sampled_from(OLD_POOL + FOREIGN_POOL), max_size=2),
)
def test_property_other_lines_kept_exactly_idempotent_and_protego_agrees(
    robots: tuple[bytes, list[Item], list[bytes]], wanted: list[str] | None, remove: list[str]
) -> None:
    data, items, eols = robots
    out = update_robots_text(data, wanted, remove=remove)

    # the lines that are not sitemapkit's, and not removed, with their place in the input
    kept = [
        (n, item, eol)
        for n, (item, eol) in enumerate(zip(items, eols, strict=True))
        if item.kind == "other" or (item.kind == "foreign" and item.url not in remove)
    ]
    kept_urls = {item.url for _, item, _ in kept if item.url is not None}
    managed_urls = [i.url for i in items if i.kind == "managed" and i.url is not None and i.url not in remove]
    listed = list(dict.fromkeys(managed_urls if wanted is None else wanted))
    block_urls = [u for u in listed if u not in kept_urls]
    first = next((n for n, item in enumerate(items) if item.kind == "begin"), None)
    # the lines from a BEGIN line to the end all go (no new block is written there): so does an empty line
    # above them
    tail = bool(kept) and kept[-1][0] + 1 < len(items) and items[kept[-1][0] + 1].kind == "begin"
    if tail and not kept[-1][1].content and (not block_urls or (first is not None and first <= kept[-1][0])):
        kept.pop()

    lines = split_lines(out.removeprefix(BOM))
    contents = [content for content, _ in lines]
    # the BOM stays; one is added only before a line that begins with one and became the first
    assert out.startswith(BOM) if data.startswith(BOM) else out[:3] != BOM or out[3:6] == BOM
    assert contents.count(BEGIN) == contents.count(END) == (1 if block_urls else 0)
    others = lines
    if block_urls:
        at = contents.index(BEGIN)
        end = contents.index(END)
        assert contents[at + 1 : at + 1 + len(block_urls)] == [b"Sitemap: " + u.encode() for u in block_urls]
        others = lines[:at] + lines[at + 1 + len(block_urls) : end] + lines[end + 1 :]
        if first is not None:  # the block stays where it was
            assert at == sum(1 for n, _, _ in kept if n < first)
        else:  # a new block goes at the end, after an empty line (unless the file was empty)
            assert end == len(lines) - 1 and end - at == len(block_urls) + 1
            if kept:
                assert others[-1][0] == b""
                others = others[:-1]
    assert [content for content, _ in others] == [item.content for _, item, _ in kept]
    for (n, _, eol), line in zip(kept, others, strict=True):
        if n != len(items) - 1 and line is not lines[-1]:
            # an empty line ending in LF below a line ending in CR gets CRLF, or it would vanish
            assert line[1] == eol or (line == (b"", b"\r\n") and eol == b"\n")
    if lines and eols:  # a missing final newline stays missing
        assert (lines[-1][1] == b"" or lines[-1][0] == b"") if eols[-1] == b"" else lines[-1][1] != b""

    # applying twice is applying once
    assert update_robots_text(out, wanted, remove=remove) == out

    # a robots.txt parser finds exactly the wanted sitemaps and the other ones kept, none twice over
    found = protego_sitemaps(out)
    assert set(found) == set(block_urls) | kept_urls
    for url in block_urls:
        assert found.count(url) == 1


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.lists(st.sampled_from(WANTED_POOL), max_size=3))
def test_property_any_bytes_idempotent_and_wanted_listed(data: bytes, wanted: list[str]) -> None:
    out = update_robots_text(data, wanted)
    assert update_robots_text(out, wanted) == out
    assert set(wanted) <= set(protego_sitemaps(out))
    if not wanted and b"sitemapkit" not in data.lower():
        assert out == data


ADDED = "https://example.com/added-then-removed.xml"  # listed nowhere in the generated files


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(robots_files(with_blocks=False))
def test_property_adding_then_removing_the_block_gives_the_bytes_back(
    robots: tuple[bytes, list[Item], list[bytes]],
) -> None:
    data, _, _ = robots
    added = update_robots_text(data, [ADDED])
    assert protego_sitemaps(added).count(ADDED) == 1
    assert update_robots_text(added, None, remove=[ADDED]) == data  # `sitemapkit robots --remove`
    assert update_robots_text(added, []) == data  # nothing left to list
    more = update_robots_text(added, [ADDED, S, S2])  # a rerun with more sitemaps changes only the block
    assert update_robots_text(more, []) == data


def test_ctrl_c_while_robots_txt_is_written_leaves_it_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "robots.txt"
    target.write_bytes(b"User-agent: *\n")

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _write_atomically(target, b"Sitemap: " + S.encode() + b"\n", target)
    assert [p.name for p in tmp_path.iterdir()] == ["robots.txt"]  # no temporary file left behind
    assert target.read_bytes() == b"User-agent: *\n"
