"""Notebooks: code cells migrate, magics and everything else stay as they were."""
from __future__ import annotations

import json

import pytest

import fake_plugin
from fake_plugin import run_cli
from migrator import notebook


@pytest.fixture(autouse=True)
def _fake():
    with fake_plugin.installed():
        yield


def cell(kind, source, **extra):
    c = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        c.update(execution_count=None, outputs=[])
    c.update(extra)
    return c


def make_nb(cells, indent=1):
    nb = {"cells": cells, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=indent, sort_keys=True, ensure_ascii=False) + "\n"


CELLS = [
    cell("markdown", ["# Gradients — ünïcode\n", "tf.gradients(y, x) in prose\n"]),
    cell("code", ["import tensorflow as tf\n", "x = tf.constant(1.0)\n", "y = x * x"]),
    cell("code", ["%time g = tf.gradients(y, x)\n"]),
    cell("code", ["g = tf.gradients(y, x)\n", "print(g)"]),
    cell("code", ["!pip list | grep gradients\n", "h = tf.gradients(y, x)\n"]),
]


@pytest.mark.parametrize("indent", [1, 2])
def test_code_cells_migrate_and_the_rest_keeps_its_bytes(tmp_path, indent):
    f = tmp_path / "nb.ipynb"
    original = make_nb(CELLS, indent)
    f.write_text(original, encoding="utf-8")
    r = run_cli("--report", tmp_path / "r.json", f)
    assert r.exit_code == 1
    new = f.read_text(encoding="utf-8")
    expected = json.loads(original)
    expected["cells"][3]["source"] = ["g = tape_gradients(y, x)\n", "print(g)"]
    assert json.loads(new) == expected
    # only the migrated line differs, byte for byte
    assert new == original.replace('"g = tf.gradients(y, x)\\n"', '"g = tape_gradients(y, x)\\n"')
    site = json.loads((tmp_path / "r.json").read_text())["files"][0]["sites"][0]
    assert (site["line"], site["notes"]) == (1, ["cell 3"])


def test_notebook_without_sites_is_byte_identical(tmp_path):
    f = tmp_path / "nb.ipynb"
    original = make_nb([CELLS[0], CELLS[1], CELLS[2]])
    f.write_text(original)
    assert run_cli(f).exit_code == 0
    assert f.read_text() == original


def test_broken_notebook_is_an_error_and_untouched(tmp_path):
    f = tmp_path / "nb.ipynb"
    f.write_text('{"cells": [ "tf.gradients(" ')
    r = run_cli(f)
    assert r.exit_code == 123
    assert f"{f}:1:" in r.stderr and "not a valid notebook" in r.stderr
    assert f.read_text() == '{"cells": [ "tf.gradients(" '


def test_unparsable_cell_is_reported_with_its_cell(tmp_path):
    f = tmp_path / "nb.ipynb"
    original = make_nb([cell("code", ["x = 1\n"]), cell("code", ["print 'g', tf.gradients(y, x)\n"])])
    f.write_text(original)
    r = run_cli(f)
    assert r.exit_code == 123
    assert f"{f}:1:" in r.stderr and "cell 1" in r.stderr
    assert f.read_text() == original


def test_string_sources_and_diff(tmp_path):
    f = tmp_path / "nb.ipynb"
    original = make_nb([cell("code", "import tensorflow as tf\ng = tf.gradients(y, x)")])
    f.write_text(original)
    r = run_cli("--diff", f)
    assert r.exit_code == 1
    assert '+   "source": "import tensorflow as tf\\ng = tape_gradients(y, x)"' in r.stdout
    assert f.read_text() == original


@pytest.mark.parametrize("line", ["%matplotlib inline", "!ls", "x = !ls", "obj?", "%%bash", "  %timeit f()"])
def test_magic_detection(line):
    assert notebook._has_magic(line + "\n")


@pytest.mark.parametrize("line", ["x = a % b", "print('why?')", "if x != y: pass", "d = {'a': 1}"])
def test_not_magic(line):
    assert not notebook._has_magic(line + "\n")


def test_unknown_layout_falls_back_to_nbformat_style(tmp_path):
    nb = json.loads(make_nb([cell("code", ["g = tf.gradients(y, x)\n"])]))
    f = tmp_path / "nb.ipynb"
    f.write_text(json.dumps(nb, indent=3))
    run_cli(f)
    assert json.loads(f.read_text())["cells"][0]["source"] == ["g = tape_gradients(y, x)\n"]
