"""Statement-level data flow for the tape rewrite: what a statement reads and writes.

Keys are dotted names (``x``, ``self.h``).  Everything here over-approximates:
a larger backward slice only makes a tape record more, never less.
"""
from __future__ import annotations

import builtins
from dataclasses import dataclass, field

import libcst as cst

from migrator.tfnames import descendants, dotted

BUILTINS = frozenset(dir(builtins))


@dataclass
class Effects:
    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)
    #: keys (re)bound by plain assignment-like statements (not def/class/import, not
    #: mutations such as ``x[i] = v`` or ``x.append(v)``, which write ``x`` but keep its identity)
    assigns: set[str] = field(default_factory=set)
    #: keys read as data (an argument or operand), not only as the function of a call
    data: set[str] = field(default_factory=set)
    #: keys changed in place (``x.append(v)``, ``x[i] = v``, ``del x[i]``), not bound
    mutates: set[str] = field(default_factory=set)


def touches(writes: set[str], keys: set[str]) -> bool:
    """Whether writing ``writes`` may change the value of one of ``keys``."""
    for w in writes:
        for k in keys:
            if w == k or k.startswith(w + ".") or w.startswith(k + "."):
                return True
    return False


#: methods of Python containers that change them in place
MUTATING_METHODS = frozenset({"append", "extend", "insert", "pop", "popitem", "remove", "clear", "update",
                              "setdefault", "add", "discard", "appendleft", "extendleft", "popleft", "sort",
                              "reverse", "__setitem__", "__delitem__", "__iadd__"})
_UNBOUND_MUTATORS = frozenset(f"{t}.{m}" for t in ("list", "dict", "set", "collections.deque")
                              for m in MUTATING_METHODS)


def _library_function(base: str) -> bool:
    """``tf.add(a, b)``, ``np.random.shuffle``: a function of TF or NumPy (or of one of their
    modules), not a method filling an object -- but ``tf.q.__iadd__([t])`` on a deque a project
    hung on ``tf`` is (an adversarial run: TF1 [7, 13], a tape [1, 1])."""
    parts = base.split(".")
    return parts[0] in ("tf", "tensorflow", "np", "numpy") and (
        len(parts) == 1 or len(parts) == 2 and parts[1] in _LIBRARY_MODULES)


_LIBRARY_MODULES = frozenset({"math", "sets", "strings", "random", "linalg", "nn", "char", "ma", "compat", "core"})


def _root(node: cst.BaseExpression):
    """The name an item or method-result chain starts from: ``c["l"][0]`` and
    ``c.get("l")`` -> ``c``; None for a call of a bare function (``f()[0]``)."""
    while True:
        if isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Call):
            if not isinstance(node.func, cst.Attribute):
                return None
            node = node.func.value
        elif isinstance(node, cst.Attribute):
            key = dotted(node)
            if key is not None:
                return key
            node = node.value
        elif isinstance(node, cst.Name):
            return node.value
        else:
            return None


