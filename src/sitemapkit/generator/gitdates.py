"""`--lastmod git`: each file's last commit time, read from `git log` in one streaming pass."""

from __future__ import annotations

import datetime as dt
import functools
import os
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path

from sitemapkit.core.diagnostics import Diagnostic, DiagnosticHandler
from sitemapkit.core.errors import InputError


def _from_timestamp(seconds: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(int(seconds), dt.UTC)


def _git(repo: Path, *args: str) -> str:
    try:
        proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise InputError("git is not installed, but --lastmod git needs it") from None
    if proc.returncode != 0:
        raise InputError(f"{repo}: git {args[0]} failed: {proc.stderr.strip()}")
    return proc.stdout


def _tokens(stream: Iterable[bytes]) -> Iterator[str]:
    """NUL-separated tokens of a byte stream read in chunks."""
    rest = b""
    for chunk in stream:
        parts = (rest + chunk).split(b"\0")
        rest = parts.pop()
        for part in parts:
            yield os.fsdecode(part)
    if rest:
        yield os.fsdecode(rest)


def git_last_commit_times(
    repo_dir: str | os.PathLike[str],
    paths: Iterable[str | os.PathLike[str]],
    *,
    on_diagnostic: DiagnosticHandler | None = None,
) -> dict[str, dt.datetime]:
    """The time (committer date, UTC) of the last commit that changed each file's content, from ONE
    `git log --name-status -M` pass over the history, newest first, stopped as soon as every file is found.

    Keys are the paths as given (`str(path)`); relative paths are taken from `repo_dir`.
    - Renames are followed: a pure rename (100% similar) is not a change, so the file keeps the time of
      the last change under its old name; a rename with edits counts as a change.
    - A file with uncommitted changes, or not committed at all, gets its mtime, with a `lastmod-fallback`
      warning; a file that does not exist is left out, with a `read-error`.
    - Raises `InputError` when `repo_dir` is not inside a git repository or git is missing.
    """

    def report(code: str, message: str, source: str) -> None:
        if on_diagnostic is not None:
            on_diagnostic(Diagnostic.make(code, message, source=source))

    repo = Path(repo_dir)
    if not repo.is_dir():
        raise InputError(f"{repo}: not a folder")
    try:
        proc = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:
        raise InputError("git is not installed, but --lastmod git needs it") from None
    if proc.returncode != 0:
        raise InputError(f"{repo}: not inside a git repository (--lastmod git needs one)")
    top = Path(proc.stdout.strip()).resolve()
    wanted: dict[str, list[str]] = {}  # path in the repo (at the commit being read) -> keys asking for it
    result: dict[str, dt.datetime] = {}
    for p in paths:
        key = str(p)
        full = (repo / p).resolve()
        if not full.is_file():
            report("read-error", f"{key}: no such file; it gets no lastmod from git", key)
            continue
        try:
            rel = full.relative_to(top).as_posix()
        except ValueError:
            raise InputError(f"{key}: outside the git repository at {top}") from None
        wanted.setdefault(rel, []).append(key)
    if not wanted:
        return result
    dirty: dict[str, str] = {}  # path -> porcelain status ("??" untracked)
    status = _git(top, "status", "--porcelain", "-z", "--untracked-files=all", "--no-renames")
    for entry in status.split("\0"):
        if len(entry) > 3:
            dirty[entry[3:]] = entry[:2]
    if _git(top, "rev-parse", "--is-shallow-repository").strip() == "true":
        report(
            "git-shallow",
            "the repository is a shallow clone: files last changed before its oldest commit get that "
            "commit's time (fetch the full history for exact times)",
            str(top),
        )
    for rel in [r for r in wanted if r in dirty]:
        what = "is not committed to git" if dirty[rel] == "??" else "has uncommitted changes"
        for key in wanted.pop(rel):
            result[key] = _from_timestamp((repo / key).stat().st_mtime)
            report("lastmod-fallback", f"{key}: {what}; its mtime is used as lastmod", key)
    has_head = (
        subprocess.run(
            ["git", "-C", str(top), "rev-parse", "-q", "--verify", "HEAD"], capture_output=True
        ).returncode
        == 0
    )
    if wanted and has_head:
        log = subprocess.Popen(
            [
                "git",
                "-C",
                str(top),
                "-c",
                "core.quotepath=off",
                "log",
                "-z",
                "-M",
                "--name-status",
                "--format=%x1e%ct",
                "HEAD",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert log.stdout is not None
        try:
            when: dt.datetime | None = None
            tokens = _tokens(iter(functools.partial(log.stdout.read, 1 << 16), b""))
            for token in tokens:
                token = token.lstrip("\n")
                if token.startswith("\x1e"):
                    when = _from_timestamp(int(token[1:]))
                    continue
                if not token or when is None:
                    continue
                kind = token[0]
                if kind in "RC":
                    old, new = next(tokens), next(tokens)
                    if new in wanted:
                        keys = wanted.pop(new)
                        if kind == "R" and token[1:] == "100":
                            wanted.setdefault(old, []).extend(keys)  # a pure rename: follow the old name
                        else:
                            for key in keys:
                                result[key] = when
                else:
                    path = next(tokens)
                    if kind != "D" and path in wanted:
                        for key in wanted.pop(path):
                            result[key] = when
                if not wanted:
                    break
        finally:
            log.stdout.close()
            if log.poll() is None:
                log.terminate()
            log.wait()
    for keys in wanted.values():  # never committed (untracked, or only under a name no commit has)
        for key in keys:
            if key in result:
                continue
            result[key] = _from_timestamp((repo / key).stat().st_mtime)
            report("lastmod-fallback", f"{key}: not committed to git; its mtime is used as lastmod", key)
    return result
