"""What a call or a binding is, as far as the tape proof needs to know.

A call is one of these *kinds*:

- ``tf``: a TensorFlow function; its ops read only its arguments;
- ``leaf``: a TF function that makes a new tensor from literals (``tf.constant``);
- ``state``: a TF function that returns what earlier code built (``tf.get_collection``,
  ``tf.trainable_variables``, ``tf.get_variable`` with reuse);
- ``collect``: a TF function that also writes graph collections (``tf.losses.*``);
- ``noop``: makes no op (``tf.name_scope``, ``tf.get_default_graph``);
- ``builtin`` / ``numpy``: Python or numpy code that makes no TF op of its own;
- ``project``: anything else (the project's functions, methods of unknown objects):
  it may read and write any state the program can reach.
"""
from __future__ import annotations

import functools
import json
import os
from typing import Optional

import libcst as cst

from migrator._plugins._dataflow import BUILTINS, effects
from migrator._plugins._grad_arith import may_be_sequence_op
from migrator.tfnames import dotted, tf_name

_STATE_LEAVES = {
    "get_variable", "get_local_variable", "get_collection", "get_collection_ref", "trainable_variables",
    "global_variables", "local_variables", "model_variables", "moving_average_variables", "all_variables",
    "get_losses", "get_regularization_loss", "get_regularization_losses", "get_total_loss", "get_variables",
    "get_model_variables", "get_trainable_variables", "get_variables_by_name", "get_unique_variable",
    "get_tensor_by_name", "get_operation_by_name", "get_variables_to_restore",
}
_COLLECT_LEAVES = {"add_to_collection", "add_to_collections", "add_loss"}
_NOOP = {
    "tensorflow.get_default_graph", "tensorflow.name_scope", "tensorflow.variable_scope",
    "tensorflow.control_dependencies", "tensorflow.device", "tensorflow.as_dtype", "tensorflow.DType",
    "tensorflow.TensorShape", "tensorflow.op_scope", "tensorflow.is_tensor", "tensorflow.executing_eagerly",
    "tensorflow.get_variable_scope", "tensorflow.AggregationMethod", "tensorflow.UnconnectedGradients",
}
_LEAF = {
    "tensorflow.constant", "tensorflow.Variable", "tensorflow.placeholder", "tensorflow.zeros", "tensorflow.ones",
    "tensorflow.fill", "tensorflow.eye", "tensorflow.range", "tensorflow.linspace", "tensorflow.random_normal",
    "tensorflow.random_uniform", "tensorflow.truncated_normal", "tensorflow.random.normal",
    "tensorflow.random.uniform", "tensorflow.random.truncated_normal", "tensorflow.sparse_placeholder",
}
#: TF calls that may hand back their argument itself rather than a new tensor
_MAY_RETURN_INPUT = {
    "tensorflow.convert_to_tensor", "tensorflow.cast", "tensorflow.saturate_cast", "tensorflow.nest.flatten",
    "tensorflow.convert_to_tensor_or_indexed_slices", "tensorflow.convert_to_tensor_or_sparse_tensor",
    "tensorflow.keras.backend.cast_to_floatx", "tensorflow.keras.backend.to_dense",
    "tensorflow.keras.backend.in_train_phase", "tensorflow.keras.backend.in_test_phase",
    "tensorflow.keras.backend.identity", "tensorflow.keras.backend.stop_gradient",
    "tensorflow.nest.map_structure", "tensorflow.nest.pack_sequence_as", "tensorflow.identity_n",
    "tensorflow.group", "tensorflow.tuple", "tensorflow.no_op",
    # hand back their input itself for some inputs (an adversarial run: `x = tf.to_float(h)` was
    # the caller's `h`, so `z = h * h` from the caller depended on x): a cast to the same dtype,
    # real/conj of a real tensor, a sum of one tensor, dropout that drops nothing
    "tensorflow.to_float", "tensorflow.to_double", "tensorflow.to_int32", "tensorflow.to_int64",
    "tensorflow.to_bfloat16", "tensorflow.to_complex64", "tensorflow.to_complex128", "tensorflow.dtypes.cast",
    "tensorflow.math.real", "tensorflow.real", "tensorflow.math.conj", "tensorflow.conj", "tensorflow.add_n",
    "tensorflow.math.add_n", "tensorflow.accumulate_n", "tensorflow.math.accumulate_n", "tensorflow.nn.dropout",
    "tensorflow.layers.dropout", "tensorflow.keras.backend.cast", "tensorflow.keras.backend.dropout",
    "tensorflow.get_variable", "tensorflow.image.convert_image_dtype",
}
#: the public TF functions whose Python source may hand back an argument itself (or a part of
#: one) for some inputs, found by tools/gen_pass_through.py: `tf.image.central_crop(h, 1.0)` is `h`
#: (an adversarial run), so are `tf.keras.activations.linear(h)` and `tf.math.round` of int `h`
_PASS_THROUGH_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                                  "pass_through.json")