class _Collector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.fx = Effects()
        self.mutated: set[str] = set()  # keys changed in place (a for loop's target: its iterable too)
        self.bound: set[str] = set()  # keys bound (assigned, def, class, import)
        self.depth = 0  # >0 inside a nested def/class/lambda: its bindings are not ours
        self.control = 0  # >0 in the test of an if/while: reads there are no data

    # -- writes ---------------------------------------------------------
    def _target(self, node: cst.BaseExpression, plain: bool = True) -> None:
        if isinstance(node, (cst.Tuple, cst.List)):
            for el in node.elements:
                self._target(el.value, plain)
            return
        if isinstance(node, cst.StarredElement):
            self._target(node.value, plain)
            return
        key = dotted(node)
        if key is not None:
            self._write(key, plain)
            if isinstance(node, cst.Attribute):
                base = dotted(node.value)
                if base is None:
                    node.value.visit(self)
            return
        if isinstance(node, cst.Subscript):
            base = dotted(node.value) or _root(node.value)
            if base is not None:
                self._write(base, False)  # x[i] = v, c["l"][0] = v, del c[k][0]: mutate c (no rebinding)
            if dotted(node.value) is None:
                node.value.visit(self)
            for el in node.slice:
                el.visit(self)
            return
        if isinstance(node, cst.Attribute):
            node.value.visit(self)
            return
        node.visit(self)

    def _write(self, key: str, plain: bool) -> None:
        if self.depth:
            return
        self.fx.writes.add(key)
        if plain:
            self.fx.assigns.add(key)
            self.bound.add(key)
        else:
            self.mutated.add(key)

    def _bind(self, key: str) -> None:
        """A def, class or import: binds ``key`` without being a plain assignment."""
        if not self.depth:
            self._write(key, False)
            self.mutated.discard(key)
            self.bound.add(key)

    # -- statements -----------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> bool:
        node.value.visit(self)
        for t in node.targets:
            self._target(t.target)
        return False

    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        node.value.visit(self)
        node.target.visit(self)  # also a read
        self._target(node.target)
        return False

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        if node.value is not None:
            node.value.visit(self)
            self._target(node.target)
        return False

    def visit_MatchAs(self, node: cst.MatchAs) -> None:  # `case ys:` binds `ys`
        if node.name is not None:
            self._write(node.name.value, True)

    def visit_MatchStar(self, node: cst.MatchStar) -> None:
        if node.name is not None:
            self._write(node.name.value, True)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> bool:
        node.value.visit(self)
        self._target(node.target)
        return False

    def visit_For(self, node: cst.For) -> bool:
        node.iter.visit(self)
        self._target(node.target)
        before = set(self.mutated)
        node.body.visit(self)
        if node.orelse is not None:
            node.orelse.visit(self)
        # `for name, layer in layers.items(): layer["out"] = h` changes what `layers` holds
        base = dotted(node.iter) or _root(node.iter)
        if base is not None and touches(self.mutated - before, _names_in(node.target)):
            self._write(base, False)
        return False

    def visit_WithItem(self, node: cst.WithItem) -> bool:
        node.item.visit(self)
        if node.asname is not None:
            self._target(node.asname.name)
        return False

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> bool:
        if node.type is not None:
            node.type.visit(self)
        if node.name is not None:
            self._target(node.name.name)
        node.body.visit(self)
        return False

    def visit_Del(self, node: cst.Del) -> bool:
        self._target(node.target)
        return False

    def visit_Import(self, node: cst.Import) -> bool:
        for a in node.names:
            self._bind(a.evaluated_alias or a.evaluated_name.split(".")[0])
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if not isinstance(node.names, cst.ImportStar):
            for a in node.names:
                self._bind(a.evaluated_alias or a.evaluated_name)
        return False

    def visit_Global(self, node: cst.Global) -> bool:
        return False

    def visit_Nonlocal(self, node: cst.Nonlocal) -> bool:
        return False

    def visit_Expr(self, node: cst.Expr) -> bool:
        # ``x.append(v)`` / ``self.layers.extend(...)``: a method call may mutate its object,
        # also through an item (``c["l"].append(v)``, ``c.get("l").append(v)``: it writes ``c``)
        value = node.value
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            base = dotted(value.func.value) or _root(value.func.value)
            if base is not None:
                self._write(base, False)  # mutates, never rebinds
        if isinstance(value, (cst.BinaryOperation, cst.Comparison, cst.UnaryOperation)):
            # `acc << t` as a statement is there for its effect: an operator method filling `acc`
            # (an adversarial run)
            for part in (getattr(value, "left", None), getattr(value, "expression", None)):
                base = (dotted(part) or _root(part)) if part is not None else None
                if base is not None:
                    self._write(base, False)
        return True

    # -- scopes: their names are bound here, their bodies read at call time --
    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._bind(node.name.value)
        self.depth += 1
        for part in (*node.decorators, node.params, node.returns):  # run where the def stands
            if part is not None:
                part.visit(self)
        # the body's own names (parameters, locals) are no reads of ours: a GAN script's plotting
        # function binding a local `z` made the module's `z` look read by the forward pass
        self._scoped(node.body, function_locals(node))
        self.depth -= 1
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._bind(node.name.value)
        self.depth += 1
        return True

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.depth -= 1

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self.depth += 1
        bound = {p.name.value for p in _lambda_params(node.params)}
        for p in _lambda_params(node.params):
            if p.default is not None:
                p.default.visit(self)
        self._scoped(node.body, bound)
        self.depth -= 1
        return False

    def _comprehension(self, node, parts) -> bool:
        """Names a comprehension binds are its own: reads of them are not reads of ours."""
        bound: set = set()
        for_in = node.for_in
        while for_in is not None:
            bound |= _names_in(for_in.target)
            for_in = for_in.inner_for_in
        inner = _Collector()
        inner.depth = self.depth
        for part in parts:
            part.visit(inner)
        self._merge(inner.fx, bound, inner)
        return False

    def _scoped(self, node: cst.CSTNode, bound: set) -> None:
        inner = _Collector()
        inner.depth = self.depth
        node.visit(inner)
        self._merge(inner.fx, bound, inner)

    def _merge(self, fx: "Effects", bound: set, inner: "_Collector" = None) -> None:
        own = lambda k: k.split(".")[0] in bound  # noqa: E731
        if inner is not None:  # `[acc.append(v) for v in ys]` changes acc in place (an adversarial run)
            self.mutated |= {k for k in inner.mutated if not own(k)}
            self.bound |= {k for k in inner.bound if not own(k)}
        self.fx.reads |= {k for k in fx.reads if not own(k)}
        self.fx.data |= {k for k in fx.data if not own(k)}
        self.fx.writes |= {k for k in fx.writes if not own(k)}
        self.fx.assigns |= {k for k in fx.assigns if not own(k)}

    def visit_ListComp(self, node: cst.ListComp) -> bool:
        return self._comprehension(node, [node.elt, node.for_in])

    def visit_SetComp(self, node: cst.SetComp) -> bool:
        return self._comprehension(node, [node.elt, node.for_in])

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> bool:
        return self._comprehension(node, [node.elt, node.for_in])

    def visit_DictComp(self, node: cst.DictComp) -> bool:
        return self._comprehension(node, [node.key, node.value, node.for_in])

    def visit_CompFor(self, node: cst.CompFor) -> bool:
        node.iter.visit(self)
        for cond in node.ifs:
            cond.visit(self)
        if node.inner_for_in is not None:
            node.inner_for_in.visit(self)
        return False

    def visit_Param(self, node: cst.Param) -> bool:
        if node.default is not None:
            node.default.visit(self)
        return False

    # -- reads ----------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> bool:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in MUTATING_METHODS:
            # `v = acc.pop(0)`, `cache.setdefault(k, v)` inside an expression mutate too
            base = dotted(func.value) or _root(func.value)
            if base is not None and not _library_function(base):
                self._write(base, False)
            if dotted(func) in _UNBOUND_MUTATORS and node.args:  # `list.append(c["l"], v)`
                first = dotted(node.args[0].value) or _root(node.args[0].value)
                if first is not None:
                    self._write(first, False)
        key = dotted(node.func)
        if key is not None:
            self.fx.reads.add(key)  # the callee: read, but not as data
        else:
            node.func.visit(self)
        for a in node.args:
            a.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> bool:
        if node.value in ("True", "False", "None"):
            return False  # literals, not names
        self.fx.reads.add(node.value)
        if not self.control:
            self.fx.data.add(node.value)
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        key = dotted(node)
        if key is not None:
            self.fx.reads.add(key)
            if not self.control:
                self.fx.data.add(key)
        else:
            node.value.visit(self)
        return False

    # -- tests: what an `if`/`while` reads picks a branch, and is never a tensor on a path
    # (TF1 raises on a tensor's truth): read, not data (a held-out attack's `if self.targeted:`
    # was taken for a value the tape might not have recorded)
    def visit_If(self, node: cst.If) -> bool:
        self._test(node.test)
        node.body.visit(self)
        if node.orelse is not None:
            node.orelse.visit(self)
        return False

    visit_While = visit_If

    def _test(self, test: cst.BaseExpression) -> None:
        plain = plain_test(test)
        self.control += plain
        test.visit(self)
        self.control -= plain

    def visit_Arg(self, node: cst.Arg) -> bool:
        value = node.value
        if isinstance(value, cst.Attribute) and value.attr.value in MUTATING_METHODS:
            # `sorted(ts, key=stash.append)`: a bound method handed on fills its object when called
            base = dotted(value.value) or _root(value.value)
            if base is not None:
                self._write(base, False)
        value.visit(self)
        return False


