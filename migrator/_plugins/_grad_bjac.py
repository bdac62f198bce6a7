"""When ``GradientTape.batch_jacobian`` may differ from TF1's parallel_for batch_jacobian.

TF1 gave None for a target the sources do not reach; the tape's batch_jacobian gives
zeros.  A rewrite is right only when every op on the way passes a gradient, and the
targets read the sources as values (not only their shape).
"""
from __future__ import annotations

from typing import Optional

from migrator._plugins._dataflow import effects, touches
from migrator._plugins._grad_values import META_ATTRS

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
