"""Numerical comparison of captured values (numpy only, no TensorFlow).

Rules:

* ``None`` equals only ``None`` (a missing gradient is not a zero gradient);
* shapes must match exactly, and so must dtypes;
* NaN equals NaN only at the same positions; infinities must agree exactly;
* floats compare with ``|a - b| <= atol + rtol * |a|`` (``a`` the original),
  with dtype-dependent defaults (float16/bfloat16 looser), overridable;
* everything else (ints, bools, strings) compares exactly.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

#: (rtol, atol) per float width in bytes.
DEFAULT_TOLERANCES = {
    2: (1e-2, 1e-3),   # float16, bfloat16
    4: (1e-5, 1e-6),   # float32
    8: (1e-9, 1e-12),  # float64
}


def tolerances(dtype, rtol: Optional[float] = None, atol: Optional[float] = None):
    dt = np.dtype(dtype)
    base = DEFAULT_TOLERANCES.get(dt.itemsize if dt.kind == "f" else 4, DEFAULT_TOLERANCES[4])
    if dt.kind == "c":
        base = DEFAULT_TOLERANCES.get(dt.itemsize // 2, DEFAULT_TOLERANCES[4])
    return (base[0] if rtol is None else rtol, base[1] if atol is None else atol)


@dataclass
class Outcome:
    equal: bool
    max_abs_err: Optional[float] = None
    max_rel_err: Optional[float] = None
    detail: str = ""


def _fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, np.generic):
        return repr(v.item())
    return repr(v)


def _index(flat_index: int, shape) -> str:
    if not shape:
        return "()"
    return str(tuple(int(i) for i in np.unravel_index(flat_index, shape)))


def compare_values(a, b, rtol: Optional[float] = None, atol: Optional[float] = None) -> Outcome:
    """Compare one original value ``a`` with one migrated value ``b``."""
    if a is None or b is None:
        if a is None and b is None:
            return Outcome(True, 0.0, 0.0, "both None")
        return Outcome(False, None, None,
                       f"original {'None' if a is None else 'a value'}, migrated {'None' if b is None else 'a value'}")
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape:
        return Outcome(False, None, None, f"shape {a.shape} vs {b.shape}")
    if a.dtype != b.dtype:
        return Outcome(False, None, None, f"dtype {a.dtype} vs {b.dtype}")
    if a.dtype.kind not in "fc":
        if a.dtype.kind in "OSU" or a.dtype.kind == "V":
            eq = np.array([x == y for x, y in zip(a.ravel().tolist(), b.ravel().tolist())], dtype=bool)
        else:
            eq = np.asarray(a == b)
        if eq.all():
            return Outcome(True, 0.0, 0.0)
        i = int(np.flatnonzero(~eq.ravel())[0])
        return Outcome(False, None, None,
                       f"index {_index(i, a.shape)}: original {_fmt(a.ravel()[i])}, migrated {_fmt(b.ravel()[i])}")
    r, t = tolerances(a.dtype, rtol, atol)
    a64 = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64).ravel()
    b64 = b.astype(np.complex128 if b.dtype.kind == "c" else np.float64).ravel()
    nan_a, nan_b = np.isnan(a64), np.isnan(b64)
    bad = nan_a != nan_b
    inf = np.isinf(a64) | np.isinf(b64)
    bad |= inf & ~(nan_a | nan_b) & (a64 != b64)
    finite = ~(nan_a | nan_b | inf)
    diff = np.zeros(a64.shape)
    diff[finite] = np.abs(a64[finite] - b64[finite])
    bad |= finite & (diff > t + r * np.abs(a64))
    max_abs = float(diff.max()) if diff.size else 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(finite & (np.abs(a64) > 0), diff / np.where(np.abs(a64) > 0, np.abs(a64), 1.0), 0.0)
    max_rel = float(rel.max()) if rel.size else 0.0
    if not bad.any():
        return Outcome(True, max_abs, max_rel)
    i = int(np.flatnonzero(bad)[0])
    return Outcome(False, max_abs, max_rel,
                   f"index {_index(i, a.shape)}: original {_fmt(a.ravel()[i])}, migrated {_fmt(b.ravel()[i])}")


def compare_lists(a: list, b: list, labels: list, rtol=None, atol=None) -> Outcome:
    """Compare aligned lists of values; the first difference wins the detail."""
    if len(a) != len(b):
        return Outcome(False, None, None, f"{len(a)} values vs {len(b)}")
    max_abs, max_rel = 0.0, 0.0
    for x, y, label in zip(a, b, labels):
        o = compare_values(x, y, rtol, atol)
        if not o.equal:
            return Outcome(False, o.max_abs_err, o.max_rel_err, f"{label}: {o.detail}")
        max_abs = max(max_abs, o.max_abs_err or 0.0)
        max_rel = max(max_rel, o.max_rel_err or 0.0)
    return Outcome(True, max_abs, max_rel)
