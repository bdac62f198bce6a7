"""Read-only libcst traversals without rebuilding the tree.

libcst's ``CSTNode.visit`` rebuilds every node it passes (it calls each
class's ``_visit_and_replace_children``, which constructs and validates a new
node), even for a ``CSTVisitor``, which can change nothing and gets the
original tree back.  Metadata resolution (scopes, qualified names, parents)
and the plugins' own visitors are all such read-only passes, and rebuilding
is most of their cost.

:func:`read_only_visits` (what ``migrate_text`` uses) or :func:`install` replaces ``CSTNode.visit`` and ``CSTNode.children`` by
versions that, for a ``CSTVisitor``, make exactly the same callbacks
(``on_visit``, ``on_visit_attribute``, ``on_leave_attribute``, ``on_leave``)
on the same nodes in the same order, and return the same values, without
building anything.  Transformers still take libcst's own path.

The order of each class's children is read from libcst's own
``_visit_and_replace_children`` source (a ``return Cls(field=visit_*(self,
"field", self.field, visitor), ...)``).  A class whose method has any other
shape keeps libcst's path for its own fields.  tests/test_cstwalk.py checks
that both paths give the same callback sequence on real files.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
from contextlib import contextmanager
from typing import Optional

from libcst import CSTVisitor, MaybeSentinel
from libcst._batched_visitor import _BatchedCSTVisitor
from libcst._nodes.base import CSTNode

_ONE, _OPTIONAL, _SENTINEL, _MANY = 0, 1, 2, 3
_KINDS = {
    "visit_required": _ONE, "visit_optional": _OPTIONAL, "visit_sentinel": _SENTINEL,
    "visit_iterable": _MANY, "visit_sequence": _MANY, "visit_body_iterable": _MANY, "visit_body_sequence": _MANY,
}

_ORIGINAL_VISIT = CSTNode.visit
_ORIGINAL_CHILDREN = CSTNode.children
_BASE_ON_VISIT_ATTRIBUTE = CSTVisitor.on_visit_attribute
_BASE_ON_LEAVE_ATTRIBUTE = CSTVisitor.on_leave_attribute

#: node class -> ((field, kind), ...) in visiting order; None: use libcst's own method
_PLANS: dict[type, Optional[tuple]] = {}
#: libcst's visitor bases: they define only the empty ``visit_<Node>_<field>`` stubs
_STUB_BASES = frozenset({CSTVisitor, *CSTVisitor.__mro__})
#: visitor class -> whether its on_visit_attribute/on_leave_attribute can do anything
_ATTRIBUTE_HOOKS: dict[type, bool] = {}


def _visit_call(value: ast.expr):
    """(field, kind) for ``visit_*(self, "f", self.f, visitor)``; False for another call of a
    visit function; None when ``value`` visits nothing."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in _KINDS:
        a = value.args
        if (len(a) == 4 and not value.keywords and isinstance(a[0], ast.Name) and a[0].id == "self"
                and isinstance(a[1], ast.Constant) and isinstance(a[2], ast.Attribute)
                and isinstance(a[2].value, ast.Name) and a[2].value.id == "self" and a[2].attr == a[1].value
                and isinstance(a[3], ast.Name) and a[3].id == "visitor"):
            return a[1].value, _KINDS[value.func.id]
        return False
    if any(isinstance(n, ast.Call) for n in ast.walk(value)):
        return False  # something else runs here: keep libcst's path
    return None


def _plan(cls: type) -> Optional[tuple]:
    method = next((b.__dict__["_visit_and_replace_children"] for b in cls.__mro__
                   if "_visit_and_replace_children" in b.__dict__), None)
    if method is None:
        return None
    try:
        fn = ast.parse(textwrap.dedent(inspect.getsource(method))).body[0]
    except (OSError, TypeError, SyntaxError):
        return None
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        return None
    ret = body[0].value
    if isinstance(ret, ast.Name) and ret.id == "self":
        return ()  # a leaf
    if not isinstance(ret, ast.Call) or ret.args or not _constructs_own_class(ret.func, cls):
        return None
    plan = []
    for kw in ret.keywords:
        got = _visit_call(kw.value)
        if got is False or kw.arg is None:
            return None
        if got is not None:
            plan.append(got)
    return tuple(plan)


def _constructs_own_class(func: ast.expr, cls: type) -> bool:
    """``Cls(...)``, ``self.__class__(...)`` or ``type(self)(...)``."""
    if isinstance(func, ast.Name):
        return func.id == cls.__name__
    if isinstance(func, ast.Attribute):
        return func.attr == "__class__" and isinstance(func.value, ast.Name) and func.value.id == "self"
    return (isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "type"
            and len(func.args) == 1 and isinstance(func.args[0], ast.Name) and func.args[0].id == "self")


