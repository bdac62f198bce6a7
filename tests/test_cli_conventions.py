"""What a ruff or black user expects of the command line: stdin, --exit-zero, suppression
comments, colour variables, .gitignore and excludes, --statistics, --output-format,
and the fixes to the bugs of issue 12 (report path, -q with --check, summary wording)."""
from __future__ import annotations

import json
import os
import re
import sys

import pytest
from click.testing import CliRunner

import fake_plugin
from fake_plugin import MANUAL_SRC, MIGRATED, SAMPLE, run_cli
from migrator import cli, runner


@pytest.fixture(autouse=True)
def _fake():
    with fake_plugin.installed():
        yield


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(SAMPLE)
    (tmp_path / "pkg" / "b.py").write_text(SAMPLE.replace("x * x", "x + x"))
    (tmp_path / "plain.py").write_text("x = 1\n")
    return tmp_path


def snapshot(folder):
    return {p: open(p, "rb").read() for p in sorted(str(q) for q in folder.rglob("*.py"))}


def invoke(*args, input=None, env=None):
    return CliRunner().invoke(cli.migrate_command, [str(a) for a in args], input=input, env=env,
                              catch_exceptions=False)


IGNORED_SRC = MANUAL_SRC.replace("# MANUAL_SITE: custom gradients", "# MANUAL_SITE  # tfgradmigrate: ignore[TFG128]")


# -- bugs ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["missing folder", "a folder"])
def test_an_unwritable_report_path_is_refused_before_any_file_changes(tree, where):
    target = tree / "no" / "such" / "r.json" if where == "missing folder" else tree / "pkg"
    before = snapshot(tree)
    r = run_cli("--report", target, tree)
    assert r.exit_code == 2
    assert f"--report {target}:" in r.stderr
    assert snapshot(tree) == before  # checked first: nothing was rewritten


def test_quiet_check_prints_nothing_but_still_exits_1(tree):
    r = run_cli("--check", "-q", tree)
    assert r.exit_code == 1
    assert r.stdout == "" and r.stderr == ""


def test_diff_with_check_prints_the_diff_as_black_does(tree):
    before = snapshot(tree)
    r = run_cli("--check", "--diff", "-j1", tree)
    assert r.exit_code == 1
    assert "+g = tape_gradients(y, x)" in r.stdout
    assert "would change:" not in r.stdout
    assert snapshot(tree) == before


def test_summary_says_would_migrate_in_dry_runs_and_uses_plurals(tree):
    r = run_cli("--check", tree / "pkg" / "a.py")
    assert "tfgradmigrate: 1 file scanned, 1 would change, 1 site would migrate, 0 manual, 0 errors in" in r.stderr
    r = run_cli("-j1", tree)
    assert "tfgradmigrate: 3 files scanned, 2 changed, 2 sites migrated, 0 manual, 0 errors in" in r.stderr


def test_progress_advances_per_file_in_both_passes(tmp_path, monkeypatch):
    paths = []
    for i in range(12):
        p = tmp_path / f"m{i:02}.py"
        p.write_text(SAMPLE if i % 3 == 0 else "x = 1\n")
        paths.append(str(p))
    ticks = []
    at_pass_2 = []
    real = runner.migrate_file

    def spy(path, index, run_opts):
        at_pass_2.append(len(ticks))
        return real(path, index, run_opts)

    monkeypatch.setattr(runner, "migrate_file", spy)
    runner.run(paths, runner.RunOptions(mode=runner.CHECK), progress=ticks.append)
    assert ticks == [1] * 24  # one step per file per pass: the bar ends at 100 %
    # pass 1 moved the bar through its half (12) and past the 8 files pass 2 has nothing to do for
    assert at_pass_2[0] == 12 + 8
    assert at_pass_2 == list(range(20, 24))


def test_the_bar_has_two_steps_per_file(tmp_path, monkeypatch):
    paths = [str(tmp_path / f"f{i}.py") for i in range(cli.PROGRESS_THRESHOLD + 1)]
    for p in paths:
        open(p, "w").write("x = 1\n")
    lengths = []
    real_bar = cli.click.progressbar

    def bar(*a, **kw):
        lengths.append(kw["length"])
        return real_bar(*a, **kw)

    monkeypatch.setattr(cli.click, "progressbar", bar)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    cli._run(paths, runner.RunOptions(), quiet=False)
    assert lengths == [2 * len(paths)]


