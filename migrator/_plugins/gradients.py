"""``tf.gradients`` / ``tf.hessians`` / pfor ``jacobian`` -> ``tf.GradientTape``.

The rewrite works per block (a statement list).  For a call at statement k of
block B it computes the backward slice of ``ys`` over B's statements before k,
opens ``with tf.GradientTape() as tape:`` around the slice (from its first
statement that reads a program value to its last statement), watches the
sources, and replaces the call by ``tape.gradient`` / ``tape.jacobian`` after
the ``with`` block.  Calls whose regions overlap share one persistent tape, or
nest when one differentiates the other's result.  Anything the analysis cannot
prove is refused with a stable code and left byte-identical.

See docs/rewrite_gradients.md for every rule and refusal.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Optional, Union

import libcst as cst
import libcst.matchers as m
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider

from migrator import codes
from migrator._plugins import Plugin, register
from migrator._plugins._dataflow import BUILTINS, Effects, effects, touches
from migrator.model import HESSIANS, JACOBIAN, MANUAL, MIGRATED, TF_GRADIENTS, Site
from migrator.naming import NameAllocator
from migrator.pipeline import imported_modules
from migrator.tfnames import dotted, normalize, tf_name

GRADIENTS = "tensorflow.gradients"
HESSIANS_API = "tensorflow.hessians"
PFOR = "tensorflow.python.ops.parallel_for.gradients"
JAC = PFOR + ".jacobian"
BJAC = PFOR + ".batch_jacobian"
APIS = {GRADIENTS: "grad", HESSIANS_API: "hess", JAC: "jac", BJAC: "bjac"}

#: keras.backend.gradients spellings (graph-only; reported, never rewritten)
KERAS_GRADIENTS = {
    "keras.backend.gradients",
    "tensorflow.keras.backend.gradients",
    "tensorflow.python.keras.backend.gradients",
    "tf_keras.backend.gradients",
    "keras.src.backend.gradients",
}

#: (positional order, arguments that carry over, arguments dropped with a note)
SIGNATURES = {
    "grad": (
        ["ys", "xs", "grad_ys", "name", "colocate_gradients_with_ops", "gate_gradients",
         "aggregation_method", "stop_gradients", "unconnected_gradients"],
        {"grad_ys": "output_gradients", "unconnected_gradients": "unconnected_gradients"},
        {"name", "colocate_gradients_with_ops", "gate_gradients", "aggregation_method"},
    ),
    "hess": (
        ["ys", "xs", "name", "colocate_gradients_with_ops", "gate_gradients", "aggregation_method"],
        {},
        {"name", "colocate_gradients_with_ops", "gate_gradients", "aggregation_method"},
    ),
    "jac": (
        ["output", "inputs", "use_pfor", "parallel_iterations"],
        {"use_pfor": "experimental_use_pfor", "parallel_iterations": "parallel_iterations"},
        set(),
    ),
    "bjac": (
        ["output", "inp", "use_pfor", "parallel_iterations"],
        {"use_pfor": "experimental_use_pfor", "parallel_iterations": "parallel_iterations"},
        set(),
    ),
}

#: TF functions that return a list (a source bound to one is a list of sources)
LIST_RETURNING = {
    "tensorflow.trainable_variables", "tensorflow.global_variables", "tensorflow.local_variables",
    "tensorflow.get_collection", "tensorflow.split", "tensorflow.unstack", "tensorflow.meshgrid",
    "tensorflow.dynamic_partition", "tensorflow.model_variables",
}
LIST_ATTRS = {"trainable_variables", "trainable_weights", "weights", "variables", "non_trainable_variables"}
#: calls known to give one tensor (variables and constants make no op the table could show)
TENSOR_CONSTRUCTORS = {
    "tensorflow.constant", "tensorflow.Variable", "tensorflow.get_variable", "tensorflow.placeholder",
    "tensorflow.convert_to_tensor", "tensorflow.zeros", "tensorflow.ones", "tensorflow.fill",
}

#: functions whose function arguments run in graph-only control flow
GRAPH_FN_CALLS = {
    "tensorflow.while_loop", "tensorflow.cond", "tensorflow.case", "tensorflow.switch_case",
}

BlockNode = Union[cst.Module, cst.IndentedBlock]


class Refuse(Exception):
    def __init__(self, code: str, reason: str):
        super().__init__(reason)
        self.code = code
        self.reason = reason


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
    # planning
    item: int = -1  # index of the statement item holding the call
    ys_keys: set = field(default_factory=set)
    sources: list = field(default_factory=list)  # [(key, expr)] to watch
    target: Optional[str] = None  # result name of a synthetic inner gradient
    region: tuple = (0, 0)
    group: Optional["Group"] = None
    xs_kind: str = "tensor"  # a single source name: "tensor", "list" or "unknown"
    auto_watched: set = field(default_factory=set)  # sources bound to trainable variables


@dataclass
class Item:
    """A statement of a block, original or generated (hoisted ys, inner gradient)."""

    orig: Optional[cst.BaseStatement]
    fx: Effects
    inert: bool
    calls: list = field(default_factory=list)
    hoist: Optional[tuple] = None  # (name, expr) for a hoisted ys
    inner: Optional[Call] = None  # the synthetic inner gradient of a tf.hessians
    owner: Optional[Call] = None  # the call a generated item belongs to

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


class _Find(cst.CSTVisitor):
    """Candidate calls, K.gradients, graph-only functions; all with metadata."""

    METADATA_DEPENDENCIES = (QualifiedNameProvider, PositionProvider, ParentNodeProvider)

    def __init__(self) -> None:
        self.calls: list[tuple[cst.Call, str]] = []
        self.keras: list[cst.Call] = []
        self.values: list[cst.CSTNode] = []  # non-call references to the API
        self.graph_fn_nodes: set[int] = set()
        self.graph_fn_names: set[str] = set()
        self.registered_defs: set[int] = set()
        self.api_aliases: dict[str, str] = {}  # bound name -> API it imports
        self.tf_alias: Optional[str] = None
        self.variables: dict[str, list] = {}
        self.imported: set[str] = set()
        self.defs: set[str] = set()
        self.depth = 0

    @functools.cached_property
    def module_constants(self) -> set:
        """Module-level names bound only to defs/classes or values that read no program names."""
        ok = self.imported | BUILTINS
        out = set(self.defs)
        for name, vals in self.variables.items():
            if all(all(r.split(".")[0] in ok for r in effects(v).reads) for v in vals):
                out.add(name)
        return out

    def visit_Call(self, node: cst.Call) -> None:
        name = tf_name(node, self)
        if name in APIS:
            self.calls.append((node, APIS[name]))
            return
        raw = {q.name for q in self.get_metadata(QualifiedNameProvider, node.func, set())}
        if raw & KERAS_GRADIENTS:
            self.keras.append(node)
            return
        if name in GRAPH_FN_CALLS:
            for a in node.args:
                self._graph_fn(a.value)
        elif isinstance(node.func, cst.Call) and tf_name(node.func, self) == "tensorflow.RegisterGradient":
            for a in node.args:
                self._graph_fn(a.value)

    def _graph_fn(self, expr: cst.CSTNode) -> None:
        if isinstance(expr, (cst.Lambda, cst.FunctionDef)):
            self.graph_fn_nodes.add(id(expr))
        elif isinstance(expr, cst.Name):
            self.graph_fn_names.add(expr.value)
        elif isinstance(expr, (cst.List, cst.Tuple)):
            for el in expr.elements:
                self._graph_fn(el.value)
        elif isinstance(expr, cst.Dict):
            for el in expr.elements:
                if isinstance(el, cst.DictElement):
                    self._graph_fn(el.value)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if self.depth == 0:
            self.defs.add(node.name.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self.depth == 0:
            self.defs.add(node.name.value)
        self.depth += 1
        for dec in node.decorators:
            d = dec.decorator
            if isinstance(d, cst.Call) and tf_name(d, self) == "tensorflow.RegisterGradient":
                self.registered_defs.add(id(node))

    def _reference(self, node: cst.BaseExpression) -> None:
        parent = self.get_metadata(ParentNodeProvider, node, None)
        if isinstance(parent, cst.Call) and parent.func is node:
            return
        if isinstance(parent, (cst.ImportAlias, cst.Attribute, cst.AsName, cst.ImportFrom, cst.Import)):
            return
        if tf_name(node, self) in APIS:
            self.values.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in ("gradients", "hessians", "jacobian", "batch_jacobian"):
            self._reference(node)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.api_aliases:
            self._reference(node)

    def visit_Import(self, node: cst.Import) -> None:
        for a in node.names:
            full = a.evaluated_name
            bound = a.evaluated_alias or full.split(".")[0]
            self.imported.add(bound)
            if full == PFOR:
                self.api_aliases[bound] = PFOR
            if self.tf_alias is None and full in ("tensorflow", "tensorflow.compat.v1", "tensorflow.compat.v2"):
                if a.asname is not None or full == "tensorflow":
                    self.tf_alias = bound

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar) or node.module is None:
            return
        mod = dotted(node.module) or ""
        for a in node.names:
            bound = a.evaluated_alias or a.evaluated_name
            self.imported.add(bound)
            full = normalize(f"{mod}.{a.evaluated_name}")
            if full is not None:
                full = {"tensorflow.python.ops.gradients_impl.gradients": GRADIENTS}.get(full, full)
            if full in APIS or full == PFOR:
                self.api_aliases[bound] = full

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.depth += 1

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self.depth -= 1

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.depth -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        if self.depth == 0 and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            self.variables.setdefault(node.targets[0].target.value, []).append(node.value)


def _is_index0(node: cst.CSTNode, parent: cst.CSTNode) -> bool:
    return (
        isinstance(parent, cst.Subscript)
        and parent.value is node
        and len(parent.slice) == 1
        and m.matches(parent.slice[0].slice, m.Index(value=m.Integer(value="0")))
    )


def _one_output(name: str) -> bool:
    """A public TF function whose traced op list ends in a single-output op."""
    from migrator import optable

    info = optable.function_info(name)
    return bool(info and info["ops"] and info["ops"][-1].get("num_outputs") == 1)


def _chain_items(expr: cst.BaseExpression) -> Optional[list]:
    """[(key, expr)] for a name/attribute chain or a list/tuple of them."""
    key = dotted(expr)
    if key is not None:
        return [(key, expr)]
    if isinstance(expr, (cst.List, cst.Tuple)) and expr.elements:
        out = []
        for el in expr.elements:
            if isinstance(el, cst.StarredElement):
                return None
            k = dotted(el.value)
            if k is None:
                return None
            out.append((k, el.value))
        return out
    return None


def _readable(expr: cst.BaseExpression) -> str:
    """A readable name for a hoisted ys expression: ``tf.reduce_sum(y)`` -> ``y_sum``."""
    if isinstance(expr, cst.Call) and expr.args:
        fn = dotted(expr.func) or ""
        last = fn.rsplit(".", 1)[-1]
        arg = dotted(expr.args[0].value)
        if arg is not None:
            arg = arg.rsplit(".", 1)[-1]
            for prefix, suffix in (("reduce_sum", "sum"), ("reduce_mean", "mean"), ("reduce_max", "max"),
                                   ("reduce_min", "min"), ("square", "sq"), ("norm", "norm")):
                if last == prefix:
                    return f"{arg}_{suffix}"
    return "target"


def _list_of_names(code: list[str]) -> cst.BaseExpression:
    if len(code) == 1:
        return cst.parse_expression(code[0])
    return cst.parse_expression("[" + ", ".join(code) + "]")


def _stmt(expr: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([cst.Expr(expr)])


def _assign(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], value)])


def _call(func: str, args: list[cst.BaseExpression], kwargs: list[tuple[str, cst.BaseExpression]]) -> cst.Call:
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


def _clean(expr: cst.BaseExpression) -> cst.BaseExpression:
    """An argument expression without the layout of the old call around it."""
    return expr.deep_clone()


@register
class GradientsPlugin(Plugin):
    name = "gradients"
    order = 20
    triggers = (b"gradients", b"hessians", b"jacobian")

    def rewrite(self, module: cst.Module, ctx) -> cst.Module:
        if not _may_have_candidates(module.code):
            return module  # metadata is the expensive part: skip it when no name can match
        return _Rewrite(module, ctx).run()


_API_LEAVES = {"gradients", "hessians", "jacobian", "batch_jacobian"}


def _may_have_candidates(code: str) -> bool:
    """Cheap syntactic pre-check (stdlib ast, no metadata): is there an ``X.gradients``-like
    attribute on an imported name, or a name imported as one of the APIs?"""
    import ast

    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return True
    imported: set = set()
    api_names: set = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                imported.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                bound = a.asname or a.name
                imported.add(bound)
                if a.name in _API_LEAVES:
                    api_names.add(bound)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in _API_LEAVES:
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in imported:
                return True
        elif isinstance(node, ast.Name) and node.id in api_names:
            return True
    return False


class _Rewrite:
    def __init__(self, module: cst.Module, ctx) -> None:
        self.ctx = ctx
        self.wrapper = cst.metadata.MetadataWrapper(module)
        self.module = self.wrapper.module
        self.find = _Find()
        self.names = NameAllocator(self.module)
        self.name_cache: dict[str, str] = {}
        self.replacements: dict[int, Call] = {}  # id(replaced node) -> call
        self.block_plans: dict[int, tuple] = {}  # id(block) -> (items, groups)
        self.reserved: dict[int, set] = {}  # id(block) -> tape names alive around it

    # -- driver ---------------------------------------------------------
    def run(self) -> cst.Module:
        self.wrapper.visit(self.find)
        f = self.find
        if not f.calls and not f.keras and not f.values:
            return self.module
        self.parents = self.wrapper.resolve(ParentNodeProvider)
        self.qn = self.wrapper.resolve(QualifiedNameProvider)
        self.pos = self.wrapper.resolve(PositionProvider)
        for node in f.keras:
            self._site(node, TF_GRADIENTS, "TFG127", MANUAL,
                       "keras.backend.gradients only works in graph mode; compute the loss inside a "
                       "tf.GradientTape where the model is called")
        for node in f.values:
            self._site(node, TF_GRADIENTS, "TFG128", MANUAL,
                       f"`{self.module.code_for_node(node)}` is used as a value, not called; "
                       "call a tf.GradientTape method here by hand")
        if not f.calls:
            return self.module
        calls = [self._prepare(node, kind) for node, kind in f.calls]
        override = self._override_refusal()
        for c in calls:
            if override and c.refused is None:
                c.refused = override
        self.calls = calls
        by_block: dict[int, tuple] = {}
        for c in calls:
            stmt, block = self._stmt_block(c.node)
            by_block.setdefault(id(block), (block, []))[1].append((stmt, c))
        # plan inner blocks first (their refusals freeze statements of outer blocks),
        # then name tapes outer first (inner blocks must not reuse a name alive around them)
        order = sorted(by_block.values(), key=lambda bc: -self._depth(bc[0]))
        for block, members in order:
            self._plan_block(block, members)
        for block, _members in reversed(order):
            plan = self.block_plans.get(id(block))
            if plan is not None:
                self._name_groups(plan[1], plan[0], block)
        for c in calls:
            if c.refused is None and c.node is not None:
                self.replacements[id(c.replace)] = c
            self._report(c)
        if not self.replacements and not self.block_plans:
            return self.module
        self.tf = self._tf_alias()
        out = self.module.visit(_Apply(self))
        out = _remove_dead_imports(self.module, out, self.find.api_aliases)
        if self.need_import:
            out = _add_tf_import(out, self.tf)
        return out

    def _depth(self, node: cst.CSTNode) -> int:
        d = 0
        while node is not None:
            node = self.parents.get(node)
            d += 1
        return d

    def _site(self, node, kind, code, status, reason, notes=(), line=None, col=None) -> None:
        if line is None:
            p = self.pos[node].start
            line, col = p.line, p.column + 1
        self.ctx.sites.append(Site(kind=kind, code=code, line=self.ctx.original_line(line), col=col,
                                   status=status, reason=reason, notes=list(notes)))

    def _report(self, c: Call) -> None:
        if c.node is None:
            return
        kind = {"grad": TF_GRADIENTS, "hess": HESSIANS, "jac": JACOBIAN, "bjac": JACOBIAN}[c.kind]
        if c.refused is not None:
            self._site(None, kind, c.refused.code, MANUAL, c.refused.reason, (), c.line, c.col)
        else:
            code = {"grad": "TFG003", "hess": "TFG005", "jac": "TFG004", "bjac": "TFG004"}[c.kind]
            self._site(None, kind, code, MIGRATED, codes.title(code), c.notes, c.line, c.col)

    def _override_refusal(self) -> Optional[Refuse]:
        if self.ctx.facts.get("manual_overrides"):
            return Refuse("TFG122", "an override map in this file was left for manual migration and a tape "
                                    "would ignore it; migrate the override first, then re-run")
        bad = imported_modules(self.ctx.source) & set(self.ctx.index.unmigrated_override_modules)
        if bad:
            return Refuse("TFG122", f"this file imports `{sorted(bad)[0]}`, whose override map was left for "
                                    "manual migration; a tape would ignore it: migrate it first, then re-run")
        return None

    # -- per call: form and arguments --------------------------------------
    def _prepare(self, node: cst.Call, kind: str) -> Call:
        p = self.pos[node].start
        c = Call(node=node, kind=kind, line=p.line, col=p.column + 1)
        try:
            self._parse_args(c)
            self._check_context(c)
        except Refuse as r:
            c.refused = r
        return c

    def _parse_args(self, c: Call) -> None:
        order, keep, drop = SIGNATURES[c.kind]
        fn = self.module.code_for_node(c.node.func)
        given: dict[str, cst.BaseExpression] = {}
        for i, a in enumerate(c.node.args):
            if a.star:
                raise Refuse("TFG128", f"`{fn}` is called with starred arguments; rewrite it by hand with a tape")
            if a.keyword is None:
                if i >= len(order):
                    raise Refuse("TFG128", f"`{fn}` has more positional arguments than it accepts")
                given[order[i]] = a.value
            else:
                k = a.keyword.value
                if k not in order:
                    raise Refuse("TFG128", f"`{fn}` has the unknown argument `{k}`; rewrite it by hand")
                given[k] = a.value
        first, second = order[0], order[1]
        if first not in given or second not in given:
            raise Refuse("TFG128", f"`{fn}` is missing its targets or sources")
        c.ys, c.xs = given[first], given[second]
        for k, v in given.items():
            if k in (first, second):
                continue
            if m.matches(v, m.Name("None")):
                continue
            if k in drop:
                c.notes.append(f"dropped `{k}=`: it has no GradientTape equivalent and did not change values")
            elif k == "stop_gradients":
                raise Refuse("TFG123", "stop_gradients has no tape argument: apply tf.stop_gradient to "
                                       f"{self.module.code_for_node(v)} where ys is computed (and tape.watch "
                                       "them if they are also sources), then use a tape")
            elif k in keep:
                c.kwargs[keep[k]] = v
                if k == "grad_ys":
                    c.notes.append("grad_ys became output_gradients")
                if k == "use_pfor" and not m.matches(v, m.Name("True")):
                    c.persistent = True
                if k == "parallel_iterations":
                    c.persistent = True
        if c.kind == "hess":
            items = _chain_items(c.xs)
            if items is None or len(items) != 1:
                raise Refuse("TFG128", "tf.hessians with several sources: write one nested-tape jacobian per "
                                       "source by hand")
        if c.kind in ("jac", "bjac") and dotted(c.xs) is None and _chain_items(c.xs) is None:
            raise Refuse("TFG124", "the sources are not plain names or attributes: bind them to names "
                                   "before the call")

    def _check_context(self, c: Call) -> None:
        node: cst.CSTNode = c.node
        parent = self.parents.get(node)
        c.replace = node
        if c.kind in ("grad", "hess") and _is_index0(node, parent):
            c.index0 = True
            c.replace = parent
        child = node
        cur = parent
        while cur is not None:
            if isinstance(cur, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
                if id(cur) in self.find.graph_fn_nodes:
                    raise Refuse("TFG121", "the call is inside a function passed to tf.while_loop/tf.cond, which "
                                           "runs in graph-only control flow; keep it in graph mode "
                                           "(tf.function) or restructure it around a tape")
                raise Refuse("TFG128", "the call is inside a lambda or comprehension; bind its result "
                                       "to a name in a statement first")
            if isinstance(cur, cst.While) and child is cur.test:
                raise Refuse("TFG128", "the call is in a while condition; compute it in a statement first")
            if isinstance(cur, cst.SimpleStatementSuite):
                raise Refuse("TFG128", "the call is on the same line as its `if`/`for`; put it on its own line")
            if isinstance(cur, cst.FunctionDef):
                if id(cur) in self.find.registered_defs or cur.name.value in self.find.graph_fn_names:
                    raise Refuse("TFG121", f"the call is inside `{cur.name.value}`, a registered gradient "
                                           "function or graph-only control-flow body; keep it in graph mode "
                                           "or restructure it around a tape")
            if isinstance(cur, (cst.Call, cst.Subscript, cst.Arg, cst.Element, cst.BinaryOperation)) and \
                    self._is_gradient_call(cur) and cur is not c.replace:
                raise Refuse("TFG128", "the call is nested inside another gradient call; bind the inner "
                                       "result to a name first")
            child = cur
            cur = self.parents.get(cur)
        if any(self._contains_api_call(a.value) for a in c.node.args):
            raise Refuse("TFG128", "an argument holds another gradient call; bind its result to a name first")

    def _is_gradient_call(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Call) and any(node is n for n, _ in self.find.calls)

    def _contains_api_call(self, expr: cst.CSTNode) -> bool:
        ids = {id(n) for n, _ in self.find.calls}
        found = []

        class V(cst.CSTVisitor):
            def visit_Call(self, node):
                if id(node) in ids:
                    found.append(node)

        expr.visit(V())
        return bool(found)

    def _stmt_block(self, node: cst.CSTNode):
        cur: cst.CSTNode = node
        while True:
            parent = self.parents[cur]
            if isinstance(parent, (cst.Module, cst.IndentedBlock)):
                return cur, parent
            cur = parent

    # -- per block: slices, groups ------------------------------------------
    def _items(self, block: BlockNode) -> list[Item]:
        items = []
        for stmt in block.body:
            fx = effects(stmt)
            items.append(Item(stmt, fx, self._inert(stmt, fx)))
        return items

    def _inert(self, stmt: cst.CSTNode, fx: Effects) -> bool:
        """Its value reads no program names (only imports, builtins, literals)."""
        if isinstance(stmt, cst.SimpleStatementLine):
            if not all(isinstance(s, (cst.Assign, cst.AnnAssign, cst.Import, cst.ImportFrom, cst.Pass))
                       for s in stmt.body):
                return False
        else:
            # a def computes no tensor where it stands; its body's reads still join the slice
            return isinstance(stmt, (cst.FunctionDef, cst.ClassDef))
        ok = self.find.imported | BUILTINS
        return all(r.split(".")[0] in ok for r in fx.reads)

    def _plan_block(self, block: BlockNode, members: list) -> None:
        items = self._items(block)
        index = {id(s): i for i, s in enumerate(block.body)}
        # build the item list with generated statements (hoisted ys, inner gradients)
        slots: list[list[Item]] = [[it] for it in items]
        for stmt, c in members:
            k = index[id(stmt)]
            if c.refused is not None:
                slots[k][-1].calls.append(c)
                continue
            pre: list[Item] = []
            ys = c.ys
            keys = _chain_items(ys) if not isinstance(ys, cst.Tuple) else None
            if keys is None:
                name = self.names.fresh(_readable(ys))
                pre.append(Item(None, Effects(reads=effects(ys).reads, writes={name}, assigns={name}),
                                False, hoist=(name, ys), owner=c))
                ys_keys = {name}
                ys_expr: cst.BaseExpression = cst.Name(name)
            else:
                ys_keys = {k_ for k_, _ in keys}
                ys_expr = ys
            if c.kind == "hess":
                inner = Call(node=None, kind="grad", ys=ys_expr, xs=c.xs, partner=c, line=c.line, col=c.col)
                c.partner = inner
                key = dotted(c.xs) or dotted(c.xs.elements[0].value)
                tname = self.names.fresh(f"d{_short(ys_keys)}_d{key.rsplit('.', 1)[-1]}")
                inner.target = tname
                inner.ys_keys = ys_keys
                fx = Effects(reads=set(ys_keys) | {k_ for k_, _ in _chain_items(c.xs)}, writes={tname},
                             assigns={tname})
                it = Item(None, fx, False, inner=inner, owner=c)
                it.calls.append(inner)
                pre.append(it)
                c.ys_keys = {tname}
            else:
                c.ys_keys = ys_keys
            c.ys = ys_expr
            slots[k] = pre + slots[k]
            slots[k][-1].calls.append(c)
        flat = [it for s in slots for it in s]
        for i, it in enumerate(flat):
            for c in it.calls:
                c.item = i
        calls = [c for it in flat for c in it.calls]
        alive = [c for c in calls if c.refused is None]
        self.flat = flat
        parent_block = self.parents.get(block)
        nested = not isinstance(block, cst.Module) and not isinstance(parent_block, (cst.FunctionDef, cst.ClassDef))
        scope_assigns, in_loop, self.module_level, computed = self._scope_facts(block)
        while True:
            for c in alive:
                if c.refused is None:
                    try:
                        self._slice(c, flat, nested, scope_assigns, in_loop, computed)
                    except Refuse as r:
                        self._refuse(c, r)
            live = [c for c in alive if c.refused is None]
            groups = self._group(live, flat)
            # a manual site must stay byte-identical: no tape may move its statement
            moved = False
            frozen = self._frozen()
            for g in groups:
                hit = [i for i in range(g.s, g.e + 1) if flat[i].orig is not None and id(flat[i].orig) in frozen]
                if hit:
                    line = self.pos[flat[hit[0]].orig].start.line
                    for gc in g.all_calls():
                        self._refuse(gc, Refuse(
                            "TFG128", f"its tape would have to enclose line {line}, which is left for manual "
                                      "migration; migrate that first"))
                    moved = True
            if not moved:
                break
            alive = [c for c in alive if c.refused is None]
        if not any(c.refused is None for c in calls):
            return
        self.block_plans[id(block)] = (flat, groups)

    def _frozen(self) -> set:
        """Statements (at every block level) that hold a manual site: no tape may move them."""
        nodes = [c.node for c in self.calls if c.refused is not None and c.node is not None]
        nodes += self.find.keras + self.find.values
        out = set()
        for n in nodes:
            cur = n
            while cur is not None and not isinstance(cur, cst.Module):
                parent = self.parents.get(cur)
                if isinstance(parent, (cst.Module, cst.IndentedBlock)):
                    out.add(id(cur))
                cur = parent
        return out

    def _refuse(self, c: Call, r: Refuse) -> None:
        if c.refused is None:
            c.refused = r
        if c.partner is not None and c.partner.refused is None:
            c.partner.refused = r

    def _scope_facts(self, block: BlockNode) -> tuple[set, bool, bool, set]:
        """Keys assigned anywhere in the enclosing scope; whether block is in a loop of it."""
        cur = block
        in_loop = False
        scope = None
        while cur is not None:
            parent = self.parents.get(cur)
            if isinstance(parent, (cst.For, cst.While)) and cur is parent.body:
                in_loop = True
            if isinstance(parent, (cst.FunctionDef, cst.Module)) or parent is None:
                scope = parent if parent is not None else cur
                break
            cur = parent
        body = scope.body if isinstance(scope, cst.FunctionDef) else scope
        fx = effects(body)
        self.scope_is_function = isinstance(scope, cst.FunctionDef)
        self.scope_locals = set(fx.writes)
        self.scope_params = set()
        if isinstance(scope, cst.FunctionDef):
            self.scope_params = {p.name.value for p in _all_params(scope.params)} - fx.writes
            self.scope_locals |= self.scope_params
        return fx.assigns, in_loop, isinstance(scope, cst.Module), self._computed(body)

    def _computed(self, body: cst.CSTNode) -> set:
        """Keys of the scope that some statement binds to a computed value (not only to constants)."""
        rw = self
        out: set = set()

        def targets(node: cst.BaseExpression) -> set:
            return effects(cst.Assign([cst.AssignTarget(node)], cst.Name("None"))).assigns

        class V(cst.CSTVisitor):
            def visit_SimpleStatementLine(self, node):
                fx = effects(node)
                if not rw._inert(node, fx):
                    out.update(fx.assigns)
                return False

            def visit_For(self, node):
                out.update(targets(node.target))

            def visit_WithItem(self, node):
                if node.asname is not None:
                    out.update(targets(node.asname.name))

            def visit_ExceptHandler(self, node):
                if node.name is not None:
                    out.update(targets(node.name.name))

            def visit_FunctionDef(self, node):
                return False

            def visit_ClassDef(self, node):
                return False

        body.visit(V())
        return out

    def _slice(self, c: Call, flat: list[Item], nested: bool, scope_assigns: set, in_loop: bool,
               computed: set) -> None:
        k = c.item
        need = set(c.ys_keys)
        S: list[int] = []
        direct = set()
        for i in range(k - 1, -1, -1):
            it = flat[i]
            if it.dead:
                continue
            if touches(it.fx.writes, need):
                S.append(i)
                direct |= {key for key in c.ys_keys if touches(it.fx.writes, {key})}
                need |= it.fx.reads
        ys_txt = ", ".join(sorted(c.ys_keys))
        missing = set(c.ys_keys) - direct
        if missing:
            name = sorted(missing)[0]
            if in_loop and name in scope_assigns:
                raise Refuse("TFG125", f"`{name}` is computed before the loop that holds this call; open the tape "
                                       "around the computation of each value inside the loop")
            raise Refuse("TFG120", f"`{name}` is not computed in this block; compute `{name}` inside a "
                                   "GradientTape where the model is called")
        written: set = set()
        for i in sorted(S):
            comes_in = {key for key in c.ys_keys if key in flat[i].fx.reads and not touches(written, {key})}
            if comes_in:
                name = sorted(comes_in)[0]
                raise Refuse("TFG120", f"`{name}` comes into this block from outside (it is rebound from its own "
                                       f"earlier value); compute `{name}` inside a GradientTape where the model "
                                       "is called")
            written |= flat[i].fx.writes
        active = [i for i in S if not flat[i].inert]
        if not active:
            raise Refuse("TFG126", f"`{ys_txt}` is computed from constants only in this block: a tape would "
                                   "record nothing (TF1 returned None for every source)")
        s, e = min(active), max(S)
        c.region = (s, e)
        # sources
        items = _chain_items(c.xs)
        if items is None:
            raise Refuse("TFG124", f"the sources `{self.module.code_for_node(c.xs)}` are not plain names or "
                                   "attributes: bind them to names before the call, or use a tape with "
                                   "model.trainable_variables")
        sources = []
        for key, expr in items:
            sources.extend(self._expand_source(key, expr, flat, k))
        c.sources = sources
        if self.scope_is_function:
            self._outside_data(c, flat, S, sources, k)
        c.auto_watched = {key for key, _ in sources if self._is_variable(key, flat, k)}
        if c.kind == "grad" and dotted(c.xs) is not None:
            c.xs_kind = self._source_kind(dotted(c.xs), flat, k)
        if c.kind == "hess" and dotted(c.xs) is not None and self._source_kind(dotted(c.xs), flat, k) != "tensor":
            raise Refuse("TFG124", f"cannot tell that `{dotted(c.xs)}` is one tensor; pass tf.hessians a "
                                   "tensor bound by a TF call, or migrate by hand")
        if nested:
            written_here = set()
            for i in range(k):
                written_here |= flat[i].fx.writes
            if not all(touches(written_here, {key}) for key, _ in sources):
                reads = set()
                for i in S:
                    reads |= flat[i].fx.reads
                source_keys = {key for key, _ in sources}
                for r in sorted(reads):
                    # a value computed in an enclosing block may depend on a source the tape cannot see
                    if r in computed and not touches(written_here, {r}) and not touches({r}, source_keys):
                        raise Refuse("TFG120", f"`{r}` feeds `{ys_txt}` but is computed outside this block; "
                                               "compute it inside a GradientTape in the same block as the "
                                               "gradient")

    def _outside_data(self, c: Call, flat: list[Item], S: list, sources: list, k: int) -> None:
        """Refuse when a value from outside the function (a closure variable, a computed global,
        an attribute set elsewhere) feeds ys while a source also comes from outside: TF1 followed
        any path between them, a tape inside this function cannot see it.  Parameters are taken
        as independent inputs."""
        source_keys = {key for key, _ in sources}
        if all(touches(self.scope_locals - self.scope_params, {key}) for key in source_keys):
            return  # every source is created in this function: nothing outside can depend on it
        written: set = set()
        for i in sorted(S):
            for r in sorted(flat[i].fx.data):
                if touches(written, {r}) or touches({r}, source_keys):
                    continue
                root = r.split(".")[0]
                if root in self.scope_locals - self.scope_params:
                    continue  # a local: the nested-block rule covers it
                if root in self.scope_params and "." not in r:
                    continue
                if root in self.find.imported or root in BUILTINS or root in self.find.module_constants:
                    continue
                raise Refuse("TFG120", f"`{r}` feeds `{', '.join(sorted(c.ys_keys))}` but comes from outside this "
                                       "function, and so do the sources: the tape cannot see a path between "
                                       "them; compute both inside a GradientTape where the model is called")
            written |= flat[i].fx.writes

    def _bindings(self, key: str, flat: list[Item], k: int) -> list:
        """Values bound to ``key`` that reach item k: the last ``key = value`` of the block
        ([None] if bound another way), else every module-level binding when the block is at
        module level ([] for parameters and unknown names)."""
        for i in range(k - 1, -1, -1):
            it = flat[i]
            if it.dead or it.orig is None or not touches(it.fx.writes, {key}):
                continue
            if m.matches(it.orig, m.SimpleStatementLine([m.Assign([m.AssignTarget()])])):
                a = it.orig.body[0]
                if dotted(a.targets[0].target) == key:
                    return [a.value]
            return [None]
        if "." not in key and (self.module_level or key not in self.scope_locals):
            return list(self.find.variables.get(key, []))  # a module-level name
        return []

    def _expand_source(self, key: str, expr: cst.BaseExpression, flat: list[Item], k: int) -> list:
        """A source name bound to a list literal is watched element by element."""
        vals = self._bindings(key, flat, k)
        if len(vals) == 1 and isinstance(vals[0], (cst.List, cst.Tuple)):
            items = _chain_items(vals[0])
            if items is not None:
                return items
        return [(key, expr)]

    def _source_kind(self, key: str, flat: list[Item], k: int) -> str:
        """"list" or "tensor" when the binding of a source name shows it, else "unknown"."""
        vals = self._bindings(key, flat, k)
        if not vals:
            if "." in key:
                return "list" if key.rsplit(".", 1)[-1] in LIST_ATTRS else "unknown"
            return "tensor" if key in self.scope_params else "unknown"
        kinds = {self._value_kind(v) for v in vals}
        if kinds == {"list", "tensor"}:
            raise Refuse("TFG124", f"`{key}` is bound both to a list and to a tensor; bind the sources to one "
                                   "list before the call")
        return kinds.pop() if len(kinds) == 1 else "unknown"

    def _value_kind(self, v: Optional[cst.BaseExpression]) -> str:
        if isinstance(v, (cst.List, cst.Tuple, cst.ListComp)):
            return "list"
        if isinstance(v, (cst.BinaryOperation, cst.UnaryOperation)):
            return "tensor"
        if isinstance(v, cst.Attribute) and v.attr.value in LIST_ATTRS:
            return "list"
        if isinstance(v, cst.Call):
            name = tf_name(v, self.qn)
            if name in LIST_RETURNING or dotted(v.func) == "list":
                return "list"
            if name in TENSOR_CONSTRUCTORS or (name is not None and _one_output(name)):
                return "tensor"
        return "unknown"  # e.g. nest.flatten(...), a layer: tf.nest.flatten keeps the list contract

    def _is_variable(self, key: str, flat: list[Item], k: int) -> bool:
        """Bound to a trainable tf.Variable: the tape watches it by itself."""
        vals = self._bindings(key, flat, k)
        if not vals:
            return False
        for v in vals:
            if not (isinstance(v, cst.Call) and tf_name(v, self.qn) in ("tensorflow.Variable", "tensorflow.get_variable")):
                return False
            for a in v.args:
                if a.keyword is not None and a.keyword.value == "trainable" and not m.matches(a.value, m.Name("True")):
                    return False
        return True

    def _group(self, calls: list[Call], flat: list[Item]) -> list[Group]:
        """Tapes for the calls of one block: separate, shared (persistent) or nested."""
        top: list[Group] = []
        for c in sorted(calls, key=lambda c: c.item):
            cand = Group(*c.region, [c])
            absorbed: list[Group] = []
            ok = True
            while True:
                hits = [g for g in top if g not in absorbed and not (g.e < cand.s or g.s > cand.e)]
                if not hits:
                    break
                e_all = max([cand.e] + [g.e for g in hits])
                ks = cand.ks + [k for g in hits for k in g.ks]
                if e_all < min(ks):  # share one persistent tape
                    for g in hits:
                        cand.calls = g.calls + cand.calls
                        cand.children += g.children
                    cand.s = min([cand.s] + [g.s for g in hits])
                    cand.e = e_all
                elif all(g.e <= cand.e for g in hits):  # nest: this tape records the others
                    cand.children += hits
                    cand.s = min([cand.s] + [g.s for g in hits])
                else:
                    ok = False
                    break
                absorbed += hits
            if not ok:
                self._refuse(c, Refuse("TFG128", "its tape would overlap another tape only partly; rewrite "
                                                 "these gradients by hand"))
                continue
            top = [g for g in top if g not in absorbed] + [cand]
        for g in top:
            _set_group(g)
        return sorted(top, key=lambda g: g.s)

    def _name_groups(self, groups: list[Group], flat: list[Item], block: BlockNode) -> None:
        reserved = set(self.reserved.get(id(block), set()))
        everyone: list[tuple[Group, int]] = []

        def walk(gs, depth):
            for g in gs:
                everyone.append((g, depth))
                walk(g.children, depth + 1)

        walk(groups, 0)
        assigned: list[tuple[Group, int, int]] = []
        for g, _depth in sorted(everyone, key=lambda gd: (gd[0].s, -gd[1])):
            life = (g.s, max(g.ks))
            taken = {x.name for x, a, b in assigned if not (b < life[0] or a > life[1])} | reserved
            base = "outer_tape" if g.children else "tape"
            n = 0
            while True:
                key = base if n == 0 else f"{base}#{n}"
                if key not in self.name_cache:
                    self.name_cache[key] = self.names.fresh(base if n == 0 else f"{base}_{n + 1}")
                if self.name_cache[key] not in taken:
                    g.name = self.name_cache[key]
                    break
                n += 1
            assigned.append((g, *life))
        # inner blocks of compound statements alive while a tape is alive must not reuse its name
        for g, a, b in assigned:
            for i in range(a, b + 1):
                it = flat[i]
                if it.orig is not None and not isinstance(it.orig, cst.SimpleStatementLine):
                    for blk in _inner_blocks(it.orig):
                        self.reserved.setdefault(id(blk), set()).add(g.name)

    def _tf_alias(self) -> str:
        self.need_import = False
        if self.find.tf_alias is not None:
            return self.find.tf_alias
        self.need_import = True
        return self.names.fresh("tf")

    # -- code generation ----------------------------------------------------
    def watches(self, g: Group, flat: list[Item]) -> tuple[list, dict]:
        """Watch statements at the start of the tape, and after items (index -> stmts)."""
        start: list[str] = []
        after: dict[int, list[str]] = {}
        seen = set()
        for c in g.calls:
            for key, expr in c.sources:
                if key in seen:
                    continue
                seen.add(key)
                if key in c.auto_watched:
                    continue  # trainable variables are watched automatically
                last = None
                for i in range(c.item):
                    if not flat[i].dead and touches(flat[i].fx.writes, {key}):
                        last = i
                if last is None or last < g.s:
                    start.append(key)
                elif last <= g.e:
                    after.setdefault(last, []).append(key)
        return start, after

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
                return self._grad_call(c, tape, ys, xs)
            return self._grad_list(c, tape, ys, xs)
        if c.kind == "hess":
            xs = c.xs if dotted(c.xs) is not None else c.xs.elements[0].value
            jac = _call(f"{tape}.jacobian", [cst.Name(next(iter(c.ys_keys))), _clean(xs)], [])
            return jac if c.index0 else cst.List([cst.Element(jac)])
        method = "jacobian" if c.kind == "jac" else "batch_jacobian"
        return _call(f"{tape}.{method}", [_clean(ys), _clean(c.xs)], [(k, _clean(v)) for k, v in c.kwargs.items()])

    def _grad_list(self, c: Call, tape: str, ys, xs) -> cst.BaseExpression:
        """A ``tape.gradient`` that returns a list, as tf.gradients did."""
        if dotted(xs) is not None:
            if c.xs_kind == "tensor":
                xs = cst.List([cst.Element(_clean(xs))])
            elif c.xs_kind == "unknown":
                # a tensor gives a tensor, a list a list: flatten gives tf.gradients' list either way
                return _call(f"{self.tf}.nest.flatten", [self._grad_call(c, tape, ys, xs)], [])
        elif isinstance(xs, cst.Tuple):
            els = [el.deep_clone() for el in xs.elements]
            els[-1] = els[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            xs = cst.List(elements=els)
        return self._grad_call(c, tape, ys, xs)

    def _grad_call(self, c: Call, tape: str, ys, xs) -> cst.Call:
        return _call(f"{tape}.gradient", [_clean(ys), _clean(xs)], [(k, _clean(v)) for k, v in c.kwargs.items()])


def _all_params(params: cst.Parameters) -> list:
    out = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            out.append(star)
    return out


def _short(keys: set) -> str:
    return sorted(keys)[0].rsplit(".", 1)[-1] if len(keys) == 1 else "y"


def _set_group(g: Group) -> None:
    for c in g.calls:
        c.group = g
    for ch in g.children:
        _set_group(ch)


def _inner_blocks(node: cst.CSTNode) -> list:
    out = []

    class V(cst.CSTVisitor):
        def visit_IndentedBlock(self, n):
            out.append(n)

        def visit_FunctionDef(self, n):
            return False

        def visit_ClassDef(self, n):
            return False

    node.visit(V())
    return out


class _Apply(cst.CSTTransformer):
    """Replace calls, then rebuild each planned block with its tapes."""

    def __init__(self, rw: _Rewrite) -> None:
        self.rw = rw

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        c = self.rw.replacements.get(id(original))
        return self.rw.result(c) if c is not None else updated

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        c = self.rw.replacements.get(id(original))
        return self.rw.result(c) if c is not None else updated

    def leave_IndentedBlock(self, original, updated):
        plan = self.rw.block_plans.get(id(original))
        return updated if plan is None else updated.with_changes(body=self._build(original, updated, plan))

    def leave_Module(self, original, updated):
        plan = self.rw.block_plans.get(id(original))
        return updated if plan is None else updated.with_changes(body=self._build(original, updated, plan))

    def _build(self, original, updated, plan) -> list:
        flat, groups = plan
        new_stmts = iter(updated.body)
        stmt_of: dict[int, cst.CSTNode] = {}
        for i, it in enumerate(flat):
            if it.orig is not None:
                stmt_of[i] = next(new_stmts)
        rw = self.rw
        watch_after: dict[int, list] = {}
        starts: dict[int, list] = {}

        def collect(gs):
            for g in gs:
                start, after = rw.watches(g, flat)
                starts[id(g)] = start
                for i, keys in after.items():
                    watch_after.setdefault(i, []).append((g.name, keys))
                collect(g.children)

        collect(groups)

        def watch(tape: str, keys: list) -> cst.SimpleStatementLine:
            return _stmt(_call(f"{tape}.watch", [_list_of_names(keys)], []))

        def emit(i: int) -> list:
            it = flat[i]
            if it.dead:
                return []
            if it.orig is not None:
                out = [stmt_of[i]]
            elif it.hoist is not None:
                out = [_assign(it.hoist[0], _clean(it.hoist[1]))]
            else:
                inner = it.inner
                out = [_assign(inner.target, rw._grad_call(inner, inner.group.name, inner.ys, _clean(
                    inner.xs if dotted(inner.xs) is not None else inner.xs.elements[0].value)))]
            for tape, keys in watch_after.get(i, []):
                out.append(watch(tape, keys))
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
            ctor = _call(f"{rw.tf}.GradientTape", [], [("persistent", cst.Name("True"))] if persistent else [])
            body = ([watch(g.name, starts[id(g)])] if starts[id(g)] else []) + content
            return cst.With(items=[cst.WithItem(ctor, asname=cst.AsName(cst.Name(g.name)))],
                            body=cst.IndentedBlock(body=body), leading_lines=lead)

        return build(0, len(flat) - 1, groups)


def _remove_dead_imports(before: cst.Module, after: cst.Module, aliases: dict) -> cst.Module:
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


def _add_tf_import(module: cst.Module, alias: str) -> cst.Module:
    stmt = cst.parse_statement("import tensorflow\n" if alias == "tensorflow" else f"import tensorflow as {alias}\n")
    body = list(module.body)
    pos = 0
    for i, s in enumerate(body):
        if isinstance(s, cst.SimpleStatementLine) and all(isinstance(x, (cst.Import, cst.ImportFrom)) for x in s.body):
            pos = i + 1
        elif i == 0 and m.matches(s, m.SimpleStatementLine([m.Expr(m.SimpleString() | m.ConcatenatedString())])):
            pos = 1
        else:
            break
    body.insert(pos, stmt)
    return module.with_changes(body=body)
