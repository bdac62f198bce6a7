"""One gradient per index: ``tf.gradients(y[:, i], x)`` for each ``i`` in ``range(n)``.

DeepFool, JSMA and per-class saliency take the gradient of each output column
of a model run once::

    y = model(x)
    gs = [tf.gradients(y[:, i], x)[0] for i in range(n)]       # or a for loop

The slice ``y[:, i]`` is an op: a tape must record it, so it cannot be taken
at ``tape.gradient`` after the tape has closed.  The rewrite takes every slice
inside the tape, next to the forward pass, and indexes the list per iteration::

    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = model(x)
        y_by_i = [y[:, i] for i in range(n)]
    gs = [tape.gradient(y_by_i[i], x) for i in range(n)]

Sound when taking all the slices first computes what the loop took one at a
time: the iterable is ``range(n)`` of names and numbers (the same indices both
times, and each index is its slice's position in the list), every iteration reaches the call (a comprehension with no ``if``;
a loop body with no ``break``, ``continue``, ``return``, ``raise`` or ``yield``,
the call not under an ``if``/``try`` in it), nothing in the loop rebinds the
index or what the slice reads (checked where the tape is placed), and the
slice runs no code of its own: subscripts, operators and a few pure TF
reductions of one tensor, nothing random or stateful.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from migrator._plugins._grad_values import qnames
from migrator.tfnames import dotted

#: TF functions a per-index target may call: pure, deterministic, one tensor in, one out
_PURE_TF = frozenset({
    "tensorflow.reduce_sum", "tensorflow.reduce_mean", "tensorflow.reduce_max", "tensorflow.reduce_min",
    "tensorflow.math.reduce_sum", "tensorflow.math.reduce_mean", "tensorflow.math.reduce_max",
    "tensorflow.math.reduce_min", "tensorflow.squeeze", "tensorflow.log", "tensorflow.math.log",
    "tensorflow.exp", "tensorflow.math.exp", "tensorflow.square", "tensorflow.math.square",
})


def comprehension(comp: cst.CSTNode, child: cst.CSTNode, an) -> Optional[dict]:
    """``{"var", "range", "over"}`` when the call sits in the element of ``[... for i in range(n)]``
    (one ``for``, no ``if``, a list display: generators run lazily, elsewhere), and the element
    calls nothing but TF (no code that could change what the slices read between iterations)."""
    if not isinstance(comp, cst.ListComp) or child is not comp.elt:
        return None
    if not only_tf_calls(comp.elt, an):
        return None
    return _header(comp.for_in.target, comp.for_in.iter, comp, an) if (
        comp.for_in.inner_for_in is None and not comp.for_in.ifs and comp.for_in.asynchronous is None) else None


def loop(owner: cst.CSTNode, stmt: cst.CSTNode, an) -> Optional[dict]:
    """The same for ``for i in range(n):`` whose body is the one line ``stmt`` (holding the call)
    calling nothing but TF and ``append``: a helper, an alias or ``operator.setitem`` in the body
    could change what the slices read between iterations (an adversarial run)."""
    if not isinstance(owner, cst.For) or owner.orelse is not None or owner.asynchronous is not None:
        return None
    if not isinstance(owner.body, cst.IndentedBlock) or len(owner.body.body) != 1 or owner.body.body[0] is not stmt:
        return None
    if _leaves_early(owner.body) or not only_tf_calls(stmt, an, allow=("append",)):
        return None
    return _header(owner.target, owner.iter, owner, an)


def element(c, comp: cst.CSTNode, child: cst.CSTNode, an, parents) -> Optional[dict]:
    """``[tf.gradients(y, x)[0] for y in ys]``: one gradient per element of a list of targets held
    by a name, as ``for y in ys:`` is (``_grad_home``).  The list display evaluates ``ys`` once,
    first, and takes every gradient; the tape goes around where ``ys`` is made (persistent), and
    the element calls ``tape.gradient(y, x)``.  The element calls nothing but TF (no code that
    could change ``ys`` or the sources between iterations), the sources and keywords do not read
    the element, and it is not in a class body or a ``try``, as for the per-index form."""
    if not isinstance(comp, cst.ListComp) or child is not comp.elt or c.kind != "grad":
        return None
    head = comp.for_in
    if head.inner_for_in is not None or head.ifs or head.asynchronous is not None:
        return None
    if not isinstance(head.target, cst.Name):
        return None
    var = head.target.value
    hoist = _hoistable(head.iter, an)
    if not isinstance(head.iter, cst.Name) and not hoist:
        return None
    if not isinstance(c.ys, cst.Name) or c.ys.value != var or dotted(head.iter) == var:
        return None
    if _reads(c.xs, var) or any(_reads(v, var) for v in c.kwargs.values()) or not only_tf_calls(comp.elt, an):
        return None
    cur = parents.get(comp)
    while cur is not None and not isinstance(cur, (cst.FunctionDef, cst.Module)):
        if isinstance(cur, (cst.ClassDef, cst.Try, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp,
                            cst.GeneratorExp)):
            return None
        cur = parents.get(cur)
    if not _plain_statement(comp, an, parents):
        return None  # `(ys.append(t), [... for y in ys])[1]`: the statement may change `ys` first
    if hoist:  # the list is made in the tape, under a name (`_grad_plan`), and the comprehension reads it
        return {"loop": True, "ys_keys": None, "over": comp, "element": True, "iter": head.iter, "var": var}
    return {"loop": True, "ys_keys": {head.iter.value}, "over": comp, "element": True}


def _hoistable(it: cst.BaseExpression, an) -> bool:
    """A TF call as the iterable (`tf.unstack(y)`, `tf.split(y, 3)`), taken out of the statement
    into the tape: it runs no code of its own (:func:`element` also asks that the statement call
    nothing but TF, so no project code before it might change what it reads)."""
    return isinstance(it, cst.Call) and an.tf_name(it) in ("tensorflow.unstack", "tensorflow.split") \
        and only_tf_calls(it, an)


def _plain_statement(comp: cst.CSTNode, an, parents) -> bool:
    """The comprehension's line is one statement that calls nothing but TF (no project code, no
    callback, no walrus that could change the list or the sources before the comprehension runs)."""
    stmt = parents.get(comp)
    while stmt is not None and not isinstance(stmt, cst.SimpleStatementLine):
        if isinstance(stmt, (cst.BaseCompoundStatement, cst.Lambda, cst.FunctionDef)):
            return False
        stmt = parents.get(stmt)
    return stmt is not None and len(stmt.body) == 1 and only_tf_calls(stmt, an)


def list_name(var: str) -> str:
    """The hoisted list of a comprehension's targets: `component` -> `components`."""
    stem = var[:-2] if len(var) > 2 and var[-2] == "_" and var[-1] in "ijk" else var  # `y_i` -> `ys`
    return f"{stem}s" if not stem.endswith("s") and len(stem) > 0 else f"{stem}_list"


