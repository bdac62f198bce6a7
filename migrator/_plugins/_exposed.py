"""Exposed reads: what a statement may read before it binds those names itself.

``loss = a; loss += b`` inside one ``if`` reads ``a`` and ``b``, not an outside ``loss``: the
tape's proof asks which values come in from before a statement (``_grad_plan.item_for``).
"""
from __future__ import annotations

import libcst as cst

from migrator._plugins._dataflow import effects, plain_test


def exposed(node: cst.CSTNode) -> tuple[set, set]:
    """(reads, data reads) a statement may make *before* it binds those keys itself:
    ``loss = a; loss += b`` inside one ``if`` reads ``a`` and ``b``, not an outside ``loss``."""
    reads, data, _bound = _exposed_stmt(node, frozenset())
    return reads, data


def _test_data(test: cst.BaseExpression, data: set) -> set:
    """The data an if/while test reads: none when it only reads (``_dataflow.plain_test``)."""
    return set() if plain_test(test) else data


def _covered(key: str, bound: frozenset) -> bool:
    return any(key == b or key.startswith(b + ".") for b in bound)


def _exposed_block(stmts, bound: frozenset) -> tuple[set, set, frozenset]:
    reads: set = set()
    data: set = set()
    for st in stmts:
        r, d, bound = _exposed_stmt(st, bound)
        reads |= r
        data |= d
    return reads, data, bound


def _body(suite) -> list:
    if suite is None:
        return []
    body = suite.body
    return list(body) if isinstance(body, (list, tuple)) else [body]


def _exposed_stmt(st: cst.CSTNode, bound: frozenset) -> tuple[set, set, frozenset]:
    """Exposed reads of one statement, and the keys bound on every path through it."""
    def plain(node) -> tuple[set, set, frozenset]:
        fx = effects(node)
        return ({k for k in fx.reads if not _covered(k, bound)}, {k for k in fx.data if not _covered(k, bound)},
                bound | frozenset(fx.assigns))

    if isinstance(st, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return _exposed_block(st.body, bound)
    if isinstance(st, cst.If):
        r, d, _ = plain(st.test)
        d = _test_data(st.test, d)
        br, bd, b_body = _exposed_block(_body(st.body), bound)
        orelse = st.orelse
        if orelse is None:
            return r | br, d | bd, bound
        er, ed, b_else = (_exposed_stmt(orelse, bound) if isinstance(orelse, cst.If)
                          else _exposed_block(_body(orelse.body), bound))
        return r | br | er, d | bd | ed, b_body & b_else
    if isinstance(st, (cst.For, cst.While)):
        head = st.iter if isinstance(st, cst.For) else st.test
        r, d, _ = plain(head)
        d = d if isinstance(st, cst.For) else _test_data(st.test, d)
        inner = bound | (frozenset(effects(cst.Assign([cst.AssignTarget(st.target)], cst.Name("_"))).assigns)
                         if isinstance(st, cst.For) else frozenset())
        br, bd, _ = _exposed_block(_body(st.body), inner)
        er, ed, _ = _exposed_block(_body(st.orelse.body) if st.orelse is not None else [], bound)
        return r | br | er, d | bd | ed, bound  # the body may not run at all
    if isinstance(st, cst.With):
        r: set = set()
        d: set = set()
        for item in st.items:
            fx = effects(item)
            r |= {k for k in fx.reads if not _covered(k, bound)}
            d |= {k for k in fx.data if not _covered(k, bound)}
            bound = bound | frozenset(fx.assigns)
        br, bd, bound = _exposed_block(_body(st.body), bound)
        return r | br, d | bd, bound
    if isinstance(st, cst.Try):
        br, bd, _ = _exposed_block(_body(st.body), bound)
        for h in st.handlers:
            hr, hd, _ = _exposed_block(_body(h.body), bound)
            br, bd = br | hr, bd | hd
        for part in (st.orelse, st.finalbody):
            if part is not None:
                pr, pd, _ = _exposed_block(_body(part.body), bound)
                br, bd = br | pr, bd | pd
        return br, bd, bound
    return plain(st)
