"""The verifier end to end, on real TensorFlow (children processes).

tests/verify_data/<case>/ holds an acceptance case (before.py), a correct hand
migration (after.py; some cases also after_eager.py / after_tf_function.py,
which run in TF2 eager mode) and, where the acceptance suite has one, the
plausible wrong migration (wrong1.py).  Work is batched (tests/verify_batch.py):
each original runs once for all of its migrations and their mutants.
"""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import verify_batch  # noqa: E402

from migrator.model import Site  # noqa: E402
from migrator.verify import cli_verify, verify_files  # noqa: E402
from migrator.verify.report import exit_code  # noqa: E402

pytestmark = pytest.mark.slow  # TensorFlow in child processes: minutes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = verify_batch.DATA
CASES = verify_batch.hand_cases()
CORRECT = [(c, os.path.basename(p)) for c in CASES for p in sorted(glob.glob(os.path.join(DATA, c, "after*.py")))]
WRONG = [(c, os.path.basename(p)) for c in CASES for p in sorted(glob.glob(os.path.join(DATA, c, "wrong*.py")))]


@pytest.fixture(scope="module")
def results():
    """{(case, file): PairResult} for every correct and wrong migration (shared batched run)."""
    out = {}
    for case, res in verify_batch.hand_results().items():
        assert "error" not in res, f"{case}: original fails: {res.get('error')}"
        out.update({(case, name): r for (name, op), r in res.items() if op is None})
    return out


def test_there_are_enough_cases():
    assert len(CORRECT) >= 12 and len(WRONG) >= 4


@pytest.mark.parametrize("case,name", CORRECT)
def test_correct_migration_matches_in_tf2(results, case, name):
    r = results[(case, name)]
    assert exit_code(r.checks) == 0, "\n".join(f"{c.status} {c.label}: {c.detail}" for c in r.checks)
    assert any(c.kind == "gradient" for c in r.checks), "no gradient was captured in script mode"
    # Session scripts too: the Session shim runs them eagerly; nothing fell back to TF1 graph mode
    assert r.migrated_mode == "tf2-eager"
    assert all("tf2-eager" in c.mode for c in r.checks)
    assert all(c.mode.endswith("tf2-eager+tf.function") for c in r.checks if c.kind == "probe")


@pytest.mark.parametrize("case,name", WRONG)
def test_wrong_migration_is_a_mismatch(results, case, name):
    """Every wrong migration, the tool's own old outputs (wrong_oldtool.py) included, is rejected, and each
    mismatch says what differs: both values, or the migrated side's failure."""
    r = results[(case, name)]
    assert exit_code(r.checks) == 1, "\n".join(f"{c.status} {c.label}: {c.detail}" for c in r.checks)
    bad = [c for c in r.checks if c.status == "mismatch"]
    assert bad and all(("original" in c.detail and "migrated" in c.detail)
                       or c.detail.startswith(("migrated fails", "migrated raises", "TF2 eager: ", "inside tf.function: "))
                       for c in bad)


def test_the_required_wrong_migrations_are_fixtures():
    """Issue 10: the old outputs for c20, c25, c26, c29, a rank-3 @ under a MatMul override, a mutated map."""
    for case, name in [("c20_logits_from_caller", "wrong_oldtool.py"), ("c25_sources_list_parameter", "wrong_oldtool.py"),
                       ("c26_py_func_inside_gradient", "wrong_oldtool.py"),
                       ("c29_layer_dict_from_caller", "wrong_oldtool.py"),
                       ("c30_matmul_override_rank3", "wrong_rank3.py"), ("c12_dorefa_two_keys", "wrong_mutated_map.py")]:
        assert (case, name) in WRONG


def test_rank3_matmul_is_caught_only_by_a_rank3_probe(results):
    """The script multiplies matrices, so its gradients agree; the inferred rank-3 input shows the difference."""
    r = results[("c30_matmul_override_rank3", "wrong_rank3.py")]
    bad = [c for c in r.checks if c.status == "mismatch"]
    assert [c.label for c in bad] == ["project(float32[2, 2, 2], float32[2, 2, 2])"]
    assert [c.status for c in r.checks if c.kind == "gradient"] == ["match"]


