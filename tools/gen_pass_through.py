#!/usr/bin/env python
"""Generate ``migrator/data/pass_through.json``: public TF functions that may hand back an argument.

The tape proof opens a tape where a gradient source is made when that source is
*fresh*: a new tensor no earlier line could have used.  The result of a TF call
is fresh only when the call cannot hand back one of its arguments itself.  Many
can, for some inputs: ``tf.image.central_crop(image, 1.0)`` is ``image``,
``tf.keras.activations.linear(x)`` is ``x``, ``tf.compat.v1.image.resize_images``
of an image already of that size is the image (through the private
``_resize_images_common``), ``tf.cast`` to the same dtype is its input,
``tf.math.round`` of an integer tensor is that tensor.

This script finds them by static analysis of each public function's Python
source (through its decorators and dispatch wrappers, ``inspect.unwrap``).  A
function *may return* a parameter when a ``return`` (or ``yield``) hands back

* the parameter, a part of it (``p[0]``, ``p.values``) or a container holding it
  (``[p, q]``, a dict filled with ``d[k] = p``), or a local bound to one of those
  on some path to that return (by assignment, ``for``, ``with``, a comprehension,
  ``out.append(p)``, or a ``convert_to_tensor``-like call);
* ``G(..., e, ...)`` where ``G`` (resolved through the function's globals and
  closure, ``module.func`` chains included) may return the parameter ``e`` is
  bound to, and ``e`` is such a value.  Summaries are a least fixed point over
  every function reached, memoised per function and per *context* (the
  functions its callable parameters are bound to: ``nest.map_structure(identity,
  x)`` calls ``identity``, a new tensor), depth-limited.

It is a soundness table, so it is conservative: a call the analysis cannot
follow (a method of a value, a callable parameter, C code, numpy) may return any
argument and the value it is a method of; a call that is handed a list or dict of
the function may store its other arguments there; a function too deep to follow
may return any argument.  A call of a generated op wrapper (``gen_*_ops``),
``_apply_op_helper``, an eager ``execute`` or a graph's op constructor makes a
new tensor; ``MODELS`` gives the summaries of a few library helpers the
analysis cannot read precisely, each with its reason.

Names are normalised as :func:`migrator.tfnames.normalize` does
(``tensorflow.image.central_crop``; a ``compat.v1`` name is ``tensorflow.X``).  A
name is recorded when its TF1 or its TF2 function may hand back an argument.

Usage::

    python tools/gen_pass_through.py            # writes migrator/data/pass_through.json
    python tools/gen_pass_through.py --stdout --why tensorflow.image.central_crop tensorflow.identity
"""
from __future__ import annotations

import argparse
import ast
import builtins
import inspect
import json
import os
import sys
import textwrap
import time
import types
import warnings
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
warnings.filterwarnings("ignore")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "migrator", "data", "pass_through.json")

#: how deep the public namespaces are walked below ``tf`` and ``tf.compat.v1``
MAX_NS_DEPTH = 4
#: public API modules (``tensorflow._api.v2.math``, ``keras._tf_keras.keras.backend``); the real
#: packages some API modules also expose (``tf.dtensor.python``) are not API
API_MODULE_PREFIXES = ("tensorflow._api.", "keras.")
PRIVATE_MODULE_PREFIXES = ("keras.src.",)
#: namespaces never walked: no tensor functions a gradient source is bound to, or walked as a root
SKIP_NAMESPACES = {"compat", "tools", "tpu", "distribute", "saved_model", "io", "summary", "data", "lite",
                   "estimator", "feature_column", "profiler", "config", "sysconfig", "version", "errors", "test",
                   "autograph", "mlir", "flags", "app", "gfile", "logging", "resource_loader", "user_ops",
                   "quantization", "queue", "python_io", "experimental.dtensor", "types",
                   "keras.applications", "keras.datasets", "keras.utils", "keras.callbacks", "keras.mixed_precision",
                   "keras.preprocessing", "keras.export", "keras.saving", "keras.models", "keras.dtensor",
                   "keras.distribution", "keras.wrappers", "keras.visualization", "keras.tree", "keras.config"}
#: how deep calls are followed; deeper, a call may return any argument
MAX_CALL_DEPTH = 25

#: attributes of a value (and methods: ``t.get_shape()``) that are never a tensor it was given
META_ATTRS = frozenset({
    "shape", "dtype", "name", "graph", "device", "ndim", "rank", "ndims", "base_dtype", "as_numpy_dtype",
    "is_floating", "is_complex", "is_integer", "is_bool", "real_dtype", "__class__", "__name__", "_shape_tuple",
    "_rank", "_id", "value_index", "_dtype", "_shape", "get_shape", "num_elements", "as_list", "is_fully_defined",
    "_type_spec", "type", "node_def", "op_def", "experimental_ref", "ref", "flat_values_spec", "_ragged_rank",
    "ragged_rank", "row_splits_dtype", "with_rank", "with_rank_at_least", "merge_with", "most_specific_compatible_shape",
    "is_compatible_with", "_handle_data", "dims", "__len__", "_num_elements", "as_shape", "as_datatype_enum",
    "is_numpy_compatible", "_as_tf_output", "get_attr", "_get_attr_type", "_get_attr_bool", "_get_attr_int",
})
#: builtins whose result may hold (or be) what they are given
PASS_BUILTINS = frozenset({"list", "tuple", "sorted", "reversed", "iter", "next", "min", "max", "dict", "set",
                           "frozenset", "getattr", "filter", "zip", "map", "vars", "super", "enumerate", "sum"})