@functools.lru_cache(maxsize=None)
def pass_through() -> frozenset[str]:
    """The shipped table of TF functions that may return an argument (read once, no TensorFlow)."""
    with open(_PASS_THROUGH_PATH, "r", encoding="utf-8") as f:
        return frozenset(json.load(f)["pass_through"])


def may_return_input(name: Optional[str]) -> bool:
    """A TF call of this (normalised) name may hand back one of its arguments itself."""
    return name is not None and (name in _MAY_RETURN_INPUT or name in pass_through())


_PURE_BUILTINS = {
    "print", "len", "range", "isinstance", "issubclass", "int", "float", "bool", "str", "list", "tuple", "dict",
    "set", "frozenset", "zip", "enumerate", "sorted", "reversed", "min", "max", "sum", "abs", "round", "any",
    "all", "getattr", "hasattr", "type", "repr", "format", "divmod", "pow", "id", "hash", "callable", "super",
    "object", "slice", "iter", "next", "complex", "bytes", "ord", "chr", "hex", "oct", "bin",
}
#: methods that mutate only their object (the data flow marks the object written) or read metadata
_PURE_METHODS = {
    "append", "extend", "insert", "pop", "remove", "clear", "copy", "index", "count", "sort", "reverse",
    "get", "items", "keys", "values", "update", "setdefault", "format", "join", "split", "strip", "replace",
    "lower", "upper", "startswith", "endswith", "get_shape", "as_list", "set_shape", "with_rank",
    "is_fully_defined", "num_elements", "assert_has_rank", "assert_is_compatible_with",
}
#: attributes of a value that are metadata, never a tensor built earlier
META_ATTRS = {"shape", "dtype", "name", "ndim", "rank", "base_dtype", "as_numpy_dtype", "value", "ndims"}

#: TF functions that return a list (a source bound to one is a list of sources)
LIST_RETURNING = {
    "tensorflow.trainable_variables", "tensorflow.global_variables", "tensorflow.local_variables",
    "tensorflow.get_collection", "tensorflow.split", "tensorflow.unstack", "tensorflow.meshgrid",
    "tensorflow.dynamic_partition", "tensorflow.model_variables", "tensorflow.gradients",
}
LIST_ATTRS = {"trainable_variables", "trainable_weights", "weights", "variables", "non_trainable_variables"}
#: TF functions of several ops that hand back one tensor (`clip_by_value`: Minimum, then Maximum);
#: a source bound to one is a tensor, so `tape.gradient(y, x)` needs no `tf.nest.flatten`
ONE_TENSOR = frozenset({
    "tensorflow.clip_by_value", "tensorflow.clip_by_norm", "tensorflow.nn.l2_normalize",
    "tensorflow.math.l2_normalize", "tensorflow.norm", "tensorflow.linalg.norm", "tensorflow.reduce_logsumexp",
    "tensorflow.math.reduce_logsumexp",
})
TENSOR_CONSTRUCTORS = _LEAF | ONE_TENSOR | {"tensorflow.get_variable", "tensorflow.convert_to_tensor"}

