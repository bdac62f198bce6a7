"""Targets and a source that come out of one call: the reason says so (issue 11: every reason is
true).  ``a, b = make(x); tf.gradients(a, b)`` was refused as "`a` reaches `b` only through
values made outside this block (`x`)", and DDPG's critic (``self.model, self.action, ... =
self.create_critic_network(...)``) as "`self.model.output` may be changed in place"."""
from __future__ import annotations

import textwrap

import pytest

from migrator.pipeline import migrate_text
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


_AGENT = """\
    import tensorflow as tf

    class Agent(object):
        def __init__(self, sess):
            self.sess = sess
            self._build_losses()
            self._build_solvers()

        def _build_losses(self):
            self.x = tf.placeholder(tf.float32, [None, 3])
            w = tf.Variable(tf.ones([3, 1]))
            self._critic_loss_tf = tf.reduce_sum(tf.matmul(self.x, w))
            self._actor_loss_tf = tf.reduce_sum(tf.matmul(self.x, w) ** 2)

        def _tf_vars(self, scope):
            return tf.trainable_variables(scope)

        def _build_solvers(self):
            critic_vars = self._tf_vars('critic')
            self._critic_grad_tf = tf.gradients(self._critic_loss_tf, critic_vars)
            self._critic_solver = Solver(self.sess, critic_vars)
            CALL
            actor_vars = self._tf_vars('actor')
            self._actor_grad_tf = tf.gradients(self._actor_loss_tf, actor_vars)

    class Solver(object):
        def __init__(self, sess, vars):
            self.sess = sess
    """


def test_a_target_another_method_sets_is_named_with_that_method():
    """DeepMimic's agents: the losses come from `_build_losses`; the reasons said "may be changed in
    place inside the tape (line 20)" and "line 20 runs code on `self` that may set or fill
    `self.sess`", naming the session handed to a solver."""
    src = textwrap.dedent(_AGENT.replace("CALL", "pass"))
    out, sites = migrate_text(src)
    assert out == src and [s.code for s in sites] == ["TFG120", "TFG120"], sites
    assert "`self._critic_loss_tf` is an attribute set outside `_build_solvers`, before it is called (in " \
           "`_build_losses`, line 12)" in sites[0].reason
    assert "`self._actor_loss_tf` is an attribute set outside `_build_solvers`, before it is called (in " \
           "`_build_losses`, line 13)" in sites[1].reason


def test_a_target_set_by_a_method_called_here_is_not_said_to_come_from_elsewhere():
    """`self._build_losses()` inside the function may set the target afresh: TFG120's "set outside"
    would not be true of it."""
    src = textwrap.dedent(_AGENT.replace("CALL", "self._build_losses()"))
    out, sites = migrate_text(src)
    assert out == src and sites[1].code == "TFG130", sites[1]
    assert "set outside" not in sites[1].reason


def test_sources_bound_to_a_graph_collection_are_named_as_such():
    """vadam's DDPG actor (an unseen corpus): `self.mean_params = tf.get_collection(scope)`, then
    `tf.gradients(self.scaled_out, self.mean_params, ...)`; the reason named an unrelated attribute
    (`self.target_network_params`) a method call "may set or fill".  `tvars = tf.trainable_variables()`
    said "`loss` reaches `tvars` only through values made outside this block"."""
    manual("""\
        import tensorflow as tf

        class Actor(object):
            def __init__(self, scope):
                self.inputs, self.out = self.build(scope)
                self.mean_params = tf.get_collection(scope)
                self.target = self.build("target")
                self.grads = tf.gradients(self.out, self.mean_params)

            def build(self, scope):
                x = tf.zeros([2, 3])
                return x, x * 2.0
        """, "TFG135", "the sources `self.mean_params` are `tf.get_collection(...)`, a TF1 graph collection")
    manual("""\
        import tensorflow as tf

        def f(x):
            w = tf.Variable(tf.ones([3]))
            loss = tf.reduce_sum(w * x)
            tvars = tf.trainable_variables()
            return tf.gradients(loss, tvars)
        """, "TFG135", "the sources `tvars` are `tf.trainable_variables(...)`")


