"""The HTML report: one self-contained page a person reads top to bottom.

Summary cards (files, sites by status, errors), a table of counts by code,
the manual sites grouped by code (each linking to its place in the file
section), the unsafe fixes with their assumptions, then one section per file:
its sites (reason, what to do, what was proved, what was assumed) and a
unified diff whose lines wrap and whose changed words are highlighted.  The
layout fits a 1400 px window without sideways scrolling.
"""
from __future__ import annotations

import difflib
import html
import re
from collections import Counter

from migrator import __version__
from migrator.model import IGNORED, MANUAL, FileResult, Site
from migrator.reports import code_title, distinct_advice, location, site_reason, verdict

CONTEXT_LINES = 3

_CSS = """
*{box-sizing:border-box}
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1f2328;background:#f6f8fa;margin:0}
main{max-width:1360px;margin:0 auto;padding:24px}
h1{font-size:26px;margin:0 0 4px}h2{font-size:20px;margin:32px 0 12px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:16px;margin:20px 0 8px}
.meta{color:#59636e;margin:0}
a{color:#0969da;text-decoration:none}a:hover{text-decoration:underline}
code{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#eff1f3;padding:1px 4px;border-radius:4px;overflow-wrap:anywhere}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:12px;margin:20px 0}
.card{background:#fff;border:1px solid #d0d7de;border-left:6px solid #8c959f;border-radius:8px;padding:10px 14px}
.card .n{font-size:28px;font-weight:600;display:block}.card .l{color:#59636e}
.card.migrated,.badge.migrated{border-color:#1a7f37}.card.manual,.badge.manual{border-color:#bc4c00}
.card.ignored,.badge.ignored{border-color:#8250df}.card.unsafe,.badge.unsafe{border-color:#cf222e}
.card.error,.badge.error{border-color:#cf222e}
table{border-collapse:collapse;width:100%;background:#fff}
table.codes td,table.codes th{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
table.codes td.n{text-align:right;width:7em}table.codes td:first-child{width:7em;white-space:nowrap}
.badge{display:inline-block;border:1px solid #8c959f;border-radius:12px;padding:0 8px;font-size:12px;font-weight:600;
white-space:nowrap;background:#fff;margin-right:4px}
.badge.migrated{color:#1a7f37}.badge.manual{color:#bc4c00}.badge.ignored{color:#8250df}
.badge.unsafe{color:#fff;background:#cf222e}.badge.error{color:#cf222e}.badge.code{font-family:ui-monospace,monospace}
.group{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:4px 16px 10px;margin:12px 0}
.hint{color:#1f2328;background:#fff8c5;border-radius:6px;padding:4px 10px;margin:6px 0}
ul.sites{list-style:none;padding:0;margin:0}ul.sites>li{padding:8px 0;border-top:1px solid #eaeef2}
ul.sites>li:first-child{border-top:0}
.file{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:4px 16px 16px;margin:16px 0}
.file h3{overflow-wrap:anywhere}
.site.unsafe{background:#fff5f5;border-left:4px solid #cf222e;padding-left:10px}
.site:target{outline:3px solid #0969da;outline-offset:2px}
.proof,.assumptions{margin:4px 0 0 0;padding-left:22px}.proof li::marker{content:"\\2713  ";color:#1a7f37}
.assumptions li::marker{content:"!  ";color:#cf222e;font-weight:700}
.label{font-weight:600;font-size:13px;color:#59636e}
table.diff{table-layout:fixed;font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;border:1px solid #d0d7de;margin-top:10px}
table.diff col.num{width:4.2em}table.diff col.sign{width:1.6em}
table.diff td{padding:0 6px;vertical-align:top}
table.diff td.num{color:#8c959f;text-align:right;user-select:none}
table.diff td.code{white-space:pre-wrap;overflow-wrap:anywhere;word-break:break-word;padding-left:calc(6px + 4ch);text-indent:-4ch}
tr.add{background:#dafbe1}tr.del{background:#ffebe9}tr.add .chg{background:#aceebb}tr.del .chg{background:#ffcecb}
tr.focus{background:#fff8c5}tr.hunk td{background:#ddf4ff;color:#59636e}
.errors li{color:#cf222e;overflow-wrap:anywhere}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _prose(text: str) -> str:
    """Escaped text with `backticked` spans set as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", _e(text))


