"""Calls of the project's methods that store nothing (``u1 = self.net_u1(x1, y1)`` in a PINN).

A line calling the project's code "writes program state" (``_grad_plan.item_for``): the callee
may set an attribute that a later line reads. Then every later line that reads state depends
on it, and a tape for the second of seven sub-networks had to open at the first, under
assumptions about the first one's inputs (a held-out corpus: XPINN's 24 sites). A method whose
body (and everything it calls) assigns only its own local names, changes no object, and makes
no graph collection entry adds nothing but its return value.
"""
from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from migrator._flow_model import GRAPH_WALKS, STATE_READS, dunder_kind
from migrator._plugins._aliases import _READING_METHODS
from migrator._plugins._grad_methods import method_flow
from migrator.object_flow import ObjectFlow, local_names, params_of

#: TF/NumPy calls that store something in the graph or a variable (besides their result)
_STORING = frozenset({"add_to_collection", "add_to_collections", "add_loss", "get_variable", "Variable",
                      "get_local_variable", "assign", "assign_add", "assign_sub", "scatter_update", "scatter_add",
                      "scatter_sub", "py_func", "py_function", "numpy_function", "set_random_seed", "seed",
                      "make_template", "Print", "print", "summary", "scalar", "histogram", "image"})
_BANNED_BUILTINS = frozenset({"setattr", "delattr", "vars", "globals", "locals", "eval", "exec", "__import__",
                              "open", "input"})


def stateless_self_call(rw, call: cst.Call) -> bool:
    """``self.m(...)`` inside a method of a module-level class, where ``m`` is the class's only
    method of that name in the project (no subclass overrides it, nothing replaces it) and
    stores nothing, nor does anything it calls."""
    if not isinstance(call.func, cst.Attribute) or not isinstance(call.func.value, cst.Name):
        return False
    fn = rw.parents.get(call)
    while fn is not None and not isinstance(fn, cst.FunctionDef):
        fn = rw.parents.get(fn)
    found = method_flow(rw, fn) if fn is not None else None
    if found is None:
        return False
    flow, node = found
    me = params_of(node)[0]
    owner = flow.owner.get(id(node))
    if call.func.value.value != me or me in flow.rebound.get(id(node), ()) or owner is None:
        return False
    if any(dunder_kind(m) or m in _HOOKS for m in flow.methods):
        return False  # `a + b`, `w[l]`, `isinstance(...)` may run the project's own operator or hook
    return _stateless_method(flow, owner, call.func.attr.value, set())


def _stateless_method(flow: ObjectFlow, owner: tuple, name: str, seen: set) -> bool:
    defs = flow.dispatch(owner[1], name)
    if name in seen:
        return True
    if len(defs) != 1 or flow.replaced(name) or name.startswith("__"):
        return False
    seen.add(name)
    fn = defs[0]
    if fn.decorator_list or not params_of(fn) or params_of(fn)[0] in flow.rebound.get(id(fn), ()):
        return False
    return _stores_nothing(flow, fn, params_of(fn)[0], owner, seen)


def _stores_nothing(flow: ObjectFlow, fn: ast.FunctionDef, me: Optional[str], owner: tuple, seen: set) -> bool:
    """Only local names are bound; calls are this class's stateless methods, this module's
    functions that store nothing, TF/NumPy ops that keep nothing (no collection, layer, loss or
    summary: those a later line can read back), pure builtins, or reading methods of a value."""
    seen.add(id(fn))
    pure = flow.pure.get(owner[0], set())
    local = local_names(fn) - set(params_of(fn))
    if any(not isinstance(d, ast.Constant) for d in fn.args.defaults + [k for k in fn.args.kw_defaults if k]):
        return False  # a mutable default is state kept from call to call
    for n in ast.walk(fn):
        if n is not fn and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
                                          ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.Await,
                                          ast.Delete, ast.With, ast.AsyncWith, ast.Try, ast.NamedExpr)):
            return False
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.comprehension)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            names = [t for tgt in targets for t in ast.walk(tgt) if isinstance(t, (ast.Attribute, ast.Subscript,
                                                                                    ast.Starred))]
            if names:
                return False  # `self.h = ...`, `cache[k] = ...`
        if isinstance(n, ast.Call) and not _stateless_call(flow, n, me, owner, seen, pure, local):
            return False
    return True