#: TF functions that run Python code they are handed (`tf.nest.map_structure(ys.append, t)`)
CALLING_TF = frozenset({"map_structure", "map_structure_up_to", "map_fn", "scan", "foldl", "foldr", "while_loop",
                         "cond", "case", "switch_case", "py_func", "numpy_function", "py_function", "vectorized_map",
                         "custom_gradient", "function", "recompute_grad", "make_template"})


def only_tf_calls(node: cst.CSTNode, an, allow: tuple = ()) -> bool:
    """``node`` calls nothing but TF functions that run no code of the program (and the methods
    ``allow`` names), and binds nothing (no walrus, `global`, lambda)."""
    todo = [node]
    while todo:
        n = todo.pop()
        name = an.tf_name(n) if isinstance(n, cst.Call) else None
        if isinstance(n, cst.Call) and (name is None or name.rsplit(".", 1)[-1] in CALLING_TF) and not (
                isinstance(n.func, cst.Attribute) and n.func.attr.value in allow):
            return False
        if isinstance(n, (cst.Global, cst.Nonlocal, cst.NamedExpr, cst.Lambda)):
            return False
        todo.extend(n.children)
    return True


def _header(target, it, over, an) -> Optional[dict]:
    if not isinstance(target, cst.Name) or not isinstance(it, cst.Call):
        return None
    if not (isinstance(it.func, cst.Name) and it.func.value == "range") or \
            qnames(it.func, an.qn) != {"builtins.range"}:
        return None  # a module's own `range`, a parameter named so (an adversarial run)
    # `range(n)` only: the list of targets is indexed by the loop variable, so index and value
    # must agree (`range(1, 3)` would read the wrong slice, or past the end)
    if len(it.args) != 1 or it.args[0].keyword is not None or it.args[0].star or not _plain(it.args[0].value):
        return None
    if isinstance(it.args[0].value, cst.Subscript) and an.project.grep(b"shape", r"def\s+shape\s*\(") != []:
        return None  # a project class's `shape` property may change between two reads (an adversarial run)
    return {"var": target.value, "range": it, "over": over}


