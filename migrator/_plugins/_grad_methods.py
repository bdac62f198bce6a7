"""What the tape proof may conclude about a method (:func:`method_verdict`, :func:`attribute_evidence`,
:func:`closed_method`).

One visible call that computes a parameter from the source argument refutes the assumption
that it is independent, and the site is refused instead of an unsafe fix.  A proof needs
more: every call that may run the method (each ``X.name(...)`` in the project, when ``name``
is used nowhere else), and the project's value flow (:mod:`migrator.object_flow`), which
tells whether a parameter or an attribute can hold anything computed from the sources.
"""
from __future__ import annotations

import ast
import os
from typing import Optional

import libcst as cst

from migrator._plugins._dataflow import BUILTINS
from migrator._plugins._grad_callers import Signature, Verdict, dependent_caller
from migrator._flow_model import DUNDERS, GRAPH_WALKS, STATE_READS
from migrator._flow_model import bindings
from migrator.object_flow import META, ObjectFlow, flow_for, local_names, params_of
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
    if dependent:
        return Verdict(False, dependent=dependent)
    found = method_flow(rw, fn)
    if found is None or fn.name.value == "__init__":
        return None
    flow, node = found
    seeds = _seeds(flow, node, source_params, source_keys)
    callers = flow.method_callers(node)
    if seeds is None or not callers:
        return None
    where = ", ".join(f"{os.path.basename(p)}:{c.lineno}" for p, c, _s in callers[:3]) + (
        ", ..." if len(callers) > 3 else "")
    if flow.clean([("var", id(node), param)], seeds):
        return Verdict(True, evidence=f"every call of `.{node.name}(...)` in the project ({where}) passes a value "
                                      "no source reaches")
    return Verdict(False, evidence=f"the project's calls of `.{node.name}(...)` ({where}) may pass it a value "
                                   "computed from a source, through what they share (an argument, an attribute, a "
                                   "container filled in place)")


def method_flow(rw, fn: cst.FunctionDef) -> Optional[tuple[ObjectFlow, ast.FunctionDef]]:
    """The project's flow and the ``ast`` node of method ``fn`` (of a module-level class)."""
    block = rw.parents.get(fn)
    cls = rw.parents.get(block) if isinstance(block, cst.IndentedBlock) else None
    if not isinstance(cls, cst.ClassDef) or not isinstance(rw.parents.get(cls), cst.Module) or fn.decorators:
        return None
    flow = flow_for(rw.project)
    tree = rw.project.tree(os.path.abspath(rw.ctx.path))
    if flow is None or tree is None:
        return None
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.name.value]
    defs = [n for c in classes for n in c.body if isinstance(n, ast.FunctionDef) and n.name == fn.name.value]
    if len(classes) != 1 or len(defs) != 1 or defs[0].decorator_list or not params_of(defs[0]):
        return None
    return flow, defs[0]


def _seeds(flow: ObjectFlow, node: ast.FunctionDef, source_params, source_keys) -> Optional[list]:
    """Where the sources' values sit: a parameter, and everything each call of the method
    reads to make it (`tf.convert_to_tensor(self.t)` is `self.t`), or an attribute of
    ``self``; None when a source is something else (a local the block binds), or a
    parameter whose calls cannot all be listed."""
    me = params_of(node)[0]
    params = [p for p in params_of(node)[1:]]
    seeds = [("var", id(node), p) for p in source_params if p != me]
    if seeds:
        callers = flow.method_callers(node)
        if callers is None:
            return None
        for _path, call, _scope in callers:
            found = flow.calls.get(id(call), [])
            made_of = flow.arg_reads.get(id(call), [None] * len(found))
            names = [None if isinstance(a, ast.Starred) else i for i, a in enumerate(call.args)] + [
                k.arg for k in call.keywords]
            for where, (val, ids), reads in zip(names, found, made_of):
                if where is None or isinstance(where, int) and where >= len(params) or (
                        isinstance(where, int) and params[where] in source_params or where in source_params):
                    seeds += list(ids | (val if reads is None else reads))
    for key in source_keys:
        parts = key.split(".")
        if len(parts) == 1 and parts[0] in source_params:
            continue
        if len(parts) == 2 and parts[0] == me:
            seeds.append(("attr", parts[1]))
            continue
        return None
    return _with_items(flow, seeds)


