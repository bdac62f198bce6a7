"""One gradient per index of range(n) (migrator/_plugins/_grad_per_index.py).

The migrations are checked by numbers in fixtures/grad_per_index_targets.  Here: each
shape an adversary would try where taking every slice first is not what the loop did,
or cannot be shown to be, leaves the file byte-identical."""
from __future__ import annotations

import textwrap

import pytest

from migrator.model import MANUAL, MIGRATED
from migrator.pipeline import migrate_text

HEAD = "import tensorflow as tf\n\n\ndef helper(t):\n    return t * 2\n\n\n"


def _run(body: str):
    src = HEAD + textwrap.dedent(body)
    return src, migrate_text(src, "m.py")


@pytest.mark.parametrize("body", [
    # the loop form
    """\
    def f(x):
        y = tf.matmul(x * x, tf.ones([2, 3]))
        gs = []
        for i in range(3):
            gs.append(tf.gradients(y[:, i], x)[0])
        return gs
    """,
    # the comprehension form, a pure reduction of the slice
    """\
    def f(x):
        y = tf.matmul(x * x, tf.ones([2, 3]))
        n = y.get_shape().as_list()[1]
        return [tf.gradients(tf.reduce_sum(y[:, i]), x)[0] for i in range(n)]
    """,
])
def test_per_index_targets_migrate(body):
    src, (out, sites) = _run(body)
    assert [s.status for s in sites] == [MIGRATED], [(s.code, s.reason) for s in sites]
    assert "tf.gradients" not in out and "GradientTape(persistent=True)" in out and "_by_i[i]" in out, out


@pytest.mark.parametrize("body", [
    # index and position differ: y_by_i[i] would read the wrong slice
    "def f(x):\n    y = x * 3.0\n    return [tf.gradients(y[:, i], x)[0] for i in range(1, 3)]\n",
    "def f(x):\n    y = x * 3.0\n    return [tf.gradients(y[:, i], x)[0] for i in range(0, 4, 2)]\n",
    # not every iteration reaches the call
    """\
    def f(x):
        y = x * 3.0
        gs = []
        for i in range(3):
            if i == 2:
                break
            gs.append(tf.gradients(y[:, i], x)[0])
        return gs
    """,
    """\
    def f(x):
        y = x * 3.0
        gs = []
        for i in range(3):
            if i > 0:
                gs.append(tf.gradients(y[:, i], x)[0])
        return gs
    """,
    "def f(x):\n    y = x * 3.0\n    return [tf.gradients(y[:, i], x)[0] for i in range(3) if i != 1]\n",
    # the body rebinds the index, or what the slice reads
    """\
    def f(x):
        y = x * 3.0
        gs = []
        for i in range(3):
            gs.append(tf.gradients(y[:, i], x)[0])
            i = 0
        return gs
    """,
    """\
    def f(x):
        y = x * 3.0
        gs = []
        for i in range(3):
            gs.append(tf.gradients(y[:, i], x)[0])
            y = y * 2.0
        return gs
    """,
    # the sources or grad_ys depend on the index
    "def f(x):\n    y = x * 3.0\n    return [tf.gradients(y[:, i], x[i])[0] for i in range(2)]\n",
    """\
    def f(x):
        y = x * 3.0
        gs = []
        for i in range(3):
            gs.append(tf.gradients(y[:, i], x, grad_ys=tf.ones([2]) * i)[0])
        return gs
    """,
    # the slice runs code of its own: a project function, a random op
    "def f(x):\n    y = x * 3.0\n    return [tf.gradients(helper(y)[:, i], x)[0] for i in range(3)]\n",
    "def f(x):\n    y = x * 3.0\n    return [tf.gradients(tf.random.normal([2]) * y[:, i], x)[0] for i in range(3)]\n",
    # lazy, nested, or in a class body (a comprehension there cannot see the class's names)
    "def f(x):\n    y = x * 3.0\n    return list(tf.gradients(y[:, i], x)[0] for i in range(3))\n",
    "def f(x):\n    y = x * 3.0\n    return [tf.gradients(y[j, i], x)[0] for i in range(3) for j in range(2)]\n",
    "class K:\n    x = tf.constant([[1.0, 2.0]])\n    y = x * 3.0\n    gs = [tf.gradients(y[:, i], x)[0] for i in range(2)]\n",
    # a third run: `range` that is not the builtin, a body that may change what the slice reads
    # (a helper, an alias, operator.setitem), and a try that catches a slice that raises
    "def f(x, range=range):\n    y = x * 3.0\n    return [tf.gradients(y[:, i], x)[0] for i in range(2)]\n",
    """\
    def f(x):
        y = x * 3.0
        gs = []
        for i in range(2):
            gs.append(tf.gradients(y[:, i], x)[0])
            helper(y)
        return gs
    """,
    """\
    def f(x):
        y = x * 3.0
        return [tf.reduce_sum(helper(tf.gradients(y[:, i], x)[0])) for i in range(2)]
    """,
    """\
    def f(x):
        y = x * 3.0
        gs = []
        try:
            for i in range(4):
                gs.append(tf.gradients(y[:, i], x)[0])
        except ValueError:
            pass
        return gs
    """,
])
def test_per_index_shapes_that_are_not_proved_stay_byte_identical(body):
    src, (out, sites) = _run(body)
    assert out == src
    assert sites and all(s.status == MANUAL for s in sites), [(s.status, s.code) for s in sites]


def test_a_module_that_defines_its_own_range_keeps_the_call():
    src, (out, sites) = _run("""\
        def range(n):
            return [n - 1 - k for k in builtins_range(n)]


        builtins_range = __builtins__["range"] if isinstance(__builtins__, dict) else __builtins__.range


        def f(x):
            y = x * 3.0
            return [tf.gradients(y[:, i], x)[0] for i in range(2)]
        """)
    assert out == src and all(s.status == MANUAL for s in sites)
