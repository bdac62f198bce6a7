"""Checks of the gradients plugin that look past one call: the file and the project.

Each function takes the plugin's per-file analysis ``an`` (a ``GradientRewrite``).
"""
from __future__ import annotations

import os
from typing import Optional

import libcst as cst

from migrator._plugins._grad_model import Refuse
from migrator._plugins._grad_cotangents import unsure_cotangent
from migrator._plugins._grad_values import V1_CONTROL_FLOW, call_kind, calls_in
from migrator.pipeline import imported_modules, module_names_for
from migrator.project_star import star_rebinding
from migrator.tfnames import dotted, tf_name


def grad_file_refusal(an) -> Optional[Refuse]:
    """A reason every gradient call of the file stays manual: a patched `tf.gradients` or
    gradient registry, or an override map a tape would ignore (here or in an imported module)."""
    here = os.path.abspath(an.ctx.path)
    patches = an.ctx.index.gradients_patches
    if patches is None:
        patches = an.project.gradients_patches()
    if patches:  # only a patch in a module loaded with this one matters (found on real code)
        patches = [p for p in patches if an.project.may_run_together(here, p.path)]
    if patches:
        where = f"{os.path.basename(patches[0].path)}:{patches[0].line}"
        return Refuse("TFG131", f"tf.gradients is replaced at {where}; a tape would bypass that wrapper. "
                                "Migrate the wrapper's behaviour onto the tape (e.g. clip the tape's "
                                "gradients), remove the patch, then re-run")
    registry = an.project.registry_patches()
    if registry:
        registry = [p for p in registry if an.project.may_run_together(here, p.path)]
    if registry:
        first = registry[0]
        where = f"{os.path.basename(first.path)}:{first.line}"
        if first.text != "_gradient_registry":
            return Refuse("TFG131", f"a graph's gradient overrides are set directly ({where}: `{first.text}`), "
                                    "which a tape ignores: replace that code with tf.custom_gradient, then re-run")
        return Refuse("TFG131", f"TF's gradient registry is changed at run time ({where}: `_gradient_registry`): "
                                "which gradient function an op gets depends on when a tape runs; migrate by hand")
    if an.ctx.facts.get("manual_overrides"):
        return Refuse("TFG122", "an override map in this file was left for manual migration and a tape "
                                "would ignore it; migrate the override first, then re-run")
    rebinder = _star_rebinds(an, here)
    if rebinder:
        return Refuse("TFG128", rebinder)
    select = an.ctx.options.select
    if select is not None and "overrides" not in select and "gradient_override_map" in an.ctx.source:
        return Refuse("TFG122", "this file enters gradient_override_map and the overrides rule was not selected "
                                "(--select); a tape would ignore the override: select both rules")
    bad = an.ctx.index.left_manual(imported_modules(an.ctx.source))
    if bad:
        return Refuse("TFG122", f"this file imports `{sorted(bad)[0]}`, whose override map was left for "
                                "manual migration; a tape would ignore it: migrate it first, then re-run")
    for dep in an.project.import_closure(here):
        if not an.project.override_entries(dep):
            continue
        in_run = dep in an.project.originals
        if not in_run or an.ctx.index.left_manual(module_names_for(dep)):
            where = "is not part of this run" if not in_run else "was left for manual migration"
            return Refuse("TFG122", f"this file imports `{os.path.basename(dep)}`, which enters "
                                    f"gradient_override_map and {where}; a tape would ignore that override: "
                                    "migrate both files in one run")
    # an override entered elsewhere may wrap a call that reaches this file's code through other
    # modules, a method or a context manager (an adversarial run: TF1 [2, 2, 2], a tape [2, 0, 2])
    for other in an.project.grep(b"gradient_override_map") or []:
        in_run, names = other in an.project.originals, module_names_for(other)
        if other == here:
            continue
        if in_run and not an.ctx.index.left_manual(names, record=False):
            an.ctx.index.left_manual(names)  # were it manual, the check below would decide: a guess must know
            continue  # its overrides were migrated in this run (checked first: no parse)
        if an.project.override_entries(other) and an.project.may_run_together(here, other):
            if in_run:
                an.ctx.index.left_manual(names)  # the answer decides; a file that cannot run with it did not ask
            # which of its overrides stayed manual is that file's report to tell: its first one may not be
            # (an unseen corpus: "dorefa.py:46 ... was left for manual migration" named a migrated one)
            what = f"{os.path.basename(other)}:{an.project.override_entries(other)[0].line} enters " \
                   "gradient_override_map and is not part of this run" if not in_run else \
                   f"{os.path.basename(other)} enters gradient_override_map where an override was left for manual " \
                   "migration (see its report)"
            return Refuse("TFG122", f"{what}; it may be loaded with this file and call into it under the override, "
                                    "which a tape would ignore: migrate that override first (in the same run), then "
                                    "re-run")
    return None


