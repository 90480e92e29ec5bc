"""Google's sitemap_gen.py config.xml (1.4 of 2005, 1.5 of 2007), read as it is into a `BuildConfig`.

    <site base_url="https://www.example.com/" store_into="/var/www/docroot/sitemap.xml.gz">
      <url href="/special" lastmod="2024-05-01" changefreq="weekly" priority="0.8"/>
      <urllist path="urls/*.txt" encoding="latin-1"/>
      <directory path="/var/www/docroot" url="https://www.example.com/" default_file="index.html"/>
      <accesslog path="/var/log/httpd/access.log*"/>
      <sitemap path="old/sitemap_index.xml"/>
      <filter action="drop" type="wildcard" pattern="*~"/>
    </site>

A file is one when its content is an XML document whose root is `<site>` (`is_sitemap_gen_config`).
Every element and attribute of 1.4 and 1.5 is read with sitemap_gen's meaning; an unknown element or
attribute, or a value sitemap_gen refused, is a `ConfigError` naming the file and line.

- `urllist`, `accesslog` and `sitemap` paths are globs, expanded when the build runs (sorted; one that
  matches nothing is an error); relative paths are taken from the config file's folder. `to_toml` keeps
  the pattern, which `sitemapkit.toml` takes as it is.
- Filters apply to the whole URL, in file order; the first that matches decides (`UrlFilter`).
- `store_into` names the output folder and files as sitemap_gen did: `sitemap.xml.gz`, `sitemap1.xml.gz`,
  ..., and the index `sitemap_index.xml` (never gzipped) when there are several files.
- `<directory>` lists every file under the folder (hidden ones aside), `default_file` as its folder's
  URL, with the file's mtime as lastmod; an access log counts GET and HEAD requests answered 200, of any
  file type.
- `suppress_search_engine_notify` and `verbose` are accepted; the ping endpoints are gone, so the run says
  so once (`BuildConfig.notes`) instead of pinging.

`to_toml(config)` writes the equivalent `sitemapkit.toml`; `load_any(path)` reads either kind of file.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from lxml import etree

from sitemapkit.core.errors import UsageError
from sitemapkit.generator.config import (
    DEFAULT_CONFIG,
    BuildConfig,
    ConfigError,
    OutputConfig,
    expand_path,
    load_config,
)
from sitemapkit.generator.rules import UrlFilter
from sitemapkit.generator.run import HTML_PAGES, FolderSource, ListSource, LogSource
from sitemapkit.generator.sources.records import TextRecord

_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "site": (
        "base_url",
        "store_into",
        "verbose",
        "suppress_search_engine_notify",
        "default_encoding",
        "sitemap_type",
    ),
    "url": ("href", "lastmod", "changefreq", "priority"),
    "urllist": ("path", "encoding", "tag_order"),
    "directory": ("path", "url", "default_file", "remove_empty_directories"),
    "accesslog": ("path", "encoding"),
    "sitemap": ("path",),
    "filter": ("action", "type", "pattern"),
}
PING_NOTE = (
    'config.xml asks for search engines to be notified (no suppress_search_engine_notify="1"): the ping '
    "endpoints sitemap_gen.py used were retired (Google's in 2023), so nothing is sent. List the sitemap "
    "in robots.txt (`sitemapkit robots`) and notify IndexNow engines (`sitemapkit indexnow`)."
)
_ROOT = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)")


def is_sitemap_gen_config(data: bytes) -> bool:
    """Whether `data` is an XML document whose root element is `<site>` (sitemap_gen's config.xml)."""
    text = data.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text.startswith(b"<"):
        return False
    text = re.sub(rb"<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^>]*>", b"", text[:65536], flags=re.DOTALL)
    m = _ROOT.search(text)
    return m is not None and m.group(1) == b"site" and not text[: m.start()].strip()


def load_any(path: str | os.PathLike[str] = DEFAULT_CONFIG) -> BuildConfig:
    """Read a `sitemapkit.toml` or a sitemap_gen.py config.xml (told apart by content)."""
    file = Path(path)
    try:
        raw = file.read_bytes()
    except OSError:
        return load_config(file)  # it says why
    if is_sitemap_gen_config(raw):
        return load_sitemap_gen(file, raw)
    return load_config(file)


class _Xml:
    """The config file being read: its lines, for errors that name the line of an attribute."""

    def __init__(self, path: Path, raw: bytes) -> None:
        self.path = path
        self.folder = path.resolve().parent
        self.lines = raw.decode("utf-8", "replace").splitlines()

    def line(self, el: etree._Element, attr: str | None = None) -> int:
        start: int = el.sourceline if isinstance(el.sourceline, int) else 1
        if attr is not None:
            pattern = re.compile(rf"(?<![\w.-]){re.escape(attr)}\s*=")
            for number in range(start, min(start + 30, len(self.lines)) + 1):
                if pattern.search(self.lines[number - 1]):
                    return number
        return start

    def fail(self, el: etree._Element, message: str, attr: str | None = None) -> ConfigError:
        return ConfigError(f"{self.path}:{self.line(el, attr)}: <{el.tag}>: {message}")

    def file(self, value: str) -> Path:
        return (self.folder / os.path.expanduser(value)).resolve()

    def pattern(self, el: etree._Element, value: str) -> str:
        """`value` made absolute, kept a glob: the build expands it when it runs (`BuildConfig.run`), and
        `--print-toml` writes it as it is. One that matches no file now is an error, as in sitemap_gen.py."""
        path = str(self.file(value))
        if not expand_path(path):
            raise self.fail(el, f"no file matches path={value!r}", "path")
        return path


def load_sitemap_gen(path: str | os.PathLike[str], raw: bytes | None = None) -> BuildConfig:
    """Read a sitemap_gen.py config.xml (see the module docstring). Raises `ConfigError`."""
    file = Path(path)
    if raw is None:
        try:
            raw = file.read_bytes()
        except OSError as exc:
            raise ConfigError(f"{file}: cannot read ({exc.strerror})") from None
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, remove_comments=True)
    try:
        root = etree.fromstring(raw, parser)
    except etree.XMLSyntaxError as exc:
        line, column = exc.position
        raise ConfigError(f"{file}:{line}:{column}: not well-formed XML ({exc.msg})") from None
    x = _Xml(file, raw)
    if root.tag != "site":
        raise ConfigError(f"{file}:{root.sourceline}: the root element must be <site>, not <{root.tag}>")
    _check_attributes(x, root)
    site = dict(root.attrib)
    base_url = _base_url(x, root, site.get("base_url"))
    output = _output(x, root, site.get("store_into"))
    _verbose(x, root, site.get("verbose"))
    notify = _flag(x, root, "suppress_search_engine_notify", site.get("suppress_search_engine_notify"))
    default_encoding = _encoding(x, root, "default_encoding", site.get("default_encoding"))
    sitemap_type = (site.get("sitemap_type") or "web").lower()
    if sitemap_type not in ("web", "mobile", "news"):
        raise x.fail(
            root, f'sitemap_type must be "web", "mobile" or "news" (got {sitemap_type!r})', "sitemap_type"
        )

    lists: list[str | ListSource] = []
    folders: list[FolderSource] = []
    logs: list[LogSource] = []
    records: list[TextRecord] = []
    filters: list[UrlFilter] = []
    for el in root:
        if not isinstance(el.tag, str):
            continue  # a processing instruction
        if el.tag not in _ATTRIBUTES or el.tag == "site":
            raise ConfigError(
                f"{file}:{el.sourceline}: unknown element <{el.tag}> "
                f"(known: {', '.join(t for t in _ATTRIBUTES if t != 'site')})"
            )
        _check_attributes(x, el)
        for child in el:
            if isinstance(child.tag, str):
                raise x.fail(child, f"must be directly inside <site>, not inside <{el.tag}>")
        a = dict(el.attrib)
        if el.tag == "url":
            href = a.get("href")
            if not href:
                raise x.fail(el, "the href attribute is required", "href")
            records.append(
                TextRecord(
                    urljoin(base_url, href),
                    a.get("lastmod"),
                    a.get("changefreq"),
                    a.get("priority"),
                    str(x.path),
                    x.line(el),
                )
            )
        elif el.tag == "urllist":
            value = _required(x, el, a, "path")
            encoding = _encoding(x, el, "encoding", a.get("encoding")) or default_encoding
            tags: tuple[str, ...] = ()
            if sitemap_type == "news":
                tags = _tag_order(x, el, a.get("tag_order"))
            elif "tag_order" in a:
                raise x.fail(el, 'tag_order is for news lists (sitemap_type="news")', "tag_order")
            lists.append(ListSource(x.pattern(el, value), encoding, sitemap_gen=True, tag_order=tags))
        elif el.tag == "directory":
            folders.append(_directory(x, el, a, base_url))
        elif el.tag == "accesslog":
            value = _required(x, el, a, "path")
            encoding = _encoding(x, el, "encoding", a.get("encoding")) or default_encoding
            logs.append(
                LogSource((x.pattern(el, value),), encoding=encoding, statuses=frozenset({200}), assets=())
            )
        elif el.tag == "sitemap":
            lists.append(ListSource(x.pattern(el, _required(x, el, a, "path")), kind="sitemap"))
        else:
            filters.append(_filter(x, el, a))
    if not (lists or folders or logs or records):
        raise ConfigError(
            f"{file}:{root.sourceline}: <site> has no input (url, urllist, directory, accesslog, sitemap)"
        )
    return BuildConfig(
        path=file.resolve(),
        base_url=base_url,
        output=output,
        lists=tuple(lists),
        folders=tuple(folders),
        logs=tuple(logs),
        records=tuple(records),
        filters=tuple(filters),
        state=None,
        lastmod="mtime" if folders else None,
        hreflang="keep",
        notes=() if notify else (PING_NOTE,),
    )


