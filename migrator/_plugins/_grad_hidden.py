"""What a gradient's region may do that no name in it shows: a generator's `yield` lets its
caller build values from the sources between two lines; a graph walk (`t.consumers()`,
`g.get_tensor_by_name(...)`) reaches tensors a tape cannot name (both from an adversarial run)."""
from __future__ import annotations

from typing import Optional

import libcst as cst

from migrator._flow_model import GRAPH_LOOKUPS, GRAPH_WALKS


def is_generator(fn: cst.FunctionDef) -> bool:
    """``fn`` yields (or awaits) in its own body, not only in a function nested in it."""
    found = False

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node) -> bool:
            return node is fn

        def visit_Lambda(self, node) -> bool:
            return False

        def visit_Yield(self, node) -> None:
            nonlocal found
            found = True

        def visit_Await(self, node) -> None:
            nonlocal found
            found = True

    fn.visit(V())
    return found


#: attributes that reach tensors through the graph rather than by name (`t.consumers()[0].outputs[0]`,
#: `g.get_tensor_by_name(...)`, `g.get_operations()[-1]`): a tape cannot name what they find.  The
#: value flow's tables, less an op's own metadata (`op`, `inputs`) and the graph collections, which
#: TFG135 reports on its own
GRAPH_REACHES = (GRAPH_WALKS | GRAPH_LOOKUPS) - {"op", "inputs", "_inputs", "_outputs", "get_collection",
                                                 "get_collection_ref", "get_all_collection_keys"}


def graph_reach(node: cst.CSTNode) -> Optional[cst.Attribute]:
    """The first attribute of ``node`` that walks the graph, or None."""
    found: list = []

    class V(cst.CSTVisitor):
        def visit_Attribute(self, n: cst.Attribute) -> None:
            if n.attr.value in GRAPH_REACHES and not found:
                found.append(n)

    node.visit(V())
    return found[0] if found else None
