"""Report formats: JSON, Markdown, HTML and SARIF."""
from __future__ import annotations

import json
import re

import pytest

import fake_plugin
from fake_plugin import MANUAL_SRC, SAMPLE, run_cli
from migrator import reports
from migrator.model import FileResult, Site


@pytest.fixture(autouse=True)
def _fake():
    with fake_plugin.installed():
        yield


@pytest.fixture
def run(tmp_path):
    (tmp_path / "a.py").write_text(SAMPLE)
    (tmp_path / "m.py").write_text(MANUAL_SRC)
    (tmp_path / "bad.py").write_text("print 'x', tf.gradients\n")
    outs = {ext: tmp_path / f"report{ext}" for ext in reports.FORMATS}
    args = []
    for p in outs.values():
        args += ["--report", p]
    r = run_cli("--check", "-j1", *args, tmp_path)
    assert r.exit_code == 123
    return tmp_path, {ext: p.read_text() for ext, p in outs.items()}


def test_every_format_is_written_in_check_mode_too(run):
    _, out = run
    assert set(out) == {".json", ".md", ".html", ".sarif"}
    assert all(out.values())


def test_json(run):
    tmp, out = run
    data = json.loads(out[".json"])
    assert data["version"] == 1
    assert [f["path"].rsplit("/", 1)[-1] for f in data["files"]] == ["a.py", "bad.py", "m.py"]
    manual = data["files"][2]["sites"][0]
    assert (manual["kind"], manual["code"], manual["line"], manual["status"], manual["reason"]) == (
        "tf_gradients", "TFG128", 4, "manual", "fake manual site")
    assert set(data["summary"]) >= {"files_scanned", "files_changed", "sites_migrated", "sites_manual", "errors", "seconds"}


def test_markdown_lists_manual_work_as_a_checklist(run):
    tmp, out = run
    md = out[".md"]
    assert md.startswith("# tfgradmigrate report")
    assert f"- [ ] `{tmp / 'm.py'}:4` **TFG128** tf_gradients: fake manual site" in md
    assert f"- [x] `{tmp / 'a.py'}:5` **TFG003**" in md
    assert "## Errors" in md and "bad.py:1:" in md
    assert md.index("## Needs a person") < md.index("## Migrated")


def test_html_is_self_contained_with_manual_items_first(run):
    tmp, out = run
    page = out[".html"]
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", page)
    assert page.index("Needs a person") < page.index("TFG003")
    assert "TFG128" in page and "fake manual site" in page
    assert 'class="diff"' in page  # side-by-side table
    text = re.sub(r"<[^>]+>", "", page).replace("&nbsp;", " ")
    assert "g = tape_gradients(y, x)" in text and "g = tf.gradients(y, x)" in text


def test_html_escapes_user_text():
    r = FileResult("<x>.py", changed=True, original="a = '<b>'\n", migrated="a = '<i>'\n",
                   sites=[Site("tf_gradients", "TFG128", 1, reason="<script>alert(1)</script>")])
    page = reports.to_html([r], {})
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_sarif(run):
    tmp, out = run
    doc = json.loads(out[".sarif"])
    assert doc["version"] == "2.1.0"
    run0 = doc["runs"][0]
    assert run0["tool"]["driver"]["name"] == "tfgradmigrate"
    rule_ids = {r["id"] for r in run0["tool"]["driver"]["rules"]}
    assert {"TFG003", "TFG128", "error"} <= rule_ids
    by_rule = {r["ruleId"]: r for r in run0["results"]}
    assert by_rule["TFG128"]["level"] == "warning"
    assert by_rule["TFG003"]["level"] == "note"
    assert by_rule["error"]["level"] == "error"
    loc = by_rule["TFG128"]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"].endswith("m.py") and loc["region"]["startLine"] == 4
    assert by_rule["error"]["locations"][0]["physicalLocation"]["region"]["startLine"] == 1


def test_report_to_an_unwritable_place_is_a_usage_error(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    r = run_cli("--report", tmp_path / "no" / "such" / "dir" / "r.json", tmp_path)
    assert r.exit_code == 2
    assert "cannot write report" in r.stderr
