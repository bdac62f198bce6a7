"""Values made before the gradient's block (issue 11; _grad_prefix.py), and the lines of an
enclosing loop that run before the call in a later iteration (gradients._block_scope)."""
from __future__ import annotations

import pytest

from migrator.model import MANUAL
from one_site import manual, migrated, site_of

ATTACK = """\
    import tensorflow as tf

    def attack(images, targets, steps, alpha):
        x_input = tf.identity(images) * 1.0
        x_max = tf.clip_by_value(x_input + 0.3, -1.0, 1.0)
        x_adv = x_input
        {made}
        for _ in range(steps):
            loss = tf.reduce_sum(one_hot * tf.sin(x_adv))
            x_next = x_adv - alpha * tf.sign(tf.gradients(loss, x_adv)[0])
            x_adv = tf.minimum(x_next, x_max)
        return x_adv
    """


def test_a_value_made_before_the_loop_from_other_inputs_is_proven_independent():
    out = migrated(ATTACK.format(made="one_hot = tf.one_hot(targets, 3)"))
    assert "tape.watch(x_adv)" in out


def test_a_value_made_from_the_sources_alias_before_the_loop_is_refused():
    manual(ATTACK.format(made="one_hot = tf.one_hot(targets, 3) * x_input"), "TFG130",
           "`one_hot` may be computed from a value `x_adv` holds at the call (made at line 4, 11")


def test_a_value_made_through_a_second_alias_is_refused():
    manual(ATTACK.format(made="base = x_input\n        one_hot = tf.one_hot(targets, 3) * base"), "TFG130",
           "`one_hot` may be computed from a value `x_adv` holds at the call")


def test_a_value_made_through_a_list_the_source_went_into_is_refused():
    manual(ATTACK.format(made="acc = []\n        acc.append(x_input)\n        one_hot = acc[0] * 2.0"), "TFG130",
           "`one_hot` may be computed from a value `x_adv` holds")


def test_a_source_that_is_a_parameter_stays_an_assumption():
    manual("""\
        import tensorflow as tf

        def attack(x_input, targets, steps, alpha):
            x_adv = x_input
            one_hot = tf.one_hot(targets, 3)
            for _ in range(steps):
                loss = tf.reduce_sum(one_hot * tf.sin(x_adv))
                x_adv = x_adv - alpha * tf.sign(tf.gradients(loss, x_adv)[0])
            return x_adv
        """, "TFG129", "`one_hot`")


def test_a_line_after_an_if_in_the_loop_runs_before_the_call_in_the_next_iteration():
    """It was left out of the lines before the block (the lines after the loop itself were
    put in instead): `r` bound to a literal before the loop looked like a constant, and TF1's
    [1, 12, 12] became [1, 6, 6]."""
    manual("""\
        import tensorflow as tf

        def run(x):
            r = 1.0
            out = []
            for i in range(3):
                if i >= 0:
                    y = x * r
                    g = tf.gradients(y, x)[0]
                    out.append(g)
                r = x * 2.0
            return tf.stack(out)
        """, "TFG130", "`r` is computed from `x` outside the block that holds the call")


def test_lines_after_the_loop_do_not_run_before_the_call():
    out = migrated("""\
        import tensorflow as tf

        def run(x):
            r = 2.0
            for i in range(3):
                y = x * r
                g = tf.gradients(y, x)[0]
            r = x * 2.0
            return g, r
        """)
    assert "tape.watch(x)" in out


ADVERSARIAL = """\
    import tensorflow as tf
    G = None

    def run():
        x_input = tf.constant([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
        x_adv = x_input
        keep = tf.constant([[0.7, 0.8, 0.9], [1.0, 1.1, 1.2]])
        {prefix}
        grads = []
        for _i in range(3):
            loss = tf.reduce_sum(r * tf.sin(x_adv))
            g = tf.gradients(loss, x_adv)[0]
            grads.append(g)
            {tail}
        return tf.stack(grads)
    """


@pytest.mark.parametrize("prefix, tail", [
    # the loop points the source back at a tensor `r` was made from (TF1 adds 2 sin(keep) from
    # the second iteration on; the first version of the rule took the loop's values as new)
    ("r = keep * 2.0", "x_adv = keep"),
    ("r = keep * 2.0", "nxt = keep\n            x_adv = nxt"),
    ("r = keep * 2.0", "if _i == 0:\n                x_adv = keep"),
    ("r = keep * 2.0", "for x_adv in [keep]:\n                pass"),
    ("r = keep * 2.0", "_w = (x_adv := keep)"),
    ("pool = [keep]\n        r = keep * 2.0", "x_adv = pool[0]"),
    ("r = keep * 2.0", "x_adv, _unused = keep, 0"),
    # a store the lines do not show
    ("globals()['G'] = x_input\n        r = G * 2.0", "x_adv = x_adv - 0.1 * g"),
    # `r` rebound later in the loop from the stepped source (older code took `tf.ones` as its value)
    ("r = tf.ones([2, 3])", "x_adv = x_adv - 0.1 * g\n            r = x_adv * 2.0"),
])
def test_the_adversarial_run_on_the_rule_stays_manual(prefix, tail):
    src = ADVERSARIAL.format(prefix=prefix, tail=tail)
    out, site, _ = site_of(src)
    assert site.status == MANUAL, (site.code, site.reason)


def test_the_source_rebound_in_a_finally_of_the_loop_stays_manual():
    out, site, _ = site_of("""\
        import tensorflow as tf

        def run():
            x_input = tf.constant([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
            x_adv = x_input
            keep = tf.constant([[0.7, 0.8, 0.9], [1.0, 1.1, 1.2]])
            r = keep * 2.0
            grads = []
            for _i in range(3):
                try:
                    loss = tf.reduce_sum(r * tf.sin(x_adv))
                    g = tf.gradients(loss, x_adv)[0]
                    grads.append(g)
                finally:
                    x_adv = keep
            return tf.stack(grads)
        """)
    assert site.status == MANUAL and "`r` may be computed from a value `x_adv` holds" in site.reason, site.reason
