#!/usr/bin/env python
"""Rewrite throughput on a tree where every file has sites.

The tree is generated from ``fixtures/*/before.py``: each fixture is copied
``--copies`` times with its ``RegisterGradient`` names made unique per copy
(so copies do not collide in the run-wide registration index) and a varying
header.  Reports lines per second

* in-process, one core, per stage: ``ast`` index (pass 1), ``libcst`` parse,
  and the whole ``migrate_text`` (parse + analyse + rewrite + render);
* end to end through the CLI with ``--jobs 1`` and ``--jobs 2``: ``--check``
  (analyse, write nothing) and an in-place rewrite of a fresh copy.

    .venv/bin/python benchmarks/bench_rewrite.py                 # 20 copies, 3 runs
    .venv/bin/python benchmarks/bench_rewrite.py --copies 50 --runs 5
"""
from __future__ import annotations

import argparse
import ast
import glob
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _bench as B  # noqa: E402

_REG = re.compile(r"""RegisterGradient\(\s*(["'])([^"']+)\1""")


def fixture_sources() -> dict:
    out = {}
    for p in sorted(glob.glob(os.path.join(B.REPO, "fixtures", "*", "before.py"))):
        with open(p, encoding="utf-8") as f:
            out[os.path.basename(os.path.dirname(p))] = f.read()
    if not out:
        sys.exit("no fixtures/*/before.py found")
    return out


def vary(source: str, k: int) -> str:
    """Copy ``k`` of a fixture: unique gradient names, a different header."""
    names = {m.group(2) for m in _REG.finditer(source)}
    for n in sorted(names, key=len, reverse=True):
        source = re.sub(r"""(["'])%s\1""" % re.escape(n), lambda m: f"{m.group(1)}{n}_v{k}{m.group(1)}", source)
    return f"# generated copy {k} for bench_rewrite\n" + source


def make_tree(dest: str, copies: int) -> tuple:
    files = lines = 0
    for name, src in fixture_sources().items():
        for k in range(copies):
            d = os.path.join(dest, f"copy{k:03d}")
            os.makedirs(d, exist_ok=True)
            text = vary(src, k)
            with open(os.path.join(d, f"{name}.py"), "w", encoding="utf-8") as f:
                f.write(text)
            files += 1
            lines += text.count("\n")
    return files, lines


def in_process(tree: str, lines: int) -> list:
    """Per-stage rates in this process (one core)."""
    sys.path.insert(0, B.REPO)
    import libcst as cst

    from migrator import pipeline

    paths = sorted(glob.glob(os.path.join(tree, "*", "*.py")))
    texts = {}
    for p in paths:
        with open(p, encoding="utf-8") as f:
            texts[p] = f.read()
    rows = []

    t0 = time.perf_counter()
    for s in texts.values():
        ast.parse(s)
    rows.append(("ast.parse", time.perf_counter() - t0))

    t0 = time.perf_counter()
    index = pipeline.RunIndex()
    for p, s in texts.items():
        index.add_file(p, s)
    rows.append(("pass 1 index (ast + scan)", time.perf_counter() - t0))

    t0 = time.perf_counter()
    for s in texts.values():
        cst.parse_module(s)
    rows.append(("libcst.parse_module", time.perf_counter() - t0))

    # warm the plugin registry and the op table outside the timing
    first = next(iter(texts.items()))
    pipeline.migrate_text(first[1], first[0], index)
    changed = sites = 0
    t0 = time.perf_counter()
    for p, s in texts.items():
        new, found = pipeline.migrate_text(s, p, index)
        changed += new != s
        sites += len(found)
    rows.append((f"migrate_text (parse+analyse+rewrite; {changed}/{len(texts)} files changed, {sites} sites)",
                 time.perf_counter() - t0))
    return [(label, dt, lines / dt) for label, dt in rows]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", action="store_true")
    ns = ap.parse_args(argv)

    base = B.tmpdir("tfgm-rewrite-", ns.keep)
    tree = os.path.join(base, "tree")
    files, lines = make_tree(tree, ns.copies)
    print(f"machine: {B.machine()}")
    print(f"tree: {tree}: {files} files, {lines:,} lines ({len(fixture_sources())} fixtures x {ns.copies} copies)")

    print()
    print("in-process, one core:")
    rows = [[label, B.fmt_s(dt), f"{rate:,.0f}"] for label, dt, rate in in_process(tree, lines)]
    print(B.table(rows, ["stage", "time", "lines/s"]))

    tfgm = B.tool("tfgradmigrate")
    work = os.path.join(base, "work")

    def fresh_copy():
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(tree, work)

    results = []
    for jobs in (1, 2):
        results.append(B.repeat(f"--check --jobs {jobs}",
                                lambda j=jobs: [tfgm, "--check", "-q", "--jobs", str(j), tree], ns.runs))
        results.append(B.repeat(f"rewrite in place --jobs {jobs}",
                                lambda j=jobs: [tfgm, "-q", "--jobs", str(j), work], ns.runs, setup=fresh_copy))
    print()
    print("CLI, end to end (includes start-up):")
    rows = [[r.label, len(r.times), B.fmt_s(r.min), B.fmt_s(r.median), B.fmt_s(min(r.cpu)),
             f"{lines / r.min:,.0f}", r.note or f"exit {r.rcs[-1]}"] for r in results]
    print(B.table(rows, ["command", "runs", "min", "median", "cpu (min)", "lines/s (min)", "note"]))
    print("cpu = user + sys seconds of the command and its workers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
