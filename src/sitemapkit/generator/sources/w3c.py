"""W3C Extended Log File Format (IIS, and any server that writes `#Fields:`), for `read_logs`.

A file is in this format when a line starts with one of its directives (`#Software:`, `#Version:`,
`#Date:`, `#Fields:`). `#Fields:` names the space-separated fields of the lines after it, and may change
in the middle of a file (IIS writes a new header block whenever it restarts); lines before any
`#Fields:` use IIS's default fields. The fields used: `cs-uri` (a whole request target), else
`cs-uri-stem` with `cs-uri-query`; `cs-method` (GET when absent); `sc-status` (200 when absent);
`cs-host` (the host the request was for); `date` and `time` (UTC); `c-ip`, `cs(Referer)`,
`cs(User-Agent)`. `-` is an empty field.
"""

from __future__ import annotations

from typing import Any

IIS_DEFAULT_FIELDS = [
    "date",
    "time",
    "s-ip",
    "cs-method",
    "cs-uri-stem",
    "cs-uri-query",
    "s-port",
    "cs-username",
    "c-ip",
    "cs(User-Agent)",
    "cs(Referer)",
    "sc-status",
    "sc-substatus",
    "sc-win32-status",
    "time-taken",
]
DIRECTIVES = ("#Software:", "#Version:", "#Date:", "#Fields:", "#Start-Date:", "#End-Date:", "#Remark:")
_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def is_directive(line: str) -> bool:
    """Whether `line` is a W3C Extended directive (`#Fields: ...` and the like)."""
    return line.startswith(DIRECTIVES)


class W3CLog:
    """The state of one W3C Extended log file: the current `#Fields:`. `scheme` (`https`) makes a
    `cs-host` field into an absolute URL."""

    def __init__(self, scheme: str = "https") -> None:
        self.scheme = scheme
        self._set(IIS_DEFAULT_FIELDS)

    def _set(self, names: list[str]) -> None:
        self.index = {name.lower(): i for i, name in enumerate(names)}
        self.count = len(names)

    def feed(self, line: str) -> tuple[Any, ...] | None:
        """The fields of a log line in the order of `logs.LogLine`, or None for a directive or a line
        that does not fit the fields (`bad` is then True for the latter)."""
        self.bad = False
        if line.startswith("#"):
            if line.startswith("#Fields:"):
                self._set(line[len("#Fields:") :].split())
            return None
        values = line.split()
        if len(values) != self.count:
            self.bad = True
            return None

        def field(name: str) -> str | None:
            i = self.index.get(name)
            if i is None:
                return None
            value = values[i]
            return None if value == "-" else value

        target = field("cs-uri")
        if target is None:
            stem = field("cs-uri-stem")
            if stem is None:
                self.bad = True
                return None
            query = field("cs-uri-query")
            target = stem + ("?" + query if query else "")
        host = field("cs-host")
        if host is not None and target.startswith("/"):
            target = f"{self.scheme}://{host}{target}"
        status_text = field("sc-status") or "200"
        if not status_text.isdigit():
            self.bad = True
            return None
        when = ""
        day, clock = field("date"), field("time")
        if day is not None and clock is not None and len(day) == 10 and day[4] == "-" and day[5:7].isdigit():
            month = int(day[5:7])
            if 1 <= month <= 12:
                when = f"{day[8:10]}/{_MONTHS[month - 1]}/{day[:4]}:{clock[:8]} +0000"
        size = field("sc-bytes")
        agent = field("cs(user-agent)")
        return (
            "w3c",
            host,
            field("c-ip") or "-",
            when,
            f"{field('cs-method') or 'GET'} {target}",
            int(status_text),
            int(size) if size is not None and size.isdigit() else None,
            field("cs(referer)"),
            agent.replace("+", " ") if agent is not None else None,
        )
