"""The signatures the README and docs/ show match the code.

The docs present the API two ways, and both are checked against `inspect.signature` of the real object:

- **signatures in prose**, in inline code: `read(source, *, max_depth=5, ..., fetch_options)`,
  `SitemapWriter(out_dir, base_url, *, gzip, ...)`, a method of a class named just before it in the same
  paragraph (`add(loc, lastmod, ...)` after `SitemapWriter(...)`), `Class.method(...)`,
  `func(...).method(...)`.
  A name shown positionally is the parameter in that place (a value or a class name such as `UrlEntry`
  stands for an argument); a name after `*` or written `name=default` is a parameter the object has; a shown
  default is the real one (`100 MiB`, `10,000`, `None`, `"local"`); and a signature written out in full (it
  shows a `*` or a default, and no `...` or `**options`) names every parameter;
- **calls in Python blocks**, skipped blocks too (tests/project/test_readme.py runs the others, but not the
  bodies of functions nobody calls, nor calls that need a live site): each call of a public name, or of a
  method of a variable made by one (`with SitemapWriter(...) as writer: writer.add(...)`,
  `reader = sitemapkit.read(...)`), binds to its signature: every keyword exists, no more positional
  arguments than it takes, none missing. A `def` of a public name with a body of `...` is a signature.

The names are `sitemapkit.__all__`, and on a page that imports one of the documented namespaces
(`sitemapkit.publisher.web`, `sitemapkit.publisher.indexnow`) what that namespace holds. The changelog is
history, not the current API, and is not read.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import re
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import sitemapkit

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
CALL = re.compile(r"(\.)?\b([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\(")
PUBLIC_NAMESPACES = ("sitemapkit.publisher.web", "sitemapkit.publisher.indexnow")
ELIDED = ("...", "…")
UNITS = {"": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}
NO_DEFAULT = object()


def markdown_files(root: Path = ROOT) -> list[Path]:
    return [
        root / "README.md",
        *(p for p in sorted((root / "docs").rglob("*.md")) if p.name != "changelog.md"),
    ]


# --- what the real objects take ------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """A callable the docs show: its name as shown, and its signature (without `self`)."""

    name: str
    signature: inspect.Signature
    returns: type | None  # the class its result is, when known (for `func(...).method(...)`)


def _returned_class(obj: Any) -> type | None:
    if isinstance(obj, type):
        return obj
    try:
        hints = typing.get_type_hints(obj)
    except Exception:  # an annotation naming what only type checkers import
        raw = getattr(obj, "__annotations__", {}).get("return")
        module = importlib.import_module(getattr(obj, "__module__", "sitemapkit"))
        hints = {"return": getattr(module, raw, None) if isinstance(raw, str) else raw}
    returned = hints.get("return")
    return returned if isinstance(returned, type) else None


def target(name: str, obj: Any, owner: type | None = None) -> Target | None:
    """`obj` (a function or a class), or the method `name` of `owner`, as a `Target`; None if not callable."""
    if owner is not None:
        raw = inspect.getattr_static(owner, name.rpartition(".")[2], None)
        if isinstance(raw, staticmethod):
            obj = raw.__func__
        elif isinstance(raw, classmethod):
            obj = getattr(owner, name.rpartition(".")[2])
        elif inspect.isfunction(raw):
            sig = inspect.signature(raw)
            bound = sig.replace(parameters=list(sig.parameters.values())[1:])
            return Target(name, bound, _returned_class(raw))
        else:
            return None
    if not callable(obj) or isinstance(obj, types.ModuleType):
        return None
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):  # pragma: no cover - a builtin without one
        return None
    return Target(name, with_settings(sig), _returned_class(obj))


def with_settings(sig: inspect.Signature) -> inspect.Signature:
    """`sig` with its `**settings: Unpack[CrawlSettings]` (the keywords of the option groups,
    `sitemapkit.crawl.options`) written out as keyword-only parameters with the groups' defaults: a keyword
    the docs pass (`crawl(..., rate=2)`) must be a field of a group, and a default they show the real one."""
    from sitemapkit.crawl import options

    params = list(sig.parameters.values())
    unpacked = [p for p in params if p.kind == p.VAR_KEYWORD]
    found = re.fullmatch(r"Unpack\[(\w+)\]", str(unpacked[0].annotation)) if unpacked else None
    settings = getattr(options, found.group(1), None) if found else None
    if settings is None:
        return sig
    defaults = {f.name: f.default for kind in options.SETTINGS for f in dataclasses.fields(kind)}
    written = [
        inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, default=defaults[key])
        for key in typing.get_type_hints(settings)
    ]
    return sig.replace(parameters=[*params[:-1], *written])


# --- signatures in prose -------------------------------------------------------------------------------


def split_arguments(text: str) -> list[str]:
    """The top-level items of an argument list; `10,000` stays one item (a thousands separator)."""
    items, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote and text[i - 1] != "\\" else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0 and not re.match(r"\d{3}(?!\d)", text[i + 1 :]):
            items.append(text[start:i].strip())
            start = i + 1
    items.append(text[start:].strip())
    return [item for item in items if item]


def closing(text: str, start: int) -> int:
    """The index of the `)` that closes the `(` before `start`, or -1."""
    depth, quote = 1, ""
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def default_value(text: str) -> Any:
    """A default as the docs write it (`5`, `100 MiB`, `10,000`, `None`, `"local"`), or NO_DEFAULT."""
    number = re.fullmatch(r"([\d,_]+(?:\.\d+)?)\s*(KiB|MiB|GiB)?", text)
    if number:
        value = float(number.group(1).replace(",", "").replace("_", ""))
        return value * UNITS[number.group(2) or ""]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return NO_DEFAULT


IDENTIFIER = re.compile(r"[a-z_]\w*")
KEYWORD = re.compile(r"([A-Za-z_]\w*)\s*=\s*(.+)", re.S)


def is_signature(items: list[str]) -> bool:
    """Shown as a signature, not as a call: with a `*` marker, or parameter names beside `name=default`."""
    named = any(IDENTIFIER.fullmatch(item) or item in ELIDED for item in items)
    return "*" in items or (named and any(KEYWORD.fullmatch(item) for item in items))


def check_spec(tgt: Target, args: str) -> list[str]:
    """What is wrong with `args` (the text between the parentheses) shown as the arguments of `tgt`."""
    params = list(tgt.signature.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    by_name = {p.name: p for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    any_keyword = any(p.kind == p.VAR_KEYWORD for p in params)
    any_positional = any(p.kind == p.VAR_POSITIONAL for p in params)
    items = split_arguments(args)
    signature = is_signature(items)
    problems: list[str] = []
    named: set[str] = set()
    keyword_only = elided = False
    index = 0  # the positional place the next item takes
    for item in items:
        keyword = KEYWORD.fullmatch(item)
        if item in ELIDED or (item.startswith("*") and item != "*"):
            elided = True
            if (
                item.startswith("**")
                and not any_keyword
                and not any(p.kind == p.KEYWORD_ONLY for p in params)
            ):
                problems.append(f"`{item}`: it takes no keyword arguments")
        elif item == "*":
            keyword_only = True
        elif keyword is not None or (IDENTIFIER.fullmatch(item) and keyword_only):
            name = keyword.group(1) if keyword else item
            named.add(name)
            param = by_name.get(name)
            if param is None or param.kind == param.POSITIONAL_ONLY:
                if not any_keyword:
                    problems.append(f"`{name}` is not a parameter")
                continue
            if signature and keyword_only != (param.kind == param.KEYWORD_ONLY):
                where = "after" if keyword_only else "before"
                problems.append(f"`{name}` is shown {where} the `*`, but it is {param.kind.description}")
            if keyword is None or not signature:  # a call's `name=value` passes a value, not the default
                continue
            text = keyword.group(2).strip()
            value = default_value(text)
            if text in ELIDED or value is NO_DEFAULT:
                continue
            if param.default is param.empty:
                problems.append(f"`{name}` is shown with the default {text}, but it has none")
            elif value != param.default:
                problems.append(f"`{name}` is shown with the default {text}, but it is {param.default!r}")
        else:  # a positional parameter by its name, or a value (a class stands for an instance of it)
            if index < len(positional):
                if IDENTIFIER.fullmatch(item) and positional[index].name != item:
                    where = f"in place {index + 1}, where the parameter is `{positional[index].name}`"
                    problems.append(f"`{item}` is shown {where}")
                named.add(positional[index].name)
            elif item in by_name:
                problems.append(f"`{item}` is shown positionally, but it is keyword-only")
            elif not any_positional:
                problems.append(f"`{item}` is one positional argument too many (it takes {len(positional)})")
            index += 1
    if elided or not items:  # `name(...)`, or `name()` for the function itself
        return problems
    if signature:
        left_out = [name for name in by_name if name not in named]
        if left_out:
            problems.append(f"shown in full, but {', '.join(left_out)} left out")
    else:
        needed = [p.name for p in positional[index:] if p.default is p.empty]
        needed += [p.name for p in by_name.values() if p.kind == p.KEYWORD_ONLY and p.default is p.empty]
        needed = [name for name in needed if name not in named]
        if needed:
            problems.append(f"{', '.join(needed)} not given")
    return problems


@dataclass
class Shown:
    """One signature or call the docs show, and what is wrong with it."""

    where: str
    text: str
    target: str
    problems: list[str] = field(default_factory=list)


def _namespace_of(path_text: str) -> dict[str, Any]:
    """The public names a page may show unqualified: `sitemapkit.__all__` and the documented namespaces the
    page's Python blocks import."""
    names: dict[str, Any] = {name: getattr(sitemapkit, name) for name in sitemapkit.__all__}
    for module_name in PUBLIC_NAMESPACES:
        base, _, leaf = module_name.rpartition(".")
        if (
            f"import {module_name}" in path_text
            or f"from {module_name} import" in path_text
            or (re.search(rf"from {re.escape(base)} import [^\n]*\b{leaf}\b", path_text))
        ):
            module = importlib.import_module(module_name)
            exported = getattr(module, "__all__", [n for n in vars(module) if not n.startswith("_")])
            names.update({n: getattr(module, n) for n in exported if hasattr(module, n)})
            names[leaf] = module
    return names


