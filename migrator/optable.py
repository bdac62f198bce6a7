"""Read-only access to the traced API-to-op-type table (``data/op_types.json``).

The table is generated from TensorFlow by ``tools/gen_op_table.py`` and shipped
as data, so rewriting never imports TensorFlow.  Importing this module is
cheap: it imports neither TensorFlow nor libcst, and the JSON is read once, on
first use.

Names are normalised public names as produced by :func:`migrator.tfnames.normalize`
(``tensorflow.sign``, ``tensorflow.nn.relu``, ``tensorflow.py_func``; the
``compat.v1.`` part is stripped).  The top-level entry of a function describes
the TF1 (``tf.compat.v1``) function of that name; when the TF2 function of the
same name differs, its entry is under ``"v2"``.

An op's ``inputs`` list names, per op input, the call parameter feeding it
(``"x"``, ``"values[1]"``, ``"inp[*]"`` for a whole list feeding a variadic
input), or ``None`` for a constant or an op made by the same call.
"""
from __future__ import annotations

import functools
import json
import os
from typing import Any, Dict, List, Optional, Tuple

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "op_types.json")

__all__ = [
    "function_info", "op_types", "operator_info", "op_default", "arity",
    "tf_version", "all_op_types", "functions_creating", "possible_op_types", "makes_no_ops", "table",
    "function_variants", "operator_variants", "param_defaults", "op_attrs", "tf2_status",
]


@functools.lru_cache(maxsize=None)
def table() -> Dict[str, Any]:
    """The whole table (loaded once). Treat it as read-only."""
    with open(_PATH, "r", encoding="utf-8") as f:
        return json.load(f)


def _normalise(name: str) -> str:
    if name.startswith("tf."):
        name = "tensorflow." + name[3:]
    for prefix in ("tensorflow.compat.v1.", "tensorflow.compat.v2."):
        if name.startswith(prefix):
            return "tensorflow." + name[len(prefix):]
    return name


def function_info(name: str, api: str = "v1") -> Optional[Dict[str, Any]]:
    """The entry for a public function, or None if it is not in the table.

    ``api="v2"`` returns the TF2 variant when it differs from the TF1 one
    (otherwise the shared entry).  ``tf.``/``compat.v1`` spellings are accepted.
    """
    entry = table()["functions"].get(_normalise(name))
    if entry is None:
        return None
    if api == "v2" and "v2" in entry:
        merged = dict(entry)
        merged.update(entry["v2"])
        merged.pop("v2", None)
        return merged
    return entry


def op_types(name: str, api: str = "v1") -> Optional[List[str]]:
    """Op types the call creates, in creation order; None for an unknown function.

    An empty list never occurs for a known function (calls that create no op
    are not in the table).
    """
    entry = function_info(name, api)
    if entry is None:
        return None
    return [op["type"] for op in entry["ops"]]


def possible_op_types(name: str) -> Optional[List[str]]:
    """Every op type the call may create: default trace, the TF2 variant,
    argument variants (``stateful=False``...) and the fully-known-shape trace.
    Sorted; None for an unknown function."""
    entry = function_info(name)
    if entry is None:
        return None
    found = set()
    for sub in (entry, entry.get("v2") or {}):
        found.update(op["type"] for op in sub.get("ops", []))
        found.update(sub.get("static_shape_ops", []))
        for ops in sub.get("arg_variants", {}).values():
            found.update(op["type"] for op in ops)
    return sorted(found)


def makes_no_ops(name: str) -> bool:
    """True for functions whose traced call (with Python-constant arguments)
    made only constants/placeholders, e.g. ``tf.zeros([2, 2])``, ``tf.no_op``.
    With tensor arguments some of them do make ops (``tf.zeros(tf.shape(x))``
    makes ``Fill``)."""
    return _normalise(name) in _no_op_set()


@functools.lru_cache(maxsize=None)
def _no_op_set() -> frozenset:
    # `tf.constant` of Python values makes one Const op, which has no inputs: no gradient function
    # of it ever runs (the tracer called it with a tensor, which TF1 refuses, so it is not listed)
    return frozenset(table().get("no_op_functions", ())) | {"tensorflow.constant"}


def operator_info(operator: str) -> Optional[Dict[str, Any]]:
    """Entry for a libcst operator class name (``"Multiply"``, ``"Minus"``,
    ``"BitAnd"``, ``"Subscript"``, ``"AddAssign"``; also ``"abs"`` for the
    builtin).  ``type`` is None where TF1 graph tensors make no op (``==``)."""
    return table()["operators"].get(operator)


