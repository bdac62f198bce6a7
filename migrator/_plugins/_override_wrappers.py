"""Plan the ``@tf.custom_gradient`` wrapper of each overridden op, and the block's site."""
from __future__ import annotations

import builtins
import os
import re
from typing import Optional

import libcst as cst

from migrator import optable
from migrator._plugins._gradfn import HelperSpec, upstream_names
from migrator._plugins._override_block import BlockResult, descendants, typo_hint
from migrator._plugins._import_uses import still_used
from migrator._plugins._override_model import Block, Candidate, Refuse, code
from migrator.model import MIGRATED, OVERRIDE_MAP, PY_FUNC_GRADIENT, Site
from migrator.naming import snake
from migrator.tfnames import dotted


def plan_block(p, block: Block, res: BlockResult, helpers: dict, wrappers: dict) -> None:
    plan, col = p.plan, p.col
    indent, nl = p.module.default_indent, p.module.default_newline
    staged = []
    for c in res.candidates:  # build everything first: a refusal leaves the plan untouched
        target = res.targets[id(c)]
        spec = helpers.get(id(target)) if not isinstance(target, str) else None
        staged.append((c, target, _wrapper(p, c, target, spec, indent)))
    for c, target, (params, lines, grad, forward_code, nested_lets) in staged:
        alias = plan.tf_alias
        nested = c.needs_closure or nested_lets or (not isinstance(target, str) and target.scope is not col.module_scope)
        if not col.tf_aliases and block.scope.tf_local_alias:
            alias, nested = block.scope.tf_local_alias, True  # tensorflow is imported in this function only
        key = (forward_code, tuple(params), tuple(lines), grad, id(target) if not isinstance(target, str) else target,
               id(c.stmt) if nested else None)
        name = wrappers.get(key)
        if name is None:
            name = p.names.fresh(_wrapper_name(c, target))
            wrappers[key] = name
            src = _source(c, target, name, params, lines, grad, forward_code, alias, indent, nl, p)
            if nested:
                plan.insert_before.setdefault(c.stmt, []).append(src)
            else:
                plan.add_tf_import = plan.add_tf_import or not col.tf_aliases
                anchor = _anchor(p, block, target)
                if isinstance(anchor, tuple):
                    plan.insert_after.setdefault(anchor[1], []).append(src)
                else:
                    plan.insert_before.setdefault(anchor, []).append(src)
        plan.replace[c.node] = (name, c)
    for b in descendants(block):
        plan.dissolve.add(b.node)
        graph = b.call.func.value
        key = dotted(graph)
        if key is not None and not isinstance(graph, cst.Call):
            _maybe_dead(p, key, b)
            for name in b.graph_chain:
                _maybe_dead(p, name, b)
        if isinstance(b.call.args[0].value, cst.Name):
            name = b.call.args[0].value.value
            if len(b.map_stmts) > 1:
                owner = b.scope.binding_scope(name)
                if owner is not None and owner.parent is not None:
                    plan.map_groups[name] = list(b.map_stmts)
            else:
                _maybe_dead(p, name, b)
    if not still_used("ops", p.ctx.source, p.ctx.path, p.project):  # a re-export, __all__, a doctest
        plan.maybe_dead_imports.add("ops")
    _sites(p, block, res)


def _maybe_dead(p, key: str, b: Block) -> None:
    bound = b.scope.lookup_assigns(key) or (b.scope.module().assigns.get(key) if "." in key else None) or []
    if not bound:
        return
    owner = b.scope.binding_scope(key.split(".")[0])
    if owner is not None and owner.parent is None and "." not in key and p.project is not None:
        uses = p.project.external_uses(p.prover.path, key)
        if uses is None or uses:
            p.plan.keep.add(key)  # another module imports it: it stays
            return
    if "." in key and p.project is not None:  # `self.graph = ...`: code elsewhere may read `obj.graph`
        attr = key.rsplit(".", 1)[1]
        readers = p.project.grep(f".{attr}".encode())
        if readers is None or any(os.path.abspath(q) != p.prover.path for q in readers):
            p.plan.keep.add(key)
            return
    for _stmt, value in bound:
        if not _pure(p, value):
            return
    p.plan.maybe_dead.add(key)


