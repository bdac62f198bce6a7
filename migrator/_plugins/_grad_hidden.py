"""What a gradient's region may do that no name in it shows: a generator's `yield` lets its
caller build values from the sources between two lines; a graph walk (`t.consumers()`,
`g.get_tensor_by_name(...)`) reaches tensors a tape cannot name; a call may rebind a source
(`global x` in the function it runs, `globals().update(x=a)`); an argument may run code
(all from adversarial runs)."""
from __future__ import annotations

import os
import re
from typing import Optional

import libcst as cst

from migrator._flow_model import GRAPH_LOOKUPS, GRAPH_WALKS
from migrator._plugins._dataflow import effects, function_locals
from migrator._plugins._grad_per_index import CALLING_TF
from migrator._plugins._grad_stateless import (fresh_result_call, no_hooks, stateless_function_call,
                                              stateless_self_call)
from migrator._plugins._grad_values import call_kind, calls_in, qnames
from migrator.tfnames import DYNAMIC_BINDERS, descendants, dotted


def is_generator(fn: cst.FunctionDef) -> bool:
    """``fn`` yields (or awaits) in its own body, not only in a function nested in it."""
    found = False

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node) -> bool:
            return node is fn

        def visit_Lambda(self, node) -> bool:
            return False

        def visit_Yield(self, node) -> None:
            nonlocal found
            found = True

        def visit_Await(self, node) -> None:
            nonlocal found
            found = True

    fn.visit(V())
    return found


#: attributes that reach tensors through the graph rather than by name (`t.consumers()[0].outputs[0]`,
#: `g.get_tensor_by_name(...)`, `g.get_operations()[-1]`): a tape cannot name what they find.  The
#: value flow's tables, less an op's own metadata (`op`, `inputs`) and the graph collections, which
#: TFG135 reports on its own
GRAPH_REACHES = (GRAPH_WALKS | GRAPH_LOOKUPS) - {"op", "inputs", "_inputs", "_outputs", "get_collection",
                                                 "get_collection_ref", "get_all_collection_keys"}


def graph_reach(node: cst.CSTNode) -> Optional[cst.Attribute]:
    """The first attribute of ``node`` that walks the graph, or None."""
    found: list = []

    class V(cst.CSTVisitor):
        def visit_Attribute(self, n: cst.Attribute) -> None:
            if n.attr.value in GRAPH_REACHES and not found:
                found.append(n)

    node.visit(V())
    return found[0] if found else None


def runs_code(value: cst.BaseExpression) -> bool:
    """An expression whose evaluation may run code: a call, a yield, an `await` or a walrus in it
    (not a string literal's ``.format`` of names and literals: ``name="grad_{}".format(i)``)."""
    found = []

    class V(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, cst.Call) and _formats_a_literal(node):
                return False
            if isinstance(node, (cst.Call, cst.Yield, cst.Await, cst.NamedExpr)):
                found.append(node)
            return not found and not isinstance(node, cst.Lambda)

    value.visit(V())
    return bool(found)


def _formats_a_literal(call: cst.Call) -> bool:
    f = call.func
    return isinstance(f, cst.Attribute) and isinstance(f.value, cst.SimpleString) and f.attr.value == "format" \
        and all(isinstance(a.value, (cst.Name, cst.SimpleString, cst.Integer, cst.Float)) and not a.star
                for a in call.args)


#: methods of a namespace dict that only read it
_READS = frozenset({"copy", "get", "items", "keys", "values", "__contains__", "__getitem__"})


