"""Find gradient-API calls and read their arguments (the first step of the tape rewrite).

A call's *form* is checked here: its arguments map onto the TF1 signature, and it stands
where a ``with`` block can be opened before it (not in a lambda, a comprehension, a while test,
another gradient call, or where hoisting its targets reorders the statement: ``_grad_order``).
What the call *computes* is proved in ``_grad_proof``.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameSource

from migrator._plugins import _grad_per_index as per_index
from migrator._plugins._grad_hidden import runs_code
from migrator._plugins._grad_model import Call, Refuse
from migrator._plugins._grad_order import none_tested, order_problem
from migrator._plugins._grad_values import SESSION_CLASSES, nested_python_list
from migrator.tfnames import MIXED, TF_MODULES, LazyQualifiedNameProvider, dotted, normalize, tf_name

GRADIENTS = "tensorflow.gradients"
HESSIANS_API = "tensorflow.hessians"
PFOR = "tensorflow.python.ops.parallel_for.gradients"
JAC = PFOR + ".jacobian"
BJAC = PFOR + ".batch_jacobian"
APIS = {GRADIENTS: "grad", HESSIANS_API: "hess", JAC: "jac", BJAC: "bjac"}
API_LEAVES = {"gradients", "hessians", "jacobian", "batch_jacobian"}

#: keras.backend.gradients spellings (graph-only; reported, never rewritten)
KERAS_GRADIENTS = {"keras.backend.gradients", "tensorflow.keras.backend.gradients", "tf_keras.backend.gradients",
                   "tensorflow.python.keras.backend.gradients", "keras.src.backend.gradients"}

#: (positional order, arguments that carry over, arguments dropped with a note)
_PFOR_KEEP = {"use_pfor": "experimental_use_pfor", "parallel_iterations": "parallel_iterations"}
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
    "jac": (["output", "inputs", "use_pfor", "parallel_iterations"], dict(_PFOR_KEEP), set()),
    "bjac": (["output", "inp", "use_pfor", "parallel_iterations"], dict(_PFOR_KEEP), set()),
}

#: functions whose function arguments run in graph-only control flow
GRAPH_FN_CALLS = {"tensorflow.while_loop", "tensorflow.cond", "tensorflow.case", "tensorflow.switch_case",
                  "tensorflow.map_fn", "tensorflow.scan", "tensorflow.foldl", "tensorflow.foldr"}

class Find(cst.CSTVisitor):
    """Candidate calls, K.gradients, graph-only functions, imports; all with metadata."""

    METADATA_DEPENDENCIES = (LazyQualifiedNameProvider, PositionProvider, ParentNodeProvider)

    def __init__(self) -> None:
        self.calls: list[tuple[cst.Call, str]] = []
        self.keras: list[cst.Call] = []
        self.values: list[cst.CSTNode] = []  # non-call references to the API
        #: `tf.gradients(...)` where `tf` is not (only) the TF import: a parameter, a local, a name
        #: also bound to something else.  Reported, never rewritten
        self.unresolved: list[cst.Call] = []
        self.graph_fn_nodes: set[int] = set()
        self.graph_fn_names: set[str] = set()  # functions registered as gradients by a call
        self.control_fn_names: set[str] = set()  # functions passed to tf.while_loop, tf.cond, ...
        self.registered_defs: set[int] = set()
        self.api_aliases: dict[str, str] = {}  # bound name -> API it imports
        self.tf_alias: Optional[str] = None
        self.variables: dict[str, list] = {}  # module-level name -> values bound to it
        self.imported: set[str] = set()
        self.defs: dict[str, cst.CSTNode] = {}  # module-level def/class name -> node
        self.depth = 0
        self.session = False  # the module builds or runs a tf.Session
        self.top_level: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        name = tf_name(node, self)
        if name in APIS:
            self.calls.append((node, APIS[name]))
            return
        if name is None and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("gradients", "hessians") \
                and dotted(node.func.value) in TF_HEADS:
            self.unresolved.append(node)
        elif name is None and _mixed_api(self.get_metadata(LazyQualifiedNameProvider, node.func, set())):
            self.unresolved.append(node)  # `grad` bound to tf.gradients and to another module's function
        if (name or "").rsplit(".", 1)[-1] in SESSION_CLASSES:
            self.session = True
        elif dotted(node.func) in ("self.session", "self.test_session", "self.cached_session"):  # a TestCase's graph
            self.session = self.session or "test"
        raw = {q.name for q in self.get_metadata(LazyQualifiedNameProvider, node.func, set())}
        if raw & KERAS_GRADIENTS:
            self.keras.append(node)
            return
        if name in GRAPH_FN_CALLS:
            for a in node.args:
                self._graph_fn(a.value, self.control_fn_names)
        elif isinstance(node.func, cst.Call) and tf_name(node.func, self) == "tensorflow.RegisterGradient":
            for a in node.args:
                self._graph_fn(a.value, self.graph_fn_names)

    def _graph_fn(self, expr: cst.CSTNode, names: set) -> None:
        if isinstance(expr, (cst.Lambda, cst.FunctionDef)):
            self.graph_fn_nodes.add(id(expr))
        elif isinstance(expr, cst.Name):
            names.add(expr.value)
        elif isinstance(expr, (cst.List, cst.Tuple)):
            for el in expr.elements:
                self._graph_fn(el.value, names)
        elif isinstance(expr, cst.Dict):
            for el in expr.elements:
                if isinstance(el, cst.DictElement):
                    self._graph_fn(el.value, names)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if self.depth == 0:
            self.defs[node.name.value] = node
        self.depth += 1

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.depth -= 1

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self.depth == 0:
            self.defs[node.name.value] = node
        self.depth += 1
        for dec in node.decorators:
            d = dec.decorator
            if isinstance(d, cst.Call) and tf_name(d, self) == "tensorflow.RegisterGradient":
                self.registered_defs.add(id(node))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.depth -= 1

    def _reference(self, node: cst.BaseExpression) -> None:
        parent = self.get_metadata(ParentNodeProvider, node, None)
        if isinstance(parent, cst.Call) and parent.func is node:
            return
        if isinstance(parent, (cst.ImportAlias, cst.Attribute, cst.AsName, cst.ImportFrom, cst.Import)):
            return
        if isinstance(parent, cst.Assign) and parent.value is node and self.depth == 0 and \
                len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name) and \
                tf_name(parent.targets[0].target, self) == tf_name(node, self) in APIS:
            # `grad = tf.gradients` at module level: tfnames resolves `grad`, so its calls are
            # sites and its other uses are reported as values (visit_Name)
            self.api_aliases[parent.targets[0].target.value] = tf_name(node, self)
            return
        if tf_name(node, self) in APIS:
            self.values.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in API_LEAVES:
            self._reference(node)
        elif node.attr.value == "Session" and tf_name(node, self) is not None:
            self.session = True

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.api_aliases:
            self._reference(node)

    def visit_Module(self, node: cst.Module) -> None:
        # imports that surely ran before any function is called: unconditional, at module level
        # (an adversarial run: a tape spelled with a function-local or an `if`-only import raised)
        self.top_level = {id(small) for st in node.body if isinstance(st, cst.SimpleStatementLine) for small in st.body}

    def visit_Import(self, node: cst.Import) -> None:
        for a in node.names:
            full = a.evaluated_name
            bound = a.evaluated_alias or full.split(".")[0]
            if self.depth == 0:
                self.imported.add(bound)
            if full == PFOR:
                self.api_aliases[bound] = PFOR
            if self.tf_alias is None and full in TF_MODULES and id(node) in self.top_level:
                if a.asname is not None or full == "tensorflow":
                    self.tf_alias = bound

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar) or node.module is None:
            return
        mod = dotted(node.module) or ""
        for a in node.names:
            bound = a.evaluated_alias or a.evaluated_name
            if self.depth == 0:
                self.imported.add(bound)
            full = normalize(f"{mod}.{a.evaluated_name}")
            if self.tf_alias is None and full in TF_MODULES and id(node) in self.top_level:
                self.tf_alias = bound  # `from tensorflow.compat import v1 as tf`
            if full is not None:
                full = {"tensorflow.python.ops.gradients_impl.gradients": GRADIENTS}.get(full, full)
            if full in APIS or full == PFOR:
                self.api_aliases[bound] = full

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.depth += 1

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self.depth -= 1

    def _always_runs(self, node: cst.Assign) -> bool:
        """``tf = <a TF module>`` at module level, or on both branches of a module-level
        ``if``/``else`` (a TF1/TF2 shim: ``tf = tensorflow`` or ``tf = tensorflow.compat.v1``)."""
        line = self.get_metadata(ParentNodeProvider, node, None)
        where = self.get_metadata(ParentNodeProvider, line, None)
        if isinstance(where, cst.Module):
            return True
        branch = self.get_metadata(ParentNodeProvider, where, None) if isinstance(where, cst.IndentedBlock) else None
        top = branch
        while isinstance(top, (cst.If, cst.Else)) and not isinstance(
                self.get_metadata(ParentNodeProvider, top, None), cst.Module):
            top = self.get_metadata(ParentNodeProvider, top, None)  # up an elif chain
        if not isinstance(top, cst.If) or not isinstance(self.get_metadata(ParentNodeProvider, top, None), cst.Module):
            return False
        arms, cur = [], top
        while isinstance(cur, cst.If):
            arms.append(cur.body)
            cur = cur.orelse
        if cur is None:
            return False  # no else: the binding may not run
        arms.append(cur.body)
        return all(any(isinstance(st, cst.SimpleStatementLine) and any(self._binds_tf(small) for small in st.body)
                       for st in arm.body) for arm in arms)

    def _binds_tf(self, stmt: cst.CSTNode) -> bool:
        """``tf = M`` where every name ``M`` stands for is TF's module (``tensorflow`` on one branch
        of a shim, ``tensorflow.compat.v1`` on the other)."""
        if not (isinstance(stmt, cst.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0].target, cst.Name)
                and stmt.targets[0].target.value == "tf"):
            return False
        names = [q.name for q in self.get_metadata(LazyQualifiedNameProvider, stmt.targets[0].target, set())
                 if q.source != QualifiedNameSource.LOCAL]  # the target itself
        return bool(names) and all(normalize(n) in TF_MODULES for n in names)

    def visit_Assign(self, node: cst.Assign) -> None:
        if self.depth == 0:
            if self.tf_alias != "tf" and self._binds_tf(node) and self._always_runs(node):
                # `tf = tensorflow.compat.v1`: the tape is spelled as the code spells TF; not when
                # only a branch binds it (`if USE_COMPAT: tf = ...`), which may not run
                self.tf_alias = "tf"
            for t in node.targets:
                for key in _target_names(t.target):
                    self.variables.setdefault(key, []).append(node.value if isinstance(t.target, cst.Name) else None)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self.depth == 0 and isinstance(node.target, cst.Name):
            self.variables.setdefault(node.target.value, []).append(None)

    def visit_For(self, node: cst.For) -> None:
        if self.depth == 0:
            for key in _target_names(node.target):
                self.variables.setdefault(key, []).append(None)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if self.depth == 0 and node.asname is not None:
            for key in _target_names(node.asname.name):
                self.variables.setdefault(key, []).append(None)


def _target_names(t: cst.BaseExpression) -> list[str]:
    if isinstance(t, cst.Name):
        return [t.value]
    if isinstance(t, (cst.Tuple, cst.List)):
        return [n for el in t.elements for n in _target_names(el.value)]
    if isinstance(t, cst.StarredElement):
        return _target_names(t.value)
    return []


# -- the form of one call ------------------------------------------------------------


def parse_args(c: Call, code_for_node) -> None:
    """Fill ys/xs/kwargs/notes of ``c`` from its arguments, or raise Refuse."""
    order, keep, drop = SIGNATURES[c.kind]
    fn = code_for_node(c.node.func)
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
    written = list(given)  # the order the call evaluates them in
    if written[:2] != [first, second] and any(runs_code(v) for v in given.values()):
        # the tape computes the targets first and reads the rest at tape.gradient: `grad_ys=make_gy()`
        # written before `ys=` ran first (an adversarial run: a counter it bumped fed the targets)
        raise Refuse("TFG128", f"`{fn}` has its arguments in an order the tape would change (`{written[0]}=` "
                               f"before `{first}`/`{second}`), and some call code; write `{first}` and `{second}` "
                               "first, then re-run")
    for k, v in given.items():
        if k in (first, second) or isinstance(v, cst.Name) and v.value == "None":
            continue  # an argument explicitly None is the default
        if k in drop and runs_code(v):
            raise Refuse("TFG128", f"`{k}={code_for_node(v)}` has no GradientTape equivalent and would go, and "
                                   "with it the code it runs; bind it to a name first (or drop it by hand)")
        if k in drop:
            c.notes.append(f"dropped `{k}=`: it has no GradientTape equivalent and did not change values")
        elif k == "stop_gradients":
            raise Refuse("TFG123", "stop_gradients has no tape argument: apply tf.stop_gradient to "
                                   f"{code_for_node(v)} where ys is computed (and tape.watch them if they are "
                                   "also sources), then use a tape")
        elif k in keep:
            c.kwargs[keep[k]] = v
            if k == "grad_ys" and nested_python_list(v):
                raise Refuse("TFG128", "grad_ys holds a Python list, which TF1 made one tensor and a tape flattens "
                                       "into numbers; wrap each element in tf.constant(...) first")
            if k == "grad_ys":
                c.notes.append("grad_ys became output_gradients")
            if k == "use_pfor" and not (isinstance(v, cst.Name) and v.value == "True"):
                c.persistent = True
            if k == "parallel_iterations":
                c.persistent = True
    if c.kind == "hess":
        items = chain_items(c.xs)
        if items is None or len(items) != 1:
            raise Refuse("TFG128", "tf.hessians with several sources: one nested-tape jacobian per source, by hand")
    if c.kind in ("jac", "bjac") and chain_items(c.xs) is None:
        raise Refuse("TFG124", "the sources are not plain names or attributes: bind them to names before the call")


def is_index0(node: cst.CSTNode, parent: cst.CSTNode) -> bool:
    return (
        isinstance(parent, cst.Subscript)
        and parent.value is node
        and len(parent.slice) == 1
        and isinstance(parent.slice[0].slice, cst.Index)
        and isinstance(parent.slice[0].slice.value, cst.Integer)
        and parent.slice[0].slice.value.value == "0"
    )


def check_context(c: Call, parents, find: Find, an=None) -> None:
    """Refuse a call that stands where no tape can be opened before it."""
    node: cst.CSTNode = c.node
    parent = parents.get(node)
    c.replace = node
    if c.kind in ("grad", "hess") and is_index0(node, parent):
        c.index0 = True
        c.replace = parent
    if c.kind == "bjac" and none_tested(node, parents):  # TF1 gave None where the tape gives zeros
        raise Refuse("TFG128", "the result is tested against None: TF1 gave None for an unconnected input, "
                               "GradientTape.batch_jacobian gives zeros; test the values instead")
    call_ids = {id(n) for n, _ in find.calls}
    child = node
    cur = parent
    while cur is not None:
        if isinstance(cur, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)) and \
                child is cur.for_in and _in_outer_iter(node, cur.for_in, parents):
            child, cur = cur, parents.get(cur)  # the outermost iterable runs once, where the statement runs
            continue
        if isinstance(cur, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            if id(cur) in find.graph_fn_nodes:
                raise Refuse("TFG121", "the call is inside a function passed to tf.while_loop/tf.cond, which runs in "
                                       "graph-only control flow; keep it in graph mode (tf.function) or use a tape")
            per = per_index.comprehension(cur, child, an) if an is not None else None
            if per is not None and per_index.call_ok(c, per, an, parents):
                c.per_index, c.persistent = per, True
            elif an is not None and (each := per_index.element(c, cur, child, an, parents)):
                c.lifted, c.persistent = each, True  # `[tf.gradients(y, x)[0] for y in ys]`
            else:
                raise Refuse("TFG128", "the call is inside a lambda or comprehension; bind its result "
                                       "to a name in a statement first")
            child, cur = cur, parents.get(cur)
            continue
        if isinstance(cur, cst.While) and child is cur.test:
            raise Refuse("TFG128", "the call is in a while condition; compute it in a statement first")
        if (isinstance(cur, cst.IfExp) and child is not cur.test or isinstance(cur, cst.BooleanOperation)
                and child is cur.right) and chain_items(c.ys) is None:  # a hoisted target would run unguarded
            raise Refuse("TFG128", "the call runs on one branch of a conditional expression and its targets are "
                                   "an expression; bind them in an if statement first")
        if isinstance(cur, cst.SimpleStatementSuite):
            raise Refuse("TFG128", "the call is on the same line as its `if`/`for`; put it on its own line")
        why = chain_items(c.ys) is None and order_problem(cur, child, parents.get(cur), frozenset(find.imported),
                                                                 an.qn if an is not None else None)
        if why:  # the targets are hoisted ahead of the statement (_grad_order)
            raise Refuse("TFG128", f"{why}; bind the targets to a name on a line of their own first")
        if isinstance(cur, cst.FunctionDef):
            if id(cur) in find.registered_defs or cur.name.value in find.graph_fn_names:
                raise Refuse("TFG121", f"the call is inside `{cur.name.value}`, a registered gradient "
                                       "function, which TF1's own gradient machinery calls; keep it in graph "
                                       "mode or restructure it around a tape")
            if cur.name.value in find.control_fn_names and find.session:
                # TF2 traces a while_loop/cond body and a tape inside it works (eager and tf.function);
                # a Session script still builds v1 control flow, where it is not known to
                raise Refuse("TFG121", f"the call is inside `{cur.name.value}`, a tf.while_loop/tf.cond body of a "
                                       "file that still runs under a Session (v1 control flow); keep it in graph "
                                       "mode until the script runs eagerly")
        if isinstance(cur, cst.Call) and id(cur) in call_ids and cur is not c.replace:
            raise Refuse("TFG128", "the call is nested inside another gradient call; bind the inner "
                                   "result to a name first")
        child = cur
        cur = parents.get(cur)
    for a in c.node.args:
        if _contains(a.value, call_ids):
            raise Refuse("TFG128", "an argument holds another gradient call; bind its result to a name first")


def _in_outer_iter(node: cst.CSTNode, for_in: cst.CompFor, parents) -> bool:
    cur = node
    while cur is not None and cur is not for_in:
        if cur is for_in.iter:
            return True
        cur = parents.get(cur)
    return False


def _contains(expr: cst.CSTNode, ids: set) -> bool:
    """Whether ``expr`` holds one of the calls whose ids are ``ids``."""
    todo = [expr]
    while todo:
        node = todo.pop()
        if isinstance(node, cst.Call) and id(node) in ids:
            return True
        todo.extend(node.children)
    return False


def chain_items(expr: cst.BaseExpression) -> Optional[list]:
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


def _mixed_api(names) -> bool:
    return MIXED in names and any(normalize(q.name) in APIS for q in names)


#: how code spells the TF module: `tf.gradients` under one of these that is not the TF import
#: is reported (a parameter named `tf`, a `for tf in ...`), never taken for TF's
TF_HEADS = frozenset({"tf", "tensorflow", "tf1", "tfv1", "tf.compat.v1", "tensorflow.compat.v1"})


def may_have_candidates(code: str) -> bool:
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
                if a.name in API_LEAVES:
                    api_names.add(bound)
    for node in 2 * (tree.body if isinstance(tree, ast.Module) else []):  # twice: `tf2 = tf1`
        # `tf1 = tf.compat.v1`, `grad = tf.gradients` (tfnames resolves such module-level aliases)
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Attribute, ast.Name)):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in imported:
                bound = {t.id for t in node.targets if isinstance(t, ast.Name)}
                imported |= bound
                if getattr(node.value, "attr", None) in API_LEAVES:
                    api_names |= bound
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in API_LEAVES:
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in imported:
                return True
            if node.attr in ("gradients", "hessians") and ast.unparse(node.value) in TF_HEADS:
                return True  # reported: `tf` may be a parameter
    return any(isinstance(node, ast.Name) and node.id in api_names for node in ast.walk(tree))
