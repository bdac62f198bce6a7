#!/usr/bin/env python
"""Generate ``migrator/data/op_types.json``: which graph ops each public TF call creates.

``gradient_override_map({"Sign": ...})`` retags every op *of that type* created
inside the block, so the rewriter must know, from source alone, which op types
a call such as ``tf.clip_by_value(t, lo, hi)`` creates (``Minimum``,
``Maximum``) and which call arguments feed each op's inputs.  This script
learns that by *tracing*: it calls each public function with placeholders in a
fresh ``tf.Graph()`` under TF1 graph semantics and records the ops the call
added.  The result ships as data, so the rewriter never imports TensorFlow.

Usage::

    .venv/bin/python tools/gen_op_table.py            # writes migrator/data/op_types.json
    .venv/bin/python tools/gen_op_table.py --only tensorflow.sign tensorflow.nn.relu --stdout

The output is deterministic for a given TensorFlow version (sorted keys, no
timestamps, no graph-unique names).

Table layout (see ``migrator/optable.py`` for the reader)::

    {"tensorflow_version": "2.21.0",
     "functions": {
        "tensorflow.sign": {"params": ["x", "name"], "direct": true, "apis": ["v1", "v2"],
                            "ops": [{"type": "Sign", "inputs": ["x"], "num_inputs": 1, "num_outputs": 1}]},
        ...},
     "operators": {"Multiply": {"type": "Mul", "inputs": ["left", "right"], "by_dtype": {...}}, ...},
     "op_defaults": {"LeakyRelu": {"alpha": 0.2, "T": "float32"}, ...},
     "op_arity": {"Sign": [1, 1], "ConcatV2": [-1, 1], ...}}

* ``inputs`` names, per op input in op-input order, the call parameter that
  feeds it: ``"x"``, ``"values[1]"`` for element 1 of a list parameter, or
  ``"values[*]"`` when the whole list feeds consecutive inputs (variadic op
  inputs: ``concat``, ``identity_n``, ``py_func``'s ``inp``).  ``null`` means the
  input is a constant or another op made by the same call.
* ``direct`` is true when the call made exactly one op and every input of it is
  fed by a parameter: the rewriter can wrap that call as the op.
* ``single_op`` is true when the call made exactly one op (its other inputs are
  constants built from Python values, e.g. ``reduce_mean``'s axis).
* ``static_shape_ops`` is present when the call builds different ops for an
  input of fully known shape (``tf.shape`` folds to a constant, ``zeros_like``
  becomes ``Fill``/``Const``...); ``ops`` is traced with an unknown batch dim.
* ``arg_variants`` records, for a few calls whose ops depend on an optional
  argument, the ops made with that argument: ``py_func(..., stateful=False)``
  makes ``PyFuncStateless``; ``random_uniform(minval=-1.0, maxval=1.0)`` adds
  ``Sub``, ``Mul``, ``AddV2``.
* ``v2`` is present when the TF2 function behind the same normalised name
  (``tf.X`` vs ``tf.compat.v1.X``) has other parameters or makes other ops;
  the top-level entry is the TF1 (``compat.v1``) one, since the code being
  migrated is TF1 code.
* ``no_op_functions`` lists the names whose traced call worked but made no
  op other than constants/placeholders (``tf.zeros([2, 2])``, ``tf.constant``).
* ``op_arity`` is ``[num_inputs, num_outputs]`` from the op def, with ``-1``
  for a variadic (list) count.
"""
from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import re
import signal
import sys
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
warnings.filterwarnings("ignore")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "migrator", "data", "op_types.json")

#: public namespaces walked, as (attribute path under ``tf``, normalised prefix)
V2_NAMESPACES = ["", "math", "nn", "linalg", "bitwise", "image", "random", "signal", "sparse", "strings", "debugging", "dtypes"]
V1_NAMESPACES = ["", "math", "nn", "linalg", "bitwise", "image", "random"]

#: op types that are never "created by the call" in a useful sense
IGNORED_OP_TYPES = {"Placeholder", "PlaceholderV2", "PlaceholderWithDefault", "Const", "NoOp", "HostConst"}

