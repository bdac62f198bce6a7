"""Where and what a tape watches, and the shape of what it returns (conditions 2 and 3 of
docs/soundness.md): part of the proof in ``_grad_proof``."""
from __future__ import annotations


from typing import Optional

import libcst as cst

from migrator._plugins._dataflow import effects, touches
from migrator._plugins._grad_find import chain_items
from migrator._plugins._grad_prefix import function_kind, function_values
from migrator._plugins._grad_model import TRAINABLE, Call, Refuse, Source
from migrator._plugins._grad_source_blocks import bound_values
from migrator._plugins._grad_values import NUMBER_CALLS, NUMBER_IF_ARGS_ARE, is_fresh, py_func_kind, qnames, value_kind
from migrator.tfnames import STARRED, dotted


class WatchProof:
    """Mixed into the prover: it reads ``flat``, ``scope``, ``an`` and the binding helpers."""

    def _grad_ys(self, c: Call) -> None:
        """``None`` inside grad_ys means ones; the tape needs ``tf.ones_like(y)`` in its place."""
        from migrator._plugins._grad_apply import none_slots

        og = c.kwargs.get("output_gradients")
        if og is None or not none_slots(og):
            return
        n = len(c.ys.elements) if isinstance(c.ys, (cst.List, cst.Tuple)) else 1
        if len(og.elements) != n or any(isinstance(el, cst.StarredElement) for el in og.elements):
            raise Refuse("TFG128", "grad_ys holds None (ones) for targets the migrator cannot match one to one; "
                                   "write tf.ones_like(y) for those targets, then re-run")
        c.proof.append("`None` in grad_ys becomes tf.ones_like of its target, as tf.gradients read it")

    def _watches(self, c: Call, sources: list, s: int, e: int, k: int, fresh: dict) -> None:
        for src in sources:
            if src.key == TRAINABLE:
                continue
            j = self._bind_at(src.key, k)
            bound_to = self._binding_value(j, src.key) if j is not None else None
            made = self._values_before(src.key, k) if j is not None and bound_to is None else None
            if made and all(_python_value(v, self.an, 1, inner) for v, inner in made):
                raise Refuse("TFG126", f"`{src.key}` holds a Python or numpy value after line {self.line(j)}: TF1 "
                                       "differentiated a new constant made from it (None), and a tape cannot watch "
                                       "it; make it a tensor (tf.constant) if a gradient was meant")
            if bound_to is not None and _python_value(bound_to, self.an, 0, lambda n: self._values_before(n, j)):
                helper = isinstance(bound_to, cst.Call) and self.an.call_kind(bound_to) == "project"
                what = f"`{self._code(bound_to)}`, which may return a Python or numpy value," if helper \
                    else "a Python or numpy value"
                raise Refuse("TFG126", f"`{src.key}` is bound to {what} at line {self.line(j)}: "
                                       "TF1 differentiated a new constant made from it (None), and a tape cannot "
                                       "watch it; make it a tensor (tf.constant) if a gradient was meant")
            if isinstance(bound_to, cst.Call) and self.an.call_kind(bound_to) == "project" and \
                    (dotted(bound_to.func) or "_").rsplit(".", 1)[-1][:1].isupper():
                # `x = Bernoulli(0.5)`, an instance of a class: TF1 converted it to a tensor; a tape watches
                # only tensors and variables, and raised on edward's random variable (an unseen corpus)
                self._assume(c, f"`{src.key}` (bound to `{self._code(bound_to.func)}(...)` at line {self.line(j)}) "
                                "is a tf.Tensor or tf.Variable, which a tape can watch")
            outside = function_values(self, src.key) if j is None and src.key in self.scope.locals else None
            py = next((v for v in outside or [] if _python_value(v, self.an, 1)), None)
            if py is not None:  # `x_adv = -2.0` before a loop that steps it (an adversarial run: watch raised)
                raise Refuse("TFG126", f"`{src.key}` may hold a Python or numpy value at the call (`{self._code(py)}`, "
                                       f"line {self.an.line(py)}): TF1 differentiated a new constant made from it "
                                       "(None), and a tape cannot watch it; make it a tensor (tf.constant)")
            root = src.key.split(".")[0]
            table = self.an.rebinders(self.scope.func if self.scope.func is not None and root in self.scope.locals
                                      else None)
            hidden = table.get(root) or table.get("*")
            if hidden:
                raise Refuse("TFG133", f"`{root}` may be rebound behind a call ({hidden}), so the tape may watch "
                                       f"another value than the one the targets use; bind the sources to new local "
                                       "names right before the forward pass")
            table = self.an.shared(c.node)  # `alias.append(b)`, or a closure, may change it too
            shared = any(touches({root}, {n}) for n in table) or any(
                touches({root}, {m}) for group in table.values() for m in group)
            if fresh.get(src.key) is None or shared:
                changed = [i for i in range(max(s, (j if j is not None else -1) + 1), k) if not self.flat[i].dead
                           and touches(self.flat[i].fx.writes - self.flat[i].maybe_mutates, {src.key})]
                if changed:
                    raise Refuse("TFG133", f"`{src.key}` may be changed in place at line {self.line(changed[0])}, "
                                           "after the tape would watch it; bind the final sources to a new name "
                                           "before the forward pass")
            if j is None or j < s:
                src.after = None
                c.proof.append(f"`{src.key}` is watched when the tape opens, before any use")
                continue
            if j > e:
                self._watch_bound_after(c, src, j, s, fresh)
                continue
            it = self.flat[j]
            value = self._binding_value(j, src.key)
            single = it.orig is None or (isinstance(it.orig, cst.SimpleStatementLine) and len(it.orig.body) == 1)
            if (value is None or not single) and self._watch_inside_with(c, src, j):
                continue
            if value is None or not single:
                raise Refuse("TFG133", self._unwatchable(src.key, j))
            earlier = [i for i in range(s, j) if not self.flat[i].inert and not self.flat[i].dead]
            if fresh.get(src.key) is None and earlier:
                value_code = self._code(value)
                alias = dotted(value) is not None or isinstance(value, cst.Subscript)
                if alias and touches(set().union(*(self.flat[i].fx.reads for i in earlier)), set(_roots(value))):
                    raise Refuse("TFG133", f"`{src.key}` is bound at line {self.line(j)} to `{value_code}`, "
                                           f"which line {self.line(earlier[0])} already uses inside the tape; watch "
                                           "it before its first use by hand")
                # what a call hands back may be a tensor (one of its arguments, a cached one) that the
                # earlier lines reach some other way
                self._assume(c, f"the lines of the tape before line {self.line(j)} do not use the tensor "
                                f"`{value_code}` hands back")
            src.after = j
            c.proof.append(f"`{src.key}` is watched right after line {self.line(j)}, where it is made")
        if c.xs_leaves:
            c.xs_kind = "list" if _is_list_expression(c.xs, self.an.qn) else "unknown"
        elif any(src.key == TRAINABLE for src in sources):
            c.xs_kind = "list"  # tf.trainable_variables() is a list
            c.proof.append(f"the call reads `{self._code(c.xs)}` as before; the tape watches the values it is made of")
        elif c.kind == "grad" and dotted(c.xs) is not None:
            c.xs_kind = self._source_kind(dotted(c.xs), k)
        if c.kind == "hess" and dotted(c.xs) is not None and self._source_kind(dotted(c.xs), k) != "tensor":
            raise Refuse("TFG124", f"cannot tell that `{dotted(c.xs)}` is one tensor; pass tf.hessians a "
                                   "tensor bound by a TF call, or migrate by hand")

    def _values_before(self, name: str, pos: int) -> Optional[list]:
        """(value, resolver for its names) for each value this block may hold in ``name`` before
        item ``pos``; [] when one is unknown (an unpacking, a call's result), None when the block
        does not bind ``name`` (a parameter, a global)."""
        j = self._bind_at(name, pos)
        if j is None or "." in name:
            return None
        value = self._binding_value(j, name)
        if value is not None:
            return [(value, lambda n, j=j: self._values_before(n, j))]
        orig = self.flat[j].orig
        values = bound_values(orig, {name}) if orig is not None and not isinstance(orig, cst.SimpleStatementLine) \
            else None
        earlier = self._values_before(name, j)  # the statement may not run (`if`), or run no time (`for`)
        if values is None or earlier is None or not earlier:
            return []
        return [(v, lambda n, j=j: self._values_before(n, j)) for v in values] + earlier

    def _watch_inside_with(self, c: Call, src: Source, j: int) -> bool:
        """A fresh source made on its own line inside a ``with`` body (``with tf.variable_scope(..):
        interp = a + t * (b - a); d = D(interp)``) is watched right after that line, inside the body:
        a with body runs once, in order.  No if/for/try may stand between the item and the line."""
        node = self.flat[j].orig
        line = with_binding(node, src.key) if isinstance(node, cst.With) else None
        if line is None:
            return False
        value = line.body[0].value
        if not is_fresh(value, self.an.qn):
            return False
        src.inner = line
        src.after = j
        c.proof.append(f"`{src.key}` is made by a TF op on its own line inside the `with` at line {self.line(j)} "
                       "and watched right after it, in that body")
        return True

    def _unwatchable(self, key: str, j: int) -> str:
        """Why a source bound at item j cannot be watched right after its binding, and what to do."""
        node, line = self.flat[j].orig, self.line(j)
        small = node.body if isinstance(node, cst.SimpleStatementLine) else []
        if len(small) > 1:
            return f"`{key}` is bound at line {line} among several statements on one line; put it on a line of its own"
        if small and isinstance(small[0], cst.Assign) and isinstance(small[0].value, cst.Call):
            fn = self._code(small[0].value.func)
            return (f"`{key}` comes out of `{fn}(...)` at line {line} together with values made from it there, "
                    f"before any watch can run; make `{key}` first and pass it to `{fn}`, or open the tape inside "
                    f"`{fn}` right after `{key}` is made")
        if small:
            return f"`{key}` is bound at line {line} by an unpacking; bind it alone on its own line first"
        kind = type(node).__name__.lower()
        return (f"`{key}` is bound inside the `{kind}` statement at line {line}, where the ops using it may run "
                "before a watch could; bind it before that statement")

    def _watch_bound_after(self, c: Call, src: Source, j: int, s: int, fresh: dict) -> None:
        """A source bound after the targets: a new tensor is unconnected in both worlds; a name
        for values that exist already (``params = [w, b]``, ``x = self.x``) means those values,
        which the tape watches by the names they had when it opened."""
        value = self._binding_value(j, src.key)
        elements = chain_items(value) if value is not None and not isinstance(value, cst.Call) else None
        if elements:
            rebound = [n for n, _ in elements if any(
                any(a == n or n.startswith(a + ".") for a in self.flat[i].fx.assigns) for i in range(s, j))]
            if not rebound:
                src.watch = [expr for _, expr in elements]
                src.after = None
                c.proof.append(f"`{src.key}` (line {self.line(j)}) names {', '.join(f'`{n}`' for n, _ in elements)}, "
                               "watched when the tape opens")
                return
        elif fresh.get(src.key) is not None:
            src.after = -1  # a new tensor made after the targets: unconnected either way
            c.proof.append(f"`{src.key}` is made after the targets (line {self.line(j)}): unconnected in both")
            return
        raise Refuse("TFG133", f"`{src.key}` is bound at line {self.line(j)}, after the targets, from values the "
                               "tape cannot name when it opens; bind the sources before the forward pass")

    def _source_kind(self, key: str, k: int) -> str:
        j = self._bind_at(key, k)
        if j is not None:
            value = self._binding_value(j, key)
            orig = self.flat[j].orig
            if value is None and orig is not None and not isinstance(orig, cst.SimpleStatementLine):
                # `if i == 0: X = X + 0.1`: what the statement binds, or what it leaves
                values = bound_values(orig, {key})
                if values is None:
                    return "unknown"
                kinds = {value_kind(v, self.an.qn, self.an.one_output) for v in values}
                kinds.add(self._source_kind(key, j))
                return kinds.pop() if len(kinds) == 1 else "unknown"
            if value is None:
                return "unknown"
            return py_func_kind(value, self.an.qn) or value_kind(value, self.an.qn, self.an.one_output)
        if "." in key:
            return "unknown"
        sc = self.scope
        if sc.func is not None and key in sc.params:
            kind = self.an.param_structure(sc.func, key)
            if kind == "python":
                raise Refuse("TFG126", f"a caller passes a Python number as `{key}`: TF1 differentiated a new "
                                       "constant made from it (None), and a tape cannot watch it; pass a tensor")
            return kind
        if sc.func is None or key not in sc.locals:
            vals = self.an.module_values(key)
            kinds = {value_kind(v, self.an.qn, self.an.one_output) if v is not None else "unknown" for v in vals}
            if "tensor" in kinds and kinds & {"list", "tuple"}:
                raise Refuse("TFG124", f"`{key}` is bound both to a list and to a tensor; bind the sources to one "
                                       "list before the call")
            return kinds.pop() if len(kinds) == 1 else "unknown"
        return function_kind(self, key)  # bound only before the block, or stepped later in a loop



