"""TF's API replaced in the file (or a module it imports), and the blocks it cannot reach.

``tf.get_variable = getter`` (a quantized net's custom getter, a held-out corpus) made every
override block of the file manual, although a block that calls only ``tf.round`` makes the ops
TF makes: replacing a public attribute changes what code calling it through that module gets,
and TF's own functions never look their helpers up there.  A block is kept manual when a patch
does not show the one path it replaces, replaces something in TF's own modules
(``tensorflow.python...``, where they do), a class's attribute or a private one (an operator
may dispatch to it), or when the block calls anything but TF functions and op-free
builtins (a project helper may call the replaced API) or a replaced path itself.
"""
from __future__ import annotations

import os
from typing import Optional

import libcst as cst

from migrator._plugins._override_model import Block, Refuse
from migrator.tfnames import descendants, normalize

#: builtins that make no op and call no TF API
_PLAIN = {"float", "int", "bool", "str", "len", "range", "print", "isinstance", "list", "tuple", "dict", "abs",
          "min", "max", "round", "enumerate", "zip"}


def api_patch_refusal(col, block: Block) -> Optional[Refuse]:
    """Why a TF API replaced in this file or a module it imports may change the ops ``block``
    makes; None when there is no such patch, or it cannot reach the block."""
    patches = getattr(col, "api_patches", None) or []
    if not patches:
        return None
    # TF's own modules (`tensorflow.python.ops.variable_scope.get_variable`) are where its functions
    # look their helpers up: a patch there may change the ops of any TF call
    paths = [normalize(p.text) if p.text and not p.text.startswith("tensorflow.python") else None for p in patches]
    why = _reaches(col, block, paths)
    if why is None:
        return None
    first = patches[paths.index(None)] if None in paths else patches[0]
    return Refuse("TFG101", f"TF's API is replaced at {os.path.basename(first.path)}:{first.line}{why}, so which ops "
                            "the block's calls make is not known from TF's; migrate by hand")


def _reaches(col, block: Block, paths: list) -> Optional[str]:
    if any(p is None or not _plain_path(p) for p in paths):
        return ""
    for call in (n for n in descendants(block.node.body) if isinstance(n, cst.Call)):
        name = col.tf(call)
        if name is None:
            if col.builtin(call) in _PLAIN:
                continue
            return " and the block calls code that may use it"
        hit = next((p for p in paths if name == p or name.startswith(p + ".")), None)
        if hit is not None:
            return f" (`{hit}`, which the block calls)"
    return None


def _plain_path(path: str) -> bool:
    """A function or module attribute: no private or dunder part, no attribute of a class."""
    parts = path.split(".")[1:]
    return bool(parts) and not any(p.startswith("_") for p in parts) and not any(p[:1].isupper() for p in parts[:-1])
