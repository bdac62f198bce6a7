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
from typing import Optional

from migrator.project_tf import dynamic_bindings, rebound_elsewhere, tf_binding

#: libraries whose star exports hold no TF module (any other library's may: keras.backend's did)
_PLAIN_LIBRARIES = frozenset({"math", "cmath", "os", "sys", "random", "itertools", "functools", "collections",
                              "typing", "numpy", "six", "__future__"})


def star_binding(project, importer: str, stmt: ast.ImportFrom, name: str, depth: int) -> Optional[set]:
    """The TF names ``stmt`` (``from M import *`` in ``importer``) may bind ``name`` to: empty
    when it binds nothing of that name, None when it may bind something else or cannot be told."""
    target = project.resolve(stmt.module or "", stmt.level, importer)
    if target is None:
        root = (stmt.module or "").split(".")[0]
        if not stmt.level and root in _PLAIN_LIBRARIES:
            return set()
        return None  # another library, or a project module the run cannot read
    if depth > 4 or _ambiguous(target) or rebound_elsewhere(project, target, {name}, also_with=importer):
        return None
    tree = project.tree(target)
    if tree is None or dynamic_bindings(tree, stars=False) or _submodule_named(target, name):
        return None
    if not binds(project, target, tree, name, depth):
        return set()
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


def _ambiguous(path: str) -> bool:
    """``ops.py`` beside a package ``ops/``: Python imports the package, the index may not."""
    base, file = os.path.split(path)
    if file == "__init__.py":
        return os.path.exists(base + ".py")
    return os.path.isfile(os.path.join(base, file[:-3], "__init__.py")) if file.endswith(".py") else True


def _submodule_named(path: str, name: str) -> bool:
    """A package whose submodule is named ``name``: importing it anywhere sets ``pkg.name``."""
    base, file = os.path.split(path)
    return file == "__init__.py" and (os.path.exists(os.path.join(base, name + ".py"))
                                      or os.path.isdir(os.path.join(base, name)))


def starred_tf_names(project, path: str, head: str) -> Optional[set]:
    """The TF names ``head`` stands for in ``path``, which binds it nowhere itself (TobiasLee's
    models: ``tf`` comes only from ``from utils.prepare_data import *``): every star import of
    the file hands on one TF name or nothing, and no other file may rebind it there."""
    names = tf_binding(project, os.path.abspath(path), head, stars=star_binding)
    if not names or rebound_elsewhere(project, path, {head}):
        return None
    return names


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