#: calls that hand back exactly the values of their one argument, as a list (qualified names)
LIST_VIEWS = {"builtins.list", "tensorflow.nest.flatten", "tensorflow.compat.v1.nest.flatten",
              "tensorflow.python.util.nest.flatten"}


def _view_of(xs: cst.BaseExpression, qn) -> Optional[cst.BaseExpression]:
    """``list(d.values())``, ``list(six.itervalues(d))``, ``tf.nest.flatten(x)``: the container
    whose values the list holds."""
    if not isinstance(xs, cst.Call) or len(xs.args) != 1 or xs.args[0].keyword is not None or xs.args[0].star:
        return None
    if not _qualified(xs.func, qn) & LIST_VIEWS:
        return None
    inner = xs.args[0].value
    if isinstance(inner, cst.Call) and not inner.args and isinstance(inner.func, cst.Attribute) \
            and inner.func.attr.value == "values":
        return inner.func.value  # list(d.values())
    if isinstance(inner, cst.Call) and len(inner.args) == 1 and "six.itervalues" in _qualified(inner.func, qn):
        return inner.args[0].value  # list(six.itervalues(d))
    return inner


def with_binding(node: cst.With, key: str) -> Optional[cst.SimpleStatementLine]:
    """The last line of a chain of with bodies that binds ``key`` (alone, ``key = value``), if the
    chain binds it nowhere else and through nothing but plain lines and nested withs."""
    found: list = []

    def walk(w: cst.With) -> bool:
        for st in w.body.body:
            if isinstance(st, cst.With):
                if not walk(st):
                    return False
            elif isinstance(st, cst.SimpleStatementLine):
                fx = effects(st)
                if any(a == key or key.startswith(a + ".") for a in fx.assigns):
                    if len(st.body) == 1 and isinstance(st.body[0], cst.Assign) and \
                            len(st.body[0].targets) == 1 and dotted(st.body[0].targets[0].target) == key:
                        found.append(st)
                    else:
                        return False
            elif touches(effects(st).writes, {key}):
                return False  # bound inside an if/for/try
        return True

    return found[-1] if walk(node) and len(found) == 1 else None


