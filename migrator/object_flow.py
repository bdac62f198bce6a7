"""Where a value may flow in a project, for proofs about methods (:class:`ObjectFlow`).

A tape opened in ``def net_f(self, x, t)`` records what ``net_f`` computes, but not what
was computed before it from ``x`` or ``t`` and is read back through ``self`` (``self.u_pred``,
a cache) or handed in as another parameter.  Whether that can happen is a question about
the whole project, asked here flow-insensitively over every file's ``ast``:

* a *location* is an attribute name (``("attr", "weights")``: every object's ``.weights``,
  which is also every module global of that name), a function's variable or parameter, or
  a function's return value;
* an assignment, an argument passed to a project function, a ``return``, a ``for`` target,
  a container filled in place (``lst.append(v)``, ``d[k] = v``) adds a **value edge** from
  what the expression reads to where it goes;
* where two expressions may be *the same object* (``ws = self.weights``, an argument
  and its parameter, ``w = ws[0]``), their locations are **merged**, so that filling one
  fills the other.  Tensors are immutable, so TF and NumPy calls, arithmetic and dict keys
  make new values, never aliases.

A location is *tainted* by a set of seeds when a chain of edges leads to it.  Anything
the analysis cannot follow (``setattr``/``getattr`` with a computed name, ``__dict__``,
``exec``, ``globals()``) makes the whole flow unusable: :func:`flow_for` answers None, and
the proof falls back to an assumption.  Like the callers of a module function, the flow
sees the project's files and nothing else (docs/soundness.md).
"""
from __future__ import annotations

import ast
from collections import defaultdict
from typing import Iterable, Optional

from migrator.astwalk import import_aliases

#: attributes that are metadata, never a tensor computed earlier
META = frozenset({"shape", "dtype", "name", "ndim", "graph", "device"})
#: module roots whose calls make new values and change none of their arguments
_PURE_MODULES = frozenset({"tensorflow", "numpy", "math", "scipy"})
#: builtins that neither keep nor change their arguments
_PURE_BUILTINS = frozenset({
    "len", "print", "isinstance", "hasattr", "str", "repr", "format", "int", "float", "bool", "abs", "min", "max",
    "sum", "round", "range", "issubclass", "type", "id", "hash", "callable", "divmod", "pow", "open", "super"})
#: builtins whose result holds their arguments (a view or a copy of the same elements)
_VIEW_BUILTINS = frozenset({"list", "tuple", "zip", "enumerate", "sorted", "reversed", "iter", "next", "dict",
                            "set", "frozenset", "map", "filter"})
#: methods that change their receiver only (a list, dict or set filled in place)
_FILL_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "appendleft"})
#: names whose use means attributes or variables are reached by computed names
DYNAMIC = frozenset({"setattr", "delattr", "exec", "eval", "globals", "locals", "vars", "__dict__", "__setattr__",
                     "__getattribute__", "__import__", "compile"})

TOP = ("top",)  # values the flow cannot follow: always tainted