def test_function_mode_probes_with_the_programs_own_arguments(results):
    r = results[("c12_dorefa_two_keys", "after.py")]
    labels = [c.label for c in r.checks if c.kind == "probe"]
    # the script calls quantize_weights(w, 1) and (w, 2): those calls are replayed, k an int as in the program
    assert labels == ["quantize_weights(float32[2, 2], 1) [as called at line 20]",
                      "quantize_weights(float32[2, 2], 2) [as called at line 21]"]
    r = results[("c10_flip_gradient_builder", "after.py")]
    # recorded calls with their keyword arguments, then the rank-3 and float64 variation
    assert [c.label for c in r.checks if c.kind == "probe"] == [
        "flip_gradient(float32[2, 2], l=0.3) [as called at line 30]",
        "flip_gradient(float32[2, 2], l=2.0) [as called at line 31]",
        "flip_gradient(float32[2, 2, 2])", "flip_gradient(float64[2, 2])"]


def test_eager_migration_is_also_checked_inside_tf_function(results):
    r = results[("c13_mul_operator_override", "after_eager.py")]
    probe = [c for c in r.checks if c.kind == "probe"]
    assert probe and all(c.mode.endswith("tf2-eager+tf.function") for c in probe)
    r = results[("c02_sign_quantize_ste", "after_tf_function.py")]
    grads = [c for c in r.checks if c.kind == "gradient"]
    assert [c.status for c in grads] == ["match"]  # captured from inside a tf.function


# ------------------------------------------------------------------ CLI
def _cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "migrator.verify", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=dict(os.environ, PYTHONPATH=ROOT), timeout=600)


def test_cli_text_output_mismatch_gives_index_and_values():
    case = os.path.join(DATA, "c08_grad_ys_graph_kwargs")
    r = _cli(os.path.join(case, "before.py"), os.path.join(case, "wrong1.py"))
    assert r.returncode == 1, r.stdout + r.stderr
    first = r.stdout.splitlines()[0]
    assert first.startswith("MISMATCH") and "L8 -> L10" in first
    assert "index (1,): original -14.16" in first and "migrated -1.416" in first
    assert r.stdout.splitlines()[-1].startswith("MISMATCH: 1 check(s)")


