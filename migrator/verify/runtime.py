"""Inside the user's own processes during ``verify --run`` (child side).

:mod:`.testrun` puts a ``sitecustomize`` on ``PYTHONPATH`` that imports this
module in every Python process the command starts (pytest, its workers, the
scripts it spawns).  Nothing happens until the program imports TensorFlow;
then this module

* sets TensorFlow up for the side: TF1 graph semantics (``compat.v1``
  installed as ``tensorflow``) for the original tree, plain TF2 with TF1-only
  names and the Session shim (:mod:`.tf2compat`) for the migrated tree;
* records every gradient computed from a file of the tree
  (:class:`.record.Recorder`), labelled with the running test;
* wraps the functions of the tree that hold a migrated region, to know which
  tests reach each site;
* with :mod:`.pytest_plugin` (loaded through ``PYTEST_PLUGINS``), labels
  records with the running test and records each test's outcome and the
  tree line its failure came from.

Results go to ``$TFGM_RUN_OUT/<pid>.pickle``, rewritten after each test.
"""
from __future__ import annotations

import atexit
import importlib
import importlib.abc
import importlib.machinery
import os
import pickle
import sys

_ENV = os.environ.get
ROOT = os.path.realpath(_ENV("TFGM_RUN_ROOT", "") or os.getcwd())
OUT = _ENV("TFGM_RUN_OUT")
MODE = _ENV("TFGM_RUN_MODE", "")
_EXCLUDED = ("site-packages", "dist-packages", f"{os.sep}.venv{os.sep}", f"{os.sep}venv{os.sep}")


class _State:
    recorder = None
    test = None  # the running test's id
    outcomes = {}  # test id -> {"outcome", "error", "where": (file, line) or None}
    hits = {}  # (file, function) -> set of test ids
    functions = {}  # relative file -> [function name, ...] holding a migrated region
    names = None


STATE = _State()


def relative(filename: str):
    """The tree-relative path of a file of the tree (not a dependency installed inside it), or None."""
    if not filename or filename.startswith("<"):
        return None
    real = os.path.realpath(filename)
    if not real.startswith(ROOT + os.sep) or any(x in real for x in _EXCLUDED):
        return None
    return os.path.relpath(real, ROOT).replace(os.sep, "/")


_CACHE = {}


def _where(filename: str):
    hit = _CACHE.get(filename, 0)
    if hit == 0:
        hit = _CACHE[filename] = relative(filename)
    return hit


def _context():
    return STATE.test or "<no test>"


# ------------------------------------------------------------------ TensorFlow set-up
class _TensorFlowHook(importlib.abc.MetaPathFinder):
    """Sets TensorFlow up for the side the first time the program imports it."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "tensorflow":
            return None
        sys.meta_path.remove(self)
        module = _setup()
        return importlib.machinery.ModuleSpec("tensorflow", _Ready(module))


class _Ready(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        return None


def _setup():
    from migrator.verify import record
    from migrator.verify.harness import TF2, _setup_tf
    from migrator.verify.seeding import SEEDER

    tf = _setup_tf(MODE)  # installs compat.v1 as ``tensorflow`` on the original side
    if MODE == TF2:
        from migrator.verify import tf2compat

        STATE.names = tf2compat.V1Names(_where)
        STATE.names.install(tf)
        tf2compat.install_session_shim(tf)
    SEEDER.install()
    STATE.recorder = record.Recorder(tf, _where)
    STATE.recorder.context = _context
    STATE.recorder.install()
    return sys.modules["tensorflow"]


# ------------------------------------------------------------------ reaching sites
class _TreeFinder(importlib.abc.MetaPathFinder):
    """Wraps, after import, the functions of tree modules that hold a migrated region."""

    def find_spec(self, fullname, path=None, target=None):
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.origin is None or spec.loader is None:
            return None
        rel = relative(spec.origin)
        if rel is None or rel not in STATE.functions:
            return None
        spec.loader = _WrappingLoader(spec.loader, rel)
        return spec


class _WrappingLoader(importlib.abc.Loader):
    def __init__(self, inner, rel):
        self.inner, self.rel = inner, rel

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        for name in STATE.functions.get(self.rel, ()):
            _wrap(module.__dict__, name, self.rel)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _wrap(namespace: dict, name: str, rel: str) -> None:
    import functools
    import types

    obj = namespace.get(name)
    key = (rel, name)

    def wrapped(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            STATE.hits.setdefault(key, set()).add(_context())
            return fn(*args, **kwargs)

        return wrapper

    if isinstance(obj, types.FunctionType):
        namespace[name] = wrapped(obj)
    elif isinstance(obj, type):
        for attr, value in list(vars(obj).items()):
            if isinstance(value, types.FunctionType):
                setattr(obj, attr, wrapped(value))


def finish_test():
    if STATE.recorder is not None:
        try:
            STATE.recorder.finish()
        except Exception:  # noqa: BLE001 - never break the user's run
            pass


# ------------------------------------------------------------------ results
def dump() -> None:
    if not OUT:
        return
    data = {"pid": os.getpid(), "argv": list(sys.argv), "outcomes": STATE.outcomes,
            "records": STATE.recorder.export() if STATE.recorder is not None else [],
            "hits": {k: sorted(v) for k, v in STATE.hits.items()},
            "v1_names": dict(STATE.names.used) if STATE.names is not None else {}}
    path = os.path.join(OUT, f"{os.getpid()}.pickle")
    try:
        with open(path + ".tmp", "wb") as fh:
            pickle.dump(data, fh, protocol=4)
        os.replace(path + ".tmp", path)
    except Exception:  # noqa: BLE001
        pass


def _at_exit() -> None:
    finish_test()
    dump()


def install() -> None:
    if not OUT or not MODE:
        return
    functions = _ENV("TFGM_RUN_FUNCTIONS")
    if functions:
        with open(functions, "rb") as fh:
            STATE.functions = pickle.load(fh)
    sys.meta_path.insert(0, _TensorFlowHook())
    if STATE.functions:
        sys.meta_path.insert(1, _TreeFinder())
    atexit.register(_at_exit)
    importlib.invalidate_caches()


__all__ = ["STATE", "dump", "install", "relative"]