def _check_attributes(x: _Xml, el: etree._Element) -> None:
    known = _ATTRIBUTES[str(el.tag)]
    for key in el.attrib:
        name = key.decode() if isinstance(key, bytes) else str(key)
        if name not in known:
            raise x.fail(el, f"unknown attribute {name} (known: {', '.join(known)})", name)


def _required(x: _Xml, el: etree._Element, a: dict[str, str], name: str) -> str:
    value = a.get(name)
    if not value:
        raise x.fail(el, f"the {name} attribute is required", name)
    return value


def _base_url(x: _Xml, el: etree._Element, value: str | None) -> str:
    if not value:
        raise x.fail(el, "the base_url attribute is required", "base_url")
    parts = urlsplit(value)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise x.fail(el, f"base_url must be an absolute http(s) URL (got {value!r})", "base_url")
    return value if value.endswith("/") else value + "/"


def _output(x: _Xml, el: etree._Element, value: str | None) -> OutputConfig:
    if not value:
        raise x.fail(el, "the store_into attribute is required", "store_into")
    target = x.file(value)
    base = target.name
    low = base.lower()
    if low.endswith(".xml.gz"):
        name, gzip = base[:-7], True
    elif low.endswith(".xml"):
        name, gzip = base[:-4], False
    else:
        raise x.fail(el, f"store_into must end in .xml or .xml.gz (got {value!r})", "store_into")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) or ".." in name:
        raise x.fail(
            el,
            f"store_into's file name must be a plain name such as sitemap.xml (got {base!r})",
            "store_into",
        )
    return OutputConfig(dir=target.parent, gzip=gzip, name=name, index="auto", naming="sitemap_gen")


