"""The pipeline, in one screen:

    discover -> prefilter (bytes) -> index + confirm (ast, pass 1) -> parse (libcst)
    -> analyse sites + transform (plugins, in order) -> render -> write -> verify

This module holds the text-level core (``migrate_text``) and the cheap
pass-1 index.  File discovery, safe reading/writing and the process pool
live in :mod:`migrator.files` and :mod:`migrator.runner`; reports in
:mod:`migrator.reports`; verification in :mod:`migrator.verify`.
"""
from __future__ import annotations

import ast
import difflib
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Optional

from migrator.astwalk import hit_lines, walk_near
from migrator.files import FileError
from migrator.model import MANUAL, Site

#: A file that matches none of these bytes cannot contain a site: a call
#: `gradients(`, a reference `.gradients`, an import of `gradients`, ...
#: (prose such as "computes gradients" does not match; tests/test_pipeline.py
#: lists the spellings that must).
PREFILTER = re.compile(
    rb"gradient_override_map|RegisterGradient|parallel_for|py_func"
    rb"|\bgradients\s*\(|\.gradients\b|\bimport\b[^\n]*\bgradients\b|\bhessians\b|jacobian\s*\("
)


#: a module-level line that may hand on a gradient API under another name (``grad = tf.gradients``,
#: ``from tensorflow import gradients as g``): only a project holding one makes the run look for
#: files calling it by that name (``migrator.project_alias``, which needs libcst to be imported)
ALIAS_LINE = (r"(?m)^[ \t]*\w+[ \t]*=[ \t]*(?:[\w.]+\.)?(?:gradients|hessians|jacobian|batch_jacobian)[ \t]*(?:#|$)"
              r"|\bimport\b[^\n]*\b(?:gradients|hessians|jacobian|batch_jacobian)[ \t]+as\b")

_WORD_BYTE = re.compile(rb"\w")
_CALL_AFTER = re.compile(rb"\s*\(")
_IMPORT_WORD = re.compile(rb"\bimport\b")
_LITERALS = (b"gradient_override_map", b"RegisterGradient", b"parallel_for", b"py_func")


_API_WORDS = ("gradient_override_map", "RegisterGradient", "gradients", "hessians", "jacobian", "py_func",
              "parallel_for")


def _normalized_words(text: str) -> list[str]:
    """API words Python would read in ``text`` but that are spelled with compatibility characters
    (fullwidth letters...): identifiers are NFKC-normalized by the parser."""
    normal = unicodedata.normalize("NFKC", text)
    return [w for w in _API_WORDS if normal.count(w) > text.count(w)]


def _compatibility_spelled(data: bytes) -> bool:
    return bool(_normalized_words(data.decode("utf-8", "replace")))


def may_have_sites(data: bytes) -> bool:
    """``PREFILTER.search(data)``, about 20 times faster: substring tests first, and the
    ``gradients`` spellings checked only around each occurrence of the word (the regex
    tried every alternative at every byte; same answers on 3,308 files of TF, Keras and
    the corpus)."""
    if any(w in data for w in _LITERALS):
        return True
    if not data.isascii() and _compatibility_spelled(data):
        return True  # `tf.ｇradient_override_map`: Python reads it as gradient_override_map
    if b"hessians" in data and re.search(rb"\bhessians\b", data):
        return True
    if b"jacobian" in data and re.search(rb"jacobian\s*\(", data):
        return True
    i = data.find(b"gradients")
    while i != -1:
        j = i + 9
        before, after = data[i - 1:i] if i else b"", data[j:j + 1]
        word_after = bool(after) and _WORD_BYTE.match(after) is not None
        if before == b"." and not word_after:
            return True  # .gradients
        if not (before and _WORD_BYTE.match(before)):
            if _CALL_AFTER.match(data, j):
                return True  # gradients(
            if not word_after and _IMPORT_WORD.search(data, data.rfind(b"\n", 0, i) + 1, i):
                return True  # import ... gradients
        i = data.find(b"gradients", j)
    return False


#: Names whose presence in code (not in strings or comments) makes a file worth
#: parsing with libcst: the second, still cheap, filter after the bytes.
#: A `RegisterGradient` or `py_func` alone is no site (pass 1 indexes registrations
#: with `ast`); they matter only under an override map.
CANDIDATE_NAMES = frozenset({"gradient_override_map", "gradients", "hessians", "jacobian", "batch_jacobian"})


_CANDIDATE_WORDS = re.compile(r"gradient_override_map|gradients|hessians|jacobian")
_SCAN_WORDS = re.compile(r"RegisterGradient|gradient_override_map")
ASKED_ALL = "*"  # RunIndex.asked: the whole set of manual override modules was read