# -- --exit-zero and suppression comments -------------------------------------------------------

def test_exit_zero(tree):
    (tree / "m.py").write_text(MANUAL_SRC)
    r = run_cli("--check", "--exit-zero", tree)
    assert r.exit_code == 0
    assert "TFG128 manual" in r.stderr and "would change:" in r.stdout  # still reported
    (tree / "bad.py").write_text("print 'x', tf.gradients\n")
    assert run_cli("--check", "--exit-zero", tree).exit_code == 123  # errors are not findings


@pytest.mark.parametrize("comment", ["# tfgradmigrate: ignore[TFG128]", "# tfgradmigrate: ignore",
                                     "# tfgradmigrate: ignore[TFG120, TFG128]", "# noqa  # TFGRADMIGRATE: Ignore[tfg128]"])
def test_a_suppression_comment_acknowledges_a_manual_site(tmp_path, comment):
    f = tmp_path / "m.py"
    f.write_text(MANUAL_SRC.replace("# MANUAL_SITE: custom gradients", f"# MANUAL_SITE  {comment}"))
    before = f.read_bytes()
    r = run_cli("--check", "--report", tmp_path / "r.json", f)
    assert r.exit_code == 0, r.stderr
    assert "manual" not in r.stderr.split("tfgradmigrate:")[0]  # no per-site line for it
    assert "0 manual, 1 ignored" in r.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["files"][0]["sites"][0]["status"] == "ignored"
    assert report["summary"]["sites_ignored"] == 1 and report["summary"]["sites_manual"] == 0
    assert run_cli(f).exit_code == 0 and f.read_bytes() == before


@pytest.mark.parametrize("src", [
    MANUAL_SRC.replace("# MANUAL_SITE: custom gradients", "# MANUAL_SITE  # tfgradmigrate: ignore[TFG120]"),
    MANUAL_SRC.replace("    return x.gradients()", "    # tfgradmigrate: ignore\n    return x.gradients()"),
    MANUAL_SRC + "s = '# tfgradmigrate: ignore'\n",
], ids=["other code", "line above", "in a string"])
def test_a_suppression_comment_must_name_the_code_and_sit_on_the_statement(tmp_path, src):
    f = tmp_path / "m.py"
    f.write_text(src)
    r = run_cli("--check", f)
    assert r.exit_code == 1
    assert "TFG128 manual" in r.stderr


