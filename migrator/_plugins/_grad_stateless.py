"""Calls of the project's methods that store nothing (``u1 = self.net_u1(x1, y1)`` in a PINN).

A line calling the project's code "writes program state" (``_grad_plan.item_for``): the callee
may set an attribute that a later line reads. Then every later line that reads state depends
on it, and a tape for the second of seven sub-networks had to open at the first, under
assumptions about the first one's inputs (a held-out corpus: XPINN's 24 sites). A method whose
body (and everything it calls) binds only its own local names, changes no object, and makes
no graph collection entry adds nothing but its return value.

Read from this file's ``ast`` and text searches of the project, never the project's value
flow: building that took minutes on TF's own tree (a benchmark caught it).
"""
from __future__ import annotations

import ast
import os
import re
from typing import Optional

import libcst as cst

from migrator._flow_model import ARITHMETIC_DUNDER, DUNDERS, GRAPH_WALKS, STATE_READS
from migrator._plugins._aliases import _READING_METHODS, CHANGING_METHODS
from migrator._plugins._grad_values import qnames
from migrator.object_flow import local_names, params_of

#: TF/NumPy calls that store something in the graph or a variable (besides their result), or
#: run a function they are handed
_STORING = frozenset({"add_to_collection", "add_to_collections", "add_loss", "get_variable", "Variable",
                      "get_local_variable", "assign", "assign_add", "assign_sub", "scatter_update", "scatter_add",
                      "scatter_sub", "py_func", "py_function", "numpy_function", "set_random_seed", "seed",
                      "make_template", "Print", "print", "summary", "scalar", "histogram", "image", "map_fn",
                      "while_loop", "cond", "case", "switch_case", "scan", "foldl", "foldr", "vectorized_map",
                      "custom_gradient", "recompute_grad", "function", "copyto", "put", "place", "fill_diagonal"})
#: TF namespaces whose functions may keep what they make where a later line reads it back
#: (`tf.losses.*` and layers fill collections, summaries too)
_STORING_NAMESPACES = frozenset({"losses", "summary", "layers", "contrib", "keras", "slim", "estimator", "train",
                                 "metrics", "compat", "v1", "experimental", "debugging", "io", "data", "saved_model",
                                 "Session", "InteractiveSession", "get_default_graph", "Graph", "nest", "random"})
_PURE_MODULES = ("tensorflow", "numpy", "math")
#: builtins that only compute from their arguments
_PURE_BUILTIN_NAMES = frozenset({"len", "range", "float", "int", "abs", "min", "max", "sum", "zip", "enumerate",
                                 "list", "tuple", "dict", "isinstance", "round", "reversed", "bool", "str", "pow",
                                 "divmod", "all", "any"})
#: hooks a project class may define that run on reads, calls or checks of its objects
_HOOKS = ("__setattr__", "__delattr__", "__instancecheck__", "__subclasscheck__", "__contains__", "__len__",
          "__bool__", "__eq__", "__hash__", "__array__", "__tf_tensor__", "__index__", "__init_subclass__")
_DUNDER_DEF = re.compile(r"(?m)\bdef\s+(__\w+__)\s*\(|^[ \t]+(__\w+__)[ \t]*=")  # `__rmul__ = _rm` too


def stateless_self_call(rw, call: cst.Call) -> bool:
    """``self.m(...)`` inside a method of a module-level class, where ``m`` and everything it
    calls store nothing, and no other definition of those names in the project could run
    instead (a subclass's override, an assignment ``Cls.m = ...``)."""
    if not isinstance(call.func, cst.Attribute) or not isinstance(call.func.value, cst.Name):
        return False
    fn = rw.parents.get(call)
    while fn is not None and not isinstance(fn, cst.FunctionDef):
        fn = rw.parents.get(fn)
    block = rw.parents.get(fn) if fn is not None else None
    cls = rw.parents.get(block) if isinstance(block, cst.IndentedBlock) else None
    if not isinstance(cls, cst.ClassDef) or not isinstance(rw.parents.get(cls), cst.Module):
        return False
    facts = _facts(rw, cls.name.value)
    if facts is None:
        return False
    caller = facts.methods.get(fn.name.value)
    if caller is None or not params_of(caller) or call.func.value.value != params_of(caller)[0] \
            or _rebinds(caller, params_of(caller)[0]):
        return False  # not this class's def, or `self` rebound in it
    return facts.method(call.func.attr.value, set())