class _Builder(ast.NodeVisitor):
    """Adds one file's edges to an :class:`ObjectFlow`."""

    def __init__(self, flow: "ObjectFlow", path: str, tree: ast.Module) -> None:
        self.flow, self.path = flow, path
        self.pure = {n for n, full in import_aliases(tree.body).items() if full.split(".")[0] in _PURE_MODULES}
        self.scope: Optional[ast.AST] = None  # the outermost function (nested ones share its names)
        self.current: Optional[ast.AST] = None  # the innermost function (whose `return` this is)
        self.cls: Optional[ast.ClassDef] = None  # the class whose method `scope` is
        self.names: set = set()  # names local to that function
        self.globals: set = set()
        self.module_defs = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                          ast.ClassDef))} - {
            a for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) for a in
            ((x.asname or x.name).split(".")[0] for x in n.names)}

    # -- locations ------------------------------------------------------
    def var(self, name: str) -> tuple:
        if self.scope is not None and name in self.names and name not in self.globals:
            return ("var", id(self.scope), name)
        return ("attr", name)  # a module global is every module's `.name` too: `m.G = v` reaches it

    # -- expressions: (value sources, objects it may be) ------------------
    def expr(self, e: Optional[ast.AST]) -> tuple[set, set]:
        f = self.flow
        if e is None or isinstance(e, ast.Constant):
            return set(), set()
        if isinstance(e, ast.Name):
            if e.id in self.pure and e.id not in self.names:
                return set(), set()
            loc = self.var(e.id)
            return {loc}, {loc}
        if isinstance(e, ast.Attribute):
            base_val, _ = self.expr(e.value)
            if e.attr in META or self._module_attr(e.value):
                return base_val if e.attr not in META else set(), set()
            if e.attr in DYNAMIC:
                f.dynamic = True
            loc = ("attr", e.attr)
            return {loc} | base_val, {loc}
        if isinstance(e, ast.Subscript):
            val, ids = self.expr(e.value)
            return val | self.expr(e.slice)[0], ids
        if isinstance(e, ast.Call):
            return self.call(e)
        if isinstance(e, (ast.List, ast.Tuple, ast.Set)):
            return self._union(e.elts, ids=True)
        if isinstance(e, ast.Dict):
            kv, _ = self._union([k for k in e.keys if k is not None])  # keys are hashable: never changed through it
            vv, vi = self._union(e.values, ids=True)
            return kv | vv, vi
        if isinstance(e, (ast.BoolOp,)):
            return self._union(e.values, ids=True)
        if isinstance(e, ast.IfExp):
            self.expr(e.test)
            return self._union([e.body, e.orelse], ids=True)
        if isinstance(e, ast.Starred):
            return self.expr(e.value)
        if isinstance(e, ast.NamedExpr):
            val, ids = self.expr(e.value)
            self.store(e.target, val, ids)
            return val, ids
        if isinstance(e, ast.Lambda):
            self.args(e.args)
            for p in params_of(e):  # called by code the flow does not follow: anything may come in
                f.assign({TOP}, set(), self.var(p))
            return self.expr(e.body)  # calling it later reads what its body reads
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            for g in e.generators:
                val, ids = self.expr(g.iter)
                self.store(g.target, val, ids)
                for cond in g.ifs:
                    self.expr(cond)
            parts = [e.key, e.value] if isinstance(e, ast.DictComp) else [e.elt]
            return self._union(parts, ids=True)
        if isinstance(e, (ast.Await, ast.Yield, ast.YieldFrom)):
            val, ids = self.expr(e.value)
            if isinstance(e, (ast.Yield, ast.YieldFrom)) and self.current is not None:
                f.assign(val, ids, ("ret", id(self.current)))
            return val, ids
        # arithmetic, comparisons, f-strings, slices: a new value from the parts
        val: set = set()
        for child in ast.iter_child_nodes(e):
            if isinstance(child, ast.expr):
                val |= self.expr(child)[0]
        return val, set()

    def _union(self, parts: Iterable, ids: bool = False) -> tuple[set, set]:
        val, same = set(), set()
        for p in parts:
            v, i = self.expr(p)
            val |= v
            same |= i if ids else set()
        return val, same

    def _module_attr(self, e: ast.AST) -> bool:
        while isinstance(e, ast.Attribute):
            e = e.value
        return isinstance(e, ast.Name) and e.id in self.pure and e.id not in self.names

    # -- calls ------------------------------------------------------------
    def call(self, c: ast.Call) -> tuple[set, set]:
        f = self.flow
        fn = c.func
        args = [(a.value if isinstance(a, ast.Starred) else a, isinstance(a, ast.Starred)) for a in c.args]
        kws = [k.arg for k in c.keywords]
        evaluated = [self.expr(a) for a, _ in args] + [self.expr(k.value) for k in c.keywords]
        f.calls[id(c)] = evaluated
        arg_val = set().union(*(v for v, _ in evaluated)) if evaluated else set()
        arg_ids = set().union(*(i for _, i in evaluated)) if evaluated else set()
        name = fn.id if isinstance(fn, ast.Name) and fn.id not in self.names else None
        if name == "getattr" and len(c.args) >= 2 and isinstance(c.args[1], ast.Constant):
            f.value_refs.add(str(c.args[1].value))
            loc = ("attr", str(c.args[1].value))
            return {loc} | evaluated[0][0], {loc}
        if name in DYNAMIC or name in ("getattr", "hasattr") and not (c.args and self._module_attr(c.args[0])):
            f.dynamic = True  # an attribute named at run time
        if self._module_attr(fn) or name in _PURE_BUILTINS:
            return arg_val, set()  # tf.concat(...), np.dot(...), len(...): a new value
        if name in _VIEW_BUILTINS:
            return arg_val, arg_ids
        recv = fn.value if isinstance(fn, ast.Attribute) else None
        if isinstance(recv, ast.Call) and isinstance(recv.func, ast.Name) and recv.func.id == "super" \
                and self.scope is not None and self.cls is not None and params_of(self.scope):
            recv = ast.Name(id=params_of(self.scope)[0], ctx=ast.Load())  # `super().m(...)` runs on self
        recv_val, recv_ids = self.expr(recv) if recv is not None else (set(), set())
        fn_val = self.expr(fn)[0] if recv is None else set()
        out_val, out_ids = set(), set()
        if recv is not None:
            targets = [(d, True) for d in f.methods.get(fn.attr, [])]
            if isinstance(recv, ast.Name) and recv.id in f.classes:
                targets = []  # `Class.m(obj, ...)`: the arguments shift; the call below covers it
            only = bool(targets) and self._own_method(recv, fn.attr)
        else:
            called = fn.id if isinstance(fn, ast.Name) else None
            targets = [(d, False) for d in f.functions.get(called, [])] if called else []
            inits = [(d, True) for d in f.inits.get(name, [])] if name else []
            targets += inits
            # only this module's own function or class runs (an import of the same name may not)
            only = bool(targets) and name in self.module_defs and (name not in f.classes or len(inits) == len(
                f.classes_named(name)))
            out_ids |= {("var", id(d), params_of(d)[0]) for d, _ in inits if params_of(d)}
        for d, bound in targets:
            self.bind(d, bound, recv_val, recv_ids, args, kws, evaluated)
            if not (bound and d.name == "__init__"):
                out_val.add(("ret", id(d)))
                out_ids.add(("ret", id(d)))
        out_val |= out_ids
        if only:
            return out_val, out_ids
        # a call the flow cannot follow: its result may be any argument, and, unless it only
        # fills its receiver, it may store any argument in any other
        if recv is not None and fn.attr in _FILL_METHODS:
            f.fill(arg_val | arg_ids, recv_ids)
            return out_val | arg_val | recv_val, out_ids | recv_ids | arg_ids
        everything = arg_val | arg_ids | recv_val | recv_ids | fn_val
        f.fill(everything, arg_ids | recv_ids)
        return out_val | everything, out_ids | arg_ids | recv_ids

    def _own_method(self, recv: ast.AST, meth: str) -> bool:
        """``self.meth(...)`` where this class (or a project base of it) defines ``meth``: no
        library method can run instead (a subclass's can: it is among the targets too)."""
        if self.cls is None or self.scope is None or not isinstance(recv, ast.Name):
            return False
        params = params_of(self.scope)
        if not params or recv.id != params[0] or recv.id in self.flow.rebound.get(id(self.scope), ()):
            return False
        todo, seen = [self.cls], set()
        while todo:
            cls = todo.pop()
            if id(cls) in seen:
                continue
            seen.add(id(cls))
            if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == meth for n in cls.body):
                return True
            for b in cls.bases:
                todo += self.flow.classes_named(b.id) if isinstance(b, ast.Name) else []
        return False

    def bind(self, d: ast.AST, bound: bool, recv_val, recv_ids, args, kws, evaluated) -> None:
        f = self.flow
        a = d.args
        params = [p.arg for p in a.posonlyargs + a.args]
        scope = id(d)
        if bound and params:
            f.assign(recv_val, recv_ids, ("var", scope, params[0]))
            params = params[1:]
        named = params + [k.arg for k in a.kwonlyargs]
        every = [("var", scope, p) for p in named + [x.arg for x in (a.vararg, a.kwarg) if x is not None]]
        for i, ((_expr, starred), (val, ids)) in enumerate(zip(args, evaluated)):
            for loc in (every if starred or i >= len(params) else [("var", scope, params[i])]):
                f.assign(val, ids, loc)
        for kw, (val, ids) in zip(kws, evaluated[len(args):]):
            for loc in (every if kw is None or kw not in named else [("var", scope, kw)]):
                f.assign(val, ids, loc)

    def args(self, a: ast.arguments) -> None:
        for d in a.defaults + [x for x in a.kw_defaults if x is not None]:
            self.expr(d)

    # -- statements -------------------------------------------------------
    def store(self, t: ast.AST, val: set, ids: set) -> None:
        f = self.flow
        if isinstance(t, ast.Name):
            f.assign(val, ids, self.var(t.id))
        elif isinstance(t, ast.Attribute):
            self.expr(t.value)
            if t.attr in DYNAMIC:
                f.dynamic = True
            f.assign(val, ids, ("attr", t.attr))
        elif isinstance(t, ast.Subscript):
            _, obj = self.expr(t.value)
            self.expr(t.slice)
            f.fill(val | ids, obj)  # the container now holds the value
        elif isinstance(t, (ast.Tuple, ast.List)):
            for el in t.elts:
                self.store(el, val, ids)
        elif isinstance(t, ast.Starred):
            self.store(t.value, val, ids)

    def visit_FunctionDef(self, node) -> None:
        f = self.flow
        for dec in node.decorator_list:
            self.expr(dec)
        self.args(node.args)
        positional = node.args.posonlyargs + node.args.args
        for p, dflt in zip(reversed(positional), reversed(node.args.defaults)):
            f.assign(*self.expr(dflt), ("var", id(node), p.arg))
        for p, dflt in zip(node.args.kwonlyargs, node.args.kw_defaults):
            if dflt is not None:
                f.assign(*self.expr(dflt), ("var", id(node), p.arg))
        outer = (self.scope, self.current, self.names, self.globals, self.cls)
        if self.scope is None:
            self.scope, self.globals, self.names = node, set(), local_names(node)
            f.rebound[id(node)] = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                                   and isinstance(n.ctx, (ast.Store, ast.Del))}
        else:  # nested: shares the outer function's names; its parameters are its own too
            for p in params_of(node):
                f.alias(("var", id(node), p), self.var(p))
        self.current = node
        for stmt in node.body:
            self.visit(stmt)
        self.scope, self.current, self.names, self.globals, self.cls = outer
        ret = ("ret", id(node))
        f.assign({ret}, {ret}, self.var(node.name) if self.scope is not None else ("attr", node.name))

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node) -> None:
        for e in node.bases + [k.value for k in node.keywords] + node.decorator_list:
            self.expr(e)
        outer = self.cls
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and self.scope is None:
                self.cls = node
                self.visit(stmt)
                self.cls = outer
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and self.scope is None:
                if stmt.value is not None:
                    val, ids = self.expr(stmt.value)
                    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                    for t in targets:  # a class attribute: `.name` of every instance
                        if isinstance(t, ast.Name):
                            self.flow.assign(val, ids, ("attr", t.id))
                        else:
                            self.store(t, val, ids)
            else:
                self.visit(stmt)
        self.cls = outer

    def visit_Return(self, node) -> None:
        val, ids = self.expr(node.value)
        if self.current is not None:
            self.flow.assign(val, ids, ("ret", id(self.current)))

    def visit_Assign(self, node) -> None:
        val, ids = self.expr(node.value)
        for t in node.targets:
            self.store(t, val, ids)

    def visit_AnnAssign(self, node) -> None:
        if node.value is not None:
            val, ids = self.expr(node.value)
            self.store(node.target, val, ids)

    def visit_AugAssign(self, node) -> None:
        val, ids = self.expr(node.value)
        tval, tids = self.expr(node.target)
        self.store(node.target, val | tval, set())
        self.flow.fill(val | ids, tids)  # `lst += [v]` fills the list in place

    def visit_For(self, node) -> None:
        val, ids = self.expr(node.iter)
        self.store(node.target, val, ids)
        for stmt in node.body + node.orelse:
            self.visit(stmt)

    visit_AsyncFor = visit_For

    def visit_With(self, node) -> None:
        for item in node.items:
            val, ids = self.expr(item.context_expr)
            if item.optional_vars is not None:
                self.store(item.optional_vars, val, ids)
        for stmt in node.body:
            self.visit(stmt)

    visit_AsyncWith = visit_With

    def visit_Global(self, node) -> None:
        self.globals |= set(node.names)

    def visit_Nonlocal(self, node) -> None:
        pass  # nested functions share the outer function's names already

    def visit_Import(self, node) -> None:
        pass  # a module object: no tensor

    def visit_ImportFrom(self, node) -> None:
        pass  # a project module's `X` is every module's `X` (("attr", X)) already

    def visit_Expr(self, node) -> None:
        self.expr(node.value)

    def generic_visit(self, node) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                self.visit(child)
            elif isinstance(child, ast.expr):
                self.expr(child)
            elif isinstance(child, ast.ExceptHandler):
                for stmt in child.body:
                    self.visit(stmt)
            elif isinstance(child, (ast.match_case,)):
                self.flow.dynamic = True  # captures bind names the flow does not follow


