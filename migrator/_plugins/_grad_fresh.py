"""Sources the function makes itself: no parameter of that function can depend on them.

VAT's power iteration (``d = tf.random_normal(tf.shape(x))``, then ``d = 1e-6 * d`` and
``tf.gradients(dist, [d])`` in a loop) was refused with the condition "parameter ``x`` does
not depend on ``[d]``": vacuous, since ``x`` was bound when the call began and every value
``d`` holds is made later, inside the call.  That holds when every binding of each source in
the function makes a new tensor: a TF call that always does (never one that may hand back its
argument, as ``tf.cast`` to the same dtype or ``tf.convert_to_tensor`` do), arithmetic on such
values and numbers, or another such source.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from migrator._plugins._dataflow import touches

from migrator._plugins._grad_values import qnames
from migrator.tfnames import descendants, tf_name

#: TF calls whose result is always a new tensor made from no argument's object
_MAKERS = frozenset({
    "tensorflow.random_normal", "tensorflow.random.normal", "tensorflow.random_uniform", "tensorflow.random.uniform",
    "tensorflow.truncated_normal", "tensorflow.random.truncated_normal", "tensorflow.zeros", "tensorflow.ones",
    "tensorflow.zeros_like", "tensorflow.ones_like", "tensorflow.fill", "tensorflow.stop_gradient",
})


def fresh_sources(fn: cst.FunctionDef, keys, qn, module: Optional[cst.Module] = None) -> Optional[str]:
    """Why no parameter of ``fn`` can depend on the sources ``keys``, or None."""
    names = set(keys)
    params = {p.name.value for p in (*fn.params.params, *fn.params.posonly_params, *fn.params.kwonly_params)}
    if not names or any("." in k or not k.isidentifier() for k in names) or names & params:
        return None
    values: dict = {n: [] for n in names}
    todo = list(fn.body.children) if isinstance(fn.body, cst.IndentedBlock) else []
    while todo:
        node = todo.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue  # their own scopes (a `nonlocal` there is found below, in their bodies, by no one: refuse)
        if isinstance(node, (cst.Global, cst.Nonlocal)) and {n.name.value for n in node.names} & names:
            return None
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for t in targets:
                if isinstance(t, cst.Name) and t.value in names:
                    if node.value is None:
                        return None
                    values[t.value].append(node.value)
                elif any(isinstance(n, cst.Name) and n.value in names for n in descendants(t)):
                    return None  # unpacked, or an item set: not followed
        elif isinstance(node, (cst.For, cst.CompFor, cst.WithItem, cst.NamedExpr, cst.AsName, cst.ExceptHandler)):
            target = getattr(node, "target", None) or getattr(node, "name", None)
            if target is not None and any(isinstance(n, cst.Name) and n.value in names for n in descendants(target)):
                return None
        todo += list(node.children)
    nested = any(isinstance(n, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) for n in descendants(fn.body))
    if nested or any(not vs or not all(_fresh(v, names, qn) for v in vs) for vs in values.values()):
        return None
    if not _pure(fn, qn, _module_defs(module), 0):
        return None  # `acc.append(d * 3)` puts a value of the sources in a parameter's list (adversarial run)
    shown = ", ".join(f"`{n}`" for n in sorted(names))
    return f"{shown} {'is' if len(names) == 1 else 'are'} made inside `{fn.name.value}` by calls that make new " \
           "tensors, after its parameters were bound"


def _fresh(e: cst.BaseExpression, names: set, qn) -> bool:
    if isinstance(e, (cst.Integer, cst.Float)):
        return True
    if isinstance(e, cst.Name):
        return e.value in names
    if isinstance(e, cst.BinaryOperation):
        return _fresh(e.left, names, qn) and _fresh(e.right, names, qn) and not (
            isinstance(e.left, (cst.Integer, cst.Float)) and isinstance(e.right, (cst.Integer, cst.Float)))
    if isinstance(e, cst.UnaryOperation):
        return _fresh(e.expression, names, qn)
    return isinstance(e, cst.Call) and tf_name(e, qn) in _MAKERS


#: builtins that neither store nor call back
_SAFE_BUILTINS = frozenset({"range", "len", "float", "int", "bool", "print", "isinstance", "abs", "min", "max"})


def _module_defs(module: Optional[cst.Module]) -> dict:
    return {st.name.value: st for st in (module.body if module is not None else ()) if isinstance(st, cst.FunctionDef)}


def _pure(fn: cst.FunctionDef, qn, defs: dict, depth: int) -> bool:
    """Nothing in ``fn`` can put a value into an object it was given: no method call but on a TF
    module, no store into an attribute or an item, no `del`, no `global`/`nonlocal`, and every
    call a TF function, a plain builtin, or a module-level def of the same kind (two levels)."""
    for n in descendants(fn.body):
        if isinstance(n, (cst.Global, cst.Nonlocal, cst.Del, cst.Yield, cst.Await)):
            return False
        if isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
            if any(isinstance(x, (cst.Attribute, cst.Subscript)) for t in targets for x in descendants(t)):
                return False
            if isinstance(n, cst.AugAssign):  # `acc += [d]` fills a list it was given, in place
                return False
        if isinstance(n, cst.Call):
            if tf_name(n, qn) is not None:
                continue
            func = n.func
            if isinstance(func, cst.Name) and func.value in _SAFE_BUILTINS and \
                    qnames(func, qn) == {f"builtins.{func.value}"}:  # not a module's own `len`
                continue
            callee = defs.get(func.value) if isinstance(func, cst.Name) else None
            if callee is None or depth >= 2 or callee is fn or not _pure(callee, qn, defs, depth + 1):
                return False
    return True


def stashes(flat: list, first: int, k: int, fresh: set) -> list:
    """Items from the first source on that read a value made from the sources and may keep
    what they make somewhere other than plain local names (program state, an object, a
    callback, a statement's side effect); when one reads only such a value (`h = x * 1.0;
    stash(h)`: an adversarial run), the tape must hold the source's line too."""
    out, made = [], set(fresh)
    for i in range(first, k):
        it = flat[i]
        if it.dead:
            continue
        stmt = it.orig
        plain = isinstance(stmt, cst.SimpleStatementLine) and all(
            isinstance(small, cst.Assign) and all(isinstance(t.target, cst.Name) for t in small.targets)
            for small in stmt.body)
        keeps = not plain or it.kinds - {"tf", "leaf", "noop", "numpy"} or it.fx.writes - it.fx.assigns
        if not it.inert and keeps and touches(it.fx.reads, fresh):
            out.append(i)
        elif not it.inert and keeps and stmt is not None and not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) \
                and touches(it.fx.reads, made):
            out += [i, first]  # a generated line (a hoisted target) keeps nothing
        if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):  # a def makes its values when called
            made |= it.fx.writes if touches(it.fx.reads, made) else set()
    return out
