"""The binding in force and the not-complex fact where an override block runs (_override_flow).

Each refusal here is a spelling an adversary would try: the fact must come
from a statement that always runs before the block, on the same binding.
"""
from __future__ import annotations

import textwrap

import pytest

from migrator.model import MANUAL, MIGRATED
from migrator.pipeline import Options, migrate_text

HEAD = "import tensorflow as tf\n\n\n"
BLOCK = """
    with tf.get_default_graph().gradient_override_map({"Sign": "Identity"}):
        return tf.sign(x)
"""


def sites(body: str, unsafe: bool = False):
    src = HEAD + "def f(x, t):\n" + textwrap.indent(textwrap.dedent(body), "    ") + BLOCK.lstrip("\n")
    out, found = migrate_text(src, path="m.py", options=Options(unsafe_fixes=unsafe))
    return src, out, [s for s in found if s.kind == "override_map"]


@pytest.mark.parametrize("body", [
    "x = tf.clip_by_value(x, -1.0, 1.0)\n",
    "mask = tf.cast(x > t, tf.float32)\n",
    "mask = tf.cast(t <= x, tf.float32)\n",
    "m = (x > t) | (x < -t)\n",
    "m = tf.greater(x, t)\n",
    "m = tf.maximum(x, 0.0)\n",
    "y = tf.nn.relu(x)\n",
    "m = 1.0 if tf.reduce_all(x > t) is None else 0.0\n",  # the test of a conditional expression runs
])
def test_a_statement_before_the_block_proves_x_real(body):
    src, out, found = sites(body)
    assert [s.status for s in found] == [MIGRATED], [(s.code, s.reason) for s in found]
    assert "@tf.custom_gradient" in out and "gradient_override_map" not in out
    assert any("floating" in p or "float" in p for p in found[0].proof), found[0].proof


@pytest.mark.parametrize("body", [
    "",  # nothing shown
    "y = tf.tanh(x)\n",  # tanh accepts complex inputs
    "if t is not None:\n    m = x > t\n",  # may not run
    "m = lambda: x > t\n",  # never runs here
    "m = [v > t for v in [x]]\n",  # a comprehension: not followed
    "m = t < t < x\n",  # the second link runs only if the first is true
    "m = t is None or x > t\n",  # short-circuit: may not run
    "m = x > t if t is None else None\n",  # a branch of a conditional expression
    "m = tf.cast(x > t, tf.float32)\nx = tf.complex(x, x)\n",  # x rebound after the proof
    "m = tf.cast(x > t, tf.float32)\nfor _ in range(2):\n    x = x * 1.0\n",  # a binding in a loop
    "m = tf.cast(x > t, tf.float32)\nx += 0.0\n",  # augmented: not a plain binding
    "def g():\n    nonlocal x\n    x = tf.complex(x, x)\nm = tf.cast(x > t, tf.float32)\ng()\n",  # a closure rebinds
    "assert tf.reduce_all(x > t) is not None\n",  # asserts are stripped under -O
    "m = tf.abs(x)\n",  # abs accepts complex
    # found by the ninth adversarial run
    "m: x > t\n",  # a bare annotation is never evaluated in a function
    "x = tf.clip_by_value(x, -1.0, 1.0)\nfrom cmath import x\n",  # an import rebinds it
    "x = tf.clip_by_value(x, -1.0, 1.0)\nmatch t:\n    case float() as x:\n        pass\n",  # a match pattern
])
def test_no_proof_leaves_the_block_manual(body):
    src, out, found = sites(body)
    assert out == src
    assert [s.status for s in found] == [MANUAL] and found[0].code == "TFG111", [(s.code, s.reason) for s in found]


def test_proof_does_not_reach_a_block_before_the_statement():
    src = HEAD + textwrap.dedent("""\
        def f(x, t):
            with tf.get_default_graph().gradient_override_map({"Sign": "Identity"}):
                y = tf.sign(x)
            m = tf.cast(x > t, tf.float32)
            return y * m
        """)
    out, found = migrate_text(src, path="m.py", options=Options())
    assert out == src and [s.code for s in found if s.kind == "override_map"] == ["TFG111"]


def test_the_binding_in_force_is_the_last_one_before_the_block():
    # x is complex where the block runs: tf.sign makes ComplexAbs + Cast + DivNoNan, no Sign op to wrap
    src, out, found = sites("m = tf.cast(x > t, tf.float32)\nx = tf.complex(x, x)\n")
    assert out == src
    src, out, found = sites("x = tf.complex(x, x)\nx = tf.math.real(x)\nx = tf.clip_by_value(x, -1.0, 1.0)\n")
    assert [s.status for s in found] == [MIGRATED]


def test_a_set_that_holds_complex_is_an_assumption_under_unsafe_fixes():
    src, out, found = sites("x = tf.tanh(x)\n", unsafe=True)
    assert [s.status for s in found] == [MIGRATED]
    assert any("not complex64" in a for a in found[0].assumptions), found[0].assumptions
    src, out, found = sites("x = tf.tanh(x)\n")
    assert "with --unsafe-fixes it is migrated assuming `x` is not complex64" in found[0].reason


@pytest.mark.parametrize("inner, status", [
    ("x = tf.clip_by_value(x, -1.0, 1.0)\nreturn tf.sign(x)\n", MIGRATED),  # the BinaryNet spelling
    ("m = x > t\nreturn tf.sign(x)\n", MIGRATED),
    ("y = tf.sign(x)\nx = tf.clip_by_value(x, -1.0, 1.0)\nreturn y\n", MANUAL),  # the proof comes after the op
    ("for _ in range(2):\n    x = tf.clip_by_value(x, -1.0, 1.0)\nreturn tf.sign(x)\n", MANUAL),  # a loop binds it
    ("if t is None:\n    x = tf.clip_by_value(x, -1.0, 1.0)\nreturn tf.sign(x)\n", MANUAL),  # a branch off the path
])
def test_statements_inside_the_block_before_the_op(inner, status):
    src = HEAD + "def f(x, t):\n" + textwrap.indent(
        'with tf.get_default_graph().gradient_override_map({"Sign": "Identity"}):\n' + textwrap.indent(inner, "    "),
        "    ")
    out, found = migrate_text(src, path="m.py", options=Options())
    assert [s.status for s in found if s.kind == "override_map"] == [status], [(s.code, s.reason) for s in found]
    if status == MANUAL:
        assert out == src


def test_a_use_inside_if_and_with_bodies_sees_the_statements_before_it():
    src = HEAD + textwrap.dedent("""\
        def f(x, t, training):
            m = tf.cast(x > t, tf.float32)
            if training:
                with tf.name_scope("q"):
                    with tf.get_default_graph().gradient_override_map({"Sign": "Identity"}):
                        return tf.sign(x) * m
            return x
        """)
    out, found = migrate_text(src, path="m.py", options=Options())
    assert [s.status for s in found if s.kind == "override_map"] == [MIGRATED]
