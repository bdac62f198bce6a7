"""Run reports: JSON (machine-readable), Markdown, HTML and SARIF.

The format follows the report file's extension.  Every site shows its stable
code (``migrator/codes.py``, documented in ``docs/codes.md``).
"""
from __future__ import annotations

import json
import os
import re
from typing import Callable, Optional
from urllib.parse import quote

from migrator import __version__
from migrator.codes import CODES, advice, title
from migrator.model import IGNORED, MANUAL, FileResult, Site

FORMATS = (".json", ".md", ".html", ".sarif")
CODES_DOC = "docs/codes.md in the tfgradmigrate repository"


def render(fmt: str, results: list[FileResult], summary: dict) -> str:
    renderers: dict[str, Callable[[list[FileResult], dict], str]] = {
        ".json": to_json, ".md": to_markdown, ".html": to_html, ".sarif": to_sarif,
    }
    return renderers[fmt](results, summary)


def write(path: str, results: list[FileResult], summary: dict) -> None:
    fmt = os.path.splitext(path)[1].lower()
    text = render(fmt, results, summary)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)


def code_title(code: str) -> str:
    return title(code) if code in CODES else ""


def site_reason(site: Site) -> str:
    return site.reason or code_title(site.code)


def _words(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def distinct_advice(site: Site) -> str:
    """What to do about a site's code, unless its reason already says it."""
    hint = advice(site.code) if site.code in CODES else ""
    return hint if hint and _words(hint) not in _words(site_reason(site)) else ""


def to_json(results: list[FileResult], summary: dict) -> str:
    files = []
    for r in results:
        entry = r.to_json()
        for site, data in zip(r.sites, entry["sites"]):
            data["reason"] = site_reason(site)
        files.append(entry)
    return json.dumps({"version": 1, "tool": "tfgradmigrate", "tool_version": __version__,
                       "files": files, "summary": summary}, indent=2) + "\n"


def cell_of(s: Site) -> Optional[str]:
    """``cell N`` for a site in a notebook."""
    return next((n for n in s.notes if n.startswith("cell ")), None)


def position(r: FileResult, s: Site) -> str:
    """``path:line:col``, or ``path:cell N:line:col`` in a notebook (as ruff writes it)."""
    cell = cell_of(s)
    return f"{r.path}:{cell + ':' if cell else ''}{s.line}:{s.col}"


def location(r: FileResult, s: Site) -> str:
    cell = next((n for n in s.notes if n.startswith("cell ")), None)
    return f"{r.path}:{s.line}" + (f" ({cell})" if cell else "")


def verdict(s: Site) -> str:
    return (s.verification or {}).get("status", "")


def to_markdown(results: list[FileResult], summary: dict) -> str:
    dry = summary.get("mode") in ("check", "diff")
    out = ["# tfgradmigrate report", ""]
    out += [f"| files scanned | {'would change' if dry else 'changed'} | sites {'to migrate' if dry else 'migrated'} "
            "| unsafe fixes | needs a person | acknowledged | errors |", "|---|---|---|---|---|---|---|"]
    out.append("| " + " | ".join(str(summary.get(k, 0)) for k in (
        "files_scanned", "files_changed", "sites_migrated", "sites_unsafe", "sites_manual", "sites_ignored", "errors"))
        + " |")
    manual = [(r, s) for r in results for s in r.sites if s.status == MANUAL]
    ignored = [(r, s) for r in results for s in r.sites if s.status == IGNORED]
    migrated = [(r, s) for r in results for s in r.sites if s.migrated]
    errors = [r for r in results if r.error]
    if manual:
        out += ["", "## Needs a person", ""]
        for r, s in manual:
            hint = distinct_advice(s)
            out.append(f"- [ ] `{location(r, s)}` **{s.code}** {s.kind}: {_md(site_reason(s))}"
                       + (f" — {_md(hint)}" if hint else ""))
    if ignored:
        out += ["", "## Acknowledged (`# tfgradmigrate: ignore`)", ""]
        out += [f"- `{location(r, s)}` **{s.code}** {s.kind}: {_md(site_reason(s))}" for r, s in ignored]
    if migrated:
        out += ["", "## Migrated", ""]
        for r, s in migrated:
            v = verdict(s)
            unsafe = " **unsafe fix**" if s.unsafe else ""
            out.append(f"- [x] `{location(r, s)}` **{s.code}**{unsafe} {s.kind}: {_md(site_reason(s))}"
                       + (f" (verification: {v})" if v else ""))
            out += [f"  - assumed (unsafe fix): {_md(a)}" for a in s.assumptions]
            out += [f"  - proved: {_md(p)}" for p in s.proof]
    if errors:
        out += ["", "## Errors", ""]
        out += [f"- `{_md(r.error or '')}`" for r in errors]
    out += ["", f"Codes are explained in {CODES_DOC}.", ""]
    return "\n".join(out)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_html(results: list[FileResult], summary: dict) -> str:
    from migrator.report_html import render

    return render(results, summary)


def _uri(path: str) -> tuple[str, Optional[str]]:
    """(uri, uriBaseId): relative to the current directory when the file is below it, else a file: URI."""
    absolute = os.path.abspath(path)
    rel = os.path.relpath(absolute)
    if not rel.startswith(os.pardir):
        return quote(rel.replace(os.sep, "/")), "%SRCROOT%"
    return "file://" + quote(absolute.replace(os.sep, "/") if absolute.startswith("/") else "/" + absolute.replace(os.sep, "/")), None


def _location(path: str, line: int, col: int) -> dict:
    uri, base = _uri(path)
    artifact = {"uri": uri, "uriBaseId": base} if base else {"uri": uri}
    return {"physicalLocation": {"artifactLocation": artifact,
                                 "region": {"startLine": max(1, line), "startColumn": max(1, col)}}}


def to_sarif(results: list[FileResult], summary: dict) -> str:
    """SARIF 2.1.0 (valid against the OASIS schema): manual sites are warnings, acknowledged ones carry
    an in-source suppression, migrated ones are notes; file errors are errors."""
    used = sorted({s.code for r in results for s in r.sites})
    rules = [{"id": c, "shortDescription": {"text": code_title(c) or c},
              "help": {"text": (advice(c) if c in CODES else "") or code_title(c) or c}} for c in used]
    out = []
    for r in results:
        for s in r.sites:
            result = {
                "ruleId": s.code,
                "level": "note" if s.migrated else "warning",
                "message": {"text": f"{s.kind} {'unsafe fix' if s.unsafe else s.status}: {site_reason(s)}"},
                "locations": [_location(r.path, s.line, s.col)],
            }
            if s.status == IGNORED:
                result["suppressions"] = [{"kind": "inSource", "justification": "# tfgradmigrate: ignore"}]
            if s.proof or s.assumptions:
                result["properties"] = {"proof": list(s.proof), "assumptions": list(s.assumptions)}
            out.append(result)
        if r.error:
            line, col = error_position(r.error, r.path)
            out.append({"ruleId": "error", "level": "error", "message": {"text": r.error},
                        "locations": [_location(r.path, line, col)]})
    if any(r.error for r in results):
        rules.append({"id": "error", "shortDescription": {"text": "file could not be read or parsed"}})
    cwd = os.getcwd().replace(os.sep, "/")
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "tfgradmigrate", "version": __version__, "rules": rules}},
                  "originalUriBaseIds": {"%SRCROOT%": {"uri": "file://" + quote(cwd if cwd.startswith("/") else "/" + cwd)
                                                       + "/"}},
                  "results": out}],
    }
    return json.dumps(doc, indent=2) + "\n"


def error_position(error: str, path: str) -> tuple[int, int]:
    rest = error[len(path) + 1:] if error.startswith(path + ":") else ""
    parts = rest.split(":", 2)
    try:
        return max(1, int(parts[0])), max(1, int(parts[1]))
    except (ValueError, IndexError):
        return 1, 1


def codes_markdown() -> str:
    """docs/codes.md, generated from migrator/codes.py (tests/test_docs.py keeps it fresh)."""
    out = ["# Codes", "",
           "Every site tfgradmigrate reports carries one of these stable codes. A code never changes",
           "meaning; new codes are only appended. This page is generated from `migrator/codes.py`.", "",
           "TFG001–TFG099 are rewrites the tool made; TFG100 and up are sites it left for a person.", ""]
    for code, (ttl, hint) in CODES.items():
        out += [f"## {code}", "", ttl + ".", ""]
        if hint:
            out += [f"What to do: {hint}.", ""]
    return "\n".join(out)