def rebinders(scope: cst.CSTNode, module_level: bool) -> dict:
    """What may rebind names behind a call in ``scope``, in words: ``{name: why}``, and ``"*"``
    for code that may bind any name.  ``module_level``: ``scope`` is the module (a function with
    ``global name``; ``globals()``, ``vars()``, ``exec``, ``setattr``); else the function a name is
    a local of (a nested function with ``nonlocal name``)."""
    found: dict = {}
    read: set = set()

    class V(cst.CSTVisitor):
        def visit_Global(self, node: cst.Global) -> None:
            for n in node.names if module_level else ():
                found.setdefault(n.name.value, f"a function declares `global {n.name.value}`")

        def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
            for n in () if module_level else node.names:
                found.setdefault(n.name.value, f"a nested function declares `nonlocal {n.name.value}`")

        def visit_Attribute(self, node: cst.Attribute) -> None:
            if isinstance(node.value, cst.Call) and node.attr.value in _READS:
                read.add(id(node.value))  # `locals().copy()`: a read of the namespace (real code logs it)

        def visit_Call(self, node: cst.Call) -> None:
            if module_level and isinstance(node.func, cst.Name) and node.func.value in DYNAMIC_BINDERS \
                    and id(node) not in read:
                found.setdefault("*", f"`{node.func.value}()` may bind names")

    scope.visit(V())
    return found


def collection_sources(an, c, flat: list) -> Optional[str]:
    """The sources are bound, in this block, to a read of a TF1 graph collection (vadam's DDPG
    actor: ``self.mean_params = tf.get_collection(scope1)``), which is empty under TF2: that is
    the reason to give, before anything the proof finds about the lines between."""
    elements = c.xs.elements if isinstance(c.xs, (cst.List, cst.Tuple)) else [cst.Element(c.xs)]
    for key in filter(None, (dotted(el.value) for el in elements)):
        for it in reversed(flat[:c.item]):
            if it.dead or key not in it.fx.assigns:
                continue
            call = collection_read(an, it.orig) if it.orig is not None else None
            if call is not None:
                return (f"the sources `{key}` are `{an.code(call.func)}(...)`, a TF1 graph collection: TF2 code "
                        "runs eagerly, where it is empty (a Session or graph here fills it only until the script "
                        "is migrated); use the model's own list (model.trainable_variables) instead, then re-run")
            break
    return None


def collection_read(an, node: cst.CSTNode) -> Optional[cst.Call]:
    """The first call in ``node`` (or ``node`` itself) that reads a TF1 graph collection
    (``tf.get_collection``, ``tf.trainable_variables``; ``tf.get_variable`` makes a variable)."""
    for call in calls_in(node) + ([node] if isinstance(node, cst.Call) else []):
        if call_kind(call, an.qn) == "state" and an.tf_name(call) not in (
                "tensorflow.get_variable", "tensorflow.get_local_variable"):
            return call
    return None


#: builtins that keep no reference to what they are given
_KEEPS_NOTHING = frozenset({"print", "len", "range", "float", "int", "bool", "str", "isinstance", "repr", "abs"})


def filled_after_tape(an, c, flat: list, s: int, e: int) -> Optional[tuple]:
    """A list the targets or sources are kept in was handed to code the migrator cannot follow
    (or is held by other code, or is a module-level list a function fills by name), and such
    code runs after the tape, before the gradient: it may fill the list with values a tape that
    closed before it never recorded (an adversarial run: `keep(ys)` in the tape, `put(d * 5)`
    after it appended to `ys`; TF1 differentiated that value too).  (why, whether only the
    targets are kept in such lists: then a tape holding that code too records what it adds)."""
    names = {k.split(".")[0] for k in c.ys_keys} | {src.key.split(".")[0] for src in c.sources}
    containers = {n for n in names if _holds_list(an, flat, c.item, n)}
    if not containers or e + 1 >= c.item:
        return None
    lists = _local_lists(an, c.node)  # lists the function makes: their methods are known
    handed, given = None, set()
    for i in range(c.item):
        for call in calls_in(flat[i].orig) if flat[i].orig is not None else ():
            names_in = {n.value for a in call.args for n in descendants(a.value, (cst.Lambda, cst.FunctionDef))
                        if isinstance(n, cst.Name)} & containers
            if _unknown(an, call, lists) and names_in:
                handed, given = handed or (an.code(call.func), an.line(flat[i].orig), i), given | names_in
    held = _held_elsewhere(an, flat, c.item, containers)
    # a module-level list a function of this module fills by name (`global ys; ys.append(...)`)
    shared = sorted(n for n in containers if _module_level(an, c.node, n) and _filled_by_name(an, n))
    if handed is None and not shared and held is None:
        return None
    later = [(i, call) for i in range(e + 1, c.item) if flat[i].orig is not None
             for call in calls_in(flat[i].orig) if _unknown(an, call, lists)]
    if not later:
        return None
    # a sources list filled after the watch gains unwatched tensors (an adversarial run: None)
    only_targets = not containers & {src.key.split(".")[0] for src in c.sources}
    # name a call after the one it was handed to, if there is one: `REG.append(ys)`, then `fill(d)`
    i, call = next(((i, call) for i, call in later if handed is None or i != handed[2]), later[0])
    who = ", ".join(f"`{n}`" for n in sorted(shared or given or containers))
    tail = "with values the tape did not record; call the gradient before that line, or migrate by hand"
    if handed is not None and i == handed[2]:
        return (f"{who} was handed to `{handed[0]}(...)` at line {handed[1]}, after the tape, which may fill it "
                f"{tail}", only_targets)
    how = (f"was handed to `{handed[0]}(...)` (line {handed[1]})" if handed is not None else
           "may be a list at module level, which any function can reach by name" if shared else  # `global ys`
           f"is bound to `{held[1]}` (line {held[2]}), which other code may hold and fill" if held[1] else
           f"is bound at line {held[2]} by a statement the migrator does not follow, so it may hold a list "
           "other code fills")
    who = f"`{held[0]}`" if handed is None and not shared else who
    return (f"{who} {how}, and `{an.code(call.func)}(...)` at line {an.line(flat[i].orig)}, after the tape, "
            f"may fill it {tail}", only_targets)


