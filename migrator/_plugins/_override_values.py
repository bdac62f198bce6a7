"""What the source shows about a value: tensor or Python value, dtype, static rank.

Which op a TF call makes can depend on its inputs' dtype and static rank
(``tools/gen_op_variants.py``), and whether ``a * b`` makes an op at all
depends on whether an operand is a tensor.  This module answers those
questions from the source, conservatively: every binding of a name is joined
(flow-insensitive), a parameter is what every caller in the project passes
(``migrator.project``), and anything it cannot follow is "unknown".
"""
from __future__ import annotations

import ast
import os
from typing import Optional

import libcst as cst

from migrator._plugins._override_model import Scope, assigned_counts, code
from migrator._plugins._override_tfvalues import (
    BOTTOM,
    BOTTOM_VALUE,
    DIFFERENTIABLE,
    HANDLERS,
    PY,
    PYTHON,
    TENSOR,
    UNKNOWN_VALUE,
    Value,
    View,
    common_dtypes,
    max_rank,
    tensor,
    tf_call_value,
)
from migrator.astwalk import import_aliases
from migrator.tfnames import normalize


#: libcst/ast operator class names -> the dunder stem Python tries on the operands
_OPERATORS = {"Add": "add", "Subtract": "sub", "Sub": "sub", "Multiply": "mul", "Mult": "mul", "Divide": "truediv",
              "Div": "truediv", "FloorDivide": "floordiv", "FloorDiv": "floordiv", "Modulo": "mod", "Mod": "mod",
              "Power": "pow", "Pow": "pow", "MatrixMultiply": "matmul", "MatMult": "matmul"}


# ------------------------------------------------------- libcst (this file) ---