def _verbose(x: _Xml, el: etree._Element, value: str | None) -> None:
    if value is not None and (not value.strip().isdigit() or not 0 <= int(value) <= 3):
        raise x.fail(el, f"verbose must be an integer from 0 to 3 (got {value!r})", "verbose")


def _flag(x: _Xml, el: etree._Element, name: str, value: str | None) -> bool:
    if value is None or value.lower() in ("0", "false", ""):
        return False
    if value.lower() in ("1", "true"):
        return True
    raise x.fail(el, f"{name} must be 1, 0, true or false (got {value!r})", name)


def _encoding(x: _Xml, el: etree._Element, name: str, value: str | None) -> str | None:
    from sitemapkit.generator.sources.encodings import check_encoding

    if value is None:
        return None
    try:
        return check_encoding(value)
    except UsageError as exc:
        raise x.fail(el, str(exc), name) from None


def _tag_order(x: _Xml, el: etree._Element, value: str | None) -> tuple[str, ...]:
    from sitemapkit.generator.sources.newslist import check_tag_order

    if not value:
        raise x.fail(
            el, "a news list needs a tag_order (the order of its TAB-separated columns)", "tag_order"
        )
    try:
        return check_tag_order(tuple(t for t in value.replace("\\", " ").split(",")))
    except UsageError as exc:
        raise x.fail(el, str(exc), "tag_order") from None


