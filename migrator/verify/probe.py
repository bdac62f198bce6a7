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

from migrator.verify import argtree
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


def _materialize(tf, spec):
    """(args, kwargs, sources, template): tensors and variables built from the spec's argument trees.

    ``template`` rebuilds (args, kwargs) from a new list of tensor sources
    (inside a ``tf.function`` the sources are its inputs; variables are
    captured as they are).
    """
    # every run of a probe (original, eager, tf.function) draws the same random numbers
    SEEDER.reset(zlib.crc32(spec["id"].encode()) % (1 << 30) + 1_000_000)
    tree = (list(spec["args"]), dict(spec["kwargs"]))
    leaves = argtree.flatten(tree)
    built, sources, tensor_pos = [], [], []
    for i, x in enumerate(leaves):
        if isinstance(x, argtree.Tensor):
            t = tf.constant(x.value)
            if x.value.dtype.kind == "f":
                sources.append(t)
                tensor_pos.append(i)
            built.append(t)
        elif isinstance(x, argtree.Var):
            v = tf.Variable(x.value, trainable=x.trainable)
            if x.value.dtype.kind == "f":
                sources.append(v)
            built.append(v)
        elif isinstance(x, argtree.Numpy):
            built.append(x.value.copy())
        else:
            built.append(x)
    args, kwargs = argtree.rebuild(tree, built)

    def template(new_tensors):
        leaves2 = list(built)
        for pos, t in zip(tensor_pos, new_tensors):
            leaves2[pos] = t
        return argtree.rebuild(tree, leaves2)

    return args, kwargs, sources, template


def _float_dtype(t) -> bool:
    try:
        return bool(t.dtype.is_floating)
    except AttributeError:
        return False


def _graph_probe(tf, fn, spec, side, sess_box):
    from tensorflow.python.util import nest

    before = set(id(v) for v in tf.global_variables())
    args, kwargs, sources, _ = _materialize(tf, spec)
    tape = None
    if side == "original":
        out = fn(*args, **kwargs)
    else:
        with tf.GradientTape(persistent=True) as tape:
            for s in sources:
                tape.watch(s)
            out = fn(*args, **kwargs)
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


def _tape_probe(tf, fn, spec, args, kwargs, sources):
    from tensorflow.python.util import nest

    with tf.GradientTape(persistent=True) as tape:
        for s in sources:
            tape.watch(s)
        out = fn(*args, **kwargs)
    leaves = [x for x in nest.flatten(out) if _is_tensor(x)]
    targets = [t for t in leaves if _float_dtype(t)]
    grads = []
    if targets and sources:
        cots = [cotangent(tf, spec["id"], i, t) for i, t in enumerate(targets)]
        grads = list(tape.gradient(targets, list(sources), output_gradients=cots))
    return leaves, grads


def _eager_probe(tf, fn, spec):
    args, kwargs, sources, _ = _materialize(tf, spec)
    leaves, grads = _tape_probe(tf, fn, spec, args, kwargs, sources)
    return {"fwd": [to_value(x) for x in leaves], "grads": [to_value(x) for x in grads]}


def _function_probe(tf, fn, spec):
    """The same probe with the call and the tape inside a tf.function."""
    args, kwargs, sources, template = _materialize(tf, spec)
    tensors = [s for s in sources if not hasattr(s, "assign")]
    variables = [s for s in sources if hasattr(s, "assign")]
    flags_box = []

    def traced(*inputs):
        call_args, call_kwargs = template(inputs)
        leaves, grads = _tape_probe(tf, fn, spec, call_args, call_kwargs, list(inputs) + variables)
        flags_box[:] = [x is None for x in grads]
        return leaves, [tf.zeros((0,), tf.float32) if x is None else x for x in grads]

    leaves, grads = tf.function(traced)(*tensors)
    grads = [None if flag else to_value(x) for x, flag in zip(grads, flags_box)]
    # sources were [tensors..., variables...] in the call; put them back in spec order
    order = [i for i, s in enumerate(sources) if not hasattr(s, "assign")] + \
            [i for i, s in enumerate(sources) if hasattr(s, "assign")]
    ordered = [None] * len(grads)
    for k, i in enumerate(order[:len(grads)]):
        ordered[i] = grads[k]
    return {"fwd": [to_value(x) for x in leaves], "grads": ordered}


def _error(exc: BaseException, path: str) -> dict:
    from migrator.verify.loader import user_lines

    lines = user_lines(exc.__traceback__, path)
    return {"error": _short(exc), "error_line": lines[-1] if lines else None}


def run_probes(tf, namespace: dict, probes: list, mode: str, side: str, path: str) -> list:
    """Call each probe; graph mode in a Session, TF2 eagerly and again inside a tf.function."""
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
                res.update(_error(exc, path))
                res["error"] = f"constructing {spec['target']}() raises {res['error']}"
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
                    err = _error(exc, path)
                    res["tf_function_error"], res["tf_function_error_line"] = err["error"], err["error_line"]
            res["ok"] = True
        except Exception as exc:  # noqa: BLE001
            res.update(_error(exc, path))
        results.append(res)
    if sess_box[0] is not None:
        try:
            sess_box[0].close()
        except Exception:  # noqa: BLE001
            pass
    return results
