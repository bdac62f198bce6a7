"""Pairing what is verified: two files, two trees, notebooks (no TensorFlow here).

* Two folders pair their ``.py`` and ``.ipynb`` files by relative path.
  Files that are byte-identical on both sides were not migrated and are
  skipped; a file on one side only is reported.
* A notebook runs as one script made of its code cells, in order, each
  after a marker line, so that it is verified cell by cell in the order a
  person runs it.  IPython magics cannot run outside IPython: a line magic
  or shell line becomes ``pass`` (same indentation), a cell magic
  (``%%...``) turns its whole cell into comments.  Lines are reported as
  ``cell N:L`` (L counted within the cell).
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Optional

_LINE_MAGIC = re.compile(r"^(\s*)(%|!)")
_ASSIGN_MAGIC = re.compile(r"^(\s*)([\w.]+)\s*=\s*[!%]")
_HELP = re.compile(r"^(\s*).*\?\s*$")
SOURCES = (".py", ".ipynb")
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".tox", ".nox", ".venv", "venv", "node_modules", ".eggs"}


class NotebookUnreadable(ValueError):
    pass


def _cell_source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _runnable(line: str) -> str:
    """A notebook line as plain Python: magics and shell escapes become no-ops."""
    m = _ASSIGN_MAGIC.match(line)
    if m:
        return f"{m.group(1)}{m.group(2)} = None  # tfgradmigrate: IPython magic"
    m = _LINE_MAGIC.match(line)
    if m:
        return f"{m.group(1)}pass  # tfgradmigrate: IPython magic"
    if _HELP.match(line) and not line.rstrip().endswith(("'?'", '"?"')) and "#" not in line:
        return f"{_HELP.match(line).group(1)}pass  # tfgradmigrate: IPython help"
    return line


@dataclass
class NotebookScript:
    text: str
    where: list = field(default_factory=list)  # script line - 1 -> (cell number, line in cell)

    def locate(self, line: Optional[int]) -> Optional[str]:
        if line is None or not 1 <= line <= len(self.where):
            return None
        cell, k = self.where[line - 1]
        return f"cell {cell}:{k}"


def notebook_script(text: str) -> NotebookScript:
    """The code cells of a notebook as one script, in order."""
    try:
        nb = json.loads(text)
        cells = nb["cells"]
    except (ValueError, KeyError, TypeError) as exc:
        raise NotebookUnreadable(f"not a valid notebook: {exc}") from None
    out = NotebookScript("")
    lines = []
    for i, cell in enumerate(cells):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = _cell_source(cell).splitlines()
        lines.append(f"# tfgradmigrate: cell {i}")
        out.where.append((i, 0))
        cell_magic = bool(src) and src[0].lstrip().startswith("%%")
        for k, line in enumerate(src):
            lines.append("# " + line if cell_magic else _runnable(line))
            out.where.append((i, k + 1))
    out.text = "\n".join(lines) + "\n"
    return out


@dataclass
class Pairing:
    pairs: list = field(default_factory=list)  # (relative path, original, migrated)
    only_original: list = field(default_factory=list)
    only_migrated: list = field(default_factory=list)
    unchanged: int = 0


def _sources(root: str) -> dict:
    out = {}
    for base, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for f in sorted(files):
            if f.endswith(SOURCES):
                path = os.path.join(base, f)
                out[os.path.relpath(path, root).replace(os.sep, "/")] = path
    return out


def _same(a: str, b: str) -> bool:
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


def pair_trees(original: str, migrated: str) -> Pairing:
    """Pair two folders' Python files and notebooks by relative path."""
    old, new = _sources(original), _sources(migrated)
    out = Pairing()
    for rel in sorted(set(old) | set(new)):
        if rel not in new:
            out.only_original.append(rel)
        elif rel not in old:
            out.only_migrated.append(rel)
        elif _same(old[rel], new[rel]):
            out.unchanged += 1
        else:
            out.pairs.append((rel, old[rel], new[rel]))
    return out


@dataclass
class Staged:
    """A pair ready for the engine: notebooks turned into scripts in a scratch folder."""

    rel: str
    original: str
    migrated: str
    homes: dict = field(default_factory=dict)  # script -> the notebook's folder
    old_cells: Optional[NotebookScript] = None
    new_cells: Optional[NotebookScript] = None

    def where(self, line: Optional[int], side: str) -> str:
        cells = self.old_cells if side == "original" else self.new_cells
        if cells is not None:
            return cells.locate(line) or "?"
        return f"L{line}" if line else "L?"


def stage(rel: str, original: str, migrated: str, work: str) -> Staged:
    """Raises NotebookUnreadable, OSError."""
    if not original.endswith(".ipynb"):
        return Staged(rel, original, migrated)
    out = Staged(rel, original, migrated)
    for side, path in (("original", original), ("migrated", migrated)):
        with open(path, "rb") as fh:
            script = notebook_script(fh.read().decode("utf-8-sig", "replace"))
        folder = os.path.join(work, "notebooks", side, str(abs(hash(rel)) % 10 ** 8))
        os.makedirs(folder, exist_ok=True)
        target = os.path.join(folder, os.path.splitext(os.path.basename(path))[0] + ".py")
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(script.text)
        out.homes[target] = os.path.dirname(os.path.abspath(path))
        if side == "original":
            out.original, out.old_cells = target, script
        else:
            out.migrated, out.new_cells = target, script
    return out


__all__ = ["NotebookScript", "NotebookUnreadable", "Pairing", "Staged", "notebook_script", "pair_trees", "stage"]
