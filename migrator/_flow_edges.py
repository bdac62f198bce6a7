"""The edges of :class:`migrator.object_flow.ObjectFlow`, from one file's ``ast``."""
from __future__ import annotations

import ast
from typing import Iterable, Optional

from migrator._flow_model import (
    ANY_ATTR, ANY_OBJECT, DYNAMIC, FILL_METHODS, GRAPH_STATE, META, NAMESPACES, PURE_BUILTINS, PURE_MODULES,
    QUIET_MODULES, READ_METHODS, SESSION_MAKERS, SESSION_RUNS, STATE_WRITES, TOP, VIEW_BUILTINS,
    BY_NAME, GRAPH_LOOKUPS, VARIABLE_LOOKUPS, VARIABLE_MAKERS, VARIABLES,
    bindings, local_names, params_of,
)
from migrator.astwalk import import_aliases


class FileEdges(ast.NodeVisitor):
    """Adds one file's edges to an :class:`ObjectFlow`."""

    def __init__(self, flow, path: str, tree: ast.Module) -> None:
        self.flow, self.path = flow, path
        imported = import_aliases(tree.body)
        self.pure = {n for n, full in imported.items() if full.split(".")[0] in PURE_MODULES}
        self.quiet = {n for n, full in imported.items() if full.split(".")[0] in QUIET_MODULES}
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
            if e.attr in NAMESPACES:
                return self.view(e.value)
            loc = ("attr", e.attr)
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
            for p in params_of(e):  # called by code the flow does not follow: anything may come in
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
    def call(self, c: ast.Call) -> tuple[set, set]:
        f = self.flow
        fn = c.func
        args = [(a.value if isinstance(a, ast.Starred) else a, isinstance(a, ast.Starred)) for a in c.args]
        kws = [k.arg for k in c.keywords]
        evaluated = [self.expr(a) for a, _ in args] + [self.expr(k.value) for k in c.keywords]
        f.calls[id(c)] = evaluated
        f.arg_reads[id(c)] = [self.reads(a) for a, _ in args] + [self.reads(k.value) for k in c.keywords]
        arg_val = set().union(*(v for v, _ in evaluated)) if evaluated else set()
        arg_ids = set().union(*(i for _, i in evaluated)) if evaluated else set()
        name = fn.id if isinstance(fn, ast.Name) and fn.id not in self.names else None
        if name == "getattr" and len(c.args) >= 2 and isinstance(c.args[1], ast.Constant):
            f.value_refs.add(str(c.args[1].value))
            loc = ("attr", str(c.args[1].value))
            return {loc} | evaluated[0][0], {loc}
        if name in DYNAMIC or name == "__import__" or isinstance(fn, ast.Attribute) and fn.attr == "import_module":
            f.dynamic = True  # an attribute written by a name made at run time; a module found by name
        if name in NAMESPACES or name == "getattr" and not (c.args and self._module_attr(c.args[0])):
            return self.view(c.args[0] if c.args and name in ("getattr", "vars") else None)
        leaf = fn.attr if isinstance(fn, ast.Attribute) else None
        if leaf in STATE_WRITES:
            f.put(arg_val, arg_ids, {GRAPH_STATE})
        if leaf in GRAPH_LOOKUPS:
            return {TOP}, set()  # any tensor of the graph, by name or by collection
        if leaf in VARIABLE_LOOKUPS:
            f.variable_lookups = True  # any variable: `tf.trainable_variables()[-1]`, `get_variable(reuse=...)`
            return arg_val | {VARIABLES}, {VARIABLES}
        if leaf in VARIABLE_MAKERS and self._module_attr(fn):
            made = ("variable", id(c))
            f.variables.append(made)
            return arg_val | {made}, {made}
        if leaf in ("attrgetter", "methodcaller") or name == "type" and len(c.args) == 3:
            f.dynamic = True  # attributes read, or a class built, by names made at run time
        if self._module_attr(fn) or name in PURE_BUILTINS or self._module_attr(fn, self.quiet):
            return arg_val, set()  # tf.concat(...), np.dot(...), len(...), plt.plot(...): a new value
        if name in VIEW_BUILTINS:
            return arg_val, arg_ids
        recv = fn.value if isinstance(fn, ast.Attribute) else None
        upward = isinstance(recv, ast.Call) and isinstance(recv.func, ast.Name) and recv.func.id == "super"
        if upward and self.scope is not None and self.cls is not None and params_of(self.scope):
            recv = ast.Name(id=params_of(self.scope)[0], ctx=ast.Load())  # `super().m(...)` runs on self
        recv_val, recv_ids = self.expr(recv) if recv is not None else (set(), set())
        fn_val, fn_ids = self.expr(fn) if recv is None else (set(), {("attr", fn.attr)})
        out_val, out_ids = set(), set()
        if recv is not None:
            targets = [(d, True) for d in f.methods.get(fn.attr, [])]
            if isinstance(recv, ast.Name) and recv.id in f.classes:
                targets = []  # `Class.m(obj, ...)`: the arguments shift; the call below covers it
            # `super().m(...)` runs a base's `m`, which may be any project def of that name, or a library's
            only = bool(targets) and not upward and self._own_method(recv, fn.attr)
            if only and self.cls is not None and isinstance(recv, ast.Name) and self.scope is not None \
                    and recv.id == params_of(self.scope)[0]:
                targets = [(d, True) for d in f.dispatch(self.cls, fn.attr)]  # not a same-named class elsewhere
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
        f.unknown_calls.append((fn_ids, arg_val | arg_ids))
        out_val |= {("dunder", "call")}
        if recv is not None and fn.attr in READ_METHODS:  # `d.get(k)`, `d.values()`, `lst.copy()`
            return out_val | arg_val | recv_val, out_ids | recv_ids | self.items(recv_ids)
        if recv is not None and fn.attr in FILL_METHODS:  # `lst.append(v)`, `lst.extend(vs)`
            f.put(arg_val, arg_ids | self.items(arg_ids), recv_ids)
            return out_val | arg_val | recv_val, out_ids | recv_ids | self.items(recv_ids)
        everything = arg_val | arg_ids | recv_val | recv_ids | fn_val
        if recv is not None and not self._module_attr(fn, self.modules):
            # a method of an object the flow cannot type: it may keep its arguments (fill its
            # receiver) and return any of them; library methods do not store one argument in
            # another (`sess.run(fetches, feed)`, `ax.plot(x, y)`)
            if fn.attr in SESSION_RUNS and self._session(recv):
                return set(), set()
            if fn.attr == "numpy" and not c.args and not c.keywords:
                return set(), set()  # an eager tensor's NumPy value
            f.put(arg_val, arg_ids, recv_ids)
            return out_val | everything, out_ids | arg_ids | recv_ids | self.items(recv_ids)
        f.put(everything, arg_ids | recv_ids, arg_ids | recv_ids)
        return out_val | everything, out_ids | arg_ids | recv_ids | self.items(arg_ids | recv_ids)

    def _session(self, e: ast.AST) -> bool:
        """``e`` is a TF session: made here (`tf.Session().run`), or a name or attribute only
        ever bound to one (`self.sess = tf.Session()`, `with tf.Session() as sess`)."""
        def made(v) -> bool:
            while isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "as_default":
                v = v.func.value  # `with tf.Session().as_default() as sess`
            return isinstance(v, ast.Call) and (v.func.attr if isinstance(v.func, ast.Attribute) else getattr(
                v.func, "id", None)) in SESSION_MAKERS
        if isinstance(e, ast.Call):
            return made(e)
        if isinstance(e, ast.Attribute):
            values = self.flow.attr_values.get(e.attr, [])
        elif isinstance(e, ast.Name):
            where = self.scope if self.scope is not None and e.id in self.names else self.module
            values = bindings(where, e.id)
            if where is self.module:
                values += self.flow.attr_values.get(e.id, []) if e.id in self.flow.attr_stores else []
        else:
            return False
        return bool(values) and all(made(v) for v in values)

    def _own_method(self, recv: ast.AST, meth: str) -> bool:
        """``self.meth(...)`` where this class (or a project base of it) defines ``meth``, or
        ``m.meth(...)`` where every binding of ``m`` is a constructor call of such a class: no
        library method can run instead (a subclass's can: it is among the targets too)."""
        if not isinstance(recv, ast.Name) or self.flow.replaced(meth):
            return False
        params = params_of(self.scope) if self.scope is not None else []
        if self.cls is not None and params and recv.id == params[0]:
            if recv.id in self.flow.rebound.get(id(self.scope), ()):
                return False
            return self._defines(self.cls, meth)
        where = self.scope if self.scope is not None and recv.id in self.names else self.module
        if where is self.module and recv.id in self.flow.attr_stores:
            return False  # `other.m = Lib()` elsewhere: another object's method may run
        values = bindings(where, recv.id)
        classes = [v.func.id for v in values if isinstance(v, ast.Call) and isinstance(v.func, ast.Name)
                   and v.func.id not in self.names and v.func.id in self.project_classes]
        return bool(values) and len(classes) == len(values) and all(
            self._defines(c, meth) for name in classes for c in self.flow.classes_named(name))

    def _defines(self, cls: ast.ClassDef, meth: str) -> bool:
        todo, seen = [cls], set()
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
        if any(isinstance(x, ast.Name) and x.id == "staticmethod" for x in d.decorator_list):
            bound = False  # `self.nn(X, W)` of a staticmethod: X is its first parameter
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
                for stmt in child.body:
                    self.visit(stmt)
            elif isinstance(child, (ast.match_case,)):
                self.flow.dynamic = True  # captures bind names the flow does not follow
