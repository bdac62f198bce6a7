"""Running a verified file statement by statement (child process only).

Each top-level statement is compiled and executed on its own (line numbers
kept), so that

* after a statement fails, the definitions that follow are still made and
  the file's functions can still be probed (the failure is reported);
* the original side can wrap each probed function as soon as it is defined
  and record the arguments the program really passes to it
  (:class:`InputRecorder`).
"""
from __future__ import annotations

import __future__
import ast
import functools
import os
import traceback
import types
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from migrator.verify import argtree

MAX_RECORDED_CALLS = 3  # distinct argument signatures kept per function
#: Every compiled statement stays alive: TF keeps bare pointers to the code objects in the
#: tracebacks of graph ops, and formatting an op's error after its code object is freed crashes.
_CODE = []


def short_error(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:400]


def user_lines(tb, path: str) -> list:
    """Lines of ``path`` in a traceback, outermost first."""
    real = os.path.realpath(path)
    return [lineno for frame, lineno in traceback.walk_tb(tb) if os.path.realpath(frame.f_code.co_filename) == real]


@dataclass
class Failure:
    error: str
    line: Optional[int]  # innermost line of the file in the traceback
    lines: list = field(default_factory=list)
    traceback: str = ""

    def as_dict(self) -> dict:
        return {"error": self.error, "error_line": self.line, "error_lines": list(self.lines),
                "traceback": self.traceback}


def failure(exc: BaseException, path: str) -> Failure:
    lines = user_lines(exc.__traceback__, path)
    return Failure(short_error(exc), lines[-1] if lines else None, lines, traceback.format_exc()[-3000:])


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)


def _is_definition(node) -> bool:
    """What may still run after the script failed: definitions, not computations."""
    if isinstance(node, _DEFINITIONS):
        return True
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        v = node.value
        return isinstance(v, (ast.Lambda, ast.Constant, ast.Name, ast.Attribute)) or (
            isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and not v.args and not v.keywords)
    return False


def bound_names(node) -> set:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
    return out


@dataclass
class Run:
    """The outcome of running one file."""

    namespace: dict
    failure: Optional[Failure] = None  # the first statement that failed (the script's failure)
    exit_code: Optional[object] = None
    skipped: list = field(default_factory=list)  # (line, error) of later statements that failed too
    unbound: set = field(default_factory=set)  # names a failed statement should have bound


def run_file(path: str, module_name: str, after_statement=None) -> Run:
    """Execute ``path`` as module ``module_name`` (``"__main__"``: as a script)."""
    import sys

    module = types.ModuleType(module_name)
    module.__file__ = path
    module.__builtins__ = __builtins__
    run = Run(module.__dict__)
    with open(path, "rb") as fh:
        source = fh.read()
    try:
        tree = ast.parse(source, path)
    except SyntaxError as exc:
        run.failure = Failure(f"SyntaxError: {exc.msg}", exc.lineno, [exc.lineno] if exc.lineno else [])
        return run
    saved = sys.modules.get(module_name)
    sys.modules[module_name] = module  # pickle, dataclasses and the like look the module up
    try:
        _run_statements(tree, path, run, after_statement)
    finally:
        if module_name == "__main__" and saved is not None:
            sys.modules["__main__"] = saved
    return run


def _run_statements(tree, path: str, run: Run, after_statement) -> None:
    flags = 0
    for node in tree.body:
        if run.failure is not None and not _is_definition(node):
            run.unbound |= bound_names(node)
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            for alias in node.names:
                feature = getattr(__future__, alias.name, None)
                flags |= getattr(feature, "compiler_flag", 0)
        try:
            code = compile(ast.Module(body=[node], type_ignores=[]), path, "exec", flags=flags, dont_inherit=True)
            _CODE.append(code)
            exec(code, run.namespace)  # noqa: S102 - running the user's file is the point
        except SystemExit as exc:
            if exc.code not in (None, 0):
                run.failure = run.failure or Failure(f"SystemExit({exc.code!r})", node.lineno, [node.lineno])
            run.exit_code = exc.code
            break
        except BaseException as exc:  # noqa: BLE001
            f = failure(exc, path)
            if run.failure is None:
                run.failure = f
            else:
                run.skipped.append((node.lineno, f.error))
            run.unbound |= bound_names(node)
        if after_statement is not None:
            after_statement(run.namespace)


