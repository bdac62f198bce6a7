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

from migrator._flow_edges import FileEdges
from migrator._flow_model import (
    ANY_ATTR, ANY_OBJECT, META, TOP, VARIABLES, dunder_kind, iteration_arguments, local_names, params_of,
)

VIEW_ARGS = ("view args",)  # arguments of a call through a computed name: any function may get them

__all__ = ["META", "ObjectFlow", "flow_for", "local_names", "params_of"]


class ObjectFlow:
    """The project's value edges and may-alias groups (built once per project, see
    :func:`flow_for`), and the questions the tape proof asks of them."""

    def __init__(self, project=None) -> None:
        self.project = project
        self.class_paths: dict = defaultdict(set)  # class name -> files defining it
        self.attr_stores: set = set()  # names assigned as an attribute somewhere (`m.x = ...`)
        self.module_attrs: set = set()  # `m.G` of an imported module `m` (or `sys.modules[k].G`)
        self.attr_values: dict = defaultdict(list)  # attribute -> values of `X.attr = value` (None: other stores)
        self.parent: dict = {}
        self.elems: dict = {}  # group -> the location of what its objects hold
        self.pending: dict = {}  # group -> items displays put in it, not yet taken out as one
        self.variables: list = []  # the locations of variables the program makes
        self.variable_lookups = False  # some code looks variables up (`tf.trainable_variables()`)
        self.rebound_methods: set = set()  # bound in a class other than by one plain def in its body
        self.views: list = []  # objects read by computed names (`getattr(obj, name)`)
        self.unknown_calls: list = []  # (what the callee may be, what the arguments read) of calls not followed
        self.puts: list = []  # (objects, what was put in them): a namespace view filled is a computed write
        self.edges: dict = defaultdict(set)  # location -> locations its value flows to
        self.dynamic = False
        self.calls: dict = {}  # id(ast.Call) -> [(value sources, objects)] per argument
        self.arg_reads: dict = {}  # id(ast.Call) -> what each argument is made of (None: its whole value)
        self.value_refs: set = set()  # names and attributes read other than as a call's callee or argument
        self.callback_refs: set = set()  # names and attributes handed to `map`, `filter`, `sorted`, ...
        self.rebound: dict = {}  # id(function) -> names it rebinds
        self.functions: dict = defaultdict(list)  # name -> module-level defs
        self.methods: dict = defaultdict(list)  # name -> method defs (any class)
        self.inits: dict = defaultdict(list)  # class name -> its __init__ defs
        self.classes: dict = defaultdict(list)  # class name -> ClassDefs
        self.owner: dict = {}  # id(method def) -> (path, ClassDef)
        self.function_paths: dict = {}  # id(function def) -> path
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
            self.pending[rb] = self.pending.get(rb, []) + self.pending.pop(ra, [])
            ea, eb = self.elems.pop(ra, None), self.elems.get(rb)
            if ea is not None and eb is not None:
                self.alias(ea, eb)  # the same object holds the same things
            elif ea is not None:
                self.elems[rb] = ea
            if self.find(rb) in self.elems:
                self.elem(rb)  # items held by a display that is now this object

    def elem(self, loc: tuple) -> tuple:
        """What the object at ``loc`` holds (a list's items, a dict's values, an object's
        contents): one location per object, whose values are the object's too."""
        root = self.find(loc)
        if root not in self.elems:
            self.elems[root] = ("elem", root)
            self.edges[self.find(self.elems[root])].add(root)
        item = self.elems[root]
        for val, ids in self.pending.pop(root, []):
            self.assign(val, ids, item)
        return self.elems[self.find(loc)] if self.find(loc) in self.elems else item

    def hold(self, box: tuple, val: set, ids: set) -> None:
        """The object ``box`` holds a value (a display's item, `lst.append(v)`, an argument a
        library method may keep).  What it holds becomes one object only when something takes
        it out (:meth:`elem`): `tf.concat([x, t], 1)` and `ax.plot(x, y)` read `x` and `t`, or
        `x` and `y`, without making them one."""
        for v in val | ids:
            self.edges[self.find(v)].add(box)
        self.pending.setdefault(self.find(box), []).append((val, ids))
        if self.find(box) in self.elems:
            self.elem(box)

    def put(self, val: set, ids: set, objs: set) -> None:
        """Objects ``objs`` now hold the value (``lst.append(v)``, ``d[k] = v``)."""
        views = (self.find(ANY_OBJECT), self.find(self.elem(ANY_OBJECT))) if objs else ()
        real = {w for w in val | ids if w not in (TOP, ANY_OBJECT) and self.find(w) not in views}
        if real:
            self.puts.append((frozenset(objs), real))
        for o in list(objs):
            self.hold(o, val, ids)

    def assign(self, val: set, ids: set, dst: tuple) -> None:
        """``dst = value``: the value flows there, and ``dst`` may be the object it is."""
        for v in val:
            self.edges[self.find(v)].add(dst)
        for i in ids:
            self.alias(i, dst)


    def classes_named(self, name: str) -> list:
        return self.classes.get(name, [])

    def dispatch(self, cls: ast.ClassDef, meth: str) -> list:
        """The defs ``self.meth(...)`` may run in a method of ``cls``: ``cls``'s own or a
        project base's (any of them, by name), or an override in a project subclass."""
        found = self.up(cls, meth)
        for subs in self.classes.values():  # down: every class that may derive from cls, and its other bases
            for sub in subs:
                if sub is not cls and self._may_derive(sub, cls, set()):
                    found += [d for d in self.up(sub, meth) if d not in found]
        return found

    def up(self, cls: ast.ClassDef, meth: str, names_only: bool = False) -> list:
        """``meth``'s defs in ``cls`` and every project class it names as a base (`class Sub(Mixin,
        PINN)`: Mixin's comes first in Sub's MRO); ``names_only``: through bare-name bases only
        (`lib.Model` may be a library's class that shares a project class's name)."""
        found, todo, seen = [], [cls], set()
        while todo:
            c = todo.pop()
            if id(c) in seen:
                continue
            seen.add(id(c))
            found += [n for n in c.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == meth]
            todo += [b for base in c.bases if isinstance(base, ast.Name) or not names_only
                     for b in self.classes_named(_base_name(base))]
        return found

    def _may_derive(self, sub: ast.ClassDef, cls: ast.ClassDef, seen: set) -> bool:
        """``sub`` may be a subclass of ``cls``: a base named like it, a project class that may
        derive from it, or a bare name that is no project class (`from m import PINN as Base`)."""
        if id(sub) in seen:
            return False
        seen.add(id(sub))
        for b in sub.bases:
            name = _base_name(b)
            if name == cls.name:
                return True
            if isinstance(b, ast.Name) and name != "object":
                bases = self.classes_named(name)
                if not bases or any(c is cls or self._may_derive(c, cls, seen) for c in bases):
                    return True
        return False

    def add_file(self, path: str, tree: ast.Module) -> None:
        """Index the file's classes and functions (every file first: a call binds to them)."""
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                self.classes[node.name].append(node)
                self.class_paths[node.name].add(path)
                self.rebound_methods |= _rebound_in_class(node)
                if node.keywords or any(isinstance(n, ast.FunctionDef) and n.name in ("__init_subclass__", "__new__",
                                                                                        "__set_name__")
                                        for n in node.body):
                    self.dynamic = True  # a metaclass or a hook may rewrite any class's methods
                for fn in node.body:
                    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.methods[fn.name].append(fn)
                        self.owner[id(fn)] = (path, node)
                        if fn.name == "__init__":
                            self.inits[node.name].append(fn)
        for body in [tree.body] + [n.body for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]:
            for stmt in body:  # a class attribute, or a module global: `.name` too
                if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                    for t in targets:
                        for n in ast.walk(t):
                            if isinstance(n, ast.Name):
                                self.attr_values[n.id].append(stmt.value if isinstance(stmt, ast.Assign) and t is n
                                                              and len(targets) == 1 else None)
        # `m.G` with `m` an imported module reads or writes m's global `G`
        imported = {(a.asname or a.name).split(".")[0] for n in ast.walk(tree)
                    if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
        self.module_attrs |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and (
            isinstance(n.value, ast.Name) and n.value.id in imported or isinstance(n.value, ast.Subscript))}
        # `mod.G = v` with `mod` any object but a method's `self`: it may be a module
        selves = {id(a) for d in ast.walk(tree) if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))
                  and d.args.args for a in ast.walk(d) if isinstance(a, ast.Name) and a.id == d.args.args[0].arg}
        self.module_attrs |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(
            n.ctx, ast.Store) and id(n.value) not in selves}
        methods = {id(fn) for defs in self.methods.values() for fn in defs}
        simple = {id(n.targets[0]) for n in ast.walk(tree) if isinstance(n, ast.Assign) and len(n.targets) == 1}
        callees = set()
        arguments = iteration_arguments(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self.attr_stores.add(node.attr)
                if id(node) not in simple:
                    self.attr_values[node.attr].append(None)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute):
                self.attr_values[node.targets[0].attr].append(node.value)
            elif isinstance(node, ast.Call):
                callees.add(id(node.func))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(node) not in methods:
                self.functions[node.name].append(node)  # module-level or nested: called by name
                self.function_paths[id(node)] = path
        for fn in ast.walk(tree):  # which method each call of `.m(...)` sits in (the callers of m)
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module, ast.ClassDef)):
                for node in _own_nodes(fn):
                    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                        self.sites[node.func.attr].append((path, node, fn))
                    elif isinstance(node, (ast.Name, ast.Attribute)) and id(node) not in callees \
                            and isinstance(node.ctx, ast.Load) and not _of_module(node, imported):
                        ref = node.id if isinstance(node, ast.Name) else node.attr
                        # handed to `map`, `sorted`, ...: called with what the other arguments hold
                        (self.callback_refs if id(node) in arguments else self.value_refs).add(ref)

    def add_edges(self, path: str, tree: ast.Module) -> None:
        builder = FileEdges(self, path, tree)
        self.pure[path] = builder.pure
        builder.visit(tree)

    def finish(self) -> None:
        """Parameters of functions called from where the flow cannot see (a function used as a
        value, a decorated one, a lambda) may receive anything; a namespace view filled with a
        value (`globals()[k] = v`, `d = vars(obj); d[k] = v`) writes attributes no one can name."""
        for name in self.module_attrs:
            self.alias(("global", name), ("attr", name))
        for loc in list(self.parent):  # what a view by computed name reads
            if loc[0] in ("attr", "global"):
                self.edges[self.find(loc)].add(ANY_ATTR)
        # `getattr(self, "net_" + kind)(a, b)`: when the object may be a project instance (or
        # unknown: `globals()`), any function may be the one called with these arguments
        instances = {self.find(("var", id(d), params_of(d)[0])) for defs in self.methods.values() for d in defs
                     if params_of(d)} | {self.find(TOP)}
        views = self.find(ANY_OBJECT)
        if any(self.find(i) in instances for ids in self.views for i in ids):
            for callee, args in self.unknown_calls:
                if any(self.find(c) == views for c in callee):
                    for a in args:
                        self.edges[self.find(a)].add(VIEW_ARGS)
        for table in (self.functions, self.methods):
            for defs in table.values():
                for d in defs:
                    for p in params_of(d)[1 if table is self.methods else 0:]:
                        self.edges[self.find(VIEW_ARGS)].add(("var", id(d), p))
        views = self.find(ANY_OBJECT)
        inside = {views, self.find(self.elem(ANY_OBJECT))}
        for objs, what in self.puts:
            if any(self.find(o) in inside for o in objs):
                self.dynamic = True
                break
        for table in (self.functions, self.methods):
            for name, defs in table.items():
                for d in defs:
                    kind = dunder_kind(name) if table is self.methods else None
                    if kind:  # Python calls it from `obj[k]`, `for e in obj`, `a + b`, ...
                        self.edges[self.find(("ret", id(d)))].add(("dunder", kind))
                    known = [x for x in d.decorator_list if _decorator(x) not in _PLAIN_DECORATORS]
                    if name in self.value_refs or known or kind or d.decorator_list and table is self.functions:
                        params = params_of(d)
                        keep_self = table is self.methods and not any(_decorator(x) == "staticmethod"
                                                                      for x in d.decorator_list)
                        for p in params[1:] if keep_self else params:  # anything
                            self.assign({TOP}, set(), ("var", id(d), p))
        if self.variable_lookups:  # any variable may be the one a lookup hands back
            for made in self.variables:
                self.alias(made, VARIABLES)

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

    def replaced(self, name: str) -> bool:
        """Method ``name`` may be bound other than by its def: assigned as an attribute
        (`PINN.net_u = f`, `model.net_u = f`), in a class body (`net_u = lambda ...`, a def
        under `if`), or in a class a decorator may change."""
        return name in self.rebound_methods or name in self.attr_stores

    def method_callers(self, fn: ast.AST) -> Optional[list]:
        """Every call that may run method ``fn``: each ``X.name(...)`` in the project, whatever
        ``X`` is.  None when ``name`` is also used other than as a callee (``f = self.m``,
        ``getattr(obj, "m")``, ``partial(self.m)``), called through a class (``PINN.m(obj,
        ...)``: the arguments shift), replaced, or for ``__init__`` (``cls(...)``, a subclass's
        constructor)."""
        if fn.name.startswith("__") or fn.name in self.value_refs | self.callback_refs or fn.decorator_list \
                or self.replaced(fn.name):
            return None
        if any(isinstance(c.func.value, ast.Name) and c.func.value.id in self.classes
               for _p, c, _s in self.sites.get(fn.name, [])):
            return None
        return sorted(self.sites.get(fn.name, []), key=lambda site: (site[0], site[1].lineno, site[1].col_offset))


