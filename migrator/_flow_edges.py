"""The edges of :class:`migrator.object_flow.ObjectFlow`, from one file's ``ast``."""
from __future__ import annotations

import ast
from typing import Iterable, Optional

from migrator._flow_model import (
    ANY_ATTR, ANY_OBJECT, BY_NAME, DYNAMIC, EXCEPTIONS, FILL_METHODS, GRAPH_WALKS, INTROSPECTION_MODULES, META,
    NAMESPACES, PURE_BUILTINS, PURE_MODULES, QUIET_MODULES, TOP, iteration_arguments, local_names, params_of,
)
from migrator._flow_calls import CallEdges
from migrator.astwalk import import_aliases


class FileEdges(CallEdges, ast.NodeVisitor):
    """Adds one file's edges to an :class:`ObjectFlow`."""

    def __init__(self, flow, path: str, tree: ast.Module) -> None:
        self.flow, self.path = flow, path
        imported = import_aliases(tree.body)
        rebound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
        rebound |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                      ast.ClassDef))}
        # a name is TF's, NumPy's, ... only where nothing else binds it (`np = Shim()`, `def concat`)
        self.pure = {n for n, full in imported.items() if full.split(".")[0] in PURE_MODULES} - rebound
        self.quiet = {n for n, full in imported.items() if full.split(".")[0] in QUIET_MODULES} - rebound
        self.numpy = {n for n, full in imported.items() if full.split(".")[0] == "numpy"} - rebound
        if any(full.split(".")[0] in INTROSPECTION_MODULES for full in import_aliases(ast.walk(tree)).values()):
            flow.dynamic = True  # `gc.get_objects()`, `inspect.getmembers(obj)`: objects reached by no name
        # every name an import binds, anywhere: `helpers.stash(a, b)` is a function, not a method
        self.modules = {(a.asname or a.name).split(".")[0] for n in ast.walk(tree)
                        if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
        self.scope: Optional[ast.AST] = None  # the outermost function (nested ones share its names)
        self.current: Optional[ast.AST] = None  # the innermost function (whose `return` this is)
        self.cls: Optional[ast.ClassDef] = None  # the class whose method `scope` is
        self.names: set = set()  # names local to that function
        self.globals: set = set()
        self.module = tree
        self.callees = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        self.arguments = iteration_arguments(tree)
        # class names bound here to a project class: defined here, or imported from the file defining it
        self.project_classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        for n in tree.body:
            if isinstance(n, ast.ImportFrom) and flow.project is not None:
                where = flow.project.resolve(n.module or "", n.level, path)
                self.project_classes |= {a.asname or a.name for a in n.names
                                         if where is not None and where in flow.class_paths.get(a.name, ())}
        self.project_classes -= {a for n in tree.body if isinstance(n, ast.Import) for a in
                                 ((x.asname or x.name).split(".")[0] for x in n.names)}
        self.module_defs = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                          ast.ClassDef))} - {
            a for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) for a in
            ((x.asname or x.name).split(".")[0] for x in n.names)}

    # -- locations ------------------------------------------------------
    def var(self, name: str) -> tuple:
        if self.scope is not None and name in self.names and name not in self.globals:
            return ("var", id(self.scope), name)
        return ("global", name)  # every module's global of that name (`from m import G` is the same)

    # -- expressions: (value sources, objects it may be) ------------------
    def expr(self, e: Optional[ast.AST]) -> tuple[set, set]:
        f = self.flow
        if e is None or isinstance(e, ast.Constant):
            return set(), set()
        if isinstance(e, ast.Name):
            if e.id in self.pure and e.id not in self.names:
                return set(), set()
            if e.id in BY_NAME and e.id not in self.names and id(e) not in self.callees:
                f.dynamic = True  # `fetch = getattr`: calls of it read attributes by computed names
            loc = self.var(e.id)
            return {loc}, {loc}
        if isinstance(e, ast.Attribute):
            base_val, _ = self.expr(e.value)
            if e.attr in META or self._module_attr(e.value):
                return base_val if e.attr not in META else set(), set()
            if e.attr in DYNAMIC:
                f.dynamic = True
            if e.attr in NAMESPACES or e.attr == "modules" and isinstance(e.value, ast.Name) and e.value.id == "sys":
                return self.view(e.value)
            if e.attr in GRAPH_WALKS:
                return {TOP}, set()  # `t.consumers()`, `g._nodes_by_name`: any tensor of the graph
            loc = ("attr", e.attr)
            if id(e) not in self.callees and e.attr in FILL_METHODS | {"__setitem__", "put", "push", "extendleft"} \
                    and isinstance(e.ctx, ast.Load):
                # a bound method handed on (`map(self.buf.append, xs)`): whoever calls it fills its object
                f.put({TOP}, {ANY_OBJECT}, self.expr(e.value)[1])
            return {loc, ("dunder", "attr")} | base_val, {loc}
        if isinstance(e, ast.Subscript):
            val, ids = self.expr(e.value)
            return val | self.expr(e.slice)[0] | {("dunder", "item")}, self.items(ids)
        if isinstance(e, ast.Call):
            return self.call(e)
        if isinstance(e, (ast.List, ast.Tuple, ast.Set)):
            return self.container(e, e.elts)
        if isinstance(e, ast.Dict):
            box = ("display", id(e))
            f.assign(self._union([k for k in e.keys if k is not None])[0], set(), box)  # keys: hashable, never changed
            return self.container(e, e.values)
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
            if id(e) not in self.arguments:  # handed to `map`, ...: called with what its iterables hold
                for p in params_of(e):  # else called by code the flow does not follow: anything may come in
                    f.assign({TOP}, set(), self.var(p))
            return self.expr(e.body)  # calling it later reads what its body reads
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            for g in e.generators:
                val, ids = self.expr(g.iter)
                self.store(g.target, val | {("dunder", "iter")}, self.items(ids))
                for cond in g.ifs:
                    self.expr(cond)
            parts = [e.key, e.value] if isinstance(e, ast.DictComp) else [e.elt]
            return self.container(e, parts)
        if isinstance(e, (ast.Await, ast.Yield, ast.YieldFrom)):
            val, ids = self.expr(e.value)
            if isinstance(e, (ast.Yield, ast.YieldFrom)) and self.current is not None:
                f.assign(val, ids, ("ret", id(self.current)))
                return {TOP}, {ANY_OBJECT}  # `v = yield`: what `.send(v)` passes, from anywhere
            return val, ids
        # arithmetic, comparisons, f-strings, slices: a new value from the parts
        val: set = {("dunder", "ops")} if isinstance(e, (ast.BinOp, ast.UnaryOp, ast.Compare)) else set()
        for child in ast.iter_child_nodes(e):
            if isinstance(child, ast.expr):
                val |= self.expr(child)[0]
        return val, set()

    def reads(self, e: ast.AST) -> Optional[set]:
        """What an argument is made of: the variables and attributes it reads (not the objects
        they are read from: `self.t_tf` is `.t_tf`, not `self`), through TF calls and
        arithmetic; None when it calls code the flow must follow (use its whole value)."""
        out: set = set()
        bases = {id(n.value) for n in ast.walk(e) if isinstance(n, ast.Attribute)}
        for n in ast.walk(e):
            if isinstance(n, ast.Call) and not (self._module_attr(n.func) or isinstance(n.func, ast.Name)
                                                and n.func.id in PURE_BUILTINS and n.func.id not in self.names):
                return None
            if isinstance(n, (ast.Lambda, ast.NamedExpr, ast.Yield, ast.Await)):
                return None
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and n.attr not in META \
                    and not self._module_attr(n.value):
                out.add(("attr", n.attr))
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in bases \
                    and not (n.id in self.pure and n.id not in self.names):
                out.add(self.var(n.id))
        return out

    def view(self, obj: Optional[ast.AST]) -> tuple[set, set]:
        """``getattr(obj, name)``, ``vars(obj)``, ``globals()``: any attribute (or global) of
        ``obj``, and an object that filling writes attributes no one can name."""
        val, ids = self.expr(obj) if obj is not None else ({TOP}, {TOP})
        self.flow.views.append(ids)
        return val | {ANY_ATTR}, {ANY_OBJECT}

    def container(self, e: ast.AST, parts: Iterable) -> tuple[set, set]:
        """A new list, tuple, set or dict holding ``parts`` (``[*xs]``: what ``xs`` holds)."""
        box = ("display", id(e))
        for p in parts:
            val, ids = self.expr(p.value if isinstance(p, ast.Starred) else p)
            self.flow.hold(box, val, self.items(ids) if isinstance(p, ast.Starred) else ids)
        return {box}, {box}

    def items(self, ids: set) -> set:
        """The locations of what the objects ``ids`` hold."""
        return {self.flow.elem(i) for i in ids}

    def _union(self, parts: Iterable, ids: bool = False) -> tuple[set, set]:
        val, same = set(), set()
        for p in parts:
            v, i = self.expr(p)
            val |= v
            same |= i if ids else set()
        return val, same

    def _module_attr(self, e: ast.AST, modules: Optional[set] = None) -> bool:
        while isinstance(e, ast.Attribute):
            e = e.value
        if modules is self.modules:
            return isinstance(e, ast.Name) and e.id in modules
        return isinstance(e, ast.Name) and e.id in (self.pure if modules is None else modules) \
            and e.id not in self.names

    # -- calls ------------------------------------------------------------
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
            f.put(val, ids, obj)  # the container now holds the value
        elif isinstance(t, (ast.Tuple, ast.List)):
            for el in t.elts:  # `a, b = pair`: each is one of what the pair holds
                self.store(el, val, self.items(ids))
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
        f.assign({ret}, {ret}, ("attr", node.name) if self.scope is None and self.cls is not None
                 else self.var(node.name))

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
        self.flow.put(val, self.items(ids), tids)  # `lst += [v]` fills the list in place

    def visit_For(self, node) -> None:
        val, ids = self.expr(node.iter)
        self.store(node.target, val | {("dunder", "iter")}, self.items(ids))
        for stmt in node.body + node.orelse:
            self.visit(stmt)

    visit_AsyncFor = visit_For

    def visit_With(self, node) -> None:
        for item in node.items:
            val, ids = self.expr(item.context_expr)
            if item.optional_vars is not None:
                self.store(item.optional_vars, val | {("dunder", "enter")}, ids)
        for stmt in node.body:
            self.visit(stmt)

    visit_AsyncWith = visit_With

    def visit_Raise(self, node) -> None:
        val, ids = self.expr(node.exc)  # what a handler's `as e` may get, anywhere
        self.flow.assign(val, ids, EXCEPTIONS)
        self.expr(node.cause)

    def visit_Global(self, node) -> None:
        self.globals |= set(node.names)

    def visit_Nonlocal(self, node) -> None:
        pass  # nested functions share the outer function's names already

    def visit_Import(self, node) -> None:
        pass  # a module object: no tensor (its globals are reached through `m.G`)

    def visit_ImportFrom(self, node) -> None:
        for a in node.names:  # `from cfg import T as TT`, or inside a function: the global `T`
            if a.name != "*":
                self.flow.alias(self.var(a.asname or a.name), ("global", a.name))

    def visit_Expr(self, node) -> None:
        self.expr(node.value)

    def generic_visit(self, node) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                self.visit(child)
            elif isinstance(child, ast.expr):
                self.expr(child)
            elif isinstance(child, ast.ExceptHandler):
                if child.name:
                    self.flow.assign({EXCEPTIONS, TOP}, {EXCEPTIONS}, self.var(child.name))
                for stmt in child.body:
                    self.visit(stmt)
            elif isinstance(child, (ast.match_case,)):
                self.flow.dynamic = True  # captures bind names the flow does not follow
