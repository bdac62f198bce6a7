"""Static analysis of an (original, migrated) pair: no TensorFlow here.

* :func:`eager_silent` tells whether a file's script uses TF1 APIs that run
  under eager execution but compute something else there (variable
  collections, ``variable_scope`` reuse), so its script is witnessed in TF1
  graph mode instead.
* :func:`changed_lines` gives the lines a migration changed, on each side.
* :func:`probe_targets` finds the module-level functions and callable
  module-level objects that contain or reach a changed region (``difflib``
  over the two texts), with their signatures, for function-mode probes.
"""
from __future__ import annotations

import ast
import difflib
import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Optional

#: TF1 APIs that do not fail under eager execution but give other results there: the variable
#: collections are empty, ``variable_scope`` does not share, ``disable_*`` switches modes.
EAGER_SILENT = re.compile(
    r"\b(?:tf|v1|compat\.v1)\.(?:trainable_variables|global_variables|local_variables|model_variables|"
    r"moving_average_variables|get_collection|get_collection_ref|add_to_collection|variable_scope|get_variable|"
    r"disable_v2_behavior|disable_eager_execution|reset_default_graph|train\.Saver|train\.MonitoredSession|"
    r"train\.MonitoredTrainingSession)\b"
)


def code_only(source: str) -> str:
    """The source with comments and string literals blanked out."""
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type not in (tokenize.COMMENT, tokenize.STRING):
                out.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return source
    return " ".join(out)


def eager_silent(source: str) -> bool:
    return EAGER_SILENT.search(code_only(source).replace(" . ", ".")) is not None


@dataclass
class Target:
    name: str
    params: list  # [{"name", "has_default", "annotation"}]
    line: int  # first line in the original
    end_line: int
    new_line: Optional[int] = None
    construct: bool = False  # a class: instantiate it without arguments, then call the instance
    kind: str = "function"  # "function" | "instance" (a callable object) | "class"
    reasons: list = field(default_factory=list)


@dataclass
class _Def:
    name: str
    node: ast.AST
    start: int
    end: int
    kind: str  # "function" | "class" | "instance" | "assign"
    refs: set
    class_name: Optional[str] = None


def _span(node) -> tuple:
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return start, getattr(node, "end_lineno", node.lineno) or node.lineno


def _refs(node) -> set:
    names = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            names.add(n.id)
        elif isinstance(n, ast.Attribute):
            names.add(n.attr)
    return names


def _defs(tree: ast.Module) -> dict:
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            s, e = _span(node)
            out[node.name] = _Def(node.name, node, s, e, "function", _refs(node))
        elif isinstance(node, ast.ClassDef):
            s, e = _span(node)
            out[node.name] = _Def(node.name, node, s, e, "class", _refs(node))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            s, e = _span(node)
            value = node.value
            for t in targets:
                if isinstance(t, ast.Name):
                    cls = None
                    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
                        cls = value.func.id
                    out[t.id] = _Def(t.id, node, s, e, "instance" if cls else "assign",
                                     _refs(value) if value is not None else set(), cls)
    return out


def changed_lines(original: str, migrated: str) -> tuple:
    """1-based line numbers the migration changed: (in the original, in the migrated file)."""
    return _changed_lines(original.splitlines(), migrated.splitlines())


def _changed_lines(a: list, b: list) -> tuple:
    """1-based changed line numbers on each side."""
    ca, cb = set(), set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if i1 == i2:  # pure insertion: the neighbours on the original side
            ca.update({i1, i1 + 1})
        ca.update(range(i1 + 1, i2 + 1))
        if j1 == j2:
            cb.update({j1, j1 + 1})
        cb.update(range(j1 + 1, j2 + 1))
    return ca, cb


def _is_gradient_fn(node) -> bool:
    for dec in getattr(node, "decorator_list", []):
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("RegisterGradient",):
            return True
    return False


def _registered_by_call(tree: ast.Module) -> set:
    """Names passed to ``RegisterGradient("X")(name)`` (the call form)."""
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Call):
            f = n.func.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name == "RegisterGradient":
                out |= {a.id for a in n.args if isinstance(a, ast.Name)}
    return out


def _method(cls: ast.ClassDef, name: str):
    return next((b for b in cls.body if isinstance(b, ast.FunctionDef) and b.name == name), None)


