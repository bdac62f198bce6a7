"""Code an override block runs that no call in it shows: refuse the block where it may run.

A property read (``b = s.b``), ``getattr(s, "b")``, ``len(obj)`` through ``__len__``,
``obj[k]`` through ``__getitem__``, ``col.append(t)`` on a project class, a ``key=``
callback of ``sorted``/``min``/``max``, a generator or ``map(...)`` made before the block
and consumed in it: each runs code while the override is active, and the ops it made were
left unwrapped (an adversarial run: 9 programs, TF1 ``[5, 5, 5]``, the migration
``[2, 2, 2]``).  The op scanner reads what the block spells; these checks refuse it
(TFG101) where the project defines such code, rather than guess what it runs.
"""
from __future__ import annotations

import ast
import re
from typing import Optional

import libcst as cst

from migrator._plugins._override_model import Refuse, code

#: protocol methods Python calls from syntax: `obj[k]`, `len(obj)`, `for x in obj`, `a < b`, ...
PROTOCOL = frozenset({
    "__getitem__", "__len__", "__iter__", "__next__", "__contains__", "__bool__", "__index__", "__int__",
    "__float__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__reversed__",
    "__getattr__", "__getattribute__", "__get__", "__format__", "__str__", "__repr__",
})
#: consumers of an iterable among the builtins the scanner takes as op-free
_CONSUMERS = frozenset({"list", "tuple", "dict", "set", "sorted", "min", "max", "zip", "enumerate", "sum", "len"})
_LAZY = frozenset({"map", "filter", "zip", "iter", "reversed", "enumerate"})


class Hooks:
    """What the project's code defines that Python may run implicitly, read from its text on
    demand (a regex per file, no parse but of the files that define a function asked about):
    a superset, so a check that finds nothing is safe."""

    def __init__(self, project) -> None:
        self.project = project
        self._texts: Optional[list] = None
        self._cache: dict = {}

    def _all(self) -> list:
        if self._texts is None:
            files = self.project.grep(b"def ") or []
            self._texts = [(p, self.project.text(p) or "") for p in files]
        return self._texts

    def _names(self, key: str, pattern: re.Pattern) -> set:
        if key not in self._cache:
            self._cache[key] = {n for _p, text in self._all() for n in pattern.findall(text)}
        return self._cache[key]

    @property
    def methods(self) -> set:
        return self._names("methods", _DEF)

    @property
    def protocol(self) -> set:
        return self.methods & PROTOCOL

    @property
    def properties(self) -> set:
        return self._names("decorated", _DECORATED) | self._names("property", _PROPERTY)

    def is_generator(self, name: str) -> bool:
        """Some project function of that name yields (every file defining one is parsed)."""
        key = ("generator", name)
        if key not in self._cache:
            self._cache[key] = False
            for path, text in self._all():
                if f"def {name}(" in text and "yield" in text:
                    tree = self.project.tree(path)
                    if tree is None or any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
                                           and any(isinstance(m, (ast.Yield, ast.YieldFrom)) for m in ast.walk(n))
                                           for n in ast.walk(tree)):
                        self._cache[key] = True
                        break
        return self._cache[key]


_DEF = re.compile(r"^[ \t]+(?:async[ \t]+)?def (\w+)\(", re.M)  # an indented def: a method, or nested
_DECORATED = re.compile(r"^[ \t]*@.*\n[ \t]*(?:async[ \t]+)?def (\w+)", re.M)  # the last decorator's def
_PROPERTY = re.compile(r"^[ \t]+(\w+)[ \t]*=[ \t]*\w*property\(", re.M)


def project_hooks(project) -> Optional[Hooks]:
    cached = project.__dict__.get("_override_hooks", False)
    if cached is False:
        cached = Hooks(project) if project.files() is not None else None
        project.__dict__["_override_hooks"] = cached
    return cached


#: the protocol methods each construct (or op-free builtin) may run
_RUNS = {
    cst.Subscript: {"__getitem__", "__class_getitem__"},
    cst.For: {"__iter__", "__next__", "__getitem__", "__len__"},
    cst.CompFor: {"__iter__", "__next__", "__getitem__", "__len__"},
    cst.StarredElement: {"__iter__", "__next__", "__getitem__", "__len__"},
    cst.Comparison: {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__contains__", "__iter__",
                     "__hash__"},
    cst.If: {"__bool__", "__len__"}, cst.IfExp: {"__bool__", "__len__"}, cst.While: {"__bool__", "__len__"},
    cst.BooleanOperation: {"__bool__", "__len__"},
}
_BUILTIN_RUNS = {
    "len": {"__len__"}, "bool": {"__bool__", "__len__"}, "int": {"__int__", "__index__"},
    "float": {"__float__", "__index__"}, "round": {"__round__"}, "str": {"__str__", "__repr__"},
    "repr": {"__repr__"}, "format": {"__format__", "__str__"}, "print": {"__str__", "__repr__"},
    "hash": {"__hash__"}, "isinstance": {"__instancecheck__"},
    **{c: {"__iter__", "__next__", "__getitem__", "__len__", "__lt__", "__gt__", "__hash__"} for c in _CONSUMERS},
}
_ATTRIBUTE_HOOKS = frozenset({"__getattr__", "__getattribute__", "__get__"})


