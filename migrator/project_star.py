"""Star imports of project modules: what ``from ops import *`` hands on for one name.

DCGAN-style code spells TensorFlow as ``tf`` in a file that also does ``from ops import *``,
ops.py importing TensorFlow as ``tf`` too (and star-importing utils.py in turn): every
gradient penalty of that family was refused, its reason claiming ops binds ``tf`` to
something else.  A star import copies the module's public names as they are when it runs,
so it hands on ``tf`` if the module binds it by any means: its statements (followed by
``project_tf.tf_binding``), its module object (``import ops as _me; _me.tf = ...``,
``sys.modules``, ``importlib``, ``__dict__``), a module-level ``__getattr__``, a submodule
named ``tf`` of a package, or another project file writing ``ops.tf`` -- each found by an
adversarial run, and each makes the answer unknown here.  ``__all__`` is not read: it can
only leave names out, and reading it wrongly would not be safe.
"""
from __future__ import annotations

import ast
import os
import re
from typing import Optional

from migrator.project_tf import dynamic_bindings, found_twice, rebound_elsewhere, submodule_named, tf_binding

#: libraries whose star exports hold no TF module (any other library's may: keras.backend's did)
_PLAIN_LIBRARIES = frozenset({"math", "cmath", "os", "sys", "random", "itertools", "functools", "collections",
                              "typing", "numpy", "six", "__future__"})


def star_binding(project, importer: str, stmt: ast.ImportFrom, name: str, depth: int) -> Optional[set]:
    """The TF names ``stmt`` (``from M import *`` in ``importer``) may bind ``name`` to: empty
    when it binds nothing of that name, None when it may bind something else or cannot be told."""
    target = project.resolve(stmt.module or "", stmt.level, importer)
    if target is not None and not stmt.level and found_twice(project, stmt.module or "", importer):
        return None  # `from ops import *` in pkg/: Python 3 finds the root's ops.py, the index the one beside
    if target is None:
        root = (stmt.module or "").split(".")[0]
        if not stmt.level and root in _PLAIN_LIBRARIES:
            return set()
        return None  # another library, or a project module the run cannot read
    if depth > 4 or _ambiguous(target) or rebound_elsewhere(project, target, {name}, also_with=importer):
        return None
    tree = project.tree(target)
    if tree is None or dynamic_bindings(tree, stars=False) or submodule_named(target, name):
        return None
    exported = _all_names(tree)
    if exported is _UNKNOWN:
        return None
    if exported is not None and name not in exported or not binds(project, target, tree, name, depth):
        return set()  # `__all__` leaves it out: the importer's own binding, or builtins, stands
    return tf_binding(project, target, name, depth, stars=star_binding)


def binds(project, path: str, tree: ast.Module, name: str, depth: int = 0) -> bool:
    """Whether any statement of the module (or a module it star-imports) may bind ``name``."""
    if depth > 4:
        return True
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                if a.name == "*":
                    target = project.resolve(node.module or "", node.level, path)
                    inner = project.tree(target) if target else None
                    if inner is None:
                        if target is not None or (node.module or "").split(".")[0] not in _PLAIN_LIBRARIES:
                            return True
                    elif binds(project, target, inner, name, depth + 1):
                        return True
                elif (a.asname or a.name.split(".")[0]) == name:
                    return True
            if isinstance(node, ast.ImportFrom) and node.level and (node.module or "").split(".")[0] == name:
                return True  # `from .tf import x` in a package: the submodule becomes an attribute
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return True
        elif isinstance(node, ast.ExceptHandler) and node.name == name:
            return True
        elif isinstance(node, (ast.Name, ast.Attribute)) and not isinstance(node.ctx, ast.Load) and (
                getattr(node, "id", None) == name or getattr(node, "attr", None) == name):
            return True
    return False


_UNKNOWN = object()


def _all_names(tree: ast.Module):
    """The names ``__all__`` lists (a star import copies only those), None when the module has
    none, ``_UNKNOWN`` when it is not one literal list or tuple of strings."""
    found = [n for n in ast.walk(tree) if isinstance(n, (ast.Name, ast.Attribute)) and
             getattr(n, "id", getattr(n, "attr", None)) == "__all__" and not isinstance(n.ctx, ast.Load)]
    if not found:
        return None
    assigns = [st for st in tree.body if isinstance(st, ast.Assign) and len(st.targets) == 1
               and isinstance(st.targets[0], ast.Name) and st.targets[0].id == "__all__"]
    if len(found) != 1 or len(assigns) != 1 or not isinstance(assigns[0].value, (ast.List, ast.Tuple)) or not all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in assigns[0].value.elts):
        return _UNKNOWN
    return {e.value for e in assigns[0].value.elts}


