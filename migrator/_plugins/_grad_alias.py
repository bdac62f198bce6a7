"""The name a file's tapes are spelled with, when no unconditional module-level import binds TF.

``if HAS_TF: import tensorflow as tf`` (TensorMol guards TF this way) binds ``tf`` only on one
branch. A tape spelled ``tf.GradientTape`` is still right inside a function whose own call was
spelled ``tf.gradients``: the function reads the global ``tf`` that the call read, and the call
ran only where that import had. Adding ``import tensorflow as tf_1`` instead made the module
unimportable without TensorFlow (a held-out corpus) and read badly.  ``tf`` that only a
project's star import binds (``from utils.prepare_data import *``) is that name too.
"""
from __future__ import annotations

import ast
import os
from typing import Optional

import libcst as cst
from libcst.metadata import FunctionScope, GlobalScope, ImportAssignment

from migrator.model import HESSIANS, TF_GRADIENTS
from migrator.project_alias import API_NAMES
from migrator.project_reach import namespace_reach
from migrator.project_tf import may_hold_module, rebinders, tf_module_name, why_not_tf
from migrator.tfnames import TF_MODULES, dotted, normalize


def file_tf_alias(rewrite) -> Optional[str]:
    """``from .backend import tf`` (the project's TF module), else the guarded global import of
    TF every call of the file is spelled with; None: the tape needs an import of its own."""
    if hasattr(rewrite.qn, "imported"):
        found = tf_module_name(rewrite.qn.imported())
        if found is not None:
            return found
    return guarded_alias([node for node, _ in rewrite.find.calls], rewrite.wrapper)


def starred_heads(qn) -> set:
    """Names only a star import of a project module binds, to TF (``tf`` after ``from ops import *``)."""
    imported = qn.imported() if hasattr(qn, "imported") else {}
    return {bound for key, (_names, bound) in imported.items() if key.startswith("*")}


def imported_api_aliases(qn) -> dict:
    """``from ops import grad`` where the project's ops.py binds ``grad`` only to a gradient API:
    bound name -> that API (its import is dead once every call is a tape)."""
    imported = qn.imported() if hasattr(qn, "imported") else {}
    out = {}
    for key, (names, bound) in imported.items():
        apis = {normalize(n) for n in names}
        if not key.startswith("*") and "." not in bound and len(apis) == 1 and apis <= API_NAMES:
            out[bound] = apis.pop()
    return out


def guarded_alias(calls: list, wrapper) -> Optional[str]:
    """``tf`` when every call is ``tf.<api>(...)`` inside a function that does not bind ``tf``
    itself, and every module-level binding of ``tf`` imports a TF module."""
    heads = {c.func.value.value if isinstance(c.func, cst.Attribute) and isinstance(c.func.value, cst.Name)
             else None for c in calls}
    if len(heads) != 1 or None in heads:
        return None
    name = heads.pop()
    scopes = wrapper.resolve(cst.metadata.ScopeProvider)
    module_scope = None
    for c in calls:
        scope = scopes.get(c.func.value)
        if not isinstance(scope, FunctionScope):
            return None  # at module or class level, the tape may open before the import ran
        while not isinstance(scope, GlobalScope):
            if name in scope.assignments or scope.parent is scope:
                return None  # a local `tf` (`import tensorflow as tf` in the function): not yet bound
            scope = scope.parent
        module_scope = scope
    bindings = list(module_scope.assignments[name]) if module_scope is not None else []
    return name if bindings and all(_imports_tf(b, name) for b in bindings) else None


def _imports_tf(binding, name: str) -> bool:
    if not isinstance(binding, ImportAssignment) or not isinstance(binding.node, cst.Import):
        return False  # `tf = stub` somewhere, `global tf` in a function, `from x import tf`
    for alias in binding.node.names:
        full = alias.evaluated_name
        bound = alias.evaluated_alias or full.split(".")[0]
        if bound == name:
            return normalize(full) in TF_MODULES and (alias.asname is not None or full == "tensorflow")
    return False


