"""``tf.gradients`` / ``tf.hessians`` / pfor ``jacobian`` -> ``tf.GradientTape``.

Before::

    x = tf.constant([1.0, 2.0, 3.0])
    y = x * x + 2.0 * x
    g = tf.gradients(y, x)

After::

    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x + 2.0 * x
    g = tape.gradient(y, [x])

Valid (left alone): ``opt.compute_gradients``, ``mtf.gradients``, a function of
your own named ``gradients``; refused, byte-identical: a loss the caller built
(``def fgsm(x, logits): tf.gradients(loss_of(logits), x)``).

The steps, one module each: find the calls (``_grad_find``), prove each one
(``_grad_proof``, docs/soundness.md), plan the tapes of each block
(``_grad_plan``), apply (``_grad_apply``).  See docs/rewrite_gradients.md.
"""
from __future__ import annotations

import ast
import os
from typing import Optional

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider

from migrator import codes
from migrator._plugins import Plugin, register
from migrator._plugins._aliases import shared_names, shared_names_in
from migrator._plugins._import_uses import still_used
from migrator._plugins._dataflow import effects
from migrator._plugins._grad_apply import Apply, Codegen, add_tf_import, remove_dead_imports
from migrator._plugins._grad_callers import (
    Signature, Verdict, caller_passes_list, callers_under_override, imported_list, param_verdict,
    source_structure,
)
from migrator._plugins._grad_methods import attribute_evidence, closed_method, method_param_structure, method_verdict
from migrator._plugins._grad_alias import (
    file_tf_alias, imported_api_aliases, rebinds_head, report_unrewritable, starred_heads,
)
from migrator._plugins._grad_fresh import fresh_sources
from migrator._plugins._grad_find import Find, check_context, may_have_candidates, parse_args
from migrator._plugins._grad_model import BlockScope, Call, Item, Refuse
from migrator._plugins._grad_home import home
from migrator._plugins._grad_hidden import calls_graph_function
from migrator._plugins._grad_hidden import collection_read, filled_after_tape, graph_building_call, rebinders
from migrator._plugins._grad_filechecks import (
    calls_manual_gradient,
    check_contexts,
    check_runtime_args,
    check_session_control_flow,
    eager_guard,
    grad_file_refusal,
)
from migrator._plugins._grad_plan import BlockPlanner, TapeNamer, item_for
from migrator._plugins._grad_values import (
    Closedness, call_kind, calls_in, is_fresh, library_imports, local_module_names,
    module_constants, param_names,
)
from migrator.model import HESSIANS, JACOBIAN, MANUAL, MIGRATED, TF_GRADIENTS, Site
from migrator.naming import NameAllocator
from migrator.project_star import star_visible_names
from migrator.notebook import CELL_MARKER
from migrator.tfnames import LazyQualifiedNameProvider, dotted, tf_name

KINDS = {"grad": TF_GRADIENTS, "hess": HESSIANS, "jac": JACOBIAN, "bjac": JACOBIAN}
DONE = {"grad": "TFG003", "hess": "TFG005", "jac": "TFG004", "bjac": "TFG004"}


@register
class GradientsPlugin(Plugin):
    name = "gradients"
    order = 20
    triggers = (b"gradients", b"hessians", b"jacobian")
    reads_api_aliases = True

    def rewrite(self, module: cst.Module, ctx) -> cst.Module:
        if not may_have_candidates(ctx.text or module.code) and ctx.path not in ctx.index.alias_importers:
            return module  # metadata is the expensive part: skip it when no name can match
        return GradientRewrite(module, ctx).run()


