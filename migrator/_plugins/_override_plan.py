"""Turn proven override blocks into a plan: refusals, helpers, wrappers, removals, sites."""
from __future__ import annotations

import ast
import os
import struct

import libcst as cst

from migrator import codes, optable
from migrator._plugins._gradbody import GradBody
from migrator._plugins._gradfn import HelperSpec, Unsupported, analyse_op_uses, convert_gradient_function
from migrator._plugins._override_block import BlockResult, analyse_block
from migrator._plugins._override_model import Block, Candidate, Evidence, OverridePlan, Refuse, Registration, code
from migrator.project_star import star_visible_names
from migrator.project_tf import tf_module_name
from migrator._plugins._override_ops import OpScanner
from migrator._plugins._override_prove import Prover
from migrator._plugins._override_regs import RegistrationProof
from migrator._plugins._override_values import Values
from migrator._plugins._override_wrappers import plan_block
from migrator.model import MANUAL, MIGRATED, OVERRIDE_MAP, REGISTER_GRADIENT, Site
from migrator.naming import NameAllocator
from migrator._plugins._override_implicit import import_names as _import_names, project_hooks
from migrator.project import project_for

#: what to do in TF2, by op type, for refusals (the report's reason says it)
_TF2_ADVICE = {
    "Relu": "for guided backprop, swap the activation for a @tf.custom_gradient relu whose grad_fn gates dy",
    "Identity": "wrap the tensor in a @tf.custom_gradient identity whose grad_fn returns the new gradient",
    "MatMul": "put the matmul in a @tf.custom_gradient function with the registered gradient as grad_fn",
}


#: a refusal reason that already says what to do gets no generic advice appended
_INSTRUCTIONS = ("migrate by hand", "or by hand", "--unsafe-fixes", "; write ", "; bind ", "; wrap ", "; call ", "; define ",
                 "; import ", "; read ", "; make ")


class Planner:
    """Everything one module's rewrite reads: the sites found and the provers."""

    def __init__(self, found, ctx):
        self.found, self.col, self.ctx = found, found.col, ctx
        self.module = found.module
        self.unsafe = bool(getattr(ctx.options, "unsafe_fixes", False))
        self.project = project_for(ctx.index)
        here = os.path.abspath(ctx.path)
        self.col.api_patches = self.project.tf_api_patches(here)
        self.col.implicit = (lambda: project_hooks(self.project), _import_names(found.module))
        self.prover = Prover(found, ctx, self.project)
        self.values = Values(found, os.path.abspath(ctx.path), self.project)
        self.scanner = OpScanner(found, self.values, self.unsafe)
        self.regs = RegistrationProof(self.prover)
        self.plan = OverridePlan()
        self.names = NameAllocator(self.module, lambda: star_visible_names(self.project, here))
        self.sites: list[Site] = []
        # a new `import tensorflow as tf` must not rebind a `tf` the file already has
        imported = tf_module_name(self.col.qnames.imported()) if not self.col.tf_aliases else None
        if imported:
            self.col.tf_aliases.append(imported)  # `from .backend import tf`: the file's TF module
        alias = self.col.tf_aliases[0] if self.col.tf_aliases else self.names.fresh("tf")
        self.plan.tf_alias = alias
        self.body = GradBody(self.col, alias)


def build_plan(p: Planner) -> OverridePlan:
    forced: dict[Block, Refuse] = {}
    while True:
        late = _build(p, forced)
        if not late:
            break
        # a block refused while its wrapper was written: plan again from scratch with it refused,
        # so that its registrations stay (found by an adversarial run: one was removed)
        forced.update(late)
        p = Planner(p.found, p.ctx)
    p.ctx.sites.extend(sorted(p.sites, key=lambda s: (s.line, s.col)))
    return p.plan


