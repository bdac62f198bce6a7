"""Shared helpers for the benchmark scripts (not a test module).

Everything here is stdlib only; the scripts run the tools as subprocesses so
start-up cost is included, exactly as a user (or pre-commit) pays it.
"""
from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)


def tool(name: str) -> str:
    """Path of a console script next to the running interpreter (the venv), or on PATH."""
    cand = os.path.join(BIN, name)
    if os.path.exists(cand):
        return cand
    found = shutil.which(name)
    if found is None:
        sys.exit(f"{name} not found next to {sys.executable} or on PATH")
    return found


def package_dir(name: str) -> Optional[str]:
    """Source folder of an installed package, found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def copy_py_tree(sources: Dict[str, str], dest: str) -> Tuple[int, int]:
    """Copy the ``.py`` files of each ``{label: folder}`` into ``dest/label``.

    Returns (files, lines).
    """
    files = lines = 0
    for label, src in sources.items():
        for root, dirs, names in os.walk(src):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            rel = os.path.relpath(root, src)
            out_dir = os.path.join(dest, label, rel)
            made = False
            for n in sorted(names):
                if not n.endswith(".py"):
                    continue
                if not made:
                    os.makedirs(out_dir, exist_ok=True)
                    made = True
                with open(os.path.join(root, n), "rb") as f:
                    data = f.read()
                with open(os.path.join(out_dir, n), "wb") as f:
                    f.write(data)
                files += 1
                lines += data.count(b"\n")
    return files, lines


def count_tree(path: str) -> Tuple[int, int]:
    files = lines = 0
    for root, dirs, names in os.walk(path):
        for n in names:
            if n.endswith(".py"):
                files += 1
                with open(os.path.join(root, n), "rb") as f:
                    lines += f.read().count(b"\n")
    return files, lines


class Timing:
    """Wall times of repeated runs of one command."""

    def __init__(self, label: str):
        self.label = label
        self.times: List[float] = []
        self.rcs: List[int] = []
        self.peak_rss: List[int] = []  # bytes, summed over the process tree
        self.cpu: List[float] = []  # user + sys seconds of the command and its children
        self.note = ""

    @property
    def min(self) -> float:
        return min(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)


def _tree_rss(pid: int) -> int:
    """Resident memory (bytes) of ``pid`` and all its descendants, from /proc."""
    children: Dict[int, List[int]] = {}
    rss: Dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0
    for e in entries:
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/stat", "rb") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
            with open(f"/proc/{e}/statm", "rb") as f:
                pages = int(f.read().split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(e))
        rss[int(e)] = pages * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo.extend(children.get(p, ()))
    return total


def run_cmd(cmd: Sequence[str], cwd: Optional[str] = None, sample_rss: bool = False,
            timeout: Optional[float] = None, env: Optional[dict] = None) -> Tuple[float, int, int, str]:
    """Run once; return (seconds, returncode, peak tree RSS bytes or 0, stderr tail)."""
    peak = [0]
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(list(cmd), cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    stop = threading.Event()

    def sampler():
        while not stop.is_set():
            peak[0] = max(peak[0], _tree_rss(proc.pid))
            stop.wait(0.05)

    th = None
    if sample_rss:
        th = threading.Thread(target=sampler, daemon=True)
        th.start()
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    dt = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    run_cmd.last_cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    stop.set()
    if th is not None:
        th.join()
    return dt, proc.returncode, peak[0], (err or b"").decode("utf-8", "replace")[-2000:]


run_cmd.last_cpu = 0.0


def repeat(label: str, cmd_factory, runs: int, sample_rss: bool = False, setup=None,
           timeout: Optional[float] = None, env: Optional[dict] = None) -> Timing:
    """Run ``cmd_factory()`` ``runs`` times (``setup()`` before each, untimed)."""
    t = Timing(label)
    for _ in range(runs):
        if setup is not None:
            setup()
        dt, rc, peak, err = run_cmd(cmd_factory(), sample_rss=sample_rss, timeout=timeout, env=env)
        t.times.append(dt)
        t.rcs.append(rc)
        t.peak_rss.append(peak)
        t.cpu.append(run_cmd.last_cpu)
        if rc not in (0, 1):
            t.note = f"exit {rc}: " + err.strip().splitlines()[-1][:200] if err.strip() else f"exit {rc}"
    return t


def table(rows: Iterable[Sequence[str]], header: Sequence[str]) -> str:
    rows = [list(map(str, r)) for r in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in rows)) if rows else len(str(h)) for i, h in enumerate(header)]
    out = ["| " + " | ".join(str(h).ljust(w) for h, w in zip(header, widths)) + " |",
           "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    for r in rows:
        out.append("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")
    return "\n".join(out)


def fmt_s(x: float) -> str:
    return f"{x:.3f} s" if x < 10 else f"{x:.1f} s"


def fmt_mb(b: int) -> str:
    return f"{b / 2**20:.0f} MiB"


def machine() -> str:
    import platform

    return f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, {platform.machine()}"


def tmpdir(prefix: str, keep: bool = False) -> str:
    d = tempfile.mkdtemp(prefix=prefix)
    if not keep:
        import atexit

        atexit.register(shutil.rmtree, d, True)
    return d
