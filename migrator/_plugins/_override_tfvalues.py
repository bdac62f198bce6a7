"""Values of TF calls: what ``tf.constant``, ``tf.placeholder``, ``tf.cast``... return.

The lattice (:class:`Value`) and the result of a TF call given its arguments,
shared by the two readers in ``_override_values`` (libcst for the file being
rewritten, ``ast`` for callers in other files).

Dtypes are tracked by class representative: ``int32`` stands for every
integer type, ``complex64`` for both complex types, as in the variants table.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Optional

from migrator import optable

TENSOR, PYTHON, UNKNOWN, BOTTOM = "tensor", "python", "unknown", "bottom"
#: dtypes a gradient can flow through (an integer or bool path gives None in TF1 and TF2)
DIFFERENTIABLE = frozenset({"float16", "float32", "float64", "bfloat16", "complex64"})
ALL_DTYPES = DIFFERENTIABLE | {"int32", "bool"}
UNKNOWN_RANK = -1  # the graph does not know the rank statically (placeholder without shape)

_DTYPE_NAMES = {
    "float16": "float16", "half": "float16", "float32": "float32", "float": "float32", "float64": "float64",
    "double": "float64", "bfloat16": "bfloat16", "complex64": "complex64", "complex128": "complex64",
    "int8": "int32", "int16": "int32", "int32": "int32", "int64": "int32", "uint8": "int32", "uint16": "int32",
    "uint32": "int32", "uint64": "int32", "bool": "bool",
}  # fmt: skip


@dataclass(frozen=True)
class Value:
    kind: str
    dtypes: Optional[frozenset] = None  # None: any dtype
    ranks: Optional[frozenset] = None  # None: any static rank
    origin: frozenset = field(default_factory=frozenset)  # "file:line" the facts come from
    #: the facts hold for what the project's callers pass, not for every caller
    callers: bool = False

    def join(self, other: "Value") -> "Value":
        if self.kind == BOTTOM:
            return other
        if other.kind == BOTTOM:
            return self
        kind = self.kind if self.kind == other.kind else UNKNOWN
        dtypes = None if self.dtypes is None or other.dtypes is None else self.dtypes | other.dtypes
        ranks = None if self.ranks is None or other.ranks is None else self.ranks | other.ranks
        return Value(kind, dtypes, ranks, self.origin | other.origin, self.callers or other.callers)

    def with_origin(self, where: str) -> "Value":
        return Value(self.kind, self.dtypes, self.ranks, self.origin | {where}, self.callers)


BOTTOM_VALUE = Value(BOTTOM)
UNKNOWN_VALUE = Value(UNKNOWN)
PY = Value(PYTHON)


def tensor(dtypes=None, ranks=None) -> Value:
    return Value(TENSOR, frozenset(dtypes) if dtypes is not None else None,
                 frozenset(ranks) if ranks is not None else None)


def dtype_name(text: str) -> Optional[str]:
    """``tf.float32`` / ``"float32"`` / ``tf.dtypes.float32`` / ``float`` -> the class representative."""
    text = text.strip()
    if not re.fullmatch(r"[\w.]+|'\w+'|\"\w+\"", text):
        return None  # `tf.complex64 if C else tf.float32`: not one dtype (an adversarial run read the last)
    if text[:1] in "'\"" and text[-1:] == text[:1]:
        return _DTYPE_NAMES.get(text[1:-1])
    if "." in text:
        return _DTYPE_NAMES.get(text.rsplit(".", 1)[-1])
    return {"float": "float32", "int": "int32", "bool": "bool"}.get(text)


def max_rank(ranks: list[Optional[frozenset]]) -> Optional[frozenset]:
    """Static rank after broadcasting: the larger rank; unknown if any is unknown."""
    if any(r is None for r in ranks):
        return None
    if not ranks:
        return frozenset({0})
    if any(UNKNOWN_RANK in r for r in ranks):  # type: ignore[operator]
        return frozenset({UNKNOWN_RANK})
    return frozenset({max(max(r) for r in ranks if r)}) if all(len(r) == 1 for r in ranks) else None  # type: ignore[arg-type]


# --------------------------------------------------------- TF call results ---


class View:
    """The arguments of one call, for the handlers below (libcst or ast)."""

    def __init__(self, args: list[tuple[Optional[str], object]], ev: Callable, literal: Callable, text: Callable):
        self.args, self.ev, self.literal, self.text = args, ev, literal, text

    def get(self, index: Optional[int], name: str):
        for kw, node in self.args:
            if kw == name:
                return node
        positional = [node for kw, node in self.args if kw is None]
        return positional[index] if index is not None and index < len(positional) else None

    def dtype(self, index: Optional[int], name: str, default: Optional[str] = None) -> Optional[frozenset]:
        node = self.get(index, name)
        if node is None:
            return frozenset({default}) if default else None
        d = dtype_name(self.text(node))
        return frozenset({d}) if d else ALL_DTYPES  # given, but not one the source shows: any

    def shape_rank(self, index: Optional[int], name: str) -> Optional[frozenset]:
        node = self.get(index, name)
        if node is None:
            return None
        lit = self.literal(node)
        if isinstance(lit, (list, tuple)):
            return frozenset({len(lit)})
        if lit is None and self.text(node) == "None":
            return frozenset({UNKNOWN_RANK})
        return None


def _nesting(lit) -> int:
    depth = 0
    while isinstance(lit, (list, tuple)) and lit:
        depth += 1
        lit = lit[0]
    return depth + (0 if not isinstance(lit, (list, tuple)) else 1)


def _literal_dtype(lit) -> Optional[str]:
    flat = [lit]
    while flat and isinstance(flat[0], (list, tuple)):
        flat = [x for item in flat for x in item]
    if not flat:
        return "float32"
    if all(isinstance(x, bool) for x in flat):
        return "bool"
    if all(isinstance(x, int) and not isinstance(x, bool) for x in flat):
        return "int32"
    if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in flat):
        return "float32"
    return None


def _constant(v: View) -> Value:
    value = v.get(0, "value")
    lit = v.literal(value) if value is not None else None
    dtypes = v.dtype(1, "dtype")
    if dtypes is None and lit is not None:
        d = _literal_dtype(lit)
        dtypes = frozenset({d}) if d else None
    ranks = v.shape_rank(2, "shape")
    if ranks is None and lit is not None:
        ranks = frozenset({_nesting(lit)})
    return tensor(dtypes, ranks)


def _placeholder(v: View) -> Value:
    ranks = v.shape_rank(1, "shape")
    if v.get(1, "shape") is None:
        ranks = frozenset({UNKNOWN_RANK})
    return tensor(v.dtype(0, "dtype"), ranks)


def _variable(v: View) -> Value:
    init = v.get(0, "initial_value")
    base = v.ev(init) if init is not None else UNKNOWN_VALUE
    if base.kind == BOTTOM:
        return BOTTOM_VALUE  # the value being computed: no information yet
    dtypes = v.dtype(None, "dtype") or (base.dtypes if base.kind == TENSOR else None)
    if base.kind == PYTHON and init is not None:
        lit = v.literal(init)
        if lit is not None:
            d = _literal_dtype(lit)
            return tensor(dtypes or (frozenset({d}) if d else None), frozenset({_nesting(lit)}))
    return tensor(dtypes, base.ranks if base.kind == TENSOR else None)


def _get_variable(v: View) -> Value:
    return tensor(v.dtype(2, "dtype", "float32"), v.shape_rank(1, "shape"))


def _filled(v: View) -> Value:
    return tensor(v.dtype(None, "dtype", "float32"), v.shape_rank(0, "shape"))


def _cast(v: View) -> Value:
    x = v.get(0, "x")
    base = v.ev(x) if x is not None else UNKNOWN_VALUE
    if base.kind == BOTTOM:
        return BOTTOM_VALUE  # the value being computed: no information yet
    return tensor(v.dtype(1, "dtype"), base.ranks if base.kind == TENSOR else None)


def _to(dt: str) -> Callable[[View], Value]:
    def handler(v: View) -> Value:
        x = v.get(0, "x")
        base = v.ev(x) if x is not None else UNKNOWN_VALUE
        if base.kind == BOTTOM:
            return BOTTOM_VALUE  # the value being computed: no information yet
        return tensor({dt}, base.ranks if base.kind == TENSOR else None)
    return handler


def _reshape(v: View) -> Value:
    x = v.get(0, "tensor")
    base = v.ev(x) if x is not None else UNKNOWN_VALUE
    if base.kind == BOTTOM:
        return BOTTOM_VALUE  # the value being computed: no information yet
    return tensor(base.dtypes if base.kind == TENSOR else None, v.shape_rank(1, "shape"))


def _operands(v: View, n: int) -> list[Value]:
    return [v.ev(node) for kw, node in v.args[:n] if kw is None] + [
        v.ev(node) for kw, node in v.args if kw in (("x", "y", "a", "b") if n > 1 else ("x", "features", "logits"))]


def common_dtypes(vals: list) -> Optional[frozenset]:
    """The dtypes an op on several operands can have: TF1 never promotes, so every tensor operand
    has the one dtype (a Python number is converted to it; anything else raises).  None: no
    tensor operand's dtype is known.  (`tf.sign(x / E)`, `E` real: `x` is real too.)"""
    known = [x.dtypes for x in vals if x.kind == TENSOR and x.dtypes is not None]
    if not known:
        return None
    return frozenset.intersection(*known) or frozenset().union(*known)


