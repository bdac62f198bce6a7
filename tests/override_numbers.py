"""Run override fixtures' probes under TF1 graph mode, TF2 eager and tf.function (subprocesses).

A fixture's before.py names its probes in comments::

    # probe: binarize([-2.0, -0.5, 0.3, 1.7])
    # probe: leaky([[1.0, -2.0]], 0.3)

Each argument that is a list becomes a float32 tensor (``("float64", [...])``
gives that dtype); anything else is passed as the Python value.  A probe
returns the forward value(s) and the gradient with respect to every tensor
argument, for a fixed random cotangent:

* ``v1``: the module imported under ``tf.compat.v1`` (v2 behaviour off),
  gradients by ``tf.gradients(out, args, grad_ys=cotangent)``;
* ``v1r``: the same with resource variables (a migrated file still used in TF1);
* ``v2``: the module under TF2, eagerly, gradients by a ``GradientTape``;
* ``fn``: the same step traced by ``tf.function``.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

PROBE = re.compile(r"^# (probe|unsafe-differs): (\w[\w.]*)\((.*)\)\s*$")

HARNESS = r"""
import ast, importlib.util, json, os, sys
import numpy as np
mode, jobs = sys.argv[1], json.loads(sys.argv[2])
if mode.startswith("v1"):
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
    if mode == "v1r":
        tf.enable_resource_variables()
    sys.modules["tensorflow"] = tf
else:
    import tensorflow as tf

def load(path, n):
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location("probed_%d" % n, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

def make(a):
    if isinstance(a, list):
        return tf.constant(np.asarray(a, np.float32))
    if isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], str):
        return tf.constant(np.asarray(a[1], a[0]))
    return a

def cot(i, shape, dtype):
    return np.random.default_rng(100 + i).uniform(0.5, 1.5, size=shape).astype(dtype)

def plain(v):
    return None if v is None else np.asarray(v, dtype=np.float64).tolist()

def target(mod, name):
    fn = mod
    for part in name.split("."):
        fn = getattr(fn, part)
    return fn

from tensorflow.python.framework import ops as _ops

def probe_v1(path, n, probes):
    results = []
    with tf.Graph().as_default():
        mod = load(path, n)
        for i, (name, argtext) in enumerate(probes):
            fn = target(mod, name)
            args = [make(a) for a in ast.literal_eval("[" + argtext + "]")]
            srcs = [a for a in args if tf.is_tensor(a)]
            flat = tf.nest.flatten(fn(*args))
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                vals = sess.run(flat)
                cts = [cot(i * 10 + k, np.shape(v), np.asarray(v).dtype) for k, v in enumerate(vals)]
                grads = tf.gradients(flat, srcs, grad_ys=cts)
                live = sess.run([g for g in grads if g is not None])
            it = iter(live)
            results.append((vals, [None if g is None else next(it) for g in grads]))
    return results

def probe_v2(path, n, probes):
    results = []
    mod = load(path, n)
    for i, (name, argtext) in enumerate(probes):
        fn = target(mod, name)
        args = [make(a) for a in ast.literal_eval("[" + argtext + "]")]
        srcs = [a for a in args if tf.is_tensor(a)]
        shapes = [(np.shape(v), np.asarray(v).dtype) for v in tf.nest.flatten(fn(*args))]
        cts = [tf.constant(cot(i * 10 + k, s, d)) for k, (s, d) in enumerate(shapes)]

        def step(*tensors):
            it = iter(tensors)
            call = [next(it) if tf.is_tensor(a) else a for a in args]
            with tf.GradientTape() as tape:
                for t in tensors:
                    tape.watch(t)
                flat = tf.nest.flatten(fn(*call))
            return flat, tape.gradient(flat, list(tensors), output_gradients=cts)
        if mode == "fn":
            step = tf.function(step)
        flat, grads = step(*srcs)
        results.append(([v.numpy() for v in flat], [None if g is None else g.numpy() for g in grads]))
    return results

out = {}
for n, (path, probes) in enumerate(jobs):
    registered = set(_ops._gradient_registry._registry)
    try:
        got = probe_v1(path, n, probes) if mode.startswith("v1") else probe_v2(path, n, probes)
        out[str(n)] = [{"fwd": [plain(v) for v in vals], "grads": [plain(g) for g in gvals]} for vals, gvals in got]
    except Exception as e:
        out[str(n)] = "ERROR %s: %s" % (type(e).__name__, str(e)[:300])
    for key in set(_ops._gradient_registry._registry) - registered:  # the next file may register it too
        del _ops._gradient_registry._registry[key]
print("RESULT " + json.dumps(out))
"""


def probes(path: str, kind: str = "probe") -> list[tuple[str, str]]:
    found = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            m = PROBE.match(line.strip())
            if m and m.group(1) == kind:
                found.append((m.group(2), m.group(3)))
    return found


def run(mode: str, jobs: list[tuple[str, list]]) -> list:
    """[probe results | "ERROR ..."] per job, for one mode, in one subprocess."""
    if not jobs:
        return []
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    p = subprocess.run([sys.executable, "-c", HARNESS, mode, json.dumps(jobs)], capture_output=True, text=True,
                       timeout=900, env=env)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            got = json.loads(line[len("RESULT "):])
            return [got[str(i)] for i in range(len(jobs))]
    raise AssertionError(p.stderr[-3000:])


def close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(map(close, a, b))
    return abs(a - b) <= 1e-6 + 1e-5 * abs(b)