#: functions (``module.qualname``, or a C function's name) that make a new tensor: graph op
#: creation and eager execution
FRESH_MAKERS = frozenset({
    "tensorflow.python.framework.op_def_library._apply_op_helper",
    "tensorflow.python.framework.op_def_library.apply_op",
    "tensorflow.python.eager.execute.quick_execute",
    "tensorflow.python.eager.execute.execute_with_cancellation",
    "tensorflow.python.eager.execute.execute",
    "tensorflow.python.framework.ops.Graph.create_op",
    "tensorflow.python.framework.ops.Graph._create_op_internal",
    "tensorflow.python.framework.ops._create_c_op",
    "TFE_Py_FastPathExecute", "TFE_Py_Execute", "TFE_Py_ExecuteCancelable",
})
#: methods whose result is new, made of none of their arguments: a graph's op constructors
#: (``g._create_op_internal(...).outputs[0]``), a variable's reads (``var.sparse_read(i)``), Keras's
#: ``Operation(...).symbolic_call(x)`` (new KerasTensors, and only for KerasTensor inputs)
FRESH_METHODS = frozenset({"_create_op_internal", "create_op", "_create_op_from_tf_operation", "sparse_read",
                           "gather_nd", "symbolic_call", "_apply_op_helper", "numpy", "_numpy"})
#: context managers whose ``with ... as s`` value is a scope name or None, never an argument
SCOPE_MANAGERS = ("name_scope", "variable_scope", "op_scope", "colocate_with", "device", "control_dependencies",
                  "init_scope", "_name_scope", "name_scope_v1", "name_scope_v2", "internal_name_scope_v1")
#: methods that build a new object from their arguments, not from the value they are called on
#: (``spec._from_components(parts)`` rebuilds a composite of its parts)
NEW_OBJECT_METHODS = frozenset({"_from_components", "__tf_unflatten__", "_from_compatible_tensor_list",
                                "_from_tensor_list", "with_values", "with_flat_values", "format", "join",
                                "replace_gradient_components"})
#: methods that put their arguments into the (local) container they are called on
MUTATORS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "appendleft", "extendleft"})
#: conversion functions (by name) that return their first argument when it is already a tensor
CONVERT_NAMES = ("convert_to_tensor", "convert_n_to_tensor", "internal_convert_to_tensor",
                 "internal_convert_n_to_tensor", "convert_to_tensor_or")
#: composite tensors whose only float part is one argument: the others (indices, shapes) are
#: integer tensors, which no tape watches, so sharing them shares no source
VALUES_ONLY = {"IndexedSlices": "values", "SparseTensor": "values", "IndexedSlicesValue": "values",
               "SparseTensorValue": "values"}
#: summaries given, not read: (module, qualified name) -> the parameters the function may return
MODELS = {
    # nest's `sequence_like(instance, args)` builds a new container shaped like `instance` holding
    # the elements of `args`: `instance` is a template (its keys, its type, its `_type_spec`, read
    # through `type(instance)(...)` and methods the analysis cannot follow)
    ("tensorflow.python.util.nest_util", "sequence_like"): frozenset({"args"}),
    ("tensorflow.python.util.nest", "_sequence_like"): frozenset({"args"}),
    # op callbacks (`tf.debugging.experimental.enable_dump_debug_info`'s) may replace an op's
    # outputs with new tensors; they never hand back the op's inputs
    ("tensorflow.python.framework.op_callbacks", "invoke_op_callbacks"): frozenset({"outputs"}),
    # `tf.constant(t)` hands back `t` only for an EagerTensor `t`; TF1 graph code (tf.gradients
    # runs in a graph only) holds none, and `tf.constant` of a graph tensor raises: where the
    # original program ran, the argument was a Python or numpy value, which makes a new tensor
    ("tensorflow.python.framework.constant_op", "_constant_eager_impl"): frozenset(),
    # `tf.gradients` makes the tensors it returns: grad_ys are wrapped in `identity` (`grad_ys_0`),
    # every other gradient is made from them by the ops' gradient functions, an unconnected source
    # gives None or `zeros_like`; the analysis cannot follow the registry of gradient functions
    # (the tape proof has taken `tf.gradients(...)` for a new tensor all along: second-order code
    # differentiates w.r.t. `[y] + grads`, fixtures/grad_sources_concat_with_gradients)
    ("tensorflow.python.ops.gradients_util", "_GradientsHelper"): frozenset(),
}

_SEQUENCE_DISPLAYS = (ast.List, ast.Tuple, ast.ListComp)
Ctx = FrozenSet[Tuple[str, Tuple[int, ...]]]  # parameter -> ids of the callables it is bound to
Key = Tuple[int, Ctx]
State = Dict[str, FrozenSet[str]]  # local name -> the parameters it may alias (or hold)
_EMPTY: FrozenSet[str] = frozenset()


