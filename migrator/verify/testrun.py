"""``tfgradmigrate verify --run CMD ORIGINAL_TREE MIGRATED_TREE``: differential runs of the user's tests.

CMD (for example ``pytest tests/``) runs twice, side by side: in the
original tree under TF1 graph semantics and in the migrated tree under TF2
(TF1-only names through ``compat.v1``, Session shim).  A ``sitecustomize``
on ``PYTHONPATH`` loads :mod:`.runtime` into every Python process of the
command, and ``PYTEST_PLUGINS`` loads :mod:`.pytest_plugin` into pytest.
Then three kinds of checks are made:

* **test**: each test's outcome on both sides;
* **value**: every gradient computed from a file of the tree, recorded with
  the test that computed it and the site (file and migrated region) it was
  computed at: the original ``tf.gradients`` result against the migrated
  ``tape.gradient`` result at the same site, in the same test;
* **site**: each migrated region, from the values computed in it and the
  outcomes and values of the tests that reached the function holding it.

This witnesses what lives in the callers: the ``logits`` a caller passes,
the override helper a project defines elsewhere, a registration used by
another module.  It is the way to verify a library.
"""
from __future__ import annotations

import difflib
import json
import os
import pickle
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

from migrator.verify import analysis, trees
from migrator.verify.checks import MATCH, MISMATCH, TF1, TF2, UNVERIFIED, Check, align_records, \
    compare_record, needs_graph
from migrator.verify.engine import DEFAULT_TIMEOUT, _REPO, _child_env

MODE = f"run: {TF1} vs {TF2}"
GAP = 3  # changed blocks this close (in unchanged lines) are one migrated region

_SITECUSTOMIZE = '''"""tfgradmigrate verify --run: load the verifier's runtime, then any other sitecustomize."""
import importlib.machinery, importlib.util, os, sys

sys.path.append({repo!r})
try:
    from migrator.verify import runtime as _tfgm_runtime
    _tfgm_runtime.install()
finally:
    _here = os.path.dirname(os.path.abspath(__file__))
    _spec = importlib.machinery.PathFinder.find_spec(
        "sitecustomize", [p for p in sys.path if os.path.abspath(p or ".") != _here])
    if _spec is not None and _spec.loader is not None:
        _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
'''


# ------------------------------------------------------------------ regions
@dataclass
class Regions:
    """Where a changed file's lines sit: in a migrated region (hunk) or on an unchanged line."""

    hunks: list = field(default_factory=list)  # [((o1, o2), (m1, m2))], 1-based, inclusive
    old_key: dict = field(default_factory=dict)  # original line -> key
    new_key: dict = field(default_factory=dict)  # migrated line -> key

    def key(self, line: int, side: str):
        return (self.old_key if side == "original" else self.new_key).get(line, ("line", line))


def regions(original: str, migrated: str) -> Regions:
    a, b = original.splitlines(), migrated.splitlines()
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    blocks = []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            continue
        if blocks and i1 - blocks[-1][1] <= GAP and j1 - blocks[-1][3] <= GAP:
            blocks[-1] = (blocks[-1][0], i2, blocks[-1][2], j2)
        else:
            blocks.append((i1, i2, j1, j2))
    out = Regions()
    for k, (i1, i2, j1, j2) in enumerate(blocks):
        out.hunks.append(((i1 + 1, max(i1 + 1, i2)), (j1 + 1, max(j1 + 1, j2))))
        for ln in range(i1 + 1, i2 + 1):
            out.old_key[ln] = ("hunk", k)
        for ln in range(j1 + 1, j2 + 1):
            out.new_key[ln] = ("hunk", k)
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            for d in range(i2 - i1):
                if i1 + d + 1 not in out.old_key:
                    out.old_key[i1 + d + 1] = ("line", j1 + d + 1)  # keyed by the migrated line number
                if j1 + d + 1 not in out.new_key:
                    out.new_key[j1 + d + 1] = ("line", j1 + d + 1)
    return out


def _holders(source: str, lines: tuple) -> list:
    """Module-level functions and classes whose span meets lines (a, b)."""
    return [name for name, (s, e) in analysis.function_spans(source).items() if s <= lines[1] and lines[0] <= e]


