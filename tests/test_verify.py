"""Verifier units that need no TensorFlow: comparison, inputs, analysis, import cost."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from migrator.verify import analysis, inputs
from migrator.verify.compare import compare_lists, compare_values, tolerances
from migrator.verify.checks import Check, needs_graph
from migrator.verify.engine import PairResult
from migrator.verify.report import exit_code, format_check
from migrator.verify.sites import site_verifications

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ------------------------------------------------------------------ compare
def test_none_equals_only_none():
    assert compare_values(None, None).equal
    assert not compare_values(None, np.zeros(3, np.float32)).equal
    assert not compare_values(np.zeros(3, np.float32), None).equal


def test_shapes_and_dtypes_must_match_exactly():
    a = np.ones((2, 1), np.float32)
    assert "shape" in compare_values(a, np.ones((2,), np.float32)).detail
    assert not compare_values(a, np.ones((1, 2), np.float32)).equal
    assert "dtype" in compare_values(a, a.astype(np.float64)).detail


def test_nan_equals_nan_only_at_the_same_positions():
    a = np.array([1.0, np.nan, 3.0], np.float32)
    assert compare_values(a, a.copy()).equal
    o = compare_values(a, np.array([np.nan, 2.0, 3.0], np.float32))
    assert not o.equal and "index (0,)" in o.detail
    assert not compare_values(np.array([np.inf], np.float32), np.array([-np.inf], np.float32)).equal
    assert compare_values(np.array([np.inf], np.float32), np.array([np.inf], np.float32)).equal


def test_first_differing_index_and_both_values_are_reported():
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    b = a.copy()
    b[1, 0] = -3.0
    o = compare_values(a, b)
    assert not o.equal
    assert o.detail == "index (1, 0): original 3.0, migrated -3.0"
    assert o.max_abs_err == pytest.approx(6.0)


def test_tolerances_depend_on_dtype_and_can_be_overridden():
    assert tolerances(np.float16)[0] > tolerances(np.float32)[0] > tolerances(np.float64)[0]
    a = np.array([1.0], np.float32)
    assert compare_values(a, a * (1 + 1e-7)).equal
    assert not compare_values(a, a * (1 + 1e-3)).equal
    assert compare_values(a, a * (1 + 1e-3), rtol=1e-2).equal
    h = np.array([1.0], np.float16)
    assert compare_values(h, (h * np.float16(1.004)).astype(np.float16)).equal
    assert not compare_values(np.array([1.0], np.float64), np.array([1.0 + 1e-7])).equal


def test_integers_and_bools_compare_exactly():
    assert compare_values(np.array([1, 2]), np.array([1, 2])).equal
    assert not compare_values(np.array([True]), np.array([False])).equal


def test_compare_lists_names_the_component():
    o = compare_lists([np.ones(2, np.float32), None], [np.ones(2, np.float32), np.ones(2, np.float32)],
                      ["a", "b"])
    assert not o.equal and o.detail.startswith("b:")


# ------------------------------------------------------------------ inputs
def test_inferred_values_avoid_discontinuities():
    v = inputs.smooth_values((6, 9), offset=3).astype(np.float64)
    assert np.all(np.abs(v) > 0.1)  # away from sign's jump at 0
    frac = np.abs(v) % 1.0
    assert np.all(((frac > 0.12) & (frac < 0.36)) | ((frac > 0.62) & (frac < 0.86)))  # round/floor
    assert (v > 1).any() and (v < -1).any() and (np.abs(v) < 1).any()  # both sides of hard-tanh's edges


def test_each_argument_gets_different_values():
    a, b = inputs.smooth_values((2, 2), 0), inputs.smooth_values((2, 2), 1)
    assert not np.allclose(a, b)


def test_candidates_vary_rank_and_dtype_then_small_ints_for_int_looking_names():
    params = [{"name": "x", "has_default": False, "annotation": None},
              {"name": "k", "has_default": False, "annotation": None},
              {"name": "scale", "has_default": True, "annotation": None}]
    cands = inputs.infer_candidates(params)
    assert cands[0]["group"] == "float32:r2" and len(cands[0]["args"]) == 2  # the default is kept
    floats = [c for c in cands if c["group"].startswith("float")]
    (bcast,) = [c for c in floats if c["group"] == "float32:bcast"]  # x * alpha: a matrix and a scalar
    assert bcast["args"][0].shape == (2, 2) and bcast["args"][1].shape == ()
    floats = [c for c in floats if c is not bcast]
    assert {c["args"][0].ndim for c in floats} == {0, 1, 2, 3}
    assert {c["args"][0].dtype for c in floats} == {np.dtype(np.float32), np.dtype(np.float64)}
    assert all(c["args"][0].dtype.name == c["group"].split(":")[0] and c["group"].endswith(f"r{c['args'][0].ndim}")
               for c in floats)
    ints = [c for c in cands if c["group"].startswith("int:")]
    assert ints and all(isinstance(c["args"][1], int) and isinstance(c["args"][0], np.ndarray) for c in ints)
    assert {c["args"][1] for c in ints} == set(inputs.SMALL_INTS)
    assert not [c for c in inputs.infer_candidates(params[:1]) if c["group"].startswith("int:")]


def test_choose_one_per_rank_one_float64_and_one_per_int_value():
    cands = inputs.infer_candidates([{"name": "x", "has_default": False}, {"name": "bits", "has_default": False}])
    groups = lambda idx: [cands[i]["group"] for i in idx]  # noqa: E731
    ok = [c["group"].startswith("int:") for c in cands]  # floats alone fail: an int is needed
    assert groups(inputs.choose(cands, ok)) == ["int:1", "int:2", "int:3"]
    ok = [True] * len(cands)
    assert groups(inputs.choose(cands, ok)) == ["float32:r2", "float32:r1", "float32:r3", "float32:bcast",
                                                  "float64:r2", "int:1", "int:2", "int:3"]
    # rank 0 only when no other rank runs; float64 may be the only float that runs
    ok = [c["group"] in ("float32:r0", "float64:r1") for c in cands]
    assert groups(inputs.choose(cands, ok)) == ["float32:r0", "float64:r1"]
    # with inputs recorded from the program, inferred ones add only the rank and dtype variation
    both = [{"args": [np.ones(3, np.float32), 2], "kwargs": {}, "group": "recorded"}] + cands
    chosen = inputs.choose(both, [True] * len(both))
    assert [both[i]["group"] for i in chosen] == ["recorded", "float32:r3", "float64:r2"]


def test_pyproject_config_by_module_and_function(tmp_path):
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.tfgradmigrate.verify]
        "pkg.layers:quantize" = { args = [{ shape = [2, 3], range = [-1, 1] }, 2], kwargs = { mode = "x" } }
        "layers:mix" = [{ args = [[1.5, 2.5]] }, { args = [{ value = [[0.2, 0.7]], dtype = "float64" }] }]
        "other:quantize" = { args = [1.0] }
    """))
    (tmp_path / "pkg").mkdir()
    cfg = inputs.load_config(str(tmp_path / "pkg" / "layers.py"))
    q = cfg["quantize"][0]
    assert q["args"][0].shape == (2, 3) and q["args"][0].dtype == np.float32
    assert np.all(np.abs(q["args"][0]) <= 1) and q["args"][1] == 2 and q["kwargs"] == {"mode": "x"}
    assert [c["args"][0].dtype for c in cfg["mix"]] == [np.float32, np.float64]
    assert inputs.choose(cfg["mix"], [True, True]) == [0, 1]