class Params:
    """A def's parameters, in binding order."""

    def __init__(self, args: ast.arguments, drop_first: bool = False) -> None:
        pos = [a.arg for a in list(args.posonlyargs) + list(args.args)]
        self.positional = pos[1:] if drop_first else pos
        self.vararg = args.vararg.arg if args.vararg else None
        self.kwonly = [a.arg for a in args.kwonlyargs]
        self.kwarg = args.kwarg.arg if args.kwarg else None
        self.all = set(self.positional) | set(self.kwonly) | {p for p in (self.vararg, self.kwarg) if p}

    def bind(self, call: ast.Call) -> Dict[str, List[Tuple[ast.AST, bool]]]:
        """param -> [(argument expression, definitely bound to it)]: after a ``*a`` splat an
        argument may bind to any later positional parameter, a ``**k`` splat to any parameter."""
        out: Dict[str, List[Tuple[ast.AST, bool]]] = {}
        definite = set()
        i, shifted = 0, False
        for a in call.args:
            if isinstance(a, ast.Starred) or shifted:
                shifted = True
                for p in self.positional[i:] + ([self.vararg] if self.vararg else []):
                    out.setdefault(p, []).append((a, False))
                continue
            if i < len(self.positional):
                out.setdefault(self.positional[i], []).append((a, True))
                definite.add(self.positional[i])
            elif self.vararg:
                out.setdefault(self.vararg, []).append((a, False))
            i += 1
        for kw in call.keywords:
            if kw.arg is None:
                for p in [p for p in self.positional + self.kwonly if p not in definite] + \
                        ([self.kwarg] if self.kwarg else []):
                    out.setdefault(p, []).append((kw.value, False))
            elif kw.arg in self.positional or kw.arg in self.kwonly:
                out.setdefault(kw.arg, []).append((kw.value, True))
            elif self.kwarg:
                out.setdefault(self.kwarg, []).append((kw.value, False))
        return out


