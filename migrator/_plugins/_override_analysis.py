"""Find override sites, decide what each becomes, and build a rewrite plan.

Nothing here mutates the tree: the output is an :class:`OverridePlan` that
``_override_apply`` turns into the new module.  Every refusal leaves the
block (and any registration it shares) byte-identical.
"""
from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Optional, Union

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider

from migrator import optable
from migrator.model import Site
from migrator.naming import NameAllocator
from migrator.tfnames import QualifiedNames, dotted, normalize

# Built-in gradient functions used as override targets, by number of op inputs.
# (see tf_gradient_semantics.md section 2.3); the value is the grad_fn source.
BUILTIN_TARGETS = {"Identity", "StopGradient", "Neg", "Floor", "Round", "Ceil", "Rint", "Sign", "Add", "AddV2"}

#: TF functions that create no op at all (so they never meet an override).
OP_FREE_TF = {
    "tensorflow.get_default_graph",
    "tensorflow.name_scope",
    "tensorflow.variable_scope",
    "tensorflow.control_dependencies",
    "tensorflow.device",
    "tensorflow.as_dtype",
    "tensorflow.DType",
    "tensorflow.TensorShape",
    "tensorflow.op_scope",
    "tensorflow.RegisterGradient",
    "tensorflow.get_collection",
    "tensorflow.is_tensor",
    "tensorflow.executing_eagerly",
}
#: Python builtins that create no TF op when called.
OP_FREE_BUILTINS = {
    "float", "int", "bool", "str", "len", "range", "print", "isinstance", "list", "tuple",
    "dict", "set", "zip", "enumerate", "sorted", "repr", "format", "getattr", "hasattr",
    "type", "super", "min", "max", "round", "object",
}  # fmt: skip
#: methods that are metadata-only on tensors/shapes
OP_FREE_METHODS = {"get_shape", "as_list", "set_shape", "numpy", "format", "append", "join", "items", "keys", "values"}

_OPERATORS = {
    cst.Multiply: "Multiply", cst.Add: "Add", cst.Subtract: "Subtract", cst.Divide: "Divide",
    cst.FloorDivide: "FloorDivide", cst.Modulo: "Modulo", cst.Power: "Power",
    cst.MatrixMultiply: "MatrixMultiply", cst.BitAnd: "BitAnd", cst.BitOr: "BitOr", cst.BitXor: "BitXor",
}  # fmt: skip
_FALLBACK_OPERATOR_TYPES = {
    "Multiply": "Mul", "Add": "AddV2", "Subtract": "Sub", "Divide": "RealDiv", "FloorDivide": "FloorDiv",
    "Modulo": "FloorMod", "Power": "Pow", "MatrixMultiply": "MatMul", "Minus": "Neg",
}  # fmt: skip


class Refuse(Exception):
    def __init__(self, code: str, reason: str):
        super().__init__(reason)
        self.code = code
        self.reason = reason


# ---------------------------------------------------------------- scopes ---


@dataclass(eq=False)
class Scope:
    node: cst.CSTNode
    parent: Optional["Scope"]
    assigns: dict[str, list[tuple[cst.CSTNode, cst.BaseExpression]]] = field(default_factory=dict)
    defs: dict[str, cst.FunctionDef] = field(default_factory=dict)
    graph_names: set[str] = field(default_factory=set)  # `with tf.Graph().as_default() as graph`
    params: dict[str, cst.Param] = field(default_factory=dict)
    tf_local_alias: Optional[str] = None
    bound: set = field(default_factory=set)

    def lookup_assigns(self, name: str) -> Optional[list[tuple[cst.CSTNode, cst.BaseExpression]]]:
        scope: Optional[Scope] = self
        while scope is not None:
            if name in scope.assigns:
                return scope.assigns[name]
            if name in scope.params or name in scope.defs:
                return None
            scope = scope.parent
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