#: names never called (global side effects, slow, or not graph-building)
_SKIP_RE = re.compile(
    r"^(enable_|disable_|reset_|set_|load_|experimental_|executing_eagerly|"
    r"initialize|global_variables|local_variables|variables_initializer|"
    r"get_|make_|add_to_collection|Session|wrap_function|function$|autograph|"
    r"py_function_disabled|custom_gradient|recompute_grad|grad_pass_through|"
    r"no_gradient|NoGradient|NotDifferentiable|RegisterGradient|gradients$|hessians$|"
    r"while_loop|map_fn|scan|foldl|foldr|vectorized_map|cond$|case$|switch_case|"
    r"control_dependencies|device$|name_scope|op_scope|variable_scope|container|"
    r"colocate_with|init_scope|print$|Print$|import_graph_def|train|summary|"
    r"tpu|xla|distribute|saved_model|io$|gfile|logging|flags|app$|compat|"
    r"register_tensor_conversion_function|convert_to_tensor|is_tensor|"
    r"is_symbolic_tensor|constant_initializer|zeros_initializer|ones_initializer|"
    r"random_normal_initializer|random_uniform_initializer|glorot_|"
    r"truncated_normal_initializer|uniform_unit_scaling|variance_scaling|orthogonal_initializer)"
)

#: functions whose parameter is a *list* of tensors (name in normalised form, param)
LIST_PARAMS = {
    "concat": {"values"}, "stack": {"values"}, "parallel_stack": {"values"},
    "add_n": {"inputs"}, "accumulate_n": {"inputs"}, "identity_n": {"input"},
    "py_func": {"inp"}, "numpy_function": {"inp"}, "py_function": {"inp"},
    "dynamic_stitch": {"indices", "data"}, "meshgrid": {"args"},
    "tuple": {"tensors"}, "group": {"inputs"}, "broadcast_dynamic_shape": set(),
    "shape_n": {"input"}, "concat_v2": {"values"}, "add_n_v2": {"inputs"},
}
LIST_NAMES = {"inp", "tensors", "tensor_list", "values_list"}

TENSOR_NAMES = {
    "x", "y", "a", "b", "z", "q", "v", "t", "x1", "x2", "input", "inputs", "features",
    "logits", "labels", "tensor", "values", "value", "input_tensor", "data", "images",
    "image", "params", "arr", "predictions", "targets", "matrix", "rhs", "lhs",
    "diagonal", "filter", "filters", "bias", "condition", "clip_value_min",
    "clip_value_max", "input_x", "input_y", "weights", "boxes", "scores", "elems",
    "tensor_a", "tensor_b", "x_", "input_a", "input_b", "grad", "dy", "dz", "img",
    "image1", "image2", "img1", "img2", "max_value", "min_value", "contrast_factor",
    "delta", "gamma", "alpha", "beta", "mean", "variance", "offset", "scale", "keys",
    "coeffs", "chol", "cond", "pred", "seq", "sequence", "true", "false", "counts",
    "indices", "segment_ids", "batch_dims_tensor", "k", "n", "degree", "logits_list",
    "kernel", "depthwise_filter", "pointwise_filter", "lengths", "sp_input",
}
FILL_WHEN_NONE = {
    "axis", "filter", "filters", "strides", "stride", "padding", "x", "y", "labels", "logits",
    "input", "input_tensor", "value", "values", "tensor", "features", "keep_prob", "rate",
    "inp", "func", "Tout", "dtype", "shape", "data", "images", "ksize", "predictions",
    "targets", "pos_weight", "num_or_size_splits", "size", "begin", "params", "ids",
}
#: optional param -> params that make it redundant (deprecated aliases)
ALIAS_DROP = {
    "input": ("input_tensor", "x", "value", "features", "logits", "tensor", "images"),
    "filters": ("filter",),
    "value": ("input", "x", "features", "logits", "tensor"),
    "x": ("input", "input_tensor", "features", "logits"),
}
INT_TENSOR_NAMES = {"indices", "segment_ids", "lengths", "k", "n"}
BOOL_TENSOR_NAMES = {"condition", "cond", "pred"}

#: specific argument sets for functions the generic heuristics get wrong
OVERRIDES: Dict[str, Callable[..., Dict[str, Any]]] = {}

#: extra calls recorded under ``arg_variants``: {short name: {label: kwargs maker}}
ARG_VARIANTS: Dict[str, Dict[str, Callable[..., Dict[str, Any]]]] = {}


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: float):
    def handler(signum, frame):
        raise _Timeout()
    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


_tf = None


def _import_tf():
    """Import TensorFlow once, with TF1 graph behaviour (``disable_v2_behavior``)."""
    global _tf
    if _tf is None:
        import tensorflow as tf
        try:
            from tensorflow.python.util import deprecation
            deprecation._PRINT_DEPRECATION_WARNINGS = False
        except Exception:  # pragma: no cover
            pass
        tf.get_logger().setLevel("ERROR")
        tf.compat.v1.disable_v2_behavior()
        _tf = tf
    return _tf


# ----------------------------------------------------------------- arguments

