"""Finding the calls of a project function in a file (:meth:`migrator.project.Project.callers`)."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from migrator.project import Project


@dataclass(frozen=True)
class CallSite:
    """A call of a project function: where, and the argument expressions (ast)."""

    path: str
    line: int
    call: ast.Call
    scope: Optional[ast.AST]  # the function (or module) holding the call


def local_names_for(project: "Project", tree: ast.Module, q: str, defining: str, func: str):
    """How file ``q`` spells a reference to ``defining.func``: a set of bare names and
    ``alias.func`` strings; None when it cannot be told (star import)."""
    names: set[str] = {func} if q == defining else set()
    modules: set[str] = set()  # names this file binds to the defining module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = project.resolve(node.module or "", node.level, q)
            for a in node.names:
                if a.name == "*" and target == defining:
                    return None
                if a.name == func and target == defining:
                    names.add(a.asname or a.name)
                sub = project.resolve(f"{node.module}.{a.name}" if node.module else a.name, node.level, q)
                if sub == defining:
                    names.add(f"{a.asname or a.name}.{func}")
                    modules.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if project.resolve(a.name, 0, q) == defining:
                    names.add(f"{a.asname or a.name}.{func}")
                    modules.add(a.asname or a.name.split(".")[0])
    if modules and _module_escapes(tree, modules):
        return None  # `lib = helper`, `getattr(helper, "penalty")`: calls through it cannot be listed
    return names


def _module_escapes(tree: ast.Module, modules: set) -> bool:
    """A module name used other than as ``module.attr`` (an adversarial run: `lib = helper`,
    then `lib.penalty(...)`, was a caller no one saw)."""
    as_base = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    return any(isinstance(n, ast.Name) and n.id in modules and id(n) not in as_base for n in ast.walk(tree))


def reexported(project: "Project", tree: ast.Module, q: str, defining: str, func: str) -> list[str]:
    """Names under which file ``q`` imports ``defining.func`` (``from helper import penalty``):
    other files may import it from ``q`` in turn (a package ``__init__``)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and project.resolve(node.module or "", node.level, q) == defining:
            out += [a.asname or a.name for a in node.names if a.name == func]
    return out


def dotted(node: ast.AST) -> Optional[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def calls_of(tree: ast.Module, q: str, names: set) -> Optional[list[CallSite]]:
    if not names:
        return []
    out: list[CallSite] = []
    call_funcs: set[int] = set()
    scopes: dict[int, ast.AST] = {}

    def walk(node: ast.AST, scope: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else scope
            scopes[id(child)] = scope
            walk(child, inner)

    walk(tree, tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and dotted(node.func) in names:
            call_funcs.add(id(node.func))
            out.append(CallSite(q, node.lineno, node, scopes.get(id(node))))
    for node in ast.walk(tree):
        if id(node) in call_funcs:
            continue
        ref = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if ref in names and isinstance(getattr(node, "ctx", None), ast.Load):
            return None  # used as a value: its calls cannot be listed
    return out


def self_calls(tree: ast.Module, path: str, cls: str, meth: str) -> list[CallSite]:
    """``self.meth(...)`` calls in the methods of module-level class ``cls`` (``self``: each
    method's first parameter).  Not every call of the method (an instance elsewhere, a
    subclass): enough to refute an assumption, never to prove one."""
    out: list[CallSite] = []
    for node in tree.body:
        if not (isinstance(node, ast.ClassDef) and node.name == cls):
            continue
        for fn in node.body:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not fn.args.args:
                continue
            me = fn.args.args[0].arg
            for call in ast.walk(fn):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == meth \
                        and isinstance(call.func.value, ast.Name) and call.func.value.id == me:
                    out.append(CallSite(path, call.lineno, call, fn))
    return out
