"""Resolve TensorFlow names through libcst metadata, not by spelling.

``tf.compat.v1.gradients``, ``tensorflow.gradients`` after
``import tensorflow``, ``from tensorflow import gradients as g`` and the
private ``tensorflow.python...`` spellings all normalise to one public name,
e.g. ``tensorflow.gradients``.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst
from libcst.metadata import ImportAssignment, MetadataWrapper, QualifiedName, QualifiedNameSource, ScopeProvider
from libcst.metadata.base_provider import BaseMetadataProvider

_COMPAT = ("tensorflow.compat.v1.", "tensorflow.compat.v2.")

#: the names of the TF module itself (what `import tensorflow.compat.v1 as tf` binds)
TF_MODULES = frozenset({"tensorflow", "tensorflow.compat.v1", "tensorflow.compat.v2"})

#: private module paths users import from, mapped to the public name
_PRIVATE = {
    "tensorflow.python.framework.ops.get_default_graph": "tensorflow.get_default_graph",
    "tensorflow.python.framework.ops.RegisterGradient": "tensorflow.RegisterGradient",
    "tensorflow.python.framework.ops.Graph": "tensorflow.Graph",
    "tensorflow.python.framework.ops.op_scope": "tensorflow.op_scope",
    "tensorflow.python.ops.gradients.gradients": "tensorflow.gradients",
    "tensorflow.python.ops.gradients_impl.gradients": "tensorflow.gradients",
    "tensorflow.python.ops.gradients_impl.hessians": "tensorflow.hessians",
    "tensorflow.python.ops.gradients.hessians": "tensorflow.hessians",
    "tensorflow.python.ops.parallel_for.gradients.jacobian": "tensorflow.python.ops.parallel_for.gradients.jacobian",
    "tensorflow.python.ops.parallel_for.gradients.batch_jacobian": "tensorflow.python.ops.parallel_for.gradients.batch_jacobian",
    "tensorflow.python.ops.script_ops.py_func": "tensorflow.py_func",
    "tensorflow.python.ops.array_ops.identity": "tensorflow.identity",
}


#: marks a name bound both to TF and to something else: no TF name (see ``tf_name``)
MIXED = QualifiedName("<bound to TensorFlow and to something else>", QualifiedNameSource.LOCAL)
#: beside ``builtins.x`` in a file with a star import: libcst cannot see what it binds, and
#: names the builtin (a project's `from mathutils import *` bound `round` to its own function)
STARRED = QualifiedName("<a builtin, unless a star import binds it>", QualifiedNameSource.LOCAL)


def normalize(name: str) -> Optional[str]:
    """The public TF name for a qualified name, or None if it is not TensorFlow."""
    if name != "tensorflow" and not name.startswith("tensorflow."):
        return None
    stripped = True
    while stripped:  # `tf.compat.v1.compat.v1.gradients` (an alias of an alias) is TF's gradients too
        stripped = False
        for prefix in _COMPAT:
            if name.startswith(prefix):
                name = "tensorflow." + name[len(prefix):]
                stripped = True
    if name.startswith("tensorflow.python."):
        return _PRIVATE.get(name, name)
    return name


class _ScopeNames:
    """node -> its qualified names, asked of the node's scope on first use (and kept).

    A module-level name bound only to TensorFlow (``tf1 = tf.compat.v1``, ``grad = tf.gradients``,
    or ``if ...: tf = tf.compat.v1`` after the import) also stands for what it is bound to:
    libcst's names stop at an assignment, and real code was not reported at all."""

    def __init__(self, scopes, module: Optional[cst.Module] = None, imported=None, rebound=None,
                 starred=None, text: Optional[str] = None) -> None:
        self._scopes = scopes
        self._names: dict = {}
        self._starred = starred  # head -> TF names only star imports of project modules bind it to
        self._star_hits: dict = {}
        self._aliases = _tf_aliases(module, scopes) if module is not None else {}
        if self._aliases and rebound is not None:  # another module may rebind them (`m.grad = f`)
            for head in rebound(set(self._aliases)):
                self._aliases.pop(head, None)
        self._imported_fn = imported  # () -> {".backend.tf": ({TF names}, "tf")} (migrator.project_tf)
        self._imported: Optional[dict] = None
        self._module = module
        self._text = text  # the file's text (no rewrite adds a walrus or a `match`)
        self._walrus: Optional[set] = None
        self._star: Optional[bool] = None

    def imported(self) -> dict:
        """TF re-exported by project modules this file imports from (asked on first use)."""
        if self._imported is None:
            self._imported = self._imported_fn() if self._imported_fn is not None else {}
        if self._star_hits:  # `tf` from `from ops import *` (keys no qualified name starts with)
            return {**self._imported, **{"*" + h: (names, h) for h, names in self._star_hits.items() if names}}
        return self._imported

    def get(self, node, default=None):
        names = self._names.get(node)
        if names is None:
            scope = self._scopes.get(node)
            if scope is None:
                return default
            names = self._expand(scope.get_qualified_names_for(node))
            if not names and self._starred is not None:
                names = self._from_star(node)
            elif any(q.name.startswith("builtins.") for q in names) and self.star_imported():
                names = set(names) | {STARRED}
            head = (dotted(node) or "").split(".")[0]
            if names and head and head in self.walrus_targets():
                names = set(names) | {MIXED}  # `[(tf := f) for _ in x]`, `case tf:` bind the module's `tf` too
            self._names[node] = names
        return names

    def star_imported(self) -> bool:
        """The module has a star import (a wrapper made without the file's text is scanned once)."""
        if self._star is None:
            if self._starred is not None or self._text is not None or self._module is None:
                self._star = self._starred is not None
            else:
                self._star = any(isinstance(n, cst.ImportStar) for st in self._module.body
                                 if not isinstance(st, (cst.FunctionDef, cst.ClassDef)) for n in descendants(st))
        return self._star

    def walrus_targets(self) -> set:
        """Names a walrus or a `match` capture binds anywhere: libcst puts a walrus inside a
        comprehension in the comprehension's scope (Python binds it in the enclosing one), and
        records no capture pattern (`case tf:`) at all (two adversarial runs)."""
        if self._walrus is None:
            self._walrus = set()
            # the file's text when the wrapper carries it: `module.code` regenerates the source
            code = self._text if self._text is not None else self._module.code if self._module is not None else ""
            if ":=" in code or "match" in code:
                for n in descendants(self._module):
                    if isinstance(n, cst.NamedExpr) and isinstance(n.target, cst.Name):
                        self._walrus.add(n.target.value)
                    elif isinstance(n, (cst.MatchAs, cst.MatchStar)) and isinstance(n.name, cst.Name):
                        self._walrus.add(n.name.value)
        return self._walrus

    def _from_star(self, node) -> set:
        """A name no scope binds: what the project's star imports bind it to, if only TF."""
        chain = dotted(node)
        if chain is None:
            return set()
        head, _, rest = chain.partition(".")
        if head not in self._star_hits:
            self._star_hits[head] = self._starred(head) or set()
        return {QualifiedName(t + ("." + rest if rest else ""), QualifiedNameSource.IMPORT)
                for t in self._star_hits[head]}

    def __getitem__(self, node):
        names = self.get(node)
        if names is None:
            raise KeyError(node)
        return names

    def _expand(self, names):
        extra: set = set()
        unexplained = []  # bound to something that is not TF: another module, a call's result, ...
        for qn in names:
            head, _, rest = qn.name.partition(".")
            before = len(extra)
            if qn.source == QualifiedNameSource.LOCAL and head in self._aliases:
                extra |= {QualifiedName(t + ("." + rest if rest else ""), QualifiedNameSource.IMPORT)
                          for t in self._aliases[head]}
            elif qn.source == QualifiedNameSource.IMPORT and self._imported_fn is not None and \
                    not qn.name.startswith("tensorflow") and self.imported():
                for key, (targets, _bound) in self._imported.items():
                    if qn.name == key or qn.name.startswith(key + "."):
                        tail = qn.name[len(key):]
                        extra |= {QualifiedName(t + tail, QualifiedNameSource.IMPORT) for t in targets}
            if len(extra) == before and qn.source != QualifiedNameSource.BUILTIN and normalize(qn.name) is None:
                unexplained.append(qn)
        if unexplained and (extra or any(normalize(qn.name) is not None for qn in names)):
            # `import tensorflow as tf` and `tf = other.make()`, `import other as tf` (adversarial
            # runs): which binding a call reads is not TF's by the names alone
            extra.add(MIXED)
        return set(names) | extra if extra else names


