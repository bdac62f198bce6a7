"""Mutation operators for the verifier's mutation test (libcst, test-only).

Each operator takes the source of a correct migration (and, for
``get_attr_value``, the original) and returns the mutated source, or None
when it does not apply.

Gradient-function operators:

* ``negate``: negate what every ``tf.custom_gradient`` grad function returns;
* ``scale2``: multiply it by 2;
* ``drop_output_gradients``: remove ``output_gradients=`` from tape calls;
* ``swap_grads``: swap the first two non-None gradients a grad function returns.

Failure modes seen in real migrations (issue 10), in :data:`NEW_OPERATORS`:

* ``watch_late``: move ``tape.watch(x)`` after the first statement that uses ``x``;
* ``tape_late``: start the tape one statement later (its first computing
  statement moves above the ``with``);
* ``side_effect_out``: move a side-effect call (an expression statement) out
  of the tape's region, after the ``with``;
* ``get_attr_value``: change a value that replaced ``op.get_attr(...)``;
* ``literal_dtype``: pass a literal operand as a float32 constant (another
  dtype than a float64 input);
* ``py_func_index0``: index ``[0]`` on a ``numpy_function``/``py_func`` result.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst


def _is_custom_gradient(dec: cst.Decorator) -> bool:
    node = dec.decorator
    if isinstance(node, cst.Call):
        node = node.func
    if isinstance(node, cst.Attribute):
        return node.attr.value == "custom_gradient"
    return isinstance(node, cst.Name) and node.value == "custom_gradient"


def _is_none(node) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _wrap(expr: cst.BaseExpression, how: str) -> cst.BaseExpression:
    if _is_none(expr):
        return expr
    if isinstance(expr, (cst.Tuple, cst.List)):
        return expr.with_changes(elements=[e.with_changes(value=_wrap(e.value, how)) for e in expr.elements])
    par = expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    if how == "negate":
        return cst.UnaryOperation(operator=cst.Minus(), expression=par)
    return cst.BinaryOperation(left=cst.Float("2.0"), operator=cst.Multiply(), right=par)


def _swap(expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    if not isinstance(expr, (cst.Tuple, cst.List)):
        return None
    elems = list(expr.elements)
    idx = [i for i, e in enumerate(elems) if not _is_none(e.value)]
    if len(idx) < 2:
        return None
    i, j = idx[0], idx[1]
    a, b = elems[i].value, elems[j].value
    if a.deep_equals(b):
        return None
    elems[i] = elems[i].with_changes(value=b)
    elems[j] = elems[j].with_changes(value=a)
    return expr.with_changes(elements=elems)


class _GradFnMutator(cst.CSTTransformer):
    """Rewrites the grad functions of @custom_gradient functions."""

    def __init__(self, how: str):
        self.how = how
        self.changed = False
        self._grad_names = []  # stack: names of grad fns for each custom_gradient function
        self._in_grad = []

    def _mutate(self, expr):
        if self.how == "swap":
            new = _swap(expr)
            if new is None:
                return expr
        else:
            if _is_none(expr):
                return expr
            new = _wrap(expr, self.how)
        self.changed = True
        return new

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if any(_is_custom_gradient(d) for d in node.decorators):
            names = set()
            for stmt in node.body.body:
                for ret in _returns(stmt):
                    if isinstance(ret.value, cst.Tuple) and len(ret.value.elements) == 2:
                        g = ret.value.elements[1].value
                        if isinstance(g, cst.Name):
                            names.add(g.value)
            self._grad_names.append(names)
            self._in_grad.append(False)
        elif self._grad_names and node.name.value in self._grad_names[-1]:
            self._in_grad.append(True)
        else:
            self._in_grad.append(self._in_grad[-1] if self._in_grad else False)
        return True

    def leave_FunctionDef(self, original, updated):
        self._in_grad.pop()
        if any(_is_custom_gradient(d) for d in original.decorators):
            self._grad_names.pop()
            updated = updated.visit(_LambdaGradMutator(self))
        return updated

    def leave_Return(self, original, updated):
        if self._in_grad and self._in_grad[-1] and updated.value is not None:
            return updated.with_changes(value=self._mutate(updated.value))
        return updated


class _LambdaGradMutator(cst.CSTTransformer):
    """``return y, lambda dy: ...`` in a custom_gradient function body."""

    def __init__(self, outer: _GradFnMutator):
        self.outer = outer
        self.depth = 0

    def visit_FunctionDef(self, node):
        self.depth += 1
        return self.depth == 1

    def leave_FunctionDef(self, original, updated):
        self.depth -= 1
        return updated

    def leave_Return(self, original, updated):
        v = updated.value
        if self.depth == 1 and isinstance(v, cst.Tuple) and len(v.elements) == 2 \
                and isinstance(v.elements[1].value, cst.Lambda):
            lam = v.elements[1].value
            lam = lam.with_changes(body=self.outer._mutate(lam.body))
            elems = [v.elements[0], v.elements[1].with_changes(value=lam)]
            return updated.with_changes(value=v.with_changes(elements=elems))
        return updated


def _returns(stmt):
    if isinstance(stmt, cst.SimpleStatementLine):
        return [s for s in stmt.body if isinstance(s, cst.Return)]
    return []


class _DropOutputGradients(cst.CSTTransformer):
    def __init__(self):
        self.changed = False

    def leave_Call(self, original, updated):
        args = [a for a in updated.args if not (a.keyword is not None and a.keyword.value == "output_gradients")]
        if len(args) != len(updated.args):
            self.changed = True
            if args:
                args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(args=args)
        return updated


# ------------------------------------------------------------------ failure modes seen in real code
def _tape_name(node: cst.With) -> Optional[str]:
    for item in node.items:
        call = item.item
        if isinstance(call, cst.Call):
            f = call.func
            name = f.attr.value if isinstance(f, cst.Attribute) else getattr(f, "value", None)
            if name == "GradientTape" and item.asname is not None and isinstance(item.asname.name, cst.Name):
                return item.asname.name.value
    return None


def _names(node) -> set:
    found = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, n):
            found.add(n.value)

    node.visit(V())
    return found


def _call_of(stmt, owner: Optional[str] = None, attr: Optional[str] = None):
    """The call an expression statement makes, or None."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Expr):
        return None
    call = stmt.body[0].value
    if not isinstance(call, cst.Call):
        return None
    f = call.func
    if owner is not None:
        if not (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == owner
                and (attr is None or f.attr.value == attr)):
            return None
    return call


