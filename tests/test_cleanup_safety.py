"""What the rewrite removes or adds must not break other code (found by adversarial runs).

An import the rewrite left unused in the file's own code may be re-exported,
listed in ``__all__`` or read from a string; a registration may be named by
another file in a way a byte search misses; a new ``import tensorflow`` must
come before its first use; a cell magic must stay the first line of its cell.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from migrator import runner
from migrator.model import MANUAL
from migrator.notebook import migrate_notebook
from migrator.pipeline import Options, RunIndex
from project_files import write

GUIDED = '''\
import tensorflow as tf
from tensorflow.python.framework import ops


@ops.RegisterGradient("GuidedRelu")
def _guided_relu(op, grad):
    return tf.where(grad > 0.0, grad, tf.zeros_like(grad))


def guided(x):
    with tf.get_default_graph().gradient_override_map({"Relu": "GuidedRelu"}):
        return tf.nn.relu(x)
'''


def run(paths):
    opts = runner.RunOptions(jobs=1, mode=runner.WRITE)
    return {os.path.basename(r.path): r for r in runner.run(paths, opts).results}


def test_an_import_another_file_reads_through_this_module_stays(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    m = write(tmp_path, "m.py", GUIDED)
    write(tmp_path, "user.py", "from m import ops\n")
    run([m])
    text = open(m).read()
    assert "@tf.custom_gradient" in text and "from tensorflow.python.framework import ops" in text


def test_an_import_listed_in_all_stays(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    m = write(tmp_path, "m.py", GUIDED + '\n\n__all__ = ["guided", "ops"]\n')
    run([m])
    assert "from tensorflow.python.framework import ops" in open(m).read()


def test_an_unused_import_still_goes(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    m = write(tmp_path, "m.py", GUIDED)
    run([m])
    assert "framework import ops" not in open(m).read()


def test_stacked_registrations_on_one_function_refuse(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    m = write(tmp_path, "m.py", GUIDED.replace('@ops.RegisterGradient("GuidedRelu")\n',
                                               '@ops.RegisterGradient("GuidedRelu")\n@ops.RegisterGradient("Other")\n'))
    before = open(m).read()
    res = run([m])["m.py"]
    assert open(m).read() == before
    assert {s.code for s in res.sites if s.status == MANUAL} == {"TFG109"}


def test_stdin_sees_the_project_of_the_working_directory(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    write(tmp_path, "user.py", 'import tensorflow as tf\nwith tf.get_default_graph().gradient_override_map('
                               '{"Relu": "GuidedRelu"}):\n    y = tf.nn.relu(tf.constant([1.0]))\n')
    out = subprocess.run([sys.executable, "-m", "migrator", "-q", "-"], input=GUIDED, capture_output=True,
                         text=True, cwd=tmp_path)
    assert "RegisterGradient" in out.stdout, out.stdout + out.stderr  # user.py still needs it


def test_a_new_tf_import_goes_before_the_first_use(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    src = GUIDED.replace("import tensorflow as tf\n", "from tensorflow import nn, where, zeros_like\n"
                         "from tensorflow.compat.v1 import get_default_graph\n")
    src = src.replace("tf.where", "where").replace("tf.zeros_like", "zeros_like").replace("tf.nn.relu", "nn.relu")
    src = src.replace("tf.get_default_graph()", "get_default_graph()") + "\n\nimport math  # a late import\n"
    m = write(tmp_path, "m.py", src)
    run([m])
    text = open(m).read()
    assert text.index("import tensorflow as tf") < text.index("@tf.custom_gradient"), text


def test_a_cell_magic_stays_the_first_line_of_its_cell():
    cells = ["%%time\nfrom tensorflow import constant, reduce_sum\nx = constant([1.0, 2.0])\n"
             "from tensorflow import gradients\ng = gradients(reduce_sum(x * x), x)\n"]
    nb = {"cells": [{"cell_type": "code", "source": c, "metadata": {}, "outputs": [], "execution_count": None}
                    for c in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    new, sites = migrate_notebook(json.dumps(nb, indent=1), "nb.ipynb", RunIndex(), Options())
    source = "".join(json.loads(new)["cells"][0]["source"])
    assert source.startswith("%%time\n") and "import tensorflow as tf" in source, source


def test_a_graph_handle_on_self_that_another_file_reads_stays(tmp_path):
    """Found by an adversarial run (--unsafe-fixes): `self.graph` went while user.py read `n.graph`."""
    (tmp_path / "pyproject.toml").write_text("")
    m = write(tmp_path, "m.py", GUIDED.split("\n\ndef guided")[0] + textwrap.dedent('''


        class Net:
            def build(self, x):
                self.graph = tf.get_default_graph()
                with self.graph.gradient_override_map({"Relu": "GuidedRelu"}):
                    return tf.nn.relu(x)
        '''))
    write(tmp_path, "user.py", "import m\nn = m.Net()\nprint(n.graph)\n")
    opts = runner.RunOptions(jobs=1, mode=runner.WRITE, options=Options(unsafe_fixes=True))
    runner.run([m], opts)
    text = open(m).read()
    assert "@tf.custom_gradient" in text and "self.graph = tf.get_default_graph()" in text
