"""What `audit` returns: findings, URL rows, the sitemap tree, counts, the score; JSON and CSV forms,
comparison with a baseline, the confidence intervals of a sample."""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import IO, Any
from urllib.parse import urlsplit

from sitemapkit.audit.check import UrlRow
from sitemapkit.audit.findings import SEVERITY_ORDER, Finding, help_for
from sitemapkit.core.diagnostics import Severity
from sitemapkit.core.errors import InputError, InvalidUrlError
from sitemapkit.core.escape import csv_cell
from sitemapkit.core.files import atomic_write
from sitemapkit.core.urls import normalize_url

FORMAT_VERSION = 1
CSV_FIELDS = (
    "url",
    "sitemap",
    "line",
    "status",
    "final_url",
    "content_type",
    "indexability",
    "lastmod",
    "page_lastmod",
    "depth",
    "elapsed_ms",
    "bytes",
    "findings",
)


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a share `k`/`n`."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class AuditReport:
    """The audit of one site. `findings` in severity order; `rows` one per checked URL."""

    target: str
    generated: str
    findings: list[Finding] = field(default_factory=list)
    rows: list[UrlRow] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)
    discovery: dict[str, Any] = field(default_factory=dict)
    listed: int = 0
    """Distinct URLs the sitemaps list."""
    sample: dict[str, Any] | None = None
    coverage: dict[str, Any] | None = None
    baseline: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity is Severity.ERROR)

    @property
    def warnings(self) -> int:
        return len(self.findings) - self.errors

    def sort(self) -> None:
        self.findings.sort(key=lambda f: (SEVERITY_ORDER[f.severity], f.code, f.url or "", f.line or 0))

    def by_code(self) -> dict[str, int]:
        """Findings counted by code, worst first (errors, then the most frequent)."""
        counts = Counter(f.code for f in self.findings)
        return dict(
            sorted(counts.items(), key=lambda kv: (SEVERITY_ORDER[help_for(kv[0]).severity], -kv[1], kv[0]))
        )

    def counted_over(self, code: str) -> str:
        """What a code's count is a count of: `sample` (found by checking the URLs of a `--sample`: its
        share there estimates the tree's) or `all` (exact: every sitemap was read, every chosen URL
        checked)."""
        return "sample" if self.sample is not None and help_for(code).checked else "all"

    def score(self) -> int:
        """0-100: the share of checked URLs without problems (a URL with only warnings counts a quarter
        against), less 2 points per error in the sitemap files themselves (at most 40); 0 when no URL could
        be checked because of such an error (no sitemap found, none readable)."""
        codes_by_url: dict[str, set[Severity]] = {}
        for f in self.findings:
            if f.url is not None:
                codes_by_url.setdefault(f.url, set()).add(f.severity)
        n = len(self.rows)
        bad = 0.0
        for row in self.rows:
            sev = codes_by_url.get(row.url, set())
            bad += 1.0 if Severity.ERROR in sev else 0.25 if sev else 0.0
        row_urls = {r.url for r in self.rows}
        file_errors = sum(
            1
            for f in self.findings
            if f.severity is Severity.ERROR and (f.url is None or f.url not in row_urls)
        )
        if not n:  # nothing checked: perfect only when nothing is wrong either (no sitemap found is 0)
            return 0 if file_errors else 100
        return max(0, round(100 * (1.0 - bad / n) - min(40, 2 * file_errors)))

    def summary(self) -> dict[str, Any]:
        status = Counter(str(r.status) if r.status is not None else "none" for r in self.rows)
        return {
            "urls_listed": self.listed,
            "urls_checked": len(self.rows),
            "sitemaps": len(self.files),
            "findings": len(self.findings),
            "errors": self.errors,
            "warnings": self.warnings,
            "by_code": {
                c: {"severity": help_for(c).severity.value, "count": n, "counted_over": self.counted_over(c)}
                for c, n in self.by_code().items()
            },
            "status_codes": dict(sorted(status.items())),
            "indexability": dict(Counter(r.indexability for r in self.rows).most_common()),
            "new": sum(1 for f in self.findings if f.baseline == "new") if self.baseline else None,
        }

    def to_dict(self) -> dict[str, Any]:
        codes = {f.code for f in self.findings}
        return {
            "format": FORMAT_VERSION,
            "target": self.target,
            "generated": self.generated,
            "score": self.score(),
            "summary": self.summary(),
            "discovery": self.discovery,
            "sitemaps": self.files,
            "findings": [f.to_dict() for f in self.findings],
            "urls": [r.to_dict() for r in self.rows],
            "codes": {
                c: {"severity": h.severity.value, "explanation": h.explanation, "fix": h.fix}
                for c in sorted(codes)
                for h in (help_for(c),)
            },
            "sample": self.sample,
            "coverage": self.coverage,
            "baseline": self.baseline,
            "notes": self.notes,
        }

    def write_json(self, path: str | os.PathLike[str]) -> None:
        write_file(path, lambda out: json.dump(self.to_dict(), out, indent=1, ensure_ascii=False))

    def write_csv(self, path: str | os.PathLike[str]) -> None:
        def write(out: IO[str]) -> None:
            w = csv.writer(out)
            w.writerow(CSV_FIELDS)
            for r in self.rows:
                d = r.to_dict()
                d["findings"] = ";".join(r.codes)
                w.writerow([_cell(d[k]) for k in CSV_FIELDS])

        write_file(path, write, newline="")

    def compare(self, baseline: dict[str, Any]) -> None:
        """Mark each finding `new` or `unchanged` against a previous report's JSON; list the fixed ones."""
        previous: dict[str, dict[str, Any]] = {}
        for item in baseline.get("findings", []):
            f = Finding(item["code"], Severity(item["severity"]), item.get("url"), item.get("message", ""))
            f.sitemap = item.get("sitemap")
            previous[f.key()] = item
        current = set()
        for f in self.findings:
            key = f.key()
            current.add(key)
            f.baseline = "unchanged" if key in previous else "new"
        fixed = [
            {k: item.get(k) for k in ("code", "severity", "url", "sitemap", "message")}
            for key, item in previous.items()
            if key not in current
        ]
        self.baseline = {
            "generated": baseline.get("generated"),
            "new": sum(1 for f in self.findings if f.baseline == "new"),
            "unchanged": sum(1 for f in self.findings if f.baseline == "unchanged"),
            "fixed": len(fixed),
            "fixed_findings": fixed,
        }

    def failed(self, fail_on: str) -> bool:
        """Whether the findings (only the new ones, with a baseline) reach `fail_on`: error, warning or
        never."""
        if fail_on == "never":
            return False
        pool = [f for f in self.findings if f.baseline != "unchanged"]
        if fail_on == "warning":
            return bool(pool)
        return any(f.severity is Severity.ERROR for f in pool)


