"""Runs ONE side of a verification, inside a child process.

Invoked by :mod:`migrator.verify.engine` as::

    python -c "<bootstrap>" REQUEST.pickle RESULT.pickle

The request names the side ("original" or "migrated"), the execution mode
and one or more files (*variants*: several migrations of one original are
run one after the other in one interpreter).  The child

1. sets up TensorFlow for the mode: TF1 graph semantics through
   ``tensorflow.compat.v1``; TF1 graph with resource variables; or plain TF2
   with TF1-only names resolved through ``compat.v1`` and a Session shim
   (:mod:`.tf2compat`);
2. instruments the gradient entry points and ``Session.run`` (:mod:`.record`);
3. runs each file statement by statement (:mod:`.loader`), as ``__main__``
   (script mode) or as a module;
4. on the original side, records the arguments the script passes to the
   probed functions and turns them into probes; runs every probe, picks the
   ones to compare (:func:`.inputs.choose`) and hands them to the migrated
   side through a file;
5. on the migrated side, waits for those probes and runs them eagerly and
   inside a ``tf.function``;
6. writes everything to RESULT.pickle.  User stdout is never parsed.

TensorFlow is imported here and only here (and in the modules it loads).
"""
from __future__ import annotations

import os
import pickle
import random
import signal
import sys
import time
import types

from migrator.verify import loader

TF1 = "tf1-graph"
TF1_RESOURCE = "tf1-graph+resource-variables"
TF2 = "tf2-eager"
INPUTS_WAIT = 600.0  # seconds; the engine's own timeout ends the child sooner


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


def _reseed(tf, mode: str) -> None:
    import numpy as np

    random.seed(0)
    np.random.seed(0)
    if mode == TF2:
        tf.random.set_seed(0)
    else:
        tf.reset_default_graph()
        tf.set_random_seed(0)


def _allow_reregistration() -> None:
    """Batched migrated files may each register the same gradient name: the last one wins."""
    from tensorflow.python.framework import registry

    original = registry.Registry.register

    def register(self, candidate, name=None):
        key = name if name is not None else getattr(candidate, "__name__", None)
        self._registry.pop(key, None)
        return original(self, candidate, name)

    registry.Registry.register = register


def _file_key(path: str):
    real = os.path.realpath(path)
    cache = {}

    def where(filename):
        hit = cache.get(filename)
        if hit is None:
            hit = cache[filename] = os.path.realpath(filename) == real
        return "file" if hit else None

    return where


def _wait_for(path: str, pid, deadline: float):
    """The original's chosen probes, or None when it died without writing them."""
    while time.monotonic() < deadline:
        if os.path.exists(path):
            with open(path, "rb") as fh:
                return pickle.load(fh)
        if pid:
            try:
                os.kill(pid, 0)
            except OSError:
                return None if not os.path.exists(path) else _wait_for(path, None, deadline)
        time.sleep(0.05)
    return None


def _choose(specs: list, results: list) -> list:
    """Per target, the probes worth comparing (see inputs.choose)."""
    from migrator.verify.inputs import choose

    ok = {r["id"]: bool(r.get("ok")) for r in results}
    by_target = {}
    for spec in specs:
        by_target.setdefault(spec["target"], []).append(spec)
    chosen = []
    for cands in by_target.values():
        chosen += [cands[i] for i in choose(cands, [ok.get(c["id"], False) for c in cands])]
    return chosen


def _run_variant(tf, mode: str, side: str, variant: dict, recorder, request: dict, names) -> dict:
    from migrator.verify import probe as probe_mod

    path = os.path.abspath(variant["path"])
    out = {"key": variant.get("key"), "mode": mode, "ok": True, "error": None, "error_line": None,
           "records": [], "probes": [], "notes": []}
    where = _file_key(path)
    recorder.reset(where)
    recorder.enabled = True
    if names is not None:
        names.where, names.used = where, {}
    inrec = None
    if side == "original" and variant.get("record_targets"):
        inrec = loader.InputRecorder(tf, recorder, variant["record_targets"], path)
    sys.argv = [path] + list(request.get("argv", []))
    module_name = "__main__" if variant.get("as_main", True) else os.path.splitext(os.path.basename(path))[0]
    run = loader.run_file(path, module_name, after_statement=inrec.wrap_new if inrec else None)
    if run.failure is not None:
        out.update(ok=False, **run.failure.as_dict())
    out["skipped_statements"] = run.skipped
    out["unbound"] = sorted(run.unbound)
    try:
        recorder.finish()
    except Exception as exc:  # noqa: BLE001
        out["notes"].append(f"finishing captures failed: {loader.short_error(exc)}")
    out["records"] = recorder.export()
    recorder.enabled = False
    probes = list(variant.get("probes") or [])
    if inrec is not None:
        inrec.active = False
        probes += inrec.specs()
        out["unreproducible"] = dict(inrec.unreproducible)
        out["recorded"] = [s["id"] for s in probes if s.get("group") == "recorded"]
    if side == "migrated" and variant.get("inputs_in"):
        paused = signal.alarm(0)  # waiting for the original is not this file's time
        chosen = _wait_for(variant["inputs_in"], request.get("original_pid"), time.monotonic() + INPUTS_WAIT)
        if paused:
            signal.alarm(paused)
        if chosen is None:
            out["notes"].append("the original gave no probes")
            chosen = []
        targets = set(variant.get("targets") or ())
        probes = [s for s in chosen if s["target"] in targets]
        out["chosen"] = chosen
    if probes:
        out["probes"] = probe_mod.run_probes(tf, run.namespace, probes, mode, side, path)
    if side == "original":
        out["chosen"] = _choose(probes, out["probes"])
    if names is not None:
        out["v1_names"] = dict(names.used)
    return out


