#!/usr/bin/env python
"""Start-up and pre-commit cost: ``tfgradmigrate --check`` on 1 file and on 20.

The files have no sites (the common pre-commit case).  Also reports the
interpreter's own start-up (``python -c pass``) as the floor, and checks that
importing the CLI loads neither TensorFlow nor the op table.

    .venv/bin/python benchmarks/bench_startup.py            # 10 runs each
    .venv/bin/python benchmarks/bench_startup.py --runs 30

Targets (issue 6): < 0.25 s for one file, < 0.5 s for 20 files.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _bench as B  # noqa: E402

PLAIN = '''\
"""A module with no gradient code: what pre-commit sees most of the time."""
import math

import numpy as np


def area(r):
    return math.pi * r * r


class Box:
    def __init__(self, w, h):
        self.w, self.h = w, h

    def volume(self, d):
        return np.prod([self.w, self.h, d])
'''

IMPORT_PROBE = (
    "import sys, migrator.cli, migrator.pipeline\n"
    "bad = [m for m in ('tensorflow', 'keras', 'numpy') if m in sys.modules]\n"
    "print('heavy modules imported by the CLI: ' + (', '.join(bad) or 'none'))\n"
    "print('op table loaded at import: ' + str('migrator.optable' in sys.modules and "
    "sys.modules['migrator.optable'].table.cache_info().currsize > 0))\n"
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--files", type=int, default=20)
    ns = ap.parse_args(argv)

    d = B.tmpdir("tfgm-startup-")
    one = os.path.join(d, "one", "plain.py")
    os.makedirs(os.path.dirname(one))
    with open(one, "w") as f:
        f.write(PLAIN)
    many_dir = os.path.join(d, "many")
    os.makedirs(many_dir)
    many = []
    for i in range(ns.files):
        p = os.path.join(many_dir, f"mod{i:02d}.py")
        with open(p, "w") as f:
            f.write(PLAIN.replace("Box", f"Box{i}"))
        many.append(p)
    tfgm = B.tool("tfgradmigrate")
    print(f"machine: {B.machine()}")
    probe = subprocess.run([sys.executable, "-c", IMPORT_PROBE], cwd=B.REPO, capture_output=True, text=True)
    print(probe.stdout.strip() or probe.stderr.strip()[-500:])

    results = [
        (B.repeat("python -c pass (floor)", lambda: [sys.executable, "-c", "pass"], ns.runs), None),
        (B.repeat("tfgradmigrate --version", lambda: [tfgm, "--version"], ns.runs), None),
        (B.repeat("tfgradmigrate --check, 1 file", lambda: [tfgm, "--check", "-q", one], ns.runs), 0.25),
        (B.repeat(f"tfgradmigrate --check, {ns.files} files (paths)",
                  lambda: [tfgm, "--check", "-q"] + many, ns.runs), 0.5),
        (B.repeat(f"tfgradmigrate --check, {ns.files} files (folder)",
                  lambda: [tfgm, "--check", "-q", many_dir], ns.runs), 0.5),
    ]
    rows = []
    ok = True
    for t, target in results:
        verdict = ""
        if target is not None:
            good = t.median < target
            ok &= good
            verdict = f"< {target} s: {'yes' if good else 'NO'}"
        rows.append([t.label, len(t.times), B.fmt_s(t.min), B.fmt_s(t.median),
                     B.fmt_s(statistics.median(t.cpu)), verdict, t.note or f"exit {t.rcs[-1]}"])
    print()
    print(B.table(rows, ["command", "runs", "min", "median", "cpu (median)", "target (median wall)", "note"]))
    print("cpu = user + sys seconds of the process and its children: a load-independent"
          " estimate of the wall time on an idle machine")
    print("targets met" if ok else "targets NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