def _build(p: Planner, forced: dict) -> dict:
    """Fill ``p.plan`` and ``p.sites``; the blocks refused only by ``plan_block`` (then nothing is kept)."""
    col = p.col
    top = [b for b in col.blocks if b.stmt_parent is None]
    results: dict[Block, BlockResult] = {}
    refused: dict[Block, Refuse] = {}
    for b in top:
        if b in forced:
            refused[b] = forced[b]
            continue
        try:
            results[b] = analyse_block(p.prover, p.scanner, p.regs, b, p.unsafe)
        except Refuse as e:
            refused[b] = e
    regs_by_id = {id(r): r for r in col.registrations}
    helpers: dict[int, HelperSpec] = {}
    reg_evidence: dict[int, Evidence] = {}
    changed = True
    while changed:  # a registration shared by a refused block must stay; so must every block using it
        changed = False
        kept = _kept_registrations(p, refused)
        for b, res in list(results.items()):
            shared = res.registrations & kept
            if shared:
                reg = regs_by_id[next(iter(shared))]
                refused[b] = Refuse("TFG109", f"shares the gradient registered at line {reg.line} with a block that needs manual work")
                del results[b]
                changed = True
        if changed:
            continue
        for b, res in list(results.items()):
            try:
                _prove_registrations(p, res, regs_by_id, reg_evidence)
            except Refuse as e:
                refused[b] = e
                del results[b]
                changed = True
                break
        if changed:
            continue
        failed = _convert_helpers(p, results, helpers, regs_by_id)
        for b, e in failed.items():
            refused[b] = e
            del results[b]
            changed = True
    wrappers: dict[tuple, str] = {}
    late: dict[Block, Refuse] = {}
    for b, res in results.items():
        try:
            plan_block(p, b, res, helpers, wrappers)
        except Refuse as e:
            late[b] = e
    if late:
        return late
    _plan_registrations(p, results, helpers, regs_by_id, reg_evidence)
    _report_refusals(p, refused)
    return {}


def _kept_registrations(p: Planner, refused: dict) -> set:
    kept = set()
    for b in refused:
        try:
            mapping = p.prover.parse_map(b)
        except Refuse:
            continue
        for ref in mapping.values():
            try:
                t = p.prover.resolve_target(ref)
            except Refuse:
                continue
            if not isinstance(t, str):
                kept.add(id(t))
    return kept


def _prove_registrations(p: Planner, res: BlockResult, regs_by_id: dict, reg_evidence: dict) -> None:
    """Every registration this block's rewrite removes can go (no other user, no direct call),
    and the helper it becomes exists wherever this block's wrappers call it."""
    for rid in res.registrations:
        reg = regs_by_id[rid]
        if rid not in reg_evidence:
            ev = Evidence(p.unsafe)
            p.regs.check(reg, ev)
            reg_evidence[rid] = ev
        res.evidence.merge(reg_evidence[rid])
        p.regs.placement(reg, res.reg_blocks.get(rid, []), res.evidence)


def _convert_helpers(p: Planner, results: dict, helpers: dict, regs_by_id: dict) -> dict:
    """Convert every registration the candidates use, each with all of its sites in view;
    returns the blocks refused because their helper cannot be converted."""
    by_reg: dict[int, list[Candidate]] = {}
    users: dict[int, list] = {}
    for b, res in results.items():
        for c in res.candidates:
            t = res.targets[id(c)]
            if isinstance(t, Registration):
                by_reg.setdefault(id(t), []).append(c)
                users.setdefault(id(t), []).append((b, res))
    failed: dict = {}
    for rid, cands in by_reg.items():
        if rid in helpers:
            continue
        ev = Evidence(p.unsafe)
        try:
            helpers[rid] = _convert_helper(p, regs_by_id[rid], cands, ev)
        except Refuse as e:
            for b, _res in users[rid]:
                failed[b] = e
            continue
        for _b, res in users[rid]:
            res.evidence.merge(ev)
    return failed


