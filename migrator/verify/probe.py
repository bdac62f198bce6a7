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


def cotangent(probe_id: str, index: int, shape, dtype) -> np.ndarray:
    """A fixed random cotangent: magnitudes in [0.5, 1.5], random signs."""
    rng = np.random.default_rng(zlib.crc32(f"{probe_id}:{index}".encode()))
    shape = tuple(int(s) for s in shape)
    mag = rng.uniform(0.5, 1.5, size=shape)
    sign = rng.choice(np.array([-1.0, 1.0]), size=shape)
    return np.asarray(mag * sign).astype(dtype)


def _short(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


def _is_tensor(x) -> bool:
    return hasattr(x, "dtype") and hasattr(x, "shape") and (hasattr(x, "op") or hasattr(x, "numpy")) \
        and not isinstance(x, np.ndarray)


def _prepare(tf, spec):
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
    fwd = [to_value(v) for v in sess.run(leaves)] if leaves else []
    targets = [(i, t) for i, t in enumerate(leaves) if _float_dtype(t)]
    grads = []
    if targets and sources:
        cots = [cotangent(spec["id"], i, fwd[i].shape, fwd[i].dtype) for i, _ in targets]
        ys = [t for _, t in targets]
        if side == "original":
            g = tf.gradients(ys, sources, grad_ys=[tf.constant(c) for c in cots])
        else:
            g = tape.gradient(ys, sources, output_gradients=[tf.constant(c) for c in cots])
        present = [x for x in g if x is not None]
        vals = iter(sess.run(present) if present else [])
        grads = [None if x is None else to_value(next(vals)) for x in g]
    return {"fwd": fwd, "grads": grads}


def _eager_probe(tf, fn, spec):
    from tensorflow.python.util import nest

    args, sources = _prepare(tf, spec)
    with tf.GradientTape(persistent=True) as tape:
        for s in sources:
            tape.watch(s)
        out = fn(*args, **spec["kwargs"])
    leaves = [x for x in nest.flatten(out) if _is_tensor(x)]
    fwd = [to_value(x) for x in leaves]
    targets = [(i, t) for i, t in enumerate(leaves) if _float_dtype(t)]
    grads = []
    cots = []
    if targets and sources:
        cots = [cotangent(spec["id"], i, fwd[i].shape, fwd[i].dtype) for i, _ in targets]
        g = tape.gradient([t for _, t in targets], sources, output_gradients=[tf.constant(c) for c in cots])
        grads = [to_value(x) for x in g]
    return {"fwd": fwd, "grads": grads}, cots


def _function_probe(tf, fn, spec, cots):
    """The same probe with the call and the tape inside a tf.function."""
    from tensorflow.python.util import nest

    args, sources = _prepare(tf, spec)
    src_pos = [i for i, a in enumerate(spec["args"]) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    kwargs = spec["kwargs"]

    def body(*src):
        call = list(args)
        for i, s in zip(src_pos, src):
            call[i] = s
        with tf.GradientTape(persistent=True) as tape:
            for s in src:
                tape.watch(s)
            out = fn(*call, **kwargs)
        leaves = [x for x in nest.flatten(out) if _is_tensor(x)]
        targets = [t for t in leaves if _float_dtype(t)]
        grads = []
        if targets and src and cots:
            g = tape.gradient(targets, list(src), output_gradients=[tf.constant(c) for c in cots])
            grads = [tf.zeros((0,), tf.float32) if x is None else x for x in g]
            flags = [x is None for x in g]
        else:
            flags = []
        return leaves, grads, flags

    flags_box = []

    def traced(*src):
        leaves, grads, flags = body(*src)
        flags_box[:] = flags
        return leaves, grads

    leaves, grads = tf.function(traced)(*sources)
    fwd = [to_value(x) for x in leaves]
    gv = [None if flag else to_value(x) for x, flag in zip(grads, flags_box)]
    return {"fwd": fwd, "grads": gv}


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
                value, cots = _eager_probe(tf, fn, spec)
                res.update(value)
                try:
                    res["tf_function"] = _function_probe(tf, fn, spec, cots)
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
