"""Batched verifier runs over tests/verify_data and the golden fixtures, shared by the verify tests.

TensorFlow costs seconds per interpreter, so one child runs every original
and one every migration (:func:`migrator.verify.engine.verify_groups`):
the correct migrations (after*.py), the wrong ones (wrong*.py) and, for the
mutation test, the mutants of the correct ones (tests/verify_mutants.py),
in script form (the file as it is) and in library form (its ``__main__``
block dropped: function mode only).  Results are cached for the session.
"""
from __future__ import annotations

import functools
import glob
import os
import shutil
import tempfile

from verify_mutants import NEW_OPERATORS, OPERATORS, library_form, mutate

from migrator.verify.engine import OriginalFails, verify_groups

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "verify_data")


def hand_cases():
    return sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(DATA, "*", "before.py")))


def golden_cases():
    out = []
    for before in sorted(glob.glob(os.path.join(ROOT, "fixtures", "*", "before.py"))):
        d = os.path.dirname(before)
        after = os.path.join(d, "after.py")
        if not os.path.exists(after):
            continue
        text, original = open(after, encoding="utf-8").read(), open(before, encoding="utf-8").read()
        if any(mutate(text, op, original) is not None for op in OPERATORS + NEW_OPERATORS):
            out.append(d)  # only fixtures that yield mutants
    return out


def _write(path: str, text: str) -> str:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def _group(before: str, files: list, work: str, operators: tuple, form: str):
    """(original path, migration paths, keys) for one case in one form; keys are (file, operator or None).

    None when the case has no such form.
    """
    src_dir = os.path.dirname(before)
    for f in os.listdir(src_dir):  # siblings the migrations may import
        if f.endswith(".py") and f != "before.py" and not f.startswith(("after", "wrong")):
            shutil.copy(os.path.join(src_dir, f), os.path.join(work, f))
    before_src = open(before, encoding="utf-8").read()
    shape = (lambda text: text) if form == "script" else library_form
    original = before if form == "script" else None
    if form == "library":
        lib = library_form(before_src)
        if lib is None:
            return None
        original = _write(os.path.join(work, "before.py"), lib)
    paths, keys = [], []
    for path in files:
        name = os.path.basename(path)
        text = open(path, encoding="utf-8").read()
        base = shape(text)
        if base is None:
            continue
        paths.append(path if form == "script" else _write(os.path.join(work, name), base))
        keys.append((name, None))
        if not name.startswith("after"):
            continue
        for op in operators:
            mutated = mutate(text, op, before_src)
            mutated = None if mutated is None else shape(mutated)
            if mutated is None or mutated == base:
                continue  # the operator does not apply, or only to the script part
            paths.append(_write(os.path.join(work, f"{name[:-3]}__{op}.py"), mutated))
            keys.append((name, op))
    return (original, paths, keys) if paths else None


def run_cases(cases: dict, operators: tuple = (), forms: tuple = ("script",), shards: int = 2) -> dict:
    """{case: (before, [files])} -> {(form, case): {(file, operator): PairResult} | {"error": msg}}, one batch."""
    work = tempfile.mkdtemp(prefix="tfgm-verify-tests-")
    groups, keys = [], []
    for form in forms:
        for case, (before, files) in cases.items():
            cwork = os.path.join(work, form, case)
            os.makedirs(cwork)
            g = _group(before, files, cwork, operators, form)
            if g is not None:
                groups.append(g[:2])
                keys.append(((form, case), g[2]))
    out = {}
    for (key, k), res in zip(keys, verify_groups(groups, shards=shards)):
        out[key] = {"error": str(res)} if isinstance(res, OriginalFails) else dict(zip(k, res))
    return out


def _hand_cases() -> dict:
    cases = {}
    for case in hand_cases():
        d = os.path.join(DATA, case)
        files = sorted(glob.glob(os.path.join(d, "after*.py"))) + sorted(glob.glob(os.path.join(d, "wrong*.py")))
        cases[case] = (os.path.join(d, "before.py"), files)
    return cases


def _golden_cases() -> dict:
    return {os.path.basename(d): (os.path.join(d, "before.py"), [os.path.join(d, "after.py")])
            for d in golden_cases()}


@functools.cache
def hand_results() -> dict:
    """{case: {(file, None): PairResult}} for tests/verify_data: correct and wrong migrations, script form."""
    return {case: res for (_form, case), res in run_cases(_hand_cases()).items()}


@functools.cache
def mutation_results() -> dict:
    """{(corpus, form, case): {(file, operator): PairResult} | {"error": ...}}, every operator, both forms."""
    ops = OPERATORS + NEW_OPERATORS
    out = {}
    for corpus, cases in (("hand", _hand_cases()), ("golden", _golden_cases())):
        res = run_cases(cases, ops, forms=("script", "library"))
        out.update({(corpus, form, case): r for (form, case), r in res.items()})
    return out
