"""What the value flow (:mod:`migrator.object_flow`) knows about Python and the libraries
TF1 code calls: which calls make new values, which keep or fill their arguments, which
reach names computed at run time; and how names are bound in a scope."""
from __future__ import annotations

import ast
import re

#: attributes that are metadata, never a tensor computed earlier
META = frozenset({"shape", "dtype", "name", "ndim", "graph", "device"})
#: module roots whose calls make new values and change none of their arguments
PURE_MODULES = frozenset({"tensorflow", "numpy", "math", "scipy"})
#: libraries whose functions keep none of their arguments in another (plotting, files, timing)
QUIET_MODULES = frozenset({"matplotlib", "time", "os", "logging", "pyDOE", "datetime", "seaborn", "warnings",
                           "csv", "glob", "shutil", "pprint"})
#: NumPy functions that fill their first argument (an object array may hold tensors)
NUMPY_FILLS = frozenset({"copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis", "at"})
#: modules whose use means objects are reached other than by the program's names
INTROSPECTION_MODULES = frozenset({"gc", "inspect", "ctypes", "importlib"})
#: attributes that reach other parts of the graph from a tensor or a graph (`t.consumers()`,
#: `t.op.inputs`, `g._nodes_by_name`): any tensor, a source's consumers included
GRAPH_WALKS = frozenset({"consumers", "op", "outputs", "inputs", "control_inputs", "_consumers", "_nodes_by_name",
                         "_nodes_by_id", "node_def", "_inputs", "_outputs"})
#: calls that make a TF session, and what a session hands back: NumPy values, never a tensor,
#: so nothing computed from them is on a gradient path (`u = sess.run(model.u_pred, feed)`)
SESSION_MAKERS = frozenset({"Session", "InteractiveSession", "MonitoredSession", "MonitoredTrainingSession",
                             "SingularMonitoredSession", "get_default_session", "get_session"})
SESSION_RUNS = frozenset({"run", "partial_run"})
#: builtins that neither keep nor change their arguments
PURE_BUILTINS = frozenset({
    "len", "print", "isinstance", "hasattr", "str", "repr", "format", "int", "float", "bool", "abs",
    "round", "range", "issubclass", "id", "hash", "callable", "divmod", "pow", "open", "super"})
#: builtins whose result holds their arguments (a view or a copy of the same elements)
VIEW_BUILTINS = frozenset({"list", "tuple", "zip", "enumerate", "sorted", "reversed", "iter", "next", "dict",
                           "set", "frozenset", "map", "filter", "min", "max", "sum"})
#: names whose methods are called unbound (`list.append(lst, v)`, `type(x).m(x, v)`): the
#: receiver is an argument, so the call may store any argument in any other
UNBOUND_RECEIVERS = frozenset({"list", "dict", "set", "object", "tuple", "str", "type", "frozenset", "bytearray"})
#: methods that change their receiver only (a list, dict or set filled in place)
FILL_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "appendleft"})
#: calls that write attributes or variables named at run time: the flow cannot follow them
DYNAMIC = frozenset({"setattr", "delattr", "exec", "eval", "__setattr__", "compile", "__init_subclass__"})
#: views of attributes or variables named at run time (`vars(args)`, `getattr(ax, name)`):
#: reading them is fine; filling them writes attributes the flow cannot name
NAMESPACES = frozenset({"globals", "locals", "vars", "__dict__", "__getattribute__", "__globals__"})
#: methods that neither change their receiver nor keep their arguments
READ_METHODS = frozenset({"copy", "keys", "values", "items", "get", "format", "split", "join", "lower", "upper",
                           "strip", "startswith", "endswith", "replace", "count", "index"})

TOP = ("top",)  # values the flow cannot follow: always tainted
ANY_OBJECT = ("any object",)  # what a namespace view may be: filling it makes the flow unusable
ANY_ATTR = ("any attribute",)  # what reading one gives: every attribute's and global's values


#: lookups that may hand back any tensor or op of the graph, a source included
GRAPH_LOOKUPS = frozenset({"get_collection", "get_collection_ref", "get_tensor_by_name", "get_operation_by_name",
                           "as_graph_element", "get_operations", "import_graph_def", "get_all_collection_keys"})
#: lookups that may hand back any variable (`tf.trainable_variables()[-1]` may be a source)
VARIABLE_LOOKUPS = frozenset({"trainable_variables", "global_variables", "all_variables", "local_variables",
                              "model_variables", "moving_average_variables", "get_variable", "get_local_variable"})