def _paragraphs(text: str) -> Iterator[tuple[int, str]]:
    """(offset, text) of each paragraph (or list item) of `text`, whose fenced blocks are blanked."""
    start = 0
    for m in re.finditer(r"\n[ \t]*\n|\n(?=[-*] )|\n(?=\| )", text + "\n\n"):
        yield start, text[start : m.start()]
        start = m.end()


def prose_signatures(path: Path, root: Path = ROOT) -> list[Shown]:
    raw = path.read_text("utf-8")
    names = _namespace_of(raw)
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), raw)
    found: list[Shown] = []
    for offset, para in _paragraphs(text):
        owners: list[type] = []  # the classes this paragraph has named so far, the latest last
        for span in INLINE.finditer(para):
            code = re.sub(r"\s*\n\s*", " ", span.group(2))
            line = text.count("\n", 0, offset + span.start()) + 1
            ends: dict[int, type | None] = {}
            for m in CALL.finditer(code):
                end = closing(code, m.end())
                if end < 0:
                    continue
                dotted = m.group(2).removeprefix("sitemapkit.")
                tgt: Target | None = None
                if m.group(1) and m.start() in ends:  # `func(...).method(`
                    owner = ends[m.start()]
                    tgt = target(f"{owner.__name__}.{dotted}", None, owner) if owner is not None else None
                elif m.group(1):
                    continue
                else:
                    first, *rest = dotted.split(".")
                    if first in names:
                        obj: Any = names[first]
                        owner = None
                        for part in rest:
                            owner = obj if isinstance(obj, type) else None
                            obj = getattr(obj, part, None)
                        tgt = target(dotted, obj, owner) if obj is not None else None
                    elif not rest:  # a method of a class the paragraph named
                        owner = next((c for c in reversed(owners) if hasattr(c, first)), None)
                        tgt = target(f"{owner.__name__}.{first}", None, owner) if owner is not None else None
                for name in re.findall(r"\b[A-Z]\w*", code[: m.end()]):
                    if isinstance(names.get(name), type) and names[name] not in owners:
                        owners.append(names[name])
                if tgt is None:
                    continue
                ends[end + 1] = tgt.returns
                if tgt.returns is not None and tgt.returns not in owners:
                    owners.append(tgt.returns)
                where = f"{path.relative_to(root)}:{line}"
                found.append(
                    Shown(
                        where,
                        f"{m.group(2)}({code[m.end() : end]})",
                        tgt.name,
                        check_spec(tgt, code[m.end() : end]),
                    )
                )
    return found


