"""Resolve TensorFlow names through libcst metadata, not by spelling.

``tf.compat.v1.gradients``, ``tensorflow.gradients`` after
``import tensorflow``, ``from tensorflow import gradients as g`` and the
private ``tensorflow.python...`` spellings all normalise to one public name,
e.g. ``tensorflow.gradients``.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst
from libcst.metadata import ScopeProvider
from libcst.metadata.base_provider import BaseMetadataProvider

_COMPAT = ("tensorflow.compat.v1.", "tensorflow.compat.v2.")

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


def normalize(name: str) -> Optional[str]:
    """The public TF name for a qualified name, or None if it is not TensorFlow."""
    if name != "tensorflow" and not name.startswith("tensorflow."):
        return None
    for prefix in _COMPAT:
        if name.startswith(prefix):
            name = "tensorflow." + name[len(prefix):]
            break
    if name.startswith("tensorflow.python."):
        return _PRIVATE.get(name, name)
    return name


class _ScopeNames:
    """node -> its qualified names, asked of the node's scope on first use (and kept)."""

    def __init__(self, scopes) -> None:
        self._scopes = scopes
        self._names: dict = {}

    def get(self, node, default=None):
        names = self._names.get(node)
        if names is None:
            scope = self._scopes.get(node)
            if scope is None:
                return default
            names = self._names[node] = scope.get_qualified_names_for(node)
        return names

    def __getitem__(self, node):
        names = self.get(node)
        if names is None:
            raise KeyError(node)
        return names


class LazyQualifiedNameProvider(BaseMetadataProvider):
    """``QualifiedNameProvider``'s values without its pass over every node of the module.

    libcst's provider visits the whole tree to store a lazy value per node; the plugins
    ask for the names of a few hundred call targets.  This one asks the scope of each
    node when a plugin first wants its names (``ScopeProvider`` is computed anyway).
    """

    METADATA_DEPENDENCIES = (ScopeProvider,)

    def _gen(self, wrapper):  # the resolved mapping itself is lazy: no per-node pass
        return _ScopeNames(wrapper.resolve(ScopeProvider))


class QualifiedNames:
    """``wrapper.resolve(QualifiedNameProvider)`` with its lazy values forced on access."""

    def __init__(self, resolved):
        self._resolved = resolved

    def get(self, node, default=()):
        value = self._resolved.get(node)
        if value is None:
            return default
        return value() if callable(value) else value


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
    for qn in names:
        n = normalize(qn.name)
        if n is not None:
            return n
    return None


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