class _TapeMutator(cst.CSTTransformer):
    """Moves one statement of the first tape region it can (watch_late, tape_late, side_effect_out)."""

    def __init__(self, how: str):
        self.how = how
        self.changed = False

    def leave_With(self, original, updated):
        tape = _tape_name(updated)
        if self.changed or tape is None or not isinstance(updated.body, cst.IndentedBlock):
            return updated
        body = list(updated.body.body)
        watches = [i for i, s in enumerate(body) if _call_of(s, tape, "watch") is not None]
        if self.how == "watch_late":
            if not watches:
                return updated
            w = watches[0]
            call = _call_of(body[w], tape, "watch")
            watched = _names(call.args[0].value) if call.args else set()
            use = next((i for i in range(w + 1, len(body)) if i not in watches and _names(body[i]) & watched), None)
            if use is None:
                return updated
            stmt = body.pop(w)
            body.insert(use, stmt)  # after the use (the use moved up by one)
            self.changed = True
            return updated.with_changes(body=updated.body.with_changes(body=body))
        computing = [i for i, s in enumerate(body) if i not in watches and tape not in _names(s)]
        if self.how == "side_effect_out":
            computing = [i for i in computing if _call_of(body[i]) is not None]
        if not computing:
            return updated
        stmt = body.pop(computing[0])
        if not body:
            body = [cst.SimpleStatementLine([cst.Pass()])]
        new = updated.with_changes(body=updated.body.with_changes(body=body))
        self.changed = True
        if self.how == "tape_late":  # the statement now runs before the tape starts
            return cst.FlattenSentinel([stmt.with_changes(leading_lines=updated.leading_lines),
                                        new.with_changes(leading_lines=[])])
        return cst.FlattenSentinel([new, stmt.with_changes(leading_lines=[])])  # now after the region


def _number(node) -> Optional[float]:
    if isinstance(node, (cst.Float, cst.Integer)):
        return float(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _number(node.expression)
        return None if inner is None else -inner
    return None


def _get_attrs(original: str) -> tuple:
    """Names bound to op.get_attr(...) in the original, and the literal values of those attributes."""
    import ast

    names, attrs, values = set(), set(), set()
    tree = ast.parse(original)
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get_attr" and n.args \
                and isinstance(n.args[0], ast.Constant):
            attrs.add(n.args[0].value)
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Attribute) \
                and n.value.func.attr == "get_attr":
            names |= {t.id for t in n.targets if isinstance(t, ast.Name)}
        if isinstance(n, ast.Call):
            for kw in n.keywords:
                if kw.arg in attrs and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, (int, float)):
                    values.add(float(kw.value.value))
    return names, attrs, values