def calls_manual_gradient(an, flat: list, s: int, e: int) -> Optional[str]:
    """A function of this module, called in the region, that holds (or calls one that holds)
    a gradient call left manual: a Hessian-vector product over it needs that one first."""
    holders = _manual_gradient_defs(an)
    for i in range(s, e + 1):
        node = flat[i].node
        for call in calls_in(node) if node is not None else ():
            fn = call.func
            name = fn.value if isinstance(fn, cst.Name) else fn.attr.value if isinstance(fn, cst.Attribute) else None
            if name in holders:
                return an.code(fn)
    return None

def _manual_gradient_defs(an) -> set:
    """Names of this module's functions and methods that hold a manual gradient call, closed
    over calls by name (a function calling one of them holds one too)."""
    direct: set = set()
    defs: dict = {}

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node):
            defs.setdefault(node.name.value, []).append(node)

    an.module.visit(V())
    for c in an.calls:
        if c.refused is not None and c.node is not None:
            cur = an.parents.get(c.node)
            while cur is not None and not isinstance(cur, cst.FunctionDef):
                cur = an.parents.get(cur)
            if cur is not None:
                direct.add(cur.name.value)
    holders = set(direct)
    changed = True
    while changed:
        changed = False
        for name, nodes in defs.items():
            if name in holders:
                continue
            called = {cl.func.value if isinstance(cl.func, cst.Name) else getattr(getattr(cl.func, "attr", None), "value", None)
                      for n in nodes for cl in calls_in(n.body)}
            if called & holders:
                holders.add(name)
                changed = True
    return holders


#: context managers that touch no gradient: a graph's (or session's) own scopes, and the
#: layer-argument scopes of slim and tensorpack, whether methods or imported functions
_NEUTRAL_CONTEXTS = ("as_default", "name_scope", "variable_scope", "device", "control_dependencies",
                     "colocate_with", "arg_scope", "argscope", "nullcontext")


def check_contexts(an, c, flat: list, s: int, e: int) -> None:
    """Each ``with`` around the call (in its function) or inside the region is known not to
    override gradients (TF1 applied an override to every op made inside it; a tape ignores it).
    A project helper entering gradient_override_map refuses (TFG122); any other context manager
    the source does not show is an assumption (lucid's), or a refusal when named like one."""
    for item in _with_items(an, c, flat, s, e):
        helper = _override_helper(an, item)
        if helper:
            raise Refuse("TFG122", f"`{helper}` enters gradient_override_map around these ops; a tape would "
                                   "ignore that override: migrate the helper to tf.custom_gradient first")
        if _neutral_context(an, item, set()):
            continue
        shown = an.code(item.func if isinstance(item, cst.Call) else item)
        if "override" in shown.lower() or "gradient" in shown.lower():
            raise Refuse("TFG122", f"`{shown}` is a context manager around these ops named like a gradient "
                                   "override, which a tape would ignore; migrate it to tf.custom_gradient by hand")
        call = f"{shown}(...)" if isinstance(item, cst.Call) else shown
        text = f"`{call}` at line {an.line(item)} (a context manager around these ops) overrides no gradient"
        if text not in c.assumptions:
            c.assumptions.append(text)


