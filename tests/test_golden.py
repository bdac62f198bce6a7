"""Golden fixtures: fixtures/<case>/before.py -> after.py, checked both ways.

The rewrite of before.py must equal after.py, and the rewrite of after.py must
be after.py itself.  Each run goes through the two-pass runner on a scratch
copy of the case folder (other .py files in the folder take part in the run,
as helper modules would), and compares bytes.
"""
from __future__ import annotations

import glob
import os
import shutil

import pytest

from migrator import runner

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = sorted(os.path.dirname(p) for p in glob.glob(os.path.join(ROOT, "fixtures", "*", "before.py")))


def rewrite(case_dir: str, name: str, scratch: str) -> bytes:
    """Bytes of ``name`` after a run over a copy of the case without the other side."""
    other = "after.py" if name == "before.py" else "before.py"
    dst = os.path.join(scratch, os.path.basename(case_dir))
    shutil.copytree(case_dir, dst, ignore=shutil.ignore_patterns(other, "__pycache__"))
    paths = sorted(os.path.join(dst, f) for f in os.listdir(dst) if f.endswith(".py"))
    result = runner.run(paths, runner.RunOptions(jobs=1))
    errors = [r.error for r in result.results if r.error]
    assert not errors, errors
    with open(os.path.join(dst, name), "rb") as fh:
        return fh.read()


def read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


@pytest.mark.parametrize("case", CASES, ids=[os.path.basename(c) for c in CASES])
def test_before_becomes_after(case, tmp_path):
    got = rewrite(case, "before.py", str(tmp_path))
    want = read(os.path.join(case, "after.py"))
    assert got.decode("utf-8", "replace") == want.decode("utf-8", "replace")  # readable diff first
    assert got == want


@pytest.mark.parametrize("case", CASES, ids=[os.path.basename(c) for c in CASES])
def test_after_is_a_fixed_point(case, tmp_path):
    after = read(os.path.join(case, "after.py"))
    assert rewrite(case, "after.py", str(tmp_path)) == after