def check_implicit(scanner, node: cst.CSTNode, scope) -> None:
    """Refuse ``node`` (one node of a block) when Python may run project code for it."""
    lazy_hooks, modules = getattr(scanner.col, "implicit", (lambda: None, set()))
    hooks = lazy_hooks()
    called = scanner.__dict__.setdefault("called", set())  # funcs of calls met: not attribute reads
    def refuse(why: str) -> None:
        raise Refuse("TFG101", f"{why}, which may make ops the migrator cannot see; migrate this block by hand")

    def may_run(dunders: set) -> Optional[str]:
        if hooks is None:
            return "?"
        found = sorted(dunders & hooks.protocol)
        return found[0] if found else None

    if isinstance(node, cst.Call):
        fn = node.func
        called.add(id(fn))
        if isinstance(fn, cst.Name) and fn.value in ("sorted", "min", "max") and any(
                a.keyword is not None and a.keyword.value == "key" for a in node.args):
            refuse(f"`{code(fn)}(..., key=...)` calls its key function in the block")
        if isinstance(fn, cst.Name) and fn.value == "getattr" and (
                hooks is None or hooks.properties or _ATTRIBUTE_HOOKS & hooks.protocol):
            refuse("`getattr(...)` may run a property of the project")
        if isinstance(fn, cst.Name) and fn.value in _BUILTIN_RUNS and may_run(_BUILTIN_RUNS[fn.value]):
            refuse(f"`{fn.value}(...)` may run `{may_run(_BUILTIN_RUNS[fn.value])}` of a project class")
        if isinstance(fn, cst.Attribute) and not _on_module(fn.value, modules) and scanner.col.tf(node) is None \
                and (hooks is None or fn.attr.value in hooks.methods):
            refuse(f"`{code(fn)}(...)` may be a method of a project class")
        return
    if isinstance(node, cst.Attribute):
        if id(node) not in called and not _on_module(node.value, modules) and (
                hooks is None or node.attr.value in hooks.properties or _ATTRIBUTE_HOOKS & hooks.protocol):
            refuse(f"reading `{code(node)}` may run a property (or `__getattr__`) of a project class")
        return
    for kind, dunders in _RUNS.items():
        if isinstance(node, kind) and may_run(dunders):
            refuse(f"`{code(node).strip().splitlines()[0][:40]}` may run `{may_run(dunders)}` of a project class")
    if isinstance(node, cst.Name) and _lazy(node.value, scope, hooks):
        refuse(f"`{node.value}` is a lazy iterator: its code runs where it is consumed (in the block or after "
               "it), not where it is made")


#: op types made without a call the source shows: a read of a resource variable, a constant for a
#: Python value, control-flow plumbing (an adversarial run: `{"ReadVariableOp": ...}` was taken
#: for a dead key and its registration deleted; TF1 applied it to every read in the block)
IMPLICIT_OPS = frozenset({"ReadVariableOp", "VarHandleOp", "ResourceGather", "Const", "Switch", "Merge", "Enter",
                          "Exit", "NextIteration", "LoopCond", "Placeholder", "PlaceholderWithDefault"})


def implicit_keys(block) -> None:
    """Refuse a block (or one nested in it) whose map overrides an op type made implicitly."""
    keys = sorted(set(block.mapping) & IMPLICIT_OPS)
    if keys:
        raise Refuse("TFG101", f"the map overrides `{keys[0]}`, which the block's code makes without a call the "
                               "source shows (a variable read, a constant); migrate this block by hand")
    for child in getattr(block, "children", ()):
        implicit_keys(child)


def import_names(module: cst.Module) -> set:
    """Names the module binds by its top-level imports (modules and what they export)."""
    out: set = set()
    for st in module.body:
        for small in getattr(st, "body", ()) if isinstance(st, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Import):
                out |= {(a.evaluated_alias or a.evaluated_name).split(".")[0] for a in small.names}
            elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                out |= {a.evaluated_alias or a.evaluated_name for a in small.names}
    return out


def _on_module(expr: cst.BaseExpression, modules: set) -> bool:
    root = expr
    while isinstance(root, cst.Attribute):
        root = root.value
    return isinstance(root, cst.Name) and root.value in modules


def _lazy(name: str, scope, hooks: Optional[Hooks]) -> bool:
    for _stmt, value in scope.lookup_assigns(name) or []:
        if isinstance(value, cst.GeneratorExp):
            return True
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and (
                value.func.value in _LAZY or hooks is None or hooks.is_generator(value.func.value)):
            return True
    return False
