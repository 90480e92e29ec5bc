"""`lazy_exports`: a package's module `__getattr__` (PEP 562) that imports the module defining a name the
first time the name is asked for, so that importing the package stays quick."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, where: Mapping[str, str], *, cache: dict[str, Any] | None = None
) -> Callable[[str], Any]:
    """The `__getattr__` of `package`: a name of `where` (name -> module) is taken from its module, and
    kept in `cache` (the package's `globals()`) when given; any other name is an `AttributeError`."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        if cache is not None:
            cache[name] = value
        return value

    return __getattr__
