"""Whether an import the rewrite left unused in its own code is still used some other way.

Counting names in the module is not enough (an adversarial run removed each of these):
``from pkg.m import ops`` in another file (a re-export), ``m.ops`` from an importer,
``__all__ = ["ops"]``, ``globals()["ops"]`` or ``exec``/``eval`` strings, and
doctests (``>>> ops.RegisterGradient``).  Any of them keeps the import.
"""
from __future__ import annotations

import os
import re
from typing import Optional

_DYNAMIC = re.compile(r"(?<![.\w])(globals|vars|locals|exec|eval|__import__)\s*\(")


def still_used(name: str, source: str, path: Optional[str], project) -> bool:
    """``name``, bound by an import of the file at ``path``, may be read other than by a plain name."""
    if _DYNAMIC.search(source):
        return True  # code that reads names from strings
    if "__all__" in source and re.search(rf"""["']{re.escape(name)}["']""", source):
        return True
    if re.search(rf">>>.*\b{re.escape(name)}\b", source):
        return True  # a doctest
    if project is None or path is None:
        return False
    uses = project.external_uses(os.path.abspath(path), name)
    return uses is None or bool(uses)
