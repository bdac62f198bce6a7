"""The verification engine (parent process; never imports TensorFlow).

``verify_pair`` runs both sides of one (original, migrated) pair, each in its
own child process (:mod:`.harness`), concurrently, and turns the two result
sets into *checks*: one per pair of captured gradient records (script mode)
and one per function probe (function mode).  ``verify_files`` maps checks
onto the rewriter's :class:`~migrator.model.Site` list.
"""
from __future__ import annotations

import difflib
import os
import pickle
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Optional

from migrator.verify import analysis, inputs
from migrator.verify.compare import compare_lists, compare_values

MATCH, MISMATCH, UNVERIFIED = "match", "mismatch", "unverified"
TF1, TF1_RESOURCE, TF2 = "tf1-graph", "tf1-graph+resource-variables", "tf2-eager"
DEFAULT_TIMEOUT = 300.0
_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_BOOT = (
    "import sys; sys.path.insert(0, {repo!r}); "
    "from migrator.verify.harness import main; main(sys.argv[1:])"
)


#: Errors that mean "this is TF1 code", not "this migration is wrong".
_TF1_ONLY_ERROR = re.compile(
    r"not supported when eager execution is enabled|module 'tensorflow' has no attribute|"
    r"eager execution.*placeholder|RefVariable|is not supported in eager mode|Session graph is empty"
)


class OriginalFails(Exception):
    """The original file does not run on its own (exit code 2)."""


@dataclass
class Check:
    """One compared value: a gradient record pair or a function probe."""

    label: str
    kind: str  # "gradient" | "probe" | "run"
    status: str
    mode: str
    detail: str = ""
    line: Optional[int] = None  # original line
    new_line: Optional[int] = None  # migrated line
    max_abs_err: Optional[float] = None
    max_rel_err: Optional[float] = None
    target: Optional[str] = None  # probed function

    def as_dict(self) -> dict:
        return {
            "label": self.label, "kind": self.kind, "status": self.status, "mode": self.mode,
            "detail": self.detail, "line": self.line, "new_line": self.new_line,
            "max_abs_err": self.max_abs_err, "max_rel_err": self.max_rel_err,
        }


@dataclass
class PairResult:
    original: str
    migrated: str
    checks: list = field(default_factory=list)
    original_mode: str = TF1
    migrated_mode: str = TF2
    original_error: Optional[str] = None  # set: the original fails on its own
    skipped: list = field(default_factory=list)  # probes not runnable on the original
    seconds: float = 0.0


# ------------------------------------------------------------------ children
def _child_env() -> dict:
    env = dict(os.environ)
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
    def __init__(self, request: dict, workdir: str, tag: str):
        self.req_path = os.path.join(workdir, f"{tag}.req")
        self.out_path = os.path.join(workdir, f"{tag}.out")
        self.log_path = os.path.join(workdir, f"{tag}.log")
        with open(self.req_path, "wb") as fh:
            pickle.dump(request, fh, protocol=4)
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT.format(repo=_REPO), self.req_path, self.out_path],
            cwd=os.path.dirname(os.path.abspath(request["path"])),
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, env=_child_env(),
            start_new_session=True,
        )
        self.timed_out = False

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
                return pickle.load(fh)
        return None

    def log_tail(self, n: int = 400) -> str:
        try:
            with open(self.log_path, "rb") as fh:
                data = fh.read().decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [ln for ln in data.strip().splitlines() if ln.strip()]
        return " | ".join(lines[-3:])[-n:]


def _failure(res: Optional[dict], child: _Child, timeout: float) -> Optional[str]:
    if child.timed_out:
        return f"timed out after {timeout:g} s"
    if res is None:
        return f"crashed (exit {child.proc.returncode}): {child.log_tail()}".strip()
    if not res.get("ok", False):
        where = f" (line {res['error_line']})" if res.get("error_line") else ""
        return f"{res.get('error') or 'failed'}{where}"
    return None


# ------------------------------------------------------------------ probes
def _probe_specs(original: str, migrated: str, src_old: str, src_new: str):
    """Probe requests shared by both sides, plus bookkeeping to choose later."""
    targets = analysis.probe_targets(src_old, src_new)
    config = inputs.load_config(migrated)
    config.update({k: v for k, v in inputs.load_config(original).items() if k not in config})
    specs, plan = [], []
    for t in targets:
        cands = config.get(t.name) or inputs.infer_candidates(t.params)
        ids = []
        for i, c in enumerate(cands):
            pid = f"{t.name}#{i}"
            specs.append({"id": pid, "target": t.name, "args": c["args"], "kwargs": c["kwargs"],
                          "construct": t.construct})
            ids.append(pid)
        plan.append((t, cands, ids))
    return specs, plan


