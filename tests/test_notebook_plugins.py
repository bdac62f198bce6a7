"""Notebooks through the real rewrite plugins (issue 12's notebook bugs)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from fake_plugin import run_cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cell(source):
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}


def write_nb(path, cells):
    text = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
                      indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    return text


GRADIENT_CELL = ["def f(x):\n", "    y = x * x\n", "    return tf.gradients(y, x)"]


def test_imports_in_a_cell_with_a_magic_are_seen(tmp_path):
    """`import tensorflow as tf` beside `%matplotlib inline` names `tf` for the other cells."""
    f = tmp_path / "nb.ipynb"
    write_nb(f, [cell(["%matplotlib inline\n", "import tensorflow as tf"]), cell(GRADIENT_CELL)])
    assert run_cli(f).exit_code == 1
    cells = json.loads(f.read_text())["cells"]
    assert cells[0]["source"] == ["%matplotlib inline\n", "import tensorflow as tf"]
    assert "".join(cells[1]["source"]) == (
        "def f(x):\n    with tf.GradientTape() as tape:\n        tape.watch(x)\n        y = x * x\n"
        "    return tf.nest.flatten(tape.gradient(y, x))")  # no caller shows what x holds


def test_an_untouched_cell_keeps_its_bytes_when_a_helper_is_added_after_it(tmp_path):
    """The override rewrite puts a helper (and blank lines) before the next cell's code."""
    f = tmp_path / "nb.ipynb"
    original = write_nb(f, [
        cell(["import tensorflow as tf"]),
        cell(["x = 1"]),
        cell(["def flip(x):\n",
              "    with tf.get_default_graph().gradient_override_map({\"Identity\": \"Neg\"}):\n",
              "        return tf.identity(x)"]),
        cell(["print(1)"]),
    ])
    assert run_cli(f).exit_code == 1
    old, new = json.loads(original)["cells"], json.loads(f.read_text())["cells"]
    assert [c["source"] for c in new][:2] == [["import tensorflow as tf"], ["x = 1"]]
    assert new[3] == old[3]
    assert new[2]["source"][-1] == "    return identity_negated_gradient(x)"  # no newline added at the end either
    assert "@tf.custom_gradient\n" in new[2]["source"]


def test_a_magic_inside_the_block_a_tape_would_wrap_is_left_for_a_person(tmp_path):
    f = tmp_path / "nb.ipynb"
    original = write_nb(f, [cell(["import tensorflow as tf\n"]),
                            cell(["def f(x):\n", "    %time y = x * x\n", "    return tf.gradients(y, x)"])])
    r = run_cli(f)
    assert r.exit_code == 1
    assert f.read_text() == original
    assert f"{f}:cell 1:3:" in r.stderr and " manual " in r.stderr


def test_stdin_through_a_subprocess():
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-m", "migrator", "--stdin-filename", "x.py", "-"], input="x = 1\n",
                       capture_output=True, text=True, env=env)
    assert (r.returncode, r.stdout) == (0, "x = 1\n")
    assert "1 file scanned" in r.stderr