def test_a_suppression_comment_on_any_line_of_a_multiline_statement(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import tensorflow as tf\n\nx = call(\n    1,  # MANUAL_SITE\n    2,  # tfgradmigrate: ignore[TFG128]\n)\n")
    assert run_cli("--check", f).exit_code == 0


def test_annotate_leaves_acknowledged_sites_alone(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(IGNORED_SRC)
    run_cli("--annotate", f)
    assert f.read_text() == IGNORED_SRC


def test_an_acknowledged_override_still_counts_as_unmigrated(tmp_path):
    from test_runner import ManualOverrides

    saved, loaded = list(fake_plugin._plugins._PLUGINS), fake_plugin._plugins._LOADED
    fake_plugin._plugins._PLUGINS[:] = [ManualOverrides()]
    try:
        (tmp_path / "a_user.py").write_text("import z_ops\ng = tf.gradients(y, x)\n")
        (tmp_path / "z_ops.py").write_text(
            "with g.gradient_override_map({'Sign': 'X'}):  # tfgradmigrate: ignore\n    y = tf.sign(x)\n")
        from test_runner import SEEN

        result = runner.run(sorted(str(p) for p in tmp_path.iterdir()), runner.RunOptions(mode=runner.CHECK))
        assert result.results[1].sites[0].status == "ignored"
        assert "z_ops" in SEEN["a_user.py"]  # a tf.gradients it may govern is still refused
    finally:
        fake_plugin._plugins._PLUGINS[:] = saved
        fake_plugin._plugins._LOADED = loaded


# -- standard input -----------------------------------------------------------------------------

def test_stdin_to_stdout(tmp_path):
    r = invoke("-", input=SAMPLE)
    assert r.stdout == MIGRATED
    assert r.exit_code == 1  # changed, as for a file
    r = invoke("-", input="x = 1\n")
    assert (r.stdout, r.exit_code) == ("x = 1\n", 0)


def test_stdin_keeps_bom_and_crlf():
    data = b"\xef\xbb\xbf" + SAMPLE.replace("\n", "\r\n").encode()
    r = invoke("-", input=data)
    assert r.stdout_bytes == b"\xef\xbb\xbf" + MIGRATED.replace("\n", "\r\n").encode()


def test_stdin_filename_names_messages_and_finds_the_config(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.tfgradmigrate]\nannotate = true\n")
    name = tmp_path / "src" / "m.py"  # need not exist
    r = invoke("--stdin-filename", name, "-", input=MANUAL_SRC)
    assert f"{name}:4:1: TFG128 manual tf_gradients: fake manual site" in r.stderr
    assert "# TODO(tfgradmigrate): TFG128 fake manual site" in r.stdout  # the config's annotate = true
    assert r.exit_code == 1
    r = invoke("--stdin-filename", name, input=MANUAL_SRC)  # no `-`: stdin all the same, as ruff
    assert "# TODO(tfgradmigrate)" in r.stdout


def test_stdin_diff_and_check(tmp_path):
    r = invoke("--diff", "--stdin-filename", "pkg/a.py", "-", input=SAMPLE)
    assert "--- a/pkg/a.py\n+++ b/pkg/a.py\n" in r.stdout and "+g = tape_gradients(y, x)" in r.stdout
    r = invoke("--check", "--stdin-filename", "pkg/a.py", "-", input=SAMPLE)
    assert r.stdout == "would change: pkg/a.py\n" and r.exit_code == 1


def test_stdin_notebook(tmp_path):
    nb = json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                                "source": ["g = tf.gradients(y, x)\n"]}], "metadata": {}, "nbformat": 4,
                     "nbformat_minor": 5}, indent=1, sort_keys=True) + "\n"
    r = invoke("--stdin-filename", "nb.ipynb", "-", input=nb)
    assert json.loads(r.stdout)["cells"][0]["source"] == ["g = tape_gradients(y, x)\n"]


def test_stdin_force_exclude_passes_an_excluded_file_through(tmp_path):
    r = invoke("--force-exclude", "--exclude", "gen", "--stdin-filename", "gen/a.py", "-", input=SAMPLE)
    assert (r.stdout, r.exit_code) == (SAMPLE, 0)
    r = invoke("--exclude", "gen", "--stdin-filename", "gen/a.py", "-", input=SAMPLE)  # not forced
    assert r.stdout == MIGRATED


def test_stdin_carries_unsafe_fixes_and_output_formats(tmp_path):
    src = "import tensorflow as tf\nh = tf.hessians(y, x)\n"
    r = invoke("-", input=src)
    assert r.stdout == src and "needs --unsafe-fixes" in r.stderr
    r = invoke("--unsafe-fixes", "--output-format", "json", "--stdin-filename", "m.py", "-", input=src)
    assert r.stdout == src.replace("tf.hessians(", "tape_hessians(")
    report = json.loads(r.stderr[: r.stderr.rindex("}") + 1])  # stdout holds the code: the format goes to stderr
    site = report["files"][0]["sites"][0]
    assert (site["status"], site["assumptions"]) == ("migrated", ["fake: `f` creates no op of a mapped type"])
    assert report["summary"]["sites_unsafe"] == 1


def test_stdin_cannot_be_mixed_with_paths(tree):
    r = invoke("-", tree, input=SAMPLE)
    assert r.exit_code == 2 and "cannot be combined" in r.stderr


# -- colour ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("env, flag, coloured", [
    ({}, None, False),  # not a terminal
    ({"FORCE_COLOR": "1"}, None, True),
    ({"NO_COLOR": "1"}, "--color", True),  # the flag wins
    ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, None, False),
    ({"FORCE_COLOR": "1"}, "--no-color", False),
    ({"NO_COLOR": ""}, None, False),  # empty means unset
])
def test_no_color_and_force_color(tree, env, flag, coloured):
    full = {"NO_COLOR": None, "FORCE_COLOR": None, **env}
    r = invoke("--diff", *([flag] if flag else []), tree / "pkg" / "a.py", env=full)
    assert ("\x1b[32m+g = tape_gradients" in r.stdout) is coloured
    assert "+g = tape_gradients" in r.stdout