def _describe(arg) -> str:
    shape = getattr(arg, "shape", None)
    if shape is not None:
        return f"{arg.dtype}{list(shape)}"
    return repr(arg)


def _probe_checks(plan, old_res, new_res, new_fail, modes, rtol, atol):
    old = {p["id"]: p for p in old_res.get("probes", [])}
    new = {p["id"]: p for p in (new_res or {}).get("probes", [])}
    checks, skipped = [], []
    for target, cands, ids in plan:
        ok = [bool(old.get(pid, {}).get("ok")) for pid in ids]
        chosen = inputs.choose(cands, ok)
        if not chosen:
            errs = [old.get(pid, {}).get("error") for pid in ids]
            skipped.append(f"not probed: {target.name}: no input worked on the original ({next((e for e in errs if e), '?')})")
            continue
        for ci in chosen:
            pid = ids[ci]
            args = ", ".join(_describe(a) for a in cands[ci]["args"])
            label = f"{target.name}{'()' if target.construct else ''}({args})"
            a, b = old[pid], new.get(pid)
            mode = f"function: {modes[0]} vs {modes[1]}"
            chk = Check(label, "probe", UNVERIFIED, mode, line=target.line, new_line=target.new_line,
                        target=target.name)
            if b is None:
                chk.detail = f"migrated side did not run the probe ({new_fail or 'no result'})"
                if new_fail and "timed out" not in new_fail:
                    chk.status = MISMATCH
                    chk.detail = f"migrated fails: {new_fail}"
            elif not b.get("ok"):
                chk.status = MISMATCH
                chk.detail = f"migrated raises {b.get('error')}"
            else:
                variants = [("", b)]
                if modes[1] == TF2:
                    if "tf_function" in b:
                        variants.append(("tf.function: ", b["tf_function"]))
                        chk.mode = f"function: {modes[0]} vs {TF2}+tf.function"
                    else:
                        chk.mode = f"function: {modes[0]} vs {TF2} (tf.function: {b.get('tf_function_error')})"
                _fill(chk, a, variants, rtol, atol)
            checks.append(chk)
    return checks, skipped


def _fill(chk: Check, a: dict, variants: list, rtol, atol) -> None:
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
    if not a.get("fwd") and not a.get("grads"):
        chk.detail = "no tensor output to compare"
        return
    chk.status = MATCH
    chk.max_abs_err, chk.max_rel_err = worst_abs, worst_rel
    n = len(a.get("grads", []))
    chk.detail = f"{len(a.get('fwd', []))} output(s), VJP w.r.t. {n} argument(s)"


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


def _record_checks(old_recs, new_recs, modes, new_fail, rtol, atol):
    """Checks for the original's gradient records, and notes on migrated-only ones."""
    mode = f"script: {modes[0]} vs {modes[1]}"
    pairs, _only_old, only_new = align_records(old_recs, new_recs)
    partner = dict(pairs)
    checks = []
    for i, a in enumerate(old_recs):
        j = partner.get(i)
        b = new_recs[j] if j is not None else None
        label = f"gradient #{i + 1} {a['kind']} -> " + (b["kind"] if b else "-")
        chk = Check(label, "gradient", UNVERIFIED, mode, line=a["line"], new_line=b["line"] if b else None)
        if b is None:
            if new_fail:
                chk.status = MISMATCH if "timed out" not in new_fail else UNVERIFIED
                chk.detail = f"migrated fails before computing it: {new_fail}"
            else:
                chk.detail = "only the original computed this gradient"
        else:
            _compare_record(chk, a, b, rtol, atol)
        checks.append(chk)
    notes = [f"migrated line {new_recs[j]['line']} computes a gradient ({new_recs[j]['kind']}) the original "
             f"has no counterpart for (an intermediate?); not compared" for j in only_new]
    return checks, notes


def _compare_record(chk: Check, a: dict, b: dict, rtol, atol) -> None:
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


# ------------------------------------------------------------------ pairs
def _read(path: str) -> str:
    with open(path, "rb") as fh:
        return fh.read().decode("utf-8-sig", "replace")


def verify_pair(original: str, migrated: str, rtol=None, atol=None, timeout=None) -> PairResult:
    """Run both sides and compare.  Raises OriginalFails, OSError."""
    return verify_variants(original, [migrated], rtol, atol, timeout, jobs=1)[0]