#: tensor "variants": (dtype name, shape) tried in order for tensor-like params
VARIANTS: List[Tuple[str, Optional[List[Optional[int]]]]] = [
    ("float32", [None, 2]),
    ("float32", [2, 2]),
    ("float32", [2, 2, 2, 2]),
    ("float32", [1, 4, 4, 3]),
    ("float32", [None]),
    ("float32", []),
    ("int32", [None, 2]),
    ("int32", [None]),
    ("bool", [None, 2]),
    ("complex64", [None, 2]),
    ("string", [None]),
    ("float32", None),  # unknown rank: tf.rank/tf.size/tf.shape make real ops
]


def _short(fn_name: str) -> str:
    return fn_name.rsplit(".", 1)[-1]


class _Args:
    """Builds call arguments and remembers which tensor came from which param."""

    def __init__(self, tf, variant):
        self.tf = tf
        self.dtype, self.shape = variant
        self.origin: Dict[str, str] = {}  # tensor name -> param label
        self.lists: Dict[str, int] = {}   # list param -> length
        self.guessed = False              # an unknown param name was guessed

    def tensor(self, label: str, dtype: Optional[str] = None, shape="same"):
        tf = self.tf
        if shape == "same":
            shape = self.shape
        dt = getattr(tf, dtype or self.dtype)
        name = re.sub(r"[^A-Za-z0-9_]", "_", label).strip("_") or "p"
        p = tf.compat.v1.placeholder(dt, shape=shape, name="arg_" + name)
        self.origin[p.name] = label
        return p

    def value_for(self, fname: str, pname: str, param: inspect.Parameter, alt: int):
        """A value for a required parameter (or None to leave it out)."""
        tf = self.tf
        short = _short(fname)
        low = pname.lower()
        if pname in LIST_PARAMS.get(short, ()) or low in LIST_NAMES:
            self.lists[pname] = 2
            return [self.tensor(f"{pname}[{j}]") for j in range(2)]
        if low in ("func", "fn", "f", "map_func", "py_func"):
            return lambda *a: a[0] if a else 0.0
        if low in ("tout", "dtype", "out_type", "output_type", "dstype"):
            if low in ("out_type", "output_type"):
                return tf.int32
            if low == "dtype" and self.dtype == "float32":
                return tf.float64  # a *different* dtype, so cast-like calls make an op
            return getattr(tf, self.dtype)
        if low in ("axis", "dim", "reduction_indices", "axes", "split_dim", "concat_dim", "batch_axis", "seq_axis", "seq_dim", "batch_dim"):
            self.guessed = True  # another alt tries a list
            return [0] if alt == 1 else 0
        if low in ("shift",):
            return 1
        if low in ("keep_prob",):
            return 0.5
        if low in ("message", "msg"):
            return "msg"
        if low in ("shape", "dims", "size", "output_shape", "new_shape") and short not in ("size",):
            return [2, 2]
        if low in ("perm",):
            return [1, 0]
        if low in ("num_or_size_splits", "num", "num_split", "num_outputs", "num_segments", "depth", "num_classes", "num_lower", "num_upper", "k", "repeats", "block_size", "num_rows", "num_columns", "batch_dims"):
            return 2 if low not in ("num_lower", "num_upper", "batch_dims") else 0
        if low in ("strides", "stride"):
            return 1
        if low in ("padding",):
            return "SAME"
        if low in ("ksize", "pool_size", "window_shape", "rate", "rates", "dilations", "dilation_rate"):
            return 1 if low not in ("window_shape",) else [1, 1]
        if low in ("begin",):
            return [0, 0]
        if low in ("end",):
            return [1, 1]
        if low in ("multiples",):
            return [1, 1]
        if low in ("paddings", "pad"):
            return [[0, 0], [0, 0]]
        if low in ("bias",):
            last = (self.shape or [2])[-1]
            return self.tensor(pname, shape=[last] if self.shape else [])
        if low in INT_TENSOR_NAMES and low in TENSOR_NAMES:
            if alt == 0:
                return self.tensor(pname, dtype="int32", shape=[None])
        if low in BOOL_TENSOR_NAMES:
            return self.tensor(pname, dtype="bool")
        if low in TENSOR_NAMES or low.endswith(("_tensor", "input", "inputs", "logits", "labels")):
            return self.tensor(pname)
        if low in ("name",):
            return None
        if low in ("equation",):
            return "ij->ji"
        if low in ("size_splits",):
            return [1, 1]
        if low in ("minval", "maxval", "stddev", "mean"):
            return None
        if low in ("seed",):
            return None
        # unknown name: alternate guesses
        self.guessed = True
        guesses = [lambda: self.tensor(pname), lambda: 1, lambda: [2, 2], lambda: 0.5, lambda: "x"]
        return guesses[alt % len(guesses)]()


def _param_label(p: inspect.Parameter) -> str:
    if p.kind == p.VAR_POSITIONAL:
        return "*" + p.name
    if p.kind == p.VAR_KEYWORD:
        return "**" + p.name
    return p.name


