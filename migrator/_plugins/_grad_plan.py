"""Plan the tapes of one block: statement items, hoisted targets, proofs, tape groups, names.

Calls whose regions overlap share one persistent tape when both regions end
before the earlier call, and nest when a later call's region reaches past an
earlier call (it differentiates that call's result).  A manual site is never
moved: a tape that would enclose its statement is refused too.
"""
from __future__ import annotations

from typing import Union

import libcst as cst

from migrator._plugins._grad_stateless import read_runs_code, stateless_self_call
from migrator._plugins._aliases import type_method_mutations, widen_mutations
from migrator._plugins._dataflow import Effects, effects
from migrator._plugins._exposed import exposed
from migrator._plugins import _grad_per_index as per_index
from migrator._plugins._grad_find import chain_items
from migrator._plugins._grad_hidden import collection_sources
from migrator._plugins._grad_model import STATE, BlockScope, Call, Group, Item, Refuse
from migrator._plugins._grad_proof import Prover
from migrator._plugins._grad_values import is_inert
from migrator.tfnames import descendants, dotted, tf_name

BlockNode = Union[cst.Module, cst.IndentedBlock]


#: TF module functions called as statements to set a program up; none stores a value on a module
#: (a list: `tf.store.put(t)`, `tf.my_put(t)` on objects a project hung on `tf` do -- an adversarial run)
_SETUP_CALLS = frozenset(f"tensorflow.{n}" for n in (
    "reset_default_graph", "set_random_seed", "random.set_seed", "logging.set_verbosity", "disable_eager_execution",
    "disable_v2_behavior", "enable_eager_execution", "enable_v2_behavior", "disable_v2_tensorshape",
    "autograph.set_verbosity", "debugging.set_log_device_placement", "config.run_functions_eagerly",
    "keras.backend.clear_session", "keras.backend.set_floatx", "keras.backend.set_learning_phase",
))


def _module_functions_mutate_nothing(an, stmt: cst.CSTNode, fx: Effects) -> None:
    """``tf.reset_default_graph()`` calls a function of a TF module, not a method that fills
    ``tf`` (which would make every ``tf.float32`` read after it a value of unknown origin).
    Only the known set-up calls (``_SETUP_CALLS``): the call's name resolving to TF is not
    enough, a project may hang its own objects on ``tf`` (``tf.cache.append(t)``)."""
    body = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ()
    for small in body:
        call = small.value if isinstance(small, cst.Expr) else None
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
                and tf_name(call, an.qn) in _SETUP_CALLS:
            module = dotted(call.func.value)  # `tf`, `tf.logging`, `tf.compat.v1`: a TF module path
            fx.writes.discard(module)
            fx.mutates.discard(module)


def stateless_receivers(an, stmt: cst.CSTNode) -> set:
    """{self} when every call of the project's code in ``stmt`` is ``self.m(...)`` of a method that
    stores nothing (``_grad_stateless``); else the empty set."""
    calls = [c for c in an.calls_in(stmt) if an.call_kind(c) == "project"]
    if not calls or not all(stateless_self_call(an, c) for c in calls):
        return set()
    return {c.func.value.value for c in calls}


