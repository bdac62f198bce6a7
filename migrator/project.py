"""The project around a run: code the run was not given, read lazily from disk.

Soundness needs facts about code outside the files of a run (pre-commit hands
the tool one staged file): who calls a function and with what, which imported
module enters an override map, whether anything patches ``tf.gradients``.

The project is the folder tree under the *root*: the nearest folder above the
run's paths that holds ``.git``, ``pyproject.toml``, ``setup.py`` or
``setup.cfg``, else the common folder of the paths.  Files of the run are
read as they were before the run (pass 1 keeps their text in
``RunIndex.sources``), so a rewrite in progress never changes an answer; all
other files are never written by the run and are read from disk.  Files are
found by a byte search first and parsed with ``ast`` only when they match.
Nothing here imports TensorFlow or libcst.
"""
from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from typing import Iterable, Optional

from migrator.astwalk import code_words, import_statements, statements
from migrator.files import DEFAULT_EXCLUDES, FileError, python_script, raw_holds, source_encoding
from migrator.notebook import notebook_code
from migrator.patches import (
    GRAPH_GRADIENT_MAPS, gradients_patch_lines, may_patch_tf, registry_use_lines, tf_api_patch_paths, word_lines,
)
from migrator.project_calls import CallSite, calls_of, dotted, local_names_for, reexported

ROOT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")
#: a project larger than this is not scanned whole; answers that need the whole
#: project then say "unknown" (and the rewrite that needed them is refused)
MAX_FILES = 20000
MAX_BYTES = 5 * 1024 * 1024


def find_root(paths: Iterable[str]) -> Optional[str]:
    """The project root for a run over ``paths`` (None for no paths)."""
    dirs = [os.path.dirname(os.path.abspath(p)) if not os.path.isdir(p) else os.path.abspath(p) for p in paths]
    if not dirs:
        return None
    common = os.path.commonpath(dirs)
    cur = common
    while True:
        if any(os.path.exists(os.path.join(cur, m)) for m in ROOT_MARKERS):
            return cur
        parent = os.path.dirname(cur)
        if parent == cur:
            return common
        cur = parent


@dataclass(frozen=True)
class Location:
    path: str
    line: int
    text: str = ""

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