def _roots(value: cst.BaseExpression) -> list:
    return [r for r in effects(value).data]


def _is_list_expression(xs: cst.BaseExpression, qn) -> bool:
    """Certainly a list: a display, a list view, or ``+`` with a display on one side."""
    if isinstance(xs, (cst.List, cst.Tuple)) or _view_of(xs, qn) is not None:
        return True
    return isinstance(xs, cst.BinaryOperation) and isinstance(xs.operator, cst.Add) and \
        (_is_list_expression(xs.left, qn) or _is_list_expression(xs.right, qn))


def _qualified(func: cst.BaseExpression, qn) -> set:
    names = qn.get(func, set()) if qn is not None else set()
    names = names() if callable(names) else names
    out = {q.name for q in names}
    if not out and isinstance(func, cst.Name) and func.value == "list":
        out = {"builtins.list"}
    return set() if STARRED.name in out else out  # `list`, unless a star import may bind it


def bindable(xs: cst.BaseExpression, qn=None) -> bool:
    """A sources expression made only of names, attributes, list/tuple displays, ``+``,
    subscripts with literal or name indices, and views of a container (``list(d.values())``):
    the tape must be able to name, when it opens, every value the expression can hand back."""
    if dotted(xs) is not None:
        return True
    if isinstance(xs, (cst.List, cst.Tuple)):
        return bool(xs.elements) and all(not isinstance(el, cst.StarredElement) and bindable(el.value, qn)
                                         for el in xs.elements)
    if isinstance(xs, cst.BinaryOperation) and isinstance(xs.operator, cst.Add):
        return bindable(xs.left, qn) and bindable(xs.right, qn)
    if isinstance(xs, cst.Subscript):
        return dotted(xs.value) is not None and all(
            isinstance(el.slice, cst.Index) and (isinstance(el.slice.value, (cst.Integer, cst.SimpleString))
                                                 or dotted(el.slice.value) is not None)
            for el in xs.slice)
    inner = _view_of(xs, qn)
    return inner is not None and bindable(inner, qn)


