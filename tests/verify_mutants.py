"""Mutation operators for the verifier's mutation test (libcst, test-only).

Each operator takes the source of a correct migration and returns the
mutated source, or None when it does not apply:

* ``negate``: negate what every ``tf.custom_gradient`` grad function returns;
* ``scale2``: multiply it by 2;
* ``drop_output_gradients``: remove ``output_gradients=`` from tape calls;
* ``swap_grads``: swap the first two non-None gradients a grad function returns.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst


def _is_custom_gradient(dec: cst.Decorator) -> bool:
    node = dec.decorator
    if isinstance(node, cst.Call):
        node = node.func
    if isinstance(node, cst.Attribute):
        return node.attr.value == "custom_gradient"
    return isinstance(node, cst.Name) and node.value == "custom_gradient"


def _is_none(node) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _wrap(expr: cst.BaseExpression, how: str) -> cst.BaseExpression:
    if _is_none(expr):
        return expr
    if isinstance(expr, (cst.Tuple, cst.List)):
        return expr.with_changes(elements=[e.with_changes(value=_wrap(e.value, how)) for e in expr.elements])
    par = expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    if how == "negate":
        return cst.UnaryOperation(operator=cst.Minus(), expression=par)
    return cst.BinaryOperation(left=cst.Float("2.0"), operator=cst.Multiply(), right=par)


def _swap(expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    if not isinstance(expr, (cst.Tuple, cst.List)):
        return None
    elems = list(expr.elements)
    idx = [i for i, e in enumerate(elems) if not _is_none(e.value)]
    if len(idx) < 2:
        return None
    i, j = idx[0], idx[1]
    a, b = elems[i].value, elems[j].value
    if a.deep_equals(b):
        return None
    elems[i] = elems[i].with_changes(value=b)
    elems[j] = elems[j].with_changes(value=a)
    return expr.with_changes(elements=elems)


class _GradFnMutator(cst.CSTTransformer):
    """Rewrites the grad functions of @custom_gradient functions."""

    def __init__(self, how: str):
        self.how = how
        self.changed = False
        self._grad_names = []  # stack: names of grad fns for each custom_gradient function
        self._in_grad = []

    def _mutate(self, expr):
        if self.how == "swap":
            new = _swap(expr)
            if new is None:
                return expr
        else:
            if _is_none(expr):
                return expr
            new = _wrap(expr, self.how)
        self.changed = True
        return new

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if any(_is_custom_gradient(d) for d in node.decorators):
            names = set()
            for stmt in node.body.body:
                for ret in _returns(stmt):
                    if isinstance(ret.value, cst.Tuple) and len(ret.value.elements) == 2:
                        g = ret.value.elements[1].value
                        if isinstance(g, cst.Name):
                            names.add(g.value)
            self._grad_names.append(names)
            self._in_grad.append(False)
        elif self._grad_names and node.name.value in self._grad_names[-1]:
            self._in_grad.append(True)
        else:
            self._in_grad.append(self._in_grad[-1] if self._in_grad else False)
        return True

    def leave_FunctionDef(self, original, updated):
        self._in_grad.pop()
        if any(_is_custom_gradient(d) for d in original.decorators):
            self._grad_names.pop()
            updated = updated.visit(_LambdaGradMutator(self))
        return updated

    def leave_Return(self, original, updated):
        if self._in_grad and self._in_grad[-1] and updated.value is not None:
            return updated.with_changes(value=self._mutate(updated.value))
        return updated


class _LambdaGradMutator(cst.CSTTransformer):
    """``return y, lambda dy: ...`` in a custom_gradient function body."""

    def __init__(self, outer: _GradFnMutator):
        self.outer = outer
        self.depth = 0

    def visit_FunctionDef(self, node):
        self.depth += 1
        return self.depth == 1

    def leave_FunctionDef(self, original, updated):
        self.depth -= 1
        return updated

    def leave_Return(self, original, updated):
        v = updated.value
        if self.depth == 1 and isinstance(v, cst.Tuple) and len(v.elements) == 2 \
                and isinstance(v.elements[1].value, cst.Lambda):
            lam = v.elements[1].value
            lam = lam.with_changes(body=self.outer._mutate(lam.body))
            elems = [v.elements[0], v.elements[1].with_changes(value=lam)]
            return updated.with_changes(value=v.with_changes(elements=elems))
        return updated


def _returns(stmt):
    if isinstance(stmt, cst.SimpleStatementLine):
        return [s for s in stmt.body if isinstance(s, cst.Return)]
    return []


class _DropOutputGradients(cst.CSTTransformer):
    def __init__(self):
        self.changed = False

    def leave_Call(self, original, updated):
        args = [a for a in updated.args if not (a.keyword is not None and a.keyword.value == "output_gradients")]
        if len(args) != len(updated.args):
            self.changed = True
            if args:
                args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(args=args)
        return updated


def mutate(source: str, operator: str) -> Optional[str]:
    module = cst.parse_module(source)
    if operator == "drop_output_gradients":
        t = _DropOutputGradients()
    else:
        t = _GradFnMutator({"negate": "negate", "scale2": "scale2", "swap_grads": "swap"}[operator])
    new = module.visit(t)
    if not t.changed or new.code == source:
        return None
    return new.code


OPERATORS = ("negate", "scale2", "drop_output_gradients", "swap_grads")
