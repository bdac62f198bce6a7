"""A registered gradient function becomes a ``grad_fn``, which TF2 runs eagerly: make it TF2 code.

TF1 called the function once, in graph mode, at ``tf.gradients`` time; a
``tf.custom_gradient`` calls it on every backward pass, eagerly outside
``tf.function``.  So every TF name in its body must exist in TF2 and in
``tf.compat.v1`` (migrated files still run under both), and constructs whose
meaning changes when run eagerly are converted exactly or refused:

* ``tf.py_func(f, inp, [T])[0]`` -> ``tf.numpy_function(f, inp, T)``: eager
  ``numpy_function`` unwraps a one-element ``Tout`` list, so a kept ``[0]``
  would pick a row; ``tf.py_func(f, inp, [T])`` -> ``[tf.numpy_function(f, inp, T)]``;
* a name TF2 has under another name, as the very same function, is renamed
  (``tf.floordiv`` -> ``tf.math.floordiv``);
* ``set_shape`` (checked against the real shape when eager), ``.eval()``,
  ``tf.Print``, ``tf.get_default_graph()``, sessions, placeholders and
  variables have no exact eager meaning: refused.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from migrator import optable
from migrator._plugins._override_model import Refuse, code
from migrator.tfnames import dotted

_EAGER_METHODS = {"set_shape": "checks the shape against the real one when it runs eagerly",
                  "eval": "needs a session", "run": "needs a session"}
#: tensor attributes that only graph tensors have (eager raises) or that name the graph around the op,
#: which under custom_gradient is the wrapper's IdentityN (``consumers()``, found by an adversarial run)
_EAGER_ATTRS = {"graph", "op", "consumers", "value_index", "device", "name"}
#: TF calls that ask how the code runs: TF1 ran the gradient function while building the graph
_MODE_CALLS = {"executing_eagerly", "inside_function", "executing_eagerly_outside_functions"}
#: TF1 keywords and their TF2 names, per function (``reduce`` stands for every ``reduce_*``)
_V1_KEYWORDS = {"reduce": {"keep_dims": "keepdims", "reduction_indices": "axis"},
                "squeeze": {"squeeze_dims": "axis"}, "moments": {"keep_dims": "keepdims"},
                "norm": {"keep_dims": "keepdims"}}
#: TF names whose arguments mean something else in TF2
_V1_ONLY_CALLS = {"dropout": "whose second argument is keep_prob in TF1 and rate in TF2",
                  # TF1 unwraps a one-element list result, TF2 (and tf.compat.v1's under tf.function) keeps
                  # it: a second adversarial run
                  **{k: "whose result TF1 unwraps when it is a one-element list, and TF2 does not"
                     for k in ("cond", "case", "while_loop", "map_fn", "scan")}}


#: TF1 names TF2 keeps for another computation (an adversarial run: `tf.image.resize` in a
#: gradient moved to half-pixel centres)
_MEANING_CHANGED = frozenset({"tensorflow.image.resize", "tensorflow.nn.softmax_cross_entropy_with_logits",
                              # partition_strategy "mod" in TF1, "div" in TF2
                              "tensorflow.nn.embedding_lookup"})


def _elementwise_where(call: cst.Call) -> bool:
    """``tf.where(g > 0., g, ...)``: the condition compares x or y itself with a number (or
    combines such comparisons), so it has their shape, where TF1's row selection and TF2's
    broadcasting agree."""
    sides = {code(a.value) for a in call.args[1:3]}

    def same_shape(cond) -> bool:
        if isinstance(cond, cst.BinaryOperation) and isinstance(cond.operator, (cst.BitAnd, cst.BitOr)):
            return same_shape(cond.left) or same_shape(cond.right)  # broadcasting keeps the larger shape
        if not isinstance(cond, cst.Comparison) or len(cond.comparisons) != 1:
            return False
        other = cond.comparisons[0].comparator
        return isinstance(other, (cst.Integer, cst.Float, cst.UnaryOperation)) and code(cond.left) in sides

    return same_shape(call.args[0].value)


class GradBody:
    """Checks and converts gradient functions of one module (qualified names from ``col``)."""

    def __init__(self, col, alias: str):
        self.col, self.alias = col, alias
        self._checked: dict = {}

    def convert(self, fn: cst.FunctionDef, proofs: list[str], elementwise: bool = False) -> cst.FunctionDef:
        """``fn`` with its body made TF2 code; raises :class:`Refuse` (TFG117) where it cannot be.
        ``elementwise``: every op it serves has one input of its output's shape (Relu, Sign)."""
        self._check_callees(fn, set())
        conv = _Convert(self, fn)
        conv.op_shaped = _op_shaped_names(fn) if elementwise else None
        new = fn.visit(conv)
        if conv.changes:
            proofs.append("gradient body made TF2 code: " + "; ".join(sorted(set(conv.changes))))
        else:
            proofs.append("gradient body uses only names TF2 and tf.compat.v1 share")
        return new  # type: ignore[return-value]

    def status(self, node) -> Optional[tuple[str, str, Optional[str]]]:
        """(name, status, new name) for a TF name reference, or None."""
        name = self.col.tf(node)
        if name is None or name == "tensorflow":
            return None
        if name.startswith("tensorflow.python."):
            return name, "same", None  # private modules are the same objects in both runtimes
        status, new = optable.tf2_status(name)
        return name, status, new

    def _check_callees(self, fn: cst.FunctionDef, seen: set) -> None:
        """Same-module functions the gradient calls run eagerly too; they must pass unchanged."""
        for call in _calls(fn):
            if isinstance(call.func, cst.Name):
                scope = self.col.scope_of_def.get(fn)
                d = scope.find_def(call.func.value) if scope is not None else None
                if d is not None and d is not fn and d not in seen:
                    seen.add(d)
                    conv = _Convert(self, d)
                    d.visit(conv)
                    if conv.changes:
                        raise Refuse("TFG117", f"`{d.name.value}()`, called by the gradient function, needs "
                                               f"TF2 changes ({conv.changes[0]}); it may be used elsewhere: migrate by hand")
                    self._check_callees(d, seen)