def _neutral_context(an, item, seen: set) -> bool:
    """A context manager the source shows cannot override a gradient: a TensorFlow one
    (other than gradient_override_map, which the override rewrite handles), a graph's own
    scopes, a builtin, or a function of this module made only of those."""
    if not isinstance(item, cst.Call):
        return False
    name = an.tf_name(item)
    if name is not None:
        return "gradient_override_map" not in name
    fn = item.func
    if isinstance(fn, cst.Attribute) and fn.attr.value in _NEUTRAL_CONTEXTS:
        return True
    if isinstance(fn, cst.Name) and fn.value not in an.find.defs and (
            fn.value in _NEUTRAL_CONTEXTS  # `from tensorpack import *`: no qualified name to ask
            or any(q.name.rpartition(".")[2] in _NEUTRAL_CONTEXTS for q in _names(an, fn))):
        return True
    if call_kind(item, an.qn) in ("builtin", "numpy") or _test_case_session(an, item):
        return True
    if isinstance(fn, cst.Name) and fn.value in an.find.defs and fn.value not in seen:
        seen.add(fn.value)
        body = an.find.defs[fn.value]
        if not isinstance(body, cst.FunctionDef) or "override" in an.code(body):
            return False
        return all(call_kind(call, an.qn) in ("tf", "leaf", "noop", "builtin", "numpy")
                   or _neutral_context(an, call, seen) for call in calls_in(body.body))
    return False


def _test_case_session(an, item: cst.Call) -> bool:
    """``self.session()`` (``test_session``, ``cached_session``) in a method of a class based on
    ``tf.test.TestCase`` directly, with no project code defining or setting that name: TF's own."""
    fn, cls = item.func, an.parents.get(item)
    while cls is not None and not isinstance(cls, cst.ClassDef):
        cls = an.parents.get(cls)
    if not (isinstance(fn, cst.Attribute) and dotted(fn.value) == "self" and fn.attr.value in
            ("session", "test_session", "cached_session") and cls is not None):
        return False
    name = fn.attr.value
    return any((tf_name(b.value, an.qn) or "").endswith("test.TestCase") for b in cls.bases) and \
        an.project.grep(name.encode(), rf"def\s+{name}\b|\b{name}\s*=[^=]|setattr|__dict__") == []


def _with_items(an, c, flat: list, s: int, e: int) -> list:
    """Context managers around the call (in its function) and inside the region."""
    out = []
    cur = c.node
    while cur is not None and not isinstance(cur, (cst.FunctionDef, cst.Module)):
        if isinstance(cur, cst.With):
            out += [i.item for i in cur.items]
        cur = an.parents.get(cur)
    for i in range(s, e + 1):
        if flat[i].orig is not None:
            out += [w.item for w in _all_withs(flat[i].orig)]
    return out


def _override_helper(an, expr: cst.BaseExpression) -> Optional[str]:
    """The project function a ``with`` calls, when it enters gradient_override_map."""
    if not isinstance(expr, cst.Call):
        return None
    if an.tf_name(expr) is not None:
        return None
    fn = expr.func
    if isinstance(fn, cst.Name) and fn.value in an.find.defs:
        if "gradient_override_map" in an.code(an.find.defs[fn.value]):
            return fn.value
        return None
    for q in _names(an, fn):
        mod = q.name.rpartition(".")[0]
        path = an.project.resolve(mod, 0, os.path.abspath(an.ctx.path)) if mod else None
        if path is not None and an.project.override_entries(path):
            return an.code(fn)
    return None


def _names(an, node) -> set:
    got = an.qn.get(node, set())
    return got() if callable(got) else got


def _all_withs(node: cst.CSTNode) -> list:
    out = []

    class V(cst.CSTVisitor):
        def visit_With(self, n):
            out.extend(n.items)

        def visit_FunctionDef(self, n):
            return False

    node.visit(V())
    return out


