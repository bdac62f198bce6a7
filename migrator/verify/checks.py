"""Turning the two sides' results into checks (parent process; no TensorFlow).

A *check* is one compared value: a pair of gradient records (script mode),
a function probe (function mode: TF2 eager and ``tf.function``), or the
migrated program's own run when it fails.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Optional

from migrator.verify import argtree
from migrator.verify.compare import compare_lists, compare_values

MATCH, MISMATCH, UNVERIFIED = "match", "mismatch", "unverified"
TF1, TF1_RESOURCE, TF2 = "tf1-graph", "tf1-graph+resource-variables", "tf2-eager"
TF2_BOTH = "tf2-eager+tf.function"

#: Errors that mean "this code needs TF1 graph mode", not "this migration computes something else".
NEEDS_GRAPH = re.compile(
    r"not supported when eager execution is enabled|module 'tensorflow[\w.]*' has no attribute|"
    r"not compatible with eager execution|eager execution.*placeholder|RefVariable|"
    r"is not supported in eager mode|Session graph is empty|needs TF1 graph mode|"
    r"only supported in graph mode|when eager execution is enabled"
)


#: A migrated-side failure that says nothing about the migration: it ran out of time, or never ran.
INCONCLUSIVE = re.compile(r"timed out|not run:")


@dataclass
class Check:
    """One compared value: a gradient record pair, a function probe, or a run."""

    label: str
    kind: str  # "gradient" | "probe" | "run" | "test"
    status: str
    mode: str
    detail: str = ""
    line: Optional[int] = None  # original line
    new_line: Optional[int] = None  # migrated line
    max_abs_err: Optional[float] = None
    max_rel_err: Optional[float] = None
    target: Optional[str] = None  # probed function
    file: Optional[str] = None  # tree and --run modes: the file, relative to the tree

    def as_dict(self) -> dict:
        out = {
            "label": self.label, "kind": self.kind, "status": self.status, "mode": self.mode,
            "detail": self.detail, "line": self.line, "new_line": self.new_line,
            "max_abs_err": self.max_abs_err, "max_rel_err": self.max_rel_err,
        }
        if self.file is not None:
            out["file"] = self.file
        return out


def needs_graph(failure: dict, changed: set, unbound: set = frozenset()) -> Optional[str]:
    """Why a migrated-side failure is "needs TF1 graph mode" in code the migration left alone, or None.

    Such a failure makes the check unverified.  Any other failure, and any
    failure raised on a line the migration changed, is a mismatch.
    """
    error = failure.get("error") or ""
    line = failure.get("error_line")
    graph_only = bool(NEEDS_GRAPH.search(error))
    m = re.match(r"NameError: name '(\w+)' is not defined", error)
    if m and m.group(1) in unbound:
        graph_only = True  # bound by a module-level statement that needed graph mode
    if not graph_only or (line is not None and line in changed):
        return None
    where = f" at line {line}" if line else ""
    return f"needs TF1 graph mode{where}, in code the migration did not change: {error}"


# ------------------------------------------------------------------ records
def _signature(rec: dict) -> tuple:
    """Structure of a record (never its values): what the alignment matches on."""
    sig = []
    for comp in rec["components"]:
        if comp["none"]:
            sig.append(None)
        elif comp["captures"]:
            v = comp["captures"][0]
            sig.append((tuple(getattr(v, "shape", ())), str(getattr(v, "dtype", ""))))
        else:
            sig.append("?")
    return tuple(sig)


def align_records(old_recs: list, new_recs: list) -> tuple:
    """Pair gradient records of the two sides by order of evaluation.

    Records are aligned on their structure (number, shapes and dtypes of the
    gradients, never their values), so an intermediate gradient that only
    the migrated side computes (the inner tape of a Hessian) does not shift
    the pairing.  Inside unaligned stretches records pair up in order.
    Returns (pairs, original-only indices, migrated-only indices).
    """
    sa = [_signature(r) for r in old_recs]
    sb = [_signature(r) for r in new_recs]
    pairs, only_old, only_new = [], [], []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, sa, sb, autojunk=False).get_opcodes():
        if tag == "equal":
            pairs += list(zip(range(i1, i2), range(j1, j2)))
            continue
        k = min(i2 - i1, j2 - j1)
        pairs += list(zip(range(i1, i1 + k), range(j1, j1 + k)))
        only_old += list(range(i1 + k, i2))
        only_new += list(range(j1 + k, j2))
    return pairs, only_old, only_new


def record_checks(old_recs, new_recs, mode: str, new_fail: Optional[str], rtol, atol, file=None):
    """Checks for the original's gradient records, and notes on migrated-only ones."""
    pairs, _only_old, only_new = align_records(old_recs, new_recs)
    partner = dict(pairs)
    checks = []
    for i, a in enumerate(old_recs):
        j = partner.get(i)
        b = new_recs[j] if j is not None else None
        label = f"gradient #{i + 1} {a['kind']} -> " + (b["kind"] if b else "-")
        chk = Check(label, "gradient", UNVERIFIED, mode, line=a["line"], new_line=b["line"] if b else None,
                    file=file)
        if b is None:
            if new_fail:
                chk.status = UNVERIFIED if INCONCLUSIVE.match(new_fail) else MISMATCH
                chk.detail = f"migrated fails before computing it: {new_fail}"
            else:
                chk.detail = "only the original computed this gradient"
        else:
            compare_record(chk, a, b, rtol, atol)
        checks.append(chk)
    notes = [f"migrated line {new_recs[j]['line']} computes a gradient ({new_recs[j]['kind']}) the original "
             f"has no counterpart for (an intermediate?); not compared" for j in only_new]
    return checks, notes


