"""Turn a ``RegisterGradient`` function into a plain helper with explicit parameters.

A registered gradient is ``fn(op, *upstream)``; ``tf.custom_gradient`` has no
``op``.  So ``op.inputs[i]`` becomes the i-th forward input, ``op.outputs[0]``
the forward result, ``op.get_attr("T")`` the input's dtype and
``op.get_attr(attr)`` the literal the forward call was given (or the op's
default).  Anything else on ``op`` (``op.name``, ``op.node_def``, ...) has no
TF2 equivalent, and the caller refuses the site.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import libcst as cst

from migrator._plugins._override_model import assigned_counts
from migrator.naming import used_names


class Unsupported(Exception):
    """The gradient function uses ``op`` in a way custom_gradient cannot express."""


@dataclass
class OpUses:
    """How a registered gradient function uses its ``op`` parameter."""

    inputs: set[int] = field(default_factory=set)  # op.inputs[i]
    all_inputs: bool = False  # op.inputs used as a whole
    outputs: set[int] = field(default_factory=set)
    all_outputs: bool = False
    attrs: set[str] = field(default_factory=set)  # op.get_attr("...")
    uses_type: bool = False


def _int_index(node: cst.Subscript) -> Optional[int]:
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    value = node.slice[0].slice.value
    if isinstance(value, cst.Integer):
        return int(value.value)
    return None


def _is_op(node: cst.BaseExpression, op_name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == op_name


def _attr_string(call: cst.Call) -> Optional[str]:
    if len(call.args) == 1 and isinstance(call.args[0].value, cst.SimpleString):
        return call.args[0].value.evaluated_value
    return None


def analyse_op_uses(fn: cst.FunctionDef) -> OpUses:
    """Collect the uses of ``op`` in ``fn``; raise :class:`Unsupported` for the rest."""
    params = fn.params.params
    if not params:
        raise Unsupported("the gradient function takes no `op` parameter")
    op_name = params[0].name.value
    uses = OpUses()

    class _Scan(cst.CSTVisitor):
        def visit_Subscript(self, node: cst.Subscript) -> Optional[bool]:
            base = node.value
            if isinstance(base, cst.Attribute) and _is_op(base.value, op_name):
                idx = _int_index(node)
                if idx is None:
                    raise Unsupported(f"`{op_name}.{base.attr.value}[...]` with a non-literal index")
                if base.attr.value == "inputs":
                    uses.inputs.add(idx)
                elif base.attr.value == "outputs":
                    uses.outputs.add(idx)
                else:
                    raise Unsupported(f"`{op_name}.{base.attr.value}` has no TF2 equivalent")
                return False
            return True

        def visit_Call(self, node: cst.Call) -> Optional[bool]:
            f = node.func
            if isinstance(f, cst.Attribute) and _is_op(f.value, op_name):
                if f.attr.value != "get_attr":
                    raise Unsupported(f"`{op_name}.{f.attr.value}()` has no TF2 equivalent")
                attr = _attr_string(node)
                if attr is None:
                    raise Unsupported(f"`{op_name}.get_attr` with a non-literal name")
                uses.attrs.add(attr)
                return False
            return True

        def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
            if _is_op(node.value, op_name):
                a = node.attr.value
                if a == "inputs":
                    uses.all_inputs = True
                elif a == "outputs":
                    uses.all_outputs = True
                elif a == "type":
                    uses.uses_type = True
                else:
                    raise Unsupported(f"`{op_name}.{a}` has no TF2 equivalent")
                return False
            return True

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == op_name:
                raise Unsupported(f"`{op_name}` is used as a value, not only through .inputs/.outputs")

    # The parameter list itself holds the name; scan the body only.
    fn.body.visit(_Scan())
    return uses


@dataclass
class HelperSpec:
    """The converted helper: its new parameter list and how to call it."""

    name: str
    input_params: list[tuple[int, str]]  # (op input index, parameter name), used inputs only
    output_param: Optional[str]  # parameter for the forward result, when op.outputs is used
    upstream: list[cst.Param]  # the parameters that receive upstream gradients (one per op output)
    star_upstream: Optional[cst.ParamStar | cst.Param]
    node: cst.FunctionDef  # the converted def (decorator removed)
    attr_params: list[tuple[str, str]] = field(default_factory=list)  # (op attribute, parameter name)

    @property
    def takes_only_upstream(self) -> bool:
        return not self.input_params and self.output_param is None and not self.attr_params


def convert_gradient_function(
    fn: cst.FunctionDef,
    input_names: list[str],
    op_type: str,
    attr_value: Callable[[str], Optional[cst.BaseExpression]],
    drop_decorator: Callable[[cst.Decorator], bool],
    variadic: bool = False,
    force_outputs: bool = False,
    n_outputs: Optional[int] = None,
) -> HelperSpec:
    """Rewrite ``fn(op, *upstream)`` to ``fn(<used inputs>, [y], [attrs], *upstream)``.

    ``input_names`` are preferred parameter names for the op's inputs (from the
    op table); ``attr_value(attr)`` says what ``op.get_attr(attr)`` becomes:
    ``("paste", expr)`` for a literal every site agrees on, ``("param", None)``
    for a value each wrapper passes (evaluated where the op is made), None
    when it is unknown.  ``n_outputs`` is the op's output count: TF1 passed one
    upstream gradient per output, so later parameters kept their defaults.
    """
    uses = analyse_op_uses(fn)
    _check_upstream(fn, n_outputs)
    op_name = fn.params.params[0].name.value
    taken = used_names(cst.Module(body=[fn]), attributes=False)
    taken.discard(op_name)

    def pick(base: str) -> str:
        name, i = base, 1
        while name in taken:
            name = f"{base}_{i}"
            i += 1
        taken.add(name)
        return name

    if variadic:
        return _convert_variadic(fn, uses, op_name, pick, drop_decorator, force_outputs)
    n_inputs = len(input_names)
    # `x = op.inputs[0]` at the top of the body: call the parameter `x` and drop the line
    aliases, fn = _input_aliases(fn, op_name, n_inputs)
    for alias in aliases.values():
        taken.discard(alias)
    used_inputs = set(uses.inputs)
    if uses.all_inputs:
        used_inputs |= set(range(n_inputs))
    if any(i >= n_inputs for i in used_inputs):
        raise Unsupported(f"`{op_name}.inputs[{max(used_inputs)}]` but {op_type} has {n_inputs} input(s)")
    input_params = [(i, aliases[i] if i in aliases else pick(input_names[i])) for i in sorted(used_inputs)]
    for _i, n in input_params:
        taken.add(n)
    by_index = dict(input_params)
    output_param = pick("y") if (uses.outputs or uses.all_outputs) else None
    if uses.outputs and max(uses.outputs) > 0:
        raise Unsupported(f"`{op_name}.outputs[{max(uses.outputs)}]` of a multi-output op")
    attr_exprs: dict[str, cst.BaseExpression] = {}
    attr_params: list[tuple[str, str]] = []
    for attr in sorted(uses.attrs):
        got = attr_value(attr)
        if got is None:
            raise Unsupported(f"`{op_name}.get_attr({attr!r})` is not shown by the call that makes the op")
        kind, value = got
        if kind == "input":  # a type attribute: the dtype of the op input it types
            if value not in by_index:
                by_index[value] = pick(input_names[value])
                input_params = sorted(by_index.items())
            attr_exprs[attr] = cst.Attribute(cst.Name(by_index[value]), cst.Name("dtype"))
        elif kind == "paste":
            attr_exprs[attr] = value
        else:  # `alpha = op.get_attr("alpha")` at the top: the parameter is `alpha`, the line goes
            alias, fn = _attr_alias(fn, op_name, attr)
            if alias is not None:
                taken.discard(alias)
            pname = alias or pick(attr)
            taken.add(pname)
            attr_params.append((attr, pname))
            attr_exprs[attr] = cst.Name(pname)

    class _Replace(cst.CSTTransformer):
        def visit_Subscript(self, node: cst.Subscript) -> bool:
            # op.inputs[i] is replaced whole: do not rewrite its op.inputs part first
            base = node.value
            return not (isinstance(base, cst.Attribute) and _is_op(base.value, op_name))

        def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
            base = original.value
            if isinstance(base, cst.Attribute) and _is_op(base.value, op_name):
                idx = _int_index(original)
                if base.attr.value == "inputs":
                    return cst.Name(by_index[idx])
                return cst.Name(output_param)
            return updated

        def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
            f = original.func
            if isinstance(f, cst.Attribute) and _is_op(f.value, op_name):
                return attr_exprs[_attr_string(original)]
            return updated

        def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
            if _is_op(original.value, op_name):
                a = original.attr.value
                if a == "inputs":
                    return cst.List([cst.Element(cst.Name(by_index[i])) for i in range(n_inputs)])
                if a == "outputs":
                    return cst.List([cst.Element(cst.Name(output_param))])
                if a == "type":
                    return cst.SimpleString(repr(op_type))
            return updated

    body = fn.body.visit(_Replace())
    upstream = list(fn.params.params[1:])
    new_params = [cst.Param(cst.Name(n)) for _, n in input_params]
    if output_param:
        new_params.append(cst.Param(cst.Name(output_param)))
    new_params += [cst.Param(cst.Name(n)) for _a, n in attr_params]
    spec = _finish(fn, body, new_params + upstream, input_params, output_param, drop_decorator, n_outputs)
    spec.attr_params = attr_params
    return spec


def _check_upstream(fn: cst.FunctionDef, n_outputs: Optional[int]) -> None:
    """TF1 called ``fn(op, *grads)`` with one gradient per op output; the rest keep defaults."""
    plain = list(fn.params.params[1:])
    star = isinstance(fn.params.star_arg, cst.Param)
    if n_outputs is None or n_outputs < 0:
        return
    if n_outputs > len(plain) and not star:
        raise Unsupported(f"it takes {len(plain)} upstream gradient(s) but the op has {n_outputs} output(s)")
    if any(p.default is None for p in plain[n_outputs:]) or fn.params.kwonly_params and any(
            p.default is None for p in fn.params.kwonly_params):
        raise Unsupported("it has parameters the gradient machinery never passes")


def _upstream_count(fn: cst.FunctionDef, n_outputs: Optional[int]) -> int:
    plain = list(fn.params.params[1:])
    if n_outputs is None or n_outputs < 0:
        return sum(1 for p in plain if p.default is None)
    return min(n_outputs, len(plain))


def _finish(fn, body, params_list, input_params, output_param, drop_decorator, n_outputs=None) -> HelperSpec:
    params = fn.params.with_changes(params=params_list)
    upstream = list(fn.params.params[1:])[: _upstream_count(fn, n_outputs)]
    decorators = [d for d in fn.decorators if not drop_decorator(d)]
    leading, after = tuple(fn.leading_lines), tuple(fn.lines_after_decorators)
    if not decorators:  # keep comments that sat between the decorator and the def
        leading, after = leading + after, ()
    new_fn = fn.with_changes(
        body=body, params=params, decorators=decorators, leading_lines=leading, lines_after_decorators=after
    )
    return HelperSpec(
        name=fn.name.value,
        input_params=input_params,
        output_param=output_param,
        upstream=upstream,
        star_upstream=fn.params.star_arg if isinstance(fn.params.star_arg, cst.Param) else None,
        node=new_fn,
    )


def upstream_names(spec: HelperSpec) -> tuple[list[str], Optional[str]]:
    """Names of the upstream-gradient parameters (plain ones, and the *star one)."""
    plain = [p.name.value for p in spec.upstream]
    star = spec.star_upstream.name.value if spec.star_upstream is not None else None
    return plain, star


def _convert_variadic(fn, uses: OpUses, op_name: str, pick, drop_decorator, force_outputs=False) -> HelperSpec:
    """py_func with a list of inputs: ``op.inputs[i]`` -> ``inputs[i]``, ``op.outputs[j]`` -> ``outputs[j]``."""
    if uses.attrs or uses.uses_type:
        raise Unsupported(f"`{op_name}.get_attr`/`{op_name}.type` on a py_func gradient")
    inputs = pick("inputs")
    outputs = pick("outputs") if (uses.outputs or uses.all_outputs or force_outputs) else None

    class _Replace(cst.CSTTransformer):
        def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
            if _is_op(original.value, op_name):
                return cst.Name(inputs if original.attr.value == "inputs" else outputs)
            return updated

    body = fn.body.visit(_Replace())
    upstream = list(fn.params.params[1:])
    new_params = [cst.Param(cst.Name(inputs))] + ([cst.Param(cst.Name(outputs))] if outputs else [])
    spec = _finish(fn, body, new_params + upstream, [(0, inputs)], outputs, drop_decorator)
    return spec


def _attr_alias(fn: cst.FunctionDef, op_name: str, attr: str) -> tuple[Optional[str], cst.FunctionDef]:
    """A leading ``name = op.get_attr("attr")`` line (name bound once): its name, and the body without it."""
    if not isinstance(fn.body, cst.IndentedBlock):
        return None, fn
    counts = assigned_counts(fn.body)
    body = list(fn.body.body)
    for i, stmt in enumerate(body):
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                and isinstance(stmt.body[0], cst.Assign) and len(stmt.body[0].targets) == 1):
            break
        target, value = stmt.body[0].targets[0].target, stmt.body[0].value
        if (isinstance(target, cst.Name) and counts.get(target.value, 0) == 1 and target.value != op_name
                and isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                and _is_op(value.func.value, op_name) and value.func.attr.value == "get_attr"
                and _attr_string(value) == attr):
            rest = body[:i] + body[i + 1:]
            if not rest:
                return None, fn
            if i + 1 < len(body):
                rest[i] = rest[i].with_changes(leading_lines=list(stmt.leading_lines) + list(rest[i].leading_lines))
            return target.value, fn.with_changes(body=fn.body.with_changes(body=rest))
        if not _is_op_read(value, op_name):
            break  # only the leading `x = op...` lines are looked at
    return None, fn


def _is_op_read(value, op_name: str) -> bool:
    if isinstance(value, cst.Subscript):
        value = value.value
    if isinstance(value, cst.Call):
        value = value.func
    return isinstance(value, cst.Attribute) and _is_op(value.value, op_name)


def _input_aliases(fn: cst.FunctionDef, op_name: str, n_inputs: int) -> tuple[dict[int, str], cst.FunctionDef]:
    """Leading ``a = op.inputs[0]`` / ``a, b = op.inputs`` lines become parameter names."""
    if not isinstance(fn.body, cst.IndentedBlock):
        return {}, fn
    counts = assigned_counts(fn.body)
    aliases: dict[int, str] = {}
    body = list(fn.body.body)
    carried: list[cst.EmptyLine] = []
    kept: list = []
    seen: set[str] = set()  # names read by the statements kept so far
    for stmt in body:
        pairs = _alias_pairs(stmt, op_name, n_inputs)
        if pairs and all(counts.get(n, 0) == 1 and n != op_name and n not in seen for _i, n in pairs) and not (
            {i for i, _n in pairs} & set(aliases)
        ):
            aliases.update(dict(pairs))
            carried += list(stmt.leading_lines)
            comment = stmt.trailing_whitespace.comment
            if comment is not None:
                carried.append(cst.EmptyLine(comment=comment))
            continue
        seen |= used_names(cst.Module(body=[stmt]), attributes=False)
        if carried:
            stmt = stmt.with_changes(leading_lines=carried + list(stmt.leading_lines))
            carried = []
        kept.append(stmt)
    if not aliases or not kept:
        return {}, fn
    return aliases, fn.with_changes(body=fn.body.with_changes(body=kept))


def _alias_pairs(stmt, op_name: str, n_inputs: int) -> Optional[list[tuple[int, str]]]:
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    assign = stmt.body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    target, value = assign.targets[0].target, assign.value

    def one(v) -> Optional[int]:
        if (
            isinstance(v, cst.Subscript)
            and isinstance(v.value, cst.Attribute)
            and _is_op(v.value.value, op_name)
            and v.value.attr.value == "inputs"
        ):
            return _int_index(v)
        return None

    if isinstance(target, cst.Name):
        i = one(value)
        return [(i, target.value)] if i is not None else None
    if isinstance(target, (cst.Tuple, cst.List)) and all(isinstance(e.value, cst.Name) for e in target.elements):
        names = [e.value.value for e in target.elements]
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(names):
            idx = [one(e.value) for e in value.elements]
            if all(i is not None for i in idx) and len(set(idx)) == len(idx):
                return list(zip(idx, names))
        if (
            isinstance(value, cst.Attribute)
            and _is_op(value.value, op_name)
            and value.attr.value == "inputs"
            and len(names) == n_inputs
        ):
            return list(enumerate(names))
    return None