class _GetAttrMutator(cst.CSTTransformer):
    """Changes the first literal that stands for an ``op.get_attr`` value (never the forward call's own)."""

    def __init__(self, names: set, attrs: set, values: set):
        self.names, self.attrs, self.values = names, attrs, values
        self.changed = False

    def leave_Assign(self, original, updated):
        if self.changed or len(updated.targets) != 1 or not isinstance(updated.targets[0].target, cst.Name):
            return updated
        if updated.targets[0].target.value in self.names and _number(updated.value) is not None:
            self.changed = True
            return updated.with_changes(value=cst.Float(repr(_number(updated.value) * 1.5 + 0.05)))
        return updated

    def visit_Arg(self, node):
        return not (node.keyword is not None and node.keyword.value in self.attrs)  # the forward op's attribute

    def leave_Float(self, original, updated):
        if not self.changed and float(updated.evaluated_value) in self.values:
            self.changed = True
            return cst.Float(repr(float(updated.evaluated_value) * 1.5 + 0.05))
        return updated


class _LiteralDtype(cst.CSTTransformer):
    """In custom_gradient functions, the first float literal operand becomes tf.constant(lit, tf.float32)."""

    def __init__(self):
        self.changed = False
        self.depth = 0

    def visit_FunctionDef(self, node):
        if any(_is_custom_gradient(d) for d in node.decorators):
            self.depth += 1
        elif self.depth:
            self.depth += 1
        return True

    def leave_FunctionDef(self, original, updated):
        if self.depth:
            self.depth -= 1
        return updated

    def leave_BinaryOperation(self, original, updated):
        if self.changed or not self.depth:
            return updated
        for side in ("left", "right"):
            lit = getattr(updated, side)
            if isinstance(lit, cst.Float):
                self.changed = True
                const = cst.parse_expression(f"tf.constant({lit.value}, tf.float32)")
                return updated.with_changes(**{side: const})
        return updated


_PYFUNCS = {"numpy_function", "py_func", "py_function"}


class _PyFuncIndex0(cst.CSTTransformer):
    def __init__(self, indexed: set):
        self.indexed = indexed  # ids of original calls already subscripted
        self.changed = False

    def leave_Call(self, original, updated):
        f = updated.func
        name = f.attr.value if isinstance(f, cst.Attribute) else getattr(f, "value", None)
        if self.changed or name not in _PYFUNCS or id(original) in self.indexed:
            return updated
        self.changed = True
        return cst.Subscript(value=updated, slice=[cst.SubscriptElement(cst.Index(cst.Integer("0")))])


def _subscripted_calls(module: cst.Module) -> set:
    out = set()

    class V(cst.CSTVisitor):
        def visit_Subscript(self, node):
            if isinstance(node.value, cst.Call):
                out.add(id(node.value))

    module.visit(V())
    return out


def mutate(source: str, operator: str, original: Optional[str] = None) -> Optional[str]:
    module = cst.parse_module(source)
    if operator == "drop_output_gradients":
        t = _DropOutputGradients()
    elif operator in ("watch_late", "tape_late", "side_effect_out"):
        t = _TapeMutator(operator)
    elif operator == "get_attr_value":
        if original is None:
            return None
        names, attrs, values = _get_attrs(original)
        if not names and not values:
            return None
        t = _GetAttrMutator(names, attrs, values)
    elif operator == "literal_dtype":
        if "import tensorflow as tf" not in source:
            return None
        t = _LiteralDtype()
    elif operator == "py_func_index0":
        t = _PyFuncIndex0(_subscripted_calls(module))
    else:
        t = _GradFnMutator({"negate": "negate", "scale2": "scale2", "swap_grads": "swap"}[operator])
    new = module.visit(t)
    if not t.changed or new.code == source:
        return None
    return new.code


def library_form(source: str) -> Optional[str]:
    """The file as a library: its ``if __name__ == "__main__":`` block dropped.

    None when what is left still computes at module level (a script without
    a main guard): such a file has no library form.
    """
    import ast

    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    keep = list(range(len(lines)))
    for node in tree.body:
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test) and "__main__" in ast.unparse(node.test):
            drop = set(range(node.lineno - 1, node.end_lineno))
            keep = [i for i in keep if i not in drop]
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # docstring
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and not any(
                isinstance(n, ast.Attribute) and n.attr in ("gradient", "gradients", "jacobian", "GradientTape")
                or isinstance(n, ast.Name) and n.id == "gradients" for n in ast.walk(node)):
            continue
        return None
    return "".join(lines[i] for i in keep).rstrip() + "\n"


OPERATORS = ("negate", "scale2", "drop_output_gradients", "swap_grads")
NEW_OPERATORS = ("watch_late", "tape_late", "side_effect_out", "get_attr_value", "literal_dtype", "py_func_index0")
