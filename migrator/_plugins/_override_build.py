"""Turn analysed override blocks into a plan: wrappers, helpers, removals, sites."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

import libcst as cst

from migrator import codes, optable
from migrator._plugins._gradfn import HelperSpec, Unsupported, convert_gradient_function, upstream_names
from migrator._plugins._override_analysis import (
    Block,
    Candidate,
    OverridePlan,
    Refuse,
    Registration,
    _code,
    _Planner,
)
from migrator.model import MANUAL, MIGRATED, OVERRIDE_MAP, PY_FUNC_GRADIENT, REGISTER_GRADIENT, Site
from migrator.naming import snake

_NONE_GRAD = {"StopGradient"}
#: how many gradients each built-in target returns (StopGradient: one None per input)
_BUILTIN_ARITY = {"Identity": 1, "Neg": 1, "Sign": 1, "Floor": 1, "Round": 1, "Ceil": 1, "Rint": 1, "Add": 2, "AddV2": 2}
_NONE_GRAD_ONE_INPUT = {"Floor", "Round", "Ceil", "Rint"}

#: what to do in TF2, by op type, for refusals (the report's reason says it)
_TF2_ADVICE = {
    "Relu": "for guided backprop, swap the activation for a @tf.custom_gradient relu whose grad_fn gates dy",
    "Identity": "wrap the tensor in a @tf.custom_gradient identity whose grad_fn returns the new gradient",
    "MatMul": "put the matmul in a @tf.custom_gradient function with the registered gradient as grad_fn",
}


def _descendants(block: Block) -> list[Block]:
    out = [block]
    for c in block.children:
        out += _descendants(c)
    return out


@dataclass
class _BlockResult:
    candidates: list[Candidate] = field(default_factory=list)
    dead_keys: dict[Block, list[str]] = field(default_factory=dict)
    targets: dict[int, Union[str, Registration]] = field(default_factory=dict)  # id(candidate) -> target
    registrations: set[int] = field(default_factory=set)  # ids of registrations the maps name


def _analyse_block(p: _Planner, block: Block) -> _BlockResult:
    res = _BlockResult()
    for b in _descendants(block):
        if not p.is_graph(b.call.func.value, b.scope):
            raise Refuse(
                "TFG107",
                f"`{_code(b.call.func.value)}` is not known to be a TensorFlow graph; "
                "left alone (bind it with tf.get_default_graph() if it is one)",
            )
    block.mapping = p.parse_map(block)
    cands = p.scan_block(block, block.mapping)
    used_types: dict[Block, set[str]] = {}
    for c in cands:
        owner = c.block
        while owner is not None and c.op_type not in owner.mapping:
            owner = owner.stmt_parent
        used_types.setdefault(owner or c.block, set()).add(c.op_type)  # type: ignore[arg-type]
        target = p.resolve_target(c.target)
        res.targets[id(c)] = target
        n = len(c.input_names)
        if isinstance(target, str):
            if c.variadic:
                raise Refuse("TFG104", f"the built-in gradient {target} cannot serve a py_func with a list of inputs")
            want = _BUILTIN_ARITY.get(target)
            if want is not None and n != want:
                raise Refuse(
                    "TFG104",
                    f"{{{c.op_type!r}: {target!r}}}: the {target} gradient returns {want} value(s) but {c.op_type} "
                    f"has {n} input(s); TF1 raises 'Num gradients {want} generated ... do not match num inputs {n}'",
                )
        else:
            if target.fn is None and target.fn_param is None:
                raise Refuse("TFG109", f"the function registered at line {target.line} is not a def the migrator can follow")
    for b in _descendants(block):
        keys = [k for k in b.mapping if k not in used_types.get(b, set())]
        # a key shadowed by an inner block is still "used" if the inner block uses it
        res.dead_keys[b] = keys
        for ref in b.mapping.values():
            try:
                t = p.resolve_target(ref)
            except Refuse:
                continue
            if isinstance(t, Registration):
                res.registrations.add(id(t))
    res.candidates = cands
    return res


def _typo_hint(key: str) -> str:
    known = optable.all_op_types()
    if key in known:
        return ""
    for t in known:
        if t.lower() == key.lower():
            return f" (op types are case-sensitive: did you mean {t!r}?)"
    return " (no TensorFlow op has this type)"


def build_plan(p: _Planner) -> OverridePlan:
    col, plan = p.col, p.plan
    top = [b for b in col.blocks if b.stmt_parent is None]
    results: dict[Block, _BlockResult] = {}
    refused: dict[Block, Refuse] = {}
    for b in top:
        try:
            results[b] = _analyse_block(p, b)
        except Refuse as e:
            refused[b] = e

    regs_by_id = {id(r): r for r in col.registrations}
    # A registration shared by a refused block must stay; so must every block using it.
    helpers: dict[int, HelperSpec] = {}
    changed = True
    while changed:
        changed = False
        kept_regs = set()
        for b, e in refused.items():
            try:
                mapping = p.parse_map(b)
            except Refuse:
                continue
            for ref in mapping.values():
                try:
                    t = p.resolve_target(ref)
                except Refuse:
                    continue
                if not isinstance(t, str):
                    kept_regs.add(id(t))
        for b, res in list(results.items()):
            shared = res.registrations & kept_regs
            if shared:
                reg = regs_by_id[next(iter(shared))]
                refused[b] = Refuse("TFG109", f"shares the gradient registered at line {reg.line} with a block that needs manual work")
                del results[b]
                changed = True
        if changed:
            continue
        # convert each registration that candidates use
        for b, res in list(results.items()):
            try:
                _convert_helpers(p, res, helpers, regs_by_id)
            except Refuse as e:
                refused[b] = e
                del results[b]
                changed = True
                break

    alias = col.tf_aliases[0] if col.tf_aliases else "tf"
    plan.tf_alias = alias
    wrappers: dict[tuple, str] = {}
    for b, res in results.items():
        _plan_block(p, b, res, helpers, wrappers)
    # registrations: converted ones lose their decorator / registration statement
    used_reg_ids = set()
    for res in results.values():
        used_reg_ids |= res.registrations
    for rid in used_reg_ids:
        reg = regs_by_id[rid]
        spec = helpers.get(rid)
        if reg.stmt is not None:
            plan.remove.add(reg.stmt)
        if reg.key[0] == "name":
            plan.maybe_dead.add(reg.key[2])
        if reg.fn is None and spec is not None:
            p.plan.maybe_dead.add(reg.key[2]) if reg.key[0] == "name" else None
        if reg.fn is not None:
            if spec is not None:
                plan.helpers[reg.fn] = spec.node
            elif reg.decorator is not None:
                # registered but no op uses it any more (dead key): drop the function if nothing calls it
                plan.helpers[reg.fn] = None  # type: ignore[assignment]
        label = reg.key[1] if reg.key[0] == "lit" else f"`{reg.key[2]}`"
        if reg.fn is not None:
            what = f"`{reg.fn.name.value}` is now a plain gradient helper"
        else:
            passed = sorted(d.name.value for d in p.plan.helpers if d is not None and d is not reg.fn)
            what = f"the functions passed as `{reg.fn_param}` ({', '.join(passed)}) now take (inputs, *grads)"
        p.sites.append(
            Site(REGISTER_GRADIENT, "TFG002", reg.line, 1, MIGRATED,
                 f"RegisterGradient({label}) removed; {what}" if spec is not None
                 else f"RegisterGradient({label}) removed: no op used it")
        )
    for b, e in refused.items():
        advice = codes.advice(e.code)
        try:
            keys = list(p.parse_map(b))
        except Refuse:
            keys = []
        tf2 = next((_TF2_ADVICE[k] for k in keys if k in _TF2_ADVICE), None)
        reason = f"{e.reason}; {tf2 or advice}" if (tf2 or advice) else e.reason
        p.sites.append(Site(OVERRIDE_MAP, e.code, b.line, b.col, MANUAL, reason))
        p.ctx.facts.setdefault("manual_overrides", []).append(b.line)
    for call, scope, line, col_ in p.col.escaping:
        if not p.is_graph(call.func.value, scope):
            continue  # a look-alike method that is not entered by a with: nothing to say
        reason = f"{codes.title('TFG110')}; {codes.advice('TFG110')}"
        p.sites.append(Site(OVERRIDE_MAP, "TFG110", line, col_, MANUAL, reason))
        p.ctx.facts.setdefault("manual_overrides", []).append(line)
    p.ctx.sites.extend(sorted(p.sites, key=lambda s: (s.line, s.col)))
    return plan


def _convert_helpers(p: _Planner, res: _BlockResult, helpers: dict, regs_by_id: dict) -> None:
    by_reg: dict[int, list[Candidate]] = {}
    for c in res.candidates:
        t = res.targets[id(c)]
        if isinstance(t, Registration):
            by_reg.setdefault(id(t), []).append(c)
    for rid, cands in by_reg.items():
        if rid in helpers:
            continue
        reg = regs_by_id[rid]
        if reg.fn is None and reg.fn_param is not None:
            helpers[rid] = _convert_passed_functions(p, reg, cands)
            continue
        if reg.fn is None:
            raise Refuse("TFG109", "the gradient function is passed as a value the migrator cannot follow")
        arities = {len(c.input_names) for c in cands}
        if len(arities) > 1 or any(c.variadic for c in cands) and not all(c.variadic for c in cands):
            raise Refuse("TFG109", f"`{reg.fn.name.value}` serves ops with different inputs")
        first = cands[0]

        def attr_value(attr: str, cands=cands, op_type=first.op_type) -> Optional[cst.BaseExpression]:
            values = set()
            for c in cands:
                if isinstance(c.node, cst.Call):
                    for a in c.node.args:
                        if a.keyword is not None and a.keyword.value == attr:
                            values.add(_code(a.value))
            if len(values) == 1:
                return cst.parse_expression(values.pop())
            if values:
                return None
            default = optable.op_default(op_type, attr)
            if default is None:
                return None
            return cst.parse_expression(repr(default))

        try:
            spec = convert_gradient_function(
                reg.fn,
                ["inputs"] if first.variadic else first.input_names,
                first.op_type,
                attr_value,
                drop_decorator=lambda d, reg=reg: d is reg.decorator,
                variadic=first.variadic,
            )
        except Unsupported as e:
            raise Refuse("TFG105", f"`{reg.fn.name.value}`: {e}") from None
        helpers[rid] = spec


def _wrapper_name(p: _Planner, c: Candidate, target) -> str:
    op = snake(c.op_type)
    if c.op_type in ("PyFunc", "PyFuncStateless"):
        op = "numpy_function"
    if isinstance(target, str):
        suffix = {
            "Identity": "straight_through",
            "Add": "add_gradient",
            "AddV2": "add_gradient",
            "Neg": "negated_gradient",
            "Sign": "zero_gradient",
        }.get(target, "without_gradient")
        return f"{op}_{suffix}"
    if target.key[0] == "lit":
        label = target.key[1]
    else:
        label = target.fn.name.value if target.fn is not None else target.fn_param or target.key[2]
    return f"{op}_with_{snake(label)}"


def _grad_code(c: Candidate, target, spec: Optional[HelperSpec], params: list[str], out: Optional[str], alias: str) -> str:
    if isinstance(target, str):
        n = len(params)
        if target == "Identity":
            return "lambda dy: dy"
        if target == "Neg":
            return "lambda dy: -dy"
        if target == "Sign":
            return f"lambda dy: {alias}.zeros_like({params[0]})"
        if n == 1:
            return "lambda dy: None"
        return "lambda dy: (" + ", ".join(["None"] * n) + ")"
    assert spec is not None
    if spec.takes_only_upstream:
        return spec.name
    plain, star = upstream_names(spec)
    lam = plain + ([f"*{star}"] if star else [])
    if c.variadic:
        args = ["inputs"]
    else:
        args = [params[i] for i, _n in spec.input_params]
    if spec.output_param:
        args.append(out or "y")
    return f"lambda {', '.join(lam)}: {spec.name}({', '.join(args + lam)})"


def _plan_block(p: _Planner, block: Block, res: _BlockResult, helpers: dict, wrappers: dict) -> None:
    plan, col = p.plan, p.col
    module = p.module
    indent = module.default_indent
    nl = module.default_newline
    for c in res.candidates:
        target = res.targets[id(c)]
        spec = helpers.get(id(target)) if not isinstance(target, str) else None
        params = ["*inputs"] if c.variadic else _param_names(c.input_names)
        if params != c.input_names and c.forward is not None and not c.variadic:
            c.forward = _rename_forward(c.forward, c.input_names, params)
        needs_out = bool(spec and spec.output_param)
        out = "y" if "y" not in params else "y_out"
        forward_code = _code(c.forward) if c.forward is not None else _operator_forward(c, params)
        nested = c.needs_closure or (not isinstance(target, str) and target.scope is not col.module_scope)
        alias = plan.tf_alias
        if not col.tf_aliases and block.scope.tf_local_alias:
            alias, nested = block.scope.tf_local_alias, True  # tensorflow is imported in this function only
        key = (forward_code, tuple(params), id(target) if not isinstance(target, str) else target,
               id(c.stmt) if nested else None)
        name = wrappers.get(key)
        if name is None:
            name = p.names.fresh(_wrapper_name(p, c, target))
            wrappers[key] = name
            grad = _grad_code(c, target, spec, [x.lstrip("*") for x in params], out, alias)
            lines = [f"@{alias}.custom_gradient", f"def {name}({', '.join(params)}):"]
            one_line = f"{indent}return {forward_code}, {grad}"
            if target in ("Add", "AddV2"):
                lines += _add_gradient_lines(params, indent, alias) + [f"{indent}return {forward_code}, grad"]
            elif needs_out or c.post_lines or len(one_line) + len(indent) * _depth(p, c) > 88:
                post = [indent + ln.format(out=out, indent=indent) for ln in c.post_lines]
                lines += [f"{indent}{out} = {forward_code}", *post, f"{indent}return {out}, {grad}"]
            else:
                lines += [f"{indent}return {forward_code}, {grad}"]
            source = nl.join(lines) + nl
            if nested:
                plan.insert_before.setdefault(c.stmt, []).append(source)
            else:
                plan.add_tf_import = plan.add_tf_import or not col.tf_aliases
            if nested:
                pass
            elif not isinstance(target, str) and target.fn is not None and target.scope is col.module_scope:
                plan.insert_after.setdefault(target.fn, []).append(source)
            else:
                anchor = _top_statement(p, block)
                plan.insert_before.setdefault(anchor, []).append(source)
        plan.replace[c.node] = (name, c)
    for b in _descendants(block):
        plan.dissolve.add(b.node)
        graph = b.call.func.value
        for key, _stmt in p.graph_binding_stmts(graph, b.scope):
            plan.maybe_dead.add(key)
        if isinstance(graph, cst.Attribute) and graph.attr.value == "graph":
            pass
        if isinstance(b.call.args[0].value, cst.Name):
            plan.maybe_dead.add(b.call.args[0].value.value)
    plan.maybe_dead_imports.add("ops")
    # one site per block (nested blocks included)
    for b in _descendants(block):
        mine = [c for c in res.candidates if c.block is b]
        dead = res.dead_keys.get(b, [])
        if not mine and dead and len(dead) == len(b.mapping):
            hints = "; ".join(f"{k!r}{_typo_hint(k)}" for k in dead)
            reason = f"dead override removed: no op of type {hints} is created in this block, so TF1 ignored it too"
            p.sites.append(Site(OVERRIDE_MAP, "TFG007", b.line, b.col, MIGRATED, reason))
            continue
        types = sorted({c.op_type for c in mine})
        kind = PY_FUNC_GRADIENT if set(types) & {"PyFunc", "PyFuncStateless"} else OVERRIDE_MAP
        code = "TFG006" if kind == PY_FUNC_GRADIENT else "TFG001"
        names = sorted({plan.replace[c.node][0] for c in mine})
        reason = f"{', '.join(types) or 'no'} op(s) now call @tf.custom_gradient function(s) {', '.join(names)}"
        notes = [f"key {k!r} matched no op in the block{_typo_hint(k)}" for k in dead]
        p.sites.append(Site(kind, code, b.line, b.col, MIGRATED, reason, notes=notes))


def _operator_forward(c: Candidate, params: list[str]) -> str:
    node = c.node
    if isinstance(node, cst.BinaryOperation):
        return _code(node.with_changes(left=cst.Name(params[0]), right=cst.Name(params[1]),
                                       lpar=[], rpar=[]))
    if isinstance(node, cst.UnaryOperation):
        return _code(node.with_changes(expression=cst.Name(params[0]), lpar=[], rpar=[]))
    raise AssertionError(type(node))


def _top_statement(p: _Planner, block: Block) -> cst.CSTNode:
    line = block.line
    for stmt in p.module.body:
        pos = p.col.positions[stmt]
        if pos.start.line <= line <= pos.end.line:
            return stmt
    return p.module.body[0]


def _convert_passed_functions(p: _Planner, reg: Registration, cands: list[Candidate]) -> HelperSpec:
    """``RegisterGradient(name)(grad)`` where ``grad`` is a parameter (the py_func recipe).

    Every call of the enclosing function in this module must pass a module-level
    def for ``grad``; each of those defs is converted to ``grad(inputs, [outputs,] *grads)``.
    """
    fn = reg.scope.node
    param = reg.fn_param
    if not isinstance(fn, cst.FunctionDef):
        raise Refuse("TFG109", f"`{param}` is registered outside a function")
    names = [x.name.value for x in fn.params.params]
    idx = names.index(param) if param in names else None
    calls = p.col.calls_by_name.get(fn.name.value, [])
    if not calls:
        raise Refuse("TFG109", f"`{fn.name.value}` is never called in this file, so the gradient passed as `{param}` is unknown")
    defs: list[cst.FunctionDef] = []
    for call, scope in calls:
        given = None
        for i, a in enumerate(call.args):
            if (a.keyword is not None and a.keyword.value == param) or (a.keyword is None and i == idx and not a.star):
                given = a.value
        if not isinstance(given, cst.Name):
            raise Refuse("TFG109", f"a call of `{fn.name.value}` passes no function name for `{param}`")
        d = p.col.module_scope.defs.get(given.value)
        if not isinstance(d, cst.FunctionDef):
            raise Refuse("TFG109", f"`{given.value}` passed as `{param}` is not a module-level def")
        if d not in defs:
            defs.append(d)
    if not all(c.variadic for c in cands):
        raise Refuse("TFG109", "a gradient passed as a value must serve a py_func with a list of inputs")
    from migrator._plugins._gradfn import analyse_op_uses

    try:
        uses = [analyse_op_uses(d) for d in defs]
    except Unsupported as e:
        raise Refuse("TFG105", str(e)) from None
    want_outputs = any(u.outputs or u.all_outputs for u in uses)
    for d in defs:
        try:
            spec = convert_gradient_function(
                d, ["inputs"], cands[0].op_type, lambda attr: None, drop_decorator=lambda _d: False,
                variadic=True, force_outputs=want_outputs,
            )
        except Unsupported as e:
            raise Refuse("TFG105", f"`{d.name.value}`: {e}") from None
        p.plan.helpers[d] = spec.node
    return HelperSpec(
        name=param,
        input_params=[(0, "inputs")],
        output_param="outputs" if want_outputs else None,
        upstream=[],
        star_upstream=cst.Param(cst.Name("grads")),
        node=fn,
    )


def _param_names(names: list[str]) -> list[str]:
    """Wrapper parameters: the op's input names, but never shadowing a builtin (`input`)."""
    import builtins

    out = []
    for n in names:
        base = "x" if hasattr(builtins, n) else n
        cand, i = base, 1
        while cand in out:
            cand, i = f"{base}{i}", i + 1
        out.append(cand)
    return out


