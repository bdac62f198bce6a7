"""TF2 behaviour for migrated code that still holds TF1 spellings (child process only).

The migrator rewrites gradient code; it leaves the rest of a TF1 program
alone (``tf.Session``, ``tf.nn.softmax_cross_entropy_with_logits_v2``,
``tf.py_func``...).  To witness the migrated gradient code in TF2 eager mode
and inside ``tf.function`` anyway, the migrated side runs under plain TF2
with two aids, both reported:

* **v1 names**: a name that TF2 removed from ``tf`` (or ``tf.nn``,
  ``tf.train``, ...) but keeps in ``tf.compat.v1`` resolves there, the way
  ``tf_upgrade_v2`` would rename it; so does a call with the v1 signature
  of a function whose signature changed (``tf.name_scope(name, default,
  values)``).  The behaviour stays TF2's: eager execution, resource
  variables.  Every such name the file uses is listed.
* **Session shim**: ``Session.run`` of eager values returns their numpy
  values, so a script that only uses a Session to fetch results runs
  eagerly.  Feeds, fetches by name and graph-only APIs raise an error that
  says the code needs TF1 graph mode; the engine then falls back to running
  the script in TF1 graph mode with resource variables, as extra evidence.
"""
from __future__ import annotations

import sys
import types

#: Phrase every "this needs graph mode" error of the shim carries (the engine matches it).
NEEDS_GRAPH = "needs TF1 graph mode"


#: Namespaces that lost names between v1 and v2 (``tf.nn.softmax_cross_entropy_with_logits_v2``,
#: ``tf.train.AdamOptimizer``, ``tf.random.set_random_seed``...).  A fixed list: walking every
#: attribute of ``tf`` would load all of its lazy modules.
SUBMODULES = ("nn", "train", "math", "losses", "image", "random", "linalg", "summary", "initializers", "io",
              "sparse", "strings", "test", "metrics", "data", "saved_model", "errors")


class V1Names:
    """``tf.<name>`` falls back to ``tf.compat.v1.<name>``; uses are remembered."""

    def __init__(self, where):
        self.where = where  # filename -> key or None (the files whose uses are reported)
        self.used = {}  # "tf.py_func" -> first (file, line)

    def install(self, tf) -> None:
        v1 = tf.compat.v1
        self._hook(tf, v1, "tf")
        self._v1_signature(tf, "name_scope", lambda args, kwargs: len(args) > 1 or {"default_name", "values"} & set(kwargs))
        for name in SUBMODULES:
            sub, twin = getattr(tf, name, None), getattr(v1, name, None)
            if isinstance(sub, types.ModuleType) and isinstance(twin, types.ModuleType) and sub is not twin:
                self._hook(sub, twin, f"tf.{name}")

    def _hook(self, module, twin, label: str) -> None:
        names = self
        previous = module.__dict__.get("__getattr__")

        def __getattr__(attr):
            if previous is not None:
                try:
                    return previous(attr)
                except AttributeError:
                    pass
            if attr.startswith("__"):
                raise AttributeError(attr)
            try:
                value = getattr(twin, attr)
            except AttributeError:
                raise AttributeError(f"module '{module.__name__}' has no attribute '{attr}'") from None
            names._note(f"{label}.{attr}")
            return value

        module.__getattr__ = __getattr__

    def _v1_signature(self, module, attr: str, is_v1) -> None:
        """``module.attr`` called the v1 way goes to ``tf.compat.v1.attr`` (tf_upgrade_v2's rewrite)."""
        import tensorflow as tf

        v2, v1 = getattr(module, attr), getattr(tf.compat.v1, attr)
        names = self

        def dispatch(*args, **kwargs):
            if is_v1(args, kwargs):
                names._note(f"tf.{attr} (v1 signature)")
                return v1(*args, **kwargs)
            return v2(*args, **kwargs)

        dispatch.__name__ = dispatch.__qualname__ = attr
        dispatch.__doc__ = getattr(v2, "__doc__", None)
        setattr(module, attr, dispatch)

    def _note(self, name: str) -> None:
        f = sys._getframe(2)
        while f is not None:
            key = self.where(f.f_code.co_filename)
            if key is not None:
                self.used.setdefault(name, (key, f.f_lineno))
                return
            f = f.f_back


def _to_numpy(value):
    from migrator.verify.record import to_value

    return to_value(value)


def install_session_shim(tf) -> None:
    """Replace ``tf.compat.v1.Session``/``InteractiveSession`` with an eager-aware shim."""
    from tensorflow.python.client import session as session_lib
    from tensorflow.python.framework import ops
    from tensorflow.python.util import nest

    real_session = session_lib.Session

    def _eager(leaf) -> bool:
        if leaf is None:
            return True
        inner = leaf.values if hasattr(leaf, "indices") and hasattr(leaf, "values") else leaf
        if isinstance(inner, ops.EagerTensor):
            return True
        # resource variables created eagerly
        return hasattr(leaf, "numpy") and hasattr(leaf, "handle") and isinstance(getattr(leaf, "handle", None),
                                                                                 ops.EagerTensor)

    class Session:
        """Runs eager values by reading them; graph values through a real Session."""

        def __init__(self, target="", graph=None, config=None):
            self._args = (target, graph, config)
            self._real = None
            self.graph = graph if graph is not None else ops.get_default_graph()
            self._closed = False

        def _delegate(self):
            if self._real is None:
                target, graph, config = self._args
                self._real = real_session(target, graph=graph if graph is not None else ops.get_default_graph(),
                                          config=config)
            return self._real

        def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
            leaves = nest.flatten(fetches)
            if not all(_eager(x) for x in leaves):
                if any(isinstance(x, (str, bytes)) for x in leaves):
                    raise RuntimeError(f"Session.run of a tensor name {NEEDS_GRAPH}")
                return self._delegate().run(fetches, feed_dict, options, run_metadata)
            if feed_dict:
                raise RuntimeError(f"Session.run with feed_dict {NEEDS_GRAPH}")
            return nest.pack_sequence_as(fetches, [None if x is None else _to_numpy(x) for x in leaves])

        def close(self):
            self._closed = True
            if self._real is not None:
                self._real.close()

        def as_default(self):
            import contextlib

            return contextlib.nullcontext(self)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.close()
            return False

        def __getattr__(self, name):
            return getattr(self._delegate(), name)

    class InteractiveSession(Session):
        pass

    v1 = tf.compat.v1
    v1.Session = Session
    v1.InteractiveSession = InteractiveSession


__all__ = ["NEEDS_GRAPH", "V1Names", "install_session_shim"]
