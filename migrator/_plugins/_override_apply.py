"""Apply an :class:`OverridePlan`: replace ops, dissolve blocks, insert wrappers, clean up."""
from __future__ import annotations

from collections import Counter
from typing import Optional, Sequence, Union

import libcst as cst

from migrator._plugins._override_model import OverridePlan
from migrator.notebook import CELL_MARKER

_Stmt = Union[cst.BaseStatement, cst.BaseSmallStatement]


def _parse_stmt(source: str, module: cst.Module) -> cst.BaseStatement:
    return cst.parse_statement(source, config=module.config_for_parsing)


def _blank() -> cst.EmptyLine:
    return cst.EmptyLine(indent=False)


def _join_lines(a: Sequence[cst.EmptyLine], b: Sequence[cst.EmptyLine]) -> list:
    """``a + b`` without doubling the blank lines where they meet."""
    a, b = list(a), list(b)
    tail = 0
    while tail < len(a) and a[len(a) - 1 - tail].comment is None:
        tail += 1
    head = 0
    while head < len(b) and b[head].comment is None:
        head += 1
    if tail >= head:
        return a + b[head:]
    return a[: len(a) - tail] + b


def _merge_blanks(removed: Sequence[cst.EmptyLine], following: Sequence[cst.EmptyLine], first: bool) -> list:
    """Leading lines for the statement after a removed one.

    The removed statement's own comments go with it; its blank lines separate
    what remains, without ever growing a gap (and none at the top of a block).
    """
    def run(lines):
        n = 0
        for ln in lines:
            n = n + 1 if ln.comment is None else 0
        return n

    lead_blanks = 0
    for ln in following:
        if ln.comment is not None:
            break
        lead_blanks += 1
    rest = list(following)[lead_blanks:]
    want = 0 if first else max(run(removed), lead_blanks)
    return [cst.EmptyLine(indent=False)] * want + rest