def compare_record(chk: Check, a: dict, b: dict, rtol, atol) -> None:
    ca, cb = a["components"], b["components"]
    if len(ca) != len(cb):
        chk.status = MISMATCH
        chk.detail = f"original returned {len(ca)} gradient(s), migrated {len(cb)}"
        return
    worst_abs, worst_rel, missing = 0.0, 0.0, []
    compared = 0
    for k, (x, y) in enumerate(zip(ca, cb)):
        name = f"component {k}" if len(ca) > 1 else "value"
        if x["none"] or y["none"]:
            o = compare_values(None if x["none"] else 0, None if y["none"] else 0)
            if not o.equal:
                chk.status = MISMATCH
                chk.detail = f"{name}: {o.detail}"
                return
            compared += 1
            continue
        n = min(len(x["captures"]), len(y["captures"]))
        if n == 0:
            side = "original" if not x["captures"] else "migrated"
            reason = x["reason"] if not x["captures"] else y["reason"]
            missing.append(f"{name} not produced by the {side} ({reason})")
            continue
        for j in range(n):
            o = compare_values(x["captures"][j], y["captures"][j], rtol, atol)
            if not o.equal:
                chk.status = MISMATCH
                chk.detail = f"{name}{f' (evaluation {j + 1})' if j else ''}: {o.detail}"
                chk.max_abs_err, chk.max_rel_err = o.max_abs_err, o.max_rel_err
                return
            worst_abs = max(worst_abs, o.max_abs_err or 0.0)
            worst_rel = max(worst_rel, o.max_rel_err or 0.0)
        compared += 1
    chk.max_abs_err, chk.max_rel_err = worst_abs, worst_rel
    if missing:
        chk.detail = "; ".join(missing)
        return
    chk.status = MATCH
    chk.detail = f"{compared} value(s)"