def check_runtime_args(an, c, flat: list, s: int, e: int) -> None:
    """Arguments whose meaning a tape changes: eager ``tf.while_loop``/``tf.map_fn`` ignore
    ``back_prop=False`` (TF1 stopped the gradient there), and a ``grad_ys`` list the source
    builds may hold ``None`` (TF1 read ones; ``output_gradients`` raises)."""
    body = _enclosing_body(an, c.node)
    for call in calls_in(body) if body is not None else ():
        if isinstance(call.func, cst.Name) and call.func.value in ("exec", "eval"):
            raise Refuse("TFG128", f"`{call.func.value}(...)` runs code the migrator cannot see, in the function "
                                   "that holds the call; write it out, then re-run")
    for i in range(s, e + 1):
        node = flat[i].orig
        for call in calls_in(node) if node is not None else ():
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value == "back_prop" and not (
                        isinstance(arg.value, cst.Name) and arg.value.value == "True"):
                    raise Refuse("TFG137", f"`{an.code(call.func)}(..., back_prop={an.code(arg.value)})` at line "
                                           f"{an.line(node)}: eager TF2 ignores back_prop, so a tape would "
                                           "differentiate what TF1 did not; wrap its result in tf.stop_gradient, "
                                           "then re-run")
    og = c.kwargs.get("output_gradients")
    if isinstance(og, (cst.List, cst.Tuple)) and any(
            isinstance(el.value, cst.Name) and _bound_to_none(an, el.value.value, body) for el in og.elements):
        raise Refuse("TFG128", "grad_ys holds a name bound to None (TF1 read ones there, a tape raises); write "
                               "tf.ones_like(y) for that target, then re-run")
    unsure = unsure_cotangent(an, og, c.node, lambda name: _values_of(an, name, c.node))
    if unsure is not None:
        raise Refuse("TFG128", f"grad_ys holds `{an.code(unsure)}`, which may be a Python list: TF1 made one tensor "
                               "of each item, a tape flattens a list into numbers; give each target one tensor "
                               "(tf.constant(...)), then re-run")
    shown = [og] if isinstance(og, (cst.List, cst.Tuple)) else _values_of(an, og.value, c.node) \
        if isinstance(og, cst.Name) else []  # the list itself, or what a name for it was bound to
    items = [el.value for v in shown if isinstance(v, (cst.List, cst.Tuple)) for el in v.elements]
    listed = next((i for i in items if _python_list(an, i, c.node)), None)
    if listed is not None:  # found by an adversarial run: GY = [2., 3.]; grad_ys=[GY] (also list(GY), GY[:])
        raise Refuse("TFG128", f"grad_ys holds `{an.code(listed)}`, which may be a Python list: TF1 made one "
                               "tensor of it, a tape flattens it into numbers; wrap it in tf.constant(...) first")
    passed = _list_from_caller(an, og, c.node)
    if passed is not None:
        raise Refuse("TFG128", f"grad_ys `{an.code(og)}` may hold a Python list or None ({passed}): TF1 made one "
                               "tensor of a list and read ones for None, a tape flattens a list into numbers and "
                               "raises on None; pass tensors there (tf.constant(...), tf.ones_like(y)), then re-run")
    if isinstance(og, cst.Name) and _built_list(an, og.value, body):
        raise Refuse("TFG128", f"grad_ys `{og.value}` is a list built in this function, which may hold None "
                               "(TF1 read ones there, a tape raises); write the list out with tf.ones_like(y) "
                               "for those targets, then re-run")


def _list_from_caller(an, og, at) -> Optional[str]:
    """A caller passing a Python list where grad_ys holds a parameter: ``grad_ys=gy`` with a list of
    lists, or ``grad_ys=[gy]`` with a list."""
    fn = an.parents.get(at)
    while fn is not None and not isinstance(fn, cst.FunctionDef):
        fn = an.parents.get(fn)
    params = {p.name.value for p in list(fn.params.posonly_params) + list(fn.params.params)} if fn else set()
    pairs = [(og, True)] if isinstance(og, cst.Name) else [(el.value, False) for el in og.elements] \
        if isinstance(og, (cst.List, cst.Tuple)) else []
    for expr, nested in pairs:
        if isinstance(expr, cst.Name) and expr.value in params:
            found = an.caller_list(fn, expr.value, nested)
            if found is not None:
                return f"the caller at {found}"
        elif isinstance(expr, cst.Name) and an.module_list(expr.value, nested):
            return f"`{expr.value}` is bound so at module level or where it is imported from"  # GY = [[2.0, 3.0]]
    return None


