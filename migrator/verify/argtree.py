"""Probe arguments as plain data (no TensorFlow here; pickled between processes).

An argument is a tree: lists, tuples and dicts (string keys) of leaves.  A
leaf is

* :class:`Tensor`: becomes a constant tensor; a float one is a
  differentiation source;
* :class:`Var`: becomes a variable (trainable or not); a float one is a source;
* :class:`Numpy`: passed as the numpy array it is;
* anything else (int, float, str, bool, None): passed as it is.

A bare ``numpy.ndarray`` is read as a :class:`Tensor` (configured and inferred
inputs are written that way).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Tensor:
    value: np.ndarray


@dataclass
class Var:
    value: np.ndarray
    trainable: bool = True


@dataclass
class Numpy:
    value: np.ndarray


def leaf(x):
    """A bare ndarray is a Tensor."""
    return Tensor(x) if isinstance(x, np.ndarray) else x


def is_source(x) -> bool:
    x = leaf(x)
    return isinstance(x, (Tensor, Var)) and x.value.dtype.kind == "f"


def flatten(tree) -> list:
    """Leaves in a fixed order (dict keys sorted)."""
    if isinstance(tree, (list, tuple)):
        return [y for x in tree for y in flatten(x)]
    if isinstance(tree, dict):
        return [y for k in sorted(tree) for y in flatten(tree[k])]
    return [leaf(tree)]


def rebuild(tree, leaves):
    """``tree`` with its leaves replaced, in :func:`flatten` order."""
    it = iter(leaves)

    def go(t):
        if isinstance(t, list):
            return [go(x) for x in t]
        if isinstance(t, tuple):
            return tuple(go(x) for x in t)
        if isinstance(t, dict):
            out = {}
            for k in sorted(t):
                out[k] = go(t[k])
            return {k: out[k] for k in t}
        return next(it)

    return go(tree)


def describe(x) -> str:
    """``float32[2, 3]``, ``var float32[3]``, ``[float32[3], 2]``, ``2``."""
    if isinstance(x, list):
        return "[" + ", ".join(describe(y) for y in x) + "]"
    if isinstance(x, tuple):
        return "(" + ", ".join(describe(y) for y in x) + ("," if len(x) == 1 else "") + ")"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {describe(v)}" for k, v in x.items()) + "}"
    x = leaf(x)
    if isinstance(x, Tensor):
        return f"{x.value.dtype}{list(x.value.shape)}"
    if isinstance(x, Var):
        return f"{'var' if x.trainable else 'non-trainable var'} {x.value.dtype}{list(x.value.shape)}"
    if isinstance(x, Numpy):
        return f"ndarray {x.value.dtype}{list(x.value.shape)}"
    text = repr(x)
    return text if len(text) <= 30 else text[:27] + "..."


def signature(tree):
    """Structure, shapes, dtypes and Python values (never array values): what makes two calls alike."""
    if isinstance(tree, (list, tuple)):
        return (type(tree).__name__,) + tuple(signature(x) for x in tree)
    if isinstance(tree, dict):
        return ("dict",) + tuple((k, signature(tree[k])) for k in sorted(tree))
    x = leaf(tree)
    if isinstance(x, (Tensor, Var, Numpy)):
        return (type(x).__name__, str(x.value.dtype), tuple(x.value.shape))
    try:
        hash(x)
    except TypeError:
        return repr(x)
    return x


__all__ = ["Numpy", "Tensor", "Var", "describe", "flatten", "is_source", "leaf", "rebuild", "signature"]