def _cell(value: object) -> object:
    """A CSV cell: text through `csv_cell` (a URL, a content type or a date a site chose may start like
    a formula), numbers as they are, nothing as an empty cell."""
    if value is None:
        return ""
    return csv_cell(value) if isinstance(value, str) else value


def site_of(target: str) -> str:
    """The site (scheme://host:port/) an audit target belongs to."""
    try:
        parts = urlsplit(normalize_url(target))
    except InvalidUrlError:
        return target
    return f"{parts.scheme}://{parts.netloc}/"


def check_baseline(baseline: dict[str, Any], target: str, path: str | None = None) -> None:
    """`InputError` when `baseline` is the report of another site than `target`'s: compared, every finding
    would be new and every old one fixed, which says nothing."""
    theirs = baseline.get("target")
    if not isinstance(theirs, str):
        return
    if site_of(theirs) != site_of(target):
        name = f"{path}: " if path else ""
        raise InputError(
            f"{name}the baseline is an audit of {site_of(theirs)}, not of {site_of(target)}; findings of "
            "two sites cannot be compared (give a report of this site, or leave out --baseline)"
        )


def check_output(path: str | os.PathLike[str], what: str) -> None:
    """`InputError` unless a report can be written at `path`: its folder exists and a file can be made
    there, and `path` is not a folder or anything but a regular file. Checked before the audit starts, so
    that a mistyped path does not cost the whole run."""
    target = os.fspath(path)
    if not target:
        raise InputError(f"{what}: the path is empty")
    if os.path.isdir(target):
        raise InputError(f"{target}: is a folder; give a file name for {what}")
    if os.path.lexists(target) and not os.path.isfile(target):
        raise InputError(f"{target}: not a regular file; give a file name for {what}")
    folder = os.path.dirname(target) or "."
    if not os.path.isdir(folder):
        raise InputError(f"{target}: the folder {folder} does not exist ({what})")
    probe = os.path.join(folder, f".{os.path.basename(target)}.probe{os.getpid()}")
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as exc:
        raise InputError(f"{target}: cannot write in {folder} ({exc.strerror or exc}) ({what})") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(probe)


def load_baseline(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A previous `audit --json` report; `InputError` naming the file when it is not one."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise InputError(f"{os.fspath(path)}: cannot read the baseline ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise InputError(f"{os.fspath(path)}: the baseline is not JSON ({exc})") from None
    if (
        not isinstance(data, dict)
        or data.get("format") != FORMAT_VERSION
        or not isinstance(data.get("findings"), list)
    ):
        raise InputError(f"{os.fspath(path)}: not a report written by `sitemapkit audit --json`")
    for i, item in enumerate(data["findings"]):
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("code"), str)
            or item.get("severity") not in ("error", "warning")
        ):
            raise InputError(f"{os.fspath(path)}: finding {i + 1} has no code or severity")
    return data


def write_file(path: str | os.PathLike[str], write: Any, newline: str | None = None) -> None:
    """Write a report file: `write(out)` fills the text file `out`, opened through `atomic_write` (a
    temporary file beside `path`, then a rename), so a failed run leaves no half file; an `OSError` is an
    `InputError`."""
    target = os.fspath(path)
    try:
        with atomic_write(target, "w", newline=newline) as out:
            write(out)
    except OSError as exc:
        raise InputError(f"{target}: cannot write ({exc.strerror or exc})") from None


__all__ = [
    "AuditReport",
    "check_baseline",
    "check_output",
    "load_baseline",
    "site_of",
    "wilson",
    "write_file",
]