def _directory(x: _Xml, el: etree._Element, a: dict[str, str], base_url: str) -> FolderSource:
    folder = x.file(_required(x, el, a, "path"))
    if not folder.is_dir():
        raise x.fail(el, f"{folder} is not a folder", "path")
    url = _required(x, el, a, "url")
    if not url.endswith("/"):
        url += "/"
    if not url.startswith(base_url):
        url = urljoin(base_url, url)
        if not url.startswith(base_url):
            raise x.fail(el, f"url {a['url']!r} is not under base_url {base_url}", "url")
    default = a.get("default_file")
    if default is not None and ("/" in default or os.sep in default or not default):
        raise x.fail(
            el, f"default_file must be a file name without a folder (got {default!r})", "default_file"
        )
    remove = a.get("remove_empty_directories")
    if remove is not None and remove.lower() not in ("1", "0", "true", "false"):
        raise x.fail(el, "remove_empty_directories must be true or false", "remove_empty_directories")
    return FolderSource(folder, include=("*",), url=url, default_files=(default,) if default else ())


def _filter(x: _Xml, el: etree._Element, a: dict[str, str]) -> UrlFilter:
    pattern = _required(x, el, a, "pattern")
    kind = a.get("type", "wildcard").lower()
    action = a.get("action", "drop").lower()
    if kind not in ("wildcard", "regexp"):
        raise x.fail(el, f'type must be "wildcard" or "regexp" (got {kind!r})', "type")
    if action not in ("pass", "drop"):
        raise x.fail(el, f'action must be "pass" or "drop" (got {action!r})', "action")
    try:
        return UrlFilter(pattern, action, kind)  # type: ignore[arg-type]
    except UsageError as exc:  # an invalid regular expression
        raise x.fail(el, str(exc), "pattern") from None


# -- sitemapkit.toml --------------------------------------------------------------------------------------


def _q(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _rel(config: BuildConfig, path: str | os.PathLike[str]) -> str:
    p = Path(path)
    try:
        return p.relative_to(config.path.parent).as_posix() or "."
    except ValueError:
        return str(p)


def _opt(out: list[str], key: str, value: object, default: object = None) -> None:
    """Append `key = value` unless the value is the default."""
    if value != default:
        out.append(f"{key} = {_toml_value(value)}")


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, frozenset, set)):
        value = sorted(value) if isinstance(value, (frozenset, set)) else list(value)
    return _q(value)


