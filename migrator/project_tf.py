"""TensorFlow re-exported by a project module: ``from .backend import tf`` where ``backend``
binds ``tf`` only to TensorFlow (``import tensorflow.compat.v1 as tf``).

libcst's names stop at the import (``.backend.tf.gradients``); unseen real code (deepxde)
spells every gradient through such a shim, and its calls were neither migrated nor
reported.  ``imported_tf_names`` gives :mod:`migrator.tfnames` the TF names those imports
stand for; a name with any other binding, or a module that may bind names its scopes do
not show (a star import, ``globals()``, ``exec``, ...), stands for nothing.
"""
from __future__ import annotations

import ast
import os
from typing import Optional

from migrator.project_reach import WORDS, membership_tested, method_nodes, namespace_reach
from migrator.tfnames import DYNAMIC_BINDERS, TF_MODULES, normalize


def imported_tf_names(project, path: str, source: str) -> dict:
    """libcst's qualified prefix of each ``from M import name`` in ``source`` whose project
    module ``M`` binds ``name`` only to TF -> (the TF names, the name bound here)."""
    if "import" not in source:
        return {}
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    here = os.path.abspath(path)
    out: dict = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or any(a.name == "*" for a in node.names):
            continue
        target = project.resolve(node.module or "", node.level, here)
        if target is None or not node.level and found_twice(project, node.module or "", here):
            continue  # which of two `ops.py` Python loads depends on how the program was started
        for a in node.names:
            names = tf_binding(project, target, a.name) if not submodule_named(target, a.name) else None
            if names and rebound_elsewhere(project, target, {a.name}, also_with=here,
                                           among=may_hold_module(project, target)):
                continue  # `ops.__setattr__("tf", f)` in a file loaded with both: an adversarial run
            if names:
                key = "." * node.level + (f"{node.module}." if node.module else "") + a.name
                out[key] = (names, a.asname or a.name)
    return out


def found_twice(project, module: str, importer: str) -> bool:
    """An absolute import the index finds both beside the importer and from the project's root:
    which one Python loads depends on how the program was started."""
    here = os.path.dirname(os.path.abspath(importer))
    stem = os.path.join(here, *module.split("."))
    beside = next((c for c in (stem + ".py", os.path.join(stem, "__init__.py")) if os.path.isfile(c)), None)
    root = getattr(project, "root", None)
    if beside is None or root is None or here == root:
        return False
    top = os.path.join(root, *module.split("."))
    return any(os.path.isfile(c) and c != beside for c in (top + ".py", os.path.join(top, "__init__.py")))


def tf_binding(project, path: str, name: str, depth: int = 0, stars=None) -> Optional[set]:
    """The TF names module-level ``name`` of project file ``path`` is bound to, when every
    binding of it is TF and they are one TF name; else None.  ``stars`` (``project_star.
    star_binding``) follows star imports; without it, a star import is unknown."""
    cache = project.__dict__.setdefault("_tf_bindings", {})
    key = (path, name, stars is not None)
    if key not in cache:
        cache[key] = None  # a cycle of re-exports: nothing
        cache[key] = _binding(project, path, name, depth, stars) if depth < 4 else None
    return cache[key]


