"""grad_ys that a tape reads as TF1 did: each cotangent one value.

``tf.gradients`` makes one tensor of each item of ``grad_ys``; ``tape.gradient`` flattens
``output_gradients`` with ``tf.nest``, so an item that is a Python list (``[[1., 1., 3.]]``,
``[[1.] * 2 + [3.]]``, ``[[1., 2.] if f else [2., 1.]]``) becomes several numbers, and the
target's cotangent is the first of them, silently (adversarial runs).  So each item must surely
be one value: ``None`` (ones, see ``_grad_watch``), a number, a name every binding of which is
a plain assignment of one value, a TF or NumPy call that returns one array, this module's
function returning one, or arithmetic and conditionals of those; never an attribute, which
any code may set to a list.  A
``grad_ys`` that is not a display must be a TF call (a tensor, or a list of tensors, flattens
as TF1 read it) or a name.
"""
from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from migrator._plugins._grad_values import qnames
from migrator.tfnames import descendants, dotted

#: TF functions that return a list or a nest of tensors, not one tensor
_MANY = frozenset({"unstack", "split", "meshgrid", "gradients", "hessians", "flatten", "dynamic_partition",
                   "unique", "unique_with_counts", "top_k", "while_loop", "cond", "case", "switch_case", "map_fn",
                   "scan", "foldl", "foldr", "py_func", "py_function", "numpy_function", "tuple", "identity_n",
                   "shape_n", "map_structure", "pack_sequence_as", "jacobian", "batch_jacobian", "get_collection",
                   "trainable_variables", "global_variables", "broadcast_gradient_args", "moments"})


def unsure_cotangent(an, og: Optional[cst.BaseExpression], at: cst.CSTNode,
                     values_of: Callable[[str], list]) -> Optional[cst.BaseExpression]:
    """The first part of ``grad_ys`` that may not be one value per target (None: none).
    ``values_of(name)``: what a name may hold at the call (its assignments, default, module
    bindings)."""
    ctx = _Where(an, at, values_of)
    if og is None or isinstance(og, cst.Name):
        return None  # a name: what it is bound to is read where it is bound (`_grad_filechecks`)
    if not isinstance(og, (cst.List, cst.Tuple)):
        whole = isinstance(og, cst.Call) and an.tf_name(og) is not None
        return None if whole or _one(ctx, og) else og
    for el in og.elements:
        if isinstance(el, cst.StarredElement) or not _one(ctx, el.value):
            return el.value
    return None


class _Where:
    """Where the names of an item are looked up: the call's function, then the module; inside
    a helper's `return`, no name at all."""

    def __init__(self, an, at, values_of, names: bool = True) -> None:
        self.an, self.at, self.values_of, self.names = an, at, values_of, names
        fn = an.parents.get(at)
        while fn is not None and not isinstance(fn, cst.FunctionDef):
            fn = an.parents.get(fn)
        self.fn = fn

    def params(self) -> set:
        p = self.fn.params if self.fn is not None else None
        return {x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)} if p else set()


def _one(ctx: _Where, e: cst.BaseExpression, depth: int = 0) -> bool:
    an = ctx.an
    if isinstance(e, (cst.Integer, cst.Float)):
        return True
    if isinstance(e, cst.Name):  # `None` means ones (`_grad_watch`)
        return e.value == "None" or ctx.names and _name_one(ctx, e.value, depth)
    if isinstance(e, cst.UnaryOperation):
        return _one(ctx, e.expression, depth)
    if isinstance(e, cst.BinaryOperation):
        return _one(ctx, e.left, depth) and _one(ctx, e.right, depth)
    if isinstance(e, cst.IfExp):
        return _one(ctx, e.body, depth) and _one(ctx, e.orelse, depth)
    if isinstance(e, cst.Call):
        name = an.tf_name(e)
        if name is not None:
            return name.rsplit(".", 1)[-1] not in _MANY
        if an.call_kind(e) == "numpy":
            return not (isinstance(e.func, cst.Attribute) and e.func.attr.value in (
                "tolist", "split", "array_split", "meshgrid", "nonzero", "where"))
        return _returns_one(ctx, e, depth)
    return False  # an attribute (set anywhere, by any means), an item, a comprehension, ...


