"""Where targets made outside a function are made: the TF2 shape of a TFG120's fix.

``tf.gradients(self.loss, vars)`` in a method whose loss ``__init__`` built, or
``flatgrad(loss, vars)`` whose callers built it: the tape belongs where that value is
computed.  These name the place -- the method and line that set the attribute, the
callers of a module-level function -- so the reason says which function to open the
tape in, and which call to move inside it (issue 11: the largest class of refusals on
real code).  Hints only: nothing here decides a rewrite.
"""
from __future__ import annotations

import os
from typing import Optional

import libcst as cst

from migrator._plugins._dataflow import touches
from migrator.tfnames import descendants, dotted


def attribute_setters(an, func: cst.FunctionDef, name: str, limit: int = 2) -> list[tuple[str, int]]:
    """(method, line) of the statements of ``func``'s class, outside ``func``, that bind ``name``
    (``self.loss = ...``, ``self.x, self.loss = ...``)."""
    cls = an.parents.get(an.parents.get(func)) if an.parents.get(func) is not None else None
    if not isinstance(cls, cst.ClassDef):
        return []
    found: list[tuple[str, int]] = []

    class Setters(cst.CSTVisitor):
        def __init__(self) -> None:
            self.method: Optional[str] = None

        def visit_FunctionDef(self, node: cst.FunctionDef) -> Optional[bool]:
            if node is func or self.method is not None:
                return False  # this method itself; a nested def is not the class's method
            self.method = node.name.value
            return True

        def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
            if node is not func and self.method == node.name.value:
                self.method = None

        def _target(self, target: cst.BaseExpression, stmt: cst.CSTNode) -> None:
            if isinstance(target, (cst.Tuple, cst.List)):
                for el in target.elements:
                    self._target(el.value, stmt)
            elif self.method is not None and dotted(target) == name:
                found.append((self.method, an.pos[stmt].start.line))

        def visit_Assign(self, node: cst.Assign) -> None:
            for t in node.targets:
                self._target(t.target, node)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            self._target(node.target, node)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            self._target(node.target, node)

    cls.body.visit(Setters())
    return sorted(set(found), key=lambda m: m[1])[:limit]


def caller_places(an, func: cst.FunctionDef, limit: int = 3) -> list[str]:
    """``file:line`` of the project's calls of module-level ``func`` (none when they cannot be listed)."""
    if not isinstance(an.parents.get(func), cst.Module):
        return []
    sites = an.project.callers(an.ctx.path, func.name.value) if an.ctx.path else None
    return [f"{os.path.basename(s.path)}:{s.line}" for s in (sites or [])[:limit]]


def outside_ys_reason(an, sc, name: str, read_at: Optional[int] = None) -> str:
    """Why the targets come from outside the block, and where to open the tape instead."""
    root = name.split(".")[0]
    first = next(iter(sc.func.params.params), None) if sc.func is not None else None
    if sc.func is not None and "." in name and first is not None and root == first.name.value \
            and root in ("self", "cls"):
        what = f"`{name}` is an attribute set outside `{sc.func.name.value}`, before it is called"
        setters = attribute_setters(an, sc.func, name)
        if setters:
            method, line = setters[0]
            return (f"{what} (in `{method}`, line {line}); open a tf.GradientTape in `{method}` around the "
                    f"lines that compute `{name}` from the sources, and take the gradient there (move this "
                    "call into that tape)")
    elif sc.func is not None and root in sc.params:
        what = (f"`{name}` is a parameter of `{sc.func.name.value}`" if "." not in name else
                f"`{name}` is read from `{root}`, a parameter of `{sc.func.name.value}`") + ": the caller built it"
        places = caller_places(an, sc.func) if "." not in name else []
        if places and read_at is None:
            return (f"{what} (called at {', '.join(places)}); open a tf.GradientTape in those callers around "
                    f"the lines that compute what they pass as `{name}`, and take the gradient there (call "
                    f"tape.gradient instead of `{sc.func.name.value}`'s tf.gradients)")
    elif "." in name:
        what = f"`{name}` is an attribute set elsewhere"
    elif root in sc.locals or sc.func is None:
        what = f"`{name}` is computed outside the block that holds the call"
    else:
        what = f"`{name}` comes from outside this function"
    if read_at is not None:
        what += f" (line {read_at} uses that value before this block rebinds `{name}`)"
    return f"{what}; {where_to_open(sc, name)}"


