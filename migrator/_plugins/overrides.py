"""``gradient_override_map`` + ``RegisterGradient`` -> ``tf.custom_gradient``.

Before::

    @tf.RegisterGradient("QuantizeGrad")
    def sign_grad(op, grad):
        return tf.where(tf.abs(op.inputs[0]) <= 1, grad, tf.zeros_like(grad))

    def binary(x):
        with tf.get_default_graph().gradient_override_map({"Sign": "QuantizeGrad"}):
            return tf.sign(x)

After::

    def sign_grad(x, grad):
        return tf.where(tf.abs(x) <= 1, grad, tf.zeros_like(grad))


    @tf.custom_gradient
    def sign_with_quantize_grad(x):
        return tf.sign(x), lambda grad: sign_grad(x, grad)


    def binary(x):
        return sign_with_quantize_grad(x)

Valid (left alone): a ``RegisterGradient`` that no override map uses (the
primary gradient of a custom op); a ``gradient_override_map`` method of an
object that is not a TF graph (reported, TFG107).

The rewrite runs find sites -> prove -> plan -> apply (see
``_override_model`` for the modules; docs/soundness.md for the conditions):
a block is rewritten only when every condition is shown from the source, or
assumed with ``--unsafe-fixes``; otherwise it stays byte-identical.
"""
from __future__ import annotations

import os

import libcst as cst

from migrator._plugins import Plugin, register


@register
class OverridesPlugin(Plugin):
    name = "overrides"
    order = 10
    triggers = (b"gradient_override_map",)

    def rewrite(self, module: cst.Module, ctx) -> cst.Module:
        from migrator._plugins._override_apply import apply_plan
        from migrator._plugins._override_find import find_sites
        from migrator._plugins._override_plan import Planner, build_plan

        found = find_sites(module, ctx.metadata(module))
        if found is None:
            return module
        expanded = _with_transplants(found, ctx)
        if expanded is None:
            expanded = _with_composites_expanded(found, ctx)
        if expanded is not None:
            return expanded
        plan = build_plan(Planner(found, ctx))
        if plan.empty:
            return module
        return apply_plan(module, plan)


def _with_composites_expanded(found, ctx):
    """The rewrite of the module with composite calls in override blocks written as their ops
    (``_override_composite``), when every block that has one then migrates; else None, and
    nothing of that try is kept (its sites and facts)."""
    from migrator._plugins._override_apply import apply_plan
    from migrator._plugins._override_composite import expand
    from migrator._plugins._override_find import find_sites
    from migrator._plugins._override_plan import Planner, build_plan
    from migrator._plugins._override_values import Values
    from migrator.model import MIGRATED, OVERRIDE_MAP
    from migrator.project import project_for

    done = expand(found, Values(found, os.path.abspath(ctx.path), project_for(ctx.index)))
    if done is None:
        return None
    module, proofs = done
    n_sites, undo = len(ctx.sites), _facts_restorer(ctx)
    found_x = find_sites(module, ctx.metadata(module))
    plan = build_plan(Planner(found_x, ctx)) if found_x is not None else None
    blocks = [s for s in ctx.sites[n_sites:] if s.kind == OVERRIDE_MAP and s.line in proofs]
    if plan is not None and not plan.empty and len(blocks) == len(proofs) and \
            all(s.status == MIGRATED for s in blocks):
        for s in blocks:
            s.proof[:0] = proofs[s.line]
        return apply_plan(module, plan)
    undo()
    return None


