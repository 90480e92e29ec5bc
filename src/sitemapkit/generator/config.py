"""`sitemapkit.toml`: a whole sitemap build declared in one file, as sitemap_gen.py's config.xml was.

    base_url = "https://example.com/"
    state = ".sitemapkit/state.db"

    [output]
    dir = "public"
    gzip = true

    [[source]]
    type = "folder"
    path = "public"

`load_config(path)` reads and checks the file and returns a `BuildConfig`; `build(path)` also runs it.
sitemap_gen.py's config.xml is read into the same `BuildConfig` by `sitemapkit.generator.sitemap_gen`
(`load_any` takes either kind, by content).
Paths in the file are relative to the file's folder. Every unknown key and every bad value is an error
(`ConfigError`) that names the file, the line and the key, so a typo never silently changes a build.
"""

from __future__ import annotations

import dataclasses
import difflib
import glob
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sitemapkit.core.constants import MAX_BYTES, MAX_URLS
from sitemapkit.core.errors import InputError, UsageError
from sitemapkit.generator.rules import Default, UrlFilter, UrlRules, compile_pattern
from sitemapkit.generator.run import LASTMOD_CHOICES, FolderSource, ListSource, LogSource, folder_include
from sitemapkit.generator.sources.records import TextRecord
from sitemapkit.generator.writer import IndexMode, Naming, PublishResult

DEFAULT_CONFIG = "sitemapkit.toml"
DEFAULT_STATE = ".sitemapkit/state.db"  # next to the config file
SOURCE_TYPES = ("list", "csv", "jsonl", "parquet", "folder", "log", "sitemap", "crawl")


class ConfigError(InputError):
    """A config file that cannot be used: the message names the file, line and key."""


_MAGIC = re.compile(r"[*?[]")


def is_glob(path: str | os.PathLike[str]) -> bool:
    """Whether a source path is a glob pattern (`logs/access.log*`): one holding `*`, `?` or `[`."""
    return _MAGIC.search(os.fspath(path)) is not None


def expand_path(path: str | os.PathLike[str]) -> list[str]:
    """The files a source path names, as sitemap_gen.py expanded its paths: a glob pattern gives the files
    it matches, sorted (folders are not files); a file whose name holds `*`, `?` or `[` is itself; `-` is
    standard input. An empty list when nothing matches (the callers say where, with the file and line)."""
    name = os.fspath(path)
    if name == "-" or os.path.isfile(name):
        return [name]
    if not is_glob(name):
        return []
    return sorted(p for p in glob.glob(name) if os.path.isfile(p))


@dataclass(frozen=True)
class OutputConfig:
    """The `[output]` table: where and how the sitemaps are written."""

    dir: Path
    gzip: bool = False
    gzip_level: int = 6
    max_urls: int = MAX_URLS
    max_bytes: int = MAX_BYTES
    name: str = "sitemap"
    index: IndexMode = "auto"
    xsl: str | None = None
    naming: Naming = "sitemapkit"
    replace_existing: bool = False