def item_for(an, stmt: cst.CSTNode, shadowed: set, local: frozenset = frozenset()) -> Item:
    """A statement with its data flow, widened for the calls it makes: code of the project
    (or a graph collection) may read and write program state and mutate its arguments.
    Program state is also what a line reads through an attribute or a module-level name
    bound to a mutable object (``cache["h"]``: a project function may have filled it)."""
    fx = effects(stmt)
    _module_functions_mutate_nothing(an, stmt, fx)
    typed = type_method_mutations(stmt)
    fx = Effects(set(fx.reads), set(fx.writes) | typed, set(fx.assigns), set(fx.data), set(fx.mutates) | typed)
    before = set(fx.writes)
    kinds = an.kinds(stmt)
    # `u1 = self.net_u1(x1, y1)`, where net_u1 and all it calls store nothing: no state written
    quiet = stateless_receivers(an, stmt) if kinds & {"project"} and not kinds & {"collect", "state"} else set()
    widen_mutations(fx, an.shared(stmt), stmt, frozenset(an.imported) | quiet)  # `alias.append(v)` changes `parts`
    fx.mutates |= fx.writes - before
    maybe: set = set()
    mutations = fx.writes - fx.assigns
    stores = kinds & {"collect"} or (kinds & {"project"} and not quiet)
    if stores or mutations:
        # x.append(v) may fill an object that an attribute or a global also names
        fx.writes.add(STATE)
    if stores:
        for call in an.calls_in(stmt):
            if an.call_kind(call) == "project":
                for a in call.args:
                    key = dotted(a.value)
                    if key is not None and key not in fx.writes:
                        maybe.add(key)  # the callee may mutate what it is given
        fx.writes |= maybe
    if kinds & {"project", "state"} or any(
            ("." in r and r.split(".")[0] not in an.imported)
            or (r.split(".")[0] not in local and an.mutable_global(r.split(".")[0])) for r in fx.data):
        fx.reads.add(STATE)
    inert = is_inert(stmt, fx, kinds, an.imported - shadowed, frozenset(shadowed))
    it = Item(stmt, fx, inert, kinds=kinds, maybe_mutates=frozenset(maybe))
    if isinstance(stmt, cst.BaseStatement):
        it.exposed = exposed(stmt)
    return it


def _readable(expr: cst.BaseExpression) -> str:
    """A readable name for a hoisted ys expression: ``tf.reduce_sum(y)`` -> ``y_sum``."""
    if isinstance(expr, cst.Call) and expr.args:
        fn = dotted(expr.func) or ""
        last = fn.rsplit(".", 1)[-1]
        arg = dotted(expr.args[0].value)
        if arg is not None:
            arg = arg.rsplit(".", 1)[-1]
            for prefix, suffix in (("reduce_sum", "sum"), ("reduce_mean", "mean"), ("reduce_max", "max"),
                                   ("reduce_min", "min"), ("square", "sq"), ("norm", "norm")):
                if last == prefix:
                    return f"{arg}_{suffix}"
    if isinstance(expr, cst.Attribute):
        return expr.attr.value  # `m.l2` read in the tape: `l2`
    return "target"


def _short(keys: set) -> str:
    return sorted(keys)[0].rsplit(".", 1)[-1] if len(keys) == 1 else "y"


