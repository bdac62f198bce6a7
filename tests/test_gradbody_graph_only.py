"""Gradient bodies that read graph-only facts refuse (TFG117); found by an adversarial run.

Under tf.custom_gradient the body runs eagerly in TF2, or while tracing, where the
forward op is the wrapper's IdentityN: ``op.outputs[0].consumers()`` counted other
ops (silently wrong inside tf.function), ``.name`` / ``.value_index`` raise eagerly,
and ``tf.executing_eagerly()`` answers differently.
"""
from __future__ import annotations


import pytest

from migrator.model import MANUAL, MIGRATED
from migrator.pipeline import Options, migrate_text

TEMPLATE = '''\
import tensorflow as tf


@tf.RegisterGradient("G")
def _g(op, grad):
    return {body}


def f(x):
    with tf.get_default_graph().gradient_override_map({{"Identity": "G"}}):
        return tf.identity(x)
'''


def outcome(body: str):
    src = TEMPLATE.format(body=body)
    out, sites = migrate_text(src, path="m.py", options=Options())
    (site,) = [s for s in sites if s.kind == "override_map"]
    return src, out, site


@pytest.mark.parametrize("body", [
    "grad * float(len(op.outputs[0].consumers()))",
    "tf.identity(grad * 2.0, name=op.inputs[0].name.split(':')[0] + '_grad')",
    "grad * float(op.outputs[0].value_index + 2)",
    "grad * (3.0 if tf.executing_eagerly() else 2.0)",
    "grad * (3.0 if tf.inside_function() else 2.0)",
    "grad * (2.0 if hasattr(op.outputs[0], 'op') else 3.0)",
    "grad * (2.0 if getattr(grad, 'graph', None) is not None else 3.0)",
    "tf.identity(grad, name=grad.name.split(':')[0])",
    "grad if op.inputs[0].device == '' else 2.0 * grad",
])
def test_graph_only_reads_refuse(body):
    src, out, site = outcome(body)
    assert out == src
    assert (site.status, site.code) == (MANUAL, "TFG117"), site.reason


@pytest.mark.parametrize("body", [
    "grad * 2.0",
    "tf.cast(grad, op.inputs[0].dtype)",
    "grad if op.inputs[0].dtype.name == 'float32' else 2.0 * grad",  # a dtype's name is the same in both
    "tf.reshape(grad, tf.shape(op.inputs[0]))",
])
def test_eager_safe_reads_still_migrate(body):
    src, out, site = outcome(body)
    assert site.status == MIGRATED, (site.code, site.reason)
    assert "custom_gradient" in out


@pytest.mark.parametrize("body, imports, want", [
    # the same name, another computation in TF2: TF1's function is kept under tf.compat.v1
    ("tf.image.resize(grad[None, :, :, None], [2, 2])[0, :, :, 0]", "", "tf.compat.v1.image.resize("),
    # compat.v2's where is TF2's in both runtimes: nothing to change (it was made v1's)
    ("tf2.where(tf.constant([True, False]), grad, tf.zeros_like(grad))", "import tensorflow.compat.v2 as tf2\n",
     "tf2.where("),
])
def test_gradient_bodies_keep_the_computation_tf1_ran(body, imports, want):
    src = imports + TEMPLATE.format(body=body)
    out, sites = migrate_text(src, path="g.py")
    assert all(s.status == MIGRATED for s in sites) and want in out, out


@pytest.mark.parametrize("body", [
    "grad * tf.cond(tf.reduce_sum(grad) > 0.0, lambda: [grad * 2.0], lambda: [grad * 3.0])[0]",
    "tf.while_loop(lambda g: tf.reduce_sum(g) < 50.0, lambda g: [g * 2.0], [grad])[0]",
    "tf.case([(tf.reduce_sum(grad) > 0.0, lambda: [grad * 2.0])], default=lambda: [grad * 3.0])[0]",
])
def test_control_flow_whose_result_tf1_unwraps_refuses(body):
    """TF1 unwraps a one-element list result; TF2 (and tf.compat.v1's, inside tf.function) keeps
    it: a second adversarial run got other gradients."""
    src = TEMPLATE.format(body=body)
    out, sites = migrate_text(src, path="g.py")
    assert out == src and any(s.code == "TFG117" for s in sites)


@pytest.mark.parametrize("src, want", [
    (TEMPLATE.format(body="tf.nn.embedding_lookup([grad[:1], grad[1:]], tf.constant([0, 1]))"),
     "tf.compat.v1.nn.embedding_lookup("),  # "mod" in TF1, "div" in TF2
    (TEMPLATE.replace("def _g(op, grad):", "def _g(op, grad, rs=tf.image.resize):").format(
        body="rs(grad[None, :, :, None], [2, 2])[0, :, :, 0]"), "rs=tf.compat.v1.image.resize"),  # a reference
])
def test_a_changed_api_is_tf1_s_also_as_a_reference(src, want):
    out, sites = migrate_text(src, path="g.py")
    assert all(s.status == MIGRATED for s in sites) and want in out, out
