"""Mutation test: the verifier must kill wrong variants of correct migrations.

Sources of correct migrations: every golden fixture fixtures/<case>/after.py
and the hand migrations tests/verify_data/<case>/after*.py.  Each is mutated
(tests/verify_mutants.py) with the gradient-function operators (negate,
scale by 2, drop ``output_gradients``, swap two gradients) and with the
failure modes seen in real migrations (move ``tape.watch`` late, start the
tape late, move a side effect out of the region, change a ``get_attr``
value, a float32 literal operand, ``[0]`` on a py_func result).  Each
mutant must be reported as a mismatch (exit 1).

Two forms of every file: script form (the file as it is: script mode and
function mode) and library form (its ``__main__`` block dropped: function
mode only, the way a library module is verified).  A mutant counts only
when its unmutated file verifies as a match in that form; a mutant that
only touches the script part has no library form.

The kill rates are printed (run with ``-s``).  Batched
(tests/verify_batch.py): one child runs every original, one every migration.
"""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import verify_batch  # noqa: E402
from verify_mutants import NEW_OPERATORS, OPERATORS, library_form, mutate  # noqa: E402

from migrator.verify.report import exit_code  # noqa: E402

#: (corpus, form, case, file, operator) -> why no input can tell the mutant apart.  Reported, not counted.
_LATE_WATCH_AFTER_VARIABLE = ("the first use of the source is an op whose other input is a trainable variable: "
                              "the tape records that op anyway, so a later tape.watch still gets the gradient")
_SOURCE_MADE_BEFORE = ("the statement moved above the tape makes the source itself (interp, x), which the tape "
                       "then watches: the gradient with respect to it is the same")
EQUIVALENT: dict = {
    ("golden", "script", "grad_in_function", "after.py", "watch_late"): _LATE_WATCH_AFTER_VARIABLE,
    ("golden", "library", "grad_in_function", "after.py", "watch_late"): _LATE_WATCH_AFTER_VARIABLE,
    ("golden", "script", "grad_shared_tape", "after.py", "watch_late"): _LATE_WATCH_AFTER_VARIABLE,
    ("golden", "script", "grad_source_list_from_call", "after.py", "tape_late"):
        "the statement moved out of the tape is nest.flatten(params), a Python list operation",
    ("golden", "library", "grad_source_list_from_call", "after.py", "tape_late"):
        "the statement moved out of the tape is nest.flatten(params), a Python list operation",
    ("hand", "library", "c02_sign_quantize_ste", "after_tf_function.py", "tape_late"):
        "the mutated tape is in step(), a helper only the migrated script has: no function of the library uses it",
    ("hand", "library", "c02_sign_quantize_ste", "after_tf_function.py", "watch_late"):
        "the mutated tape is in step(), a helper only the migrated script has: no function of the library uses it",
    ("hand", "script", "c27_source_used_in_nested_block", "after.py", "tape_late"): _SOURCE_MADE_BEFORE,
    ("hand", "library", "c27_source_used_in_nested_block", "after.py", "tape_late"): _SOURCE_MADE_BEFORE,
    # the source `x = tf.constant(...)` opens the tape (the tape is extended over the filler only for
    # sources made in it): moved above the `with`, it is watched there all the same
    ("golden", "script", "grad_list_filled_by_a_helper_in_the_tape", "after.py", "tape_late"): _SOURCE_MADE_BEFORE,
    ("golden", "library", "grad_list_filled_by_a_helper_in_the_tape", "after.py", "tape_late"): _SOURCE_MADE_BEFORE,
    ("hand", "script", "c01_identity_const_mul", "after.py", "literal_dtype"):
        "a script with no function: it computes in float32 only, where a float32 constant is the same value",
}