def _convert_helper(p: Planner, reg: Registration, cands: list[Candidate], ev: Evidence) -> HelperSpec:
    if reg.fn is None and reg.fn_param is not None:
        return _convert_passed_functions(p, reg, cands, ev)
    if reg.fn is None:
        raise Refuse("TFG109", "the gradient function is passed as a value the migrator cannot follow")
    arities = {c.n_inputs for c in cands}
    if len(arities) > 1 or any(c.variadic for c in cands) and not all(c.variadic for c in cands):
        raise Refuse("TFG109", f"`{reg.fn.name.value}` serves ops with different inputs")
    first = cands[0]
    types = sorted({c.op_type for c in cands})
    if len(types) > 1 and ".type" in code(reg.fn):  # one helper, one pasted op.type (adversarial run)
        raise Refuse("TFG109", f"`{reg.fn.name.value}` reads op.type and serves {' and '.join(types)} ops")
    proofs: list[str] = []
    elementwise = all(c.op_type in _ELEMENTWISE and c.n_inputs == 1 for c in cands)
    body_fn = p.body.convert(reg.fn, proofs, elementwise=elementwise)
    arity = optable.arity(first.op_type)
    n_out = arity[1] if arity and not first.variadic else None
    names = first.input_names if not first.consts else _op_input_names(first)
    try:
        spec = convert_gradient_function(
            body_fn, ["inputs"] if first.variadic else names, first.op_type,
            lambda attr: _attr_value(p, cands, attr), drop_decorator=lambda d, reg=reg: d is reg.decorator,
            variadic=first.variadic, n_outputs=n_out)
    except Unsupported as e:
        raise Refuse("TFG105", f"`{reg.fn.name.value}`: {e}") from None
    for pr in proofs:
        ev.prove(pr)
    ev.prove(f"`{reg.fn.name.value}` reads only op.inputs, op.outputs[0], op.type and attributes the call shows")
    return spec


def _op_input_names(c: Candidate) -> list[str]:
    """A name for every op input (parameters and Python constants), in op-input order."""
    out = []
    for i in range(c.n_inputs):
        out.append(c.input_names[c.slots.index(i)] if i in c.slots else f"x{i}")
    return out


def _attr_value(p: Planner, cands: list[Candidate], attr: str):
    """What ``op.get_attr(attr)`` is at every site: an input's dtype, a literal, or a per-site value."""
    info = optable.op_attrs(cands[0].op_type)
    if info is None or attr not in info["attrs"]:
        return None  # TF1 raised at gradient time
    types = info.get("input_type_attrs") or []
    if attr in types:
        return ("input", types.index(attr))
    values = set()
    for c in cands:
        if c.tf_name is None:
            return None
        if attr in c.bound:
            expr = c.bound[attr][1]
            if p.scanner._static_ok(expr) is True:
                values.add(code(expr))
            else:
                values.add(None)
            continue
        defaults = optable.param_defaults(c.tf_name) or {}
        params = (optable.function_info(c.tf_name) or {}).get("params") or []
        if attr not in params:
            return None  # the function may set it from another argument
        d = defaults.get(attr, "missing")
        if d is None or d == "missing" or isinstance(d, dict):
            return None
        values.add(repr(d))
    if attr in _LIST_ATTRS or any(v is not None and v.lstrip().startswith(("[", "(")) for v in values):
        return None  # TF expands `strides=1` to [1, 1, 1, 1]: the op's value is not the argument
    string = attr in _STRING_ATTRS or isinstance(optable.op_default(cands[0].op_type, attr, None), str)
    if len(values) == 1 and None not in values:
        literal = _as_attr(values.pop())
        if string:  # op.get_attr gives a string attribute back as bytes: b"SAME" == "SAME" is False
            try:
                text = ast.literal_eval(literal)
            except (ValueError, SyntaxError):
                return None
            if not isinstance(text, str):
                return None
            literal = repr(text.encode())
        return ("paste", cst.parse_expression(literal))
    return None if string else ("param", None)