@dataclass(eq=False)
class Registration:
    key: tuple  # ("lit", name) or ("name", id(scope), varname)
    scope: Scope
    fn: Optional[cst.FunctionDef] = None  # the registered def
    decorator: Optional[cst.Decorator] = None
    stmt: Optional[cst.SimpleStatementLine] = None  # call form `RegisterGradient(k)(fn)`
    fn_param: Optional[str] = None  # call form where fn is a parameter (py_func recipe)
    line: int = 0


@dataclass(eq=False)
class Block:
    node: cst.With
    call: cst.Call
    scope: Scope
    stmt_parent: Optional["Block"]
    line: int
    col: int
    children: list["Block"] = field(default_factory=list)
    # filled by planning
    mapping: dict[str, tuple] = field(default_factory=dict)


@dataclass(eq=False)
class Candidate:
    """One op of an overridden type that the rewrite wraps in a custom_gradient function."""

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


@dataclass
class OverridePlan:
    replace: dict[cst.CSTNode, tuple[str, Candidate]] = field(default_factory=dict)
    dissolve: set[cst.With] = field(default_factory=set)
    helpers: dict[cst.FunctionDef, cst.FunctionDef] = field(default_factory=dict)
    remove: set[cst.CSTNode] = field(default_factory=set)
    insert_before: dict[cst.CSTNode, list[str]] = field(default_factory=dict)
    insert_after: dict[cst.CSTNode, list[str]] = field(default_factory=dict)
    maybe_dead: set[str] = field(default_factory=set)  # names whose assignment may now be dead
    maybe_dead_imports: set[str] = field(default_factory=set)
    tf_alias: str = "tf"
    add_tf_import: bool = False

    @property
    def empty(self) -> bool:
        return not (self.replace or self.dissolve or self.helpers or self.remove)


# -------------------------------------------------------------- collect ---


class _Collector(cst.CSTVisitor):
    """One pass: scopes, assignments, registrations, override blocks."""

    def __init__(self, qnames, positions):
        self.qnames = qnames
        self.positions = positions
        self.module_scope: Optional[Scope] = None
        self.scopes: list[Scope] = []
        self.stmts: list[cst.CSTNode] = []
        self.blocks: list[Block] = []
        self.block_stack: list[Block] = []
        self.registrations: list[Registration] = []
        self.scope_of_def: dict[cst.FunctionDef, Scope] = {}
        self.enclosing_def: dict[int, cst.FunctionDef] = {}
        self.tf_aliases: list[str] = []  # names bound to the tensorflow module at top level
        self.calls_by_name: dict[str, list[tuple[cst.Call, Scope]]] = {}
        self.block_calls: set[cst.Call] = set()  # the calls that head a single-item with
        self.escaping: list[tuple[cst.Call, Scope, int, int]] = []

    # helpers
    def tf(self, node: cst.CSTNode) -> Optional[str]:
        for qn in self.qnames.get(node.func if isinstance(node, cst.Call) else node, ()):
            n = normalize(qn.name)
            if n is not None:
                return n
        return None

    @property
    def scope(self) -> Scope:
        return self.scopes[-1]

    def visit_Module(self, node: cst.Module) -> None:
        self.module_scope = Scope(node, None)
        self.scopes.append(self.module_scope)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted(alias.name)
            if full in ("tensorflow", "tensorflow.compat.v1", "tensorflow.compat.v2"):
                name = alias.asname.name.value if alias.asname is not None else "tensorflow" if full == "tensorflow" else None
                if name is None:
                    continue
                if len(self.scopes) == 1:
                    self.tf_aliases.append(name)
                else:  # a function-local `import tensorflow`
                    self.scope.tf_local_alias = self.scope.tf_local_alias or name

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scope.defs.setdefault(node.name.value, node)  # type: ignore[arg-type]
        self.scopes.append(Scope(node, self.scope))

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.scopes.pop()

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
        from migrator._plugins._gradfn import _assigned_counts

        scope.bound = set(_assigned_counts(node.body))
        for dec in node.decorators:
            d = dec.decorator
            if isinstance(d, cst.Call) and self.tf(d) == "tensorflow.RegisterGradient":
                key = self._reg_key(d, outer)
                if key is not None:
                    pos = self.positions[dec]
                    self.registrations.append(Registration(key, outer, fn=node, decorator=dec, line=pos.start.line))
        self.scopes.append(scope)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scopes.pop()

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
                    reg = Registration(key, self.scope, stmt=node, line=self.positions[node].start.line)
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
        if len(node.targets) == 1:
            key = dotted(node.targets[0].target)
            if key is not None:
                stmt = self.stmts[-1] if self.stmts else node
                self.scope.assigns.setdefault(key, []).append((stmt, node.value))
                if "." in key:  # self.G = ... : visible from every method
                    self.module_scope.assigns.setdefault(key, []).append((stmt, node.value))  # type: ignore[union-attr]
        else:
            for t in node.targets:
                key = dotted(t.target)
                if key:
                    self.scope.assigns.setdefault(key, []).append((node, node.value))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        key = dotted(node.target)
        if key:
            self.scope.assigns.setdefault(key, []).append((node, node.value))

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name):
            self.calls_by_name.setdefault(node.func.value, []).append((node, self.scope))
        elif (
            isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "gradient_override_map"
            and node not in self.block_calls
        ):
            # entered some other way: the override's extent cannot be read from the source
            pos = self.positions[node]
            self.escaping.append((node, self.scope, pos.start.line, pos.start.column + 1))

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            call = item.item
            if (
                isinstance(call, cst.Call)
                and isinstance(call.func, cst.Attribute)
                and call.func.attr.value == "as_default"
                and isinstance(call.func.value, cst.Call)
                and self.tf(call.func.value) == "tensorflow.Graph"
                and item.asname is not None
                and isinstance(item.asname.name, cst.Name)
            ):
                self.scope.graph_names.add(item.asname.name.value)
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
        if self.block_stack and self.block_stack[-1].node is node:
            self.block_stack.pop()