def _with_items(flow: ObjectFlow, seeds: list) -> list:
    """The seeds and what they hold, two levels deep: sources given as a list (`self.thetas =
    [self.w]`) are its items, and a value computed from `self.w` depends on them (a held-out
    EWC shape: `self.out` was taken to be independent of `self.thetas`, and the tape gave None).
    Taking the items out makes the display's items one object with them, as `tf.gradients` did."""
    out = list(seeds)
    for s in seeds:
        item = flow.elem(s)
        out += [item, flow.elem(item)]
    flow._taint.clear()  # the groups changed
    return out


def attribute_evidence(rw, fn: cst.FunctionDef, key: str, source_params, source_keys) -> Optional[str]:
    """``self.w``, read in the tape of method ``fn``: no value computed from the sources can
    be in it, by the project's flow (a proof, or None)."""
    found = method_flow(rw, fn)
    if found is None:
        return None
    flow, node = found
    me, parts = params_of(node)[0], key.split(".")
    seeds = _seeds(flow, node, source_params, source_keys)
    if seeds is None or parts[0] != me or me in flow.rebound.get(id(node), ()) or any(p in META for p in parts):
        return None
    locs = [("var", id(node), me)] + [("attr", p) for p in parts[1:]]
    if flow.clean(locs, seeds):
        return f"no code in the project stores in `.{parts[-1]}` a value computed from the sources"
    return None


def closed_method(rw, fn: cst.FunctionDef, call: cst.Call, source_params, source_keys) -> Optional[str]:
    """``self.m(...)`` in the tape of method ``fn``: ``m`` is this class's only method of that
    name in the project, and builds its result from its arguments, TF ops, and attributes no
    source reaches (so it hands back no tensor computed from the sources before the tape)."""
    found = method_flow(rw, fn)
    if found is None or not isinstance(call.func, cst.Attribute) or not isinstance(call.func.value, cst.Name):
        return None
    flow, node = found
    seeds = _seeds(flow, node, source_params, source_keys)
    me = params_of(node)[0]
    if seeds is None or call.func.value.value != me or me in flow.rebound.get(id(node), ()):
        return None
    owner = flow.owner.get(id(node))
    if owner is None or not _closed(flow, owner, call.func.attr.value, seeds, set()):
        return None
    return f"`{call.func.attr.value}` (a method of this class, overridden in no subclass in the project) " \
           "builds its result from its arguments, TF ops and attributes that no source reaches"


def _closed(flow: ObjectFlow, owner: tuple, name: str, seeds: list, seen: set) -> bool:
    defs = flow.dispatch(owner[1], name)
    if len(defs) != 1 or name in seen or flow.replaced(name):
        return name in seen  # a recursive call adds nothing new; an override or a replacement may run instead
    if not seen and not flow.clean([("dunder", k) for k in set(DUNDERS.values()) | {"ops"}], seeds):
        return False  # a project `__getitem__`, `__iter__`, ... may hand back a tensor from the sources
    seen.add(name)
    fn = defs[0]
    if fn.decorator_list or not params_of(fn) or name.startswith("__"):
        return False
    me = params_of(fn)[0]
    if me in flow.rebound.get(id(fn), ()) or not flow.clean([("var", id(fn), me)], seeds):
        return False
    return _closed_body(flow, fn, me, owner, seeds, seen)


def _module_function(flow: ObjectFlow, method: ast.AST, name: str) -> Optional[ast.FunctionDef]:
    """The module-level function ``name`` a method's body calls: defined once in its file,
    bound nowhere else there, undecorated."""
    path = flow.owner.get(id(method), (None,))[0] if id(method) in flow.owner else flow.function_paths.get(
        id(method))
    tree = flow.project.tree(path) if path is not None and flow.project is not None else None
    if tree is None:
        return None
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    if len(defs) != 1 or defs[0].decorator_list or len(bindings(tree, name)) != 1 or name in flow.value_refs:
        return None
    return defs[0]