def _rebound_in_class(cls: ast.ClassDef) -> set:
    """Names a class body binds other than by a plain def directly in it: assignments
    anywhere in the body, defs under `if`/`try`; every method of a decorated class."""
    out = set()
    if cls.decorator_list:
        out |= {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    todo = [(stmt, True) for stmt in cls.body]
    while todo:
        node, direct = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if not direct:
                out.add(node.name)
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        todo += [(child, False) for child in ast.iter_child_nodes(node)]
    return out


#: method decorators that change neither the arguments nor who calls the method
_PLAIN_DECORATORS = frozenset({"property", "setter", "getter", "deleter", "staticmethod", "classmethod"})


def _decorator(x: ast.AST) -> str:
    return x.attr if isinstance(x, ast.Attribute) else x.id if isinstance(x, ast.Name) else ""


def _of_module(node: ast.AST, modules: set) -> bool:
    """``tf.train`` in ``tf.train.AdamOptimizer``: a module's attribute, not a project name."""
    if not isinstance(node, ast.Attribute):
        return False
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in modules


def _base_name(base: ast.AST) -> str:
    return base.attr if isinstance(base, ast.Attribute) else base.id if isinstance(base, ast.Name) else ""


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
        flow = ObjectFlow(project)
        trees = [(p, project.tree(p)) for p in files]
        if any(tree is None and p in project.originals for p, tree in trees):
            flow = None
        else:
            trees = [(p, tree) for p, tree in trees if tree is not None]
            for p, tree in trees:
                flow.add_file(p, tree)
            for p, tree in trees:
                flow.add_edges(p, tree)
        if flow is not None:
            flow.finish()
            if flow.dynamic:
                flow = None
    project._object_flow = flow
    return flow
