"""``tf.py_func`` in an override block: ``PyFunc`` or ``PyFuncStateless``, and its wrapper.

``stateful=True`` (the default) makes ``PyFunc``, ``stateful=False`` makes
``PyFuncStateless``, which a ``{"PyFunc": ...}`` map never matched.  The
wrapper calls ``tf.numpy_function`` (same op, same numpy semantics; a
``tf.py_function`` would silently give a zero gradient) and keeps py_func's
list contract: eager ``numpy_function`` unwraps a one-element ``Tout`` list.
"""
from __future__ import annotations

import ast

import libcst as cst

from migrator._plugins._override_model import Candidate, Refuse, code
from migrator._plugins._override_tfvalues import dtype_name

PY_FUNC_PARAMS = ["func", "inp", "Tout", "stateful", "name"]
_FLOATS = frozenset({"float16", "float32", "float64", "bfloat16"})
_CONTAINERS = (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp, cst.Set, cst.SetComp, cst.Dict, cst.DictComp)


def scan_py_func(scanner, call, name, stmt, emap, block, found, scope) -> None:
    bound = scanner.bind_args(call, PY_FUNC_PARAMS)
    stateful = bound.get("stateful", (None, cst.Name("True")))[1]
    ev = scanner.ev
    if isinstance(stateful, cst.Name) and stateful.value in ("True", "False"):
        op_type = "PyFunc" if stateful.value == "True" else "PyFuncStateless"
        how = "`stateful` is the literal " + stateful.value if "stateful" in bound else "`stateful` defaults to True"
    elif isinstance(stateful, cst.Name) and stateful.value in scope.params:
        value, where = scanner.values.param_literal(scope, stateful.value)
        if value not in (True, False):
            if "PyFunc" in emap or "PyFuncStateless" in emap:
                raise Refuse("TFG108", f"`stateful={stateful.value}` decides between PyFunc and PyFuncStateless "
                                       "at run time, and the callers do not show one value")
            return
        op_type = "PyFunc" if value else "PyFuncStateless"
        how = f"every caller passes `{stateful.value}={value}` ({where})"
    else:
        if "PyFunc" in emap or "PyFuncStateless" in emap:
            raise Refuse("TFG108", "`stateful` is not a literal: PyFunc or PyFuncStateless cannot be told apart")
        return
    if op_type not in emap:
        if "PyFunc" in emap or "PyFuncStateless" in emap:
            ev.prove(f"`tf.py_func` makes {op_type}, not the mapped type ({how})")
        return
    if "inp" not in bound or "func" not in bound or "Tout" not in bound:
        raise Refuse("TFG108", "tf.py_func is called without func, inp and Tout")
    inp_pos, inp = bound["inp"]
    for pname, (_i, expr) in bound.items():
        if pname != "inp" and scanner._static_ok(expr) is None:
            raise Refuse("TFG108", f"argument `{pname}` of tf.py_func is an expression the migrator will not move")
    func = _numpy_function_func(call.func)
    if isinstance(inp, (cst.List, cst.Tuple)) and all(not isinstance(e, cst.StarredElement) for e in inp.elements):
        names = [f"x{i}" if len(inp.elements) > 1 else "x" for i in range(len(inp.elements))]
        new_inp = inp.with_changes(elements=[e.with_changes(value=cst.Name(n)) for e, n in zip(inp.elements, names)])
        args = list(call.args)
        args[inp_pos] = args[inp_pos].with_changes(value=new_inp)
        forward = call.with_changes(func=func, args=args)
        exprs = [e.value for e in inp.elements]
        variadic = False
        # a Python container would reach custom_gradient as several arguments
        convert = {i: None for i, e in enumerate(exprs) if isinstance(e, _CONTAINERS)}
    else:
        args = list(call.args)
        args[inp_pos] = args[inp_pos].with_changes(value=cst.Call(cst.Name("list"), [cst.Arg(cst.Name("inputs"))]))
        forward = call.with_changes(func=func, args=args)
        exprs, names, variadic = [inp], ["*inputs"], True
        convert = {}
    closure = any(scanner._static_ok(e) is False for p, (_i, e) in bound.items() if p != "inp")
    post: list[str] = []
    tout_pos, tout = bound["Tout"]
    if not _float_outputs(scanner, tout, scope):
        # TF1 handed the gradient function None for an integer output; custom_gradient hands it a
        # tensor (an adversarial run: `g is None` gave 2 in TF1, 102 after)
        raise Refuse("TFG108", f"`Tout` {code(tout)} is not all floating point: TF1 passed None as the upstream "
                               "gradient of a non-float output, tf.custom_gradient passes a tensor; migrate by hand")
    if isinstance(tout, (cst.List, cst.Tuple)) and len(tout.elements) == 1:
        args = list(forward.args)
        args[tout_pos] = args[tout_pos].with_changes(value=tout.elements[0].value)
        forward = cst.List([cst.Element(forward.with_changes(args=args))])
        ev.prove("one-element `Tout` list: the wrapper returns a list in every mode, as tf.py_func did")
    elif not isinstance(tout, (cst.List, cst.Tuple)) and scanner._static_ok(tout) is False:
        alias = code(func.value) if isinstance(func, cst.Attribute) else "tf"
        post = [  # formatted by the planner with the output name and the module's indent
            f"if isinstance({code(tout)}, (list, tuple)) and {alias}.is_tensor({{out}}):",
            "{indent}{out} = [{out}]  # tf.py_func returned a list here; eager numpy_function unwraps one output",
        ]
        ev.prove("`Tout` is a value: the wrapper re-wraps a single output in a list when Tout is a list")
    ev.prove(f"`{op_type}` made by `tf.py_func` ({how}); tf.numpy_function makes the same op")
    found.append(Candidate(call, op_type, emap[op_type], exprs, names, forward, variadic=variadic,
                           needs_closure=closure, stmt=stmt, tf_name=name, block=block, post_lines=post,
                           n_inputs=len(names), slots=list(range(len(names))), convert=convert))


def _float_outputs(scanner, tout: cst.BaseExpression, scope) -> bool:
    """Every output is floating point, or there is one: as written, or as every caller passes it
    (the py_func helper idiom takes ``Tout`` as a parameter)."""
    texts = [code(tout)]
    if isinstance(tout, cst.Name) and tout.value in scope.params:
        texts = scanner.values.param_texts(scope, tout.value) or [None]
    for text in texts:
        if text is None:
            return False
        try:
            node = ast.parse(text, mode="eval").body
        except SyntaxError:
            return False
        if isinstance(node, ast.Name):  # `TOUT`: read through a module constant bound once (an adversarial
            bound = scanner.col.module_scope.assigns.get(node.id, [])  # run: it hid an int32 output)
            if len(bound) != 1 or not isinstance(bound[0][1], (cst.List, cst.Tuple, cst.Attribute)):
                return False
            node = ast.parse(code(bound[0][1]), mode="eval").body
        items = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]
        if len(items) > 1 and not all(dtype_name(ast.unparse(e)) in _FLOATS for e in items):
            return False
    return True


def _numpy_function_func(func: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(func, cst.Attribute):
        return func.with_changes(attr=cst.Name("numpy_function"))
    return cst.Attribute(cst.Name("tf"), cst.Name("numpy_function"))