def where_to_open(sc, name: str) -> str:
    func = sc.func.name.value if sc.func is not None else None
    if func:
        return (f"open a tf.GradientTape where `{name}` is computed (in the caller of `{func}`, or the method "
                f"that builds it), watch the sources there, and call tape.gradient instead of this call")
    return f"open a tf.GradientTape around the lines that compute `{name}` from the sources"


def one_origin(proof, c, sources: list) -> Optional[str]:
    """``a, b = make(x)`` then ``tf.gradients(a, b)``: the targets and a source come out of one
    call, so any path between them lies inside it, where no tape opened here can follow.  The
    true reason for a refusal that would otherwise name what the call read (``x``), or say the
    targets were changed in place."""
    ys = set(c.ys_keys)
    for src in sources:
        i = proof._bind_at(src.key, c.item)
        stmt = proof.flat[i].orig if i is not None else None
        assign = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if not isinstance(assign, cst.Assign) or not isinstance(assign.value, cst.Call):
            continue
        tainted = {a for a in proof.flat[i].fx.assigns if a != src.key and not src.key.startswith(a + ".")}
        for j in range(i + 1, c.item):  # what the call's other outputs reach, up to the gradient call
            it = proof.flat[j]
            if not it.dead:
                tainted = tainted | it.fx.writes if touches(tainted, it.fx.reads) else tainted - it.fx.assigns
        if touches(tainted, ys):
            func, ys_text = proof._code(assign.value.func), ", ".join(f"`{y}`" for y in sorted(ys))
            return (f"{ys_text} and the source `{src.key}` both come out of `{func}(...)` (line {proof.line(i)}), so "
                    f"any path from `{src.key}` to them lies inside that call, where a tape opened here cannot "
                    f"follow it; open the tf.GradientTape inside `{func}` around the lines that compute both, or "
                    f"have it return `{src.key}` and compute the targets from it here")
    return None


def set_elsewhere(proof, c, at: int) -> Optional[str]:
    """DeepMimic's ``_build_solvers``: ``tf.gradients(self._actor_loss_tf, vars)`` after calls on
    ``self`` that may change it in place.  When the targets are attributes this function never
    binds, and the methods that set them are not called here, the truth to tell is TFG120's: they
    are computed in another method (the reason named ``self.sess``, which one such call read)."""
    func = proof.scope.func
    if func is None:
        return None
    body = proof.an.code(func)
    for y in sorted(c.ys_keys):
        if not y.startswith(("self.", "cls.")) or any(y in it.fx.assigns for it in proof.flat[:at]):
            continue
        setters = attribute_setters(proof.an, func, y)
        if setters and not any(f"self.{method}(" in body for method, _ in setters):
            return outside_ys_reason(proof.an, proof.scope, y)
    return None


def ys_text(c, code) -> str:
    """The targets as the source spells them: `self.classifier['cost_NN']`, not the name the plan
    hoisted them into (`target`, which a held-out corpus's reason named though no line has it)."""
    hoisted, expr = c.names.get("ys"), c.names.get("ys_expr")
    if hoisted is not None and expr is not None and hoisted in c.ys_keys:
        return f"`{code(expr)}`"
    return f"`{', '.join(sorted(c.ys_keys))}`"