class FnInfo:
    """What the analysis needs of one Python function: its def, its names, its scope."""

    def __init__(self, fn: Optional[types.FunctionType], node: ast.AST, parent: Optional["FnInfo"] = None) -> None:
        self.fn = fn
        self.node = node
        self.params = Params(node.args)
        self.globals = getattr(fn, "__globals__", {}) if parent is None else parent.globals
        self.closure: Dict[str, object] = {} if parent is None else parent.closure
        #: the enclosing function's names, for a def nested in it (its free variables)
        self.outer: Set[str] = set() if parent is None else (parent.locals | parent.outer)
        self.parent = parent
        self.nested: Dict[str, "NestedFn"] = {}
        code = getattr(fn, "__code__", None)
        if code is not None and getattr(fn, "__closure__", None):
            for name, cell in zip(code.co_freevars, fn.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:
                    pass
        self.defaults: Dict[str, object] = {}
        pos = [a.arg for a in list(node.args.posonlyargs) + list(node.args.args)]
        for name, value in zip(reversed(pos), reversed(getattr(fn, "__defaults__", None) or ())):
            self.defaults[name] = value
        self.defaults.update(getattr(fn, "__kwdefaults__", None) or {})
        self.binds: Dict[str, List[ast.AST]] = {}  # local -> every value bound to it (callables only)
        self.locals: Set[str] = set(self.params.all)
        self.called: Set[str] = set()  # names called or passed to a call (maybe functions)
        self.direct: Set[str] = set()  # names called
        self.containers: Set[str] = set()  # locals bound to a new list, dict or set
        self.first_line = getattr(code, "co_firstlineno", 1) if parent is None else parent.first_line
        defs: Dict[str, List[ast.AST]] = {}
        for n in _own_nodes(node):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not node:
                self.locals.add(n.name)
                defs.setdefault(n.name, []).append(n)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                self.locals.add(n.id)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                self.locals.add(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                self.locals |= {(a.asname or a.name).split(".")[0] for a in n.names}
            elif isinstance(n, (ast.Global, ast.Nonlocal)):
                self.locals -= set(n.names)
            elif isinstance(n, ast.Assign):
                for t in n.targets:
                    if isinstance(t, ast.Name):
                        self.binds.setdefault(t.id, []).append(n.value)
                        if _container_value(n.value):
                            self.containers.add(t.id)
            elif isinstance(n, ast.Call):
                for a in [n.func] + list(n.args) + [k.value for k in n.keywords]:
                    if isinstance(a, ast.Name):
                        self.called.add(a.id)
                if isinstance(n.func, ast.Name):
                    self.direct.add(n.func.id)
        self.outer -= self.locals
        for name, nodes in defs.items():
            # a def nested here, bound by nothing else: analysed as a function of this one's scope
            if len(nodes) == 1 and isinstance(nodes[0], (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    name not in self.binds and name not in self.params.all and \
                    all(_decorator_name(d) in TRANSPARENT_DECORATORS for d in nodes[0].decorator_list):
                self.nested[name] = NestedFn(nodes[0], self)


#: decorators of a nested def that hand back (a part of) what the def returns: a custom gradient's
#: function returns `(y, grad_fn)` and the decorated call gives `y`
TRANSPARENT_DECORATORS = frozenset({"custom_gradient"})
#: a free variable of a nested def: stands for what the enclosing name holds when the def is called
OUTER = "<outer>:"


def _container_value(v: ast.AST) -> bool:
    if isinstance(v, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
        return True
    f = v.func if isinstance(v, ast.Call) else None
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
    return name in ("list", "dict", "set", "defaultdict", "OrderedDict", "deque")


def _decorator_name(d: ast.AST) -> str:
    d = d.func if isinstance(d, ast.Call) else d
    return d.attr if isinstance(d, ast.Attribute) else getattr(d, "id", "")


class NestedFn:
    """A def nested in an analysed function (no function object until the enclosing one runs)."""

    def __init__(self, node: ast.AST, parent: "FnInfo") -> None:
        self.node = node
        self.parent = parent
        self.__name__ = node.name
        self.__qualname__ = f"{getattr(parent.fn, '__qualname__', '?')}.<locals>.{node.name}"
        self.__module__ = getattr(parent.fn, "__module__", None) or getattr(parent, "module", None)
        self._info: Optional[FnInfo] = None

    def info(self) -> FnInfo:
        if self._info is None:
            self._info = FnInfo(None, self.node, self.parent)
            self._info.module = self.__module__
        return self._info

    def __call__(self, *a, **k):  # callable(), for contexts; never called
        raise TypeError("not callable")


def _own_nodes(fn_node: ast.AST):
    """The nodes of a def's body, not of the defs, lambdas and classes nested in it."""
    todo = list(fn_node.body)
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        todo.extend(ast.iter_child_nodes(n))


def _lazy_module(obj) -> bool:
    """Keras's ``tf = LazyModule("tensorflow")``: a module imported on first use."""
    return type(obj).__name__ in ("LazyModule", "LazyLoader", "KerasLazyLoader")


def _qualname(obj) -> str:
    return f"{getattr(obj, '__module__', None) or ''}.{getattr(obj, '__qualname__', getattr(obj, '__name__', ''))}"


def _unwrap(obj):
    try:
        return inspect.unwrap(obj)
    except Exception:  # noqa: BLE001
        return obj


def _join(a: State, b: State) -> State:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, _EMPTY) | v
    return out


class _Unknown(Exception):
    """A callable the analysis cannot name."""


class Analyzer:
    """``may_return(fn)``: the parameters of ``fn`` whose value (or a part of it) ``fn`` may hand
    back; a least fixed point over every function reached, computed in rounds."""

    def __init__(self) -> None:
        self.summary: Dict[Key, FrozenSet[str]] = {}
        self.round_done: Set[Key] = set()
        self.stack: List[Key] = []
        self.infos: Dict[int, Optional[FnInfo]] = {}
        self.keep: Dict[int, object] = {}  # analysed objects stay alive: their ids stay unique
        self.changed = False
        self.why: Dict[Key, Tuple[str, Optional[Key]]] = {}
        self._trace: List[Key] = []
        try:
            from tensorflow.python.framework.composite_tensor import CompositeTensor
            self.composite: tuple = (CompositeTensor,)
        except Exception:  # noqa: BLE001
            self.composite = ()

    def _info(self, fn) -> Optional[FnInfo]:
        key = id(fn)
        if isinstance(fn, NestedFn):
            self.keep[key] = fn
            return fn.info()
        if key not in self.infos:
            self.keep[key] = fn
            self.infos[key] = None
            try:
                tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
            except (OSError, TypeError, SyntaxError, IndentationError):
                tree = None
            if tree is not None and tree.body and isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.infos[key] = FnInfo(fn, tree.body[0])
        return self.infos[key]

    @staticmethod
    def is_fresh_maker(obj) -> bool:
        mod = getattr(obj, "__module__", None) or ""
        if getattr(obj, "__name__", "") in FRESH_MAKERS or _qualname(obj) in FRESH_MAKERS:
            return True
        # the generated op wrappers (`gen_math_ops.sin`, `gen_nn_ops.relu`...) make one op each
        return mod.startswith("tensorflow.") and mod.rsplit(".", 1)[-1].startswith("gen_")

    def may_return(self, fn, ctx: Ctx = frozenset(), depth: int = 0) -> Optional[FrozenSet[str]]:
        """Parameters ``fn`` may return; None when ``fn`` has no Python source (C code)."""
        fn = fn if isinstance(fn, NestedFn) else _unwrap(fn)
        if self.is_fresh_maker(fn):
            return _EMPTY
        model = MODELS.get((getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)))
        if model is not None:
            return model
        info = self._info(fn)
        if info is None:
            return None
        key = (id(fn), ctx)
        if key in self.round_done or key in self.stack:
            return self.summary.get(key, _EMPTY)
        if depth > MAX_CALL_DEPTH:
            return frozenset(info.params.all)  # too deep to follow: any argument
        self.stack.append(key)
        try:
            walk = _Walk(self, info, dict(ctx), depth, key)
            walk.block(info.node.body, {p: frozenset({p}) for p in info.params.all})
            found = {p for p in walk.found if p in info.params.all or p.startswith(OUTER)}
        finally:
            self.stack.pop()
        result = frozenset(found) | self.summary.get(key, _EMPTY)
        if result != self.summary.get(key):
            self.changed = True
            self.summary[key] = result
        self.round_done.add(key)
        return result

    # -- callables -------------------------------------------------------------------------
    def resolve(self, info: FnInfo, func: ast.AST):
        """The object a global name or ``module.attr`` chain names, or None."""
        if isinstance(func, ast.Name):
            if func.id in info.locals:
                return None
            if func.id in info.closure:
                return info.closure[func.id]
            if func.id in info.globals:
                return info.globals[func.id]
            return getattr(builtins, func.id, None)
        if isinstance(func, ast.Attribute):
            base = self.resolve(info, func.value)
            if base is None or not (inspect.ismodule(base) or inspect.isclass(base) or _lazy_module(base)):
                return None
            try:
                if inspect.isclass(base):
                    got = inspect.getattr_static(base, func.attr)
                    return got.__func__ if isinstance(got, (staticmethod, classmethod)) else got
                return getattr(base, func.attr)
            except Exception:  # noqa: BLE001
                return None
        return None

    def callables(self, info: FnInfo, env, e: ast.AST, guard=None) -> List[object]:
        """The callables ``e`` may be; raises ``_Unknown`` when they cannot all be named."""
        guard = set() if guard is None else guard
        if isinstance(e, ast.Constant) and e.value is None:
            return []
        if isinstance(e, ast.BoolOp):
            return [c for v in e.values for c in self.callables(info, env, v, guard)]
        if isinstance(e, ast.IfExp):
            return self.callables(info, env, e.body, guard) + self.callables(info, env, e.orelse, guard)
        if isinstance(e, ast.Subscript):  # `ops = {1: max_pool1d, 2: max_pool2d}; op = ops[n]`
            return self.callables(info, env, e.value, guard)
        if isinstance(e, ast.Dict):
            return [c for v in e.values for c in self.callables(info, env, v, guard)]
        if isinstance(e, (ast.List, ast.Tuple)):
            return [c for v in e.elts for c in self.callables(info, env, v, guard)]
        if isinstance(e, ast.Name) and e.id in info.nested and e.id not in env:
            return [info.nested[e.id]]
        if isinstance(e, ast.Name) and e.id in info.outer:
            raise _Unknown()  # the enclosing function's name: whatever it holds when called
        if isinstance(e, ast.Name) and e.id in info.locals:
            if e.id in env:
                return [self.keep[i] for i in env[e.id] if self.keep.get(i) is not None]
            if e.id in info.params.all or e.id in guard or e.id not in info.binds:
                raise _Unknown()
            guard.add(e.id)
            return [c for v in info.binds[e.id] for c in self.callables(info, env, v, guard)]
        target = self.resolve(info, e)
        if target is None:
            raise _Unknown()
        if isinstance(target, dict):  # `_SORT_IMPL[direction](values)`: a module's table of functions
            return list(target.values())
        if isinstance(target, (list, tuple)):
            return list(target)
        return [target]

    def callee_ctx(self, callee: FnInfo, bound, info: FnInfo, env) -> Ctx:
        """The callables the callee's parameters are bound to by this call, where known."""
        out = []
        for p in sorted(callee.called & callee.params.all):
            exprs = bound.get(p, [])
            if not exprs:
                d = callee.defaults.get(p, ())
                if p in callee.direct and (d is None or (callable(d) and not inspect.isclass(d))):
                    self.keep.setdefault(id(d), d)
                    out.append((p, (id(d),)))
                continue
            if len(exprs) != 1 or not exprs[0][1]:
                continue
            try:
                fns = self.callables(info, env, exprs[0][0])
            except _Unknown:
                continue
            if not fns or not all(callable(f) for f in fns):
                continue
            for f in fns:
                self.keep.setdefault(id(f), f)
            out.append((p, tuple(sorted({id(f) for f in fns}))))
        return frozenset(out)


class _Walk:
    """One function's body, walked in order: which parameters each local may alias at each point
    (a path-insensitive, flow-sensitive may-alias), and which the returns hand back."""

    def __init__(self, an: Analyzer, info: FnInfo, env, depth: int, key: Key) -> None:
        self.an, self.info, self.env, self.depth, self.key = an, info, env, depth, key
        self.found: Set[str] = set()

    # -- statements ------------------------------------------------------------------------
    def block(self, stmts, st: State) -> State:
        for s in stmts:
            st = self.stmt(s, st)
        return st

    def stmt(self, s: ast.AST, st: State) -> State:
        if isinstance(s, (ast.Return, ast.Expr)) and isinstance(getattr(s, "value", None), (ast.Yield, ast.YieldFrom)):
            s = ast.copy_location(ast.Return(value=s.value.value), s)
        if isinstance(s, ast.Return):
            if s.value is not None:
                self._walrus(s.value, st)
                mark = len(self.an._trace)
                got = frozenset(p for p in self.expr(s.value, st) if p in self.info.params.all or p.startswith(OUTER))
                if got - self.found and self.key not in self.an.why:
                    callee = self.an._trace[mark] if len(self.an._trace) > mark else None
                    line = self.info.first_line + s.lineno - 1
                    self.an.why[self.key] = (f"{ast.unparse(s.value)[:100]} (line {line})", callee)
                del self.an._trace[mark:]
                self.found |= got
            return st
        if isinstance(s, ast.Assign):
            self._walrus(s.value, st)
            st = self._stored_in_containers(s.value, st)
            value = self.expr(s.value, st)
            st = dict(st)
            for t in s.targets:
                if isinstance(t, (ast.Tuple, ast.List)) and isinstance(s.value, (ast.Tuple, ast.List)) and \
                        len(t.elts) == len(s.value.elts) and not any(
                            isinstance(x, ast.Starred) for x in list(t.elts) + list(s.value.elts)):
                    parts = [self.expr(v, st) for v in s.value.elts]  # `a, b = x, y`: pairwise
                    for tt, part in zip(t.elts, parts):
                        self.assign(tt, part, st)
                else:
                    self.assign(t, value, st)
            return st
        if isinstance(s, (ast.AnnAssign, ast.AugAssign)):
            if s.value is None:
                return st
            self._walrus(s.value, st)
            value = self.expr(s.value, st)
            st = dict(st)
            if isinstance(s, ast.AugAssign):  # `out += [x]` extends the list in place: old and new
                value = value | self.expr(s.target, st)
            self.assign(s.target, value, st)
            return st
        if isinstance(s, ast.Expr):
            self._walrus(s.value, st)
            st = self._stored_in_containers(s.value, st)
            v = s.value
            if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr in MUTATORS and \
                    isinstance(v.func.value, ast.Name) and v.func.value.id in self.info.locals:
                args = [a for a in v.args] + [k.value for k in v.keywords]
                st = dict(st)
                name = v.func.value.id
                st[name] = st.get(name, _EMPTY) | frozenset().union(*(self.expr(a, st) for a in args))
            return st
        if isinstance(s, ast.If):
            self._walrus(s.test, st)
            return _join(self.block(s.body, st), self.block(s.orelse, st))
        if isinstance(s, (ast.For, ast.AsyncFor, ast.While)):
            if isinstance(s, ast.While):
                self._walrus(s.test, st)
                it = None
            else:
                it = self.iter_parts(s.target, s.iter, st)
            entry = st
            for _ in range(10):
                body_in = dict(entry)
                if it is not None:
                    self.assign_iter(s.target, it, body_in)
                out = self.block(s.body, body_in)
                new = _join(entry, out)
                if new == entry:
                    break
                entry = new
            return self.block(s.orelse, entry)
        if isinstance(s, (ast.With, ast.AsyncWith)):
            st = dict(st)
            for item in s.items:
                # `with scope(x) as s`: what __enter__ gives (name scopes give strings)
                c = item.context_expr
                f = c.func if isinstance(c, ast.Call) else None
                scope = (f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")) in SCOPE_MANAGERS
                v = _EMPTY if scope else self.expr(c, st)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, v, st)
            return self.block(s.body, st)
        if isinstance(s, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            body = self.block(s.body, st)
            # a handler may start anywhere in the body: from the join of what comes before and after
            start = _join(st, body)
            outs = [self.block(s.orelse, body)]
            for h in s.handlers:
                hs = dict(start)
                if h.name:
                    hs[h.name] = _EMPTY
                outs.append(self.block(h.body, hs))
            end = outs[0]
            for o in outs[1:]:
                end = _join(end, o)
            return self.block(s.finalbody, end) if s.finalbody else end
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            st = dict(st)
            st[s.name] = _EMPTY
            return st
        if isinstance(s, ast.Match):
            self._walrus(s.subject, st)
            subject = self.expr(s.subject, st)
            out = st
            for case in s.cases:
                cs = dict(st)
                for n in ast.walk(case.pattern):
                    for name in [getattr(n, "name", None), getattr(n, "rest", None)]:
                        if isinstance(name, str):
                            cs[name] = subject
                out = _join(out, self.block(case.body, cs))
            return out
        if isinstance(s, (ast.Delete, ast.Import, ast.ImportFrom)):
            st = dict(st)
            for n in ast.walk(s):
                if isinstance(n, ast.Name):
                    st[n.id] = _EMPTY
                elif isinstance(n, ast.alias):
                    st[(n.asname or n.name).split(".")[0]] = _EMPTY
            return st
        for child in ast.iter_child_nodes(s):  # raise, assert, global...: only walrus bindings
            if isinstance(child, ast.expr):
                self._walrus(child, st)
        return st

    def iter_parts(self, target: ast.AST, it: ast.AST, st: State):
        """What each name of a ``for`` target may alias: ``for x, g in zip(xs, grads)`` pairs them,
        ``for i, x in enumerate(xs)`` counts; otherwise every name may be any element."""
        if isinstance(target, ast.Tuple) and isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and \
                it.func.id in ("zip", "enumerate") and it.func.id not in self.info.locals and \
                not it.keywords and not any(isinstance(a, ast.Starred) for a in list(it.args) + list(target.elts)):
            parts = [self.expr(a, st) for a in it.args]
            if it.func.id == "enumerate" and len(parts) == 1:
                parts = [_EMPTY] + parts
            if len(parts) == len(target.elts):
                return parts
        return self.expr(it, st)

    def assign_iter(self, target: ast.AST, parts, st: State) -> None:
        if isinstance(parts, list):
            for t, part in zip(target.elts, parts):
                self.assign(t, part, st)
        else:
            self.assign(target, parts, st)

    def _stored_in_containers(self, e: ast.AST, st: State) -> State:
        """``_SetGrad(grads, t, g)`` may store ``g`` in the local dict ``grads``: a container of this
        function handed to a call may afterwards hold anything else that call was given."""
        hits = []
        for n in ast.walk(e):
            if not isinstance(n, ast.Call) or isinstance(n.func, ast.Name) and n.func.id in dir(builtins) \
                    and n.func.id not in self.info.locals:
                continue
            args = list(n.args) + [k.value for k in n.keywords]
            names = [a.id for a in args if isinstance(a, ast.Name) and a.id in self.info.containers]
            if names and len(args) > 1:
                hits.append((names, args))
        if not hits:
            return st
        st = dict(st)
        for names, args in hits:
            got = frozenset().union(*(self.expr(a, st) for a in args))
            for name in names:
                st[name] = st.get(name, _EMPTY) | got
        return st

    def _walrus(self, e: ast.AST, st: State) -> None:
        """``(y := p)`` inside an expression binds ``y`` (weakly: it may not run)."""
        for n in ast.walk(e):
            if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name):
                st[n.target.id] = st.get(n.target.id, _EMPTY) | self.expr(n.value, st)

    def assign(self, target: ast.AST, value: FrozenSet[str], st: State, weak: bool = False) -> None:
        if isinstance(target, ast.Name):
            st[target.id] = (st.get(target.id, _EMPTY) | value) if weak else value
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self.assign(t, value, st, weak)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, value, st, weak)
        elif isinstance(target, ast.Subscript):
            # `d[k] = v`: the container d now holds v as well
            self.assign(target.value, value, st, weak=True) if isinstance(target.value, ast.Name) else None
        # `obj.attr = v` (`ret._handle_data = ...`): an attribute is no element of a nest

    # -- expressions -------------------------------------------------------------------------
    def expr(self, e: ast.AST, st: State) -> FrozenSet[str]:
        ex = lambda x: self.expr(x, st)  # noqa: E731
        if isinstance(e, ast.Name):
            if e.id in self.info.locals:
                return st.get(e.id, frozenset({e.id}) if e.id in self.info.params.all else _EMPTY)
            if e.id in self.info.outer:  # what the enclosing function's name holds when this runs
                return frozenset({f"{OUTER}{id(self.info.parent)}:{e.id}"})
            return _EMPTY  # a global or builtin: no argument of this call
        if isinstance(e, ast.Attribute):
            # `sp.values`, `x.op.inputs[0]`: a part of what was given; never metadata
            return _EMPTY if e.attr in META_ATTRS else ex(e.value)
        if isinstance(e, (ast.Subscript, ast.Starred, ast.NamedExpr, ast.Await)):
            return ex(e.value)
        if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
            return frozenset().union(*(ex(x) for x in e.elts))
        if isinstance(e, ast.Dict):
            return frozenset().union(*(ex(x) for x in e.values))
        if isinstance(e, ast.IfExp):
            return ex(e.body) | ex(e.orelse)
        if isinstance(e, ast.BoolOp):
            return frozenset().union(*(ex(x) for x in e.values))
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Mult)):
            # `[x] + rest`, `values * 2`: Python sequences joined or repeated hold what they held;
            # a float side, or a TF function's result, makes it tensor arithmetic (a new op)
            if any(self._tensor_valued(side) for side in (e.left, e.right)):
                return _EMPTY
            seqs = [side for side in (e.left, e.right) if isinstance(side, _SEQUENCE_DISPLAYS)]
            if isinstance(e.op, ast.Mult) and len(seqs) == 1:
                return ex(seqs[0])  # `[1] * (n + 2)`: the other side is a count
            return ex(e.left) | ex(e.right)
        if isinstance(e, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = dict(st)
            for gen in e.generators:
                self.assign_iter(gen.target, self.iter_parts(gen.target, gen.iter, inner), inner)
            return self.expr(e.value if isinstance(e, ast.DictComp) else e.elt, inner)
        if isinstance(e, ast.Call):
            return self.call(e, st)
        return _EMPTY  # constants, comparisons, other arithmetic (a new op), lambdas, f-strings

    def _tensor_valued(self, e: ast.AST) -> bool:
        if isinstance(e, ast.Constant) and isinstance(e.value, (float, complex)):
            return True
        if isinstance(e, ast.Call):
            # a TF or Keras function's result is a tensor: `x * sigmoid(x)` is arithmetic, and a
            # tensor joined to a list is a tensor too
            target = _unwrap(self.an.resolve(self.info, e.func))
            mod = getattr(target, "__module__", None) or ""
            return inspect.isfunction(target) and mod.split(".")[0] in ("tensorflow", "keras")
        return False

    def call(self, call: ast.Call, st: State) -> FrozenSet[str]:
        ex = lambda x: self.expr(x, st)  # noqa: E731
        every = list(call.args) + [k.value for k in call.keywords]
        all_args = lambda: frozenset().union(*(ex(a) for a in every))  # noqa: E731
        fname = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
        try:
            targets = self.an.callables(self.info, self.env, call.func)
        except _Unknown:
            targets = None
        if targets is None:
            method = isinstance(call.func, ast.Attribute)
            if fname in FRESH_MAKERS or (method and fname in FRESH_METHODS) or (method and fname in META_ATTRS):
                return _EMPTY
            if fname.startswith(CONVERT_NAMES):
                return ex(call.args[0]) if call.args else all_args()
            # a value's method or a callable argument: it may hand back anything it can reach
            if method:
                return all_args() | (_EMPTY if fname in NEW_OBJECT_METHODS else ex(call.func.value))
            return all_args() | ex(call.func)
        out: FrozenSet[str] = _EMPTY
        for target in targets:
            out |= self.call_one(call, target, ex, all_args)
        return out

    def bound_results(self, got, bound, ex) -> FrozenSet[str]:
        """What a call hands back, given the callee's summary: the arguments bound to the parameters
        it may return; a free variable of a def nested here is what that name holds now (one of a
        def nested elsewhere, passed down to the callee, goes on up to where it is defined)."""
        out: FrozenSet[str] = _EMPTY
        for p in got:
            if p.startswith(OUTER):
                pid, _, name = p[len(OUTER):].partition(":")
                out |= ex(ast.Name(id=name, ctx=ast.Load())) if pid == str(id(self.info)) else frozenset({p})
            for a, _definite in bound.get(p, ()):
                out |= ex(a)
        return out

    def call_one(self, call: ast.Call, target, ex, all_args) -> FrozenSet[str]:
        an = self.an
        if getattr(target, "__module__", None) == "builtins" and not inspect.isfunction(target):
            # `list(xs)`, `map(f, xs)`, `max(a, b)` may hand back what they hold; `len`, `int` do not
            return all_args() if getattr(target, "__name__", "") in PASS_BUILTINS else _EMPTY
        if inspect.isclass(target):
            if target.__name__ in VALUES_ONLY and an.composite and issubclass(target, an.composite):
                try:
                    init = Params(ast.parse(textwrap.dedent(inspect.getsource(target.__init__))).body[0].args, True)
                    return frozenset().union(*(ex(a) for a, _d in init.bind(call).get(VALUES_ONLY[target.__name__], ())))
                except Exception:  # noqa: BLE001
                    return all_args()
            if issubclass(target, (tuple, list, dict, set)) or (an.composite and issubclass(target, an.composite)):
                return all_args()  # a container (namedtuple, RaggedTensor) of what it was given
            return _EMPTY  # a new object of another class
        if isinstance(target, NestedFn):
            callee = target.info()
            bound = callee.params.bind(call)
            ctx = an.callee_ctx(callee, bound, self.info, self.env)
            got = an.may_return(target, ctx, self.depth + 1)
            out = self.bound_results(got, bound, ex)
            if out:
                an._trace.append((id(target), ctx))
            return out
        fn = _unwrap(target)
        if an.is_fresh_maker(fn):
            return _EMPTY
        tname = getattr(fn, "__name__", "") or ""
        if tname.startswith(CONVERT_NAMES):
            first = call.args[0] if call.args else next(
                (k.value for k in call.keywords if k.arg in ("value", "values", "t", "tensor", "input")), None)
            return ex(first) if first is not None else all_args()
        drop_first = False
        if inspect.ismethod(fn):
            fn, drop_first = fn.__func__, True
        if not inspect.isfunction(fn):
            return all_args()  # C code, a partial, a callable object: may return what it is given
        callee = an._info(fn)
        model = MODELS.get((getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)))
        if callee is None and model is None:
            return all_args()
        params = Params(callee.node.args, drop_first) if callee is not None else None
        if params is None:
            return all_args() if model else _EMPTY
        bound = params.bind(call)
        ctx = an.callee_ctx(callee, bound, self.info, self.env) if not drop_first else frozenset()
        got = an.may_return(fn, ctx, self.depth + 1)
        if got is None:
            return all_args()
        out = self.bound_results(got, bound, ex)
        if out:
            an._trace.append((id(fn), ctx))
        return out


