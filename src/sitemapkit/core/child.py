"""Starting a helper process of this sitemapkit, on another core: the one command every wing uses (the
harvest's workers, `parse`'s writer and leaf parsers), and how many cores there are to use."""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["cpus", "leaf_workers", "python_command"]


def cpus() -> int:
    """The cores this process may use (its affinity where the system says), at least 1."""
    count = getattr(os, "process_cpu_count", None)
    if count is not None:
        return max(1, int(count() or 1))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def leaf_workers() -> int:
    """How many leaf workers `sitemapkit parse` uses by default (`reader.leaves`): one per core, up to 4;
    with one core none (the walk parses everything itself)."""
    n = cpus()
    return 0 if n < 2 else min(n, 4)


def python_command(module: str, *args: str) -> list[str]:
    """The command that runs `module.main()` of this very sitemapkit in a fresh interpreter, its return
    value the exit status, `args` in `sys.argv[1:]`.

    The package is imported from the folder this one was (not from the working directory, nor whatever
    PYTHONPATH names first), with the interpreter's isolation flags (-I, -E, -s) kept."""
    where = str(Path(__file__).resolve().parents[2])  # the folder holding this sitemapkit package
    code = (
        f"import sys; sys.path[:] = [{where!r}, *(p for p in sys.path if p)]\n"  # '' (the working folder) out
        f"from {module} import main\nraise SystemExit(main())\n"
    )
    flags = sys.flags
    switches = (("-E", flags.ignore_environment), ("-s", flags.no_user_site))
    options = ["-I"] if flags.isolated else [name for name, on in switches if on]
    return [sys.executable, *options, "-c", code, *args]