# ------------------------------------------------------------------ analysis
BEFORE = '''import tensorflow as tf

@tf.RegisterGradient("G")
def _g(op, grad):
    return -grad

def core(x):
    with tf.get_default_graph().gradient_override_map({"Identity": "G"}):
        return tf.identity(x)

def user(x, k, scale=2.0):
    return core(x) * scale

def untouched(x):
    return x * 3.0

class Builder(object):
    def __call__(self, x, l=1.0):
        return core(x) * l

flip = Builder()
'''
AFTER = '''import tensorflow as tf

@tf.custom_gradient
def _core(x):
    return tf.identity(x), lambda dy: -dy

def core(x):
    return _core(x)

def user(x, k, scale=2.0):
    return core(x) * scale

def untouched(x):
    return x * 3.0

class Builder(object):
    def __call__(self, x, l=1.0):
        return core(x) * l

flip = Builder()
'''


def test_probe_targets_contain_or_reach_the_change():
    targets = {t.name: t for t in analysis.probe_targets(BEFORE, AFTER)}
    # not _g (a gradient function), not untouched; Builder through its instance, as the file uses it
    assert set(targets) == {"core", "user", "flip"}
    assert targets["flip"].kind == "instance" and not targets["flip"].construct
    assert [p["name"] for p in targets["flip"].params] == ["x", "l"]  # self dropped
    alone = {t.name: t for t in analysis.probe_targets(BEFORE.replace("flip = Builder()\n", ""),
                                                       AFTER.replace("flip = Builder()\n", ""))}
    assert alone["Builder"].construct and alone["Builder"].kind == "class"  # no-argument constructor
    assert [p["has_default"] for p in targets["user"].params] == [False, False, True]


