"""`[tf.gradients(y, x)[0] for y in ys]`: one gradient per element of a list held by a name.

The list display evaluates `ys` once and takes every gradient, as `for y in ys:` does; the
tape goes where `ys` is made.  Any other comprehension shape stays manual (TFG128).
"""
from __future__ import annotations

import textwrap

import pytest

from migrator.model import MANUAL, MIGRATED
from migrator.pipeline import migrate_text

_SRC = """\
import tensorflow as tf


def helper(t):
    return t


def f():
    x = tf.constant([0.1, 0.7, -0.5])
    ys = [tf.sin(x), tf.cos(x) * x]
    return {comp}
"""


def test_one_gradient_per_element_migrates_with_a_persistent_tape():
    out, sites = migrate_text(_SRC.format(comp="[tf.gradients(y, x)[0] for y in ys]"), "m.py")
    (site,) = sites
    assert site.status == MIGRATED, site.reason
    assert "tf.GradientTape(persistent=True) as tape" in out
    assert "return [tape.gradient(y, x) for y in ys]" in out
    assert any("listcomp" in p for p in site.proof), site.proof


@pytest.mark.parametrize("comp", [
    "(tf.gradients(y, x)[0] for y in ys)",  # a generator runs later, wherever it is consumed
    "[tf.gradients(y, x)[0] for y in ys if y is not None]",
    "[tf.gradients(y, x)[0] for y in list(ys)]",  # the iterable is a call
    "[tf.gradients(y, x)[0] for y in ys for _ in range(2)]",
    "[tf.gradients(y, [x, y])[0] for y in ys]",  # the sources read the element
    "[helper(tf.gradients(y, x)[0]) for y in ys]",  # project code between the gradients
    "[tf.gradients(y * 2.0, x)[0] for y in ys]",  # the target is an expression of the element
    "[[tf.gradients(y, x)[0] for y in ys] for _ in range(2)]",
    "{k: tf.gradients(y, x)[0] for k, y in enumerate(ys)}",
])
def test_other_comprehensions_stay_manual(comp):
    src = _SRC.format(comp=comp)
    out, sites = migrate_text(src, "m.py")
    assert out == src
    assert [s.status for s in sites] == [MANUAL] * len(sites) and sites
    assert {s.code for s in sites} == {"TFG128"}, [(s.code, s.reason) for s in sites]


def test_a_list_the_targets_are_taken_from_is_checked_like_a_loop():
    # `ys` rebound after the tape from a value made after it: the tape never saw the new element
    src = textwrap.dedent("""\
        import tensorflow as tf


        def f():
            x = tf.constant([0.1, 0.7, -0.5])
            ys = [tf.sin(x)]
            d = tf.cos(x)
            g = [tf.gradients(y, x)[0] for y in ys]
            ys = ys + [d]
            return g, [tf.gradients(y, x)[0] for y in ys]
        """)
    out, sites = migrate_text(src, "m.py")
    # the second list is `ys + [d]`, not a display of tensors made at once: not proven (TFG125)
    assert [s.status for s in sites] == [MIGRATED, MANUAL], [(s.code, s.reason) for s in sites]
    assert out.count("tape.gradient(y, x)") == 1 and sites[1].code == "TFG125"


@pytest.mark.parametrize("stmt, migrates", [
    ("return [tf.gradients(y_i, x)[0] for y_i in tf.unstack(h)]", True),
    ("return tf.stack([tf.gradients(c, x)[0] for c in tf.split(h, 3)])", True),
    ("return helper([tf.gradients(c, x)[0] for c in tf.unstack(h)])", False),  # project code in the line
    ("return [tf.gradients(c, x)[0] for c in tf.unstack(helper(h))]", False),
])
def test_a_tf_call_as_the_iterable_is_made_in_the_tape(stmt, migrates):
    src = textwrap.dedent(f"""\
        import tensorflow as tf


        def helper(t):
            return t


        def f():
            x = tf.constant([0.1, 0.7, -0.5])
            h = tf.sin(x) * x
            {stmt}
        """)
    out, sites = migrate_text(src, "m.py")
    assert (sites[0].status == MIGRATED) == migrates, (sites[0].code, sites[0].reason)
    if migrates:
        assert "with tf.GradientTape(persistent=True) as tape:" in out and " = tf." in out.split("with")[1]