class _Apply(cst.CSTTransformer):
    def __init__(self, plan: OverridePlan, module: cst.Module):
        self.plan = plan
        self.module = module
        self.depth = 0
        self._dissolved_bodies = {w.body for w in plan.dissolve}
        self._in_dissolved_body = False

    # -- expressions ---------------------------------------------------------
    def _replacement(self, original, updated):
        name, cand = self.plan.replace[original]
        if isinstance(updated, cst.Call):
            if cand.variadic:
                (inp,) = _input_exprs(original, updated, cand)
                # tf.py_func converted each input; custom_gradient would flatten a Python
                # list and hand a variable to the forward, where it is read untracked
                conv = cst.parse_expression(f"map({self.plan.tf_alias}.convert_to_tensor, _)")
                args = [cst.Arg(conv.with_changes(args=[conv.args[0], cst.Arg(inp)]), star="*")]
            else:
                exprs = _input_exprs(original, updated, cand)
                args = [cst.Arg(e) for e in exprs]
        elif isinstance(updated, cst.BinaryOperation):
            operands = [updated.left, updated.right]
            args = [cst.Arg(operands[i]) for i in cand.slots]
        else:
            args = [cst.Arg(updated.expression)]
        for k, other in cand.convert.items():  # TF1 converted a Python operand to the other one's dtype
            if other is None:  # py_func converted it; custom_gradient would flatten a Python list
                conv = cst.parse_expression(f"{self.plan.tf_alias}.convert_to_tensor(_)")
                args[k] = cst.Arg(conv.with_changes(args=[cst.Arg(args[k].value)]))
                continue
            conv = cst.parse_expression(f"{self.plan.tf_alias}.convert_to_tensor(_, dtype={other}.dtype)")
            args[k] = cst.Arg(conv.with_changes(args=[cst.Arg(args[k].value), conv.args[1]]))
        return cst.Call(cst.Name(name), args, lpar=updated.lpar, rpar=updated.rpar)

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if original in self.plan.replace:
            return self._replacement(original, updated)
        return updated

    def leave_BinaryOperation(self, original, updated):
        if original in self.plan.replace:
            return self._replacement(original, updated)
        return updated

    def leave_UnaryOperation(self, original, updated):
        if original in self.plan.replace:
            return self._replacement(original, updated)
        return updated

    # -- helpers -------------------------------------------------------------
    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef):
        if original in self.plan.helpers:
            new = self.plan.helpers[original]
            if new is None:
                return cst.RemoveFromParent()
            # keep body edits made inside (none expected), but use the converted signature
            return new
        return updated

    def leave_Lambda(self, original: cst.Lambda, updated: cst.Lambda):
        return self.plan.helpers.get(original, updated)  # a py_func gradient lambda, converted

    # -- statement lists -----------------------------------------------------
    def _rebuild(self, originals: Sequence[cst.CSTNode], updated: Sequence[cst.CSTNode]) -> list:
        out: list = []
        carry: list[cst.EmptyLine] = []  # blank lines of removed statements
        removed_before = False
        for orig, upd in zip(originals, updated):
            if isinstance(upd, cst.RemovalSentinel):
                continue
            if orig in self.plan.remove:
                carry = _merge_blanks(carry, getattr(upd, "leading_lines", ()), first=not out)
                removed_before = True
                continue
            before = [_parse_stmt(src, self.module) for src in self.plan.insert_before.get(orig, ())]
            footer = []
            if orig in self.plan.dissolve:
                pieces, footer = self._dissolve(upd)
                if not out:  # the with opened its block: so does its first statement now
                    pieces[0] = pieces[0].with_changes(leading_lines=_merge_blanks([], pieces[0].leading_lines, first=True))
            else:
                pieces = [upd]
            if before:
                first = pieces[0]
                lead = list(first.leading_lines)
                blanks = 0
                while blanks < len(lead) and lead[blanks].comment is None:
                    blanks += 1
                # a notebook cell's marker stays first, so the generated def lands in that cell
                marker = 0
                while blanks + marker < len(lead) and lead[blanks + marker].comment is not None and \
                        lead[blanks + marker].comment.value.startswith(CELL_MARKER):
                    marker += 1
                # a generated def is set off from the code above it (unless it opens the block);
                # the comments above the statement stay with that statement
                def_lead = lead[:blanks] if len(lead[:blanks]) > (self.depth == 0) else \
                    [_blank(), _blank()] if self.depth == 0 else [_blank()]  # PEP 8: two at module level
                if not out and not self._in_dissolved_body:
                    def_lead = []
                if marker:
                    def_lead = def_lead + lead[blanks:blanks + marker]
                    lead = lead[:blanks] + lead[blanks + marker:]
                before[0] = before[0].with_changes(leading_lines=def_lead)
                gap = [_blank(), _blank()] if self.depth == 0 else [_blank()]
                for i in range(1, len(before)):
                    before[i] = before[i].with_changes(leading_lines=gap)
                pieces[0] = first.with_changes(leading_lines=gap + lead[blanks:])
                pieces = before + pieces
            if removed_before:
                merged = _merge_blanks(carry, pieces[0].leading_lines, first=not out)
                pieces[0] = pieces[0].with_changes(leading_lines=merged)
                carry, removed_before = [], False
            if self._pending_footer:
                lead = self._pending_footer + list(pieces[0].leading_lines)
                pieces[0] = pieces[0].with_changes(leading_lines=lead)
                self._pending_footer = []
            out += pieces
            self._pending_footer = footer
            after = self.plan.insert_after.get(orig, ())
            gap = [_blank(), _blank()] if self.depth == 0 else [_blank()]
            out += [_parse_stmt(src, self.module).with_changes(leading_lines=gap) for src in after]
        return out

    def _dissolve(self, with_node: cst.With) -> list:
        body = with_node.body
        if isinstance(body, cst.SimpleStatementSuite):
            stmts = [cst.SimpleStatementLine(body=body.body)]
            header_comment = body.trailing_whitespace.comment
        else:
            stmts = list(body.body)
            header_comment = body.header.comment
        extra = [cst.EmptyLine(comment=header_comment)] if header_comment is not None else []
        first = stmts[0]
        stmts[0] = first.with_changes(leading_lines=_join_lines(list(with_node.leading_lines) + extra, first.leading_lines))
        footer = list(body.footer) if isinstance(body, cst.IndentedBlock) else []
        return stmts, footer

    _pending_footer: list = []  # comment lines that closed a dissolved with-block

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.depth += 1

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock):
        self.depth -= 1
        self._pending_footer = []
        self._in_dissolved_body = original in self._dissolved_bodies
        body = self._rebuild(original.body, updated.body)
        self._in_dissolved_body = False
        footer = self._pending_footer + list(updated.footer)
        self._pending_footer = []
        if not body:
            body = [cst.SimpleStatementLine([cst.Pass()])]
        return updated.with_changes(body=body, footer=footer)

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        self._pending_footer = []
        body = self._rebuild(original.body, updated.body)
        footer = self._pending_footer + list(updated.footer)
        self._pending_footer = []
        return updated.with_changes(body=body, footer=footer)


