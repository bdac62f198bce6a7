"""Wrong migrations an adversarial round found in this stop's rules (each was `migrated` and gave
other numbers in TF2 than in TF1, or crashed); every shape here must stay manual."""
from __future__ import annotations

import json
import textwrap

import pytest

from migrator import runner
from migrator.model import MANUAL, MIGRATED
from migrator.pipeline import Options, migrate_text
from project_files import write

_HEAD = """\
import numpy as np
import tensorflow as tf

KEEP = []
REG = []


def stash(v):
    KEEP.append(v * 5.0)


"""


@pytest.mark.parametrize("body", [
    # the graph's own collection list, filled by add_to_collection (TFG135: empty under TF2)
    "def f():\n    x = tf.constant([0.5, 1.0])\n    ys = tf.compat.v1.get_collection_ref('mine')\n"
    "    ys.append(x * 2.0)\n    d = tf.sin(x)\n    tf.compat.v1.add_to_collection('mine', d * 5.0)\n"
    "    return tf.gradients(ys, x)[0]\n",
    # the statement changes the list before the comprehension reads it
    "def f():\n    x = tf.constant([0.5, 1.0])\n    ys = [tf.sin(x)]\n"
    "    return (ys.append(tf.cos(x)), [tf.gradients(y, x)[0] for y in ys])[1]\n",
    "def f():\n    x = tf.constant([0.5, 1.0])\n    ys = [tf.sin(x)]\n"
    "    return tf.nest.map_structure(ys.append, tf.cos(x)) or [tf.gradients(y, x)[0] for y in ys]\n",
    # items made when the loop reads them, or not tensors
    "def f():\n    x = tf.constant([0.5, 1.0])\n    ys = (tf.sin(x) * k for k in (1.0, 2.0))\n"
    "    return [tf.gradients(y, x)[0] for y in ys]\n",
    "def f():\n    x = tf.constant([0.5, 1.0])\n    ys = [tf.sin(x), 2.0]\n    return [tf.gradients(y, x)[0] for y in ys]\n",
    "def f():\n    x = tf.constant([0.5, 1.0])\n    l1 = tf.sin(x)\n    l2 = 2.0\n    g = []\n"
    "    for loss in [l1, l2]:\n        g.append(tf.gradients(loss, x)[0])\n    return g\n",
    # a custom_gradient function rebound after its def
    "def _cached(fn):\n    return lambda t: t * 0.0\n\n\n@tf.custom_gradient\ndef op(t):\n    return t * 3.0, lambda dy: dy * 3.0\n\n\n"
    "op = _cached(op)\n\n\ndef f(x):\n    x = tf.convert_to_tensor(x)\n    y = op(x)\n    return tf.gradients(y, x)[0]\n",
    # a batch_jacobian whose source line hides a cutting op
    "from tensorflow.python.ops.parallel_for.gradients import batch_jacobian\n\n\n"
    "def f():\n    parts = []\n    x = tf.constant([[0.5, 1.0], [2.0, -1.0]])\n"
    "    x = tf.reshape(x, [2, parts.append(tf.round(x)) or 2])\n    y = parts[0] * 2.0\n"
    "    return batch_jacobian(y, x)\n",
    # `.value` of a static dimension is TF1's alone
    "def f():\n    x = tf.constant([[0.5, 1.0, -2.0]])\n    y = tf.sin(x) * 2.0\n"
    "    return [tf.gradients(y[:, i], x)[0] for i in range(y.get_shape()[1].value)]\n",
])
def test_stays_manual(body):
    src = _HEAD + body
    out, sites = migrate_text(src, "m.py")
    grads = [s for s in sites if s.kind != "override_map"]
    assert grads and all(s.status == MANUAL for s in grads), [(s.code, s.reason) for s in grads]


@pytest.mark.parametrize("body", [
    # a helper's local list that escapes before it is returned
    "def helper():\n    r = []\n    REG.append(r)\n    return r\n\n\ndef push(v):\n    REG[0].append(v * 5.0)\n\n\n"
    "def f():\n    x = tf.constant([0.5, 1.0])\n    ys = helper()\n    ys.append(x * 2.0)\n"
    "    d = tf.sin(x)\n    push(d)\n    return tf.gradients(ys, x)[0]\n",
    "def coll():\n    return tf.compat.v1.get_collection_ref('mine')\n\n\n"
    "def f():\n    x = tf.constant([0.5, 1.0])\n    ys = coll()\n"
    "    ys.append(x * 2.0)\n    d = tf.sin(x)\n    tf.compat.v1.add_to_collection('mine', d * 5.0)\n"
    "    return tf.gradients(ys, x)[0]\n",
    # a local named like numpy
    "class Box:\n    def get(self):\n        return KEEP\n\n\ndef helper():\n    np = Box()\n    return np.get()\n\n\n"
    "def f():\n    x = tf.constant([0.5, 1.0])\n    ys = helper()\n    ys.append(x * 2.0)\n    d = tf.sin(x)\n"
    "    stash(d)\n    return tf.gradients(ys, x)[0]\n",
])
def test_a_list_filled_by_code_the_migrator_does_not_follow_is_filled_inside_the_tape(body):
    # the adversarial round's helpers fill the list after the gradient's own tape would close; the
    # tape now holds them and records what they add (TF1, eager and tf.function agree)
    out, sites = migrate_text(_HEAD + body, "m.py")
    assert [s.status for s in sites] == [MIGRATED], [(s.code, s.reason) for s in sites]
    assert "    return tape.gradient(ys, x)\n" in out and out.index("with tf.GradientTape") < out.index("d = tf.sin"), out