def attribute_from_sources(an, func: Optional[cst.FunctionDef], name: str, keys: set) -> Optional[str]:
    """EWC's ``compute_fisher``: ``tf.gradients(log(self.y_pred[...]), self.thetas)``, where
    ``__init__`` sets ``self.thetas = [self.w_hf, ...]`` and computes ``self.y_pred`` from those.
    The assumption "``self.y_pred`` does not depend on the sources" is then plainly false (an
    unsafe fix would give None for each), and the truth is TFG120's: the path lies in the method
    that sets it.  Read from the text of the class: every method that sets ``name`` computes it
    from a source, or an item of a list the class binds to one, through its own assignments."""
    if func is None or not name.startswith("self."):
        return None
    setters = attribute_setters(an, func, name, limit=99)
    cls = an.parents.get(an.parents.get(func))
    if not setters or not isinstance(cls, cst.ClassDef):
        return None
    methods = {m.name.value: m for m in cls.body.body if isinstance(m, cst.FunctionDef)}
    seeds = {k for k in keys if k.startswith("self.")}
    for m in methods.values():  # `self.thetas = [self.w_hf, self.b_hf]`: its items are sources too
        for n in descendants(m.body):
            if isinstance(n, cst.Assign) and isinstance(n.value, (cst.List, cst.Tuple)) and \
                    any(dotted(t.target) in seeds for t in n.targets):
                seeds |= {d for el in n.value.elements if (d := dotted(el.value)) is not None}
    if not seeds:
        return None
    for method, _line in setters:
        body = methods[method].body if method in methods else None
        tainted = set(seeds)
        assigns = [n for n in descendants(body) if isinstance(n, cst.Assign)] if body is not None else []
        for _ in range(len(assigns)):  # to a fixed point: the walk's order need not be the source's
            more = {d for n in assigns if any(_reads(r, tainted) for r in descendants(n.value))
                    for t in n.targets for d in _target_names(t.target)} - tainted
            if not more:
                break
            tainted |= more
        if name not in tainted:
            return None
    method, line = setters[0]
    return (f"`{name}` is computed from the sources in `{method}` (line {line}), outside `{func.name.value}`, so "
            f"TF1 differentiated through that path; open a tf.GradientTape in `{method}` around the lines that "
            f"compute `{name}`, and take the gradient there (move this call into that tape)")


def _reads(node: cst.CSTNode, keys: set) -> bool:
    d = dotted(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
    return d is not None and any(d == k or d.startswith(k + ".") for k in keys)


def _target_names(target: cst.BaseExpression) -> set:
    if isinstance(target, (cst.Tuple, cst.List)):
        return {d for el in target.elements for d in _target_names(el.value)}
    d = dotted(target)
    return {d} if d is not None else set()


def mutating_line(an, node, whole: str, default: int) -> int:
    """The line, inside a compound statement, that runs code on ``whole``: the ``with`` line
    above ``self.g_unit = self.create_unit(...)`` says nothing about which call it was (SeqGAN)."""
    if not isinstance(node, cst.BaseCompoundStatement):
        return default
    lines = [an.line(n) for n in descendants(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
             if isinstance(n, cst.SimpleStatementLine) and whole in an.item(n).fx.mutates]
    return min(lines, default=default)


def index_only(an, nodes: list, name: str) -> bool:
    """Every read of ``name`` in ``nodes`` is an index of a subscript (`logits[:, label]`): it
    picks elements but no gradient flows through it, so whether the caller computed it from the
    sources does not matter (a saliency class's `label`).  Not when the project defines
    `__getitem__`, which could hand the index back."""
    from migrator._plugins._grad_stateless import no_item_hooks
    reads = [n for node in nodes if node is not None for n in descendants(node)
             if isinstance(n, cst.Name) and n.value == name]
    if not reads or not no_item_hooks(an.project):
        return False
    inside: set = set()
    for node in nodes:
        for n in descendants(node) if node is not None else ():
            if isinstance(n, cst.SubscriptElement):
                inside |= {id(x) for x in descendants(n) if isinstance(x, cst.Name) and x.value == name}
    return all(id(n) in inside for n in reads)


def literal_built(value: cst.BaseExpression) -> bool:
    """A number, a string, None, True or False: no tensor, whatever the tape."""
    return isinstance(value, (cst.Integer, cst.Float, cst.SimpleString, cst.Name)) and \
        (not isinstance(value, cst.Name) or value.value in ("None", "True", "False"))