# -- the public API ------------------------------------------------------------------------------------


def _api_module(mod) -> bool:
    name = getattr(mod, "__name__", "") or ""
    return name.startswith(API_MODULE_PREFIXES) and not name.startswith(PRIVATE_MODULE_PREFIXES)


def public_functions(tf) -> Dict[str, List[object]]:
    """normalised public name -> the functions behind it (TF2's and TF1's may differ)."""
    out: Dict[str, List[object]] = {}
    for root in (tf, tf.compat.v1):
        todo = [("", root, 0)]
        seen: Set[Tuple[str, int]] = set()
        while todo:
            path, mod, depth = todo.pop()
            if (path, id(mod)) in seen:
                continue
            seen.add((path, id(mod)))
            try:
                attrs = sorted(dir(mod))
            except Exception:  # noqa: BLE001
                continue
            for attr in attrs:
                if attr.startswith("_"):
                    continue
                sub = f"{path}.{attr}" if path else attr
                try:
                    obj = getattr(mod, attr)
                except Exception:  # noqa: BLE001  (a Keras 2 name under Keras 3 raises)
                    continue
                if inspect.ismodule(obj):
                    if depth + 1 < MAX_NS_DEPTH and _api_module(obj) and sub not in SKIP_NAMESPACES and \
                            not any(sub.startswith(s + ".") for s in SKIP_NAMESPACES):
                        todo.append((sub, obj, depth + 1))
                    continue
                if inspect.isclass(obj) or not (inspect.isfunction(_unwrap(obj)) or inspect.isbuiltin(obj)):
                    continue  # classes, typing aliases, constants, callable objects
                fns = out.setdefault(f"tensorflow.{sub}", [])
                if not any(f is obj for f in fns):
                    fns.append(obj)
    return out


