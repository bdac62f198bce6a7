"""Rewrite plugins, one module per rewrite family (pyupgrade style).

Each plugin module calls :func:`register` at import time.  The pipeline runs
them in ``order``: the override rewrite must run before the tf.gradients
rewrite, because a tape ignores any override left behind.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

    from migrator.pipeline import FileContext

_PLUGINS: list["Plugin"] = []
_LOADED = False


class Plugin:
    """Base class: subclass, set the class attributes, implement :meth:`rewrite`."""

    #: short name, used in reports and ``--select``
    name: str = ""
    #: position in the pipeline (lower runs first)
    order: int = 100
    #: byte patterns; a file that contains none of them cannot hold a site
    triggers: tuple[bytes, ...] = ()
    #: also runs on files that call a gradient API only under a project module's name for it
    #: (``from ops import grad``; ``RunIndex.alias_importers``), which hold none of the triggers
    reads_api_aliases: bool = False

    def matches(self, data: bytes) -> bool:
        return any(t in data for t in self.triggers)

    def rewrite(self, module: "cst.Module", ctx: "FileContext") -> "cst.Module":
        raise NotImplementedError


def register(cls: type[Plugin]) -> type[Plugin]:
    _PLUGINS.append(cls())
    _PLUGINS.sort(key=lambda p: p.order)
    return cls


def plugins() -> list[Plugin]:
    """All registered plugins, importing the plugin modules on first use."""
    global _LOADED
    if not _LOADED:
        for info in pkgutil.iter_modules(__path__):
            if not info.name.startswith("_"):
                importlib.import_module(f"{__name__}.{info.name}")
        _LOADED = True
    return list(_PLUGINS)