def run(request: dict, out_path=None) -> dict:
    mode = request["mode"]
    side = request.get("side", "original")
    tf = _setup_tf(mode)
    from migrator.verify import record as record_mod
    from migrator.verify.seeding import SEEDER

    names = None
    if mode == TF2:
        from migrator.verify import tf2compat

        names = tf2compat.V1Names(lambda f: None)
        names.install(tf)
        tf2compat.install_session_shim(tf)
    SEEDER.install()
    recorder = record_mod.Recorder(tf, lambda f: None)
    recorder.install()
    variants = request["variants"]
    if len(variants) > 1:
        _allow_reregistration()
    base_path = list(sys.path)
    per_file = request.get("timeout")
    if per_file:
        signal.signal(signal.SIGALRM, _timed_out)
    results = []
    for variant in variants:
        _reseed(tf, mode)
        SEEDER.reset(1)
        home = variant.get("home") or os.path.dirname(os.path.abspath(variant["path"]))
        sys.path[:] = [os.path.dirname(os.path.abspath(variant["path"]))] + ([home] if variant.get("home") else []) \
            + base_path + list(variant.get("extra_path") or [])
        try:
            os.chdir(home)
        except OSError:
            pass
        if per_file:
            signal.alarm(max(1, int(per_file)))
        try:
            res = _run_variant(tf, mode, side, variant, recorder, request, names)
        except BaseException as exc:  # noqa: BLE001 - one variant's harness failure is that variant's
            timed_out = isinstance(exc, _TimedOut)
            res = {"key": variant.get("key"), "mode": mode, "ok": False, "records": [], "probes": [], "notes": [],
                   "timed_out": timed_out, "error": f"timed out after {per_file:g} s" if timed_out
                   else loader.short_error(exc)}
            if not timed_out:
                res["harness_error"] = res["error"]
        finally:
            signal.alarm(0)
        results.append(res)
        if side == "original" and variant.get("inputs_out"):
            _publish(variant["inputs_out"], res.get("chosen", []))
        if out_path:  # so far: if a later file kills the process, the files before it keep their results
            _publish(out_path, {"mode": mode, "variants": results})
    return {"mode": mode, "variants": results}


class _TimedOut(BaseException):
    """A file ran past its time (BaseException: user code catching Exception must not swallow it)."""


def _timed_out(signum, frame):
    raise _TimedOut()


def _publish(path: str, data) -> None:
    tmp = path + ".tmp"
    with open(tmp, "wb") as fh:
        pickle.dump(data, fh, protocol=4)
    os.replace(tmp, path)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    req_path, out_path = argv[0], argv[1]
    with open(req_path, "rb") as fh:
        request = pickle.load(fh)
    try:
        result = run(request, out_path)
    except BaseException as exc:  # noqa: BLE001 - report harness failures, never hang
        import traceback

        result = {"mode": request.get("mode"), "harness_error": loader.short_error(exc),
                  "traceback": traceback.format_exc()[-3000:], "variants": []}
        if os.path.exists(out_path):
            with open(out_path, "rb") as fh:
                result["variants"] = pickle.load(fh).get("variants", [])
    finally:
        for variant in request.get("variants") or ():
            if variant.get("inputs_out") and not os.path.exists(variant["inputs_out"]):
                _publish(variant["inputs_out"], [])
    _publish(out_path, result)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: TF's atexit hooks are slow and can crash.
    os._exit(0)


if __name__ == "__main__":
    main()
