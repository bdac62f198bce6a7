"""What a source bound outside the gradient's block holds (an adversarial run on the rule that
drops `tf.nest.flatten` for a loop's stepped source: 18 programs it got wrong, 10 older ones)."""
from __future__ import annotations

import pytest

from migrator.model import MANUAL, MIGRATED
from one_site import site_of

LOOP = """\
    import numpy as np
    import tensorflow as tf

    def _copy(x):
        return x * 1.0

    def run(n):
        a = tf.constant([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
        b = tf.constant([[0.7, 0.8, 0.9], [1.0, 1.1, 1.2]])
        w = tf.constant([[1.0, -2.0, 3.0], [0.5, 0.25, -1.5]])
        parts = [a, b]
        {made}
        out = []
        for _ in range(3):
            loss = tf.reduce_sum(w * tf.sin(x_adv))
            g = tf.gradients(loss, x_adv)[0]
            out.append(g)
            x_adv = x_adv - 0.1 * tf.sign(g)
        return out
    """


@pytest.mark.parametrize("made", [
    "x_adv = tf.py_function(_copy, [a], [tf.float32])",  # a list of one tensor
    "x_adv = parts * +1",  # list repetition by an int
    "x_adv = parts * (n - 1)",
    "x_adv = (4 // 4) * [a, b]",
    "x_adv = 2 ** 0 * [a, b]",
])
def test_a_source_that_may_be_a_list_keeps_the_flatten(made):
    out, site, _ = site_of(LOOP.format(made=made))
    if site.status == MIGRATED:
        assert "tf.nest.flatten(tape.gradient(loss, x_adv))[0]" in out, out


@pytest.mark.parametrize("made", ["x_adv = -2.0", "x_adv = 0.5 * 3.0", "x_adv = np.ones([2, 3]) * 0.5",
                                  "x_adv = not n"])
def test_a_python_or_numpy_value_before_the_loop_is_refused(made):
    """TF1 gave None in the first iteration; `tape.watch(-2.0)` raised."""
    out, site, src = site_of(LOOP.format(made=made))
    assert out == src and site.status == MANUAL and site.code == "TFG126", (site.code, site.reason)


def test_a_tensor_stepped_in_the_loop_needs_no_flatten():
    out, site, _ = site_of(LOOP.format(made="x_adv = a * 1.0"))
    assert site.status == MIGRATED and "tf.sign(g)" in out and "x_adv))[0]" not in out


def test_a_binding_in_an_except_star_ends_the_reading():
    src = LOOP.format(made="x_adv = a * 1.0\n        try:\n            pass\n        except* ValueError:\n"
                           "            x_adv = [a, b]")
    out, site, _ = site_of(src)
    assert site.status == MANUAL or "tf.nest.flatten(tape.gradient(loss, x_adv))[0]" in out


@pytest.mark.parametrize("made", [
    "h = a * 2.0\n        x_adv = a",  # two names, one made from the other before the loop
    "x_adv = (a, a * 2.0)",  # a tuple whose elements are made from each other
    "x_adv = [a]\n        x_adv += [a * 2.0]",
])
def test_sources_made_from_each_other_outside_the_block_are_refused(made):
    """TF1's gradient for `a` also ran through the second source; a tape watching both missed it."""
    src = LOOP.format(made=made)
    if made.startswith("h ="):
        src = src.replace("tf.gradients(loss, x_adv)[0]", "tf.gradients(loss + tf.reduce_sum(h), [x_adv, h])[0]")
    out, site, src = site_of(src)
    assert out == src and site.status == MANUAL and site.code == "TFG130", (site.code, site.reason)


def test_independent_sources_made_before_the_loop_still_migrate():
    out, site, _ = site_of("""\
        import tensorflow as tf

        def run():
            a = tf.constant([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
            b = tf.constant([[0.7, 0.8, 0.9], [1.0, 1.1, 1.2]])
            h = b * 2.0
            x = a * 1.0
            for _ in range(2):
                loss = tf.reduce_sum(tf.sin(x) * h)
                gx, gh = tf.gradients(loss, [x, h])
            return gx, gh
        """)
    assert site.status == MIGRATED, (site.code, site.reason)