#: TF1 session classes: a module that makes one still runs its graph under TF1 semantics
SESSION_CLASSES = frozenset({"Session", "InteractiveSession", "MonitoredSession", "MonitoredTrainingSession",
                             "SingularMonitoredSession"})
#: TF functions that build v1 control flow (a tape in TF1 graph mode cannot see through them)
V1_CONTROL_FLOW = {
    "tensorflow.cond", "tensorflow.case", "tensorflow.switch_case", "tensorflow.while_loop", "tensorflow.scan",
    "tensorflow.map_fn", "tensorflow.foldl", "tensorflow.foldr", "tensorflow.nn.dynamic_rnn",
    "tensorflow.nn.bidirectional_dynamic_rnn", "tensorflow.nn.raw_rnn", "tensorflow.nn.static_state_saving_rnn",
}


def call_kind(call: cst.Call, qn) -> str:
    name = tf_name(call, qn)
    if name is not None:
        leaf = name.rsplit(".", 1)[-1]
        if leaf in _STATE_LEAVES:
            return "state"
        if leaf in _COLLECT_LEAVES or name.startswith(("tensorflow.losses.", "tensorflow.summary.")):
            return "collect"
        if name in _NOOP:
            return "noop"
        if name in _LEAF:
            return "leaf"
        return "tf"
    names = qnames(call.func, qn)
    if any(n == "numpy" or n.startswith("numpy.") for n in names):
        return "numpy"
    func = call.func
    # only `builtins.len` is the builtin: libcst names a module's own `def len` just `len` (no
    # names at all: code a rewrite generated, `range(n)` of a per-index plan)
    if isinstance(func, cst.Name) and func.value in _PURE_BUILTINS and names in (set(), {f"builtins.{func.value}"}):
        if any(a.keyword is not None and a.keyword.value == "key" for a in call.args):
            return "project"  # `sorted(ts, key=f)`: runs `f`, which may be anything (an adversarial run)
        return "builtin"
    if isinstance(func, cst.Attribute) and func.attr.value in _PURE_METHODS:
        return "builtin"
    return "project"


#: builtins whose result is a Python number whatever they are given (``round`` of a tensor raises)
NUMBER_CALLS = frozenset({"float", "int", "len", "round"})
#: builtins whose result is a Python number only when their arguments are: ``abs(t)`` and
#: ``sum([t, u])`` give tensors, ``max(t, 0.0)`` may give either
NUMBER_IF_ARGS_ARE = frozenset({"abs", "min", "max", "sum"})


def qnames(node, qn) -> set:
    """The qualified names libcst gives ``node`` (empty where it has none)."""
    try:
        got = qn.get(node, set())
        if callable(got):
            got = got()
    except KeyError:
        return set()
    return {q.name for q in got}


def calls_in(node: cst.CSTNode) -> list[cst.Call]:
    """The calls a statement makes when it runs (not those in nested defs and lambdas)."""
    out: list[cst.Call] = []

    class V(cst.CSTVisitor):
        def visit_Call(self, n):
            out.append(n)

        def visit_FunctionDef(self, n):
            for d in n.decorators:
                d.visit(self)
            for p in _params(n.params):
                if p.default is not None:
                    p.default.visit(self)
            return False

        def visit_Lambda(self, n):
            return False

        def visit_ClassDef(self, n):
            return False

    node.visit(V())
    return out


def _params(params: cst.Parameters) -> list:
    out = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            out.append(star)
    return out


def param_names(fn: cst.FunctionDef) -> list[str]:
    return [p.name.value for p in _params(fn.params)]


def kinds_of(node: cst.CSTNode, qn) -> frozenset:
    return frozenset(call_kind(c, qn) for c in calls_in(node))


def is_fresh(value: Optional[cst.BaseExpression], qn, tensor_name=None) -> bool:
    """A new tensor that no code before this expression could have used: the result of a
    TF op, TF constructor or tensor arithmetic, never an alias, an element or a lookup.
    ``tensor_name(n)``: whether name ``n`` is known to hold a tensor there."""
    if isinstance(value, cst.Call):
        name = tf_name(value, qn)
        return call_kind(value, qn) in ("tf", "leaf") and not may_return_input(name)
    if isinstance(value, cst.BinaryOperation):
        return not (_literal(value.left) and _literal(value.right)) and not may_be_sequence_op(value, tensor_name)
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        return not _literal(value.expression)
    return False