# --- calls in Python blocks ----------------------------------------------------------------------------


class _Calls(ast.NodeVisitor):
    """Each call of a public name in a block, or of a method of a variable one of them made."""

    def __init__(self, where: Callable[[int], str], names: dict[str, Any]) -> None:
        self.where = where
        self.names = names  # a name of the block: a public object, or an `_Instance` of a public class
        self.found: list[Shown] = []

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == "sitemapkit" or alias.name.startswith("sitemapkit."):
                top = alias.asname or alias.name.split(".")[0]
                self.names[top] = importlib.import_module(alias.name if alias.asname else "sitemapkit")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and node.module.split(".")[0] == "sitemapkit":
            module = importlib.import_module(node.module)
            for alias in node.names:
                obj = getattr(module, alias.name, None)
                if obj is None:
                    obj = importlib.import_module(f"{node.module}.{alias.name}")
                self.names[alias.asname or alias.name] = obj

    def resolve(self, node: ast.expr) -> tuple[Target | None, str]:
        """What a call's function is, and how the block writes it."""
        if isinstance(node, ast.Name) and node.id in self.names:
            value = self.names[node.id]
            return (target(node.id, value) if not isinstance(value, _Instance) else None), node.id
        if isinstance(node, ast.Attribute):
            owner_node = node.value
            if isinstance(owner_node, ast.Await):
                owner_node = owner_node.value
            if isinstance(owner_node, ast.Call):
                tgt, written = self.resolve(owner_node.func)
                cls = tgt.returns if tgt is not None else None
                return (
                    target(f"{cls.__name__}.{node.attr}", None, cls) if cls else None
                ), f"{written}(...).{node.attr}"
            if isinstance(owner_node, ast.Name) and owner_node.id in self.names:
                value = self.names[owner_node.id]
                written = f"{owner_node.id}.{node.attr}"
                if isinstance(value, _Instance):
                    return target(f"{value.cls.__name__}.{node.attr}", None, value.cls), written
                if isinstance(value, type):
                    return target(f"{value.__name__}.{node.attr}", None, value), written
                attr = getattr(value, node.attr, None)
                if (
                    isinstance(value, types.ModuleType)
                    and value.__name__.startswith("sitemapkit")
                    and attr is not None
                ):
                    name = f"{owner_node.id}.{node.attr}"
                    return target(name, attr), written
        return None, ast.unparse(node)

    def returns_of(self, node: ast.expr | None) -> type | None:
        if isinstance(node, ast.Await):
            node = node.value
        if isinstance(node, ast.Call):
            tgt, _ = self.resolve(node.func)
            return tgt.returns if tgt is not None else None
        return None

    def bind(self, name: str, value: ast.expr | None) -> None:
        cls = self.returns_of(value)
        if cls is not None:
            self.names[name] = _Instance(cls)
        else:
            self.names.pop(name, None)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        for t in node.targets:
            if isinstance(t, ast.Name):
                self.bind(t.id, node.value)

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.visit(item.context_expr)
            if isinstance(item.optional_vars, ast.Name):
                self.bind(item.optional_vars.id, item.context_expr)
        for stmt in node.body:
            self.visit(stmt)

    visit_AsyncWith = visit_With

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        public = self.names.get(node.name)
        body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if public is not None and all(isinstance(s, ast.Expr) and s.value.value is Ellipsis for s in body):
            tgt = target(node.name, public)
            if tgt is not None:  # a signature shown as a stub: `def read(source, *, ...): ...`
                args = _stub_arguments(node.args)
                where = self.where(node.lineno)
                self.found.append(Shown(where, f"def {node.name}({args})", tgt.name, check_spec(tgt, args)))
                return
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        tgt, written = self.resolve(node.func)
        if tgt is None:
            return
        problems = []
        if not any(isinstance(a, ast.Starred) for a in node.args) and all(k.arg for k in node.keywords):
            try:
                tgt.signature.bind(*node.args, **{k.arg: k.value for k in node.keywords if k.arg})
            except TypeError as exc:
                problems.append(str(exc))
        else:
            params = tgt.signature.parameters
            any_keyword = any(p.kind == p.VAR_KEYWORD for p in params.values())
            problems = [
                f"unexpected keyword `{k.arg}`"
                for k in node.keywords
                if k.arg and k.arg not in params and not any_keyword
            ]
        self.found.append(Shown(self.where(node.lineno), f"{written}(...)", tgt.name, problems))


