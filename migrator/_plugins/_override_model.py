"""Data shared by the override rewrite: sites found, evidence, candidates, the plan.

The rewrite runs in four steps, one module each, and this module is the only
one they all import (so they never import each other in a circle):

1. find   (``_override_find``): scopes, registrations and override blocks;
2. prove  (``_override_values``, ``_override_ops``, ``_override_prove``,
   ``_gradbody``, ``_gradfn``): every condition in docs/soundness.md, each
   giving a proof line or a :class:`Refuse`;
3. plan   (``_override_plan``): wrappers, helpers, removals and sites;
4. apply  (``_override_apply``): one transformer, then dead-code cleanup.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst


class Refuse(Exception):
    """A condition that cannot be shown from the source: the block stays as it is."""

    def __init__(self, code: str, reason: str):
        super().__init__(reason)
        self.code = code
        self.reason = reason


@dataclass
class Evidence:
    """What a site's rewrite rests on: proof lines, and assumptions taken on trust.

    An assumption is allowed only with ``--unsafe-fixes``; otherwise asking for
    one refuses the site, with a reason that names the assumption.
    """

    unsafe: bool = False
    proof: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)

    def prove(self, text: str) -> None:
        if text not in self.proof:
            self.proof.append(text)

    def assume(self, text: str, code: str, reason: str) -> None:
        if not self.unsafe:
            raise Refuse(code, f"{reason}; with --unsafe-fixes it is migrated assuming {text}")
        if text not in self.assumptions:
            self.assumptions.append(text)

    def merge(self, other: "Evidence") -> None:
        for p in other.proof:
            self.prove(p)
        for a in other.assumptions:
            if a not in self.assumptions:
                self.assumptions.append(a)


# ---------------------------------------------------------------- scopes ---


@dataclass(eq=False)
class Scope:
    node: cst.CSTNode
    parent: Optional["Scope"]
    assigns: dict[str, list[tuple[cst.CSTNode, cst.BaseExpression]]] = field(default_factory=dict)
    defs: dict[str, cst.CSTNode] = field(default_factory=dict)
    graph_names: dict[str, cst.With] = field(default_factory=dict)  # `with tf.Graph().as_default() as graph`
    params: dict[str, cst.Param] = field(default_factory=dict)
    tf_local_alias: Optional[str] = None
    bound: set = field(default_factory=set)  # every name the function binds, any way
    globals: set = field(default_factory=set)  # names declared `global` / `nonlocal`

    def lookup_assigns(self, name: str) -> Optional[list[tuple[cst.CSTNode, cst.BaseExpression]]]:
        scope: Optional[Scope] = self
        while scope is not None:
            if name in scope.assigns:
                return scope.assigns[name]
            if name in scope.params or name in scope.defs:
                return None
            scope = scope.parent
        return None

    def binding_scope(self, name: str) -> Optional["Scope"]:
        """The scope whose binding of ``name`` is visible here (None: a builtin or unknown)."""
        s: Optional[Scope] = self
        while s is not None:
            if name in s.assigns or name in s.params or name in s.defs or name in s.bound:
                return s
            s = s.parent
        return None

    def find_def(self, name: str) -> Optional[cst.FunctionDef]:
        """The function ``name`` refers to here, if it is a plain def (not rebound)."""
        s: Optional[Scope] = self
        while s is not None:
            if name in s.assigns or name in s.params:
                return None
            d = s.defs.get(name)
            if d is not None:
                return d if isinstance(d, cst.FunctionDef) else None
            s = s.parent
        return None

    def module(self) -> "Scope":
        s = self
        while s.parent is not None:
            s = s.parent
        return s

    @property
    def function(self) -> Optional[cst.FunctionDef]:
        return self.node if isinstance(self.node, cst.FunctionDef) else None


@dataclass(eq=False)
class Registration:
    key: tuple  # ("lit", name) or ("name", id(scope), varname)
    scope: Scope
    fn: Optional[cst.FunctionDef] = None  # the registered def
    decorator: Optional[cst.Decorator] = None
    stmt: Optional[cst.SimpleStatementLine] = None  # call form `RegisterGradient(k)(fn)`
    fn_param: Optional[str] = None  # call form where fn is a parameter (py_func recipe)
    line: int = 0
    #: compound statements between the registration and its scope (an `if` guard, a loop)
    enclosing: list = field(default_factory=list)


@dataclass(eq=False)
class Block:
    node: cst.With
    call: cst.Call
    scope: Scope
    stmt_parent: Optional["Block"]
    line: int
    col: int
    children: list["Block"] = field(default_factory=list)
    mapping: dict[str, tuple] = field(default_factory=dict)  # filled by the map proof
    map_stmts: list = field(default_factory=list)  # the named map's binding and literal updates
    graph_chain: list = field(default_factory=list)  # `h = g = tf.get_default_graph()`: the names after the first


@dataclass(eq=False)
class Candidate:
    """One op of an overridden type that the rewrite wraps in a custom_gradient function.

    ``input_exprs`` are the source expressions feeding the op inputs that
    become wrapper parameters; ``slots`` their op-input positions.  Op inputs
    that are Python values stay inside the wrapper (``consts``: op-input
    position -> (their code, the op-input position of the tensor whose dtype
    TF1 converted them to), for a gradient that reads them).  ``convert`` maps
    an index of ``input_exprs`` to the code of the tensor whose dtype TF1
    converted it to (an operand that may be a Python number, next to a
    tensor): the call site converts it the same way; ``None`` converts it
    with no dtype, as tf.py_func did its list inputs.  ``attr_lets`` are
    keyword arguments of the call evaluated once in the wrapper, where the op
    is made (non-literal op attributes).
    """

    node: cst.CSTNode  # Call, BinaryOperation or UnaryOperation
    op_type: str
    target: tuple  # gradient reference from the map
    input_exprs: list[cst.BaseExpression]
    input_names: list[str]
    forward: Optional[cst.BaseExpression]  # forward call with inputs replaced by parameters
    variadic: bool = False  # py_func with a list parameter: def f(*inputs)
    needs_closure: bool = False
    stmt: Optional[cst.CSTNode] = None  # the statement (inside the block) holding the op
    tf_name: Optional[str] = None
    block: Optional[Block] = None
    post_lines: list = field(default_factory=list)  # extra lines after `y = forward` in the wrapper
    n_inputs: int = 0  # inputs of the op (wrapper parameters plus constants)
    slots: list[int] = field(default_factory=list)
    consts: dict[int, tuple[str, int]] = field(default_factory=dict)
    const_nodes: dict[int, cst.CSTNode] = field(default_factory=dict)  # op-input position -> its source node
    convert: dict[int, Optional[str]] = field(default_factory=dict)
    attr_lets: list[tuple[str, str]] = field(default_factory=list)  # (call parameter, code)
    bound: dict = field(default_factory=dict)  # call parameter -> (position, expression)
    evidence: Evidence = field(default_factory=Evidence)


@dataclass
class OverridePlan:
    replace: dict[cst.CSTNode, tuple[str, Candidate]] = field(default_factory=dict)
    dissolve: set[cst.With] = field(default_factory=set)
    helpers: dict[cst.FunctionDef, Optional[cst.FunctionDef]] = field(default_factory=dict)
    remove: set[cst.CSTNode] = field(default_factory=set)
    insert_before: dict[cst.CSTNode, list[str]] = field(default_factory=dict)
    insert_after: dict[cst.CSTNode, list[str]] = field(default_factory=dict)
    maybe_dead: set[str] = field(default_factory=set)  # names whose assignment may now be dead
    #: the project may seed a global random stream (`np.random.seed(0)`): a dead name's draw from it stays
    seeded: bool = True
    #: a named map and the statements that build it: all dead once nothing else reads it
    map_groups: dict[str, list] = field(default_factory=dict)
    keep: set[str] = field(default_factory=set)  # module-level names other files import: never dead
    maybe_dead_imports: set[str] = field(default_factory=set)
    tf_alias: str = "tf"
    add_tf_import: bool = False

    @property
    def empty(self) -> bool:
        return not (self.replace or self.dissolve or self.helpers or self.remove)


# ------------------------------------------------------------- cst helpers ---


def code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def is_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(node, cst.Name) and node.value in ("None", "True", "False"):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        return is_literal(node.expression)
    if isinstance(node, (cst.List, cst.Tuple)):
        return all(not isinstance(e, cst.StarredElement) and is_literal(e.value) for e in node.elements)
    return False


def is_number(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        return is_number(node.expression)
    return False


def assigned_counts(body: cst.CSTNode) -> dict[str, int]:
    """How many times each name is bound in ``body`` (any binding form)."""
    counts: dict[str, int] = {}

    class _C(cst.CSTVisitor):
        def _names(self, target) -> None:
            if isinstance(target, cst.Name):
                counts[target.value] = counts.get(target.value, 0) + 1
            elif isinstance(target, (cst.Tuple, cst.List)):
                for e in target.elements:
                    self._names(e.value)
            elif isinstance(target, cst.StarredElement):
                self._names(target.value)

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            self._names(node.target)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            self._names(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            self._names(node.target)

        def visit_For(self, node: cst.For) -> None:
            self._names(node.target)

        def visit_CompFor(self, node: cst.CompFor) -> None:
            self._names(node.target)

        def visit_AsName(self, node: cst.AsName) -> None:
            self._names(node.name)

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            self._names(node.target)

    body.visit(_C())
    return counts
