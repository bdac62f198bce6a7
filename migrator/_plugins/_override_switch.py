"""Which graph is the default one where a block runs: the `with ... as_default()` around it.

An override applies only to ops made in its graph while that graph is the default one.
The prover accepts a graph named by the enclosing `with X.as_default()` only when
nothing between that `with` and the block can make another graph the default, and
nothing rebinds the name in between (docs/soundness.md, G1).  Everything here
errs towards "not shown": a context manager it does not know may switch graphs.
"""
from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from migrator._plugins._dataflow import effects

#: context managers that never change the default graph
SAFE_CONTEXTS = frozenset({
    "tensorflow.name_scope", "tensorflow.variable_scope", "tensorflow.device", "tensorflow.control_dependencies",
    "tensorflow.colocate_with", "tensorflow.compat.v1.name_scope", "tensorflow.compat.v1.variable_scope",
    "tensorflow.compat.v1.device", "tensorflow.compat.v1.control_dependencies",
})
#: graph methods that enter a context of the same graph, never another default graph
GRAPH_CONTEXT_METHODS = frozenset({"name_scope", "device", "control_dependencies", "gradient_override_map",
                                   "colocate_with"})
#: code that enters a context by hand or suspends the function inside one
_MANUAL_SWITCH = re.compile(r"__enter__|enter_context|\byield\b")


def is_switch(item: cst.WithItem) -> bool:
    call = item.item
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "as_default"


def innermost_switch(prover, node) -> Optional[tuple[cst.With, cst.WithItem]]:
    """The nearest enclosing `with` (same function) that makes a graph the default, and its item
    that wins (the last `as_default()` of the statement: items are entered left to right)."""
    for w in prover._enclosing(node, cst.With):
        items = [it for it in w.items if is_switch(it)]
        if items:
            return w, items[-1]
    return None


def plain_contexts(prover, node, outer: Optional[cst.With], after: Optional[cst.WithItem] = None) -> bool:
    """Every context entered between ``outer`` (after its item ``after``) and ``node`` is one that
    cannot change the default graph; with ``outer`` None, every enclosing one of the function."""
    for w in prover._enclosing(node, cst.With):
        items = list(w.items)
        if w is outer:
            items = items[items.index(after) + 1:] if after in items else []
        if not all(safe_context(prover, it) for it in items):
            return False
        if w is outer:
            return True
    return outer is None


def safe_context(prover, item: cst.WithItem) -> bool:
    call = item.item
    if not isinstance(call, cst.Call):
        return False
    if prover.col.tf(call) in SAFE_CONTEXTS:
        return True
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in GRAPH_CONTEXT_METHODS


def no_manual_switch(prover, fn: Optional[cst.CSTNode], imported: bool = False) -> bool:
    """The function enters no context by hand (`__enter__`, `ExitStack.enter_context`) and is no
    generator (it could resume under another default graph); with ``imported``, nor does code it
    can call in this file or the project modules it imports (an adversarial run: a helper
    module's `_ctx.__enter__()` made another graph the default inside `with g.as_default():`)."""
    if fn is None or _MANUAL_SWITCH.search(prover.code_of(fn)):
        return False
    project = getattr(prover, "project", None)
    if project is None or not imported:
        return True
    files = [prover.path] + list(project.import_closure(prover.path))
    return not any(_ENTERS.search(project.text(p) or "") for p in files)


#: entering a context by hand, anywhere in a module the block's code may call
_ENTERS = re.compile(r"__enter__|enter_context")


def rebinds(prover, fn: cst.CSTNode, within: cst.With, key: str) -> bool:
    """Whether ``key`` may be bound again inside ``within``, or from elsewhere (global, nonlocal)."""
    text = prover.code_of(fn)
    name = re.escape(key)
    if re.search(rf"\b(global|nonlocal)\b[^\n]*\b{name}\b|\bimport\b[^\n]*\b{name}\b", text):
        return True
    body = within.body.body if isinstance(within.body, cst.IndentedBlock) else [within.body]
    for st in body:
        fx = effects(st)
        if key in fx.assigns or key in fx.writes and isinstance(st, cst.SimpleStatementLine) \
                and any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in st.body):
            return True
    return False


def sole_def(prover, name: str) -> bool:
    """``name`` is bound once in the module, by its def, and nothing in the project assigns it."""
    text = prover.ctx.text or prover.found.module.code
    n = re.escape(name)
    if len(re.findall(rf"^\s*def {n}\b", text, re.M)) != 1:
        return False
    if re.search(rf"\b{n}\s*(=(?!=)|:=)|\bas\s+{n}\b|\bimport\b[^\n]*\b{n}\b|\bfor\b[^\n]*\b{n}\b[^\n]*\bin\b"
                 rf"|\b(global|nonlocal)\b[^\n]*\b{n}\b|\bimport\s+\*", text):
        return False
    hits = prover._hits((f".{name} =".encode(), f".{name}=".encode()))
    return hits == []