def _with_transplants(found, ctx):
    """The rewrite of the module with the gradients its maps name but another project file
    registers copied into it (``_override_transplant``), keeping the copies that then become
    plain helpers (a copy whose block stays manual is dropped and the rest planned again);
    None when none does, and nothing of those tries is kept."""
    import ast

    from migrator._plugins._override_transplant import map_names, plan_transplants
    from migrator.project import project_for

    text = found.module.code
    if ctx.path.endswith(".ipynb") or not getattr(ctx.index, "root", None) or not text.endswith("\n"):
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    names = map_names(tree) - {r.key[1] for r in found.col.registrations if r.key[0] == "lit"}
    if not names:
        return None
    alias = found.col.tf_aliases[0] if found.col.tf_aliases else None
    copies, why = plan_transplants(tree, text, ctx.path, project_for(ctx.index), alias, names)
    ctx.facts.setdefault("transplant_refused", {}).update(why)
    by_line = {node.lineno: map_names(ast.Module(body=[node], type_ignores=[]))
               for node in ast.walk(tree) if isinstance(node, ast.With)}
    here = os.path.dirname(os.path.abspath(ctx.path))
    while copies:
        new, failed = _try_copies(found, ctx, text, alias, copies, by_line, here)
        if new is not None:
            return new
        for c in failed:
            ctx.facts["transplant_refused"][c.name] = failed[c]
        copies = [c for c in copies if c not in failed]
    return None


def _try_copies(found, ctx, text, alias, copies, by_line, here):
    """(the rewritten module, {}) when every copy became a helper; else (None, {copy: why not})."""
    from migrator._plugins._override_apply import apply_plan
    from migrator._plugins._override_find import find_sites
    from migrator._plugins._override_plan import Planner, build_plan
    from migrator._plugins._override_transplant import move_to_imports
    from migrator.model import MIGRATED, OVERRIDE_MAP

    n_sites, undo = len(ctx.sites), _facts_restorer(ctx)
    copied = {c.name: (c.fn_name, f"{os.path.relpath(c.path, here)}:{c.line}") for c in copies}
    ctx.facts["transplanted"] = copied
    module = cst.parse_module(text + "\n\n" + "\n\n".join(c.text for c in copies))
    found_x = find_sites(module, ctx.metadata(module))
    plan = build_plan(Planner(found_x, ctx)) if found_x is not None else None
    converted = {fn.name.value for fn, spec in (plan.helpers.items() if plan is not None else ())
                 if spec is not None and isinstance(fn, cst.FunctionDef)}
    failed = {}
    for c in copies:
        if c.fn_name not in converted:
            stays = [s for s in ctx.sites[n_sites:] if s.kind == OVERRIDE_MAP and s.status != MIGRATED
                     and c.name in by_line.get(s.line, ())]
            failed[c] = (f"copied here, the block at line {stays[0].line} would still need manual work ({stays[0].code}: "
                         f"{stays[0].reason})" if stays else "the copied function could not become a helper")
    new = None
    if not failed and plan is not None:
        new = move_to_imports(apply_plan(module, plan), copies[0].fn_name, found.module, alias)
        if new is None:
            failed = {c: "this file's TensorFlow import is not among its leading imports, where the copy would go"
                      for c in copies}
    if new is None:
        undo()
        return None, failed
    n_lines = text.count("\n")
    ctx.sites[n_sites:] = [s for s in ctx.sites[n_sites:] if s.line <= n_lines]  # the copies' own sites
    for s in ctx.sites[n_sites:]:
        if s.kind == OVERRIDE_MAP and s.status == MIGRATED:
            for name in sorted(by_line.get(s.line, set()) & set(copied)):
                fn_name, where = copied[name]
                s.proof.append(f"gradient {name!r} is registered in {where}, which this file imports; its function "
                               f"is copied here as `{fn_name}` (every global name it reads means the same in both "
                               "modules), and that file keeps its registration")
    return new, {}


def _facts_restorer(ctx):
    """A function that puts back the file's sites and facts as they are now: a try that is not
    kept leaves nothing behind (lists and dicts are copied, as the try may fill them)."""
    n_sites = len(ctx.sites)
    facts = {k: dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v for k, v in ctx.facts.items()}

    def undo() -> None:
        del ctx.sites[n_sites:]
        ctx.facts.clear()
        ctx.facts.update(facts)
    return undo
