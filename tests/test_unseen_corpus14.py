"""Shapes from an unseen corpus (stop 29) whose migrations ran wrong (edward's tests): each
checked by running the original under TF1 and the migration under TF1 and TF2."""
from __future__ import annotations

from project_files import write

from migrator import runner
from migrator.model import MANUAL
from migrator.pipeline import migrate_text


def test_a_source_that_is_an_instance_of_a_class_is_an_assumption():
    # `x = Bernoulli(0.5)`: TF1 converted the random variable to a tensor; `tape.watch(x)` raised
    src = ("import tensorflow as tf\nfrom edward.models import Bernoulli\n\n\ndef f():\n    x = Bernoulli(0.5)\n"
           "    y = 2 * x\n    return tf.gradients(y, x)[0]\n")
    out, (site,) = migrate_text(src, "m.py")
    assert out == src and site.status == MANUAL and site.code == "TFG129", (site.code, site.reason)
    assert "`x` (bound to `Bernoulli(...)` at line 6) is a tf.Tensor or tf.Variable" in site.reason


def test_a_test_case_session_runs_v1_control_flow_under_tf1():
    # edward's copy_test: `tf.scan` in a test session; a tape cannot differentiate it in TF1's graph
    src = ("import tensorflow as tf\n\n\nclass T(tf.test.TestCase):\n    def test_scan(self):\n"
           "        with self.test_session() as sess:\n            a = tf.Variable([1.0, 2.0, 3.0])\n"
           "            op = tf.scan(lambda a, x: a + x, a)\n            g = tf.gradients(op, [a])[0]\n"
           "            sess.run(g)\n")
    out, (site,) = migrate_text(src, "m.py")
    assert out == src and site.code == "TFG132" and "`tf.scan`" in site.reason, (site.code, site.reason)


def test_a_project_function_that_makes_ops_from_their_definitions_keeps_the_call(tmp_path):
    # edward's `copy`: `deepcopy(op.node_def)`, then `graph.create_op`: a tape never records those ops
    (tmp_path / "pyproject.toml").write_text("")
    write(tmp_path, "util.py", "import copy as _c\n\n\ndef duplicate(t):\n    node_def = _c.deepcopy(t.op.node_def)\n"
                                "    return t.graph.create_op(node_def.op, [t], [t.dtype]).outputs[0]\n")
    path = write(tmp_path, "m.py", "import tensorflow as tf\n\nfrom util import duplicate\n\n\ndef f():\n"
                                   "    a = tf.constant([1.0, 2.0])\n    y = duplicate(a * 2.0)\n"
                                   "    return tf.gradients(y, a)[0]\n")
    (result,) = runner.run([path], runner.RunOptions(jobs=1, mode=runner.CHECK)).results
    (site,) = result.sites
    assert site.status == MANUAL and "`duplicate(...)` at line 8 may make ops from their definitions" in site.reason, \
        (site.code, site.reason)


def test_a_test_case_calling_project_code_is_judged_by_what_its_region_spells(tmp_path):
    # zhusuan's distribution tests: `Normal(...)` in the tape, while the package also has an HMC
    # module with tf.while_loop; the 36 migrations were run (TF1 test, TF1, eager, tf.function)
    (tmp_path / "pyproject.toml").write_text("")
    write(tmp_path, "pkg/__init__.py", "from pkg.dist import Normal\nfrom pkg import hmc\n")
    write(tmp_path, "pkg/dist.py", "import tensorflow as tf\n\n\nclass Normal(object):\n    def __init__(self, m):\n"
                                   "        self.m = m\n\n    def sample(self):\n        return self.m * 2.0\n")
    write(tmp_path, "pkg/hmc.py", "import tensorflow as tf\n\n\ndef run(x):\n"
                                  "    return tf.while_loop(lambda i: i < 3, lambda i: i + 1, [x])\n")
    path = write(tmp_path, "test_m.py", "import tensorflow as tf\n\nfrom pkg import Normal\n\n\n"
                                        "class T(tf.test.TestCase):\n    def test_grad(self):\n"
                                        "        mean = tf.ones([2])\n        s = Normal(mean).sample()\n"
                                        "        g = tf.gradients(s, mean)[0]\n"
                                        "        with self.session() as sess:\n            sess.run(g)\n")
    (result,) = [r for r in runner.run([path], runner.RunOptions(jobs=1, mode=runner.CHECK)).results
                 if r.path.endswith("test_m.py")]
    assert [s.status for s in result.sites] == ["migrated"], [(s.code, s.reason) for s in result.sites]