def report_unrewritable(rewrite) -> None:
    """Calls reported and never rewritten: keras.backend.gradients (graph-only), ``tf.gradients``
    where ``tf`` may not be TF (a parameter, a local, a name also bound otherwise), and
    ``tf.gradients`` used as a value."""
    f = rewrite.find
    for node in f.keras:
        rewrite._site(node, TF_GRADIENTS, "TFG127", "keras.backend.gradients only works in graph mode; compute "
                                                    "the loss inside a tf.GradientTape where the model is called")
    stars = [st for st in rewrite.module.body if isinstance(st, cst.SimpleStatementLine) for small in st.body
             if isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar)]
    for node in f.unresolved:
        if not (isinstance(node.func, cst.Attribute) and node.func.attr.value in ("gradients", "hessians")):
            # `from ops import grad` (ops: `grad = tf.gradients`) and `from other import grad`
            apis = {normalize(q.name) for q in rewrite.qn.get(node.func, set())}
            rewrite._site(node, HESSIANS if "tensorflow.hessians" in apis else TF_GRADIENTS, "TFG128",
                          f"`{rewrite.code(node.func)}` here is bound to a TF gradient API and "
                          "to something else, so the migrator cannot tell which one this call runs; import only "
                          "one of them under this name and re-run, or rewrite it with a tf.GradientTape by hand")
            continue
        head = dotted(node.func.value)
        kind = HESSIANS if node.func.attr.value == "hessians" else TF_GRADIENTS
        if stars and not rewrite.qn.get(node.func.value, set()):  # no binding but what `import *` brings
            named = ", ".join(f"`{rewrite.code(st.body[0]).strip()}` (line {rewrite.line(st)})" for st in stars[:3])
            why = (f"`{head}` here comes only from star imports ({named}), which may bind it to something else "
                   f"than TensorFlow (a module outside the run, a library's, or one binding `{head}` otherwise)")
        else:
            why = (from_project(rewrite, head) or
                   f"`{head}` here is not bound only to the tensorflow import (a parameter, a local, a name also "
                   "bound to something else, or one a star import brings in)")
        rewrite._site(node, kind, "TFG128", f"{why}, so the migrator cannot tell that `{rewrite.code(node.func)}` is "
                      "TF's; if it is, import TensorFlow by name and re-run, or rewrite it with a tf.GradientTape by hand")
    for node in f.values:
        rewrite._site(node, TF_GRADIENTS, "TFG128", f"`{rewrite.code(node)}` is used as a value, not called; "
                                                    "call a tf.GradientTape method here by hand")


def from_project(rewrite, head: str) -> Optional[str]:
    """``from deepmd.tf.env import tf``: the module it comes from, and why its ``tf`` is not TF's."""
    if not head or "." in head or not getattr(rewrite.ctx.index, "root", None):
        return None
    return why_not_tf(rewrite.project, rewrite.ctx.path, rewrite.ctx.source, head)


def rebinds_head(an, c) -> Optional[str]:
    """The name the call is spelled with (``tf``) may be rebound where no statement shows it:
    by this module (``builtins.exec("tf = f")``, ``_me.__setattr__("tf", f)``) or by a file loaded
    with it (``main.tf = f``) -- adversarial runs, each taking the tape for TF's call."""
    head = (dotted(c.node.func) or "").split(".")[0] if c.node is not None else ""
    if not head:
        return None
    here = os.path.abspath(an.ctx.path)
    cache = an.__dict__.setdefault("_rebinds_head", {})
    if head not in cache:
        try:  # the module as this run reads it (a notebook's cells, after their magics)
            tree = ast.parse(an.module.code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
        reach = namespace_reach(tree, own=True, heads=frozenset({head})) if tree is not None else "unreadable"
        other = None if reach else next(rebinders(an.project, here, {head}, among=may_hold_module(an.project, here)),
                                        None)
        cache[head] = (f"this module may rebind its own names where no statement shows it (`{reach}`), so `{head}` "
                       "may not be TensorFlow when the gradient runs; take that code out, then re-run") if reach else \
            (f"another project file loaded with this one may rebind this module's `{head}` ({other[0]}), so the "
             "gradient call may not be TF's; take that code out, then re-run") if other else None
    return cache[head]