class Values:
    """Values of expressions in the module being rewritten."""

    def __init__(self, found, path: str, project):
        self.found, self.col, self.path, self.project = found, found.col, path, project
        self._busy: set = set()
        self._params: dict = {}
        self._ast_files: dict[str, "_AstFile"] = {}

    def where(self, node: cst.CSTNode) -> str:
        return f"{os.path.basename(self.path)}:{self.found.line(node)}"

    def of(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> Value:
        if depth > 12:
            return UNKNOWN_VALUE
        if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
                             cst.FormattedString, cst.Lambda)):
            return PY
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set, cst.Dict)):
            # a display is a Python value, but one holding tensors is not a constant: `tf.concat(parts)`
            # with `parts = [tf.tanh(x)]` makes an op (an Identity for one tensor)
            items = [getattr(e, "value", None) for e in expr.elements]
            if any(i is None or isinstance(e, (cst.StarredElement, cst.StarredDictElement))
                   for i, e in zip(items, expr.elements)):
                return UNKNOWN_VALUE
            return PY if all(self.of(i, scope, depth + 1).kind == PYTHON for i in items) else UNKNOWN_VALUE
        if isinstance(expr, (cst.ListComp, cst.SetComp, cst.DictComp)):
            return UNKNOWN_VALUE  # its elements may be tensors
        if isinstance(expr, cst.Name):
            if expr.value in ("True", "False", "None"):
                return PY
            return self.name(expr.value, scope, depth)
        if isinstance(expr, cst.UnaryOperation):
            if isinstance(expr.operator, cst.Not):
                return PY
            return self.of(expr.expression, scope, depth + 1)
        if isinstance(expr, cst.BinaryOperation):
            vals = [self.of(expr.left, scope, depth + 1), self.of(expr.right, scope, depth + 1)]
            return self.binary(vals, type(expr.operator).__name__, self.dispatches(vals, type(expr.operator).__name__))
        if isinstance(expr, cst.Comparison):
            vals = [self.of(expr.left, scope, depth + 1)] + [self.of(c.comparator, scope, depth + 1)
                                                              for c in expr.comparisons]
            if any(v.kind == TENSOR for v in vals) and all(
                    isinstance(c.operator, (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual))
                    for c in expr.comparisons):
                return tensor({"bool"}, max_rank([v.ranks if v.kind == TENSOR else frozenset({0}) for v in vals]))
            return PY if all(v.kind == PYTHON for v in vals) else UNKNOWN_VALUE
        if isinstance(expr, cst.IfExp):
            return self.of(expr.body, scope, depth + 1).join(self.of(expr.orelse, scope, depth + 1))
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in ("shape", "dtype", "ndim", "name"):
                return PY
            if self.col.tf(expr) is not None or any(q.startswith("numpy") for q in self.col.qualified(expr)):
                return PY  # tf.float32, np.pi
            return UNKNOWN_VALUE
        if isinstance(expr, cst.Subscript):
            base = self.of(expr.value, scope, depth + 1)
            return tensor(base.dtypes, None) if base.kind == TENSOR else UNKNOWN_VALUE
        if isinstance(expr, cst.Call):
            return self.call(expr, scope, depth)
        return UNKNOWN_VALUE

    def dispatches(self, vals: list, operator: str) -> bool:
        """An operand may be an object of a project class defining this operator (`p * a` with
        `Phasor.__mul__` returning a complex tensor: an adversarial run)."""
        if all(v.kind in (TENSOR, PYTHON, BOTTOM) for v in vals):
            return False
        hooks = self.col.implicit[0]() if getattr(self.col, "implicit", None) else None
        name = _OPERATORS.get(operator)
        return hooks is None or name is None or bool({f"__{name}__", f"__r{name}__"} & hooks.methods)

    @staticmethod
    def binary(vals: list[Value], operator: str, dispatches: bool = True) -> Value:
        if dispatches and any(v.kind not in (TENSOR, PYTHON, BOTTOM) for v in vals):
            return UNKNOWN_VALUE  # the operand's own method may make anything
        if any(v.kind == TENSOR for v in vals):
            dtypes = common_dtypes(vals)
            if operator == "Divide" and dtypes is not None and dtypes - DIFFERENTIABLE:
                dtypes = dtypes & DIFFERENTIABLE | {"float32", "float64"}  # int / int is a float in TF
            ranks = max_rank([v.ranks if v.kind == TENSOR else frozenset({0}) if v.kind == PYTHON else None
                               for v in vals])
            origin = frozenset().union(*(v.origin for v in vals))
            return Value(TENSOR, dtypes, ranks, origin)
        if all(v.kind == PYTHON for v in vals):
            return PY
        if any(v.kind == BOTTOM for v in vals) and all(v.kind in (BOTTOM, PYTHON) for v in vals):
            return BOTTOM_VALUE
        return UNKNOWN_VALUE

    def call(self, expr: cst.Call, scope: Scope, depth: int) -> Value:
        name = self.col.tf(expr)
        if name is not None:
            view = View([(a.keyword.value if a.keyword else None, a.value) for a in expr.args if not a.star],
                         lambda n: self.of(n, scope, depth + 1), _cst_literal, code)
            if any(a.star for a in expr.args):
                return UNKNOWN_VALUE if name not in HANDLERS else tensor()
            return tf_call_value(name, view).with_origin(self.where(expr))
        qn = self.col.qualified(expr)
        if any(q == "numpy" or q.startswith("numpy.") for q in qn):
            return PY
        func = expr.func
        if isinstance(func, cst.Name):
            builtin = self.col.builtin(func)
            if builtin in ("float", "int", "len", "bool", "str", "round", "range"):
                return PY
            if builtin == "abs" and expr.args:
                base = self.of(expr.args[0].value, scope, depth + 1)  # |z| of a complex tensor is real
                return Value(TENSOR, base.dtypes - {"complex64"} | {"float32", "float64"}, base.ranks, base.origin) \
                    if base.kind == TENSOR and base.dtypes is not None and "complex64" in base.dtypes else base
            d = scope.find_def(func.value)
            if d is not None:
                return self.returns(d, depth)
        return UNKNOWN_VALUE

    def returns(self, fn: cst.FunctionDef, depth: int) -> Value:
        """Join of everything a same-module function returns (None: a Python value)."""
        key = ("def", id(fn))
        if key in self._busy or depth > 8:
            return BOTTOM_VALUE if key in self._busy else UNKNOWN_VALUE
        self._busy.add(key)
        try:
            scope = self.col.scope_of_def.get(fn)
            out = BOTTOM_VALUE
            found = False

            class _R(cst.CSTVisitor):
                def __init__(s):
                    s.values: list = []

                def visit_FunctionDef(s, node):
                    return node is fn

                def visit_Lambda(s, node):
                    return False

                def visit_Return(s, node):
                    s.values.append(node.value)

                def visit_Yield(s, node):
                    s.values.append(None)

            r = _R()
            fn.visit(r)
            for v in r.values:
                found = True
                out = out.join(PY if v is None else self.of(v, scope, depth + 1))  # type: ignore[arg-type]
            return out if found else PY
        finally:
            self._busy.discard(key)

    def name(self, name: str, scope: Scope, depth: int) -> Value:
        s = scope.binding_scope(name)
        if s is None:
            return UNKNOWN_VALUE
        key = (id(s), name)
        if key in self._busy:
            return BOTTOM_VALUE
        self._busy.add(key)
        try:
            out = BOTTOM_VALUE
            if name in s.params:
                out = out.join(self.param(s, name, depth))
            elif name in s.defs and name not in s.assigns:
                return PY
            assigns = s.assigns.get(name, [])
            n_bound = len(assigns) + (1 if name in s.params else 0)
            if name in s.bound and not assigns and name not in s.params:
                return UNKNOWN_VALUE  # bound by a loop, a with or an unpacking
            if s.function is not None and _bound_count(s, name) > n_bound:
                return UNKNOWN_VALUE  # also bound by a loop, a with or an unpacking
            for _stmt, value in assigns:
                out = out.join(self.of(value, s, depth + 1))
            return out
        finally:
            self._busy.discard(key)

    def param(self, s: Scope, pname: str, depth: int) -> Value:
        """What every caller in the project passes for a parameter of a module-level function."""
        fn = s.function
        if fn is None or s.parent is None or s.parent.parent is not None:
            return UNKNOWN_VALUE  # a method or a nested function: its callers are not listed
        key = (id(fn), pname)
        if key in self._params:
            return self._params[key]
        self._params[key] = UNKNOWN_VALUE
        sites = self.project.callers(self.path, fn.name.value) if self.project is not None else None
        if not sites:
            return UNKNOWN_VALUE
        params = [p.name.value for p in fn.params.params]
        idx = params.index(pname) if pname in params else None
        default = s.params[pname].default
        out = BOTTOM_VALUE
        for site in sites:
            arg = _bind_ast(site.call, pname, idx)
            if arg == "star":
                out = UNKNOWN_VALUE
                break
            if arg is None:
                value = self.of(default, s.parent, depth + 1) if default is not None else UNKNOWN_VALUE
            else:
                value = self._ast(site.path).value(arg, site.scope, depth + 1, self).with_origin(
                    f"{os.path.basename(site.path)}:{site.line}")
            out = out.join(value)
        if out.kind not in (UNKNOWN_VALUE.kind, BOTTOM):
            out = Value(out.kind, out.dtypes, out.ranks, out.origin, callers=True)
        self._params[key] = out
        return out

    def param_literal(self, s: Scope, pname: str):
        """``(value, "m.py:20, m.py:31")`` when every caller in the project passes the same
        literal for a parameter of a module-level function (its default counts); else ``(None, "")``."""
        fn = s.function
        if fn is None or s.parent is None or s.parent.parent is not None or self.project is None:
            return None, ""
        sites = self.project.callers(self.path, fn.name.value)
        if not sites:
            return None, ""
        params = [p.name.value for p in fn.params.params]
        idx = params.index(pname) if pname in params else None
        default = s.params[pname].default
        seen, where = set(), []
        for site in sites:
            arg = _bind_ast(site.call, pname, idx)
            if arg == "star":
                return None, ""
            value = _cst_literal(default) if arg is None and default is not None else (
                _ast_literal(arg) if arg is not None else None)
            if value is None:
                return None, ""
            seen.add(repr(value))
            where.append(f"{os.path.basename(site.path)}:{site.line}")
        if len(seen) != 1:
            return None, ""
        return ast.literal_eval(seen.pop()), ", ".join(where)

    def param_texts(self, s: Scope, pname: str) -> Optional[list[str]]:
        """The source text every caller in the project passes for a parameter of a module-level
        function (its default where one passes nothing); None when the callers cannot be listed."""
        fn = s.function
        if fn is None or s.parent is None or s.parent.parent is not None or self.project is None:
            return None
        sites = self.project.callers(self.path, fn.name.value)
        if not sites or pname not in s.params:
            return None
        params = [p.name.value for p in fn.params.params]
        default = s.params[pname].default
        out = []
        for site in sites:
            arg = _bind_ast(site.call, pname, params.index(pname) if pname in params else None)
            if arg == "star" or arg is None and default is None:
                return None
            out.append(ast.unparse(arg) if arg is not None else cst.Module([]).code_for_node(default))
        return out

    def _ast(self, path: str) -> "_AstFile":
        f = self._ast_files.get(path)
        if f is None:
            f = self._ast_files[path] = _AstFile(self.project.tree(path))
        return f


