"""Script-mode instrumentation, used inside the child process only.

:class:`Recorder` wraps the gradient entry points (``tf.gradients``,
``tf.hessians``, the pfor ``jacobian``/``batch_jacobian`` helpers and
``GradientTape.gradient``/``jacobian``/``batch_jacobian``) and
``Session.run``/``Session.close``.

* Every outermost call of a gradient entry point made (directly or through
  helpers) from the verified file becomes one *record*, in order of
  evaluation, with the line of that file that made the call.
* In eager mode the returned values are concrete and are captured at once.
* In graph mode they are symbolic.  Whenever ``Session.run`` fetches
  something that is, or depends on, a recorded gradient tensor, that tensor
  is added to the same run and its value is captured (same feeds).  When a
  session closes, still-uncaptured gradients of its graph are evaluated in
  it; at the end, leftovers are evaluated in the last open session, or in a
  fresh one when no session was ever used on that graph.
* Inside a ``tf.function`` a gradient is symbolic too; a stateful
  ``numpy_function`` side channel captures its value when the function runs.

Which calls count is decided by ``where(filename)``: the verified file in
file mode, any file of the tree in ``--run`` mode.  Besides gradients, other
tensors can be handed in for capture (``watch_value``): the arguments a
probed function received, evaluated with the program's own feeds.
"""
from __future__ import annotations

import sys

import numpy as np

MAX_CAPTURES = 3


def rebind_everywhere(replacements: dict, prefixes: tuple) -> None:
    """In every loaded module under ``prefixes``, swap each attribute that is a
    replaced object (``{id(old): (old, new)}``) for its replacement."""
    for mod in list(sys.modules.values()):
        name = getattr(mod, "__name__", "") or ""
        if not name.startswith(prefixes):
            continue
        d = getattr(mod, "__dict__", None)
        if not isinstance(d, dict):
            continue
        for attr, val in list(d.items()):
            hit = replacements.get(id(val))
            if hit is not None and hit[0] is val:
                d[attr] = hit[1]


def to_value(v):
    """A fetched/eager value as numpy (IndexedSlices made dense); None stays None."""
    if v is None:
        return None
    if hasattr(v, "values") and hasattr(v, "indices") and hasattr(v, "dense_shape"):
        values = np.asarray(to_value(v.values))
        indices = np.asarray(to_value(v.indices)).astype(np.int64)
        shape = v.dense_shape
        shape = tuple(int(s) for s in np.asarray(to_value(shape))) if shape is not None else (
            int(indices.max()) + 1 if indices.size else 0,) + values.shape[1:]
        dense = np.zeros(shape, dtype=values.dtype)
        np.add.at(dense, indices, values)
        return dense
    if hasattr(v, "numpy"):
        v = v.numpy()
    return np.array(v, copy=True)


class _Component:
    __slots__ = ("leaf", "none", "captures", "reason", "graph")

    def __init__(self, leaf, none, graph):
        self.leaf = leaf
        self.none = none
        self.captures = []
        self.reason = ""
        self.graph = graph


