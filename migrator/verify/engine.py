"""The verification engine (parent process; never imports TensorFlow).

``verify_variants`` verifies one or more migrations of one original.  Each
side runs in child processes (:mod:`.harness`), concurrently:

* the **original**, under TF1 graph semantics: its script (gradient
  records, and the arguments its probed functions receive) and every
  function probe;
* each **migrated** file under TF2: its script eagerly (TF1 spellings
  resolved through ``compat.v1``, Session shim) and the probes the original
  chose, eagerly and inside ``tf.function``.  Several variants share one
  child when ``batch`` is set;
* when the migrated script needs TF1 graph mode (feeds, variable
  collections...), it runs again in TF1 graph mode with resource variables:
  extra evidence for the script, never for the functions.

The results become checks (:mod:`.checks`); :mod:`.sites` maps them onto
the rewriter's :class:`~migrator.model.Site` list.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Optional

from migrator.verify import analysis, inputs
from migrator.verify.checks import (
    MISMATCH,
    TF1,
    TF1_RESOURCE,
    TF2,
    INCONCLUSIVE,
    UNVERIFIED,
    Check,
    needs_graph,
    probe_checks,
    record_checks,
)

DEFAULT_TIMEOUT = 300.0
_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_BOOT = (
    "import sys; sys.path.insert(0, {repo!r}); "
    "from migrator.verify.harness import main; main(sys.argv[1:])"
)


class OriginalFails(Exception):
    """The original file does not run on its own (exit code 2)."""


@dataclass
class PairResult:
    original: str
    migrated: str
    checks: list = field(default_factory=list)
    original_mode: str = TF1
    migrated_mode: str = TF2
    original_error: Optional[str] = None  # set: the original fails on its own
    skipped: list = field(default_factory=list)  # notes: probes not runnable on the original, ...
    seconds: float = 0.0


# ------------------------------------------------------------------ children
def _child_env(tmp: Optional[str] = None) -> dict:
    env = dict(os.environ)
    if tmp is not None:
        # a harness child ends with os._exit, so autograph's atexit never deletes its generated
        # modules (thousands a test run): a temp folder that goes with the run's work folder
        env["TMPDIR"] = tmp
    env.update({
        "PYTHONHASHSEED": "0",
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "TF_ENABLE_ONEDNN_OPTS": "0",
        "TF_DETERMINISTIC_OPS": "1",
        "CUDA_VISIBLE_DEVICES": env.get("TFGRADMIGRATE_VERIFY_DEVICES", ""),
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    return env


class _Child:
    def __init__(self, request: dict, workdir: str, tag: str, cwd: str):
        self.req_path = os.path.join(workdir, f"{tag}.req")
        self.out_path = os.path.join(workdir, f"{tag}.out")
        self.log_path = os.path.join(workdir, f"{tag}.log")
        with open(self.req_path, "wb") as fh:
            pickle.dump(request, fh, protocol=4)
        self.log = open(self.log_path, "wb")
        tmp = os.path.join(workdir, f"{tag}.tmp")
        os.makedirs(tmp, exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT.format(repo=_REPO), self.req_path, self.out_path],
            cwd=cwd, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, env=_child_env(tmp),
            start_new_session=True,
        )
        self.timed_out = False
        self.result = None

    def wait(self, deadline: float) -> Optional[dict]:
        try:
            self.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.timed_out = True
            self.proc.kill()
            self.proc.wait()
        finally:
            self.log.close()
        if os.path.exists(self.out_path):
            with open(self.out_path, "rb") as fh:
                self.result = pickle.load(fh)
        return self.result

    def log_tail(self, n: int = 400) -> str:
        try:
            with open(self.log_path, "rb") as fh:
                data = fh.read().decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [ln for ln in data.strip().splitlines() if ln.strip()]
        return " | ".join(lines[-3:])[-n:]

    def variant(self, i: int) -> Optional[dict]:
        """The result for the i-th file of this child's request, if it got that far."""
        items = (self.result or {}).get("variants") or []
        return items[i] if i < len(items) else None

    def failure(self, i: int, timeout: float) -> Optional[str]:
        """Why there is no usable result for file i (crash, timeout, harness error), else None.

        When the process died, the file it was running gets the crash; the files after it were not run
        (an inconclusive failure, like a timeout: see checks.INCONCLUSIVE).
        """
        res = self.variant(i)
        if (res or {}).get("timed_out") or (self.timed_out and res is None):
            return f"timed out after {timeout:g} s"
        done = len((self.result or {}).get("variants") or [])
        if res is None and i > done:
            return "not run: the verifier's process died on an earlier file"
        if res is None:
            if self.result and self.result.get("harness_error"):
                return f"verifier harness failed: {self.result['harness_error']}"
            return f"crashed (exit {self.proc.returncode}): {self.log_tail()}".strip()
        if res.get("harness_error"):
            return f"verifier harness failed: {res['harness_error']}"
        return None


