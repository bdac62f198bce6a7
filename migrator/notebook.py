"""Jupyter notebooks: migrate the code cells, keep the rest as it was.

The code cells without IPython magics are joined into one module (so an
override in one cell and the gradient it governs in another are seen
together), migrated, and split back.  Cells with magics (``%``, ``!``, ``?``
lines) are left alone.  The JSON is re-serialised in the layout the file
already uses when that layout can be recognised, so unchanged cells keep
their bytes.
"""
from __future__ import annotations

import json
import re
from typing import Optional

from migrator.files import FileError
from migrator.model import Site

_MAGIC = re.compile(r"^\s*(%|!|\?)|\?\s*$|^\s*\w+\s*=\s*[!%]")
_MARKER = "# tfgradmigrate-cell-{}"


class NotebookError(FileError):
    """The notebook is not valid JSON, or one of its cells cannot be parsed."""


def _has_magic(code: str) -> bool:
    return any(_MAGIC.search(line) for line in code.splitlines())


def _cell_text(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _set_cell_text(cell: dict, text: str) -> None:
    if isinstance(cell.get("source"), list):
        cell["source"] = text.splitlines(keepends=True)
    else:
        cell["source"] = text


def load(text: str) -> dict:
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as e:
        raise NotebookError(f"not a valid notebook: {e.msg}", e.lineno, e.colno) from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotebookError("not a valid notebook: no list of cells")
    return nb


def code_cells(nb: dict) -> list[tuple[int, str]]:
    """(cell number, text) of each code cell that may be migrated."""
    out = []
    for i, cell in enumerate(nb["cells"]):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            text = _cell_text(cell)
            if text.strip() and not _has_magic(text):
                out.append((i, text))
    return out


def joined_code(cells: list[tuple[int, str]]) -> str:
    """One module holding the cells, each after a marker comment."""
    parts = []
    for i, text in cells:
        parts.append(_MARKER.format(i) + "\n" + text + ("" if text.endswith("\n") else "\n"))
    return "".join(parts)


def _split(code: str, cells: list[tuple[int, str]]) -> Optional[dict[int, str]]:
    lines = code.splitlines(keepends=True)
    starts = []
    for n, line in enumerate(lines):
        for i, _ in cells:
            if line.strip() == _MARKER.format(i):
                starts.append((n, i))
    if [i for _, i in starts] != [i for i, _ in cells]:
        return None  # a rewrite moved code across cells: give up on the joined form
    out = {}
    for k, (n, i) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
        text = "".join(lines[n + 1:end])
        original = dict(cells)[i]
        if not original.endswith("\n") and text.endswith("\n"):
            text = text[:-1]
        out[i] = text
    return out


def _cell_lines(cells: list[tuple[int, str]]) -> list[tuple[int, int]]:
    """For each line of the joined module: (cell number, line in the cell)."""
    out = []
    for i, text in cells:
        out.append((i, 0))
        out.extend((i, k + 1) for k in range(len(text.splitlines()) or 1))
    return out


def migrate_notebook(text: str, path: str, index, options) -> tuple[str, list[Site]]:
    """Migrate a notebook's text; returns (new_text, sites).

    Site lines are lines within their cell; a note names the cell.
    """
    from migrator.pipeline import ParseError, migrate_text

    nb = load(text)
    cells = code_cells(nb)
    if not cells:
        return text, []
    joined = joined_code(cells)
    where = _cell_lines(cells)
    try:
        new_joined, sites = migrate_text(joined, path, index, options)
    except ParseError as e:
        cell, line = where[min(e.line, len(where)) - 1]
        raise NotebookError(f"cell {cell}: {e.message}", line, e.col) from None
    for site in sites:
        if 1 <= site.line <= len(where):
            cell, line = where[site.line - 1]
            site.line = line
            site.notes.append(f"cell {cell}")
    if new_joined == joined:
        return text, sites
    split = _split(new_joined, cells)
    if split is None:
        return text, [_moved(s) for s in sites]
    changed = {i: t for i, t in split.items() if t != dict(cells)[i]}
    for i, t in changed.items():
        _set_cell_text(nb["cells"][i], t)
    return dump(nb, text), sites


def _moved(site: Site) -> Site:
    site.status = "manual"
    site.new_line = None
    site.notes.append("the rewrite spans several notebook cells; migrate it by hand")
    return site


def dump(nb: dict, original: str) -> str:
    """Serialise ``nb`` in the layout that reproduces ``original`` exactly, if any."""
    old = json.loads(original)
    for indent in (1, 2, 4, None):
        for sort_keys in (True, False):
            for ensure_ascii in (False, True):
                kw = dict(indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii)
                if indent is None:
                    kw["separators"] = (", ", ": ")
                for tail in ("\n", ""):
                    if json.dumps(old, **kw) + tail == original:
                        return json.dumps(nb, **kw) + tail
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
