#!/usr/bin/env python
"""Whole-tree scan: ``tfgradmigrate --check`` vs ``tf_upgrade_v2`` vs ``grep``.

The tree is a copy of the Python sources of the installed ``tensorflow`` and
``keras`` packages (thousands of real files).  Each tool is run as a
subprocess, so start-up is included.  Prints min and median over the runs and
the ratios, measured side by side in this one run.

    .venv/bin/python benchmarks/bench_scan.py                 # ops, then tensorflow + keras
    .venv/bin/python benchmarks/bench_scan.py --runs 5 --tf-upgrade-runs 1
    .venv/bin/python benchmarks/bench_scan.py --subset ops    # tensorflow/python/ops only
    .venv/bin/python benchmarks/bench_scan.py --tree DIR      # any existing tree

Targets (issue 13): >= 40x faster than tf_upgrade_v2 on both trees.  tf_upgrade_v2
stops at the first file it cannot parse; its time for the whole tree is then
extrapolated from its measured per-file rate, and the script says so.
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
    ap.add_argument("--subset", choices=["both", "all", "ops"], default="both",
                    help="all: tensorflow + keras; ops: tensorflow/python/ops (as in the issue); both (default)")
    ap.add_argument("--tree", help="use this existing folder instead of copying the installed packages")
    ap.add_argument("--keep", action="store_true", help="keep the temporary tree")
    ns = ap.parse_args(argv)
    print(f"machine: {B.machine()}")
    if ns.tree:
        summary = [bench(ns.tree, ns, os.path.basename(os.path.abspath(ns.tree)))]
    else:
        subsets = ["ops", "all"] if ns.subset == "both" else [ns.subset]
        labels = {"ops": "tensorflow/python/ops", "all": "tensorflow + keras"}
        summary = [bench(build_tree(sub, ns.keep), ns, labels[sub]) for sub in subsets]
    print()
    print("summary, measured in this one run:")
    for line in summary:
        print("  " + line)
    return 0


def bench(tree: str, ns, label: str) -> str:
    """Time the three tools on ``tree``; print the table; return a one-line summary."""
    files, lines = B.count_tree(tree)
    tfgm = B.tool("tfgradmigrate")
    grep = shutil.which("grep")

    results = []
    cmd = [tfgm, "--check", "-q"] + (["--jobs", str(ns.jobs)] if ns.jobs else []) + [tree]
    # one untimed warm-up so the page cache holds the tree for every tool alike
    B.run_cmd([grep, "-rlE", GREP_PATTERN, "--include=*.py", tree])
    results.append(B.repeat("tfgradmigrate --check" + (f" --jobs {ns.jobs}" if ns.jobs else ""),
                            lambda: cmd, ns.runs))
    results.append(B.repeat("grep -rlE", lambda: [grep, "-rlE", GREP_PATTERN, "--include=*.py", tree], ns.runs))
    upgrade, wrote = None, 0
    if ns.tf_upgrade_runs > 0:
        out_root = B.tmpdir("tfgm-upgrade-out-")
        counter = [0]

        def upgrade_cmd():
            counter[0] += 1
            out = os.path.join(out_root, f"run{counter[0]}")
            return [B.tool("tf_upgrade_v2"), "--intree", tree, "--outtree", out,
                    "--reportfile", os.path.join(out_root, f"report{counter[0]}.txt")]
        upgrade = B.repeat("tf_upgrade_v2 --intree", upgrade_cmd, ns.tf_upgrade_runs)
        wrote, _ = B.count_tree(os.path.join(out_root, "run1"))
        upgrade.note = (upgrade.note + "; " if upgrade.note else "") + f"wrote {wrote}/{files} files"
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
    line = f"{label}: {files} files; tfgradmigrate {B.fmt_s(tg.min)}, {tg.min / gr.min:.0f}x grep"
    print(f"tfgradmigrate / grep (min):           {tg.min / gr.min:6.1f}x")
    if upgrade is not None:
        ratio = upgrade.min / tg.min
        print(f"tf_upgrade_v2 / tfgradmigrate (min):  {ratio:6.1f}x   (target >= 40x)")
        line += f"; tf_upgrade_v2 {B.fmt_s(upgrade.min)} = {ratio:.1f}x"
        if wrote < files:
            full = upgrade.min / max(wrote, 1) * files
            print(f"  note: tf_upgrade_v2 crashed after {wrote}/{files} files (it stops at the first file it cannot"
                  f" parse); at its measured rate ({upgrade.min / max(wrote, 1):.3f} s a file) the whole tree would"
                  f" take about {full:.0f} s: {full / tg.min:.1f}x tfgradmigrate")
            line += f" (crashed after {wrote}/{files} files; extrapolated {full / tg.min:.1f}x)"
    return line


if __name__ == "__main__":
    sys.exit(main())