def plain_test(test: cst.BaseExpression) -> bool:
    """A test that only reads: names, attributes, literals, comparisons. A walrus binds its
    data; a call or an item may put a value somewhere (`if acc.append(old) is None:`, `if
    register(acc, old):` moved a tensor made before the tape into the forward pass: an
    adversarial run)."""
    return not any(isinstance(n, (cst.NamedExpr, cst.Call, cst.Subscript, cst.Lambda, cst.Await, cst.Yield,
                                  cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp))
                   for n in descendants(test))


def _lambda_params(params: cst.Parameters) -> list:
    out = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            out.append(star)
    return out


class _Locals(cst.CSTVisitor):
    """Names a function body binds at its own level (nested scopes and comprehensions are not
    entered: a name missed there stays a read, which only refuses more)."""

    def __init__(self) -> None:
        self.bound: set = set()
        self.declared: set = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.bound.add(node.name.value)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.bound.add(node.name.value)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ListComp(self, node) -> bool:
        return False

    visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_ListComp

    def visit_Global(self, node: cst.Global) -> bool:
        self.declared |= {n.name.value for n in node.names}
        return False

    visit_Nonlocal = visit_Global

    def visit_AssignTarget(self, node) -> bool:  # also `x: int = ...`, `x += ...`, `for x in ...`
        self.bound |= _names_in(node.target)
        return True

    visit_AnnAssign = visit_AugAssign = visit_For = visit_AssignTarget

    def visit_AsName(self, node: cst.AsName) -> bool:  # import/with/except ... as name
        self.bound |= _names_in(node.name)
        return True

    def visit_ImportAlias(self, node: cst.ImportAlias) -> bool:
        if node.asname is None:
            self.bound.add((dotted(node.name) or "").split(".")[0])
        return True


def function_locals(node: cst.FunctionDef) -> set:
    """The parameters and locals of a function (``global``/``nonlocal`` names are not)."""
    params = node.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            names.add(star.name.value)
    found = _Locals()
    node.body.visit(found)
    return (names | found.bound) - found.declared - {""}


def _names_in(target: cst.BaseExpression) -> set:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {n for el in target.elements for n in _names_in(el.value)}
    if isinstance(target, cst.StarredElement):
        return _names_in(target.value)
    return set()


def effects(node: cst.CSTNode) -> Effects:
    """Reads and writes of one statement (or expression)."""
    c = _Collector()
    node.visit(c)
    c.fx.mutates = c.mutated - c.bound
    return c.fx
