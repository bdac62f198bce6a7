"""The targets of a lifted loop or comprehension (``for loss in losses:``, ``[... for y in ys]``,
``for loss in [l1, l2]:``): what the loop reads after the tape must be tensors the tape made.

The tape closes before the loop, so every target must exist, as a tensor, when it closes: a
list made at once (a display, a comprehension of TF calls, ``tf.split``/``tf.unstack``) and
changed by nothing after, whose items are tensors.  A generator, ``map`` or a dict view makes
its items when the loop reads them, after the tape (TF1 differentiated them, the tape gives
None); a Python number had no gradient in TF1 and raises in a tape; an attribute may be a
property that makes a new tensor each time (adversarial runs, each taken for migrated).
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from migrator._plugins._dataflow import touches
from migrator._plugins._grad_values import is_fresh

#: TF calls that return a new list of tensors
_LIST_MAKERS = frozenset({"tensorflow.split", "tensorflow.unstack"})


def lifted_refusal(p, c) -> Optional[str]:
    """Why the lifted targets may not be tensors the tape made, or None."""
    k = c.item
    for key in sorted(c.lifted.get("ys_keys") or ()):
        if "." in key:
            return (f"the loop reads `{key}` after the tape, and an attribute may be a property that makes a new "
                    "tensor there; bind it to a name before the loop")
        j = p._bind_at(key, k)
        if j is None:
            return f"`{key}` is not made in this block, so the tape cannot record its items"
        changed = next((i for i in range(j + 1, k) if not p.flat[i].dead and touches(p.flat[i].fx.writes, {key})),
                       None)
        if changed is not None:
            return f"`{key}` is changed at line {p.line(changed)}, after it is made, by code the tape may not record"
        if c.lifted.get("display"):
            if not p._holds_tensor(key, k):
                return (f"`{key}` is not shown to be a tensor (a Python number had no gradient in TF1 and raises "
                        "in a tape)")
        elif not _made_at_once(p, p._binding_value(j, key), j):
            return (f"the targets are the items of `{key}`, which the source does not show to be a list of tensors "
                    "made at once (a generator, map or dict view makes them when the loop reads them, after the "
                    "tape; a Python number raises in a tape)")
    return None


def _made_at_once(p, value, j: int) -> bool:
    holds = lambda n: p._holds_tensor(n, j)  # noqa: E731
    if isinstance(value, (cst.List, cst.Tuple)):
        return bool(value.elements) and all(isinstance(el, cst.Element) and is_fresh(el.value, p.an.qn, holds)
                                            for el in value.elements)
    if isinstance(value, cst.ListComp):
        return value.for_in.inner_for_in is None and is_fresh(value.elt, p.an.qn, lambda n: False)
    return isinstance(value, cst.Call) and p.an.tf_name(value) in _LIST_MAKERS
