"""A griffe extension for the API reference: a function made from another one is shown as a function.

`crawl = blocking_form(acrawl)` (and `audit = blocking_form(aaudit)`, `abuild = in_worker_thread(build)`) is
an assignment to static analysis: griffe would show `crawl` as an attribute holding a call. At run time it
is a function with the parameters, return type and docstring of the one it was made from
(`functools.wraps`: `inspect.signature(crawl) == inspect.signature(acrawl)`), so the reference shows it as
that function: the same parameters and docstring, `async` when made by `in_worker_thread`, not when made by
`blocking_form`.
"""

from __future__ import annotations

from typing import Any

import griffe

MAKERS = {"blocking_form": False, "in_worker_thread": True}
"""The functions that make a form of another, and whether the form they make is async."""


class MadeForms(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        for module in _modules(pkg):
            for name, member in list(module.members.items()):  # `module.members`: no alias resolved
                made = _made_from(member)
                if made is None:
                    continue
                maker, source = made
                original = module.members.get(source)
                if not isinstance(original, griffe.Function):
                    continue
                form = griffe.Function(
                    name,
                    lineno=member.lineno,
                    endlineno=member.endlineno,
                    parameters=original.parameters,  # shared, not copied: they point into the whole tree
                    returns=original.returns,
                    parent=module,
                )
                said = original.docstring
                if said is not None:
                    form.docstring = griffe.Docstring(
                        said.value, parent=form, parser=said.parser, parser_options=said.parser_options
                    )
                labels = set(original.labels) - {"async"}
                form.labels = labels | ({"async"} if MAKERS[maker] else set())
                module.set_member(name, form)


def _modules(module: griffe.Module) -> list[griffe.Module]:
    found = [module]
    for member in module.members.values():
        if not member.is_alias and member.is_module:  # an alias is not resolved (that would load its target)
            found += _modules(member)
    return found


def _made_from(member: Any) -> tuple[str, str] | None:
    """(maker, function) of `name = maker(function)`, or None."""
    if member.is_alias or not isinstance(member, griffe.Attribute):
        return None
    value = member.value
    if not isinstance(value, griffe.ExprCall) or len(value.arguments) != 1:
        return None
    maker, argument = str(value.function), value.arguments[0]
    if maker not in MAKERS or not isinstance(argument, griffe.ExprName):
        return None
    return maker, argument.name