def test_functions_whose_signature_changed_or_registered_by_call_are_not_probed():
    before = ("import tensorflow as tf\ndef _rg(op, grad):\n    return -grad\n"
              "tf.RegisterGradient('R')(_rg)\ndef helper(x, y):\n    return x\n")
    after = ("import tensorflow as tf\ndef _rg(grad):\n    return -grad\n"
             "def helper(x):\n    return x\n")
    assert analysis.probe_targets(before, after) == []


def test_eager_silent_apis_ignore_strings_and_comments():
    assert analysis.eager_silent("v = tf.trainable_variables()\n")
    assert analysis.eager_silent("with tf.variable_scope('a', reuse=True):\n    pass\n")
    assert not analysis.eager_silent("# tf.trainable_variables()\nS = 'get_collection'\nwith tf.Session() as s:\n"
                                     "    pass\n")
    assert not analysis.eager_silent("g = tape.gradient(y, model.trainable_variables)\n")  # Keras: fine eagerly


def test_graph_only_failures_in_unchanged_code_are_unverified_elsewhere_mismatch():
    fail = {"error": "RuntimeError: tf.placeholder() is not compatible with eager execution.", "error_line": 7}
    assert "needs TF1 graph mode at line 7" in needs_graph(fail, changed={3, 4})
    assert needs_graph(fail, changed={7}) is None  # the migration wrote that line: its failure is its own
    assert needs_graph({"error": "ValueError: shapes differ", "error_line": 7}, changed=set()) is None
    name = {"error": "NameError: name 'x_ph' is not defined", "error_line": 9}
    assert needs_graph(name, changed=set(), unbound={"x_ph"}) and needs_graph(name, changed=set()) is None


# ------------------------------------------------------------------ reporting
def test_exit_codes_from_checks():
    m = Check("a", "gradient", "match", "m")
    x = Check("b", "gradient", "mismatch", "m", detail="index (0,): original 1.0, migrated -1.0")
    u = Check("c", "gradient", "unverified", "m", detail="never fetched")
    assert exit_code([m]) == 0
    assert exit_code([m, u]) == 3
    assert exit_code([m, u, x]) == 1
    assert exit_code([]) == 3
    assert "MISMATCH" in format_check(x) and "original 1.0, migrated -1.0" in format_check(x)
    assert "max abs err" in format_check(m)


def test_site_verifications_align_with_sites():
    from migrator.model import Site

    r = PairResult("/nonexistent/a.py", "/nonexistent/b.py")
    r.checks = [Check("g1", "gradient", "match", "m", line=5, new_line=7, max_abs_err=0.0),
                Check("g2", "gradient", "mismatch", "m", line=9, new_line=12, detail="index (0,): ...")]
    sites = [Site("tf_gradients", "TFG100", 9, new_line=12), Site("tf_gradients", "TFG100", 5, new_line=7),
             Site("override_map", "TFG001", 2)]
    out = site_verifications(r, sites)
    assert [v["status"] for v in out] == ["mismatch", "match", "mismatch"]
    assert set(out[1]) == {"status", "max_abs_err", "mode", "detail"}
    r.original_error = "SyntaxError"
    assert all(v["status"] == "unverified" and "original fails" in v["detail"] for v in site_verifications(r, sites))


# ------------------------------------------------------------------ process
def test_importing_the_verifier_does_not_import_tensorflow():
    code = ("import sys, migrator.verify, migrator.verify.engine, migrator.verify.report, migrator.verify.sites, "
            "migrator.verify.checks, migrator.verify.argtree, migrator.verify.__main__; "
            "print('tensorflow' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    assert r.stdout.strip() == "False", r.stderr


def _run(*args, code=None):
    cmd = [sys.executable, "-m", "migrator.verify", *map(str, args)] if code is None else \
        [sys.executable, "-c", code, *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))