# ------------------------------------------------------------------ inputs
class _Unreproducible(Exception):
    pass


class InputRecorder:
    """Wraps probed functions of the original and records the arguments of real calls.

    Tensor arguments keep their dtype and static shape; their value is taken
    from the graph when it is constant, else captured through the recorder
    when the program's own ``Session.run`` evaluates something that depends
    on it.  Variables keep their initial value and trainability.  Python
    values are kept as they are.  Calls with arguments that cannot be
    rebuilt (a model object, a session) are counted, not kept.
    """

    def __init__(self, tf, recorder, targets: dict, path: str):
        self.tf = tf
        self.path = os.path.realpath(path)
        self.recorder = recorder
        self.targets = targets  # name -> "function" | "instance" | "class"
        self.wrapped = set()
        self.calls = {}  # name -> [(signature, args, kwargs, line)]
        self.unreproducible = {}  # name -> reason
        self.active = True
        self.depth = 0

    def wrap_new(self, namespace: dict) -> None:
        for name, kind in self.targets.items():
            obj = namespace.get(name)
            if obj is None or id(obj) in self.wrapped:
                continue
            if kind == "function" and isinstance(obj, types.FunctionType):
                wrapper = self._wrapper(name, obj, drop_self=False)
                namespace[name] = wrapper
                self.wrapped.add(id(wrapper))
            elif kind in ("instance", "class"):
                cls = obj if kind == "class" else type(obj)
                call = cls.__dict__.get("__call__") if isinstance(cls, type) else None
                if isinstance(call, types.FunctionType):
                    if hasattr(call, "_tfgm_names"):  # an instance of a class that is a target too
                        call._tfgm_names.append(name)
                    else:
                        cls.__call__ = self._wrapper(name, call, drop_self=True)
            self.wrapped.add(id(obj))

    def _wrapper(self, name, fn, drop_self):
        rec = self

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if rec.active:
                for target in wrapper._tfgm_names:
                    try:
                        rec._record(target, args[1:] if drop_self else args, kwargs)
                    except Exception:  # noqa: BLE001 - recording must never change behaviour
                        pass
            return fn(*args, **kwargs)

        wrapper._tfgm_names = [name]
        return wrapper

    def _record(self, name, args, kwargs) -> None:
        import sys

        calls = self.calls.setdefault(name, [])
        if len(calls) >= 4 * MAX_RECORDED_CALLS:
            return
        try:
            enc_args = [self._encode(a) for a in args]
            enc_kwargs = {k: self._encode(v) for k, v in kwargs.items()}
        except _Unreproducible as exc:
            self.unreproducible.setdefault(name, str(exc))
            return
        f = sys._getframe(2)
        while f is not None and os.path.realpath(f.f_code.co_filename) != self.path:
            f = f.f_back
        calls.append((enc_args, enc_kwargs, f.f_lineno if f is not None else None))

    def _encode(self, v, depth=0):
        if depth > 6:
            raise _Unreproducible("deeply nested argument")
        if v is None or isinstance(v, (bool, int, float, str, bytes, np.generic)):
            return v
        if isinstance(v, np.ndarray):
            return argtree.Numpy(v.copy())
        if isinstance(v, (list, tuple)) and type(v) in (list, tuple):
            if len(v) > 64:
                raise _Unreproducible("a long sequence argument")
            return type(v)(self._encode(x, depth + 1) for x in v)
        if isinstance(v, dict) and all(isinstance(k, str) for k in v):
            return {k: self._encode(x, depth + 1) for k, x in v.items()}
        dtype = getattr(v, "dtype", None)
        shape = getattr(v, "shape", None)
        if dtype is None or shape is None or not hasattr(dtype, "as_numpy_dtype"):
            raise _Unreproducible(f"an argument of type {type(v).__name__}")
        try:
            np_dtype = np.dtype(dtype.as_numpy_dtype)
        except TypeError:
            raise _Unreproducible(f"a tensor of dtype {dtype}") from None
        dims = None if shape.rank is None else [d if d is None else int(d) for d in shape.as_list()]
        is_var = hasattr(v, "initial_value") and hasattr(v, "assign")
        static = None
        try:
            static = self.tf.get_static_value(v.initial_value if is_var else v)
        except Exception:  # noqa: BLE001
            static = None
        slot = None
        if static is None:
            slot = self.recorder.watch_value(v)
        return _Pending(np_dtype, dims, None if static is None else np.asarray(static, np_dtype), slot,
                        "var" if is_var else "tensor", bool(getattr(v, "trainable", True)))

    def specs(self) -> list:
        """Probe specs for the recorded calls: one per distinct signature, at most MAX_RECORDED_CALLS."""
        out = []
        for name, calls in self.calls.items():
            seen = set()
            for args, kwargs, line in calls:
                conc_args = [_concrete(a, i) for i, a in enumerate(args)]
                conc_kwargs = {k: _concrete(v, 50 + i) for i, (k, v) in enumerate(kwargs.items())}
                sig = (argtree.signature(conc_args), argtree.signature(conc_kwargs))
                if sig in seen:
                    continue
                seen.add(sig)
                k = len(seen) - 1
                spec = {"id": f"{name}@{k}", "target": name, "args": conc_args, "kwargs": conc_kwargs,
                        "group": "recorded", "line": line, "construct": self.targets[name] == "class"}
                out.append(spec)
                if any(isinstance(x, argtree.Var) for x in argtree.flatten((conc_args, conc_kwargs))):
                    # The same call with its variables passed as constant tensors: a tape watches trainable
                    # variables by itself, but a tensor only when told, so this shows a missing tape.watch.
                    out.append(dict(spec, id=f"{name}@{k}~const", args=_constants(conc_args),
                                    kwargs=_constants(conc_kwargs), constants=True))
                if len(seen) >= MAX_RECORDED_CALLS:
                    break
        return out