def _literal(e: cst.BaseExpression) -> bool:
    if isinstance(e, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)):
        return True
    if isinstance(e, cst.UnaryOperation):
        return _literal(e.expression)
    return isinstance(e, cst.BinaryOperation) and _literal(e.left) and _literal(e.right)


def is_inert(stmt: cst.CSTNode, fx, kinds: frozenset, imported: set, shadowed: frozenset = frozenset()) -> bool:
    """Its value reads no program names (only imports, builtins, literals) and it calls
    nothing that reaches program state: it cannot make an op that consumes a source.
    ``shadowed``: builtin names the program rebinds (``input = tf.Variable(...)``)."""
    if kinds & {"project", "state", "collect"}:
        return False
    if project_import_names(stmt):
        return False  # binds a project module's global, which may be a tensor made from a source
    ok = (imported | BUILTINS) - shadowed
    if isinstance(stmt, cst.SimpleStatementLine):
        if not all(isinstance(s, (cst.Assign, cst.AnnAssign, cst.Import, cst.ImportFrom, cst.Pass)) or
                   (isinstance(s, cst.Expr) and isinstance(s.value, (cst.SimpleString, cst.ConcatenatedString)))
                   for s in stmt.body):
            return False
        return all(r.split(".")[0] in ok for r in fx.reads)
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        # a def computes nothing where it stands; its decorators and defaults do
        heads = [d.decorator for d in stmt.decorators]
        if isinstance(stmt, cst.FunctionDef):
            heads += [p.default for p in _params(stmt.params) if p.default is not None]
        else:
            heads += [a.value for a in stmt.bases] + [a.value for a in stmt.keywords]
            # a class body runs where it stands (`class Cfg: scale = x * 3.0`, an adversarial run)
            if not all(isinstance(b, (cst.FunctionDef, cst.ClassDef)) or isinstance(b, cst.SimpleStatementLine) and all(
                    isinstance(x, cst.Pass) or isinstance(x, cst.Expr) and isinstance(x.value, cst.SimpleString)
                    for x in b.body) for b in stmt.body.body):
                return False
        return all(r.split(".")[0] in ok for h in heads for r in effects(h).reads)
    return False


def value_kind(v: Optional[cst.BaseExpression], qn, one_output) -> str:
    """"list", "tuple", "tensor" or "unknown" for a value bound to a source name."""
    if isinstance(v, cst.Tuple):
        return "tuple"  # a tape hands back a tuple for it; tf.gradients gave a list (an adversarial run)
    if isinstance(v, (cst.List, cst.ListComp)):
        return "list"
    if isinstance(v, cst.UnaryOperation) or isinstance(v, cst.BinaryOperation) and not may_be_sequence_op(v):
        return "tensor"
    if isinstance(v, cst.BinaryOperation):
        return "unknown"  # `ws + bs`, `ws * 1`: maybe lists joined or repeated
    if isinstance(v, cst.Attribute) and v.attr.value in LIST_ATTRS:
        return "list"
    if isinstance(v, cst.Call):
        name = tf_name(v, qn)
        if name in LIST_RETURNING or dotted(v.func) == "list":
            return "list"
        if name in TENSOR_CONSTRUCTORS or (name is not None and one_output(name)):
            return "tensor"
    return "unknown"  # e.g. nest.flatten(...), a layer: tf.nest.flatten keeps the list contract


#: Python-function ops: one op, but a list of tensors when ``Tout`` (their third argument) is a list
_PY_FUNCS = frozenset({"tensorflow.py_func", "tensorflow.py_function", "tensorflow.numpy_function",
                       "tensorflow.script_ops.eager_py_func"})


