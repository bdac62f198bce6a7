"""A gradient another project file registers, copied into the file whose override map names it.

``overrides.py`` registers ``GuidedRelu``; ``saliency.py`` imports it and enters
``{"Relu": "GuidedRelu"}``.  Under TF2 the map does nothing, so ``saliency.py`` needs a
``tf.custom_gradient`` whose gradient is that function.  The registering file is left as it
is: its registration may serve other code, and a rewrite of two files in step could leave
one written and the other not.  Instead the registered function is copied into the user's
module (appended, so that no line of the file moves) with a registration of its own, the
module is planned as if it had always held it, and the helper it becomes is moved next to
the imports.  The copy computes what the original did when every global name it reads
means the same in both modules: the same import of the same library (``tf``, ``np``,
``gen_nn_ops``), or a builtin neither module binds.  Each condition is checked here; any
doubt leaves the block to the usual TFG106 with the reason.
"""
from __future__ import annotations

import ast
import builtins
import os
import symtable
from dataclasses import dataclass
from typing import Optional

import libcst as cst

from migrator import optable
from migrator.project_tf import _reach, rebound_elsewhere
from migrator.tfnames import normalize


@dataclass(frozen=True)
class Transplant:
    name: str  # the gradient name the map gives
    path: str  # the registering file
    line: int  # its decorator's line there
    fn_name: str
    text: str  # the def, decorated with this file's RegisterGradient


def plan_transplants(u_tree: ast.Module, u_text: str, path: str, project, tf_alias: Optional[str],
                     names: set) -> tuple[list, dict]:
    """For each gradient name in ``names`` (registered nowhere in this file): the copy to make,
    or why it cannot be made (name -> reason)."""
    out, why = [], {}
    for name in sorted(names):
        try:
            out.append(_transplant(u_tree, u_text, path, project, tf_alias, name))
        except _No as e:
            why[name] = str(e)
    return out, why


class _No(Exception):
    pass


def map_names(tree: ast.Module) -> set:
    """String values of the dicts ``gradient_override_map`` is given here (a literal, or a name
    bound to one in the same module)."""
    return {v.value for d in _map_dicts(tree) for v in d.values if isinstance(v, ast.Constant)
            and isinstance(v.value, str)}


def _transplant(u_tree, u_text: str, path: str, project, tf_alias: Optional[str], name: str) -> Transplant:
    here = os.path.abspath(path)
    if tf_alias is None:
        raise _No("this file has no module-level TensorFlow import to spell the copy with")
    if name in optable.all_op_types():
        raise _No(f"{name!r} is TF's own gradient of that op")
    regs, dynamic = _registrations(project, name, here)
    if dynamic:
        raise _No(f"{dynamic} registers a gradient under a name built at run time, which may be {name!r}")
    if len(regs) != 1:
        raise _No(f"{name!r} is registered {len(regs)} times in the project" if regs else
                  f"no project file registers {name!r}")
    r_path, fn, r_tree = regs[0]
    if fn is None:
        raise _No(f"{os.path.basename(r_path)} registers {name!r} by a call, not as a decorator")
    where = f"{os.path.relpath(r_path, os.path.dirname(here))}:{fn.decorator_list[0].lineno}"
    if r_path not in {os.path.abspath(p) for p in project.import_closure(here)}:
        raise _No(f"this file does not import {where.rsplit(':', 1)[0]}, so the registration may not have run")
    if fn not in r_tree.body or len(fn.decorator_list) != 1 or fn.col_offset:
        raise _No(f"the function registered at {where} is not a plain module-level def with one decorator")
    if sum(isinstance(n, ast.Constant) and n.value == name for n in ast.walk(r_tree)) != 1:
        raise _No(f"{where.rsplit(':', 1)[0]} names {name!r} elsewhere too (its own override map)")
    args = fn.args
    if any(a.annotation for a in args.posonlyargs + args.args + args.kwonlyargs) or fn.returns or \
            any(not isinstance(d, ast.Constant) for d in args.defaults + [d for d in args.kw_defaults if d]):
        raise _No(f"`{fn.name}` at {where} has annotations or computed defaults, read in its own module")
    if any(isinstance(n, ast.Name) and n.id == fn.name or isinstance(n, (ast.FunctionDef, ast.ClassDef,
           ast.AsyncFunctionDef)) and n.name == fn.name or isinstance(n, ast.alias) and
           (n.asname or n.name.split(".")[0]) == fn.name for n in ast.walk(u_tree)):
        raise _No(f"this file already uses the name `{fn.name}`")
    uses = [n for n in ast.walk(r_tree) if isinstance(n, ast.Name) and n.id == fn.name or
            isinstance(n, ast.Attribute) and n.attr == fn.name]
    if uses or project.external_uses(r_path, fn.name) != []:
        raise _No(f"`{fn.name}` is also used other than by the registry (in {where.rsplit(':', 1)[0]} or a file "
                  "importing it), which may change what it computes")
    other = _other_name_use(project, name, r_path, fn.decorator_list[0])
    if other:
        raise _No(f"{other} names {name!r} other than in an override map (a registry lookup?)")
    r_text = project.text(r_path) or ""
    if not r_text.isascii():
        raise _No(f"{where.rsplit(':', 1)[0]} is not ASCII, and this file's encoding may not hold its text")
    free = _global_names(r_text, r_path, fn)
    if free is None:
        raise _No(f"`{fn.name}` at {where} declares a global or cannot be read")
    for p, tree in ((r_path, r_tree), (here, u_tree)):
        if _reach(project, p) is not None or rebound_elsewhere(project, p, free | {fn.name}):
            raise _No(f"{os.path.basename(p)} may rebind module names where no statement shows it")
        if any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in ast.walk(tree)):
            raise _No(f"{os.path.basename(p)} has a star import, which may bind any name the function reads")
    for g in sorted(free):
        theirs, ours = _meaning(project, r_path, r_tree, g), _meaning(project, here, u_tree, g)
        if theirs is None or theirs != ours:
            raise _No(f"`{fn.name}` reads `{g}`, which this file does not bind as {where.rsplit(':', 1)[0]} does "
                      "(one unconditional import of the same library, or a builtin in both)")
    dec = fn.decorator_list[0]
    if not _is_register_gradient(project, r_path, r_tree, dec):
        raise _No(f"the decorator at {where} is not TF's RegisterGradient")
    lines = r_text.splitlines()
    nxt = [st.lineno for st in r_tree.body if st.lineno > fn.end_lineno]
    if nxt and nxt[0] == fn.end_lineno or lines[fn.lineno - 1][:4] not in ("def ", "def\t"):
        raise _No(f"`{fn.name}` at {where} shares a line with other code")
    body = "\n".join(lines[fn.lineno - 1:fn.end_lineno])
    text = f"@{tf_alias}.RegisterGradient({name!r})\n{body}\n"
    return Transplant(name, r_path, dec.lineno, fn.name, text)


