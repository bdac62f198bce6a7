"""Block-level obligations: the graph, the map, the gradient it names, the program's reads.

Each check adds a proof line to the block's :class:`Evidence`, asks for an
assumption (only ``--unsafe-fixes`` grants one), or raises :class:`Refuse`.
The conditions are listed in docs/soundness.md, "Overrides -> tf.custom_gradient".
"""
from __future__ import annotations

import os
from typing import Optional, Union

import libcst as cst

from migrator import optable
from migrator._plugins._override_model import Block, Evidence, Refuse, Registration, Scope, code
from migrator._plugins._override_switch import (
    innermost_switch, no_manual_switch, plain_contexts, rebinds, safe_context, sole_def,
)
from migrator.tfnames import dotted, is_docstring

# Built-in gradient functions the rewrite inlines (tf_gradient_semantics.md §2.3).
BUILTIN_TARGETS = {"Identity", "StopGradient", "Neg", "Floor", "Round", "Ceil", "Rint", "Sign", "Add", "AddV2"}
#: code tokens that mean another graph may be the default one when a function runs
GRAPH_SWITCHES = (b"as_default", b"reset_default_graph", b"Estimator", b"estimator", b".function", b"defun",
                  b"wrap_function")
_MAP_READS = {"get", "keys", "items", "values", "copy", "__contains__"}
_MAP_WRITES = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


