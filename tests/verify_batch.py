"""One batched verifier run over tests/verify_data, shared by the verify tests.

TensorFlow costs ~3 s per child process, so every original runs once for all
of its migrations: the correct ones (after*.py), the wrong ones (wrong*.py)
and the mutants of the correct ones (tests/verify_mutants.py).  The result is
cached for the whole pytest session.
"""
from __future__ import annotations

import functools
import glob
import os
import shutil
import tempfile

from verify_mutants import OPERATORS, mutate

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
        text = open(after, encoding="utf-8").read()
        if any(mutate(text, op) is not None for op in OPERATORS):  # only fixtures that yield mutants
            out.append(d)
    return out


def _variants(before: str, files: list, work: str, operators=None):
    """The migrations to verify against ``before``: the files and, for after*.py, their mutants.

    Returns (paths, keys) with keys (file name, operator or None).
    """
    variants, keys = [], []
    src_dir = os.path.dirname(before)
    for f in os.listdir(src_dir):  # siblings the migrations may import
        if f.endswith(".py") and f != "before.py" and not f.startswith(("after", "wrong")):
            shutil.copy(os.path.join(src_dir, f), os.path.join(work, f))
    for path in files:
        name = os.path.basename(path)
        variants.append(path)
        keys.append((name, None))
        if not name.startswith("after"):
            continue
        text = open(path, encoding="utf-8").read()
        for op in (OPERATORS if operators is None else operators):
            mutated = mutate(text, op)
            if mutated is None:
                continue
            mpath = os.path.join(work, f"{name[:-3]}__{op}.py")
            with open(mpath, "w", encoding="utf-8") as fh:
                fh.write(mutated)
            variants.append(mpath)
            keys.append((name, op))
    return variants, keys


def run_cases(cases: dict, shards: int = 2) -> dict:
    """{case: (before, [files])} -> {case: {(file, operator): PairResult} | {"error": msg}}, in one batch."""
    work = tempfile.mkdtemp(prefix="tfgm-verify-tests-")
    groups, keys = [], []
    for case, (before, files) in cases.items():
        cwork = os.path.join(work, case)
        os.makedirs(cwork)
        paths, k = _variants(before, files, cwork)
        groups.append((before, paths))
        keys.append((case, k))
    out = {}
    for (case, k), res in zip(keys, verify_groups(groups, shards=shards)):
        out[case] = {"error": str(res)} if isinstance(res, OriginalFails) else dict(zip(k, res))
    return out


@functools.cache
def hand_results() -> dict:
    """{case: {(file, operator): PairResult}} for tests/verify_data."""
    cases = {}
    for case in hand_cases():
        d = os.path.join(DATA, case)
        files = sorted(glob.glob(os.path.join(d, "after*.py"))) + sorted(glob.glob(os.path.join(d, "wrong*.py")))
        cases[case] = (os.path.join(d, "before.py"), files)
    return run_cases(cases)


@functools.cache
def golden_results() -> dict:
    """{case: {(file, operator): PairResult} | {"error": ...}} for fixtures/<case>/."""
    return run_cases({os.path.basename(d): (os.path.join(d, "before.py"), [os.path.join(d, "after.py")])
                      for d in golden_cases()})
