"""When ``GradientTape.batch_jacobian`` may differ from TF1's parallel_for batch_jacobian.

TF1 gave None for a target the sources do not reach; the tape's batch_jacobian gives
zeros.  A rewrite is right only when every op on the way passes a gradient, and the
targets read the sources as values (not only their shape).
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from migrator._plugins._dataflow import effects, touches
from migrator._plugins._grad_values import META_ATTRS
from migrator.tfnames import descendants

#: TF functions whose ops always pass a gradient for float inputs: a batch jacobian whose slice
#: calls anything else may be unconnected (a list of the cuts missed rint, *_like, to_float: an
#: adversarial run)
#: (not `Variable`/`get_variable`: a variable made from the source cuts the gradient; TF1 gave None,
#: the tape zeros -- an adversarial run)
CONNECTED = frozenset({
    "matmul", "tanh", "sigmoid", "exp", "log", "log1p", "sin", "cos", "square", "sqrt", "rsqrt", "reciprocal",
    "softplus", "elu", "selu", "softmax", "log_softmax", "reduce_sum", "reduce_mean", "reduce_prod", "reshape",
    "transpose", "concat", "stack", "expand_dims", "squeeze", "tile", "einsum", "tensordot", "add", "subtract",
    "multiply", "divide", "truediv", "add_n", "negative", "pow", "identity", "constant", "ones", "zeros", "eye",
    "range", "shape", "random_normal", "random_uniform", "normal", "uniform",
    "convert_to_tensor", "conv2d", "dense", "bias_add", "l2_normalize", "batch_matmul", "linalg"})



#: calls in ``CONNECTED`` that pass no gradient to their arguments: harmless on constants,
#: a cut when they read a source (`tf.ones(tf.shape(x))`)
_OF_SHAPE = frozenset({"shape", "ones", "zeros", "eye", "range", "constant"})


def gradient_cut(an, nodes: list, code, keys: set) -> Optional[str]:
    """A call in the slice whose op may pass no gradient (not in ``CONNECTED``, a shape-only
    call of a source, or project code)."""
    for node in nodes:
        for call in an.calls_in(node):
            name = an.tf_name(call)
            if name is None and an.call_kind(call) == "project":
                return code(call.func)
            leaf = name.rsplit(".", 1)[-1] if name is not None else None
            if name is not None and leaf not in CONNECTED:
                return code(call.func)
            if leaf in _OF_SHAPE and touches(effects(call).data, keys):
                return code(call.func)
    return None


def value_reads(reads: set) -> set:
    """Reads that may carry a gradient: not ``x.shape``, ``x.dtype``, ``x.get_shape`` (an
    adversarial run: a batch jacobian of `tf.reshape(w, [x.shape[0], 2])` was None in TF1)."""
    return {r for r in reads if "." not in r or r.rsplit(".", 1)[1] not in META_ATTRS | {"get_shape"}}


#: TF functions whose result has the rank of their first argument
_SAME_RANK = frozenset({"tanh", "sigmoid", "exp", "log", "log1p", "sin", "cos", "square", "sqrt", "rsqrt",
                        "reciprocal", "softplus", "elu", "selu", "relu", "relu6", "leaky_relu", "negative", "abs",
                        "identity", "softmax", "log_softmax", "l2_normalize", "bias_add", "stop_gradient"})
#: ... of the broadcast of their arguments
_BROADCAST = frozenset({"add", "subtract", "multiply", "divide", "truediv", "maximum", "minimum", "pow"})
#: ... the length of their shape argument (its position)
_SHAPED = {"zeros": 0, "ones": 0, "random_normal": 0, "random_uniform": 0, "normal": 0, "uniform": 0,
           "truncated_normal": 0, "fill": 0, "placeholder": 1, "reshape": 1}


def min_rank(an, expr, binding, depth: int = 0) -> int:
    """A lower bound on the rank of ``expr`` the source shows (0: unknown).  ``binding(name)``:
    the value a name is bound to there, or None.  For ``batch_jacobian``: the tape's raises on
    rank 1, where TF1's flattened it (an adversarial run)."""
    if depth > 8 or expr is None:
        return 0
    if isinstance(expr, cst.Name):
        return min_rank(an, binding(expr.value), binding, depth + 1)
    if isinstance(expr, (cst.List, cst.Tuple)):
        inner = [min_rank(an, el.value, binding, depth + 1) if isinstance(el.value, (cst.List, cst.Tuple)) else 0
                 for el in expr.elements]
        return 1 + (min(inner) if inner else 0)
    if isinstance(expr, cst.UnaryOperation):
        return min_rank(an, expr.expression, binding, depth + 1)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.MatrixMultiply):
        return 2  # as tf.matmul
    if isinstance(expr, cst.BinaryOperation):
        return max(min_rank(an, expr.left, binding, depth + 1), min_rank(an, expr.right, binding, depth + 1))
    if not isinstance(expr, cst.Call) or an.call_kind(expr) not in ("tf", "leaf"):
        return 0
    leaf = (an.tf_name(expr) or "").rsplit(".", 1)[-1]
    args = [a.value for a in expr.args if a.keyword is None]
    kw = {a.keyword.value: a.value for a in expr.args if a.keyword is not None}
    if leaf in ("matmul", "batch_matmul"):
        return 2
    if leaf in ("constant", "convert_to_tensor") and args:
        return min_rank(an, args[0], binding, depth + 1)
    if leaf in _SAME_RANK and args:
        return min_rank(an, args[0], binding, depth + 1)
    if leaf in _BROADCAST:
        return max([min_rank(an, a, binding, depth + 1) for a in args] or [0])
    if leaf in _SHAPED:
        shape = kw.get("shape", args[_SHAPED[leaf]] if len(args) > _SHAPED[leaf] else None)
        return len(shape.elements) if isinstance(shape, (cst.List, cst.Tuple)) else 0
    return 0


