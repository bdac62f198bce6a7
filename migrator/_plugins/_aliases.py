"""Names that reach one object: a change made through one is a change of the others.

``alias = parts; alias.append(v)`` changes ``parts``; so does a closure that appends to
it, or ``list.append(parts, v)``.  The tape's region (``_grad_plan.item_for``) widens a
statement's writes with these, so that such a line lies in the backward slice.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from migrator._plugins._dataflow import Effects, _lambda_params, _names_in, effects, touches
from migrator.naming import used_names
from migrator.tfnames import dotted


#: builtin types whose methods, called on the type (``list.append(xs, v)``), mutate their
#: first argument; ``setattr``/``delattr`` mutate theirs
_TYPE_METHOD_OWNERS = frozenset({"list", "dict", "set", "bytearray", "object", "deque", "OrderedDict",
                                 "defaultdict"})


#: changing methods that take one argument when bound: with two, the first is the object
_ONE_ARG_CHANGERS = frozenset({"append", "extend", "update", "add", "remove", "discard"})
#: methods that hand back a part of their object (`bag.setdefault("k", [])`, `bag.values()`)
_PART_METHODS = frozenset({"setdefault", "get", "values", "items", "pop", "popitem", "__getitem__"})


def shared_names(module: cst.Module) -> dict:
    """:func:`shared_names_in` for every function of ``module`` (key ``None``: module level)."""
    out = {None: shared_names_in(module, None)}

    class Defs(cst.CSTVisitor):
        def visit_FunctionDef(self, node):
            out[node] = shared_names_in(module, node)

    module.visit(Defs())
    return out


def shared_names_in(module: cst.Module, fn) -> dict:
    """In one function (``None``: module level), name -> the other names that may reach the same
    object, so that a change through one is a change of the others: ``alias = parts``,
    ``parts = bag["parts"]``, ``ps = [a]``, ``for p in layers``.  A nested def (or lambda
    bound to a name) maps to the names of the function it uses: calling it may change them.

    Only ``fn``'s own statements are read (a nested def has its own table): the tape plugin
    asks for the functions that hold sites, not every function of a large file."""
    out: dict = {None: {}}

    def roots(expr) -> set:
        if isinstance(expr, (cst.Name, cst.Attribute, cst.Subscript, cst.Call)):
            # by root: an object an attribute holds may hold a reference back (a model the caller
            # gave the attack object to), so `model.predict(...)` may change any of `self`
            base = expr
            while isinstance(base, (cst.Attribute, cst.Subscript)) or isinstance(base, cst.Call) and \
                    isinstance(base.func, cst.Attribute) and base.func.attr.value in _PART_METHODS:
                base = base.func.value if isinstance(base, cst.Call) else base.value
            if isinstance(base, cst.Call) and isinstance(base.func, cst.Name) and base.func.value == "getattr" \
                    and base.args:
                return roots(base.args[0].value)
            return {base.value} if isinstance(base, cst.Name) else set()
        if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
            return {r for el in expr.elements for r in roots(el.value)}
        if isinstance(expr, cst.Dict):
            return {r for el in expr.elements if isinstance(el, cst.DictElement) for r in roots(el.value)}
        if isinstance(expr, cst.IfExp):
            return roots(expr.body) | roots(expr.orelse)
        if isinstance(expr, cst.BooleanOperation):
            return roots(expr.left) | roots(expr.right)
        if isinstance(expr, (cst.StarredElement, cst.NamedExpr)):
            return roots(expr.value)
        return set()

    class V(cst.CSTVisitor):
        def __init__(self) -> None:
            self.stack: list = [None]

        def _join(self, names: set) -> None:
            table = out[self.stack[-1]]
            group = set(names)
            for n in names:
                group |= table.get(n, set())
            for n in group:
                table[n] = group

        def _bind(self, targets, value) -> None:
            shared = roots(value)
            if shared:
                self._join(shared | {n for t in targets for n in _names_in(t) | roots(t)})

        def visit_Assign(self, node):
            self._bind([t.target for t in node.targets], node.value)

        def visit_AnnAssign(self, node):
            if node.value is not None:
                self._bind([node.target], node.value)

        def visit_NamedExpr(self, node):
            self._bind([node.target], node.value)

        def visit_For(self, node):
            self._bind([node.target], node.iter)

        def visit_CompFor(self, node):
            self._bind([node.target], node.iter)

        def visit_WithItem(self, node):
            if node.asname is not None:
                self._bind([node.asname.name], node.item)

        def visit_FunctionDef(self, node):
            if node is not fn:
                return False  # its own table
            own = {p.name.value for p in _lambda_params(node.params)}
            own |= {k.split(".")[0] for k in effects(node.body).writes}
            table: dict = {}
            for inner, name in _nested_scopes(node.body):
                used = (used_names(inner) - {name} - _own_names(inner)) & own  # a nested def, lambda or class
                if name is not None and used:
                    table[name] = used  # a call of the closure may change what it uses
            out[node] = table
            self.stack.append(node)

        def leave_FunctionDef(self, node):
            if node is fn:
                self.stack.pop()

    (module if fn is None else fn).visit(V())
    return {n: frozenset(v) for n, v in out[fn].items()}


#: methods that leave their object as it was (a method call elsewhere may change it)
_READING_METHODS = frozenset({"get", "items", "keys", "values", "copy", "index", "count", "format", "join",
                              "split", "strip", "replace", "lower", "upper", "startswith", "endswith",
                              "get_shape", "as_list", "is_fully_defined", "num_elements"})


def widen_mutations(fx: Effects, shared: dict, stmt: cst.CSTNode, modules: frozenset = frozenset()) -> None:
    """Add to ``fx.writes`` what a statement changes through another name: the objects it
    calls a changing method of (in a lambda or a comprehension too:
    ``map(lambda v: parts.append(v), xs)``), their aliases, and the names a closure it
    calls uses."""
    receivers = _receivers(stmt, modules)
    fx.writes |= receivers  # `getattr(parts, "append")(v)`, `lst.append(v)` under `for lst in ...`
    mutated = (fx.writes - fx.assigns) | receivers
    if isinstance(stmt, cst.SimpleStatementLine):  # `alias += [v]` extends the list alias names
        mutated |= {k for small in stmt.body if isinstance(small, cst.AugAssign)
                    for k in [dotted(small.target)] if k is not None}
    extra: set = set()
    for key in mutated:
        extra |= shared.get(key.split(".")[0], frozenset())
    called = None
    for name in fx.reads:  # a closure called here, or handed to a call that may call it; a method
        group = shared.get(name, frozenset())  # taken off an object (`app = parts.append; app(v)`)
        if name in group:
            called = _called(stmt) if called is None else called
            if name not in called:
                continue
        extra |= group
    fx.writes |= extra


def _receivers(stmt: cst.CSTNode, modules: frozenset) -> set:
    """Roots of the objects a statement calls a changing method of (not a module's function):
    ``lst.append(v)``, ``alias[0].append(v)``, ``getattr(parts, "append")(v)``."""
    out: set = set()

    class V(cst.CSTVisitor):
        def visit_Call(self, n):
            f = n.func
            if isinstance(f, cst.Attribute) and f.attr.value in _READING_METHODS:
                return
            base = f.value if isinstance(f, cst.Attribute) else f if isinstance(f, cst.Call) else None
            while isinstance(base, (cst.Subscript, cst.Attribute)):
                base = base.value
            if isinstance(base, cst.Call) and isinstance(base.func, cst.Name) and base.func.value == "getattr" \
                    and base.args and isinstance(base.args[0].value, cst.Name):
                out.add(base.args[0].value.value)
            elif isinstance(base, cst.Name) and base.value not in modules:
                out.add(base.value)

        def visit_FunctionDef(self, n):
            return False

    stmt.visit(V())
    return out


def _called(stmt: cst.CSTNode) -> set:
    names: set = set()

    class V(cst.CSTVisitor):
        def visit_Call(self, n):
            if isinstance(n.func, cst.Name):
                names.add(n.func.value)

    stmt.visit(V())
    return names


def _own_names(scope: cst.CSTNode) -> set:
    """Names a nested def or lambda binds itself: its parameters and the names its body binds
    (not declared ``nonlocal``/``global``). Python makes them local throughout the function, so
    the function around it never shares them: ``def f(X): X = reshape(X)`` leaves the outer
    ``X`` alone. A class body's names are not seen by its methods, so a class keeps none."""
    if isinstance(scope, cst.Lambda):
        return {p.name.value for p in _lambda_params(scope.params)}
    if not isinstance(scope, cst.FunctionDef):
        return set()
    fx = effects(scope.body)
    declared: set = set()

    class Declared(cst.CSTVisitor):
        def visit_Global(self, n):
            declared.update(a.name.value for a in n.names)

        def visit_Nonlocal(self, n):
            declared.update(a.name.value for a in n.names)

        def visit_FunctionDef(self, n):
            return False  # a deeper def's declarations are its own

        def visit_Lambda(self, n):
            return False

        def visit_ClassDef(self, n):
            return False

    scope.body.visit(Declared())
    bound = {w for w in fx.writes if "." not in w and w not in fx.mutates}
    return ({p.name.value for p in _lambda_params(scope.params)} | bound) - declared


def _nested_scopes(body: cst.CSTNode) -> list:
    """(def or lambda, the name it is bound to or None) for each scope nested in ``body``."""
    found: list = []

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, n):
            found.append((n, n.name.value))
            return False

        def visit_Assign(self, n):
            if isinstance(n.value, cst.Lambda) and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name):
                found.append((n.value, n.targets[0].target.value))
                return False
            return True

        def visit_Lambda(self, n):
            found.append((n, None))
            return False

        def visit_ClassDef(self, n):  # its methods may change the function's names
            found.append((n, n.name.value))
            return False

    body.visit(V())
    return found


