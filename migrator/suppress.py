"""Inline suppression comments, as ``# noqa`` is for ruff.

``# tfgradmigrate: ignore[TFG120]`` (several codes: ``ignore[TFG120, TFG125]``)
or a bare ``# tfgradmigrate: ignore`` on any line of the statement holding a
manual site turns that site into an acknowledged one (status ``ignored``): it
is still reported and counted, but no longer fails the run, so a pre-commit
hook can pass on purpose.  It never stops a rewrite the migrator has proved:
only sites left for a person can be acknowledged.
"""
from __future__ import annotations

import io
import re
import tokenize
from typing import Optional

from migrator.model import IGNORED, MANUAL, Site

MARKER = "tfgradmigrate:"
_COMMENT = re.compile(r"#.*?\btfgradmigrate:\s*ignore\b(?:\[(?P<codes>[^\]]*)\])?", re.I)
#: codes acknowledged by one comment; ALL for a bare ``ignore``
ALL = frozenset({"*"})


def codes_in(text: str) -> Optional[frozenset]:
    """The codes a comment (or a line ending in one) acknowledges; None when it has no suppression."""
    found = _COMMENT.search(text)
    if not found:
        return None
    if found.group("codes") is None:
        return ALL
    codes = frozenset(c.strip().upper() for c in found.group("codes").split(",") if c.strip())
    return ALL if "*" in codes else codes


def covers(codes: Optional[frozenset], code: str) -> bool:
    return codes is not None and (codes is ALL or code in codes)


def _comments_by_statement(source: str) -> dict[int, frozenset]:
    """For each line of a statement that carries a suppression comment, the codes it names.

    Comments are found with :mod:`tokenize`, so the words in a string do not count.
    """
    out: dict[int, frozenset] = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return out
    first: Optional[int] = None
    found: set[str] = set()
    bare = False
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            codes = codes_in(tok.string)
            if first is None:  # a comment on a line of its own belongs to that line only
                if codes is not None:
                    out[tok.start[0]] = codes
            elif codes is ALL:
                bare = True
            elif codes:
                found |= codes
            continue
        if tok.type in (tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING):
            continue
        if first is None and tok.type not in (tokenize.NEWLINE, tokenize.ENDMARKER):
            first = tok.start[0]
        if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER) and first is not None:
            if bare or found:
                codes = ALL if bare else frozenset(found)
                for line in range(first, tok.end[0] + 1):
                    out[line] = codes
            first, found, bare = None, set(), False
    return out


def acknowledge(source: str, sites: list[Site]) -> None:
    """Mark the manual sites whose statement carries a matching suppression comment ``ignored``."""
    if not any(s.status == MANUAL for s in sites) or MARKER not in source.lower():
        return
    by_line = _comments_by_statement(source)
    for site in sites:
        if site.status == MANUAL and covers(by_line.get(site.line), site.code):
            acknowledge_site(site)


def acknowledge_site(site: Site) -> None:
    site.status = IGNORED
    site.notes.append("acknowledged by a `# tfgradmigrate: ignore` comment")
