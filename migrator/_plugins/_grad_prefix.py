"""A value computed before the gradient's block, shown independent of the sources.

cleverhans' iterative attacks: ``x_adv = x_input`` and ``one_hot = tf.one_hot(target, n)``
before the loop, then ``tf.gradients(loss(one_hot, x_adv), x_adv)`` in it.  ``one_hot`` is
read by the tape but made outside it, which was an assumption (TFG129).  It is a proof
when every value the source can hold at the call was made in this function: each binding
of it, anywhere in the function (before the block, in it, in a branch, a ``finally``, an
``else``), is a new tensor (a TF op), or a plain name for a variable whose bindings are
such in turn (``x_adv = x_input``, ``x_input = tf.identity(images) * 1.0``).

Then ``r`` depends on a source only through a line of the function that reads one of
those variables, or something made from one.  The pass over the lines ignores their
order (a loop runs them again, a branch may not run), so it finds every such line.  A
nested def or class, a ``match``, or a name bound where the lines do not show it
(``globals()``, ``setattr``, ``exec``, ``global``: an adversarial run) ends the proof.
"""
from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from migrator._plugins._dataflow import effects, touches
from migrator._plugins._grad_model import STATE, TRAINABLE, Refuse
from migrator._plugins._grad_values import is_fresh, py_func_kind, value_kind
from migrator.tfnames import dotted


_DYNAMIC = re.compile(r"\b(globals|locals|vars|setattr|delattr|exec|eval|__dict__|_getframe|__import__|global"
                      r"|nonlocal)\b")


def prefix_verdict(proof, r: str, sources: list) -> tuple[Optional[str], Optional[str]]:
    """(the proof line that ``r``, a local bound before the block, cannot depend on the sources;
    the reason it may), both None when neither can be shown."""
    func, lines = proof.scope.func, _readable_lines(proof)
    if lines is None:
        return None, None
    seeds: set = set()
    made: list = []
    params = set(proof.scope.params)
    for src in sources:
        values = _bound_values(lines, src.key, params, seeds)
        if values is None or not all(is_fresh(v, proof.an.qn) for v in values):
            return None, None  # a parameter, an element, a call's result, a change in place
        made += values
    where = ", ".join(str(n) for n in sorted({proof.an.line(node) for node in made})[:3])
    if touches(_flow(lines, seeds, None), {r}):
        return None, (f"`{r}` may be computed from a value {proof.src_text} holds at the call (made at line {where}, "
                      "or from one) outside the block that holds the call, where a tape here cannot see it; open the "
                      f"tape in the enclosing block, around the line that computes `{r}`")
    if touches(_flow(lines, seeds, STATE), {r}):
        return None, None  # only through program state (collections, flags): it may, or may not
    return (f"`{r}` cannot depend on {proof.src_text}: every value they can hold at the call is a new tensor made in "
            f"`{func.name.value}` (line {where}), and no line of it that computes `{r}` reads one of them or "
            "anything made from one"), None


def sources_apart(proof, c, sources: list, s: int, k: int, fresh: dict) -> None:
    """``tf.gradients(loss, [a, h])`` with ``h = a * 2.0`` made before the block: TF1's gradient
    for ``a`` also runs through ``h``, and a tape watching both does not see that path (an
    adversarial run).  A source bound outside the block is checked as a value the tape reads
    (``_independent``), against the other sources that are not new tensors made in the block:
    proven, assumed or refused as such."""
    saved = proof.sources_now, proof.src_text, proof.keys
    try:
        for src in sources if len(sources) > 1 else []:
            if src.key == TRAINABLE or proof._bind_at(src.key, k) is not None:
                continue  # bound in the block: on the slice, inside the tape or before its watch
            others = [o for o in sources if o is not src and fresh.get(o.key) is None]
            if not others:
                continue  # the others are new tensors made in the block: `src` existed before them
            proof.sources_now, proof.keys = others, {o.key for o in others}
            proof.src_text = ", ".join(f"`{o.key}`" for o in others)
            proof._independent(c, src.key, s, s, set(proof.keys), False)
    finally:
        proof.sources_now, proof.src_text, proof.keys = saved
    why = elements_apart(proof, sources, k)
    if why:
        raise Refuse("TFG130", why)


def elements_apart(proof, sources: list, k: int) -> Optional[str]:
    """A source bound outside the block to a list or tuple whose elements are made from each
    other (``x_adv = (a, a * 2.0)``): TF1's gradient for ``a`` also runs through the second
    element, which a tape watching both does not see (an adversarial run).  The reason, or None."""
    for src in sources:
        if proof._bind_at(src.key, k) is not None or src.key not in proof.scope.locals:
            continue
        lines = _function_lines(proof.an, proof.scope.func) or []
        if any(isinstance(it.orig, cst.SimpleStatementLine) and isinstance(it.orig.body[0], cst.AugAssign)
               and dotted(it.orig.body[0].target) == src.key
               and isinstance(it.orig.body[0].value, (cst.List, cst.Tuple, cst.ListComp)) for it, _h in lines):
            return f"`{src.key}` is extended in place outside the block (`+= [...]`): its elements" + _MADE_APART
        for value in function_values(proof, src.key) or []:
            if not isinstance(value, (cst.List, cst.Tuple)):
                continue
            reads = [effects(el.value).reads for el in value.elements]
            for i, el in enumerate(value.elements):
                seeds: set = set()
                if not isinstance(el.value, cst.Name) or _bound_values(lines, el.value.value, set(), seeds) is None:
                    seeds = set(reads[i])  # an expression: what it reads
                made = _flow(lines, seeds, None)
                if any(j != i and touches(made, reads[j]) for j in range(len(reads))):
                    return f"the elements of `{src.key}` (line {proof.an.line(value)})" + _MADE_APART
    return None


