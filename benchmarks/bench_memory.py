#!/usr/bin/env python
"""Peak memory (RSS of tfgradmigrate and its worker processes, summed).

Two modes:

* ``real`` (default): a copy of the installed ``tensorflow`` + ``keras``
  Python sources (or ``--tree DIR``), run with ``--check``;
* ``synthetic``: generated trees of ``--files`` small files (default 10k and
  100k), one in ``--site-every`` with a ``tf.gradients`` site, to show that
  memory stays bounded as the file count grows (files are streamed; pass 1
  keeps names and positions, not parse trees).

RSS is sampled from /proc every 50 ms over the whole process tree (Linux).

    .venv/bin/python benchmarks/bench_memory.py
    .venv/bin/python benchmarks/bench_memory.py --mode synthetic --files 10000 100000
    .venv/bin/python benchmarks/bench_memory.py --mode synthetic --files 100000 --jobs 2
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _bench as B  # noqa: E402

PLAIN = "import math\n\n\ndef f{i}(x):\n    return math.sqrt(x) + {i}\n"
SITE = (
    "import tensorflow as tf\n\n\n"
    "def loss_grad{i}(x):\n"
    "    y = tf.reduce_sum(x * x)\n"
    "    return tf.gradients(y, x)[0]\n"
)


def synthetic_tree(n: int, site_every: int, dest: str) -> tuple:
    sites = 0
    per_dir = 1000
    for i in range(n):
        d = os.path.join(dest, f"pkg{i // per_dir:04d}")
        if i % per_dir == 0:
            os.makedirs(d, exist_ok=True)
        text = SITE.format(i=i) if site_every and i % site_every == 0 else PLAIN.format(i=i)
        sites += text is not None and "gradients" in text
        with open(os.path.join(d, f"m{i:06d}.py"), "w") as f:
            f.write(text)
    return n, sites


def measure(label: str, tree: str, jobs, runs: int):
    cmd = [B.tool("tfgradmigrate"), "--check", "-q"] + (["--jobs", str(jobs)] if jobs else []) + [tree]
    t = B.repeat(label, lambda: cmd, runs, sample_rss=True)
    return [label, B.fmt_s(t.min), B.fmt_mb(max(t.peak_rss)), t.note or f"exit {t.rcs[-1]}"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["real", "synthetic"], default="real")
    ap.add_argument("--tree", help="real mode: use this folder instead of copying the installed packages")
    ap.add_argument("--files", type=int, nargs="+", default=[10_000, 100_000], help="synthetic tree sizes")
    ap.add_argument("--site-every", type=int, default=1000, help="synthetic: one file in N has a site")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--runs", type=int, default=1)
    ns = ap.parse_args(argv)
    print(f"machine: {B.machine()}")
    rows = []
    if ns.mode == "real":
        tree = ns.tree
        if tree is None:
            tree = B.tmpdir("tfgm-mem-")
            sources = {k: B.package_dir(k) for k in ("tensorflow", "keras") if B.package_dir(k)}
            B.copy_py_tree(sources, tree)
        files, lines = B.count_tree(tree)
        rows.append(measure(f"--check on {files} files, {lines:,} lines", tree, ns.jobs, ns.runs))
    else:
        for n in ns.files:
            tree = B.tmpdir(f"tfgm-mem{n}-")
            _, sites = synthetic_tree(n, ns.site_every, tree)
            rows.append(measure(f"--check on {n:,} synthetic files ({sites} with sites)", tree, ns.jobs, ns.runs))
    print()
    print(B.table(rows, ["run" + (f" (--jobs {ns.jobs})" if ns.jobs else ""), "time (min)", "peak RSS (tree)", "note"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
