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


def sample_results():
    """Every kind of site the HTML report shows: manual (two codes), acknowledged, migrated with a proof,
    an unsafe fix, a notebook cell, an error, and long lines and paths."""
    long_line = "    result = some_function(" + ", ".join(f"argument_number_{i}" for i in range(25)) + ")"
    original = "import tensorflow as tf\n\nx = tf.constant(1.0)\ny = x * x\ng = tf.gradients(y, x)\n" + long_line + "\n"
    migrated = ("import tensorflow as tf\n\nx = tf.constant(1.0)\nwith tf.GradientTape() as tape:\n"
                "    tape.watch(x)\n    y = x * x\ng = tape.gradient(y, [x])\n" + long_line.replace("number_7,", "number_seven,") + "\n")
    deep = "src/" + "/".join(f"a_rather_long_folder_name_{i}" for i in range(8)) + "/model.py"
    return [
        FileResult("src/train.py", changed=True, original=original, migrated=migrated, sites=[
            Site("tf_gradients", "TFG003", 5, 5, "migrated", new_line=7,
                 proof=["`y` is computed in this block from `x`", "no override map governs `y`"]),
            Site("tf_gradients", "TFG003", 6, 5, "migrated", assumptions=["`some_function` creates no op of a mapped type"],
                 proof=["`result` is computed in this block"]),
        ]),
        FileResult(deep, original="def f(y, x):\n    return tf.gradients(y, x)\n", migrated=None, sites=[
            Site("tf_gradients", "TFG120", 2, 12, "manual",
                 "`y` is not computed in this block; compute the loss inside a tf.GradientTape where the model is called"),
        ]),
        FileResult("src/ops.py", sites=[
            Site("override_map", "TFG101", 8, 5, "manual", "the block calls `dense`, whose ops cannot be known"),
            Site("tf_gradients", "TFG120", 12, 5, "ignored", "`loss` is not computed in this block",
                 notes=["acknowledged by a `# tfgradmigrate: ignore` comment"]),
        ]),
        FileResult("nb.ipynb", sites=[Site("tf_gradients", "TFG136", 1, 11, "manual", "`tf.gradients` in a magic",
                                           notes=["cell 2"])]),
        FileResult("old.py", error="old.py:1:7: cannot parse: Missing parentheses in call to 'print'"),
    ]


SAMPLE_SUMMARY = {"mode": "check", "files_scanned": 9, "files_changed": 1, "sites_migrated": 2, "sites_unsafe": 1,
                  "sites_manual": 3, "sites_ignored": 1, "errors": 1, "seconds": 0.5}


def test_html_summary_cards_and_counts_by_code():
    page = reports.to_html(sample_results(), SAMPLE_SUMMARY)
    cards = dict((label, int(n)) for n, label in re.findall(
        r'<div class="card[^"]*"><span class="n">(\d+)</span><span class="l">([^<]+)</span>', page))
    assert cards == {"files scanned": 9, "files that would change": 1, "sites to migrate": 2,
                     "unsafe fixes (assumptions)": 1, "need a person": 3, "acknowledged (ignored)": 1,
                     "files with errors": 1}
    codes = re.search(r'<table class="codes">.*?</table>', page).group(0)
    row = re.search(r"<tr><td><code><a href=\"#code-TFG120\">TFG120</a></code></td>.*?</tr>", codes).group(0)
    assert re.findall(r'<td class="n">(\d*)</td>', row) == ["", "", "1", "1"]  # migrated, unsafe, manual, ignored
    row = re.search(r"<tr><td><code>TFG003</code></td>.*?</tr>", codes).group(0)
    assert re.findall(r'<td class="n">(\d*)</td>', row) == ["1", "1", "", ""]


def test_html_manual_items_are_grouped_by_code_and_link_to_their_place():
    page = reports.to_html(sample_results(), SAMPLE_SUMMARY)
    manual = page[page.index('id="manual"'):page.index('id="unsafe"')]
    assert re.findall(r'<div class="group" id="code-(TFG\d+)">', manual) == ["TFG101", "TFG120", "TFG136"]
    links = re.findall(r'<a href="#(f\d+-s\d+)"><code>([^<]+)</code></a>', manual)
    assert [text for _, text in links] == ["src/ops.py:8", links[1][1], "nb.ipynb:1 (cell 2)"]
    assert links[1][1].endswith("/model.py:2")
    for anchor, _ in links:
        assert f'id="{anchor}"' in page  # each link lands on its site
    assert "src/ops.py:12" not in manual  # acknowledged: not in the to-do list