_MISSING = object()


def op_default(op_type: str, attr: str, default: Any = _MISSING) -> Any:
    """Default value of an op attribute from its op def (``LeakyRelu.alpha`` → 0.2).

    Types are given by name (``"float32"``), floats rounded to float32's
    shortest repr.  Raises ``KeyError`` when unknown unless ``default`` is given.
    """
    attrs = table()["op_defaults"].get(op_type, {})
    if attr in attrs:
        return attrs[attr]
    if default is not _MISSING:
        return default
    raise KeyError(f"{op_type}.{attr}")


def arity(op_type: str) -> Optional[Tuple[int, int]]:
    """``(num_inputs, num_outputs)`` from the op def; ``-1`` for a variadic count."""
    a = table()["op_arity"].get(op_type)
    return None if a is None else (a[0], a[1])


def tf_version() -> str:
    """TensorFlow version the table was generated with."""
    return table()["tensorflow_version"]


def all_op_types() -> List[str]:
    """Every op type the table knows (sorted)."""
    return sorted(table()["op_arity"])


@functools.lru_cache(maxsize=None)
def _creators() -> Dict[str, Tuple[str, ...]]:
    out: Dict[str, set] = {}
    for name in table()["functions"]:
        for t in possible_op_types(name) or ():
            out.setdefault(t, set()).add(name)
    return {t: tuple(sorted(v)) for t, v in out.items()}


def functions_creating(op_type: str) -> Tuple[str, ...]:
    """Public functions that may create an op of ``op_type`` (sorted)."""
    return _creators().get(op_type, ())


# -- variants (data/op_variants.json, tools/gen_op_variants.py) -----------------

_VARIANTS_PATH = os.path.join(os.path.dirname(_PATH), "op_variants.json")
_API_PATH = os.path.join(os.path.dirname(_PATH), "tf_api.json")


@functools.lru_cache(maxsize=None)
def variant_table() -> Dict[str, Any]:
    """The variants table (loaded once): where op types depend on dtype, rank, list length."""
    with open(_VARIANTS_PATH, "r", encoding="utf-8") as f:
        return json.load(f)


def function_variants(name: str) -> Dict[str, Any]:
    """``{"dtype": {dt: types}, "rank": {r: types}, "list_len": {n: types}, "failed": [...],
    "primary": {...}}`` for a public function; ``{}`` when no variant differs (or unknown)."""
    return variant_table()["functions"].get(_normalise(name), {})


def operator_variants(operator: str) -> Optional[Dict[str, Any]]:
    """The same for a libcst operator class name (``"MatrixMultiply"``), with its
    primary ``ops``; None for an operator that was not traced."""
    return variant_table()["operators"].get(operator)


def param_defaults(name: str) -> Optional[Dict[str, Any]]:
    """Python default of each parameter of a public function (``leaky_relu``: alpha 0.2);
    a dtype default is ``{"dtype": name}``, anything else ``{"repr": ...}``."""
    return variant_table()["param_defaults"].get(_normalise(name))


def op_attrs(op_type: str) -> Optional[Dict[str, Any]]:
    """``{"attrs": [...], "input_type_attrs": [...]}`` from the op def."""
    return variant_table()["op_attrs"].get(op_type)


@functools.lru_cache(maxsize=None)
def _api() -> Dict[str, Any]:
    with open(_API_PATH, "r", encoding="utf-8") as f:
        data = json.load(f)
    return {"same": frozenset(data["same"]), "differs": frozenset(data["differs"]), "renamed": data["renamed"]}


def tf2_status(name: str) -> Tuple[str, Optional[str]]:
    """Whether the TF1 name ``name`` (``tensorflow.log``) means the same in TF2:
    ``("same", None)``, ``("differs", None)`` (TF2 has the name, another object),
    ``("renamed", "tensorflow.math.log")`` (the very same object under another
    name in both), or ``("v1_only", None)``."""
    short = _normalise(name)
    short = short[len("tensorflow."):] if short.startswith("tensorflow.") else short
    api = _api()
    if short in api["same"]:
        return "same", None
    if short in api["differs"]:
        return "differs", None
    if short in api["renamed"]:
        return "renamed", "tensorflow." + api["renamed"][short]
    return "v1_only", None
