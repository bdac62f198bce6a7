"""Shapes an expert migrates by hand that the tool refused, from a held-out set of 79
realistic TF1 programs (each checked by numbers in TF1, TF2 eager and tf.function), and the
adversarial variants that must stay manual."""
from __future__ import annotations

import textwrap

import pytest

from migrator.model import MANUAL, MIGRATED
from migrator.pipeline import migrate_text


def _run(src: str):
    src = textwrap.dedent(src)
    out, sites = migrate_text(src, "m.py")
    return src, out, sites


def test_tf_constant_in_an_override_block_makes_no_op_that_matters():
    # `tf.constant` was "a call whose ops are unknown" (TFG101): it makes one Const op, which has
    # no inputs, so no gradient function of it ever runs
    _src, out, sites = _run("""\
        import tensorflow as tf


        def f(x):
            with tf.get_default_graph().gradient_override_map({"Relu": "Identity"}):
                return tf.nn.relu(x * tf.constant(2.0))
        """)
    assert [s.status for s in sites] == [MIGRATED], [(s.code, s.reason) for s in sites]
    assert "tf.constant(2.0)" in out and "gradient_override_map" not in out


@pytest.mark.parametrize("attr, migrates", [("G", True), ("graph", False)])
def test_an_attribute_named_graph_bound_to_the_default_graph_is_that_graph(attr, migrates):
    # `self.graph = tf.get_default_graph()` stays an assumption (TFG116): a subclass in another file
    # or `q.graph = tf.Graph()` may set it to another graph (an adversarial run); `self.G` migrates
    _src, out, sites = _run(f"""\
        import tensorflow as tf


        class Quantizer(object):
            def __init__(self):
                self.{attr} = tf.get_default_graph()

            def __call__(self, x):
                with self.{attr}.gradient_override_map({{"Round": "Identity"}}):
                    return tf.round(x * 3.0) / 3.0
        """)
    assert [s.status for s in sites] == [MIGRATED if migrates else MANUAL], [(s.code, s.reason) for s in sites]


def test_a_session_graph_attribute_is_still_an_assumption():
    src, out, sites = _run("""\
        import tensorflow as tf


        def f(sess, x):
            with sess.graph.gradient_override_map({"Round": "Identity"}):
                return tf.round(x)
        """)
    assert out == src and [s.code for s in sites] == ["TFG116"]


def test_a_gradient_through_a_migrated_override_wrapper_is_an_unsafe_fix():
    # the override rewrite's own @tf.custom_gradient wrapper: its result reaches only its arguments,
    # but the name may be rebound (`op = _cached(op)`, another file's `main.op = ...`, a patched
    # `tf.custom_gradient`: an adversarial run), so the gradient through it stays an assumption
    _src, out, sites = _run("""\
        import tensorflow as tf


        def f(x):
            x = tf.convert_to_tensor(x)
            with tf.get_default_graph().gradient_override_map({"Round": "Identity"}):
                y = tf.round(x)
            return tf.gradients(tf.reduce_sum(y * x), x)[0]
        """)
    assert [s.code for s in sites] == ["TFG001", "TFG129"], [(s.code, s.reason) for s in sites]
    assert "round_straight_through(...)" in sites[1].reason


def test_another_decorator_on_a_helper_keeps_the_assumption():
    src, out, sites = _run("""\
        import functools
        import tensorflow as tf


        @functools.lru_cache()
        def h(x):
            return tf.round(x)


        def f(x):
            x = tf.convert_to_tensor(x)
            y = h(x)
            return tf.gradients(tf.reduce_sum(y * x), x)[0]
        """)
    assert out == src and [s.code for s in sites] == ["TFG129"]


@pytest.mark.parametrize("loop, migrates", [
    ("for loss in [l1, l2]:", True),
    ("for name, loss in [('l1', l1), ('l2', l2)]:", True),
    ("for loss, k in ((l1, 1), (l2, 2)):", True),
    ("for loss in [l1, f(l2)]:", False),  # a call in the display runs after the tape
    ("for loss, x in [(l1, x), (l2, x)]:", False),  # the loop rebinds the sources
    ("for loss in [l1, *rest]:", False),
    ("for (loss, k), j in [((l1, 1), 0)]:", False),
])
def test_a_loop_over_a_display_of_losses_gets_one_persistent_tape(loop, migrates):
    src, out, sites = _run(f"""\
        import tensorflow as tf

        rest = []


        def f(x):
            x = tf.identity(x)
            l1 = tf.reduce_sum(tf.square(x))
            l2 = tf.reduce_sum(tf.sin(x))
            out = []
            {loop}
                out.append(tf.gradients(loss, x)[0])
            return out
        """)
    if migrates:
        assert [s.status for s in sites] == [MIGRATED], [(s.code, s.reason) for s in sites]
        assert "persistent=True" in out and "tape.gradient(loss, x)" in out
    else:
        assert out == src and all(s.status == MANUAL for s in sites), [(s.code, s.reason) for s in sites]