def check_ranks(prover, c, k: int) -> None:
    """GradientTape.batch_jacobian raises on a rank-1 target or source, which TF1's took: an
    assumption unless the source shows both have rank 2 or more."""
    def binding(name: str):
        j = prover._bind_at(name, k)
        return prover._binding_value(j, name) if j is not None else None

    low = [e for e in (c.ys, c.xs) if min_rank(prover.an, e, binding) < 2 and not _matmul_operand(prover, e, k)]
    if low:
        prover._assume(c, f"`{prover._code(low[0])}` has rank 2 or more (GradientTape.batch_jacobian raises on "
                          "rank 1, which TF1's batch_jacobian took)", prover._code(low[0]))
    else:
        c.proof.append("the target and the source have rank 2 or more, as GradientTape.batch_jacobian needs")


def _matmul_operand(prover, expr, k: int) -> bool:
    """``expr`` is a name that a line before the call, after its last binding, hands to
    ``tf.matmul`` or ``@``: TF1 raises there on a rank below 2, so where the call runs the rank is
    2 or more (a held-out program: `y = tf.tanh(tf.matmul(x, W))` before `batch_jacobian(y, x)`)."""
    if not isinstance(expr, cst.Name):
        return False
    j = prover._bind_at(expr.value, k)
    for i in range(0 if j is None else j + 1, k):
        node = prover.flat[i].orig
        if not isinstance(node, cst.SimpleStatementLine):
            continue  # a compound statement may not run it
        for n in descendants(node, (cst.Lambda, cst.FunctionDef, cst.ListComp, cst.SetComp, cst.DictComp,
                                    cst.GeneratorExp, cst.IfExp, cst.BooleanOperation)):
            operands = ([a.value for a in n.args[:2] if a.keyword is None] if isinstance(n, cst.Call) and (
                prover.an.tf_name(n) or "").rsplit(".", 1)[-1] == "matmul" else
                [n.left, n.right] if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.MatrixMultiply)
                else [])
            if any(isinstance(o, cst.Name) and o.value == expr.value for o in operands):
                return True
    return False
