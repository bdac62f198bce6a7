"""Obligations about what else sees the rewritten code: registrations and op identity.

* A registration may go only when no other code uses the gradient name (another
  file's map, a registry lookup) and nothing calls the registered function
  directly (its ``(op, grad)`` signature changes).  The helper it becomes must
  exist wherever a wrapper calls it: a registration behind an ``if`` guard (run
  on the first call only) is refused.
* Under ``tf.custom_gradient`` the wrapped op's output is an ``IdentityN``
  output (graph mode): its ``.op``, ``.op.inputs``, ``.op.type`` and tensor name
  change.  A program that reads them, or looks tensors up by name, is refused.
"""
from __future__ import annotations

import ast
import os
from typing import Optional

import libcst as cst

from migrator._plugins._override_model import Candidate, Evidence, Refuse, Registration, code
from migrator.gradient_names import gradient_name_uses

_IDENTITY_ATTRS = {"op", "name", "consumers", "value_index"}
#: code tokens that read a graph by op or tensor name
NAME_READS = (b"get_tensor_by_name", b"get_operation_by_name", b"get_operations", b"as_graph_def")


class RegistrationProof:
    def __init__(self, prover):
        self.p = prover
        self.found, self.col, self.project = prover.found, prover.col, prover.project
        self._strings: Optional[list[cst.SimpleString]] = None
        self._name_reads: Optional[list] = None

    # -- registrations ------------------------------------------------------
    def check(self, reg: Registration, ev: Evidence) -> None:
        """Prove the registration can go: no other user of the name, no direct call."""
        if reg.fn is not None and sum(r.fn is reg.fn for r in self.col.registrations) > 1:
            # stacked decorators: the rewrite removes one and leaves the other on a helper whose
            # signature changed (found by an adversarial run)
            raise Refuse("TFG109", f"`{reg.fn.name.value}` is registered under several gradient names; "
                                   "register one function per name, or migrate by hand")
        self._name_users(reg, ev)
        self._direct_calls(reg, ev)
        self._registry_reached()

    def _registry_reached(self) -> None:
        """Code loaded with this file that reaches into TF's gradient registry may change the
        registered function (a second adversarial run set its `__defaults__` by iterating the
        registry, naming no gradient): the helper made from it would not see that."""
        found = self.project.registry_patches() if self.project is not None else []
        if found is None:
            raise Refuse("TFG112", "cannot tell whether the project reaches into TF's gradient registry (too big "
                                   "to search); migrate by hand")
        found = [f for f in found if f.text == "_gradient_registry" and self.project.may_run_together(self.p.path, f.path)]
        if found:
            raise Refuse("TFG112", f"TF's gradient registry is reached at {os.path.basename(found[0].path)}:"
                                   f"{found[0].line}, which may change the registered function; migrate by hand")

    def placement(self, reg: Registration, blocks: list, ev: Evidence) -> None:
        """The helper must exist wherever a wrapper calls it: its def runs before every block
        that uses it, on every path."""
        if isinstance(reg.scope.node, cst.ClassDef):
            raise Refuse("TFG114", f"the function registered at line {reg.line} is defined in a class body, where "
                                   "the methods that make the op cannot see it; migrate by hand")
        node = reg.fn if reg.decorator is not None else reg.stmt
        copied = self.p.ctx.facts.get("transplanted", {}).get(reg.key[1]) if reg.key[0] == "lit" else None
        if copied is not None:  # appended to the module; the helper it becomes is moved after the imports
            ev.prove(f"the helper copied from {copied[1]} is defined right after this file's imports")
            return
        if node is None or all(self._runs_before(node, b.node) for b in blocks):
            if reg.enclosing:
                ev.prove(f"the registration at line {reg.line} runs before the block on every path")
            return
        where = f"line {reg.line}"
        if self._register_once(reg):
            raise Refuse("TFG114", f"the registration at {where} sits in `{_header(reg.enclosing[0])}`, which "
                                   "kept TF1 from registering twice; the helper made from it would be missing on "
                                   "later calls; define the gradient function outside the `if` (a plain function "
                                   "needs no guard), then re-run")
        if not reg.enclosing:  # a module-level def after the block (found by an adversarial run: it crashed)
            raise Refuse("TFG114", f"the registration at {where} comes after the block in the module; move the "
                                   "gradient function above the code that uses it, then re-run")
        raise Refuse("TFG114", f"the registration at {where} does not run before the block on every path (it sits "
                               f"in `{_header(reg.enclosing[-1])}`); the helper it becomes could be missing there; "
                               "define the gradient function unconditionally, or migrate by hand")

    @staticmethod
    def _register_once(reg: Registration) -> bool:
        """``if COND: @RegisterGradient(...) def f`` with nothing else in the ``if``."""
        if reg.fn is not None and reg.decorator is not None and len(reg.enclosing) == 1 \
                and isinstance(reg.enclosing[0], cst.If):
            guard = reg.enclosing[0]
            body = guard.body.body if isinstance(guard.body, cst.IndentedBlock) else []
            return guard.orelse is None and len(body) == 1 and body[0] is reg.fn
        return False

    def _runs_before(self, first: cst.CSTNode, later: cst.CSTNode) -> bool:
        """``first`` is a statement of some statement list, and ``later`` sits in a statement
        after it in that same list (so every path to ``later`` ran ``first``)."""
        holder = self.found.parent(first)
        body = getattr(holder, "body", None)
        if not isinstance(body, (list, tuple)) or first not in body:
            return False
        node = later  # (a function defined in between runs later: the def is bound once, checked elsewhere)
        while node is not None and self.found.parent(node) is not holder:
            node = self.found.parent(node)
        return node is not None and node in body and list(body).index(node) > list(body).index(first)

    def _name_users(self, reg: Registration, ev: Evidence) -> None:
        if reg.key[0] != "lit":
            ev.prove(f"gradient name `{reg.key[2]}` is built at run time here: no other code can name it")
            return
        name = reg.key[1]
        copied = self.p.ctx.facts.get("transplanted", {}).get(name)
        uses, why = gradient_name_uses(self.project, name) if self.project is not None and copied is None else ([], "")
        if uses is None:
            raise Refuse("TFG112", f"cannot tell whether other code uses gradient {name!r}: {why}; "
                                   "migrate by hand")
        others = [u for u in uses if os.path.abspath(u.path) != self.p.path]
        if others:
            o = others[0]
            raise Refuse("TFG112", f"gradient {name!r} is also named in {os.path.relpath(o.path, os.path.dirname(self.p.path))}"
                                   f":{o.line}, which still needs the registration; migrate the override there "
                                   "first (or in the same run), or by hand")
        allowed = self._allowed_strings()
        for s in self._file_strings():
            if s.evaluated_value == name and s not in allowed:
                raise Refuse("TFG112", f"line {self.found.line(s)} reads gradient name {name!r} (a registry "
                                       "lookup?); removing the registration would change it; migrate by hand")
        if copied is not None:  # a copy of another file's registration: that one stays for its users
            ev.prove(f"the registration of {name!r} in {copied[1]} stays; this file's copy serves only its maps")
            return
        n = len(self.p.reach() or [self.p.path])
        ev.prove(f"registration {name!r} is used by no other file (searched the project)"
                 if n else f"registration {name!r} is used by no other file")

    def _allowed_strings(self) -> set:
        allowed: set = set()
        for reg in self.col.registrations:
            call = reg.decorator.decorator if reg.decorator is not None else (
                reg.stmt.body[0].value.func if reg.stmt is not None else None)  # type: ignore[union-attr]
            if isinstance(call, cst.Call):
                allowed |= {a.value for a in call.args}
        for b in self.col.blocks:
            _collect_strings(b.call, allowed)
        for s in self._file_strings():
            parent = self.found.parent(s)
            if isinstance(parent, (cst.DictElement, cst.Assign)) and not isinstance(self.found.parent(parent), cst.Call):
                allowed.add(s)  # a map value, or a constant holding the name
        return allowed

    def _file_strings(self) -> list[cst.SimpleString]:
        if self._strings is None:
            out: list[cst.SimpleString] = []

            class _S(cst.CSTVisitor):
                def visit_SimpleString(self, node: cst.SimpleString) -> None:
                    out.append(node)

            self.found.module.visit(_S())
            self._strings = out
        return self._strings

    def _direct_calls(self, reg: Registration, ev: Evidence) -> None:
        fn = reg.fn
        if fn is None:
            return
        name = fn.name.value
        uses = _NameLoads(name)
        # a def nested in a function is seen only there: another function's own `_rev` is not it
        (reg.scope.node if reg.scope.parent is not None and reg.scope.node is not None else self.found.module).visit(uses)
        reg_arg = reg.stmt.body[0].value.args[0].value if reg.stmt is not None else None  # type: ignore[union-attr]
        for use in uses.loads:
            if use is fn.name or use is reg_arg:
                continue
            if id(use) in uses.defs:
                raise Refuse("TFG113", f"`{name}` is defined again at line {self.found.line(use)}, so the name stands "
                                       "for another function after it; give each registered function its own name, "
                                       "then re-run")
            raise Refuse("TFG113", f"`{name}` is also used directly at line {self.found.line(use)}; its (op, grad) "
                                   "signature must stay, so the registration cannot become a helper; migrate by hand")
        if reg.scope.parent is None and self.project is not None:
            ext = self.project.external_uses(self.p.path, name)
            if ext:
                where = f"{os.path.basename(ext[0].path)}:{ext[0].line}"
                raise Refuse("TFG113", f"`{name}` is imported by another file ({where}), which needs its (op, grad) "
                                       "signature; migrate by hand")
            if ext is None:
                raise Refuse("TFG113", f"`{name}` may be used by another file ({self.project.unknown_use(self.p.path, name)}), "
                                       "which would need its (op, grad) signature; migrate by hand")
        ev.prove(f"`{name}` is called only by the gradient machinery (no direct use)")

    def only_passed(self, fn: cst.FunctionDef, passed: list, nested: bool = False) -> None:
        """A gradient function handed to the py_func recipe is used nowhere else (a nested def:
        nowhere else in its function, and no other file can name it)."""
        uses = _NameLoads(fn.name.value)
        (self._owner(fn) if nested else self.found.module).visit(uses)
        allowed = {id(n) for n in passed} | {id(fn.name)}
        for use in uses.loads:
            if id(use) not in allowed:
                raise Refuse("TFG113", f"`{fn.name.value}` is also used at line {self.found.line(use)}; its "
                                       "(op, grad) signature must stay; migrate by hand")
        if nested:
            return
        ext = self.project.external_uses(self.p.path, fn.name.value) if self.project is not None else []
        if ext:
            raise Refuse("TFG113", f"`{fn.name.value}` is used by another file ({os.path.basename(ext[0].path)}:"
                                   f"{ext[0].line}), which needs its (op, grad) signature")
        if ext is None:
            raise Refuse("TFG113", f"`{fn.name.value}` may be used by another file "
                                   f"({self.project.unknown_use(self.p.path, fn.name.value)}), which would need its "
                                   "(op, grad) signature")

    def _owner(self, fn: cst.FunctionDef) -> cst.CSTNode:
        """The function a nested def belongs to."""
        node = self.found.parent(fn)
        while node is not None and not isinstance(node, cst.FunctionDef):
            node = self.found.parent(node)
        return node if node is not None else self.found.module

    # -- op identity ----------------------------------------------------------
    def identity(self, cand: Candidate, scope, ev: Evidence) -> None:
        """Nothing reads the wrapped op's ``.op``, its inputs, type or tensor name."""
        reads = self._graph_name_reads()
        if reads:
            r = reads[0]
            raise Refuse("TFG115", f"{os.path.basename(r.path)}:{r.line} reads the graph by name (`{r.text}`); "
                                   "the wrapped op's output becomes an IdentityN with another name; migrate by hand")
        label = f"`{code(cand.node)}`"
        kind, where = self._flow(cand.node, scope)
        if kind == "assigned":
            var = where
            for use in _loads(scope.node, var, self.found):
                k, w = self._flow(use, scope)
                if k in ("escapes", "returned"):
                    kind, where = k, w
                    if k == "escapes":
                        break
        if kind == "returned":
            self._callers_read(scope, label)
        elif kind == "escapes":
            hits = self.project.text_hits(self.p.reach() or [self.p.path], [b".op"]) if self.project is not None else []
            if hits:
                h = hits[0]
                raise Refuse("TFG115", f"{label} is passed on at line {self.found.line(where)}, and "
                                       f"{os.path.basename(h.path)}:{h.line} reads `.op` of a tensor, maybe of it; "
                                       "under tf.custom_gradient that is an IdentityN; migrate by hand")
        ev.prove(f"nothing reads the wrapped output's .op or tensor name ({label})")

    def _flow(self, node, scope):
        """Where a value goes: ("consumed", _) by a TF op or Python arithmetic, ("assigned", name),
        ("returned", _), ("escapes", node); reading .op/.name of it refuses."""
        parent = self.found.parent(node)
        while isinstance(parent, cst.IfExp) and node is not parent.test:
            node, parent = parent, self.found.parent(parent)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            if parent.attr.value in _IDENTITY_ATTRS:
                raise self._identity_refusal(f"`{code(node)}`", parent.attr.value, node)
            return "consumed", None  # .shape, .dtype, a method of the tensor
        if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.ComparisonTarget,
                               cst.Subscript, cst.Expr)):
            return "consumed", None
        if isinstance(parent, cst.Arg):
            call = self.found.parent(parent)
            if isinstance(call, cst.Call) and (self.col.tf(call) is not None or (
                    isinstance(call.func, cst.Name) and call.func.value in ("print", "len", "float", "int"))):
                return "consumed", None
            return "escapes", parent
        if isinstance(parent, cst.Return):
            return "returned", parent
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
            return "assigned", parent.targets[0].target.value
        return "escapes", node

    def _identity_refusal(self, label: str, attr: str, node) -> Refuse:
        return Refuse("TFG115", f"line {self.found.line(node)} reads `.{attr}` of {label}; under tf.custom_gradient "
                                "that is an IdentityN output, not the original op; migrate by hand")

    def _graph_name_reads(self) -> list:
        if self._name_reads is None:
            files = self.p.reach()
            if files is None:
                self._name_reads = [_Hit(self.p.path, 1, "the project is too big to search")]
            else:
                self._name_reads = self.project.text_hits(files, NAME_READS) if self.project is not None else []
        return self._name_reads

    def _callers_read(self, scope, label: str) -> None:
        fn = scope.function
        if fn is None or self.project is None:
            return
        sites = self.project.callers(self.p.path, fn.name.value) if scope.parent is not None \
            and scope.parent.parent is None else None
        if sites is None:
            hits = self.project.text_hits(self.p.reach() or [self.p.path], [b".op"])
            if hits:
                h = hits[0]
                raise Refuse("TFG115", f"{os.path.basename(h.path)}:{h.line} reads `.op` of a tensor, maybe of "
                                       f"{label} returned by `{fn.name.value}`; migrate by hand")
            return
        for site in sites:
            attr = _ast_identity_read(site)
            if attr is not None:
                raise Refuse("TFG115", f"{os.path.basename(site.path)}:{attr[1]} reads `.{attr[0]}` of what "
                                       f"`{fn.name.value}` returns ({label}); migrate by hand")
            line = _ast_passed_on(site)
            hits = self.project.text_hits(self.p.reach() or [self.p.path], [b".op"]) if line else []
            if hits:  # e.g. `rescale(binarize(x))`, and rescale reads `t.op.type`
                h = hits[0]
                raise Refuse("TFG115", f"what `{fn.name.value}` returns ({label}) is passed on at "
                                       f"{os.path.basename(site.path)}:{line}, and {os.path.basename(h.path)}:"
                                       f"{h.line} reads `.op` of a tensor, maybe of it; migrate by hand")


