"""Targets and a source that come out of one call: the reason says so (issue 11: every reason is
true).  ``a, b = make(x); tf.gradients(a, b)`` was refused as "`a` reaches `b` only through
values made outside this block (`x`)", and DDPG's critic (``self.model, self.action, ... =
self.create_critic_network(...)``) as "`self.model.output` may be changed in place"."""
from __future__ import annotations

from one_site import manual, migrated


def test_targets_and_a_source_from_one_function_call():
    manual("""\
        import tensorflow as tf

        def pair(x):
            a, b = make(x)
            return tf.gradients(a, b)

        def make(x):
            y = x * 2.0
            return y * y, y
        """, "TFG130", "`a` and the source `b` both come out of `make(...)` (line 4)")


def test_targets_and_a_source_from_one_method_call_stored_on_self():
    manual("""\
        import tensorflow as tf

        class Critic(object):
            def __init__(self, n):
                self.model, self.action, self.state = self.build(n)
                self.action_grads = tf.gradients(self.model.output, self.action)

            def build(self, n):
                s = tf.keras.layers.Input(shape=[n])
                a = tf.keras.layers.Input(shape=[1])
                v = tf.keras.layers.Dense(1)(tf.keras.layers.concatenate([s, a]))
                return tf.keras.Model(inputs=[s, a], outputs=v), a, s
        """, "TFG130", "`self.model.output` and the source `self.action` both come out of `self.build(...)` (line 5)")


def test_targets_computed_later_from_the_calls_other_output():
    manual("""\
        import tensorflow as tf

        def pair(x):
            h, b = make(x)
            loss = tf.reduce_sum(h * 3.0)
            return tf.gradients(loss, b)

        def make(x):
            y = x * 2.0
            return y * y, y
        """, "TFG130", "`loss` and the source `b` both come out of `make(...)` (line 4)")


def test_a_source_unpacked_from_a_plain_value_keeps_the_old_reason():
    """Not a call: nothing ran that could hold the path, so the reason stays about values made
    outside the block."""
    manual("""\
        import tensorflow as tf

        def pair(t):
            a, b = t
            return tf.gradients(a * 2.0, b)
        """, "TFG130", "only through values made outside this block")


def test_one_call_that_makes_the_source_alone_still_migrates():
    out = migrated("""\
        import tensorflow as tf

        def f(x):
            b = tf.identity(x)
            a = b * b
            return tf.gradients(a, b)
        """)
    assert "GradientTape" in out
