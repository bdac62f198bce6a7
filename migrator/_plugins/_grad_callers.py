"""Facts about a function's callers, for proofs about its parameters.

A tape opened inside ``def fgsm(x, logits)`` cannot see a path from ``x`` to
``logits`` that the caller built.  Whether ``logits`` may depend on ``x`` is
decided at the call sites, which are found in the whole project
(:meth:`migrator.project.Project.callers`): the parameter is independent when
every caller passes (or the default is) a value built from literals only.
When a caller passes something computed from the source argument, that is a
known dependence, and the site is refused outright.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

from migrator._plugins._grad_values import NUMBER_CALLS, NUMBER_IF_ARGS_ARE
from migrator.astwalk import import_aliases
from migrator.project import Project
from migrator.project_calls import CallSite

#: callee names whose result depends only on literal arguments
_CONSTANT_CALLS = {
    "constant", "Variable", "zeros", "ones", "fill", "eye", "placeholder", "array", "asarray", "float32",
    "float64", "int32", "int64", "random_normal", "random_uniform", "truncated_normal", "normal", "uniform",
    "one_hot", "linspace", "arange", "range", "list", "tuple", "float", "int", "get_variable",
}


@dataclass
class Verdict:
    independent: bool  # every caller passes a value that cannot depend on the sources
    dependent: Optional[str] = None  # a caller that certainly passes a value built from a source
    evidence: str = ""


@dataclass
class Signature:
    params: list  # positional-or-keyword parameter names, in order
    defaults: dict  # name -> ast expression (the parameter's default)
    has_star: bool


def _arg_for(site: CallSite, sig: Signature, name: str) -> tuple[bool, Optional[ast.expr]]:
    """(found, expression) for parameter ``name`` at a call site; found=False when the
    call passes *args/**kwargs that could hold it."""
    call = site.call
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred):
            return False, None
        if i < len(sig.params) and sig.params[i] == name:
            return True, a
    for kw in call.keywords:
        if kw.arg is None:
            return False, None
        if kw.arg == name:
            return True, kw.value
    if name not in sig.params and name not in sig.defaults:
        return False, None  # `*rest`, `**kw` (or a keyword-only parameter): what they collect is not listed
    return True, sig.defaults.get(name)


def _names(expr: Optional[ast.AST], module: Optional[ast.Module] = None) -> set:
    """Names an expression reads as values (not modules it imports, not functions it calls)."""
    if expr is None:
        return set()
    called = {id(n.func) for n in ast.walk(expr) if isinstance(n, ast.Call)}
    modules = _imported(module) if module is not None else set()
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and id(n) not in called and n.id not in modules}


def _reaching(expr: Optional[ast.AST], scope: Optional[ast.AST], module: Optional[ast.Module],
              aliases_only: bool = False) -> set:
    """The names an expression reads, and those the names' bindings read, transitively; with
    ``aliases_only``, only through bindings that are the same object (``x2 = x``, ``[x]``)."""
    names = _names(expr, module)
    todo = list(names)
    while todo and module is not None and len(names) < 200:
        name = todo.pop()
        for where in ([scope] if scope is not None and scope is not module else []) + [module]:
            vals = _bindings(where, name)
            for v in vals:
                if v is None or aliases_only and not isinstance(v, (ast.Name, ast.Subscript, ast.Attribute,
                                                                    ast.List, ast.Tuple)):
                    continue
                for n in _names(v, module) - names:
                    names.add(n)
                    todo.append(n)
            if vals:
                break
    return names


def _imported(module: ast.Module) -> set:
    out = set()
    for node in module.body:
        if isinstance(node, ast.Import):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            out |= {a.asname or a.name for a in node.names}
    return out


def _walk_scope(scope: ast.AST):
    """The nodes of a scope, not descending into nested functions and classes."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _bindings(scope: ast.AST, name: str) -> list:
    """Values bound to ``name`` directly in ``scope`` (None for a binding of another kind)."""
    out = []
    for node in _walk_scope(scope):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id == name:
                    out.append(node.value)
                elif any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(t)):
                    out.append(None)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With, ast.NamedExpr)):
            targets = [node.target] if hasattr(node, "target") else [i.optional_vars for i in node.items]
            if any(isinstance(n, ast.Name) and n.id == name for t in targets if t is not None for n in ast.walk(t)):
                out.append(node.value if isinstance(node, ast.AnnAssign) else None)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            out.append(None)
    return out


def constant_like(expr: Optional[ast.AST], scope: Optional[ast.AST], module: ast.Module, hops: int = 0) -> bool:
    """Built from literals only: a literal, a constructor of literals, or a name bound once
    (in the caller's scope or at module level) to one.  ``hops`` counts names followed."""
    if expr is None:
        return hops == 0  # an absent default
    if isinstance(expr, ast.Constant):
        return True
    if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
        return all(constant_like(e, scope, module, hops) for e in expr.elts)
    if isinstance(expr, ast.UnaryOp):
        return constant_like(expr.operand, scope, module, hops)
    if isinstance(expr, ast.BinOp):
        return constant_like(expr.left, scope, module, hops) and constant_like(expr.right, scope, module, hops)
    if isinstance(expr, ast.Attribute):
        return _is_module_attr(expr)  # tf.float32, np.pi
    if isinstance(expr, ast.Call):
        fn = expr.func
        leaf = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else None
        if leaf not in _CONSTANT_CALLS:
            return False
        return all(constant_like(a, scope, module, hops) for a in expr.args) and \
            all(constant_like(k.value, scope, module, hops) for k in expr.keywords)
    if isinstance(expr, ast.Name) and hops < 4:
        for where in ([scope] if scope is not None and scope is not module else []) + [module]:
            vals = _bindings(where, expr.id)
            if vals:
                if len(vals) != 1 or vals[0] is None:
                    return False
                if _mutable(vals[0]) and _mutated(where, expr.id):
                    return False  # `endpoints = []` then `endpoints.append(h)`: filled later
                return constant_like(vals[0], where, module, hops + 1)
        return False
    return False


def _mutable(value: ast.AST) -> bool:
    return isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)) or (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("list", "dict", "set"))


def _mutated(scope: ast.AST, name: str) -> bool:
    """Whether ``scope`` may change the object ``name`` holds in place: a method call on it,
    an item or attribute assignment, or handing it to another call."""
    for node in _walk_scope(scope):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
                    and node.func.value.id == name:
                return True
            if any(isinstance(a, ast.Name) and a.id == name for a in node.args) or \
                    any(isinstance(k.value, ast.Name) and k.value.id == name for k in node.keywords):
                return True
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, (ast.Subscript, ast.Attribute)) and isinstance(t.value, ast.Name)
                   and t.value.id == name for t in targets):
                return True
    return False


def _is_module_attr(expr: ast.Attribute) -> bool:
    node: ast.AST = expr
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in ("tf", "tensorflow", "np", "numpy", "math")


def param_verdict(project: Project, path: str, func: str, sig: Signature, param: str,
                  source_params: list[str]) -> Verdict:
    """May parameter ``param`` of ``path:func`` depend on the parameters in ``source_params``?"""
    sites = project.callers(path, func)
    if sites is None:
        return Verdict(False, evidence=f"`{func}` (or its module) is used as a value somewhere, so its callers "
                                      "cannot be listed")
    if not sites:
        return Verdict(False, evidence=f"no caller of `{func}` in the project")
    where = []
    for site in sites:
        found, expr = _arg_for(site, sig, param)
        if not found:
            if param not in sig.params and param not in sig.defaults:
                return Verdict(False, evidence=f"`{param}` collects the extra arguments of the call at {_loc(site)}")
            return Verdict(False, evidence=f"the call at {_loc(site)} passes *args/**kwargs")
        module = project.tree(site.path)
        src_names: set = set()
        for sp in source_params:
            ok, sexpr = _arg_for(site, sig, sp)
            src_names |= _reaching(sexpr, site.scope, module, aliases_only=True)
        # through names bound on the way (`x2 = x`, `src = [x]`, a default `W = X * X`)
        shared = _reaching(expr, site.scope, module) & src_names
        if shared:
            return Verdict(False, dependent=f"the caller at {_loc(site)} computes `{param}` from "
                                            f"`{sorted(shared)[0]}`, the source argument")
        if not constant_like(expr, site.scope, module):
            return Verdict(False, evidence=f"the caller at {_loc(site)} passes `{ast.unparse(expr) if expr else param}`")
        where.append(_loc(site))
    return Verdict(True, evidence=f"every caller passes a value built from literals ({', '.join(where[:3])}"
                                  f"{', ...' if len(where) > 3 else ''})")


def dependent_caller(project: Project, sites: list, sig: Signature, param: str, source_params: list[str]
                     ) -> Optional[str]:
    """A call among ``sites`` that passes for ``param`` a value computed from what it passes for
    ``source_params``, as a reason; used where the calls cannot all be listed (a method): one
    such call refutes the assumption that ``param`` is independent."""
    for site in sites:
        found, expr = _arg_for(site, sig, param)
        module = project.tree(site.path)
        if not found or expr is None or module is None:
            continue
        src_names: set = set()
        for sp in source_params:
            _ok, sexpr = _arg_for(site, sig, sp)
            src_names |= _reaching(sexpr, site.scope, module, aliases_only=True)
        # `self.x_tf` and `self.t_tf` share `self` but not a value: an object only reached
        # through its attributes is no evidence (this refutes; it must not claim too much)
        objects = _attribute_bases(expr) | set().union(*(_attribute_bases(_arg_for(site, sig, sp)[1])
                                                         for sp in source_params))
        shared = (_reaching(expr, site.scope, module) & src_names) - objects
        if shared:
            return f"the caller at {_loc(site)} computes `{param}` from `{sorted(shared)[0]}`, the source argument"
    return None


def _attribute_bases(expr: Optional[ast.AST]) -> set:
    """Names that occur in ``expr`` as the object of an attribute (``self`` in ``self.x``)."""
    if expr is None:
        return set()
    bases = {id(n.value) for n in ast.walk(expr) if isinstance(n, ast.Attribute)}
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and id(n) in bases}


def source_structure(project: Project, path: str, func: str, sig: Signature, param: str) -> str:
    """"list" ("tuple") when every caller passes a list (a tuple) for ``param``, "tensor" when every caller
    passes a single tensor built by a TF call, "python" when some caller passes a number,
    else "unknown"."""
    sites = project.callers(path, func)
    if not sites:
        return "unknown"
    kinds = set()
    for site in sites:
        found, expr = _arg_for(site, sig, param)
        module = project.tree(site.path)
        if isinstance(expr, ast.Name) and module is not None:
            vals = _bindings(site.scope if site.scope is not None else module, expr.id) or _bindings(module, expr.id)
            expr = vals[0] if len(vals) == 1 else None
        if _python_number(expr) or module is not None and (_numeric_module_value(expr, module) or _Names(
                project, site.path, module, site.scope).number(expr)):
            kinds.add("python")  # `f(3.0)`: TF1 differentiated a new constant; tape.watch(3.0) raises
        elif isinstance(expr, (ast.List, ast.Tuple)):
            kinds.add("tuple" if isinstance(expr, ast.Tuple) else "list")
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and \
                expr.func.attr in ("constant", "Variable", "placeholder", "zeros", "ones", "get_variable"):
            kinds.add("tensor")
        else:
            kinds.add("unknown")
    if "python" in kinds:
        return "python"
    return kinds.pop() if len(kinds) == 1 else "unknown"


def caller_passes_list(project: Project, path: str, func: str, sig: Signature, param: str,
                       nested: bool, hops: int = 0) -> Optional[str]:
    """A caller of ``path:func`` that may pass a Python list for ``param`` (``nested``: a list
    holding a list), as ``caller.py:12``; followed through a caller's own parameter.

    Found by an adversarial run: ``grad_ys=gy`` with a caller passing ``[[2.0, 3.0]]``. TF1
    made one tensor of the inner list; ``tape.gradient`` flattens it into two numbers."""
    for site in project.callers(path, func) or []:
        found, expr = _arg_for(site, sig, param)
        module = project.tree(site.path)
        if not found or module is None:
            continue
        names = _Names(project, site.path, module, site.scope)
        if (names.holds_list(expr) or names.holds_none(expr)) if nested else (
                names.listish(expr) or isinstance(expr, ast.Constant) and expr.value is None and found):
            return _loc(site)
        fn = site.scope
        if isinstance(expr, ast.Name) and isinstance(fn, ast.FunctionDef) and hops < 3 and \
                fn in module.body and expr.id in [a.arg for a in fn.args.args] and not _bindings(fn, expr.id):
            params = [a.arg for a in fn.args.args]
            outer = Signature(params, dict(zip(params[len(params) - len(fn.args.defaults):], fn.args.defaults)),
                              fn.args.vararg is not None or fn.args.kwarg is not None)
            far = caller_passes_list(project, site.path, fn.name, outer, expr.id, nested, hops + 1)
            if far is not None:
                return far
    return None


def imported_list(project: Project, path: str, name: str, nested: bool) -> bool:
    """Module name ``name`` of ``path`` (bound here or imported from a project module) may be
    a Python list (``nested``: holding a list or None)."""
    tree = project.tree(path)
    if tree is None:
        return False
    names, expr = _Names(project, path, tree, None), ast.Name(id=name, ctx=ast.Load())
    return names.holds_list(expr) or names.holds_none(expr) if nested else names.listish(expr)


class _Names:
    """What a name may hold at a call site: its bindings in the calling function, at module
    level, or in the project module a ``from m import name`` reads it from."""

    def __init__(self, project: Project, path: str, module: ast.Module, scope: Optional[ast.AST]) -> None:
        self.project, self.path, self.module = project, path, module
        self.scope = scope if scope is not None else module

    def values(self, name: str, depth: int) -> list:
        vals = _bindings(self.scope, name) if self.scope is not self.module else []
        vals += _bindings(self.module, name)
        for node in self.module.body:
            if isinstance(node, ast.ImportFrom) and depth < 3:
                for a in node.names:
                    if (a.asname or a.name) == name:
                        where = self.project.resolve(node.module or "", node.level, self.path)
                        tree = self.project.tree(where) if where else None
                        if tree is not None:
                            vals += _bindings(tree, a.name)
        return vals

    def expr_values(self, expr: Optional[ast.AST], depth: int = 0) -> list:
        """What a name, or an attribute of a project module (``consts.VAL``), is bound to."""
        if isinstance(expr, ast.Name):
            return self.values(expr.id, depth)
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and depth < 3:
            mod = import_aliases(self.module.body).get(expr.value.id)
            where = self.project.resolve(mod, 0, self.path) if mod else None
            tree = self.project.tree(where) if where else None
            return _bindings(tree, expr.attr) if tree is not None else []
        return []

    def holds_none(self, expr: Optional[ast.AST], depth: int = 0) -> bool:
        """``[None]``, or a name bound to a list holding None: TF1 read ones there, a tape raises."""
        if isinstance(expr, (ast.List, ast.Tuple)):
            return any(isinstance(e, ast.Constant) and e.value is None for e in expr.elts)
        return depth < 3 and any(v is not None and self.holds_none(v, depth + 1)
                                 for v in self.expr_values(expr, depth))

    def number(self, expr: Optional[ast.AST], depth: int = 0) -> bool:
        """A Python number bound to a name or a project module's attribute (``consts.VAL``)."""
        if _python_number(expr):
            return True
        return depth < 3 and isinstance(expr, (ast.Name, ast.Attribute)) and any(
            v is not None and self.number(v, depth + 1) for v in self.expr_values(expr, depth))

    def listish(self, expr: Optional[ast.AST], depth: int = 0) -> bool:
        """``expr`` may be a Python list or tuple: a display, ``list(..)``, a slice, ``.tolist()``,
        an item of a list of lists, or a name bound to one of those."""
        if isinstance(expr, (ast.List, ast.Tuple, ast.ListComp, ast.Set, ast.GeneratorExp)):
            return True
        if isinstance(expr, ast.Subscript):
            return isinstance(expr.slice, ast.Slice) and self.listish(expr.value, depth) or \
                self.holds_list(expr.value, depth)
        if isinstance(expr, ast.Call):
            f = expr.func
            return isinstance(f, ast.Name) and f.id in ("list", "tuple", "sorted", "reversed") or \
                isinstance(f, ast.Attribute) and f.attr in ("tolist", "copy")
        if isinstance(expr, ast.Name) and depth < 3:
            return any(v is not None and self.listish(v, depth + 1) for v in self.values(expr.id, depth))
        return False

    def holds_list(self, expr: Optional[ast.AST], depth: int = 0) -> bool:
        """``expr`` may be a Python list with a Python list among its elements (``[[2.0, 3.0]]``)."""
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            return any(self.listish(e, depth) for e in expr.elts)
        if isinstance(expr, (ast.ListComp, ast.GeneratorExp)):
            return self.listish(expr.elt, depth)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in ("list", "tuple") \
                and expr.args:
            return self.holds_list(expr.args[0], depth)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "tolist":
            return True  # a numpy array of rank 2 or more gives nested lists
        if isinstance(expr, ast.Subscript):
            return self.holds_list(expr.value, depth)
        if isinstance(expr, ast.Name) and depth < 3:
            return any(v is not None and self.holds_list(v, depth + 1) for v in self.values(expr.id, depth))
        return False


def _python_number(expr: Optional[ast.AST]) -> bool:
    if isinstance(expr, ast.UnaryOp):
        expr = expr.operand
    if isinstance(expr, ast.BinOp):  # `2 * 3.0`
        return _python_number(expr.left) and _python_number(expr.right)
    return isinstance(expr, ast.Constant) and isinstance(expr.value, (int, float)) and not isinstance(expr.value, bool)


def _numeric_module_value(expr: Optional[ast.AST], module: ast.Module) -> bool:
    """``math.pi``, ``float(n)``, ``np.float32(2.0)``, ``np.ones(3)``, or arithmetic of those with
    numbers: a Python or numpy value, which ``tape.watch`` refuses (TF1 differentiated a new
    constant made from it: None)."""
    if isinstance(expr, ast.UnaryOp):
        return _numeric_module_value(expr.operand, module)
    if isinstance(expr, ast.BinOp):
        return all(_python_number(e) or _numeric_module_value(e, module) for e in (expr.left, expr.right))
    root = expr.func if isinstance(expr, ast.Call) else expr
    while isinstance(root, ast.Attribute):
        root = root.value
    if not isinstance(root, ast.Name):
        return False
    if isinstance(expr, ast.Call) and expr.func is root:
        if _binds(module, root.id):
            return False  # the module's own `abs`
        return root.id in NUMBER_CALLS or root.id in NUMBER_IF_ARGS_ARE and bool(expr.args) and all(
            _python_number(a) or _numeric_module_value(a, module) or isinstance(a, (ast.List, ast.Tuple)) and all(
                _python_number(e) or _numeric_module_value(e, module) for e in a.elts) for a in expr.args)
    if isinstance(expr, (ast.Call, ast.Attribute)):
        return import_aliases(module.body).get(root.id) in ("numpy", "math")
    return False


def _binds(module: ast.Module, name: str) -> bool:
    return any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name or
               isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) or
               isinstance(n, ast.alias) and (n.asname or n.name) == name for n in ast.walk(module))


def callers_under_override(project: Project, path: str, func: str) -> Optional[str]:
    """A call of ``func`` made inside a ``with`` block that may override gradients, if any:
    ``gradient_override_map``, a context manager named like an override (lucid's
    ``gradient_override_map``, ``relu_overrides()``), or a function of the caller's module
    that enters one."""
    sites = project.callers(path, func) or []
    for site in sites:
        tree = project.tree(site.path)
        if tree is None:
            continue
        defs = {n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for node in ast.walk(tree):
            if isinstance(node, ast.With) and any(_may_override(i.context_expr, defs) for i in node.items):
                end = getattr(node, "end_lineno", node.lineno)
                if node.lineno <= site.line <= end:
                    return _loc(site)
    return None


def _may_override(expr: ast.expr, defs: dict) -> bool:
    text = ast.unparse(expr)
    low = text.replace("GradientTape", "").lower()
    if "override" in low or "gradient" in low:
        return True
    fn = expr.func if isinstance(expr, ast.Call) else None
    return isinstance(fn, ast.Name) and fn.id in defs and "gradient_override_map" in ast.unparse(defs[fn.id])


def _loc(site: CallSite) -> str:
    import os

    return f"{os.path.basename(site.path)}:{site.line}"