def _elementwise(name: str, n: int = 2) -> Callable[[View], Value]:
    """``n``: how many leading arguments are operands (one for `tf.nn.softmax(x, axis)`: its axis
    is no operand, and an int32 axis made the result int32 -- an adversarial run)."""
    def handler(v: View) -> Value:
        failed = {f.split(":", 1)[1] for f in optable.function_variants(name).get("failed", [])
                  if f.startswith("dtype:")}  # the call raises for these: its result never has them
        vals = [x for x in _operands(v, n) if x.kind != PYTHON] or [UNKNOWN_VALUE]
        if all(x.kind == BOTTOM for x in vals):
            return BOTTOM_VALUE
        vals = [x for x in vals if x.kind != BOTTOM]
        known = common_dtypes(vals)
        dtypes = (known if known is not None else ALL_DTYPES) - failed
        if name.rsplit(".", 1)[-1] == "abs" and "complex64" in dtypes:  # |z| of a complex tensor is real
            dtypes = dtypes - {"complex64"} | {"float32", "float64"}
        ranks = max_rank([x.ranks if x.kind == TENSOR else None for x in vals])
        return tensor(dtypes, ranks)
    return handler


def _compare(v: View) -> Value:
    vals = [x for x in _operands(v, 2) if x.kind not in (PYTHON, BOTTOM)]
    return tensor({"bool"}, max_rank([x.ranks if x.kind == TENSOR else None for x in vals]))