def _rows(results: dict):
    """Mutant rows (corpus, form, case, file, operator, exit code, first non-match) and baselines."""
    rows, baseline = [], []
    for (corpus, form, case), res in sorted(results.items()):
        if "error" in res:
            baseline.append((corpus, form, case, "-", f"original fails: {res['error']}"))
            continue
        ok = {}
        for (name, op), r in res.items():
            if op is None and name.startswith("after"):
                ok[name] = exit_code(r.checks) == 0
                baseline.append((corpus, form, case, name, exit_code(r.checks)))
        for (name, op), r in sorted(res.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
            if op is None or not ok.get(name):
                continue
            detail = next((f"{c.label}: {c.detail}" for c in r.checks if c.status != "match"), "")
            rows.append((corpus, form, case, name, op, exit_code(r.checks), detail))
    return rows, baseline


def _rate(rows) -> tuple:
    counted = [r for r in rows if r[:5] not in EQUIVALENT]
    killed = [r for r in counted if r[5] == 1]
    return len(killed), len(counted)


def _equivalents(rows) -> str:
    return "\n".join(f"  equivalent (not counted): {'/'.join(r[:4])} {r[4]} (exit {r[5]}): {EQUIVALENT[r[:5]]}"
                     for r in rows if r[:5] in EQUIVALENT)


def _table(rows) -> str:
    lines = ["operator               | hand script | hand library | golden script | golden library"]
    for op in OPERATORS + NEW_OPERATORS:
        cells = []
        for corpus in ("hand", "golden"):
            for form in ("script", "library"):
                k, n = _rate([r for r in rows if r[0] == corpus and r[1] == form and r[4] == op])
                cells.append(f"{k}/{n}" if n else "-")
        lines.append(f"{op:<22} | " + " | ".join(f"{c:>11}" for c in cells))
    for label, ops in (("old operators", OPERATORS), ("new operators", NEW_OPERATORS)):
        cells = []
        for corpus in ("hand", "golden"):
            for form in ("script", "library"):
                k, n = _rate([r for r in rows if r[0] == corpus and r[1] == form and r[4] in ops])
                cells.append(f"{k}/{n}" if n else "-")
        lines.append(f"{label:<22} | " + " | ".join(f"{c:>11}" for c in cells))
    return "\n".join(lines)


@pytest.fixture(scope="module")
def mutation_rows():
    rows, baseline = _rows(verify_batch.mutation_results())
    print("\n" + _table(rows))
    print(_equivalents(rows))
    for b in baseline:
        if b[4] != 0:
            print(f"  baseline not a match, its mutants not counted: {b}")
    for r in rows:
        if r[5] != 1:
            print(f"  SURVIVED {r[0]}/{r[1]} {r[2]}/{r[3]} {r[4]} (exit {r[5]}) {r[6][:110]}")
    return rows, baseline


# ------------------------------------------------------------------ the operators themselves (no TensorFlow)
def test_mutation_operators_apply_and_change_the_code():
    text = open(os.path.join(verify_batch.DATA, "c13_mul_operator_override", "after.py")).read()
    assert "-(0.5 * dy * b), -(2.0 * dy * a)" in mutate(text, "negate")
    assert "2.0 * (0.5 * dy * b)" in mutate(text, "scale2")
    assert "return 2.0 * dy * a, 0.5 * dy * b" in mutate(text, "swap_grads")
    assert mutate(text, "drop_output_gradients") is None
    assert "return tf.constant(0.5, tf.float32) * dy * b, 2.0 * dy * a" in mutate(text, "literal_dtype")
    lam = "@tf.custom_gradient\ndef f(x):\n    return tf.identity(x), lambda dy: 3.0 * dy\n"
    assert "lambda dy: -(3.0 * dy)" in mutate(lam, "negate")
    nones = "@tf.custom_gradient\ndef f(x, n):\n    def grad(dy):\n        return dy, None\n    return x, grad\n"
    assert "return -(dy), None" in mutate(nones, "negate") and mutate(nones, "swap_grads") is None


TAPE = """import tensorflow as tf

def f(x, w):
    with tf.GradientTape() as tape:
        tape.watch(x)
        h = x * w
        terms.append(h)
        y = tf.reduce_sum(h)
    return tape.gradient(y, x)
"""


def test_tape_operators_move_one_statement():
    late_watch = mutate(TAPE, "watch_late")
    assert "        h = x * w\n        tape.watch(x)\n" in late_watch  # after the first use of x
    late_tape = mutate(TAPE, "tape_late")
    assert "    h = x * w\n    with tf.GradientTape() as tape:\n        tape.watch(x)\n        terms" in late_tape
    out = mutate(TAPE, "side_effect_out")
    assert "        y = tf.reduce_sum(h)\n    terms.append(h)\n    return" in out
    assert mutate("with tf.GradientTape() as t:\n    y = x\n", "watch_late") is None  # nothing watched


def test_get_attr_and_py_func_operators():
    before = open(os.path.join(verify_batch.DATA, "c32_get_attr_inline", "before.py")).read()
    after = open(os.path.join(verify_batch.DATA, "c32_get_attr_inline", "after.py")).read()
    out = mutate(after, "get_attr_value", before)
    assert "tf.where(x > 0.0, dy, 0.425 * dy)" in out and "alpha=0.25" in out  # not the forward op's own
    assert mutate(after, "get_attr_value") is None  # needs the original to know what get_attr gave
    c26 = open(os.path.join(verify_batch.DATA, "c26_py_func_inside_gradient", "after.py")).read()
    assert "d = tf.numpy_function(np_softsign_prime, [x], tf.float32, stateful=False)[0]" in \
        mutate(c26, "py_func_index0")
    assert mutate("y = tf.numpy_function(f, [x], [tf.float32])[0]\n", "py_func_index0") is None


def test_library_form_drops_the_script_or_has_none():
    c13 = open(os.path.join(verify_batch.DATA, "c13_mul_operator_override", "after.py")).read()
    lib = library_form(c13)
    assert "__main__" not in lib and "def f(a, b):" in lib and lib.endswith("+ 1.0\n")
    unguarded = "import tensorflow as tf\nx = tf.constant(1.0)\nwith tf.GradientTape() as t:\n    t.watch(x)\n"
    assert library_form(unguarded) is None


# ------------------------------------------------------------------ kill rates (TensorFlow)
@pytest.mark.slow
def test_every_hand_mutant_of_the_gradient_function_operators_is_killed(mutation_rows):
    rows, baseline = mutation_rows
    assert all(b[4] == 0 for b in baseline if b[0] == "hand" and b[1] == "script"), baseline
    old = [r for r in rows if r[0] == "hand" and r[4] in OPERATORS]
    assert len(old) >= 25
    survivors = [r for r in old if r[5] != 1 and r[:5] not in EQUIVALENT]
    assert not survivors, survivors
    for op in OPERATORS:
        assert any(r[4] == op for r in old), f"operator {op} never applied"


@pytest.mark.slow
@pytest.mark.parametrize("form", ["script", "library"])
def test_new_operators_kill_at_least_95_percent(mutation_rows, form):
    rows, _ = mutation_rows
    new = [r for r in rows if r[1] == form and r[4] in NEW_OPERATORS]
    killed, counted = _rate(new)
    assert counted >= 20, f"too few {form}-form mutants: {counted}"
    assert killed / counted >= 0.95, f"{form} form: {killed}/{counted}"
    for op in NEW_OPERATORS:
        assert any(r[4] == op for r in rows if r[1] == "script"), f"operator {op} never applied"


@pytest.mark.slow
def test_golden_fixture_mutants_of_the_gradient_function_operators(mutation_rows):
    rows, _ = mutation_rows
    killed, counted = _rate([r for r in rows if r[0] == "golden" and r[4] in OPERATORS])
    assert counted and killed / counted >= 0.9, f"{killed}/{counted}"