#: one-input ops whose output has the input's shape (tf.where on such values selects alike in TF1 and TF2)
_ELEMENTWISE = frozenset({"Relu", "Relu6", "LeakyRelu", "Elu", "Selu", "Softplus", "Softsign", "Sigmoid", "Tanh",
                          "Sign", "Round", "Floor", "Ceil", "Rint", "Identity", "Abs", "Neg", "Exp", "Log",
                          "Square", "Sqrt", "Rsqrt", "Reciprocal", "StopGradient"})
#: attributes TF stores as lists whatever form the argument had (found by an adversarial run)
_LIST_ATTRS = frozenset({"strides", "ksize", "dilations", "explicit_paddings"})
#: attributes TF stores as strings, which op.get_attr returns as bytes
_STRING_ATTRS = frozenset({"padding", "data_format"})


def _as_attr(literal: str) -> str:
    """The literal ``op.get_attr`` gives back: a float attr is stored in 32 bits, so
    ``alpha=0.3`` reads back as 0.30000001192092896 (a float64 gradient sees the difference)."""
    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return literal
    if type(value) is float:
        stored = struct.unpack("f", struct.pack("f", value))[0]
        if stored != value and stored == stored:
            return repr(stored)
    return literal


def _plan_registrations(p: Planner, results: dict, helpers: dict, regs_by_id: dict, reg_evidence: dict) -> None:
    plan = p.plan
    used = set()
    for res in results.values():
        used |= res.registrations
    for rid in used:
        reg = regs_by_id[rid]
        spec = helpers.get(rid)
        if reg.stmt is not None:
            plan.remove.add(reg.stmt)
        if reg.key[0] == "name":
            plan.maybe_dead.add(reg.key[2])
            plan.seeded = p.project.grep(b"seed", r"\bseed\s*\(") != []  # `np.random.seed(0)`; None: too big to tell
        if reg.fn is not None:
            if spec is not None:
                plan.helpers[reg.fn] = spec.node
            elif reg.decorator is not None:
                plan.helpers[reg.fn] = None  # registered but no op uses it any more (dead key)
        label = reg.key[1] if reg.key[0] == "lit" else f"`{reg.key[2]}`"
        if reg.fn is not None:
            what = f"`{reg.fn.name.value}` is now a plain gradient helper"
        else:
            passed = sorted(d.name.value if isinstance(d, cst.FunctionDef) else f"a lambda at line {p.found.line(d)}"
                            for d in plan.helpers if d is not None and d is not reg.fn)
            what = f"the functions passed as `{reg.fn_param}` ({', '.join(passed)}) now take (inputs, *grads)"
        ev = reg_evidence.get(rid, Evidence())
        p.sites.append(Site(REGISTER_GRADIENT, "TFG002", reg.line, 1, MIGRATED,
                            f"RegisterGradient({label}) removed; {what}" if spec is not None
                            else f"RegisterGradient({label}) removed: no op used it",
                            proof=list(ev.proof), assumptions=list(ev.assumptions)))


def _report_refusals(p: Planner, refused: dict) -> None:
    for b, e in refused.items():
        advice = codes.advice(e.code)
        try:
            keys = list(p.prover.parse_map(b))
        except Refuse:
            keys = []
        tf2 = next((_TF2_ADVICE[k] for k in keys if k in _TF2_ADVICE), None) if e.code in ("TFG101", "TFG108") else None
        says_what_to_do = any(w in e.reason for w in _INSTRUCTIONS)
        reason = f"{e.reason}; {tf2 or advice}" if (tf2 or advice) and not says_what_to_do else e.reason
        p.sites.append(Site(OVERRIDE_MAP, e.code, b.line, b.col, MANUAL, reason))
        p.ctx.facts.setdefault("manual_overrides", []).append(b.line)
    for graph, scope, line, col_ in p.col.escaping:
        if not p.prover.is_graph(graph, scope) and not _may_be_graph(p, graph, scope):
            continue  # a look-alike method that is not entered by a with: nothing to say
        p.sites.append(Site(OVERRIDE_MAP, "TFG110", line, col_, MANUAL, f"{codes.title('TFG110')}; {codes.advice('TFG110')}"))
        p.ctx.facts.setdefault("manual_overrides", []).append(line)