def _other_forms(stem: str) -> bool:
    """A module Python would load before (or instead of) ``stem.py``: a package ``stem/`` with an
    ``__init__`` of any kind, or an extension module ``stem*.so``/``.pyd`` (an adversarial run:
    a sourceless ``ops/__init__.pyc`` beside ``ops.py``)."""
    base, name = os.path.split(stem)
    if os.path.isdir(stem) and any(f.startswith("__init__.") for f in os.listdir(stem)):
        return True
    try:
        return any(f.startswith(name + ".") and f.endswith((".so", ".pyd")) for f in os.listdir(base or "."))
    except OSError:
        return True


def _ambiguous(path: str) -> bool:
    """``ops.py`` beside a package ``ops/``: Python imports the package, the index may not."""
    base, file = os.path.split(path)
    if file == "__init__.py":
        return os.path.exists(base + ".py")
    return _other_forms(os.path.join(base, file[:-3])) if file.endswith(".py") else True


def starred_tf_names(project, path: str, head: str) -> Optional[set]:
    """The TF names ``head`` stands for in ``path``, which binds it nowhere itself (TobiasLee's
    models: ``tf`` comes only from ``from utils.prepare_data import *``): every star import of
    the file hands on one TF name or nothing, and no other file may rebind it there."""
    names = tf_binding(project, os.path.abspath(path), head, stars=star_binding)
    if not names or rebound_elsewhere(project, path, {head}) or moves_imports(project, path):
        return None
    tree = project.tree(path)
    # bound on every path: else the name is looked up in builtins (`if False: from ops import *`,
    # `if TYPE_CHECKING: import tensorflow as tf` in ops.py: adversarial runs)
    return names if tree is not None and _surely_binds(project, path, tree, head, 0) else None


def _surely_binds(project, path: str, tree: ast.Module, name: str, depth: int) -> bool:
    """Every star import of the module is a statement of its own at top level, and one of them
    (or a top-level import) binds ``name`` whatever runs."""
    if depth > 4:
        return False
    stars = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)]
    if any(st not in tree.body for st in stars):
        return False
    for st in tree.body:
        if isinstance(st, ast.Import) and any((a.asname or a.name.split(".")[0]) == name for a in st.names):
            return True
        if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in st.targets):
            return True  # `tf = compat.v1` (what it binds, tf_binding has read)
        if isinstance(st, ast.ImportFrom) and any(a.name == "*" for a in st.names):
            target = project.resolve(st.module or "", st.level, path)
            inner = project.tree(target) if target is not None else None
            if inner is not None and star_binding(project, path, st, name, depth + 1) and \
                    _surely_binds(project, target, inner, name, depth + 1):
                return True
    return False


def moves_imports(project, path: str) -> bool:
    """A file loaded with ``path`` changes where imports are found (``sys.path.insert``,
    ``site.addsitedir``): the index's reading of a star import may not be Python's."""
    for word in (b"sys.path", b"addsitedir", b"path_hooks", b"meta_path"):
        hits = project.grep(word)
        if hits is None:
            return True
        if any(project.may_run_together(path, h) for h in hits):
            return True
    return False


def star_rebinding(project, here: str, source: str, heads: set) -> Optional[str]:
    """Why a project star import of file ``here`` may bind one of ``heads`` (the names its
    gradient calls are spelled with) to something else than this file's own TF import; None
    when every binding of each is one TF module."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)):
            continue
        if project.resolve(node.module or "", node.level, here) is None:
            continue  # a library's, taken to bind no TF name here (as before; a limit)
        for head in sorted(heads):
            if star_binding(project, here, node, head, 0) != set() and \
                    not tf_binding(project, here, head, stars=star_binding):
                return (f"`from {'.' * node.level}{node.module or ''} import *` (line {node.lineno}) may bind `{head}` "
                        "to something else than this file's TensorFlow import, so the gradient call may not be "
                        "TF's; import what is used by name, then re-run")
    return None


def star_visible_names(project, path: str, depth: int = 12) -> set:
    """Identifiers used in the project files that star-import ``path`` (through further star
    imports too): a module-level name the rewrite adds there (a wrapper, an import) would
    replace theirs (an adversarial run: `sign_straight_through` from `from util import *` was
    replaced by the wrapper of a later `from main import *`)."""
    out: set = set()
    frontier, seen = [os.path.abspath(path)], {os.path.abspath(path)}
    for _ in range(depth):
        nxt = []
        for mod in frontier:
            for q in project.importers(mod, depth=1) or ():
                tree = project.tree(q)
                if q in seen or tree is None or not any(
                        isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) and
                        project.resolve(n.module or "", n.level, q) == mod for n in ast.walk(tree)):
                    continue
                seen.add(q)
                nxt.append(q)
                out |= set(_IDENTIFIER.findall(project.text(q) or ""))
        frontier = nxt
    return out


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
