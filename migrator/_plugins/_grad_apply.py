"""Apply the tape plans: replace each call, rebuild each planned block with its tapes."""
from __future__ import annotations

import libcst as cst

from migrator._plugins._grad_model import Call, Group, Item
from migrator.tfnames import dotted, is_docstring


def call_expr(func: str, args: list, kwargs: list) -> cst.Call:
    out = [cst.Arg(a) for a in args]
    out += [
        cst.Arg(v, keyword=cst.Name(k), equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
        for k, v in kwargs
    ]
    out = [
        a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) if i < len(out) - 1 else a
        for i, a in enumerate(out)
    ]
    return cst.Call(func=cst.parse_expression(func), args=out)


def _stmt(expr: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([cst.Expr(expr)])


def _assign(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    if isinstance(value, cst.NamedExpr) and not value.lpar:
        value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])  # `t = y := v` is no Python
    return cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], value)])


def _clean(expr: cst.BaseExpression) -> cst.BaseExpression:
    """An argument expression without the layout of the old call around it."""
    return expr.deep_clone()


def _one_or_list(exprs: list) -> cst.BaseExpression:
    if len(exprs) == 1:
        return _clean(exprs[0])
    return cst.List([cst.Element(_clean(e)) for e in exprs])


class Codegen:
    def __init__(self, tf: str) -> None:
        self.tf = tf

    def result(self, c: Call) -> cst.BaseExpression:
        tape = c.group.name
        ys = c.ys
        if c.kind == "grad":
            xs = c.xs
            single = dotted(xs)
            if c.index0:
                if single is not None and c.xs_kind == "tensor":
                    pass
                elif isinstance(xs, (cst.List, cst.Tuple)) and len(xs.elements) == 1:
                    xs = xs.elements[0].value
                else:
                    return cst.Subscript(value=self._grad_list(c, tape, ys, xs),
                                         slice=[cst.SubscriptElement(cst.Index(cst.Integer("0")))])
                return self.grad_call(c, tape, ys, xs)
            return self._grad_list(c, tape, ys, xs)
        if c.kind == "hess":
            xs = c.xs if dotted(c.xs) is not None else c.xs.elements[0].value
            jac = call_expr(f"{tape}.jacobian", [cst.Name(next(iter(c.ys_keys))), _clean(xs)], [])
            return jac if c.index0 else cst.List([cst.Element(jac)])
        method = "jacobian" if c.kind == "jac" else "batch_jacobian"
        return call_expr(f"{tape}.{method}", [_clean(ys), _clean(c.xs)], [(k, _clean(v)) for k, v in c.kwargs.items()])

    def _grad_list(self, c: Call, tape: str, ys, xs) -> cst.BaseExpression:
        """A ``tape.gradient`` that returns a list, as tf.gradients did."""
        if dotted(xs) is not None:
            if c.xs_kind == "tensor":
                xs = cst.List([cst.Element(_clean(xs))])
            elif c.xs_kind == "tuple":
                # a tape hands back a tuple for a tuple of sources; tf.gradients gave a list
                return call_expr("list", [self.grad_call(c, tape, ys, xs)], [])
            elif c.xs_kind == "unknown":
                # a tensor gives a tensor, a list a list: flatten gives tf.gradients' list either way
                return call_expr(f"{self.tf}.nest.flatten", [self.grad_call(c, tape, ys, xs)], [])
        elif isinstance(xs, cst.Tuple):
            els = [el.deep_clone() for el in xs.elements]
            els[-1] = els[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            xs = cst.List(elements=els)
        elif not isinstance(xs, cst.List) and c.xs_kind != "list":
            # `a + b` may be two lists or two tensors: flatten gives tf.gradients' list either way
            return call_expr(f"{self.tf}.nest.flatten", [self.grad_call(c, tape, ys, xs)], [])
        return self.grad_call(c, tape, ys, xs)

    def grad_call(self, c: Call, tape: str, ys, xs) -> cst.Call:
        kwargs = [(k, self._ones_for_none(ys, v) if k == "output_gradients" else _clean(v)) for k, v in c.kwargs.items()]
        return call_expr(f"{tape}.gradient", [_clean(ys), _clean(xs)], kwargs)

    def _ones_for_none(self, ys, grad_ys) -> cst.BaseExpression:
        """``None`` in grad_ys meant ones to tf.gradients; a tape raises on it."""
        if not none_slots(grad_ys):
            return _clean(grad_ys)
        targets = list(ys.elements) if isinstance(ys, (cst.List, cst.Tuple)) else [cst.Element(ys)]
        els = [call_expr(f"{self.tf}.ones_like", [_clean(t.value)], []) if _is_none(g.value) else _clean(g.value)
               for g, t in zip(grad_ys.elements, targets)]
        return cst.List([cst.Element(e) for e in els])


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def none_slots(grad_ys: cst.BaseExpression) -> bool:
    """A grad_ys list literal with a None in it."""
    return isinstance(grad_ys, (cst.List, cst.Tuple)) and any(_is_none(el.value) for el in grad_ys.elements)


def watch_points(g: Group) -> tuple[list, dict]:
    """Source expressions watched when the tape opens, and after items (index -> exprs)."""
    start: list = []
    after: dict[int, list] = {}
    seen: set = set()
    for c in g.calls:
        for src in c.sources:
            if src.key in seen or src.after == -1:
                continue
            seen.add(src.key)
            exprs = src.watch if src.watch is not None else [src.expr]
            if src.inner is not None:
                continue  # watched inside a with body (inner_watches)
            if src.after is None or src.after < g.s:
                start.extend(exprs)
            else:
                after.setdefault(src.after, []).extend(exprs)
    return start, after


class Apply(cst.CSTTransformer):
    """Replace calls, then rebuild each planned block with its tapes."""

    def __init__(self, replacements: dict, block_plans: dict, codegen: Codegen) -> None:
        self.replacements = replacements
        self.block_plans = block_plans
        self.gen = codegen
        self.inner: dict[int, list] = {}  # id(line in a with body) -> [(tape, source expr)]
        # a comprehension's iterable made in the tape under a name (`_grad_per_index.element`)
        self.iters = {id(c.lifted["iter"]): c.lifted["iter_name"] for c in replacements.values()
                      if c.lifted is not None and c.lifted.get("iter_name")}
        for c in replacements.values():
            for src in c.sources:
                if src.inner is not None:
                    self.inner.setdefault(id(src.inner), []).append((c.group.name, src.expr))

    def _with_inner_watches(self, original, updated):
        if not self.inner or not any(id(s) in self.inner for s in original.body):
            return updated
        body = []
        for orig, upd in zip(original.body, updated.body):
            body.append(upd)
            for tape, expr in self.inner.get(id(orig), []):
                body.append(_stmt(call_expr(f"{tape}.watch", [_clean(expr)], [])))
        return updated.with_changes(body=body)

    def leave_CompFor(self, original: cst.CompFor, updated: cst.CompFor) -> cst.CompFor:
        name = self.iters.get(id(original.iter))
        return updated if name is None else updated.with_changes(iter=cst.Name(name))

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        c = self.replacements.get(id(original))
        return self.gen.result(c) if c is not None else updated

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        c = self.replacements.get(id(original))
        return self.gen.result(c) if c is not None else updated

    def leave_IndentedBlock(self, original, updated):
        updated = self._with_inner_watches(original, updated)
        plan = self.block_plans.get(id(original))
        return updated if plan is None else updated.with_changes(body=self._build(updated, plan))

    def leave_Module(self, original, updated):
        plan = self.block_plans.get(id(original))
        return updated if plan is None else updated.with_changes(body=self._build(updated, plan))

    def _build(self, updated, plan) -> list:
        flat, groups = plan
        new_stmts = iter(updated.body)
        stmt_of: dict[int, cst.CSTNode] = {}
        for i, it in enumerate(flat):
            if it.orig is not None:
                stmt_of[i] = next(new_stmts)
        gen = self.gen
        watch_after: dict[int, list] = {}
        starts: dict[int, list] = {}

        def collect(gs):
            for g in gs:
                start, after = watch_points(g)
                starts[id(g)] = start
                for i, exprs in after.items():
                    watch_after.setdefault(i, []).append((g.name, exprs))
                collect(g.children)

        collect(groups)

        def watch(tape: str, exprs: list) -> cst.SimpleStatementLine:
            return _stmt(call_expr(f"{tape}.watch", [_one_or_list(exprs)], []))

        def emit(i: int) -> list:
            it: Item = flat[i]
            if it.dead:
                return []
            if it.orig is not None:
                out = [stmt_of[i]]
            elif it.hoist is not None:
                out = [_assign(it.hoist[0], _clean(it.hoist[1]))]
            else:
                inner = it.inner
                out = [_assign(inner.target, gen.grad_call(inner, inner.group.name, inner.ys, _clean(
                    inner.xs if dotted(inner.xs) is not None else inner.xs.elements[0].value)))]
            for tape, exprs in watch_after.get(i, []):
                out.append(watch(tape, exprs))
            return out

        def build(lo: int, hi: int, gs: list) -> list:
            out = []
            by_start = {g.s: g for g in gs}
            i = lo
            while i <= hi:
                g = by_start.get(i)
                if g is not None:
                    out.append(make_with(g))
                    i = g.e + 1
                else:
                    out.extend(emit(i))
                    i += 1
            return out

        def make_with(g: Group) -> cst.With:
            content = build(g.s, g.e, g.children)
            lead = ()
            if content:
                lead = content[0].leading_lines
                content[0] = content[0].with_changes(leading_lines=())
            persistent = len(list(g.calls)) > 1 or any(c.persistent for c in g.calls)
            ctor = call_expr(f"{gen.tf}.GradientTape", [], [("persistent", cst.Name("True"))] if persistent else [])
            content = [st.visit(_BARE_BLANKS) for st in content]  # module-level blank lines carry no indent
            body = ([watch(g.name, starts[id(g)])] if starts[id(g)] else []) + content
            return cst.With(items=[cst.WithItem(ctor, asname=cst.AsName(cst.Name(g.name)))],
                            body=cst.IndentedBlock(body=body), leading_lines=lead)

        return build(0, len(flat) - 1, groups)


class _BareBlanks(cst.CSTTransformer):
    """Blank lines moved into the tape's block stay blank: a module-level one, indented with
    the block, would end in spaces (a GAN script's unsafe fix showed them)."""

    def leave_EmptyLine(self, original: cst.EmptyLine, updated: cst.EmptyLine) -> cst.EmptyLine:
        if updated.comment is None and not updated.whitespace.value:
            return updated.with_changes(indent=False)
        return updated


_BARE_BLANKS = _BareBlanks()


def remove_dead_imports(before: cst.Module, after: cst.Module, aliases: dict) -> cst.Module:
    """Drop imports of the gradient APIs that the rewrite left unused (and only those)."""
    if not aliases:
        return after

    def refs(mod: cst.Module) -> dict:
        counts: dict[str, int] = {}

        class V(cst.CSTVisitor):
            def visit_Import(self, node):
                return False

            def visit_ImportFrom(self, node):
                return False

            def visit_Attribute(self, node):
                node.value.visit(self)
                return False

            def visit_Name(self, node):
                if node.value in aliases:
                    counts[node.value] = counts.get(node.value, 0) + 1

        mod.visit(V())
        return counts

    old, new = refs(before), refs(after)
    dead = {n for n in aliases if old.get(n) and not new.get(n)}
    if not dead:
        return after

    class T(cst.CSTTransformer):
        def leave_Import(self, original, updated):
            keep = [a for a in updated.names
                    if (a.evaluated_alias or a.evaluated_name.split(".")[0]) not in dead or a.asname is None]
            if len(keep) == len(updated.names):
                return updated
            if not keep:
                return cst.RemoveFromParent()
            keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(names=keep)

        def leave_ImportFrom(self, original, updated):
            if isinstance(updated.names, cst.ImportStar):
                return updated
            keep = [a for a in updated.names if (a.evaluated_alias or a.evaluated_name) not in dead]
            if len(keep) == len(updated.names):
                return updated
            if not keep:
                return cst.RemoveFromParent()
            keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(names=keep)

    return after.visit(T())


def add_tf_import(module: cst.Module, alias: str) -> cst.Module:
    stmt = cst.parse_statement("import tensorflow\n" if alias == "tensorflow" else f"import tensorflow as {alias}\n")
    body = list(module.body)
    pos = 0
    for i, s in enumerate(body):
        if isinstance(s, cst.SimpleStatementLine) and all(isinstance(x, (cst.Import, cst.ImportFrom)) for x in s.body):
            pos = i + 1
        elif i == 0 and is_docstring(s):
            pos = 1
        else:
            break
    body.insert(pos, stmt)
    return module.with_changes(body=body)