def _signature_key(params: Optional[list]):
    return None if params is None else [(p["name"], p["has_default"]) for p in params]


def _params(fn: ast.AST, drop_self: bool) -> Optional[list]:
    a = fn.args
    pos = list(a.posonlyargs) + list(a.args)
    if drop_self and pos:
        pos = pos[1:]
    n_def = len(a.defaults)
    params = []
    for i, p in enumerate(pos):
        ann = ast.unparse(p.annotation) if p.annotation is not None else None
        params.append({"name": p.arg, "has_default": i >= len(pos) - n_def, "annotation": ann})
    required_kwonly = [k for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is None]
    if required_kwonly:
        return None
    return params


def probe_targets(original: str, migrated: str) -> list:
    """Functions and callable objects, defined in both files, that contain or
    reach a changed region.  Returns :class:`Target` objects in source order."""
    try:
        t_old = ast.parse(original)
    except SyntaxError:
        return []
    try:
        t_new = ast.parse(migrated)
    except SyntaxError:
        t_new = ast.Module(body=[], type_ignores=[])
    d_old, d_new = _defs(t_old), _defs(t_new)
    ca, cb = _changed_lines(original.splitlines(), migrated.splitlines())
    changed = set()
    for name in set(d_old) | set(d_new):
        o, n = d_old.get(name), d_new.get(name)
        if o is None or n is None:
            changed.add(name)
            continue
        if any(o.start <= ln <= o.end for ln in ca) or any(n.start <= ln <= n.end for ln in cb):
            changed.add(name)
    # Reaching: anything that refers to a changed name, transitively (both sides).
    grew = True
    while grew:
        grew = False
        for defs in (d_old, d_new):
            for name, d in defs.items():
                if name in changed:
                    continue
                refs = set(d.refs)
                if d.kind == "instance" and d.class_name in defs:
                    refs |= {d.class_name}
                if refs & changed:
                    changed.add(name)
                    grew = True
    skip = _registered_by_call(t_old) | _registered_by_call(t_new)
    targets = []
    for name, o in sorted(d_old.items(), key=lambda kv: kv[1].start):
        n = d_new.get(name)
        if n is None or name not in changed or name in skip:
            continue
        construct, kind = False, o.kind
        if o.kind == "function" and n.kind == "function":
            if isinstance(o.node, ast.AsyncFunctionDef) or _is_gradient_fn(o.node) or _is_gradient_fn(n.node):
                continue
            params, new_params = _params(o.node, drop_self=False), _params(n.node, drop_self=False)
        elif o.kind == "instance" and n.kind == "instance" and isinstance(d_old.get(o.class_name or ""), _Def) \
                and d_old[o.class_name].kind == "class" and o.class_name in d_new:
            call_o = _method(d_old[o.class_name].node, "__call__")
            call_n = _method(d_new[o.class_name].node, "__call__") if d_new[o.class_name].kind == "class" else None
            if call_o is None or call_n is None:
                continue
            params, new_params = _params(call_o, drop_self=True), _params(call_n, drop_self=True)
        elif o.kind == "class" and n.kind == "class":
            # a callable class whose constructor needs no argument
            call_o, call_n = _method(o.node, "__call__"), _method(n.node, "__call__")
            if call_o is None or call_n is None:
                continue
            if any(_required(_method(c.node, "__init__")) for c in (o, n)):
                continue
            params, new_params = _params(call_o, drop_self=True), _params(call_n, drop_self=True)
            construct = True
        else:
            continue
        if params is None or _signature_key(params) != _signature_key(new_params):
            continue  # the contract changed on purpose (e.g. a gradient function's own signature)
        if params and params[0]["name"] == "op":
            continue  # a RegisterGradient-style function
        targets.append(Target(name, params, o.start, o.end, n.start, construct=construct, kind=kind))
    # A class the file instantiates itself is probed through that instance, as the program uses it.
    used = {d_old[t.name].class_name for t in targets if t.kind == "instance"}
    return [t for t in targets if not (t.kind == "class" and t.name in used)]


def _required(init) -> bool:
    if init is None:
        return False
    p = _params(init, drop_self=True)
    return p is None or any(not x["has_default"] for x in p)


def function_spans(source: str) -> dict:
    """``{name: (start, end)}`` of the module-level definitions of a file."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    return {name: (d.start, d.end) for name, d in _defs(tree).items()}
