"""Function-mode probes, run inside the child process.

A probe calls one function (or callable module-level object) of the
verified file with given inputs and records

* ``fwd``: the value of every tensor leaf of the result, and
* ``grads``: the VJP of the floating-point outputs with a fixed random
  cotangent, with respect to every floating-point array argument.

The original side takes the VJP with ``tf.gradients(ys, xs, grad_ys=c)`` in
a Session; the migrated side with ``GradientTape.gradient(ys, xs,
output_gradients=c)`` (in a Session in TF1 graph mode, eagerly and inside a
``tf.function`` in TF2 mode).
"""
from __future__ import annotations

import zlib

import numpy as np

from migrator.verify.record import to_value
from migrator.verify.seeding import SEEDER


def cotangent(tf, probe_id: str, index: int, y):
    """A fixed random cotangent for output ``y``: magnitudes in [0.5, 1.5], random signs.

    Built from stateless random ops inside the computation, so graph mode,
    eager mode and ``tf.function`` get the same values, and graph mode needs
    no extra run (a second run would redraw any random op of the function).
    """
    from tensorflow.python.ops import stateless_random_ops as srand

    seed = zlib.crc32(f"{probe_id}:{index}".encode()) % (1 << 30)
    shape = tf.shape(y)
    mag = srand.stateless_random_uniform(shape, [seed, 1], minval=0.5, maxval=1.5, dtype=tf.float32)
    sign = 2.0 * tf.floor(2.0 * srand.stateless_random_uniform(shape, [seed, 2], dtype=tf.float32)) - 1.0
    return tf.cast(mag * sign, y.dtype)


def _short(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


def _is_tensor(x) -> bool:
    return hasattr(x, "dtype") and hasattr(x, "shape") and (hasattr(x, "op") or hasattr(x, "numpy")) \
        and not isinstance(x, np.ndarray)


def _prepare(tf, spec):
    # every run of a probe (original, eager, tf.function) draws the same random numbers
    SEEDER.reset(zlib.crc32(spec["id"].encode()) % (1 << 30) + 1_000_000)
    args, sources = [], []
    for a in spec["args"]:
        if isinstance(a, np.ndarray):
            t = tf.constant(a)
            args.append(t)
            if a.dtype.kind == "f":
                sources.append(t)
        else:
            args.append(a)
    return args, sources


def _float_dtype(t) -> bool:
    try:
        return bool(t.dtype.is_floating)
    except AttributeError:
        return False


def _graph_probe(tf, fn, spec, side, sess_box):
    from tensorflow.python.util import nest

    args, sources = _prepare(tf, spec)
    before = set(id(v) for v in tf.global_variables())
    tape = None
    if side == "original":
        out = fn(*args, **spec["kwargs"])
    else:
        with tf.GradientTape(persistent=True) as tape:
            for s in sources:
                tape.watch(s)
            out = fn(*args, **spec["kwargs"])
    leaves = [x for x in nest.flatten(out) if _is_tensor(x)]
    if sess_box[0] is None:
        sess_box[0] = tf.Session()
    sess = sess_box[0]
    new_vars = [v for v in tf.global_variables() if id(v) not in before]
    if new_vars:
        sess.run(tf.variables_initializer(new_vars))
    targets = [t for t in leaves if _float_dtype(t)]
    g = []
    if targets and sources:
        cots = [cotangent(tf, spec["id"], i, t) for i, t in enumerate(targets)]
        if side == "original":
            g = tf.gradients(targets, sources, grad_ys=cots)
        else:
            g = tape.gradient(targets, sources, output_gradients=cots)
    present = [x for x in g if x is not None]
    # one run: forward values and gradients see the same random draws
    fwd, got = sess.run((leaves, present)) if (leaves or present) else ([], [])
    vals = iter(got)
    grads = [None if x is None else to_value(next(vals)) for x in g]
    return {"fwd": [to_value(v) for v in fwd], "grads": grads}


def _tape_probe(tf, fn, spec, args, sources):
    from tensorflow.python.util import nest

    with tf.GradientTape(persistent=True) as tape:
        for s in sources:
            tape.watch(s)
        out = fn(*args, **spec["kwargs"])
    leaves = [x for x in nest.flatten(out) if _is_tensor(x)]
    targets = [t for t in leaves if _float_dtype(t)]
    grads = []
    if targets and sources:
        cots = [cotangent(tf, spec["id"], i, t) for i, t in enumerate(targets)]
        grads = list(tape.gradient(targets, list(sources), output_gradients=cots))
    return leaves, grads


def _eager_probe(tf, fn, spec):
    args, sources = _prepare(tf, spec)
    leaves, grads = _tape_probe(tf, fn, spec, args, sources)
    return {"fwd": [to_value(x) for x in leaves], "grads": [to_value(x) for x in grads]}


def _function_probe(tf, fn, spec):
    """The same probe with the call and the tape inside a tf.function."""
    args, sources = _prepare(tf, spec)
    src_pos = [i for i, a in enumerate(spec["args"]) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    flags_box = []

    def traced(*src):
        call = list(args)
        for i, s in zip(src_pos, src):
            call[i] = s
        leaves, grads = _tape_probe(tf, fn, spec, call, list(src))
        flags_box[:] = [x is None for x in grads]
        return leaves, [tf.zeros((0,), tf.float32) if x is None else x for x in grads]

    leaves, grads = tf.function(traced)(*sources)
    return {"fwd": [to_value(x) for x in leaves],
            "grads": [None if flag else to_value(x) for x, flag in zip(grads, flags_box)]}


def run_probes(tf, namespace: dict, probes: list, mode: str, side: str) -> list:
    side_graph = mode != "tf2-eager"
    results = []
    sess_box = [None]
    for spec in probes:
        res = {"id": spec["id"], "ok": False, "error": None}
        fn = namespace.get(spec["target"])
        if fn is not None and spec.get("construct"):
            try:
                fn = fn()
            except Exception as exc:  # noqa: BLE001
                res["error"] = f"constructing {spec['target']}() raises {_short(exc)}"
                results.append(res)
                continue
        if fn is None or not callable(fn):
            res["error"] = f"{spec['target']} is not defined"
            results.append(res)
            continue
        try:
            if side_graph:
                res.update(_graph_probe(tf, fn, spec, side, sess_box))
            else:
                res.update(_eager_probe(tf, fn, spec))
                try:
                    res["tf_function"] = _function_probe(tf, fn, spec)
                except Exception as exc:  # noqa: BLE001
                    res["tf_function_error"] = _short(exc)
            res["ok"] = True
        except Exception as exc:  # noqa: BLE001
            res["error"] = _short(exc)
        results.append(res)
    if sess_box[0] is not None:
        try:
            sess_box[0].close()
        except Exception:  # noqa: BLE001
            pass
    return results
