"""Run reports: JSON (machine-readable), Markdown, HTML and SARIF.

The format follows the report file's extension.  Every site shows its stable
code (``migrator/codes.py``, documented in ``docs/codes.md``).
"""
from __future__ import annotations

import difflib
import html
import json
import os
from typing import Callable

from migrator import __version__
from migrator.codes import CODES, advice, title
from migrator.model import MANUAL, FileResult, Site

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


def _code_title(code: str) -> str:
    return title(code) if code in CODES else ""


def site_reason(site: Site) -> str:
    return site.reason or _code_title(site.code)


def to_json(results: list[FileResult], summary: dict) -> str:
    files = []
    for r in results:
        entry = r.to_json()
        for site, data in zip(r.sites, entry["sites"]):
            data["reason"] = site_reason(site)
        files.append(entry)
    return json.dumps({"version": 1, "tool": "tfgradmigrate", "tool_version": __version__,
                       "files": files, "summary": summary}, indent=2) + "\n"


def _loc(r: FileResult, s: Site) -> str:
    cell = next((n for n in s.notes if n.startswith("cell ")), None)
    return f"{r.path}:{s.line}" + (f" ({cell})" if cell else "")


def _verdict(s: Site) -> str:
    return (s.verification or {}).get("status", "")


def to_markdown(results: list[FileResult], summary: dict) -> str:
    out = ["# tfgradmigrate report", ""]
    out += ["| files scanned | changed | sites migrated | sites manual | errors |", "|---|---|---|---|---|"]
    out.append(f"| {summary.get('files_scanned', 0)} | {summary.get('files_changed', 0)} | "
               f"{summary.get('sites_migrated', 0)} | {summary.get('sites_manual', 0)} | {summary.get('errors', 0)} |")
    manual = [(r, s) for r in results for s in r.sites if s.status == MANUAL]
    migrated = [(r, s) for r in results for s in r.sites if s.status != MANUAL]
    errors = [r for r in results if r.error]
    if manual:
        out += ["", "## Needs a person", ""]
        for r, s in manual:
            hint = advice(s.code) if s.code in CODES else ""
            out.append(f"- [ ] `{_loc(r, s)}` **{s.code}** {s.kind}: {_md(site_reason(s))}" + (f" — {_md(hint)}" if hint else ""))
    if migrated:
        out += ["", "## Migrated", ""]
        for r, s in migrated:
            v = _verdict(s)
            out.append(f"- [x] `{_loc(r, s)}` **{s.code}** {s.kind}: {_md(site_reason(s))}" + (f" (verification: {v})" if v else ""))
            out += [f"  - assumed (unsafe fix): {_md(a)}" for a in s.assumptions]
            out += [f"  - proved: {_md(p)}" for p in s.proof]
    if errors:
        out += ["", "## Errors", ""]
        out += [f"- `{_md(r.error or '')}`" for r in errors]
    out += ["", f"Codes are explained in {CODES_DOC}.", ""]
    return "\n".join(out)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


_CSS = """body{font-family:system-ui,sans-serif;margin:2em}table.diff{font-family:monospace;font-size:12px;border-collapse:collapse}
.diff_header{background:#eee}.diff_add{background:#cfc}.diff_chg{background:#ffa}.diff_sub{background:#fcc}
td{vertical-align:top;padding:0 4px}.manual{color:#a40}.migrated{color:#070}code{background:#f4f4f4}"""


def to_html(results: list[FileResult], summary: dict) -> str:
    e = html.escape
    body = ["<h1>tfgradmigrate report</h1>", "<p>" + ", ".join(
        f"{e(k.replace('_', ' '))}: {e(str(v))}" for k, v in summary.items()) + "</p>"]
    manual = [(r, s) for r in results for s in r.sites if s.status == MANUAL]
    body.append(f"<h2>Needs a person ({len(manual)})</h2><ul>")
    for r, s in manual:
        hint = advice(s.code) if s.code in CODES else ""
        body.append(f"<li class=manual><code>{e(_loc(r, s))}</code> <b>{e(s.code)}</b> {e(s.kind)}: "
                    f"{e(site_reason(s))}{' — ' + e(hint) if hint else ''}</li>")
    body.append("</ul>")
    errors = [r for r in results if r.error]
    if errors:
        body.append(f"<h2>Errors ({len(errors)})</h2><ul>")
        body += [f"<li><code>{e(r.error or '')}</code></li>" for r in errors]
        body.append("</ul>")
    body.append("<h2>Changes</h2>")
    differ = difflib.HtmlDiff(wrapcolumn=100)
    for r in results:
        if not r.changed:
            continue
        body.append(f"<h3>{e(r.path)}</h3><ul>")
        for s in r.sites:
            v = _verdict(s)
            body.append(f"<li class={'manual' if s.status == MANUAL else 'migrated'}>line {s.line} "
                        f"<b>{e(s.code)}</b> {e(s.status)}: {e(site_reason(s))}{' — verification: ' + e(v) if v else ''}"
                        + "".join(f"<br>assumed (unsafe fix): {e(a)}" for a in s.assumptions)
                        + "".join(f"<br>proved: {e(p)}" for p in s.proof) + "</li>")
        body.append("</ul>")
        if r.original is not None and r.migrated is not None:
            body.append(differ.make_table(r.original.splitlines(), r.migrated.splitlines(),
                                          "original", "migrated", context=True, numlines=3))
    return ("<!DOCTYPE html><html><head><meta charset=utf-8><title>tfgradmigrate report</title>"
            f"<style>{_CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def to_sarif(results: list[FileResult], summary: dict) -> str:
    used = sorted({s.code for r in results for s in r.sites})
    rules = [{"id": c, "shortDescription": {"text": _code_title(c) or c},
              "help": {"text": (advice(c) if c in CODES else "") or _code_title(c) or c}} for c in used]
    out = []
    for r in results:
        uri = r.path.replace(os.sep, "/")
        for s in r.sites:
            out.append({
                "ruleId": s.code,
                "level": "warning" if s.status == MANUAL else "note",
                "message": {"text": f"{s.kind} {s.status}: {site_reason(s)}"},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri},
                                                    "region": {"startLine": max(1, s.line), "startColumn": max(1, s.col)}}}],
            })
        if r.error:
            line, col = _error_position(r.error, r.path)
            out.append({"ruleId": "error", "level": "error", "message": {"text": r.error},
                        "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri},
                                                            "region": {"startLine": line, "startColumn": col}}}]})
    if any(r.error for r in results):
        rules.append({"id": "error", "shortDescription": {"text": "file could not be read or parsed"}})
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "tfgradmigrate", "version": __version__, "rules": rules}},
                  "results": out}],
    }
    return json.dumps(doc, indent=2) + "\n"


def _error_position(error: str, path: str) -> tuple[int, int]:
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
