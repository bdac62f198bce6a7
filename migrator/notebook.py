"""Jupyter notebooks: migrate the code cells, keep the rest as it was.

The code cells are joined into one module (so an override in one cell and the
gradient it governs in another are seen together), migrated, and split back.
IPython magics are masked, as black does for Jupyter: each magic line (``%``,
``!``, ``?`` help, ``x = !cmd``) becomes a placeholder line of Python with the
same indentation, so the rest of the cell is still read, and comes back
unchanged afterwards.  A gradient call inside a magic line cannot be rewritten
and is reported (TFG136).  Cells under a cell magic whose body is not Python
(``%%bash``, ``%%writefile``, ...) are left alone.  The JSON is re-serialised in
the layout the file already uses when that layout can be recognised, so
unchanged cells keep their bytes.
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Optional

from migrator.files import FileError
from migrator.model import HESSIANS, JACOBIAN, MANUAL, MIGRATED, OVERRIDE_MAP, TF_GRADIENTS, Site

CELL_MARKER = "# tfgradmigrate-cell-"  # the comment that opens each cell in the joined module
_MARKER = CELL_MARKER + "{}"
_PLACEHOLDER = "__tfgradmigrate_magic_{}__"
#: cell magics whose body is Python (black's list)
PYTHON_CELL_MAGICS = frozenset({"capture", "prun", "pypy", "python", "python3", "time", "timeit"})
_LINE_MAGIC = re.compile(r"^\s*(%|!)")
#: magics that run code in the notebook's namespace (an adversarial run: `%run fakes.py` rebound `tf`)
_BINDING_MAGIC = re.compile(r"^\s*%{1,2}(run|load|load_ext|reload_ext|store|aimport|macro|rerun|recall)\b"
                            r"(?!\s+(tensorboard|autoreload|line_profiler|memory_profiler|watermark)\s*$)")
_HELP = re.compile(r"^\s*(\?{1,2}\s*[\w.]|[\w.]+(\(\))?\s*\?{1,2}\s*$)")
_ASSIGN_MAGIC = re.compile(r"^\s*(?P<target>[A-Za-z_][\w.]*(\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*[!%]")
#: gradient APIs a magic line may call: reported, never rewritten
_GRADIENT_CALL = re.compile(
    r"\b((?:[A-Za-z_]\w*\.)*(gradient_override_map|gradients|hessians|batch_jacobian|jacobian))\s*\(")
_KIND = {"gradient_override_map": OVERRIDE_MAP, "gradients": TF_GRADIENTS, "hessians": HESSIANS,
         "jacobian": JACOBIAN, "batch_jacobian": JACOBIAN}
MAGIC_CODE = "TFG136"


class NotebookError(FileError):
    """The notebook is not valid JSON, or one of its cells cannot be parsed."""


def is_magic(line: str) -> bool:
    """Whether IPython reads ``line`` as a magic, a shell escape or a help request."""
    return bool(_LINE_MAGIC.match(line) or _HELP.match(line) or _ASSIGN_MAGIC.match(line))


@dataclass
class Cell:
    """One code cell: its text, and the Python the migrator reads in its place."""

    index: int
    text: str
    code: str
    #: placeholder line (stripped) -> the magic line it stands for (stripped), in order
    masks: dict[str, str] = field(default_factory=dict)
    #: gradient calls found inside magic lines: (line in cell, column, call as written, API name)
    magic_calls: list[tuple[int, int, str, str]] = field(default_factory=list)


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


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return True


def mask(index: int, text: str) -> Optional[Cell]:
    """The cell with its magics masked; None for a cell that holds no Python."""
    if not text.strip():
        return None
    if _parses(text):
        return Cell(index, text, text)
    lines = text.splitlines(keepends=True)
    first = lines[0].strip()
    if first.startswith("%%") and (first[2:].split() or [""])[0] not in PYTHON_CELL_MAGICS:
        return None  # %%bash, %%writefile, ...: the body is not Python
    cell = Cell(index, text, "")
    out = []
    continued = False  # the previous magic line ended in a backslash
    indent = ""
    for n, line in enumerate(lines, 1):
        body = line.rstrip("\r\n")
        if continued or is_magic(body):
            if not continued:
                indent = body[: len(body) - len(body.lstrip())]
            for found in _GRADIENT_CALL.finditer(body):
                cell.magic_calls.append((n, found.start() + 1, found.group(1), found.group(2)))
            target = _ASSIGN_MAGIC.match(body) if not continued else None
            token = _PLACEHOLDER.format(len(cell.masks))
            placeholder = f"{target.group('target')} = {token}()" if target else f"{token}()"
            if not target and _BINDING_MAGIC.match(body):
                placeholder = f"exec({token}())"  # `%run x.py` runs code in this namespace: it may bind any name
            cell.masks[placeholder] = body.strip()
            out.append(indent + placeholder + line[len(body):])
            continued = body.endswith("\\")
        else:
            out.append(line)
    cell.code = "".join(out)
    return cell


def code_cells(nb: dict) -> list[Cell]:
    """The code cells that hold Python, magics masked (none in a notebook of another kernel, R say)."""
    meta = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    language = (meta.get("kernelspec") or {}).get("language") or (meta.get("language_info") or {}).get("name")
    if isinstance(language, str) and language.lower() not in ("python", "python3", "ipython", "ipython3"):
        return []
    out = []
    for i, raw in enumerate(nb["cells"]):
        if isinstance(raw, dict) and raw.get("cell_type") == "code":
            cell = mask(i, _cell_text(raw))
            if cell is not None:
                out.append(cell)
    return out


def joined_code(cells: list[Cell]) -> str:
    """One module holding the cells, each after a marker comment."""
    return "".join(_MARKER.format(c.index) + "\n" + c.code + ("" if c.code.endswith("\n") else "\n") for c in cells)


def notebook_code(text: str) -> str:
    """A notebook's JSON text as one module of its code cells (raises NotebookError)."""
    return joined_code(code_cells(load(text)))


