"""Where targets made outside a function are made: the TF2 shape of a TFG120's fix.

``tf.gradients(self.loss, vars)`` in a method whose loss ``__init__`` built, or
``flatgrad(loss, vars)`` whose callers built it: the tape belongs where that value is
computed.  These name the place -- the method and line that set the attribute, the
callers of a module-level function -- so the reason says which function to open the
tape in, and which call to move inside it (issue 11: the largest class of refusals on
real code).  Hints only: nothing here decides a rewrite.
"""
from __future__ import annotations

import os
from typing import Optional

import libcst as cst

from migrator.tfnames import dotted


def attribute_setters(an, func: cst.FunctionDef, name: str, limit: int = 2) -> list[tuple[str, int]]:
    """(method, line) of the statements of ``func``'s class, outside ``func``, that bind ``name``
    (``self.loss = ...``, ``self.x, self.loss = ...``)."""
    cls = an.parents.get(an.parents.get(func)) if an.parents.get(func) is not None else None
    if not isinstance(cls, cst.ClassDef):
        return []
    found: list[tuple[str, int]] = []

    class Setters(cst.CSTVisitor):
        def __init__(self) -> None:
            self.method: Optional[str] = None

        def visit_FunctionDef(self, node: cst.FunctionDef) -> Optional[bool]:
            if node is func or self.method is not None:
                return False  # this method itself; a nested def is not the class's method
            self.method = node.name.value
            return True

        def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
            if node is not func and self.method == node.name.value:
                self.method = None

        def _target(self, target: cst.BaseExpression, stmt: cst.CSTNode) -> None:
            if isinstance(target, (cst.Tuple, cst.List)):
                for el in target.elements:
                    self._target(el.value, stmt)
            elif self.method is not None and dotted(target) == name:
                found.append((self.method, an.pos[stmt].start.line))

        def visit_Assign(self, node: cst.Assign) -> None:
            for t in node.targets:
                self._target(t.target, node)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            self._target(node.target, node)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            self._target(node.target, node)

    cls.body.visit(Setters())
    return sorted(set(found), key=lambda m: m[1])[:limit]


def caller_places(an, func: cst.FunctionDef, limit: int = 3) -> list[str]:
    """``file:line`` of the project's calls of module-level ``func`` (none when they cannot be listed)."""
    if not isinstance(an.parents.get(func), cst.Module):
        return []
    sites = an.project.callers(an.ctx.path, func.name.value) if an.ctx.path else None
    return [f"{os.path.basename(s.path)}:{s.line}" for s in (sites or [])[:limit]]