def type_method_mutations(node: cst.CSTNode) -> set:
    """Keys a statement mutates through a builtin type's method or ``setattr``:
    ``list.append(parts, v)`` changes ``parts`` as ``parts.append(v)`` would."""
    out: set = set()

    class V(cst.CSTVisitor):
        def visit_Call(self, call):
            fn = call.func
            owner = fn.value.value if isinstance(fn, cst.Attribute) and isinstance(fn.value, cst.Name) else None
            unbound = isinstance(fn, cst.Attribute) and fn.attr.value in _ONE_ARG_CHANGERS and len(call.args) >= 2
            if (owner in _TYPE_METHOD_OWNERS or unbound  # `L = list; L.append(parts, v)`
                    or isinstance(fn, cst.Name) and fn.value in ("setattr", "delattr")) and call.args:
                key = dotted(call.args[0].value)
                if key is not None:
                    out.add(key)

        def visit_FunctionDef(self, n):
            return False

        def visit_Lambda(self, n):
            return False

    node.visit(V())
    return out


#: methods that change their object (`sess.run(...)` may or may not: it is not one of these)
CHANGING_METHODS = frozenset({"append", "extend", "insert", "update", "setdefault", "pop", "popitem", "remove", "clear",
                       "add", "discard", "sort", "reverse"})