def _has_candidates(tree: ast.AST, lines: Optional[list[int]] = None) -> bool:
    for node in walk_near(tree, lines):
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else None
            if name in CANDIDATE_NAMES:
                return True
        elif isinstance(node, ast.Attribute) and node.attr in CANDIDATE_NAMES:
            return True  # also `fn = tf.gradients`: a reference the gradients plugin reports
        elif isinstance(node, ast.ImportFrom):
            # `from tensorflow import gradients as g` calls it under another name
            module = node.module or ""
            if module.endswith("parallel_for.gradients") or any(a.name in CANDIDATE_NAMES for a in node.names):
                return True
    return False


def has_candidates(source: str) -> bool:
    """The ast confirmation: does any call or import name a gradient API?  (True if unparsable:
    libcst then reports the error.)"""
    try:
        return _has_candidates(ast.parse(source), hit_lines(source, _CANDIDATE_WORDS))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True


class ParseError(FileError):
    """The source could not be parsed; carries a 1-based position."""


@dataclass
class Options:
    """Rewrite options (from [tool.tfgradmigrate] and command-line flags)."""

    annotate: bool = False  # add "# TODO(tfgradmigrate): ..." above manual sites
    select: Optional[frozenset] = None  # plugin names to run (None: all)
    #: apply rewrites that are right only under an assumption the source cannot show;
    #: each such site names its assumptions (Site.assumptions)
    unsafe_fixes: bool = False


@dataclass
class Registration:
    """A ``RegisterGradient(name)`` found in pass 1."""

    name: str  # the gradient name when it is a string literal, else "" (dynamic)
    path: str
    line: int


@dataclass
class RunIndex:
    """What pass 1 learns about every file of the run, cheaply (ast only).

    It holds no parse trees: only names and positions.
    """

    registrations: dict[str, list[Registration]] = field(default_factory=dict)
    #: gradient names that some override map in the run refers to
    mapped_names: set[str] = field(default_factory=set)
    #: dotted module names (best effort, from paths) of files with override blocks
    override_modules: set[str] = field(default_factory=set)
    #: filled between the two halves of pass 2: modules whose overrides stayed manual
    manual_override_modules: set[str] = field(default_factory=set)
    #: while a file runs on a guess at the manual override modules (runner): the module names its
    #: checks asked about (ASKED_ALL: it read the whole set); it runs again if the guess was wrong
    asked: Optional[set[str]] = None
    #: files pass 1 parsed and found no candidate in (pass 2 skips libcst for them)
    quiet_paths: set[str] = field(default_factory=set)
    #: files nested too deeply for ast (libcst's parser may crash the process on them)
    too_deep: set[str] = field(default_factory=set)
    #: files that name no gradient API but import one a project module hands on under another
    #: name (``from ops import grad``; migrator.project_alias): read, and the gradients plugin runs
    alias_importers: set[str] = field(default_factory=set)
    #: the project root (migrator.project): where facts about code outside the run are read
    root: Optional[str] = None
    #: the text of every indexed file as it was before the run (pass 2 may rewrite them)
    sources: dict[str, str] = field(default_factory=dict)
    #: where the project replaces tf.gradients (migrator.project), found once per run;
    #: None until asked
    gradients_patches: Optional[list] = None

    def add_file(self, path: str, source: str) -> None:
        self.sources[path] = source
        try:
            tree = ast.parse(source)
        except (RecursionError, MemoryError):
            self.too_deep.add(path)
            return
        except (SyntaxError, ValueError):
            return
        if not _has_candidates(tree, hit_lines(source, _CANDIDATE_WORDS)):
            self.quiet_paths.add(path)
        lines = hit_lines(source, _SCAN_WORDS)
        if not lines:
            return  # no registration or map to record: skip the second walk
        facts = scan_tree(tree, lines)  # registrations count even in a quiet file (cross-file overrides)
        for reg in facts.registrations:
            reg.path = path
            self.registrations.setdefault(reg.name, []).append(reg)
        self.mapped_names |= facts.mapped_names
        if facts.has_override_block:
            self.override_modules |= module_names_for(path)

    @property
    def unmigrated_override_modules(self) -> set[str]:
        """The whole set (a reader of all of it depends on all of it)."""
        if self.asked is not None:
            self.asked.add(ASKED_ALL)
        return self.manual_override_modules

    def left_manual(self, modules, record: bool = True) -> set[str]:
        """Those of ``modules`` whose overrides stayed manual in this run (``record``: the answer
        decides something, so a run on a guess must know it asked)."""
        modules = set(modules)
        if self.asked is not None and record:
            self.asked |= modules
        return modules & self.manual_override_modules

    def merge(self, other: "RunIndex") -> None:
        for k, v in other.registrations.items():
            self.registrations.setdefault(k, []).extend(v)
        self.mapped_names |= other.mapped_names
        self.override_modules |= other.override_modules
        self.manual_override_modules |= other.manual_override_modules
        self.quiet_paths |= other.quiet_paths
        self.alias_importers |= other.alias_importers
        self.too_deep |= other.too_deep
        self.sources.update(other.sources)