def _arithmetic(an, value) -> bool:
    """Operators on values that are not lists: no display among the operands (`[t] + zs` is a new
    list), and no project class whose operator could hand back a list it holds (`KEEP + []`)."""
    return isinstance(value, (cst.BinaryOperation, cst.UnaryOperation)) and not any(
        isinstance(n, (cst.List, cst.Tuple, cst.ListComp)) for n in descendants(value)) and no_hooks(an.project)


def _held_elsewhere(an, flat: list, upto: int, containers: set) -> Optional[tuple]:
    """(name, value or None, line) of a container bound to an object something else holds too:
    `ys = KEEP` (a module-level list a function fills by name), `ys = self.losses`, `ys =
    lists[0]`, `ys, n = KEEP, 0`, a loop or `with` target (an adversarial run: each, then
    `stash(t)` appended to KEEP after the tape).  A call's result is taken as the call's own,
    as it always was (`A, u, p = self.net(x)`)."""
    for i in range(upto):
        it = flat[i]
        if it.orig is None or it.dead:
            continue
        for name in sorted(containers & it.fx.assigns):
            for line, value in _bindings(an, it.orig, name):
                if value is _UNFOLLOWED:
                    return name, None, line
                if value is not None and value is not _ARITH and _existing(an, value):
                    shown = f"{an.code(value.func)}(...)" if isinstance(value, cst.Call) else an.code(value)
                    return name, shown, line
    return None


_UNFOLLOWED = cst.Name("_")  # a binding by a loop, `with`, `except`, walrus, import, ...
_ARITH = cst.Name("_")  # an augmented assignment: arithmetic on the name's own value


def _bindings(an, stmt: cst.CSTNode, name: str):
    """(line, value) for each binding of ``name`` in ``stmt``: what :func:`_assigned` gives for
    each simple line (inside a compound statement's body too), ``_UNFOLLOWED`` for a header."""
    if isinstance(stmt, cst.SimpleStatementLine):
        yield an.line(stmt), _assigned(stmt, name)
        return
    in_lines = False
    for n in descendants(stmt, (cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.SimpleStatementLine)):
        if isinstance(n, cst.SimpleStatementLine) and name in effects(n).assigns:
            in_lines = True
            yield an.line(n), _assigned(n, name)
        elif isinstance(n, (cst.For, cst.CompFor)) and _names(n.target, name) or \
                isinstance(n, cst.WithItem) and n.asname is not None and _names(n.asname.name, name) or \
                isinstance(n, cst.ExceptHandler) and n.name is not None and _names(n.name.name, name) or \
                isinstance(n, cst.NamedExpr) and _names(n.target, name) or \
                isinstance(n, cst.MatchAs) and n.name is not None and n.name.value == name:
            yield an.line(stmt), _UNFOLLOWED
    if not in_lines:
        yield an.line(stmt), _UNFOLLOWED  # bound by the statement some other way (`match KEEP: case ys:`)