def _op_shaped_names(fn: cst.FunctionDef) -> tuple:
    """(code of the values a gradient of a one-input elementwise op knows to have the op's
    shape: ``op.inputs[0]``, ``op.outputs[0]``, the upstream gradient, names bound once to
    them; every name bound once in the body -> its value)."""
    params = [p.name.value for p in fn.params.params]
    if len(params) < 2:
        return set(), {}
    op = params[0]
    shaped = {f"{op}.inputs[0]", f"{op}.outputs[0]", params[1]}
    binds: dict = {}
    for st in fn.body.body:
        if isinstance(st, cst.SimpleStatementLine):
            for small in st.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                        isinstance(small.targets[0].target, cst.Name):
                    binds.setdefault(small.targets[0].target.value, []).append(small.value)
    for name, values in binds.items():
        if len(values) == 1 and code(values[0]) in shaped:
            shaped.add(name)
    return shaped, {n: v[0] for n, v in binds.items() if len(v) == 1}


def _op_shaped_where(call: cst.Call, known: Optional[tuple]) -> bool:
    """``tf.where(x > 0., grad, 0. * grad)`` in the gradient of a one-input elementwise op: the
    condition and x (or y) have the op's shape, so TF1 and TF2 select the same elements."""
    if not known or not known[0]:
        return False
    shaped, binds = known

    def full(e) -> bool:  # a value of the op's shape
        if code(e) in shaped:
            return True
        if isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value in (
                "zeros_like", "ones_like") and e.args:
            return full(e.args[0].value)
        if isinstance(e, cst.BinaryOperation) and isinstance(e.left, (cst.Integer, cst.Float)):
            return full(e.right)
        return False

    def cond_full(c) -> bool:
        if isinstance(c, cst.BinaryOperation) and isinstance(c.operator, (cst.BitAnd, cst.BitOr)):
            return cond_full(c.left) and cond_full(c.right)
        if isinstance(c, cst.Comparison) and len(c.comparisons) == 1:
            other = c.comparisons[0].comparator
            return full(c.left) and (full(other) or isinstance(other, (cst.Integer, cst.Float, cst.UnaryOperation)))
        return full(c)

    cond = call.args[0].value
    if isinstance(cond, cst.Name) and cond.value not in shaped:
        cond = binds.get(cond.value)  # `cond = (x >= -1) & (x <= 1)`, bound once
        if cond is None:
            return False
    return cond_full(cond) and any(full(a.value) for a in call.args[1:3])