def stateless_function_call(rw, call: cst.Call) -> bool:
    """``f(...)`` of this module's function ``f`` (its one definition in the project, bound
    nowhere else), which with everything it calls stores nothing: it cannot keep an argument
    (a GAN script's `discriminator(G_sample)` was taken for code that may keep its list)."""
    func = call.func
    if not isinstance(func, cst.Name) or qnames(func, rw.qn) != {func.value}:
        return False  # a parameter or local of that name (`f.<locals>.name`), or no name at all
    facts = _facts(rw, None)
    if facts is None or not _bound_once(facts.tree, func.value) or not facts.function(func.value, set()):
        return False
    fn = facts.functions[func.value]
    # nor may it hand the argument back (`return l`, `return [l]`, `l[0:0] or l`): the caller
    # would hold the list under another name (an adversarial run filled it after the tape)
    return all(_new_value(r.value, facts.pure, fn) for r in ast.walk(fn) if isinstance(r, ast.Return))


def fresh_result_call(rw, call: cst.Call) -> bool:
    """``self.m(...)`` of this class's method, or ``f(...)`` of this module's function, defined
    once in the project, every ``return`` of which hands back values made in the call: TF or
    NumPy results, arithmetic, a tensor's slice (`h[:, 1:2]`; a list's `KEEP[:]` shares its
    items), displays of those, or a local whose last top-level binding before the return is one
    and that nothing keeps (`A, u, p = self.net(x)`: `u = Au[:, 1:2]; return tf.exp(A), u, p`).
    No list the caller receives is one that other code holds and may fill."""
    func = call.func
    if isinstance(func, cst.Name):
        facts = _facts(rw, None)
        fn = facts.functions.get(func.value) if facts is not None else None
        ok = fn is not None and qnames(func, rw.qn) == {func.value} and facts.module_function_once(func.value)
    elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        cls = rw.parents.get(call)
        while cls is not None and not isinstance(cls, cst.ClassDef):
            cls = rw.parents.get(cls)
        facts = _facts(rw, cls.name.value) if cls is not None else None
        fn = facts.methods.get(func.attr.value) if facts is not None else None
        ok = fn is not None and func.value.value in ("self", "cls") and facts.defined_once(func.attr.value)
    else:
        return False
    if not ok or fn.decorator_list:
        return False
    returns = [r for r in ast.walk(fn) if isinstance(r, ast.Return)]
    return bool(returns) and all(_made_in_call(r.value, facts.pure, fn, 0, _top_index(fn, r)) for r in returns)


def _top_index(fn: ast.FunctionDef, stmt: ast.stmt) -> Optional[int]:
    return next((i for i, s in enumerate(fn.body) if s is stmt), None)


def _escapes(fn: ast.FunctionDef, name: str, pure: set, seen: Optional[set] = None) -> bool:
    """``name`` is read in ``fn`` other than by a ``return`` or as an operand or argument of a
    TF/NumPy op (`h = tf.sin(x); return h * 2`): it may be handed to something that keeps it."""
    local = local_names(fn)
    returned = {id(n) for r in ast.walk(fn) if isinstance(r, ast.Return) and r.value is not None
                for n in ast.walk(r.value)}
    operand = {id(n) for b in ast.walk(fn) if isinstance(b, (ast.BinOp, ast.UnaryOp, ast.Compare))
               for n in ast.iter_child_nodes(b)}
    operand |= {id(a) for call in ast.walk(fn) if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and (_chain(call.func) or [""])[0] in pure - local for a in call.args}
    # `D_out = D_last`: a read that binds another local is fine if that one does not escape either
    aliases = {id(a.value): a.targets[0].id for a in ast.walk(fn) if isinstance(a, ast.Assign)
               and len(a.targets) == 1 and isinstance(a.targets[0], ast.Name) and isinstance(a.value, ast.Name)}
    seen = (seen or set()) | {name}
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
               and id(n) not in returned and id(n) not in operand
               and (id(n) not in aliases or aliases[id(n)] in seen or _escapes(fn, aliases[id(n)], pure, seen))
               for n in ast.walk(fn))


