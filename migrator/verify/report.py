"""``tfgradmigrate verify``: what is verified, text/JSON output, exit codes (no TensorFlow here).

ORIGINAL and MIGRATED are two files (``.py`` or ``.ipynb``) or two folders
(files paired by relative path).  With ``--run CMD`` they are two trees and
the user's command is run in both (:mod:`.testrun`).

Exit codes: 0 every check matched; 1 some mismatch; 3 no mismatch but some
check unverified, or nothing could be compared; 2 usage error, or the
original (a single file) fails on its own.
"""
from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time

from migrator.verify import trees
from migrator.verify.checks import MATCH, MISMATCH, UNVERIFIED, Check
from migrator.verify.engine import OriginalFails, verify_groups

EXIT_MATCH, EXIT_MISMATCH, EXIT_USAGE, EXIT_UNVERIFIED = 0, 1, 2, 3
VERDICT = {EXIT_MATCH: "verified", EXIT_MISMATCH: "MISMATCH", EXIT_UNVERIFIED: "not fully verified"}


def _num(x) -> str:
    return "-" if x is None else f"{x:.3g}"


def _cells(text: str, staged, side: str) -> str:
    """Script line numbers in a notebook's labels and notes, as ``cell N:L``."""
    if staged is None or staged.old_cells is None:
        return text
    return re.sub(r"\bline (\d+)", lambda m: staged.where(int(m.group(1)), side), text)


def format_check(c: Check, staged=None) -> str:
    if staged is not None:
        where = f"{staged.where(c.line, 'original')} -> {staged.where(c.new_line, 'migrated')}"
    else:
        where = f"L{c.line or '?'} -> L{c.new_line or '?'}"
    head = f"{c.status.upper():<10} {where:<13} {_cells(c.label, staged, 'original')}"
    if c.status == MATCH:
        return f"{head}  [{c.mode}]  max abs err {_num(c.max_abs_err)}, max rel err {_num(c.max_rel_err)}"
    return f"{head}  [{_cells(c.mode, staged, 'migrated')}]  {_cells(c.detail, staged, 'migrated')}"


def exit_code(checks: list) -> int:
    if any(c.status == MISMATCH for c in checks):
        return EXIT_MISMATCH
    if not checks or any(c.status == UNVERIFIED for c in checks):
        return EXIT_UNVERIFIED
    return EXIT_MATCH


def nothing_compared(mode: str) -> Check:
    return Check("nothing compared", "run", UNVERIFIED, mode,
                 detail="neither a gradient computation nor a probe-able changed function was found")


def counts(checks: list) -> dict:
    return {s: sum(c.status == s for c in checks) for s in (MATCH, MISMATCH, UNVERIFIED)}


def _usage(msg: str, json_output: bool, out) -> int:
    if json_output:
        print(json.dumps({"error": f"usage error: {msg}", "exit_code": EXIT_USAGE}), file=out)
    else:
        print(f"usage error: {msg}", file=out)
    return EXIT_USAGE


def cli_verify(original: str, migrated: str, json_output: bool = False, rtol=None, atol=None, timeout=None,
               run=None, jobs=None, out=None, **run_options) -> int:
    out = out or sys.stdout
    for p in (original, migrated):
        if not os.path.exists(p):
            return _usage(f"no such file or folder: {p}", json_output, out)
    dirs = os.path.isdir(original), os.path.isdir(migrated)
    if dirs[0] != dirs[1]:
        return _usage("ORIGINAL and MIGRATED must be two files or two folders", json_output, out)
    if run is not None:
        if not dirs[0]:
            return _usage("--run needs two folders: the original tree and the migrated tree", json_output, out)
        from migrator.verify.testrun import cli_run

        return cli_run(original, migrated, run, json_output, rtol, atol, timeout, out, **run_options)
    if dirs[0]:
        pairing = trees.pair_trees(original, migrated)
        return _verify_tree(pairing, json_output, rtol, atol, timeout, jobs or 1, out, tree=True)
    if original.endswith(".ipynb") != migrated.endswith(".ipynb"):
        return _usage("a notebook is verified against a notebook", json_output, out)
    pairing = trees.Pairing(pairs=[(os.path.basename(migrated), original, migrated)])
    return _verify_tree(pairing, json_output, rtol, atol, timeout, 1, out, tree=False)


