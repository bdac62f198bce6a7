"""Start-up stays cheap: no TensorFlow ever while rewriting, libcst only when needed."""
from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROBE = r"""
import json, sys
from migrator.cli import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    code = e.code
print(json.dumps({"code": code, "tf": "tensorflow" in sys.modules, "libcst": "libcst" in sys.modules}))
"""


def probe(*args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", PROBE, *map(str, args)], capture_output=True, text=True, env=env, cwd=ROOT)
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_importing_migrator_imports_neither_tensorflow_nor_libcst():
    code = "import sys, migrator, migrator.cli, migrator.runner, migrator.reports; " \
           "print('tensorflow' in sys.modules, 'libcst' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.stdout.split() == ["False", "False"], r.stderr


def test_files_without_candidates_never_load_libcst(tmp_path):
    (tmp_path / "a.py").write_text("import tensorflow as tf\nx = tf.constant(1.0)\n")
    (tmp_path / "b.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    out = probe("--jobs", "1", "--report", tmp_path / "r.json", tmp_path)
    assert out == {"code": 0, "tf": False, "libcst": False}


SOURCE = (
    "import tensorflow as tf\n\n@tf.RegisterGradient('X')\ndef _g(op, grad):\n    return grad\n\n"
    "x = tf.constant(1.0)\nwith tf.get_default_graph().gradient_override_map({'Identity': 'X'}):\n"
    "    y = tf.identity(x)\ng = tf.gradients(y, x)\n"
)


def test_rewriting_never_imports_tensorflow(tmp_path):
    for mode in (["--diff"], ["--check"], []):
        (tmp_path / "a.py").write_text(SOURCE)  # afresh: the write mode may migrate it
        out = probe("--jobs", "1", *mode, tmp_path)
        assert out["tf"] is False
        assert out["libcst"] is True  # the file passed the prefilter, so it was parsed
