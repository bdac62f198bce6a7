"""What the command prints on stdout besides diffs: ``--output-format`` and ``--statistics``.

``text`` is the default (one ``path:line:col: CODE ...`` line a site, on
stderr; see cli.py); ``json`` and ``sarif`` print the report of the same
name (reports.py); ``github`` prints workflow commands that GitHub Actions
shows as annotations on the pull request.
"""
from __future__ import annotations

import json
import os
from collections import Counter

from migrator import reports
from migrator.model import IGNORED, MANUAL, FileResult, Site

FORMATS = ("text", "json", "github", "sarif")
DRY_RUN_MODES = ("check", "diff")


def site_status(s: Site) -> str:
    """migrated, unsafe (migrated under an assumption), manual or ignored."""
    return "unsafe" if s.unsafe else s.status


def statistics(results: list[FileResult]) -> list[dict]:
    """Counts by code and status, most frequent first (ruff's ``--statistics``)."""
    counts = Counter((s.code, site_status(s)) for r in results for s in r.sites)
    errors = sum(1 for r in results if r.error)
    rows = [{"code": code, "status": status, "count": n, "title": reports.code_title(code)}
            for (code, status), n in counts.items()]
    if errors:
        rows.append({"code": "error", "status": "error", "count": errors, "title": "file could not be read or parsed"})
    return sorted(rows, key=lambda row: (-row["count"], row["code"], row["status"]))


def statistics_text(rows: list[dict]) -> str:
    return "".join(f"{row['count']:>5}  {row['code']:<7} {row['status']:<9} {row['title']}\n" for row in rows)


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _annotation(level: str, path: str, line: int, col: int, title: str, message: str) -> str:
    where = f"file={_escape_property(path.replace(os.sep, '/'))},line={max(1, line)},col={max(1, col)}"
    return f"::{level} {where},title={_escape_property(title)}::{_escape_data(message)}\n"


def github(results: list[FileResult], mode: str) -> str:
    """GitHub Actions workflow commands: an error for each manual site, each file error and
    each failed verification, and for each site that would be rewritten in a dry run; a
    notice for each site rewritten or acknowledged."""
    from migrator.runner import FAILED_VERIFICATION

    out = []
    dry = mode in DRY_RUN_MODES
    for r in results:
        if r.error:
            line, col = reports.error_position(r.error, r.path)
            out.append(_annotation("error", r.path, line, col, "tfgradmigrate: error", r.error))
        for s in r.sites:
            cell = reports.cell_of(s)  # a notebook: the line is the cell's
            reason = (f"{cell}, line {s.line}: " if cell else "") + reports.site_reason(s)
            title = f"tfgradmigrate {s.code}"
            if s.status == MANUAL:
                hint = reports.distinct_advice(s)
                out.append(_annotation("error", r.path, s.line, s.col, title,
                                       f"needs a person ({s.kind}): {reason}" + (f". {hint}" if hint else "")))
            elif s.status == IGNORED:
                out.append(_annotation("notice", r.path, s.line, s.col, title, f"acknowledged manual site: {reason}"))
            else:
                text = f"{'would be migrated' if dry else 'migrated'}: {reason}"
                if s.assumptions:
                    text += " (unsafe fix; assumes: " + "; ".join(s.assumptions) + ")"
                out.append(_annotation("error" if dry else "notice", r.path, s.line, s.col, title, text))
            verdict = s.verification or {}
            if verdict.get("status") in FAILED_VERIFICATION:
                detail = verdict.get("detail") or verdict.get("reason", "")
                out.append(_annotation("error", r.path, s.line, s.col, f"{title} verification",
                                       f"verification {verdict['status']}: {detail}"))
    return "".join(out)


def render(fmt: str, results: list[FileResult], summary: dict, show_statistics: bool) -> str:
    """The text ``--output-format fmt`` (not ``text``) prints."""
    if show_statistics:
        rows = statistics(results)
        return json.dumps(rows, indent=2) + "\n" if fmt == "json" else statistics_text(rows)
    if fmt == "json":
        return reports.to_json(results, summary)
    if fmt == "sarif":
        return reports.to_sarif(results, summary)
    return github(results, summary.get("mode", ""))
