"""How function-mode probes get their inputs (no TensorFlow here).

1. ``[tool.tfgradmigrate.verify]`` in the nearest ``pyproject.toml`` above the
   verified file, keyed ``"module:function"``::

       [tool.tfgradmigrate.verify]
       "layers:quantize" = { args = [{ shape = [2, 3], range = [-1, 1] }, 2] }
       "layers:mix" = [
           { args = [[1.5, 2.5]], kwargs = { scale = 0.5 } },
           { args = [{ value = [[0.2, 0.7]], dtype = "float64" }] },
       ]

   An argument is a table with ``shape``, ``dtype`` (default float32) and
   ``range`` (default [-2, 2]) or ``value`` (a literal array); a bare list is
   a float32 array; any other literal is passed as it is.  Float arrays are
   the differentiation sources.
2. Recorded: the arguments the original program really passed to the
   function while its script ran (:mod:`.loader`), one probe per distinct
   signature.
3. Inferred from the signature, otherwise or in addition: every positional
   parameter without a default gets an array of rank 2, 1, 3 or 0 (the
   first that runs, per rank), in float32 and in float64; parameters with
   defaults keep them; parameters whose name looks like an integer (``k``,
   ``n``, ``bits``, ``num_*`` ...) also try the small ints 1, 2, 3.

Values are kept away from the discontinuities of sign, floor and round:
every value sits at an ``x.x3``/``x.x7`` offset, never near an integer, a
half-integer or zero
(fractional parts in [0.13, 0.35] or [0.63, 0.85]).
"""
from __future__ import annotations

import os
import re
from typing import Optional

import numpy as np

#: Inferred shapes, in the order they are tried: rank 2, 1, 3, 0, then a non-square rank 2.
SHAPES = [(2, 2), (3,), (2, 2, 2), (), (2, 3)]
FLOAT_DTYPES = ("float32", "float64")
SMALL_INTS = (1, 2, 3)
#: Groups of inferred candidates, in order of preference (see :func:`choose`).
FLOAT_GROUPS = ("float32:r2", "float32:r1", "float32:r3", "float32:r0")
INT_NAME = re.compile(
    r"^(k|n|m|bits?|nbits?|num_?\w*|n_\w+|\w+_(bits|num|count|size|dim|len|steps)|bitwidth|bit_?width|depth|"
    r"axis|dim|size|count|steps|levels?|width|order|times|repeats?)$"
)
#: Parameter names that hold several tensors: they get a list of two arrays.
LIST_NAME = re.compile(r"^(variables|vars|var_list|params|parameters|weights|tensors|xs|inputs|sources|tensor_list)$")
# Smooth, well-separated values: no integers, half-integers or zeros nearby.
_BASE = np.array([0.23, -0.63, 1.13, -1.33, 0.83, -0.27, 1.73, -0.17, 0.33, -1.13, 2.33, -0.73,
                  0.67, -1.77, 1.27, -0.23])


