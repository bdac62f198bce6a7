"""Prove one nest of override blocks: graph, maps, ops, gradients, identity -> a result or a Refuse."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from migrator import optable
from migrator._plugins._override_model import Block, Candidate, Evidence, Refuse, Registration

#: how many gradients each built-in target returns (StopGradient: one None per input)
BUILTIN_ARITY = {"Identity": 1, "Neg": 1, "Sign": 1, "Floor": 1, "Round": 1, "Ceil": 1, "Rint": 1, "Add": 2, "AddV2": 2}


def descendants(block: Block) -> list[Block]:
    out = [block]
    for c in block.children:
        out += descendants(c)
    return out


@dataclass
class BlockResult:
    evidence: Evidence
    candidates: list[Candidate] = field(default_factory=list)
    dead_keys: dict[Block, list[str]] = field(default_factory=dict)
    targets: dict[int, Union[str, Registration]] = field(default_factory=dict)  # id(candidate) -> target
    registrations: set[int] = field(default_factory=set)  # ids of registrations the maps name
    reg_blocks: dict[int, list[Block]] = field(default_factory=dict)  # registration id -> blocks naming it


def typo_hint(key: str) -> str:
    known = optable.all_op_types()
    if key in known:
        return ""
    for t in known:
        if t.lower() == key.lower():
            return f" (op types are case-sensitive: did you mean {t!r}?)"
    return " (no TensorFlow op has this type)"


def analyse_block(prover, scanner, regs, block: Block, unsafe: bool) -> BlockResult:
    ev = Evidence(unsafe)
    res = BlockResult(ev)
    nest = descendants(block)
    for b in nest:
        prover.graph(b, ev)
    failures = []
    for b in nest:
        b.mapping = prover.parse_map(b, ev)
        for ref in b.mapping.values():
            try:
                prover.resolve_target(ref)
            except Refuse as e:
                failures.append(e)
    try:
        cands = scanner.scan_block(block, ev)
    except Refuse as e:
        if e.code == "TFG111" and failures:
            raise failures[0] from None  # the more basic problem first: that gradient does not exist
        raise
    used_types: dict[Block, set[str]] = {}
    for c in cands:
        owner = c.block
        while owner is not None and c.op_type not in owner.mapping:
            owner = owner.stmt_parent
        used_types.setdefault(owner or c.block, set()).add(c.op_type)  # type: ignore[arg-type]
        target = prover.resolve_target(c.target)
        res.targets[id(c)] = target
        n = c.n_inputs or len(c.input_names)
        if isinstance(target, str):
            if c.variadic:
                raise Refuse("TFG104", f"the built-in gradient {target} cannot serve a py_func with a list of inputs")
            want = BUILTIN_ARITY.get(target)
            if want is not None and n != want:
                raise Refuse(
                    "TFG104",
                    f"{{{c.op_type!r}: {target!r}}}: the {target} gradient returns {want} value(s) but {c.op_type} "
                    f"has {n} input(s); TF1 raises 'Num gradients {want} generated ... do not match num inputs {n}'",
                )
            if c.consts and target != "StopGradient":
                raise Refuse("TFG108", f"the {target} gradient of a {c.op_type} with a Python operand "
                                       "cannot be inlined; wrap it by hand")
            ev.prove(f"{{{c.op_type!r}: {target!r}}} is TF's built-in {target} gradient, inlined exactly")
        elif target.fn is None and target.fn_param is None:
            raise Refuse("TFG109", f"the function registered at line {target.line} is not a def the migrator can follow")
        regs.identity(c, c.block.scope if c.block is not None else block.scope, ev)
    for b in nest:
        keys = [k for k in b.mapping if k not in used_types.get(b, set())]
        res.dead_keys[b] = keys
        for k in keys:
            ev.prove(f"no op of type {k!r} with a gradient path is made in the block at line {b.line}{typo_hint(k)}: "
                     "every call and operator in it was checked against the op table and its variants")
        for ref in b.mapping.values():
            try:
                t = prover.resolve_target(ref)
            except Refuse:
                continue
            if isinstance(t, Registration):
                res.registrations.add(id(t))
                res.reg_blocks.setdefault(id(t), []).append(b)
    res.candidates = cands
    return res
