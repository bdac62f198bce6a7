#!/usr/bin/env python
"""Verification cost: ``tfgradmigrate verify OLD NEW`` against just running the two scripts.

For each case (default: the acceptance cases beside this repository that the
tool migrates), the case is copied and migrated, then timed:

* scripts: the original under TF1 semantics, then the migrated file under TF1
  semantics with resource variables (what the acceptance checker runs), one
  after the other;
* verify: ``tfgradmigrate verify original migrated`` (both sides, script and
  function mode, all checks of the file).

    .venv/bin/python benchmarks/bench_verify.py            # 3 runs each
    .venv/bin/python benchmarks/bench_verify.py --cases DIR --runs 5

Target (issue 6): verify costs at most 1.5x running the two scripts.
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _bench as B  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN_V1 = """
import os, runpy, sys
import tensorflow.compat.v1 as v1
v1.disable_v2_behavior()
if sys.argv[2] == "rv":
    v1.enable_resource_variables()
sys.modules["tensorflow"] = v1
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[1])))
runpy.run_path(sys.argv[1], run_name="__main__")
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=os.path.join(ROOT, "..", "shared", "acceptance", "cases"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    tool = B.tool("tfgradmigrate")
    work = B.tmpdir("tfgm-bench-verify-", args.keep)
    print(B.machine())
    rows, ratios = [], []
    for src in sorted(glob.glob(os.path.join(args.cases, "*.py"))):
        name = os.path.splitext(os.path.basename(src))[0]
        old, new = os.path.join(work, name + "_old.py"), os.path.join(work, name + "_new.py")
        shutil.copyfile(src, old)
        shutil.copyfile(src, new)
        subprocess.run([tool, "-q", new], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(old, "rb") as a, open(new, "rb") as b:
            if a.read() == b.read():
                continue  # not migrated (manual or nothing to do): nothing to verify
        py = sys.executable

        def scripts(old=old, new=new):
            return ["bash", "-c", f"{py} -c '{RUN_V1}' {old} plain >/dev/null 2>&1; {py} -c '{RUN_V1}' {new} rv >/dev/null 2>&1"]

        t_scripts = B.repeat("scripts", scripts, args.runs)
        t_verify = B.repeat("verify", lambda old=old, new=new: [tool, "verify", old, new], args.runs)
        ratio = t_verify.median / t_scripts.median
        ratios.append(ratio)
        note = t_verify.note or ("" if set(t_verify.rcs) == {0} else f"verify exit {sorted(set(t_verify.rcs))}")
        rows.append([name, B.fmt_s(t_scripts.median), B.fmt_s(t_verify.median), f"{ratio:.2f}x", note])
    print(B.table(rows, ["case", "two scripts (median)", "verify (median)", "verify / scripts", "note"]))
    if ratios:
        med = statistics.median(ratios)
        print(f"\nmedian verify / scripts: {med:.2f}x  (target <= 1.5x): {'met' if med <= 1.5 else 'NOT met'}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