def _may_be_graph(p: Planner, expr, scope) -> bool:
    # `tf.Graph()`, a name bound only to one, or a parameter (`with g.as_default(), g.gradient_override_map(m):`)
    if isinstance(expr, cst.Call):
        return p.col.tf(expr) == "tensorflow.Graph"
    bound = scope.lookup_assigns(expr.value) if isinstance(expr, cst.Name) else []
    return bool(bound) and all(_may_be_graph(p, v, scope) for _s, v in bound) or \
        isinstance(expr, cst.Name) and expr.value in scope.params


def _convert_passed_functions(p: Planner, reg: Registration, cands: list[Candidate], ev: Evidence) -> HelperSpec:
    """``RegisterGradient(name)(grad)`` where ``grad`` is a parameter (the py_func recipe).

    Every call of the enclosing function in the project must pass a module-level
    def for ``grad``; each of those defs is converted to ``grad(inputs, [outputs,] *grads)``.
    """
    fn = reg.scope.node
    param = reg.fn_param
    if not isinstance(fn, cst.FunctionDef):
        raise Refuse("TFG109", f"`{param}` is registered outside a function")
    names = [x.name.value for x in fn.params.params]
    idx = names.index(param) if param in names else None
    calls = p.col.calls_by_name.get(fn.name.value, [])
    sites = p.project.callers(p.prover.path, fn.name.value) if reg.scope.parent is not None \
        and reg.scope.parent.parent is None else None
    if sites is None or len(sites) != len(calls):
        raise Refuse("TFG109", f"`{fn.name.value}` is called from code the migrator cannot list, so the gradient "
                               f"passed as `{param}` is unknown")
    if not calls:
        raise Refuse("TFG109", f"`{fn.name.value}` is never called in this file, so the gradient passed as `{param}` is unknown")
    defs: list[cst.FunctionDef] = []
    passed: list[cst.Name] = []
    nested: set = set()
    lambdas: dict = {}  # a def made from a `lambda op, grad: ...` -> the lambda
    for call, call_scope in calls:
        given = None
        for i, a in enumerate(call.args):
            if (a.keyword is not None and a.keyword.value == param) or (a.keyword is None and i == idx and not a.star):
                given = a.value
        if isinstance(given, cst.Lambda):
            d = _lambda_as_def(p, given, call_scope)
            lambdas[d] = given
            defs.append(d)
            continue
        if not isinstance(given, cst.Name):
            raise Refuse("TFG109", f"a call of `{fn.name.value}` passes no function name for `{param}`; "
                                   "define the gradient with `def` and pass its name")
        # a def of the module, or one nested in the calling function (`def _grad(op, grad)` next
        # to the call): the name the call reads is that def, unless something rebinds it
        d = call_scope.find_def(given.value)
        if not isinstance(d, cst.FunctionDef) or not _defined_once(call_scope, d):
            raise Refuse("TFG109", f"`{given.value}` passed as `{param}` is not a def the migrator can follow "
                                   "(defined once, in this module or the calling function)")
        if call_scope.defs.get(given.value) is d and call_scope.parent is not None:
            nested.add(id(d))
        passed.append(given)
        if d not in defs:
            defs.append(d)
    if not all(c.variadic for c in cands):
        raise Refuse("TFG109", "a gradient passed as a value must serve a py_func with a list of inputs")
    try:
        uses = [analyse_op_uses(d) for d in defs]
    except Unsupported as e:
        raise Refuse("TFG105", str(e)) from None
    want_outputs = any(u.outputs or u.all_outputs for u in uses)
    converted: dict = {}
    for d in defs:
        proofs: list[str] = []
        body_fn = p.body.convert(d, proofs)
        try:
            spec = convert_gradient_function(
                body_fn, ["inputs"], cands[0].op_type, lambda attr: None, drop_decorator=lambda _d: False,
                variadic=True, force_outputs=want_outputs,
            )
        except Unsupported as e:
            raise Refuse("TFG105", f"`{d.name.value}`: {e}") from None
        for pr in proofs:
            ev.prove(pr)
        if d in lambdas:
            converted[lambdas[d]] = _def_as_lambda(spec.node, lambdas[d])
            continue
        p.regs.only_passed(d, passed, nested=id(d) in nested)
        converted[d] = spec.node
    p.plan.helpers.update(converted)  # all or none: a refusal above leaves every def as it was
    named = ", ".join(d.name.value if d not in lambdas else f"a lambda at line {p.found.line(lambdas[d])}"
                      for d in defs)
    ev.prove(f"every call of `{fn.name.value}` in the project passes a def or a lambda for `{param}` ({named})")
    return HelperSpec(
        name=param,
        input_params=[(0, "inputs")],
        output_param="outputs" if want_outputs else None,
        upstream=[],
        star_upstream=cst.Param(cst.Name("grads")),
        node=fn,
    )