def _module_level_assigns(module: cst.Module):
    """``name = dotted.expr`` statements at module level (also inside a top-level if/try/with)."""
    todo = list(module.body)
    while todo:
        st = todo.pop()
        if isinstance(st, cst.SimpleStatementLine):
            for small in st.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                        isinstance(small.targets[0].target, cst.Name) and dotted(small.value) is not None:
                    yield small
        elif isinstance(st, (cst.If, cst.Try, cst.With, cst.Else, cst.Finally, cst.ExceptHandler)):
            todo += list(st.body.body)
            for part in (getattr(st, "orelse", None), getattr(st, "finalbody", None)):
                if part is not None:
                    todo.append(part)
            todo += list(getattr(st, "handlers", ()))


def _tf_aliases(module: cst.Module, scopes) -> dict:
    """Module-level name -> the TF names it is bound to, for names bound only to TensorFlow
    (every binding an import of TF or an assignment of a TF name, or of another such name:
    ``tf1 = tf.compat.v1`` after ``tf = tf.compat.v1``; none in a for/with/del)."""
    glob = scopes.get(module.body[0]) if module.body else None
    glob = glob.globals if glob is not None else None
    if glob is None:
        return {}
    bound: dict = {}  # head -> [(target node id, {raw qualified names of the value})]
    for assign in _module_level_assigns(module):
        scope = scopes.get(assign.value)
        if scope is not None:
            target = assign.targets[0].target
            bound.setdefault(target.value, []).append(
                (id(target), {(q.name, q.source == QualifiedNameSource.LOCAL)
                              for q in scope.get_qualified_names_for(assign.value)}))
    if not any(normalize(n) is not None or local for values in bound.values() for _n, names in values
               for n, local in names) or _rebinds_dynamically(module):
        return {}  # no name bound to TF (most files: `FLAGS = flags.FLAGS`): no walk of the module
    out: dict = {}
    for _round in range(3):  # an alias of an alias
        for head, values in bound.items():
            targets, ok = set(), True
            for _node, names in values:
                for name, local in names:
                    first, _, rest = name.partition(".")
                    if local and first == head:
                        continue  # `tf = tf.compat.v1`: the other binding of the same name
                    if local and first in out:
                        targets |= {t + ("." + rest if rest else "") for t in out[first]}
                    elif not local and normalize(name) is not None:
                        targets.add(name)
                    else:
                        ok = False
            nodes = {n for n, _ in values}
            # bound to one TF name only: `ident = tf.identity` on one branch and `tf.stop_gradient`
            # on the other is neither (an adversarial run: a set's order picked one per run)
            ok = ok and len({_api(t) for t in targets}) == 1 and all(
                _imports_tf(a.node, head) if isinstance(a, ImportAssignment) else id(getattr(a, "node", None)) in nodes
                for a in glob.assignments[head])
            if ok:
                out[head] = targets
    return out


