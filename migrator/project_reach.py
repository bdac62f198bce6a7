"""Which project files can run in the same process as a given module.

A run-time patch (``ops._gradient_registry`` swapped, ``tf.gradients`` replaced) changes
gradients only in a process that executes the patching module.  A file's gradient code
runs in such a process when some module that runs the patch (the patch's module, or any
module importing it, transitively) is that file or imports it, transitively.  The import
graph is the project's static one (``Project.imports``); a project too big to scan
answers "yes".  Scripts that merely sit in the same folder do not run together.
"""
from __future__ import annotations

import os

#: deep enough for real package layouts; the walk stops early when nothing new turns up
DEPTH = 12


def runs_with(project, patch_path: str, path: str) -> bool:
    """Whether ``path`` may execute in a process that has executed ``patch_path``."""
    cache = project.__dict__.setdefault("_runs_with", {})
    key = os.path.abspath(patch_path)
    if key not in cache:
        cache[key] = _reach(project, key)
    reach = cache[key]
    return reach is None or os.path.abspath(path) in reach


def _reach(project, patch_path: str):
    runners = project.importers(patch_path, depth=DEPTH)
    if runners is None:
        return None
    out = set()
    for r in [patch_path] + list(runners):
        out.add(r)
        out |= set(project.import_closure(r, depth=DEPTH))
    return out
