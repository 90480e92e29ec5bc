"""Run every benchmark in bench/, one after another: `python bench/run.py` (or `make bench`).

Each script prints its own tables: items/s and peak RSS per contender, each contender in a fresh process,
beside a baseline measured in the same run. Pass `--only NAME` to run one (e.g. `--only generate`).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
SCRIPTS = [
    "bench_generate.py",
    "bench_parse_file.py",
    "bench_parse_tree.py",
    "bench_export.py",
    "bench_validate.py",
    "bench_folder.py",
    "bench_state.py",
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", help="run only bench_NAME.py")
    args = ap.parse_args()
    scripts = [s for s in SCRIPTS if (BENCH / s).exists()]
    if args.only:
        scripts = [s for s in scripts if s == f"bench_{args.only}.py"]
        if not scripts:
            print(f"no benchmark named {args.only!r}", file=sys.stderr)
            return 2
    failed = 0
    for script in scripts:
        print(f"\n# {script}", flush=True)
        failed += subprocess.run([sys.executable, str(BENCH / script)], cwd=BENCH).returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