def _names(target: cst.CSTNode, name: str) -> bool:
    return any(isinstance(x, cst.Name) and x.value == name for x in descendants(target))


def _assigned(stmt: cst.CSTNode, name: str):
    """The value ``name`` is bound to by ``stmt``: ``name = value``, ``a = name = value``, or the
    matching item of ``name, n = value, 0``; None for an item of something unpacked (a call's
    result); ``_ARITH`` for ``name += v``; ``_UNFOLLOWED`` for any other binding."""
    body = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ()
    for small in reversed(body):  # `ys = []; ys = KEEP`: the last binding on the line counts
        if isinstance(small, cst.Assign):
            for t in small.targets:
                found = _matching(t.target, small.value, name)
                if found is not _MISSING:
                    return found
        if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name) and small.target.value == name:
            return _ARITH
    return _UNFOLLOWED


_MISSING = object()


def _matching(target: cst.BaseExpression, value: cst.BaseExpression, name: str):
    if isinstance(target, cst.Name):
        return value if target.value == name else _MISSING
    if isinstance(target, (cst.Tuple, cst.List)):
        items = value.elements if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(
            target.elements) and not any(isinstance(e, cst.StarredElement) for e in value.elements) else None
        for k, el in enumerate(target.elements):
            inner = _matching(el.value, items[k].value, name) if items is not None else (
                None if _names(el.value, name) else _MISSING)
            if inner is not _MISSING:
                return _existing_or(inner, value if items is None else None)
    return _MISSING


def _existing_or(inner, whole):
    """An item of ``whole`` unpacked: that whole, which the caller judges (the item of a name is
    its element, held by it)."""
    return whole if inner is None and whole is not None else inner


def _existing(an, value: cst.BaseExpression) -> bool:
    """A value that is (or may be) an object already held elsewhere: a name, an attribute, an
    item of one, a conditional/`or` choosing among such values, or what a call of code that may
    keep it returns (`ys = get_keep()`; not TF's, not a function or method that stores nothing)."""
    if isinstance(value, (cst.Name, cst.Attribute, cst.Subscript)):
        return not (isinstance(value, cst.Name) and value.value in ("None", "True", "False"))
    if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation)):
        return not no_hooks(an.project)  # a project list class's `__add__` may hand back itself
    if isinstance(value, cst.IfExp):
        return _existing(an, value.body) or _existing(an, value.orelse)
    if isinstance(value, cst.BooleanOperation):
        return _existing(an, value.left) or _existing(an, value.right)
    if isinstance(value, cst.Call) and an.call_kind(value) == "state":
        return True  # a graph collection's own list
    if isinstance(value, cst.Call):
        return an.tf_name(value) is None and not stateless_function_call(an, value) and \
            not stateless_self_call(an, value) and not fresh_result_call(an, value)
    return False


def _filled_by_name(an, name: str) -> bool:
    """Some function of this module changes the module's ``name`` in place (a changing method,
    an item store, an augmented assignment), or code may reach it unseen (`globals()`, another
    project file naming `.name`)."""
    text = an.ctx.source
    if any(w in text for w in ("globals(", "vars(", "__dict__", "exec(", "setattr(")):
        return True
    if name in _filled_in_functions(an):
        return True
    if not getattr(an.ctx.index, "root", None):
        return False
    # another file loaded with this one that names it (`from main import ys; ys.append(t)`, `main.ys`)
    hits = an.project.grep(name.encode(), rf"\b{name}\b")
    here = os.path.abspath(an.ctx.path)
    return hits is None or any(os.path.abspath(h) != here and an.project.may_run_together(here, os.path.abspath(h))
                               for h in hits)


