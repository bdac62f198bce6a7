"""Readable, collision-free names for generated code."""
from __future__ import annotations

import re

import libcst as cst


def used_names(module: cst.CSTNode, attributes: bool = True) -> set[str]:
    """Every identifier that appears anywhere in the module (cheap, conservative).

    With ``attributes=False`` the ``attr`` of ``x.attr`` does not count.
    """
    names: set[str] = set()

    class _Collect(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            names.add(node.value)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            if not attributes:
                node.value.visit(self)
                return False
            return True

    module.visit(_Collect())
    return names


def snake(text: str) -> str:
    """``QuantizeGrad`` -> ``quantize_grad``, ``FlipGradient%d`` -> ``flip_gradient``."""
    text = re.sub(r"%[-+ #0]*\d*[a-z]|\{[^}]*\}", "", text)
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", text)
    text = re.sub(r"[^0-9a-zA-Z]+", "_", text).strip("_").lower()
    if not text or text[0].isdigit():
        text = "f_" + text
    return text


class NameAllocator:
    """Hands out names not used anywhere in the module (nor by earlier calls)."""

    def __init__(self, module: cst.Module, also_taken=None):
        self._module = module
        self._also_taken = also_taken  # () -> names other modules see through a star import of this one
        self._taken: set[str] | None = None
        self._handed: set[str] = set()  # names given out for module level (imports, wrappers)
        self._in_function: dict[int, set[str]] = {}

    @property
    def taken(self) -> set[str]:
        """Walked on first use: most files with candidate sites end up with nothing to name."""
        if self._taken is None:
            self._taken = used_names(self._module)
        return self._taken

    def fresh(self, base: str) -> str:
        """A name for the module level (an import, a wrapper): also unused where a star import
        of this module copies it."""
        if self._also_taken is not None:
            self.taken.update(self._also_taken())
            self._also_taken = None
        name, i = base, 1
        while name in self.taken or not name.isidentifier():
            name = f"{base}_{i}"
            i += 1
        self.taken.add(name)
        self._handed.add(name)
        return name

    def fresh_in(self, base: str, function: cst.CSTNode | None) -> str:
        """A name for a local of ``function``: unused anywhere in it (nested code included), not
        given out in it before, nor for module level.  Two functions can each hoist ``loss_sum``;
        a name used nowhere in the function shadows nothing it reads.  Module level: :meth:`fresh`."""
        if not isinstance(function, cst.FunctionDef):
            return self.fresh(base)
        taken = self._in_function.setdefault(id(function), used_names(function, attributes=False))
        name, i = base, 1
        while name in taken or name in self._handed or not name.isidentifier():
            name = f"{base}_{i}"
            i += 1
        taken.add(name)
        self.taken.add(name)  # a later module-level name must not be shadowed by it
        return name