@dataclass(frozen=True)
class BuildConfig:
    """A checked `sitemapkit.toml`, with paths made absolute. Run it with `run`."""

    path: Path
    base_url: str
    output: OutputConfig
    lists: tuple[str | ListSource, ...] = ()
    folders: tuple[FolderSource, ...] = ()
    logs: tuple[LogSource, ...] = ()
    crawls: tuple[dict[str, Any], ...] = ()
    """`type = "crawl"` sources, as keyword arguments of `sitemapkit.crawl.run.CrawlSource`; a build with
    crawls runs through `sitemapkit.crawl.run.run_config`, which crawls first and feeds the pages in."""
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    defaults: tuple[Default, ...] = ()
    state: Path | None = None
    lastmod: str | None = None
    hreflang: Literal["auto", "complete", "keep"] = "auto"
    allow_hosts: tuple[str, ...] = ()
    strict: bool = False
    robots: Path | None = None
    records: tuple[TextRecord, ...] = ()
    """Single URLs (`[[url]]`, or config.xml's `<url>`)."""
    filters: tuple[UrlFilter, ...] = ()
    """Ordered filters on the whole URL (`[[filter]]`, or config.xml's `<filter>`)."""
    encoding: str | None = None
    notes: tuple[str, ...] = ()
    """Things the run should say once (a config.xml's ping setting)."""

    def rules(self) -> UrlRules | None:
        """The include/exclude filters and per-pattern defaults, or None when there are none."""
        rules = UrlRules(self.include, self.exclude, self.defaults, self.filters)
        return rules if rules else None

    def run(self, **kwargs: Any) -> PublishResult:
        """Generate and publish as the file says; keyword arguments go to `sitemapkit.generate`
        (`on_diagnostic`, `on_progress`, `explain`, `strict`...)."""
        from sitemapkit.generator.run import generate

        if self.crawls and "feeds" not in kwargs:
            raise UsageError(
                f"{self.path}: a build with crawl sources runs with sitemapkit.build (or `sitemapkit build`)"
            )
        options: dict[str, Any] = {
            "folder": self.folders,
            "logs": self.logs,
            "rules": self.rules(),
            "state": self.state,
            "lastmod": self.lastmod,
            "gzip": self.output.gzip,
            "gzip_level": self.output.gzip_level,
            "max_urls": self.output.max_urls,
            "max_bytes": self.output.max_bytes,
            "index": self.output.index,
            "name": self.output.name,
            "xsl": self.output.xsl,
            "allow_hosts": self.allow_hosts,
            "hreflang": self.hreflang,
            "robots": self.robots,
            "strict": self.strict,
            "records": self.records,
            "encoding": self.encoding,
            "naming": self.output.naming,
            "replace_existing": self.output.replace_existing,
        }
        options["logs"] = tuple(
            dataclasses.replace(log, paths=tuple(p for path in log.paths for p in self._expand(path)))
            for log in self.logs
        )
        lists: list[str | ListSource] = []
        for source in self.lists:
            if isinstance(source, str):
                lists += self._expand(source)
            else:
                lists += (dataclasses.replace(source, path=p) for p in self._expand(source.path))
        options.update(kwargs)
        return generate(tuple(lists), self.output.dir, self.base_url, **options)

    def _expand(self, path: str) -> list[str]:
        """A source path's files now, at build time (a glob sees today's rotated logs, not the load's)."""
        found = [path] if os.path.isdir(path) else expand_path(path)  # a folder: a Parquet dataset
        if not found:
            what = "no file matches the pattern" if is_glob(path) else "no such file:"
            raise ConfigError(f"{self.path}: {what} {path} (a source's path); nothing was built")
        return found


def build(path: str | os.PathLike[str] = DEFAULT_CONFIG, **kwargs: Any) -> PublishResult:
    """Load the `sitemapkit.toml` at `path` and run it (see `BuildConfig.run`); a file with crawl sources,
    or a sitemap_gen.py config.xml, needs `sitemapkit.build`, which runs any config file."""
    return load_config(path).run(**kwargs)


# -- reading ----------------------------------------------------------------------------------------------

Key = tuple[str | int, ...]