# ------------------------------------------------------------- analysis ---


def _is_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(node, cst.Name) and node.value in ("None", "True", "False"):
        return True
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        return _is_literal(node.expression)
    if isinstance(node, (cst.List, cst.Tuple)):
        return all(_is_literal(e.value) for e in node.elements)
    return False


def _is_number(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.UnaryOperation):
        return _is_number(node.expression)
    return False


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


class _Planner:
    def __init__(self, module: cst.Module, ctx, col: _Collector):
        self.module = module
        self.ctx = ctx
        self.col = col
        self.plan = OverridePlan()
        self.names = NameAllocator(module)
        self.def_cache: dict[cst.FunctionDef, Optional[Refuse]] = {}
        self.sites: list[Site] = []
        self.refused: dict[Block, Refuse] = {}
        self.block_candidates: dict[Block, list[Candidate]] = {}
        self.block_dead_keys: dict[Block, list[str]] = {}

    # -- graph and map ------------------------------------------------
    def is_graph(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
        if isinstance(expr, cst.Call):
            return self.col.tf(expr) == "tensorflow.get_default_graph"
        if isinstance(expr, cst.Attribute) and expr.attr.value == "graph":
            return True
        key = dotted(expr)
        if key is None or depth > 3:
            return False
        s: Optional[Scope] = scope
        while s is not None:
            if key in s.graph_names:
                return True
            s = s.parent
        bound = scope.lookup_assigns(key)
        if bound is None and "." in key:
            bound = scope.module().assigns.get(key)
        if not bound:
            return False
        return all(self.is_graph(value, scope, depth + 1) for _stmt, value in bound)

    def graph_binding_stmts(self, expr: cst.BaseExpression, scope: Scope) -> list[tuple[str, cst.CSTNode]]:
        key = dotted(expr)
        if key is None:
            return []
        bound = scope.lookup_assigns(key) or (scope.module().assigns.get(key) if "." in key else None) or []
        # only bindings whose value has no side effect may be deleted once dead
        return [(key, stmt) for stmt, value in bound if self._pure_graph_expr(value)]

    def _pure_graph_expr(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Call):
            return self.col.tf(value) == "tensorflow.get_default_graph" and not value.args
        if isinstance(value, cst.Attribute) and value.attr.value == "graph":
            return dotted(value) is not None  # sess.graph, not K.get_session().graph
        return False

    def parse_map(self, block: Block) -> dict[str, tuple]:
        call = block.call
        if len(call.args) != 1 or call.args[0].keyword is not None and call.args[0].keyword.value != "op_type_map":
            raise Refuse("TFG103", "gradient_override_map is not called with one map argument")
        expr = call.args[0].value
        if isinstance(expr, cst.Name):
            bound = block.scope.lookup_assigns(expr.value)
            if not bound or len(bound) != 1 or not isinstance(bound[0][1], cst.Dict):
                raise Refuse("TFG103", f"the map `{expr.value}` is not bound once to a dict literal")
            expr = bound[0][1]
        if not isinstance(expr, cst.Dict):
            raise Refuse("TFG103", "the override map is built at run time")
        out: dict[str, tuple] = {}
        for el in expr.elements:
            if not isinstance(el, cst.DictElement):
                raise Refuse("TFG103", "the override map unpacks another dict (**)")
            if not isinstance(el.key, cst.SimpleString):
                raise Refuse("TFG104", "an override map key is not a string; TF1 raises TypeError for it")
            key = el.key.evaluated_value
            v = el.value
            if isinstance(v, cst.SimpleString):
                out[key] = ("lit", v.evaluated_value)
            elif isinstance(v, cst.Name):
                bound = block.scope.lookup_assigns(v.value)
                if bound and len(bound) == 1 and isinstance(bound[0][1], cst.SimpleString):
                    out[key] = ("lit", bound[0][1].evaluated_value)
                elif block.scope.find_def(v.value) is not None:
                    raise Refuse("TFG103", f"the map value for {key!r} is the function object `{v.value}`, not a gradient name")
                else:
                    out[key] = ("name", id(self._scope_binding(block.scope, v.value)), v.value)
            else:
                raise Refuse("TFG103", f"the map value for {key!r} is not a string (a function object?)")
        return out

    @staticmethod
    def _scope_binding(scope: Scope, name: str) -> Scope:
        s: Optional[Scope] = scope
        while s is not None:
            if name in s.assigns or name in s.params:
                return s
            s = s.parent
        return scope

    def resolve_target(self, ref: tuple) -> Union[str, Registration]:
        """A built-in target name, or the registration that the map value names."""
        if ref[0] == "lit" and ref[1] in BUILTIN_TARGETS:
            return ref[1]
        regs = [r for r in self.col.registrations if r.key == ref]
        if len(regs) == 1:
            return regs[0]
        label = ref[1] if ref[0] == "lit" else f"`{ref[2]}`"
        if len(regs) > 1:
            raise Refuse("TFG106", f"gradient {label} is registered more than once in this file")
        elsewhere = self.ctx.index.registrations.get(ref[1], []) if ref[0] == "lit" else []
        elsewhere = [r for r in elsewhere if r.path != self.ctx.path]
        if elsewhere:
            raise Refuse(
                "TFG106",
                f"gradient {label} is registered in {elsewhere[0].path}:{elsewhere[0].line}; "
                "cross-file overrides are migrated by hand for now",
            )
        if ref[0] == "lit" and ref[1] in optable.all_op_types():
            raise Refuse(
                "TFG106",
                f"{label} names TF's own gradient of the {label} op, which the migrator inlines only for "
                f"{', '.join(sorted(BUILTIN_TARGETS))}; write that gradient as a tf.custom_gradient grad_fn",
            )
        if ref[0] == "lit":
            raise Refuse("TFG106", f"gradient {label} is not a built-in and has no RegisterGradient in this run")
        raise Refuse("TFG106", f"cannot link the gradient name {label} to a RegisterGradient call")

    # -- op scanning ----------------------------------------------------
    _current_scope: Optional[Scope] = None

    def scan_block(self, block: Block, emap: dict[str, tuple]) -> list[Candidate]:
        self._current_scope = block.scope
        found: list[Candidate] = []
        body = block.node.body
        stmts = body.body if isinstance(body, cst.IndentedBlock) else [body]
        for stmt in stmts:
            self._scan(stmt, stmt, emap, block, found, block.scope)
        return found

    def _scan(self, node, stmt, emap, block, found, scope, in_def: bool = False) -> None:
        if isinstance(node, cst.With) and node is not block.node:
            child = next((b for b in block.children if b.node is node), None)
            if child is not None:
                # the inner map wins for its keys; the outer entries still apply
                child.mapping = self.parse_map(child)
                inner = dict(emap)
                inner.update(child.mapping)
                for s in (node.body.body if isinstance(node.body, cst.IndentedBlock) else [node.body]):
                    self._scan(s, s, inner, child, found, scope)
                return
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            # Code defined in the block runs whenever it is called, maybe outside it.
            sub: list[Candidate] = []
            try:
                for child in node.children:
                    self._scan(child, stmt, emap, block, sub, scope, in_def=True)
            except Refuse:
                sub.append(None)  # type: ignore[arg-type]
            if sub:
                raise Refuse("TFG102", "an op of an overridden type is created in a function defined inside the block")
            return
        if isinstance(node, (cst.Yield, cst.Await)):
            raise Refuse("TFG102", "the block yields: the override stays active in the caller's code")
        if isinstance(node, cst.Call):
            self._scan_call(node, stmt, emap, block, found, scope)
        elif isinstance(node, cst.BinaryOperation):
            self._scan_operator(node, type(node.operator), [node.left, node.right], stmt, emap, block, found)
        elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            if not _is_number(node.expression):
                self._check_operator(node, "Minus", [node.expression], stmt, emap, block, found)
        elif isinstance(node, cst.AugAssign):
            op_cls = type(node.operator).__name__.replace("Assign", "")
            t = self._operator_type(op_cls)
            if t in emap:
                raise Refuse("TFG108", f"`{_code(node).strip()}` creates a {t} op in place; wrap it by hand")
        elif isinstance(node, cst.Subscript):
            if "StridedSlice" in emap:
                raise Refuse("TFG108", "indexing a tensor creates a StridedSlice op; wrap it by hand")
        for child in node.children:
            self._scan(child, stmt, emap, block, found, scope, in_def)

    @staticmethod
    def _operator_type(cls_name: str) -> Optional[str]:
        info = optable.operator_info(cls_name)
        if info:
            return info["type"]
        return _FALLBACK_OPERATOR_TYPES.get(cls_name)

    def _scan_operator(self, node, op_cls, operands, stmt, emap, block, found) -> None:
        name = _OPERATORS.get(op_cls)
        if name is None:
            return
        if all(_is_number(o) for o in operands):
            return  # Python arithmetic: no op is created
        self._check_operator(node, name, operands, stmt, emap, block, found)

    def _check_operator(self, node, cls_name, operands, stmt, emap, block, found) -> None:
        t = self._operator_type(cls_name)
        if t is None or t not in emap:
            return
        params = ["x", "y"][: len(operands)]
        found.append(Candidate(node, t, emap[t], list(operands), params, None, stmt=stmt, block=block))

    def _scan_call(self, call: cst.Call, stmt, emap, block, found, scope) -> None:
        name = self.col.tf(call)
        if name is not None:
            if name in OP_FREE_TF:
                return
            if name == "tensorflow.py_func":
                self._scan_py_func(call, name, stmt, emap, block, found, scope)
                return
            info = optable.function_info(name)
            if info is None:
                raise Refuse("TFG101", f"the block calls `{_code(call.func)}`, whose ops are unknown")
            types = [op["type"] for op in info["ops"]]
            hits = [t for t in self._call_op_types(call, info) if t in emap]
            if not hits:
                return
            if not info.get("direct") or len(types) != 1 or hits != types:
                raise Refuse(
                    "TFG108",
                    f"`{_code(call.func)}` creates {', '.join(types)} internally; "
                    f"the {hits[0]} op inside it cannot be wrapped from the call site",
                )
            self._candidate_from_call(call, name, info, hits[0], stmt, emap, block, found)
            return
        func = call.func
        if isinstance(func, cst.Name):
            qn = {q.name for q in self.col.qnames.get(func, ())}
            if func.value in OP_FREE_BUILTINS and func.value in dir(builtins) and (not qn or func.value in qn):
                return
            d = scope.find_def(func.value)
            if d is not None:
                self._check_local_def(d, emap, func.value)
                return
        if any(q.name.startswith("numpy.") or q.name == "numpy" for q in self.col.qnames.get(func, ())):
            return
        if isinstance(func, cst.Attribute) and func.attr.value in OP_FREE_METHODS:
            return
        raise Refuse("TFG101", f"the block calls `{_code(func)}`, whose ops cannot be known from the source")

    def _call_op_types(self, call: cst.Call, info: dict) -> list[str]:
        """Op types this call may create: the default trace, plus the traces of
        argument variants whose arguments the call actually passes."""
        found = [op["type"] for op in info["ops"]] + list(info.get("static_shape_ops", []))
        params = list(info.get("params") or [])
        given = set()
        for i, arg in enumerate(call.args):
            if arg.star:
                return sorted(set(found) | {op['type'] for ops in info.get('arg_variants', {}).values() for op in ops})
            if arg.keyword is not None:
                given.add(arg.keyword.value)
            elif i < len(params):
                given.add(params[i])
        variants = dict(info.get("arg_variants", {}))
        for sub in (info.get("v2") or {},):
            variants.update(sub.get("arg_variants", {}))
            found += [op["type"] for op in sub.get("ops", [])]
        for key, ops in variants.items():
            names = {part.split("=")[0].strip() for part in key.split(",")}
            if names & given:
                found += [op["type"] for op in ops]
        return sorted(set(found))

    def _check_local_def(self, d: cst.FunctionDef, emap, label: str) -> None:
        """A same-module function called in the block: it must create no overridden op."""
        if d in self.def_cache:
            err = self.def_cache[d]
        else:
            self.def_cache[d] = None  # recursion guard
            err = None
            sub: list[Candidate] = []
            # scan the body as if it were a block of its own (no candidates may come out of it)
            dummy = Block(
                cst.With(items=[cst.WithItem(cst.Name("_"))], body=cst.IndentedBlock(body=[])),
                cst.Call(func=cst.Name("_")),
                self.col.scope_of_def.get(d) or self.col.module_scope,  # type: ignore[arg-type]
                None, 0, 0,
            )
            try:
                for s in d.body.body if isinstance(d.body, cst.IndentedBlock) else [d.body]:
                    self._scan(s, s, emap, dummy, sub, dummy.scope)
            except Refuse as e:
                err = e
            if err is None and sub:
                err = Refuse("TFG108", f"`{label}()` creates a {sub[0].op_type} op inside; it is also called outside the block")
            self.def_cache[d] = err
        if err is not None:
            raise Refuse(err.code, f"in `{label}()`: {err.reason}" if not err.reason.startswith("in `") else err.reason)

    def _bind_args(self, call: cst.Call, params: list[str]) -> dict[str, tuple[int, cst.BaseExpression]]:
        bound: dict[str, tuple[int, cst.BaseExpression]] = {}
        for i, arg in enumerate(call.args):
            if arg.star:
                raise Refuse("TFG108", f"`{_code(call.func)}` is called with *args/**kwargs")
            if arg.keyword is None:
                if i >= len(params):
                    raise Refuse("TFG108", f"too many positional arguments for `{_code(call.func)}`")
                bound[params[i]] = (i, arg.value)
            else:
                bound[arg.keyword.value] = (i, arg.value)
        return bound

    def _static_ok(self, expr: cst.BaseExpression) -> Optional[bool]:
        """True: a literal usable anywhere; False: a closure over local names; None: not allowed."""
        if _is_literal(expr):
            return True
        if isinstance(expr, cst.Attribute) and self.col.tf(expr) is not None:
            return True  # tf.float32 and friends
        if isinstance(expr, (cst.List, cst.Tuple)):
            oks = [self._static_ok(e.value) for e in expr.elements]
            if any(o is None for o in oks):
                return None
            return all(oks)
        if isinstance(expr, (cst.Name, cst.Attribute)) and dotted(expr):
            root = dotted(expr).split(".")[0]
            return not self._is_local(root)
        return None

    def _is_local(self, name: str) -> bool:
        """Bound in an enclosing function (so a module-level wrapper could not see it)?"""
        s: Optional[Scope] = self._current_scope
        while s is not None and s.parent is not None:
            if name in s.assigns or name in s.params or name in s.defs or name in s.bound:
                return True
            s = s.parent
        return False

    def _candidate_from_call(self, call, name, info, op_type, stmt, emap, block, found) -> None:
        params = list(info.get("params") or [])
        bound = self._bind_args(call, params)
        op = next(o for o in info["ops"] if o["type"] == op_type)
        inputs = op.get("inputs") or []
        input_exprs, input_names, input_positions = [], [], []
        for pname in inputs:
            if pname is None or pname not in bound:
                raise Refuse("TFG108", f"cannot map the inputs of the {op_type} op to the arguments of `{_code(call.func)}`")
            input_positions.append(bound[pname][0])
            input_exprs.append(bound[pname][1])
            input_names.append(pname)
        closure = False
        for pname, (_i, expr) in bound.items():
            if pname in inputs:
                continue
            ok = self._static_ok(expr)
            if ok is None:
                raise Refuse("TFG108", f"argument `{pname}` of `{_code(call.func)}` is an expression the migrator will not move")
            closure = closure or not ok
        forward = self._forward_call(call, input_positions, input_names)
        found.append(
            Candidate(call, op_type, emap[op_type], input_exprs, input_names, forward,
                      needs_closure=closure, stmt=stmt, tf_name=name, block=block)
        )

    @staticmethod
    def _forward_call(call: cst.Call, positions: list[int], names: list[str], func=None) -> cst.Call:
        args = list(call.args)
        for pos, n in zip(positions, names):
            args[pos] = args[pos].with_changes(value=cst.Name(n))
        return call.with_changes(args=args, func=func or call.func)

    def _scan_py_func(self, call, name, stmt, emap, block, found, scope) -> None:
        params = ["func", "inp", "Tout", "stateful", "name"]
        bound = self._bind_args(call, params)
        stateful = bound.get("stateful", (None, cst.Name("True")))[1]
        if isinstance(stateful, cst.Name) and stateful.value in ("True", "False"):
            op_type = "PyFunc" if stateful.value == "True" else "PyFuncStateless"
        elif isinstance(stateful, cst.Name) and stateful.value in scope.params:
            value = self._param_value_from_callers(scope, stateful.value)
            if value not in ("True", "False"):
                if "PyFunc" in emap or "PyFuncStateless" in emap:
                    raise Refuse("TFG108", f"`stateful={stateful.value}` decides between PyFunc and PyFuncStateless at run time")
                return
            op_type = "PyFunc" if value == "True" else "PyFuncStateless"
        else:
            if "PyFunc" in emap or "PyFuncStateless" in emap:
                raise Refuse("TFG108", "`stateful` is not a literal: PyFunc or PyFuncStateless cannot be told apart")
            return
        if op_type not in emap:
            return
        if "inp" not in bound or "func" not in bound or "Tout" not in bound:
            raise Refuse("TFG108", "tf.py_func is called without func, inp and Tout")
        inp_pos, inp = bound["inp"]
        for pname, (_i, expr) in bound.items():
            if pname != "inp" and self._static_ok(expr) is None:
                raise Refuse("TFG108", f"argument `{pname}` of tf.py_func is an expression the migrator will not move")
        func = self._numpy_function_func(call.func)
        if isinstance(inp, (cst.List, cst.Tuple)) and all(not isinstance(e, cst.StarredElement) for e in inp.elements):
            names = [f"x{i}" if len(inp.elements) > 1 else "x" for i in range(len(inp.elements))]
            new_inp = inp.with_changes(elements=[e.with_changes(value=cst.Name(n)) for e, n in zip(inp.elements, names)])
            args = list(call.args)
            args[inp_pos] = args[inp_pos].with_changes(value=new_inp)
            forward = call.with_changes(func=func, args=args)
            exprs = [e.value for e in inp.elements]
            variadic = False
        else:
            args = list(call.args)
            args[inp_pos] = args[inp_pos].with_changes(
                value=cst.Call(cst.Name("list"), [cst.Arg(cst.Name("inputs"))])
            )
            forward = call.with_changes(func=func, args=args)
            exprs, names, variadic = [inp], ["*inputs"], True
        closure = any(self._static_ok(e) is False for p, (_i, e) in bound.items() if p != "inp")
        # py_func always returns a list for a list Tout; numpy_function in eager
        # unwraps a one-element list.  Keep py_func's structure in every mode.
        post: list[str] = []
        tout_pos, tout = bound["Tout"]
        if isinstance(tout, (cst.List, cst.Tuple)) and len(tout.elements) == 1:
            args = list(forward.args)
            args[tout_pos] = args[tout_pos].with_changes(value=tout.elements[0].value)
            forward = cst.List([cst.Element(forward.with_changes(args=args))])
        elif not isinstance(tout, (cst.List, cst.Tuple)) and self._static_ok(tout) is False:
            tout_code = _code(tout)
            alias = _code(func.value) if isinstance(func, cst.Attribute) else "tf"
            post = [  # formatted by the builder with the output name and the module's indent
                f"if isinstance({tout_code}, (list, tuple)) and {alias}.is_tensor({{out}}):",
                "{indent}{out} = [{out}]  # tf.py_func returned a list here; eager numpy_function unwraps one output",
            ]
        found.append(
            Candidate(call, op_type, emap[op_type], exprs, names, forward, variadic=variadic,
                      needs_closure=closure, stmt=stmt, tf_name=name, block=block, post_lines=post)
        )

    @staticmethod
    def _numpy_function_func(func: cst.BaseExpression) -> cst.BaseExpression:
        if isinstance(func, cst.Attribute):
            return func.with_changes(attr=cst.Name("numpy_function"))
        return cst.Attribute(cst.Name("tf"), cst.Name("numpy_function"))

    def _param_value_from_callers(self, scope: Scope, param: str) -> Optional[str]:
        """The literal a parameter always has, judging by its default and every call in this module."""
        fn = scope.node
        if not isinstance(fn, cst.FunctionDef):
            return None
        p = scope.params.get(param)
        default = _code(p.default).strip() if p is not None and p.default is not None else None
        calls = self.col.calls_by_name.get(fn.name.value, [])
        if not calls:
            return None
        positional = [x.name.value for x in fn.params.params]
        idx = positional.index(param) if param in positional else None
        values = set()
        for call, _s in calls:
            given = None
            for i, a in enumerate(call.args):
                if a.star:
                    return None
                if (a.keyword is not None and a.keyword.value == param) or (a.keyword is None and i == idx):
                    given = _code(a.value).strip()
            values.add(given if given is not None else default)
        return values.pop() if len(values) == 1 else None


def plan_overrides(module: cst.Module, ctx) -> Optional[OverridePlan]:
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    qnames = QualifiedNames(wrapper.resolve(QualifiedNameProvider))
    positions = wrapper.resolve(PositionProvider)
    col = _Collector(qnames, positions)
    wrapper.visit(col)
    if not col.blocks and not col.escaping:
        return None
    from migrator._plugins._override_build import build_plan

    planner = _Planner(module, ctx, col)
    return build_plan(planner)