def _status(s: Site) -> str:
    return "unsafe" if s.unsafe else s.status


def _badge(kind: str, text: str = "") -> str:
    return f'<span class="badge {kind}">{_e(text or kind)}</span>'


def _anchor(file_no: int, site_no: int) -> str:
    return f"f{file_no}-s{site_no}"


def _cards(summary: dict) -> str:
    dry = summary.get("mode") in ("check", "diff")
    cards = [("", summary.get("files_scanned", 0), "files scanned"),
             ("", summary.get("files_changed", 0), "files that would change" if dry else "files changed"),
             ("migrated", summary.get("sites_migrated", 0), "sites to migrate" if dry else "sites migrated"),
             ("unsafe", summary.get("sites_unsafe", 0), "unsafe fixes (assumptions)"),
             ("manual", summary.get("sites_manual", 0), "need a person"),
             ("ignored", summary.get("sites_ignored", 0), "acknowledged (ignored)"),
             ("error", summary.get("errors", 0), "files with errors")]
    return '<section class="cards">' + "".join(
        f'<div class="card {kind}"><span class="n">{n}</span><span class="l">{_e(label)}</span></div>'
        for kind, n, label in cards) + "</section>"


def _codes_table(results: list[FileResult]) -> str:
    counts = Counter((s.code, _status(s)) for r in results for s in r.sites)
    if not counts:
        return ""
    statuses = ["migrated", "unsafe", "manual", "ignored"]
    rows = []
    for code in sorted({c for c, _ in counts}):
        name = f'<a href="#code-{_e(code)}">{_e(code)}</a>' if counts[(code, MANUAL)] else _e(code)
        rows.append(f"<tr><td><code>{name}</code></td><td>{_prose(code_title(code))}</td>"
                    + "".join(f'<td class="n">{counts[(code, st)] or ""}</td>' for st in statuses) + "</tr>")
    head = "".join(f'<th class="n">{st}</th>' for st in statuses)
    return f'<h2>By code</h2><table class="codes"><tr><th>code</th><th>what it means</th>{head}</tr>{"".join(rows)}</table>'


def _manual_groups(results: list[FileResult]) -> str:
    groups: dict[str, list] = {}
    for i, r in enumerate(results):
        for k, s in enumerate(r.sites):
            if s.status == MANUAL:
                groups.setdefault(s.code, []).append((i, k, r, s))
    total = sum(len(g) for g in groups.values())
    if not total:
        return '<h2 id="manual">Needs a person (0)</h2><p>Nothing: every site was migrated or acknowledged.</p>'
    out = [f'<h2 id="manual">Needs a person ({total})</h2>']
    for code in sorted(groups):
        items = groups[code]
        hint = distinct_advice(items[0][3])
        out.append(f'<div class="group" id="code-{_e(code)}"><h3>{_badge("code", code)} {_prose(code_title(code))}'
                   f" ({len(items)})</h3>" + (f'<p class="hint">What to do: {_prose(hint)}</p>' if hint else ""))
        out.append('<ul class="sites">')
        for i, k, r, s in items:
            reason = site_reason(s)
            detail = "" if reason == code_title(code) else f" — {_prose(reason)}"
            out.append(f'<li><a href="#{_anchor(i, k)}"><code>{_e(location(r, s))}</code></a>{detail}</li>')
        out.append("</ul></div>")
    return "".join(out)


