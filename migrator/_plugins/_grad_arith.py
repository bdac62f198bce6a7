"""What arithmetic of names may be: a new tensor, or Python lists joined or repeated.

``params = ws + bs`` joins the caller's lists and ``parts * k`` repeats one: the tensors in the
result are the very ones the lists held, not new ones, and a gradient with respect to the
result is a list.  Only an operand that is surely no int (and no list) rules that out.
"""
from __future__ import annotations

import libcst as cst

from migrator.tfnames import dotted


def _not_an_int(e: cst.BaseExpression, tensor_name=None) -> bool:
    """An operand that is surely no int, so no list is repeated by it: a float literal, a TF call,
    a name known to hold a tensor, ``-x`` of one, arithmetic with one, a true division.  Not
    ``+1``, ``-(-2)``, ``(n - 1)``, ``4 // 4`` or ``2 ** 0`` (an adversarial run: `parts * (n - 1)`
    was taken for a new tensor)."""
    if isinstance(e, (cst.Float, cst.Imaginary)):
        return True
    if isinstance(e, cst.UnaryOperation):
        return not isinstance(e.operator, cst.Not) and _not_an_int(e.expression, tensor_name)
    if isinstance(e, cst.BinaryOperation):
        return isinstance(e.operator, cst.Divide) or any(_not_an_int(x, tensor_name) for x in (e.left, e.right))
    if isinstance(e, cst.Name):
        return tensor_name is not None and bool(tensor_name(e.value))
    return isinstance(e, cst.Call) and dotted(e.func) is not None and dotted(e.func).split(".")[0] in ("tf", "tensorflow")


def _in_a_difference(op: cst.BinaryOperation) -> bool:
    """One side of ``a + b`` is a name that the other side also subtracts, divides (any operator
    but ``+`` and ``*``), which no list survives: so that side is no list, and the sum joins none."""
    for name, other in ((op.left, op.right), (op.right, op.left)):
        todo = [other] if isinstance(name, cst.Name) else []
        while todo:
            e = todo.pop()
            if isinstance(e, cst.UnaryOperation):
                todo.append(e.expression)
            elif isinstance(e, cst.BinaryOperation):
                if not isinstance(e.operator, (cst.Add, cst.Multiply)) and any(
                        isinstance(x, cst.Name) and x.value == name.value for x in (e.left, e.right)):
                    return True
                todo += [e.left, e.right]
    return False


def may_be_sequence_op(op: cst.BinaryOperation, tensor_name=None) -> bool:
    """``a + b`` or ``a * n`` that may join or repeat Python lists, handing back the very tensors
    they hold (an adversarial run: `params = ws + bs` was taken for a new tensor).  Not when an
    operand is a float literal or a TF call, which no list takes."""
    if not isinstance(op.operator, (cst.Add, cst.Multiply)):
        return False
    sides = (op.left, op.right)
    if any(_not_an_int(e, tensor_name) for e in sides):
        return False  # a float or a tensor on one side: `real + alpha * (fake - real)`, `alpha` a tensor
    if isinstance(op.operator, cst.Add) and _in_a_difference(op):
        return False  # `real + alpha * (fake - real)`: were `real` a list, `fake - real` would raise
    if isinstance(op.operator, cst.Add):  # a list joins only a list: `-b`, `b - c` are none
        return not any(isinstance(e, (cst.Integer, cst.UnaryOperation)) or isinstance(e, cst.BinaryOperation)
                       and not isinstance(e.operator, (cst.Add, cst.Multiply)) for e in sides)
    # `ws * 2` repeats a list, and so does `parts * k` with `k = 2` (an adversarial run: two names
    # were taken for a product of tensors); a side known to be a tensor above rules that out
    return not any(isinstance(e, (cst.Float, cst.Imaginary)) for e in sides)