@dataclass(frozen=True)
class _Instance:
    """What a variable of a block holds: an instance of `cls` (made by a call of a public name)."""

    cls: type


def _stub_arguments(args: ast.arguments) -> str:
    """The parameters of a `def` as a signature in prose shows them: names, `name=default`, `*`."""
    plain = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(plain) - len(args.defaults)) + list(args.defaults)
    items = [
        a.arg if d is None else f"{a.arg}={ast.unparse(d)}" for a, d in zip(plain, defaults, strict=True)
    ]
    items.append(f"*{args.vararg.arg}" if args.vararg else "*" if args.kwonlyargs else "")
    items += [
        a.arg if d is None else f"{a.arg}={ast.unparse(d)}"
        for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    ]
    if args.kwarg:
        items.append(f"**{args.kwarg.arg}")
    return ", ".join(item for item in items if item)


def python_calls(path: Path, root: Path = ROOT) -> list[Shown]:
    raw = path.read_text("utf-8")
    found: list[Shown] = []
    for m in FENCE.finditer(raw):
        if m.group(1) not in ("python", "py"):
            continue
        first = raw.count("\n", 0, m.start(2)) + 1
        visitor = _Calls(lambda n, first=first: f"{path.relative_to(root)}:{first + n - 1}", {})
        visitor.visit(ast.parse(m.group(2)))
        found.extend(visitor.found)
    return found


