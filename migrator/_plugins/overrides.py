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
    import os

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
    n_sites, facts = len(ctx.sites), {k: list(v) if isinstance(v, list) else v for k, v in ctx.facts.items()}
    found_x = find_sites(module, ctx.metadata(module))
    plan = build_plan(Planner(found_x, ctx)) if found_x is not None else None
    blocks = [s for s in ctx.sites[n_sites:] if s.kind == OVERRIDE_MAP and s.line in proofs]
    if plan is not None and not plan.empty and len(blocks) == len(proofs) and \
            all(s.status == MIGRATED for s in blocks):
        for s in blocks:
            s.proof[:0] = proofs[s.line]
        return apply_plan(module, plan)
    del ctx.sites[n_sites:]
    ctx.facts.clear()
    ctx.facts.update(facts)
    return None