class Project:
    def __init__(self, root: Optional[str], originals: Optional[dict] = None) -> None:
        self.root = os.path.abspath(root) if root else None
        #: pre-run text of the run's candidate files, by absolute path
        self.originals = {os.path.abspath(p): t for p, t in (originals or {}).items()}
        self._files: Optional[list[str]] = None
        self._text: dict[str, Optional[str]] = {}
        self._trees: dict[str, Optional[ast.Module]] = {}
        self._grep: dict[tuple, list[str]] = {}
        self._imported: dict[str, list[tuple[str, int]]] = {}
        self._overrides: dict[str, list[Location]] = {}
        self._registry: Optional[tuple] = None  # (registry_patches(),) once asked
        self._api_patches: dict[str, list[Location]] = {}  # path -> tf_api_patches found in it
        self._dynamic: Optional[bool] = None  # some file imports modules by computed name
        self._named: dict[str, list[str]] = {}
        self._unknown_uses: dict[tuple, str] = {}  # (path, name) -> why external_uses said None

    # -- files ------------------------------------------------------------
    def files(self) -> Optional[list[str]]:
        """Every .py file and notebook of the project (None when the project is too big to scan)."""
        if self._files is None:
            out: list[str] = []
            if self.root is not None:
                for dirpath, dirnames, filenames in os.walk(self.root):
                    dirnames[:] = sorted(d for d in dirnames if d not in DEFAULT_EXCLUDES and not d.startswith("."))
                    out += [os.path.join(dirpath, f) for f in sorted(filenames)
                            if f.endswith((".py", ".ipynb")) or "." not in f and python_script(os.path.join(dirpath, f))]
                    if len(out) > MAX_FILES:
                        return None  # asked again, scanned again: rare enough, and never wrong
            for p in self.originals:  # the run's files, whatever their names (notebooks, <string>)
                if p not in out:
                    out.append(p)
            self._files = out
        return self._files

    def text(self, path: str) -> Optional[str]:
        path = os.path.abspath(path)
        if path in self.originals:
            return self.originals[path]
        if path not in self._text:
            try:
                if not os.path.isfile(path) or os.path.getsize(path) > MAX_BYTES:
                    raise OSError("not a regular file, or too big")  # a FIFO named *.py would block
                with open(path, "rb") as fh:
                    self._text[path] = _decode(fh.read())
                if path.endswith(".ipynb"):  # a notebook's code cells, as one module
                    self._text[path] = notebook_code(self._text[path])
            except (OSError, FileError):
                self._text[path] = None
        return self._text[path]

    def tree(self, path: str) -> Optional[ast.Module]:
        path = os.path.abspath(path)
        if path not in self._trees:
            text = self.text(path)
            try:
                self._trees[path] = ast.parse(text) if text is not None else None
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._trees[path] = None
        return self._trees[path]

    def grep(self, needle: bytes, pattern: Optional[str] = None) -> Optional[list[str]]:
        """Project files whose text contains ``needle`` (and matches the regex ``pattern``,
        when given); None when the project is too big to scan."""
        key = (needle, pattern)
        if key not in self._grep:
            files = self.files()
            if files is None:
                return None
            word, regex = needle.decode(), re.compile(pattern) if pattern else None
            hits = []
            for p in files:
                text = self.text(p)
                if text is not None and word in text and (regex is None or regex.search(text)):
                    hits.append(p)
                elif text is None and raw_holds(p, needle):
                    hits.append(p)  # too big or unreadable as text: a hit whose tree is None ("unknown")
            self._grep[key] = hits
        return self._grep[key]

    # -- imports ----------------------------------------------------------
    def resolve(self, module: str, level: int, importer: str) -> Optional[str]:
        """The project file an import names, or None (TensorFlow, numpy, not found)."""
        importer = os.path.abspath(importer)
        parts = module.split(".") if module else []
        if level:
            base = os.path.dirname(importer)
            for _ in range(level - 1):
                base = os.path.dirname(base)
            bases = [base]
        else:
            bases = [os.path.dirname(importer)]
            if self.root is not None:
                bases += [self.root, os.path.join(self.root, "src")]
                # a script run from a folder between the root and the importer (`pkg/__init__.py`
                # doing `from helper import f` with helper.py beside `pkg/`)
                up = os.path.dirname(bases[0])
                while up.startswith(self.root + os.sep):
                    bases.append(up)
                    up = os.path.dirname(up)
        for base in bases:
            stem = os.path.join(base, *parts)
            for cand in (stem + ".py", os.path.join(stem, "__init__.py")):
                if os.path.isfile(cand) or os.path.abspath(cand) in self.originals:
                    if self.root is None or os.path.abspath(cand).startswith(self.root + os.sep) \
                            or os.path.abspath(cand) in self.originals:
                        return os.path.abspath(cand)
        return None

    def imports(self, path: str) -> list[tuple[str, int]]:
        """Project files ``path`` imports (with the importing line), in order."""
        path = os.path.abspath(path)
        if path not in self._imported:  # closures and importers ask for the same files again and again
            self._imported[path] = list(_imports(self, path))
        return self._imported[path]

    def import_closure(self, path: str, depth: int = 3) -> list[str]:
        """Project files reachable from ``path`` by imports, ``depth`` levels deep (path excluded)."""
        seen = {os.path.abspath(path)}
        frontier = [os.path.abspath(path)]
        out: list[str] = []
        for _ in range(depth):
            nxt = []
            for p in frontier:
                for q, _line in self.imports(p):
                    if q not in seen:
                        seen.add(q)
                        out.append(q)
                        nxt.append(q)
            frontier = nxt
        return out

    def importers(self, path: str, depth: int = 3) -> Optional[list[str]]:
        """Project files that import ``path``, directly or through other project modules
        (``depth`` levels up); None when the project could not be scanned."""
        target = os.path.abspath(path)
        found: list[str] = []
        frontier = [target]
        for _ in range(depth):
            nxt = []
            for mod in frontier:
                stem = os.path.splitext(os.path.basename(mod))[0]
                if stem == "__init__":
                    stem = os.path.basename(os.path.dirname(mod))
                hits = self.grep(stem.encode())
                if hits is None:
                    return None
                for q in hits:
                    if q != target and q not in found and any(p == mod for p, _l in self.imports(q)):
                        found.append(q)
                        nxt.append(q)
            frontier = nxt
        return found

    def named_like(self, module: str) -> list[str]:
        """Project files an absolute import the resolver could not place may still name: one
        whose path ends like the module (`sys.path.insert(0, "../utils")` then `import plotting`)."""
        if module not in self._named:
            tail = os.path.join(*module.split("."))
            self._named[module] = [f for f in self.files() or [] if f.endswith(os.sep + tail + ".py") or
                                   f.endswith(os.sep + os.path.join(tail, "__init__.py"))]
        return self._named[module]

    def may_run_together(self, a: str, b: str, depth: int = 8) -> bool:
        """Whether ``a`` and ``b`` may be loaded in one process: one imports the other, or some
        project file imports both (through project modules).  True when that cannot be told:
        the project could not be scanned, or some file imports modules by computed name."""
        a, b = os.path.abspath(a), os.path.abspath(b)
        if a == b:
            return True
        books = [p for p in (a, b) if p.endswith(".ipynb")]
        if books:  # no file imports a notebook: only what it loads runs with it (or `%run`s into it)
            if self._runs_code_of_others(books[0]):
                return True
            return len(books) == 1 and (b if books[0] == a else a) in self.import_closure(books[0], depth)
        if self._dynamic is None:  # imports by computed name or path: anything may load anything
            hits = [self.grep(w) for w in (b"importlib", b"__import__", b"runpy", b"imp.load_", b"exec(")]
            self._dynamic = any(h is None or h for h in hits)
        if self._dynamic or b in self.import_closure(a, depth):
            return True  # (the closure first: it is cached, importers are searched for)
        ups = self.importers(a, depth)
        if ups is None:
            return True
        # a conftest.py is loaded with every test under its folder (and what those import)
        tests = [c for c in self.files() or [] if os.path.basename(c) == "conftest.py"]
        roots = [a] + ups + [c for c in tests if any((os.path.dirname(r) + os.sep).startswith(
            os.path.dirname(c) + os.sep) for r in [a] + ups)]
        return any(r == b or b in self.import_closure(r, depth) for r in roots)

    def _runs_code_of_others(self, book: str) -> bool:
        """A notebook that may load or `%run` code by computed name (read once per notebook, from the
        raw cells: the parsed text has its magics masked, an adversarial run)."""
        seen = self.__dict__.setdefault("_book_runs", {})
        if book not in seen:
            try:
                with open(book, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
            except OSError:
                text = "exec("
            seen[book] = any(w in text for w in ("importlib", "__import__", "runpy", "exec(", "%run", "%load",
                                                 "get_ipython", "load_ipython_extension", "user_ns", "%%"))
        return seen[book]

    def text_hits(self, paths: Iterable[str], needles: Iterable[bytes]) -> list[Location]:
        """Where any of ``needles`` occurs in code (not comments or strings) of ``paths``."""
        out: list[Location] = []
        words = [n.decode() for n in needles]
        for p in paths:
            text = self.text(p)
            if text is None or not any(w.lstrip(".") in text for w in words):
                continue
            for line, name in code_words(text, words):
                out.append(Location(os.path.abspath(p), line, name))
        return out

    def external_uses(self, path: str, name: str) -> Optional[list[Location]]:
        """Uses of the module-level ``name`` of ``path`` in other project files
        (``from mod import name``, ``mod.name``); None when it cannot be told
        (a star import of the module, a project too big to scan; ``unknown_use``
        then says which)."""
        path = os.path.abspath(path)
        hits = self.grep(name.encode())
        stem = os.path.splitext(os.path.basename(path))[0]
        star = self.grep(b"import *")
        if hits is None or star is None:
            return self._unknown(path, name, "the project is too big to scan")
        for q in star:  # `from mod import *` binds every name without naming it
            tree = self.tree(q) if stem in (self.text(q) or "") else None
            for n in ast.walk(tree) if tree is not None else ():
                if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) \
                        and self.resolve(n.module or "", n.level, q) == path:
                    return self._unknown(path, name, f"{os.path.basename(q)}:{n.lineno} star-imports this module")
        out: list[Location] = []
        for q in hits:
            if q == path:
                continue
            tree = self.tree(q)
            if tree is None:  # it names `name` but cannot be parsed: a use cannot be ruled out
                return self._unknown(path, name, f"{os.path.basename(q)} names it and cannot be parsed")
            names = local_names_for(self, tree, q, path, name)
            if names is None:
                return self._unknown(path, name, f"{os.path.basename(q)} star-imports this module")
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names) \
                        and self.resolve(node.module or "", node.level, q) == path:
                    out.append(Location(q, node.lineno, name))
                elif isinstance(node, (ast.Name, ast.Attribute)) and dotted(node) in names - {name}:
                    out.append(Location(q, node.lineno, name))
        return out

    def _unknown(self, path: str, name: str, why: str) -> None:
        self._unknown_uses[(path, name)] = why
        return None

    def unknown_use(self, path: str, name: str) -> str:
        """Why :meth:`external_uses` could not tell (after it returned None)."""
        return self._unknown_uses.get((os.path.abspath(path), name), "it cannot be told")

    # -- facts ------------------------------------------------------------
    def gradients_patches(self, known: Optional[dict[str, list[int]]] = None) -> Optional[list[Location]]:
        """Statements anywhere in the project that replace ``tf.gradients`` (None: unknown).
        ``known``: the patch lines pass 1 already found in some files, by absolute path."""
        files = self.files()
        if files is None:
            return None
        out: list[Location] = []
        for p in sorted(files):
            if known is not None and p in known:
                lines = known[p]
            else:
                text = self.text(p)
                lines = [] if text is None else gradients_patch_lines(text, lambda p=p: self.tree(p))
            out += [Location(p, line, "") for line in lines]
        return out

    def tf_api_patches(self, path: str) -> list[Location]:
        """Statements in ``path`` or the project files it imports directly that replace
        something on a TF module (``tf.nn.relu = f``; :func:`migrator.patches.tf_api_patch_nodes`).
        A file that imports ``path`` and patches TF before calling it is not looked at (a limit).
        Each location's text is the TF path replaced (``tensorflow.get_variable``), or "" when the
        statement does not show one."""
        files = [os.path.abspath(path)] + sorted(self.import_closure(path, depth=1))
        for p in files:
            if p not in self._api_patches:
                text = self.text(p) or ""
                extra = self._reexported_tf(p, text)  # `from backend import tf as T`, then `T.sign = f`
                tree = self.tree(p) if may_patch_tf(text) or extra else None  # most files: no parse
                self._api_patches[p] = [Location(p, n.lineno, target or "") for n, target in
                                        tf_api_patch_paths(tree, extra)] if tree else []
        return [loc for p in files for loc in self._api_patches[p]]

    def _reexported_tf(self, path: str, text: str) -> dict:
        """Names ``path`` imports from a project module that binds them to a TF module."""
        if "from " not in text or "=" not in text:
            return {}
        from migrator.project_tf import imported_tf_names  # the override planner's question: libcst is loaded

        out = {}
        for names, bound in imported_tf_names(self, path, text).values():
            full = sorted(names)[0]
            if len(names) == 1 and (full == "tensorflow" or full.startswith("tensorflow.")):
                out[bound] = full
        return out

    def registry_patches(self) -> Optional[list[Location]]:
        """Code anywhere in the project that reaches into TF's gradient registry (as SHAP's
        DeepExplainer does) or a graph's override tables (None: unknown)."""
        if self._registry is None:  # asked once per file with sites: answered once per run
            hits = self.grep(b"_gradient_registry")
            found = None if hits is None else []
            for p in hits or []:
                tree = self.tree(p)
                lines = registry_use_lines(tree, self.text(p) or "") if tree is not None else [1]
                found += [Location(p, ln, "_gradient_registry") for ln in lines]
            for word in GRAPH_GRADIENT_MAPS:  # a graph's own tables, set without the context manager
                hits = self.grep(word.encode())
                found = None if hits is None or found is None else found + [
                    Location(p, i, word) for p in hits for i in word_lines(self.text(p) or "", word)]
            self._registry = (found,)
        return self._registry[0]

    def override_entries(self, path: str) -> list[Location]:
        """``gradient_override_map`` uses in ``path`` (as the run found it before rewriting)."""
        path = os.path.abspath(path)
        if path not in self._overrides:
            text = self.text(path)
            tree = self.tree(path) if text and "gradient_override_map" in text else None  # the word first
            self._overrides[path] = [] if tree is None else [
                Location(path, n.lineno) for n in ast.walk(tree)
                if isinstance(n, ast.Attribute) and n.attr == "gradient_override_map"]
        return self._overrides[path]

    def callers(self, path: str, func: str, depth: int = 0) -> Optional[list[CallSite]]:
        """Every call of the module-level function ``func`` defined in ``path``, found in
        the project, also through files that import it and are imported in turn (a package
        ``__init__``); None when some use of it is not a plain call (passed as a value,
        star-imported, its module passed around) or the project could not be scanned."""
        path = os.path.abspath(path)
        hits = self.grep(func.encode(), rf"\b{re.escape(func)}\b")
        if hits is None or depth > 3:
            return None
        out: list[CallSite] = []
        for q in hits:
            tree = self.tree(q)
            if tree is None:
                if q == path:
                    return None
                continue
            names = local_names_for(self, tree, q, path, func)
            if names is None:
                return None
            found = calls_of(tree, q, names)
            if found is None:
                return None
            out += found
            for alias in (reexported(self, tree, q, path, func) if q != path else []):
                further = self.callers(q, alias, depth + 1)
                if further is None:
                    return None
                out += [f for f in further if f.path != q]  # q's own calls are counted above
        return out


