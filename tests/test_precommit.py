"""The hooks in .pre-commit-hooks.yaml, run for real by `pre-commit run` from a user's config.

The config points at a snapshot of this checkout, working-tree changes included (what
`pre-commit try-repo` does), made once per module: pre-commit then builds the hook's
environment once, where `try-repo` built it again on every call (about 5 s each).
Slow all the same: marked ``slow``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _pre_commit() -> list[str]:
    exe = shutil.which("pre-commit") or os.path.join(os.path.dirname(sys.executable), "pre-commit")
    if os.path.isfile(exe):
        return [exe]
    pytest.skip("pre-commit is not installed")


@pytest.fixture(scope="module")
def hook_home(tmp_path_factory):
    """(PRE_COMMIT_HOME, the snapshot repository, its commit), shared by the module's tests."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    if not os.path.exists(os.path.join(ROOT, ".git")):  # a folder, or a file in a worktree
        pytest.skip("not a git checkout")
    base = tmp_path_factory.mktemp("pre-commit")
    snap = base / "snapshot"
    git(base, "clone", "-q", ROOT, str(snap))
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, listed):  # the working tree as it is, as try-repo's shadow commit has it
        src, dst = os.path.join(ROOT, rel), snap / rel
        if os.path.isfile(src):
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
        elif dst.exists():
            dst.unlink()
    git(snap, "add", "-A")
    git(snap, "commit", "-q", "--allow-empty", "-m", "snapshot")
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=snap, check=True, capture_output=True,
                         text=True).stdout.strip()
    return base / "home", snap, rev


def git(repo, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)


def try_repo(repo, hook, *only):
    """Run both hooks of this repository (or ``only`` the one named) on all files of ``repo``, from its config."""
    home, snap, rev = hook
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n-   repo: {snap}\n    rev: {rev}\n    hooks:\n    -   id: tfgradmigrate\n"
        "    -   id: tfgradmigrate-check\n")
    git(repo, "add", ".pre-commit-config.yaml")
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never")
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run([*_pre_commit(), "run", *only, "--all-files", "--verbose"],
                          cwd=repo, capture_output=True, text=True, env=env, timeout=900)


def notebook(*cells):
    return json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                  "source": list(c)} for c in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1, sort_keys=True) + "\n"


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "plain.py").write_text("import tensorflow as tf\nx = tf.constant(1.0)\n")
    (tmp_path / "notes.txt").write_text("tf.gradients is mentioned here, but this is not Python\n")
    (tmp_path / "clean.ipynb").write_text(notebook(["%matplotlib inline\n", "import tensorflow as tf\n"]))
    git(tmp_path, "add", ".")
    return tmp_path


def test_hooks_pass_on_clean_code_and_fail_on_a_broken_file(repo, hook_home):
    ok = try_repo(repo, hook_home)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.count("Passed") == 2
    assert "- hook id: tfgradmigrate\n" in ok.stdout and "- hook id: tfgradmigrate-check\n" in ok.stdout
    broken = 'print "old", tf.gradients(y, x)\n'
    (repo / "old.py").write_text(broken)
    git(repo, "add", "old.py")
    bad = try_repo(repo, hook_home)
    assert bad.returncode != 0
    assert bad.stdout.count("Failed") == 2
    assert bad.stdout.count("exit code: 123") == 2
    assert bad.stdout.count("old.py:1:") == 2  # the tool's one-line error, shown by pre-commit
    assert (repo / "old.py").read_text() == broken
    assert "notes.txt" not in bad.stdout  # types: [python]


MANUAL = "import tensorflow as tf\n\n\ndef f(y, x):\n    return tf.gradients(y, x){}\n"


def test_notebooks_go_to_the_hooks_and_a_suppression_comment_lets_them_pass(repo, hook_home):
    # a notebook the tool cannot read: both hooks see it and fail (types_or: [python, jupyter])
    (repo / "broken.ipynb").write_text('{"cells": [ "tf.gradients(" ')
    git(repo, "add", "broken.ipynb")
    bad = try_repo(repo, hook_home)
    assert bad.stdout.count("Failed") == 2, bad.stdout + bad.stderr
    assert bad.stdout.count("broken.ipynb:1:") == 2
    git(repo, "rm", "-q", "--cached", "broken.ipynb")
    (repo / "broken.ipynb").unlink()
    # a manual site fails the check hook for ever, unless a person acknowledges it
    (repo / "manual.py").write_text(MANUAL.format(""))
    (repo / "manual.ipynb").write_text(notebook(["import tensorflow as tf\n"], ["%time g = tf.gradients(y, x)\n"]))
    git(repo, "add", "manual.py", "manual.ipynb")
    blocked = try_repo(repo, hook_home)
    assert blocked.returncode != 0
    assert "manual.py:5:12: TFG120" in blocked.stdout and "manual.ipynb:cell 1:1:11: TFG136" in blocked.stdout
    (repo / "manual.py").write_text(MANUAL.format("  # tfgradmigrate: ignore[TFG120]"))
    (repo / "manual.ipynb").write_text(notebook(["import tensorflow as tf\n"],
                                                ["%time g = tf.gradients(y, x)  # tfgradmigrate: ignore\n"]))
    git(repo, "add", "manual.py", "manual.ipynb")
    ok = try_repo(repo, hook_home)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.count("Passed") == 2


def test_force_exclude_keeps_configured_excludes_out_of_the_hooks(repo, hook_home):
    (repo / "pyproject.toml").write_text('[tool.tfgradmigrate]\nexclude = ["vendored"]\n')
    (repo / "vendored").mkdir()
    (repo / "vendored" / "old.py").write_text('print "old", tf.gradients(y, x)\n')  # would be an error
    git(repo, "add", ".")
    ok = try_repo(repo, hook_home)
    assert ok.returncode == 0, ok.stdout + ok.stderr


MIGRATABLE = "import tensorflow as tf\n\n\ndef f(x):\n    y = x * x\n    return tf.gradients(y, x)\n"


def test_the_check_hook_writes_nothing_and_the_other_migrates(repo, hook_home):
    (repo / "old.py").write_text(MIGRATABLE)
    git(repo, "add", "old.py")
    checked = try_repo(repo, hook_home, "tfgradmigrate-check")
    assert checked.returncode != 0 and "- hook id: tfgradmigrate-check\n" in checked.stdout, checked.stdout
    assert (repo / "old.py").read_text() == MIGRATABLE
    fixed = try_repo(repo, hook_home, "tfgradmigrate")
    assert fixed.returncode != 0 and "files were modified by this hook" in fixed.stdout, fixed.stdout
    assert "tf.GradientTape()" in (repo / "old.py").read_text()