@dataclass
class _Facts:
    registrations: list[Registration] = field(default_factory=list)
    mapped_names: set[str] = field(default_factory=set)
    has_override_block: bool = False
    imports: set[str] = field(default_factory=set)


def scan_tree(tree: ast.AST, lines: Optional[list[int]] = None) -> _Facts:
    """Pass-1 facts from a stdlib ``ast`` tree (no libcst, no metadata); with ``lines``, only
    what lies on those lines (registrations and maps, not imports)."""
    facts = _Facts()
    for node in walk_near(tree, lines):
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else None
            if name == "RegisterGradient" and node.args:
                arg = node.args[0]
                lit = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else ""
                facts.registrations.append(Registration(lit, "", node.lineno))
            elif name == "gradient_override_map":
                facts.has_override_block = True
                if node.args and isinstance(node.args[0], ast.Dict):
                    for v in node.args[0].values:
                        if isinstance(v, ast.Constant) and isinstance(v.value, str):
                            facts.mapped_names.add(v.value)
        elif isinstance(node, ast.Attribute) and node.attr == "gradient_override_map":
            facts.has_override_block = True  # also `om = g.gradient_override_map` (entered later)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            facts.imports |= import_names(node)
    return facts


def import_names(node) -> set[str]:
    """The dotted module names an import statement may load (relative imports: none)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names}
    if isinstance(node, ast.ImportFrom) and node.module:
        return {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return set()


def module_names_for(path: str) -> set[str]:
    """Dotted names a file may be imported under: every suffix of its path."""
    parts = [p for p in re.split(r"[\\/]", path) if p and p not in (".", "..")]
    if not parts:
        return set()
    last = parts[-1]
    if last.endswith(".py"):
        last = last[:-3]
    parts[-1] = last
    if last == "__init__":
        parts = parts[:-1]
    return {".".join(parts[i:]) for i in range(len(parts)) if all(p.isidentifier() for p in parts[i:])}


def imported_modules(source: str) -> set[str]:
    try:
        return scan_tree(ast.parse(source)).imports
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()


def _parse_error(source: str, err) -> ParseError:
    """A one-line error with a real position: the stdlib's message when it has one
    (it names Python 2 syntax), else libcst's own "error at L:C"."""
    try:
        ast.parse(source)
    except SyntaxError as se:
        return ParseError(f"cannot parse: {se.msg}", se.lineno or 1, se.offset or 1)
    found = re.search(r"error at (\d+):(\d+)", err.message)
    line, col = (int(found[1]), int(found[2]) + 1) if found else (err.raw_line, err.raw_column + 1)
    return ParseError(f"cannot parse: {err.message}", line, col)


@dataclass
class FileContext:
    """Per-file state handed to each plugin in turn."""

    path: str
    index: RunIndex
    options: Options
    source: str = ""  # the original text
    #: the text of the module the next plugin receives (earlier plugins' output)
    text: str = ""
    sites: list[Site] = field(default_factory=list)
    #: plugin-to-plugin facts, e.g. "manual_override" set by the override plugin
    facts: dict = field(default_factory=dict)
    #: maps a line of the module a plugin receives to the original file's line
    _back: Optional[dict] = None
    #: the module libcst parsed from ``source`` (no node object appears twice in it)
    parsed: object = None
    #: id(module) -> (module, MetadataWrapper): one per module object, shared by the plugins
    _wrappers: dict = field(default_factory=dict)

    def original_line(self, line: int) -> int:
        """Plugins see the output of earlier plugins; sites report original lines."""
        if self._back is None:
            return line
        return self._back.get(line, line)

    def metadata(self, module):
        """The libcst ``MetadataWrapper`` of ``module``, shared by every plugin that receives
        this very module object: scopes, qualified names, parents and positions (the costly
        part of a file's analysis) are resolved once per file, not once per plugin.

        Its ``.module`` is ``module`` itself when that is the parsed module (whose nodes are
        all distinct); a module an earlier plugin rebuilt may reuse a node in two places,
        so it is copied first, as libcst does by default.
        """
        held = self._wrappers.get(id(module))
        if held is None or held[0] is not module:
            from migrator.tfnames import TFMetadataWrapper

            wrapper = TFMetadataWrapper(module, unsafe_skip_copy=module is self.parsed)
            wrapper.tf_imports = self.project_tf_names
            wrapper.tf_rebound = self.rebound_elsewhere
            wrapper.tf_starred = self.starred_tf_names if "import *" in self.source else None
            wrapper.tf_source = self.source
            held = self._wrappers[id(module)] = (module, wrapper)
        return held[1]

    def rebound_elsewhere(self, heads: set) -> set:
        """Module-level names of this file another project file may rebind (``m.grad = f``)."""
        if not getattr(self.index, "root", None):
            return set()
        from migrator.project import project_for
        from migrator.project_tf import rebound_elsewhere

        return rebound_elsewhere(project_for(self.index), self.path, heads)

    def starred_tf_names(self, head: str):
        """What only this file's star imports of project modules bind ``head`` to (``tf`` from
        ``from ops import *``), when that is TF; else None."""
        if not getattr(self.index, "root", None):
            return None
        from migrator.project import project_for
        from migrator.project_star import starred_tf_names

        return starred_tf_names(project_for(self.index), self.path, head)

    def project_tf_names(self) -> dict:
        """TF names this file imports from project modules (``from .backend import tf``)."""
        if "tf_imports" not in self.facts:
            from migrator.project import project_for
            from migrator.project_tf import imported_tf_names

            self.facts["tf_imports"] = {}
            if getattr(self.index, "root", None):
                from migrator.project_alias import module_aliases

                project = project_for(self.index)  # `from ops import grad`; `import ops`, then `ops.grad(...)`
                self.facts["tf_imports"] = {**imported_tf_names(project, self.path, self.source),
                                            **module_aliases(project, self.path, self.source)}
        return self.facts["tf_imports"]


