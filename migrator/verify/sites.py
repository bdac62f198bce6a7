"""Verdicts for the rewriter's sites (parent process; no TensorFlow).

A ``tf_gradients``/``jacobian``/``hessians`` site gets the check of the
gradient computed at its line.  Any other site (an override block, a
registered gradient, a py_func) gets the checks of the function that
contains it, or else all the file's checks.  A site no check reached is
unverified, never a match.
"""
from __future__ import annotations

import dataclasses
import os
import tempfile

from migrator.verify import analysis, trees
from migrator.verify.checks import MATCH, MISMATCH, UNVERIFIED
from migrator.verify.engine import OriginalFails, PairResult, verify_groups

_GRADIENT_KINDS = {"tf_gradients", "jacobian", "hessians"}


def _aggregate(checks: list, mode_default: str) -> dict:
    if not checks:
        return {"status": UNVERIFIED, "max_abs_err": None, "mode": mode_default,
                "detail": "no gradient or probe reached this site"}
    bad = [c for c in checks if c.status == MISMATCH]
    if bad:
        c = bad[0]
        return {"status": MISMATCH, "max_abs_err": c.max_abs_err, "mode": c.mode, "detail": f"{c.label}: {c.detail}"}
    good = [c for c in checks if c.status == MATCH]
    unv = [c for c in checks if c.status == UNVERIFIED]
    if not good:
        return {"status": UNVERIFIED, "max_abs_err": None, "mode": checks[0].mode,
                "detail": f"{unv[0].label}: {unv[0].detail}"}
    modes = sorted({c.mode for c in good})
    detail = f"{len(good)} check(s) matched"
    if unv:
        detail += f"; {len(unv)} unverified ({unv[0].label}: {unv[0].detail})"
    return {"status": MATCH, "max_abs_err": max(c.max_abs_err or 0.0 for c in good),
            "mode": "; ".join(modes), "detail": detail}


def site_verifications(result: PairResult, sites: list) -> list:
    """One verification dict per site, aligned with ``sites``."""
    if result.original_error:
        return [{"status": UNVERIFIED, "max_abs_err": None, "mode": "-",
                 "detail": f"original fails: {result.original_error}"} for _ in sites]
    grads = [c for c in result.checks if c.kind == "gradient"]
    probes = [c for c in result.checks if c.kind == "probe"]
    runs = [c for c in result.checks if c.kind == "run"]
    try:
        with open(result.original, "rb") as fh:
            spans = analysis.function_spans(fh.read().decode("utf-8-sig", "replace"))
    except OSError:
        spans = {}
    claimed = set()
    out = []
    default_mode = f"{result.original_mode} vs {result.migrated_mode}"
    for site in sites:
        mine = []
        if getattr(site, "kind", None) in _GRADIENT_KINDS:
            hit = [c for c in grads if c.line == site.line and id(c) not in claimed]
            if not hit and site.new_line:
                hit = [c for c in grads if c.new_line and 0 <= c.new_line - site.new_line <= 15
                       and id(c) not in claimed]
            if hit:
                claimed.add(id(hit[0]))
                mine = [hit[0]]
        if not mine:
            owners = {name for name, (s, e) in spans.items() if s <= site.line <= e}
            mine = [c for c in probes if c.target in owners] or []
            if not mine:
                mine = [c for c in probes] + grads
        out.append(_aggregate(mine + runs, default_mode))
    return out


def _script_site(site, staged):
    """A notebook site (line within its cell, note "cell N") placed in the notebook's script."""
    cell = next((int(n.split()[1]) for n in site.notes if n.startswith("cell ") and n.split()[1].isdigit()), None)
    where = staged.old_cells.where
    line = where.index((cell, site.line)) + 1 if (cell, site.line) in where else 0
    return dataclasses.replace(site, line=line, new_line=None)


def verify_files(pairs: list, rtol=None, atol=None, timeout=None, jobs: int = 1) -> list:
    """Verify (original_path, migrated_path, sites) pairs (.py or .ipynb); one dict per site, per pair."""
    with tempfile.TemporaryDirectory(prefix="tfgm-verify-stage-") as work:
        staged, errors = [], {}
        for k, (o, m, _sites) in enumerate(pairs):
            try:
                staged.append(trees.stage(os.path.basename(m), o, m, work))
            except (trees.NotebookUnreadable, OSError) as exc:
                staged.append(None)
                errors[k] = str(exc)
        live = [k for k, st in enumerate(staged) if st is not None]
        homes = {a: b for st in staged if st is not None for a, b in st.homes.items()}
        try:
            outcomes = verify_groups([(staged[k].original, [staged[k].migrated]) for k in live], rtol, atol,
                                     timeout, shards=jobs, homes=homes)
        except OSError as exc:
            outcomes = [OriginalFails(f"cannot read: {exc}")] * len(live)
        by_pair = dict(zip(live, outcomes))
        out = []
        for k, (o, m, sites) in enumerate(pairs):
            res = by_pair.get(k, OriginalFails(errors.get(k, "not verified")))
            if isinstance(res, OriginalFails):
                res = [PairResult(o, m, original_error=str(res))]
            st = staged[k]
            if st is not None and st.old_cells is not None:
                sites = [_script_site(site, st) for site in sites]
            out.append(site_verifications(res[0], list(sites)))  # reads the original: inside the scratch folder
    return out
