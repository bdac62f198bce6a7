"""Every op of a mapped type that a block makes, each with its proof.

Calls go through the op table and its variants (``_override_opproof``),
operators through the operator table, same-module functions are scanned as
if they were part of the block; any other call makes the block manual.  Each
op found becomes a :class:`Candidate` that records how its inputs reach the
wrapper: tensors as parameters, Python values inside it (TF1 converted them
to the other input's dtype, and a custom_gradient parameter would not).
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from migrator import optable
from migrator._plugins._override_args import no_packed_list, op_changing_args, sole_plain_def, surely_not_none
from migrator._plugins._override_composite import expansion_hint
from migrator._plugins._override_flow import value_at
from migrator._plugins._override_model import Block, Candidate, Evidence, Refuse, Scope, code, is_literal
from migrator._plugins._override_patches import api_patch_refusal
from migrator._plugins._override_opproof import (
    Inputs,
    Possible,
    assumption_text,
    decide,
    facts_text,
    function_possible,
    operator_possible,
)
from migrator._plugins._override_implicit import check_implicit, implicit_keys
from migrator._plugins._override_pyfunc import scan_py_func
from migrator._plugins._override_tfvalues import PYTHON, TENSOR, UNKNOWN, UNKNOWN_VALUE, Value, dtype_name
from migrator.tfnames import dotted

#: TF functions that create no op at all (so they never meet an override).
OP_FREE_TF = {
    "tensorflow.get_default_graph", "tensorflow.name_scope", "tensorflow.variable_scope",
    "tensorflow.control_dependencies", "tensorflow.device", "tensorflow.as_dtype", "tensorflow.DType",
    "tensorflow.TensorShape", "tensorflow.op_scope", "tensorflow.RegisterGradient", "tensorflow.get_collection",
    "tensorflow.is_tensor", "tensorflow.executing_eagerly",
}  # fmt: skip
#: Python builtins that create no TF op when called.
OP_FREE_BUILTINS = {"float", "int", "bool", "str", "len", "range", "print", "isinstance", "list", "tuple", "dict",
                    "set", "zip", "enumerate", "sorted", "repr", "format", "getattr", "hasattr", "type", "super",
                    "min", "max", "round", "object"}
#: methods that are metadata-only on tensors/shapes (unless a project class defines one: _override_implicit)
OP_FREE_METHODS = {"get_shape", "as_list", "set_shape", "numpy", "format", "append", "join", "items", "keys", "values"}

_OPERATORS = {op: op.__name__ for op in (cst.Multiply, cst.Add, cst.Subtract, cst.Divide, cst.FloorDivide, cst.Modulo,
                                          cst.Power, cst.MatrixMultiply, cst.BitAnd, cst.BitOr, cst.BitXor)}
_SYMBOL = {"Multiply": "*", "Add": "+", "Subtract": "-", "Divide": "/", "FloorDivide": "//", "Modulo": "%",
           "Power": "**", "MatrixMultiply": "@", "BitAnd": "&", "BitOr": "|", "BitXor": "^", "Minus": "unary -"}
_AMBIGUOUS = "TFG111"
_NUMPY_CALLBACKS = {"tensorflow.py_func", "tensorflow.numpy_function"}


class OpScanner:
    def __init__(self, found, values, unsafe: bool):
        self.found, self.col, self.values, self.unsafe = found, found.col, values, unsafe
        self.def_cache: dict[cst.FunctionDef, Optional[Refuse]] = {}
        self._scope: Optional[Scope] = None
        self.ev = Evidence(unsafe)

    # -- entry -----------------------------------------------------------
    def scan_block(self, block: Block, ev: Evidence) -> list[Candidate]:
        """Candidates of ``block`` and the blocks nested in it (their maps already read)."""
        self._scope, self.ev = block.scope, ev
        refusal = api_patch_refusal(self.col, block)
        if refusal is not None:
            raise refusal
        implicit_keys(block)
        found: list[Candidate] = []
        for stmt in _body(block.node):
            self._scan(stmt, stmt, block.mapping, block, found, block.scope)
        return found

    def _scan(self, node, stmt, emap, block, found, scope) -> None:
        check_implicit(self, node, scope)  # properties, protocol methods, callbacks: code no call shows
        if isinstance(node, cst.With) and node is not block.node:
            child = next((b for b in block.children if b.node is node), None)
            if child is not None:
                inner = dict(emap)
                inner.update(child.mapping)  # the inner map wins for its keys; outer ones still apply
                for s in _body(node):
                    self._scan(s, s, inner, child, found, scope)
                return
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            # Code defined in the block runs whenever it is called, maybe outside it.
            sub: list[Candidate] = []
            try:
                for child in node.children:
                    self._scan(child, stmt, emap, block, sub, scope)
            except Refuse as e:
                raise Refuse(e.code, f"in a function defined inside the block (it may run while the override is "
                                     f"active, or later): {e.reason}") from None
            if sub:
                raise Refuse("TFG102", "an op of an overridden type is created in a function defined inside the block")
            return
        if isinstance(node, cst.Call) and self.col.tf(node) in _NUMPY_CALLBACKS:
            self._scan_call(node, stmt, emap, block, found, scope)
            for arg in node.args[1:]:  # the function runs numpy code when the graph runs, not ops now
                if arg.keyword is None or arg.keyword.value != "func":
                    self._scan(arg, stmt, emap, block, found, scope)
            return
        if isinstance(node, (cst.Yield, cst.Await)):
            raise Refuse("TFG102", "the block yields: the override stays active in the caller's code")
        if isinstance(node, cst.Call):
            self._scan_call(node, stmt, emap, block, found, scope)
        elif isinstance(node, cst.BinaryOperation):
            op_cls = _OPERATORS.get(type(node.operator))
            if op_cls is not None:
                self._operator(node, op_cls, [node.left, node.right], stmt, emap, block, found, scope)
        elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            self._operator(node, "Minus", [node.expression], stmt, emap, block, found, scope)
        elif isinstance(node, cst.AugAssign):
            op_cls = type(node.operator).__name__.replace("Assign", "")
            self._in_place(node, op_cls, emap, scope)
        elif isinstance(node, cst.Subscript) and "StridedSlice" in emap:
            if self.values.of(node.value, scope).kind != PYTHON:
                raise Refuse("TFG108", "indexing a tensor creates a StridedSlice op; wrap it by hand")
        for child in node.children:
            self._scan(child, stmt, emap, block, found, scope)

    # -- operators -------------------------------------------------------
    def _operator(self, node, op_cls, operands, stmt, emap, block, found, scope) -> None:
        if "Pack" in emap and any(isinstance(o, (cst.List, cst.Tuple)) for o in operands):  # auto-packing
            raise Refuse("TFG108", "a list operand holding tensors is packed into a Pack op; wrap it by hand")
        vals = [value_at(self.values, o, scope, stmt) for o in operands]
        labels = [code(o) for o in operands]
        sym = f"`{_SYMBOL.get(op_cls, op_cls)}`"
        label = f"{sym} on {_list(labels)}"

        def possible_for(values):
            return operator_possible(op_cls, Inputs.of(values, labels))
        if all(v.kind == PYTHON for v in vals):
            self._closed_world(vals, None, possible_for, emap, True, label, scope)
            return  # Python arithmetic: no op is created
        possible = possible_for(vals)
        if possible is None:
            return
        self._closed_world(vals, possible, possible_for, emap, True, label, scope)
        verdict = self._verdict(possible, emap, True, label, labels)
        if verdict is None:
            return
        if not any(v.kind == TENSOR for v in vals):
            unknown = [lb for lb, v in zip(labels, vals) if v.kind == UNKNOWN]
            self.ev.assume(f"{_list(unknown)} {'is a tensor' if len(unknown) == 1 else 'are tensors'}", _AMBIGUOUS,
                           f"{label} makes a {verdict} op only if an operand is a tensor, "
                           "and the source does not show that (Python arithmetic makes no op)")
            vals = [Value(TENSOR) if v.kind == UNKNOWN else v for v in vals]
        self.ev.prove(f"`{verdict}` made by {sym} ({facts_text(possible)}; operator table)")
        cand = Candidate(node, verdict, emap[verdict], [], [], None, stmt=stmt, block=block,
                         n_inputs=len(operands))
        names = ["x", "y"][: len(operands)]
        tensor_idx = [i for i, v in enumerate(vals) if v.kind == TENSOR]
        for i, (o, v) in enumerate(zip(operands, vals)):
            if v.kind == PYTHON:
                ok = self._movable(o)
                if ok is None:
                    raise Refuse("TFG108", f"the operand `{code(o)}` is an expression the migrator will not move")
                cand.needs_closure = cand.needs_closure or not ok
                cand.consts[i] = (code(o), tensor_idx[0])
                cand.const_nodes[i] = o
                continue
            cand.slots.append(i)
            cand.input_exprs.append(o)
            cand.input_names.append(names[i])
            if v.kind == UNKNOWN:  # a tensor or a Python value: convert it the way TF1 did
                other = [operands[j] for j in tensor_idx if j != i]
                if other and dotted(other[0]) is not None:
                    cand.convert[len(cand.input_exprs) - 1] = code(other[0])
                elif other:
                    self.ev.assume(f"`{code(o)}` is a tensor", _AMBIGUOUS,
                                   f"`{code(o)}` may be a Python number, which TF1 converted to the dtype of "
                                   f"`{code(other[0])}`; bind `{code(other[0])}` to a name")
        pieces = [cst.Name(names[i]) if i in cand.slots else o for i, o in enumerate(operands)]
        if isinstance(node, cst.BinaryOperation):
            cand.forward = node.with_changes(left=pieces[0], right=pieces[1], lpar=[], rpar=[])
        else:
            cand.forward = node.with_changes(expression=pieces[0], lpar=[], rpar=[])
        found.append(cand)

    def _in_place(self, node: cst.AugAssign, op_cls: str, emap, scope) -> None:
        possible = operator_possible(op_cls, Inputs.of([self.values.of(node.target, scope),
                                                        self.values.of(node.value, scope)], []))
        if possible is None:
            return
        types = {t for ops in possible.lists for t in ops if t in emap}
        if types and self.values.of(node.target, scope).kind != PYTHON:
            raise Refuse("TFG108", f"`{code(node).strip()}` creates a {sorted(types)[0]} op in place; wrap it by hand")

    # -- calls -------------------------------------------------------------
    def _scan_call(self, call: cst.Call, stmt, emap, block, found, scope) -> None:
        name = self.col.tf(call)
        if name is not None:
            if name in OP_FREE_TF:
                return
            if name == "tensorflow.py_func":
                scan_py_func(self, call, name, stmt, emap, block, found, scope)
                return
            info = optable.function_info(name)
            if info is None:
                if optable.makes_no_ops(name) and all(self.values.of(a.value, scope).kind == PYTHON for a in call.args):
                    return
                raise Refuse("TFG101", f"the block calls `{code(call.func)}`, whose ops are unknown")
            self._table_call(call, name, info, stmt, emap, block, found, scope)
            return
        func = call.func
        if isinstance(func, cst.Name):
            if self.col.builtin(func) in OP_FREE_BUILTINS:
                return
            d = scope.find_def(func.value)
            if d is not None:
                self._check_local_def(d, emap, func.value)
                return
        if any(q == "numpy" or q.startswith("numpy.") for q in self.col.qualified(func)):
            return
        if isinstance(func, cst.Attribute) and func.attr.value in OP_FREE_METHODS:
            return
        raise Refuse("TFG101", f"the block calls `{code(func)}`, whose ops cannot be known from the source")

    def _table_call(self, call, name, info, stmt, emap, block, found, scope) -> None:
        params = list(info.get("params") or [])
        bound = self.bind_args(call, params)
        op_changing_args(name, bound, call, emap)
        input_params = _input_params(info)
        vals, labels, lengths = [], [], None
        for p in input_params:
            if p not in bound:
                continue
            expr = bound[p][1]
            if isinstance(expr, (cst.List, cst.Tuple)) and any(i.endswith("[*]") for i in _all_inputs(info)):
                if not any(isinstance(e, cst.StarredElement) for e in expr.elements):
                    lengths = frozenset({len(expr.elements)})
                vals += [value_at(self.values, e.value, scope, stmt) for e in expr.elements
                         if not isinstance(e, cst.StarredElement)]
            else:
                vals.append(value_at(self.values, expr, scope, stmt))
                if not any(i.startswith(p + "[") for i in _all_inputs(info)):  # a one-tensor input
                    no_packed_list(expr, vals[-1], scope)
            labels.append(code(expr))
        has_lists = any(i.endswith("[*]") or "[" in i for i in _all_inputs(info))
        cast_target = None
        if "dtype" in bound:
            cast_target = dtype_name(code(bound["dtype"][1]))
        label = f"`{code(call.func)}`"

        not_none = frozenset(p for p, (_, e) in bound.items() if surely_not_none(e, self.values.of(e, scope)))

        def possible_for(values):
            return function_possible(name, info, Inputs.of(values, labels, lengths), set(bound), has_lists,
                                     cast_target, not_none)
        direct = bool(info.get("direct"))
        if vals and all(v.kind == PYTHON for v in vals):
            self._closed_world(vals, None, possible_for, emap, direct, label, scope)
            return  # constants in, constants out: no gradient path runs through these ops
        possible = possible_for(vals)
        self._closed_world(vals, possible, possible_for, emap, direct, label, scope)
        verdict = self._verdict(possible, emap, direct, label, labels, api=name)
        if verdict is None:
            return
        self.ev.prove(f"`{verdict}` made by {label} ({facts_text(possible)}; op table entry {name})")
        self._candidate_from_call(call, name, info, verdict, stmt, emap, block, found, bound, scope)

    def _closed_world(self, vals, possible, possible_for, emap, direct: bool, label: str, scope=None) -> None:
        """"No mapped op here" (or "the mapped op here", for ranks) drawn from what the project's
        callers pass is an assumption: an importer or a test may pass other inputs."""
        if not any(v.callers for v in vals):
            return
        open_world = possible_for([UNKNOWN_VALUE if v.callers else v for v in vals])
        where = ", ".join(sorted(set().union(*(v.origin for v in vals if v.callers))))
        if possible is not None and decide(possible, emap, direct).kind == "op":
            # the op is the mapped type for what the callers pass; another rank or dtype may make
            # another op (MatMul or BatchMatMulV2), which TF1 did not override (found by an adversarial
            # run); ranks are taken open (callers elsewhere batch differently), dtypes closed; a
            # `_private` function is called from its own module only
            fn = getattr(scope, "node", None)
            private = isinstance(fn, cst.FunctionDef) and fn.name.value.startswith("_") \
                and not fn.name.value.startswith("__")
            any_rank = possible_for([Value(v.kind, v.dtypes, None, v.origin, True) if v.callers else v for v in vals])
            if not private and (any_rank is None or any_rank.lists != possible.lists):
                self.ev.assume(f"no caller outside the project passes another rank ({where})", _AMBIGUOUS,
                               f"{label} makes the mapped op only for the ranks the project's callers pass ({where}); "
                               "a caller elsewhere may pass another rank, for which it makes another op")
            return
        if possible is not None and decide(possible, emap, direct).kind != "none":
            return
        if open_world is None or decide(open_world, emap, direct).kind == "none":
            return
        self.ev.assume(f"no caller outside the project passes other inputs ({where})", _AMBIGUOUS,
                       f"{label} makes no op of a mapped type only for what the project's callers pass ({where}); "
                       "a caller elsewhere (an importer, a test) may pass a dtype, rank or tensor for which it does")

    def _verdict(self, possible: Possible, emap, direct: bool, label: str, labels: list[str], api="") -> Optional[str]:
        """The mapped op type this call makes and can be wrapped as, or None for none."""
        verdict = decide(possible, emap, direct)
        if verdict.kind == "none":
            if not possible.differentiable:
                self.ev.prove(f"{label} makes no op a gradient flows through ({facts_text(possible)})")
            elif possible.lists != {possible.primary}:
                made = sorted({" + ".join(ops) or "no op" for ops in possible.lists})
                self.ev.prove(f"{label} makes {' or '.join(made)} here ({facts_text(possible)}): no mapped type")
            return None
        if verdict.kind == "inside":
            raise Refuse("TFG108", f"{label} creates {', '.join(sorted({t for ops in possible.lists for t in ops}))} "
                                   f"internally; the {verdict.op_type} op inside it cannot be wrapped from the call site"
                                   + expansion_hint(api))
        if verdict.kind == "op":
            return verdict.op_type
        # the op made depends on what the source does not show
        alternatives = sorted({" + ".join(ops) or "no op" for ops in possible.lists})
        reason = (f"which op {label} makes depends on its inputs ({' or '.join(alternatives)}), "
                  "and the source does not show which")
        if not possible.unknown:
            raise Refuse(_AMBIGUOUS, reason)
        self.ev.assume(assumption_text(possible, labels), _AMBIGUOUS, reason)
        hits = [t for t in possible.primary if t in emap]
        if len(possible.primary) == 1 and hits and direct:
            return hits[0]
        if not hits:
            return None
        raise Refuse("TFG108", f"{label} creates {hits[0]} internally; it cannot be wrapped from the call site")

    def _check_local_def(self, d: cst.FunctionDef, emap, label: str) -> None:
        """A same-module function called in the block: it must create no overridden op."""
        own = self.col.scope_of_def.get(d)
        scope_node = (own.parent if own is not None and own.parent is not None else self.col.module_scope).node
        if d.decorators or not sole_plain_def(scope_node, d):  # found by an adversarial run
            raise Refuse("TFG101", f"the block calls `{label}()`, which is decorated or defined conditionally "
                                   "or more than once: its ops cannot be known from the source")
        if d in self.def_cache:
            err = self.def_cache[d]
        else:
            self.def_cache[d] = None  # recursion guard
            err = None
            sub: list[Candidate] = []
            scope = self.col.scope_of_def.get(d) or self.col.module_scope
            dummy = Block(cst.With(items=[cst.WithItem(cst.Name("_"))], body=cst.IndentedBlock(body=[])),
                          cst.Call(func=cst.Name("_")), scope, None, 0, 0)  # type: ignore[arg-type]
            saved = self._scope
            self._scope = scope
            try:
                for s in _body(d):
                    self._scan(s, s, emap, dummy, sub, scope)
            except Refuse as e:
                err = e
            finally:
                self._scope = saved
            if err is None and sub:
                err = Refuse("TFG108", f"`{label}()` creates a {sub[0].op_type} op in its own body, which the "
                                       "override reaches but a wrapper at this call cannot")
            self.def_cache[d] = err
        if err is not None:
            raise Refuse(err.code, f"in `{label}()`: {err.reason}" if not err.reason.startswith("in `") else err.reason)
        self.ev.prove(f"`{label}()` (line {self.found.line(d)}) makes no op of a mapped type")

    # -- arguments ---------------------------------------------------------
    def bind_args(self, call: cst.Call, params: list[str]) -> dict[str, tuple[int, cst.BaseExpression]]:
        bound: dict[str, tuple[int, cst.BaseExpression]] = {}
        for i, arg in enumerate(call.args):
            if arg.star:
                raise Refuse("TFG108", f"`{code(call.func)}` is called with *args/**kwargs")
            if arg.keyword is None:
                if i >= len(params):
                    raise Refuse("TFG108", f"too many positional arguments for `{code(call.func)}`")
                bound[params[i]] = (i, arg.value)
            else:
                bound[arg.keyword.value] = (i, arg.value)
        return bound

    def _static_ok(self, expr: cst.BaseExpression) -> Optional[bool]:
        """True: a literal usable anywhere; False: a closure over local names; None: not allowed."""
        if is_literal(expr):
            return True
        if isinstance(expr, cst.Attribute) and self.col.tf(expr) is not None:
            return True  # tf.float32 and friends
        if isinstance(expr, (cst.List, cst.Tuple)):
            oks = [self._static_ok(e.value) for e in expr.elements]
            if any(o is None for o in oks):
                return None
            return all(oks)
        if isinstance(expr, (cst.Name, cst.Attribute)) and dotted(expr):
            root = dotted(expr).split(".")[0]
            return not self._is_local(root)
        return None

    def _movable(self, expr: cst.BaseExpression) -> Optional[bool]:
        """Like :meth:`_static_ok`, also allowing Python arithmetic and numpy or float/int
        conversions of such values (a Python operand moved into the wrapper is evaluated
        there once, when the op is made, as before)."""
        ok = self._static_ok(expr)
        if ok is not None:
            return ok
        parts: list = []
        if isinstance(expr, cst.BinaryOperation):
            parts = [expr.left, expr.right]
        elif isinstance(expr, cst.UnaryOperation):
            parts = [expr.expression]
        elif isinstance(expr, cst.Call) and not any(a.star for a in expr.args):
            qn = self.col.qualified(expr)
            numpy = any(q == "numpy" or q.startswith("numpy.") for q in qn)
            conv = self.col.builtin(expr) in ("float", "int")
            if not (numpy or conv):
                return None
            parts = [a.value for a in expr.args]
            if isinstance(expr.func, cst.Attribute) and not numpy:
                parts.append(expr.func)
        else:
            return None
        oks = [self._movable(x) for x in parts]
        if any(o is None for o in oks):
            return None
        return all(oks)

    def _is_local(self, name: str) -> bool:
        """Bound in an enclosing function (so a module-level wrapper could not see it)?"""
        s: Optional[Scope] = self._scope
        while s is not None and s.parent is not None:
            if name in s.assigns or name in s.params or name in s.defs or name in s.bound:
                return True
            s = s.parent
        return False

    def _candidate_from_call(self, call, name, info, op_type, stmt, emap, block, found, bound, scope) -> None:
        op = next(o for o in info["ops"] if o["type"] == op_type)
        inputs = op.get("inputs") or []
        cand = Candidate(call, op_type, emap[op_type], [], [], None, stmt=stmt, tf_name=name, block=block,
                         n_inputs=len(inputs))
        positions, first_tensor = [], None
        for slot, pname in enumerate(inputs):
            if pname is None or pname not in bound:
                raise Refuse("TFG108", f"cannot map the inputs of the {op_type} op to the arguments of `{code(call.func)}`")
            pos, expr = bound[pname]
            value = self.values.of(expr, scope)
            if value.kind == PYTHON:
                ok = self._static_ok(expr)
                if ok is None:
                    raise Refuse("TFG108", f"argument `{pname}` of `{code(call.func)}` is an expression the migrator will not move")
                cand.needs_closure = cand.needs_closure or not ok
                if first_tensor is not None:
                    cand.consts[slot] = (code(expr), first_tensor)
                    cand.const_nodes[slot] = expr
                continue
            if value.kind == UNKNOWN and first_tensor is not None:
                ref = code(cand.input_exprs[cand.slots.index(first_tensor)])
                if dotted(cand.input_exprs[cand.slots.index(first_tensor)]) is not None:
                    cand.convert[len(cand.input_exprs)] = ref
                else:
                    self.ev.assume(f"`{code(expr)}` is a tensor", _AMBIGUOUS,
                                   f"`{code(expr)}` may be a Python number, which TF1 converted to the dtype of "
                                   f"`{ref}`; bind `{ref}` to a name")
            cand.slots.append(slot)
            cand.input_exprs.append(expr)
            cand.input_names.append(pname)
            positions.append(pos)
            if not (op_type in ("Select", "SelectV2") and pname == "condition"):  # bool: not the values' dtype
                first_tensor = slot if first_tensor is None else first_tensor
        for pname, (_i, expr) in bound.items():
            if pname in inputs:
                continue
            ok = self._static_ok(expr)
            if ok is None:
                cand.attr_lets.append((pname, code(expr)))  # evaluated once, where the op is made
                cand.needs_closure = True
                continue
            cand.needs_closure = cand.needs_closure or not ok
        cand.forward = _forward_call(call, positions, cand.input_names)
        cand.bound = bound
        found.append(cand)


def _forward_call(call: cst.Call, positions: list[int], names: list[str]) -> cst.Call:
    args = list(call.args)
    for pos, n in zip(positions, names):
        args[pos] = args[pos].with_changes(value=cst.Name(n))
    return call.with_changes(args=args)


def _input_params(info: dict) -> list[str]:
    out: list[str] = []
    for i in _all_inputs(info):
        base = i.split("[")[0]
        if base not in out:
            out.append(base)
    return out


def _all_inputs(info: dict) -> list[str]:
    return [i for op in info["ops"] for i in (op.get("inputs") or []) if i]


def _body(node) -> list:
    body = node.body
    return list(body.body) if isinstance(body, cst.IndentedBlock) else [body]


def _list(labels: list[str]) -> str:
    return ", ".join(f"`{x}`" for x in labels)
