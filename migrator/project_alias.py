"""Gradient APIs a project module hands on under another name.

``grad = tf.gradients`` in ops.py, then ``from ops import grad`` (or ``from ops import *``,
or ``import ops`` and ``ops.grad(y, x)``) in another file: that file names no gradient API
by spelling, so the byte prefilter and the plugin's syntactic check skipped it, and its
``tf.gradients`` was neither migrated nor reported (an adversarial run).  These functions
find such files, so that the run reads them and name resolution (``project_tf``,
``project_star``) decides what each call is.
"""
from __future__ import annotations

import ast
import os
from typing import Optional

from migrator.project_tf import found_twice, may_hold_module, rebound_elsewhere, tf_binding
from migrator.tfnames import normalize

_PFOR = "tensorflow.python.ops.parallel_for.gradients."
#: the public APIs a gradient call can be (what ``_grad_find.APIS`` rewrites)
API_NAMES = frozenset({"tensorflow.gradients", "tensorflow.hessians", _PFOR + "jacobian", _PFOR + "batch_jacobian"})
#: words an exporting module must contain (it binds one of the APIs by name)
_WORDS = (b"gradients", b"hessians", b"jacobian")


def exported_aliases(project, path: str, exporters: Optional[dict] = None) -> dict:
    """Module-level names of project file ``path`` bound only to one gradient API, under a
    name that is not the API's own (``grad = tf.gradients``, ``from tensorflow import
    gradients as g``, or ``from ops import grad`` of one of ``exporters``) -> that API."""
    cache = project.__dict__.setdefault("_api_aliases", {})
    path = os.path.abspath(path)
    if path not in cache:
        cache[path] = {}
        tree = project.tree(path)
        # `import ops as _me; _me.grad = f` in ops.py itself (an adversarial run)
        stored = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load)} \
            if tree is not None else set()
        for name in _candidate_names(project, path, tree, exporters or {}) - stored if tree is not None else ():
            names = tf_binding(project, path, name)
            api = normalize(next(iter(names))) if names and len(names) == 1 else None
            if api in API_NAMES and name != api.rsplit(".", 1)[-1]:
                cache[path][name] = api
    return cache[path]


_LEAVES = frozenset({"gradients", "hessians", "jacobian", "batch_jacobian"})


def _candidate_names(project, path: str, tree: ast.Module, exporters: dict) -> set:
    """Module-level names that may be such an alias (only these are resolved: TF's own tree has
    hundreds of modules naming `gradients`, each with hundreds of names)."""
    out: set = set()
    for st in tree.body:
        if isinstance(st, ast.Assign) and (getattr(st.value, "attr", None) in _LEAVES or
                                           getattr(st.value, "id", None) in _LEAVES):
            out |= {t.id for t in st.targets if isinstance(t, ast.Name)}
        elif isinstance(st, ast.ImportFrom):
            source = project.resolve(st.module or "", st.level, path) if exporters else None
            known = exporters.get(os.path.abspath(source), {}) if source else {}
            out |= {a.asname or a.name for a in st.names if a.name in _LEAVES or a.name in known}
    return out


def alias_exporters(project, alias_line: str) -> Optional[dict]:
    """Project files that hand on a gradient API under another name -> those names; None
    when the project is too big to search.  ``alias_line``: a regex a module-level line of
    such a file matches (``pipeline.ALIAS_LINE``)."""
    found: set = set()
    for word in _WORDS:
        hits = project.grep(word, alias_line)
        if hits is None:
            return None
        found |= set(hits)
    out: dict = {}
    todo = sorted(found)
    for _depth in range(4):  # re-exports: `from utils import grad` in ops.py names no API itself
        more = set()
        for path in todo:
            aliases = exported_aliases(project, path, out)
            if aliases and os.path.abspath(path) not in out:
                out[os.path.abspath(path)] = aliases
                more |= set(project.importers(path, depth=1) or ())
        todo = sorted(more - set(out))
    return out


def uses_exported_alias(project, path: str, exporters: dict) -> bool:
    """``path`` imports an exported alias of one of ``exporters`` by name, by ``*``, or
    imports an exporting module itself (and may call ``ops.grad``)."""
    text = project.text(path) or ""
    if not any(name in text for aliases in exporters.values() for name in aliases):
        return False  # it never spells one (most files: no parse)
    tree = project.tree(path)
    if tree is None:
        return False
    here = os.path.abspath(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = project.resolve(node.module or "", node.level, here)
            if target is not None and os.path.abspath(target) in exporters:
                aliases = exporters[os.path.abspath(target)]
                if any(a.name == "*" or a.name in aliases for a in node.names):
                    return True
            for a in node.names:  # `from pkg import ops`: the module itself
                inner = project.resolve(f"{node.module}.{a.name}" if node.module else a.name, node.level, here)
                if inner is not None and os.path.abspath(inner) in exporters:
                    return True
        elif isinstance(node, ast.Import):
            for a in node.names:
                target = project.resolve(a.name, 0, here)
                if target is not None and os.path.abspath(target) in exporters:
                    return True
    return False


def module_aliases(project, path: str, source: str) -> dict:
    """``import ops`` (or ``import pkg.ops as o``) of a project module that exports gradient
    API aliases: libcst's qualified name of each (``ops.grad``) -> ({the API}, its name)."""
    if "import" not in source:
        return {}
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    here = os.path.abspath(path)
    out: dict = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import):
            continue
        for a in node.names:
            target = project.resolve(a.name, 0, here)
            if target is None or found_twice(project, a.name, here):
                continue
            aliases = exported_aliases(project, target)
            if not aliases:
                continue
            # `ops.grad` is read when the call runs: a file that may rebind it there (`ops.grad = f`)
            changed = rebound_elsewhere(project, target, set(aliases), also_with=here,
                                        among=may_hold_module(project, target))
            for name, api in aliases.items():
                if name not in changed:
                    out[f"{a.name}.{name}"] = ({api}, f"{a.asname or a.name}.{name}")
    return out