def changes_itself(stmt, key: str) -> bool:
    """``stmt`` itself changes ``key`` in place: ``key[i] = v``, ``key.a = v``, ``key.append(v)``."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else \
            [small.target] if isinstance(small, (cst.AugAssign, cst.AnnAssign)) else []
        for t in targets:
            if isinstance(t, (cst.Subscript, cst.Attribute)) and dotted(t.value) == key:
                return True
        call = small.value if isinstance(small, cst.Expr) else None
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in CHANGING_METHODS \
                and dotted(call.func.value) == key:
            return True
    return False


def rebound_in_tape(flat: list, key: str, start: int, end: int, hooks_free: bool = False) -> bool:
    """``key`` is rebound by a plain assignment among items ``start..end-1`` (the tape's), and
    nothing after that changes it in place: ``self.model = self.build(s, a)`` runs the call and
    then binds ``self.model`` to what it returned, so what ``self.model`` held before the tape
    does not matter (the call's result is proved where calls are).  ``x += [v]`` keeps ``x``.
    ``hooks_free``: no project class defines an operator (see :func:`constant_container`)."""
    changed = False
    for j in range(end - 1, start - 1, -1):
        it = flat[j]
        if it.dead:
            continue
        if key in it.fx.assigns:
            stmt = it.orig
            small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else []
            names = {dotted(el.value) for t in targets for el in (t.elements if isinstance(t, (cst.Tuple, cst.List))
                                                                     else [cst.Element(t)])}
            # `D_W = []` in the tape, then `D_W.append(...)`: a new container of constants holds only
            # what the tape's own lines put in it (a GAN script's layer lists got a false TFG130)
            return key in names and (not changed or len(targets) == 1 and constant_container(small.value, hooks_free))
        if touches(it.fx.writes, {key}):
            changed = True  # changed in place (or maybe, through a call) after its last binding
    return False


def constant_container(value: Optional[cst.BaseExpression], hooks_free: bool) -> bool:
    """A new list, dict, set or tuple of literals, or such a list repeated (``[0.0] * n``, edward's
    per-sample log-probabilities): it holds no tensor and no other code holds it.  Repeating
    runs no project code only where no class defines an operator (``hooks_free``)."""
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Multiply):
        lit = value.left if isinstance(value.left, (cst.List, cst.Tuple)) else value.right
        other = value.right if lit is value.left else value.left
        return (hooks_free or isinstance(other, cst.Integer)) and constant_container(lit, hooks_free)
    if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
        return all(isinstance(el, cst.Element) and constant_container(el.value, hooks_free) for el in value.elements)
    if isinstance(value, cst.Dict):
        return all(isinstance(el, cst.DictElement) and constant_container(el.key, hooks_free) and
                   constant_container(el.value, hooks_free) for el in value.elements)
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        return isinstance(value.expression, (cst.Integer, cst.Float))
    return isinstance(value, (cst.Integer, cst.Float, cst.SimpleString)) or \
        isinstance(value, cst.Name) and value.value in ("None", "True", "False")
