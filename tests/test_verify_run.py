"""`tfgradmigrate verify --run CMD ORIGINAL_TREE MIGRATED_TREE`: the project's own tests, run on both trees.

tests/verify_data/trees/<case>/ holds a library (an acceptance case without
its script) with a small tf.test.TestCase suite: ``original/``, the tool's
old wrong output ``wrong_oldtool/`` and, where one exists, a correct
migration ``migrated/``.  The bugs live in the callers (``logits`` computed
by the caller, a source list passed as one argument, a layer dict built by
the caller's network), which function mode cannot see.
"""
from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from migrator.verify import testrun
from migrator.verify.checks import MATCH, MISMATCH, UNVERIFIED

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TREES = os.path.join(ROOT, "tests", "verify_data", "trees")
# the trees have no pytest config of their own, so this repository's applies (its rootdir is
# ours): `-n 0` keeps its `-n auto` from starting two TF-importing workers per side
PYTEST = "python -m pytest -q -n 0 tests"


def test_regions_pair_a_migrated_gradient_with_the_call_it_replaced():
    old = "import tensorflow as tf\n\n\ndef f(x):\n    y = x * x\n    g = tf.gradients(y, x)\n    return g\n\n\nz = 1\n"
    new = ("import tensorflow as tf\n\n\ndef f(x):\n    with tf.GradientTape() as tape:\n        tape.watch(x)\n"
           "        y = x * x\n    g = [tape.gradient(y, x)]\n    return g\n\n\nz = 1\n")
    r = testrun.regions(old, new)
    assert r.hunks == [((5, 6), (5, 8))]
    assert r.key(6, "original") == r.key(8, "migrated") == ("hunk", 0)  # tf.gradients <-> tape.gradient
    assert r.key(10, "original") == r.key(12, "migrated") == ("line", 12)  # unchanged line, moved down by 2
    assert testrun._holders(new, r.hunks[0][1]) == ["f"]


def _side(outcomes):
    return testrun.SideRun(exit_code=0, outcomes=outcomes)


def test_outcomes_compared_test_by_test():
    ok = {"outcome": "passed", "error": None, "where": None}
    old = _side({"t::a": ok, "t::b": ok, "t::c": ok, "t::d": {"outcome": "failed", "error": "E", "where": None}})
    new = _side({
        "t::a": ok,
        "t::b": {"outcome": "failed", "error": "ValueError: shapes", "where": ("lib.py", 7)},
        "t::c": {"outcome": "failed", "error": "RuntimeError: tf.placeholder() is not compatible with eager "
                                               "execution.", "where": ("tests/test_lib.py", 3)},
        "t::d": ok,
    })
    checks = {c.label: c for c in testrun.test_checks(old, new, {}, {"lib.py": {7}})}
    assert checks["t::a"].status == MATCH
    assert checks["t::b"].status == MISMATCH and "(lib.py:7)" in checks["t::b"].detail
    assert checks["t::c"].status == UNVERIFIED and "needs TF1 graph mode at line 3" in checks["t::c"].detail
    assert checks["t::d"].status == UNVERIFIED and "not evidence either way" in checks["t::d"].detail


def test_a_command_that_is_not_pytest_is_one_test():
    old = testrun.SideRun(exit_code=0, log="ok\n")
    new = testrun.SideRun(exit_code=1, log="Traceback...\nValueError: boom\n")
    (chk,) = testrun.test_checks(old, new, {}, {})
    assert chk.label == "<command>" and chk.status == MISMATCH and "ValueError: boom" in chk.detail


# ------------------------------------------------------------------ real runs (TensorFlow, pytest)
RUNS = {
    "c20 old output": ("c20_logits_from_caller", "wrong_oldtool"),
    "c25 old output": ("c25_sources_list_parameter", "wrong_oldtool"),
    "c25 correct": ("c25_sources_list_parameter", "migrated"),
    "c29 old output": ("c29_layer_dict_from_caller", "wrong_oldtool"),
}


@pytest.fixture(scope="module")
def runs():
    def one(item):
        case, side = item
        base = os.path.join(TREES, case)
        return testrun.verify_run(os.path.join(base, "original"), os.path.join(base, side), PYTEST)

    with ThreadPoolExecutor(2) as pool:
        return dict(zip(RUNS, pool.map(one, RUNS.values())))


def _statuses(res, kind):
    return [c.status for c in res[kind]]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["c20 old output", "c29 old output"])
def test_caller_side_bugs_are_caught(runs, name):
    """The gradient is taken inside the library, the path to its source lies in the test: None in TF2."""
    res = runs[name]
    assert _statuses(res, "tests") == [MISMATCH]
    (value,) = res["values"]
    assert value.status == MISMATCH and value.detail == "value: original a value, migrated None"
    assert value.file.endswith(".py") and value.line and value.new_line > value.line  # the same site, both sides
    assert _statuses(res, "sites") == [MISMATCH]


@pytest.mark.slow
def test_a_wrong_result_structure_is_caught_by_the_test_outcome(runs):
    """c25: tape.gradient(loss, [variables]) flattens to the same values, but the caller's zip breaks."""
    res = runs["c25 old output"]
    assert _statuses(res, "values") == [MATCH]
    assert _statuses(res, "tests") == [MISMATCH] and "TypeError" in res["tests"][0].detail
    assert _statuses(res, "sites") == [MISMATCH]


@pytest.mark.slow
def test_a_correct_migration_matches_test_by_test_and_site_by_site(runs):
    res = runs["c25 correct"]
    assert _statuses(res, "tests") == [MATCH] and _statuses(res, "values") == [MATCH]
    assert _statuses(res, "sites") == [MATCH] and "1 test(s)" in res["sites"][0].detail
    assert res["exit"] == {"original": 0, "migrated": 0}


@pytest.mark.slow
def test_cli_exit_code_and_no_files_left_in_the_trees(tmp_path):
    base = os.path.join(TREES, "c20_logits_from_caller")
    before = sorted(os.path.relpath(os.path.join(d, f), base) for d, _, fs in os.walk(base) for f in fs)
    r = subprocess.run([sys.executable, "-m", "migrator.verify", "--run", PYTEST, "--json",
                        os.path.join(base, "original"), os.path.join(base, "wrong_oldtool")],
                       capture_output=True, text=True, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=ROOT),
                       timeout=900)
    assert r.returncode == 1, r.stdout + r.stderr
    assert '"exit_code": 1' in r.stdout and '"kind": "site"' in r.stdout
    after = sorted(os.path.relpath(os.path.join(d, f), base) for d, _, fs in os.walk(base) for f in fs)
    assert after == before  # no .pytest_cache, no __pycache__