def _last_binding(fn: ast.FunctionDef, name: str, before: int) -> Optional[tuple]:
    """(value, index) of the last plain ``name = value`` among ``fn``'s top-level statements
    before ``before``, when no later statement before it may bind ``name`` (a loop, an ``if``):
    the value ``name`` holds there, whatever earlier bindings were (`D_last = x`, a loop, then
    `D_last = tf.matmul(D_last, W) + b`)."""
    for i in range(before - 1, -1, -1):
        st = fn.body[i]
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
                and st.targets[0].id == name:
            return st.value, i
        if any(name in _binds(n) for n in ast.walk(st)):
            return None
    return None


def _made_in_call(v: Optional[ast.AST], pure: set, fn: ast.FunctionDef, depth: int,
                  before: Optional[int] = None) -> bool:
    if v is None or isinstance(v, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare)):
        return True
    if isinstance(v, (ast.Tuple, ast.List)):
        return all(not isinstance(e, ast.Starred) and _made_in_call(e, pure, fn, depth, before) for e in v.elts)
    if isinstance(v, ast.Name) and _escapes(fn, v.id, pure):
        return False  # `r = []; REG.append(r); return r`: another holder may fill it (an adversarial run)
    if isinstance(v, ast.Name) and before is not None and depth < 6:
        last = _last_binding(fn, v.id, before)
        if last is not None:
            return _made_in_call(last[0], pure, fn, depth + 1, last[1])
    if isinstance(v, ast.Subscript):
        # `x[:, 1:2]` is a tensor or array's slice, a new object; `KEEP[:]` copies a list but shares its
        # items (`KEEP = [[]]`: an adversarial run filled `ys[0]` through KEEP)
        return isinstance(v.slice, ast.Tuple) and any(isinstance(e, ast.Slice) for e in v.slice.elts)
    if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute):
        chain = _chain(v.func)  # `np = Box(); return np.get()`: a local named like the module is not it
        # `tf.get_collection_ref(k)` hands back the graph's own list (an adversarial run)
        return chain is not None and chain[0] in pure and chain[0] not in local_names(fn) \
            and not set(chain) & STATE_READS
    if isinstance(v, ast.Name) and depth < 3:
        values = _plain_values(fn, v.id)
        return bool(values) and all(_made_in_call(x, pure, fn, depth + 1) for x in values)
    return False


def _new_value(v: Optional[ast.AST], pure: set, fn: Optional[ast.FunctionDef] = None) -> bool:
    """A value made here that is none of the function's objects: a number, a string, None, a
    TF/NumPy call (it returns a tensor or array, never a list it was given), arithmetic of those,
    or a local every binding of which is one (`out = tf.sigmoid(h); return out`)."""
    return _new_in(v, pure, fn, local_names(fn) if fn is not None else None)


def _new_in(v: Optional[ast.AST], pure: set, fn: Optional[ast.FunctionDef], local: Optional[set]) -> bool:
    if v is None or isinstance(v, ast.Constant):
        return True
    if isinstance(v, ast.Name) and fn is not None:
        values = _plain_values(fn, v.id)
        return bool(values) and all(_new_in(x, pure, None, local) for x in values)
    if isinstance(v, ast.BinOp):
        return _new_in(v.left, pure, None, local) and _new_in(v.right, pure, None, local)
    if isinstance(v, ast.UnaryOp):
        return _new_in(v.operand, pure, None, local)
    if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute):
        chain = _chain(v.func)  # a local named like the module (`np = Box()`) is not it: adversarial run
        return chain is not None and chain[0] in pure and (local is None or chain[0] not in local)
    return False