def _run_failure(res: Optional[dict]) -> Optional[str]:
    """The error a file's own run ended with, with its line."""
    if not res or res.get("ok", True):
        return None
    where = f" (line {res['error_line']})" if res.get("error_line") else ""
    return f"{res.get('error') or 'failed'}{where}"


# ------------------------------------------------------------------ pairs
def _read(path: str) -> str:
    with open(path, "rb") as fh:
        return fh.read().decode("utf-8-sig", "replace")


def verify_pair(original: str, migrated: str, rtol=None, atol=None, timeout=None) -> PairResult:
    """Run both sides and compare.  Raises OriginalFails, OSError."""
    return verify_variants(original, [migrated], rtol, atol, timeout)[0]


def verify_variants(original: str, migrated: list, rtol=None, atol=None, timeout=None) -> list:
    """Verify several migrations of one original, running the original once.  Raises OriginalFails, OSError."""
    out = verify_groups([(original, migrated)], rtol, atol, timeout)[0]
    if isinstance(out, OriginalFails):
        raise out
    return out


@dataclass
class _Variant:
    path: str
    source: str
    targets: list
    changed: set  # migrated-side lines the migration changed
    script_in_tf2: bool  # the script can be witnessed eagerly


@dataclass
class _Group:
    original: str
    source: str
    variants: list
    probes: list  # probe specs for the original: configured and inferred, for every variant's targets
    record_targets: dict  # name -> kind: functions whose real arguments the original records
    error: Optional[str] = None  # the original cannot be compiled


def _plan(original: str, migrated: list) -> _Group:
    """Targets and changed lines per variant; the union of probes and targets for the original."""
    src_old = _read(original)
    group = _Group(original, src_old, [], [], {})
    try:
        compile(src_old, original, "exec")
    except SyntaxError as exc:
        group.error = f"SyntaxError: {exc.msg} (line {exc.lineno})"
        return group
    config = inputs.load_config(original)
    union = {}
    for m in migrated:
        src_new = _read(m)
        targets = analysis.probe_targets(src_old, src_new)
        _old_changed, new_changed = analysis.changed_lines(src_old, src_new)
        cfg = dict(config)
        cfg.update(inputs.load_config(m))
        for t in targets:
            group.record_targets[t.name] = t.kind
            for i, c in enumerate(cfg.get(t.name) or inputs.infer_candidates(t.params)):
                pid = f"{t.name}#{c['group']}#{i}"
                union.setdefault(pid, {"id": pid, "target": t.name, "args": c["args"], "kwargs": c["kwargs"],
                                       "group": c["group"], "construct": t.construct})
        group.variants.append(_Variant(m, src_new, targets, new_changed, not analysis.eager_silent(src_new)))
    group.probes = list(union.values())
    return group


