"""Where else in the project a registered gradient name may be used.

Removing a ``@tf.RegisterGradient(name)`` is safe only when no other code
names it: another file's override map, a registry lookup.  The answer is a
list of places, or "unknown" with a reason, never "no use" by default.  An
adversarial run found every way the first version said "no use" wrongly:

* a file that holds the name but cannot be parsed (newer syntax, Python 2),
  or read (too big): unknown;
* a name spelled in pieces (``"Guided" "Relu"``: ``ast`` joins them, a byte
  search does not) or computed (``a.GRAD_NAME``, ``"Clip%sG" % KIND``,
  ``NAMES[1]``) in another file's override map: every map value that is not a
  literal must be shown not to spell the name, else unknown;
* an extensionless script: :meth:`Project.files` lists those with a Python
  shebang.
"""
from __future__ import annotations

import ast
import os
from typing import Optional

from migrator.project import Location, Project


def gradient_name_uses(project: Project, name: str) -> tuple[Optional[list[Location]], str]:
    """(places that name ``name``, "") or (None, why it cannot be told)."""
    hits = project.grep(name.encode())
    maps = project.grep(b"gradient_override_map")
    if hits is None or maps is None:
        return None, "the project is too big to check"
    out: list[Location] = []
    for q in sorted(set(hits) | set(maps)):
        tree = project.tree(q)
        if tree is None:
            if q in hits or project.text(q) is None:
                return None, f"{_rel(project, q)} names it but cannot be parsed or read"
            continue
        out += [Location(q, n.lineno, name) for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value == name]
        for value in _map_values(tree):
            spells = _spells(value, name, tree)
            if spells is None:
                return None, (f"{_rel(project, q)}:{value.lineno} maps an op to a gradient name it computes "
                              f"(`{ast.unparse(value)}`), which may be {name!r}")
            if spells:
                out.append(Location(q, value.lineno, name))
    return out, ""


def _rel(project: Project, path: str) -> str:
    return os.path.relpath(path, project.root) if project.root else path


def _map_values(tree: ast.Module):
    """The values of every dict literal passed to ``gradient_override_map`` (a non-dict argument:
    the argument itself, which may hold anything)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("gradient_override_map", "_gradient_override_map") and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Dict):
                yield from (v for v in arg.values if not (isinstance(v, ast.Constant) and isinstance(v.value, str)))
            else:
                yield arg


def _spells(value: ast.expr, name: str, tree: ast.Module, depth: int = 0) -> Optional[bool]:
    """Whether ``value`` is the string ``name``: a literal, or a name bound once in the file to
    one, says yes or no; a string built from a literal start that ``name`` does not have
    (``"PyFuncGrad" + str(uid)``) says no; else None."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value == name
    if isinstance(value, ast.Name):
        bound = [n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
                 and any(isinstance(t, ast.Name) and t.id == value.id for t in n.targets)]
        return _spells(bound[0], name, tree, depth + 1) if len(bound) == 1 and depth < 3 else None
    start = _literal_start(value)
    return False if start is not None and not name.startswith(start) else None


def _literal_start(value: ast.expr) -> Optional[str]:
    """The text a built string surely starts with (``"Flip%d" % n`` -> ``"Flip"``)."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Add, ast.Mod)):
        return _literal_start(value.left)
    if isinstance(value, ast.JoinedStr) and value.values and isinstance(value.values[0], ast.Constant):
        return str(value.values[0].value)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "format":
        return _literal_start(value.func.value)
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value.split("%")[0].split("{")[0]
    return None
