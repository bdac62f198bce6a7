"""Which block a gradient call's tape belongs to.

Usually the block that holds the call.  When the targets are computed in an
enclosing block and the call merely sits inside an ``if``, ``with``, ``try``,
``for`` or ``while`` there (``with tf.name_scope("grads"): g = tf.gradients(loss, x)``,
``for loss in losses: grads.append(tf.gradients(loss, x)[0])``), the tape goes in
the enclosing block, around the forward pass, and the call inside the compound
statement becomes ``tape.gradient`` on it (a persistent tape when the statement
is a loop).  That is sound when nothing between the forward pass and the call
rebinds the targets or the sources: the compound statement's header and the
lines before the call in it are checked here; the rest is the usual proof.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from migrator._plugins import _grad_per_index as per_index
from migrator._plugins._dataflow import effects, touches
from migrator._plugins._grad_find import chain_items
from migrator._plugins._grad_model import Call
from migrator.tfnames import dotted

_COMPOUND = (cst.If, cst.For, cst.While, cst.With, cst.Try)


def home(c: Call, parents, an=None) -> tuple[cst.CSTNode, cst.BaseSuite]:
    """(statement, block): the top-level statement of the tape's block that holds the call."""
    stmt, block = _stmt_block(c.node, parents)
    if c.refused is not None or c.kind == "hess" or (c.lifted or {}).get("element"):
        return stmt, block  # one gradient per element of a list: the tape goes where the list is made
    ys = chain_items(c.ys) if not isinstance(c.ys, cst.Tuple) else None
    xs = chain_items(c.xs)
    if xs is None:
        return stmt, block
    # an expression as the targets (`tf.reduce_sum(scores)`) is evaluated at the end of the tape,
    # in the enclosing block: what it reads must not change before the call
    ys_keys = {k for k, _ in ys} if ys is not None else set(effects(c.ys).data)
    if not ys_keys:
        return stmt, block
    src_keys = {k for k, _ in xs}
    slice_keys: Optional[set] = None
    loop = display = False
    while True:
        if _computed_before(block, stmt, slice_keys or ys_keys):
            break
        owner = _owner(block, parents)
        if owner is None:
            break
        before = _lines_before(block, stmt)
        if touches(before, ys_keys | src_keys | (slice_keys or set())):
            break  # rebound between the forward pass and the call
        header = _header_writes(owner)
        if touches(header, src_keys):
            break
        if isinstance(owner, (cst.For, cst.While)):
            # later lines of the body run before the next iteration's call too
            body = effects(owner.body).writes - header
            if touches(body, ys_keys | src_keys | (slice_keys or set())):
                break
        new_slice = slice_keys
        per = _per_index(c, owner, stmt, header, ys, slice_keys, parents, an) \
            if touches(header, ys_keys) else None
        if per is not None:
            # `for i in range(n): gs.append(tf.gradients(y[:, i], x)[0])`: every slice is taken in the tape
            c.per_index, c.persistent = per, True
            ys_keys = ys_keys - {per["var"]}
        elif touches(header, ys_keys):
            # `for loss in losses:` -- the targets are the elements of a list made before the loop
            key = dotted(owner.iter) if isinstance(owner, cst.For) else None
            shown = _display_keys(owner, ys_keys) if key is None and isinstance(owner, cst.For) else None
            if key is None and shown is None or ys is None or slice_keys is not None or \
                    set(header) != set(ys_keys) and shown is None:
                break
            new_slice = {key} if key is not None else shown
            display = shown is not None  # the loop variable takes these names' tensors, not a list's items
            # the body must not change the list it iterates (`losses.append(t)` adds an iteration
            # over a tensor made after the tape: an adversarial run), directly or through a call
            body_fx = an.item(owner).fx if an is not None else effects(owner.body)
            if touches(body_fx.writes - _header_writes(owner), new_slice):
                break
        outer_stmt, outer_block = _stmt_block(owner, parents)
        if outer_block is None:
            break
        stmt, block, slice_keys = outer_stmt, outer_block, new_slice
        loop = loop or isinstance(owner, (cst.For, cst.While))
        c.lifted = {"loop": loop, "ys_keys": slice_keys, "over": owner, "display": display}
    if c.lifted is not None and c.lifted.get("loop"):
        c.persistent = True  # one tape, one gradient per iteration
    return stmt, block