def _closed_body(flow: ObjectFlow, fn: ast.AST, me: Optional[str], owner: tuple, seeds: list, seen: set) -> bool:
    """``fn``'s body reads only its parameters and locals, TF/NumPy, builtins, and attributes
    and globals no source reaches, and calls only such code (``me``: its ``self``)."""
    if id(fn) in seen:
        return True
    seen.add(id(fn))
    pure = flow.pure.get(flow.owner.get(id(fn), owner)[0], set()) if id(fn) in flow.owner else \
        flow.pure.get(flow.function_paths.get(id(fn)), set())
    local = local_names(fn)
    if any(not isinstance(d, ast.Constant) for d in fn.args.defaults + [k for k in fn.args.kw_defaults if k]):
        return False  # `def net_u(self, x, t, _seen=[])`: a default kept from call to call
    callees = {id(n.func) for n in ast.walk(fn) if isinstance(n, ast.Call)}
    for n in ast.walk(fn):
        if n is not fn and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Global,
                                          ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.Await)):
            return False
        if isinstance(n, ast.Call):
            f = n.func
            root = f
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(f, ast.Attribute) and f.attr in STATE_READS | GRAPH_WALKS:
                return False  # `tf.get_collection(...)`, `t.consumers()`: tensors stored in the graph earlier
            if me is not None and isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == me:
                if not _closed(flow, owner, f.attr, seeds, seen):
                    return False
            elif isinstance(f, ast.Name) and f.id in ("getattr", "hasattr") and f.id not in local:
                literal = len(n.args) >= 2 and isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str)
                if not literal or not flow.clean([("attr", n.args[1].value)], seeds):
                    return False  # `getattr(self, "cache")`: the attribute it names
            elif isinstance(f, ast.Name) and f.id in BUILTINS and f.id not in local and f.id not in flow.functions:
                if f.id in ("vars", "globals", "locals", "eval", "exec", "__import__"):
                    return False
            elif isinstance(f, ast.Attribute) and isinstance(root, ast.Name) and root.id in local \
                    and root.id != me and f.attr not in flow.methods:
                continue  # a method of a local object made here, no project class's
            elif isinstance(f, ast.Name) and f.id not in local and _module_function(flow, fn, f.id) is not None:
                if not _closed_body(flow, _module_function(flow, fn, f.id), None, owner, seeds, seen):
                    return False
            elif not (isinstance(root, ast.Name) and root.id not in local and root.id in pure):
                return False  # a helper, a layer object, `self.sess.run`, a project object's method
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and id(n) not in callees:
            root = n
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id not in local and root.id in pure:
                continue
            if n.attr in GRAPH_WALKS or n.attr not in META and not flow.clean([("attr", n.attr)], seeds):
                return False
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in callees:
            if n.id not in local and n.id not in BUILTINS and not n.id in pure and \
                    not flow.clean([("global", n.id)], seeds):
                return False  # a module global the sources reach
    return True




#: TF calls that return one tensor (what a caller passes, when it is one of these, is a tensor)
_TENSOR_MAKERS = frozenset({"constant", "convert_to_tensor", "placeholder", "Variable", "get_variable", "zeros",
                            "ones", "fill", "random_normal", "random_uniform", "truncated_normal", "cast"})


def method_param_structure(rw, fn: cst.FunctionDef, param: str) -> str:
    """"tensor" when every call of method ``fn`` in the project passes, for ``param``, one
    tensor made by a TF constructor (directly, or through an attribute only ever set to one);
    else "unknown"."""
    found = method_flow(rw, fn)
    if found is None:
        return "unknown"
    flow, node = found
    callers = flow.method_callers(node)
    params = params_of(node)[1:]
    if not callers or param not in params:
        return "unknown"
    kinds = set()
    for _path, call, _scope in callers:
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return "unknown"
        i = params.index(param)
        expr = call.args[i] if i < len(call.args) else next((k.value for k in call.keywords if k.arg == param), None)
        if isinstance(expr, ast.UnaryOp):
            expr = expr.operand
        if isinstance(expr, ast.Constant) and isinstance(expr.value, (int, float)):
            kinds.add("python")  # `self.net_f(x, 0.5)`: TF1 differentiated a new constant; a tape cannot watch it
            continue
        values = flow.attr_values.get(expr.attr, [None]) if isinstance(expr, ast.Attribute) else [expr]
        kinds.add("tensor" if values and all(isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute)
                                             and v.func.attr in _TENSOR_MAKERS for v in values) else "unknown")
    if "python" in kinds:
        return "python"
    return "tensor" if kinds == {"tensor"} else "unknown"