def test_cli_json_output():
    case = os.path.join(DATA, "c06_negative_grad_variables")
    r = _cli(os.path.join(case, "before.py"), os.path.join(case, "after.py"), "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads(r.stdout)
    assert data["exit_code"] == 0 and data["summary"] == {"match": 2, "mismatch": 0, "unverified": 0}
    assert data["migrated_mode"] == "tf2-eager"
    assert [c["line"] for c in data["checks"]] == [18, 19]
    assert all(c["max_abs_err"] == 0.0 for c in data["checks"])


def test_user_stdout_cannot_fake_results(tmp_path):
    """The script prints what looks like verifier output; results come from another channel."""
    orig, mig = tmp_path / "o.py", tmp_path / "m.py"
    orig.write_text("import tensorflow as tf\nx = tf.constant([1.0, 2.0])\ng = tf.gradients(x * x, x)\n"
                    "with tf.Session() as s:\n    print(s.run(g))\nprint('MATCH everything')\n")
    mig.write_text("import tensorflow as tf\nx = tf.constant([1.0, 2.0])\nwith tf.GradientTape() as t:\n"
                   "    t.watch(x)\n    y = x * x * x\ng = [t.gradient(y, x)]\nprint('MATCH everything', g)\n")
    buf = []

    class Out:
        def write(self, s):
            buf.append(s)

    from migrator.verify.report import cli_verify as report_cli

    assert report_cli(str(orig), str(mig), out=Out()) == 1
    text = "".join(buf)
    assert "MATCH everything" not in text and "index (0,): original 2.0, migrated 3.0" in text


def test_crashing_migration_is_not_accepted(tmp_path):
    case = os.path.join(DATA, "c13_mul_operator_override")
    bad = tmp_path / "crash.py"
    bad.write_text(open(os.path.join(case, "after.py")).read().replace("0.5 * dy * b", "0.5 * dy * undefined_b"))
    r = _cli(os.path.join(case, "before.py"), bad)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "migrated fails: NameError" in r.stdout


def test_original_that_fails_exits_2(tmp_path):
    orig = tmp_path / "orig.py"
    orig.write_text("import tensorflow as tf\nx = tf.constant(1.0)\nraise RuntimeError('boom')\n")
    r = _cli(orig, os.path.join(DATA, "c01_identity_const_mul", "after.py"))
    assert r.returncode == 2
    assert r.stdout.strip() == "original fails: RuntimeError: boom (line 3)"


def test_uncaptured_value_is_unverified_not_match(tmp_path):
    """The migrated file computes its gradient but never evaluates it (it needs a feed)."""
    orig, mig = tmp_path / "o.py", tmp_path / "m.py"
    orig.write_text(textwrap.dedent("""
        import tensorflow as tf
        x = tf.placeholder(tf.float32, [2])
        g = tf.gradients(tf.reduce_sum(x * x), x)
        with tf.Session() as s:
            print(s.run(g, {x: [1.0, 2.0]}))
    """))
    mig.write_text(textwrap.dedent("""
        import tensorflow as tf
        x = tf.placeholder(tf.float32, [2])
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.reduce_sum(x * x)
        g = [t.gradient(y, x)]
        with tf.Session() as s:
            pass
    """))
    code = cli_verify(str(orig), str(mig))
    assert code == 3


def test_verify_files_fills_one_dict_per_site_in_parallel():
    c06, c08 = os.path.join(DATA, "c06_negative_grad_variables"), os.path.join(DATA, "c08_grad_ys_graph_kwargs")
    pairs = [
        (os.path.join(c06, "before.py"), os.path.join(c06, "after.py"),
         [Site("override_map", "TFG001", 15), Site("tf_gradients", "TFG100", 19, new_line=19),
          Site("tf_gradients", "TFG100", 18, new_line=18)]),
        (os.path.join(c08, "before.py"), os.path.join(c08, "wrong1.py"),
         [Site("tf_gradients", "TFG100", 8, new_line=6)]),
    ]
    out = verify_files(pairs, jobs=2)
    assert [[v["status"] for v in f] for f in out] == [["match", "match", "match"], ["mismatch"]]
    assert out[0][1]["max_abs_err"] == 0.0 and "tf2-eager" in out[0][1]["mode"]
    assert "original -14.16" in out[1][0]["detail"]


def test_pyproject_inputs_are_used(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.tfgradmigrate.verify]\n"lib:clip" = { args = [{ shape = [3, 2], range = [-0.5, 0.5] }] }\n')
    (tmp_path / "lib.py").write_text(textwrap.dedent("""
        import tensorflow as tf

        @tf.RegisterGradient("Half")
        def _half(op, grad):
            return 0.5 * grad

        def clip(x):
            with tf.get_default_graph().gradient_override_map({"Identity": "Half"}):
                return tf.identity(x)
    """))
    (tmp_path / "lib_new.py").write_text(textwrap.dedent("""
        import tensorflow as tf

        @tf.custom_gradient
        def clip(x):
            return tf.identity(x), lambda dy: 0.5 * dy
    """))
    # module name comes from the file: the config keys "lib:clip"; the migrated copy sits beside it
    os.replace(tmp_path / "lib_new.py", tmp_path / "lib_migrated.py")
    from migrator.verify.engine import verify_pair

    r = verify_pair(str(tmp_path / "lib.py"), str(tmp_path / "lib_migrated.py"))
    assert [(c.label, c.status) for c in r.checks] == [("clip(float32[3, 2])", "match")]
    assert r.migrated_mode == "tf2-eager"


def test_tf1_spellings_run_in_tf2_and_feeds_fall_back_to_graph_mode(tmp_path):
    """`from tensorflow.keras import ...` works under compat.v1; a TF1-only name left in the migrated file
    resolves through compat.v1 in the TF2 run (and is named); a script that feeds placeholders is
    witnessed in TF1 graph mode with resource variables instead, and says so."""
    orig, mig, fed, fed_mig = tmp_path / "o.py", tmp_path / "m.py", tmp_path / "f.py", tmp_path / "f_mig.py"
    orig.write_text(textwrap.dedent("""
        import tensorflow as tf
        from tensorflow.keras import backend as K
        x = tf.constant([1.0, 2.0])
        g = tf.gradients(tf.reduce_sum(tf.square(x)), x)
        with tf.Session() as s:
            s.run(g)
    """))
    mig.write_text(textwrap.dedent("""
        import tensorflow as tf
        x = tf.constant([1.0, 2.0])
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.to_float(tf.reduce_sum(tf.square(x)))  # TF1-only name
        g = [t.gradient(y, x)]
    """))
    fed.write_text(textwrap.dedent("""
        import tensorflow as tf
        x = tf.placeholder(tf.float32, [2])
        g = tf.gradients(tf.reduce_sum(x * x), x)
        with tf.Session() as s:
            print(s.run(g, {x: [1.0, 2.0]}))
    """))
    fed_mig.write_text(textwrap.dedent("""
        import tensorflow as tf
        x = tf.placeholder(tf.float32, [2])
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.reduce_sum(x * x)
        g = [t.gradient(y, x)]
        with tf.Session() as s:
            print(s.run(g, {x: [1.0, 2.0]}))
    """))
    from migrator.verify.engine import verify_groups

    (r,), (f,) = verify_groups([(str(orig), [str(mig)]), (str(fed), [str(fed_mig)])])
    assert [c.status for c in r.checks] == ["match"] and r.migrated_mode == "tf2-eager"
    assert any("tf.to_float (line 6)" in n for n in r.skipped)
    assert [c.status for c in f.checks] == ["match"]
    assert f.migrated_mode == "tf2-eager (script: tf1-graph+resource-variables)"
    assert "extra evidence" in f.checks[0].mode and "needs TF1 graph mode at line 3" in f.checks[0].mode


def test_random_ops_draw_the_same_numbers_on_both_sides(tmp_path):
    """Graph-mode original vs eager (and tf.function) migration of a function with a random op."""
    orig, mig = tmp_path / "noisy.py", tmp_path / "noisy_tf2.py"
    orig.write_text(textwrap.dedent("""
        import tensorflow as tf

        @tf.RegisterGradient("Twice")
        def _twice(op, grad):
            return 2.0 * grad

        def noisy(x):
            with tf.get_default_graph().gradient_override_map({"Identity": "Twice"}):
                y = tf.identity(x)
            return y * tf.random_uniform(tf.shape(x))
    """))
    mig.write_text(textwrap.dedent("""
        import tensorflow as tf

        @tf.custom_gradient
        def _twice(x):
            return tf.identity(x), lambda dy: 2.0 * dy

        def noisy(x):
            return _twice(x) * tf.random.uniform(tf.shape(x))
    """))
    from migrator.verify.engine import verify_pair

    r = verify_pair(str(orig), str(mig))
    # a library (no script): inferred inputs of rank 2, 1 and 3; float64 fails on the original itself
    # (float32 noise times a float64 input), so it is not compared
    assert [(c.label, c.status) for c in r.checks] == [
        ("noisy(float32[2, 2])", "match"), ("noisy(float32[3])", "match"), ("noisy(float32[2, 2, 2])", "match")]
    assert all(c.mode.endswith("tf2-eager+tf.function") for c in r.checks)


def test_a_migration_that_kills_the_process_is_a_mismatch_and_later_files_are_unverified(tmp_path):
    """Files share a child process: the one that crashes it is rejected, the ones after it were not run."""
    case = os.path.join(DATA, "c13_mul_operator_override")
    good = open(os.path.join(case, "after_eager.py")).read()
    crash = tmp_path / "crash.py"
    crash.write_text(good.replace("def f(a, b):", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n\n\n"
                                                 "def f(a, b):"))
    from migrator.verify.engine import verify_variants

    first, crashed, after = verify_variants(os.path.join(case, "before.py"),
                                            [os.path.join(case, "after_eager.py"), str(crash),
                                             os.path.join(case, "after_eager.py")])
    assert exit_code(first.checks) == 0
    assert exit_code(crashed.checks) == 1 and "crashed" in crashed.checks[0].detail
    assert exit_code(after.checks) == 3
    assert all(c.status == "unverified" and "not run" in c.detail for c in after.checks)
