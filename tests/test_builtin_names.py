"""A name spelled like a builtin is the builtin only where nothing else may bind it, and
grad_ys items are one value each (adversarial round on the older rules, stop 27).

Each case here migrated and computed something else: the override of a project's `round`
was removed as dead; a grad_ys item that was a Python list became its first number; a target
hoisted ahead of a project `sum`, a `key=` callback or a generator's body ran too early."""
from __future__ import annotations

import os
import textwrap

import pytest

from migrator import runner
from migrator.model import MANUAL, MIGRATED
from migrator.pipeline import migrate_text
from project_files import write


def sites_of(src: str):
    out, sites = migrate_text(textwrap.dedent(src))
    return out, sites


OVERRIDE = """\
import tensorflow as tf
{helper}

def ste(x):
    g = tf.get_default_graph()
    with g.gradient_override_map({{"Round": "Identity"}}):
        y = round(x)
    return y * 3.0
"""


@pytest.mark.parametrize("helper, status", [
    ("\n\ndef round(x):\n    return tf.round(x)\n", MANUAL),
    ("\n\nclass round:\n    def __new__(cls, t):\n        return tf.round(t)\n", MANUAL),
    ("\nround = tf.round\n", MIGRATED),  # TF's own function: its Round op is wrapped
    ("\nfrom tensorflow import round\n", MIGRATED),
])
def test_a_module_s_own_round_is_not_the_builtin(helper, status):
    src = OVERRIDE.format(helper=helper)
    out, sites = sites_of(src)
    assert sites and all(s.status == status and s.code != "TFG007" for s in sites), sites  # never a dead override
    assert (out == src) == (status == MANUAL)