def line_map(old: str, new: str) -> dict[int, int]:
    """Map 1-based lines of ``new`` to lines of ``old`` (ignoring indentation)."""
    a = [ln.strip() for ln in old.splitlines()]
    b = [ln.strip() for ln in new.splitlines()]
    out: dict[int, int] = {}
    for _tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        for k in range(j2 - j1):
            out[j1 + k + 1] = min(i1 + k, max(i2 - 1, i1)) + 1
    return out


def migrate_text(
    source: str,
    path: str = "<string>",
    index: Optional[RunIndex] = None,
    options: Optional[Options] = None,
) -> tuple[str, list[Site]]:
    """Migrate one module's text.  Returns (new_text, sites).

    Raises :class:`ParseError` when the source cannot be parsed.  A source
    with nothing to migrate comes back as the very same string.
    """
    options = options or Options()
    if index is not None and path in index.alias_importers:
        pass  # it calls a gradient API under a name a project module gives it (`from ops import grad`)
    elif not may_have_sites(source.encode("utf-8", "surrogatepass")):
        return source, []
    if index is None:
        index = RunIndex()
        index.add_file(path, source)
    if path in index.quiet_paths:
        return source, []  # the words appear only in strings, comments or unrelated names
    import libcst as cst  # lazily: only files that passed the prefilter pay for it

    from migrator._cstwalk import read_only_visits
    from migrator._plugins import plugins

    spelled = _normalized_words(source) if not source.isascii() else []
    if spelled:
        raise FileError(f"`{spelled[0]}` is spelled with compatibility characters (fullwidth letters or the like), which "
                        "Python reads as the ASCII name but the migrator does not; normalize the identifiers "
                        "(unicodedata NFKC) and re-run; left unchanged")
    if path in index.too_deep:
        raise FileError("nested too deeply to parse safely (ast gave up; libcst's parser can crash on it); left "
                        "unchanged")
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as e:
        raise _parse_error(source, e) from None
    ctx = FileContext(path=path, index=index, options=options, source=source, parsed=module)
    current = source
    with read_only_visits():  # libcst visitors stop rebuilding the tree while our plugins run
        for plugin in plugins():
            if options.select is not None and plugin.name not in options.select:
                continue
            if not plugin.matches(current.encode("utf-8", "surrogatepass")) and not (
                    plugin.reads_api_aliases and path in index.alias_importers):
                continue
            ctx.text = current
            before = module
            module = plugin.rewrite(module, ctx)
            rendered = current if module is before else module.code  # rendering a big module costs
            if rendered != current:
                current = rendered
                ctx._back = line_map(source, current)
    if current != source and ctx.parsed.code != source:
        # libcst drops a blank line before trailing whitespace-only lines at the end of a file;
        # writing its output would change more than the sites: report the file instead
        raise FileError("libcst cannot reproduce this file byte for byte (blank or whitespace-only lines at its "
                        "end), so a rewrite would change more than its sites; left unchanged")
    if current != source:
        forward = line_map(current, source)  # original line -> new line
        for site in ctx.sites:
            if site.status != MANUAL and site.new_line is None:
                site.new_line = forward.get(site.line)
    from migrator.suppress import acknowledge

    acknowledge(source, ctx.sites)  # before --annotate: an acknowledged site needs no TODO
    if options.annotate and any(s.status == MANUAL for s in ctx.sites):
        from migrator.annotate import annotate_manual_sites

        current = annotate_manual_sites(current, ctx.sites, ctx._back)
    return current, ctx.sites
