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

The analysis is in :mod:`._override_analysis`; this module applies the plan.
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
        from migrator._plugins._override_analysis import plan_overrides
        from migrator._plugins._override_apply import apply_plan

        plan = plan_overrides(module, ctx)
        if plan is None or plan.empty:
            return module
        return apply_plan(module, plan)