# ------------------------------------------------------------------ running
@dataclass
class SideRun:
    exit_code: object = None
    timed_out: bool = False
    outcomes: dict = field(default_factory=dict)
    records: list = field(default_factory=list)
    hits: dict = field(default_factory=dict)
    v1_names: dict = field(default_factory=dict)
    log: str = ""


def _env(side: str, tree: str, boot: str, out: str, functions: str) -> dict:
    env = _child_env()
    paths = [boot, tree] + ([os.path.join(tree, "src")] if os.path.isdir(os.path.join(tree, "src")) else [])
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    plugins = [p for p in os.environ.get("PYTEST_PLUGINS", "").split(",") if p.strip()]
    env.update({
        "PYTHONPATH": os.pathsep.join(paths),
        "TFGM_RUN_MODE": TF1 if side == "original" else TF2,
        "TFGM_RUN_ROOT": os.path.realpath(tree),
        "TFGM_RUN_OUT": out,
        "TFGM_RUN_FUNCTIONS": functions,
        "PYTEST_PLUGINS": ",".join(plugins + ["migrator.verify.pytest_plugin"]),
        # leave the user's trees as they were
        "PYTEST_ADDOPTS": (os.environ.get("PYTEST_ADDOPTS", "") + " -p no:cacheprovider").strip(),
    })
    return env


def _start(command: str, tree: str, env: dict, log: str):
    fh = open(log, "wb")
    proc = subprocess.Popen(command, shell=True, cwd=tree, env=env, stdin=subprocess.DEVNULL, stdout=fh,
                            stderr=subprocess.STDOUT, start_new_session=True)
    return proc, fh


def _collect(out: str, proc, fh, log: str, deadline: float) -> SideRun:
    side = SideRun()
    try:
        side.exit_code = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        side.timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    fh.close()
    with open(log, "rb") as f:
        side.log = f.read().decode("utf-8", "replace")[-4000:]
    for name in sorted(os.listdir(out)):
        if not name.endswith(".pickle"):
            continue
        with open(os.path.join(out, name), "rb") as f:
            data = pickle.load(f)
        side.outcomes.update(data["outcomes"])
        side.records += data["records"]
        for key, tests in data["hits"].items():
            side.hits.setdefault(key, set()).update(tests)
        side.v1_names.update(data.get("v1_names") or {})
    return side


def run_both(original: str, migrated: str, command: str, pairs: list, timeout=None) -> tuple:
    """Run ``command`` in both trees at once; (original SideRun, migrated SideRun, {rel: Regions})."""
    timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
    maps, holders = {}, {"original": {}, "migrated": {}}
    for rel, o, m in pairs:
        with open(o, "rb") as fa, open(m, "rb") as fb:
            src_o, src_m = fa.read().decode("utf-8-sig", "replace"), fb.read().decode("utf-8-sig", "replace")
        maps[rel] = regions(src_o, src_m)
        holders["original"][rel] = sorted({n for h, _ in maps[rel].hunks for n in _holders(src_o, h)})
        holders["migrated"][rel] = sorted({n for _, h in maps[rel].hunks for n in _holders(src_m, h)})
    with tempfile.TemporaryDirectory(prefix="tfgm-verify-run-") as work:
        boot = os.path.join(work, "boot")
        os.makedirs(boot)
        with open(os.path.join(boot, "sitecustomize.py"), "w", encoding="utf-8") as fh:
            fh.write(_SITECUSTOMIZE.format(repo=_REPO))
        started = {}
        for side, tree in (("original", original), ("migrated", migrated)):
            out = os.path.join(work, side)
            os.makedirs(out)
            functions = os.path.join(work, f"{side}.functions")
            with open(functions, "wb") as fh:
                pickle.dump(holders[side], fh)
            log = os.path.join(work, f"{side}.log")
            started[side] = (out, *_start(command, tree, _env(side, tree, boot, out, functions), log), log)
        deadline = time.monotonic() + timeout
        runs = {side: _collect(*started[side], deadline) for side in started}
    return runs["original"], runs["migrated"], maps