def _filled_in_functions(an) -> set:
    """Names the module's functions change in place by name, found once per file: every node
    under an outermost def or lambda is read once (nested ones are inside it)."""
    if "_filled_in_functions" not in an.__dict__:
        out: set = set()
        outermost = (n for n in descendants(an.module, (cst.FunctionDef, cst.Lambda))
                     if isinstance(n, (cst.FunctionDef, cst.Lambda)))
        for n in (n for fn in outermost for n in descendants(fn)):
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and isinstance(n.func.value, cst.Name) \
                    and n.func.attr.value not in _READING:
                out.add(n.func.value.value)
            elif isinstance(n, (cst.AugAssign, cst.AssignTarget, cst.Del)):
                out |= {x.value.value for x in descendants(n.target) if isinstance(x, cst.Subscript)
                        and isinstance(x.value, cst.Name)}
                out |= {x.value for x in descendants(n.target) if isinstance(n, cst.AugAssign) and isinstance(x, cst.Name)}
        an.__dict__["_filled_in_functions"] = out
    return an.__dict__["_filled_in_functions"]


#: methods that read their object and never change it (narrower than `_aliases._READING_METHODS`,
#: whose string methods a project class could define to fill itself)
_READING = frozenset({"get", "items", "keys", "values", "copy", "index", "count", "get_shape", "as_list"})


def _module_level(an, node, name: str) -> bool:
    """``name`` at ``node`` is the module's global: ``node`` is at module level, or its function
    does not make ``name`` its own (an adversarial run: `def filler(v): global ys;
    ys.append(v * 5.0)` after the tape)."""
    fn = an.parents.get(node)
    while fn is not None and not isinstance(fn, (cst.FunctionDef, cst.Module)):
        fn = an.parents.get(fn)
    if fn is None or isinstance(fn, cst.Module):
        return True
    declared = {a.name.value for n in descendants(fn.body) if isinstance(n, cst.Global) for a in n.names}
    return name in declared or name not in function_locals(fn)


def _unknown(an, call: cst.Call, lists: set = frozenset()) -> bool:
    """Code that may keep what it is given and fill it later: not TF's, not a plain builtin, not
    a method of a list this function made (`losses.append(loss)`: a held-out repository), not
    this module's function that stores nothing."""
    name = an.tf_name(call)
    if name is not None and (name.rsplit(".", 1)[-1] in CALLING_TF or an.call_kind(call) in ("collect", "state")):
        return True  # `tf.nest.map_structure(stash, d)` runs the program's code; `add_to_collection` fills a list
    if name is not None or stateless_function_call(an, call):
        return False
    func = call.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in lists \
            and func.attr.value in _LIST_METHODS:
        return False
    names = qnames(func, an.qn)
    if names and all(q.startswith("numpy.") for q in names) and not any(
            isinstance(a.value, (cst.Lambda, cst.Attribute)) or isinstance(a.value, cst.Name) and (
                a.value.value in getattr(an.closed, "defs", {})) for a in call.args):
        return False  # NumPy copies or reads what it is given, unless it is handed code (`np.fromfunction(f)`)
    # `len(h)` runs a project class's `__len__`, `zip(h)` its `__iter__` (an adversarial run)
    return not (isinstance(func, cst.Name) and func.value in _KEEPS_NOTHING and names == {f"builtins.{func.value}"}
                and no_hooks(an.project))


_LIST_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "pop", "remove", "clear"})


def _local_lists(an, node) -> set:
    """Names every binding of which, in the function holding ``node``, is a list, dict or set
    display (so their methods are the builtins', which keep what they are given but fill it never)."""
    fn = an.parents.get(node)
    while fn is not None and not isinstance(fn, (cst.FunctionDef, cst.Module)):
        fn = an.parents.get(fn)
    displays, other = set(), set()
    todo = [fn] if fn is not None else []
    while todo:
        n = todo.pop()
        if isinstance(n, cst.Assign):
            for t in n.targets:
                if isinstance(t.target, cst.Name):
                    (displays if isinstance(n.value, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp,
                                                      cst.SetComp)) else other).add(t.target.value)
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr)):
            other |= {x.value for x in descendants(n.target) if isinstance(x, cst.Name)}
        elif isinstance(n, cst.AsName):
            other |= {x.value for x in descendants(n.name) if isinstance(x, cst.Name)}
        elif isinstance(n, (cst.Global, cst.Nonlocal)):
            other |= {a.name.value for a in n.names}
        todo += list(n.children)
    return displays - other


