"""Checks of the gradients plugin that look past one call: the file and the project.

Each function takes the plugin's per-file analysis ``an`` (a ``GradientRewrite``).
"""
from __future__ import annotations

import os
from typing import Optional

import libcst as cst

from migrator._plugins._grad_find import Refuse
from migrator._plugins._grad_values import calls_in
from migrator.pipeline import imported_modules, module_names_for


def grad_file_refusal(an) -> Optional[Refuse]:
    """A reason every gradient call of the file stays manual: a patched `tf.gradients` or
    gradient registry, or an override map a tape would ignore (here or in an imported module)."""
    patches = an.ctx.index.gradients_patches
    if patches is None:
        patches = an.project.gradients_patches()
    if patches:
        where = f"{os.path.basename(patches[0].path)}:{patches[0].line}"
        return Refuse("TFG131", f"tf.gradients is replaced at {where}; a tape would bypass that wrapper. "
                                "Migrate the wrapper's behaviour onto the tape (e.g. clip the tape's "
                                "gradients), remove the patch, then re-run")
    registry = an.project.registry_patches()
    if registry:
        first = registry[0]
        where = f"{os.path.basename(first.path)}:{first.line}"
        if first.text != "_gradient_registry":
            return Refuse("TFG131", f"a graph's gradient overrides are set directly ({where}: `{first.text}`), "
                                    "which a tape ignores: replace that code with tf.custom_gradient, then re-run")
        return Refuse("TFG131", f"TF's gradient registry is changed at run time ({where}: `_gradient_registry`): "
                                "which gradient function an op gets depends on when a tape runs; migrate by hand")
    if an.ctx.facts.get("manual_overrides"):
        return Refuse("TFG122", "an override map in this file was left for manual migration and a tape "
                                "would ignore it; migrate the override first, then re-run")
    bad = imported_modules(an.ctx.source) & set(an.ctx.index.unmigrated_override_modules)
    if bad:
        return Refuse("TFG122", f"this file imports `{sorted(bad)[0]}`, whose override map was left for "
                                "manual migration; a tape would ignore it: migrate it first, then re-run")
    here = os.path.abspath(an.ctx.path)
    for dep in an.project.import_closure(here):
        if not an.project.override_entries(dep):
            continue
        in_run = dep in an.project.originals
        if not in_run or module_names_for(dep) & set(an.ctx.index.unmigrated_override_modules):
            where = "is not part of this run" if not in_run else "was left for manual migration"
            return Refuse("TFG122", f"this file imports `{os.path.basename(dep)}`, which enters "
                                    f"gradient_override_map and {where}; a tape would ignore that override: "
                                    "migrate both files in one run")
    return None


def calls_manual_gradient(an, flat: list, s: int, e: int) -> Optional[str]:
    """A function of this module, called in the region, that holds (or calls one that holds)
    a gradient call left manual: a Hessian-vector product over it needs that one first."""
    holders = _manual_gradient_defs(an)
    for i in range(s, e + 1):
        node = flat[i].orig if flat[i].orig is not None else (flat[i].hoist or (None, None))[1]
        for call in calls_in(node) if node is not None else ():
            fn = call.func
            name = fn.value if isinstance(fn, cst.Name) else fn.attr.value if isinstance(fn, cst.Attribute) else None
            if name in holders:
                return an.code(fn)
    return None

def _manual_gradient_defs(an) -> set:
    """Names of this module's functions and methods that hold a manual gradient call, closed
    over calls by name (a function calling one of them holds one too)."""
    direct: set = set()
    defs: dict = {}

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node):
            defs.setdefault(node.name.value, []).append(node)

    an.module.visit(V())
    for c in an.calls:
        if c.refused is not None and c.node is not None:
            cur = an.parents.get(c.node)
            while cur is not None and not isinstance(cur, cst.FunctionDef):
                cur = an.parents.get(cur)
            if cur is not None:
                direct.add(cur.name.value)
    holders = set(direct)
    changed = True
    while changed:
        changed = False
        for name, nodes in defs.items():
            if name in holders:
                continue
            called = {cl.func.value if isinstance(cl.func, cst.Name) else getattr(getattr(cl.func, "attr", None), "value", None)
                      for n in nodes for cl in calls_in(n.body)}
            if called & holders:
                holders.add(name)
                changed = True
    return holders