# ------------------------------------------------------------------ comparing
def _whole_command(run: SideRun) -> dict:
    """A command that is not pytest: the whole run is one test."""
    if run.outcomes:
        return run.outcomes
    outcome = "passed" if run.exit_code == 0 and not run.timed_out else "failed"
    tail = [ln for ln in run.log.strip().splitlines() if ln.strip()][-1:] or [""]
    return {"<command>": {"outcome": outcome, "where": None,
                          "error": None if outcome == "passed" else ("timed out" if run.timed_out else tail[0])}}


def test_checks(old: SideRun, new: SideRun, maps: dict, changed: dict) -> list:
    a, b = _whole_command(old), _whole_command(new)
    checks = []
    for test in sorted(set(a) | set(b)):
        x, y = a.get(test), b.get(test)
        chk = Check(test, "test", UNVERIFIED, MODE)
        if x is None or y is None:
            chk.detail = f"ran only on the {'original' if y is None else 'migrated'} tree"
        elif x["outcome"] == "skipped" and y["outcome"] == "skipped":
            continue
        elif x["outcome"] == "passed" and y["outcome"] == "passed":
            chk.status, chk.detail = MATCH, "passed in both"
        elif x["outcome"] == "passed":
            where = y.get("where")
            fail = {"error": y.get("error") or y["outcome"], "error_line": where[1] if where else None}
            why = needs_graph(fail, changed.get(where[0], set()) if where else set())
            chk.status = UNVERIFIED if why else MISMATCH
            at = f" ({where[0]}:{where[1]})" if where else ""
            chk.detail = why or f"passes on the original, {y['outcome']} on the migrated: {fail['error']}{at}"
            chk.file, chk.new_line = (where[0], where[1]) if where else (None, None)
        else:
            chk.detail = (f"{x['outcome']} on the original tree (TF1) itself: {x.get('error')}; "
                          f"{y['outcome']} on the migrated: not evidence either way")
        checks.append(chk)
    return checks


def value_checks(old: SideRun, new: SideRun, maps: dict, rtol, atol) -> tuple:
    """Gradients at the same site in the same test, original against migrated."""
    def key(rec, side):
        regs = maps.get(rec["file"])
        where = regs.key(rec["line"], side) if regs is not None else ("line", rec["line"])
        return rec.get("context", "<no test>"), rec["file"], where

    groups = {}
    for side, recs in (("original", old.records), ("migrated", new.records)):
        for rec in sorted(recs, key=lambda r: r["seq"]):
            groups.setdefault(key(rec, side), ({"original": [], "migrated": []}))[side].append(rec)
    checks, notes = [], []
    for (test, rel, _where), sides in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], str(kv[0][2]))):
        olds, news = sides["original"], sides["migrated"]
        pairs, only_old, only_new = align_records(olds, news)
        for i, j in pairs:
            x, y = olds[i], news[j]
            chk = Check(f"{x['kind']} -> {y['kind']} [{test}]", "value", UNVERIFIED, MODE, line=x["line"],
                        new_line=y["line"], file=rel)
            compare_record(chk, x, y, rtol, atol)
            checks.append(chk)
        for i in only_old:
            x = olds[i]
            checks.append(Check(f"{x['kind']} -> - [{test}]", "value", UNVERIFIED, MODE, line=x["line"], file=rel,
                                detail="the migrated run computed no gradient here in this test"))
        notes += [f"{rel}:{news[j]['line']}: migrated-only gradient ({news[j]['kind']}) in {test}; not compared"
                  for j in only_new]
    return checks, notes


def site_checks(maps: dict, values: list, tests: list, old: SideRun, new: SideRun) -> list:
    by_test = {}
    for c in tests + values:
        test = c.label if c.kind == "test" else c.label.rsplit(" [", 1)[-1].rstrip("]")
        by_test.setdefault(test, []).append(c)
    checks = []
    for rel, regs in sorted(maps.items()):
        for (o1, o2), (m1, m2) in regs.hunks:
            here = [c for c in values if c.file == rel and ((c.line and o1 <= c.line <= o2)
                                                            or (c.new_line and m1 <= c.new_line <= m2))]
            reached = set()
            for side in (old, new):
                for (f, _name), tests_ in side.hits.items():
                    if f == rel:
                        reached |= set(tests_)  # coarse: any test entering a function of the region
            reached_checks = [c for t in sorted(reached) for c in by_test.get(t, [])]
            chk = Check(f"migrated region {rel} L{o1}-{o2} -> L{m1}-{m2}", "site", UNVERIFIED, MODE, line=o1,
                        new_line=m1, file=rel)
            related = list({id(c): c for c in here + reached_checks}.values())
            bad = [c for c in related if c.status == MISMATCH]
            good = [c for c in related if c.status == MATCH and c.kind == "value"]
            if bad:
                chk.status, chk.detail = MISMATCH, f"{bad[0].label}: {bad[0].detail}"
            elif good:
                chk.status = MATCH
                chk.detail = f"{len(good)} gradient value(s) matched, in {len(reached) or len(here)} test(s)"
            elif reached or here:
                chk.detail = f"reached by {len(reached)} test(s), but no gradient was computed through it"
            else:
                chk.detail = "no test reached this region"
            checks.append(chk)
    return checks