def _defined_once(scope, d: cst.FunctionDef) -> bool:
    """``d`` is the only binding of its name in the scope that holds it (no second def, no
    assignment, no import): then every read of the name there is ``d``."""
    name = d.name.value
    s = scope
    while s is not None and s.defs.get(name) is not d:
        s = s.parent
    if s is None:
        return False
    body = s.node.body.body if isinstance(s.node, (cst.FunctionDef, cst.ClassDef)) else s.node.body
    count = sum(1 for st in _walk_defs(body) if st.name.value == name)
    return count == 1 and name not in s.assigns and name not in s.globals


def _walk_defs(stmts):
    """Defs among the statements of one scope, including those nested in if/for/with/try."""
    for st in stmts:
        if isinstance(st, cst.FunctionDef):
            yield st
        elif isinstance(st, (cst.If, cst.For, cst.While, cst.With, cst.Try)):
            for part in (st.body, getattr(st, "orelse", None), getattr(st, "finalbody", None)):
                if part is not None and hasattr(part, "body") and isinstance(part.body, (list, tuple)):
                    yield from _walk_defs(part.body)
            for h in getattr(st, "handlers", ()):
                yield from _walk_defs(h.body.body)


def _lambda_as_def(p: Planner, lam: cst.Lambda, scope) -> cst.FunctionDef:
    """``lambda op, grad: e`` as ``def <lambda>(op, grad): return e``, so the one converter serves
    both; names in ``e`` resolve in the lambda's scope."""
    if lam.params.star_arg is not cst.MaybeSentinel.DEFAULT and lam.params.star_arg is not None \
            or lam.params.kwonly_params or lam.params.posonly_params or lam.params.star_kwarg is not None:
        raise Refuse("TFG109", "the gradient lambda takes other than plain (op, grad) parameters; write it as a def")
    params = [prm.with_changes(comma=cst.MaybeSentinel.DEFAULT) for prm in lam.params.params]
    d = cst.FunctionDef(cst.Name("_lambda"), cst.Parameters(params=params),
                        cst.IndentedBlock([cst.SimpleStatementLine([cst.Return(lam.body)])]))
    p.col.scope_of_def[d] = scope
    return d


def _def_as_lambda(d: cst.FunctionDef, lam: cst.Lambda) -> cst.Lambda:
    """The converted def back as the lambda it came from (its body must still be one return)."""
    body = d.body.body
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1 \
            or not isinstance(body[0].body[0], cst.Return) or body[0].body[0].value is None:
        raise Refuse("TFG109", "the gradient lambda needs statements once converted; write it as a def")
    params = list(d.params.params)
    params = [prm.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
              for prm in params[:-1]] + params[-1:]
    return lam.with_changes(params=lam.params.with_changes(params=params), body=body[0].body[0].value)