def _split(code: str, cells: list[Cell]) -> Optional[dict[int, str]]:
    """The migrated module cut back into cells; None when a rewrite moved code across them."""
    lines = code.splitlines(keepends=True)
    markers = {_MARKER.format(c.index): c.index for c in cells}
    starts = [(n, markers[line.strip()]) for n, line in enumerate(lines) if line.strip() in markers]
    if [i for _, i in starts] != [c.index for c in cells]:
        return None
    head = "".join(lines[: starts[0][0]]) if starts else ""
    out = {}
    for k, (n, i) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
        out[i] = "".join(lines[n + 1:end])
    if head.strip():  # something a rewrite put above the first cell (an import) opens that cell
        out[starts[0][1]] = head + out[starts[0][1]]
    return out


def _same_tail(new: str, old: str) -> str:
    """``new`` ending as ``old`` did: blank lines a rewrite leaves between cells mean nothing in a notebook."""
    if new.rstrip() == old.rstrip():
        return old
    return new.rstrip("\n") + old[len(old.rstrip("\n")):]


def _unmask(code: str, cell: Cell) -> Optional[str]:
    """Put the magic lines back; None when a rewrite moved or changed one."""
    if not cell.masks:
        return code
    lines = code.splitlines(keepends=True)
    old_lines = cell.code.splitlines(keepends=True)
    indents = {ln.strip(): ln[: len(ln) - len(ln.lstrip())] for ln in old_lines if ln.strip() in cell.masks}
    seen = set()
    for n, line in enumerate(lines):
        stripped = line.strip()
        if stripped in cell.masks:
            indent = line[: len(line) - len(line.lstrip())]
            if indent != indents[stripped] or stripped in seen:
                return None  # the rewrite moved a magic into another block
            seen.add(stripped)
            lines[n] = indent + cell.masks[stripped] + line[len(line.rstrip("\r\n")):]
        elif "__tfgradmigrate_magic_" in line:
            return None  # the rewrite changed a masked line
    if seen != set(cell.masks):
        return None  # the rewrite dropped one
    first = old_lines[0].strip() if old_lines else ""
    if first in cell.masks and cell.masks[first].startswith("%%"):
        # a cell magic must stay the cell's first line: what the rewrite put above it (an import)
        # goes below it, where it runs under the magic as the rest of the cell does
        at = next(n for n, ln in enumerate(lines) if ln.strip() == cell.masks[first])
        lines.insert(0, lines.pop(at))
    return "".join(lines)