def py_func_kind(value: cst.BaseExpression, qn) -> Optional[str]:
    """``tf.py_function(f, [c], [tf.float32])`` is a list of one tensor (an adversarial run: it was
    taken for a tensor, the tape got ``[x]`` and handed back ``[[g]]``); "tensor" for a single
    dtype, "unknown" for a ``Tout`` the source does not spell; None for other values."""
    if not isinstance(value, cst.Call) or tf_name(value, qn) not in _PY_FUNCS:
        return None
    args = [a for a in value.args if a.keyword is None]
    tout = next((a.value for a in value.args if a.keyword is not None and a.keyword.value == "Tout"), None)
    if tout is None and len(args) > 2:
        tout = args[2].value
    if isinstance(tout, (cst.List, cst.Tuple)):
        return "list"
    return "tensor" if isinstance(tout, cst.Attribute) and dotted(tout) and dotted(tout).split(".")[-1] in (
        "float16", "float32", "float64", "bfloat16", "complex64", "complex128") else "unknown"


class Closedness:
    """Is a module-level function *closed*: does everything it returns come from its
    arguments, module constants and ops it makes itself (no cached or global tensor)?"""

    def __init__(self, defs: dict, constants: set, imported: set, qn) -> None:
        self.defs = defs
        self.constants = constants
        self.imported = imported
        self.qn = qn
        self.cache: dict[str, bool] = {}

    def __call__(self, name: str) -> bool:
        if name not in self.cache:
            self.cache[name] = False  # recursion: not proven
            node = self.defs.get(name)
            self.cache[name] = isinstance(node, cst.FunctionDef) and self._check(node)
        return self.cache[name]

    def _check(self, fn: cst.FunctionDef) -> bool:
        if fn.decorators:
            # lru_cache, property, ...: a decorator may cache or wrap; `@tf.custom_gradient` too, as
            # far as the name goes: the module or another file may rebind it (`op = _cached(op)`)
            return False
        fx = effects(fn.body)
        local = set(param_names(fn)) | fx.writes
        if {m.split(".")[0] for m in fx.mutates} - (fx.assigns - set(param_names(fn))):
            return False  # fills a global, a parameter or a default (`_CACHE["f"] = h`): may hand back an old tensor
        ok_roots = local | self.constants | self.imported | BUILTINS
        for stmt_node in _walk_statements(fn.body):
            if isinstance(stmt_node, (cst.Global, cst.Nonlocal)):
                return False
        for r in fx.data:
            parts = r.split(".")
            if parts[0] not in ok_roots:
                return False
            if parts[0] in local and len(parts) > 1 and parts[-1] not in META_ATTRS:
                return False  # obj.features: maybe a tensor built earlier
        for call in calls_in(fn.body):
            kind = call_kind(call, self.qn)
            if kind in ("tf", "leaf", "noop", "builtin", "numpy"):
                continue
            if kind == "state" and tf_name(call, self.qn) in ("tensorflow.get_variable",):
                continue  # a variable is a leaf: ops on it are made here
            if kind == "project" and isinstance(call.func, cst.Name) and call.func.value in self.defs \
                    and call.func.value not in local and self(call.func.value):
                continue
            return False
        return True


def _walk_statements(node: cst.CSTNode) -> list:
    out = []

    class V(cst.CSTVisitor):
        def on_visit(self, n):
            out.append(n)
            return True

    node.visit(V())
    return out


def module_constants(variables: dict, defs: dict, imported: set, qn) -> set:
    """Module-level names bound only to defs/classes or to values that read no program
    names and call nothing that reaches program state."""
    ok = imported | BUILTINS
    out = set(defs)
    for name, vals in variables.items():
        if name in defs:
            continue
        if vals and all(v is not None and all(r.split(".")[0] in ok for r in effects(v).reads)
                        and not (kinds_of(v, qn) & {"project", "state", "collect"}) and not _container(v)
                        for v in vals):
            out.add(name)
    return out | imported


def _container(value: cst.BaseExpression) -> bool:
    """A list, dict or set any code may fill later (`LAYERS = []`, then a caller appends a
    tensor made from the source: an adversarial run): never a constant."""
    if isinstance(value, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)):
        return True
    return isinstance(value, cst.Call) and dotted(value.func) in (
        "list", "dict", "set", "collections.defaultdict", "defaultdict", "collections.deque", "deque",
        "collections.OrderedDict", "OrderedDict")