class _Convert(cst.CSTTransformer):
    def __init__(self, body: GradBody, fn: cst.FunctionDef):
        self.b, self.fn = body, fn
        self.op_shaped: Optional[tuple] = None
        self.changes: list[str] = []
        self._skip: set = set()
        self._callees: set = set()  # ids of the functions of calls (a reference elsewhere is no call)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return True

    def visit_Call(self, node: cst.Call) -> bool:
        self._callees.add(id(node.func))
        return True

    def visit_Decorator(self, node: cst.Decorator) -> bool:
        return False  # the RegisterGradient decorator goes anyway

    def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
        if node in self._skip:
            return False
        st = self.b.status(node)
        if st is not None:
            self._skip |= _prefixes(node)
            return False
        return True

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        dtype_name = original.attr.value == "name" and isinstance(original.value, cst.Attribute) and \
            original.value.attr.value == "dtype"  # `x.dtype.name` is "float32" in both
        if original.attr.value in _EAGER_ATTRS and self.b.status(original.value) is None \
                and not _is_op_param(original.value, self.fn) and not dtype_name:
            raise Refuse("TFG117", f"the gradient function reads `{code(original)}`, which has no meaning "
                                   "when it runs eagerly; migrate by hand")
        st = self.b.status(original)
        if st is None:
            return updated
        return self._rename(original, updated, st)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        st = self.b.status(original)
        if st is None or st[1] in ("same", "differs"):
            return updated
        name, status, _new = st
        raise Refuse("TFG117", f"the gradient function uses `{original.value}` ({name}), which "
                               f"{'TF2 does not have' if status == 'v1_only' else 'TF2 spells otherwise'}; "
                               "import tensorflow as a module there, or migrate by hand")

    def _rename(self, original, updated, st):
        name, status, new = st
        root = dotted(original).split(".")[0] if dotted(original) else None
        if name in _MEANING_CHANGED and root is not None and id(original) not in self._callees:
            # a reference, not a call (`rs=tf.image.resize` as a default): TF1's function too
            self.changes.append(f"`{code(original)}` -> `{root}.compat.v1.{name[len('tensorflow.'):]}` "
                                "(TF1's computation)")
            return cst.parse_expression(f"{root}.compat.v1.{name[len('tensorflow.'):]}")
        if status in ("same", "differs"):
            return updated
        if status == "renamed" and new is not None:
            root = dotted(original).split(".")[0] if dotted(original) else None
            if root is None:
                raise Refuse("TFG117", f"cannot respell `{code(original)}` for TF2")
            self.changes.append(f"`{code(original)}` -> `{root}.{new[len('tensorflow.'):]}` (the same function)")
            return cst.parse_expression(f"{root}.{new[len('tensorflow.'):]}")
        if name == "tensorflow.py_func":
            return updated  # converted with its call (leave_Call / leave_Subscript)
        raise Refuse("TFG117", f"the gradient function uses `{code(original)}`, which TF2 does not have"
                               f"{_why(name)}; a grad_fn runs eagerly in TF2: migrate by hand")

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        f = original.func
        if isinstance(f, cst.Attribute) and f.attr.value in _EAGER_METHODS and self.b.status(f) is None:
            raise Refuse("TFG117", f"the gradient function calls `.{f.attr.value}()`, which "
                                   f"{_EAGER_METHODS[f.attr.value]}; migrate by hand")
        if isinstance(f, cst.Name) and f.value in ("hasattr", "getattr") and len(original.args) > 1 and \
                isinstance(original.args[1].value, cst.SimpleString) and \
                original.args[1].value.evaluated_value in _EAGER_ATTRS:
            raise Refuse("TFG117", f"the gradient function asks `{code(original)}`, which differs between a graph "
                                   "tensor (TF1) and an eager one (TF2); migrate by hand")
        name = self.b.col.tf(original)
        if name is not None and name.rsplit(".", 1)[-1] in _MODE_CALLS:
            raise Refuse("TFG117", f"the gradient function asks `{code(original)}`: TF1 ran it while building "
                                   "the graph, TF2 runs it eagerly (or while tracing); migrate by hand")
        if name == "tensorflow.py_func":
            new, one = self._py_func(original, updated)
            return cst.List([cst.Element(new)]) if one else new
        if name is not None:
            return self._signature(name, original, updated)
        return updated

    def _signature(self, name: str, original: cst.Call, updated: cst.Call) -> cst.Call:
        """Arguments whose meaning TF2 changed under the same name (found by an adversarial run)."""
        leaf = name.rsplit(".", 1)[-1]
        words = {a.keyword.value for a in original.args if a.keyword is not None}
        if leaf in _V1_ONLY_CALLS:
            raise Refuse("TFG117", f"the gradient function calls `{code(original.func)}`, {_V1_ONLY_CALLS[leaf]}; "
                                   "a grad_fn runs eagerly in TF2: migrate by hand")
        if any(q.startswith("tensorflow.compat.v2.") for q in self.b.col.qualified(original)):
            return updated  # TF2's function already, in both runtimes (`tf2.where` was made v1's: adversarial run)
        if name in _MEANING_CHANGED:
            # the same name, another computation in TF2 (half-pixel resize, label gradients, keep_prob
            # read as rate): keep TF1's function, which TF2 has under tf.compat.v1
            self.changes.append(f"`{code(original.func)}` -> `{self.b.alias}.compat.v1.{name[len('tensorflow.'):]}` "
                                "(TF1's computation)")
            return updated.with_changes(func=cst.parse_expression(f"{self.b.alias}.compat.v1.{name[len('tensorflow.'):]}"))
        if name == "tensorflow.where" and len(original.args) > 1 and not _elementwise_where(original) \
                and not _op_shaped_where(original, self.op_shaped):
            # TF1 picked rows of x and y where cond has lower rank, TF2 broadcasts: keep TF1's function,
            # which both runtimes have under this name
            self.changes.append("`tf.where(cond, x, y)` -> `tf.compat.v1.where` (TF1's row selection)")
            return updated.with_changes(func=cst.parse_expression(f"{self.b.alias}.compat.v1.where"))
        renames = _V1_KEYWORDS.get(leaf.split("_")[0] if leaf.startswith("reduce_") else leaf, {})
        if "dim" in words or (words & {"keep_dims", "reduction_indices", "squeeze_dims"}) - set(renames):
            raise Refuse("TFG117", f"`{code(original.func)}` is called with a TF1 keyword that TF2 renamed; "
                                   "rename it, then re-run")
        positional = sum(a.keyword is None and not a.star for a in original.args)
        if positional > 2 and name != "tensorflow.where" and self.b.status(original.func)[1] == "differs":
            # argmax(x, 1, "am"): the third is name in TF1, output_type in TF2 (an adversarial run)
            raise Refuse("TFG117", f"`{code(original.func)}` takes {positional} positional arguments, whose meaning "
                                   "differs between its TF1 and TF2 signatures; pass them by keyword, then re-run")
        if words & set(renames):  # the same argument under its TF2 keyword, which tf.compat.v1 takes too
            self.changes.append(", ".join(f"`{k}=` -> `{renames[k]}=`" for k in sorted(words & set(renames))))
            return updated.with_changes(args=[a.with_changes(keyword=cst.Name(renames[a.keyword.value]))
                                              if a.keyword is not None and a.keyword.value in renames else a
                                              for a in updated.args])
        return updated

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        call = original.value
        if isinstance(call, cst.Call) and self.b.col.tf(call) == "tensorflow.py_func" and _index(original) == 0:
            inner = updated.value
            if isinstance(inner, cst.List) and len(inner.elements) == 1:  # [numpy_function(...)][0]
                self.changes.append("`tf.py_func(..., [T])[0]` -> `tf.numpy_function(..., T)`")
                return inner.elements[0].value
        return updated

    def _py_func(self, original: cst.Call, updated: cst.Call) -> tuple[cst.Call, bool]:
        args = list(updated.args)
        params = ["func", "inp", "Tout", "stateful", "name"]
        tout_i = next((i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == "Tout"), None)
        if tout_i is None:
            positional = [i for i, a in enumerate(args) if a.keyword is None]
            tout_i = positional[2] if len(positional) > 2 else None
        if tout_i is None or any(a.star for a in args) or any(
                a.keyword is not None and a.keyword.value not in params for a in args):
            raise Refuse("TFG117", "tf.py_func in the gradient function has a call form the migrator cannot "
                                   "convert to tf.numpy_function exactly")
        tout = self._tout(args[tout_i].value)
        func = updated.func
        root = dotted(func).rsplit(".", 1)[0] if isinstance(func, cst.Attribute) and dotted(func) else self.b.alias
        new_func = cst.parse_expression(f"{root}.numpy_function")
        if isinstance(tout, (cst.List, cst.Tuple)) and len(tout.elements) == 1:
            args[tout_i] = args[tout_i].with_changes(value=_element(args[tout_i].value, tout))
            self.changes.append("`tf.py_func` -> `tf.numpy_function`, one-element Tout list kept as a list")
            return updated.with_changes(func=new_func, args=args), True
        self.changes.append("`tf.py_func` -> `tf.numpy_function`")
        return updated.with_changes(func=new_func, args=args), False

    def _tout(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        if isinstance(expr, (cst.List, cst.Tuple)) or (isinstance(expr, cst.Attribute) and self.b.col.tf(expr)):
            return expr
        if isinstance(expr, cst.SimpleString):
            return expr
        if isinstance(expr, cst.Name):
            bound = self.b.col.module_scope.assigns.get(expr.value)
            if bound and len(bound) == 1 and isinstance(bound[0][1], (cst.List, cst.Tuple, cst.Attribute)):
                return bound[0][1]
        raise Refuse("TFG117", f"tf.py_func's Tout `{code(expr)}` in the gradient function is not a literal: "
                               "whether it returns a list cannot be known; migrate by hand")


def _element(expr: cst.BaseExpression, tout) -> cst.BaseExpression:
    """``[T]`` -> ``T``; a constant name bound to ``[T]`` -> ``NAME[0]``."""
    if isinstance(expr, (cst.List, cst.Tuple)):
        return expr.elements[0].value
    return cst.Subscript(expr, [cst.SubscriptElement(cst.Index(cst.Integer("0")))])


def _index(node: cst.Subscript) -> Optional[int]:
    if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) and isinstance(
            node.slice[0].slice.value, cst.Integer):
        return int(node.slice[0].slice.value.value)
    return None


def _prefixes(node: cst.Attribute) -> set:
    out = set()
    v = node.value
    while isinstance(v, cst.Attribute):
        out.add(v)
        v = v.value
    out.add(v)
    return out


def _is_op_param(node, fn: cst.FunctionDef) -> bool:
    params = fn.params.params
    return bool(params) and isinstance(node, cst.Name) and node.value == params[0].name.value


def _calls(fn: cst.FunctionDef) -> list[cst.Call]:
    out: list[cst.Call] = []

    class _C(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            out.append(node)

    fn.body.visit(_C())
    return out


def _why(name: str) -> str:
    short = name.rsplit(".", 1)[-1]
    return {"Print": " (tf.print prints when it runs, not when the graph does)",
            "get_default_graph": " (there is no graph when it runs eagerly)",
            "placeholder": "", "Session": ""}.get(short, "")