def smooth_values(shape, offset: int = 0, lo: Optional[float] = None, hi: Optional[float] = None, dtype="float32"):
    """Deterministic values for an input of ``shape`` (``offset`` varies them per argument)."""
    shape = tuple(int(s) for s in shape)
    n = int(np.prod(shape)) if shape else 1
    idx = (np.arange(n) + 5 * offset) % len(_BASE)
    vals = _BASE[idx] + np.sign(_BASE[idx]) * 0.01 * ((np.arange(n) + 5 * offset) // len(_BASE) % 3)
    if lo is not None and hi is not None:
        # map [-1.9, 2.4] onto [lo, hi], keeping the x.x3 texture where the range allows
        span = hi - lo
        vals = lo + 0.03 * span + (vals - _BASE.min()) / (_BASE.max() - _BASE.min() + 0.02) * 0.94 * span
    return vals.reshape(shape).astype(dtype)


def looks_int(name: str, annotation: Optional[str] = None) -> bool:
    return annotation == "int" or bool(INT_NAME.match(name))


def made_up(shape, dtype, offset: int = 0):
    """Values for a recorded argument whose value the program never evaluated."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return smooth_values(shape, offset, dtype=dt)
    if dt.kind == "b":
        n = int(np.prod(shape)) if len(shape) else 1
        return (np.arange(n) % 2 == 0).reshape(shape)
    n = int(np.prod(shape)) if len(shape) else 1
    return (np.arange(n) % 2).reshape(shape).astype(dt)


def _inferred_arg(param: dict, shape, offset: int, dtype="float32"):
    if LIST_NAME.match(param["name"]):
        return [smooth_values(shape, offset, dtype=dtype), smooth_values(shape, offset + 7, dtype=dtype)]
    return smooth_values(shape, offset, dtype=dtype)


def infer_candidates(params: list) -> list:
    """Candidate calls for a signature.

    ``params``: ``[{"name", "has_default", "annotation"}]`` for the positional
    parameters (self excluded).  Returns ``[{"args", "kwargs", "group"}]``:
    float candidates (groups ``float32:r2``, ``float64:r3``...), then
    ``int:<value>`` ones.  A parameter whose name says it holds several
    tensors (``variables``, ``params``, ``xs``...) gets a list of two arrays.
    """
    required = [p for p in params if not p["has_default"]]
    cands = []
    for dtype in FLOAT_DTYPES:
        for shape in SHAPES:
            args = [_inferred_arg(p, shape, i, dtype) for i, p in enumerate(required)]
            cands.append({"args": args, "kwargs": {}, "group": f"{dtype}:r{len(shape)}"})
    if len(required) > 1:
        # the first argument a matrix, the others scalars: broadcasting (``x * alpha``) shows gradients
        # that are not summed back to an argument's shape, or that are swapped between arguments
        args = [_inferred_arg(p, SHAPES[0] if i == 0 else (), i) for i, p in enumerate(required)]
        cands.append({"args": args, "kwargs": {}, "group": "float32:bcast"})
    ints = [i for i, p in enumerate(required) if looks_int(p["name"], p.get("annotation"))]
    if ints:
        for value in SMALL_INTS:
            for shape in (SHAPES[0], SHAPES[1], SHAPES[4]):
                args = [value if i in ints else _inferred_arg(p, shape, i) for i, p in enumerate(required)]
                cands.append({"args": args, "kwargs": {}, "group": f"int:{value}"})
    return cands


def choose(candidates: list, ok: list, extra_only: bool = False) -> list:
    """Indices of the candidates to compare, given which ran on the original.

    Recorded and configured candidates that ran are all kept.  Of the
    inferred ones: the first that works for rank 2, 1 and 3 in float32
    (rank 0 only when none of those works), the broadcast one (a matrix and
    scalars), the first float64 one, and one per small int value.  With ``extra_only`` (the target already has
    recorded or configured inputs) only the variation is added: the first
    rank-3 float32 candidate and the first float64 one.
    """
    kept = [i for i, (c, good) in enumerate(zip(candidates, ok)) if good and c["group"] in ("recorded", "config")]
    extra_only = extra_only or bool(kept)
    first = {}
    for i, (cand, good) in enumerate(zip(candidates, ok)):
        g = cand["group"]
        if good and g not in first:
            first[g] = i
    wanted = ["float32:r3"] if extra_only else \
        ([g for g in FLOAT_GROUPS[:3] if g in first] or ["float32:r0"]) + ["float32:bcast"]
    chosen = [first[g] for g in wanted if g in first]
    f64 = [first[g] for g in first if g.startswith("float64:")]
    if f64:
        chosen.append(min(f64))
    if not extra_only:
        chosen += [first[g] for g in first if g.startswith("int:")]
    return kept + sorted(set(chosen), key=chosen.index)


# ---------------------------------------------------------------- config
def module_names(path: str, root: Optional[str]) -> set:
    path = os.path.abspath(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    names = {stem}
    if root:
        rel = os.path.relpath(os.path.splitext(path)[0], root)
        parts = [p for p in rel.split(os.sep) if p not in ("", ".")]
        if parts and ".." not in parts:
            for i in range(len(parts)):
                names.add(".".join(parts[i:]))
    return names


def load_config(path: str) -> dict:
    """``{function_name: [candidate, ...]}`` configured for the file at ``path``."""
    from migrator import config

    pp = config.find_pyproject([path])
    if pp is None:
        return {}
    try:
        table = config.load(pp).get("verify", {})
    except config.ConfigError:
        return {}  # the migrate command reports a broken config; the verifier falls back to inference
    mods = module_names(path, os.path.dirname(pp))
    out = {}
    for key, spec in table.items():
        if not isinstance(key, str) or ":" not in key:
            continue
        mod, func = key.rsplit(":", 1)
        if mod not in mods:
            continue
        specs = spec if isinstance(spec, list) else [spec]
        cands = []
        for s in specs:
            if not isinstance(s, dict):
                continue
            args = [_arg(a, i) for i, a in enumerate(s.get("args", []))]
            kwargs = {k: _arg(v, 100 + n) for n, (k, v) in enumerate(dict(s.get("kwargs", {})).items())}
            cands.append({"args": args, "kwargs": kwargs, "group": "config"})
        if cands:
            out[func] = cands
    return out


def _arg(spec, offset: int):
    if isinstance(spec, dict):
        dtype = spec.get("dtype", "float32")
        if "value" in spec:
            return np.asarray(spec["value"], dtype=dtype)
        shape = spec.get("shape", [])
        lo, hi = spec.get("range", [None, None])
        if np.dtype(dtype).kind in "iu":
            lo = -3 if lo is None else lo
            hi = 4 if hi is None else hi
            n = int(np.prod(shape)) if shape else 1
            return (np.arange(n) % max(1, int(hi - lo)) + int(lo)).reshape(shape).astype(dtype)
        return smooth_values(shape, offset, lo, hi, dtype)
    if isinstance(spec, list):
        return np.asarray(spec, dtype="float32")
    return spec
