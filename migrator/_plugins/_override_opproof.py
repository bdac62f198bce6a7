"""Which op a call or an operator makes, given what the source shows about its inputs.

The op table traced each function once (float32, static rank 2, lists of
two); the variants table (``tools/gen_op_variants.py``) records where the ops
differ by dtype, static rank or list length.  Given the dtypes, ranks and
lengths the source shows (``_override_values``), :func:`possible_ops` returns
every op-type list the call can make; :func:`decide` turns that into "no
mapped op", "exactly this op, made directly", or a refusal.

Two facts keep this from refusing everything (docs/soundness.md):

* only differentiable dtypes matter: TF1 never calls a gradient function on
  an integer or bool path (``{"Cast": "Identity"}`` around an int32 cast still
  gives None), and a tape gives None there too;
* a variant whose traced call raised is a call the program cannot make.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from migrator import optable
from migrator._plugins._override_tfvalues import DIFFERENTIABLE, PYTHON, TENSOR, UNKNOWN, UNKNOWN_RANK, Value

_RANK_KEYS = {0: "0", 1: "1", 3: "3", UNKNOWN_RANK: "unknown"}


def _rank_key(r: int) -> str:
    return _RANK_KEYS.get(r, "4" if r >= 4 else str(r))


def _len_key(n: int) -> str:
    return "1" if n == 1 else "3" if n >= 3 else str(n)


@dataclass
class Inputs:
    """What the source shows about the inputs of one call: unknown fields are None."""

    dtypes: Optional[frozenset] = None
    ranks: Optional[frozenset] = None
    lengths: Optional[frozenset] = None
    labels: list[str] = field(default_factory=list)  # `x`, `w`: the input expressions, for messages
    origin: frozenset = field(default_factory=frozenset)

    @classmethod
    def of(cls, values: list[Value], labels: list[str], lengths: Optional[frozenset] = None) -> "Inputs":
        tensors = [v for v in values if v.kind != PYTHON]
        dtypes: Optional[frozenset] = frozenset()
        ranks: Optional[frozenset] = frozenset()
        for v in tensors:
            # an unknown kind with dtypes: "if a tensor, one of these" (_override_flow)
            dtypes = None if dtypes is None or v.kind not in (TENSOR, UNKNOWN) or v.dtypes is None else dtypes | v.dtypes
            ranks = None if ranks is None or v.kind != TENSOR or v.ranks is None else ranks | v.ranks
        origin = frozenset().union(*(v.origin for v in values)) if values else frozenset()
        return cls(dtypes, ranks, lengths, labels, origin)


@dataclass
class Possible:
    lists: set  # tuples of op types
    primary: tuple
    unknown: list[str]  # dims the source did not show: "dtype", "rank", "length"
    facts: list[str]  # what was shown: "float32", "static rank 2"
    differentiable: bool = True  # False: no input can carry a gradient (int/bool only)
    bad: dict = field(default_factory=dict)  # dim -> values whose ops differ from the primary


def _dims(var: dict, base: tuple, inputs: Inputs, has_lists: bool) -> dict:
    """dim -> (values to consider, neutral?, known?)."""
    base_dtype, base_rank = base
    dtypes = DIFFERENTIABLE if inputs.dtypes is None else inputs.dtypes & DIFFERENTIABLE
    ranks = frozenset({0, 1, 2, 3, 4, UNKNOWN_RANK}) if inputs.ranks is None else inputs.ranks
    out = {
        "dtype": (dtypes, dtypes == {base_dtype}, inputs.dtypes is not None),
        "rank": (ranks, ranks == {base_rank}, inputs.ranks is not None),
    }
    if has_lists:
        lengths = frozenset({1, 2, 3}) if inputs.lengths is None else inputs.lengths
        out["length"] = (lengths, lengths == {2}, inputs.lengths is not None)
    return out


def _ops_for(var: dict, dim: str, value, primary: tuple) -> Optional[tuple]:
    key = {"dtype": lambda v: v, "rank": _rank_key, "length": _len_key}[dim](value)
    table = {"dtype": "dtype", "rank": "rank", "length": "list_len"}[dim]
    if f"{'list_len' if dim == 'length' else dim}:{key}" in var.get("failed", []):
        return None  # the call raises for such inputs
    listed = var.get(table, {}).get(key)
    return tuple(listed) if listed is not None else primary


def possible_ops(var: dict, primary: tuple, inputs: Inputs, has_lists: bool, extra: tuple = ()) -> Possible:
    """Every op-type list the call can make (``extra``: other traced lists, e.g. argument variants)."""
    prim = var.get("primary") or {}
    base_dtype = prim.get("dtype", "float32")
    shape = prim.get("shape", [None, 2])
    base = (base_dtype, len(shape) if shape is not None else UNKNOWN_RANK)
    dims = _dims(var, base, inputs, has_lists)
    if inputs.dtypes is not None and not inputs.dtypes & DIFFERENTIABLE:
        return Possible(set(), primary, [], [f"{'/'.join(sorted(inputs.dtypes))} inputs"], differentiable=False)
    lists: set = set()
    unknown, facts, bad = [], [], {}
    for dim, (vals, neutral, known) in dims.items():
        got = {}
        for v in vals:
            ops = _ops_for(var, dim, v, primary)
            if ops is not None:
                got[v] = ops
        if known:
            facts.append(_fact(dim, vals))
        if neutral or not got or all(ops == primary for ops in got.values()):
            continue  # this dim changes nothing here
        bad[dim] = sorted((v for v, ops in got.items() if ops != primary), key=str)
        if bad[dim] and (not known or any(ops == primary for ops in got.values())):
            unknown.append(dim)  # shown only as a set that holds both (tanh of an unknown: float or complex)
        lists |= set(got.values())
    if not lists:
        lists = {primary}
    return Possible(lists | set(extra), primary, unknown, facts, bad=bad)


def _fact(dim: str, vals) -> str:
    if dim == "dtype":
        if set(vals) >= set(DIFFERENTIABLE - {"complex64"}):
            return "floating inputs" if "complex64" not in vals else "floating or complex inputs"
        return "/".join(sorted(vals)) + " inputs"
    vals = sorted(vals, key=str)
    if dim == "rank":
        shown = ["unknown" if r == UNKNOWN_RANK else str(r) for r in vals]
        return "static rank " + "/".join(shown)
    return "lists of " + "/".join(str(v) for v in vals)


@dataclass
class Verdict:
    """What a call makes, of the mapped op types."""

    kind: str  # "none" | "op" | "inside" | "ambiguous"
    op_type: Optional[str] = None
    types: list[str] = field(default_factory=list)


def decide(possible: Possible, mapped, direct: bool) -> Verdict:
    """``none``: no mapped op in any list; ``op``: every list is exactly one op of one
    mapped type, made directly by the call; ``inside``: a mapped op made among
    others; ``ambiguous``: the lists disagree."""
    if not possible.differentiable:
        return Verdict("none")
    hits = [tuple(t for t in ops if t in mapped) for ops in possible.lists]
    if not any(hits):
        return Verdict("none")
    kinds = {h for h in hits}
    if len(kinds) == 1:
        (types,) = kinds
        if len(types) == 1 and all(len(ops) == 1 for ops in possible.lists) and direct:
            return Verdict("op", types[0])
        return Verdict("inside", types[0], sorted(set(types)))
    return Verdict("ambiguous", None, sorted({t for h in hits for t in h}))


def assumption_text(possible: Possible, labels: list[str]) -> str:
    """In words: the inputs are what the table traced, in the dims the source did not show."""
    who = ", ".join(f"`{x}`" for x in labels) or "the inputs"
    parts = []
    for dim in possible.unknown:
        bad = possible.bad.get(dim, [])
        if dim == "dtype":
            parts.append(f"{who} {'is' if len(labels) == 1 else 'are'} not {'/'.join(bad)}")
        elif dim == "rank":
            parts.append(f"{who} {'has' if len(labels) == 1 else 'have'} static rank 2")
        else:
            parts.append("the list has two or more tensors")
    return "; ".join(parts)


def function_possible(name: str, info: dict, inputs: Inputs, given: set[str], has_lists: bool,
                      cast_target: Optional[str] = None, not_none: frozenset = frozenset()) -> Possible:
    """:func:`possible_ops` for a public TF function (``given``: parameters the call passes;
    ``not_none``: those given a value that is surely not None)."""
    var = optable.function_variants(name)
    primary = tuple(op["type"] for op in info["ops"])
    extra = [tuple(info["static_shape_ops"])] if info.get("static_shape_ops") else []
    defaults = optable.param_defaults(name) or {}
    for key, ops in info.get("arg_variants", {}).items():
        if key == "dtype=input dtype":
            continue  # a cast to the input's own dtype: decided from the dtypes below
        pairs = [part.split("=", 1) for part in key.split(",")]
        names = {p.strip() for p, _ in pairs}
        if all(v.strip() == "None" for _, v in pairs):
            # traced with these parameters None (`tf.where(c)` makes Where, `tf.where(c, x, y)` Select)
            if names & not_none:
                continue
            if not names & given and all(p in defaults and defaults[p] is None for p in names):
                # left out, so None: only this variant (`tf.where(c)`: a Where of a bool condition, whose
                # int64 output no gradient reaches)
                return Possible(set(), tuple(op["type"] for op in ops), [], ["a bool condition alone"],
                                differentiable=False)
        if names & given:
            extra.append(tuple(op["type"] for op in ops))
    if "dtype=input dtype" in info.get("arg_variants", {}):
        return _cast_possible(primary, inputs, cast_target, extra)
    return possible_ops(var, primary, inputs, has_lists, tuple(extra))


def _cast_possible(primary: tuple, inputs: Inputs, target: Optional[str], extra) -> Possible:
    """``tf.cast(x, D)`` makes a Cast unless x already has dtype D."""
    dtypes = DIFFERENTIABLE if inputs.dtypes is None else inputs.dtypes & DIFFERENTIABLE
    if inputs.dtypes is not None and not dtypes:
        return Possible(set(), primary, [], [], differentiable=False)
    facts = [f"{'/'.join(sorted(inputs.dtypes))} input" if inputs.dtypes is not None else "",
             f"cast to {target}" if target else ""]
    facts = [f for f in facts if f]
    if target is None:
        return Possible({primary, ()} | set(extra), primary, ["target dtype"], facts)
    lists = {() if d == target else primary for d in dtypes}
    unknown = ["dtype"] if inputs.dtypes is None and len(lists) > 1 else []
    return Possible(lists | set(extra), primary, unknown, facts, bad={"dtype": [target]})


def operator_possible(op_cls: str, inputs: Inputs) -> Optional[Possible]:
    var = optable.operator_variants(op_cls)
    if var is None:
        return None
    return possible_ops(var, tuple(var["ops"]), inputs, False)


def facts_text(possible: Possible) -> str:
    """What the source showed about the inputs, for the proof line."""
    if not possible.differentiable:
        return "; ".join(possible.facts) or "its inputs carry no gradient"
    if len(possible.lists) == 1 and not possible.unknown and not possible.facts:
        return "whatever the dtype and rank"
    return ", ".join(possible.facts) or "the same op for every dtype and rank it accepts"