def _other_name_use(project, name: str, r_path: str, decorator: ast.expr) -> Optional[str]:
    """A place in the project that spells the gradient name other than as the registration or a
    value of an override map (``_registry["Half"].update(...)`` elsewhere: an adversarial run)."""
    hits = project.grep(name.encode())
    if hits is None:
        return "a project too big to search"
    for p in sorted(hits):
        tree = project.tree(p)
        if tree is None:
            return f"{os.path.basename(p)} (unreadable)"
        allowed = {id(v) for d in _map_dicts(tree) for v in d.values}
        if os.path.abspath(p) == os.path.abspath(r_path):
            allowed |= {id(a) for a in getattr(decorator, "args", [])}
        for n in ast.walk(tree):
            if isinstance(n, ast.Constant) and n.value == name and id(n) not in allowed:
                return f"{os.path.basename(p)}:{n.lineno}"
    return None


def _map_dicts(tree: ast.Module) -> list:
    """Dict literals given to ``gradient_override_map`` (directly, or bound to a name it is given)."""
    named: dict = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Dict):
            named.setdefault(node.targets[0].id, []).append(node.value)
    out: list = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "gradient_override_map" and node.args:
            arg = node.args[0]
            out += [arg] if isinstance(arg, ast.Dict) else named.get(getattr(arg, "id", None), [])
    return out


def _registrations(project, name: str, here: str) -> tuple[list, Optional[str]]:
    """Every registration of ``name`` in project files other than ``here``: (file, the def it
    decorates or None for the call form, tree); and a file registering under a computed name
    (which may be this one), if any."""
    index = _registry_index(project)
    if index is None:
        return [], "a project too big to search"
    by_name, dynamic, unreadable = index
    if unreadable:
        return [], unreadable
    dynamic = next((d for p, d in dynamic if p != here), None)
    return [r for r in by_name.get(name, []) if r[0] != here], dynamic


def _registry_index(project):
    """Once per project: literal name -> [(file, def or None, tree)], [(file, "file:line") of
    computed names], and the first unreadable file holding `RegisterGradient` (or None)."""
    if "_registry_index" in project.__dict__:
        return project.__dict__["_registry_index"]
    hits = project.grep(b"RegisterGradient")
    index = None
    if hits is not None:
        by_name: dict = {}
        dynamic, unreadable = [], None
        for p in sorted(hits):
            p = os.path.abspath(p)
            tree = project.tree(p)
            if tree is None:
                unreadable = unreadable or os.path.basename(p) + " (unreadable)"
                continue
            decorated = {id(d): f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) for d in f.decorator_list}
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Call) and (getattr(node.func, "attr", None) == "RegisterGradient" or
                                                        getattr(node.func, "id", None) == "RegisterGradient")):
                    continue
                arg = node.args[0] if node.args else None
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    by_name.setdefault(arg.value, []).append((p, decorated.get(id(node)), tree))
                else:
                    dynamic.append((p, f"{os.path.basename(p)}:{node.lineno}"))
        index = (by_name, dynamic, unreadable)
    project.__dict__["_registry_index"] = index
    return index