def _verify_tree(pairing, json_output, rtol, atol, timeout, jobs, out, tree: bool) -> int:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tfgm-verify-stage-") as work:
        staged, files = [], []
        for rel, o, m in pairing.pairs:
            try:
                staged.append(trees.stage(rel, o, m, work))
            except (trees.NotebookUnreadable, OSError) as exc:
                if not tree:
                    return _usage(f"{rel}: {exc}", json_output, out)
                files.append({"file": rel, "error": str(exc), "checks": [
                    Check("notebook", "run", UNVERIFIED, "-", detail=str(exc))], "skipped": []})
        homes = {k: v for s in staged for k, v in s.homes.items()}
        outcomes = verify_groups([(s.original, [s.migrated]) for s in staged], rtol, atol, timeout,
                                 shards=jobs, homes=homes)
    for s, res in zip(staged, outcomes):
        if isinstance(res, OriginalFails):
            if not tree:
                msg = f"original fails: {res}"
                if json_output:
                    print(json.dumps({"original": s.original, "migrated": s.migrated, "error": msg,
                                      "exit_code": EXIT_USAGE}), file=out)
                else:
                    print(msg, file=out)
                return EXIT_USAGE
            files.append({"file": s.rel, "staged": s, "checks": [
                Check("original run", "run", UNVERIFIED, "-", detail=f"original fails on its own: {res}")],
                "skipped": [], "modes": ("-", "-")})
            continue
        r = res[0]
        checks = list(r.checks) or [nothing_compared(f"{r.original_mode} vs {r.migrated_mode}")]
        files.append({"file": s.rel, "staged": s, "checks": checks, "skipped": r.skipped,
                      "modes": (r.original_mode, r.migrated_mode)})
    every = [c for f in files for c in f["checks"]]
    if tree and not files:
        every = [nothing_compared("-")]
    code = exit_code(every)
    seconds = time.monotonic() - started
    if json_output:
        _print_json(files, pairing, every, code, seconds, tree, out)
    else:
        _print_text(files, pairing, every, code, seconds, tree, out)
    return code


def _print_json(files, pairing, every, code, seconds, tree, out) -> None:
    items = []
    for f in files:
        modes = f.get("modes", ("-", "-"))
        item = {"file": f["file"], "original_mode": modes[0], "migrated_mode": modes[1],
                "checks": [_check_dict(c, f.get("staged")) for c in f["checks"]], "skipped": f["skipped"],
                "summary": counts(f["checks"]), "exit_code": exit_code(f["checks"])}
        if f.get("staged") is not None:
            item["original"], item["migrated"] = f["staged"].original, f["staged"].migrated
        items.append(item)
    if not tree and items:
        data = dict(items[0], summary=counts(every), seconds=round(seconds, 2), exit_code=code)
        data.pop("file", None)
        if files[0].get("staged") is not None and files[0]["staged"].old_cells is not None:
            data["original"], data["migrated"] = files[0]["staged"].original, files[0]["staged"].migrated
    else:
        data = {"files": items, "only_original": pairing.only_original, "only_migrated": pairing.only_migrated,
                "unchanged": pairing.unchanged, "summary": counts(every), "seconds": round(seconds, 2),
                "exit_code": code}
    print(json.dumps(data, indent=1), file=out)


def _check_dict(c: Check, staged) -> dict:
    d = c.as_dict()
    if staged is not None and staged.old_cells is not None:
        d["original_cell"] = staged.where(c.line, "original") if c.line else None
        d["migrated_cell"] = staged.where(c.new_line, "migrated") if c.new_line else None
    return d


def _print_text(files, pairing, every, code, seconds, tree, out) -> None:
    for f in files:
        indent = "  " if tree else ""
        if tree:
            print(f["file"], file=out)
        for c in f["checks"]:
            print(indent + format_check(c, f.get("staged")), file=out)
        for s in f["skipped"]:
            print(f"{indent}note: {_cells(s, f.get('staged'), 'migrated')}", file=out)
    if tree:
        for rel in pairing.only_original:
            print(f"note: {rel}: only in the original tree", file=out)
        for rel in pairing.only_migrated:
            print(f"note: {rel}: only in the migrated tree", file=out)
    n = counts(every)
    if tree:
        what = f"{len(files)} file(s) ({pairing.unchanged} unchanged not run), {len(every)} check(s)"
        modes = ""
    else:
        what = f"{len(every)} check(s)"
        m = files[0].get("modes", ("-", "-")) if files else ("-", "-")
        modes = f"original {m[0]}, migrated {m[1]}; "
    print(f"{VERDICT[code]}: {what}: {n[MATCH]} match, {n[MISMATCH]} mismatch, {n[UNVERIFIED]} unverified "
          f"({modes}{seconds:.1f} s)", file=out)