def test_usage_errors_exit_2(tmp_path):
    r = _run(tmp_path / "nope.py", tmp_path / "x.py")
    assert r.returncode == 2 and "does not exist" in r.stderr
    assert _run("--bogus").returncode == 2
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "d").mkdir()
    r = _run(tmp_path / "a.py", tmp_path / "d")
    assert r.returncode == 2 and "two files or two folders" in r.stdout
    r = _run(tmp_path / "a.py", tmp_path / "a.py", "--run", "pytest")
    assert r.returncode == 2 and "--run needs two folders" in r.stdout


def test_without_tensorflow_one_line_and_exit_2(tmp_path):
    """No traceback, not exit 1 (which means "mismatch"): one line naming the extra to install."""
    (tmp_path / "a.py").write_text("x = 1\n")
    hide = "import sys; sys.modules['tensorflow'] = None; from migrator.cli import main; main(sys.argv[1:])"
    for argv in (["verify", tmp_path / "a.py", tmp_path / "a.py"], ["verify", tmp_path, tmp_path, "--run", "true"]):
        r = _run(*argv, code=hide)
        assert r.returncode == 2, r.stderr
        assert r.stdout == "" and r.stderr.count("\n") == 1
        assert "pip install 'tfgradmigrate[verify]'" in r.stderr and "Traceback" not in r.stderr


def test_original_syntax_error_is_reported_without_running(tmp_path):
    from migrator.verify import cli_verify

    bad, good = tmp_path / "a.py", tmp_path / "b.py"
    bad.write_text("def f(:\n")
    good.write_text("x = 1\n")
    import io

    from migrator.verify.report import cli_verify as _cv

    buf = io.StringIO()
    assert _cv(str(bad), str(good), out=buf) == 2
    assert buf.getvalue().startswith("original fails: SyntaxError")
    assert callable(cli_verify) and not math.isnan(0.0)


# ------------------------------------------------------------------ trees and notebooks
def test_notebook_runs_its_code_cells_in_order_with_magics_masked():
    from migrator.verify import trees

    nb = {"cells": [
        {"cell_type": "markdown", "source": ["# title"]},
        {"cell_type": "code", "source": ["%matplotlib inline\n", "import tensorflow as tf\n"]},
        {"cell_type": "code", "source": "files = !ls\nif True:\n    !echo hi\nx = 1\n"},
        {"cell_type": "code", "source": "%%time\ny = undefined_in_python\n"},
        {"cell_type": "code", "source": "z = x + 1"},
    ]}
    script = trees.notebook_script(json.dumps(nb))
    compile(script.text, "nb.py", "exec")
    lines = script.text.splitlines()
    assert lines[1] == "pass  # tfgradmigrate: IPython magic" and lines[2] == "import tensorflow as tf"
    assert "files = None  # tfgradmigrate: IPython magic" in lines and "    pass  # tfgradmigrate: IPython magic" in lines
    assert "# y = undefined_in_python" in lines  # a cell magic's cell is not Python
    assert script.locate(lines.index("z = x + 1") + 1) == "cell 4:1"
    assert script.locate(3) == "cell 1:2"
    with pytest.raises(trees.NotebookUnreadable):
        trees.notebook_script("{not json")


def test_folders_pair_files_by_relative_path(tmp_path):
    from migrator.verify import trees

    for side, files in {"o": {"a.py": "1", "pkg/b.py": "2", "same.py": "s", "gone.py": "g", "n.ipynb": "{}"},
                        "m": {"a.py": "1b", "pkg/b.py": "2b", "same.py": "s", "new.py": "n", "n.ipynb": "{} "}}.items():
        for rel, text in files.items():
            (tmp_path / side / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / side / rel).write_text(text)
    (tmp_path / "o" / ".git").mkdir()
    (tmp_path / "o" / ".git" / "x.py").write_text("ignored")
    p = trees.pair_trees(str(tmp_path / "o"), str(tmp_path / "m"))
    assert [rel for rel, _, _ in p.pairs] == ["a.py", "n.ipynb", "pkg/b.py"]
    assert p.only_original == ["gone.py"] and p.only_migrated == ["new.py"] and p.unchanged == 1


def test_a_parameter_named_for_several_tensors_gets_a_list():
    cands = inputs.infer_candidates([{"name": "variables", "has_default": False},
                                     {"name": "x", "has_default": False}])
    first = cands[0]["args"]
    assert isinstance(first[0], list) and len(first[0]) == 2 and first[0][0].shape == (2, 2)
    assert not np.allclose(first[0][0], first[0][1]) and isinstance(first[1], np.ndarray)
