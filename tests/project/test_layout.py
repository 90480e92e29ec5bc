"""The package's shape: no import cycles between modules, a core that imports no wing, small modules, no
import of another module's private (`_`) names, and a quick `import sitemapkit`.

Run `python -m tests.project.test_layout` to print the import graph between wings and any cycle, the same
check `make test` runs. Deferred imports inside functions count; imports under `if TYPE_CHECKING:` do not
(they never run).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "sitemapkit"
MAX_LINES = 1000
# Each wing may import the core and the wings listed for it, never one above it.
WINGS = ("core", "reader", "validator", "generator", "publisher", "crawl", "audit", "harvest", "cli")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import that can run: at module level, in functions, in classes; not under TYPE_CHECKING."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _resolve(importer: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    is_package = modules()[importer].name == "__init__.py"
    keep = len(base) - node.level + (1 if is_package else 0)
    return ".".join(base[:keep] + ([node.module] if node.module else []))


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (a package import also runs its `__init__`)."""
    known = modules()
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in _imports(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = _resolve(name, node)
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                if target in known and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def wing(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (PACKAGE / parts[1]).is_dir()) else "(top)"


def wing_edges(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for src, targets in graph.items():
        for target in targets:
            if wing(src) != wing(target):
                edges.setdefault(wing(src), set()).add(wing(target))
    return edges


def test_no_import_cycles_between_modules() -> None:
    assert cycles(import_graph()) == []


def test_the_core_imports_no_wing() -> None:
    graph = import_graph()
    upward = {src: sorted(t for t in targets if wing(t) != "core") for src, targets in graph.items()}
    assert {src: t for src, t in upward.items() if wing(src) == "core" and t} == {}


def test_wings_import_only_what_lies_below_them() -> None:
    """The wings stack in data-flow order; a wing imports the core and wings below it, never one above."""
    for src, targets in wing_edges(import_graph()).items():
        if src in ("(top)", "cli"):
            continue
        for target in targets:
            assert target in WINGS, (src, target)
            assert WINGS.index(target) < WINGS.index(src), f"{src} imports {target}, which stands above it"


def test_no_module_over_the_size_limit() -> None:
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


# Imports of another module's private names that are still to be replaced by a named interface (issue 24):
# importer -> the names it takes. The list only shrinks: a new one fails, and so does an entry no longer true
# (delete it when the module stops taking that name).
KNOWN_PRIVATE_IMPORTS: dict[str, set[str]] = {}


def private_imports() -> dict[str, set[str]]:
    """Module -> the private names (`_x`, not dunders) it imports from other modules of the package. Every
    import counts, those under `if TYPE_CHECKING:` too: they tie the module to another's internals as well."""
    found: dict[str, set[str]] = {}
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = _resolve(name, node)
            if base.split(".")[0] != "sitemapkit" or base == name:
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.setdefault(name, set()).add(f"{base}.{alias.name}")
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    """What a sibling needs is part of that module's named interface, not a `_name` taken from it."""
    found = private_imports()
    new = {m: sorted(n - KNOWN_PRIVATE_IMPORTS.get(m, set())) for m, n in found.items()}
    assert {m: n for m, n in new.items() if n} == {}, "a module imports another module's private names"
    gone = {m: sorted(n - found.get(m, set())) for m, n in KNOWN_PRIVATE_IMPORTS.items()}
    assert {m: n for m, n in gone.items() if n} == {}, "no longer imported: delete from KNOWN_PRIVATE_IMPORTS"


# What a module may still reach into: private attributes of another library's objects, where that library
# offers no public way (each a reason). Like the list above, it only shrinks.
FOREIGN_PRIVATE_ATTRIBUTES: dict[str, str] = {
    "os._exit": "the standard way to end a forked child without running the parent's cleanup",
    "sys._getframe": "the standard way to read a caller's frame",
    "etree._Element": "lxml's element class, which lxml's own documentation and stubs name so in annotations",
    "zlib._Decompress": "the type of `zlib.decompressobj()`, named so only in typeshed",
}
# module -> the `name._attribute` uses it still has on another module's objects; it only shrinks.
KNOWN_PRIVATE_ATTRIBUTES: dict[str, set[str]] = {}


def private_attributes() -> dict[str, set[str]]:
    """Module -> each `x._name` (`x` not `self` or `cls`, `_name` not a dunder) where `_name` is not an
    attribute, method or variable the module itself defines: state that belongs to another module's object
    (`writer._days`, `report._file`). A module may touch the private parts of its own classes."""
    found: dict[str, set[str]] = {}
    for name, path in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        own: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                own.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                own.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                own.add(node.id)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                own.add(node.target.id)
            elif (
                isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("_")
            ):
                own.add(node.value)  # a `__slots__` entry
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_")) or node.attr.startswith(
                "__"
            ):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if node.attr in own:
                continue
            where = ast.unparse(node.value).rsplit(".", 1)[-1]
            use = f"{where}.{node.attr}"
            if use not in FOREIGN_PRIVATE_ATTRIBUTES:
                found.setdefault(name, set()).add(use)
    return found


def test_no_module_reaches_into_another_objects_private_state() -> None:
    """Parts own their state: what another part needs of it is a named method or attribute."""
    found = private_attributes()
    new = {m: sorted(n - KNOWN_PRIVATE_ATTRIBUTES.get(m, set())) for m, n in found.items()}
    assert {m: n for m, n in new.items() if n} == {}, "a module reaches into another object's private state"
    gone = {m: sorted(n - found.get(m, set())) for m, n in KNOWN_PRIVATE_ATTRIBUTES.items()}
    assert {m: n for m, n in gone.items() if n} == {}, "no longer used: delete from KNOWN_PRIVATE_ATTRIBUTES"


def _loaded_after(code: str) -> list[str]:
    """The modules loaded by a fresh interpreter after `code`."""
    script = f"import sys\n{code}\nprint(' '.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_import_sitemapkit_loads_only_the_core() -> None:
    loaded = _loaded_after("import sitemapkit")
    ours = [m for m in loaded if m.split(".")[0] == "sitemapkit"]
    assert {wing(m) for m in ours} <= {"(top)", "core"}, ours
    assert not {"lxml", "httpx", "click", "sqlite3"} & set(loaded)


def _order(name: str) -> int:
    return WINGS.index(name) if name in WINGS else -1


def main() -> int:
    graph = import_graph()
    print("wing -> wings it imports")
    for src, targets in sorted(wing_edges(graph).items(), key=lambda kv: _order(kv[0])):
        print(f"  {src:10} -> {', '.join(sorted(targets, key=_order))}")
    found = cycles(graph)
    for component in found:
        print("cycle:", " <-> ".join(component))
    print(f"{len(graph)} modules, {sum(map(len, graph.values()))} imports, {len(found)} cycles")
    private = private_imports()
    for importer, names in sorted(private.items()):
        print(f"private: {importer} imports {', '.join(sorted(names))}")
    print(f"{sum(map(len, private.values()))} imports of another module's private names")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
