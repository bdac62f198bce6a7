"""Running the pipeline over many files.

Pass 1 reads every file's bytes, skips those the byte prefilter rules out,
and indexes the rest (``RunIndex``, stdlib ``ast`` only).  Pass 2 migrates
the files holding override blocks or registrations first, records the
modules whose overrides stayed manual, then migrates the rest, so that a
tf.gradients call is never moved to a tape while an override still governs
it.  Files are processed in a process pool, where the halves overlap (see
``_Workers``); results come back in discovery order, and a file that crashes
is reported as that file's error.
"""
from __future__ import annotations

import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

from migrator import files
from migrator.model import IGNORED, MANUAL, OVERRIDE_MAP, PY_FUNC_GRADIENT, REGISTER_GRADIENT, FileResult
from migrator.pipeline import (
    ALIAS_LINE, ASKED_ALL, Options, RunIndex, import_names, imported_modules, may_have_sites, module_names_for,
)
from migrator.patches import gradients_patch_lines
from migrator.astwalk import import_statements
from migrator.project import MAX_BYTES as PROJECT_MAX_BYTES, Project, find_root, project_for

WRITE, DIFF, CHECK = "write", "diff", "check"
OVERRIDE_KINDS = frozenset({OVERRIDE_MAP, REGISTER_GRADIENT, PY_FUNC_GRADIENT})


@dataclass
class RunOptions:
    mode: str = WRITE
    options: Options = field(default_factory=Options)
    jobs: int = 1
    max_bytes: int = files.MAX_BYTES
    keep_text: bool = False  # keep original/migrated text of changed files (diffs, html, verify)


@dataclass
class RunResult:
    results: list[FileResult]
    seconds: float = 0.0

    @property
    def errors(self) -> list[FileResult]:
        return [r for r in self.results if r.error]

    def summary(self, mode: str) -> dict:
        sites = [s for r in self.results for s in r.sites]
        return {
            "mode": mode,
            "files_scanned": len(self.results),
            "files_changed": sum(r.changed for r in self.results),
            "sites_migrated": sum(s.migrated for s in sites),
            "sites_manual": sum(s.status == MANUAL for s in sites),
            "sites_ignored": sum(s.status == IGNORED for s in sites),
            "sites_unsafe": sum(s.unsafe for s in sites),
            "errors": len(self.errors),
            "seconds": round(self.seconds, 3),
        }


def is_notebook(path: str) -> bool:
    return path.endswith(".ipynb")


def migrate_file(path: str, index: RunIndex, run: RunOptions) -> FileResult:
    """Pass 2 for one file; never raises."""
    try:
        return _migrate_file(path, index, run)
    except Exception as e:  # noqa: BLE001 - one bad file must not end the run
        return FileResult(path, error=f"{path}:1:1: internal error: {type(e).__name__}: {e}")


def _migrate_source(src: files.Source, path: str, index: Optional[RunIndex], run: RunOptions) -> tuple[str, str, list]:
    """(original text, migrated text, sites) of one file; raises FileError."""
    from migrator import pipeline
    from migrator.notebook import migrate_notebook

    text = src.text
    if is_notebook(path):
        new, sites = migrate_notebook(text, path, index, run.options)
    else:
        new, sites = pipeline.migrate_text(text, path, index, run.options)
    if new != text:
        src.encode(new)  # raises FileError now, in every mode: a report must not call unwritable sites migrated
    return text, new, sites


def migrate_bytes(raw: bytes, path: str, run: RunOptions) -> tuple[FileResult, bytes]:
    """Migrate one file that is not on disk (standard input); returns its result and new bytes.

    ``path`` is the name messages use and decides the notebook format.  Never
    raises and writes nothing; a file with an error comes back as it was.
    """
    try:
        if len(raw) > run.max_bytes:
            raise files.FileError(f"file too large ({len(raw)} bytes; the limit is {run.max_bytes}), left untouched")
        if not may_have_sites(raw):
            return FileResult(path), raw
        src = files.Source(path, raw, size=len(raw))
        # facts about the project around it; for a bare `-`, the project of the working directory (with
        # no project, a registration another file names would look unused: found by an adversarial run)
        index = RunIndex(root=find_root([path if path != "-" else os.path.join(os.getcwd(), "-")]))
        _index_text(index, path, src.text)
        text, new, sites = _migrate_source(src, path, index, run)
        data = src.encode(new) if new != text else raw
    except files.FileError as e:
        return FileResult(path, error=e.format(path)), raw
    except Exception as e:  # noqa: BLE001 - report it like any file's crash
        return FileResult(path, error=f"{path}:1:1: internal error: {type(e).__name__}: {e}"), raw
    result = FileResult(path, changed=new != text, sites=sites)
    if run.keep_text and (result.changed or sites):
        result.original, result.migrated = text, new
    return result, data


