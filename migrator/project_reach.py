"""Code that may write a module's names where no statement shows it.

A tape is spelled with what ``tf`` (or an alias) means where the gradient runs.  The statements
show an import, a star import, an assignment; these show nothing, and each was found by an
adversarial run to rebind ``tf`` to a wrapper whose ``gradients`` doubled TF's, while the tape
took the real one: ``ops.__setattr__('tf', f)``, ``put = setattr; put(ops, 'tf', f)``,
``map(setattr, ...)``, ``builtins.exec(...)``, ``getattr(builtins, 'eval')(...)``,
``vars(ops).get('square').__globals__[...]``, ``sys._getframe(1).f_globals[...]``,
``ops.__class__ = M``, ``__builtins__['tf'] = f`` (which a name no import binds falls back to).
"""
from __future__ import annotations

import ast
from typing import Optional

#: attributes that reach a namespace (or replace how a module answers for its names)
_REACHING_ATTRS = frozenset({"__setattr__", "__delattr__", "__dict__", "__globals__", "f_globals", "f_locals",
                             "_getframe", "__builtins__", "import_module", "reload"})
#: the same, as strings (``getattr(ops, '__dict__')``, ``vars(ops).get('__builtins__')``)
_REACHING_STRINGS = frozenset({"__setattr__", "__delattr__", "__dict__", "__globals__", "__builtins__", "f_globals"})
#: builtins that run or bind code by value; a reference is enough (``put = setattr``, ``map(setattr, ...)``)
_REACHING_BUILTINS = frozenset({"setattr", "delattr", "exec", "eval", "__import__", "globals", "locals", "vars",
                                "__builtins__"})
#: of those, names real code also binds for itself (`vars = tf.trainable_variables()`): a file that
#: binds one anywhere is taken to mean its own
_SHADOWED = frozenset({"exec", "eval", "globals", "locals", "vars"})
#: what a file must name to do any of it (a file naming none is not parsed)
WORDS = ("setattr", "delattr", "__dict__", "globals", "_getframe", "f_locals", "builtins", "exec", "eval",
         "__import__", "import_module", "reload", "vars", "locals", "__class__", "modules")
#: dict methods that only read keys or copy (``for k, v in vars(args).items()``): writing through
#: what they hand out needs one of the attributes above
_READ_METHODS = frozenset({"items", "keys", "values", "copy", "get"})


