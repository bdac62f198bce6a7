"""The CLI contract: every flag and every exit code."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import pytest
from click.testing import CliRunner

import fake_plugin
from fake_plugin import MANUAL_SRC, MIGRATED, SAMPLE, run_cli
from migrator import cli, pipeline


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


def test_help_lists_every_flag():
    r = run_cli("--help")
    assert r.exit_code == 0
    for flag in ["--diff", "--check", "--report", "--jobs", "--exclude", "--annotate", "--verify", "--select", "--config",
                 "verify ORIGINAL MIGRATED", "--output-format", "--statistics", "--exit-zero", "--stdin-filename",
                 "--force-exclude", "--respect-gitignore", "NO_COLOR", "tfgradmigrate: ignore["]:
        assert flag in r.stdout


def test_version():
    r = run_cli("--version")
    assert r.exit_code == 0 and "0.1.0" in r.stdout


def test_no_path_is_a_usage_error():
    r = run_cli()
    assert r.exit_code == 2
    assert "no PATH" in r.stderr


def test_missing_path_is_a_usage_error(tmp_path):
    r = run_cli(tmp_path / "nope.py")
    assert r.exit_code == 2


def test_unknown_flag_is_a_usage_error(tmp_path):
    assert run_cli("--frobnicate", tmp_path).exit_code == 2


def test_unknown_report_format_is_a_usage_error(tree):
    before = snapshot(tree)
    r = run_cli("--report", tree / "r.xml", tree)
    assert r.exit_code == 2
    assert snapshot(tree) == before


def test_bad_config_is_a_usage_error(tree):
    (tree / "pyproject.toml").write_text('[tool.tfgradmigrate]\njobs = "many"\n')
    before = snapshot(tree)
    r = run_cli(tree)
    assert r.exit_code == 2
    assert "jobs must be an integer" in r.stderr
    assert snapshot(tree) == before


def test_broken_toml_is_a_usage_error(tree):
    (tree / "pyproject.toml").write_text("[tool.tfgradmigrate\n")
    assert run_cli(tree).exit_code == 2


def test_rewrite_in_place_exit_1_then_0(tree):
    r = run_cli("-j1", tree)
    assert r.exit_code == 1
    assert (tree / "pkg" / "a.py").read_text() == MIGRATED
    assert (tree / "plain.py").read_text() == "x = 1\n"
    assert "3 files scanned, 2 changed, 2 sites migrated, 0 manual, 0 errors" in r.stderr
    again = run_cli("-j1", tree)
    assert again.exit_code == 0
    assert "0 changed" in again.stderr


def test_nothing_to_do_exits_0(tmp_path):
    (tmp_path / "plain.py").write_text("x = 1\n")
    r = run_cli(tmp_path)
    assert r.exit_code == 0
    assert r.stdout == ""


def test_diff_writes_nothing_and_exits_1(tree):
    before = snapshot(tree)
    r = run_cli("--diff", "-j1", tree)
    assert r.exit_code == 1
    assert snapshot(tree) == before
    a = os.path.join(str(tree), "pkg", "a.py").lstrip("/")
    assert f"--- a/{a}\n+++ b/{a}\n" in r.stdout
    assert "-g = tf.gradients(y, x)" in r.stdout and "+g = tape_gradients(y, x)" in r.stdout
    assert "\x1b[" not in r.stdout  # not a terminal: no colour
    assert "would change" in r.stderr


def test_diff_colour_can_be_forced(tree):
    r = run_cli("--diff", "--color", "-j1", tree)
    assert "\x1b[32m+g = tape_gradients" in r.stdout


def test_diff_marks_missing_final_newline(tmp_path):
    f = tmp_path / "n.py"
    f.write_text(SAMPLE.rstrip("\n"))
    r = run_cli("--diff", f)
    assert "\\ No newline at end of file" in r.stdout


def test_check_lists_files_and_writes_nothing(tree):
    before = snapshot(tree)
    r = run_cli("--check", "-j1", tree)
    assert r.exit_code == 1
    assert snapshot(tree) == before
    assert r.stdout.splitlines() == [
        f"would change: {os.path.join(str(tree), 'pkg', 'a.py')}",
        f"would change: {os.path.join(str(tree), 'pkg', 'b.py')}",
    ]


def test_manual_site_exits_1_and_stays_byte_identical(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(MANUAL_SRC)
    r = run_cli("--check", f)
    assert r.exit_code == 1
    assert r.stdout == ""
    assert f"{f}:4:1: TFG128 manual tf_gradients: fake manual site" in r.stderr
    r = run_cli(f)
    assert r.exit_code == 1
    assert f.read_text() == MANUAL_SRC


def test_annotate_is_idempotent(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(MANUAL_SRC)
    run_cli("--annotate", f)
    once = f.read_text()
    assert once == MANUAL_SRC.replace(
        "    return x", "    # TODO(tfgradmigrate): TFG128 fake manual site\n    return x")
    run_cli("--annotate", f)
    assert f.read_text() == once


def test_annotate_from_config_and_flag_override(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.tfgradmigrate]\nannotate = true\n")
    f = tmp_path / "m.py"
    f.write_text(MANUAL_SRC)
    run_cli("--no-annotate", f)
    assert f.read_text() == MANUAL_SRC
    run_cli(f)
    assert "TODO(tfgradmigrate): TFG128" in f.read_text()


def test_exclude_flag_and_config(tree):
    (tree / "pyproject.toml").write_text('[tool.tfgradmigrate]\nexclude = ["b.py"]\n')
    r = run_cli("--exclude", "plain.py", "--report", tree / "r.json", tree)
    names = [os.path.basename(f["path"]) for f in json.loads((tree / "r.json").read_text())["files"]]
    assert names == ["a.py"]
    assert (tree / "pkg" / "b.py").read_text() != MIGRATED
    assert r.exit_code == 1


def test_default_excludes(tree):
    (tree / ".venv").mkdir()
    (tree / ".venv" / "lib.py").write_text(SAMPLE)
    run_cli(tree)
    assert (tree / ".venv" / "lib.py").read_text() == SAMPLE


def test_select_runs_only_named_plugins(tree):
    assert run_cli("--select", "fake", tree).exit_code == 1
    assert (tree / "pkg" / "a.py").read_text() == MIGRATED


@pytest.mark.parametrize("where", ["flag", "config"])
def test_select_with_an_unknown_name_is_a_usage_error_naming_the_valid_ones(tree, where):
    before = snapshot(tree)
    if where == "flag":
        r = run_cli("--select", "fake,gradient", tree)
    else:
        (tree / "pyproject.toml").write_text('[tool.tfgradmigrate]\nselect = ["gradient"]\n')
        r = run_cli(tree)
    assert r.exit_code == 2
    assert "unknown plugin 'gradient'; valid names: fake" in r.stderr
    assert snapshot(tree) == before


def test_json_report_shape(tree):
    (tree / "bad.py").write_text("print 'x', tf.gradients\n")
    r = run_cli("--report", tree / "r.json", "-j1", tree)
    assert r.exit_code == 123
    report = json.loads((tree / "r.json").read_text())
    assert report["version"] == 1
    by_name = {os.path.basename(f["path"]): f for f in report["files"]}
    a = by_name["a.py"]
    assert a["changed"] is True and a["error"] is None
    assert a["sites"] == [{"kind": "tf_gradients", "code": "TFG003", "line": 5, "col": 5, "status": "migrated",
                           "reason": a["sites"][0]["reason"], "new_line": 5, "notes": [],
                           "proof": a["sites"][0]["proof"], "assumptions": []}]
    assert a["sites"][0]["reason"]  # falls back to the code's title
    assert by_name["bad.py"]["error"].startswith(f"{tree / 'bad.py'}:1:")
    assert by_name["plain.py"] == {"path": str(tree / "plain.py"), "changed": False, "error": None, "sites": []}
    s = report["summary"]
    assert (s["files_scanned"], s["files_changed"], s["sites_migrated"], s["sites_manual"], s["errors"]) == (4, 2, 2, 0, 1)


def test_report_in_check_mode_says_would_change(tree):
    run_cli("--check", "--report", tree / "r.json", tree)
    report = json.loads((tree / "r.json").read_text())
    assert report["summary"]["mode"] == "check"
    assert sum(f["changed"] for f in report["files"]) == 2
    assert (tree / "pkg" / "a.py").read_text() == SAMPLE


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_jobs_give_the_same_results_in_the_same_order(tree, jobs):
    for i in range(6):
        (tree / f"m{i}.py").write_text(SAMPLE)
    run_cli("--jobs", jobs, "--check", "--report", tree / "r.json", tree)
    files = json.loads((tree / "r.json").read_text())["files"]
    assert [os.path.relpath(f["path"], tree) for f in files] == [f"m{i}.py" for i in range(6)] + [
        "plain.py", os.path.join("pkg", "a.py"), os.path.join("pkg", "b.py")]
    assert sum(f["changed"] for f in files) == 8


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_crashing_file_is_that_files_error(tree, monkeypatch, jobs):
    real = pipeline.migrate_text

    def crash(text, path, *a, **kw):
        if path.endswith("a.py"):
            raise RuntimeError("boom")
        return real(text, path, *a, **kw)

    monkeypatch.setattr(pipeline, "migrate_text", crash)
    r = run_cli("--jobs", jobs, tree)
    assert r.exit_code == 123
    assert f"{tree / 'pkg' / 'a.py'}:1:1: internal error: RuntimeError: boom" in r.stderr
    assert "Traceback" not in r.output
    assert (tree / "pkg" / "a.py").read_text() == SAMPLE
    assert (tree / "pkg" / "b.py").read_text() != SAMPLE


def test_a_worker_that_dies_is_that_files_error(tree, monkeypatch):
    real = pipeline.migrate_text

    def die(text, path, *a, **kw):
        if path.endswith("a.py"):
            os._exit(3)
        return real(text, path, *a, **kw)

    monkeypatch.setattr(pipeline, "migrate_text", die)
    r = run_cli("--jobs", "2", tree)
    assert r.exit_code == 123
    assert "worker process died" in r.stderr
    assert (tree / "pkg" / "b.py").read_text() != SAMPLE


def fake_verify_module(monkeypatch, status="match", exit_code=0):
    mod = types.ModuleType("migrator.verify")
    calls = []

    def verify_files(pairs, rtol=None, atol=None, timeout=None, jobs=1):
        calls.append((pairs, rtol, atol, timeout))
        for orig, new, _ in pairs:
            assert os.path.isfile(orig) and os.path.isfile(new)
            assert open(orig).read() == SAMPLE and open(new).read() == MIGRATED
        return [[{"status": status} for _ in sites] for _, _, sites in pairs]

    def cli_verify(original, migrated, json_output, rtol, atol, timeout, **options):
        calls.append((original, migrated, json_output, rtol, atol, timeout) + ((options,) if options else ()))
        return exit_code

    mod.verify_files, mod.cli_verify = verify_files, cli_verify
    mod.tensorflow_available, mod.INSTALL_HINT = (lambda: True), "pip install 'tfgradmigrate[verify]'"
    monkeypatch.setitem(sys.modules, "migrator.verify", mod)
    return calls


def test_verify_flag_attaches_verdicts(tree, monkeypatch):
    calls = fake_verify_module(monkeypatch)
    r = run_cli("--verify", "--rtol", "0.01", "--diff", "--report", tree / "r.json", tree / "pkg" / "a.py")
    assert r.exit_code == 1
    site = json.loads((tree / "r.json").read_text())["files"][0]["sites"][0]
    assert site["verification"] == {"status": "match"}
    assert calls[0][1] == 0.01


def test_failed_verification_exits_1_and_is_shown(tree, monkeypatch):
    fake_verify_module(monkeypatch, status="failed")
    (tree / "pkg" / "b.py").unlink()
    r = run_cli("--verify", "--check", tree / "pkg")
    assert r.exit_code == 1
    assert "TFG003 verification failed" in r.stderr


def test_verify_flag_without_a_verifier_marks_sites_unverified(tree, monkeypatch):
    monkeypatch.setitem(sys.modules, "migrator.verify", None)  # import fails
    r = run_cli("--verify", "--report", tree / "r.json", tree / "pkg" / "a.py")
    assert r.exit_code == 1
    site = json.loads((tree / "r.json").read_text())["files"][0]["sites"][0]
    assert site["verification"]["status"] == "unverified"


def test_verify_subcommand_dispatches(tree, monkeypatch):
    calls = fake_verify_module(monkeypatch, exit_code=3)
    a = tree / "pkg" / "a.py"
    r = CliRunner().invoke(cli.migrate_command, ["verify", str(a), str(a), "--json", "--atol", "1e-3"])
    assert r.exit_code == 3
    assert calls == [(str(a), str(a), True, None, 0.001, None)]


def test_a_folder_named_verify_still_works_as_dot_slash(tmp_path, monkeypatch):
    (tmp_path / "verify").mkdir()
    (tmp_path / "verify" / "v.py").write_text(SAMPLE)
    monkeypatch.chdir(tmp_path)
    r = run_cli("--check", "./verify")
    assert r.exit_code == 1
    assert "would change: verify/v.py" in r.stdout


def test_summary_goes_to_stderr_and_quiet_silences_it(tree):
    r = run_cli("--check", tree)
    assert "files scanned" in r.stderr and "files scanned" not in r.stdout
    q = run_cli("--check", "-q", tree)
    assert "files scanned" not in q.stderr


def test_progress_bar_only_on_a_tty_with_many_files(tmp_path, monkeypatch):
    for i in range(cli.PROGRESS_THRESHOLD + 1):
        (tmp_path / f"f{i}.py").write_text("x = 1\n")
    ticks = []
    real_run = cli.runner.run

    def spy(paths, opts, progress=None):
        ticks.append(progress is not None)
        return real_run(paths, opts, progress)

    monkeypatch.setattr(cli.runner, "run", spy)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    paths = [str(p) for p in sorted(tmp_path.iterdir())]
    cli._run(paths, cli.runner.RunOptions(), quiet=False)
    cli._run(paths[:10], cli.runner.RunOptions(), quiet=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    cli._run(paths, cli.runner.RunOptions(), quiet=False)
    assert ticks == [True, False, False]


def test_python_dash_m_and_console_script(tree):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, "-m", "migrator", "--check", str(tree / "plain.py")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "1 file scanned" in r.stderr
    r = subprocess.run([sys.executable, "-m", "migrator", "verify", "--help"], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "ORIGINAL MIGRATED" in r.stdout