def _bound_count(s: Scope, name: str) -> int:
    if not hasattr(s, "_counts"):
        s._counts = assigned_counts(s.node.body)  # type: ignore[attr-defined]
    return s._counts.get(name, 0)  # type: ignore[attr-defined]


def _cst_literal(node: cst.CSTNode):
    try:
        return ast.literal_eval(code(node))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _bind_ast(call: ast.Call, pname: str, idx: Optional[int]):
    """The argument expression a call passes for a parameter ("star": cannot tell; None: not passed)."""
    for kw in call.keywords:
        if kw.arg is None:
            return "star"
        if kw.arg == pname:
            return kw.value
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred):
            return "star"
        if idx is not None and i == idx:
            return a
    return None


# ---------------------------------------------------- ast (caller's files) ---


class _AstFile:
    """Values of argument expressions at call sites, read with ``ast`` (any file)."""

    def __init__(self, tree: Optional[ast.Module]):
        self.tree = tree
        self.aliases: dict[str, str] = import_aliases(ast.walk(tree)) if tree is not None else {}

    def qualified(self, node: ast.AST) -> Optional[str]:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        return ".".join([self.aliases[node.id]] + list(reversed(parts)))

    def value(self, node: ast.AST, scope: Optional[ast.AST], depth: int, values: Values) -> Value:
        if depth > 12 or self.tree is None:
            return UNKNOWN_VALUE
        if isinstance(node, (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.Lambda)):
            return PY
        if isinstance(node, ast.UnaryOp):
            return PY if isinstance(node.op, ast.Not) else self.value(node.operand, scope, depth + 1, values)
        if isinstance(node, ast.BinOp):
            vals = [self.value(node.left, scope, depth + 1, values), self.value(node.right, scope, depth + 1, values)]
            return Values.binary(vals, type(node.op).__name__, values.dispatches(vals, type(node.op).__name__))
        if isinstance(node, ast.Name):
            return self.name(node.id, scope, depth, values)
        if isinstance(node, ast.Call):
            q = self.qualified(node.func)
            if q is not None and normalize(q) is not None:
                args = [(None, a) for a in node.args if not isinstance(a, ast.Starred)] + [
                    (k.arg, k.value) for k in node.keywords if k.arg is not None]
                view = View(args, lambda n: self.value(n, scope, depth + 1, values), _ast_literal, ast.unparse)
                return tf_call_value(normalize(q), view)  # type: ignore[arg-type]
            if q is not None and q.split(".")[0] == "numpy":
                return PY
            if isinstance(node.func, ast.Name) and node.func.id in ("float", "int", "len", "bool", "round"):
                return PY
            if isinstance(node.func, ast.Name):  # a function of the same file: what it returns
                fn = next((d for d in self.tree.body if isinstance(d, ast.FunctionDef) and d.name == node.func.id),
                          None)
                if fn is not None and depth < 8:
                    out = BOTTOM_VALUE
                    for ret in (n for n in _own_nodes(fn) if isinstance(n, ast.Return)):
                        out = out.join(self.value(ret.value, fn, depth + 2, values) if ret.value else PY)
                    return out if out.kind != BOTTOM else UNKNOWN_VALUE
        if isinstance(node, ast.Attribute) and node.attr in ("shape", "dtype"):
            return PY
        return UNKNOWN_VALUE

    def name(self, name: str, scope: Optional[ast.AST], depth: int, values: Values) -> Value:
        for holder in ([scope] if scope is not None and scope is not self.tree else []) + [self.tree]:
            nodes = list(_own_nodes(holder))
            found = [n.value for n in nodes if isinstance(n, ast.Assign)
                     and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)]
            stores = sum(1 for n in nodes if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store))
            is_param = isinstance(holder, (ast.FunctionDef, ast.AsyncFunctionDef)) and name in {
                a.arg for a in holder.args.args + holder.args.kwonlyargs + holder.args.posonlyargs}
            if is_param or stores > len(found):
                return UNKNOWN_VALUE  # a parameter of the caller, or bound by a loop, a with, an unpacking
            if found:
                out = BOTTOM_VALUE
                for v in found:
                    out = out.join(self.value(v, holder, depth + 1, values))
                return out
        return UNKNOWN_VALUE


def _own_nodes(holder: ast.AST):
    """Nodes of a function or module body, not those of nested functions or classes."""
    stack = list(ast.iter_child_nodes(holder))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _ast_literal(node: ast.AST):
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
