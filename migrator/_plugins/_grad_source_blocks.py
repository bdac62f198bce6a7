"""Statements at the head of a tape's slice that only remake a source: they run before the tape,
which watches what they leave (docs/soundness.md, "Watches"). Part of the proof in ``_grad_proof``."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from migrator._plugins._dataflow import _names_in, touches
from migrator._plugins._grad_model import Call
from migrator._plugins._grad_values import is_fresh


def past_source_blocks(proof, c: Call, S: list, s: int, sources: list, k: int) -> int:
    """The tape's first item (``proof``: the call's prover), past compound statements at the head
    of the slice that only remake one source (`if i == 0: X = X + noise`, a loop of
    `X = X - lr * g`), with the lines before
    them that only make it too. TF1 differentiated the tensor they leave in it, made by a new op
    (never an alias of an older value), so no op of theirs lies on a path from it: the tape
    opens after them and watches the source when it opens. Not when they read another source
    (an adversarial run: `X = x * 1.0` before the `if`, with `x` a source too, lost x -> X),
    remake two, call code that may keep a value (`record(X)`), or a line among them that is
    not in the slice reads a source (`globals()["H"] = X * 3.0`)."""
    keys = {src.key for src in sources}
    order = sorted(i for i in S if not proof.flat[i].inert)
    start, chain, made_key = s, [], None
    for n, i in enumerate(order[:-1]):
        it = proof.flat[i]
        if i >= k or it.dead or it.orig is None or it.hoist is not None or it.kinds - _PLAIN_KINDS \
                or it.fx.writes - it.fx.assigns or not _plain_lines(it.orig):
            break
        made = {key for key in keys if "." not in key and key in it.fx.writes}
        other = it.fx.writes - made
        later = set().union(*(proof.flat[j].fx.reads for j in order[n + 1:]))
        if len(made) != 1 or made_key not in (None, *made) or touches(it.fx.reads, keys - made) \
                or touches(other, later) or touches(other, set(c.ys_keys)) \
                or not _binds_fresh_only(it.orig, made, proof.an.qn):
            break
        made_key = next(iter(made))
        chain.append(i)
        if not isinstance(it.orig, cst.SimpleStatementLine):
            start = order[n + 1]
    between = [i for i in range(s, start) if i not in chain and not proof.flat[i].dead
               and not proof.flat[i].inert and touches(proof.flat[i].fx.reads, keys)]
    if start == s or between:
        return s
    c.proof.append(f"lines {proof.line(s)}–{proof.line(start) - 1} only make `{made_key}` from new ops, before "
                   "the tape; it watches what they leave there when it opens")
    return start


#: what a line that only makes a source may call: TF ops, numpy, pure builtins (`range`), nothing
#: of the project's
_PLAIN_KINDS = frozenset({"tf", "leaf", "noop", "numpy", "builtin"})


def _plain_lines(stmt: cst.CSTNode) -> bool:
    """Every simple statement inside ``stmt`` binds names (``x = ...``, ``n += 1``), passes or breaks:
    no expression statement, subscript or attribute target that may keep a value elsewhere."""
    ok = [True]

    class V(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, n):
            for small in n.body:
                if isinstance(small, cst.Assign):
                    good = all(isinstance(t.target, (cst.Name, cst.Tuple)) and
                               all(isinstance(e.value, cst.Name) for e in getattr(t.target, "elements", []))
                               for t in small.targets)
                elif isinstance(small, cst.AugAssign):
                    good = isinstance(small.target, cst.Name)
                else:
                    good = isinstance(small, (cst.Pass, cst.Break, cst.Continue))
                ok[0] = ok[0] and good
            return False

        def visit_FunctionDef(self, n):
            ok[0] = False
            return False

        def visit_ClassDef(self, n):
            ok[0] = False
            return False

    stmt.visit(V())
    return ok[0]


def _binds_fresh_only(stmt: cst.CSTNode, names: set, qn) -> bool:
    """Whether every binding of ``names`` inside ``stmt`` is ``name = <new tensor>`` (a TF op or
    tensor arithmetic): no alias of an older value, no unpacking, loop target or import."""
    values = bound_values(stmt, names)
    return values is not None and all(is_fresh(v, qn) for v in values)


def bound_values(stmt: cst.CSTNode, names: set) -> Optional[list]:
    """The values ``stmt`` binds ``names`` to, at any depth (``if c: x = a + b``), when each
    binding is a plain ``name = value``; None when one is an unpacking, a loop target, an
    augmented assignment, an import, a def or a class."""
    ok = [True]
    values: list = []

    class V(cst.CSTVisitor):
        def visit_Assign(self, n):
            hit = names & {t for tgt in n.targets for t in _names_in(tgt.target)}
            if not hit:
                return
            if len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name):
                values.append(n.value)
            else:
                ok[0] = False

        def _other(self, bound: set) -> None:
            if names & bound:
                ok[0] = False

        def visit_AugAssign(self, n):
            self._other(_names_in(n.target))

        def visit_AnnAssign(self, n):
            self._other(_names_in(n.target))

        def visit_NamedExpr(self, n):
            self._other(_names_in(n.target))

        def visit_For(self, n):
            self._other(_names_in(n.target))

        def visit_AsName(self, n):
            self._other(_names_in(n.name))

        def visit_Del(self, n):
            self._other(_names_in(n.target))

        def visit_FunctionDef(self, n):
            self._other({n.name.value})
            return False

        def visit_ClassDef(self, n):
            self._other({n.name.value})
            return False

        def visit_ImportAlias(self, n):
            self._other({(n.evaluated_alias or n.evaluated_name).split(".")[0]})

    stmt.visit(V())
    return values if ok[0] else None

