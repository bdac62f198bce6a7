"""`tfgradmigrate --verify`: loud per-site verdicts, verification time in the summary, --strict, exit 3.

The first tests use a fake verifier (no TensorFlow, fast); the last ones run
the real verifier on real migrations (slow).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import pytest

import fake_plugin
from fake_plugin import SAMPLE, run_cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def two_sites(tmp_path):
    (tmp_path / "a.py").write_text(SAMPLE + "h = tf.gradients(y * y, x)\n")
    return tmp_path / "a.py"


def fake_verifier(monkeypatch, verdicts, available=True):
    mod = types.ModuleType("migrator.verify")
    mod.INSTALL_HINT = "pip install 'tfgradmigrate[verify]'"
    mod.tensorflow_available = lambda: available

    def verify_files(pairs, rtol=None, atol=None, timeout=None, jobs=1):
        return [[dict(v) for v, _ in zip(verdicts, sites)] for _, _, sites in pairs]

    mod.verify_files = verify_files
    monkeypatch.setitem(sys.modules, "migrator.verify", mod)


MATCH = {"status": "match", "max_abs_err": 0.0, "mode": "function: tf1-graph vs tf2-eager+tf.function"}
UNVERIFIED = {"status": "unverified", "max_abs_err": None, "mode": "-", "detail": "nothing compared: no probe"}
MISMATCH = {"status": "mismatch", "max_abs_err": 2.0, "mode": "-", "detail": "index (0,): original 1.0, migrated -1.0"}


def test_every_site_gets_a_verdict_line_and_the_summary_counts_them(two_sites, monkeypatch):
    fake_verifier(monkeypatch, [MATCH, UNVERIFIED])
    with fake_plugin.installed():
        r = run_cli("--verify", "--diff", two_sites)
    assert r.exit_code == 1  # would change; nothing mismatched
    lines = [ln for ln in r.stderr.splitlines() if "verification" in ln]
    assert lines[0].endswith("TFG003 verification match [function: tf1-graph vs tf2-eager+tf.function] "
                             "max abs err 0")
    assert lines[0].startswith(f"{two_sites}:5:")
    assert lines[1].startswith(f"{two_sites}:6:") and "verification unverified: nothing compared: no probe" in lines[1]
    summary = r.stderr.splitlines()[-1]
    assert "; verified in " in summary and summary.endswith("1 match, 0 mismatch, 1 unverified")


def test_strict_fails_on_unverified_with_exit_3(two_sites, monkeypatch):
    fake_verifier(monkeypatch, [MATCH, UNVERIFIED])
    with fake_plugin.installed():
        assert run_cli("--verify", "--strict", "--diff", two_sites).exit_code == 3
    fake_verifier(monkeypatch, [MATCH, MATCH])
    with fake_plugin.installed():
        assert run_cli("--verify", "--strict", "--diff", two_sites).exit_code == 1  # changed, all verified
    fake_verifier(monkeypatch, [MISMATCH, UNVERIFIED])
    with fake_plugin.installed():
        r = run_cli("--verify", "--strict", "--diff", two_sites)
    assert r.exit_code == 1 and "verification mismatch: index (0,): original 1.0, migrated -1.0" in r.stderr


def test_quiet_keeps_only_mismatches(two_sites, monkeypatch):
    fake_verifier(monkeypatch, [MISMATCH, UNVERIFIED])
    with fake_plugin.installed():
        r = run_cli("--verify", "--diff", "-q", two_sites)
    assert [ln for ln in r.stderr.splitlines() if "verification" in ln] == [
        f"{two_sites}:5:5: TFG003 verification mismatch: index (0,): original 1.0, migrated -1.0"]


def test_without_tensorflow_sites_are_unverified_and_say_what_to_install(two_sites, monkeypatch, tmp_path):
    fake_verifier(monkeypatch, [MATCH, MATCH], available=False)
    with fake_plugin.installed():
        r = run_cli("--verify", "--strict", "--diff", "--report", tmp_path / "r.json", two_sites)
    assert r.exit_code == 3
    assert "verification unverified: TensorFlow is not installed (pip install 'tfgradmigrate[verify]')" in r.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"]["verification"]["unverified"] == 2


# ------------------------------------------------------------------ real verifier (TensorFlow)
GRADIENT = "import tensorflow as tf\n\nx = tf.constant([1.0, 2.0])\ny = x * x * x\ng = tf.gradients(y, x)\n" \
           "with tf.Session() as s:\n    print(s.run(g))\n"


def _tool(*args, cwd):
    return subprocess.run([sys.executable, "-m", "migrator", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=dict(os.environ, PYTHONPATH=ROOT), timeout=900)


@pytest.mark.slow
def test_real_verify_of_a_script_and_a_notebook(tmp_path):
    """The real plugins and the real verifier: a script and a notebook, each site with a verdict line."""
    (tmp_path / "s.py").write_text(GRADIENT)
    cells = ["%matplotlib inline\n", "import tensorflow as tf\n", "x = tf.constant([1.0, 2.0])\ny = x * x * x\ng = tf.gradients(y, x)\n", "with tf.Session() as s:\n    print(s.run(g))\n"]
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": c}
                    for c in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "n.ipynb").write_text(json.dumps(nb, indent=1) + "\n")
    r = _tool("--verify", "--diff", "--report", tmp_path / "r.json", tmp_path, cwd=tmp_path)
    verdicts = [ln for ln in r.stderr.splitlines() if " verification " in ln]
    assert verdicts and all(" verification match [" in ln for ln in verdicts), r.stderr
    assert {os.path.basename(ln.split(":")[0]) for ln in verdicts} == {"s.py", "n.ipynb"}
    assert "unverified" not in r.stderr.splitlines()[-1].split("verified in")[0]
    sites = [s for f in json.loads((tmp_path / "r.json").read_text())["files"] for s in f["sites"]]
    assert sites and all(s["verification"]["status"] == "match" for s in sites if s["status"] == "migrated")


@pytest.mark.slow
def test_real_verify_of_two_folders(tmp_path):
    """Files paired by path (an unchanged one not run, one on one side noted), a notebook cell by cell."""
    data = os.path.join(ROOT, "tests", "verify_data")
    o, m = tmp_path / "o", tmp_path / "m"
    for side, mul, grad in ((o, "before.py", "before.py"), (m, "after_eager.py", "wrong1.py")):
        (side / "pkg").mkdir(parents=True)
        (side / "pkg" / "mul.py").write_text(open(os.path.join(data, "c13_mul_operator_override", mul)).read())
        (side / "g.py").write_text(open(os.path.join(data, "c08_grad_ys_graph_kwargs", grad)).read())
        (side / "same.py").write_text("x = 1\n")
    (o / "only_here.py").write_text("y = 2\n")
    cells = {o: ["import tensorflow as tf\n", "x = tf.constant([1.0, 2.0])\ny = x * x * x\n",
                 "g = tf.gradients(y, x)\n", "%time\nwith tf.Session() as s:\n    print(s.run(g))\n"],
             m: ["import tensorflow as tf\n", "x = tf.constant([1.0, 2.0])\nwith tf.GradientTape() as tape:\n"
                 "    tape.watch(x)\n    y = x * x * x\n", "g = [tape.gradient(y, x)]\n",
                 "%time\nwith tf.Session() as s:\n    print(s.run(g))\n"]}
    for side, cs in cells.items():
        nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": c}
                        for c in cs], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        (side / "n.ipynb").write_text(json.dumps(nb))
    r = subprocess.run([sys.executable, "-m", "migrator.verify", "--json", "-j", "2", str(o), str(m)],
                       capture_output=True, text=True, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=ROOT),
                       timeout=900)
    assert r.returncode == 1, r.stdout + r.stderr
    data = json.loads(r.stdout)
    assert {f["file"]: f["exit_code"] for f in data["files"]} == {"g.py": 1, "n.ipynb": 0, "pkg/mul.py": 0}
    assert data["only_original"] == ["only_here.py"] and data["unchanged"] == 1
    (nb_check,) = [c for f in data["files"] if f["file"] == "n.ipynb" for c in f["checks"]]
    assert nb_check["original_cell"] == "cell 2:1" and nb_check["migrated_cell"] == "cell 2:1"