@dataclass
class _Pending:
    dtype: np.dtype
    dims: Optional[list]
    static: Optional[np.ndarray]
    slot: object  # record._Component or None
    kind: str
    trainable: bool


def _constants(tree):
    leaves = argtree.flatten(tree)
    return argtree.rebuild(tree, [argtree.Tensor(x.value) if isinstance(x, argtree.Var) else x for x in leaves])


def _concrete(x, offset: int):
    """A recorded argument with its value: captured, constant, or made up for its shape and dtype."""
    if isinstance(x, list):
        return [_concrete(y, offset + i) for i, y in enumerate(x)]
    if isinstance(x, tuple):
        return tuple(_concrete(y, offset + i) for i, y in enumerate(x))
    if isinstance(x, dict):
        return {k: _concrete(v, offset + i) for i, (k, v) in enumerate(x.items())}
    if not isinstance(x, _Pending):
        return x
    value = x.static
    if value is None and x.slot is not None and x.slot.captures:
        value = np.asarray(x.slot.captures[0]).astype(x.dtype)
    if value is None:
        from migrator.verify.inputs import made_up

        dims = [2 if d is None else d for d in (x.dims if x.dims is not None else [2, 2])]
        value = made_up(dims, x.dtype, offset)
    if x.kind == "var":
        return argtree.Var(value, x.trainable)
    return argtree.Tensor(value)


__all__ = ["Failure", "InputRecorder", "Run", "bound_names", "failure", "run_file", "short_error", "user_lines"]