def _holds_list(an, flat: list, upto: int, name: str) -> bool:
    """``name`` may hold a container that can be filled: some binding of it before the call is
    not a TF op's result or arithmetic (a display, `list(...)`, a call of the program's), or is
    one the migrator does not follow (an unpacking, a loop target: an adversarial run)."""
    bound = False
    for it in flat[:upto]:
        if it.orig is not None and not it.dead and name in it.fx.assigns:
            bound = True
            for _line, value in _bindings(an, it.orig, name):
                if value is None or value is _UNFOLLOWED or not (
                        value is _ARITH or _arithmetic(an, value) or
                        isinstance(value, cst.Call) and an.tf_name(value) is not None
                        and an.call_kind(value) != "state"):  # `tf.get_collection_ref(k)`: the graph's list
                    return True
    return not bound  # a global, a parameter, a closure's: what it holds comes from elsewhere


def calls_graph_function(an, flat: list, s: int, e: int) -> Optional[str]:
    """The region calls a function of this module decorated with TF1's `function.Defun`: a graph
    function TF1's tf.gradients differentiated through its symbolic gradient, which a tape does not
    do, and which does not run eagerly (yaroslavvb's memory notebooks, unseen corpus)."""
    if "_defun_names" not in an.__dict__:  # found once per file, not once per site
        an.__dict__["_defun_names"] = {
            n.name.value for n in descendants(an.module, (cst.ClassDef,)) if isinstance(n, cst.FunctionDef)
            and any(isinstance(d.decorator, cst.Call) and (dotted(d.decorator.func) or "").endswith("Defun")
                    or (dotted(d.decorator) or "").endswith("Defun") for d in n.decorators)}
    defun = an.__dict__["_defun_names"]
    for i in range(s, e + 1):
        node = flat[i].node
        for call in calls_in(node) if defun and node is not None else ():
            if isinstance(call.func, cst.Name) and call.func.value in defun:
                return (f"the tape would run `{call.func.value}(...)`, a `function.Defun` graph function, which a "
                        "tape cannot differentiate and TF2 does not run eagerly; make it a plain function (or a "
                        "tf.function), then re-run")
    return None


#: a module that builds ops itself, below TF's Python API: a tape records none of them
_GRAPH_BUILDING = re.compile(r"\b(create_op|_create_op_internal|_add_op|node_def|op_def|import_graph_def)\b")


def graph_building_call(an, flat: list, s: int, e: int) -> Optional[str]:
    """A project function called in the region, every definition of which the project may hold
    in a file that copies or makes ops from their definitions (edward's ``copy``: ``node_def``
    and ``graph.create_op``): TF1 differentiated those ops, a tape never sees them (an unseen
    corpus: None where TF1 gave [4, 8, 12]).  Found by the called name, a superset."""
    builders = set(an.project.grep(b"_def", _GRAPH_BUILDING.pattern) or ()) | set(
        an.project.grep(b"_op", _GRAPH_BUILDING.pattern) or ())  # the files, found once per project (cached)
    if not builders:
        return None
    for i in range(s, e + 1):
        node = flat[i].orig
        for call in calls_in(node) if node is not None and not flat[i].dead else ():
            name = (dotted(call.func) or "").rsplit(".", 1)[-1]
            if not name or call_kind(call, an.qn) != "project":
                continue
            defining = an.project.grep(f"def {name}".encode(), rf"\bdef\s+{re.escape(name)}\s*\(") or ()
            for path in (p for p in defining if p in builders):
                hit = _GRAPH_BUILDING.search(an.project.text(path) or "")
                if hit:
                    return (f"`{an.code(call.func)}(...)` at line {an.line(node)} may make ops from their definitions "
                            f"(`{hit.group(1)}` in {os.path.basename(path)}), which a tape never records; keep "
                            "tf.gradients here, or build those ops with TF's API")
    return None
