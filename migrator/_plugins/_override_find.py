"""Find the override sites of one module: scopes, registrations, blocks.

One metadata pass (qualified names, positions, parents).  Nothing here
decides anything; the proofs read what is collected.
"""
from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Optional

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from migrator._plugins._override_model import Block, Registration, Scope, assigned_counts
from migrator.tfnames import TF_MODULES, LazyQualifiedNameProvider, QualifiedNames, dotted, normalize, tf_name

_COMPOUND = (cst.If, cst.For, cst.While, cst.Try, cst.With, cst.Match) if hasattr(cst, "Match") else (
    cst.If, cst.For, cst.While, cst.Try, cst.With)


class Collector(cst.CSTVisitor):
    """One pass: scopes, assignments, registrations, override blocks."""

    def __init__(self, qnames, positions):
        self.qnames = qnames
        self.positions = positions
        self.module_scope: Optional[Scope] = None
        self.scopes: list[Scope] = []
        self.stmts: list[cst.CSTNode] = []
        self.compound: list[list[cst.CSTNode]] = []  # per scope: open compound statements
        self.blocks: list[Block] = []
        self.block_stack: list[Block] = []
        self.registrations: list[Registration] = []
        self.scope_of_def: dict[cst.FunctionDef, Scope] = {}
        self.tf_aliases: list[str] = []  # names bound to the tensorflow module at top level
        self.calls_by_name: dict[str, list[tuple[cst.Call, Scope]]] = {}
        self.block_calls: set[cst.Call] = set()  # the calls that head a single-item with
        self.escaping: list[tuple[cst.BaseExpression, Scope, int, int]] = []  # (the graph, ...)
        self._called: set[int] = set()  # ids of the funcs of calls seen
        self.graph_withs: list[cst.With] = []  # `with <tf graph>.as_default():` statements
        self.api_patches: list = []  # statements that replace something on a TF module (set by the planner)

    def tf(self, node: cst.CSTNode) -> Optional[str]:
        """The TF name of ``node``; None also when it may be two (bound on two branches)."""
        return tf_name(node, self.qnames)

    def qualified(self, node: cst.CSTNode) -> set[str]:
        return {q.name for q in self.qnames.get(node.func if isinstance(node, cst.Call) else node, ())}

    def builtin(self, node: cst.CSTNode) -> Optional[str]:
        """The builtin ``node`` (a name, or a call of one) surely is, else None.  libcst names a
        module's own ``def max`` or ``class round`` just ``max``, as it does nothing it cannot
        see: only ``builtins.max`` is the builtin, and only where no star import may bind the
        name (a project's ``from mathutils import *`` brought a `round` making tf.round: an
        adversarial run, whose override was removed as dead)."""
        func = node.func if isinstance(node, cst.Call) else node
        if not isinstance(func, cst.Name) or not hasattr(builtins, func.value):
            return None  # under a star import the names hold `tfnames.STARRED` too
        return func.value if self.qualified(func) == {f"builtins.{func.value}"} else None

    @property
    def scope(self) -> Scope:
        return self.scopes[-1]

    def visit_Module(self, node: cst.Module) -> None:
        self.module_scope = Scope(node, None, bound=_top_level_bound(node))
        # imports a module-level wrapper may use: unconditional, before the first def, class or
        # statement that is not an import (an adversarial run: an import at the bottom, or under
        # an `if`, left `@tf.custom_gradient` undefined)
        self.leading = set()
        for st in node.body:
            if isinstance(st, cst.SimpleStatementLine) and all(
                    isinstance(x, (cst.Import, cst.ImportFrom, cst.Expr, cst.Assign)) for x in st.body):
                self.leading |= {id(x) for x in st.body}
            elif not isinstance(st, (cst.If, cst.Try)):
                break
        self.scopes.append(self.module_scope)
        self.compound.append([])

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted(alias.name)
            if full in TF_MODULES:
                name = alias.asname.name.value if alias.asname is not None else "tensorflow" if full == "tensorflow" else None
                if name is None:
                    continue
                if len(self.scopes) == 1 and id(node) in self.leading:
                    self.tf_aliases.append(name)
                elif len(self.scopes) > 1:  # a function-local `import tensorflow`
                    self.scope.tf_local_alias = self.scope.tf_local_alias or name

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        # `from tensorflow.compat import v1 as tf`: the file's TF module (an added `import tensorflow
        # as tf` after it would rebind `tf` to the TF2 API for every other line of the file)
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        base = dotted(node.module)
        for alias in node.names:
            if normalize(f"{base}.{alias.evaluated_name}") in TF_MODULES:
                name = alias.evaluated_alias or alias.evaluated_name
                if len(self.scopes) == 1 and id(node) in self.leading:
                    self.tf_aliases.append(name)
                elif len(self.scopes) > 1:
                    self.scope.tf_local_alias = self.scope.tf_local_alias or name

    def visit_Global(self, node: cst.Global) -> None:
        self.scope.globals |= {n.name.value for n in node.names}

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.scope.globals |= {n.name.value for n in node.names}

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scope.defs.setdefault(node.name.value, node)
        self.scopes.append(Scope(node, self.scope))
        self.compound.append([])

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.scopes.pop()
        self.compound.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        outer = self.scope
        outer.defs[node.name.value] = node
        scope = Scope(node, outer)
        for p in list(node.params.params) + list(node.params.kwonly_params) + list(node.params.posonly_params):
            scope.params[p.name.value] = p
        for p in (node.params.star_arg, node.params.star_kwarg):
            if isinstance(p, cst.Param):
                scope.params[p.name.value] = p
        self.scope_of_def[node] = scope
        # every name the function binds (with ... as n, for n in, n := ...): a wrapper that
        # reads one of them must be defined inside the function
        scope.bound = set(assigned_counts(node.body))
        for dec in node.decorators:
            d = dec.decorator
            if isinstance(d, cst.Call) and self.tf(d) == "tensorflow.RegisterGradient":
                key = self._reg_key(d, outer)
                if key is not None:
                    pos = self.positions[dec]
                    self.registrations.append(Registration(
                        key, outer, fn=node, decorator=dec, line=pos.start.line, enclosing=list(self.compound[-1])))
        self.scopes.append(scope)
        self.compound.append([])

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scopes.pop()
        self.compound.pop()

    def _reg_key(self, call: cst.Call, scope: Scope) -> Optional[tuple]:
        if len(call.args) != 1:
            return None
        arg = call.args[0].value
        if isinstance(arg, cst.SimpleString):
            return ("lit", arg.evaluated_value)
        if isinstance(arg, cst.Name):
            bound = scope.lookup_assigns(arg.value)
            if bound and len(bound) == 1 and isinstance(bound[0][1], cst.SimpleString):
                return ("lit", bound[0][1].evaluated_value)
            return ("name", id(scope), arg.value)
        return None

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.stmts.append(node)
        for small in node.body:
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                outer = small.value
                inner = outer.func
                if isinstance(inner, cst.Call) and self.tf(inner) == "tensorflow.RegisterGradient":
                    key = self._reg_key(inner, self.scope)
                    if key is None or len(outer.args) != 1:
                        continue
                    target = outer.args[0].value
                    reg = Registration(key, self.scope, stmt=node, line=self.positions[node].start.line,
                                       enclosing=list(self.compound[-1]))
                    if isinstance(target, cst.Name):
                        if target.value in self.scope.params:
                            reg.fn_param = target.value
                        else:
                            reg.fn = self._find_def(target.value)
                    self.registrations.append(reg)

    def _find_def(self, name: str) -> Optional[cst.FunctionDef]:
        for scope in reversed(self.scopes):
            d = scope.defs.get(name)
            if isinstance(d, cst.FunctionDef):
                return d
        return None

    def leave_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.stmts.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        stmt = self.stmts[-1] if self.stmts else node
        for t in node.targets:
            key = dotted(t.target)
            if key is None:
                continue
            self.scope.assigns.setdefault(key, []).append((stmt, node.value))
            if "." in key:  # self.G = ... : visible from every method
                self.module_scope.assigns.setdefault(key, []).append((stmt, node.value))  # type: ignore[union-attr]

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        key = dotted(node.target)
        if key and node.value is not None:
            self.scope.assigns.setdefault(key, []).append((self.stmts[-1] if self.stmts else node, node.value))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        key = dotted(node.target)
        if key:
            self.scope.assigns.setdefault(key, []).append((node, node.value))

    def visit_Call(self, node: cst.Call) -> None:
        self._called.add(id(node.func))  # visited before the func itself (visit_Attribute)
        if isinstance(node.func, cst.Name):
            self.calls_by_name.setdefault(node.func.value, []).append((node, self.scope))
        elif (
            isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "gradient_override_map"
            and node not in self.block_calls
        ):
            # entered some other way: the override's extent cannot be read from the source
            pos = self.positions[node]
            self.escaping.append((node.func.value, self.scope, pos.start.line, pos.start.column + 1))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "gradient_override_map" and id(node) not in self._called:
            # `om = g.gradient_override_map`, then `with om({...}):` (an adversarial run: importers
            # of that file were migrated, and the tape ignored the override)
            pos = self.positions[node]
            self.escaping.append((node.value, self.scope, pos.start.line, pos.start.column + 1))

    def _enter_compound(self, node: cst.CSTNode) -> None:
        self.compound[-1].append(node)

    def _leave_compound(self, node: cst.CSTNode) -> None:
        if self.compound[-1] and self.compound[-1][-1] is node:
            self.compound[-1].pop()

    def visit_If(self, node: cst.If) -> None:
        self._enter_compound(node)

    def leave_If(self, node: cst.If) -> None:
        self._leave_compound(node)

    def visit_For(self, node: cst.For) -> None:
        self._enter_compound(node)

    def leave_For(self, node: cst.For) -> None:
        self._leave_compound(node)

    def visit_While(self, node: cst.While) -> None:
        self._enter_compound(node)

    def leave_While(self, node: cst.While) -> None:
        self._leave_compound(node)

    def visit_Try(self, node: cst.Try) -> None:
        self._enter_compound(node)

    def leave_Try(self, node: cst.Try) -> None:
        self._leave_compound(node)

    def visit_With(self, node: cst.With) -> None:
        self._enter_compound(node)
        for item in node.items:
            call = item.item
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "as_default":
                self.graph_withs.append(node)
                # `as g` binds the graph itself (Graph.as_default yields it), whatever spells it:
                # tf.Graph(), sess.graph, a parameter
                if item.asname is not None and isinstance(item.asname.name, cst.Name):
                    self.scope.graph_names[item.asname.name.value] = node
        if len(node.items) == 1:
            call = node.items[0].item
            if (
                isinstance(call, cst.Call)
                and isinstance(call.func, cst.Attribute)
                and call.func.attr.value == "gradient_override_map"
            ):
                pos = self.positions[node]
                parent = self.block_stack[-1] if self.block_stack else None
                block = Block(node, call, self.scope, parent, pos.start.line, pos.start.column + 1)
                self.block_calls.add(call)
                if parent is not None:
                    parent.children.append(block)
                self.blocks.append(block)
                self.block_stack.append(block)

    def leave_With(self, node: cst.With) -> None:
        self._leave_compound(node)
        if self.block_stack and self.block_stack[-1].node is node:
            self.block_stack.pop()