def _stateless_call(flow: ObjectFlow, n: ast.Call, me: str, owner: tuple, seen: set, pure: set,
                    local: set) -> bool:
    f = n.func
    if isinstance(f, ast.Name) and f.id not in local and f.id in flow.functions:
        helper = _module_function(flow, owner, f.id)  # `neural_net(H, self.weights, self.biases)`
        return helper is not None and (id(helper) in seen or _stores_nothing(flow, helper, None, owner, seen))
    if isinstance(f, ast.Name):  # no `key=` (`max(ts, key=cache.append)` runs it)
        return f.id not in _BANNED_BUILTINS and f.id in _PURE_BUILTIN_NAMES and f.id not in local \
            and not n.keywords and not any(_callable_arg(flow, a) for a in n.args)
    if not isinstance(f, ast.Attribute):
        return False
    root: Optional[ast.AST] = f
    while isinstance(root, (ast.Attribute, ast.Call, ast.Subscript)):
        root = root.func if isinstance(root, ast.Call) else root.value
    if isinstance(f.value, ast.Name) and f.value.id == me:
        return _stateless_method(flow, owner, f.attr, seen)
    if not isinstance(root, ast.Name):
        return False
    if root.id in pure and root.id not in local:  # tf.matmul, np.sqrt, tf.nn.relu
        chain = _chain(f)  # and no function handed to it (`tf.nest.map_structure(cache.append, ts)`)
        return chain is not None and not (set(chain) & (_STORING | _STORING_NAMESPACES | STATE_READS | GRAPH_WALKS)) \
            and not any(_callable_arg(flow, a) for a in list(n.args) + [k.value for k in n.keywords])
    # `x.get_shape()` on a local value, when no project module or class defines a function or
    # method of that name (`store.get(out)` stored its argument: an adversarial run)
    return root.id in local and f.attr in _READING_METHODS and f.attr not in flow.methods \
        and f.attr not in flow.functions


#: TF namespaces whose functions may keep what they make where a later line reads it back
#: (`tf.losses.*` and layers fill collections, summaries too)
_STORING_NAMESPACES = frozenset({"losses", "summary", "layers", "contrib", "keras", "slim", "estimator", "train",
                                 "metrics", "compat", "v1", "experimental", "debugging", "io", "data", "saved_model",
                                 "Session", "InteractiveSession", "get_default_graph", "Graph"})


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


def _module_function(flow: ObjectFlow, owner: tuple, name: str) -> Optional[ast.FunctionDef]:
    """The module-level function ``name`` of the class's file: defined once there, undecorated."""
    tree = flow.project.tree(owner[0]) if flow.project is not None else None
    if tree is None:
        return None
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    binds = [n for n in ast.walk(tree) if isinstance(n, (ast.Name,)) and n.id == name
             and isinstance(n.ctx, ast.Store)]
    if len(defs) != 1 or defs[0].decorator_list or binds or name in flow.value_refs:
        return None
    return defs[0]


#: hooks a project class may define that run on reads, calls or checks of its objects
_HOOKS = frozenset({"__setattr__", "__delattr__", "__instancecheck__", "__subclasscheck__", "__contains__",
                    "__len__", "__bool__", "__eq__", "__hash__", "__array__", "__tf_tensor__", "__index__"})


def _callable_arg(flow: ObjectFlow, a: ast.AST) -> bool:
    """An argument that may be a function the callee runs: a lambda, the project's function or
    method (``record``, ``obj.stash``), or a changing method (``cache.append``)."""
    if isinstance(a, ast.Starred):
        a = a.value
    if isinstance(a, ast.Lambda):
        return True
    name = a.id if isinstance(a, ast.Name) else a.attr if isinstance(a, ast.Attribute) else None
    return name is not None and (name in flow.functions or name in flow.methods or name in _CHANGER_NAMES)


_CHANGER_NAMES = frozenset({"append", "extend", "insert", "update", "setdefault", "add", "pop", "remove", "clear",
                            "__setitem__", "__setattr__", "put", "write", "send", "store", "record", "save"})


#: builtins that only compute from their arguments
_PURE_BUILTIN_NAMES = frozenset({"len", "range", "float", "int", "abs", "min", "max", "sum", "zip", "enumerate",
                                 "list", "tuple", "dict", "isinstance", "round", "reversed", "bool", "str", "pow",
                                 "divmod", "all", "any"})