class BlockPlanner:
    def __init__(self, an) -> None:
        self.an = an

    def plan(self, block: BlockNode, members: list, scope: BlockScope):
        """(items, groups) for the block, or None when every call in it is refused."""
        an = self.an
        shadowed = scope.locals | set(an.find.variables) | set(an.find.defs)
        index = {id(s): i for i, s in enumerate(block.body)}
        local = frozenset(scope.locals)
        slots: list[list[Item]] = [[item_for(an, stmt, shadowed, local)] for stmt in block.body]
        for stmt, c in members:
            k = index[id(stmt)]
            if c.refused is not None:
                slots[k][-1].calls.append(c)
                continue
            self.scope_locals = scope.locals
            slots[k] = self._generated(c, shadowed) + slots[k]
            slots[k][-1].calls.append(c)
        flat = [it for s in slots for it in s]
        for i, it in enumerate(flat):
            for c in it.calls:
                c.item = i
        calls = [c for it in flat for c in it.calls]
        prover = Prover(an, flat, scope)
        alive = [c for c in calls if c.refused is None]
        while True:
            for c in alive:
                if c.refused is None:
                    try:
                        collection = collection_sources(an, c, flat)
                        if collection:
                            raise Refuse("TFG135", collection)
                        prover.prove(c)
                        an.check_region(c, flat, scope)
                    except Refuse as r:
                        refuse(c, r)
            groups = self.group([c for c in alive if c.refused is None])
            if not self._unfreeze(groups, flat):
                unsafe = [(c, an.refuse_assumptions(c, scope)) for c in alive if c.refused is None]
                unsafe = [(c, r) for c, r in unsafe if r is not None]
                if not unsafe:
                    break
                for c, r in unsafe:
                    refuse(c, r)
            alive = [c for c in alive if c.refused is None]
        if not any(c.refused is None for c in calls):
            return None
        return flat, groups

    def _function(self, c: Call):
        """The function holding the call (None at module level or in a class body)."""
        cur = self.an.parents.get(c.node)
        while cur is not None and not isinstance(cur, (cst.FunctionDef, cst.ClassDef, cst.Module)):
            cur = self.an.parents.get(cur)
        return cur if isinstance(cur, cst.FunctionDef) else None

    def _generated(self, c: Call, shadowed: set) -> list[Item]:
        """Items the rewrite adds before the call: a hoisted ys, the inner gradient of a hessian."""
        an = self.an
        pre: list[Item] = []
        # the call's own ys: `c.ys` becomes the hoisted name below, and a block is planned again
        # when another call of the file is refused
        ys = c.names.setdefault("ys_expr", c.ys)
        keys = chain_items(ys) if not isinstance(ys, cst.Tuple) else None
        attrs = {a for k_, _ in keys or () for a in k_.split(".")[1:]}
        if attrs and read_runs_code(an.project, attrs):
            keys = None  # `m.loss` may be a property that builds ops when read: read it in the tape
        if keys is None:
            per = c.per_index  # `y[:, i]` for each i: every slice is taken inside the tape, then indexed
            base = per_index.name_for(ys, per["var"]) if per else _readable(ys)
            name = c.names.get("ys") or an.names.fresh_in(base, self._function(c))  # planned again: same name
            c.names["ys"] = name
            if per:
                ys = per_index.hoisted(ys, per)
            it = item_for(an, ys, shadowed, frozenset(self.scope_locals))
            # `ys.copy()`, `sum(d.values())`: the result holds what the object holds, so the object is
            # read as data (an adversarial run: a list filled before the tape went unchecked)
            it.fx.data |= {r for n in descendants(ys) if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                           for r in [dotted(n.func.value)] if r and r.split(".")[0] not in an.imported}
            it.fx.writes = {name}
            it.fx.assigns = {name}
            it.orig, it.hoist, it.owner, it.inert = None, (name, ys), c, False
            pre.append(it)
            ys_keys = {name}
            ys_expr: cst.BaseExpression = per_index.indexed(name, per["var"]) if per else cst.Name(name)
        else:
            ys_keys = {k_ for k_, _ in keys}
            ys_expr = ys
        if c.kind == "hess":
            inner = Call(node=None, kind="grad", ys=ys_expr, xs=c.xs, partner=c, line=c.line, col=c.col)
            c.partner = inner
            key = dotted(c.xs) or dotted(c.xs.elements[0].value)
            tname = c.names.get("inner") or an.names.fresh_in(f"d{_short(ys_keys)}_d{key.rsplit('.', 1)[-1]}",
                                                              self._function(c))
            c.names["inner"] = tname
            inner.target = tname
            inner.ys_keys = ys_keys
            fx = Effects(reads=set(ys_keys) | {k_ for k_, _ in chain_items(c.xs)}, writes={tname}, assigns={tname})
            it = Item(None, fx, False, inner=inner, owner=c)
            it.calls.append(inner)
            pre.append(it)
            c.ys_keys = {tname}
        else:
            c.ys_keys = ys_keys
        if c.lifted is not None and c.lifted.get("iter") is not None:
            # `[tf.gradients(y, x)[0] for y in tf.unstack(out)]`: the list is made inside the tape
            it_expr = c.lifted["iter"]
            name = c.names.get("iter") or an.names.fresh_in(per_index.list_name(c.lifted["var"]), self._function(c))
            c.names["iter"] = name
            it = item_for(an, it_expr, shadowed, frozenset(self.scope_locals))
            it.fx.writes, it.fx.assigns = {name}, {name}
            it.orig, it.hoist, it.owner, it.inert = None, (name, it_expr), c, False
            pre.append(it)
            c.lifted["ys_keys"], c.lifted["iter_name"] = {name}, name
        if c.lifted is not None and c.lifted.get("ys_keys"):
            c.ys_keys = set(c.lifted["ys_keys"])  # the targets are the elements of this list
        c.ys = ys_expr
        return pre

    def _unfreeze(self, groups: list, flat: list) -> bool:
        """Refuse tapes that would move a statement holding a manual site; True if any was."""
        frozen = self.an.frozen()
        moved = False
        for g in groups:
            hit = [i for i in range(g.s, g.e + 1) if flat[i].orig is not None and id(flat[i].orig) in frozen]
            if hit:
                line = self.an.line(flat[hit[0]].orig)
                calls = g.all_calls()
                # a call whose own tape encloses it is refused; the others are planned again without it
                # (zhusuan's tests: one late call's tape joined four others over a manual line)
                own = [gc for gc in calls if gc.region is not None and gc.region[0] <= hit[0] <= gc.region[1]]
                for gc in own or calls:
                    refuse(gc, Refuse("TFG128", f"its tape would have to enclose line {line}, which is left for "
                                                "manual migration; migrate that first"))
                moved = True
        return moved

    def group(self, calls: list[Call]) -> list[Group]:
        """Tapes for the calls of one block: separate, shared (persistent) or nested."""
        top: list[Group] = []
        for c in sorted(calls, key=lambda c: c.item):
            cand = Group(*c.region, [c])
            absorbed: list[Group] = []
            ok = True
            while True:
                hits = [g for g in top if g not in absorbed and not (g.e < cand.s or g.s > cand.e)]
                if not hits:
                    break
                e_all = max([cand.e] + [g.e for g in hits])
                ks = cand.ks + [k for g in hits for k in g.ks]
                if e_all < min(ks):  # share one persistent tape
                    for g in hits:
                        cand.calls = g.calls + cand.calls
                        cand.children += g.children
                    cand.s = min([cand.s] + [g.s for g in hits])
                    cand.e = e_all
                elif all(g.e <= cand.e for g in hits):  # nest: this tape records the others
                    cand.children += hits
                    cand.s = min([cand.s] + [g.s for g in hits])
                else:
                    ok = False
                    break
                absorbed += hits
            if not ok:
                refuse(c, Refuse("TFG128", "its tape would overlap another tape only partly; rewrite "
                                           "these gradients by hand"))
                continue
            top = [g for g in top if g not in absorbed] + [cand]
        for g in top:
            _set_group(g)
        return sorted(top, key=lambda g: g.s)