def _binding(project, path: str, name: str, depth: int, stars=None) -> Optional[set]:
    tree = project.tree(path)
    if tree is None or dynamic_bindings(tree, stars=stars is None) or _reach(project, path) is not None \
            or _imports_itself(project, path, tree):
        return None
    targets: set = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Global) and name in node.names:
            return None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return None
        if stars is not None and isinstance(node, ast.Attribute) and node.attr == name \
                and not isinstance(node.ctx, ast.Load):
            return None  # `_me.tf = fake` on the module object (`import ops as _me`): an adversarial run
    for stmt in _module_statements(tree):
        if stars is not None and isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
            further = stars(project, path, stmt, name, depth + 1)
            if further is None:
                return None
            targets |= further
            continue
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                if (a.asname or a.name.split(".")[0]) == name:
                    full = a.name if a.asname else a.name.split(".")[0]
                    if normalize(full) is None:
                        return None
                    targets.add(full)
        elif isinstance(stmt, ast.ImportFrom):
            for a in stmt.names:
                if (a.asname or a.name) != name:
                    continue
                full = f"{stmt.module}.{a.name}" if stmt.module else a.name
                if not stmt.level and normalize(full) is not None:
                    targets.add(full)
                    continue
                inner = project.resolve(stmt.module or "", stmt.level, path)
                further = tf_binding(project, inner, a.name, depth + 1) if inner is not None else None
                if not further or rebound_elsewhere(project, inner, {a.name}, also_with=path,
                                                    among=may_hold_module(project, inner)):
                    return None  # (`utils.grad = f` before ops.py copies it: an adversarial run)
                targets |= further
        elif isinstance(stmt, ast.Assign) and any(_binds(t, name) for t in stmt.targets):
            if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
                return None
            head, _, rest = _dotted(stmt.value).partition(".")
            if not head or head == name and not targets:
                return None
            base = targets if head == name else tf_binding(project, path, head, depth + 1)
            if not base:
                return None
            targets |= {b + ("." + rest if rest else "") for b in base}
        elif any(_binds(t, name) for t in _store_targets(stmt)):
            return None  # a for target, a with ... as, an augmented assignment, ...
    if not targets or len({normalize(t) for t in targets}) != 1:
        return None
    return targets


def _module_statements(tree: ast.Module):
    """Statements that run at module level, in order (also inside top-level if/try/with/for)."""
    todo = list(reversed(tree.body))
    while todo:
        stmt = todo.pop()
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            todo.extend(reversed(getattr(stmt, field, []) or []))


def _store_targets(stmt: ast.AST) -> list:
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        return [stmt.target]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.target]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [i.optional_vars for i in stmt.items if i.optional_vars is not None]
    if isinstance(stmt, ast.ExceptHandler) and stmt.name:
        return [ast.Name(id=stmt.name, ctx=ast.Store())]
    return [n for n in ast.walk(stmt) if isinstance(n, ast.NamedExpr)] if isinstance(stmt, ast.expr) else []


def _binds(target: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target))


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    return ".".join([node.id] + list(reversed(parts)))


def dynamic_bindings(tree: ast.Module, stars: bool = True) -> bool:
    return dynamic_binding(tree, stars) is not None


def dynamic_binding(tree: ast.Module, stars: bool = True) -> Optional[ast.AST]:
    """The module may bind names its statements do not show: a star import (unless ``stars``
    is false: the caller follows them), ``globals()``,
    ``sys.modules`` (through any alias of ``sys``), ``importlib.import_module(__name__).x = ``,
    a ``__dict__``, a module-level ``__getattr__`` (PEP 562), ``del``, a walrus, ``match``."""
    sys_names = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
                 if a.name == "sys"} | {"sys"}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in ("__getattr__", "__dir__"):
            return node
    tested = membership_tested(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "sys" and any(a.name == "modules" for a in node.names):
            return node
        # `"CXX11_ABI_FLAG" in tf.__dict__` only asks (deepmd-kit's env.py made all its TF "unknown")
        if isinstance(node, ast.Attribute) and node.attr == "__dict__" and id(node) not in tested:
            return node
        if isinstance(node, ast.Call) and (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) in (
                "import_module", "reload"):
            return node
        # `del mat["__globals__"]` deletes a key: only a name (or an attribute) unbinds one; a key of
        # an attribute may be one of a namespace fetched elsewhere (an adversarial run)
        if isinstance(node, ast.Delete) and any(not (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name))
                                                for t in node.targets):
            return node
        if isinstance(node, ast.Match) or stars and isinstance(node, ast.ImportFrom) and \
                any(a.name == "*" for a in node.names):
            return node
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in DYNAMIC_BINDERS:
            return node
        if isinstance(node, ast.Attribute) and node.attr == "modules" and isinstance(node.value, ast.Name) \
                and node.value.id in sys_names:
            return node
        if isinstance(node, ast.NamedExpr):
            return node
    return None