def _input_exprs(original: cst.Call, updated: cst.Call, cand) -> list[cst.BaseExpression]:
    """The (already transformed) argument expressions that feed the op inputs."""
    # positions of input expressions in the original call
    out = []
    for expr in cand.input_exprs:
        for o_arg, u_arg in zip(original.args, updated.args):
            if o_arg.value is expr:
                out.append(u_arg.value)
                break
            if isinstance(o_arg.value, (cst.List, cst.Tuple)):
                for o_el, u_el in zip(o_arg.value.elements, u_arg.value.elements):
                    if o_el.value is expr:
                        out.append(u_el.value)
                        break
                else:
                    continue
                break
        else:
            raise AssertionError("input expression not found in its call")
    return out


# ---------------------------------------------------------------- cleanup ---


def _name_counts(module: cst.Module) -> Counter:
    counts: Counter = Counter()

    class _Count(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            counts[node.value] += 1

        def visit_Attribute(self, node: cst.Attribute) -> None:
            counts["." + node.attr.value] += 1

    module.visit(_Count())
    return counts


class _Cleanup(cst.CSTTransformer):
    """Drop assignments and tensorflow imports that the rewrite made dead."""

    def __init__(self, dead_stmts: set, dead_imports: set[str]):
        self.dead_stmts = dead_stmts
        self.dead_imports = dead_imports

    def _is_dead(self, stmt) -> bool:
        if stmt in self.dead_stmts:
            return True
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return False
        small = stmt.body[0]
        if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
            return all(self._alias(a) in self.dead_imports for a in small.names)
        return False

    @staticmethod
    def _alias(a: cst.ImportAlias) -> str:
        return a.asname.name.value if a.asname else a.name.value

    def _rebuild(self, originals: Sequence, body: Sequence) -> list:
        out: list = []
        carry: list = []
        removed_any = False
        for orig, stmt in zip(originals, body):
            if self._is_dead(orig):
                carry = _merge_blanks(carry, stmt.leading_lines, first=not out)
                removed_any = True
                continue
            if removed_any and (carry or not out):
                stmt = stmt.with_changes(leading_lines=_merge_blanks(carry, stmt.leading_lines, first=not out))
                carry, removed_any = [], False
            out.append(stmt)
        return out

    def leave_ImportFrom(self, original, updated):
        if isinstance(updated.names, cst.ImportStar):
            return updated
        keep = [a for a in updated.names if self._alias(a) not in self.dead_imports]
        if keep and len(keep) != len(updated.names):
            keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(names=keep)
        return updated

    def leave_IndentedBlock(self, original, updated):
        body = self._rebuild(original.body, updated.body) or [cst.SimpleStatementLine([cst.Pass()])]
        return updated.with_changes(body=body)

    def leave_Module(self, original, updated):
        return updated.with_changes(body=self._rebuild(original.body, updated.body))


class _ScopedDead(cst.CSTVisitor):
    """Which maybe-dead assignments are dead in the function (or module) that holds them."""

    def __init__(self, names: set[str], keep: set = frozenset(), seeded: bool = True):
        self.names = names - set(keep)
        self.seeded = seeded
        self.dead_stmts: set = set()
        self.counts: list[Counter] = []
        self.all_stmts: list = []
        self._scope_counts: dict = {}

    def counts_of(self, name: str, stmt) -> int:
        """Occurrences of ``name`` in the function (or module) holding ``stmt``."""
        return self._scope_counts.get(id(stmt), Counter())[name]

    def visit_Module(self, node: cst.Module) -> None:
        self.counts.append(_name_counts(node))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.counts.append(_name_counts(cst.Module(body=[node])))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.counts.pop()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        from migrator.tfnames import dotted

        self.all_stmts.append(node)
        self._scope_counts[id(node)] = self.counts[-1]
        if len(node.body) == 1 and isinstance(node.body[0], cst.Assign) and len(node.body[0].targets) == 1:
            key = dotted(node.body[0].targets[0].target)
            if key in self.names:
                counts = self.counts[0] if "." in key else self.counts[-1]
                probe = "." + key.rsplit(".", 1)[1] if "." in key else key
                effect = _side_effect(node.body[0].value)
                if counts[probe] <= 1 and (effect is None or effect == "draw" and not self.seeded):
                    self.dead_stmts.add(node)


def _side_effect(value: cst.BaseExpression) -> Optional[str]:
    """What evaluating a dead name's value does besides making the name: "draw" from a global
    random stream (`np.random.randint(0, 1e8)` in the py_func recipe: with `np.random.seed(0)`,
    later draws would change once it went; an adversarial run), move a counter ("other"), or None."""
    from migrator.tfnames import dotted

    found: list = []

    class V(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            name = dotted(node.func) or ""
            if name.startswith(("np.random.", "numpy.random.", "random.")):
                found.append("draw")
            elif name == "next":  # `"Grad%d" % next(counter)`: the counter moves on
                found.append("other")

    value.visit(V())
    return "other" if "other" in found else ("draw" if found else None)


def _dead(module: cst.Module, plan: OverridePlan) -> tuple[set, set[str]]:
    scan = _ScopedDead(plan.maybe_dead, plan.keep, plan.seeded)
    module.visit(scan)
    for name, stmts in plan.map_groups.items():  # a map built in a few statements, now read by nobody
        live = [n for n in scan.all_stmts if any(n.deep_equals(s) for s in stmts)]  # the rewrite copied them
        if live and sum(_name_counts(cst.Module(body=[s]))[name] for s in live) == scan.counts_of(name, live[0]):
            scan.dead_stmts |= set(live)
    counts = _name_counts(module)
    imports = {alias for alias in plan.maybe_dead_imports if counts[alias] == 1}  # only the import itself
    return scan.dead_stmts, imports


def _tensorflow_from_imports(module: cst.Module) -> set[str]:
    names = set()
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                    from migrator.tfnames import dotted

                    mod = dotted(small.module) if small.module else ""
                    if mod and mod.startswith("tensorflow"):
                        for a in small.names:
                            names.add(a.asname.name.value if a.asname else a.name.value)
    return names


def _add_tf_import(module: cst.Module, alias: str) -> cst.Module:
    """After the leading imports, not after the last import anywhere: a late import at the end of
    the file left ``@tf.custom_gradient`` above it undefined (found by an adversarial run)."""
    from migrator._plugins._grad_apply import add_tf_import

    return add_tf_import(module, alias)


def apply_plan(module: cst.Module, plan: OverridePlan) -> cst.Module:
    new = module.visit(_Apply(plan, module))
    plan.maybe_dead_imports &= _tensorflow_from_imports(new)
    for _ in range(2):  # removing `rnd_name = ...` may make nothing else dead; two rounds suffice
        dead, imports = _dead(new, plan)
        if not dead and not imports:
            break
        new = new.visit(_Cleanup(dead, imports))
        plan.maybe_dead_imports -= imports
    if plan.add_tf_import:
        new = _add_tf_import(new, plan.tf_alias)
    return new