def _plain(expr: cst.BaseExpression) -> bool:
    """Names, attributes, numbers and arithmetic of them, and a static dimension
    (``y.shape[1]``, ``y.get_shape()[1]``: a tensor's shape never changes; `.value` is TF1's
    alone): the same value when evaluated again."""
    if isinstance(expr, (cst.Integer, cst.Name)) or dotted(expr) is not None:
        return True
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) \
            and isinstance(expr.slice[0].slice.value, cst.Integer):
        base = expr.value
        if isinstance(base, cst.Call) and not base.args and isinstance(base.func, cst.Attribute) \
                and base.func.attr.value == "get_shape":
            base = base.func
        return isinstance(base, cst.Attribute) and base.attr.value in ("shape", "get_shape") \
            and dotted(base.value) is not None
    if isinstance(expr, cst.BinaryOperation):
        return _plain(expr.left) and _plain(expr.right)
    if isinstance(expr, cst.UnaryOperation):
        return _plain(expr.expression)
    return False


def _leaves_early(body: cst.CSTNode) -> bool:
    found = []

    class V(cst.CSTVisitor):
        def visit_Break(self, n):
            found.append(n)

        def visit_Continue(self, n):
            found.append(n)

        def visit_Return(self, n):
            found.append(n)

        def visit_Raise(self, n):
            found.append(n)

        def visit_Yield(self, n):
            found.append(n)

        def visit_FunctionDef(self, n):
            return False  # a nested def's returns are its own

        def visit_Lambda(self, n):
            return False

    body.visit(V())
    return bool(found)


def call_ok(c, info: dict, an, parents) -> bool:
    """A ``tf.gradients`` whose target is an expression of the index and whose sources and
    other arguments are not; not in a class body (a comprehension there cannot see its names)."""
    if c.kind != "grad" or c.per_index is not None or dotted(c.ys) is not None or isinstance(c.ys, (cst.List,
                                                                                                   cst.Tuple)):
        return False
    var = info["var"]
    if not target_ok(c.ys, var, an.tf_name) or _reads(c.xs, var) or any(_reads(v, var) for v in c.kwargs.values()):
        return False
    cur = parents.get(info["over"])
    while cur is not None and not isinstance(cur, (cst.FunctionDef, cst.Module)):
        if isinstance(cur, (cst.ClassDef, cst.Try)):
            return False  # a class body hides its names; a try may catch a slice that raises
        cur = parents.get(cur)
    return True


def _reads(expr: Optional[cst.CSTNode], var: str) -> bool:
    todo = [expr] if expr is not None else []
    while todo:
        node = todo.pop()
        if isinstance(node, cst.Name) and node.value == var:
            return True
        todo.extend(node.children)
    return False


def target_ok(ys: cst.BaseExpression, var: str, an_tf_name) -> bool:
    """The target reads the index and runs no code of its own (see the module docstring)."""
    reads_var = False
    todo: list = [ys]
    while todo:
        node = todo.pop()
        if isinstance(node, cst.Name) and node.value == var:
            reads_var = True
        if isinstance(node, (cst.Lambda, cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp,
                             cst.NamedExpr, cst.Await, cst.Yield)):
            return False
        if isinstance(node, cst.Call):
            if an_tf_name(node) not in _PURE_TF or any(a.star for a in node.args):
                return False
            todo.extend(a.value for a in node.args)
            continue
        todo.extend(node.children)
    return reads_var


def hoisted(ys: cst.BaseExpression, info: dict) -> cst.ListComp:
    """``[ys for i in range(n)]``: every target, taken inside the tape.  The element is the
    original node (its names resolve through the file's metadata); the call it sat in is
    replaced, so it is written once."""
    return cst.ListComp(elt=ys, for_in=cst.CompFor(
        target=cst.Name(info["var"]), iter=info["range"].deep_clone()))


def name_for(ys: cst.BaseExpression, var: str) -> str:
    """``y[:, i]`` -> ``y_by_i``; ``tf.reduce_sum(logits[i])`` -> ``logits_by_i``."""
    node = ys
    while True:
        if isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Call) and node.args:
            node = node.args[0].value
        elif isinstance(node, cst.BinaryOperation):
            node = node.left
        else:
            break
    base = dotted(node)
    return f"{base.rsplit('.', 1)[-1]}_by_{var}" if base else f"targets_by_{var}"


def indexed(name: str, var: str) -> cst.Subscript:
    return cst.Subscript(value=cst.Name(name), slice=[cst.SubscriptElement(cst.Index(cst.Name(var)))])