# ------------------------------------------------------------------ probes
def probe_label(target, spec: dict) -> str:
    args = ", ".join(argtree.describe(a) for a in spec["args"])
    if spec.get("kwargs"):
        args += (", " if args else "") + ", ".join(f"{k}={argtree.describe(v)}" for k, v in spec["kwargs"].items())
    label = f"{target.name}{'()' if target.construct else ''}({args})"
    if spec.get("group") == "recorded":
        label += f" [as called at line {spec['line']}" if spec.get("line") else " [as called by the program"
        label += ", variables as constants]" if spec.get("constants") else "]"
    return label


def probe_checks(targets, chosen, old_probes, new_res, new_fail, changed, rtol, atol):
    """One check per chosen probe of this variant's targets: TF2 eager and tf.function, both."""
    old = {p["id"]: p for p in old_probes}
    new = {p["id"]: p for p in (new_res or {}).get("probes", [])}
    unbound = set((new_res or {}).get("unbound") or ())
    by_name = {t.name: t for t in targets}
    checks = []
    for spec in chosen:
        target = by_name.get(spec["target"])
        if target is None or spec["id"] not in old:
            continue
        a, b = old[spec["id"]], new.get(spec["id"])
        chk = Check(probe_label(target, spec), "probe", UNVERIFIED, f"function: {TF1} vs {TF2_BOTH}",
                    line=target.line, new_line=target.new_line, target=target.name)
        if b is None:
            chk.detail = f"migrated side did not run the probe ({new_fail or 'no result'})"
            if new_fail and not INCONCLUSIVE.match(new_fail):
                chk.status, chk.detail = MISMATCH, f"migrated fails: {new_fail}"
        elif not b.get("ok"):
            why = needs_graph(b, changed, unbound)
            chk.status = UNVERIFIED if why else MISMATCH
            chk.detail = why or f"migrated raises {b.get('error')} (TF2 eager)"
        else:
            variants = [("TF2 eager: ", b)]
            if "tf_function" in b:
                variants.append(("inside tf.function: ", b["tf_function"]))
            else:
                fail = {"error": b.get("tf_function_error"), "error_line": b.get("tf_function_error_line")}
                why = needs_graph(fail, changed, unbound)
                chk.status = UNVERIFIED if why else MISMATCH
                chk.detail = why or f"migrated raises {fail['error']} inside tf.function"
            fill(chk, a, variants, rtol, atol)
        checks.append(chk)
    return checks


def fill(chk: Check, a: dict, variants: list, rtol, atol) -> None:
    """Compare forward values, then the VJP; every variant must agree with the original."""
    worst_abs, worst_rel = 0.0, 0.0
    for prefix, b in variants:
        fa, fb = a.get("fwd", []), b.get("fwd", [])
        ga, gb = a.get("grads", []), b.get("grads", [])
        o = compare_lists(fa, fb, [f"output {i}" for i in range(len(fa))], rtol, atol)
        if o.equal:
            o = compare_lists(ga, gb, [f"gradient of argument {i}" for i in range(len(ga))], rtol, atol)
        if not o.equal:
            chk.status = MISMATCH
            chk.detail = prefix + o.detail
            chk.max_abs_err, chk.max_rel_err = o.max_abs_err, o.max_rel_err
            return
        worst_abs = max(worst_abs, o.max_abs_err or 0.0)
        worst_rel = max(worst_rel, o.max_rel_err or 0.0)
    if chk.status != UNVERIFIED or chk.detail:
        return  # the tf.function run failed: already decided
    if not a.get("fwd") and not a.get("grads"):
        chk.detail = "no tensor output to compare"
        return
    chk.status = MATCH
    chk.max_abs_err, chk.max_rel_err = worst_abs, worst_rel
    chk.detail = f"{len(a.get('fwd', []))} output(s), VJP w.r.t. {len(a.get('grads', []))} argument(s)"


__all__ = ["Check", "INCONCLUSIVE", "MATCH", "MISMATCH", "UNVERIFIED", "TF1", "TF1_RESOURCE", "TF2", "align_records",
           "compare_record", "fill", "needs_graph", "probe_checks", "record_checks"]