def test_html_shows_proof_and_assumptions_and_marks_unsafe_fixes():
    page = reports.to_html(sample_results(), SAMPLE_SUMMARY)
    unsafe = re.search(r'<li class="site unsafe" id="f0-s1">.*?</li></ul>(?=<table|</li>)', page, re.S).group(0)
    assert '<span class="badge unsafe">unsafe fix</span>' in unsafe
    assert "Assumed, not proved (unsafe fix):" in unsafe and "<code>some_function</code> creates no op" in unsafe
    safe = re.search(r'<li class="site migrated" id="f0-s0">.*?</ul></li>', page, re.S).group(0)
    assert "Proved from the source:" in safe and "<li><code>y</code> is computed in this block from <code>x</code></li>" in safe
    assert "unsafe" not in safe
    assert page.index('id="unsafe"') < page.index('id="files"')  # listed up front too


def test_html_reads_as_prose():
    page = reports.to_html(sample_results(), SAMPLE_SUMMARY)
    assert "`" not in page  # backticks became <code>
    # the reason already says what to do: the hint is not repeated
    site = re.search(r'<li class="site manual" id="f1-s0">.*?</li>', page, re.S).group(0)
    assert site.count("compute the loss inside a tf.GradientTape") == 1
    assert "{'" not in page and "sites_manual" not in page  # no dict dump


def test_html_diff_highlights_changed_lines_and_words_and_wraps():
    page = reports.to_html(sample_results(), SAMPLE_SUMMARY)
    table = re.search(r'<table class="diff">.*?</table>', page).group(0)
    dels = re.findall(r'<tr class="del"><td class="num">(\d+)</td><td class="num"></td>', table)
    adds = re.findall(r'<tr class="add"><td class="num"></td><td class="num">(\d+)</td>', table)
    assert dels == ["4", "5", "6"] and adds == ["4", "5", "6", "7", "8"]
    assert '<span class="chg">argument_number_7</span>' in table  # the word that changed, on each side
    assert '<span class="chg">argument_number_seven</span>' in table
    assert "white-space:pre-wrap" in page and "table-layout:fixed" in page
    # an unchanged file with a manual site shows the lines around it, the site's line marked
    ctx = page[page.index('id="f1"'):page.index('id="f2"')]
    assert '<tr class="focus"><td class="num">2</td>' in ctx


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


def test_sarif_uris_and_suppressions(tmp_path, monkeypatch):
    """What a SARIF consumer (GitHub code scanning) needs: URI references relative to a named base
    (percent-encoded), absolute file: URIs outside it, and in-source suppressions for acknowledged sites."""
    from urllib.parse import unquote

    monkeypatch.chdir(tmp_path)
    results = sample_results() + [FileResult("/elsewhere/dir with space/x.py",
                                             sites=[Site("tf_gradients", "TFG120", 1, 1, "manual", "r")])]
    doc = json.loads(reports.to_sarif(results, SAMPLE_SUMMARY))
    run0 = doc["runs"][0]
    assert run0["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"
    locations = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in run0["results"]]
    assert locations[0] == {"uri": "src/train.py", "uriBaseId": "%SRCROOT%"}
    assert locations[-1] == {"uri": "file:///elsewhere/dir%20with%20space/x.py"}
    for loc in locations:
        assert re.fullmatch(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+", loc["uri"])  # RFC 3986 characters only
        assert unquote(loc["uri"]).endswith((".py", ".ipynb"))
    by_status = {r["message"]["text"].split(":")[0]: r for r in run0["results"]}
    assert by_status["tf_gradients ignored"]["suppressions"] == [
        {"kind": "inSource", "justification": "# tfgradmigrate: ignore"}]
    assert "suppressions" not in by_status["tf_gradients manual"]
    assert by_status["tf_gradients unsafe fix"]["properties"]["assumptions"] == [
        "`some_function` creates no op of a mapped type"]
    rule_ids = [rule["id"] for rule in run0["tool"]["driver"]["rules"]]
    assert {r["ruleId"] for r in run0["results"]} <= set(rule_ids)


def test_report_to_an_unwritable_place_is_a_usage_error(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    r = run_cli("--report", tmp_path / "no" / "such" / "dir" / "r.json", tmp_path)
    assert r.exit_code == 2
    assert "cannot write report" in r.stderr
