"""Code that changes TF's gradient machinery at run time, found in a module's ``ast``.

A tape bypasses a replaced ``tf.gradients``, and a swapped gradient-registry entry
changes which function an op's gradient gets while it is in place; either makes every
gradient call of the project manual (TFG131).  Reading the registry to register a
gradient once (``if "G" not in ops._gradient_registry._registry:``) changes nothing.
"""
from __future__ import annotations

import ast
import re
from typing import Optional

from migrator.astwalk import walk_near


def gradients_patch_nodes(tree: ast.AST, lines: Optional[list[int]] = None) -> list[ast.AST]:
    """Statements that rebind ``gradients`` on some module object: ``tf.gradients = f``,
    ``tf.__dict__["gradients"] = f``, ``setattr(tf, "gradients", f)``,
    ``gradients_impl.gradients = f`` (only those on ``lines``, the lines that say ``gradients``)."""
    out = []
    for node in walk_near(tree, lines):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for t in targets:
            if isinstance(t, ast.Attribute) and t.attr == "gradients" and isinstance(t.value, (ast.Name, ast.Attribute)) \
                    and not (isinstance(t.value, ast.Name) and t.value.id == "self"):
                out.append(node)
            elif isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and t.slice.value == "gradients":
                if _is_namespace(t.value):
                    out.append(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value == "gradients":
            out.append(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update" \
                and _is_namespace(node.func.value) \
                and (any(isinstance(k, ast.Constant) and k.value == "gradients"
                         for a in node.args if isinstance(a, ast.Dict) for k in a.keys)
                     or any(kw.arg == "gradients" for kw in node.keywords)):
            out.append(node)
    return out


def _is_namespace(node: ast.AST) -> bool:
    """``m.__dict__`` or ``vars(m)``: a module's namespace as a dict."""
    if isinstance(node, ast.Attribute) and node.attr == "__dict__":
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars"


#: a ``tf.Graph``'s own tables of gradient overrides (``gradient_override_map`` fills the
#: first) and the op attribute they set (``op._set_attr("_gradient_op_type", ...)``): code
#: that writes them directly overrides gradients a tape never sees
GRAPH_GRADIENT_MAPS = ("_gradient_override_map", "_gradient_function_map", "_gradient_op_type")

#: methods of TF's ``Registry`` that only read it
_READ_METHODS = ("lookup", "list")


def registry_use_lines(tree: ast.AST, text: str) -> list[int]:
    """Lines where ``_gradient_registry`` appears other than as the attribute a membership test
    reads (``"G" in ops._gradient_registry._registry``) or a read through its own methods
    (``ops._gradient_registry.lookup("Relu")``, ``.list()``): any other spelling (an alias, an
    import of the name, ``getattr(ops, "_gradient_registry")``, a string run by ``exec``,
    ``ops._gradient_registry.lookup = f``, even a comment) may swap an entry, and counts."""
    tested = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in _READ_METHODS and isinstance(node.func.value, ast.Attribute) \
                and node.func.value.attr == "_gradient_registry":
            inner = node.func.value
            tested.add((inner.end_lineno, inner.end_col_offset))
        if isinstance(node, ast.Compare) and all(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            for c in node.comparators:
                inner = c.value if isinstance(c, ast.Attribute) and c.attr == "_registry" else c
                if isinstance(inner, ast.Attribute) and inner.attr == "_gradient_registry":
                    tested.add((inner.end_lineno, inner.end_col_offset))
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        for m in re.finditer("_gradient_registry", line):
            end = len(line[:m.end()].encode("utf-8"))  # ast columns are utf-8 byte offsets
            if (i, end) not in tested:
                out.append(i)
    return out


def word_lines(text: str, word: str) -> list[int]:
    """The 1-based lines of ``text`` that name ``word``."""
    return [i for i, line in enumerate(text.splitlines(), 1) if word in line]