_SESSION_GETTERS = ("keras.backend.get_session", "tensorflow.Session", "tensorflow.InteractiveSession",
                    "tensorflow.get_default_session", "compat.v1.Session", "compat.v1.get_default_session",
                    "compat.v1.InteractiveSession")


def _pure(p, value) -> bool:
    """Deleting a binding to this value (once dead) drops no side effect."""
    if isinstance(value, cst.Name):
        return True
    if isinstance(value, cst.Call):
        return p.prover.is_default_graph_call(value)  # also `get_graph()` returning it
    if isinstance(value, cst.Attribute) and value.attr.value == "graph":
        # `sess.graph`, or the graph of a session a getter makes (`K.get_session().graph`): a
        # session made or fetched for its graph alone; TF2 has none (found on real code)
        return dotted(value) is not None or isinstance(value.value, cst.Call) and any(
            q.endswith(_SESSION_GETTERS) for q in p.prover.col.qualified(value.value))
    if isinstance(value, cst.Dict):
        return all(isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
                   and isinstance(e.value, (cst.SimpleString, cst.Name)) for e in value.elements)
    return False


def _wrapper(p, c: Candidate, target, spec: Optional[HelperSpec], indent: str):
    """(params, body lines before the forward, grad code, forward code, needs to be nested)."""
    alias = p.plan.tf_alias
    params = ["*inputs"] if c.variadic else _param_names(c.input_names)
    plain = [x.lstrip("*") for x in params]
    forward = c.forward
    if params != c.input_names and forward is not None and not c.variadic and c.tf_name is not None:
        forward = _rename_args(forward, dict(zip(c.input_names, params)))
    lines: list[str] = []
    taken = set(plain) | {"y", "y_out", "grad", "dy"}
    lets: dict[str, str] = {}  # call parameter -> name bound in the wrapper
    nested = False

    def let(pname: str, expr: str) -> str:
        nonlocal forward, nested
        if pname in lets:
            return lets[pname]
        # a name the expression reads cannot be bound to it in the nested wrapper:
        # `alpha = alpha` there reads the wrapper's own unbound local (UnboundLocalError)
        reads = set(re.findall(r"[A-Za-z_]\w*", expr))
        name = pname if pname not in taken | reads and not hasattr(builtins, pname) else f"{pname}_value"
        while name in taken | reads:
            name += "_"
        taken.add(name)
        lines.append(f"{name} = {expr}  # evaluated once, where TF1 made the op")
        lets[pname] = name
        if forward is not None and isinstance(forward, cst.Call) and pname in c.bound:
            forward = _rename_arg(forward, c.bound[pname][0], name)
        nested = True
        return name

    for pname, expr in c.attr_lets:
        let(pname, expr)
    attr_args: list[str] = []
    if spec is not None:
        for attr, _pname in spec.attr_params:
            if attr in c.bound:
                expr = c.bound[attr][1]
                attr_args.append(code(expr) if p.scanner._static_ok(expr) is True else let(attr, code(expr)))
            else:
                default = (optable.param_defaults(c.tf_name or "") or {}).get(attr)
                attr_args.append(repr(default))
    consts: dict[int, str] = {}
    if spec is not None and not c.variadic:
        for i, _n in spec.input_params:
            if i in c.slots:
                continue
            if i not in c.consts:
                raise Refuse("TFG108", f"the gradient reads input {i} of the {c.op_type} op, a Python value "
                                       "whose converted dtype the source does not show; wrap it by hand")
            expr, k = c.consts[i]
            types = (optable.op_attrs(c.op_type) or {}).get("input_type_attrs") or []
            if len(types) <= max(i, k) or types[i] != types[k] or types[i] is None:
                # `tf.gather_nd(p, [[0], [1]])`: the indices have their own dtype attr, not the params'
                # (an adversarial run: the wrapper converted them to float32 and the op raised)
                raise Refuse("TFG108", f"the gradient reads input {i} of the {c.op_type} op, a Python value whose "
                                       "dtype is not the tensor input's; wrap it by hand")
            name = f"x{i}" if f"x{i}" not in taken else f"x{i}_const"
            taken.add(name)
            lines.append(f"{name} = {alias}.convert_to_tensor({expr}, dtype={plain[c.slots.index(k)]}.dtype)")
            consts[i] = name
            if forward is not None and i in c.const_nodes:  # the op reads the tensor TF1 made, made once
                forward = _replace_node(forward, c.const_nodes[i], cst.Name(name))
    if isinstance(forward, cst.Call) and isinstance(c.forward, cst.Call):
        forward = _tf2_spelling(p, forward, c.forward.func)
    forward_code = code(forward) if forward is not None else ""
    out = "y" if "y" not in plain else "y_out"
    grad = _grad_code(c, target, spec, plain, out, alias, consts, attr_args)
    return params, lines, grad, forward_code, nested