class _Hit:
    def __init__(self, path, line, text):
        self.path, self.line, self.text = path, line, text


class _NameLoads(cst.CSTVisitor):
    def __init__(self, name: str):
        self.name = name
        self.loads: list[cst.Name] = []
        self.defs: set[int] = set()  # ids of the names of defs and classes of that name

    def visit_Decorator(self, node: cst.Decorator) -> bool:
        return True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if node.name.value == self.name:
            self.defs.add(id(node.name))  # a binding, reported as one (not as a use)
        return True

    visit_ClassDef = visit_FunctionDef

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name:
            self.loads.append(node)


def _loads(root, var: str, found) -> list:
    """Every read of the name ``var`` under ``root`` (not its bindings)."""
    out = []

    class _L(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            parent = found.parent(node)
            if node.value == var and not isinstance(parent, (cst.AssignTarget, cst.Param)) and not (
                    isinstance(parent, cst.Attribute) and parent.attr is node):
                out.append(node)

    root.visit(_L())
    return out


def _holds_result(holder: ast.AST, call: ast.Call):
    """A test for "this expression is the call's result": the call itself, or a name a plain
    assignment in ``holder`` binds to it."""
    names = {t.id for node in ast.walk(holder) if isinstance(node, ast.Assign) and node.value is call
             for t in node.targets if isinstance(t, ast.Name)}
    return lambda node: node is call or (isinstance(node, ast.Name) and node.id in names)


def _ast_identity_read(site):
    """(attr, line) when a caller reads .op/.name of the call's result, directly or through a name."""
    if site.scope is None:
        return None
    is_it = _holds_result(site.scope, site.call)
    for node in ast.walk(site.scope):
        if isinstance(node, ast.Attribute) and node.attr in _IDENTITY_ATTRS and is_it(node.value):
            return node.attr, node.lineno
    return None


def _collect_strings(node, into: set) -> None:
    class _S(cst.CSTVisitor):
        def visit_SimpleString(self, n: cst.SimpleString) -> None:
            into.add(n)

    node.visit(_S())


def _header(node) -> str:
    if isinstance(node, cst.If):
        return f"if {code(node.test)}:"
    return {cst.For: "for ...:", cst.While: "while ...:", cst.Try: "try:", cst.With: "with ...:"}.get(type(node), "...")


def _ast_passed_on(site) -> Optional[int]:
    """The line where a caller hands the call's result (or a name bound to it) to a function
    of its own or returns it, where code the rewrite does not see may read its ``.op``."""
    call, holder = site.call, site.scope
    if holder is None:
        return None
    is_it = _holds_result(holder, call)
    for node in ast.walk(holder):
        if isinstance(node, ast.Return) and node.value is not None and is_it(node.value):
            return node.lineno
        if isinstance(node, ast.Call) and node is not call and isinstance(node.func, ast.Name) \
                and node.func.id not in ("print", "len", "float", "int") \
                and any(is_it(a) for a in list(node.args) + [k.value for k in node.keywords]):
            return node.lineno
    return None