def verify_groups(groups: list, rtol=None, atol=None, timeout=None, shards: int = 1, homes=None) -> list:
    """Verify (original, [migrated, ...]) groups; per group a list of PairResult, or an OriginalFails.

    The groups are split into ``shards`` run side by side.  In a shard, one
    child runs every original (TF1 graph) and one child every migrated file
    (TF2), one after the other, the second picking up each original's probes
    as soon as they are chosen; a third child runs the migrated scripts
    that need TF1 graph mode.  ``timeout`` applies to each file.  ``homes``
    maps a file to the folder it runs in and imports from, when that is not
    its own (a notebook's script).
    """
    timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
    started = time.monotonic()
    plans = [_plan(os.path.abspath(o), [os.path.abspath(m) for m in ms]) for o, ms in groups]
    live = [i for i, p in enumerate(plans) if p.error is None and p.variants]
    n = max(1, min(shards, len(live)))
    split = [live[k::n] for k in range(n)] if live else []
    with tempfile.TemporaryDirectory(prefix="tfgm-verify-") as work:
        runs = [_Shard(plans, idx, work, f"s{k}", timeout, homes or {}) for k, idx in enumerate(split)]
        for r in runs:
            r.start_tf2()
        for r in runs:
            r.wait_main()
        for r in runs:
            r.start_fallback()
        for r in runs:
            r.wait_fallback()
    out = []
    for gi, plan in enumerate(plans):
        if plan.error is not None:
            out.append(OriginalFails(plan.error))
        elif gi not in live:
            out.append([])
        else:
            shard = next(r for r in runs if gi in r.groups)
            out.append(shard.results(gi, rtol, atol, started))
    return out


class _Shard:
    """The children that verify some of the groups."""

    def __init__(self, plans: list, groups: list, work: str, tag: str, timeout: float, homes: dict):
        self.plans, self.groups, self.work, self.tag, self.timeout = plans, groups, work, tag, timeout
        self.homes = {os.path.abspath(k): v for k, v in homes.items()}
        self.items = [(g, v) for g in groups for v in range(len(plans[g].variants))]
        variants = []
        for g in groups:
            plan = plans[g]
            # The original may sit in a scratch copy (``--verify``): its siblings are then found beside
            # the migrated files, after its own folder.
            extra = sorted({os.path.dirname(v.path) for v in plan.variants} - {os.path.dirname(plan.original)})
            variants.append({"key": g, "path": plan.original, "as_main": True, "probes": plan.probes,
                             "record_targets": plan.record_targets, "extra_path": extra,
                             "inputs_out": self._inputs(g), "home": self.homes.get(plan.original)})
        self.old = _Child({"mode": TF1, "side": "original", "timeout": timeout, "variants": variants}, work,
                          f"{tag}-original", os.path.dirname(plans[groups[0]].original))
        self.tf2 = self.tf1 = None
        self.fallback = []

    def _inputs(self, g: int) -> str:
        return os.path.join(self.work, f"{self.tag}-inputs{g}.pickle")

    def _deadline(self, n: int) -> float:
        return time.monotonic() + self.timeout * max(1, n) * 2 + 30

    def _var(self, g: int, v: int) -> _Variant:
        return self.plans[g].variants[v]

    def start_tf2(self) -> None:
        variants = [{"key": [g, v], "path": self._var(g, v).path, "as_main": self._var(g, v).script_in_tf2,
                     "targets": [t.name for t in self._var(g, v).targets], "inputs_in": self._inputs(g),
                     "home": self.homes.get(self._var(g, v).path)} for g, v in self.items]
        self.tf2 = _Child({"mode": TF2, "side": "migrated", "timeout": self.timeout, "original_pid": self.old.proc.pid,
                           "variants": variants}, self.work, f"{self.tag}-tf2", os.path.dirname(variants[0]["path"]))

    def wait_main(self) -> None:
        self.tf2.wait(self._deadline(len(self.items) + len(self.groups)))
        self.old.wait(self._deadline(len(self.groups)))

    def start_fallback(self) -> None:
        """Migrated scripts that need TF1 graph mode run there too (extra evidence for the script)."""
        for pos, (g, v) in enumerate(self.items):
            var, res = self._var(g, v), self.tf2.variant(pos)
            if not var.script_in_tf2 or (self.tf2.failure(pos, self.timeout) is None and res
                                         and res.get("ok") is False
                                         and needs_graph(res, var.changed, set(res.get("unbound") or ()))):
                self.fallback.append((g, v))
        if self.fallback:
            variants = [{"key": [g, v], "path": self._var(g, v).path, "as_main": True,
                         "home": self.homes.get(self._var(g, v).path)} for g, v in self.fallback]
            self.tf1 = _Child({"mode": TF1_RESOURCE, "side": "migrated", "timeout": self.timeout,
                               "variants": variants}, self.work, f"{self.tag}-tf1rv",
                              os.path.dirname(variants[0]["path"]))

    def wait_fallback(self) -> None:
        if self.tf1 is not None:
            self.tf1.wait(self._deadline(len(self.fallback)))

    def results(self, g: int, rtol, atol, started: float):
        gpos = self.groups.index(g)
        old_res = self.old.variant(gpos)
        old_fail = self.old.failure(gpos, self.timeout) or _run_failure(old_res)
        if old_fail:
            return OriginalFails(old_fail)
        plan = self.plans[g]
        out = []
        for v, var in enumerate(plan.variants):
            pos = self.items.index((g, v))
            fb = (self.tf1, self.fallback.index((g, v))) if (g, v) in self.fallback else None
            result = PairResult(plan.original, var.path, original_mode=TF1, migrated_mode=TF2)
            result.checks, result.skipped = _checks(var, old_res, (self.tf2, pos), fb, self.timeout, rtol, atol)
            if fb is not None:
                result.migrated_mode = f"{TF2} (script: {TF1_RESOURCE})"
            result.seconds = time.monotonic() - started
            out.append(result)
        return out


