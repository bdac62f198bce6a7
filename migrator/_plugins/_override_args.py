"""Call arguments that change which ops a TF function makes, beyond what the op table traced.

The op table (``migrator/data/op_variants.json``) traced each function with default
arguments, per dtype, rank and list length.  Some arguments make other ops
(``a_is_sparse=True``: SparseMatMul; ``softmax(axis=0)``: transposes around the
Softmax) or set attributes the gradient reads (``adjoint_b=True`` sets
``transpose_b``); a one-element ``add_n`` with a name makes an Identity op.
A call that passes one of them is refused (TFG108).  A same-module function the block
calls must be one plain def (not decorated, not defined under an ``if``) for its body to
tell which ops it makes.  Found by an adversarial run.
"""
from __future__ import annotations

import libcst as cst

from migrator._plugins._override_model import Refuse, code
from migrator._plugins._override_tfvalues import PYTHON, TENSOR


#: arguments that change which ops a call makes beyond what the op table traced: (function, argument,
#: the value that keeps the traced ops) (found by an adversarial run)
_OP_CHANGING = {
    ("tensorflow.matmul", "a_is_sparse"): "False", ("tensorflow.matmul", "b_is_sparse"): "False",
    ("tensorflow.matmul", "adjoint_a"): "False", ("tensorflow.matmul", "adjoint_b"): "False",
    ("tensorflow.nn.softmax", "axis"): "-1", ("tensorflow.nn.softmax", "dim"): "-1",
    ("tensorflow.nn.log_softmax", "axis"): "-1", ("tensorflow.nn.log_softmax", "dim"): "-1",
    ("tensorflow.math.softmax", "axis"): "-1", ("tensorflow.math.log_softmax", "axis"): "-1",
}


#: functions whose ops depend on what the op table did not trace (it traced rate 1, rank 4, distinct
#: dtypes): atrous and dilated convolutions wrap Conv2D in SpaceToBatchND/BatchToSpaceND, the
#: pooling of any rank makes MaxPool3D for rank 5, convert_image_dtype makes an Identity for the same
#: dtype and a Cast or Mul otherwise (an adversarial run: each was wrapped as its traced op)
_UNTRACED = {
    ("tensorflow.nn.atrous_conv2d", "rate"): ("1",),
    ("tensorflow.nn.depthwise_conv2d", "rate"): ("None", "[1, 1]", "(1, 1)", "1"),
    ("tensorflow.nn.depthwise_conv2d", "dilations"): ("None", "[1, 1]", "(1, 1)", "1"),
    ("tensorflow.nn.separable_conv2d", "rate"): ("None", "[1, 1]", "(1, 1)", "1"),
}
_POOLING = frozenset({"MaxPool", "MaxPoolV2", "MaxPool3D", "AvgPool", "AvgPool3D", "ExpandDims", "Squeeze",
                      "Reshape", "Transpose"})
_RANK_OR_DTYPE_DEPENDENT = {
    "tensorflow.nn.max_pool_v2": _POOLING, "tensorflow.nn.avg_pool_v2": _POOLING, "tensorflow.nn.pool": _POOLING,
    "tensorflow.image.convert_image_dtype": frozenset({"Identity", "Cast", "Mul", "RealDiv", "Floor", "Sub", "Add",
                                                       "AddV2", "Maximum", "Minimum", "Round", "ClipByValue"}),
}


def op_changing_args(name: str, bound: dict, call: cst.Call, emap=()) -> None:
    if set(_RANK_OR_DTYPE_DEPENDENT.get(name, ())) & set(emap):
        raise Refuse("TFG108", f"`{code(call.func)}` makes other ops for other ranks or dtypes than the op table "
                               "traced; wrap it by hand")
    for (fn, arg), keep in _UNTRACED.items():
        if fn == name and arg in bound and code(bound[arg][1]) not in keep:
            raise Refuse("TFG108", f"`{code(call.func)}(..., {arg}={code(bound[arg][1])})` makes other ops than the "
                                   "op table traced (a dilated convolution); wrap it by hand")
    for (fn, arg), keep in _OP_CHANGING.items():
        if fn == name and arg in bound and code(bound[arg][1]) != keep:
            raise Refuse("TFG108", f"`{code(call.func)}(..., {arg}={code(bound[arg][1])})` makes other ops (or sets "
                                   "other attributes) than the call the migrator can wrap; wrap it by hand")
    if name in ("tensorflow.add_n", "tensorflow.math.add_n") and "name" in bound:
        inputs = bound.get("inputs", (0, None))[1]
        if not isinstance(inputs, (cst.List, cst.Tuple)) or len(inputs.elements) < 2:
            raise Refuse("TFG108", f"`{code(call.func)}` of one tensor with a name makes an Identity op, "
                                   "which the op table does not show; wrap it by hand")


def sole_plain_def(scope_node: cst.CSTNode, d: cst.FunctionDef) -> bool:
    """``d`` is the only def of its name in its scope, directly in the scope's body (not under
    an ``if``/``try``, where which def runs is decided at run time)."""
    body = getattr(scope_node, "body", None)
    stmts = list(getattr(body, "body", body) or [])
    if d not in stmts:
        return False
    count = 0

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, n):
            nonlocal count
            count += n.name.value == d.name.value
            return False

        def visit_ClassDef(self, n):
            return False

    for st in stmts:
        st.visit(V())
    return count == 1


def no_packed_list(expr, value, scope) -> None:
    """A list of tensors given as one tensor input is packed first (``tf.identity([t, u])``); the
    wrapper would take the list as its argument, which custom_gradient flattens (an adversarial run)."""
    shown = expr
    if isinstance(expr, cst.Name):
        bound = scope.lookup_assigns(expr.value) or []
        shown = bound[0][1] if len(bound) == 1 else expr
    if isinstance(shown, (cst.List, cst.Tuple)) and value.kind != PYTHON:
        raise Refuse("TFG108", f"`{code(expr)}` is a Python list holding tensors, packed into one tensor by a "
                               "Pack op first; wrap tf.stack of it by hand")


def surely_not_none(expr: cst.BaseExpression, value) -> bool:
    """An argument that cannot be None: a tensor, or a literal other than ``None``
    (`tf.where(c, x, y)` makes Where instead of Select only when ``x`` and ``y`` are None)."""
    if value.kind == TENSOR:
        return True
    return isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.List, cst.Tuple))