def _source(c, target, name, params, lines, grad, forward_code, alias, indent, nl, p) -> str:
    out = "y" if "y" not in [x.lstrip("*") for x in params] else "y_out"
    src = [f"@{alias}.custom_gradient", f"def {name}({', '.join(params)}):"]
    src += [indent + ln for ln in lines]
    needs_out = "{out}" in grad
    grad = grad.replace("{out}", out)
    one_line = f"{indent}return {forward_code}, {grad}"
    if target in ("Add", "AddV2"):
        src += _add_gradient_lines([x.lstrip("*") for x in params], indent, alias) + [f"{indent}return {forward_code}, grad"]
    elif needs_out or c.post_lines or len(one_line) + len(indent) * _depth(p, c) > 88:
        post = [indent + ln.format(out=out, indent=indent) for ln in c.post_lines]
        src += [f"{indent}{out} = {forward_code}", *post, f"{indent}return {out}, {grad}"]
    else:
        src += [one_line]
    return nl.join(src) + nl


def _grad_code(c: Candidate, target, spec: Optional[HelperSpec], params: list[str], out: str, alias: str,
               consts: dict[int, str], attr_args: list[str]) -> str:
    if isinstance(target, str):
        if target == "Identity":
            return "lambda dy: dy"
        if target == "Neg":
            return "lambda dy: -dy"
        if target == "Sign":
            return f"lambda dy: {alias}.zeros_like({params[0]})"
        if len(params) == 1:
            return "lambda dy: None"
        return "lambda dy: (" + ", ".join(["None"] * len(params)) + ")"
    assert spec is not None
    partial = not c.variadic and len(c.slots) < c.n_inputs  # Python inputs are not wrapper parameters
    if spec.takes_only_upstream and not partial:
        return spec.name
    plain, star = upstream_names(spec)
    lam = plain + ([f"*{star}"] if star else [])
    if c.variadic:
        args = ["inputs"]
    else:
        args = [params[c.slots.index(i)] if i in c.slots else consts[i] for i, _n in spec.input_params]
    if spec.output_param:
        # op.outputs was a list: a py_func with one Tout dtype returns a tensor, not a list
        args.append(f"{alias}.nest.flatten({{out}})" if c.variadic else "{out}")
    call = f"{spec.name}({', '.join(args + attr_args + lam)})"
    if partial:  # the helper returns one gradient per op input: keep the parameters'
        if len(c.slots) == 1:
            call = f"{call}[{c.slots[0]}]"
        else:
            call = f"tuple({call}[i] for i in {tuple(c.slots)})"
    return f"lambda {', '.join(lam)}: {call}"