def _top_level_bound(module: cst.Module) -> set:
    """Names the module's own statements bind (not those bound inside its functions)."""
    names: set = set()
    for stmt in module.body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            names.add(stmt.name.value)
            continue
        names |= set(assigned_counts(_without_defs(stmt)))
    return names


def _without_defs(stmt: cst.CSTNode) -> cst.CSTNode:
    class _Strip(cst.CSTTransformer):
        def leave_FunctionDef(self, original, updated):
            return cst.RemoveFromParent()

        def leave_ClassDef(self, original, updated):
            return cst.RemoveFromParent()

    if isinstance(stmt, cst.SimpleStatementLine):
        return stmt
    return cst.Module(body=[stmt]).visit(_Strip())


@dataclass
class Found:
    """What one module holds: the collector's tables plus the metadata the proofs read."""

    module: cst.Module
    col: Collector
    parents: object  # node -> parent node

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        try:
            return self.parents[node]  # type: ignore[index]
        except KeyError:
            return None

    def line(self, node: cst.CSTNode) -> int:
        return self.col.positions[node].start.line


def find_sites(module: cst.Module, wrapper: Optional[MetadataWrapper] = None) -> Optional[Found]:
    """The override blocks and registrations of ``module`` (None when it has no block).

    ``wrapper``: a MetadataWrapper of ``module`` itself (not a copy) whose resolved
    metadata other plugins may reuse (``FileContext.metadata``); one is made when absent."""
    if wrapper is None or wrapper.module is not module:  # the plan rewrites these very nodes
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    qnames = QualifiedNames(wrapper.resolve(LazyQualifiedNameProvider))
    positions = wrapper.resolve(PositionProvider)
    col = Collector(qnames, positions)
    wrapper.visit(col)
    if not col.blocks and not col.escaping:
        return None
    return Found(module, col, wrapper.resolve(ParentNodeProvider))
