#!/usr/bin/env python
"""Whole-tree scan: ``tfgradmigrate --check`` vs ``tf_upgrade_v2`` vs ``grep``.

The tree is a copy of the Python sources of the installed ``tensorflow`` and
``keras`` packages (thousands of real files).  Each tool is run as a
subprocess, so start-up is included.  Prints min and median over the runs and
the ratios, measured side by side in this one run.

    .venv/bin/python benchmarks/bench_scan.py                 # 3 runs each
    .venv/bin/python benchmarks/bench_scan.py --runs 5 --tf-upgrade-runs 1
    .venv/bin/python benchmarks/bench_scan.py --subset ops    # tensorflow/python/ops only
    .venv/bin/python benchmarks/bench_scan.py --tree DIR      # any existing tree

Targets (issue 6): >= 20x faster than tf_upgrade_v2, within 3x of grep.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _bench as B  # noqa: E402

GREP_PATTERN = r"gradient_override_map|RegisterGradient|gradients\(|parallel_for|py_func"


def build_tree(subset: str, keep: bool) -> str:
    tf_dir = B.package_dir("tensorflow")
    keras_dir = B.package_dir("keras")
    if tf_dir is None:
        sys.exit("tensorflow is not installed in this interpreter; pass --tree DIR")
    dest = B.tmpdir("tfgm-scan-", keep)
    if subset == "ops":
        sources = {"tensorflow_ops": os.path.join(tf_dir, "python", "ops")}
    else:
        sources = {"tensorflow": tf_dir}
        if keras_dir:
            sources["keras"] = keras_dir
    files, lines = B.copy_py_tree(sources, dest)
    print(f"tree: {dest} ({', '.join(sources)}): {files} files, {lines} lines")
    return dest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="runs of tfgradmigrate and grep (default 3)")
    ap.add_argument("--tf-upgrade-runs", type=int, default=1,
                    help="runs of tf_upgrade_v2 (slow: ~2 min per run on the full tree; 0 skips it)")
    ap.add_argument("--jobs", type=int, default=None, help="tfgradmigrate --jobs (default: its own default)")
    ap.add_argument("--subset", choices=["all", "ops"], default="all",
                    help="all: tensorflow + keras; ops: tensorflow/python/ops (as in the issue)")
    ap.add_argument("--tree", help="use this existing folder instead of copying the installed packages")
    ap.add_argument("--keep", action="store_true", help="keep the temporary tree")
    ns = ap.parse_args(argv)

    tree = ns.tree or build_tree(ns.subset, ns.keep)
    files, lines = B.count_tree(tree)
    tfgm = B.tool("tfgradmigrate")
    grep = shutil.which("grep")
    print(f"machine: {B.machine()}")

    results = []
    cmd = [tfgm, "--check", "-q"] + (["--jobs", str(ns.jobs)] if ns.jobs else []) + [tree]
    # one untimed warm-up so the page cache holds the tree for every tool alike
    B.run_cmd([grep, "-rlE", GREP_PATTERN, "--include=*.py", tree])
    results.append(B.repeat("tfgradmigrate --check" + (f" --jobs {ns.jobs}" if ns.jobs else ""),
                            lambda: cmd, ns.runs))
    results.append(B.repeat("grep -rlE", lambda: [grep, "-rlE", GREP_PATTERN, "--include=*.py", tree], ns.runs))
    upgrade = None
    if ns.tf_upgrade_runs > 0:
        out_root = B.tmpdir("tfgm-upgrade-out-")
        counter = [0]

        def upgrade_cmd():
            counter[0] += 1
            out = os.path.join(out_root, f"run{counter[0]}")
            return [B.tool("tf_upgrade_v2"), "--intree", tree, "--outtree", out,
                    "--reportfile", os.path.join(out_root, f"report{counter[0]}.txt")]
        upgrade = B.repeat("tf_upgrade_v2 --intree", upgrade_cmd, ns.tf_upgrade_runs)
        done, _ = B.count_tree(os.path.join(out_root, "run1"))
        upgrade.note = (upgrade.note + "; " if upgrade.note else "") + f"wrote {done}/{files} files"
        results.append(upgrade)

    tg, gr = results[0], results[1]
    rows = []
    for r in results:
        rows.append([r.label, len(r.times), B.fmt_s(r.min), B.fmt_s(r.median), B.fmt_s(min(r.cpu)),
                     f"{lines / r.min:,.0f}", f"{r.min / gr.min:.1f}x", r.note or f"exit {r.rcs[-1]}"])
    print()
    print(f"{files} files, {lines:,} lines")
    print(B.table(rows, ["command", "runs", "min", "median", "cpu (min)", "lines/s (min)", "vs grep", "note"]))
    print("cpu = user + sys seconds of the command and its children (all workers)")
    print()
    print(f"tfgradmigrate / grep (min):           {tg.min / gr.min:6.1f}x   (target <= 3x)")
    if upgrade is not None:
        print(f"tf_upgrade_v2 / tfgradmigrate (min):  {upgrade.min / tg.min:6.1f}x   (target >= 20x)")
        if "wrote" in upgrade.note and f"{files}/{files}" not in upgrade.note:
            print("  note: tf_upgrade_v2 did not finish the tree (it stops at the first file it cannot"
                  " parse), so its time is a lower bound")
    ok = tg.min / gr.min <= 3 and (upgrade is None or upgrade.min / tg.min >= 20)
    print("targets met" if ok else "targets NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