def test_a_round_a_star_import_may_bind_is_not_the_builtin(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    write(tmp_path, "mathutils.py", "import tensorflow as tf\n\n\ndef round(t):\n    return tf.round(t)\n")
    main = write(tmp_path, "main.py", OVERRIDE.format(helper="from mathutils import *\n"))
    before = open(main).read()
    res = runner.run([main], runner.RunOptions(jobs=1))
    (result,) = [r for r in res.results if os.path.basename(r.path) == "main.py"]
    assert open(main).read() == before and all(s.status == MANUAL for s in result.sites), result.sites


def test_the_builtin_round_of_a_python_number_makes_no_op():
    src = OVERRIDE.format(helper="").replace("y = round(x)", "y = x * round(2.6)")
    out, sites = sites_of(src)
    assert [s.code for s in sites] == ["TFG007"], sites  # the override is dead: no Round op in the block


GRAD_YS = """\
    import tensorflow as tf

    CFG = {{"w": [1.0, 2.0, 3.0]}}


    def _weights():
        return [[1.0, 2.0, 3.0]]


    def make_gy():
        return tf.constant([1.0, 2.0, 3.0])


    def f(x, flag=True):
        v = x * 1.0
        y = tf.sin(v) * 2.0
        g = tf.gradients(y, v, grad_ys={gy})[0]
        return g
    """


@pytest.mark.parametrize("gy, status", [
    ("[[1.0] * 2 + [3.0]]", MANUAL),
    ("[[1.0, 2.0, 3.0] if flag else [3.0, 2.0, 1.0]]", MANUAL),
    ("_weights()", MANUAL),
    ("[CFG['w']]", MANUAL),
    ("[sorted([3.0, 1.0, 2.0])]", MANUAL),
    ("[tf.ones_like(y) * 2.0]", MIGRATED),  # one tensor per target
    ("make_gy()", MIGRATED),
    ("[make_gy() if flag else tf.ones_like(y)]", MIGRATED),
    ("tf.constant([1.0, 2.0, 3.0])", MIGRATED),
    ("[2.0]", MIGRATED),
])
def test_a_grad_ys_item_is_taken_only_when_it_is_one_value(gy, status):
    out, sites = sites_of(GRAD_YS.format(gy=gy))
    (s,) = sites
    assert s.status == status, s
    if status == MANUAL:
        assert s.code == "TFG128" and "may be a Python list" in s.reason, s


@pytest.mark.parametrize("value", ["tf.constant([1.0, 2.0])", "[[1.0, 2.0]]"])
def test_an_attribute_grad_ys_is_refused(value):
    # any code may set an attribute to a list (a tuple target, another module, setattr, a class
    # attribute: adversarial runs), so no assignment the file shows proves one value
    cls = """\
        import tensorflow as tf


        class M:
            def __init__(self):
                self.gy = {value}

            def grads(self, x):
                v = x * 1.0
                y = tf.sin(v)
                return tf.gradients(y, v, grad_ys=self.gy)[0]
        """
    _, (s,) = sites_of(cls.format(value=value))
    assert s.status == MANUAL and "`self.gy`, which may be a Python list" in s.reason, s


NAMED = """\
import copy
import json

import tensorflow as tf

W = [1.0, 2.0, 3.0]


def listify(f):
    return lambda: [f()]


@listify
def mk_dec():
    return 1.0


def mk_re():
    return 1.0


mk_re = lambda: [1.0, 2.0, 3.0]  # noqa: E731


def mk_local():
    v = [1.0, 2.0, 3.0]
    return v * 1


def f(x, flag=True, gy0=None):
    v = x * 1.0
    y = tf.sin(v) * 2.0
{bind}
    return tf.gradients(y, v, grad_ys=[gy])[0]
"""


@pytest.mark.parametrize("bind", [
    "    gy = [1.0, 2.0] + [3.0]",
    "    gy = copy.deepcopy(W)",
    "    gy = json.loads('[1.0, 2.0, 3.0]')",
    "    gy = sum([[1.0, 2.0], [3.0]], [])",
    "    gy = gy0 or [1.0, 2.0, 3.0]",
    "    for gy in [W]:\n        pass",
    "    gy = mk_dec()",
    "    gy = mk_re()",
    "    gy = mk_local()",
    "    gy = W",
])
def test_a_grad_ys_name_that_may_hold_a_python_list_is_refused(bind):
    _, sites = sites_of(NAMED.format(bind=bind))
    (s,) = sites
    assert s.status == MANUAL and s.code == "TFG128", s


@pytest.mark.parametrize("bind", ["    gy = tf.ones_like(y) * 2.0", "    gy = 2.0 if flag else tf.ones_like(y)",
                                  # the tensors of a TF call (GPflow: `dL_dm, dL_dv = tf.gradients(...)`)
                                  "    gy, gz = tf.unstack(tf.stack([tf.ones_like(y), tf.ones_like(y)]))"])
def test_a_grad_ys_name_bound_to_one_value_migrates(bind):
    _, (s,) = sites_of(NAMED.format(bind=bind))
    assert s.status == MIGRATED, s


ORDER = """\
    import tensorflow as tf

    CALLS = []


    def _bump(i):
        CALLS.append(i)
        return i


    def sum(t):
        CALLS.append(1)
        return tf.reduce_sum(t)


    def _scaled(t):
        return tf.reduce_sum(t) * float(len(CALLS))


    def f(x, xs):
        v = x * 1.0
        y = v * v
        gen = (_bump(i) for i in range(3))
        pair = [{first}, tf.gradients(_scaled(y), v)[0]]
        return pair[1]
    """


@pytest.mark.parametrize("first", ["sum(y)", "sorted([2, 1], key=_bump)", "list(gen)", "max(xs)"])
def test_a_target_is_not_hoisted_over_code_that_may_run(first):
    _, (s,) = sites_of(ORDER.format(first=first))
    assert s.status == MANUAL and s.code == "TFG128" and "runs before the call" in s.reason, s


@pytest.mark.parametrize("first", ["len(xs)", "float(2)", "list([1, 2])"])
def test_a_target_is_hoisted_over_builtins_that_run_nothing(first):
    _, (s,) = sites_of(ORDER.format(first=first))
    assert s.status == MIGRATED, s


def test_a_grad_ys_name_unpacked_from_a_nested_tf_result_is_refused():
    # `tf.while_loop` hands back its loop variables as written: `gy` here is a Python list
    bind = "    gy, n = tf.while_loop(lambda a, k: k < 1, lambda a, k: (a, k + 1), [[1.0, 2.0, 3.0], 0])"
    _, (s,) = sites_of(NAMED.format(bind=bind))
    assert s.status == MANUAL and s.code == "TFG128", s