# -- discovery: .gitignore, excludes, --force-exclude -----------------------------------------

@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    for rel in ["src/a.py", "src/gen/g.py", "src/keep_gen.py", "build_out/x.py", "docs/d.py", "docs/sub/s.py"]:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(SAMPLE)
    (root / ".git").mkdir()
    (root / ".gitignore").write_text("build_out/\ngen/\n*_gen.py\n!keep_gen.py\n")
    (root / "docs" / ".gitignore").write_text("sub/\n")
    return root


def found(*args, cwd=None):
    r = run_cli("--check", *args)
    return sorted(os.path.relpath(line.split(": ", 1)[1], cwd) if cwd else line.split(": ", 1)[1]
                  for line in r.stdout.splitlines())


def test_gitignore_is_respected_with_negations_and_nested_files(repo):
    assert found(repo, cwd=repo) == ["docs/d.py", "src/a.py", "src/keep_gen.py"]
    assert found(repo / "src", cwd=repo) == ["src/a.py", "src/keep_gen.py"]  # the root's .gitignore still applies
    assert len(found("--no-respect-gitignore", repo)) == 6


def test_gitignore_outside_a_repository_is_not_read(repo):
    (repo / ".git").rmdir()
    assert len(found(repo)) == 6


def test_gitignore_from_config(repo):
    (repo / "pyproject.toml").write_text("[tool.tfgradmigrate]\nrespect-gitignore = false\n")
    assert len(found(repo)) == 6


def test_explicit_files_are_taken_unless_force_exclude(repo):
    g = repo / "src" / "gen" / "g.py"
    assert found(g) == [str(g)]
    assert found("--force-exclude", g) == []  # ignored by git: pre-commit would never pass it, but still
    assert found("--force-exclude", "--exclude", "a.py", repo / "src" / "a.py") == []
    assert found("--exclude", "a.py", repo / "src" / "a.py") == [str(repo / "src" / "a.py")]


def test_exclude_with_a_slash_is_relative_to_the_current_folder(repo, monkeypatch):
    monkeypatch.chdir(repo)
    assert found("--exclude", "docs/d.py", ".") == ["src/a.py", "src/keep_gen.py"]
    monkeypatch.chdir(repo / "src")
    assert found("--exclude", "docs/d.py", "..", cwd=repo) == ["docs/d.py", "src/a.py", "src/keep_gen.py"]
    assert found("--exclude", "a.py", "..", cwd=repo) == ["docs/d.py", "src/keep_gen.py"]  # no slash: any depth


def test_config_exclude_is_relative_to_the_config_folder(repo, monkeypatch):
    (repo / "pyproject.toml").write_text('[tool.tfgradmigrate]\nexclude = ["src/a.py"]\n')
    monkeypatch.chdir(repo / "docs")
    assert found(repo, cwd=repo) == ["docs/d.py", "src/keep_gen.py"]


# -- --statistics and --output-format ---------------------------------------------------------

@pytest.fixture
def mixed(tree):
    (tree / "m.py").write_text(MANUAL_SRC)
    (tree / "i.py").write_text(IGNORED_SRC)
    return tree


def test_statistics_text(mixed):
    r = run_cli("--check", "--statistics", mixed)
    assert r.exit_code == 1
    rows = [line.split(None, 3) for line in r.stdout.splitlines()]
    assert rows == [["2", "TFG003", "migrated", "tf.gradients call rewritten to tf.GradientTape"],
                    ["1", "TFG128", "ignored", rows[1][3]], ["1", "TFG128", "manual", rows[2][3]]]
    assert "would change:" not in r.stdout and "TFG128 manual" not in r.stderr  # counts instead of sites


def test_statistics_json(mixed):
    r = run_cli("--check", "--statistics", "--output-format", "json", mixed)
    assert json.loads(r.stdout)[0] == {"code": "TFG003", "status": "migrated", "count": 2,
                                       "title": "tf.gradients call rewritten to tf.GradientTape"}