class Prover:
    def __init__(self, found, ctx, project):
        self.found, self.col, self.ctx, self.project = found, found.col, ctx, project
        self._rebindable: Optional[bool] = None
        self.path = os.path.abspath(ctx.path)
        self._reach: Optional[list[str]] = None
        self._code: dict = {}  # id(function) -> its source, rendered once for the switch checks

    def code_of(self, fn: cst.CSTNode) -> str:
        if id(fn) not in self._code:
            self._code[id(fn)] = self.found.module.code_for_node(fn)
        return self._code[id(fn)]

    def where(self, node: cst.CSTNode) -> str:
        return f"line {self.found.line(node)}"

    # -- files that run this module's code ---------------------------------
    def reach(self) -> Optional[list[str]]:
        """This file and every project file that imports it (None: unknown)."""
        if self._reach is None:
            imp = self.project.importers(self.path) if self.project is not None else []
            self._reach = None if imp is None else [self.path] + imp
        return self._reach

    def _hits(self, needles) -> Optional[list]:
        files = self.reach()
        if files is None:
            return None
        return self.project.text_hits(files, needles) if self.project is not None else []

    # -- the graph ----------------------------------------------------------
    def graph(self, block: Block, ev: Evidence) -> None:
        """The map is entered on the graph the block's ops are made in."""
        expr = block.call.func.value
        if isinstance(expr, cst.Call):
            if self.is_default_graph_call(expr, block.scope):
                ev.prove("the map is entered on tf.get_default_graph(), the graph the block's ops are made in")
                return
            raise self._not_graph(expr)
        key = dotted(expr)
        if key is None:
            raise self._not_graph(expr)
        if self._switched_here(block, key, ev):
            return
        if isinstance(expr, cst.Attribute) and expr.attr.value == "graph":
            # `sess.graph`; also `self.graph = tf.get_default_graph()`, which a subclass or another
            # file may set to another graph (an adversarial run; `self.G` has that gap too)
            self._session_graph(block, expr, ev)
            return
        bound = block.scope.lookup_assigns(key)
        if bound is None and "." in key:
            bound = block.scope.module().assigns.get(key)
        for _ in range(3):  # `h = g` with `g = tf.get_default_graph()` in the same function
            if not (bound and len(bound) == 1 and isinstance(bound[0][1], cst.Name)):
                break
            name = bound[0][1].value
            if block.scope.binding_scope(name) is not block.scope.binding_scope(key.split(".")[0]):
                break
            inner = block.scope.lookup_assigns(name)
            if not inner or len(inner) != 1 or not self._same_default(inner[0][0], bound[0][0]):
                break
            block.graph_chain.append(name)
            bound = inner
        if not bound or not all(self.is_default_graph_call(v, block.scope) for _s, v in bound):
            if bound and len(bound) == 1 and isinstance(bound[0][1], cst.Attribute) \
                    and bound[0][1].attr.value == "graph":
                self._session_graph(block, bound[0][1], ev)
                return
            if bound and all(self._graph_like(v, block.scope) for _s, v in bound):
                ev.assume(f"`{key}` is the default graph when the block runs", "TFG116",
                          f"`{key}` is bound to graph expressions that may not be the default graph")
                return
            if not bound and "." not in key and _graph_param(block.scope.params.get(key)):
                # `def build(graph, x): with graph.gradient_override_map(...)`: the caller's graph
                ev.assume(f"parameter `{key}` is the default graph whenever `{block.scope.node.name.value}` runs",
                          "TFG116", f"`{key}` is a parameter: the override applied only if the caller's graph was "
                          f"the default one; make it default with `with {key}.as_default():` around the block")
                return
            raise self._not_graph(expr)
        owner = block.scope.binding_scope(key.split(".")[0]) if "." not in key else None
        stmts = [st for st, _v in bound]
        if owner is block.scope and len(stmts) == 1 and self._same_default(stmts[0], block.node):
            ev.prove(f"`{key}` is bound to tf.get_default_graph() at {self.where(stmts[0])}, "
                     "in the same function, under the same default graph")
            return
        self._captured(block, key, ev, f"`{key}` is bound to tf.get_default_graph() at {self.where(stmts[0])}")

    def _switched_here(self, block: Block, key: str, ev: Evidence) -> bool:
        """`with X.as_default() as g:` / `with graph.as_default():` around the block (G1)."""
        sw = innermost_switch(self, block.node)
        fn = block.scope.function or (self.found.module if block.scope.parent is None else None)  # or the module
        s: Optional[Scope] = block.scope
        while s is not None and key not in s.graph_names:
            s = s.parent
        item = sw[1] if sw is not None else None
        named = item is not None and item.asname is not None and isinstance(item.asname.name, cst.Name) \
            and item.asname.name.value == key and s is block.scope
        made_default = item is not None and "." not in key and dotted(item.item.func.value) == key \
            and block.scope.binding_scope(key) is block.scope
        if not (named or made_default or s is not None):
            return False
        base = item.item.func.value if item is not None else None
        graph_base = made_default or (named and self._graph_base(base, block.scope))
        ok = (named or made_default) and fn is not None and not rebinds(self, fn, sw[0], key) \
            and plain_contexts(self, block.node, sw[0], item) and no_manual_switch(self, fn, True) and graph_base
        if ok:
            how = ("the graph made default by the enclosing `with ... as_default()`" if named
                   else f"made the default graph by the enclosing `with {key}.as_default()`")
            ev.prove(f"`{key}` is {how} ({self.where(sw[0])}), and nothing between them rebinds it or enters "
                     "another context")
            return True
        if s is None:
            return False
        w = s.graph_names[key]
        inside = s is block.scope and self._inside(block.node, w)
        why = ("the block may run after that with statement ended, under another default graph" if not inside
               else f"`{code(base)}` is not known to be a TF graph (a look-alike's as_default may yield anything)"
               if named and not graph_base else
               "something between that with statement and the block may make another graph the default (or "
               "rebind the name): only name_scope, variable_scope, device and control_dependencies are known "
               "not to")
        ev.assume(f"`{key}` is the default graph whenever the block runs", "TFG116",
                  f"`{key}` is the graph of `with ... as_default()` at {self.where(w)}, but {why}")
        return True

    def _graph_base(self, base, scope: Scope, depth: int = 0) -> bool:
        """What `as_default()` is called on is a TF graph: `tf.Graph()`, `sess.graph`, or a name bound
        once to one of those (a look-alike's `as_default` may yield anything)."""
        if isinstance(base, cst.Call) and self.col.tf(base) == "tensorflow.Graph" and not base.args:
            return True
        if self._graph_like(base, scope):
            return True
        key = dotted(base)
        bound = scope.lookup_assigns(key) if key is not None and "." not in key and depth < 3 else None
        return bool(bound) and len(bound) == 1 and self._graph_base(bound[0][1], scope, depth + 1)

    def _captured(self, block: Block, key: str, ev: Evidence, how: str) -> None:
        """A graph object read from outside the function: right only if no other graph is ever default."""
        hits = self._hits(GRAPH_SWITCHES)
        if hits == []:
            ev.prove(f"{how}; no file that can run this code makes another graph the default "
                     f"(searched {len(self.reach() or [])} file(s) for as_default, reset_default_graph, "
                     "Estimator, tf.function)")
            return
        if hits is None:
            why = "the project is too big to search for other default graphs"
        else:
            h = hits[0]
            why = f"{os.path.relpath(h.path, os.path.dirname(self.path))}:{h.line} uses `{h.text.lstrip('.')}`"
        ev.assume(f"`{key}` is the default graph whenever the block runs", "TFG116",
                  f"{how}, outside the function; the override applied only while it was the default graph, "
                  f"and {why}, which may make another graph the default; call tf.get_default_graph() in the block")

    def _session_graph(self, block: Block, expr: cst.Attribute, ev: Evidence) -> None:
        base = dotted(expr.value)
        for w in self._enclosing(block.node, cst.With):
            for item in w.items:
                if (item.asname is not None and isinstance(item.asname.name, cst.Name)
                        and item.asname.name.value == base and isinstance(item.item, cst.Call)
                        and self.col.tf(item.item) in ("tensorflow.Session", "tensorflow.InteractiveSession")
                        and not any(a.keyword is not None and a.keyword.value == "graph" or a.keyword is None
                                    and i == 1 for i, a in enumerate(item.item.args))
                        and self._same_default(w, block.node)):
                    ev.prove(f"`{base}` is a session on the default graph, opened at {self.where(w)}")
                    return
        ev.assume(f"`{code(expr)}` is the default graph when the block runs", "TFG116",
                  f"`{code(expr)}` may be another graph than the default one, where the override would not apply")

    def _not_graph(self, expr) -> Refuse:
        return Refuse("TFG107", f"`{code(expr)}` is not known to be the TensorFlow graph the block's ops are "
                                "made in")

    def is_default_graph_call(self, value, scope: Optional[Scope] = None) -> bool:
        if not isinstance(value, cst.Call) or value.args:
            return False
        if self.col.tf(value) == "tensorflow.get_default_graph":
            return True
        # `def get_graph(): return tf.get_default_graph()` at module level, called here, never rebound
        scope = scope or self.col.module_scope
        fn = scope.find_def(value.func.value) if isinstance(value.func, cst.Name) else None
        top = [st for st in self.col.module_scope.node.body if isinstance(st, cst.FunctionDef)
               and fn is not None and st.name.value == fn.name.value]
        if fn is None or top != [fn] or fn.decorators or fn.params.params or fn.params.posonly_params \
                or not sole_def(self, fn.name.value):
            return False
        body = [st for st in fn.body.body if not is_docstring(st)]
        ret = body[0].body[0] if len(body) == 1 and isinstance(body[0], cst.SimpleStatementLine) \
            and len(body[0].body) == 1 else None
        return isinstance(ret, cst.Return) and isinstance(ret.value, cst.Call) and not ret.value.args \
            and self.col.tf(ret.value) == "tensorflow.get_default_graph"

    def _graph_like(self, value, scope: Scope, depth: int = 0) -> bool:
        if self.is_default_graph_call(value):
            return True
        if isinstance(value, cst.Attribute) and value.attr.value == "graph":
            return True
        key = dotted(value)
        if key is None or depth > 3:
            return False
        bound = scope.lookup_assigns(key)
        return bool(bound) and all(self._graph_like(v, scope, depth + 1) for _s, v in bound)

    def is_graph(self, expr, scope: Scope) -> bool:
        """Cheap form for sites that are not blocks (ExitStack, __enter__)."""
        if isinstance(expr, cst.Call):
            return self.is_default_graph_call(expr)
        key = dotted(expr)
        s: Optional[Scope] = scope
        while s is not None and key:
            if key in s.graph_names:
                return True
            s = s.parent
        return self._graph_like(expr, scope)

    def _enclosing(self, node, kind):
        p = self.found.parent(node)
        while p is not None and not isinstance(p, (cst.FunctionDef, cst.Module)):
            if isinstance(p, kind):
                yield p
            p = self.found.parent(p)

    def _inside(self, node, outer) -> bool:
        return any(w is outer for w in self._enclosing(node, type(outer)))

    def _same_default(self, binding, node) -> bool:
        """No `as_default()` entered between a binding and a use in the same function, no other
        context that might enter one, and none entered by hand."""
        switches = set(map(id, self.col.graph_withs))
        a = {id(w) for w in self._enclosing(binding, cst.With) if id(w) in switches}
        b = {id(w) for w in self._enclosing(node, cst.With) if id(w) in switches}
        shared = {id(w) for w in self._enclosing(binding, cst.With)}
        between = [w for w in self._enclosing(node, cst.With) if id(w) not in shared and w is not binding]
        fn = self._function_of(node)
        return a == b and all(all(safe_context(self, it) for it in w.items) for w in between) \
            and (fn is None or no_manual_switch(self, fn))

    def _function_of(self, node) -> Optional[cst.FunctionDef]:
        p = self.found.parent(node)
        while p is not None and not isinstance(p, cst.FunctionDef):
            p = self.found.parent(p)
        return p

    def _names_rebindable(self) -> bool:
        """Module names may change without an assignment (an adversarial run: `from names import *`
        after `GRAD = "Identity"`; `patch.fix(globals())`; `locals()["m"]["Sign"] = "Neg"`)."""
        if self._rebindable is None:
            src = self.ctx.source
            self._rebindable = any(w in src for w in ("globals()", "locals()", "vars(", "sys.modules")) or any(
                isinstance(n, cst.ImportFrom) and isinstance(n.names, cst.ImportStar)
                for line in self.found.module.body if isinstance(line, cst.SimpleStatementLine) for n in line.body)
        return self._rebindable

    # -- the map ------------------------------------------------------------
    def parse_map(self, block: Block, ev: Optional[Evidence] = None) -> dict[str, tuple]:
        call = block.call
        if len(call.args) != 1 or call.args[0].keyword is not None and call.args[0].keyword.value != "op_type_map":
            raise Refuse("TFG103", "gradient_override_map is not called with one map argument")
        expr = call.args[0].value
        extra: list[tuple[str, cst.BaseExpression]] = []
        reads_names = isinstance(expr, cst.Name) or isinstance(expr, cst.Dict) and any(
            isinstance(el, cst.DictElement) and not isinstance(el.value, cst.SimpleString) for el in expr.elements)
        if reads_names and self._names_rebindable():
            raise Refuse("TFG103", "the module uses globals(), locals(), vars(), sys.modules or a star import, "
                                   "which may change the map or the names it reads; write the map out as a literal")
        if isinstance(expr, cst.Name):
            bound = block.scope.lookup_assigns(expr.value)
            if not bound or len(bound) != 1 or not isinstance(bound[0][1], cst.Dict):
                raise Refuse("TFG103", f"the map `{expr.value}` is not bound once to a dict literal")
            stmt, literal = bound[0]
            extra, updates = self._map_changes(block, expr.value, stmt)
            block.map_stmts = [stmt] + updates
            if ev is not None:
                what = "changed only by the literal updates before the block" if extra else "not changed afterwards"
                ev.prove(f"map `{expr.value}` bound to a dict literal at {self.where(stmt)}, {what}")
            expr = literal
        elif ev is not None and isinstance(expr, cst.Dict):
            ev.prove(f"map is a dict literal at {self.where(expr)}")
        if not isinstance(expr, cst.Dict):
            raise Refuse("TFG103", "the override map is built at run time")
        out: dict[str, tuple] = {}
        for el in expr.elements:
            if not isinstance(el, cst.DictElement):
                raise Refuse("TFG103", "the override map unpacks another dict (**)")
            if not isinstance(el.key, cst.SimpleString):
                raise Refuse("TFG104", "an override map key is not a string literal; write the op type out as a "
                                       "string (\"Relu\") so the op it overrides can be known")
            out[el.key.evaluated_value] = self._map_value(block, el.key.evaluated_value, el.value)
        for key, value in extra:
            out[key] = self._map_value(block, key, value)
        return out

    def _map_value(self, block: Block, key: str, v: cst.BaseExpression) -> tuple:
        if isinstance(v, cst.SimpleString):
            return ("lit", v.evaluated_value)
        if isinstance(v, cst.Name):
            bound = block.scope.lookup_assigns(v.value)
            if bound and len(bound) == 1 and isinstance(bound[0][1], cst.SimpleString):
                return ("lit", bound[0][1].evaluated_value)
            if block.scope.find_def(v.value) is not None:
                raise Refuse("TFG103", f"the map value for {key!r} is the function object `{v.value}`, not a gradient name")
            return ("name", id(_scope_binding(block.scope, v.value)), v.value)
        raise Refuse("TFG103", f"the map value for {key!r} is computed (`{code(v)}`), not a gradient name the "
                               "migrator can resolve")

    def _map_changes(self, block: Block, name: str, binding: cst.CSTNode) -> tuple[list, list]:
        """Literal updates of a named map made in straight-line code before the block; any
        other change or escape of the map refuses it (it is followed exactly or not at all)."""
        owner = block.scope.binding_scope(name) or block.scope
        root = owner.node
        if owner.parent is None:  # a module-level map: other files may change it
            uses = self.project.external_uses(self.path, name) if self.project is not None else []
            if uses is None or uses:
                where = f"{os.path.basename(uses[0].path)}:{uses[0].line}" if uses else "a star import, or a file that cannot be parsed"
                raise Refuse("TFG103", f"the map `{name}` is used by another file ({where}), which may change it; "
                                       "write the map as a literal in the with statement")
        scan = _NameUses(name)
        root.visit(scan)
        siblings = self._siblings(binding, block.node)
        out: list[tuple[str, cst.BaseExpression]] = []
        updates: list = []
        for use in scan.uses:
            kind, stmt = self._use_kind(use)
            if kind == "read" or (kind == "arg" and stmt in self.col.block_calls):
                continue
            if kind == "write" and siblings is not None and stmt in siblings:
                out += self._literal_update(stmt, name)
                updates.append(stmt)
                continue
            what = {"write": "changed", "escape": "passed on or aliased", "arg": "passed to a function"}[kind]
            line = self.found.line(use)
            raise Refuse("TFG103", f"the map `{name}` is {what} at line {line}, where the migrator cannot "
                                   "follow it exactly; write the final map as a literal in the with statement")
        return out, updates

    def _use_kind(self, use: cst.Name) -> tuple[str, Optional[cst.CSTNode]]:
        parent = self.found.parent(use)
        if isinstance(parent, cst.Arg):
            call = self.found.parent(parent)
            if isinstance(call, cst.Call) and call.func is not use:
                return "arg", call
        if isinstance(parent, cst.Attribute) and parent.value is use:
            call = self.found.parent(parent)
            if isinstance(call, cst.Call) and call.func is parent:
                if parent.attr.value in _MAP_READS:
                    return "read", None
                if parent.attr.value in _MAP_WRITES:
                    return "write", self._statement(call)
            return "escape", None
        if isinstance(parent, cst.Subscript) and parent.value is use:
            holder = self.found.parent(parent)
            if isinstance(holder, cst.AssignTarget) or isinstance(holder, cst.Del) or (
                    isinstance(holder, cst.AugAssign) and holder.target is parent):
                return "write", self._statement(parent)
            return "read", None
        if isinstance(parent, cst.ComparisonTarget) or isinstance(parent, cst.Comparison):
            return "read", None
        if isinstance(parent, cst.AssignTarget):
            return "read", None  # the binding itself (checked to be unique elsewhere)
        return "escape", None

    def _statement(self, node):
        p = node
        while p is not None and not isinstance(p, cst.SimpleStatementLine):
            p = self.found.parent(p)
        return p

    def _siblings(self, binding, block_node) -> Optional[list]:
        """Statements after ``binding`` and before the one holding the block, in one list."""
        holder = self.found.parent(binding)
        body = getattr(holder, "body", None)
        if not isinstance(body, (list, tuple)):
            return None
        stmts = list(body)
        if binding not in stmts:
            return None
        start = stmts.index(binding)
        node = block_node
        while node is not None and node not in stmts:
            node = self.found.parent(node)
        if node is None or stmts.index(node) <= start:
            return None
        return stmts[start + 1: stmts.index(node)]

    def _literal_update(self, stmt, name: str) -> list[tuple[str, cst.BaseExpression]]:
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            small = stmt.body[0]
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                t = small.targets[0].target
                if (isinstance(t, cst.Subscript) and len(t.slice) == 1 and isinstance(t.slice[0].slice, cst.Index)
                        and isinstance(t.slice[0].slice.value, cst.SimpleString)):
                    return [(t.slice[0].slice.value.evaluated_value, small.value)]
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                call = small.value
                if isinstance(call.func, cst.Attribute) and call.func.attr.value == "update":
                    out = []
                    for a in call.args:
                        if a.keyword is not None:
                            out.append((a.keyword.value, a.value))
                        elif isinstance(a.value, cst.Dict) and not a.star and all(
                                isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
                                for e in a.value.elements):
                            out += [(e.key.evaluated_value, e.value) for e in a.value.elements]  # type: ignore[union-attr]
                        else:
                            break
                    else:
                        return out
        raise Refuse("TFG103", f"the map `{name}` is changed at line {self.found.line(stmt)} in a way the migrator "
                               "cannot follow exactly; write the final map as a literal in the with statement")

    # -- the gradient the map names ----------------------------------------
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
        copy = self.ctx.facts.get("transplant_refused", {}).get(ref[1]) if ref[0] == "lit" else None
        if elsewhere:
            raise Refuse("TFG106", f"gradient {label} is registered in another file ({elsewhere[0].path}:"
                                   f"{elsewhere[0].line}), and its function cannot be copied here: "
                                   f"{copy or 'see the report'}; move the registration into this file and re-run, "
                                   "or migrate by hand")
        if ref[0] == "lit" and ref[1] in optable.all_op_types():
            raise Refuse("TFG106", f"{label} names TF's own gradient of the {label} op, which the migrator inlines only "
                                   f"for {', '.join(sorted(BUILTIN_TARGETS))}; write that gradient as a "
                                   "tf.custom_gradient grad_fn")
        if ref[0] == "lit" and copy is not None and not copy.startswith("no project file"):
            raise Refuse("TFG106", f"gradient {label} is registered outside this run, and its function cannot be "
                                   f"copied here: {copy}; migrate by hand")
        if ref[0] == "lit":
            raise Refuse("TFG106", f"gradient {label} is not a built-in and has no RegisterGradient in this run")
        raise Refuse("TFG106", f"cannot link the gradient name {label} to a RegisterGradient call")


def _scope_binding(scope: Scope, name: str) -> Scope:
    s: Optional[Scope] = scope
    while s is not None:
        if name in s.assigns or name in s.params:
            return s
        s = s.parent
    return scope


class _NameUses(cst.CSTVisitor):
    """Every Name node spelling ``name`` (reads and writes alike)."""

    def __init__(self, name: str):
        self.name = name
        self.uses: list[cst.Name] = []

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name:
            self.uses.append(node)


def _graph_param(param: Optional[cst.Param]) -> bool:
    """A parameter typed or named as a graph (`graph`, `g`, `tf_graph: tf.Graph`), not any object
    that happens to have a gradient_override_map method."""
    if param is None:
        return False
    note = dotted(param.annotation.annotation) if param.annotation is not None else None
    if note is not None:
        return note.split(".")[-1] == "Graph"
    name = param.name.value.lower()
    return name == "g" or "graph" in name