def _reduce(v: View) -> Value:
    x = v.get(0, "input_tensor")
    base = v.ev(x) if x is not None else UNKNOWN_VALUE
    if base.kind == BOTTOM:
        return BOTTOM_VALUE
    whole = v.get(1, "axis") is None and v.get(None, "reduction_indices") is None and v.get(2, "keepdims") is None
    return tensor(base.dtypes if base.kind == TENSOR else None, {0} if whole else None)


def _same_dtype(index: int, name: str) -> Callable[[View], Value]:
    """A function whose result has the dtype of one argument (its rank is not followed)."""
    def handler(v: View) -> Value:
        x = v.get(index, name)
        base = v.ev(x) if x is not None else UNKNOWN_VALUE
        if base.kind == BOTTOM:
            return BOTTOM_VALUE
        return tensor(base.dtypes if base.kind == TENSOR else None, None)
    return handler


def _matmul(v: View) -> Value:
    a, b = v.get(0, "a"), v.get(1, "b")
    va = v.ev(a) if a is not None else UNKNOWN_VALUE
    vb = v.ev(b) if b is not None else UNKNOWN_VALUE
    if va.kind == BOTTOM or vb.kind == BOTTOM:
        return BOTTOM_VALUE
    ranks = max_rank([va.ranks if va.kind == TENSOR else None, vb.ranks if vb.kind == TENSOR else None])
    return tensor(va.dtypes if va.kind == TENSOR else None, ranks)