def _migrate_file(path: str, index: RunIndex, run: RunOptions) -> FileResult:
    try:
        src = files.read_source(path, run.max_bytes)
        if not may_have_sites(src.raw) and path not in index.alias_importers:
            return FileResult(path)
        text, new, sites = _migrate_source(src, path, index, run)
    except files.FileError as e:  # ParseError and NotebookError are FileErrors
        return FileResult(path, error=e.format(path))
    result = FileResult(path, changed=new != text, sites=sites)
    if result.changed and run.mode == WRITE:
        try:
            files.write_source(src, new)
        except files.FileError as e:
            result.changed = False
            result.error = e.format(path)
    if run.keep_text and (result.changed or sites):  # diffs, the HTML report's context, verify
        result.original, result.migrated = text, new
    return result


def index_file(path: str, max_bytes: int, prefilter: bool = True) -> tuple[Optional[RunIndex], bool, Optional[list[int]]]:
    """Pass 1 for one file: (its index, whether it holds overrides, the lines where it replaces
    ``tf.gradients``), or (None, False, lines) when the prefilter rules it out.

    Never raises: a file that cannot be read or indexed gets an empty index,
    and pass 2 reports why.  The patch lines are the project's answer for this
    file (:meth:`Project.gradients_patches`), found here, in the pool, rather
    than by reading the whole tree again after pass 1; None: not looked at (a
    notebook, or a file the project reads differently).
    """
    try:
        src = files.read_source(path, max_bytes)
        if prefilter and not may_have_sites(src.raw):
            return None, False, _patch_lines_on_disk(path, src.raw)
        part = RunIndex()
        _index_text(part, path, src.text)
    except Exception:  # noqa: BLE001 - pass 2 reports it
        return RunIndex(), False, None
    lines = None if is_notebook(path) else gradients_patch_lines(src.text)
    return part, b"gradient_override_map" in src.raw or b"RegisterGradient" in src.raw, lines


def _patch_lines_on_disk(path: str, raw: bytes) -> Optional[list[int]]:
    """What the project finds in a file the run leaves alone, read as it reads it."""
    if is_notebook(path) or len(raw) > PROJECT_MAX_BYTES:
        return None
    if b"gradients" not in raw and b"_GradientsHelper" not in raw:
        return []  # the words are ASCII: absent from the bytes, absent from any decoding of them
    return gradients_patch_lines(raw.decode("utf-8-sig", "replace"))


def _index_text(index: RunIndex, path: str, text: str) -> None:
    """Pass-1 facts of one file's text (a notebook's code cells, joined)."""
    if is_notebook(path):
        from migrator.notebook import notebook_code

        text = notebook_code(text)
    index.add_file(path, text)


