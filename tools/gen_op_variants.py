#!/usr/bin/env python
"""Generate ``migrator/data/op_variants.json``: where a call's op types depend on its inputs.

``tools/gen_op_table.py`` traces each public function once, on float32
tensors of rank 2 (``[None, 2]``) with two-element lists.  The op a call makes
can depend on what it is given (tf_gradient_semantics.md §2; measured here):

* dtype: ``tf.round`` on an integer tensor makes no op, ``tf.abs`` on complex
  makes ``ComplexAbs``, ``tf.cast`` to the input's own dtype makes none;
* rank (static, as the graph knows it): ``tf.matmul``/``@`` make ``MatMul`` on
  rank-2 inputs but ``BatchMatMulV2`` on rank >= 3 *or unknown rank*;
* list length: ``tf.concat([x], 0)`` is an ``Identity``, not a ``ConcatV2``.

This script re-traces every function of the op table under each of those
variants (all tensor arguments get the variant's dtype or shape together) and
records the op types that differ from the table's own trace.  The override
rewrite uses it to decide whether the source shows which op a call makes.
It also records each function's Python parameter defaults (``leaky_relu``'s
``alpha=0.2``), which ``op.get_attr`` falls back to, and the attributes of
every op type in the table.

Usage::

    python tools/gen_op_variants.py            # writes migrator/data/op_variants.json
    python tools/gen_op_variants.py --only tensorflow.matmul tensorflow.concat --stdout

Layout::

    {"tensorflow_version": "2.21.0",
     "primary": {"dtype": "float32", "rank": 2, "list_len": 2},
     "functions": {"tensorflow.matmul": {"rank": {"3": ["BatchMatMulV2"], "unknown": [...]},
                                         "failed": ["rank:0", "rank:1"]}, ...},
     "operators": {"MatrixMultiply": {"ops": ["MatMul"], "rank": {"3": ["BatchMatMulV2"], ...}}, ...},
     "param_defaults": {"tensorflow.nn.leaky_relu": {"alpha": 0.2, "name": null}, ...},
     "op_attrs": {"LeakyRelu": {"attrs": ["T", "alpha"], "input_type_attrs": ["T"]}, ...}}

``primary`` inside a function's entry says which dtype/shape its table trace
used when it is not float32 ``[None, 2]`` (``to_float`` needs a non-float input
to make an op).  A variant is listed under ``dtype``/``rank``/``list_len`` only when its op
types differ from the primary trace; ``failed`` names the variants whose call
raised (a program cannot call the function that way, or the generic arguments
did not fit it: the reader treats both as "unknown").
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gen_op_table as G  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "migrator", "data", "op_variants.json")
TABLE = os.path.join(REPO, "migrator", "data", "op_types.json")

PRIMARY_SHAPE = [None, 2]
DTYPES = ["float32", "float16", "float64", "bfloat16", "complex64", "int32", "bool"]
RANKS = {"0": [], "1": [None], "3": [None, 2, 2], "4": [None, 2, 2, 2], "unknown": None}
LIST_LENS = [1, 3]

_list_len = 2


class _SizedArgs(G._Args):
    """``_Args`` whose list parameters get ``_list_len`` tensors."""

    def value_for(self, fname, pname, param, alt):
        value = super().value_for(fname, pname, param, alt)
        if pname in self.lists and isinstance(value, list):
            self.lists[pname] = _list_len
            return [self.tensor(f"{pname}[{j}]") for j in range(_list_len)]
        return value


def _types(fn, name: str, variant) -> Optional[List[str]]:
    """Op types (creation order) of one traced call, or None when no call worked."""
    entry = G.trace_call(fn, name, variants=[variant])
    if entry is None:
        return None
    return [op["type"] for op in entry["ops"]]


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    name = getattr(value, "name", None)
    if type(value).__name__ == "DType" and isinstance(name, str):
        return {"dtype": name}
    return {"repr": repr(value)}


def param_defaults(fn) -> Dict[str, Any]:
    sig = G._signature(fn)
    if sig is None:
        return {}
    return {p.name: _plain(p.default) for p in sig.parameters.values()
            if p.default is not inspect.Parameter.empty}


def op_attrs(op_type: str) -> Optional[Dict[str, Any]]:
    od = G.op_def(op_type)
    if od is None:
        return None
    return {"attrs": sorted(a.name for a in od.attr),
            "input_type_attrs": [a.type_attr or None for a in od.input_arg]}


def primary_variant(fn, name: str, primary: List[str]):
    """The (dtype, shape) the table's trace used: the first of gen_op_table's
    variants that makes the recorded ops (float32 ``[None, 2]`` for most)."""
    for variant in G.VARIANTS:
        if _types(fn, name, variant) == primary:
            return variant
    return None


def variants_for(fn, name: str, primary: List[str], has_list: bool) -> Dict[str, Any]:
    global _list_len
    out: Dict[str, Any] = {}
    failed: List[str] = []
    base = primary_variant(fn, name, primary)
    if base is None:
        return {"failed": ["primary"]}
    base_dtype, base_shape = base
    if (base_dtype, base_shape) != ("float32", PRIMARY_SHAPE):
        out["primary"] = {"dtype": base_dtype, "shape": base_shape}
    for dt in DTYPES:
        if dt == base_dtype:
            continue
        got = _types(fn, name, (dt, base_shape))
        if got is None:
            failed.append(f"dtype:{dt}")
        elif got != primary:
            out.setdefault("dtype", {})[dt] = got
    for label, shape in RANKS.items():
        if shape == base_shape:
            continue
        got = _types(fn, name, (base_dtype, shape))
        if got is None:
            failed.append(f"rank:{label}")
        elif got != primary:
            out.setdefault("rank", {})[label] = got
    if has_list:
        saved = G._Args
        G._Args = _SizedArgs
        try:
            for n in LIST_LENS:
                _list_len = n
                got = _types(fn, name, base)
                if got is None:
                    failed.append(f"list_len:{n}")
                elif got != primary:
                    out.setdefault("list_len", {})[str(n)] = got
        finally:
            G._Args = saved
            _list_len = 2
    if failed:
        out["failed"] = failed
    return out


def _operator_types(name: str, dtype: str, shape) -> Optional[List[str]]:
    """Op types one Python operator makes on placeholders of ``dtype``/``shape``."""
    tf = G._import_tf()
    kind, f = G.OPERATORS[name]
    g = tf.Graph()
    with g.as_default():
        args = G._Args(tf, (dtype, shape))
        try:
            if kind == "binary":
                f(args.tensor("left"), args.tensor("right"))
            else:
                f(args.tensor("operand" if name != "Subscript" else "value"))
        except Exception:  # noqa: BLE001
            return None
        return [op["type"] for op in G._record_ops(g, args)]


def operator_variants() -> Dict[str, Any]:
    """Like :func:`variants_for`, for the Python operators (primary: float32 ``[2, 2]``,
    the shape ``gen_op_table.trace_operator`` uses)."""
    out: Dict[str, Any] = {}
    for name in sorted(G.OPERATORS):
        primary = _operator_types(name, "float32", [2, 2])
        if primary is None:
            continue
        entry: Dict[str, Any] = {}
        failed: List[str] = []
        for dt in DTYPES:
            if dt == "float32":
                continue
            got = _operator_types(name, dt, [2, 2])
            if got is None:
                failed.append(f"dtype:{dt}")
            elif got != primary:
                entry.setdefault("dtype", {})[dt] = got
        for label, shape in RANKS.items():
            got = _operator_types(name, "float32", [2] * len(shape) if shape is not None else None)
            if got is None:
                failed.append(f"rank:{label}")
            elif got != primary:
                entry.setdefault("rank", {})[label] = got
        if failed:
            entry["failed"] = failed
        entry["ops"] = primary
        out[name] = entry
    return out


def build(names: Optional[List[str]] = None, verbose: bool = False) -> Dict[str, Any]:
    tf = G._import_tf()
    with open(TABLE, encoding="utf-8") as fh:
        table = json.load(fh)
    funcs = G.public_functions(tf)
    wanted = sorted(names) if names else sorted(table["functions"])
    functions: Dict[str, Any] = {}
    defaults: Dict[str, Any] = {}
    for name in wanted:
        entry = table["functions"].get(name)
        impl = funcs.get(name, {}).get("v1") or funcs.get(name, {}).get("v2")
        if entry is None or impl is None:
            continue
        defaults[name] = param_defaults(impl)
        primary = [op["type"] for op in entry["ops"]]
        has_list = any(i and i.endswith("[*]") or (i and "[" in i) for op in entry["ops"] for i in op["inputs"])
        var = variants_for(impl, name, primary, has_list)
        if var:
            functions[name] = var
        if verbose:
            print(name, json.dumps(var), file=sys.stderr)
    attrs = {t: a for t in sorted(table["op_arity"]) if (a := op_attrs(t)) is not None}
    return {
        "tensorflow_version": tf.__version__,
        "primary": {"dtype": "float32", "rank": 2, "list_len": 2},
        "functions": functions,
        "operators": operator_variants(),
        "param_defaults": defaults,
        "op_attrs": attrs,
    }


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--stdout", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    ns = ap.parse_args(argv)
    data = build(ns.only, verbose=ns.verbose)
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True) + "\n"
    if ns.stdout:
        print(json.dumps(data, sort_keys=True, indent=1))
    else:
        with open(ns.out, "w", encoding="ascii") as fh:
            fh.write(text)
        print(f"wrote {ns.out}: {len(data['functions'])} functions with variants, {len(text)} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