def _name_one(ctx: _Where, name: str, depth: int) -> bool:
    """Every binding of ``name`` is a plain assignment of one value (`gy = [1.0] * 2 + [3.0]`,
    `gy = _weights()`, `for gy in ...`, `gy = gy or [...]` are not: adversarial runs); a
    parameter is read at its callers (`_grad_filechecks._list_from_caller`)."""
    if name in ctx.params() and not any(isinstance(n, cst.Assign) and any(
            isinstance(t.target, cst.Name) and t.target.value == name for t in n.targets) for n in descendants(ctx.fn)):
        return True  # read at the callers; a parameter rebound here (`gy = gy or [...]`) is a local too
    if depth > 2:
        return False
    scopes = [n for n in (ctx.fn, ctx.an.module) if n is not None]
    if any(_bound_otherwise(ctx.an, scope, name) for scope in scopes):
        return False
    values = ctx.values_of(name)
    unpacked = any(isinstance(n, cst.Assign) and _unpacks_tensors(ctx.an, n) and any(
        el.value.value == name for el in n.targets[0].target.elements) for scope in scopes for n in descendants(scope))
    return (bool(values) or unpacked) and all(v is not None and _one(ctx, v, depth + 1) for v in values)


def _bound_otherwise(an, scope: cst.CSTNode, name: str) -> bool:
    """``name`` is bound by anything but ``name = value``: a loop, `with`, unpacking (but for
    the tensors of a TF call: `dL_dm, dL_dv = tf.gradients(...)`), an augmented or annotated
    assignment, a walrus, an import, `global`, an exception, `del`."""
    def named(t) -> bool:
        return any(isinstance(x, cst.Name) and x.value == name for x in descendants(t))

    for n in descendants(scope):
        if isinstance(n, (cst.For, cst.CompFor)) and named(n.target) or \
                isinstance(n, (cst.AugAssign, cst.AnnAssign, cst.NamedExpr)) and named(n.target) or \
                isinstance(n, cst.AsName) and named(n.name) or isinstance(n, cst.Del) and named(n.target):
            return True
        if isinstance(n, cst.Assign) and any(not isinstance(t.target, cst.Name) and named(t.target) for t in n.targets) \
                and not _unpacks_tensors(an, n):
            return True
        if isinstance(n, (cst.Global, cst.Nonlocal)) and any(a.name.value == name for a in n.names):
            return True
        if isinstance(n, cst.ImportAlias) and n.asname is None and (dotted(n.name) or "").split(".")[0] == name:
            return True
        if isinstance(n, (cst.FunctionDef, cst.ClassDef)) and n.name.value == name:
            return True
    return False


def _returns_one(ctx: _Where, call: cst.Call, depth: int) -> bool:
    """``make_gy()``: this module's one undecorated function of that name, bound by nothing else,
    every return of which is one value made in it without a name (a TF call, a number):
    ``def _weights(): return [[1., 2., 3.]]``, a decorated one, or one rebound by a lambda is not."""
    an, func = ctx.an, call.func
    fn = an.find.defs.get(func.value) if isinstance(func, cst.Name) else None
    if not isinstance(fn, cst.FunctionDef) or fn.decorators or depth > 1 or qnames(func, an.qn) != {func.value} \
            or func.value in an.find.variables:
        return False
    inner = _Where(an, call, ctx.values_of, names=False)
    returns = [n for n in descendants(fn.body, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) if isinstance(n, cst.Return)]
    return bool(returns) and all(r.value is not None and _one(inner, r.value, depth + 1) for r in returns)


#: TF functions whose result is a flat list of tensors (`tf.while_loop`, `tf.nest.*`, `py_func`
#: may hand back nested lists: an item unpacked from those may be a Python list)
_FLAT = frozenset({"gradients", "hessians", "unstack", "split", "meshgrid", "shape_n", "identity_n", "unique",
                   "unique_with_counts", "top_k", "moments", "dynamic_partition"})


def _unpacks_tensors(an, n: cst.Assign) -> bool:
    """``a, b = tf.gradients(...)``: names unpacked, one level, from a TF call's flat list of tensors."""
    name = an.tf_name(n.value) if isinstance(n.value, cst.Call) else None
    return len(n.targets) == 1 and isinstance(n.targets[0].target, (cst.Tuple, cst.List)) and all(
        isinstance(el.value, cst.Name) for el in n.targets[0].target.elements) and \
        name is not None and name.rsplit(".", 1)[-1] in _FLAT
