"""Runs ONE side of a verification, inside a child process.

Invoked by :mod:`migrator.verify.engine` as::

    python -c "<bootstrap>" REQUEST.pickle RESULT.pickle

The request names the file, the side ("original" or "migrated"), the
execution mode and the function probes.  The child

1. sets up TensorFlow for the mode (TF1 graph semantics through
   ``tensorflow.compat.v1``, TF1 graph with resource variables, or TF2 eager),
2. instruments the gradient entry points and ``Session.run`` (:mod:`.record`),
3. executes the file as ``__main__`` (script mode),
4. calls each probe on the resulting namespace (function mode, :mod:`.probe`),
5. writes everything to RESULT.pickle.  User stdout is never parsed.

TensorFlow is imported here and only here (and in the modules it loads).
"""
from __future__ import annotations

import os
import pickle
import random
import sys
import traceback
import types

TF1 = "tf1-graph"
TF1_RESOURCE = "tf1-graph+resource-variables"
TF2 = "tf2-eager"


class _AliasFinder:
    """``import tensorflow.keras`` and the like, once ``tensorflow`` is ``compat.v1``.

    The compat.v1 module's own package path has no ``keras``/``nn``/... folders,
    so ``tensorflow.<name>`` imports are resolved through its attributes.
    ``tensorflow.python...`` never gets here: those modules are already loaded.
    """

    def __init__(self, root):
        self.root = root

    def find_spec(self, fullname, path=None, target=None):
        import importlib.machinery

        if not fullname.startswith("tensorflow."):
            return None
        obj = self.root
        for part in fullname.split(".")[1:]:
            obj = getattr(obj, part, None)
            if obj is None:
                return None
        if not isinstance(obj, types.ModuleType):
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(obj), is_package=True)


class _AliasLoader:
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        return None


def _setup_tf(mode: str):
    import numpy as np

    random.seed(0)
    np.random.seed(0)
    if mode in (TF1, TF1_RESOURCE):
        import tensorflow.compat.v1 as v1

        v1.disable_v2_behavior()
        if mode == TF1_RESOURCE:
            v1.enable_resource_variables()
        sys.modules["tensorflow"] = v1
        sys.meta_path.append(_AliasFinder(v1))
        v1.set_random_seed(0)
        return v1
    import tensorflow as tf

    tf.random.set_seed(0)
    return tf


def _short_error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    text = " ".join(text.split())
    return text[:400]


def _user_line(tb, path: str):
    """The last line of ``path`` in a traceback, or None."""
    line = None
    real = os.path.realpath(path)
    for frame, lineno in traceback.walk_tb(tb):
        if os.path.realpath(frame.f_code.co_filename) == real:
            line = lineno
    return line


def run(request: dict) -> dict:
    path = os.path.abspath(request["path"])
    mode = request["mode"]
    result = {"mode": mode, "ok": True, "error": None, "error_line": None, "records": [], "probes": []}
    tf = _setup_tf(mode)
    from migrator.verify import probe as probe_mod
    from migrator.verify import record as record_mod
    from migrator.verify.seeding import SEEDER

    SEEDER.install()
    recorder = record_mod.Recorder(tf, path, graph_mode=mode != TF2)
    recorder.install()

    module = types.ModuleType("__main__")
    module.__file__ = path
    module.__builtins__ = __builtins__
    saved_main = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    sys.argv = [path] + list(request.get("argv", []))
    sys.path.insert(0, os.path.dirname(path))
    sys.path.extend(request.get("extra_path") or [])
    try:
        with open(path, "rb") as fh:
            source = fh.read()
        code = compile(source, path, "exec")
        exec(code, module.__dict__)  # noqa: S102 - running the user's file is the point
    except SystemExit as exc:
        if exc.code not in (None, 0):
            result.update(ok=False, error=f"SystemExit({exc.code!r})")
    except BaseException as exc:  # noqa: BLE001
        result.update(ok=False, error=_short_error(exc), error_line=_user_line(exc.__traceback__, path),
                      traceback=traceback.format_exc()[-3000:])
    finally:
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    try:
        recorder.finish()
    except Exception as exc:  # noqa: BLE001
        result.setdefault("notes", []).append(f"finishing captures failed: {_short_error(exc)}")
    result["records"] = recorder.export()
    recorder.enabled = False
    probes = request.get("probes") or []
    if probes:
        result["probes"] = probe_mod.run_probes(tf, module.__dict__, probes, mode, request.get("side", "original"))
    return result


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    req_path, out_path = argv[0], argv[1]
    with open(req_path, "rb") as fh:
        request = pickle.load(fh)
    try:
        result = run(request)
    except BaseException as exc:  # noqa: BLE001 - report harness failures, never hang
        result = {"mode": request.get("mode"), "ok": False, "harness_error": _short_error(exc),
                  "error": _short_error(exc), "traceback": traceback.format_exc()[-3000:],
                  "records": [], "probes": []}
    tmp = out_path + ".tmp"
    with open(tmp, "wb") as fh:
        pickle.dump(result, fh, protocol=4)
    os.replace(tmp, out_path)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: TF's atexit hooks are slow and can crash.
    os._exit(0)


if __name__ == "__main__":
    main()