def test_a_magic_that_runs_code_in_the_notebook_may_rebind_tf(tmp_path):
    # `%run fakes.py` bound `tf` to a fake whose gradients doubled (TF1 [2, 4, -8], the tape [1, 2, -4])
    write(tmp_path, "fakes.py", "import tensorflow as _t\n\ntf = _t\n")
    cells = ["import tensorflow as tf", "%run fakes.py",
             "def f():\n    x = tf.constant([0.5, 1.0, -2.0])\n    y = x * x\n    return tf.gradients(y, x)[0]"]
    book = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                       "source": c.splitlines(keepends=True)} for c in cells],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    (tmp_path / "pyproject.toml").write_text("")
    path = write(tmp_path, "nb.ipynb", json.dumps(book))
    opts = runner.RunOptions(jobs=1, mode=runner.CHECK, options=Options())
    (result,) = [r for r in runner.run([path], opts).results if r.path.endswith("nb.ipynb")]
    assert [s.status for s in result.sites] == [MANUAL], [(s.code, s.reason) for s in result.sites]
    assert textwrap.dedent(cells[1]) in open(path).read()


@pytest.mark.parametrize("bind", [
    "    ys = []; ys = KEEP\n",  # the last binding on the line
    "    match KEEP:\n        case ys:\n            pass\n",
    "    ys = KEEP + []\n",  # a project list class's `__add__` hands back itself
])
def test_more_ways_to_hold_a_list_other_code_fills(bind):
    # the filler runs in the tape, which records what it adds (a tape that closed before it gave
    # None where TF1 differentiated it); a `match` target is not followed at all
    src = ("import tensorflow as tf\n\n\nclass Acc(list):\n    def __add__(self, other):\n        return self\n\n\n"
           "KEEP = Acc()\n\n\ndef stash(v):\n    KEEP.append(v * 5.0)\n\n\n"
           "def f():\n    x = tf.constant([0.5, 1.0, -2.0])\n" + bind +
           "    ys.append(x * 2.0)\n    d = tf.sin(x)\n    stash(d)\n    return tf.gradients(ys, x)[0]\n")
    out, sites = migrate_text(src, "m.py")
    if "match" in bind:
        assert out == src and [s.status for s in sites] == [MANUAL], [(s.code, s.reason) for s in sites]
    else:
        assert [s.status for s in sites] == [MIGRATED] and "        stash(d)\n    return tape.gradient(ys, x)" in out, out


@pytest.mark.parametrize("line, binds", [
    ("%run fakes.py", True), ("%load_ext myext", True), ("%aimport m", True),
    ("%load_ext tensorboard", False), ("%load_ext autoreload", False), ("%autoreload 2", False),
    ("%matplotlib inline", False),
])
def test_which_magics_may_bind_names(line, binds):
    from migrator.notebook import _BINDING_MAGIC
    assert bool(_BINDING_MAGIC.match(line)) == binds


def test_a_defun_graph_function_in_the_tape_keeps_the_call():
    # yaroslavvb's memory notebook (unseen corpus): `@function.Defun def tanh3(a)`, then the chain
    # `b = tanh3(b)` under tf.gradients; a tape cannot differentiate a Defun call
    src = ("import tensorflow as tf\nfrom tensorflow.python.framework import function\n\n\n"
           "@function.Defun(tf.float32, func_name='tanh3')\ndef tanh3(a):\n    return tf.tanh(tf.tanh(a))\n\n\n"
           "def f():\n    b0 = tf.placeholder(tf.float32, shape=(4,))\n    b = tanh3(b0)\n"
           "    return tf.gradients([b], [b0])[0]\n")
    out, sites = migrate_text(src, "m.py")
    assert out == src and [s.code for s in sites] == ["TFG121"], [(s.code, s.reason) for s in sites]
