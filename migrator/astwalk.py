"""Walking a stdlib ``ast`` tree only where some words occur: pass 1's cheap search.

A node that names an API (a call of ``tf.gradients``, a ``RegisterGradient``, an
assignment to ``tf.gradients``) spells the name on one of its own lines, so a walk may
skip every subtree whose lines hold none of the words.  On big files that is most of
the tree.
"""
from __future__ import annotations

import ast
import re
from bisect import bisect_left
from collections import deque
from typing import Iterable, Optional


_LINE_END = re.compile(r"\r\n?|\n")


def hit_lines(source: str, words: re.Pattern) -> list[int]:
    """Sorted line numbers where ``words`` occur (in code, strings or comments alike)."""
    out: list[int] = []
    line, pos = 1, 0
    crs = "\r" in source  # ast ends a line at \r too (an old Mac file, a lone \r in a string)
    for m in words.finditer(source):
        line += len(_LINE_END.findall(source, pos, m.start())) if crs else source.count("\n", pos, m.start())
        pos = m.start()
        if not out or out[-1] != line:
            out.append(line)
    return out


def walk_near(tree: ast.AST, lines: Optional[list[int]]):
    """``ast.walk`` (same order), skipping subtrees whose lines hold none of ``lines``: a node
    that names an API spells the name on one of its own lines.  ``lines`` None: every node."""
    todo = deque([tree])
    while todo:
        node = todo.popleft()
        start = getattr(node, "lineno", None)
        if lines is not None and start is not None:
            decorators = getattr(node, "decorator_list", None)
            if decorators:
                start = min([start] + [d.lineno for d in decorators])
            i = bisect_left(lines, start)
            if i == len(lines) or lines[i] > (node.end_lineno or start):
                continue
        todo.extend(ast.iter_child_nodes(node))
        yield node


def import_aliases(nodes: Iterable[ast.AST]) -> dict[str, str]:
    """Name -> what it names, for the import statements among ``nodes`` (``tree.body`` for
    top-level imports, ``ast.walk(tree)`` for all): ``import a.b`` binds ``a`` to ``a``,
    ``import a.b as c`` binds ``c`` to ``a.b``, ``from m import n as k`` binds ``k`` to
    ``m.n``.  Relative imports name no installed module and are left out."""
    out: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out