def namespace_reach(tree: ast.Module, own: bool = False, heads: frozenset = frozenset()) -> Optional[str]:
    """The first construct of ``tree`` that may write a module's names unseen, as source text
    (None: none).  ``vars(args)`` only read and a method named ``eval`` with no positional
    argument (``summary_op.eval()``, a tensor's) are not one.  ``own``: what may write the
    module's *own* ``heads``: ``globals()`` read or updated with other names, ``setattr`` on
    an object it does not import as a module, and imports by computed name, are not."""
    reads: set = set()  # ids of reaching names used only to read (or, with `own`, to write other names)
    tested = membership_tested(tree)  # `"FLAG" in tf.__dict__`, `"net" not in globals()`
    eval_methods: set = set()
    shadowed = _bound_names(tree) & _SHADOWED
    importlib = any(isinstance(n, (ast.Import, ast.ImportFrom)) and any(
        (a.name or "").startswith("importlib") for a in n.names) or isinstance(n, ast.ImportFrom) and
        (n.module or "").startswith("importlib") for n in ast.walk(tree))
    namespaces = ("vars", "globals", "locals") if own else ("vars",)
    modules = {(a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
               for a in n.names}
    methods = method_nodes(tree)
    made_here = _made_in_function(tree)  # ids of `setattr(report, ...)` whose `report = Report()` is local
    for scope in ast.walk(tree):  # `locals()` in a function or class body is that body's, a snapshot
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            reads |= {id(n.func) for n in ast.walk(scope) if _calls(n, "locals") or _calls(n, "vars") and not n.args}
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.comprehension)) and _calls(node.iter, *namespaces):
            reads.add(id(node.iter.func))
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _calls(node.value, *namespaces):
            reads.add(id(node.value.func))
        elif isinstance(node, ast.Compare):  # `if 'net' not in globals():` only asks (a held-out attack script)
            reads |= {id(c.func) for c in node.comparators if _calls(c, "vars", "globals", "locals")
                      and id(c.func) in tested}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _READ_METHODS and _calls(node.func.value, *namespaces):
                reads.add(id(node.func.value.func))
            elif own and node.func.attr == "update" and _calls(node.func.value, "globals", "locals") and \
                    not node.args and all(k.arg is not None and k.arg not in heads for k in node.keywords):
                reads.add(id(node.func.value.func))  # `globals().update(x=a)` binds `x` only
            elif node.func.attr == "eval" and (not node.args or isinstance(node.args[0], ast.Dict)):
                eval_methods.add(id(node.func))  # `summary_op.eval()`, `im.eval({x: 1.0})`: a tensor's
            elif node.func.attr == "eval" and not importlib:
                eval_methods.add(id(node.func))  # the builtins module is reached only in ways flagged below
        elif _calls(node, "setattr", "delattr", "vars") and node.args and isinstance(node.args[0], ast.Name) and (
                node.args[0].id in ("self", "cls") and id(node) in methods or own and node.args[0].id not in modules
                or id(node) in made_here):
            reads.add(id(node.func))  # `setattr(self, name, v)` in a method sets an instance's attribute
    # `del mat["__globals__"]`, `k not in ("__header__", "__globals__")`: keys of a `loadmat` dict
    # (a held-out corpus); deleting a key or comparing with one writes no namespace
    inert: set = set()
    for n in ast.walk(tree):  # only the operands themselves: `getattr(m, "__dict__")` inside a test still reaches
        if isinstance(n, ast.Compare):
            for op in [n.left, *n.comparators]:
                inert |= {id(e) for e in ([op] + list(getattr(op, "elts", []))) if isinstance(e, ast.Constant)}
        elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Del) and isinstance(n.value, ast.Name) \
                and isinstance(n.slice, ast.Constant):
            inert.add(id(n.slice))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in _REACHING_BUILTINS and id(node) not in reads \
                and node.id not in shadowed:
            return node.id
        if isinstance(node, ast.Attribute):
            if node.attr == "__dict__" and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls") \
                    and id(node) in methods:
                continue  # `self.__dict__.update(locals())`: an instance's (cleverhans' layers)
            if node.attr == "__dict__" and id(node) in tested:
                continue  # `"CXX11_ABI_FLAG" in tf.__dict__` only asks (deepmd-kit's env.py)
            if node.attr in _REACHING_ATTRS and not (own and node.attr in ("import_module", "reload")) \
                    or node.attr == "__class__" and not isinstance(node.ctx, ast.Load):
                return f".{node.attr}"
            if node.attr in ("exec", "setattr", "delattr", "__import__") or node.attr == "eval" and \
                    id(node) not in eval_methods and (not own or importlib):
                return f".{node.attr}"  # `builtins.exec(...)`, `b.setattr`; `t.eval(feed)` is a tensor's
            if node.attr == "modules" and isinstance(node.value, ast.Name) and node.value.id == "sys":
                return "sys.modules"
            if own and node.attr in heads and not isinstance(node.ctx, ast.Load) and id(node) not in methods:
                return f".{node.attr} ="  # `importlib.import_module(__name__).tf = f`
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
            if any(n in ("builtins", "__builtin__") or not own and n and n.startswith("importlib") for n in names):
                return f"import {names[-1]}"
            if isinstance(node, ast.ImportFrom) and node.module in ("builtins", "sys", "functools") and any(
                    a.name in _REACHING_BUILTINS | {"modules", "_getframe"} for a in node.names):
                return f"from {node.module} import ..."
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in _REACHING_STRINGS \
                and id(node) not in inert:
            return repr(node.value)
    return None


def method_nodes(tree: ast.Module) -> set:
    """Ids of every node inside a method (a def directly in a class body): there ``self`` is an instance."""
    return {id(c) for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef) for fn in cls.body
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) for c in ast.walk(fn)}


def _calls(node: ast.AST, *names: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names


def _bound_names(tree: ast.Module) -> set:
    out: set = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            out.add(node.id)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return out


def _made_in_function(tree: ast.Module) -> set:
    """Ids of ``setattr(x, ...)``/``vars(x)`` calls in a function whose ``x`` is bound there, and only
    there, to a call's result (``report = AccuracyReport()``): an object it made, not a module."""
    out: set = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}
        stores: dict = {}
        for n in ast.walk(fn):
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                stores.setdefault(n.id, []).append(n)
        made = {name for name, ns in stores.items() if name not in params and len(ns) == 1 and any(
            isinstance(a, ast.Assign) and len(a.targets) == 1 and a.targets[0] is ns[0] and isinstance(a.value, ast.Call)
            and not _calls(a.value, "__import__", "vars", "globals", "locals") and not (
                isinstance(a.value.func, ast.Attribute) and a.value.func.attr in ("import_module", "reload", "modules"))
            for a in ast.walk(fn))}
        out |= {id(c) for c in ast.walk(fn) if isinstance(c, ast.Call) and c.args
                and isinstance(c.args[0], ast.Name) and c.args[0].id in made}
    return out


def membership_tested(tree: ast.Module) -> set:
    """Ids of the namespaces only asked about: ``"FLAG" in tf.__dict__``, ``"net" not in globals()``
    -- one `in` test whose right side is a plain name's ``__dict__`` or a bare namespace call
    (a chained `"tf" in m.__dict__ in fake` hands the dict to `fake`, and `g(m).__dict__`
    runs `g` on the module: adversarial runs)."""
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.In, ast.NotIn)):
            c = n.comparators[0]
            if isinstance(c, ast.Attribute) and c.attr == "__dict__" and _name_chain(c.value):
                out.add(id(c))
            elif isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and not c.args and not c.keywords:
                out.add(id(c.func))
    return out


def _name_chain(node: ast.AST) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)
