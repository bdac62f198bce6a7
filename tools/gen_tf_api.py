#!/usr/bin/env python
"""Generate ``migrator/data/tf_api.json``: which TF1 names mean the same thing in TF2.

A registered gradient function becomes the ``grad_fn`` of a
``tf.custom_gradient``, which TF2 runs eagerly.  Its body must therefore be
code that exists in TF2 with the same meaning.  Migrated files still run
under TF1 semantics too (``tensorflow.compat.v1`` imported as ``tf``), so a
name is kept only when ``tf.compat.v1.X`` and ``tf.X`` are *the same object*.

For every public name of ``tf.compat.v1`` (in the namespaces walked) this
records one of:

* ``same``: ``tf.X`` (TF2) is the very object ``tf.compat.v1.X`` is;
* ``renamed``: ``tf.compat.v1.X`` is the very object of another TF2 name
  ``tf.Y`` that also exists in ``tf.compat.v1`` (``tf.log`` -> ``tf.math.log``),
  so the rename is exact in both;
* ``differs``: TF2 has a function of that name, but not the same object
  (``tf.where`` broadcasts in TF2, ``tf.reduce_sum`` lost ``keep_dims``);
* anything else is TF1-only (``tf.py_func``, ``tf.Print``, ``tf.placeholder``).

Names are stored without the ``tensorflow.`` prefix.

Usage::

    python tools/gen_tf_api.py            # writes migrator/data/tf_api.json
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import warnings
from typing import Dict

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.filterwarnings("ignore")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "migrator", "data", "tf_api.json")
NAMESPACES = ["", "math", "nn", "linalg", "bitwise", "image", "random", "dtypes", "debugging",
              "sparse", "strings", "signal", "errors", "nest"]


def names(root) -> Dict[str, object]:
    out: Dict[str, object] = {}
    for ns in NAMESPACES:
        mod = root
        for part in [p for p in ns.split(".") if p]:
            mod = getattr(mod, part, None)
            if mod is None:
                break
        if mod is None:
            continue
        for attr in sorted(dir(mod)):
            if attr.startswith("_"):
                continue
            try:
                obj = getattr(mod, attr)
            except Exception:  # noqa: BLE001
                continue
            if inspect.ismodule(obj):
                continue
            out[(ns + "." if ns else "") + attr] = obj
    return out


def build() -> dict:
    import tensorflow as tf

    v1, v2 = names(tf.compat.v1), names(tf)
    by_id: Dict[int, list] = {}
    for n, obj in v2.items():
        by_id.setdefault(id(obj), []).append(n)
    same, differs, renamed = [], [], {}
    for n, obj in sorted(v1.items()):
        if n in v2 and (v2[n] is obj or (isinstance(obj, tf.dtypes.DType) and v2[n] == obj)):
            same.append(n)
            continue
        if n in v2:
            differs.append(n)
            continue
        if not callable(obj) or isinstance(obj, type):
            continue  # small ints and strings are shared objects: identity says nothing
        targets = sorted((m for m in by_id.get(id(obj), []) if m in v1 and (v1[m] is obj)),
                         key=lambda m: (m.count("."), m))
        if targets:
            renamed[n] = targets[0]
    return {"tensorflow_version": tf.__version__, "same": same, "differs": differs, "renamed": renamed}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ns = ap.parse_args(argv)
    data = build()
    with open(ns.out, "w", encoding="ascii") as fh:
        fh.write(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n")
    print(f"wrote {ns.out}: {len(data['same'])} same, {len(data['differs'])} differ, {len(data['renamed'])} renamed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