@pytest.mark.parametrize("extend", [
    "losses.append(tf.reduce_sum(tf.exp(x)))",
    "losses += [tf.reduce_sum(tf.exp(x))]",
    "grow(losses, x)",
])
def test_a_loop_that_adds_to_the_list_it_iterates_stays_manual(extend):
    # the new element is made after the tape: TF1 differentiated it, the tape gives None
    src, out, sites = _run(f"""\
        import tensorflow as tf


        def grow(ls, x):
            ls.append(tf.reduce_sum(tf.exp(x)))


        def f():
            x = tf.constant([0.3, -0.2, 1.1])
            losses = [tf.reduce_sum(tf.square(x)), tf.reduce_sum(tf.sin(x))]
            out = []
            for loss in losses:
                out.append(tf.gradients(loss, x)[0])
                if len(losses) < 3:
                    {extend}
            return out
        """)
    assert out == src and all(s.status == MANUAL for s in sites), [(s.code, s.reason) for s in sites]


@pytest.mark.parametrize("op, migrates", [
    # `x = tf.placeholder(...)` was "a call on the way from the sources that may cut the gradient"
    ("tf.tanh", True),
    ("tf.round", False),  # a cutting op between source and target keeps the batch_jacobian
])
def test_the_line_that_makes_the_source_is_not_on_the_way_from_it(op, migrates):
    src, out, sites = _run(f"""\
        import tensorflow as tf
        from tensorflow.python.ops.parallel_for.gradients import batch_jacobian


        def probe():
            x = tf.placeholder(tf.float32, [None, 3])
            y = {op}(x) * 2.0
            return batch_jacobian(y, x)
        """)
    if migrates:
        assert [s.status for s in sites] == [MIGRATED], [(s.code, s.reason) for s in sites]
        assert "tape.batch_jacobian(y, x)" in out
    else:
        assert out == src and [s.code for s in sites] == ["TFG128"] and f"`{op}`" in sites[0].reason


@pytest.mark.parametrize("n, migrates", [
    ("basis.shape[1]", True),
    ("basis.get_shape()[1]", True),
    ("basis.get_shape()[1].value", False),  # TF1's Dimension alone: the hoisted line would fail in TF2
    ("sizes[1]", False),  # an item of a list may change between the tape and the loop
    ("basis.shape[k]", False),
])
def test_one_gradient_per_column_up_to_a_static_dimension(n, migrates):
    # PiNN's `[tf.gradients(basis[:, i], diff)[0] for i in range(basis.shape[1])]`
    src, out, sites = _run(f"""\
        import tensorflow as tf

        sizes = [2, 4]


        def jacob(k):
            diff = tf.constant([[0.1, 0.5], [-0.3, 0.9]])
            basis = tf.concat([tf.sin(diff), tf.cos(diff) * diff], axis=1)
            return [tf.gradients(basis[:, i], diff)[0] for i in range({n})]
        """)
    assert (sites[0].status == MIGRATED) == migrates, sites[0].reason


@pytest.mark.parametrize("between, migrates", [
    ("", True),
    ("    a.append(x)\n", False),  # an element from before the function: not fresh any more
])
def test_sources_taken_from_a_display_of_fresh_tensors_are_fresh(between, migrates):
    # `a = [tf.constant(...), tf.constant(...)]`, then `tf.gradients(loss, [a[part]])`: the
    # parameter `x` existed before those tensors, so it cannot depend on them
    src = ("import tensorflow as tf\n\n\ndef f(x, part=0):\n"
           "    a = [tf.constant([0.3, 0.1, -0.4]), tf.constant([1.0, 2.0, 3.0])]\n" + between +
           "    loss = tf.reduce_sum(tf.sin(x * a[0]) * a[1])\n"
           "    return tf.gradients(loss, [a[part]])\n")
    out, sites = migrate_text(src, "m.py")
    assert (sites[0].status == MIGRATED) == migrates, (sites[0].code, sites[0].reason)


@pytest.mark.parametrize("use, migrates", [
    ("self.logits[:, label]", True),
    ("self.logits[:, label] * label", False),  # read as a value too
    ("tf.gather(self.logits, label, axis=1)", False),  # an argument: not shown to be an index
])
def test_a_parameter_read_only_as_an_index_carries_no_gradient(use, migrates):
    src = textwrap.dedent(f"""\
        import tensorflow as tf

        W = tf.constant([[0.1, 0.2], [-0.3, 0.4], [0.5, -0.6]])


        class Saliency(object):
            def __init__(self, x, label):
                self.x = x
                self.logits = tf.matmul(tf.tanh(self.x), W)
                self.saliency = tf.gradients({use}, self.x)[0]
        """)
    out, sites = migrate_text(src, "m.py")
    assert (sites[0].status == MIGRATED) == migrates, (sites[0].code, sites[0].reason)


@pytest.mark.parametrize("use, migrates", [
    ("y = tf.tanh(tf.matmul(x, W))", True),  # TF1's matmul raises below rank 2
    ("y = tf.tanh(x @ W)", True),
    ("y = tf.tanh(x) * 2.0", False),
    ("z = tf.matmul(x * 1.0, W)\n    y = tf.tanh(x)", False),  # the matmul's operand is another tensor
])
def test_a_matmul_operand_has_rank_two_for_batch_jacobian(use, migrates):
    src = ("import numpy as np\nimport tensorflow as tf\n"
           "from tensorflow.python.ops.parallel_for.gradients import batch_jacobian\n\n"
           "W = np.ones([3, 2], np.float32)\n\n\n"
           "def f(x):\n    x = tf.identity(x)\n    " + use + "\n    return batch_jacobian(y, x)\n")
    out, sites = migrate_text(src, "m.py")
    assert (sites[0].status == MIGRATED) == migrates, (sites[0].code, sites[0].reason)