#: top-level packages whose module attributes are never tensors the user's program built (a
#: project module's global can be: `model.logits`, made from what a caller passes as a source)
LIBRARIES = frozenset("""__future__ abc absl argparse cmath collections contextlib copy dataclasses datetime enum
functools gin glob h5py itertools json keras logging math matplotlib multiprocessing numbers numpy operator os
pandas pathlib pickle random re scipy shutil six sklearn string subprocess sys tensorflow tensorflow_probability
tf_keras threading time tqdm typing warnings""".split())


def _import_bindings(small, project_names=frozenset()) -> list[tuple[str, bool]]:
    """(name bound, whether it is a library module or a name from one) for one import statement;
    a library name that is also a module of the project (a local ``gin/``) is the project's."""
    def lib(top: str) -> bool:
        return top in LIBRARIES and top not in project_names

    out = []
    if isinstance(small, cst.Import):
        for a in small.names:
            out.append((a.evaluated_alias or a.evaluated_name.split(".")[0], lib(a.evaluated_name.split(".")[0])))
    elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
        is_lib = not small.relative and small.module is not None and lib((dotted(small.module) or "").split(".")[0])
        out += [(a.evaluated_alias or a.evaluated_name, is_lib) for a in small.names]
    return out


def library_imports(module: cst.Module, project_names=frozenset()) -> set:
    """Names the module binds, at its top level, only to libraries (``tf``, ``np``, ``from math
    import pi``).  A name also bound by a project import, a library name that is a package of
    the project (``project_names``: a local ``gin/``), or a star import are not."""
    lib: set = set()
    other: set = set()
    todo = list(module.body)
    while todo:
        st = todo.pop()
        if isinstance(st, (cst.If, cst.Try)):
            todo += list(st.body.body) + [h for h in getattr(st, "handlers", ())]
            for part in (st.orelse, getattr(st, "finalbody", None)):
                if part is not None and hasattr(part, "body"):
                    todo += list(part.body) if isinstance(part.body, (list, tuple)) else []
            continue
        if isinstance(st, cst.ExceptHandler):
            todo += list(st.body.body)
            continue
        if not isinstance(st, cst.SimpleStatementLine):
            continue
        for small in st.body:
            for name, is_lib in _import_bindings(small, project_names):
                (lib if is_lib else other).add(name)
    return lib - other


def project_import_names(stmt: cst.CSTNode) -> set:
    """Names an import inside ``stmt`` binds to a module that is not a library (a local
    ``import model`` or ``from model import logits``): a global of the project, maybe a tensor."""
    out: set = set()

    class _V(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> None:
            out.update(n for n, lib in _import_bindings(node) if not lib)

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            if isinstance(node.names, cst.ImportStar):
                out.add("*")
            out.update(n for n, lib in _import_bindings(node) if not lib)

    if isinstance(stmt, cst.CSTNode):
        stmt.visit(_V())
    return out


def local_module_names(path: str, root) -> frozenset:
    """Modules and packages next to the file and at the project root: a local ``gin/`` or
    ``six.py`` shadows the library of that name."""
    import os

    out = set()
    for d in {os.path.dirname(os.path.abspath(path)), root}:
        if d and os.path.isdir(d):
            out |= {os.path.splitext(n)[0] for n in os.listdir(d)}
    return frozenset(out)


def nested_python_list(value: cst.BaseExpression) -> bool:
    """``[[1.0, 2.0, 3.0]]``: a display holding a display.  TF1 made one tensor of each element of
    grad_ys; ``tape.gradient`` flattens ``output_gradients`` into numbers (found by an adversarial run:
    the cotangent became its first element, silently)."""
    return isinstance(value, (cst.List, cst.Tuple)) and any(
        isinstance(el.value, (cst.List, cst.Tuple, cst.Set, cst.Dict, cst.ListComp, cst.GeneratorExp))
        for el in value.elements)
