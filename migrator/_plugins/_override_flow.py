"""What a name holds where an override block uses it, read in straight-line code.

``_override_values`` joins every binding of a name, which loses what an
expert reads at once in the binary-net idioms::

    def binarize(x):
        x = tf.clip_by_value(x, -1.0, 1.0)      # real from here on
        with g.gradient_override_map({"Sign": "Identity"}):
            return tf.sign(x)                   # Sign, not ComplexAbs + Cast + DivNoNan

Two facts, each only where the proof is plain:

* **the binding in force**: when every binding of the name in the function
  is a plain assignment that is a top-level statement of its body, the value
  at a later top-level statement is the last such assignment before it (or
  the parameter, when none is).  Anything else (a loop target, ``+=``, a
  binding in a nested block or a closure) falls back to the join;
* **not complex**: a top-level statement after that binding and before the
  block that evaluates, unconditionally, an ordering comparison on the name
  (``x > t``) or a TF call that refuses complex inputs (the variants table
  records it raising for complex64) on it, would have raised had the name held
  a complex tensor.  A non-tensor (a numpy array, a number) has no gradient
  path, so what its dtype is does not matter to the override.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from migrator import optable
from migrator._plugins._override_tfvalues import ALL_DTYPES, BOTTOM, UNKNOWN_VALUE, Value

_ORDERING = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)
_NOT_COMPLEX = ALL_DTYPES - {"complex64"}


def value_at(values, expr: cst.BaseExpression, scope, at: cst.CSTNode) -> Value:
    """``values.of(expr, scope)``, sharpened for a plain name used in the statement ``at``."""
    joined = values.of(expr, scope)
    if not isinstance(expr, cst.Name) or scope.function is None or scope.binding_scope(expr.value) is not scope:
        return joined
    body = scope.function.body.body
    top = _top_statement(values.found, at, scope.function.body)
    index = _index(body, top)
    if index is None:
        return joined
    last = _binding_in_force(scope, expr.value, body, index)
    if last is None:
        return joined
    where, value = last
    if where < 0:
        base = values.param(scope, expr.value, 0) if expr.value in scope.params else UNKNOWN_VALUE
    else:
        base = values.of(value, scope)
    if base.kind == BOTTOM:
        return joined
    if any(_proves_real(stmt, expr.value, values.col) for stmt in body[where + 1:index]):
        dtypes = _NOT_COMPLEX if base.dtypes is None else base.dtypes - {"complex64"}
        base = Value(base.kind, dtypes, base.ranks, base.origin, base.callers)
    return base


def _index(body, node) -> Optional[int]:
    return next((i for i, stmt in enumerate(body) if stmt is node), None)


def _top_statement(found, node: cst.CSTNode, block: cst.BaseSuite) -> Optional[cst.CSTNode]:
    while node is not None:
        parent = found.parent(node)
        if parent is block:
            return node
        node = parent
    return None


def _binding_in_force(scope, name: str, body, index: int) -> Optional[tuple]:
    """(statement index, assigned value) of the binding in force at ``body[index]``; index -1: the parameter.

    None when some binding is not a plain top-level assignment."""
    from migrator._plugins._override_values import _bound_count

    assigns = scope.assigns.get(name, [])
    if name in scope.globals or _bound_count(scope, name) != len(assigns):
        return None
    where: list[tuple[int, cst.BaseExpression]] = []
    for stmt, value in assigns:
        at = _index(body, stmt)
        if at is None or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign):
            return None
        where.append((at, value))
    before = [w for w in where if w[0] < index]
    if not before:
        return (-1, None) if name in scope.params else None
    return max(before, key=lambda w: w[0])


def _proves_real(stmt: cst.CSTNode, name: str, col) -> bool:
    """``stmt`` is a simple statement that always evaluates an op refusing complex on ``name``."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    return any(_evaluates(small, name, col) for small in stmt.body
               if isinstance(small, (cst.Assign, cst.AnnAssign, cst.Expr, cst.AugAssign)))


def _is(node, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


def _evaluates(node: cst.CSTNode, name: str, col) -> bool:
    if isinstance(node, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
        return False  # may never run
    if isinstance(node, cst.IfExp):
        return _evaluates(node.test, name, col)
    if isinstance(node, cst.BooleanOperation):
        return _evaluates(node.left, name, col)
    if isinstance(node, cst.Comparison):
        first = node.comparisons[0]  # later links of a chain run only if the first is true
        if isinstance(first.operator, _ORDERING) and (_is(node.left, name) or _is(first.comparator, name)):
            return True
        return _evaluates(node.left, name, col) or _evaluates(first.comparator, name, col)
    if isinstance(node, cst.Call):
        tf_name = col.tf(node)
        if tf_name is not None and "dtype:complex64" in optable.function_variants(tf_name).get("failed", []):
            info = optable.function_info(tf_name) or {}
            first = (info.get("params") or [None])[0]
            for i, arg in enumerate(node.args):
                keyword = arg.keyword.value if arg.keyword else None
                if _is(arg.value, name) and not arg.star and (keyword is None and i == 0 or
                                                               keyword is not None and keyword == first):
                    return True
    return any(_evaluates(child, name, col) for child in node.children if isinstance(child, cst.CSTNode))