def submodule_named(path: str, name: str) -> bool:
    """A package whose submodule is named ``name``: importing it anywhere sets ``pkg.name``
    (``pkg/env/__init__.py`` beside ``pkg/env/tf.py``: an adversarial run's loader)."""
    base, file = os.path.split(path)
    if file != "__init__.py":
        return False
    try:
        return any(f == name or f.startswith(name + ".") for f in os.listdir(base))
    except OSError:
        return True


def _imports_itself(project, path: str, tree: ast.Module) -> bool:
    """``import pkg.env as _me`` in pkg/env.py: the module holds its own object, which it may
    hand to code that writes its names (an adversarial run)."""
    here = os.path.abspath(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods = [(a.name, 0) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mods = [(node.module or "", node.level)] + [(f"{node.module}.{a.name}" if node.module else a.name,
                                                        node.level) for a in node.names]
        else:
            continue
        if any(project.resolve(m, level, here) == here for m, level in mods if m):
            return True
    return False


def why_not_tf(project, path: str, source: str, head: str) -> Optional[str]:
    """Why ``head``, which this file imports from a project module, is not taken for TF: the
    module named, and what in it may bind the name unseen (deepmd-kit's reason listed causes
    none of which applied)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    here = os.path.abspath(path)
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not any((a.asname or a.name) == head for a in node.names):
            continue
        name = next(a.name for a in node.names if (a.asname or a.name) == head)
        module = "." * node.level + (node.module or "")
        target = project.resolve(node.module or "", node.level, here)
        where = f"`{head}` comes from `{module}` (line {node.lineno})"
        if target is None:
            return None  # a library's: the general reason stands
        inner = project.tree(target)
        if inner is None:
            return f"{where}, which cannot be read"
        if submodule_named(target, name):
            return f"{where}, a package whose submodule `{name}` replaces that name wherever it is imported"
        if _imports_itself(project, target, inner):
            return f"{where}, which imports itself, so code it hands its module object to may rebind it"
        found = dynamic_binding(inner, stars=False)
        if found is not None:
            text = (ast.get_source_segment(project.text(target) or "", found) or type(found).__name__).split("\n")[0]
            return (f"{where}, which may bind names where no statement shows it ({os.path.basename(target)}:"
                    f"{found.lineno}: `{text[:60]}`)")
        reach = _reach(project, target)
        if reach is not None:
            return f"{where}, which may reach a module's names unseen (`{reach}`)"
        if rebound_elsewhere(project, target, {name}, also_with=here, among=may_hold_module(project, target)):
            return f"{where}, and another project file loaded with both may rebind it there"
        return f"{where}, which binds `{name}` to something else than TensorFlow, or to more than one thing"
    return None


def tf_module_name(imported: dict) -> Optional[str]:
    """A name this file imports from a project module that is the TF module itself (to spell
    added code with it, instead of a second import)."""
    for names, bound in imported.values():
        if {normalize(n) for n in names} <= TF_MODULES:
            return bound
    return None


def rebound_elsewhere(project, path: str, heads: set, also_with: Optional[str] = None,
                      among: Optional[set] = None) -> set:
    """The module-level ``heads`` of ``path`` (aliases such as ``grad = tf.gradients``) that
    another project file loaded with it may rebind: ``m.grad = f``, ``setattr(m, ...)``, or
    anything through ``sys.modules`` (an adversarial run: TF1 gave twice the tape's value).
    ``also_with``: the file that reads them through ``path`` (a star import of it); a file that
    cannot be loaded with that one cannot change what it reads (darts' train.py, another script)."""
    out: set = set()
    for _where, names in rebinders(project, path, heads, also_with, among):
        out |= names
    return out


def rebinders(project, path: str, heads: set, also_with: Optional[str] = None, among: Optional[set] = None):
    """(``file:line`` and how, the heads it may rebind) for each file :func:`rebound_elsewhere`
    counts, so a reason can name the first."""
    if not heads:
        return
    here = os.path.abspath(path)
    files: set = set()
    # a file naming none of these cannot rebind them (`fill(vars(m))` names none of the heads)
    for word in sorted(heads) + list(WORDS):
        hits = project.grep(word.encode())
        if hits is None:
            yield "a project too big to look through", set(heads)  # any of them may be
            return
        files |= set(hits)
    root = getattr(project, "root", None) or os.path.dirname(here)
    for p in sorted(files - {here} if among is None else (files & among) - {here}):
        tree = project.tree(p)
        if tree is None or not project.may_run_together(here, p) or \
                also_with is not None and not project.may_run_together(also_with, p):
            continue
        name = os.path.relpath(p, root)
        reach = _reach(project, p)
        if reach is not None:
            # `ops.__setattr__(...)`, `put = setattr`, `builtins.exec(...)`, `sys.modules`
            yield f"{name} (`{reach.strip()}`)", set(heads)
            continue
        methods = method_nodes(tree)
        # `Patcher.apply(ops)` hands a method any object as `self` (an adversarial run)
        classes = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
               and n.func.value.id in classes for n in ast.walk(tree)):
            methods = set()
        for node in ast.walk(tree):
            # `self.tf = ...` in a method sets an instance's; in a plain function `self` may be a module
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)) and node.attr in heads \
                    and not (isinstance(node.value, ast.Name) and node.value.id == "self" and id(node) in methods):
                yield f"{name}:{node.lineno} (`.{node.attr} = ...`)", {node.attr}


def may_hold_module(project, here: str) -> Optional[set]:
    """Files that may hold this module object to write its names: those importing it (directly,
    or through a package); those that find any module at run time (``sys.modules``,
    ``__import__``, ``importlib``, ``gc``); and, among the modules it imports, those that walk
    frames or a function's ``__globals__`` (they reach only the modules that call them: an
    adversarial run walked frames from a module main imported).  None: the project cannot be
    searched."""
    importers = project.importers(here)  # through packages too: `import pkg` then `pkg.mod.tf = f`
    if importers is None:
        return None
    found = set(importers)
    related = set(importers) | set(project.import_closure(here))
    walkers: set = set()  # files naming a frame or `__globals__` walk
    finders: set = set()  # files naming a way to find any module (read: `_finds_modules`)
    for words, into in (((b"_getframe", b"f_back", b"__globals__", b"currentframe", b"stack("), walkers),
                        ((b"modules", b"__import__", b"importlib", b"gc"), finders)):
        for word in words:
            hits = project.grep(word)
            if hits is None:
                return None
            into |= set(hits)
    for h in walkers | finders:
        tree = project.tree(h)
        if tree is None or h in walkers and h in related or _finds_modules(tree):
            found.add(h)
    return found


def _reach(project, path: str) -> Optional[str]:
    """``namespace_reach`` of a project file's tree, once per file (every check asks of the same files)."""
    cache = project.__dict__.setdefault("_namespace_reach", {})
    if path not in cache:
        tree = project.tree(path)
        cache[path] = namespace_reach(tree) if tree is not None else None
    return cache[path]


def _finds_modules(tree: ast.Module) -> bool:
    """The module finds module objects at run time, whatever imports it: ``sys.modules``,
    ``__import__``, ``importlib``, ``gc``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "modules" and isinstance(node.value, ast.Name) \
                and node.value.id == "sys":
            return True
        if isinstance(node, ast.Name) and node.id == "__import__":
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                n and n.split(".")[0] in ("importlib", "gc", "imp") for n in
                [a.name for a in node.names] + [getattr(node, "module", None)]):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "sys" and any(a.name == "modules" for a in node.names):
            return True
    return False
