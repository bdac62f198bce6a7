"""What a name holds where an override block uses it, read in straight-line code.

``_override_values`` joins every binding of a name, which loses what an
expert reads at once in the binary-net idioms::

    def binarize(x):
        x = tf.clip_by_value(x, -1.0, 1.0)      # real from here on
        with g.gradient_override_map({"Sign": "Identity"}):
            return tf.sign(x)                   # Sign, not ComplexAbs + Cast + DivNoNan

Two facts, each only where the proof is plain:

* **the binding in force**: when the block sits in the function's body, or in
  ``with`` and ``if`` bodies in it (no loop), and every binding of the name in
  the function is a plain assignment standing in one of those statement lists,
  the value is the last such assignment that runs before the block (or the
  parameter, when none does).  Anything else (a loop target, ``+=``, a binding
  in a branch off that path or in a closure) falls back to the join;
* **not complex**: a simple statement after that binding that runs before the
  block and evaluates, unconditionally, an ordering comparison on the name
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
    path = _path(values.found, at, scope.function)
    last = None if path is None else _binding_in_force(scope, expr.value, path)
    if last is None:
        return joined
    key, value = last
    if value is None:
        base = values.param(scope, expr.value, 0) if expr.value in scope.params else UNKNOWN_VALUE
    else:
        base = values.of(value, scope)
    if base.kind == BOTTOM:
        return joined
    between = [stmt for k, stmt in _before(path) if k > key]
    if any(_proves_real(stmt, expr.value, values.col) for stmt in between):
        dtypes = _NOT_COMPLEX if base.dtypes is None else base.dtypes - {"complex64"}
        base = Value(base.kind, dtypes, base.ranks, base.origin, base.callers)
    return base


def _index(body, node) -> Optional[int]:
    return next((i for i, stmt in enumerate(body) if stmt is node), None)


def _path(found, node: cst.CSTNode, fn: cst.FunctionDef) -> Optional[list]:
    """``[(statements, index)]`` from ``fn``'s body down to the statement holding ``node``: each
    statement before an index runs before ``node`` does.  None when a loop (or anything but a
    ``with`` or an ``if``) holds ``node`` inside ``fn``: a later statement may then run first."""
    path = []
    cur = node
    while cur is not None:
        parent = found.parent(cur)
        if isinstance(parent, cst.IndentedBlock):
            owner = found.parent(parent)
            path.append((parent.body, _index(parent.body, cur)))
            if owner is fn:
                return list(reversed(path))
            if isinstance(owner, cst.Else):
                owner = found.parent(owner)
            if not isinstance(owner, (cst.With, cst.If)):
                return None
        elif isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.Module)):
            return None
        cur = parent
    return None


def _before(path: list):
    """((level, index), statement) for each statement that runs before the one the path leads to."""
    for level, (body, index) in enumerate(path):
        for i in range(index):
            yield (level, i), body[i]


def _binding_in_force(scope, name: str, path: list) -> Optional[tuple]:
    """((level, index), assigned value) of the binding in force where the path leads; value None:
    the parameter.  None when some binding is not a plain assignment standing in the path's
    statement lists (one in a loop, a branch off the path, a ``+=``, a closure)."""
    from migrator._plugins._override_values import _bound_count

    assigns = scope.assigns.get(name, [])
    if name in scope.globals or _bound_count(scope, name) != len(assigns) or _bound_otherwise(scope.function, name):
        return None
    before = []
    for stmt, value in assigns:
        spot = next(((level, i) for level, (body, _) in enumerate(path) for i in [_index(body, stmt)]
                     if i is not None), None)
        if spot is None or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign):
            return None
        if spot[1] < path[spot[0]][1]:
            before.append((spot, value))  # a binding after the use on the path runs after it (no loop)
    if not before:
        return ((-1, -1), None) if name in scope.params else None
    return max(before, key=lambda b: b[0])


def _proves_real(stmt: cst.CSTNode, name: str, col) -> bool:
    """``stmt`` is a simple statement that always evaluates an op refusing complex on ``name``."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    # a bare annotation (`m: x > 0`) is never evaluated in a function: only an AnnAssign's value is
    return any(_evaluates(small.value if isinstance(small, cst.AnnAssign) else small, name, col)
               for small in stmt.body if isinstance(small, (cst.Assign, cst.Expr, cst.AugAssign))
               or isinstance(small, cst.AnnAssign) and small.value is not None)


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


def _bound_otherwise(fn: cst.FunctionDef, name: str) -> bool:
    """``name`` is bound by a form the assignment counts do not see: an import, a match pattern,
    ``del`` (found by an adversarial run: `from m import x`, `case tf.Tensor() as x`)."""
    found = []

    class V(cst.CSTVisitor):
        def visit_ImportAlias(self, node):
            bound = node.asname.name if node.asname is not None else node.name
            while isinstance(bound, cst.Attribute):
                bound = bound.value
            if isinstance(bound, cst.Name) and bound.value == name:
                found.append(node)

        def visit_MatchAs(self, node):
            if node.name is not None and node.name.value == name:
                found.append(node)

        def visit_MatchStar(self, node):
            if node.name is not None and node.name.value == name:
                found.append(node)

        def visit_MatchMapping(self, node):
            if node.rest is not None and node.rest.value == name:
                found.append(node)

        def visit_Del(self, node):
            found.append(node)

    fn.body.visit(V())
    return bool(found)