def _enclosing_body(an, node) -> Optional[cst.CSTNode]:
    """The body of the function holding ``node``, or the module at module level."""
    fn = an.parents.get(node)
    while fn is not None and not isinstance(fn, (cst.FunctionDef, cst.Module)):
        fn = an.parents.get(fn)
    return fn.body if isinstance(fn, cst.FunctionDef) else fn


def _built_list(an, name: str, body) -> bool:
    """``name`` is bound in ``body`` to a list expression, or changed in place."""
    if body is None:
        return False
    found = []

    class V(cst.CSTVisitor):
        def visit_Assign(self, n):
            tensors = isinstance(n.value, (cst.List, cst.Tuple)) and all(  # `[tf.constant(..), tf.ones(..)]`
                isinstance(el.value, cst.Call) and an.tf_name(el.value) is not None for el in n.value.elements)
            if any(isinstance(t.target, cst.Name) and t.target.value == name for t in n.targets) and \
                    isinstance(n.value, (cst.List, cst.Tuple, cst.ListComp, cst.BinaryOperation, cst.Call)) and \
                    not (isinstance(n.value, cst.Call) and an.tf_name(n.value) is not None) and not tensors:
                found.append(n)

        def visit_Call(self, n):
            f = n.func
            if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == name:
                found.append(n)  # gys.insert(0, None)

        def visit_AssignTarget(self, n):
            if isinstance(n.target, cst.Subscript) and isinstance(n.target.value, cst.Name) \
                    and n.target.value.value == name:
                found.append(n)

    body.visit(V())
    return bool(found)


def _bound_to_none(an, name: str, body) -> bool:
    """``name`` is bound to ``None`` somewhere in ``body`` (``gy = None``)."""
    found = []

    class V(cst.CSTVisitor):
        def visit_Assign(self, n):
            if isinstance(n.value, cst.Name) and n.value.value == "None" and \
                    any(isinstance(t.target, cst.Name) and t.target.value == name for t in n.targets):
                found.append(n)

    if body is not None:
        body.visit(V())
    return bool(found)


def _values_of(an, name: str, at) -> list:
    """What ``name`` may hold at ``at``: its assignments in the enclosing function, a parameter's
    default, and module-level bindings (None where unknown)."""
    out: list = []
    fn = an.parents.get(at)
    while fn is not None and not isinstance(fn, cst.FunctionDef):
        fn = an.parents.get(fn)
    if fn is not None:
        for p in list(fn.params.params) + list(fn.params.kwonly_params):
            if p.name.value == name and p.default is not None:
                out.append(p.default)

        class V(cst.CSTVisitor):
            def visit_Assign(self, n):
                if any(isinstance(t.target, cst.Name) and t.target.value == name for t in n.targets):
                    out.append(n.value)

        fn.body.visit(V())
    return out + list(an.module_values(name))


def _python_list(an, expr, at, depth: int = 0) -> bool:
    """``expr`` may be a Python list or tuple (a display, ``list(..)``, ``xs[:]``, ``a.tolist()``, or a
    name bound to one in the function, a default or the module)."""
    if isinstance(expr, (cst.List, cst.Tuple, cst.ListComp, cst.Set, cst.GeneratorExp)):
        return True
    if isinstance(expr, cst.Subscript):
        return _python_list(an, expr.value, at, depth)
    if isinstance(expr, cst.Call):
        f = expr.func
        return isinstance(f, cst.Name) and f.value in ("list", "tuple", "sorted", "reversed") or \
            isinstance(f, cst.Attribute) and f.attr.value in ("tolist", "copy")
    if isinstance(expr, cst.Name) and depth < 3:
        return any(v is not None and _python_list(an, v, at, depth + 1) for v in _values_of(an, expr.value, at))
    return False


def eager_guard(an, node) -> Optional[int]:
    """The line of ``if tf.executing_eagerly(): raise ...`` in the function holding ``node``:
    written because tf.gradients needs a graph, it still stops the migrated code eagerly
    (found on real code: tf-gan's gradient penalty)."""
    fn = an.parents.get(node)
    while fn is not None and not isinstance(fn, cst.FunctionDef):
        fn = an.parents.get(fn)
    if fn is None or not isinstance(fn.body, cst.IndentedBlock):
        return None
    for stmt in fn.body.body:
        if isinstance(stmt, cst.If) and any(
                isinstance(c.func, (cst.Attribute, cst.Name)) and (getattr(c.func, "attr", None) or c.func).value
                == "executing_eagerly" for c in an.calls_in(stmt.test)) and any(
                isinstance(small, cst.Raise) for line in stmt.body.body
                if isinstance(line, cst.SimpleStatementLine) for small in line.body):
            return an.line(stmt)
    return None