def test_output_format_json_on_stdout(mixed):
    r = run_cli("--check", "--output-format", "json", mixed)
    doc = json.loads(r.stdout)
    statuses = sorted(s["status"] for f in doc["files"] for s in f["sites"])
    assert statuses == ["ignored", "manual", "migrated", "migrated"]
    assert "TFG128 manual" not in r.stderr and "files scanned" in r.stderr
    assert r.exit_code == 1


def test_output_format_github(mixed):
    (mixed / "bad.py").write_text("print 'x', tf.gradients\n")
    r = run_cli("--check", "--output-format", "github", "-j1", mixed)
    lines = r.stdout.splitlines()
    m = str(mixed / "m.py")
    assert (f"::error file={m},line=4,col=1,title=tfgradmigrate TFG128::needs a person (tf_gradients): fake manual site. "
            "rewrite this call by hand with tf.GradientTape") in lines
    assert any(re.match(rf"::error file={re.escape(str(mixed / 'bad.py'))},line=1,col=\d+,title=tfgradmigrate%3A error::", ln)
               for ln in lines)
    assert any(ln.startswith(f"::notice file={mixed / 'i.py'},line=4") and "acknowledged" in ln for ln in lines)
    assert any(ln.startswith(f"::error file={mixed / 'pkg' / 'a.py'},line=5,col=5,") and "would be migrated" in ln
               for ln in lines)
    assert len(lines) == 5


def test_github_escapes_properties_and_data():
    from migrator.model import FileResult, Site
    from migrator.output import github

    r = FileResult("a,b:c.py", sites=[Site("tf_gradients", "TFG128", 2, 1, reason="50% sure\nsecond line")])
    line = github([r], "check")
    assert line.startswith("::error file=a%2Cb%3Ac.py,line=2,col=1,")
    assert line.endswith("::needs a person (tf_gradients): 50%25 sure%0Asecond line. "
                         "rewrite this call by hand with tf.GradientTape\n")


def test_output_format_sarif_and_unsafe_fixes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "h.py").write_text("import tensorflow as tf\nh = tf.hessians(y, x)\n")
    r = run_cli("--check", "--unsafe-fixes", "--output-format", "sarif", "h.py")
    res = json.loads(r.stdout)["runs"][0]["results"][0]
    assert res["properties"]["assumptions"] == ["fake: `f` creates no op of a mapped type"]
    assert "unsafe fix" in res["message"]["text"]


def test_diff_cannot_be_combined_with_a_machine_format(tree):
    before = snapshot(tree)
    r = run_cli("--diff", "--output-format", "json", tree)
    assert r.exit_code == 2 and snapshot(tree) == before


def test_unsafe_fixes_are_shown_in_text_output(tmp_path):
    f = tmp_path / "h.py"
    f.write_text("import tensorflow as tf\nh = tf.hessians(y, x)\n")
    r = run_cli("--check", "--unsafe-fixes", f)
    assert f"{f}:2:1: TFG005 unsafe fix: assumes fake: `f` creates no op of a mapped type" in r.stderr
    assert "1 site would migrate (1 unsafe)" in r.stderr


def test_stdin_with_verify_verifies_the_migrated_text_not_the_file_on_disk(tmp_path, monkeypatch):
    from test_cli import fake_verify_module

    calls = fake_verify_module(monkeypatch)  # it checks the pair it is given holds SAMPLE and MIGRATED
    on_disk = tmp_path / "a.py"
    on_disk.write_text(SAMPLE)  # the editor's buffer (stdin) is the same, the file is not rewritten
    r = invoke("--verify", "--output-format", "json", "--stdin-filename", on_disk, "-", input=SAMPLE)
    assert r.stdout == MIGRATED and on_disk.read_text() == SAMPLE
    report = json.loads(r.stderr[: r.stderr.rindex("}") + 1])
    assert report["files"][0]["sites"][0]["verification"] == {"status": "match"}
    assert calls and calls[0][0][0][1] != str(on_disk)


def test_statistics_with_github_format_prints_the_table(mixed):
    r = run_cli("--check", "--statistics", "--output-format", "github", mixed)
    assert r.stdout.splitlines()[0].split() == ["2", "TFG003", "migrated", "tf.gradients", "call", "rewritten", "to",
                                                "tf.GradientTape"]