def _checks(v: _Variant, old_res: dict, tf2: tuple, tf1: Optional[tuple], timeout: float, rtol, atol):
    child, k = tf2
    res = child.variant(k) or {}
    crash = child.failure(k, timeout)
    notes = []
    if res.get("v1_names"):
        used = ", ".join(f"{n} (line {ln})" for n, (_f, ln) in sorted(res["v1_names"].items(), key=lambda x: x[1][1]))
        notes.append(f"TF1-only names resolved through tf.compat.v1 in the TF2 run: {used}")
    # script mode
    script_res, script_mode, script_crash = res, f"script: {TF1} vs {TF2}", crash
    if tf1 is not None:
        script_res = tf1[0].variant(tf1[1]) or {}
        script_crash = tf1[0].failure(tf1[1], timeout)
        why = needs_graph(res, v.changed, set(res.get("unbound") or ())) if res.get("ok") is False else None
        script_mode = f"script: {TF1} vs {TF1_RESOURCE} (extra evidence; " + (
            f"TF2 run: {why})" if why else "uses TF1 APIs that run differently under eager execution)")
    script_fail = script_crash or _run_failure(script_res)
    checks, rec_notes = record_checks(old_res.get("records", []), script_res.get("records", []), script_mode,
                                      script_fail, rtol, atol)
    notes += rec_notes
    if script_fail:
        status = UNVERIFIED if INCONCLUSIVE.match(script_fail) else MISMATCH
        checks.append(Check("migrated file run", "run", status, script_mode, detail=f"migrated fails: {script_fail}",
                            new_line=script_res.get("error_line")))
    # function mode: always TF2, eager and tf.function
    chosen = res.get("chosen") if "chosen" in res else old_res.get("chosen", [])
    checks += probe_checks(v.targets, chosen or [], old_res.get("probes", []), res if not crash else None,
                           crash, v.changed, rtol, atol)
    notes += _unprobed(v.targets, chosen or [], old_res)
    return checks, notes


def _unprobed(targets: list, chosen: list, old_res: dict) -> list:
    probed = {s["target"] for s in chosen}
    errors = {}
    for p in old_res.get("probes", []):
        name = p["id"].split("#")[0].split("@")[0]
        if not p.get("ok") and p.get("error"):
            errors.setdefault(name, p["error"])
    out = []
    for t in targets:
        if t.name not in probed:
            out.append(f"not probed: {t.name}: no input worked on the original ({errors.get(t.name, '?')})")
    unrep = old_res.get("unreproducible") or {}
    for name, why in unrep.items():
        out.append(f"calls of {name} by the program not replayed: {why}")
    return out