def _bound_once(tree: ast.Module, name: str) -> bool:
    """No statement of the file binds ``name`` but its one def (`for f in fs:`, `import g as f`,
    `with ... as f`, `global f` escape the project search for `f =`), and no star import may."""
    binders = [n for n in ast.walk(tree) if name in _binds(n)]
    if len(binders) != 1 or not isinstance(binders[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    # a star import before the def is overridden by it (`from parameters import *` atop a GAN script)
    return not any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
                   and n.lineno >= binders[0].lineno for n in ast.walk(tree))


def _facts(rw, cls_name: Optional[str]) -> Optional["_FileFacts"]:
    """The file's facts for class ``cls_name`` (None: its module-level functions only)."""
    cache = rw.__dict__.setdefault("_stateless_facts", {})
    if cls_name not in cache:
        path = os.path.abspath(rw.ctx.path)
        tree = rw.project.tree(path)
        classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name] if tree else []
        ok = tree is not None and (cls_name is None or len(classes) == 1) and _no_hooks(rw.project)
        cache[cls_name] = _FileFacts(rw.project, tree, classes[0] if classes else None) if ok else None
    return cache[cls_name]


def no_item_hooks(project) -> bool:
    """No class of the project defines ``__getitem__`` or ``__class_getitem__`` (searched once)."""
    if "_no_item_hooks" not in project.__dict__:
        hits = project.grep(b"__getitem__", r"def\s+__(class_)?getitem__")
        project.__dict__["_no_item_hooks"] = hits is not None and not hits
    return project.__dict__["_no_item_hooks"]


#: an attribute read that may run code anywhere: a bare `property` (`prop = property`,
#: `Cls.x = property(f)`, `setattr(C, "x", property(...))`) or an attribute hook, however spelled
_ANY_READ_HOOK = r"(?<![@\w.])property\b|__getattr__|__getattribute__|__get__"


def read_runs_code(project, attrs: set) -> bool:
    """Reading one of ``attrs`` on an object may run project code: the project defines a function
    or method of that name (any decorator, however spelled, may make it a property), or uses
    ``property`` other than as a plain decorator, or names an attribute hook (True when unknown).
    A superset: reading a stored attribute inside the tape instead of at the call is harmless."""
    if "_read_hooks" not in project.__dict__:
        anywhere = project.grep(b"", _ANY_READ_HOOK)
        defs = project.grep(b"def")
        project.__dict__["_read_hooks"] = None if anywhere is None or defs is None else (bool(anywhere), {
            m for p in defs for m in re.findall(r"\bdef\s+(\w+)", project.text(p) or "")})
    known = project.__dict__["_read_hooks"]
    return known is None or known[0] or bool(attrs & known[1])


def no_hooks(project) -> bool:
    """No operator, item or hook method anywhere in the project (public name)."""
    return _no_hooks(project)


def _no_hooks(project) -> bool:
    """No operator, item or hook method anywhere in the project: ``a + b``, ``w[l]`` and
    ``isinstance`` then run no project code (found once per project)."""
    if "_stateless_no_hooks" not in project.__dict__:
        project.__dict__["_stateless_no_hooks"] = _find_no_hooks(project)
    return project.__dict__["_stateless_no_hooks"]


def _find_no_hooks(project) -> bool:
    hits = project.grep(b"__", _DUNDER_DEF.pattern)
    if hits is None:
        return False
    for p in hits:
        text = project.text(p) or ""
        for m in _DUNDER_DEF.finditer(text):
            name = m.group(1) or m.group(2)
            if name in DUNDERS or ARITHMETIC_DUNDER.match(name) or name in _HOOKS:
                return False
    return True


