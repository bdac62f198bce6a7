"""The model of one tape rewrite: the calls found, the statements of a block, the tapes.

Shared by finding (_grad_find), planning (_grad_plan), proving (_grad_proof) and
writing (_grad_apply).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

STATE = "<state>"  # pseudo key: what the project's code may read and write besides names
TRAINABLE = "<trainable variables>"  # pseudo key: the sources are every trainable variable


class Refuse(Exception):
    def __init__(self, code: str, reason: str):
        super().__init__(reason)
        self.code, self.reason = code, reason


@dataclass
class Source:
    """One source the tape must watch: the expression as written at the call."""

    key: str  # dotted key (``x``, ``self.w``, ``params``)
    expr: cst.BaseExpression
    after: Optional[int] = None  # watch right after this item; None: at the start of the tape
    watch: Optional[list] = None  # expressions to watch instead of ``expr`` (the values a list names)
    inner: Optional[cst.CSTNode] = None  # watch after this line inside the with body of item ``after``


@dataclass
class Call:
    """One gradient call (or the inner gradient of a tf.hessians)."""

    node: Optional[cst.Call]  # None for the synthetic inner gradient of tf.hessians
    kind: str  # grad | hess | jac | bjac
    replace: Optional[cst.CSTNode] = None  # the node replaced in the statement (call or call[0])
    index0: bool = False
    line: int = 0
    col: int = 1
    ys: Optional[cst.BaseExpression] = None
    xs: Optional[cst.BaseExpression] = None
    kwargs: dict = field(default_factory=dict)  # new keyword -> expression
    notes: list = field(default_factory=list)
    persistent: bool = False  # the call itself needs a persistent tape
    refused: Optional[Refuse] = None
    partner: Optional["Call"] = None  # hessian <-> its inner gradient
    # planning and proof
    item: int = -1  # index of the statement item holding the call
    ys_keys: set = field(default_factory=set)
    sources: list = field(default_factory=list)  # [Source]
    target: Optional[str] = None  # result name of a synthetic inner gradient
    region: tuple = (0, 0)
    fresh_sources: bool = False  # every source is made by a TF op in the region (`_grad_proof`)
    group: Optional["Group"] = None
    xs_kind: str = "tensor"  # a single source name: "tensor", "list", "tuple" or "unknown"
    proof: list = field(default_factory=list)
    assumptions: list = field(default_factory=list)
    #: set when the tape goes in an enclosing block (_grad_home): {"loop", "ys_keys", "over"}
    lifted: Optional[dict] = None
    #: the sources are an expression of names (``[a[i], b]``, ``x + ys``): the tape watches the names
    xs_leaves: bool = False
    #: names generated for this call (a hoisted target, a hessian's inner gradient), kept across plans
    names: dict = field(default_factory=dict)
    #: one gradient per index of ``range(n)`` (_grad_per_index): {"var", "range", "over"}
    per_index: Optional[dict] = None


@dataclass
class Item:
    """A statement of a block, original or generated (hoisted ys, inner gradient)."""

    orig: Optional[cst.BaseStatement]
    fx: object  # _dataflow.Effects
    inert: bool
    calls: list = field(default_factory=list)
    hoist: Optional[tuple] = None  # (name, expr) for a hoisted ys
    inner: Optional[Call] = None  # the synthetic inner gradient of a tf.hessians
    owner: Optional[Call] = None  # the call a generated item belongs to
    kinds: frozenset = frozenset()  # kinds of the calls it makes (_grad_values.call_kind)
    maybe_mutates: frozenset = frozenset()  # keys passed to project code, which may mutate them
    #: keys the statement may read before binding them itself (_dataflow.exposed); None: all reads
    exposed: Optional[tuple] = None

    @property
    def node(self) -> Optional[cst.CSTNode]:
        """The statement, or the expression of a hoisted ys (None for a generated inner gradient)."""
        return self.orig if self.orig is not None else (self.hoist or (None, None))[1]

    @property
    def exposed_reads(self) -> set:
        return self.fx.reads if self.exposed is None else self.exposed[0]

    @property
    def exposed_data(self) -> set:
        return self.fx.data if self.exposed is None else self.exposed[1]

    @property
    def dead(self) -> bool:
        return self.owner is not None and self.owner.refused is not None


@dataclass
class Group:
    """One tape: its with-block spans items s..e, its calls come after."""

    s: int
    e: int
    calls: list = field(default_factory=list)
    children: list = field(default_factory=list)
    name: str = ""

    @property
    def ks(self) -> list:
        return [c.item for c in self.calls]

    def all_calls(self):
        yield from self.calls
        for ch in self.children:
            yield from ch.all_calls()


@dataclass
class BlockScope:
    """Where a block sits: its function, and what ran before it in that function."""

    func: Optional[cst.FunctionDef]  # None at module level
    params: set = field(default_factory=set)
    locals: set = field(default_factory=set)  # every name the function binds (params too)
    in_loop: bool = False  # the block is inside a loop of its function
    prefix: list = field(default_factory=list)  # items of enclosing blocks that run before it
    loop_writes: set = field(default_factory=set)  # keys bound anywhere in the enclosing loops
