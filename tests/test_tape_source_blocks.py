"""Sources remade by an `if`, a loop or a `with` before the forward pass, and closures that
only look like they share a name (held-out corpus: EBM's PGD attack, `if i == 0: X = X + noise`).

A statement at the head of the slice that only makes sources from new ops runs before the tape,
which watches what it leaves. Each refusal below is a variant where that is wrong: an alias of
an older value, another value made from the new source, a list filled with it, an older use.
fixtures/grad_source_made_by_if_or_loop checks the migrations by numbers.
"""
from __future__ import annotations

import textwrap

import pytest

from migrator.model import MIGRATED
from one_site import manual, migrated, site_of

HEAD = "import tensorflow as tf\n\n\n"


def run(body: str) -> str:
    """A function `run(x)` with ``body``, and a caller that passes a tensor."""
    return HEAD + "def run(x, flag=False):\n" + textwrap.indent(textwrap.dedent(body), "    ") + \
        "\n\nout = run(tf.constant([0.5, 1.5]))\n"


@pytest.mark.parametrize("head", [
    "X = x * 1.0\nif flag:\n    X = X + 0.1\n",
    "X = x * 1.0\nfor _ in range(3):\n    X = X - 0.1 * tf.sin(X)\n",
    "X = x * 1.0\nn = 0\nwhile n < 2:\n    X = tf.tanh(X) + X\n    n += 1\n",
])
def test_a_statement_that_only_remakes_the_source_runs_before_the_tape(head):
    out = migrated(run(head + "loss = tf.reduce_sum(X ** 3)\nreturn tf.gradients(loss, X)[0]\n"))
    opened = out.index("with tf.GradientTape() as tape:")
    assert opened > out.index("X = x * 1.0") and out.index("tape.watch(X)") > opened
    remaking = next(out.index(w) for w in ("if flag:", "for _ in", "while n") if w in out)
    assert remaking < opened, out  # the remaking statement stays outside the tape
    assert "return tape.gradient(loss, X)" in out and "flatten" not in out  # X is one tensor


@pytest.mark.parametrize("head, code, words", [
    # X may be the tensor `y` that `h` was made from: TF1 differentiated through `h` too
    ("h = x * 2.0\nX = x * 1.0\nif flag:\n    X = x\n", "TFG133", "`X` is bound inside the `if` statement"),
    # `Z` is made from the new X inside the statement: the tape would not see that path
    ("X = x * 1.0\nif flag:\n    X = X + 0.5\n    Z = X * 3.0\n", "TFG133", "`X` is bound inside the `if`"),
    # a list filled with a value made from the new X
    ("cache = []\nX = x * 1.0\nif flag:\n    X = X + 1.0\n    cache.append(X * 2.0)\n", "TFG133",
     "`X` is bound inside the `if`"),
    # `h` used the source before the `if`, which may leave it as it was
    ("X = x * 1.0\nh = X * 3.0\nif flag:\n    X = X + 0.1\n", "TFG133", "`X` is bound inside the `if`"),
])
def test_a_statement_that_does_more_than_remake_the_source_stays_in_the_way(head, code, words):
    tail = "loss = tf.reduce_sum(X * {})\nreturn tf.gradients(loss, X)[0]\n"
    used = "Z" if "Z =" in head else "cache[0]" if "cache" in head else "h" if "h =" in head else "X"
    manual(run(head + tail.format(used)), code, words)


def test_an_unpacking_or_augmented_binding_in_the_statement_is_not_taken_for_a_new_tensor():
    # `X, _ = x, 0` makes X the argument itself; `X += v` extends a list in place
    for remake in ("X, _ = x, 0", "X += 1.0", "for X in [x]:\n        pass"):
        manual(run(f"X = x * 1.0\nif flag:\n    {remake}\nloss = tf.reduce_sum(X ** 3)\n"
                   "return tf.gradients(loss, X)[0]\n"), "TFG133", "`X` is bound inside the `if`")


def test_a_nested_function_whose_parameter_has_the_sources_name_does_not_change_it():
    # `def logits(X): X = tf.reshape(X, ...)` rebinds its own X: calling it leaves the outer X alone
    body = """\
    def logits(X):
        X = tf.reshape(X, (-1, 1))
        return X * 2.0

    X = x * 1.0
    if flag:
        X = X + 0.1
    loss = tf.reduce_sum(logits(X))
    return tf.gradients(loss, X)[0]
    """
    _, site, _ = site_of(run(body))  # what the nested function returns is the one assumption left
    assert site.code == "TFG129" and "`logits(...)` at line 12 builds its result afresh" in site.reason, site.reason
    closure = body.replace("def logits(X):\n        X = tf.reshape(X, (-1, 1))\n        return X * 2.0",
                           "def logits(Y):\n        X.append(Y)\n        return Y * 2.0")
    assert closure != body
    manual(run(closure), "TFG133", "`X` may be changed in place")


# -- an adversarial run on the rule: 8 wrong migrations before these checks ----------------------
@pytest.mark.parametrize("head, sources", [
    # the line before the `if` reads another source: TF1 differentiated x -> X too
    ("X = x * 1.0\nif flag:\n    X = X + 0.1\n", "[X, x]"),
    # one statement remakes two sources, the second from the first
    ("X = x * 1.0\nif flag:\n    X = X + 0.1\n    Y = X * 2.0\n", "[X, Y]"),
    # a simple line makes one source from another before the loop remakes it
    ("X = x * 1.0\nY = X * 2.0\nfor _ in range(2):\n    Y = Y + 0.1\n", "[X, Y]"),
])
def test_statements_that_read_or_make_another_source_stay_inside_the_tape(head, sources):
    src = run(head + f"loss = tf.reduce_sum(X * {sources[-2]} + X)\ngs = tf.gradients(loss, {sources})\n"
                     "return gs[0] + gs[1]\n")
    out, site, src = site_of(src)
    if site.status == MIGRATED:  # then the tape must hold every line from the first source on
        assert out.index("with tf.GradientTape()") < out.index("X = x * 1.0"), out


@pytest.mark.parametrize("head", [
    # a line between the statement and the targets keeps a value made from the source
    "X = x * 1.0\nif flag:\n    X = X + 0.1\nglobals()['H'] = X * 3.0\n",
    # the statement itself does
    "X = x * 1.0\nif flag:\n    X = X + 0.1\n    globals()['H'] = X * 3.0\n",
    # through the project's code
    "X = x * 1.0\nif flag:\n    X = X + 0.1\n    record(X)\n",
])
def test_a_value_kept_where_the_slice_cannot_see_it_keeps_the_statement_in_the_tape(head):
    src = run(head + "loss = tf.reduce_sum(H * X)\nreturn tf.gradients(loss, X)[0]\n").replace(
        "def run(", "H = None\n\n\ndef record(t):\n    global H\n    H = t * 3.0\n\n\ndef run(")
    out, site, src = site_of(src)
    if site.status == MIGRATED:
        assert out.index("with tf.GradientTape()") < out.index("if flag:"), out


@pytest.mark.parametrize("head", ["X = 2.0\nif flag:\n    X = X * 1.5\n", "X = 2.0\nX = X * 1.5\n",
                                  "X = np.ones((2,), np.float32)\nX = X + 0.5\n"])
def test_a_source_that_holds_a_python_or_numpy_value_through_local_lines_is_not_watched(head):
    # `tape.watch(3.0)` raised where TF1 gave None
    src = run(head + "loss = tf.reduce_sum(x * X * x)\ng = tf.gradients(loss, [X, x])\nreturn g[1]\n")
    manual("import numpy as np\n" + src, "TFG126", "Python or numpy value")