class _FileFacts:
    """One class of this file, its module's functions and TF/NumPy names, and text searches of
    the project for other definitions or assignments of a name."""

    def __init__(self, project, tree: ast.Module, cls: Optional[ast.ClassDef]) -> None:
        self.project, self.tree, self.cls = project, tree, cls
        self.methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)} if cls else {}
        self.functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.pure = set()
        for node in tree.body:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] in _PURE_MODULES and (a.asname or "." not in a.name):
                        self.pure.add(a.asname or a.name)
        self._once: dict = {}
        # a builtin's name the file binds (`max = my_max`, `from m import max`), or any name a
        # star import may bind, is not the builtin
        self.bound_names = _PURE_BUILTIN_NAMES if any(
            isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in ast.walk(tree)) else {
            b for n in ast.walk(tree) for b in _binds(n)}

    def _defs(self, name: str) -> Optional[list]:
        """Project files with ``def name(`` (None: the project is too big to search)."""
        return self.project.grep(f"def {name}".encode(), rf"\bdef\s+{re.escape(name)}\s*\(")

    def defined_once(self, name: str) -> bool:
        """``def name`` once in the project, bound nowhere else (``Cls.name = f``, ``name = f``)."""
        if name not in self._once:
            defs = self._defs(name)
            sets = self.project.grep(name.encode(), rf"(\.|\b){re.escape(name)}\s*=[^=]|setattr\(")
            ok = defs is not None and sets is not None and len(defs) == 1 and not sets
            if ok:
                text = self.project.text(defs[0]) or ""
                ok = len(re.findall(rf"\bdef\s+{re.escape(name)}\s*\(", text)) == 1
            self._once[name] = ok
        return self._once[name]

    def module_function_once(self, name: str) -> bool:
        """A function of this module, called by its bare name: another file's ``def`` of that
        name cannot run instead (a GAN repository's scripts each define `discriminator`), but
        this module must bind it only by its def, and no file may write it on the module."""
        key = ("module", name)
        if key not in self._once:
            # `m.f = g`, and any target spelling: `for m.f in [g]:`, `m.f, x = g, 1`, `with g as m.f:`
            sets = self.project.grep(name.encode(), rf"\.{re.escape(name)}\s*(?:=[^=]|[,)\]:]|in\b)|setattr\("
                                                    r"|__dict__|globals\(")
            self._once[key] = sets is not None and not sets and _bound_once(self.tree, name)
        return self._once[key]

    def method(self, name: str, seen: set) -> bool:
        if name in seen:
            return True
        fn = self.methods.get(name)
        if fn is None or fn.decorator_list or not params_of(fn) or name.startswith("__") \
                or not self.defined_once(name):
            return False
        seen.add(name)
        me = params_of(fn)[0]
        if _rebinds(fn, me):
            return False
        return self.stores_nothing(fn, me, seen)

    def function(self, name: str, seen: set) -> bool:
        if ("fn", name) in seen:
            return True
        fn = self.functions.get(name)
        if fn is None or fn.decorator_list or not self.module_function_once(name):
            return False
        seen.add(("fn", name))
        return self.stores_nothing(fn, None, seen)

    def stores_nothing(self, fn: ast.FunctionDef, me: Optional[str], seen: set) -> bool:
        """Only local names are bound; calls are this class's stateless methods, this module's
        stateless functions, TF/NumPy ops that keep nothing, pure builtins, or reading methods
        of a local value."""
        local = local_names(fn) - set(params_of(fn))
        if any(not isinstance(d, ast.Constant) for d in fn.args.defaults + [k for k in fn.args.kw_defaults if k]):
            return False  # a mutable default is state kept from call to call
        for n in ast.walk(fn):
            if n is not fn and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
                                              ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.Await,
                                              ast.Delete, ast.With, ast.AsyncWith, ast.Try, ast.NamedExpr)):
                return False
            if isinstance(n, (ast.Attribute, ast.Subscript, ast.Starred)) and isinstance(n.ctx, (ast.Store, ast.Del)):
                return False  # `self.h = ...`, `cache[k] = ...`, also as a loop or comprehension target
            if isinstance(n, ast.AugAssign) and not _counter(fn, n.target):
                return False  # `c = CACHE; c += [t]` fills the global list in place (an adversarial run)
            if isinstance(n, ast.Call) and not self._call(n, me, seen, local):
                return False
        return True

    def _call(self, n: ast.Call, me: Optional[str], seen: set, local: set) -> bool:
        f = n.func
        handed = list(n.args) + [k.value for k in n.keywords]
        if any(self._callable(a) for a in handed):
            return False  # `tf.nest.map_structure(cache.append, ts)`, `max(ts, key=record)`
        if isinstance(f, ast.Name):
            if f.id in local:
                return False
            if f.id in self.functions:
                return self.function(f.id, seen)
            return f.id in _PURE_BUILTIN_NAMES and not n.keywords and f.id not in self.bound_names
        if not isinstance(f, ast.Attribute):
            return False
        if me is not None and isinstance(f.value, ast.Name) and f.value.id == me:
            return self.method(f.attr, seen)
        chain = _chain(f)
        if chain is None:
            return False
        if chain[0] in self.pure and chain[0] not in local:  # tf.matmul, np.sqrt, tf.nn.relu
            return not set(chain) & (_STORING | _STORING_NAMESPACES | STATE_READS | GRAPH_WALKS)
        # `x.get_shape()` on a local value, when the project defines nothing of that name (a
        # project module's `store.get(out)` stored its argument: an adversarial run)
        return len(chain) == 2 and chain[0] in local and f.attr in _READING_METHODS \
            and self._defs(f.attr) == []

    def _callable(self, a: ast.AST) -> bool:
        """An argument that may be a function the callee runs: a lambda, the project's function
        or method, or a method taken off an object (``cache.append``, ``self.net``)."""
        if isinstance(a, ast.Starred):
            a = a.value
        if isinstance(a, ast.Lambda):
            return True
        if isinstance(a, ast.Name):
            return a.id in self.functions or a.id in self.methods
        return isinstance(a, ast.Attribute) and (a.attr in self.methods or a.attr in self.functions
                                                 or a.attr in _CHANGER_NAMES)