def verify_variants(original: str, migrated: list, rtol=None, atol=None, timeout=None, jobs: int = 1) -> list:
    """Verify several migrations of one original, running the original only once.

    The original runs with the union of every variant's probes, concurrently
    with up to ``jobs`` migrated children.  Returns one PairResult per
    variant.  Raises OriginalFails, OSError.
    """
    timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
    original = os.path.abspath(original)
    migrated = [os.path.abspath(m) for m in migrated]
    started = time.monotonic()
    src_old = _read(original)
    try:
        compile(src_old, original, "exec")
    except SyntaxError as exc:
        raise OriginalFails(f"SyntaxError: {exc.msg} (line {exc.lineno})") from None
    variants = []
    union = {}
    for m in migrated:
        src_new = _read(m)
        mode = TF1_RESOURCE if analysis.needs_tf1(src_new) else TF2
        specs, plan = _probe_specs(original, m, src_old, src_new)
        for spec in specs:
            union.setdefault(spec["id"], spec)
        variants.append((m, mode, specs, plan))
    with tempfile.TemporaryDirectory(prefix="tfgm-verify-") as work:
        # The original may sit in a scratch copy (``--verify``): its siblings are then found beside the
        # migrated file, after its own folder.
        extra = sorted({os.path.dirname(m) for m in migrated} - {os.path.dirname(original)})
        old_child = _Child({"path": original, "mode": TF1, "side": "original", "probes": list(union.values()),
                            "extra_path": extra}, work, "original")
        old_deadline = time.monotonic() + timeout
        outcomes = [None] * len(variants)
        running = []
        queue = list(enumerate(variants))
        while queue or running:
            while queue and len(running) < max(1, jobs):
                i, (m, mode, specs, _plan) = queue.pop(0)
                child = _Child({"path": m, "mode": mode, "side": "migrated", "probes": specs}, work, f"migrated{i}")
                running.append((i, child, time.monotonic() + timeout))
            i, child, deadline = running.pop(0)
            res = child.wait(deadline)
            m, mode, specs, plan = variants[i]
            errors = [_failure(res, child, timeout)] + [p.get("error") for p in (res or {}).get("probes", [])]
            if mode == TF2 and any(e and _TF1_ONLY_ERROR.search(e) for e in errors):
                # TF1-only code the static scan missed: run it the TF1 way instead.
                variants[i] = (m, TF1_RESOURCE, specs, plan)
                child = _Child({"path": m, "mode": TF1_RESOURCE, "side": "migrated", "probes": specs}, work,
                               f"migrated{i}b")
                res = child.wait(time.monotonic() + timeout)
            outcomes[i] = (child, res)
        old_res = old_child.wait(old_deadline)
    old_fail = _failure(old_res, old_child, timeout)
    if old_fail:
        raise OriginalFails(old_fail)
    results = []
    for (m, mode, _specs, plan), (new_child, new_res) in zip(variants, outcomes):
        result = PairResult(original, m, original_mode=TF1, migrated_mode=mode)
        new_fail = _failure(new_res, new_child, timeout)
        modes = (TF1, mode)
        checks, notes = _record_checks(old_res.get("records", []), (new_res or {}).get("records", []), modes,
                                       new_fail, rtol, atol)
        probe_checks, skipped = _probe_checks(plan, old_res, new_res, new_fail, modes, rtol, atol)
        skipped = notes + skipped
        checks += probe_checks
        if new_fail:
            status = UNVERIFIED if new_child.timed_out else MISMATCH
            checks.append(Check("migrated file run", "run", status, f"script: {modes[0]} vs {modes[1]}",
                                detail=f"migrated fails: {new_fail}", new_line=(new_res or {}).get("error_line")))
        result.checks = checks
        result.skipped = skipped
        result.seconds = time.monotonic() - started
        results.append(result)
    return results


# ------------------------------------------------------------------ sites
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


def _verify_one(job):
    original, migrated, sites, rtol, atol, timeout = job
    try:
        result = verify_pair(original, migrated, rtol, atol, timeout)
    except OriginalFails as exc:
        result = PairResult(original, migrated, original_error=str(exc))
    except OSError as exc:
        result = PairResult(original, migrated, original_error=f"cannot read: {exc}")
    return site_verifications(result, sites)


def verify_files(pairs: list, rtol=None, atol=None, timeout=None, jobs: int = 1) -> list:
    """Verify (original_path, migrated_path, sites) pairs; one dict per site."""
    jobs_list = [(o, m, list(s), rtol, atol, timeout) for o, m, s in pairs]
    if jobs <= 1 or len(jobs_list) <= 1:
        return [_verify_one(j) for j in jobs_list]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(_verify_one, jobs_list))