def _plan_for(cls: type) -> Optional[tuple]:
    try:
        return _PLANS[cls]
    except KeyError:
        plan = _PLANS[cls] = _plan(cls)
        return plan


def _has_attribute_hooks(visitor: CSTVisitor) -> bool:
    """Whether on_visit_attribute/on_leave_attribute may do anything for this visitor: its
    class overrides them, or defines a ``visit_<Node>_<field>``/``leave_<Node>_<field>``
    method that is not one of libcst's empty stubs."""
    if isinstance(visitor, _BatchedCSTVisitor):
        return any(k.count("_") > 1 for k in visitor.visitor_methods)  # the stubs are left out there
    cls = type(visitor)
    known = _ATTRIBUTE_HOOKS.get(cls)
    if known is None:
        overridden = (cls.on_visit_attribute is not _BASE_ON_VISIT_ATTRIBUTE
                      or cls.on_leave_attribute is not _BASE_ON_LEAVE_ATTRIBUTE)
        own = [vars(k) for k in cls.__mro__ if k not in _STUB_BASES]
        known = _ATTRIBUTE_HOOKS[cls] = overridden or any(
            _is_attribute_hook(name) and not getattr(fn, "_is_no_op", False) for d in own for name, fn in d.items())
    return known


def _is_attribute_hook(name: str) -> bool:
    parts = name.split("_", 2)
    return len(parts) == 3 and parts[0] in ("visit", "leave") and parts[1] in _node_class_names()


_NODE_NAMES: set = set()


def _node_class_names() -> set:
    if not _NODE_NAMES:
        todo = [CSTNode]
        while todo:
            for sub in todo.pop().__subclasses__():
                if sub.__name__ not in _NODE_NAMES:
                    _NODE_NAMES.add(sub.__name__)
                    todo.append(sub)
    return _NODE_NAMES


def _visit(self: CSTNode, visitor):
    if not isinstance(visitor, CSTVisitor):
        return _ORIGINAL_VISIT(self, visitor)
    on_visit, on_leave = visitor.on_visit, visitor.on_leave
    hooks = _has_attribute_hooks(visitor)
    on_visit_attribute, on_leave_attribute = visitor.on_visit_attribute, visitor.on_leave_attribute
    plans = _PLANS

    def walk(node: CSTNode) -> None:
        if on_visit(node):
            cls = type(node)
            plan = plans[cls] if cls in plans else _plan_for(cls)
            if plan is None:
                node._visit_and_replace_children(visitor)  # its children come back through _visit
            elif hooks:
                for name, kind in plan:
                    value = getattr(node, name)
                    on_visit_attribute(node, name)
                    if kind == _MANY:
                        for child in value:
                            walk(child)
                    elif kind == _ONE or (value is not None if kind == _OPTIONAL
                                          else not isinstance(value, MaybeSentinel)):
                        walk(value)
                    on_leave_attribute(node, name)
            else:
                for name, kind in plan:
                    value = getattr(node, name)
                    if kind == _MANY:
                        for child in value:
                            walk(child)
                    elif kind == _ONE or (value is not None if kind == _OPTIONAL
                                          else not isinstance(value, MaybeSentinel)):
                        walk(value)
        on_leave(node)

    walk(self)
    return self


def _children(self: CSTNode) -> list:
    cls = type(self)
    plan = _PLANS[cls] if cls in _PLANS else _plan_for(cls)
    if plan is None:
        return _ORIGINAL_CHILDREN.fget(self)
    out = []
    for name, kind in plan:
        value = getattr(self, name)
        if kind == _MANY:
            out.extend(value)
        elif kind == _ONE or (value is not None if kind == _OPTIONAL else not isinstance(value, MaybeSentinel)):
            out.append(value)
    return out



@contextmanager
def read_only_visits():
    """The read-only traversal inside the block, libcst's own after it (also when it was
    already installed by an outer block, it stays so)."""
    was = installed()
    install()
    try:
        yield
    finally:
        if not was:
            uninstall()


def install() -> None:
    """Use the read-only traversal for every CSTVisitor from now on (idempotent)."""
    CSTNode.visit = _visit
    CSTNode.children = property(_children, doc=_ORIGINAL_CHILDREN.__doc__)


def uninstall() -> None:
    """libcst's own traversal again (tests compare the two)."""
    CSTNode.visit = _ORIGINAL_VISIT
    CSTNode.children = _ORIGINAL_CHILDREN


def installed() -> bool:
    return CSTNode.visit is _visit