def to_toml(config: BuildConfig) -> str:
    """The `sitemapkit.toml` that builds what `config` builds (paths relative to the config's folder)."""
    from sitemapkit.core.constants import MAX_BYTES, MAX_URLS
    from sitemapkit.generator.sources.textblocks import input_kind

    out: list[str] = [
        f"# sitemapkit.toml equivalent of {config.path.name}",
        f"base_url = {_q(config.base_url)}",
    ]
    out.append("state = false" if config.state is None else f"state = {_q(_rel(config, config.state))}")
    _opt(out, "lastmod", config.lastmod)
    _opt(out, "hreflang", config.hreflang, "auto")
    _opt(out, "encoding", config.encoding)
    _opt(out, "allow_hosts", config.allow_hosts, ())
    _opt(out, "strict", config.strict, False)
    if config.robots is not None:
        out.append(f"robots = {_q(_rel(config, config.robots))}")
    for note in config.notes:
        out.append("# " + note)
    o = config.output
    out += ["", "[output]", f"dir = {_q(_rel(config, o.dir))}", f"name = {_q(o.name)}"]
    out.append(f"gzip = {'true' if o.gzip else 'false'}")
    _opt(out, "gzip_level", o.gzip_level, 6)
    _opt(out, "max_urls", o.max_urls, MAX_URLS)
    _opt(out, "max_bytes", o.max_bytes, MAX_BYTES)
    _opt(out, "index", o.index, "auto")
    _opt(out, "xsl", o.xsl)
    if o.naming != "sitemapkit":
        out.append(f"naming = {_q(o.naming)}  # {o.name}.xml, {o.name}1.xml, ..., {o.name}_index.xml")
    _opt(out, "replace_existing", o.replace_existing, False)
    for record in config.records:
        out += ["", "[[url]]", f"loc = {_q(record.loc)}"]
        for key in ("lastmod", "changefreq", "priority"):
            _opt(out, key, getattr(record, key))
    for source in config.lists:
        s = source if isinstance(source, ListSource) else ListSource(source)
        kind = "sitemap" if s.kind == "sitemap" else input_kind(s.path)
        path = s.path if s.path == "-" else _rel(config, s.path)
        out += ["", "[[source]]", f"type = {_q(kind)}", f"path = {_q(path)}"]
        _opt(out, "encoding", s.encoding)
        if s.sitemap_gen:
            out.append("sitemap_gen = true  # URL key=value lines; other tokens are reported")
        if s.tag_order:
            out.append(f"tag_order = {_q(list(s.tag_order))}")
            if s.publication is None:
                out.append('# publication = ["NAME", "LANGUAGE"]  # needed for <news:news>')
        _opt(out, "publication", s.publication)
    for f in config.folders:
        out += ["", "[[source]]", 'type = "folder"', f"path = {_q(_rel(config, f.path))}"]
        _opt(out, "url", f.url)
        _opt(out, "default_file", f.default_files)
        _opt(out, "clean_urls", f.clean_urls, False)
        # a folder source always lists the HTML pages; `include` adds to them
        _opt(out, "include", tuple(g for g in f.include if g not in HTML_PAGES), ())
        _opt(out, "exclude", f.exclude, ())
        _opt(out, "images", f.images, False)
        _opt(out, "volatile", f.volatile_selectors, ())
        _opt(out, "volatile_regex", f.volatile_patterns, ())
    for log in config.logs:
        out += ["", "[[source]]", 'type = "log"', f"path = {_q([_rel(config, p) for p in log.paths])}"]
        _opt(out, "min_hits", log.min_hits, 1)
        _opt(out, "strip_query", log.strip_query, False)
        _opt(out, "exclude", log.exclude, ())
        _opt(out, "priority_from_hits", log.priority_from_hits, False)
        _opt(out, "encoding", log.encoding)
        _opt(out, "format", log.log_format)
        _opt(out, "status", log.statuses)
        _opt(out, "assets", log.assets)
    for flt in config.filters:
        out += ["", "[[filter]]  # on the whole URL; the first that matches decides"]
        out += [f"action = {_q(flt.action)}", f"type = {_q(flt.type)}", f"pattern = {_q(flt.pattern)}"]
    if config.include or config.exclude:
        out += ["", "[filters]"]
        _opt(out, "include", config.include, ())
        _opt(out, "exclude", config.exclude, ())
    for d in config.defaults:
        out += ["", "[[defaults]]", f"match = {_q(d.match)}"]
        _opt(out, "changefreq", d.changefreq)
        _opt(out, "priority", d.priority)
    return "\n".join(out) + "\n"
