"""File-system and newline edge cases found by an adversarial run (the real plugins, no fakes)."""
from __future__ import annotations

import json
import os
import threading

import pytest

from migrator import runner
from migrator.model import MIGRATED

GRAD = "import tensorflow as tf\n\n\ndef f():\n    x = tf.constant([1.0, 2.0])\n    return tf.gradients(x * x, x)\n"


def check(paths):
    return runner.run([str(p) for p in paths], runner.RunOptions(jobs=1, mode=runner.CHECK)).results


@pytest.mark.parametrize("text", [
    GRAD.replace("\n", "\r"),  # an old Mac file: ast ends lines at \r
    GRAD.replace("import tensorflow as tf\n", 'import tensorflow as tf\n"""a lone\rcarriage return"""\n'),
])
def test_carriage_returns_do_not_hide_sites(tmp_path, text):
    (tmp_path / "pyproject.toml").write_text("")
    f = tmp_path / "m.py"
    f.write_bytes(text.encode())
    (res,) = check([f])
    # found either way: migrated, or (CR-only: libcst cannot give the bytes back) reported, not skipped silently
    assert [s.status for s in res.sites] == [MIGRATED] or "byte for byte" in (res.error or ""), res.error


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_in_the_project_does_not_block_the_run(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    os.mkfifo(tmp_path / "stale.py")
    f = tmp_path / "m.py"
    f.write_text(GRAD)
    done = []
    t = threading.Thread(target=lambda: done.append(check([f])), daemon=True)
    t.start()
    t.join(30)
    assert done, "the run blocked on the FIFO"


def test_an_r_notebook_has_no_python_cells(tmp_path):
    nb = {"cells": [{"cell_type": "code", "source": "g <- tf$gradients(y, x)\n", "metadata": {}, "outputs": [],
                     "execution_count": None}],
          "metadata": {"kernelspec": {"language": "R", "name": "ir"}}, "nbformat": 4, "nbformat_minor": 5}
    f = tmp_path / "r.ipynb"
    f.write_text(json.dumps(nb))
    (res,) = check([f])
    assert res.error is None and not res.sites


def test_an_editor_lock_file_is_not_a_source(tmp_path):
    (tmp_path / "m.py").write_text("x = 1\n")
    os.symlink("user@host.1234:1700000000", tmp_path / ".#m.py")  # emacs: a dangling link
    from migrator.files import discover

    found = discover([str(tmp_path)])
    assert [os.path.basename(p) for p in found.files] == ["m.py"] and not found.errors


def test_a_hard_linked_file_is_reported_not_split(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    f = tmp_path / "m.py"
    f.write_text(GRAD)
    os.link(f, tmp_path / "copy.py")
    res = runner.run([str(f)], runner.RunOptions(jobs=1, mode=runner.WRITE)).results[0]
    assert "hard links" in (res.error or "")
    assert (tmp_path / "copy.py").read_text() == f.read_text() == GRAD


def test_a_deeply_nested_file_is_reported_and_the_run_goes_on(tmp_path):
    """Found by an adversarial run: 10000 terms segfaulted libcst's parser and killed the whole run."""
    (tmp_path / "pyproject.toml").write_text("")
    deep = tmp_path / "z_deep.py"
    deep.write_text(GRAD.replace("return tf.gradients(x * x, x)", "return tf.gradients(x * x, x)" + " + 0" * 3000))
    ok = tmp_path / "a_ok.py"
    ok.write_text(GRAD)
    res = {os.path.basename(r.path): r for r in check([ok, deep])}
    assert "nested" in (res["z_deep.py"].error or "")
    assert [s.status for s in res["a_ok.py"].sites] == [MIGRATED]
