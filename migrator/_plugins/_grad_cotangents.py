"""grad_ys that a tape reads as TF1 did: each cotangent one value.

``tf.gradients`` makes one tensor of each item of ``grad_ys``; ``tape.gradient`` flattens
``output_gradients`` with ``tf.nest``, so an item that is a Python list (``[[1., 1., 3.]]``,
``[[1.] * 2 + [3.]]``, ``[[1., 2.] if f else [2., 1.]]``) becomes several numbers, and the
target's cotangent is the first of them, silently (adversarial runs).  So each item must surely
be one value: ``None`` (ones, see ``_grad_watch``), a number, a name no binding makes a list,
a TF or NumPy call that returns one array, or arithmetic and conditionals of those.  A
``grad_ys`` that is not a display must be a TF call (a tensor, or a list of tensors, flattens
as TF1 read it) or a name.
"""
from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from migrator._plugins._grad_values import qnames
from migrator.tfnames import descendants

#: TF functions that return a list or a nest of tensors, not one tensor
_MANY = frozenset({"unstack", "split", "meshgrid", "gradients", "hessians", "flatten", "dynamic_partition",
                   "unique", "unique_with_counts", "top_k", "while_loop", "cond", "case", "switch_case", "map_fn",
                   "scan", "foldl", "foldr", "py_func", "py_function", "numpy_function", "tuple", "identity_n",
                   "shape_n", "map_structure", "pack_sequence_as", "jacobian", "batch_jacobian", "get_collection",
                   "trainable_variables", "global_variables", "broadcast_gradient_args", "moments"})


def unsure_cotangent(an, og: Optional[cst.BaseExpression],
                     python_list: Callable[[cst.BaseExpression], bool]) -> Optional[cst.BaseExpression]:
    """The first part of ``grad_ys`` that may not be one value per target (None: none)."""
    if og is None or isinstance(og, cst.Name):
        return None  # a name: what it is bound to is read where it is bound (`_grad_filechecks`)
    if not isinstance(og, (cst.List, cst.Tuple)):
        whole = isinstance(og, cst.Call) and an.tf_name(og) is not None
        return None if whole or _one(an, og, python_list) else og
    for el in og.elements:
        if isinstance(el, cst.StarredElement) or not _one(an, el.value, python_list):
            return el.value
    return None


def _one(an, e: cst.BaseExpression, python_list, depth: int = 0) -> bool:
    if isinstance(e, (cst.Integer, cst.Float)):
        return True
    if isinstance(e, cst.Name):
        return not python_list(e)
    if isinstance(e, cst.Attribute):
        return _attribute_one(an, e, python_list, depth)
    if isinstance(e, cst.UnaryOperation):
        return _one(an, e.expression, python_list, depth)
    if isinstance(e, cst.BinaryOperation):
        return _one(an, e.left, python_list, depth) and _one(an, e.right, python_list, depth)
    if isinstance(e, cst.IfExp):
        return _one(an, e.body, python_list, depth) and _one(an, e.orelse, python_list, depth)
    if isinstance(e, cst.Call):
        name = an.tf_name(e)
        if name is not None:
            return name.rsplit(".", 1)[-1] not in _MANY
        if an.call_kind(e) == "numpy":
            return not (isinstance(e.func, cst.Attribute) and e.func.attr.value in (
                "tolist", "split", "array_split", "meshgrid", "nonzero", "where"))
        return _returns_one(an, e, python_list, depth)
    return False


def _returns_one(an, call: cst.Call, python_list, depth: int = 0) -> bool:
    """``make_gy()``: this module's one function of that name, every return of which is one value
    made in it (a TF call, a number), not a list (``def _weights(): return [[1., 2., 3.]]``)."""
    func = call.func
    fn = an.find.defs.get(func.value) if isinstance(func, cst.Name) else None
    if fn is None or depth > 1 or qnames(func, an.qn) != {func.value}:
        return False
    returns = [n for n in descendants(fn.body, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) if isinstance(n, cst.Return)]
    return bool(returns) and all(
        r.value is not None and not isinstance(r.value, (cst.Name, cst.Attribute)) and _one(an, r.value, python_list,
                                                                                          depth + 1)
        for r in returns)


def _attribute_one(an, e: cst.Attribute, python_list, depth: int) -> bool:
    """``self.dy``: every assignment to an attribute of that name in the module is one value
    (``self.dy = tf.placeholder(...)``); ``self.weights = [[1., 2., 3.]]`` is not (an
    adversarial run), nor is an attribute this module never sets."""
    attr = e.attr.value
    values = [n.value for n in descendants(an.module) if isinstance(n, (cst.Assign, cst.AnnAssign)) and any(
        isinstance(t, cst.Attribute) and t.attr.value == attr
        for t in ([x.target for x in n.targets] if isinstance(n, cst.Assign) else [n.target]))]
    return bool(values) and depth < 2 and all(v is not None and not isinstance(v, (cst.Name, cst.Attribute)) and
                                              _one(an, v, python_list, depth + 1) for v in values)