def _rename_forward(forward: cst.BaseExpression, old: list[str], new: list[str]) -> cst.BaseExpression:
    mapping = dict(zip(old, new))

    class _R(cst.CSTTransformer):
        def leave_Arg(self, original, updated):
            if isinstance(updated.value, cst.Name) and updated.value.value in mapping:
                return updated.with_changes(value=cst.Name(mapping[updated.value.value]))
            return updated

    return forward.visit(_R())


def _depth(p: _Planner, c: Candidate) -> int:
    """Indentation depth of a nested wrapper (0 for module level), for the line-length check."""
    pos = p.col.positions.get(c.stmt) if hasattr(p.col.positions, "get") else None
    if pos is None:
        return 0
    return pos.start.column // max(1, len(p.module.default_indent))


def _add_gradient_lines(params: list[str], indent: str, tf: str) -> list[str]:
    """TF's own Add gradient: dy to each input, summed down to the input's shape."""
    x, y = params
    i2 = indent * 2
    return [
        f"{indent}def grad(dy):",
        f"{i2}# Add's gradient: dy for each input, summed over the dimensions it was broadcast along",
        f"{i2}rx, ry = {tf}.raw_ops.BroadcastGradientArgs(s0={tf}.shape({x}), s1={tf}.shape({y}))",
        f"{i2}return (",
        f"{i2}{indent}{tf}.reshape({tf}.reduce_sum(dy, rx), {tf}.shape({x})),",
        f"{i2}{indent}{tf}.reshape({tf}.reduce_sum(dy, ry), {tf}.shape({y})),",
        f"{i2})",
        "",
    ]