def _global_names(text: str, path: str, fn: ast.FunctionDef) -> Optional[set]:
    """Module-level names the function (and the functions, lambdas and comprehensions in it)
    reads; None when it declares a global (it would write this module's names)."""
    try:
        top = symtable.symtable(text, path, "exec")
    except (SyntaxError, ValueError):
        return None
    table = next((t for t in top.get_children() if t.get_name() == fn.name and t.get_lineno() in
                  (fn.lineno, fn.decorator_list[0].lineno)), None)
    if table is None:
        return None
    out: set = set()
    todo = [table]
    while todo:
        t = todo.pop()
        for sym in t.get_symbols():
            if sym.is_declared_global() or sym.is_nonlocal():
                return None
            if sym.is_global() and sym.is_referenced():
                out.add(sym.get_name())
        todo += t.get_children()
    return out


def _meaning(project, path: str, tree: ast.Module, name: str) -> Optional[tuple]:
    """What module-level ``name`` is in that module: one unconditional top-level import of a
    library (not a project module), or a builtin it binds nowhere; else None."""
    if name.startswith("__") and name.endswith("__"):
        return None  # `__name__`, `__file__`: each module's own
    bindings = list(_bindings(tree, name))
    if not bindings:
        return ("builtin", name) if hasattr(builtins, name) else None
    if len(bindings) != 1 or bindings[0][0] not in tree.body:
        return None
    st, alias = bindings[0]
    if isinstance(st, ast.Import):
        full = alias.name if alias.asname else alias.name.split(".")[0]
        if project.resolve(full, 0, path) is not None:
            return None
        return ("module", full)  # as spelled: compat.v1 and compat.v2 share normalized names, not meanings
    if isinstance(st, ast.ImportFrom) and not st.level and st.module:
        if project.resolve(st.module, 0, path) is not None:
            return None
        return ("name", f"{st.module}.{alias.name}")
    return None


def _bindings(tree: ast.Module, name: str):
    """(statement, alias) for every statement that may bind ``name`` in the module's namespace."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                if (a.asname or a.name.split(".")[0]) == name:
                    yield node, a
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            yield node, None
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name \
                and node in tree.body:
            yield node, None
        elif isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            yield node, None  # any store: the module's, or a local one (conservative)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and getattr(node, "name", None) == name:
            yield node, None


def _is_register_gradient(project, path: str, tree: ast.Module, dec: ast.expr) -> bool:
    if not (isinstance(dec, ast.Call) and len(dec.args) == 1 and not dec.keywords):
        return False
    func = dec.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        meaning = _meaning(project, path, tree, func.value.id)
        return meaning is not None and meaning[0] in ("module", "name") and \
            normalize(f"{meaning[1]}.RegisterGradient") == "tensorflow.RegisterGradient"
    if isinstance(func, ast.Name):
        meaning = _meaning(project, path, tree, func.id)
        return meaning is not None and meaning[0] == "name" and normalize(meaning[1]) == "tensorflow.RegisterGradient"
    return False


# -- after planning ---------------------------------------------------------
def move_to_imports(module: cst.Module, first_copy: str, footer: cst.Module, tf_alias: str) -> Optional[cst.Module]:
    """The planned module with the copied helpers (and the wrappers placed after them), which
    sit at its end, moved to just after its leading imports; None when the TF import the
    wrappers' decorators read is not among those."""
    body = list(module.body)
    start = next((i for i, st in enumerate(body) if isinstance(st, cst.FunctionDef) and st.name.value == first_copy),
                 None)
    if start is None:
        return None
    tail, rest = body[start:], body[:start]
    at, binds_alias = 0, False
    for i, st in enumerate(rest):
        if not _leading(st, i):
            break
        binds_alias = binds_alias or _binds(st, tf_alias)
        at = i + 1
    if not binds_alias:
        return None
    two = [cst.EmptyLine(), cst.EmptyLine()]
    tail[0] = tail[0].with_changes(leading_lines=two)
    if at < len(rest):
        lead = list(rest[at].leading_lines)
        blanks = next((k for k, ln in enumerate(lead) if ln.comment is not None), len(lead))
        rest[at] = rest[at].with_changes(leading_lines=two + lead[blanks:])
    return module.with_changes(body=rest[:at] + tail + rest[at:], footer=footer.footer)


def _leading(st: cst.CSTNode, i: int) -> bool:
    """A docstring, or a line of imports only: what may come before the moved helpers."""
    if not isinstance(st, cst.SimpleStatementLine):
        return False
    if i == 0 and len(st.body) == 1 and isinstance(st.body[0], cst.Expr) and \
            isinstance(st.body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
        return True
    return all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in st.body)


def _binds(st: cst.SimpleStatementLine, alias: str) -> bool:
    for s in st.body:
        if isinstance(s, (cst.Import, cst.ImportFrom)) and not isinstance(s.names, cst.ImportStar):
            for a in s.names:
                bound = a.evaluated_alias or (a.evaluated_name.split(".")[0] if isinstance(s, cst.Import)
                                              else a.evaluated_name)
                if bound == alias:
                    return True
    return False