def _index_all(paths: list[str], run_opts: RunOptions, progress=None) -> list[tuple]:
    """Pass 1 over every file, in a pool when the run is big enough to gain from one."""
    jobs = min(run_opts.jobs, len(paths) // 50)
    if jobs > 1:
        out = []
        try:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                chunk = max(1, len(paths) // (jobs * 8))
                parts = pool.map(index_file, paths, [run_opts.max_bytes] * len(paths), chunksize=chunk)
                _preload_plugins()  # while the workers index: pass 2's pool forks with libcst loaded
                for part in parts:
                    out.append(part)
                    if progress:
                        progress(1)
            return out
        except BrokenProcessPool:
            paths = paths[len(out):]  # a worker died: index the rest in this process instead
    else:
        out = []
    for p in paths:
        out.append(index_file(p, run_opts.max_bytes))
        if progress:
            progress(1)
    return out


def run(paths: list[str], run_opts: RunOptions, progress: Optional[Callable[[int], None]] = None) -> RunResult:
    """Migrate ``paths`` (already discovered files) and return results in order.

    ``progress(n)`` is called as files are done: once per file in pass 1 and
    once per file in pass 2, so a bar of ``2 * len(paths)`` steps moves evenly.
    """
    start = time.monotonic()
    index = RunIndex(root=find_root(paths))
    results: dict[str, FileResult] = {}
    first, rest = [], []
    patched: dict[str, list[int]] = {}  # pass 1's answers for Project.gradients_patches
    ruled_out = []
    for path, (part, overrides, lines) in zip(paths, _index_all(paths, run_opts, progress)):
        if lines is not None:
            patched[os.path.abspath(path)] = lines
        if part is None:
            ruled_out.append(path)
            continue
        index.merge(part)
        (first if overrides else rest).append(path)
    for path in _alias_importers(index, ruled_out + sorted(index.quiet_paths & set(rest))):
        if path in ruled_out:  # read after all: it calls a gradient API under a project's name for it
            ruled_out.remove(path)
            part, _overrides, _lines = index_file(path, run_opts.max_bytes, prefilter=False)
            index.merge(part)
            rest.append(path)
        index.quiet_paths.discard(path)
        index.alias_importers.add(path)
    for path in ruled_out:
        results[path] = FileResult(path)
        if progress:
            progress(1)  # nothing for pass 2 to do
    if len(first) + len(rest) > len(index.quiet_paths):  # some file may hold a gradient call
        index.gradients_patches = Project(index.root, index.sources).gradients_patches(patched)
    select = run_opts.options.select
    skipped = select is not None and "overrides" not in select  # --select gradients: maps stay

    def left_manual(res: FileResult) -> bool:
        # an acknowledged (ignored) override is still not migrated: it still governs gradients
        return skipped or bool(res.error) or any(s.kind in OVERRIDE_KINDS and not s.migrated for s in res.sites)

    with _Workers(index, run_opts, len(first) + len(rest)) as workers:  # one pool for both halves
        for res in workers.run_halves(first, rest, left_manual, progress):
            results[res.path] = res
    return RunResult([results[p] for p in paths], time.monotonic() - start)


def _alias_importers(index: RunIndex, paths: list[str]) -> list[str]:
    """Those of ``paths`` (files no gradient API word made candidates) that import a gradient
    API a project module hands on under another name (``from ops import grad``)."""
    if not paths or index.root is None:
        return []
    project = project_for(index)
    if not any(project.grep(w, ALIAS_LINE) != [] for w in (b"gradients", b"hessians", b"jacobian")):
        return []  # no module hands on an API under another name (most trees): libcst stays unloaded
    from migrator.project_alias import alias_exporters, uses_exported_alias

    exporters = alias_exporters(project, ALIAS_LINE)
    if not exporters:
        return []  # (None: the project is too big to search; such files stay unread, a limit)
    return [p for p in paths if not is_notebook(p) and uses_exported_alias(project, p, exporters)]


class _Workers:
    """Pass 2: the files with overrides (``first``), then the rest; the gradient checks of both
    must know the modules whose overrides stayed manual (``RunIndex.manual_override_modules``).

    Every file runs on a guess first, recording the module names its checks ask about
    (``RunIndex.asked``), and runs again, knowing them, only where the guess was wrong for one
    of those names: the first half on "none stayed manual", the rest -- in a pool, alongside the
    first half -- on "every override pass 1 saw stayed manual" (as in most large trees).  A run
    on a guess writes nothing: when files are rewritten in place, the first half runs once to
    learn, once to write, and the rest after it (the pool and -j 1 give the same outcome)."""

    def __init__(self, index: RunIndex, run_opts: RunOptions, n: int) -> None:
        self.index, self.run_opts = index, run_opts
        self.jobs = min(run_opts.jobs, n)
        self.pool: Optional[ProcessPoolExecutor] = None
        self.counted: set[str] = set()  # files the progress callback was told about

    def __enter__(self) -> "_Workers":
        if self.jobs > 1:
            _preload_plugins()
        return self

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.shutdown()

    def run_halves(self, first: list[str], rest: list[str], left_manual, progress) -> list[FileResult]:
        writes = self.run_opts.mode == WRITE
        none: frozenset = frozenset()
        seen = {r.path for regs in self.index.registrations.values() for r in regs}
        guess = frozenset(self.index.override_modules | _modules(seen))
        # in a pool, files that import no module of the guess run alongside the first half (what
        # they ask about is mostly what they import); the others wait for it: run on a guess, a
        # tree whose overrides mostly migrate ran twice (the synthetic tree: -j 2 as slow as -j 1)
        ahead = [p for p in rest if not _may_import(self.index.sources.get(p, ""), guess)] \
            if self.jobs > 1 and not writes else []
        work = [(p, none, True, writes) for p in first] + [(p, guess, True, False) for p in ahead]
        ran = self._run(work, progress)
        manual = frozenset(_modules(p for p in first if left_manual(ran[p][0])))
        again = [(p, manual, False, False) for p in first if writes or _guessed_wrong(ran[p][1], none, manual)]
        again += [(p, manual, False, False) for p in rest if p not in ran or _guessed_wrong(ran[p][1], guess, manual)]
        ran.update(self._run(again, progress))
        return [ran[p][0] for p in first + rest]

    def _run(self, work: list[tuple], progress) -> dict[str, tuple]:
        """{path: (result, module names asked about)} for (path, manual modules, whether that is a
        guess, whether to write nothing); ``progress(1)`` once per file, the first time it is done."""
        done: dict[str, tuple] = {}

        def finished(path: str, out: tuple) -> None:
            done[path] = out
            if progress and path not in self.counted:
                self.counted.add(path)
                progress(1)

        if self.jobs <= 1 or len(work) <= 1:
            for w in work:
                finished(w[0], _migrate_one(self.index, self.run_opts, *w))
            return done
        sizes = self.index.sources
        work = sorted(work, key=lambda w: -len(sizes.get(w[0], "")))  # the longest first: a shorter tail
        try:
            if self.pool is None:  # the first call, or the pool broke
                self.pool = _pool(self.jobs, self.index, self.run_opts)
            futures = {w[0]: self.pool.submit(_migrate_in_worker, *w) for w in work}
            for p, fut in futures.items():
                try:
                    finished(p, fut.result())
                except BrokenProcessPool:
                    break
        except BrokenProcessPool:
            pass
        if len(done) < len(work):
            self.pool = None  # broken: a later call starts a fresh one
        for w in work:  # a worker died (not an exception): retry the rest one by one
            if w[0] not in done:
                finished(w[0], _isolated(w, self.index, self.run_opts))
        return done


def _modules(paths) -> set[str]:
    return set().union(*(module_names_for(p) for p in paths))


def _may_import(text: str, modules: frozenset) -> bool:
    """Whether a file imports one of ``modules``, read from its import lines alone (the whole
    file parsed took 0.1 s of a 1 s run on TF's ops): it only orders the work."""
    if not modules:
        return False
    nodes = import_statements(text)
    if nodes is None:
        return bool(imported_modules(text) & modules)
    return any(import_names(n) & modules for n in nodes)


def _guessed_wrong(asked: frozenset, guess: frozenset, manual: frozenset) -> bool:
    """Whether a file run on ``guess`` asked about a module the guess got wrong."""
    return guess != manual if ASKED_ALL in asked else bool(asked & (guess ^ manual))


def _migrate_one(index: RunIndex, run_opts: RunOptions, path: str, manual: frozenset, guess: bool,
                 dry: bool) -> tuple[FileResult, frozenset]:
    """One file, given the modules whose overrides stayed manual (or a guess at them: then what
    it asked about comes back too); ``dry``: write nothing (a guess that may be wrong)."""
    index.manual_override_modules = set(manual)
    index.asked = set() if guess else None
    result = migrate_file(path, index, replace(run_opts, mode=CHECK) if dry else run_opts)
    asked = frozenset(index.asked or ())
    index.asked = None
    return result, asked


def _preload_plugins() -> None:
    """libcst and the plugin modules (metadata, op tables), loaded once in this process so that
    forked workers share them."""
    import libcst  # noqa: F401
    from migrator._plugins import plugins

    plugins()


_WORKER_STATE: tuple = ()


def _init_worker(index: RunIndex, run_opts: RunOptions) -> None:
    global _WORKER_STATE
    _WORKER_STATE = (index, run_opts)


def _migrate_in_worker(path: str, manual: frozenset, guess: bool, dry: bool) -> tuple[FileResult, frozenset]:
    index, run_opts = _WORKER_STATE
    return _migrate_one(index, run_opts, path, manual, guess, dry)


def _pool(workers: int, index: RunIndex, run_opts: RunOptions) -> ProcessPoolExecutor:
    """A pool whose workers receive the index once, not with every file."""
    return ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(index, run_opts))


def _isolated(work: tuple, index: RunIndex, run_opts: RunOptions) -> tuple:
    path = work[0]
    try:
        with _pool(1, index, run_opts) as pool:
            return pool.submit(_migrate_in_worker, *work).result()
    except BrokenProcessPool:
        return FileResult(path, error=f"{path}:1:1: internal error: the worker process died on this file"), frozenset()


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def attach_verification(results: list[FileResult], mode: str, rtol=None, atol=None, timeout=None,
                        jobs: int = 1) -> float:
    """Fill ``Site.verification`` for the migrated sites of changed files; returns the seconds it took.

    Needs ``original``/``migrated`` text (``keep_text``).  The verifier lives
    in :mod:`migrator.verify`; when it or TensorFlow is missing, or it fails,
    sites are marked unverified (with the reason) rather than failing the run.
    """
    started = time.monotonic()
    todo = [r for r in results if r.changed and r.original is not None and any(s.migrated for s in r.sites)]
    if not todo:
        return 0.0
    try:
        from migrator.verify import INSTALL_HINT, tensorflow_available, verify_files
    except Exception as e:  # noqa: BLE001 - the verifier is optional
        for r in todo:
            _mark(r, f"verifier not available ({type(e).__name__})")
        return time.monotonic() - started
    if not tensorflow_available():
        for r in todo:
            _mark(r, f"TensorFlow is not installed ({INSTALL_HINT})")
        return time.monotonic() - started
    with tempfile.TemporaryDirectory(prefix="tfgradmigrate-verify-") as tmp:
        pairs = []
        for i, r in enumerate(todo):
            base = os.path.basename(r.path)
            orig = os.path.join(tmp, "original", str(i), base)
            new = r.path if mode == WRITE else os.path.join(tmp, "migrated", str(i), base)
            for dest, text in ((orig, r.original), (new, r.migrated)):
                if dest != r.path:
                    os.makedirs(os.path.dirname(dest), exist_ok=True)
                    with open(dest, "w", encoding="utf-8") as fh:
                        fh.write(text)
            pairs.append((orig, new, r.sites))
        try:
            verdicts = verify_files(pairs, rtol=rtol, atol=atol, timeout=timeout, jobs=jobs)
        except Exception as e:  # noqa: BLE001
            for r in todo:
                _mark(r, f"verifier failed: {type(e).__name__}: {e}")
            return time.monotonic() - started
    for r, per_file in zip(todo, verdicts or []):
        for site, verdict in zip(r.sites, per_file or []):
            if isinstance(verdict, dict):
                site.verification = verdict
        _mark(r, "the verifier gave no verdict for this site")
    return time.monotonic() - started


def _mark(result: FileResult, reason: str) -> None:
    for s in result.sites:
        if s.migrated and s.verification is None:
            s.verification = {"status": "unverified", "reason": reason}


FAILED_VERIFICATION = frozenset({"failed", "fail", "mismatch", "error"})


def verification_failed(results: list[FileResult]) -> bool:
    return any(
        (s.verification or {}).get("status") in FAILED_VERIFICATION for r in results for s in r.sites
    )


def verification_counts(results: list[FileResult]) -> dict:
    """Migrated sites by verdict: match, mismatch, unverified ("nothing compared" is unverified)."""
    out = {"match": 0, "mismatch": 0, "unverified": 0}
    for r in results:
        for s in r.sites:
            if s.verification is None:
                continue
            status = s.verification.get("status")
            key = "mismatch" if status in FAILED_VERIFICATION else "match" if status == "match" else "unverified"
            out[key] += 1
    return out