def everything_shown(root: Path = ROOT) -> list[Shown]:
    return [
        s for path in markdown_files(root) for s in (*prose_signatures(path, root), *python_calls(path, root))
    ]


SHOWN = everything_shown()


@pytest.mark.parametrize("item", SHOWN, ids=[f"{s.where}:{s.target}" for s in SHOWN])
def test_a_signature_or_call_the_docs_show_matches_the_code(item: Shown) -> None:
    assert item.problems == [], f"{item.where}: {item.text} does not match {item.target}"


def test_the_docs_show_the_api_this_test_reads() -> None:
    """The reading finds what the docs show (a change of how they show it must not leave nothing checked)."""
    prose = {s.target for path in markdown_files() for s in prose_signatures(path)}
    calls = {s.target for path in markdown_files() for s in python_calls(path)}
    assert {"SitemapWriter", "SitemapWriter.add", "read", "validate", "harvest", "update_robots"} <= prose
    assert {"Diagnostic", "crawl", "audit", "build", "submit", "AsyncReader.batches"} <= prose
    assert {
        "sitemapkit.SitemapWriter",
        "SitemapWriter.add",
        "sitemapkit.acrawl",
        "harvest",
        "HarvestOptions",
    } <= calls
    assert len(SHOWN) >= 90


DRIFTED = {
    "a keyword it does not take": ("`read(source, *, max_depht=5, ...)`", "`max_depht` is not a parameter"),
    "another default": (
        "`read(source, *, max_depth=3, ...)`",
        "`max_depth` is shown with the default 3, but it is 5",
    ),
    "a size default": (
        "`read(source, *, max_download=10 MiB, ...)`",
        "shown with the default 10 MiB, but it is 104857600",
    ),
    "a parameter left out": (
        "`update_robots(path, sitemap_urls, *, remove=(), name=None, dry_run=False)`",
        "shown in full, but on_diagnostic left out",
    ),
    "another positional name": (
        "`crawl(url, out_dir, ...)`",
        "`url` is shown in place 1, where the parameter is `start_url`",
    ),
    "keyword-only shown before the `*`": (
        '`harvest(sites, out, engine="local", ...)`',
        "`engine` is shown before the `*`, but it is keyword-only",
    ),
    "a method of the class named before": (
        "`SitemapWriter(out_dir, base_url, ...)`: `add(url, ...)` adds one",
        "`url` is shown in place 1, where the parameter is `loc`",
    ),
    "a method of what a function returns": (
        "`validate(...)` gives a report: `excerpt(d)`",
        "`d` is shown in place 1",
    ),
    "a call in a block": (
        '```python\nimport sitemapkit\n\nsitemapkit.validate("s.xml", recursiv=False)\n```',
        "got an unexpected keyword argument 'recursiv'",
    ),
    "a method of a variable": (
        '```python\nimport sitemapkit\n\nwith sitemapkit.SitemapWriter("o", "https://e.com/") as w:\n'
        '    w.add("/a", prio=1.0)\n```',
        "got an unexpected keyword argument 'prio'",
    ),
    "a call nobody runs": (
        "```python\nfrom sitemapkit import acrawl\n\nasync def main():\n"
        '    await acrawl("https://e.com/", "out", max_page=5)\n```',
        "got an unexpected keyword argument 'max_page'",
    ),
    "too many positional arguments": (
        '```python\nimport sitemapkit\n\nsitemapkit.validate("s.xml", "https://e.com/s.xml")\n```',
        "too many positional arguments",
    ),
    "a stub": (
        "```python\nfrom sitemapkit import read\n\ndef read(source, *, depth=5): ...\n```",
        "`depth` is not a parameter",
    ),
}