def params_of(fn) -> list:
    a = fn.args
    return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs + ([a.vararg] if a.vararg else [])
            + ([a.kwarg] if a.kwarg else [])]


def local_names(fn) -> set:
    """Every name a function binds, nested functions, lambdas and comprehensions included."""
    out = set(params_of(fn))
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not fn:
            out.add(n.name)
            if not isinstance(n, ast.ClassDef):
                out |= set(params_of(n))
        elif isinstance(n, ast.Lambda):
            out |= {p.arg for p in n.args.args + n.args.posonlyargs + n.args.kwonlyargs}
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in n.names}
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
    return out


class ObjectFlow:
    """The project's value edges and may-alias groups (built once per project, see
    :func:`flow_for`), and the questions the tape proof asks of them."""

    def __init__(self) -> None:
        self.parent: dict = {}
        self.edges: dict = defaultdict(set)  # location -> locations its value flows to
        self.dynamic = False
        self.calls: dict = {}  # id(ast.Call) -> [(value sources, objects)] per argument
        self.value_refs: set = set()  # names and attributes read other than as a call's callee
        self.rebound: dict = {}  # id(function) -> names it rebinds
        self.functions: dict = defaultdict(list)  # name -> module-level defs
        self.methods: dict = defaultdict(list)  # name -> method defs (any class)
        self.inits: dict = defaultdict(list)  # class name -> its __init__ defs
        self.classes: dict = defaultdict(list)  # class name -> ClassDefs
        self.owner: dict = {}  # id(method def) -> (path, ClassDef)
        self.sites: dict = defaultdict(list)  # method name -> [(path, call, function holding it)]
        self._taint: dict = {}
        self.pure: dict = {}  # path -> names bound to TF, NumPy, math, SciPy there

    # -- building -----------------------------------------------------------
    def find(self, loc: tuple) -> tuple:
        parent = self.parent
        root = parent.setdefault(loc, loc)
        while root != parent[root]:
            root = parent[root]
        while parent[loc] != root:
            parent[loc], loc = root, parent[loc]
        return root

    def alias(self, a: tuple, b: tuple) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb
            self.edges[rb] |= self.edges.pop(ra, set())

    def assign(self, val: set, ids: set, dst: tuple) -> None:
        """``dst = value``: the value flows there, and ``dst`` may be the object it is."""
        for v in val:
            self.edges[self.find(v)].add(dst)
        for i in ids:
            self.alias(i, dst)

    def fill(self, val: set, objs: set) -> None:
        """Objects ``objs`` now hold (or may hold) what ``val`` reads."""
        for v in val:
            for o in objs:
                self.edges[self.find(v)].add(o)

    def classes_named(self, name: str) -> list:
        return self.classes.get(name, [])

    def add_file(self, path: str, tree: ast.Module) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                self.classes[node.name].append(node)
                for fn in node.body:
                    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.methods[fn.name].append(fn)
                        self.owner[id(fn)] = (path, node)
                        if fn.name == "__init__":
                            self.inits[node.name].append(fn)
        methods = {id(fn) for defs in self.methods.values() for fn in defs}
        callees = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                callees.add(id(node.func))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(node) not in methods:
                self.functions[node.name].append(node)  # module-level or nested: called by name
        for fn in ast.walk(tree):  # which method each call of `.m(...)` sits in (the callers of m)
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module, ast.ClassDef)):
                for node in _own_nodes(fn):
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                        self.sites[node.func.attr].append((path, node, fn))
                    elif isinstance(node, (ast.Name, ast.Attribute)) and id(node) not in callees \
                            and isinstance(node.ctx, ast.Load):
                        self.value_refs.add(node.id if isinstance(node, ast.Name) else node.attr)
                    elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                        self.value_refs.add(node.value)  # `getattr(obj, "net_f")`, `"net_f"` handed elsewhere
        builder = _Builder(self, path, tree)
        self.pure[path] = builder.pure
        builder.visit(tree)

    def finish(self) -> None:
        """Parameters of functions called from where the flow cannot see (a function used as a
        value, a decorated one, a lambda) may receive anything."""
        for table in (self.functions, self.methods):
            for name, defs in table.items():
                for d in defs:
                    if name in self.value_refs or d.decorator_list:
                        params = params_of(d)
                        keep_self = table is self.methods and all(
                            isinstance(x, ast.Name) and x.id == "property" or isinstance(x, ast.Attribute)
                            and x.attr in ("setter", "getter") for x in d.decorator_list)
                        for p in params[1:] if keep_self else params:
                            self.assign({TOP}, set(), ("var", id(d), p))

    # -- questions ------------------------------------------------------------
    def tainted(self, seeds: Iterable[tuple]) -> frozenset:
        """Every group a value of ``seeds`` (or one the flow cannot follow) may reach."""
        start = frozenset(self.find(s) for s in seeds) | {self.find(TOP)}
        if start not in self._taint:
            seen, todo = set(start), list(start)
            while todo:
                for nxt in self.edges.get(todo.pop(), ()):
                    r = self.find(nxt)
                    if r not in seen:
                        seen.add(r)
                        todo.append(r)
            self._taint[start] = frozenset(seen)
        return self._taint[start]

    def clean(self, locs: Iterable[tuple], seeds: Iterable[tuple]) -> bool:
        bad = self.tainted(seeds)
        return not any(self.find(loc) in bad for loc in locs)

    def method_callers(self, fn: ast.AST) -> Optional[list]:
        """Every call that may run method ``fn``: each ``X.name(...)`` in the project, whatever
        ``X`` is.  None when ``name`` is also used other than as a callee (``f = self.m``,
        ``getattr(obj, "m")``, ``partial(self.m)``), or for ``__init__`` (``cls(...)``, a
        subclass's constructor)."""
        if fn.name.startswith("__") or fn.name in self.value_refs or fn.decorator_list:
            return None
        return list(self.sites.get(fn.name, []))

    def arg_sources(self, call: ast.Call, index: int) -> tuple[set, set]:
        return self.calls[id(call)][index]


def _own_nodes(scope: ast.AST):
    """The nodes of a function (or module), not descending into nested functions or classes
    (they are scopes of their own; a lambda's body is the function's)."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def flow_for(project) -> Optional[ObjectFlow]:
    """The project's flow, built once; None when the project cannot be scanned or its code
    reaches attributes by computed names."""
    cached = getattr(project, "_object_flow", False)
    if cached is not False:
        return cached
    files = project.files()
    flow: Optional[ObjectFlow] = None
    if files is not None:
        flow = ObjectFlow()
        for p in files:
            tree = project.tree(p)
            if tree is not None:
                flow.add_file(p, tree)
            elif p in project.originals:
                flow = None
                break
        if flow is not None:
            flow.finish()
            if flow.dynamic:
                flow = None
    project._object_flow = flow
    return flow