def leaves(xs: cst.BaseExpression, qn=None) -> list:
    """[(key, expr)] of the names a sources expression is made of (``[y1] + grads`` -> y1, grads;
    ``a[part]`` -> a; ``list(d.values())`` -> d)."""
    key = dotted(xs)
    if key is not None:
        return [(key, xs)]
    if isinstance(xs, (cst.List, cst.Tuple)):
        return [kv for el in xs.elements for kv in leaves(el.value, qn)]
    if isinstance(xs, cst.BinaryOperation):
        return leaves(xs.left, qn) + leaves(xs.right, qn)
    if isinstance(xs, cst.Subscript):
        return leaves(xs.value, qn)
    inner = _view_of(xs, qn)
    return leaves(inner, qn) if inner is not None else []


def _python_value(value: cst.BaseExpression, an, hops: int = 0, local=None) -> bool:
    """A number, a list of numbers, a numpy call, a module constant bound only to one of
    those (``x = SCALE``), or a call of this module's function that may return one: not a
    tensor ``tape.watch`` takes. ``local(name)``: the values this block bound ``name`` to before
    the expression, each with the resolver for its own names (``X = 2.0; X = X * 1.5``: an
    adversarial run watched a float), or None where the block does not bind it."""
    if isinstance(value, (cst.Integer, cst.Float)):
        return True
    if isinstance(value, cst.Name) and hops < 3:
        found = local(value.value) if local is not None else None
        if found is not None:
            return bool(found) and all(_python_value(v, an, hops + 1, inner) for v, inner in found)
        vals = an.module_values(value.value)
        return bool(vals) and all(v is not None and _python_value(v, an, hops + 1) for v in vals)
    if isinstance(value, cst.UnaryOperation):  # `not flag` is a bool whatever `flag` is
        return isinstance(value.operator, cst.Not) or _python_value(value.expression, an, hops, local)
    if isinstance(value, cst.BinaryOperation):  # `2 * math.pi`
        return _python_value(value.left, an, hops, local) and _python_value(value.right, an, hops, local)
    if isinstance(value, (cst.List, cst.Tuple)):
        return bool(value.elements) and all(_python_value(el.value, an, hops, local) for el in value.elements)
    if isinstance(value, cst.Call):
        name = value.func.value if isinstance(value.func, cst.Name) else None
        if name in NUMBER_CALLS or name in NUMBER_IF_ARGS_ARE:
            builtin = an.call_kind(value) == "builtin" or qnames(value.func, an.qn) == {f"builtins.{name}"}
            return builtin and (name in NUMBER_CALLS or bool(value.args) and all(
                a.star == "" and _python_value(a.value, an, hops, local) for a in value.args))
        if an.call_kind(value) == "project" and name is not None and hops < 3:
            return _returns_python(an.find.defs.get(name), an, hops + 1)
        return an.call_kind(value) == "numpy"
    if isinstance(value, cst.Attribute):  # math.pi, np.e
        return any(q.split(".")[0] in ("math", "numpy") for q in qnames(value, an.qn))
    return False


def _returns_python(fn: Optional[cst.CSTNode], an, hops: int) -> bool:
    """This module's function ``fn`` has a ``return`` of a Python or numpy value (``def
    temperature(): return 2.0``): TF1 converted it to a new constant, a tape cannot watch it
    (an adversarial run: the migration raised at ``tape.watch``)."""
    if not isinstance(fn, cst.FunctionDef):
        return False
    found = []

    class _Returns(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn  # a nested def's returns are its own

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_Return(self, node: cst.Return) -> None:
            if node.value is not None and _python_value(node.value, an, hops):
                found.append(node)

    fn.visit(_Returns())
    return bool(found)
