"""``--annotate``: a TODO comment above each manual site.

The comment goes above the first line of the statement holding the site,
with that line's indentation, so it never lands inside a string or splits a
statement.  A comment that is already there (from an earlier run) is not
added again.
"""
from __future__ import annotations

import io
import textwrap
import tokenize
from typing import Optional

from migrator.codes import CODES, title
from migrator.model import MANUAL, Site

PREFIX = "# TODO(tfgradmigrate): "
#: a comment stays under 100 characters (the full reason is in every report)
LIMIT = 99


#: how the clause that says what to do begins (``...; open a tf.GradientTape where ...``)
_FIX_VERBS = ("open ", "bind ", "move ", "make ", "call ", "migrate ", "use ", "pass ", "write ", "wrap ",
              "define ", "import ", "re-run ", "run ", "fix ", "enter ", "read ", "register ", "keep ")


def comments_for(site: Site) -> list[str]:
    """One comment with what is wrong and, when the reason says what to do, one with that."""
    reason = " ".join((site.reason or (title(site.code) if site.code in CODES else site.kind)).split())
    head = f"{PREFIX}{site.code} "
    room = LIMIT - len(head)
    if len(reason) <= room:
        return [head + reason]
    clauses = reason.split("; ")
    out = [head + _shorten(clauses[0], room)]
    fix = next((c for c in clauses[1:] if c.startswith(_FIX_VERBS) and c != "migrate by hand"), None)
    if fix is None and "--unsafe-fixes" in reason:
        fix = "if the assumption holds, re-run with --unsafe-fixes"
    if fix is not None:
        out.append(head + _shorten(fix, room))
    return out


def _shorten(reason: str, room: int) -> str:
    """The reason if it fits, else its first clause, cut at a word if that is still too long."""
    if len(reason) <= room:
        return reason
    clause = reason.split("; ")[0]
    return clause if len(clause) <= room else textwrap.shorten(clause, room, placeholder=" ...")


def _statement_starts(text: str) -> Optional[list[int]]:
    """For each 1-based line, the first line of the logical line it belongs to."""
    lines = text.splitlines()
    start_of = list(range(len(lines) + 2))
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    first = None
    skip = (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING)
    for tok in tokens:
        if first is None and tok.type not in skip and tok.type != tokenize.NEWLINE:
            first = tok.start[0]
        if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER) and first is not None:
            for ln in range(first, tok.end[0] + 1):
                if ln < len(start_of):
                    start_of[ln] = first
            first = None
    return start_of


def annotate_manual_sites(text: str, sites: list[Site], back_map: Optional[dict]) -> str:
    """Insert a TODO comment above each manual site of ``text``.

    Site lines are lines of the original file; ``back_map`` maps lines of
    ``text`` to original lines (None: ``text`` is the original).
    """
    manual = [s for s in sites if s.status == MANUAL and s.line >= 1]
    if not manual:
        return text
    starts = _statement_starts(text)
    if starts is None:
        return text
    lines = text.splitlines(keepends=True)
    newline = "\r\n" if "\r\n" in text else "\n"
    forward: dict[int, int] = {}
    if back_map:
        for new, old in sorted(back_map.items()):
            forward.setdefault(old, new)
    inserts: dict[int, list[str]] = {}
    for site in sorted(manual, key=lambda s: (s.line, s.code)):
        line = forward.get(site.line, site.line) if back_map else site.line
        if not 1 <= line <= len(lines):
            continue
        line = starts[line] if line < len(starts) else line
        comments = comments_for(site)
        if comments[0] in inserts.get(line, []) or _already_there(lines, line, site.code):
            continue
        inserts.setdefault(line, []).extend(comments)
    if not inserts:
        return text
    out = []
    for n, line in enumerate(lines, 1):
        if n in inserts:
            indent = line[: len(line) - len(line.lstrip(" \t"))]
            out += [indent + c + newline for c in inserts[n]]
        out.append(line)
    return "".join(out)


def _already_there(lines: list[str], line: int, code: str) -> bool:
    """Whether the comment block right above ``line`` already names ``code``."""
    k = line - 2
    while k >= 0 and lines[k].lstrip().startswith(PREFIX):
        if lines[k].lstrip()[len(PREFIX):].split(" ", 1)[0].strip() == code:
            return True
        k -= 1
    return False