def _unsafe_list(results: list[FileResult]) -> str:
    items = [(i, k, r, s) for i, r in enumerate(results) for k, s in enumerate(r.sites) if s.unsafe]
    if not items:
        return ""
    out = [f'<h2 id="unsafe">Unsafe fixes ({len(items)})</h2>',
           "<p>Migrated only because <code>--unsafe-fixes</code> accepted an assumption the source cannot show. "
           "Check each assumption.</p><ul class=\"sites\">"]
    for i, k, r, s in items:
        out.append(f'<li><a href="#{_anchor(i, k)}"><code>{_e(location(r, s))}</code></a> {_badge("code", s.code)} '
                   f'assumes: {"; ".join(_prose(a) for a in s.assumptions)}</li>')
    return "".join(out) + "</ul>"


def _site(i: int, k: int, s: Site) -> str:
    status = _status(s)
    label = {"unsafe": "unsafe fix", "ignored": "acknowledged"}.get(status, status)
    cell = next((n for n in s.notes if n.startswith("cell ")), "")
    parts = [f'<li class="site {status}" id="{_anchor(i, k)}">{_badge("code", s.code)}{_badge(status, label)}'
             f' line {s.line}{" (" + _e(cell) + ")" if cell else ""} · {_e(s.kind)}: {_prose(site_reason(s))}']
    v = verdict(s)
    if v:
        detail = (s.verification or {}).get("detail") or (s.verification or {}).get("reason") or ""
        parts.append(f" — verification: <b>{_e(v)}</b>{' (' + _prose(detail) + ')' if detail else ''}")
    hint = distinct_advice(s) if s.status in (MANUAL, IGNORED) else ""
    if hint:
        parts.append(f'<p class="hint">What to do: {_prose(hint)}</p>')
    if s.assumptions:
        parts.append('<div class="label">Assumed, not proved (unsafe fix):</div><ul class="assumptions">'
                     + "".join(f"<li>{_prose(a)}</li>" for a in s.assumptions) + "</ul>")
    if s.proof:
        parts.append('<div class="label">Proved from the source:</div><ul class="proof">'
                     + "".join(f"<li>{_prose(p)}</li>" for p in s.proof) + "</ul>")
    other = [n for n in s.notes if not n.startswith("cell ")]
    if other:
        parts.append('<div class="label">Notes:</div><ul>' + "".join(f"<li>{_prose(n)}</li>" for n in other) + "</ul>")
    return "".join(parts) + "</li>"


_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def _highlight(old: str, new: str) -> tuple[str, str]:
    """Both lines escaped, the words that differ wrapped in ``<span class=chg>``."""
    a_tokens, b_tokens = _TOKEN.findall(old), _TOKEN.findall(new)
    matcher = difflib.SequenceMatcher(None, a_tokens, b_tokens, autojunk=False)
    a, b = [], []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        old_part, new_part = _e("".join(a_tokens[i1:i2])), _e("".join(b_tokens[j1:j2]))
        if tag == "equal":
            a.append(old_part)
            b.append(new_part)
            continue
        if old_part:
            a.append(f'<span class="chg">{old_part}</span>')
        if new_part:
            b.append(f'<span class="chg">{new_part}</span>')
    return "".join(a), "".join(b)


def _pairs(old: list[str], new: list[str]) -> list[tuple[int, int]]:
    """Removed and added lines that are edits of each other, in order (each new line used once).

    Big blocks are not paired: the row shading marks them, and pairing is quadratic.
    """
    if len(old) * len(new) > 400:
        return []
    out, start = [], 0
    for a, line in enumerate(old):
        best, best_ratio = None, 0.6
        for b in range(start, len(new)):
            ratio = difflib.SequenceMatcher(None, line.strip(), new[b].strip(), autojunk=False).ratio()
            if ratio > best_ratio:
                best, best_ratio = b, ratio
        if best is not None:
            out.append((a, best))
            start = best + 1
    return out


def _row(kind: str, old_no, new_no, sign: str, code_html: str) -> str:
    return (f'<tr class="{kind}"><td class="num">{old_no or ""}</td><td class="num">{new_no or ""}</td>'
            f'<td class="num">{sign}</td><td class="code">{code_html}</td></tr>')


def _table(rows: list[str]) -> str:
    return ('<table class="diff"><colgroup><col class="num"><col class="num"><col class="sign"><col></colgroup>'
            + "".join(rows) + "</table>")


