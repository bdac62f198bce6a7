"""Composite TF APIs under an override: write the call as the primitive ops it makes.

``tf.clip_by_value(x, -1.0, 1.0)`` inside ``gradient_override_map({"Minimum": ..., "Maximum":
...})`` makes a ``Minimum`` and a ``Maximum`` op, both overridden, and neither can be wrapped from
the call site (TFG108).  Written as ``tf.maximum(tf.minimum(x, 1.0), -1.0)``, each op is a call of
its own, which the override rule then wraps as any other (issue 11, "composite APIs").

The expansion must equal the API's forward.  For each API here that is shown from:

* the op table: TF1 and TF2 make exactly these op types, on these inputs, in this order;
* the arguments: the bounds are numeric literals (scalars: ``clip_by_value`` asserts that the
  result keeps the shape of ``t``, which a broadcast against a scalar never changes; its dtype
  conversion of a Python bound to ``t``'s dtype is the one ``tf.minimum`` makes);
* ``t`` is a dense tensor by the value analysis (a TF op's output, arithmetic on one, or what
  every project caller passes): ``clip_by_value`` keeps a ``tf.IndexedSlices`` sparse, where the
  primitive ops would make it dense and clip its implicit zeros too.

The expansion is kept only when the block it sits in migrates (``overrides.OverridesPlugin``);
otherwise the file is planned from its own text, byte for byte.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from migrator import optable
from migrator._plugins._override_tfvalues import TENSOR

#: API -> its parameters, and the primitive calls it is written as: (TF function, the parameter
#: feeding its first input (None: the previous op's output), the parameter feeding its second)
EXPANSIONS = {
    "tensorflow.clip_by_value": (("t", "clip_value_min", "clip_value_max", "name"),
                                 [("minimum", "t", "clip_value_max"), ("maximum", None, "clip_value_min")]),
}
#: the op types those primitive calls make, as the op table must show the API making them
_OP_TYPE = {"minimum": "Minimum", "maximum": "Maximum"}


def table_agrees(api: str) -> bool:
    """The op table shows ``api`` making exactly the expansion's ops, on its inputs, in TF1 and TF2."""
    _params, steps = EXPANSIONS[api]
    for version in ("v1", "v2"):
        info = optable.function_info(api, version)
        ops = info.get("ops") if info else None
        if not ops or len(ops) != len(steps):
            return False
        for op, (fn, first, second) in zip(ops, steps):
            if op.get("type") != _OP_TYPE[fn] or list(op.get("inputs") or []) != [first, second]:
                return False
            one = optable.function_info(f"tensorflow.{fn}", version)
            if not one or not one.get("single_op") or [o.get("type") for o in one["ops"]] != [_OP_TYPE[fn]]:
                return False
    return True


def expand(found, values) -> Optional[tuple[cst.Module, dict]]:
    """The module with each provable composite call in an override block written as its ops,
    and {block line: the proof}; None when there is none."""
    replace: dict = {}
    proofs: dict[int, list[str]] = {}
    for block in found.col.blocks:
        keys = _literal_keys(block.call)
        if not keys:
            continue
        for call in _calls_in_body(block.node):
            api = found.col.tf(call)
            if api not in EXPANSIONS or not {_OP_TYPE[f] for f, _a, _b in EXPANSIONS[api][1]} & keys:
                continue
            new = _expansion(found, values, block, call, api)
            if new is not None:
                replace[call] = new
                proofs.setdefault(block.line, []).append(
                    f"`{found.module.code_for_node(call)}` is written as `{found.module.code_for_node(new)}`: "
                    f"the op table shows {api} making {' then '.join(_OP_TYPE[f] for f, _a, _b in EXPANSIONS[api][1])} "
                    "on these inputs in TF1 and TF2; the bounds are scalar literals and the clipped value is a dense "
                    "tensor, so the values, shapes and dtypes are the same")
    if not replace:
        return None

    class Swap(cst.CSTTransformer):
        def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
            return replace.get(original, updated)

    return found.module.visit(Swap()), proofs


def _literal_keys(call: cst.Call) -> set:
    arg = call.args[0].value if call.args else None
    if not isinstance(arg, cst.Dict):
        return set()
    return {e.key.evaluated_value for e in arg.elements
            if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)}


def _calls_in_body(with_node: cst.With) -> list[cst.Call]:
    found: list[cst.Call] = []

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node) -> bool:
            return False  # runs when called, perhaps outside the block

        def visit_Lambda(self, node) -> bool:
            return False

        def visit_ClassDef(self, node) -> bool:
            return False

        def visit_Call(self, node: cst.Call) -> None:
            found.append(node)

    with_node.body.visit(V())
    return found


def _expansion(found, values, block, call: cst.Call, api: str) -> Optional[cst.BaseExpression]:
    params, steps = EXPANSIONS[api]
    if not table_agrees(api) or not isinstance(call.func, cst.Attribute) or "\n" in found.module.code_for_node(call):
        return None  # a call over several lines would move the lines after it
    bound: dict = {}
    for i, a in enumerate(call.args):
        if a.star:
            return None
        name = a.keyword.value if a.keyword is not None else (params[i] if i < len(params) else None)
        if name not in params or name in bound:
            return None
        bound[name] = a.value
    if any(p not in bound for p in params[:3]) or not all(_scalar_literal(bound[p]) for p in params[1:3]):
        return None
    if values.of(bound["t"], block.scope).kind != TENSOR:
        return None  # perhaps a Python value, or a tf.IndexedSlices (a gradient), which clip keeps sparse
    prev: Optional[cst.BaseExpression] = None
    for fn, first, second in steps:
        args = [cst.Arg(bound[first] if first is not None else prev), cst.Arg(bound[second])]
        prev = cst.Call(call.func.with_changes(attr=cst.Name(fn)), [a.with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for a in args[:-1]] + args[-1:])
    if "name" in bound:  # clip_by_value names its last op
        prev = prev.with_changes(args=[*prev.args[:-1], prev.args[-1].with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))), cst.Arg(bound["name"], keyword=cst.Name(
                "name"), equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))])
    return prev


def _scalar_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float))


def expansion_hint(api: str) -> str:
    """What a TFG108 on a composite API could be migrated with (the expansion's conditions)."""
    if api not in EXPANSIONS:
        return ""
    return ("; the migrator writes it as the ops it makes only when its bounds are number literals and the value it "
            "clips is shown to be a dense tensor (a TF op's output, or what every project caller passes): "
            "clip_by_value keeps a tf.IndexedSlices sparse")