VARIABLE_MAKERS = frozenset({"Variable", "get_variable", "get_local_variable", "VariableV1", "ResourceVariable"})
STATE_READS = GRAPH_LOOKUPS | VARIABLE_LOOKUPS
EXCEPTIONS = ("exceptions",)  # what `raise` throws and `except ... as e` catches
VARIABLES = ("variables",)  # every variable the program makes, when some code looks variables up
#: names that reach attributes by a name made at run time when used at all (`fetch = getattr`)
BY_NAME = frozenset({"getattr", "setattr", "delattr", "vars", "globals", "locals", "attrgetter", "methodcaller",
                     "__import__", "exec", "eval"})
#: protocol methods Python calls without a call in the source; what they return reaches
#: `obj[k]`, `for e in obj`, `with obj as v`, `obj.missing`, `obj(...)`, `a + b`
DUNDERS = {
    "__getitem__": "item", "__missing__": "item", "__iter__": "iter", "__next__": "iter", "__enter__": "enter",
    "__aenter__": "enter", "__getattr__": "attr", "__getattribute__": "attr", "__get__": "attr", "__call__": "call",
}
ARITHMETIC_DUNDER = re.compile(r"^__(r|i)?(add|sub|mul|matmul|truediv|floordiv|mod|pow|neg|pos|abs|and|or|xor|"
                               r"lshift|rshift|invert|getslice|round|float|int|index)__$")


def dunder_kind(name: str):
    """``"item"``, ``"iter"``, ... for a protocol method, ``"ops"`` for an operator; else None."""
    return DUNDERS.get(name) or ("ops" if ARITHMETIC_DUNDER.match(name) else None)


def bindings(scope: ast.AST, name: str) -> list:
    """Every value bound to ``name`` in ``scope`` (None for a binding that is not ``name = value``:
    a parameter, a ``for`` target, an import, a tuple target, ``global``)."""
    out: list = [None] if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and name in params_of(scope) \
        else []
    simple = set()
    for n in ast.walk(scope):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                and n.targets[0].id == name:
            out.append(n.value)
            simple.add(id(n.targets[0]))
        elif isinstance(n, (ast.With, ast.AsyncWith)):
            for item in n.items:
                if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == name:
                    out.append(item.context_expr)  # `with tf.Session() as sess`
                    simple.add(id(item.optional_vars))
    for n in ast.walk(scope):
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del)) and id(n) not in simple:
            out.append(None)
        elif isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names:
            out.append(None)
        elif isinstance(n, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name).split(".")[0] == name
                                                                  for a in n.names):
            out.append(None)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name:
            out.append(None)
    return out


def params_of(fn) -> list:
    a = fn.args
    return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs + ([a.vararg] if a.vararg else [])
            + ([a.kwarg] if a.kwarg else [])]


#: builtins that call a function they are given with the items of the other arguments
ITERATION_CALLS = frozenset({"map", "filter", "sorted", "min", "max", "reduce", "starmap", "accumulate",
                             "groupby", "takewhile", "dropwhile", "filterfalse"})


def iteration_arguments(tree: ast.AST) -> set:
    """ids of the arguments of `map(f, xs)`, `sorted(xs, key=f)`, `functools.reduce(f, xs)`, ..."""
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            leaf = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", None)
            if leaf in ITERATION_CALLS:
                out |= {id(a) for a in list(n.args) + [k.value for k in n.keywords]}
    return out


def local_names(fn) -> set:
    """The names a function binds in its own scope (its parameters; assignments, loops, imports,
    handlers, nested defs' names), and its lambdas' and nested defs' parameters.  Names a
    comprehension or a nested def binds for itself are not the function's: where one shadows
    a global, the flow takes it for the global (more merging, never less)."""
    out = set(params_of(fn))
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
            if not isinstance(n, ast.ClassDef):
                out |= set(params_of(n))
                todo += n.decorator_list + n.args.defaults + [d for d in n.args.kw_defaults if d is not None]
            continue  # its body binds its own names
        elif isinstance(n, ast.Lambda):
            out |= {p.arg for p in n.args.args + n.args.posonlyargs + n.args.kwonlyargs}
        elif isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            todo += [g.iter for g in n.generators[:1]]  # the first iterable is evaluated here
            continue
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in n.names}
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        todo += list(ast.iter_child_nodes(n))
    return out