def _star_rebinds(an, here: str) -> Optional[str]:
    """``from mylib import *`` where ``mylib`` (a project module) may bind the name a gradient
    call is spelled with (``tf``) to something else than this file's TF import: the call is
    mylib's, not TF's (an adversarial run; libcst's scopes do not follow star imports)."""
    if "*" not in an.ctx.source:
        return None
    heads = {(dotted(c.node.func) or "").split(".")[0] for c in an.calls if c.node is not None} - {""}
    return star_rebinding(an.project, here, an.ctx.source, heads)


#: v1 control flow, as a project's code spells a call of it
_V1_CALL = r"\b(while_loop|cond|case|switch_case|scan|map_fn|foldl|foldr|dynamic_rnn|bidirectional_dynamic_rnn|" \
           r"raw_rnn|static_state_saving_rnn)\s*\("


def hidden_v1_control_flow(an, flat: list, s: int, e: int) -> Optional[str]:
    """In a Session script, a region that calls project code the same-module scan does not follow
    (a method, `__call__`, an imported function, `FNS[k](x)`) while some project file builds v1
    control flow: the tape may not differentiate it (an adversarial run: it returned None)."""
    hits = an.project.grep(b"(", _V1_CALL)
    if hits == []:
        return None
    if hits is not None:  # only code loaded with this file: itself and what it imports
        here = os.path.abspath(an.ctx.path)
        near = {here} | {os.path.abspath(p) for p in an.project.import_closure(here, depth=16)}
        hits = [h for h in hits if os.path.abspath(h) in near]
        if not hits:
            return None
    for i in range(s, e + 1):
        node = flat[i].node
        for call in calls_in(node) if node is not None else []:
            fn = call.func
            if call_kind(call, an.qn) != "project" or isinstance(fn, cst.Name) and fn.value in an.find.defs:
                continue
            where = f"{os.path.basename(hits[0])} builds" if hits else "project code may build"
            return f"`{an.code(fn)}(...)` runs project code the migrator does not follow, and {where} v1 " \
                   "control flow (`tf.while_loop`, `tf.cond`, ...)"
    return None


def check_session_control_flow(an, c, flat: list, s: int, e: int) -> None:
    """A Session script's tape cannot differentiate v1 control flow (TFG132): built on a line of
    the region, in a same-module function it calls, or maybe behind project code."""
    for i in range(s, e + 1):
        node = flat[i].node
        found = _v1_control_flow(an, node, set()) if node is not None else None
        if found:
            raise Refuse("TFG132", f"line {an.line(flat[i].orig) if flat[i].orig else c.line} builds `{found}` (v1 "
                                   "control flow) and this file still runs under a Session, where a tape cannot "
                                   "differentiate it; keep tf.gradients until the script runs eagerly")
    # a test case's graph: only what the region spells (zhusuan's 36 tests, run, and a package importing HMC)
    if an.find.session is True and (hidden := hidden_v1_control_flow(an, flat, s, e)):
        raise Refuse("TFG132", f"{hidden}, and this file still runs under a Session, where a tape cannot "
                               "differentiate v1 control flow; keep tf.gradients until the script runs eagerly")


def _v1_control_flow(an, node: cst.CSTNode, seen: set) -> Optional[str]:
    for call in calls_in(node):
        if an.tf_name(call) in V1_CONTROL_FLOW:
            return an.code(call.func)
        fn = call.func
        if isinstance(fn, cst.Name) and fn.value in an.find.defs and fn.value not in seen:
            seen.add(fn.value)
            found = _v1_control_flow(an, an.find.defs[fn.value].body, seen)
            if found:
                return f"{found}` inside `{fn.value}"
    return None
