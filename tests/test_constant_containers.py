"""A list of constants made in the tape and then filled in place holds only what the tape's own
lines put in it: edward's and SVGD's per-sample log-probabilities, ``p = [0.0] * n`` followed by
``p[s] += ...`` (an unseen corpus: 15 sites refused as "may already hold tensors")."""
from __future__ import annotations

import pytest

from one_site import manual, migrated

_BODY = ("def f(x):\n    n = 3\n    logp = {bind}\n    for s in range(n):\n"
         "        logp[s] += tf.reduce_sum(tf.sin(x * (s + 1.0)))\n"
         "    loss = tf.reduce_sum(tf.stack(logp) ** 2)\n    return tf.gradients(loss, x)[0]\n")


@pytest.mark.parametrize("bind", ["[0.0] * n", "n * [0.0]", "[0.0, 0.0, 0.0]", "[0] * 3", "[-1.0] * n"])
def test_a_list_of_constants_filled_in_the_tape_migrates(bind):
    out = migrated("import tensorflow as tf\n\n\n" + _BODY.format(bind=bind))
    assert f"logp = {bind}\n" in out and "logp[s] +=" in out, out


@pytest.mark.parametrize("bind", ["[KEEP[0]] * n", "[tf.reduce_sum(x)] * n", "KEEP * n", "[0.0] * CNT"])
def test_a_list_that_may_hold_tensors_from_before_stays_manual(bind):
    head = ("import tensorflow as tf\n\nKEEP = [tf.constant(1.0)]\n\n\nclass Count(object):\n"
            "    def __rmul__(self, other):\n        return KEEP\n\n\nCNT = Count()\n\n\n")
    manual(head + _BODY.format(bind=bind), "TFG130", "changed in place inside the tape")


def test_repeating_by_a_name_needs_a_project_without_operator_methods():
    # `[0.0] * n` runs `n.__rmul__` when `n` is a project object that defines it: it may hand back
    # a list the project holds (and fills before the tape)
    head = "import tensorflow as tf\n\n\nclass Vec(object):\n    def __mul__(self, o):\n        return self\n\n\n"
    manual(head + _BODY.format(bind="[0.0] * n"), "TFG130", "changed in place inside the tape")
    migrated(head + _BODY.format(bind="[0.0] * 3"))
