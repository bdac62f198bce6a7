"""Mutation test: the verifier must kill wrong variants of correct migrations.

Sources of correct migrations: every golden fixture fixtures/<case>/before.py +
after.py, and the hand migrations in tests/verify_data/<case>/after*.py.
Each correct migration is mutated (tests/verify_mutants.py: negate the custom
gradient, scale it by 2, drop ``output_gradients``, swap two returned
gradients); every mutant must be reported as a mismatch (exit 1).

The kill rate is printed (run with ``-s`` to see it).  For the hand
migrations every mutant must die, except the ones listed in EQUIVALENT with
the reason the inputs cannot show them.  Golden fixtures come from other
work; their survivors are printed and the kill rate must stay >= 75%.

Batched (tests/verify_batch.py): each original runs once for its correct
migrations and all their mutants.
"""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import verify_batch  # noqa: E402
from verify_mutants import OPERATORS, mutate  # noqa: E402

from migrator.verify.report import exit_code  # noqa: E402

#: (case, migrated file, operator) -> why no input can tell the mutant apart.
EQUIVALENT: dict = {}


def _rows(results: dict):
    """(case, file, operator, exit code, first non-match detail) per mutant; baselines."""
    rows, baseline = [], []
    for case, res in results.items():
        if "error" in res:
            baseline.append((case, "-", f"original fails: {res['error']}"))
            continue
        base_ok = {}
        for (name, op), r in res.items():
            if op is None and name.startswith("after"):
                code = exit_code(r.checks)
                base_ok[name] = code == 0
                baseline.append((case, name, code))
        for (name, op), r in res.items():
            if op is None or not base_ok.get(name):
                continue
            detail = next((f"{c.label}: {c.detail}" for c in r.checks if c.status != "match"), "")
            rows.append((case, name, op, exit_code(r.checks), detail))
    return rows, baseline


def _report(rows, origin):
    killed = [r for r in rows if r[3] == 1]
    rate = len(killed) / len(rows) if rows else 1.0
    print(f"\n[{origin}] mutation kill rate: {len(killed)}/{len(rows)} = {rate:.0%}")
    for r in rows:
        print(f"  {'KILLED ' if r[3] == 1 else 'SURVIVED'} {r[0]}/{r[1]} {r[2]} (exit {r[3]}) {r[4][:110]}")
    return killed, rate


def test_mutation_operators_apply_and_change_the_code():
    text = open(os.path.join(verify_batch.DATA, "c13_mul_operator_override", "after.py")).read()
    assert "-(0.5 * dy * b), -(2.0 * dy * a)" in mutate(text, "negate")
    assert "2.0 * (0.5 * dy * b)" in mutate(text, "scale2")
    assert "return 2.0 * dy * a, 0.5 * dy * b" in mutate(text, "swap_grads")
    assert mutate(text, "drop_output_gradients") is None
    lam = "@tf.custom_gradient\ndef f(x):\n    return tf.identity(x), lambda dy: 3.0 * dy\n"
    assert "lambda dy: -(3.0 * dy)" in mutate(lam, "negate")
    nones = "@tf.custom_gradient\ndef f(x, n):\n    def grad(dy):\n        return dy, None\n    return x, grad\n"
    assert "return -(dy), None" in mutate(nones, "negate") and mutate(nones, "swap_grads") is None


def test_every_hand_migration_mutant_is_killed():
    rows, baseline = _rows(verify_batch.hand_results())
    assert baseline and all(b[2] == 0 for b in baseline), baseline
    killed, rate = _report(rows, "hand")
    assert len(rows) >= 25
    survivors = [r for r in rows if r[3] != 1 and (r[0], r[1], r[2]) not in EQUIVALENT]
    assert not survivors, survivors
    for op in OPERATORS:
        assert any(r[2] == op for r in rows), f"operator {op} never applied"


def test_golden_fixture_mutants():
    if not verify_batch.golden_cases():
        pytest.skip("no golden fixtures yet")
    rows, baseline = _rows(verify_batch.golden_results())
    for b in baseline:
        if b[2] != 0:
            print(f"golden fixture {b[0]}/{b[1]} not verified as a match ({b[2]}): its mutants are skipped")
    killed, rate = _report(rows, "golden")
    if not rows:
        pytest.skip("no golden fixture verified as a match yet")
    assert rate >= 0.75