_MADE_APART = (" may be made from each other outside the block, a path TF1's gradient followed and a tape watching "
               "each element does not see; make the sources separately, or open the tape where they are made")


def function_values(proof, key: str) -> Optional[list]:
    """Every value local ``key`` is bound to anywhere in the function (following plain names), or
    None when that cannot be read from the function's lines."""
    lines = _readable_lines(proof)
    return None if lines is None else _bound_values(lines, key, set(proof.scope.params), set())


def _readable_lines(proof) -> Optional[list]:
    """The function's lines, or None at module level, or where a nested def, `match`, `except*`
    or names bound where the lines do not show it (`globals()`, `setattr`, `global`) hide some."""
    func = proof.scope.func
    lines = _function_lines(proof.an, func) if func is not None else None
    return None if lines is None or _DYNAMIC.search(proof._code(func.body)) else lines


def function_kind(proof, key: str) -> str:
    """"tensor", "list" or "tuple" when every binding of local ``key`` anywhere in the function is
    a value of that kind (or a plain name for a local whose bindings are), else "unknown": a
    source stepped in a loop (`x_adv = tf.minimum(...)`) is a tensor, so its gradient needs no
    `tf.nest.flatten`."""
    values = function_values(proof, key)
    kinds = {py_func_kind(v, proof.an.qn) or value_kind(v, proof.an.qn, proof.an.one_output) for v in values or []}
    return kinds.pop() if values and len(kinds) == 1 else "unknown"


def _flow(lines: list, seeds: set, state: Optional[str]) -> set:
    """Keys the function's lines may compute from ``seeds``, in any order (a loop runs its lines
    again, a branch may or may not run): repeated until nothing changes; program state carries
    values only when ``state`` is given."""
    tainted = set(seeds)
    changed = True
    while changed:
        changed = False
        for it, _header in lines:
            writes = it.fx.writes if state else it.fx.writes - {STATE}
            if touches(tainted, it.fx.reads if state else it.fx.reads - {STATE}) and not writes <= tainted:
                tainted |= writes
                changed = True
    return tainted


def _function_lines(an, func: cst.FunctionDef) -> Optional[list]:
    """(item, is a header) for every simple statement of ``func`` at any depth and every header
    of its compound statements (a loop's target, a test, a `with` item, an `except` name); None
    when it holds a nested def or class, or a `match`.  Built once per function and file."""
    cache = an.__dict__.setdefault("_function_lines", {})
    if id(func) not in cache:
        cache[id(func)] = (func, _build_lines(an, func))
    return cache[id(func)][1]


#: the compound statements whose headers and blocks the lines are read from
_COMPOUND = (cst.For, cst.While, cst.If, cst.With, cst.Try, cst.ExceptHandler)


def _build_lines(an, func: cst.FunctionDef) -> Optional[list]:
    out: list = []
    todo = list(func.body.body)
    while todo:
        st = todo.pop()
        if not isinstance(st, (cst.SimpleStatementLine, *_COMPOUND)):
            return None  # a nested def or class, `match`, `try`/`except*` (an adversarial run)
        if isinstance(st, cst.SimpleStatementLine):
            out.append((an.item(st), False))
            continue
        heads: list = []
        if isinstance(st, cst.For):
            heads.append(cst.Assign([cst.AssignTarget(st.target)], st.iter))
        elif isinstance(st, (cst.If, cst.While)):
            heads.append(cst.Expr(st.test))
        elif isinstance(st, cst.With):
            heads += [cst.Assign([cst.AssignTarget(i.asname.name)], i.item) if i.asname else cst.Expr(i.item)
                      for i in st.items]
        elif isinstance(st, cst.ExceptHandler) and st.name is not None:
            heads.append(cst.Assign([cst.AssignTarget(st.name.name)], st.type or cst.Name("None")))
        out += [(an.item(cst.SimpleStatementLine([h])), True) for h in heads]
        todo += _inner_statements(st)
    return out


def _inner_statements(st: cst.CSTNode) -> list:
    """The statements of a compound statement's blocks: bodies, `else`, `elif`, handlers, `finally`."""
    out: list = []
    for child in st.children:
        if isinstance(child, cst.IndentedBlock):
            out += list(child.body)
        elif isinstance(child, cst.SimpleStatementSuite):
            out.append(cst.SimpleStatementLine(child.body))
        elif isinstance(child, (cst.If, cst.ExceptHandler)):
            out.append(child)
        elif isinstance(child, (cst.Else, cst.Finally)):
            out.extend(_inner_statements(child))
    return out


def _bound_values(lines: list, key: str, params: set, seen: set) -> Optional[list]:
    """The values ``key`` is bound to anywhere in the function, following plain names for other
    locals (``x_adv = x_input``: ``x_input``'s values); ``seen`` collects those names.  None when
    some binding is not ``name = value`` (a loop target, a tuple, a walrus, an augmented or
    in-place change), or a name is a parameter, an attribute, or bound nowhere."""
    if key in seen:
        return []
    if "." in key or key in params:
        return None
    seen.add(key)
    out: list = []
    bound = False
    for it, header in lines:
        if not touches(it.fx.writes, {key}):
            continue
        value = None if header else _assigned(it.orig, key)
        if value is None or key not in it.fx.assigns:
            return None
        bound = True
        inner = _bound_values(lines, value.value, params, seen) if isinstance(value, cst.Name) else [value]
        if inner is None:
            return None
        out += inner
    return out if bound else None


def _assigned(stmt, key: str) -> Optional[cst.BaseExpression]:
    """The value of ``key = value`` when the statement is exactly that."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
        a = stmt.body[0]
        if len(a.targets) == 1 and dotted(a.targets[0].target) == key:
            return a.value
    return None