def _api(name: str) -> Optional[str]:
    """``normalize``, with TF's module objects as one: ``tf = tensorflow`` on one branch and
    ``tf = tensorflow.compat.v1`` on the other (a TF1/TF2 shim) make every ``tf.X`` the name
    ``normalize`` gives both spellings of anyway."""
    name = normalize(name)
    return "tensorflow" if name in TF_MODULES else name


#: calls that bind module names libcst's scopes never see (`globals()["tf1"] = ...`, `exec`)
DYNAMIC_BINDERS = frozenset({"globals", "vars", "locals", "setattr", "exec", "eval", "__import__"})


def _rebinds_dynamically(module: cst.Module) -> bool:
    """The module may bind names its scopes do not record: a star import, `globals()`, `exec`,
    `setattr`, `sys.modules`, `builtins.x = ...` with a `del`, a `match` capture (all found by an
    adversarial run to rebind an alias while it was taken for TF)."""
    found = []

    class V(cst.CSTVisitor):
        def visit_ImportStar(self, node):
            found.append(node)

        def visit_Match(self, node):
            found.append(node)

        def visit_Del(self, node):
            found.append(node)

        def visit_Call(self, node):
            if isinstance(node.func, cst.Name) and node.func.value in DYNAMIC_BINDERS:
                found.append(node)

        def visit_Attribute(self, node):
            if node.attr.value == "modules" and isinstance(node.value, cst.Name) and node.value.value == "sys":
                found.append(node)

    module.visit(V())
    return bool(found)