def _signature(fn) -> Optional[inspect.Signature]:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _attr_to_py(av):
    kind = av.WhichOneof("value")
    if kind is None:
        return None
    if kind == "f":
        import numpy as np
        return float(str(np.float32(av.f)))
    if kind == "i":
        return int(av.i)
    if kind == "b":
        return bool(av.b)
    if kind == "s":
        try:
            return av.s.decode("utf-8")
        except UnicodeDecodeError:  # pragma: no cover
            return None
    if kind == "type":
        tf = _import_tf()
        return tf.dtypes.as_dtype(av.type).name
    if kind == "shape":
        if av.shape.unknown_rank:
            return None
        return [d.size for d in av.shape.dim]
    if kind == "list":
        lv = av.list
        import numpy as np
        if lv.s:
            return [s.decode("utf-8", "replace") for s in lv.s]
        if lv.i:
            return [int(i) for i in lv.i]
        if lv.f:
            return [float(str(np.float32(f))) for f in lv.f]
        if lv.b:
            return [bool(b) for b in lv.b]
        if lv.type:
            tf = _import_tf()
            return [tf.dtypes.as_dtype(t).name for t in lv.type]
        return []
    return None


def op_def(op_type: str):
    from tensorflow.python.framework import op_def_registry
    return op_def_registry.get(op_type)


def op_arity_from_def(op_type: str) -> Optional[List[int]]:
    od = op_def(op_type)
    if od is None:
        return None

    def count(args):
        n = 0
        for a in args:
            if a.number_attr or a.type_list_attr:
                return -1
            n += 1
        return n
    return [count(od.input_arg), count(od.output_arg)]


def op_defaults_from_def(op_type: str) -> Dict[str, Any]:
    od = op_def(op_type)
    out: Dict[str, Any] = {}
    if od is None:
        return out
    for a in od.attr:
        if a.HasField("default_value"):
            v = _attr_to_py(a.default_value)
            if v is not None or a.default_value.WhichOneof("value") is not None:
                out[a.name] = v
    return out


def _collapse_lists(inputs: List[Optional[str]], lists: Dict[str, int]) -> List[Optional[str]]:
    """Replace a run ``p[0], p[1], ..., p[n-1]`` by one ``p[*]`` entry."""
    out: List[Optional[str]] = []
    i = 0
    while i < len(inputs):
        lab = inputs[i]
        m = re.match(r"^(.*)\[0\]$", lab) if lab else None
        if m and m.group(1) in lists:
            base, n = m.group(1), lists[m.group(1)]
            if inputs[i:i + n] == [f"{base}[{j}]" for j in range(n)]:
                out.append(f"{base}[*]")
                i += n
                continue
        out.append(lab)
        i += 1
    return out


def _record_ops(graph, args: _Args) -> List[Dict[str, Any]]:
    ops = []
    for op in graph.get_operations():
        if op.type in IGNORED_OP_TYPES:
            continue
        if not op.inputs and not op.op_def.is_stateful and op.type.endswith("Const"):
            continue
        raw = [args.origin.get(t.name) for t in op.inputs]
        inputs = _collapse_lists(raw, args.lists)
        rec = {"type": op.type, "inputs": inputs, "num_inputs": len(op.inputs),
               "num_outputs": len(op.outputs)}
        ar = op_arity_from_def(op.type)
        if ar and -1 in ar:
            rec["variadic"] = True
        ops.append(rec)
    return ops


class _Ops(list):
    """Recorded ops, plus whether any argument was a guess."""
    guessed = False


class _Failed(Exception):
    def __init__(self, guessed: bool):
        super().__init__()
        self.guessed = guessed


def _call_once(fn, fname: str, params, required, variant, alt: int, timeout: float,
               extra: Optional[Callable] = None):
    """Call ``fn`` once in a fresh graph; return the recorded ops.

    Raises ``_Timeout``, or ``_Failed`` (with whether a parameter was guessed,
    i.e. whether another ``alt`` could help) when the call raises.
    """
    tf = _import_tf()
    short = _short(fname)
    names = {p.name for p in params}
    g = tf.Graph()
    with g.as_default():
        args = _Args(tf, variant)
        try:
            ops = _Ops(_call_in_graph(fn, fname, params, required, alt, timeout, extra, args, g, short, names))
            ops.guessed = args.guessed
            return ops
        except _Timeout:
            raise
        except Exception:  # noqa: BLE001
            raise _Failed(args.guessed)


