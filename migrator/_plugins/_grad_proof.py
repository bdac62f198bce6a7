"""The proof that a tape computes what ``tf.gradients`` computed (docs/soundness.md).

``tf.gradients(ys, xs)`` sums over every path from ``xs`` to ``ys`` in the graph.
A tape opened around items ``s..e`` of the call's block sums over the paths made
of ops it recorded.  The two agree when every op on every path was made inside
``s..e`` and every source was watched before its first use.  This module checks
that, for one call, and fills ``Call.region``, ``Call.sources`` (with their watch
points), ``Call.proof`` and ``Call.assumptions``; a condition it cannot check
raises :class:`Refuse`.

The argument turns on the sources:

* **fresh** sources are made by a TF op or constructor on a line of the block
  (``x = tf.constant(...)``, ``interp = a + t * (b - a)``).  Nothing that ran
  before that line can have used them; after it, only lines that read them, or
  call code that can reach any state, can.  The region starts no later than the
  first such line, so every op that may consume a source is recorded, and every
  value the region reads from elsewhere was made without them.
* other sources (parameters, attributes, lookups) may have been used before the
  function was even entered.  Then every value the region reads from outside it
  must be shown independent of them: a literal-built constant, or a parameter
  that every caller in the project passes built from literals.  Calls in the
  region must build their results afresh (a *closed* function of this module)
  rather than hand back a tensor made earlier.  What cannot be shown becomes an
  assumption: an unsafe fix, applied only with ``--unsafe-fixes``.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from migrator._plugins._dataflow import BUILTINS, touches
from migrator._plugins._grad_find import chain_items
from migrator._plugins._grad_fresh import stashes
from migrator._plugins._grad_hints import (attribute_from_sources, index_only, literal_built, mutating_line,
                                          one_origin, outside_ys_reason, set_elsewhere, where_to_open, ys_text)
from migrator._plugins._grad_model import STATE, TRAINABLE, BlockScope, Call, Item, Refuse, Source
from migrator._plugins._grad_lifted import lifted_refusal
from migrator._plugins._grad_per_index import only_tf_calls
from migrator._plugins._grad_prefix import prefix_verdict, sources_apart
from migrator._plugins._grad_hidden import graph_reach, is_generator
from migrator._plugins._grad_stateless import no_hooks
from migrator._plugins._grad_values import META_ATTRS, is_fresh, project_import_names
from migrator._plugins._grad_source_blocks import past_source_blocks
from migrator._plugins._aliases import changes_itself, constant_container, rebound_in_tape
from migrator._plugins._grad_bjac import check_ranks, gradient_cut, value_reads
from migrator._plugins._grad_calls import CallsProof
from migrator._plugins._grad_watch import WatchProof, bindable, leaves, with_binding
from migrator.tfnames import dotted


class Prover(WatchProof, CallsProof):
    def __init__(self, an, flat: list[Item], scope: BlockScope) -> None:
        self.an = an
        self.flat = flat
        self.scope = scope

    # -- helpers ------------------------------------------------------------
    def line(self, i: int) -> int:
        it = self.flat[i]
        node = it.orig
        if node is None and it.owner is not None:
            return it.owner.line
        return self.an.line(node) if node is not None else 0

    def _code(self, node) -> str:
        return self.an.code(node).strip()

    def _last_write(self, key: str, upto: int) -> Optional[int]:
        """The last item before ``upto`` that may change ``key`` (rebind or mutate it)."""
        for i in range(upto - 1, -1, -1):
            it = self.flat[i]
            if not it.dead and touches(it.fx.writes, {key}):
                return i
        return None

    def _bind_at(self, key: str, upto: int) -> Optional[int]:
        """The last item before ``upto`` that rebinds ``key`` (a mutation keeps its identity)."""
        for i in range(upto - 1, -1, -1):
            it = self.flat[i]
            if not it.dead and any(a == key or key.startswith(a + ".") for a in it.fx.assigns):
                return i
        return None

    def _binding_value(self, i: int, key: str) -> Optional[cst.BaseExpression]:
        """The value of ``key = value`` when item i is exactly that assignment."""
        it = self.flat[i]
        if it.hoist is not None:
            return it.hoist[1] if it.hoist[0] == key else None
        if isinstance(it.orig, cst.SimpleStatementLine) and len(it.orig.body) == 1 \
                and isinstance(it.orig.body[0], cst.Assign) and len(it.orig.body[0].targets) == 1:
            a = it.orig.body[0]
            if dotted(a.targets[0].target) == key:
                return a.value
        return None

    # -- the proof ----------------------------------------------------------
    def prove(self, c: Call) -> None:
        flat, k = self.flat, c.item
        c.proof, c.assumptions = [], []
        if self.scope.func is not None and is_generator(self.scope.func):
            raise Refuse("TFG130", f"`{self.scope.func.name.value}` is a generator: values come back into it "
                                   "through `yield` from code a tape here cannot see; take the gradient outside it")
        S = self._slice(c, k)
        sources = self._sources(c, k)
        fresh = {src.key: self._fresh_at(src.key, k) for src in sources}
        c.fresh_sources = (all_fresh := all(v is not None for v in fresh.values())) and bool(fresh)
        # the slice holds every line whose writes (names, objects, program state) reach the
        # targets, so a tape over it records every op a path from a source can use
        s = min(i for i in S if not flat[i].inert)
        if all_fresh and fresh:
            # a line that runs before the first source is made is on no path from a source: the
            # tape starts at that source, as written by hand (not around the whole forward pass);
            # but a line after it that may store a value made from it where the slice cannot
            # follow (`globals()["H"] = x * x`, `acc << x * x`, `sorted(ts, key=stash.append)`:
            # an adversarial run) is inside the tape too
            first = min(fresh.values())
            later = [i for i in S if i >= first and not flat[i].inert]
            hidden = stashes(self.flat, first, k, set(fresh))
            s = min(later + hidden) if later or hidden else s
        if not all_fresh:
            s = past_source_blocks(self, c, S, s, sources, k)
        e = max(S)
        for i in sorted(set(S) | set(range(s, e + 1))):
            node = flat[i].orig
            walk = graph_reach(node) if node is not None and not flat[i].dead else None
            if walk is not None:  # an adversarial run: `x.consumers()[0].outputs[0]` gave TF1 [4, 8], None
                raise Refuse("TFG130", f"line {self.line(i)} reaches tensors through the graph (`{self._code(walk)}`), "
                                       "which a tape cannot name; compute them from the sources in code instead")
        c.region = (s, e)
        self.sources_now = sources
        self.src_text = f"`{self._code(c.xs)}`"
        self.keys = {src.key for src in sources} | {a for src in sources for a in self._aliases(src.key, k, s)}
        self.outside: list = []
        self.unproven: list = []
        self.prefix_tainted = set() if all_fresh else self._prefix_taint(sources)
        self.source_roots = set() if all_fresh else self._source_roots(sources, k)
        self._outside_values(c, S, s, e, sources, all_fresh)
        if not all_fresh:
            self._calls_build_afresh(c, S, s, e)
            sources_apart(self, c, sources, s, k, fresh)  # `[a, h]`, `h` made from `a` before the block
        if any(src.key == TRAINABLE for src in sources):
            c.proof.append("the sources are every trainable variable, read at the call as before; the tape watches "
                           "each trainable variable the forward pass reads inside it")
        else:
            self._reaches(c, S, s, e, sources, all_fresh)
        self._watches(c, sources, s, e, k, fresh)
        self._grad_ys(c)
        c.sources = sources
        if c.kind == "bjac" and not (touches(set(c.ys_keys), self.keys) or
                                     any(touches(value_reads(self.flat[i].fx.reads), self.keys) for i in S)):
            raise Refuse("TFG126", "the targets do not read the sources in this block: TF1's batch_jacobian gave "
                                   "None there, GradientTape.batch_jacobian gives zeros; check the call")
        if c.kind == "bjac":
            check_ranks(self, c, k)
        cut = self._gradient_cut(S) if c.kind == "bjac" else None
        if cut:
            raise Refuse("TFG128", f"`{cut}` on the way from the sources may cut the gradient: TF1's batch_jacobian "
                                   "then gave None, GradientTape.batch_jacobian gives zeros; check the call")
        if all_fresh:
            made = ", ".join(f"`{sk}` (line {self.line(fresh[sk])})" for sk in sorted(fresh))
            c.proof.insert(0, f"sources made by a TF op on this block's lines, so no earlier code used them: {made}")
        span = f"line {self.line(s)}" if self.line(s) == self.line(e) else f"lines {self.line(s)}–{self.line(e)}"
        c.proof.insert(0, f"the tape spans {span}: every line whose result (names, objects, graph state) reaches "
                          "the targets")
        if c.lifted is not None:
            if why := lifted_refusal(self, c):
                raise Refuse("TFG125", why)
            over = c.lifted["over"]
            kind = type(over).__name__.lower()
            c.proof.append(f"the call sits in the `{kind}` at line {self.an.line(over)}, which rebinds neither the "
                           "targets nor the sources: the tape opens around the forward pass before it"
                           + (" (persistent: one gradient per iteration)" if c.lifted.get("loop") else ""))

    def _slice(self, c: Call, k: int) -> list[int]:
        need = set(c.ys_keys)
        S: list[int] = []
        direct = set()
        for i in range(k - 1, -1, -1):
            it = self.flat[i]
            if it.dead:
                continue
            if touches(it.fx.writes, need):
                S.append(i)
                direct |= {key for key in c.ys_keys if touches(it.fx.writes, {key})}
                need |= it.fx.reads
        missing = set(c.ys_keys) - direct
        if missing:
            name = sorted(missing)[0]
            root = name.split(".")[0]
            sc = self.scope
            if sc.in_loop and "." not in name and not (sc.func is not None and root in sc.params):
                raise Refuse("TFG125", f"`{name}` is computed before the loop that holds this call (or is its loop "
                                       "variable); open the tape inside the loop around the computation of each "
                                       "value, or one persistent tape around the forward pass before the loop")
            raise Refuse("TFG120", outside_ys_reason(self.an, self.scope, name))
        written: set = set()
        for i in sorted(S):
            if isinstance(self.flat[i].orig, cst.FunctionDef):
                continue  # a def reads its names when it is called, not where it stands (a class body: there)
            comes_in = {key for key in c.ys_keys if key in self.flat[i].exposed_reads and not touches(written, {key})}
            if comes_in:
                name = sorted(comes_in)[0]
                raise Refuse("TFG120", outside_ys_reason(self.an, self.scope, name, self.line(i)))
            written |= self.flat[i].fx.writes
        if all(self.flat[i].inert for i in S):
            raise Refuse("TFG126", f"{ys_text(c, self._code)} is computed from literals only in this block, "
                                   "so no source can reach it; check the call")
        return S

    def _gradient_cut(self, S: list) -> Optional[str]:
        # the line that makes a source (`x = tf.placeholder(...)`) is not on the way from it
        nodes = [it.node for it in map(self.flat.__getitem__, S)
                 if not (it.fx.assigns and it.fx.assigns <= self.keys and only_tf_calls(it.node, self.an))]
        return gradient_cut(self.an, [n for n in nodes if n is not None], self._code, self.keys)

    def _sources(self, c: Call, k: int) -> list[Source]:
        items = chain_items(c.xs)
        if items is None and self._trainable_variables(c.xs):
            # the list is read at the call, as tf.gradients read it; each element is a trainable
            # variable, which a tape watches by itself wherever the forward pass reads it
            return [Source(TRAINABLE, c.xs, after=-1)]
        if items is None and c.kind == "grad" and bindable(c.xs, self.an.qn):
            # `[a[part], b]`, `inputs + variables`: the call still reads the expression; the tape
            # watches what it is made of (a list watches every element; a new op made by the
            # expression itself, such as a slice of a tensor, is unconnected either way)
            c.xs_leaves = True
            return [Source(key, expr) for key, expr in leaves(c.xs, self.an.qn)]
        if items is None:
            raise Refuse("TFG124", f"the sources `{self._code(c.xs)}` are not plain names, attributes or lists of "
                                   "them: bind them to a name before the call")
        return [Source(key, expr) for key, expr in items]

    def _trainable_variables(self, xs: cst.BaseExpression) -> bool:
        """``tf.trainable_variables(...)`` or ``tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, ...)``."""
        if not isinstance(xs, cst.Call):
            return False
        name = self.an.tf_name(xs)
        if name == "tensorflow.trainable_variables":
            return True
        return name == "tensorflow.get_collection" and bool(xs.args) and \
            (dotted(xs.args[0].value) or "").endswith("GraphKeys.TRAINABLE_VARIABLES")

    def _aliases(self, key: str, k: int, upto: Optional[int] = None) -> list:
        """Names a source bound to a list of names stands for (``params = [w, b]``) until they
        are rebound (before ``upto``): reading them is reading the sources."""
        j = self._bind_at(key, k)
        value = self._binding_value(j, key) if j is not None else None
        items = chain_items(value) if isinstance(value, (cst.List, cst.Tuple)) else None
        if not items:
            return []
        upto = k if upto is None else upto
        return [n for n, _ in items if not any(any(a == n or n.startswith(a + ".") for a in self.flat[i].fx.assigns)
                                               for i in range(j + 1, upto) if not self.flat[i].dead)]

    def _fresh_at(self, key: str, k: int) -> Optional[int]:
        """The item that makes ``key`` a fresh tensor, if its last binding is one (for a list of
        names, the earliest of theirs)."""
        j = self._bind_at(key, k)
        if j is None or "." in key:
            return None
        value = self._binding_value(j, key)
        aliases = self._aliases(key, k)
        if aliases or isinstance(value, (cst.List, cst.Tuple)):
            points = [self._fresh_at(n, j) for n in aliases]
            if not aliases and value.elements and all(  # `a = [tf.constant(...), tf.zeros(...)]`
                    isinstance(el, cst.Element) and is_fresh(el.value, self.an.qn, lambda n: self._holds_tensor(n, j))
                    for el in value.elements):
                changed = any(touches(self.flat[i].fx.writes, {key}) for i in range(j + 1, k))  # `a.append(y)`
                return None if changed or self._rebound_in_loop(key, j) else j
            if not aliases or len(aliases) != len(value.elements) or any(p is None for p in points):
                return None
            return min(points)
        if value is None and isinstance(self.flat[j].orig, cst.With):
            line = with_binding(self.flat[j].orig, key)  # made on its own line inside a with body
            value = line.body[0].value if line is not None else None
        if value is None or not is_fresh(value, self.an.qn, lambda n: self._holds_tensor(n, j)):
            return None
        return None if self._rebound_in_loop(key, j) else j

    def _rebound_in_loop(self, key: str, j: int) -> bool:
        """Rebound later in the loop body: an earlier iteration's value may flow in."""
        return self.scope.in_loop and any(key in self.flat[i].fx.assigns for i in range(j + 1, len(self.flat)))

    def _holds_tensor(self, name: str, k: int) -> bool:
        """``name``'s last binding before item ``k`` makes a tensor (a TF op, tensor arithmetic)."""
        j = self._bind_at(name, k)
        return j is not None and is_fresh(self._binding_value(j, name), self.an.qn,
                                          lambda n: n != name and self._holds_tensor(n, j))

    def _prefix_taint(self, sources: list) -> set:
        """Keys that lines of enclosing blocks, run before this block, computed from the sources."""
        tainted = {src.key for src in sources}
        for it in self.scope.prefix:
            if touches(tainted, it.fx.reads):
                tainted |= it.fx.writes
        return tainted - {src.key for src in sources}

    # -- values from outside the region ---------------------------------------
    def _outside_values(self, c: Call, S: list, s: int, e: int, sources: list, all_fresh: bool) -> None:
        keys = self.keys
        written: set = set()
        mutated: set = set()  # changed in place in the tape, never bound there
        seen: set = set()
        for i in range(s, e + 1):
            it = self.flat[i]
            if it.dead:
                continue
            binds_source = any(self._binding_value(i, key) is not None for key in keys)
            if i in S and not binds_source:  # what a source is made from is not on a path from it
                for r in sorted(it.exposed_data):
                    if _within(r, keys):
                        continue
                    if touches(written, {r}):
                        if not all_fresh:  # a fresh source: nothing filled in before can depend on it
                            self._filled_before(c, r, mutated, s, i)
                        continue
                    if r in seen:
                        continue
                    seen.add(r)
                    self.outside.append((r, i))
                    self._independent(c, r, s, i, keys, all_fresh)
            mutated = (mutated | it.fx.mutates) - (it.fx.writes - it.fx.mutates)
            written |= it.fx.writes
            if not all_fresh and it.orig is not None:
                # `from model import logits` inside the tape: the global existed before it
                for r in sorted(project_import_names(it.orig) & {k.split('.')[0] for j in S if j > i
                                                                  for k in self.flat[j].fx.reads}):
                    self._assume(c, f"`{r}` (a project module's global, imported at line {self.line(i)}) does not "
                                    f"depend on {self.src_text}", r)
        for r in sorted(c.ys_keys):  # `tf.gradients(losses, x)` after `losses.append(...)` in the tape
            if touches(written, {r}) and not _within(r, keys) and not all_fresh:
                self._filled_before(c, r, mutated, s, e + 1)
        if all_fresh and self.outside:
            c.proof.append("every value the tape reads from outside it was made before the sources")

    def _filled_before(self, c: Call, r: str, mutated: set, s: int, at: int) -> None:
        """``r`` is changed in place in the tape (``acc.append(v)``) but not bound there: it holds what it held
        before, unseen by the tape (an adversarial run: a running loss list gave [1, 2, 3] for [1, 3, 6])."""
        hooks_free = no_hooks(self.an.project)  # `[0.0] * n` then makes a new list of constants
        if not touches(mutated, {r}) or rebound_in_tape(self.flat, r, s, at, hooks_free):
            return  # bound in the tape (before it was changed), or not changed in place
        for j in range(s - 1, -1, -1):  # `losses = []` just before the tape: it holds constants only
            if r in self.flat[j].fx.assigns:
                if self.flat[j].inert or constant_container(self._binding_value(j, r), hooks_free):
                    return
                break
            if not self.flat[j].inert and touches(self.flat[j].fx.writes, {r}):
                break
        if elsewhere := set_elsewhere(self, c, c.item):
            raise Refuse("TFG120", elsewhere)
        if origin := one_origin(self, c, self.sources_now):
            raise Refuse("TFG130", origin)
        whole = next((m for i in range(s, at) for m in sorted(self.flat[i].fx.mutates)
                      if r.startswith(m + ".") and touches({m}, {r})), None)
        if whole is not None:  # `self.build(x)`, then `self.out`: the call may as well set it afresh
            line = next(mutating_line(self.an, self.flat[i].orig, whole, self.line(i))
                        for i in range(s, at) if whole in self.flat[i].fx.mutates)
            raise Refuse("TFG130", f"line {line} runs code on `{whole}` that may set or fill `{r}`: the migrator "
                                   f"cannot tell whether `{r}` then holds a tensor made inside the tape or one from "
                                   "before it, which the tape did not record; have that code return the value (and "
                                   f"read it from a local), or open the tape where `{r}` is computed")
        by = next((i for i in range(s, at) if touches(self.flat[i].fx.writes - self.flat[i].fx.assigns, {r})), at)
        how = "is" if changes_itself(self.flat[by].orig, r) else "may be"  # or through an alias, a call
        raise Refuse("TFG130", f"`{r}` {how} changed in place inside the tape (line {self.line(by)}) but is bound "
                               "outside it, so it may already hold tensors the tape did not record (from earlier "
                               "iterations, the enclosing code, a caller or a module-level list); bind it afresh inside "
                               "the tape, or open the tape where it is first filled")

    def _reaches(self, c: Call, S: list, s: int, e: int, sources: list, all_fresh: bool) -> None:
        """Some line of the tape must read a source on the way to the targets; otherwise every
        path runs through values made outside it, which the tape cannot see."""
        tainted = set(self.keys)
        for i in range(s, e + 1):
            it = self.flat[i]
            if it.dead:
                continue
            if touches(tainted, it.fx.reads):
                tainted |= it.fx.writes
            else:
                tainted -= it.fx.assigns  # rebound from values that are not the sources
            tainted |= {src.key for src in sources if self._bind_at(src.key, c.item) == i}
        if touches(tainted, set(c.ys_keys)):
            c.proof.append(f"inside the tape, `{', '.join(sorted(c.ys_keys))}` is computed from the sources")
            return
        srcs = self.src_text
        named = self.unproven or [r for r, _ in self.outside]
        named = [r for r in named if r.split(".")[0] not in BUILTINS] or named  # `float`, `int` carry no tensor
        names = ", ".join(r if r.startswith("the state ") else f"`{r}`" for r in named[:3])
        via = ("values made outside this block or handed back by its calls"
               if any(r.endswith("(...)") for r in named[:3]) else "values made outside this block")
        if all_fresh or not c.assumptions:
            c.proof.append(f"{ys_text(c, self._code)} is not computed from {srcs}, and nothing it reads can "
                           "depend on them: None for every source, before and after")
            return
        func = self.scope.func.name.value if self.scope.func is not None else None
        where = (f"in the method or the caller of `{func}` that builds them" if func
                 else "around the lines that build them")
        raise Refuse("TFG130", one_origin(self, c, sources) or
                     f"{ys_text(c, self._code)} reaches {srcs} only through {via} ({names}); open the "
                     f"tf.GradientTape where those are computed ({where}), watch the sources there, and take the "
                     "gradient from that tape")

    def _independent(self, c: Call, r: str, s: int, at: int, keys: set, all_fresh: bool) -> None:
        an, sc = self.an, self.scope
        root = r.split(".")[0]
        srcs = self.src_text
        if r == STATE:
            if not all_fresh:
                self._assume(c, f"the state read at line {self.line(at)} (attributes, collections) holds no tensor "
                                f"computed from {srcs} before the tape", f"the state read at line {self.line(at)}")
            return
        if "." in r and r.split(".")[-1] in META_ATTRS:
            return  # x.shape, x.dtype: metadata, never a tensor built earlier
        if root in self.source_roots and root not in an.imported:
            raise Refuse("TFG130", f"the sources are taken from `{root}`, which the targets read too (`{r}`), so "
                                   "TF1 differentiated through values the tape cannot name when it opens; bind the "
                                   f"sources before the targets are computed from them, or {where_to_open(sc, r)}")
        if root in an.constants and root not in sc.locals and not r.startswith("sys.modules"):
            if "." not in r or r.split(".")[-1] in META_ATTRS or root in an.imported:
                return
        if all_fresh:
            return  # made before the sources existed (or by lines that never touched them)
        j = self._last_write(r, s)
        if j is not None:
            if self.flat[j].inert:
                return
            value = self._binding_value(j, r)
            if value is not None and literal_built(value):
                return
            self._assume(c, f"`{r}` (line {self.line(j)}, before the tape) does not depend on {srcs}", r)
            return
        if sc.func is not None and root in sc.params and "." not in r:
            verdict = an.param_verdict(sc.func, root, [k.split(".")[0] for k in keys if k.split(".")[0] in sc.params],
                                       tuple(sorted(keys)))
            if verdict.dependent:
                raise Refuse("TFG130", f"{verdict.dependent}, so the path from it to the targets lies outside "
                                       f"`{sc.func.name.value}`; {where_to_open(sc, r)}")
            if verdict.independent:
                c.proof.append(f"parameter `{r}` cannot depend on {srcs}: {verdict.evidence}")
                return
            if index_only(an, [self.flat[i].node for i in range(s, at + 1) if not self.flat[i].dead], r):
                c.proof.append(f"parameter `{r}` is read only as an index, which selects but carries no gradient")
                return
            self._assume(c, f"parameter `{r}` does not depend on {srcs} ({verdict.evidence})", r)
            return
        if "." in r:
            if r.split(".")[-1] in META_ATTRS:
                return
            evidence = an.attribute_evidence(sc.func, r, keys)
            if evidence:
                c.proof.append(f"`{r}` cannot depend on {srcs}: {evidence}")
                return
            if refuted := attribute_from_sources(an, sc.func, r, keys):
                raise Refuse("TFG120", refuted)
            self._assume(c, f"`{r}` (an attribute set elsewhere) does not depend on {srcs}", r)
            return
        if root in sc.locals:
            writers = [it for it in sc.prefix + (self.flat if sc.in_loop else []) if touches(it.fx.writes, {r})]
            if writers and all(it.inert for it in writers):
                return  # bound outside the block to literals only (`for k in range(3)`)
            if touches(self.prefix_tainted, {r}):
                raise Refuse("TFG130", f"`{r}` is computed from {srcs} outside the block that holds the call, where "
                                       "a tape here cannot see it; open the tape in the enclosing block, around the "
                                       f"line that computes `{r}`")
            why, against = prefix_verdict(self, r, self.sources_now)  # cleverhans' attacks: made before the loop
            if against:
                raise Refuse("TFG130", against)
            if why:
                c.proof.append(why)
                return
            self._assume(c, f"`{r}` (computed outside the block of the gradient) does not depend on {srcs}", r)
            return
        self._assume(c, f"`{r}` (from outside this function) does not depend on {srcs}", r)

    def _source_roots(self, sources: list, k: int) -> set:
        """Roots that non-fresh sources bound in this block were read from (``conv = layers["conv"]``)."""
        out = set()
        for src in sources:
            j = self._bind_at(src.key, k)
            if j is not None and self.flat[j].orig is not None and not self._aliases(src.key, k):
                value = self._binding_value(j, src.key)
                if value is not None and not is_fresh(value, self.an.qn):
                    from migrator._plugins._dataflow import effects
                    out |= {r.split(".")[0] for r in effects(value).data}
            elif "." in src.key:
                out.add(src.key.split(".")[0])
        return out - {"self"}

    def _assume(self, c: Call, text: str, value: Optional[str] = None) -> None:
        if text not in c.assumptions:
            c.assumptions.append(text)
        if value is not None and value not in self.unproven:
            self.unproven.append(value)


def _within(r: str, keys: set) -> bool:
    """``r`` is a source, or part of one (``params`` -> ``params``; ``x.shape`` of ``x``)."""
    return any(r == k or r.startswith(k + ".") for k in keys)
