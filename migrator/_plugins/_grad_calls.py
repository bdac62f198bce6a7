"""The tape proof's check of the calls in a tape (:class:`CallsProof`, mixed into
``_grad_proof.Prover``): when the sources existed before the function, a call in the tape
must not hand back a tensor made before it, and an attribute read by name is a read."""
from __future__ import annotations

import libcst as cst

from migrator._plugins._grad_model import Call
from migrator.tfnames import dotted

#: builtins that read attributes or variables by a name given as a value
_BY_NAME = frozenset({"getattr", "hasattr", "vars", "globals", "locals", "eval"})


class CallsProof:
    def _calls_build_afresh(self, c: Call, S: list, s: int, e: int) -> None:
        """Sources that existed before the function: a call in the region must not hand back
        a tensor made earlier (a cache, a lazy property)."""
        keys = {src.key for src in self.sources_now}
        for i in S:
            if i < s:
                continue
            it = self.flat[i]
            node = it.orig if it.orig is not None else (it.hoist[1] if it.hoist else None)
            if node is None or any(self._binding_value(i, key) is not None for key in keys):
                continue  # `x = f(...)` makes the source itself: whatever it returns is what is watched
            for call in self.an.calls_in(node):
                kind = self.an.call_kind(call)
                if kind == "builtin" and isinstance(call.func, cst.Name) and call.func.value in _BY_NAME:
                    self._read_by_name(c, call, i)
                    continue
                if kind == "state" and self.an.tf_name(call) != "tensorflow.get_variable":
                    self._assume(c, f"`{self._code(call.func)}(...)` at line {self.line(i)} returns only tensors "
                                    "made inside the tape", f"{self._code(call.func)}(...)")
                elif kind == "project":
                    fn = call.func.value if isinstance(call.func, cst.Name) else None
                    evidence = None if fn is not None else self.an.closed_method(self.scope.func, call, keys)
                    if fn is not None and self.an.closed(fn):
                        c.proof.append(f"`{fn}` (this module) builds its result from its arguments")
                    elif evidence:
                        c.proof.append(evidence)
                    else:
                        self._assume(c, f"`{self._code(call.func)}(...)` at line {self.line(i)} builds its result "
                                        "afresh (it returns no tensor made before the tape)", f"{self._code(call.func)}(...)")

    def _read_by_name(self, c: Call, call: cst.Call, i: int) -> None:
        """``getattr(self, "cache")`` reads ``self.cache``, which the line's own reads do not
        show (an adversarial run: a cached tensor read this way was lost by the tape)."""
        args = call.args
        name = args[1].value if len(args) >= 2 and isinstance(args[1].value, cst.SimpleString) else None
        obj = dotted(args[0].value) if args else None
        key = f"{obj}.{name.evaluated_value}" if name is not None and obj and isinstance(
            name.evaluated_value, str) and call.func.value in ("getattr", "hasattr") else None
        if call.func.value == "hasattr":
            return  # a bool
        evidence = self.an.attribute_evidence(self.scope.func, key, self.keys) if key else None
        if evidence:
            c.proof.append(f"`{key}` cannot depend on {self.src_text}: {evidence}")
            return
        text = f"`{self._code(call)}`" if len(self._code(call)) < 60 else f"`{call.func.value}(...)`"
        self._assume(c, f"{text} at line {self.line(i)} reads no tensor computed from {self.src_text} before the "
                        "tape", f"{call.func.value}(...)")