class GradientRewrite:
    """One file: find -> prove -> plan -> apply."""

    def __init__(self, module: cst.Module, ctx) -> None:
        self.ctx = ctx
        self.wrapper = ctx.metadata(module)  # shared with the plugins before (same module object)
        self.module = self.wrapper.module
        self.find = Find()
        self.names = NameAllocator(self.module, lambda: star_visible_names(self.project, os.path.abspath(ctx.path)))
        self.unsafe = bool(getattr(ctx.options, "unsafe_fixes", False))
        self._project = None
        self._verdicts: dict = {}
        self._shared: Optional[dict] = None
        self._rebinders: dict = {}
        self._shared_any: Optional[dict] = None

    # -- driver -------------------------------------------------------------
    def run(self) -> cst.Module:
        self.wrapper.visit(self.find)
        f = self.find
        if not f.calls and not f.keras and not f.values and not f.unresolved:
            return self.module
        self.parents = self.wrapper.resolve(ParentNodeProvider)
        self.qn = self.wrapper.resolve(LazyQualifiedNameProvider)
        if f.tf_alias is None:  # `from .backend import tf`, `if HAS_TF: import tensorflow as tf`
            f.tf_alias = file_tf_alias(self)
        self.pos = self.wrapper.resolve(PositionProvider)
        report_unrewritable(self)  # keras.backend.gradients, `tf` not only TF, tf.gradients as a value
        if not f.calls:
            return self.module
        # only library imports (and TF from a project's star import) are constants: a project
        # module's global may be a tensor (`model.logits`)
        libs = library_imports(self.module, local_module_names(self.ctx.path, self.ctx.index.root))
        self.imported = f.imported & libs | starred_heads(self.qn)
        self.constants = module_constants(f.variables, f.defs, self.imported, self.qn)
        self.closed = Closedness(f.defs, self.constants, self.imported, self.qn)
        self.calls = [self._prepare(node, kind) for node, kind in f.calls]
        file_refusal = grad_file_refusal(self)
        for c in self.calls:
            if file_refusal and c.refused is None:
                c.refused = file_refusal
        by_block: dict[int, tuple] = {}
        for c in self.calls:
            stmt, block = home(c, self.parents, self)
            by_block.setdefault(id(block), (block, []))[1].append((stmt, c))
        # plan inner blocks first (their refusals freeze statements of outer blocks),
        # then name tapes outer first (inner blocks must not reuse a name alive around them)
        order = sorted(by_block.values(), key=lambda bc: -self._depth(bc[0]))
        planner = BlockPlanner(self)
        plans: dict[int, tuple] = {}
        for _round in range(3):  # a refusal in one block may refuse a tape over a call of it in another
            refused = {id(c) for c in self.calls if c.refused is not None}
            for block, members in order:
                plan = planner.plan(block, members, self._block_scope(block))
                plans.pop(id(block), None)
                if plan is not None:
                    plans[id(block)] = plan
            if {id(c) for c in self.calls if c.refused is not None} == refused:
                break
        namer = TapeNamer(self.names)
        for block, _members in reversed(order):
            if id(block) in plans:
                namer.name(plans[id(block)][1], plans[id(block)][0], block)
        replacements = {}
        for c in self.calls:
            if c.refused is None:
                replacements[id(c.replace)] = c
            self._report(c)
        if not replacements:
            return self.module
        tf_alias, need_import = (f.tf_alias, False) if f.tf_alias else (self.names.fresh("tf"), True)
        out = self.module.visit(Apply(replacements, plans, Codegen(tf_alias)))
        kept = {a: q for a, q in {**f.api_aliases, **imported_api_aliases(self.qn)}.items()
                if not still_used(a, self.ctx.source, self.ctx.path, self.project)}  # a re-export, __all__
        out = remove_dead_imports(self.module, out, kept)
        return add_tf_import(out, tf_alias) if need_import else out

    def _prepare(self, node: cst.Call, kind: str) -> Call:
        p = self.pos[node].start
        c = Call(node=node, kind=kind, line=p.line, col=p.column + 1)
        try:
            parse_args(c, self.code)
            check_context(c, self.parents, self.find, self)
        except Refuse as r:
            c.refused = r
        return c

    def _report(self, c: Call) -> None:
        if c.node is None:
            return
        kind = KINDS[c.kind]
        if c.refused is not None:
            reason = c.refused.reason
            if self._double_backward(c):
                reason += ("; this pair is the double-backward trick for a forward-mode (Jacobian-vector) "
                           "product: in TF2 write it with tf.autodiff.ForwardAccumulator")
            self._site(None, kind, c.refused.code, reason, line=c.line, col=c.col)
            return
        guard = eager_guard(self, c.node)
        notes = list(c.notes) + ([f"line {guard} raises when executing eagerly, a guard written for tf.gradients; "
                                  "the tape works eagerly: remove the guard by hand"] if guard else [])
        site = Site(kind=kind, code=DONE[c.kind], line=self.ctx.original_line(c.line), col=c.col, status=MIGRATED,
                    reason=codes.title(DONE[c.kind]), notes=notes)
        site.proof = list(dict.fromkeys(c.proof + (c.partner.proof if c.partner else [])))
        site.assumptions = list(c.assumptions)
        self.ctx.sites.append(site)

    def _double_backward(self, c: Call) -> bool:
        """``g = tf.gradients(u, x, grad_ys=d)`` then ``tf.gradients(g, d)`` (PINNs' fwd_gradients)."""
        keys = {dotted(o.kwargs.get("output_gradients")) for o in self.calls if o.kind == "grad"} - {None}
        mine = dotted(c.kwargs.get("output_gradients")) if c.kind == "grad" else None
        return c.kind == "grad" and (dotted(c.xs) in keys or mine is not None and any(
            dotted(o.xs) == mine for o in self.calls if o is not c))

    def _site(self, node, kind, code, reason, line=None, col=None) -> None:
        if line is None:
            p = self.pos[node].start
            line, col = p.line, p.column + 1
        self.ctx.sites.append(Site(kind=kind, code=code, line=self.ctx.original_line(line), col=col,
                                   status=MANUAL, reason=reason))

    # -- helpers the proof and the planner use ------------------------------------
    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def line(self, node: cst.CSTNode) -> int:
        try:
            return self.ctx.original_line(self.pos[node].start.line)
        except KeyError:
            return 0

    def item(self, stmt: cst.BaseStatement) -> Item:
        """A statement with its data flow (``_grad_plan.item_for``), for the proof's modules."""
        return item_for(self, stmt, set())

    def tf_name(self, call: cst.Call) -> Optional[str]:
        return tf_name(call, self.qn)

    def call_kind(self, call: cst.Call) -> str:
        return call_kind(call, self.qn)

    def calls_in(self, node: cst.CSTNode) -> list:
        return calls_in(node)

    def kinds(self, node: cst.CSTNode) -> frozenset:
        return frozenset(call_kind(c, self.qn) for c in calls_in(node))

    def one_output(self, name: str) -> bool:
        """A public TF function that returns one tensor: its trace made a single op with one
        output (``tf.nn.moments`` ends in a one-output op too, but returns two tensors)."""
        from migrator import optable

        info = optable.function_info(name)
        return bool(info and info.get("single_op") and len(info["ops"]) == 1
                    and info["ops"][0].get("num_outputs") == 1)

    def module_values(self, key: str) -> list:
        return list(self.find.variables.get(key, []))

    def rebinders(self, fn: Optional[cst.FunctionDef]) -> dict:
        """What may rebind names behind a call in ``fn`` (None: the module), found once per scope."""
        if id(fn) not in self._rebinders:
            self._rebinders[id(fn)] = rebinders(self.module if fn is None else fn, fn is None)
        return self._rebinders[id(fn)]

    def shared(self, node: cst.CSTNode) -> dict:
        """In the function holding ``node``: name -> the names that may reach the same object
        (``alias = parts``), or that a closure uses (``_aliases.shared_names``)."""
        if self._shared is None:
            self._shared = {}
        if node not in self.parents:
            if self._shared_any is None:  # a statement the planner made (a loop header): any function's
                self._shared_any = {}
                for table in shared_names(self.module).values():
                    for name, group in table.items():
                        self._shared_any[name] = self._shared_any.get(name, frozenset()) | group
            return self._shared_any
        cur = self.parents.get(node)
        while cur is not None and not isinstance(cur, cst.FunctionDef):
            cur = self.parents.get(cur)
        if cur not in self._shared:
            self._shared[cur] = shared_names_in(self.module, cur)
        return self._shared[cur]

    def mutable_global(self, name: str) -> bool:
        """A module-level name bound to something code elsewhere may mutate in place (a list,
        a dict, an object), not only to tensors and literals."""
        vals = self.find.variables.get(name)
        if not vals or name in self.find.defs:
            return False
        return not all(v is not None and (is_fresh(v, self.qn) or _literal_value(v)) for v in vals)

    @property
    def project(self):
        if self._project is None:
            from migrator.project import project_for

            self._project = project_for(self.ctx.index)
        return self._project

    def _signature(self, fn: cst.FunctionDef) -> Optional[Signature]:
        if not isinstance(self.parents.get(fn), cst.Module):
            return None  # a method or a nested function: its callers cannot be listed
        positional = list(fn.params.posonly_params) + list(fn.params.params)
        defaults = {}
        for p in positional + list(fn.params.kwonly_params):
            if p.default is not None:
                try:
                    defaults[p.name.value] = ast.parse(self.code(p.default).strip(), mode="eval").body
                except SyntaxError:
                    return None
        star = isinstance(fn.params.star_arg, cst.Param) or fn.params.star_kwarg is not None
        return Signature([p.name.value for p in positional], defaults, star)

    def param_verdict(self, fn: cst.FunctionDef, param: str, source_params: list, source_keys=()) -> Verdict:
        key = (id(fn), param, tuple(source_params), source_keys)
        if key not in self._verdicts:
            sig, fresh = self._signature(fn), fresh_sources(fn, source_keys, self.qn, self.module) \
                if not source_params else None
            if fresh:
                self._verdicts[key] = Verdict(True, evidence=fresh)
            elif sig is None:
                self._verdicts[key] = method_verdict(self, fn, param, source_params, source_keys) or Verdict(
                    False, evidence=f"`{fn.name.value}` is a method or a nested function, whose callers cannot all "
                                    "be listed")
            elif fn.decorators:
                self._verdicts[key] = Verdict(False, evidence=f"`{fn.name.value}` is decorated: the decorator's "
                                                              "wrapper may call it with other arguments")
            else:
                self._verdicts[key] = param_verdict(self.project, os.path.abspath(self.ctx.path), fn.name.value,
                                                    sig, param, source_params)
        return self._verdicts[key]

    def attribute_evidence(self, fn: Optional[cst.FunctionDef], key: str, keys: set) -> Optional[str]:
        """Why ``self.w`` read in the tape of method ``fn`` cannot hold a value from the sources."""
        if fn is None:
            return None
        params = set(param_names(fn))
        return attribute_evidence(self, fn, key, sorted({k.split(".")[0] for k in keys} & params), tuple(sorted(keys)))

    def closed_method(self, fn: Optional[cst.FunctionDef], call: cst.Call, keys: set) -> Optional[str]:
        """Why ``self.m(...)`` in the tape of method ``fn`` returns no tensor made before it."""
        if fn is None:
            return None
        params = set(param_names(fn))
        return closed_method(self, fn, call, sorted({k.split(".")[0] for k in keys} & params), tuple(sorted(keys)))

    def param_structure(self, fn: cst.FunctionDef, param: str) -> str:
        sig = self._signature(fn)
        if sig is None:
            return method_param_structure(self, fn, param)
        return source_structure(self.project, os.path.abspath(self.ctx.path), fn.name.value, sig, param)

    def caller_list(self, fn: cst.FunctionDef, param: str, nested: bool) -> Optional[str]:
        """A caller that may pass a Python list (``nested``: holding a list) for ``param``."""
        sig = self._signature(fn)
        if sig is None:
            return None
        return caller_passes_list(self.project, os.path.abspath(self.ctx.path), fn.name.value, sig, param, nested)

    def module_list(self, name: str, nested: bool) -> bool:
        """A module-level name (or one imported from a project module) that may hold a Python list."""
        return imported_list(self.project, os.path.abspath(self.ctx.path), name, nested)

    def frozen(self) -> set:
        """Statements (at every block level) that hold a manual site: no tape may move them."""
        nodes = [c.node for c in self.calls if c.refused is not None and c.node is not None]
        nodes += self.find.keras + self.find.values
        out = set()
        for n in nodes:
            cur = n
            while cur is not None and not isinstance(cur, cst.Module):
                parent = self.parents.get(cur)
                if isinstance(parent, (cst.Module, cst.IndentedBlock)):
                    out.add(id(cur))
                cur = parent
        return out

    # -- scopes -------------------------------------------------------------
    def _stmt_block(self, node: cst.CSTNode):
        cur: cst.CSTNode = node
        while True:
            parent = self.parents[cur]
            if isinstance(parent, (cst.Module, cst.IndentedBlock)):
                return cur, parent
            cur = parent

    def _depth(self, node: cst.CSTNode) -> int:
        d = 0
        while node is not None:
            node = self.parents.get(node)
            d += 1
        return d

    def _block_scope(self, block) -> BlockScope:
        """The function around a block, and the lines of enclosing blocks that run before it."""
        scope = BlockScope(func=None)
        prefix: list[Item] = []
        after: list[Item] = []  # lines after an enclosing statement, inside the loops found so far
        cur = block
        while True:
            owner = self.parents.get(cur)  # the compound statement (or def) owning this block
            if owner is None or isinstance(owner, (cst.Module, cst.FunctionDef, cst.ClassDef)):
                break
            if isinstance(owner, (cst.For, cst.While)):
                # earlier iterations ran the rest of its body: the lines after the statements in it that
                # hold the call, not those after the loop (an `if` in a loop rebinding `r` was missed)
                scope.in_loop = True
                prefix, after = prefix + after, []
            parent_block = self.parents.get(owner)
            while parent_block is not None and not isinstance(parent_block, (cst.Module, cst.IndentedBlock)):
                owner = parent_block
                parent_block = self.parents.get(owner)
            if parent_block is None:
                break
            siblings = list(parent_block.body)
            idx = next(i for i, s_ in enumerate(siblings) if s_ is owner)
            prefix = [item_for(self, s_, set()) for s_ in siblings[:idx]] + prefix
            after += [item_for(self, s_, set()) for s_ in siblings[idx + 1:]]
            for header in _headers(owner):
                if isinstance(header, cst.Assign):  # `for k in range(3)`: inert when its iterable is
                    prefix.append(item_for(self, cst.SimpleStatementLine([header]), set()))
                else:
                    prefix.append(Item(None, effects(header), False))
            cur = parent_block
        func = self.parents.get(cur) if cur is not None else None
        if isinstance(func, cst.FunctionDef):
            scope.func = func
            scope.params = set(param_names(func))
            # `tf.add_to_collection(...)` "writes" tf (a method call may mutate its object), but binds
            # no local `tf`: only a rebinding makes an imported name local
            fx = effects(func.body)
            scope.locals = {w.split(".")[0] for w in fx.writes
                            if w.split(".")[0] not in self.imported or w in fx.assigns} | scope.params
        scope.prefix = prefix
        return scope

    # -- checks outside the data flow ---------------------------------------------
    def check_region(self, c: Call, flat: list, scope: BlockScope) -> None:
        """Checks on the region that are not data flow: overrides from callers and helpers,
        v1 control flow in Session scripts, notebook cells; then the assumptions."""
        s, e = c.region
        if (fill := filled_after_tape(self, c, flat, s, e)) is not None:
            if not (fill[1] and c.fresh_sources):
                raise Refuse("TFG130", fill[0])
            # code that may fill the targets' list runs in the tape instead, which records what it adds
            # (a second run found it inside another call's tape: edward's copy_test was not idempotent);
            # with sources made in the tape, nothing it adds from before the tape depends on them
            c.region = (s, e := c.item - 1)
        if scope.func is not None and isinstance(self.parents.get(scope.func), cst.Module):
            caller = callers_under_override(self.project, os.path.abspath(self.ctx.path), scope.func.name.value)
            if caller:
                raise Refuse("TFG122", f"`{scope.func.name.value}` is called inside a `with` block that overrides "
                                       f"gradients ({caller}); a tape here would ignore that override")
        check_contexts(self, c, flat, s, e)
        check_runtime_args(self, c, flat, s, e)
        manual = calls_manual_gradient(self, flat, s, e)
        if manual:
            raise Refuse("TFG128", f"the tape would differentiate through `{manual}(...)`, whose gradient call "
                                   "stays manual; migrate that one first, then re-run")
        if (graph_fn := calls_graph_function(self, flat, s, e)) is not None:
            raise Refuse("TFG121", graph_fn)
        if (built := graph_building_call(self, flat, s, e)) is not None:
            raise Refuse("TFG130", built)
        self._no_collections(c, flat, s, e)  # a Session script too: verify runs it in TF2 eager as well
        rebound = rebinds_head(self, c)  # the last check: a more specific reason comes first
        if rebound:
            raise Refuse("TFG128", rebound)
        if self.find.session:
            check_session_control_flow(self, c, flat, s, e)
        for i in range(s + 1, c.item + 1):
            orig = flat[i].orig
            if orig is not None and any(CELL_MARKER in ln.comment.value for ln in getattr(orig, "leading_lines", ())
                                        if ln.comment is not None):
                raise Refuse("TFG134", "the forward pass and the gradient are in different notebook cells; "
                                       "a tape must open and close in one cell")

    def refuse_assumptions(self, c: Call, scope: BlockScope) -> Optional[Refuse]:
        """An unsafe fix is applied only under --unsafe-fixes; otherwise it is a manual site
        that names what would have to hold."""
        if not c.assumptions or self.unsafe:
            return None
        where = ("open the tape where those values are computed" if scope.func is None else
                 f"open the tape in the caller of `{scope.func.name.value}`")
        if all("has rank 2 or more" in a for a in c.assumptions):
            where = "reshape it to [batch, -1] by hand before the call"
        return Refuse("TFG129", "the tape is right only if " + "; and ".join(c.assumptions) +
                      f". If that holds, re-run with --unsafe-fixes; otherwise {where}")

    def _no_collections(self, c: Call, flat: list, s: int, e: int) -> None:
        """Under TF2 (eager, and tf.function) graph collections are empty: a tape over them would
        silently see no sources or miss loss terms.  A Session script is no exception: the
        rewrite must hold in TF2 too, not only under the Session it still has."""
        nodes = [c.xs] + [flat[i].orig if flat[i].orig is not None else flat[i].hoist[1]
                          for i in range(s, e + 1) if flat[i].orig is not None or flat[i].hoist]
        for call in filter(None, (collection_read(self, node) for node in nodes)):
            raise Refuse("TFG135", f"`{self.code(call.func)}(...)` reads a TF1 graph collection: TF2 code runs "
                                   "eagerly, where it is empty (a Session or graph here fills it only until the "
                                   "script is migrated); use the model's own list (model.trainable_variables, "
                                   "model.losses) instead, then re-run")


def _literal_value(v: cst.BaseExpression) -> bool:
    if isinstance(v, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return True
    if isinstance(v, cst.Name):
        return v.value in ("None", "True", "False")
    if isinstance(v, cst.UnaryOperation):
        return _literal_value(v.expression)
    if isinstance(v, cst.Tuple):
        return all(_literal_value(e.value) for e in v.elements)
    return False


def _headers(owner: cst.CSTNode) -> list:
    if isinstance(owner, cst.For):
        return [cst.Assign([cst.AssignTarget(owner.target)], owner.iter)]
    if isinstance(owner, (cst.If, cst.While)):
        return [owner.test]
    if isinstance(owner, cst.With):
        return [i.item for i in owner.items]
    return []