def explain(an: Analyzer, key: Key, limit: int = 12) -> List[str]:
    """The chain of returns that makes a function hand back an argument."""
    out = []
    while key is not None and limit:
        fn = an.keep.get(key[0])
        why = an.why.get(key)
        if fn is None or why is None:
            break
        ctx = {p: [getattr(an.keep.get(i), "__name__", "?") for i in ids] for p, ids in key[1]}
        out.append(f"{_qualname(fn)}{ctx or ''} may return {sorted(an.summary.get(key, ()))}: return {why[0]}")
        key, limit = why[1], limit - 1
    return out


def analyse(api: Dict[str, List[object]]) -> Tuple[Analyzer, int]:
    an = Analyzer()
    rounds = 0
    while True:
        rounds += 1
        an.changed = False
        an.round_done = set()
        for name in sorted(api):
            for obj in api[name]:
                fn = _unwrap(obj)
                if inspect.isfunction(fn):
                    an.may_return(fn)
        if not an.changed or rounds >= 20:
            return an, rounds


def build(why: Optional[List[str]] = None) -> dict:
    import tensorflow as tf

    t0 = time.time()
    api = public_functions(tf)
    an, rounds = analyse(api)
    found, no_source = [], []
    for name in sorted(api):
        hit = False
        for obj in api[name]:
            fn = _unwrap(obj)
            got = an.may_return(fn) if inspect.isfunction(fn) else None
            if got is None:
                no_source.append(name)  # C code: it may hand back what it is given
            hit = hit or got is None or bool(got)
            if why and name in why:
                lines = explain(an, (id(fn), frozenset())) if got else []
                print(f"{name}: {'no Python source' if got is None else 'may return ' + str(sorted(got))}",
                      *("  " + line for line in lines), sep="\n", file=sys.stderr)
        if hit:
            found.append(name)
    print(f"{len(api)} public functions ({len(no_source)} without Python source), {len(an.infos)} functions "
          f"read, {len(an.summary)} summaries, {rounds} rounds, {time.time() - t0:.1f}s", file=sys.stderr)
    return {"tensorflow_version": tf.__version__, "pass_through": sorted(found)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--stdout", action="store_true", help="print the table instead of writing it")
    ap.add_argument("--why", nargs="*", default=[], help="say why these names are (or are not) in the table")
    ns = ap.parse_args(argv)
    data = build(ns.why)
    text = json.dumps(data, sort_keys=True, indent=0, separators=(",", ":")) + "\n"
    if ns.stdout:
        sys.stdout.write(text)
    else:
        with open(ns.out, "w", encoding="ascii") as fh:
            fh.write(text)
        print(f"wrote {ns.out}", file=sys.stderr)
    print(f"{len(data['pass_through'])} public functions may hand back an argument", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