def _call_in_graph(fn, fname, params, required, alt, timeout, extra, args, g, short, names):
    kwargs: Dict[str, Any] = {}
    for p in required:
        kwargs[p.name] = args.value_for(fname, p.name, p, alt)
    if short in OVERRIDES:
        kwargs.update(OVERRIDES[short](args, names))
    if extra is not None:
        kwargs.update(extra(args, names))
    pos = [kwargs.pop(p.name) for p in params
           if p.kind == p.POSITIONAL_ONLY and p.name in kwargs]
    if "__args__" in kwargs:  # an override giving every positional arg (einsum)
        pos = kwargs.pop("__args__")
        for p in params:
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                kwargs.pop(p.name, None)
    with _time_limit(timeout):
        fn(*pos, **kwargs)
    return _record_ops(g, args)


def trace_call(fn: Callable, fname: str, timeout: float = 3.0, max_tries: int = 24,
               variants=None) -> Optional[Dict[str, Any]]:
    """Trace one public function; return its table entry or None if no call worked.

    ``fname`` is the normalised public name (``tensorflow.nn.relu``); it selects
    list-typed parameters and per-function overrides.  Each attempt runs in a
    fresh ``tf.Graph()``; variants of the arguments are tried until one works.
    """
    _import_tf()
    sig = _signature(fn)
    if sig is None:
        return None
    params = list(sig.parameters.values())
    labels = [_param_label(p) for p in params]
    required = [p for p in params if p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    short = _short(fname)
    # phase B also fills optional parameters that default to None but are
    # needed in practice (``expand_dims(x, axis=None)``, v1 ``conv2d(filter=None)``,
    # ``sigmoid_cross_entropy_with_logits(labels=None, logits=None)``)
    optional_none = [p for p in params if p.default is None and p.name in FILL_WHEN_NONE
                     and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    # deprecated aliases (count_nonzero(input_tensor=..., input=...)): fill one only
    present = {p.name for p in required + optional_none}
    optional_none = [p for p in optional_none
                     if not any(other in present for other in ALIAS_DROP.get(p.name, ()))]
    no_axis = [p for p in optional_none if p.name != "axis"]
    phases = [required]
    for extra_params in (no_axis, optional_none):
        if extra_params and required + extra_params not in phases:
            phases.append(required + extra_params)
    tries = 0
    result = None
    empty = None
    for phase in phases:
        for variant in (variants or VARIANTS):
            for alt in range(3):
                if tries >= max_tries:
                    break
                tries += 1
                try:
                    ops = _call_once(fn, fname, params, phase, variant, alt, timeout)
                except _Timeout:
                    return None
                except _Failed as e:  # try another alt (if a guess was made) or variant
                    if e.guessed:
                        continue
                    break
                if not ops:
                    # worked but made no op (e.g. to_float on float32): another
                    # dtype may; keep this as the fallback
                    if empty is None:
                        empty = (ops, variant, alt, phase)
                    if ops.guessed:
                        continue
                    break
                result = (ops, variant, alt, phase)
                break
            if result is not None or tries >= max_tries:
                break
        if result is not None:
            break
    if result is None:
        result = empty
    if result is None:
        return None
    ops, variant, used_alt, required = result
    entry: Dict[str, Any] = {"params": labels, "ops": list(ops)}
    if not ops and (ops.guessed or any(p.kind == p.VAR_POSITIONAL for p in params)):
        return None  # "made no op" is only trusted when no argument was guessed
    entry["single_op"] = len(ops) == 1
    entry["direct"] = len(ops) == 1 and bool(ops[0]["inputs"]) and all(i is not None for i in ops[0]["inputs"])
    # Same call with a fully known shape: some calls fold to constants then.
    dtype, shape = variant
    if shape and None in shape:
        static = (dtype, [2 if d is None else d for d in shape])
        try:
            sops = _call_once(fn, fname, params, required, static, used_alt, timeout)
            if [o["type"] for o in sops] != [o["type"] for o in ops]:
                entry["static_shape_ops"] = [o["type"] for o in sops]
        except (_Failed, _Timeout):
            pass
    # Named argument variants that change which ops are made
    for label, extra in sorted(ARG_VARIANTS.get(short, {}).items()):
        if not all(k.split("=")[0] in {p.name for p in params} for k in label.split(",")):
            continue
        try:
            vops = _call_once(fn, fname, params, required, variant, used_alt, timeout, extra)
        except (_Failed, _Timeout):
            continue
        if vops != ops:
            entry.setdefault("arg_variants", {})[label] = vops
    return entry


# ------------------------------------------------------------------ overrides

def _pyfunc(a, names):
    a.lists["inp"] = 2
    return {"func": lambda *x: x[0], "Tout": a.tf.float32,
            "inp": [a.tensor(f"inp[{j}]") for j in range(2)]}


def _conv(rank):
    def make(a, names):
        spatial = [4] * rank
        kw: Dict[str, Any] = {}
        iname = "input" if "input" in names else "value"
        kw[iname] = a.tensor(iname, shape=[1] + spatial + [2])
        fname = "filter" if "filter" in names else "filters"
        kw[fname] = a.tensor(fname, shape=[2] * rank + [2, 2])
        sname = "strides" if "strides" in names else "stride"
        kw[sname] = 1 if rank != 3 else [1] * (rank + 2)
        kw["padding"] = "SAME"
        return kw
    return make


def _conv_transpose(a, names):
    iname = "input" if "input" in names and "value" not in names else "value"
    fname = "filter" if "filter" in names else "filters"
    return {iname: a.tensor(iname, shape=[1, 4, 4, 2]), fname: a.tensor(fname, shape=[2, 2, 2, 2]),
            "output_shape": [1, 4, 4, 2], "strides": 1, "padding": "SAME"}


def _depthwise(a, names):
    return {"input": a.tensor("input", shape=[1, 4, 4, 2]), "filter": a.tensor("filter", shape=[2, 2, 2, 1]),
            "strides": [1, 1, 1, 1], "padding": "SAME"}


def _separable(a, names):
    return {"input": a.tensor("input", shape=[1, 4, 4, 2]),
            "depthwise_filter": a.tensor("depthwise_filter", shape=[2, 2, 2, 1]),
            "pointwise_filter": a.tensor("pointwise_filter", shape=[1, 1, 2, 2]),
            "strides": [1, 1, 1, 1], "padding": "SAME"}


def _einsum(a, names):
    a.lists["*inputs"] = 2
    return {"__args__": ["ij,jk->ik"] + [a.tensor(f"*inputs[{j}]") for j in range(2)]}


def _sparse_xent(a, names):
    return {"labels": a.tensor("labels", "int32", [None]), "logits": a.tensor("logits", shape=[None, 2])}


OVERRIDES.update({
    # where(condition, x, y): the common three-argument form (Select/SelectV2)
    "where": lambda a, names: {"condition": a.tensor("condition", "bool"), "x": a.tensor("x"), "y": a.tensor("y")},
    "where_v2": lambda a, names: {"condition": a.tensor("condition", "bool"), "x": a.tensor("x"), "y": a.tensor("y")},
    "conv1d": _conv(1),
    "conv2d": _conv(2),
    "conv3d": _conv(3),
    "bias_add": lambda a, names: {"value": a.tensor("value", shape=[None, 2]), "bias": a.tensor("bias", shape=[2])},
    "py_func": _pyfunc,
    "conv2d_transpose": _conv_transpose,
    "depthwise_conv2d": _depthwise,
    "separable_conv2d": _separable,
    "einsum": _einsum,
    "sparse_softmax_cross_entropy_with_logits": _sparse_xent,
    "dropout": lambda a, n: {"keep_prob": 0.5, "rate": None} if "keep_prob" in n else {"rate": 0.5},
    "numpy_function": _pyfunc,
    "py_function": _pyfunc,
})
_minmax = {"minval=-1.0,maxval=1.0": lambda a, n: {"minval": -1.0, "maxval": 1.0},
           "minval=tensor,maxval=tensor": lambda a, n: {"minval": a.tensor("minval", shape=[]),
                                                         "maxval": a.tensor("maxval", shape=[])}}
ARG_VARIANTS.update({
    "py_func": {"stateful=False": lambda a, n: {"stateful": False}},
    "numpy_function": {"stateful=False": lambda a, n: {"stateful": False}},
    "random_uniform": _minmax,
    "uniform": _minmax,
    "random_normal": {"mean=1.0,stddev=2.0": lambda a, n: {"mean": 1.0, "stddev": 2.0}},
    "normal": {"mean=1.0,stddev=2.0": lambda a, n: {"mean": 1.0, "stddev": 2.0}},
    "truncated_normal": {"mean=1.0,stddev=2.0": lambda a, n: {"mean": 1.0, "stddev": 2.0}},
    "transpose": {"perm=[1,0]": lambda a, n: {"perm": [1, 0]}},
    # casting to the input's own dtype makes no op at all
    "cast": {"dtype=input dtype": lambda a, n: {"dtype": getattr(a.tf, a.dtype)}},
    "saturate_cast": {"dtype=input dtype": lambda a, n: {"dtype": getattr(a.tf, a.dtype)}},
    # where(condition) alone: the indices form
    "where": {"x=None,y=None": lambda a, n: {"x": None, "y": None}},
    "clip_by_value": {"clip_value_min=-1.0,clip_value_max=1.0":
                      lambda a, n: {"clip_value_min": -1.0, "clip_value_max": 1.0}},
})
# conv2d's filter param is called filter (v1) or filters (v2); set whichever is required by name rules.


# ------------------------------------------------------------------- walking

def _namespace(tf, path: str):
    obj = tf
    for part in [p for p in path.split(".") if p]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def public_functions(tf) -> Dict[str, Dict[str, Callable]]:
    """``{normalised name: {"v1": fn, "v2": fn}}`` for the walked namespaces."""
    found: Dict[str, Dict[str, Callable]] = {}

    def walk(root, ns_list, api):
        for ns in ns_list:
            try:
                mod = _namespace(root, ns)
                attrs = sorted(dir(mod)) if mod is not None else []
            except Exception:  # noqa: BLE001 - lazily loaded namespaces (keras) may fail
                continue
            for attr in attrs:
                if attr.startswith("_") or _SKIP_RE.match(attr):
                    continue
                try:
                    obj = getattr(mod, attr)
                except Exception:  # noqa: BLE001
                    continue
                if inspect.isclass(obj) or inspect.ismodule(obj) or not callable(obj):
                    continue
                key = "tensorflow." + (ns + "." if ns else "") + attr
                found.setdefault(key, {})[api] = obj

    walk(tf, V2_NAMESPACES, "v2")
    walk(tf.compat.v1, V1_NAMESPACES, "v1")
    return found


def _same(a: Dict[str, Any], b: Dict[str, Any]) -> bool:
    keys = ("params", "ops", "direct")
    return all(a.get(k) == b.get(k) for k in keys)


def build_functions(names: Optional[List[str]] = None, verbose: bool = False) -> Tuple[Dict[str, Any], List[str]]:
    tf = _import_tf()
    table: Dict[str, Any] = {}
    no_op: List[str] = []
    cache: Dict[int, Optional[Dict[str, Any]]] = {}
    funcs = public_functions(tf)
    if names:
        funcs = {k: v for k, v in funcs.items() if k in set(names)}
    for key in sorted(funcs):
        impls = funcs[key]
        entries = {}
        for api in ("v1", "v2"):
            fn = impls.get(api)
            if fn is None:
                continue
            cid = id(fn)
            if cid not in cache:
                cache[cid] = trace_call(fn, key)
                if verbose:
                    print(f"{key} [{api}]: {cache[cid] and [o['type'] for o in cache[cid]['ops']]}", file=sys.stderr)
            entries[api] = cache[cid]
        good = {api: e for api, e in entries.items() if e and e["ops"]}
        if not good:
            if any(e is not None for e in entries.values()):
                no_op.append(key)
            continue
        primary_api = "v1" if "v1" in good else "v2"
        entry = json.loads(json.dumps(good[primary_api]))
        entry["apis"] = sorted(impls)
        if "v2" in good and primary_api == "v1" and not _same(good["v1"], good["v2"]):
            entry["v2"] = json.loads(json.dumps(good["v2"]))
        table[key] = entry
    return table, sorted(no_op)


# ----------------------------------------------------------------- operators

#: libcst operator class -> (kind, python callable)
OPERATORS: Dict[str, Tuple[str, Callable]] = {
    "Add": ("binary", lambda a, b: a + b),
    "Subtract": ("binary", lambda a, b: a - b),
    "Multiply": ("binary", lambda a, b: a * b),
    "Divide": ("binary", lambda a, b: a / b),
    "FloorDivide": ("binary", lambda a, b: a // b),
    "Modulo": ("binary", lambda a, b: a % b),
    "Power": ("binary", lambda a, b: a ** b),
    "MatrixMultiply": ("binary", lambda a, b: a @ b),
    "BitAnd": ("binary", lambda a, b: a & b),
    "BitOr": ("binary", lambda a, b: a | b),
    "BitXor": ("binary", lambda a, b: a ^ b),
    "LeftShift": ("binary", lambda a, b: a << b),
    "RightShift": ("binary", lambda a, b: a >> b),
    "GreaterThan": ("binary", lambda a, b: a > b),
    "GreaterThanEqual": ("binary", lambda a, b: a >= b),
    "LessThan": ("binary", lambda a, b: a < b),
    "LessThanEqual": ("binary", lambda a, b: a <= b),
    "Equal": ("binary", lambda a, b: a == b),
    "NotEqual": ("binary", lambda a, b: a != b),
    "Minus": ("unary", lambda a: -a),
    "Plus": ("unary", lambda a: +a),
    "BitInvert": ("unary", lambda a: ~a),
    "abs": ("unary", lambda a: abs(a)),
    "Subscript": ("unary", lambda a: a[0]),
}
AUG = {"AddAssign": "Add", "SubtractAssign": "Subtract", "MultiplyAssign": "Multiply",
       "DivideAssign": "Divide", "FloorDivideAssign": "FloorDivide", "ModuloAssign": "Modulo",
       "PowerAssign": "Power", "MatrixMultiplyAssign": "MatrixMultiply", "BitAndAssign": "BitAnd",
       "BitOrAssign": "BitOr", "BitXorAssign": "BitXor", "LeftShiftAssign": "LeftShift",
       "RightShiftAssign": "RightShift"}


def trace_operator(name: str, dtype: str = "float32") -> Optional[Dict[str, Any]]:
    """Trace one Python operator on placeholders of ``dtype`` (shape [2, 2])."""
    tf = _import_tf()
    kind, f = OPERATORS[name]
    g = tf.Graph()
    with g.as_default():
        args = _Args(tf, (dtype, [2, 2]))
        try:
            if kind == "binary":
                res = f(args.tensor("left"), args.tensor("right"))
            else:
                res = f(args.tensor("operand" if name != "Subscript" else "value"))
        except Exception:  # noqa: BLE001
            return None
        ops = _record_ops(g, args)
    if not ops:
        # ``==`` under TF1 semantics: Python identity, returns a bool, no op
        return {"type": None, "python": type(res).__name__, "inputs": [], "ops": []}
    # the op producing the result is the last one created
    return {"type": ops[-1]["type"], "inputs": ops[-1]["inputs"], "ops": [o["type"] for o in ops]}


def build_operators() -> Dict[str, Any]:
    """``{libcst operator class name: entry}``; the entry is traced on float32
    when the operator accepts it, else int32, else bool; ``by_dtype`` lists the
    op types made for each dtype that works."""
    out: Dict[str, Any] = {}
    for name in sorted(OPERATORS):
        by_dtype = {}
        for dt in ("float32", "int32", "bool"):
            r = trace_operator(name, dt)
            if r is not None:
                by_dtype[dt] = r
        if not by_dtype:
            continue
        dtype = "float32" if "float32" in by_dtype else ("int32" if "int32" in by_dtype else "bool")
        primary = dict(by_dtype[dtype])
        if len(primary["ops"]) <= 1:
            del primary["ops"]
        primary["dtype"] = dtype
        primary["by_dtype"] = {dt: r["ops"] for dt, r in sorted(by_dtype.items())}
        if name in ("Equal", "NotEqual") and primary["type"] is None:
            # TF1 graph: Python object identity.  In TF2 (eager or inside a
            # tf.function) it is the elementwise op; that cannot be traced
            # under v1 behaviour, so it is stated, not measured.
            primary["v2_type"] = name
        out[name] = primary
    for aug, base in AUG.items():
        if base in out:
            out[aug] = dict(out[base], augmented=base)
    return dict(sorted(out.items()))


# --------------------------------------------------------------------- main

def build_table(names: Optional[List[str]] = None, verbose: bool = False) -> Dict[str, Any]:
    tf = _import_tf()
    functions, no_op = build_functions(names, verbose=verbose)
    operators = build_operators()
    types = set()
    for e in functions.values():
        for sub in (e, e.get("v2") or {}):
            types.update(o["type"] for o in sub.get("ops", []))
            types.update(sub.get("static_shape_ops", []))
            for vops in sub.get("arg_variants", {}).values():
                types.update(o["type"] for o in vops)
    for e in operators.values():
        if e.get("type"):
            types.add(e["type"])
        types.update(e.get("ops", []))
        for ts in e.get("by_dtype", {}).values():
            types.update(ts)
        if e.get("v2_type"):
            types.add(e["v2_type"])
    arity = {}
    defaults = {}
    for t in sorted(types):
        a = op_arity_from_def(t)
        if a is not None:
            arity[t] = a
        d = op_defaults_from_def(t)
        if d:
            defaults[t] = d
    return {
        "tensorflow_version": tf.__version__,
        "functions": functions,
        "no_op_functions": no_op,
        "operators": operators,
        "op_defaults": defaults,
        "op_arity": arity,
    }


def dump(table: Dict[str, Any]) -> str:
    return json.dumps(table, sort_keys=True, separators=(",", ":"), ensure_ascii=True) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--only", nargs="*", help="trace only these normalised names")
    ap.add_argument("--stdout", action="store_true", help="print instead of writing --out")
    ap.add_argument("-v", "--verbose", action="store_true")
    ns = ap.parse_args(argv)
    table = build_table(ns.only, verbose=ns.verbose)
    text = dump(table)
    if ns.stdout:
        print(json.dumps(table, sort_keys=True, indent=1))
    else:
        os.makedirs(os.path.dirname(ns.out), exist_ok=True)
        with open(ns.out, "w", encoding="ascii") as f:
            f.write(text)
        print(f"wrote {ns.out}: {len(table['functions'])} functions, {len(table['operators'])} operators, "
              f"{len(table['op_arity'])} op types, {len(text)} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