def _sites(p, block: Block, res: BlockResult) -> None:
    plan = p.plan
    ev = res.evidence
    for b in descendants(block):
        mine = [c for c in res.candidates if c.block is b]
        dead = res.dead_keys.get(b, [])
        if not mine and dead and len(dead) == len(b.mapping):
            hints = "; ".join(f"{k!r}{typo_hint(k)}" for k in dead)
            reason = f"dead override removed: no op of type {hints} is created in this block, so TF1 ignored it too"
            p.sites.append(Site(OVERRIDE_MAP, "TFG007", b.line, b.col, MIGRATED, reason,
                                proof=list(ev.proof), assumptions=list(ev.assumptions)))
            continue
        types = sorted({c.op_type for c in mine})
        kind = PY_FUNC_GRADIENT if set(types) & {"PyFunc", "PyFuncStateless"} else OVERRIDE_MAP
        code_ = "TFG006" if kind == PY_FUNC_GRADIENT else "TFG001"
        names = sorted({plan.replace[c.node][0] for c in mine})
        reason = f"{', '.join(types) or 'no'} op(s) now call @tf.custom_gradient function(s) {', '.join(names)}"
        notes = [f"key {k!r} matched no op in the block{typo_hint(k)}" for k in dead]
        p.sites.append(Site(kind, code_, b.line, b.col, MIGRATED, reason, notes=notes,
                            proof=list(ev.proof), assumptions=list(ev.assumptions)))


def _wrapper_name(c: Candidate, target) -> str:
    op = snake(c.op_type)
    if c.op_type in ("PyFunc", "PyFuncStateless"):
        op = "numpy_function"
    if isinstance(target, str):
        suffix = {"Identity": "straight_through", "Add": "add_gradient", "AddV2": "add_gradient",
                  "Neg": "negated_gradient", "Sign": "zero_gradient"}.get(target, "without_gradient")
        return f"{op}_{suffix}"
    if target.key[0] == "lit":
        label = target.key[1]
    else:
        label = target.fn.name.value if target.fn is not None else target.fn_param or target.key[2]
    return f"{op}_with_{snake(label)}"


def _anchor(p, block: Block, target):
    """Where a module-level wrapper goes: after its registered helper, or before the block's statement."""
    if not isinstance(target, str) and target.fn is not None and target.scope is p.col.module_scope:
        return ("after", target.fn)
    line = block.line
    for stmt in p.module.body:
        pos = p.col.positions[stmt]
        if pos.start.line <= line <= pos.end.line:
            return stmt
    return p.module.body[0]


def _param_names(names: list[str]) -> list[str]:
    """Wrapper parameters: the op's input names, but never shadowing a builtin (`input`)."""
    out: list[str] = []
    for n in names:
        base = "x" if hasattr(builtins, n) else n
        cand, i = base, 1
        while cand in out:
            cand, i = f"{base}{i}", i + 1
        out.append(cand)
    return out


def _rename_args(forward: cst.BaseExpression, mapping: dict[str, str]) -> cst.BaseExpression:
    class _R(cst.CSTTransformer):
        def leave_Arg(self, original, updated):
            if isinstance(updated.value, cst.Name) and updated.value.value in mapping:
                return updated.with_changes(value=cst.Name(mapping[updated.value.value]))
            return updated

    return forward.visit(_R())


def _replace_node(tree: cst.CSTNode, old: cst.CSTNode, new: cst.CSTNode) -> cst.CSTNode:
    class _R(cst.CSTTransformer):
        def on_leave(self, original, updated):
            return new if original is old else updated

    return tree.visit(_R())


def _rename_arg(call: cst.Call, position: int, name: str) -> cst.Call:
    """The call with its argument at ``position`` (positional or keyword) replaced by ``name``."""
    args = list(call.args)
    args[position] = args[position].with_changes(value=cst.Name(name))
    return call.with_changes(args=args)


def _depth(p, c: Candidate) -> int:
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


def _tf2_spelling(p, forward: cst.Call, original_func) -> cst.Call:
    """The wrapper is new code that runs eagerly in TF2: a TF1 name for the very same function
    is respelled (``tf.floordiv`` -> ``tf.math.floordiv``, found by an adversarial run)."""
    st = p.body.status(original_func)
    root = dotted(original_func).split(".")[0] if dotted(original_func) else None
    if st is not None and st[:2] == ("tensorflow.where", "differs") and root is not None:
        # the Select of `tf.where(c, x, y)` picks rows where `c` has lower rank; TF2's broadcasts
        return forward.with_changes(func=cst.parse_expression(f"{root}.compat.v1.where"))
    if st is None or st[1] != "renamed" or st[2] is None or root is None:
        return forward
    return forward.with_changes(func=cst.parse_expression(f"{root}.{st[2][len('tensorflow.'):]}"))