def refuse(c: Call, r: Refuse) -> None:
    if c.refused is None:
        c.refused = r
    if c.partner is not None and c.partner.refused is None:
        c.partner.refused = r


def _set_group(g: Group) -> None:
    for c in g.calls:
        c.group = g
    for ch in g.children:
        _set_group(ch)


def inner_blocks(node: cst.CSTNode) -> list:
    out = []

    class V(cst.CSTVisitor):
        def visit_IndentedBlock(self, n):
            out.append(n)

        def visit_FunctionDef(self, n):
            return False

        def visit_ClassDef(self, n):
            return False

    node.visit(V())
    return out


class TapeNamer:
    """``tape`` / ``outer_tape``, suffixed only when a tape of that name is alive around."""

    def __init__(self, names) -> None:
        self.names = names
        self.cache: dict[str, str] = {}
        self.reserved: dict[int, set] = {}  # id(block) -> tape names alive around it

    def name(self, groups: list[Group], flat: list[Item], block: BlockNode) -> None:
        reserved = set(self.reserved.get(id(block), set()))
        everyone: list[tuple[Group, int]] = []

        def walk(gs, depth):
            for g in gs:
                everyone.append((g, depth))
                walk(g.children, depth + 1)

        walk(groups, 0)
        assigned: list[tuple[Group, int, int]] = []
        for g, _depth in sorted(everyone, key=lambda gd: (gd[0].s, -gd[1])):
            life = (g.s, max(g.ks))
            taken = {x.name for x, a, b in assigned if not (b < life[0] or a > life[1])} | reserved
            base = "outer_tape" if g.children else "tape"
            n = 0
            while True:
                key = base if n == 0 else f"{base}#{n}"
                if key not in self.cache:
                    self.cache[key] = self.names.fresh(base if n == 0 else f"{base}_{n + 1}")
                if self.cache[key] not in taken:
                    g.name = self.cache[key]
                    break
                n += 1
            assigned.append((g, *life))
        # inner blocks of compound statements alive while a tape is alive must not reuse its name
        for g, a, b in assigned:
            for i in range(a, b + 1):
                it = flat[i]
                if it.orig is not None and not isinstance(it.orig, cst.SimpleStatementLine):
                    for blk in inner_blocks(it.orig):
                        self.reserved.setdefault(id(blk), set()).add(g.name)