def _per_index(c: Call, owner, stmt, header: set, ys, slice_keys, parents, an) -> Optional[dict]:
    """The loop's per-index form (_grad_per_index), when the header binds only the index, the
    body never rebinds it, and the call's statement is a simple line of the body."""
    if an is None or ys is not None or slice_keys is not None or c.per_index is not None:
        return None
    if not isinstance(stmt, cst.SimpleStatementLine):
        return None  # under an if/with/try of the body: not every iteration takes the gradient
    per = per_index.loop(owner, stmt, an)
    if per is None or set(header) != {per["var"]} or touches(effects(owner.body).writes, {per["var"]}):
        return None
    return per if per_index.call_ok(c, per, an, parents) else None


def _display_keys(owner: cst.For, ys_keys: set) -> Optional[set]:
    """`for loss in [l1, l2]:` or `for name, loss in [("a", l1), ("b", l2)]:` -- the names the
    loop variable takes, from a display of names (the other items literals or names: the display
    is evaluated once, after the tape, and must run no code)."""
    if len(ys_keys) != 1 or not isinstance(owner.iter, (cst.List, cst.Tuple)) or not owner.iter.elements:
        return None
    (var,) = ys_keys
    target = owner.target
    if isinstance(target, cst.Name):
        if target.value != var:
            return None
        pos, width = None, None
    elif isinstance(target, (cst.Tuple, cst.List)) and all(isinstance(e.value, cst.Name) and
                                                           not isinstance(e, cst.StarredElement)
                                                           for e in target.elements):
        names = [e.value.value for e in target.elements]
        if names.count(var) != 1 or len(set(names)) != len(names):
            return None
        pos, width = names.index(var), len(names)
    else:
        return None
    keys = set()
    for el in owner.iter.elements:
        if isinstance(el, cst.StarredElement):
            return None
        item = el.value
        if pos is not None:
            if not isinstance(item, (cst.Tuple, cst.List)) or len(item.elements) != width or any(
                    isinstance(e, cst.StarredElement) or not (dotted(e.value) or _literal(e.value))
                    for e in item.elements):
                return None
            item = item.elements[pos].value
        if not isinstance(item, cst.Name):
            return None  # an attribute may be a property that makes a new tensor after the tape
        keys.add(item.value)
    return keys


def _literal(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.SimpleString, cst.Integer, cst.Float))


def _stmt_block(node: cst.CSTNode, parents):
    cur: cst.CSTNode = node
    while True:
        parent = parents.get(cur)
        if parent is None:
            return cur, None
        if isinstance(parent, (cst.Module, cst.IndentedBlock)):
            return cur, parent
        cur = parent


def _owner(block, parents) -> Optional[cst.CSTNode]:
    """The compound statement whose body (or else/except/finally) ``block`` is."""
    cur = parents.get(block)
    while cur is not None and not isinstance(cur, _COMPOUND):
        if isinstance(cur, (cst.FunctionDef, cst.ClassDef, cst.Module, cst.IndentedBlock)):
            return None
        cur = parents.get(cur)
    if isinstance(cur, cst.If):  # an elif is an If nested in another If's orelse: take the outermost
        while isinstance(parents.get(cur), cst.Else) or (
                isinstance(parents.get(cur), cst.If) and parents.get(cur).orelse is cur):
            up = parents.get(cur)
            cur = parents.get(up) if isinstance(up, cst.Else) else up
    return cur


def _computed_before(block, stmt, keys: set) -> bool:
    written: set = set()
    for s in block.body:
        if s is stmt:
            break
        written |= effects(s).writes
    return touches(written, keys)


def _lines_before(block, stmt) -> set:
    out: set = set()
    for s in block.body:
        if s is stmt:
            break
        out |= effects(s).writes
    return out


def _header_writes(owner: cst.CSTNode) -> set:
    if isinstance(owner, cst.For):
        return effects(cst.Assign([cst.AssignTarget(owner.target)], owner.iter)).writes
    if isinstance(owner, cst.With):
        out: set = set()
        for item in owner.items:
            out |= effects(item).writes
        return out
    if isinstance(owner, (cst.If, cst.While)):
        return effects(owner.test).writes  # a walrus in the test
    return set()
