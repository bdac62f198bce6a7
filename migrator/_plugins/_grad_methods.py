"""Callers of a method, where the tape proof asks about a parameter (:func:`method_verdict`).

A method's callers cannot all be listed (an instance anywhere, a subclass, ``getattr``), so
nothing here proves a parameter independent; one visible call that computes the parameter from
the source argument refutes the assumption, and the site is refused instead of an unsafe fix.
"""
from __future__ import annotations

import os
from typing import Optional

import libcst as cst

from migrator._plugins._grad_callers import Signature, Verdict, dependent_caller
from migrator.project_calls import self_calls


def method_verdict(rw, fn: cst.FunctionDef, param: str, source_params: list, source_keys=()) -> Optional[Verdict]:
    """A method's callers cannot all be listed, but one visible caller that computes ``param``
    from the source argument refutes the assumption (found in real code: cleverhans passes
    `model.get_logits(x)` with `x` to a constructor; the --unsafe-fixes tape was wrong)."""
    block = rw.parents.get(fn)
    cls = rw.parents.get(block) if isinstance(block, cst.IndentedBlock) else None
    if not isinstance(cls, cst.ClassDef) or not isinstance(rw.parents.get(cls), cst.Module) or fn.decorators:
        return None
    params = [p.name.value for p in list(fn.params.posonly_params) + list(fn.params.params)]
    me, params = (params[0], params[1:]) if params else (None, [])
    sig = Signature(params, {}, fn.params.star_arg is not None or fn.params.star_kwarg is not None)
    # a source `self.x` set from a parameter (`self.x = x`) is that parameter at the call
    stored = {f"{me}.{t.target.attr.value}": stmt.value.value
              for line in fn.body.body if isinstance(line, cst.SimpleStatementLine)
              for stmt in line.body if isinstance(stmt, cst.Assign) and isinstance(stmt.value, cst.Name)
              and stmt.value.value in params
              for t in stmt.targets if isinstance(t.target, cst.Attribute)
              and isinstance(t.target.value, cst.Name) and t.target.value.value == me}
    source_params = [p for p in source_params if p != me] + [stored[k] for k in source_keys if k in stored]
    path = os.path.abspath(rw.ctx.path)
    if fn.name.value == "__init__":
        sites = rw.project.callers(path, cls.name.value) or []
    else:
        tree = rw.project.tree(path)
        sites = self_calls(tree, path, cls.name.value, fn.name.value) if tree is not None else []
    dependent = dependent_caller(rw.project, sites, sig, param, source_params)
    return Verdict(False, dependent=dependent) if dependent else None

