"""The edges of a call (:class:`CallEdges`, mixed into ``_flow_edges.FileEdges``): which
defs it may run and what their parameters get, what a library call keeps or hands back."""
from __future__ import annotations

import ast

from migrator._flow_model import (
    DYNAMIC, FILL_METHODS, GRAPH_LOOKUPS, NAMESPACES, NUMPY_FILLS, PURE_BUILTINS, READ_METHODS,
    SESSION_MAKERS, SESSION_RUNS, TOP, UNBOUND_RECEIVERS, VARIABLE_LOOKUPS, VARIABLE_MAKERS,
    VARIABLES, VIEW_BUILTINS, bindings, params_of,
)


class CallEdges:
    """Needs ``flow``, ``expr``, ``items``, ``reads``, ``view``, ``var`` and the scope fields of
    ``FileEdges``."""

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
        self._callbacks(c, evaluated)
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
        if leaf in GRAPH_LOOKUPS:
            return {TOP}, set()  # any tensor of the graph, by name or by collection
        if leaf in VARIABLE_LOOKUPS:
            f.variable_lookups = True  # any variable: `tf.trainable_variables()[-1]`, `get_variable(reuse=...)`
            return arg_val | {VARIABLES}, {VARIABLES}
        if leaf in VARIABLE_MAKERS and self._module_attr(fn):
            made = ("variable", id(c))  # a leaf: no gradient reaches its initial value through it
            f.variables.append(made)
            return {made}, {made}
        if leaf in ("attrgetter", "methodcaller") or name == "type" and len(c.args) == 3:
            f.dynamic = True  # attributes read, or a class built, by names made at run time
        if self._module_attr(fn, self.numpy):  # `np.asarray(a)` may be `a`; `np.copyto(dst, src)` fills dst
            if leaf in NUMPY_FILLS and evaluated:
                rest = evaluated[1:]
                f.put(set().union(*(v for v, _ in rest)) if rest else set(),
                      set().union(*(i for _, i in rest)) if rest else set(), evaluated[0][1])
            return arg_val, arg_ids
        if self._module_attr(fn) or name in PURE_BUILTINS or self._module_attr(fn, self.quiet):
            return arg_val, set()  # tf.concat(...), len(...), plt.plot(...): a new value
        if name in VIEW_BUILTINS:  # `list(xs)`, `max(lists, key=len)`: the arguments or what they hold
            return arg_val, arg_ids | self.items(arg_ids)
        recv = fn.value if isinstance(fn, ast.Attribute) else None
        upward = isinstance(recv, ast.Call) and isinstance(recv.func, ast.Name) and recv.func.id == "super"
        if upward and self.scope is not None and self.cls is not None and params_of(self.scope):
            recv = ast.Name(id=params_of(self.scope)[0], ctx=ast.Load())  # `super().m(...)` runs on self
        recv_val, recv_ids = self.expr(recv) if recv is not None else (set(), set())
        if recv is not None and self._unbound(recv):  # `list.append(lst, v)`: the receiver is an argument
            everything = arg_val | arg_ids | recv_val | recv_ids
            f.put(everything, arg_ids, arg_ids)
            f.unknown_calls.append(({("attr", fn.attr)}, arg_val | arg_ids))
            return everything | {("dunder", "call")}, arg_ids | self.items(arg_ids)
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
        for kw, (val, ids) in zip(kws, evaluated[len(args):]):
            if kw is not None:  # `Namespace(box=lst).box`: a keyword may become the result's attribute
                f.assign(val, ids, ("attr", kw))
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

    def _callbacks(self, c: ast.Call, evaluated: list) -> None:
        """A function handed to `map(lambda l: l.append(v), lists)`, `sorted(xs, key=f)`, ... is
        called with what the other arguments hold (elsewhere its parameters may get anything)."""
        parts = list(c.args) + [k.value for k in c.keywords]
        if not any(id(a) in self.arguments for a in parts):
            return
        for i, a in enumerate(parts):
            if isinstance(a, ast.Lambda):
                params = [self.var(p) for p in params_of(a)]
            elif isinstance(a, ast.Name) and a.id not in self.names:
                params = [("var", id(d), p) for d in self.flow.functions.get(a.id, []) for p in params_of(d)]
            elif isinstance(a, ast.Attribute) and a.attr in self.flow.methods:
                params = [("var", id(d), p) for d in self.flow.methods[a.attr] for p in params_of(d)[1:]]
            else:
                continue
            others = set().union(*(ids for j, (_, ids) in enumerate(evaluated) if j != i)) if len(evaluated) > 1 \
                else set()
            for loc in params:
                for o in others | self.items(others):
                    self.flow.alias(loc, o)

    def _unbound(self, recv: ast.AST) -> bool:
        """A class, not an instance: `list.append(lst, v)`, `PINN.m(obj, ...)`, `type(x).m(x, v)`."""
        if isinstance(recv, ast.Name):
            return recv.id not in self.names and (recv.id in UNBOUND_RECEIVERS or recv.id in self.flow.classes)
        if isinstance(recv, ast.Attribute):
            return recv.attr == "__class__"
        return isinstance(recv, ast.Call) and isinstance(recv.func, ast.Name) and recv.func.id == "type"

    def _session(self, e: ast.AST) -> bool:
        """``e`` is a TF session: made here (`tf.Session().run`), or a name or attribute only
        ever bound to one (`self.sess = tf.Session()`, `with tf.Session() as sess`)."""
        def made(v) -> bool:
            while isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "as_default":
                v = v.func.value  # `with tf.Session().as_default() as sess`
            return isinstance(v, ast.Call) and (v.func.attr if isinstance(v.func, ast.Attribute) else getattr(
                v.func, "id", None)) in SESSION_MAKERS and (self._module_attr(v.func) or isinstance(
                    v.func, ast.Name) and v.func.id in self.pure)  # TF's: not a project's `Session` class
        if isinstance(e, ast.Call):
            return made(e)
        if isinstance(e, ast.Attribute):
            if e.attr in self.flow.methods:
                return False  # a property, or a method, named like it somewhere
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
            return bool(self.flow.up(self.cls, meth, names_only=True))
        where = self.scope if self.scope is not None and recv.id in self.names else self.module
        if where is self.module and recv.id in self.flow.attr_stores:
            return False  # `other.m = Lib()` elsewhere: another object's method may run
        values = bindings(where, recv.id)
        classes = [v.func.id for v in values if isinstance(v, ast.Call) and isinstance(v.func, ast.Name)
                   and v.func.id not in self.names and v.func.id in self.project_classes]
        return bool(values) and len(classes) == len(values) and all(
            self.flow.up(c, meth, names_only=True) for name in classes for c in self.flow.classes_named(name))

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