def verify_run(original: str, migrated: str, command: str, rtol=None, atol=None, timeout=None) -> dict:
    pairing = trees.pair_trees(original, migrated)
    pairs = [(rel, o, m) for rel, o, m in pairing.pairs if rel.endswith(".py")]
    old, new, maps = run_both(original, migrated, command, pairs, timeout)
    changed = {rel: {ln for ln, k in regs.new_key.items() if k[0] == "hunk"} for rel, regs in maps.items()}
    tests = test_checks(old, new, maps, changed)
    values, notes = value_checks(old, new, maps, rtol, atol)
    sites = site_checks(maps, values, tests, old, new)
    if new.v1_names:
        used = ", ".join(f"{n} ({f}:{ln})" for n, (f, ln) in sorted(new.v1_names.items()))
        notes.append(f"TF1-only names resolved through tf.compat.v1 in the TF2 run: {used}")
    for side, run in (("original", old), ("migrated", new)):
        if run.timed_out:
            notes.append(f"the {side} run timed out")
        elif not run.outcomes and run.exit_code != 0:
            notes.append(f"the {side} run exited {run.exit_code}: {run.log.strip()[-300:]}")
    return {"tests": tests, "values": values, "sites": sites, "notes": notes, "pairing": pairing,
            "exit": {"original": old.exit_code, "migrated": new.exit_code}}


def cli_run(original: str, migrated: str, command: str, json_output: bool, rtol, atol, timeout, out) -> int:
    from migrator.verify.report import VERDICT, counts, exit_code, nothing_compared

    started = time.monotonic()
    res = verify_run(original, migrated, command, rtol, atol, timeout)
    every = res["tests"] + res["values"] + res["sites"] or [nothing_compared(MODE)]
    code = exit_code(every)
    seconds = time.monotonic() - started
    if json_output:
        print(json.dumps({"command": command, "original": original, "migrated": migrated,
                          "tests": [c.as_dict() for c in res["tests"]],
                          "values": [c.as_dict() for c in res["values"]],
                          "sites": [c.as_dict() for c in res["sites"]], "notes": res["notes"],
                          "exit_codes": res["exit"], "summary": counts(every), "seconds": round(seconds, 2),
                          "exit_code": code}, indent=1), file=out)
        return code
    for c in every:
        print(format_run_check(c), file=out)
    for n in res["notes"]:
        print(f"note: {n}", file=out)
    n = counts(every)
    print(f"{VERDICT[code]}: {len(res['tests'])} test(s), {len(res['values'])} gradient value(s), "
          f"{len(res['sites'])} migrated region(s): {n[MATCH]} match, {n[MISMATCH]} mismatch, "
          f"{n[UNVERIFIED]} unverified ({MODE}; {seconds:.1f} s)", file=out)
    return code


def format_run_check(c: Check) -> str:
    kind = {"test": "TEST", "value": "VALUE", "site": "SITE"}.get(c.kind, c.kind.upper())
    head = f"{c.status.upper():<10} {kind:<5}"
    if c.kind == "value":
        head += f" {c.file}:{c.line or '?'} -> {c.file}:{c.new_line or '?'}"
    text = f"{head} {c.label}"
    if c.status == MATCH and c.kind == "value":
        return f"{text}  max abs err {c.max_abs_err or 0:.3g}"
    return f"{text}  {c.detail}"


__all__ = ["Regions", "cli_run", "regions", "run_both", "verify_run"]

