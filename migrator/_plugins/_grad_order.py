"""Where a hoisted target may move: what a statement evaluates before a gradient call.

A ``tf.gradients(expr, x)`` whose targets are an expression is rewritten as
``expr`` computed under the tape, on a line of its own before the statement.
That moves ``expr`` ahead of everything the statement evaluated before the
call, and makes it run whenever the statement runs.  Both are safe only when
the statement evaluates nothing with an effect before the call, and the call
runs whenever the statement does.  Found by an adversarial run::

    return next(it), tf.gradients(x * next(it), x)[0]   # the two next() calls swap
    elif tf.gradients(ws[0] * x, x)[0] is None:         # ws[0] now runs before the if
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from migrator._plugins._grad_values import qnames
from migrator.tfnames import dotted

#: builtins that compute a value from their arguments and change nothing
_PURE_CALLS = frozenset({"len", "isinstance", "float", "int", "bool", "str", "tuple", "list", "zip", "range",
                         "enumerate", "sorted", "min", "max", "abs", "round", "sum", "dict", "set"})


def order_problem(parent: cst.CSTNode, child: cst.CSTNode, grandparent: Optional[cst.CSTNode],
                  modules: frozenset = frozenset(), qn=None) -> Optional[str]:
    """Why ``child``'s value (holding the call) cannot be computed ahead of ``parent``, or None.
    ``modules``: names the file imports (``tf.float32`` runs no code); ``qn``: qualified names,
    to tell the builtin ``sum`` from a module's own (no ``qn``: no call is pure)."""
    if isinstance(parent, cst.If) and child is parent.test and isinstance(grandparent, cst.If) \
            and grandparent.orelse is parent:
        return "the call is in an `elif` test, which runs only when the branches before it do not"
    if isinstance(parent, cst.Assert) and child is parent.msg:
        return "the call is in an assert message, which runs only when the assertion fails"
    for expr in evaluated_before(parent, child):
        if not _pure(expr, modules, qn):
            return f"`{_code(expr)}` runs before the call in its statement and may have an effect"
    return None


def evaluated_before(parent: cst.CSTNode, child: cst.CSTNode) -> list:
    """The parts of ``parent`` Python evaluates before ``child``."""
    if isinstance(parent, (cst.Tuple, cst.List, cst.Set)):
        out = []
        for el in parent.elements:
            if el is child or el.value is child:
                return out
            out.append(el.value)
        return out
    if isinstance(parent, (cst.Element, cst.StarredElement, cst.Arg)):
        return []
    if isinstance(parent, cst.DictElement):
        return [parent.key] if child is parent.value else []
    if isinstance(parent, cst.Dict):
        out = []
        for el in parent.elements:
            parts = [el.key, el.value] if isinstance(el, cst.DictElement) else [el.value]
            for part in parts:
                if part is child or el is child:
                    return out
                out.append(part)
        return out
    if isinstance(parent, cst.Call):
        # looking up `result.write` runs no code worth reordering; a computed callee (`f()(...)`) may
        out = [] if dotted(parent.func) is not None else [parent.func]
        if child is parent.func:
            return []
        for arg in parent.args:
            if arg is child or arg.value is child:
                return out
            out.append(arg.value)
        return out
    if isinstance(parent, cst.BinaryOperation):
        return [parent.left] if child is parent.right else []
    if isinstance(parent, cst.Comparison):
        out = [parent.left]
        for comp in parent.comparisons:
            if comp is child or comp.comparator is child:
                return out
            out.append(comp.comparator)
        return []
    if isinstance(parent, cst.Subscript):
        return [] if child is parent.value else [parent.value]
    if isinstance(parent, cst.AugAssign):
        return [parent.target] if child is parent.value else []  # `x[i()] += ...`: the target runs first
    if isinstance(parent, cst.With):
        out = []
        for item in parent.items:
            if item is child or item.item is child:
                return out
            out.append(item.item)
        return []  # the call is in the body: the target is hoisted inside the with
    return []


def _pure(expr: cst.CSTNode, modules: frozenset = frozenset(), qn=None) -> bool:
    """Names, attributes of imported modules, literals and operators on them: nothing to reorder."""
    bad = []

    class V(cst.CSTVisitor):
        def visit_Call(self, node):
            if not _pure_call(node, qn):
                bad.append(node)

        def visit_NamedExpr(self, node):
            bad.append(node)

        def visit_Yield(self, node):
            bad.append(node)

        def visit_Await(self, node):
            bad.append(node)

        def visit_Lambda(self, node):
            for param in node.params.params + node.params.kwonly_params:
                if param.default is not None:
                    param.default.visit(self)  # defaults run when the lambda is made
            return False  # its body runs only when it is called

        def visit_Attribute(self, node):
            if not (isinstance(node.value, cst.Name) and node.value.value in modules) and \
                    node.attr.value not in ("shape", "dtype", "ndim"):
                bad.append(node)  # a property may run code (found by an adversarial run)

    expr.visit(V())
    return not bad


#: of those, the ones that iterate their argument (running a generator's code, or `key=`)
_ITERATING = frozenset({"tuple", "list", "sorted", "min", "max", "sum", "dict", "set"})


def _pure_call(node: cst.Call, qn) -> bool:
    """The builtin itself (not a module's own `sum`: an adversarial run), with no keyword (`key=`
    runs a function), iterating nothing but a display (`list(gen)` runs the generator's body)."""
    func = node.func
    if not isinstance(func, cst.Name) or func.value not in _PURE_CALLS or qn is None or \
            qnames(func, qn) != {f"builtins.{func.value}"} or any(a.keyword is not None or a.star for a in node.args):
        return False
    return func.value not in _ITERATING or all(isinstance(a.value, (cst.List, cst.Tuple, cst.Set, cst.SimpleString,
                                                                     cst.Integer, cst.Float)) for a in node.args)


def _code(node: cst.CSTNode) -> str:
    text = cst.Module(body=[]).code_for_node(node)
    return text if len(text) <= 40 else text[:37] + "..."


def none_tested(call: cst.Call, parents) -> bool:
    """The function tests the call's result against None (``if bj is None:``, ``if not bj``).

    ``batch_jacobian`` of an unconnected input is None in TF1 (parallel_for) and zeros from
    ``GradientTape.batch_jacobian``: such a test silently changes branch (an adversarial run)."""
    names, cur, fn = set(), call, None
    while cur is not None:
        parent = parents.get(cur)
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and \
                isinstance(parent.targets[0].target, cst.Name):
            names.add(parent.targets[0].target.value)
        if isinstance(parent, (cst.FunctionDef, cst.Module)):
            fn = parent
            break
        cur = parent
    if fn is None:
        return False
    hits = []

    def is_result(node) -> bool:
        return node is call or isinstance(node, cst.Name) and node.value in names

    class V(cst.CSTVisitor):
        def visit_Comparison(self, node):
            sides = [node.left] + [c.comparator for c in node.comparisons]
            if any(is_result(s) for s in sides) and any(isinstance(s, cst.Name) and s.value == "None" for s in sides):
                hits.append(node)

        def visit_If(self, node):
            if is_result(node.test):
                hits.append(node)

        def visit_UnaryOperation(self, node):
            if isinstance(node.operator, cst.Not) and is_result(node.expression):
                hits.append(node)

        def visit_BooleanOperation(self, node):
            if is_result(node.left) or is_result(node.right):
                hits.append(node)

        def visit_IfExp(self, node):
            if is_result(node.test):
                hits.append(node)

    fn.visit(V())
    return bool(hits)
