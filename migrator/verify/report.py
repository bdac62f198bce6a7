"""``tfgradmigrate verify``: text/JSON output and exit codes (no TensorFlow here).

Exit codes: 0 every check matched; 1 some mismatch; 3 no mismatch but some
check unverified (or nothing could be compared); 2 usage error or the
original fails on its own.
"""
from __future__ import annotations

import json
import os
import sys

from migrator.verify.checks import MATCH, MISMATCH, UNVERIFIED, Check
from migrator.verify.engine import OriginalFails, verify_pair

EXIT_MATCH, EXIT_MISMATCH, EXIT_USAGE, EXIT_UNVERIFIED = 0, 1, 2, 3


def _num(x) -> str:
    return "-" if x is None else f"{x:.3g}"


def format_check(c: Check) -> str:
    where = f"L{c.line or '?'} -> L{c.new_line or '?'}"
    head = f"{c.status.upper():<10} {where:<13} {c.label}"
    if c.status == MATCH:
        return f"{head}  [{c.mode}]  max abs err {_num(c.max_abs_err)}, max rel err {_num(c.max_rel_err)}"
    return f"{head}  [{c.mode}]  {c.detail}"


def exit_code(checks: list) -> int:
    if any(c.status == MISMATCH for c in checks):
        return EXIT_MISMATCH
    if not checks or any(c.status == UNVERIFIED for c in checks):
        return EXIT_UNVERIFIED
    return EXIT_MATCH


def cli_verify(original: str, migrated: str, json_output: bool = False, rtol=None, atol=None, timeout=None,
               out=None) -> int:
    out = out or sys.stdout
    for p in (original, migrated):
        if not os.path.isfile(p):
            msg = f"usage error: no such file: {p}"
            if json_output:
                print(json.dumps({"error": msg, "exit_code": EXIT_USAGE}), file=out)
            else:
                print(msg, file=out)
            return EXIT_USAGE
    try:
        result = verify_pair(original, migrated, rtol=rtol, atol=atol, timeout=timeout)
    except OriginalFails as exc:
        msg = f"original fails: {exc}"
        if json_output:
            print(json.dumps({"original": original, "migrated": migrated, "error": msg, "exit_code": EXIT_USAGE}),
                  file=out)
        else:
            print(msg, file=out)
        return EXIT_USAGE
    checks = list(result.checks)
    if not checks:
        checks.append(Check("nothing compared", "run", UNVERIFIED, f"{result.original_mode} vs {result.migrated_mode}",
                            detail="neither a gradient computation nor a probe-able changed function was found"))
    code = exit_code(checks)
    counts = {s: sum(c.status == s for c in checks) for s in (MATCH, MISMATCH, UNVERIFIED)}
    if json_output:
        print(json.dumps({
            "original": original, "migrated": migrated,
            "original_mode": result.original_mode, "migrated_mode": result.migrated_mode,
            "checks": [c.as_dict() for c in checks], "skipped": result.skipped,
            "summary": counts, "seconds": round(result.seconds, 2), "exit_code": code,
        }, indent=1), file=out)
        return code
    for c in checks:
        print(format_check(c), file=out)
    for s in result.skipped:
        print(f"note: {s}", file=out)
    verdict = {EXIT_MATCH: "verified", EXIT_MISMATCH: "MISMATCH", EXIT_UNVERIFIED: "not fully verified"}[code]
    print(f"{verdict}: {len(checks)} check(s): {counts[MATCH]} match, {counts[MISMATCH]} mismatch, "
          f"{counts[UNVERIFIED]} unverified (original {result.original_mode}, migrated {result.migrated_mode}; "
          f"{result.seconds:.1f} s)", file=out)
    return code