def _shape(v: View) -> Value:
    return tensor({"int32"}, {1})


_UNARY = ["sign", "round", "floor", "ceil", "rint", "abs", "negative", "square", "sqrt", "rsqrt", "exp", "log",
          "log1p", "sin", "cos", "tanh", "sigmoid", "nn.relu", "nn.relu6", "nn.elu", "nn.selu", "nn.leaky_relu",
          "nn.softplus", "nn.softsign", "nn.sigmoid", "nn.tanh", "identity", "stop_gradient", "clip_by_value",
          "nn.dropout", "nn.softmax", "math.sign", "math.round", "math.floor", "math.ceil", "math.abs",
          "math.tanh", "math.sigmoid", "math.exp", "math.log", "math.square", "math.sqrt", "math.negative",
          "reciprocal", "math.reciprocal"]
_BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "pow", "math.add", "math.subtract",
           "math.multiply", "math.maximum", "math.minimum", "math.pow", "realdiv", "truediv", "divide"]
_COMPARE = ["greater", "greater_equal", "less", "less_equal", "equal", "not_equal", "logical_and", "logical_or",
            "logical_not", "math.greater", "math.less", "math.equal", "is_finite", "is_nan", "is_inf"]

HANDLERS: dict[str, Callable[[View], Value]] = {
    "tensorflow.constant": _constant,
    "tensorflow.placeholder": _placeholder,
    "tensorflow.Variable": _variable,
    "tensorflow.get_variable": _get_variable,
    "tensorflow.cast": _cast,
    "tensorflow.dtypes.cast": _cast,
    "tensorflow.saturate_cast": _cast,
    "tensorflow.to_float": _to("float32"),
    "tensorflow.to_double": _to("float64"),
    "tensorflow.to_int32": _to("int32"),
    "tensorflow.to_int64": _to("int32"),
    "tensorflow.reshape": _reshape,
    "tensorflow.shape": _shape,
}
for _n in ("zeros", "ones", "fill", "random_normal", "random_uniform", "truncated_normal", "random.normal",
           "random.uniform", "random.truncated_normal"):
    HANDLERS["tensorflow." + _n] = _filled
for _n in _UNARY:
    HANDLERS["tensorflow." + _n] = _elementwise("tensorflow." + _n, 1)
for _n in _BINARY:
    HANDLERS["tensorflow." + _n] = _elementwise("tensorflow." + _n)
for _n in _COMPARE:
    HANDLERS["tensorflow." + _n] = _compare
for _n in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "math.reduce_sum",
           "math.reduce_mean", "math.reduce_max", "math.reduce_min"):
    HANDLERS["tensorflow." + _n] = _reduce
HANDLERS["tensorflow.matmul"] = HANDLERS["tensorflow.linalg.matmul"] = _matmul
for _n, _i, _p in (("transpose", 0, "a"), ("expand_dims", 0, "input"),
                   ("squeeze", 0, "input"), ("tile", 0, "input"), ("pad", 0, "tensor"), ("gather", 0, "params"),
                   ("nn.bias_add", 0, "value"), ("nn.l2_normalize", 0, "x"), ("nn.log_softmax", 0, "logits"),
                   ("clip_by_norm", 0, "t"), ("nn.conv2d", 0, "input")):
    HANDLERS["tensorflow." + _n] = _same_dtype(_i, _p)


def tf_call_value(name: str, view: View) -> Value:
    handler = HANDLERS.get(name)
    if handler is not None:
        return handler(view)
    info = optable.function_info(name)
    if info is not None and info["ops"] and all(op.get("num_outputs") == 1 for op in info["ops"]):
        return tensor()  # one tensor out; its dtype and rank are not known here
    return UNKNOWN_VALUE