def _cell_lines(cells: list[Cell]) -> list[tuple[int, int]]:
    """For each line of the joined module: (cell number, line in the cell)."""
    out = []
    for c in cells:
        out.append((c.index, 0))
        out.extend((c.index, k + 1) for k in range(len(c.code.splitlines()) or 1))
    return out


def _magic_sites(cells: list[Cell]) -> list[Site]:
    from migrator.suppress import acknowledge_site, codes_in, covers

    sites = []
    for c in cells:
        lines = c.text.splitlines()
        for line, col, call, api in c.magic_calls:
            site = Site(_KIND[api], MAGIC_CODE, line, col, MANUAL,
                        f"`{call}` is called inside an IPython magic or shell line, which the migrator does not rewrite",
                        notes=[f"cell {c.index}"])
            if covers(codes_in(lines[line - 1]), MAGIC_CODE):
                acknowledge_site(site)
            sites.append(site)
    return sites


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
    sites = sorted(sites + _magic_sites(cells), key=lambda s: (_cell_of(s), s.line, s.col))
    if new_joined == joined:
        return text, sites
    split = _split(new_joined, cells)
    if split is None:
        return text, [_refused(s, "the rewrite spans several notebook cells; migrate it by hand") for s in sites]
    changed = {}
    for c in cells:
        new = _unmask(split[c.index], c)
        if new is None:
            return text, [_refused(s, "the rewrite would move an IPython magic line; migrate this cell by hand")
                          for s in sites]
        new = _same_tail(new, c.text)
        if new != c.text:
            changed[c.index] = new
    if not changed:
        return text, sites
    for i, t in changed.items():
        _set_cell_text(nb["cells"][i], t)
    return dump(nb, text), sites


def _cell_of(site: Site) -> int:
    for note in site.notes:
        if note.startswith("cell ") and note[5:].isdigit():
            return int(note[5:])
    return -1


def _refused(site: Site, why: str) -> Site:
    if site.status == MIGRATED:
        site.status = MANUAL
        site.new_line = None
        site.notes.append(why)
    return site


#: json.dumps settings that notebook writers use: nbformat (indent 1, sorted keys),
#: VS Code and Colab (indent 1 or 2, their own key order), and compact files
_LAYOUTS = [dict(indent=i, sort_keys=k, ensure_ascii=a) for i in (1, 2, 4, 0) for k in (True, False) for a in (False, True)]
_LAYOUTS += [dict(indent=None, separators=sep, sort_keys=k, ensure_ascii=a)
             for sep in ((", ", ": "), (",", ":")) for k in (True, False) for a in (False, True)]


def dump(nb: dict, original: str) -> str:
    """Serialise ``nb`` in the layout that reproduces ``original`` exactly, if any (else in
    nbformat's own: indent 1, sorted keys, a final newline).

    That fallback re-serialises every cell, so it is taken only when it keeps every value:
    a duplicate key (dropped) or a number beyond float range (``Infinity``, not JSON) makes
    the notebook reported and left as it is (found by an adversarial run)."""
    old = json.loads(original)
    for kw in _LAYOUTS:
        rendered = json.dumps(old, **kw)
        for tail in ("\n", ""):
            if rendered + tail == original:
                return json.dumps(nb, **kw) + tail
    try:
        json.loads(original, object_pairs_hook=_no_duplicates, parse_constant=_no_constant,
                   parse_float=_finite_float)
    except ValueError as e:
        raise NotebookError(f"the notebook's JSON cannot be written back without loss ({e}); left unchanged "
                            "(save it from Jupyter first)") from None
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _no_duplicates(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a duplicate key")
    return dict(pairs)


def _no_constant(text: str):
    raise ValueError(f"the non-JSON constant {text}")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text}, beyond float range")
    return value