def _import_nodes(project: Project, path: str) -> list:
    """The import statements of ``path`` (the file parsed as a whole only when one does not
    parse alone)."""
    tree = project._trees.get(path)
    if tree is None and path not in project._trees:
        text = project.text(path)
        if text is None:
            return []
        out = import_statements(text)
        if out is not None:
            return out
        tree = project.tree(path)
    return [] if tree is None else [n for n in statements(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def _imports(project: Project, path: str):
    # importing `pkg.sub.mod` runs `pkg/__init__.py` and `pkg/sub/__init__.py` first (an
    # adversarial run: an override map entered in a package's __init__)
    here = os.path.dirname(os.path.abspath(path))
    while project.root is not None and (here + os.sep).startswith(project.root + os.sep):
        init = os.path.join(here, "__init__.py")
        if init != os.path.abspath(path) and (os.path.isfile(init) or init in project.originals):
            yield init, 0
        if here == project.root:
            break
        here = os.path.dirname(here)
    for node in _import_nodes(project, path):
        if isinstance(node, ast.Import):
            for a in node.names:
                q = project.resolve(a.name, 0, path)
                if q is not None:
                    yield q, node.lineno
                else:
                    yield from ((f, node.lineno) for f in project.named_like(a.name))
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            q = project.resolve(mod, node.level, path)
            if q is not None:
                yield q, node.lineno
            elif mod and not node.level:
                yield from ((f, node.lineno) for f in project.named_like(mod))
            for a in node.names:  # `from pkg import module`
                sub = project.resolve(f"{mod}.{a.name}" if mod else a.name, node.level, path)
                if sub is not None:
                    yield sub, node.lineno


_PROJECTS: dict[tuple, tuple] = {}


def project_for(index) -> Project:
    """The project of a run (one per process and run index).  The index itself is kept
    and compared: a later run's index may reuse a freed one's id."""
    key = (getattr(index, "root", None), id(index))
    held = _PROJECTS.get(key)
    if held is None or held[0] is not index:
        _PROJECTS.clear()
        held = _PROJECTS[key] = (index, Project(getattr(index, "root", None), getattr(index, "sources", {})))
    return held[1]


def _decode(raw: bytes) -> str:
    """A file's text as Python reads it: its PEP 263 cookie decides (a ``# coding: utf-7`` file
    turned a comment into code: an adversarial run); UTF-8 otherwise."""
    try:
        return raw.decode(source_encoding(raw), "replace")
    except (FileError, UnicodeError):
        return raw.decode("utf-8-sig", "replace")