class Recorder:
    """``where(filename)`` returns a key for files whose calls are recorded (None: not ours)."""

    def __init__(self, tf, where):
        self.tf = tf
        self.where = where
        self.enabled = True
        self.context = None  # callable: a label for the current test (``--run`` mode)
        self.depth = 0
        self.in_run = False
        self.records = []
        self.sessions = []  # sessions seen, in order of first use
        self.extra = []  # _Component: other tensors to capture (probed functions' arguments)
        self._ancestor_cache = {}
        self._orig_run = None

    def reset(self, where) -> None:
        """Start over for another file run in the same process (batched verification)."""
        self.where = where
        self.records, self.sessions, self.extra = [], [], []
        self._ancestor_cache = {}

    # ------------------------------------------------------------ installing
    def install(self) -> None:
        from tensorflow.python.eager import backprop
        from tensorflow.python.ops import gradients_impl

        targets = [
            (gradients_impl, "gradients", "tf.gradients"),
            (gradients_impl, "gradients_v2", "tf.gradients"),
            (gradients_impl, "hessians", "tf.hessians"),
            (gradients_impl, "HessiansV2", "tf.hessians"),
        ]
        try:
            from tensorflow.python.ops.parallel_for import gradients as pfor_gradients

            targets += [
                (pfor_gradients, "jacobian", "pfor.jacobian"),
                (pfor_gradients, "batch_jacobian", "pfor.batch_jacobian"),
            ]
        except ImportError:  # pragma: no cover - TF without pfor
            pass
        replacements = {}
        for mod, name, label in targets:
            fn = getattr(mod, name, None)
            if fn is None or id(fn) in replacements:
                continue
            replacements[id(fn)] = (fn, self._wrap(fn, label))
        # Replace every public alias (tf.gradients, tf.compat.v1.gradients, ...).
        rebind_everywhere(replacements, ("tensorflow", "tf_keras", "keras"))
        for meth, label in (("gradient", "GradientTape.gradient"), ("jacobian", "GradientTape.jacobian"),
                            ("batch_jacobian", "GradientTape.batch_jacobian")):
            fn = getattr(backprop.GradientTape, meth)
            setattr(backprop.GradientTape, meth, self._wrap(fn, label))
        # Sessions exist in every mode: TF2 code may still build a tf.Graph and run it.
        from tensorflow.python.client import session as session_lib

        base = session_lib.BaseSession
        orig_run, orig_close = base.run, base.close
        rec = self

        def run(sess, fetches, feed_dict=None, options=None, run_metadata=None):
            return rec._session_run(orig_run, sess, fetches, feed_dict, options, run_metadata)

        def close(sess):
            if rec.enabled and not getattr(sess, "_closed", True):
                try:
                    rec._evaluate_pending(orig_run, sess)
                except Exception:  # noqa: BLE001 - never break the user's close()
                    pass
            return orig_close(sess)

        base.run = run
        base.close = close
        self._orig_run = orig_run

    def _user_site(self):
        """(file key, line) of the innermost frame in a recorded file, or None."""
        f = sys._getframe(2)
        while f is not None:
            key = self.where(f.f_code.co_filename)
            if key is not None:
                return key, f.f_lineno
            f = f.f_back
        return None

    def _wrap(self, fn, label):
        rec = self

        def wrapper(*args, **kwargs):
            if not rec.enabled or rec.depth:
                return fn(*args, **kwargs)
            site = rec._user_site()
            if site is None:
                return fn(*args, **kwargs)
            rec.depth += 1
            try:
                out = fn(*args, **kwargs)
            finally:
                rec.depth -= 1
            try:
                rec._add(label, site, out)
            except Exception:  # noqa: BLE001 - recording must never change behaviour
                pass
            return out

        wrapper.__wrapped__ = fn
        wrapper.__name__ = getattr(fn, "__name__", "wrapper")
        wrapper.__doc__ = getattr(fn, "__doc__", None)
        return wrapper

    # ------------------------------------------------------------- recording
    def _component(self, leaf):
        """A capture slot for one value: eager values at once, symbolic ones later."""
        from tensorflow.python.framework import ops

        if leaf is None:
            return _Component(None, True, None)
        comp = _Component(leaf, False, None)
        inner = leaf.values if hasattr(leaf, "indices") and hasattr(leaf, "values") else leaf
        if isinstance(inner, ops.EagerTensor):
            comp.captures.append(to_value(leaf))
            comp.leaf = None
            return comp
        graph = getattr(inner, "graph", None)
        if graph is not None and getattr(graph, "building_function", False):
            self._side_channel(comp)  # inside a tf.function: captured when it runs
        else:
            comp.graph = graph
        return comp

    def _add(self, label, site, out):
        from tensorflow.python.util import nest

        comps = [self._component(leaf) for leaf in nest.flatten(out)]
        record = {"kind": label, "file": site[0], "line": site[1], "components": comps, "seq": len(self.records)}
        if self.context is not None:
            record["context"] = self.context()
        self.records.append(record)

    def watch_value(self, value):
        """Capture ``value`` (a tensor or variable) like a gradient; returns its slot."""
        comp = self._component(value)
        self.extra.append(comp)
        return comp

    def _side_channel(self, comp):
        """Capture a symbolic gradient inside a tf.function when it runs."""
        tf = self.tf
        leaf = comp.leaf
        inner = leaf.values if hasattr(leaf, "indices") else leaf

        def grab(*vals):
            if len(comp.captures) < MAX_CAPTURES:
                if hasattr(leaf, "indices"):
                    v, idx = vals[0], vals[1]
                    shape = tuple(int(s) for s in vals[2]) if len(vals) > 2 else None
                    dense = np.zeros(shape or ((int(idx.max()) + 1 if idx.size else 0),) + v.shape[1:], v.dtype)
                    np.add.at(dense, idx.astype(np.int64), v)
                    comp.captures.append(dense)
                else:
                    comp.captures.append(np.array(vals[0], copy=True))
            return np.zeros((), np.float32)

        try:
            if hasattr(leaf, "indices"):
                parts = [leaf.values, leaf.indices] + ([leaf.dense_shape] if leaf.dense_shape is not None else [])
            else:
                parts = [inner]
            tf.numpy_function(grab, parts, tf.float32, stateful=True)
            comp.leaf = None
        except Exception as exc:  # noqa: BLE001
            comp.reason = f"symbolic inside tf.function ({type(exc).__name__})"

    # ---------------------------------------------------------- graph fetches
    def _fetch_ops(self, sess, fetches):
        from tensorflow.python.util import nest

        ops_ = []
        for leaf in nest.flatten(fetches):
            try:
                if isinstance(leaf, (str, bytes)):
                    leaf = sess.graph.as_graph_element(leaf)
                if hasattr(leaf, "indices") and hasattr(leaf, "values"):
                    ops_ += [leaf.values.op, leaf.indices.op]
                    continue
                op = leaf if hasattr(leaf, "node_def") and hasattr(leaf, "inputs") else getattr(leaf, "op", None)
                if op is not None:
                    ops_.append(op)
            except Exception:  # noqa: BLE001
                continue
        return ops_

    def _ancestors(self, sess, fetches):
        roots = self._fetch_ops(sess, fetches)
        key = (id(sess.graph), tuple(sorted(op.name for op in roots)))
        hit = self._ancestor_cache.get(key)
        if hit is not None:
            return hit
        seen = set()
        stack = list(roots)
        while stack:
            op = stack.pop()
            if op.name in seen:
                continue
            seen.add(op.name)
            for t in op.inputs:
                stack.append(t.op)
            stack.extend(op.control_inputs)
        result = frozenset(seen)
        self._ancestor_cache[key] = result
        return result

    def _leaf_ops(self, leaf):
        if hasattr(leaf, "indices") and hasattr(leaf, "values"):
            return [leaf.values.op.name]
        return [leaf.op.name]

    def _components(self):
        for rec in self.records:
            yield from rec["components"]
        yield from self.extra

    def _pending(self, graph, only_uncaptured=False):
        out = []
        for comp in self._components():
            if comp.none or comp.leaf is None or comp.graph is not graph:
                continue
            if len(comp.captures) >= (1 if only_uncaptured else MAX_CAPTURES):
                continue
            out.append(comp)
        return out

    def _session_run(self, orig_run, sess, fetches, feed_dict, options, run_metadata):
        if not self.enabled or self.in_run:
            return orig_run(sess, fetches, feed_dict, options, run_metadata)
        if sess not in self.sessions:
            self.sessions.append(sess)
        wanted = []
        try:
            candidates = self._pending(sess.graph)
            if candidates:
                anc = self._ancestors(sess, fetches)
                wanted = [c for c in candidates if any(n in anc for n in self._leaf_ops(c.leaf))]
        except Exception:  # noqa: BLE001
            wanted = []
        if not wanted:
            return orig_run(sess, fetches, feed_dict, options, run_metadata)
        self.in_run = True
        try:
            try:
                out, extra = orig_run(sess, (fetches, [c.leaf for c in wanted]), feed_dict, options, run_metadata)
            except Exception:  # noqa: BLE001 - fall back to the user's own run
                return orig_run(sess, fetches, feed_dict, options, run_metadata)
        finally:
            self.in_run = False
        for comp, val in zip(wanted, extra):
            if len(comp.captures) < MAX_CAPTURES:
                comp.captures.append(to_value(val))
        return out

    def _evaluate_pending(self, orig_run, sess):
        pending = self._pending(sess.graph, only_uncaptured=True)
        if not pending:
            return
        self.in_run = True
        try:
            try:
                vals = orig_run(sess, [c.leaf for c in pending])
                for comp, val in zip(pending, vals):
                    comp.captures.append(to_value(val))
                return
            except Exception:  # noqa: BLE001 - try one by one
                pass
            for comp in pending[:200]:
                try:
                    comp.captures.append(to_value(orig_run(sess, comp.leaf)))
                except Exception as exc:  # noqa: BLE001
                    comp.reason = f"could not be evaluated after the run: {type(exc).__name__}"
        finally:
            self.in_run = False

    def finish(self) -> None:
        """Evaluate still-uncaptured graph gradients where that is possible."""
        graphs = []
        for comp in self._components():
            if comp.graph is not None and comp.leaf is not None and not comp.captures and comp.graph not in graphs:
                graphs.append(comp.graph)
        for graph in graphs:
            open_sessions = [s for s in self.sessions if s.graph is graph and not getattr(s, "_closed", True)]
            if open_sessions:
                self._evaluate_pending(self._orig_run, open_sessions[-1])
                continue
            if any(s.graph is graph for s in self.sessions):
                for comp in self._pending(graph, only_uncaptured=True):
                    comp.reason = comp.reason or "never fetched, and its session was closed"
                continue
            # No session ever ran this graph: build one, initialise variables.
            from tensorflow.python.client import session as session_lib
            from tensorflow.python.ops import variables as variables_lib

            try:
                with graph.as_default():
                    sess = session_lib.Session(graph=graph)
                    try:
                        variables = variables_lib.global_variables() + variables_lib.local_variables()
                        if variables:
                            self._orig_run(sess, variables_lib.variables_initializer(variables))
                        self._evaluate_pending(self._orig_run, sess)
                    finally:
                        self.enabled = False
                        sess.close()
                        self.enabled = True
            except Exception as exc:  # noqa: BLE001
                for comp in self._pending(graph, only_uncaptured=True):
                    comp.reason = comp.reason or f"could not be evaluated: {type(exc).__name__}: {exc}"[:200]

    # ---------------------------------------------------------------- export
    def export(self) -> list:
        out = []
        for rec in self.records:
            comps = []
            for comp in rec["components"]:
                reason = comp.reason
                if not comp.none and not comp.captures and not reason:
                    reason = "never evaluated" if comp.graph is None else "never fetched by Session.run"
                comps.append({"none": comp.none, "captures": list(comp.captures), "reason": reason})
            item = {"kind": rec["kind"], "file": rec["file"], "line": rec["line"], "seq": rec["seq"],
                    "components": comps}
            if "context" in rec:
                item["context"] = rec["context"]
            out.append(item)
        return out


__all__ = ["Recorder", "to_value"]