@pytest.mark.parametrize("case", DRIFTED, ids=list(DRIFTED))
def test_a_drifted_signature_fails(case: str, tmp_path: Path) -> None:
    text, problem = DRIFTED[case]
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# x\n")
    (tmp_path / "docs" / "page.md").write_text(f"Some text.\n\n{text}\n")
    problems = [p for s in everything_shown(tmp_path) for p in s.problems]
    assert any(problem in p for p in problems), problems


def test_what_matches_passes(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(
        "`read(source, *, max_depth=5, max_download=100 MiB, ...)`, `validate(source_or_sources, *, url,\n"
        "keep=10,000, ...)`, `harvest(sites, out, ...)` and `write_parquet(entries, out)`; `SitemapWriter(\n"
        "out_dir, base_url, ...)`: `add(loc, lastmod, ...)`, `add_entry(UrlEntry)`;\n"
        "`AsyncReader.batches(runs=True)`; `generate()`.\n\n"
        '```python\nimport sitemapkit\n\nsitemapkit.read("https://e.com/", max_depth=2).runs()\n```\n'
    )
    shown = everything_shown(tmp_path)
    assert len(shown) == 11
    assert [(s.text, s.problems) for s in shown if s.problems] == []


def test_the_api_reference_shows_a_made_form_as_the_function_it_is() -> None:
    """`crawl = blocking_form(acrawl)` is an assignment to griffe's static analysis; docs/griffe_forms.py
    shows it (and `audit`, `abuild`) as the function it is at run time: the parameters `inspect.signature`
    sees, the docstring, `async` only for the async forms."""
    griffe = pytest.importorskip("griffe")
    spec = importlib.util.spec_from_file_location("griffe_forms", ROOT / "docs" / "griffe_forms.py")
    assert spec is not None and spec.loader is not None
    forms = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(forms)
    package = griffe.load(
        "sitemapkit", search_paths=[str(ROOT / "src")], extensions=griffe.load_extensions(forms.MadeForms())
    )
    for name, path, is_async in [
        ("crawl", "crawl.run.crawl", False),
        ("audit", "audit.run.audit", False),
        ("abuild", "crawl.run.abuild", True),
    ]:
        shown = package[path]
        assert isinstance(shown, griffe.Function), (path, shown)
        assert [p.name for p in shown.parameters] == list(
            inspect.signature(getattr(sitemapkit, name)).parameters
        )
        assert ("async" in shown.labels) == is_async, path
        assert shown.docstring is not None and shown.docstring.value == inspect.getdoc(
            getattr(sitemapkit, name)
        )