def test_a_target_list_handed_to_unknown_code_is_filled_inside_the_tape():
    """`keep(ys)` inside the tape, `put(d * 5)` after it appended to the same list (an adversarial
    run: TF1 gave [6, 7, 8], a tape that closed before `put` [1, 2, 3]).  The list is this
    function's, so the tape holds `put` too and records what it adds (TF1, eager and tf.function
    all give [6, 7, 8] now); before, the call was refused, and a second run migrated it."""
    from migrator.pipeline import migrate_text

    src = ("import tensorflow as tf\n\n\ndef f(x, keep, put):\n    d = tf.ones_like(x)\n    ys = [d * x]\n"
           "    keep(ys)\n    y2 = d * 5.0\n    put(y2)\n    return tf.gradients(ys, [d])[0]\n")
    out, sites = migrate_text(src, path="m.py")
    (s,) = sites
    assert s.status == "migrated" and "        put(y2)\n    return tape.gradient(ys, d)\n" in out, out
    assert migrate_text(out, path="m.py")[0] == out


@pytest.mark.parametrize("bind, hand", [("list([d * x])", "keep(ys)"), ("[d * x]", "keep([ys])"),
                                        ("[d * x]", "keep(*[ys])")])
def test_a_target_list_handed_on_in_other_spellings_is_filled_inside_the_tape(bind, hand):
    from migrator.pipeline import migrate_text

    src = (f"import tensorflow as tf\n\n\ndef f(x, keep, put):\n    d = tf.ones_like(x)\n    ys = {bind}\n"
           f"    {hand}\n    y2 = d * 5.0\n    put(y2)\n    return tf.gradients(ys, [d])[0]\n")
    out, sites = migrate_text(src, path="m.py")
    assert all(s.status == "migrated" for s in sites) and "        put(y2)\n    return tape.gradient(" in out, out


def test_a_loss_appended_to_a_list_the_function_made_is_not_handed_to_unknown_code():
    """`losses.append(loss)` keeps `loss` but never fills it (a held-out repository's MAML loop
    got a false 'may fill it' reason)."""
    from migrator.pipeline import migrate_text

    src = ("import tensorflow as tf\n\n\ndef f(x, n):\n    losses = []\n    w = tf.ones_like(x)\n"
           "    loss = n.loss(x * w)\n    losses.append(loss)\n    return tf.gradients(loss, [w])[0]\n")
    out, sites = migrate_text(src, path="m.py")
    assert all("may fill it" not in s.reason for s in sites)


def test_a_handing_line_between_two_calls_gives_one_answer_on_every_run():
    # edward's copy_test: the first call was refused (`ed.copy(op)` after its tape may fill `op`)
    # while the second call's tape took that line in; a second run then migrated the first call
    from migrator.pipeline import migrate_text

    src = ("import edward as ed\nimport tensorflow as tf\n\n\ndef f():\n    a = tf.constant([1.0, 2.0, 3.0])\n"
           "    op = tf.while_loop(lambda i, t: i < 5, lambda i, t: (i + 1, t + a), [0.0, a])[1]\n"
           "    copy_op = ed.copy(op)\n    gradient = tf.gradients(op, [a])[0]\n"
           "    copy_gradient = tf.gradients(copy_op, [a])[0]\n    return gradient, copy_gradient\n")
    out, sites = migrate_text(src, path="m.py")
    assert [s.status for s in sites] == ["migrated", "migrated"], [(s.code, s.reason) for s in sites]
    assert "        copy_op = ed.copy(op)\n    gradient = tape.gradient(op, a)\n" in out, out
    assert migrate_text(out, path="m.py")[0] == out