def _key_lines(text: str) -> dict[Key, int]:
    """Where each table and key is written: a map from its path (`("source", 0, "path")`) to its line.

    A small line scanner, enough for config files: table and array-of-table headers, bare, quoted and
    dotted keys. Text inside multi-line strings is skipped."""
    lines: dict[Key, int] = {}
    arrays: dict[Key, int] = {}  # the arrays of tables so far, with the index of the last one
    table: Key = ()
    in_string: str | None = None
    header = re.compile(r"\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
    key_line = re.compile(
        r"""\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*="""
    )
    for number, line in enumerate(text.splitlines(), start=1):
        if in_string is not None:
            if line.count(in_string) % 2 == 1:
                in_string = None
            continue
        if m := header.match(line):
            name: Key = tuple(_split_key(m.group(2)))
            for n in range(len(name) - 1, 0, -1):  # [source.opts] under [[source]]: source[i].opts
                if name[:n] in arrays:
                    name = (*name[:n], arrays[name[:n]], *name[n:])
                    break
            if m.group(1) == "[[":
                index = arrays.get(name, -1) + 1
                arrays[name] = index
                table = (*name, index)
            else:
                table = name
            lines.setdefault(table, number)
        elif m := key_line.match(line):
            path = (*table, *_split_key(m.group(1)))
            lines.setdefault(path, number)
            rest = line[m.end() :]
            for quote in ('"""', "'''"):
                if rest.count(quote) % 2 == 1:
                    in_string = quote
    return lines


def _split_key(text: str) -> list[str]:
    parts = re.findall(r"""[A-Za-z0-9_-]+|"[^"]*"|'[^']*'""", text)
    return [p[1:-1] if p[:1] in "\"'" else p for p in parts]


class _Reader:
    """Checks one parsed file, naming file, line and key in every error."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path  # as given: errors name the file as every other message does
        self.lines = _key_lines(text)
        self.folder = path.resolve().parent

    def where(self, key: Key) -> str:
        for n in range(len(key), 0, -1):
            line = self.lines.get(key[:n])
            if line is not None:
                return f"{self.path}:{line}"
        return str(self.path)

    def fail(self, key: Key, message: str) -> ConfigError:
        name = f" {_name(key)}:" if key else ""
        return ConfigError(f"{self.where(key)}:{name} {message}")

    def table(self, data: Any, key: Key, known: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise self.fail(key, f"must be a table, not {_kind(data)}")
        for name in data:
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f" (known keys: {', '.join(known)})"
                raise self.fail((*key, name), f"unknown key{hint}")
        return data

    def get(self, data: dict[str, Any], key: Key, kind: type | tuple[type, ...], default: Any = None) -> Any:
        name = key[-1]
        assert isinstance(name, str)
        if name not in data:
            return default
        value = data[name]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds:
            raise self.fail(key, f"must be {_expected(kinds)}, not a boolean")
        if not isinstance(value, kinds):
            raise self.fail(key, f"must be {_expected(kinds)}, not {_kind(value)}")
        return value

    def require(self, data: dict[str, Any], key: Key, kind: type) -> Any:
        name = key[-1]
        if name not in data:
            raise self.fail(key[:-1], f"the key {name!r} is required")
        return self.get(data, key, kind)

    def strings(self, data: dict[str, Any], key: Key, *, one_or_many: bool = False) -> tuple[str, ...]:
        value = self.get(data, key, (list, str) if one_or_many else list, [])
        if isinstance(value, str):
            value = [value]
        for item in value:
            if not isinstance(item, str) or not item:
                raise self.fail(key, f"every item must be a non-empty string (got {item!r})")
        return tuple(value)

    def patterns(self, data: dict[str, Any], key: Key) -> tuple[str, ...]:
        values = self.strings(data, key)
        for pattern in values:
            self.check(key, compile_pattern, pattern)
        return values

    def integer(self, data: dict[str, Any], key: Key, low: int, high: int, default: int) -> int:
        value = self.get(data, key, int, default)
        if not low <= value <= high:
            raise self.fail(key, f"must be from {low:,} to {high:,} (got {value:,})")
        return int(value)

    def choice(self, data: dict[str, Any], key: Key, choices: tuple[str, ...], default: Any) -> Any:
        value = self.get(data, key, str, default)
        if value is not default and value not in choices:
            raise self.fail(key, f"must be one of {', '.join(choices)} (got {value!r})")
        return value

    def file(self, value: str) -> Path:
        return (self.folder / os.path.expanduser(value)).resolve()

    def existing_file(self, key: Key, value: str) -> Path:
        path = self.file(value)
        if not path.is_file():
            raise self.fail(key, f"{path} is not a file" if path.exists() else f"{path} does not exist")
        return path

    def source_path(self, key: Key, value: str) -> str:
        """A source's path made absolute: a file, or a glob pattern (`logs/access.log*`) that matches some
        file now. A pattern is kept as it is and expanded again when the build runs (`BuildConfig.run`), so
        it takes the files of that day; one that matches nothing is an error, as in sitemap_gen.py."""
        path = self.file(value)
        if path.is_file() or not is_glob(value):
            return str(self.existing_file(key, value))
        if not expand_path(path):
            raise self.fail(key, f"no file matches the pattern {value!r} ({path})")
        return str(path)

    def check(self, key: Key, make: Callable[..., object], *args: Any, **kwargs: Any) -> Any:
        try:
            return make(*args, **kwargs)
        except UsageError as exc:
            raise self.fail(key, str(exc)) from None


def _name(key: Key) -> str:
    out = ""
    for part in key:
        out += f"[{part + 1}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def _kind(value: object) -> str:
    return {
        dict: "a table",
        list: "an array",
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "a boolean",
    }.get(type(value), type(value).__name__)


def _expected(kinds: tuple[type, ...]) -> str:
    return " or ".join(_kind(k()) for k in kinds)


def load_config(path: str | os.PathLike[str] = DEFAULT_CONFIG) -> BuildConfig:
    """Read and check a `sitemapkit.toml`. Raises `ConfigError` naming the file, line and key."""
    file = Path(path)
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{file}: no such config file") from None
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read ({exc.strerror})") from None
    if raw.lstrip()[:1] == b"<":
        raise ConfigError(
            f"{file}: an XML file, not TOML (sitemap_gen.py's config.xml is read by "
            "sitemapkit.generator.sitemap_gen.load_any, and by `sitemapkit build`)"
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{file}:{line}: not UTF-8 text") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        m = re.search(r"\(at line (\d+), column (\d+)\)", message)
        if m:
            message = message[: m.start()].strip()
            raise ConfigError(f"{file}:{m.group(1)}:{m.group(2)}: invalid TOML: {message}") from None
        raise ConfigError(f"{file}: invalid TOML: {message}") from None
    return _read(_Reader(file, text), data)


_TOP = (
    "base_url",
    "output",
    "source",
    "filters",
    "defaults",
    "state",
    "lastmod",
    "hreflang",
    "allow_hosts",
    "strict",
    "robots",
    "encoding",
    "url",
    "filter",
)
_OUTPUT = (
    "dir",
    "gzip",
    "gzip_level",
    "max_urls",
    "max_bytes",
    "name",
    "index",
    "xsl",
    "naming",
    "replace_existing",
)
_SOURCE_KEYS = {
    "list": ("type", "path", "encoding", "sitemap_gen", "tag_order", "publication"),
    "csv": ("type", "path", "encoding"),
    "jsonl": ("type", "path", "encoding"),
    "parquet": ("type", "path"),
    "folder": (
        "type",
        "path",
        "clean_urls",
        "include",
        "exclude",
        "images",
        "volatile",
        "volatile_regex",
        "url",
        "default_file",
    ),
    "log": (
        "type",
        "path",
        "min_hits",
        "strip_query",
        "exclude",
        "exclude_agents",
        "priority_from_hits",
        "encoding",
        "format",
        "status",
        "assets",
    ),
    "sitemap": ("type", "path"),
    "crawl": (
        "type",
        "url",
        "allow_hosts",
        "include",
        "exclude",
        "max_pages",
        "max_depth",
        "strip_query",
        "keep_query",
        "trap_limit",
        "concurrency",
        "rate",
        "user_agent",
        "timeout",
        "retries",
        "sitemaps",
        "images",
        "allow_private",
        "crawl_db",
    ),
}


def _read(r: _Reader, data: dict[str, Any]) -> BuildConfig:
    r.table(data, (), _TOP)
    base_url = r.require(data, ("base_url",), str)
    output = r.table(r.get(data, ("output",), dict, None) or _missing(r, "output"), ("output",), _OUTPUT)
    out = OutputConfig(
        dir=r.file(r.require(output, ("output", "dir"), str)),
        gzip=r.get(output, ("output", "gzip"), bool, False),
        gzip_level=r.integer(output, ("output", "gzip_level"), 0, 9, 6),
        max_urls=r.integer(output, ("output", "max_urls"), 1, MAX_URLS, MAX_URLS),
        max_bytes=r.integer(output, ("output", "max_bytes"), 1, MAX_BYTES, MAX_BYTES),
        name=r.get(output, ("output", "name"), str, "sitemap"),
        index=r.choice(output, ("output", "index"), ("auto", "always", "never"), "auto"),
        xsl=r.get(output, ("output", "xsl"), str, None),
        naming=r.choice(output, ("output", "naming"), ("sitemapkit", "sitemap_gen"), "sitemapkit"),
        replace_existing=r.get(output, ("output", "replace_existing"), bool, False),
    )
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", out.name) or ".." in out.name:
        raise r.fail(
            ("output", "name"), f"must be a plain file name prefix such as 'sitemap' (got {out.name!r})"
        )
    sources = r.get(data, ("source",), list, [])
    if not sources and not data.get("url"):
        raise r.fail(
            (), "no [[source]]: declare at least one (a list, csv, jsonl, parquet, folder, log or sitemap)"
        )
    lists: list[str | ListSource] = []
    folders: list[FolderSource] = []
    logs: list[LogSource] = []
    crawls: list[dict[str, Any]] = []
    for i, source in enumerate(sources):
        key: Key = ("source", i)
        if not isinstance(source, dict):
            raise r.fail(("source",), "must be an array of tables ([[source]])")
        kind = r.choice(source, (*key, "type"), SOURCE_TYPES, None)
        if kind is None:
            raise r.fail(key, f"the key 'type' is required (one of {', '.join(SOURCE_TYPES)})")
        r.table(source, key, _SOURCE_KEYS[kind])
        encoding = _encoding(r, source, (*key, "encoding"))
        if kind == "sitemap":
            for p in r.strings(source, (*key, "path"), one_or_many=True) or _no_path(r, key):
                name = p if p == "-" else r.source_path((*key, "path"), p)
                lists.append(ListSource(name, kind="sitemap"))
        elif kind == "parquet":  # a file, or a folder of part files (not a glob: the folder is one source)
            for p in r.strings(source, (*key, "path"), one_or_many=True) or _no_path(r, key):
                folder = r.file(p)
                name = str(folder if folder.is_dir() else r.existing_file((*key, "path"), p))
                _check_kind(r, (*key, "path"), kind, name)
                lists.append(name)
        elif kind in ("list", "csv", "jsonl"):
            extra = _list_options(r, source, key)
            for p in r.strings(source, (*key, "path"), one_or_many=True) or _no_path(r, key):
                if p == "-":  # what it holds is checked against `kind` when it is read
                    lists.append(ListSource("-", encoding, kind=kind, **extra))
                    continue
                if not is_glob(p):
                    _check_kind(r, (*key, "path"), kind, p)
                name = r.source_path((*key, "path"), p)
                for each in expand_path(name) if is_glob(p) else ():
                    _check_kind(r, (*key, "path"), kind, each)
                lists.append(ListSource(name, encoding, **extra) if encoding or extra else name)
        elif kind == "folder":
            folder = r.require(source, (*key, "path"), str)
            if not folder:
                raise r.fail((*key, "path"), 'must not be empty (write "." for the config\'s own folder)')
            path = r.file(folder)
            if not path.is_dir():
                raise r.fail((*key, "path"), f"{path} is not a folder")
            folders.append(
                FolderSource(
                    path,
                    clean_urls=r.get(source, (*key, "clean_urls"), bool, False),
                    include=folder_include(r.strings(source, (*key, "include"))),
                    exclude=r.strings(source, (*key, "exclude")),
                    images=r.get(source, (*key, "images"), bool, False),
                    volatile_selectors=_selectors(r, source, (*key, "volatile")),
                    volatile_patterns=_regexes(r, source, (*key, "volatile_regex")),
                    url=r.get(source, (*key, "url"), str, None),
                    default_files=r.strings(source, (*key, "default_file"), one_or_many=True)
                    if "default_file" in source
                    else None,
                )
            )
        elif kind == "crawl":
            crawls.append(_crawl(r, source, key))
        else:
            paths = r.strings(source, (*key, "path"), one_or_many=True) or _no_path(r, key)
            logs.append(
                LogSource(
                    tuple(r.source_path((*key, "path"), p) for p in paths),
                    min_hits=r.integer(source, (*key, "min_hits"), 1, 2**31, 1),
                    strip_query=r.get(source, (*key, "strip_query"), bool, False),
                    exclude=r.strings(source, (*key, "exclude")),
                    priority_from_hits=r.get(source, (*key, "priority_from_hits"), bool, False),
                    encoding=encoding,
                    log_format=r.choice(
                        source, (*key, "format"), ("common", "combined", "vhost_combined", "w3c"), None
                    ),
                    statuses=_statuses(r, source, (*key, "status")),
                    assets=r.strings(source, (*key, "assets")) if "assets" in source else None,
                    exclude_agents=_agents(r.strings(source, (*key, "exclude_agents"))),
                )
            )
    filters = r.table(r.get(data, ("filters",), dict, {}), ("filters",), ("include", "exclude"))
    defaults: list[Default] = []
    for i, item in enumerate(r.get(data, ("defaults",), list, [])):
        key = ("defaults", i)
        if not isinstance(item, dict):
            raise r.fail(("defaults",), "must be an array of tables ([[defaults]])")
        r.table(item, key, ("match", "changefreq", "priority"))
        match = r.require(item, (*key, "match"), str)
        r.check((*key, "match"), compile_pattern, match)
        changefreq = r.get(item, (*key, "changefreq"), str, None)
        priority = r.get(item, (*key, "priority"), (float, int), None)
        r.check((*key, "changefreq"), Default, match, changefreq=changefreq)
        r.check((*key, "priority"), Default, match, priority=priority)
        defaults.append(Default(match, changefreq, None if priority is None else float(priority)))
    state = r.get(data, ("state",), (str, bool), DEFAULT_STATE)
    if state is True or state == "":
        raise r.fail(("state",), "must be a path, or false for no state file")
    robots = r.get(data, ("robots",), str, None)
    config = BuildConfig(
        records=_records(r, data),
        filters=_filters(r, data),
        encoding=_encoding(r, data, ("encoding",)),
        path=r.path.resolve(),
        base_url=base_url,
        output=out,
        lists=tuple(lists),
        folders=tuple(folders),
        logs=tuple(logs),
        crawls=tuple(crawls),
        include=r.patterns(filters, ("filters", "include")),
        exclude=r.patterns(filters, ("filters", "exclude")),
        defaults=tuple(defaults),
        state=r.file(state) if isinstance(state, str) else None,
        lastmod=r.choice(data, ("lastmod",), LASTMOD_CHOICES, None),
        hreflang=r.choice(data, ("hreflang",), ("auto", "complete", "keep"), "auto"),
        allow_hosts=r.strings(data, ("allow_hosts",)),
        strict=r.get(data, ("strict",), bool, False),
        robots=r.file(robots) if robots is not None else None,
    )
    if config.lastmod == "content" and config.state is None:
        raise r.fail(("lastmod",), "'content' needs a state file: add state = \".sitemapkit/state.db\"")
    _check_base_url(r, base_url, config.allow_hosts)
    return config


def _crawl(r: _Reader, source: dict[str, Any], key: Key) -> dict[str, Any]:
    """The keyword arguments of a crawl source (`sitemapkit.crawl.run.CrawlSource`), checked."""
    url = r.require(source, (*key, "url"), str)
    if not re.match(r"(?i)https?://", url):
        raise r.fail((*key, "url"), f"must be an http(s) URL (got {url!r})")
    options: dict[str, Any] = {"start_url": url}
    for name in ("include", "exclude"):
        options[name] = r.patterns(source, (*key, name))
    options["allow_hosts"] = r.strings(source, (*key, "allow_hosts"))
    options["keep_query"] = r.strings(source, (*key, "keep_query"))
    for name in ("max_pages", "max_depth"):
        if name in source:
            options[name] = r.integer(source, (*key, name), 0 if name == "max_depth" else 1, 2**31, 0)
    options["trap_limit"] = r.integer(source, (*key, "trap_limit"), 1, 2**31, 100)
    options["concurrency"] = r.integer(source, (*key, "concurrency"), 1, 64, 2)
    options["retries"] = r.integer(source, (*key, "retries"), 0, 10, 2)
    for name in ("rate", "timeout"):
        value = r.get(source, (*key, name), (float, int), None)
        if value is not None:
            if value <= 0:
                raise r.fail((*key, name), f"must be more than 0 (got {value})")
            options[name] = float(value)
    for name, default in (
        ("strip_query", False),
        ("sitemaps", True),
        ("images", False),
        ("allow_private", False),
    ):
        options[name] = r.get(source, (*key, name), bool, default)
    agent = r.get(source, (*key, "user_agent"), str, None)
    if agent is not None:
        options["user_agent"] = agent
    crawl_db = r.get(source, (*key, "crawl_db"), str, None)
    if crawl_db is not None:
        options["crawl_db"] = str(r.file(crawl_db))
    return options


def _check_base_url(r: _Reader, base_url: str, allow_hosts: tuple[str, ...]) -> None:
    from sitemapkit.core.errors import InvalidUrlError
    from sitemapkit.core.urls import Scope

    try:
        Scope(base_url)
    except (InvalidUrlError, UsageError) as exc:
        raise r.fail(("base_url",), str(exc)) from None
    try:
        Scope(base_url, allow_hosts)
    except (InvalidUrlError, UsageError) as exc:
        raise r.fail(("allow_hosts",), str(exc)) from None


def _encoding(r: _Reader, data: dict[str, Any], key: Key) -> str | None:
    from sitemapkit.generator.sources.encodings import check_encoding

    value = r.get(data, key, str, None)
    return None if value is None else str(r.check(key, check_encoding, value))


def _list_options(r: _Reader, source: dict[str, Any], key: Key) -> dict[str, Any]:
    from sitemapkit.generator.sources.newslist import check_tag_order

    extra: dict[str, Any] = {}
    if r.get(source, (*key, "sitemap_gen"), bool, False):
        extra["sitemap_gen"] = True
    tags = r.strings(source, (*key, "tag_order"))
    if tags:
        extra["tag_order"] = r.check((*key, "tag_order"), check_tag_order, tags)
    publication = r.strings(source, (*key, "publication"))
    if publication:
        if len(publication) != 2 or not tags:
            raise r.fail((*key, "publication"), "must be [NAME, LANGUAGE], with a tag_order")
        extra["publication"] = (publication[0], publication[1])
    return extra


def _statuses(r: _Reader, source: dict[str, Any], key: Key) -> frozenset[int] | None:
    values = r.get(source, key, list, None)
    if values is None:
        return None
    if not values or not all(
        isinstance(v, int) and not isinstance(v, bool) and 100 <= v <= 599 for v in values
    ):
        raise r.fail(key, "must be a list of HTTP statuses such as [200, 304]")
    return frozenset(values)


def _records(r: _Reader, data: dict[str, Any]) -> tuple[TextRecord, ...]:
    out: list[TextRecord] = []
    for i, item in enumerate(r.get(data, ("url",), list, [])):
        key: Key = ("url", i)
        if not isinstance(item, dict):
            raise r.fail(("url",), "must be an array of tables ([[url]])")
        r.table(item, key, ("loc", "lastmod", "changefreq", "priority"))
        loc = r.require(item, (*key, "loc"), str)
        lastmod = r.get(item, (*key, "lastmod"), str, None)
        changefreq = r.get(item, (*key, "changefreq"), str, None)
        priority = r.get(item, (*key, "priority"), (float, int, str), None)
        text_priority = None if priority is None else str(priority)
        out.append(TextRecord(loc, lastmod, changefreq, text_priority, str(r.path), r.lines.get(key, 0)))
    return tuple(out)


def _filters(r: _Reader, data: dict[str, Any]) -> tuple[UrlFilter, ...]:
    out: list[UrlFilter] = []
    for i, item in enumerate(r.get(data, ("filter",), list, [])):
        key: Key = ("filter", i)
        if not isinstance(item, dict):
            raise r.fail(("filter",), "must be an array of tables ([[filter]])")
        r.table(item, key, ("action", "type", "pattern"))
        pattern = r.require(item, (*key, "pattern"), str)
        action = r.choice(item, (*key, "action"), ("pass", "drop"), "drop")
        kind = r.choice(item, (*key, "type"), ("wildcard", "regexp"), "wildcard")
        out.append(r.check((*key, "pattern"), UrlFilter, pattern, action, kind))
    return tuple(out)


def _missing(r: _Reader, name: str) -> dict[str, Any]:
    raise r.fail((), f"the table [{name}] is required")


def _no_path(r: _Reader, key: Key) -> tuple[str, ...]:
    raise r.fail(key, "the key 'path' is required")


def _check_kind(r: _Reader, key: Key, kind: str, path: str) -> None:
    from sitemapkit.generator.sources.parquet import is_parquet
    from sitemapkit.generator.sources.textblocks import input_kind

    detected = "parquet" if is_parquet(path) else input_kind(path)
    if path != "-" and detected != kind:
        raise r.fail(
            key, f"{path!r} is read as {detected} (by its extension), not {kind}; rename it or fix type"
        )


def _regexes(r: _Reader, data: dict[str, Any], key: Key) -> tuple[str, ...]:
    from sitemapkit.core.page import compile_patterns

    values = r.strings(data, key)
    r.check(key, compile_patterns, values)
    return values


def _agents(extra: tuple[str, ...]) -> tuple[str, ...] | None:
    """A log source's user agents to drop: the default ones and `extra` (None: the default ones)."""
    if not extra:
        return None
    from sitemapkit.generator.sources.logs import DEFAULT_EXCLUDED_AGENTS

    return (*DEFAULT_EXCLUDED_AGENTS, *extra)


def _selectors(r: _Reader, data: dict[str, Any], key: Key) -> tuple[str, ...]:
    from sitemapkit.core.page import css_to_xpath

    values = r.strings(data, key)
    for selector in values:
        r.check(key, css_to_xpath, selector)
    return values
