"""The hooks in .pre-commit-hooks.yaml, run for real with `pre-commit try-repo`."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _pre_commit() -> list[str]:
    exe = shutil.which("pre-commit") or os.path.join(os.path.dirname(sys.executable), "pre-commit")
    if os.path.isfile(exe):
        return [exe]
    pytest.skip("pre-commit is not installed")


@pytest.fixture(scope="module")
def hook_home(tmp_path_factory):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    if not os.path.isdir(os.path.join(ROOT, ".git")):
        pytest.skip("not a git checkout")
    return tmp_path_factory.mktemp("pre-commit-home")


def git(repo, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)


def try_repo(repo, home):
    """Run every hook of this repository (both ids) on all files of ``repo``."""
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never")
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run([*_pre_commit(), "try-repo", ROOT, "--all-files", "--verbose"],
                          cwd=repo, capture_output=True, text=True, env=env, timeout=900)


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "plain.py").write_text("import tensorflow as tf\nx = tf.constant(1.0)\n")
    (tmp_path / "notes.txt").write_text("tf.gradients is mentioned here, but this is not Python\n")
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
