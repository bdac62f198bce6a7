"""Walking a stdlib ``ast`` tree only where some words occur: pass 1's cheap search.

A node that names an API (a call of ``tf.gradients``, a ``RegisterGradient``, an
assignment to ``tf.gradients``) spells the name on one of its own lines, so a walk may
skip every subtree whose lines hold none of the words.  On big files that is most of
the tree.  Also the project's other cheap reads: every statement of a tree, a file's
import lines parsed alone, and the code tokens that spell some words.
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


def statements(tree: ast.AST):
    """Every statement of ``tree``, nested ones included (imports are statements: no need
    to walk the expressions, most of a tree's nodes)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(node, name, None)
            if isinstance(block, list):
                todo.extend(reversed(block))


#: an import statement at the start of a line, with its parenthesised or backslash-continued tail
_IMPORT_STATEMENT = re.compile(
    r"^[ \t]*(?:from[ \t]+\.*[\w.]*[ \t]+import\b(?:[ \t]*\([^)]*\)[^\n]*|[^\n]*(?:\\\n[^\n]*)*)"
    r"|import[ \t]+[^\n]*(?:\\\n[^\n]*)*)", re.M)


def import_statements(text: str) -> Optional[list]:
    """The import statements of ``text``, each parsed on its own (import closures read
    hundreds of files); None when one does not parse alone.  A line in a string that looks
    like an import only adds a module, never hides one."""
    out, line, pos = [], 1, 0
    for m in _IMPORT_STATEMENT.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        try:
            body = ast.parse(m.group(0).strip()).body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                node.lineno = line
                out.append(node)
    return out


def code_words(text: str, words: list[str]) -> list[tuple[int, str]]:
    """(line, word) for each code token of ``text`` (a name, not a comment or a string)
    equal to a word; a word written ``.name`` must follow a dot (``tf.function``)."""
    import io
    import tokenize

    out = []
    prev = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NAME:
                for w in words:
                    if tok.string == w.lstrip(".") and (not w.startswith(".") or prev == "."):
                        out.append((tok.start[0], w))
            if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
                prev = tok.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return [(1, w) for w in words if w.lstrip(".") in text]
    return out