def diff_table(original: str, migrated: str) -> str:
    """A unified diff as a table: wrapped lines, removed and added lines shaded, changed words marked."""
    old, new = original.splitlines(), migrated.splitlines()
    rows = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        first, last = group[0], group[-1]
        rows.append(f'<tr class="hunk"><td colspan="4">@@ -{first[1] + 1},{last[2] - first[1]} '
                    f"+{first[3] + 1},{last[4] - first[3]} @@</td></tr>")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows += [_row("ctx", i1 + k + 1, j1 + k + 1, "", _e(old[i1 + k])) for k in range(i2 - i1)]
                continue
            old_html = [_e(line) for line in old[i1:i2]]
            new_html = [_e(line) for line in new[j1:j2]]
            for a, b in _pairs(old[i1:i2], new[j1:j2]):
                old_html[a], new_html[b] = _highlight(old[i1 + a], new[j1 + b])
            rows += [_row("del", i1 + k + 1, None, "−", h) for k, h in enumerate(old_html)]
            rows += [_row("add", None, j1 + k + 1, "+", h) for k, h in enumerate(new_html)]
    return _table(rows)


def context_table(text: str, lines: list[int]) -> str:
    """The lines around each of ``lines`` (1-based) of an unchanged file, those lines highlighted."""
    src = text.splitlines()
    show = sorted({n for ln in lines for n in range(ln - 2, ln + 3) if 1 <= n <= len(src)})
    rows, previous = [], None
    for n in show:
        if previous is not None and n != previous + 1:
            rows.append('<tr class="hunk"><td colspan="4">⋯</td></tr>')
        rows.append(_row("focus" if n in lines else "ctx", n, None, "", _e(src[n - 1])))
        previous = n
    return _table(rows)


def _file(i: int, r: FileResult, dry: bool) -> str:
    state = ""
    if r.changed:
        state = _badge("migrated", "would change" if dry else "changed")
    if r.error:
        state += _badge("error", "error")
    out = [f'<section class="file" id="f{i}"><h3><code>{_e(r.path)}</code> {state}</h3>']
    if r.error:
        out.append(f'<ul class="errors"><li><code>{_e(r.error)}</code></li></ul>')
    if r.sites:
        out.append('<ul class="sites">' + "".join(_site(i, k, s) for k, s in enumerate(r.sites)) + "</ul>")
    if r.changed and r.original is not None and r.migrated is not None:
        out.append(diff_table(r.original, r.migrated))
    elif r.original is not None and r.sites and not any(n.startswith("cell ") for s in r.sites for n in s.notes):
        out.append(context_table(r.original, [s.line for s in r.sites]))
    return "".join(out) + "</section>"


def render(results: list[FileResult], summary: dict) -> str:
    dry = summary.get("mode") in ("check", "diff")
    mode = {"check": "dry run (--check)", "diff": "dry run (--diff)", "write": "files rewritten"}.get(
        summary.get("mode", ""), "")
    seconds = summary.get("seconds")
    meta = " · ".join(x for x in (f"tfgradmigrate {__version__}", mode,
                                  f"{seconds:.2f} s" if isinstance(seconds, (int, float)) else "") if x)
    body = ["<main><h1>tfgradmigrate report</h1>", f'<p class="meta">{_e(meta)}</p>', _cards(summary),
            _manual_groups(results), _unsafe_list(results), _codes_table(results)]
    errors = [(i, r) for i, r in enumerate(results) if r.error]
    if errors:
        body.append(f'<h2 id="errors">Errors ({len(errors)})</h2><ul class="errors">'
                    + "".join(f'<li><a href="#f{i}"><code>{_e(r.error)}</code></a></li>' for i, r in errors) + "</ul>")
    shown = [(i, r) for i, r in enumerate(results) if r.changed or r.sites or r.error]
    body.append(f'<h2 id="files">Files ({len(shown)})</h2>')
    body += [_file(i, r, dry) for i, r in shown]
    body.append("</main>")
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>tfgradmigrate report</title><style>{_CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")