#: methods that change their object, and names of methods that keep what they are given
_CHANGER_NAMES = CHANGING_METHODS | {"__setitem__", "__setattr__", "put", "write", "send", "store", "record", "save"}


def _counter(fn: ast.FunctionDef, target: ast.AST) -> bool:
    """``i += 1`` on a local every other binding of which is a number: an int, never an object
    an in-place operator could change (`c = 0; c, d = CACHE, 1; c += [l]` is not one)."""
    values = _plain_values(fn, target.id, augmented=True) if isinstance(target, ast.Name) else None
    return bool(values) and all(isinstance(v, ast.Constant) and type(v.value) in (int, float) for v in values)


def _plain_values(fn: ast.FunctionDef, name: str, augmented: bool = False) -> Optional[list]:
    """The values of ``name = v`` in ``fn`` when nothing else binds ``name`` there (no parameter,
    loop, `with`, unpacking, walrus, annotation, import; an augmented assignment only when
    ``augmented``); else None."""
    plain, values = set(), []
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Name) and t.id == name:
                    plain.add(id(t))
                    values.append(n.value)
        elif augmented and isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == name:
            plain.add(id(n.target))
    if any(name in _binds(n) and id(n) not in plain for n in ast.walk(fn) if n is not fn):
        return None
    return values


def _binds(n: ast.AST) -> set:
    if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
        return {n.id}
    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {n.name}
    if isinstance(n, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in n.names}
    if isinstance(n, ast.arg):
        return {n.arg}
    if isinstance(n, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and n.name:
        return {n.name}
    if isinstance(n, (ast.Global, ast.Nonlocal)):
        return set(n.names)
    return set()


def _rebinds(fn: ast.FunctionDef, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del)) for n in ast.walk(fn))


def _chain(f: ast.Attribute) -> Optional[list]:
    """``tf.nn.relu`` -> ["tf", "nn", "relu"]; None for a call or subscript in the chain."""
    out = []
    node: ast.AST = f
    while isinstance(node, ast.Attribute):
        out.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id] + out[::-1]