def _imports_tf(node: cst.CSTNode, head: str) -> bool:
    """The import statement binds ``head`` to TensorFlow (a module or a name in it)."""
    if isinstance(node, cst.Import):
        return any((a.evaluated_alias or a.evaluated_name.split(".")[0]) == head and
                   normalize(a.evaluated_name) is not None for a in node.names)
    if isinstance(node, cst.ImportFrom) and not node.relative and node.module is not None and \
            not isinstance(node.names, cst.ImportStar):
        base = dotted(node.module)
        return any((a.evaluated_alias or a.evaluated_name) == head and base is not None and
                   normalize(f"{base}.{a.evaluated_name}") is not None for a in node.names)
    return False


class LazyQualifiedNameProvider(BaseMetadataProvider):
    """``QualifiedNameProvider``'s values without its pass over every node of the module.

    libcst's provider visits the whole tree to store a lazy value per node; the plugins
    ask for the names of a few hundred call targets.  This one asks the scope of each
    node when a plugin first wants its names (``ScopeProvider`` is computed anyway).
    """

    METADATA_DEPENDENCIES = (ScopeProvider,)

    def _gen(self, wrapper):  # the resolved mapping itself is lazy: no per-node pass
        return _ScopeNames(wrapper.resolve(ScopeProvider), wrapper.module, getattr(wrapper, "tf_imports", None),
                           getattr(wrapper, "tf_rebound", None), getattr(wrapper, "tf_starred", None),
                           getattr(wrapper, "tf_source", None))


class TFMetadataWrapper(MetadataWrapper):
    """A ``MetadataWrapper`` that carries what the project says this file's imports are
    (``tf_imports``: a callable, see :mod:`migrator.project_tf`; ``tf_starred``: see
    :func:`migrator.project_star.starred_tf_names`)."""

    __slots__ = ("tf_imports", "tf_rebound", "tf_starred", "tf_source")


class QualifiedNames:
    """``wrapper.resolve(QualifiedNameProvider)`` with its lazy values forced on access."""

    def __init__(self, resolved):
        self._resolved = resolved

    def get(self, node, default=()):
        value = self._resolved.get(node)
        if value is None:
            return default
        return value() if callable(value) else value

    def imported(self) -> dict:
        """See :meth:`_ScopeNames.imported` (empty for libcst's own provider)."""
        return self._resolved.imported() if hasattr(self._resolved, "imported") else {}


def tf_name(node: cst.CSTNode, wrapper_or_visitor) -> Optional[str]:
    """The normalised TF name of ``node`` (a Name/Attribute/Call's func), or None.

    ``wrapper_or_visitor`` is anything with ``get_metadata`` (a visitor that
    declared ``LazyQualifiedNameProvider``) or a resolved metadata mapping.
    """
    if isinstance(node, cst.Call):
        node = node.func
    try:
        if hasattr(wrapper_or_visitor, "get_metadata"):
            names = wrapper_or_visitor.get_metadata(LazyQualifiedNameProvider, node, set())
        else:
            names = wrapper_or_visitor.get(node, set())
            if callable(names):  # a LazyValue from MetadataWrapper.resolve
                names = names()
    except KeyError:
        return None
    if MIXED in names:
        return None
    found = {n for n in (normalize(qn.name) for qn in names) if n is not None}
    # one name, or none: a name bound to two TF APIs (`g = tf.hessians` on one branch,
    # `tf.gradients` on the other) is neither, whatever order a set gives them in
    return found.pop() if len(found) == 1 else None


def descendants(node: cst.CSTNode, stop: tuple = ()):
    """``node`` and every node below it, not going below a node of a type in ``stop``."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, stop) or n is node:
            todo += list(n.children)


def dotted(node: cst.CSTNode) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None (used for messages and keys)."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def is_docstring(stmt: cst.CSTNode) -> bool:
    """A statement that is only a string literal (a docstring)."""
    return isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 \
        and isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, (cst.SimpleString,
                                                                                   cst.ConcatenatedString))
