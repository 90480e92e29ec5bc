"""A griffe extension for the API reference: doctest examples in docstrings are shown as code.

The package's docstrings hold doctests (`>>>` lines and their output) outside any `Examples:` section;
Markdown would read them as prose (and `['https://…']` after `[…]` as a link). This wraps each run of
`>>>`/`...` lines and the output after them in a fenced `pycon` block.
"""

from __future__ import annotations

from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            block = []
            while i < len(lines) and lines[i].strip() and lines[i].startswith(indent):
                block.append(lines[i][len(indent) :])
                i += 1
            out += [f"{indent}```pycon", *(indent + b for b in block), f"{indent}```"]
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


class FenceDoctests(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, loader: Any, **kwargs: Any) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
