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
    # the shell line is masked, not a reason to skip the cell: the code below it migrates
    expected["cells"][4]["source"] = ["!pip list | grep gradients\n", "h = tape_gradients(y, x)\n"]
    assert json.loads(new) == expected
    # only the migrated lines differ, byte for byte
    assert new == original.replace('"g = tf.gradients(y, x)\\n"', '"g = tape_gradients(y, x)\\n"').replace(
        '"h = tf.gradients(y, x)\\n"', '"h = tape_gradients(y, x)\\n"')
    sites = json.loads((tmp_path / "r.json").read_text())["files"][0]["sites"]
    assert [(s["code"], s["status"], s["line"], s["notes"]) for s in sites] == [
        ("TFG136", "manual", 1, ["cell 2"]),  # `%time g = tf.gradients(...)`: reported, not rewritten
        ("TFG003", "migrated", 1, ["cell 3"]),
        ("TFG003", "migrated", 2, ["cell 4"]),
    ]
    assert f"{f}:cell 2:1:11: TFG136 manual tf_gradients: `tf.gradients` is called inside an IPython magic" in r.stderr


def test_notebook_without_sites_is_byte_identical(tmp_path):
    f = tmp_path / "nb.ipynb"
    original = make_nb([CELLS[0], CELLS[1], cell("code", ["%matplotlib inline\n", "import numpy as np\n"])])
    f.write_text(original)
    assert run_cli(f).exit_code == 0
    assert f.read_text() == original


def test_a_gradient_call_in_a_magic_line_is_reported_and_can_be_acknowledged(tmp_path):
    f = tmp_path / "nb.ipynb"
    original = make_nb([cell("code", ["%time g = tf.gradients(y, x)  # tfgradmigrate: ignore[TFG136]\n",
                                      "%timeit tf.hessians(y, x)\n"])])
    f.write_text(original)
    r = run_cli("--report", tmp_path / "r.json", f)
    assert r.exit_code == 1  # the second one still needs a person
    assert f.read_text() == original
    sites = json.loads((tmp_path / "r.json").read_text())["files"][0]["sites"]
    assert [(s["code"], s["kind"], s["status"], s["line"]) for s in sites] == [
        ("TFG136", "tf_gradients", "ignored", 1), ("TFG136", "hessians", "manual", 2)]
    f.write_text(original.replace("%timeit tf.hessians(y, x)", "%timeit tf.hessians(y, x)  # tfgradmigrate: ignore"))
    assert run_cli(f).exit_code == 0


def test_magic_lines_keep_their_place_in_blocks_and_python_cell_magics(tmp_path):
    f = tmp_path / "nb.ipynb"
    loop = ["for i in range(2):\n", "    %time f(i)\n", "    x = !ls\n", "g = tf.gradients(y, x)\n"]
    timed = ["%%time\n", "h = tf.gradients(y, x)\n"]
    bash = ["%%bash\n", "echo tf.gradients(y, x)\n"]
    original = make_nb([cell("code", loop), cell("code", timed), cell("code", bash)])
    f.write_text(original)
    assert run_cli(f).exit_code == 1
    cells = json.loads(f.read_text())["cells"]
    assert cells[0]["source"] == loop[:3] + ["g = tape_gradients(y, x)\n"]
    assert cells[1]["source"] == ["%%time\n", "h = tape_gradients(y, x)\n"]
    assert cells[2]["source"] == bash  # not Python: left alone, nothing reported


def test_a_rewrite_that_would_move_a_magic_line_is_refused(tmp_path, monkeypatch):
    # a rewrite that indents every line (as wrapping code in a `with` block does)
    real = fake_plugin.FakeGradients.rewrite

    def indent_all(self, module, ctx):
        import libcst as cst

        out = real(self, module, ctx)
        body = "".join("    " + ln if ln.strip() else ln for ln in out.code.splitlines(keepends=True))
        return cst.parse_module("if True:\n" + body)

    monkeypatch.setattr(fake_plugin.FakeGradients, "rewrite", indent_all)
    f = tmp_path / "nb.ipynb"
    original = make_nb([cell("code", ["%time f()\n", "g = tf.gradients(y, x)\n"])])
    f.write_text(original)
    r = run_cli("--report", tmp_path / "r.json", f)
    assert f.read_text() == original
    site = json.loads((tmp_path / "r.json").read_text())["files"][0]["sites"][0]
    assert site["status"] == "manual" and "IPython magic" in site["notes"][-1]
    assert r.exit_code == 1


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


MAGICS = ["%matplotlib inline", "!ls", "x = !ls", "obj?", "tf.gradients??", "?obj", "%%bash", "  %timeit f()",
          "files = %sx ls"]
NOT_MAGICS = ["x = a % b", "print('why?')", "if x != y: pass", "d = {'a': 1}", "y = x  # really?", "s = '%d' % n"]


@pytest.mark.parametrize("line", MAGICS)
def test_magic_detection(line):
    assert notebook.is_magic(line)


@pytest.mark.parametrize("line", NOT_MAGICS)
def test_not_magic(line):
    assert not notebook.is_magic(line)


@pytest.mark.parametrize("line", MAGICS + NOT_MAGICS)
def test_magic_detection_agrees_with_ipython(line):
    """IPython's own input transformer rewrites exactly the lines we mask."""
    transformer = pytest.importorskip("IPython.core.inputtransformer2")
    source = line.strip() + "\n"
    if line.startswith("%%"):
        source += "echo hi\n"
    ipython_sees_magic = "get_ipython()" in transformer.TransformerManager().transform_cell(source)
    assert notebook.is_magic(line) == ipython_sees_magic


LAYOUTS = {
    "nbformat": dict(indent=1, sort_keys=True, ensure_ascii=False),
    "colab": dict(indent=2, sort_keys=False, ensure_ascii=False),
    "ascii escapes": dict(indent=1, sort_keys=True, ensure_ascii=True),
    "four spaces": dict(indent=4, sort_keys=False, ensure_ascii=False),
    "no indent": dict(indent=0, sort_keys=True, ensure_ascii=False),
    "compact": dict(separators=(",", ":"), sort_keys=False, ensure_ascii=False),
}


@pytest.mark.parametrize("tail", ["\n", ""])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_layout_round_trip_changes_only_the_migrated_line(tmp_path, layout, tail):
    nb = json.loads(make_nb(CELLS))
    kw = LAYOUTS[layout]
    original = json.dumps(nb, **kw) + tail
    f = tmp_path / "nb.ipynb"
    f.write_text(original, encoding="utf-8")
    run_cli(f)
    nb["cells"][3]["source"][0] = "g = tape_gradients(y, x)\n"
    nb["cells"][4]["source"][1] = "h = tape_gradients(y, x)\n"
    assert f.read_text(encoding="utf-8") == json.dumps(nb, **kw) + tail


def test_crlf_notebook_keeps_its_newlines(tmp_path):
    original = make_nb([cell("code", ["g = tf.gradients(y, x)\n"])]).replace("\n", "\r\n")
    f = tmp_path / "nb.ipynb"
    f.write_bytes(original.encode())
    run_cli(f)
    assert f.read_bytes() == original.replace("tf.gradients(", "tape_gradients(").encode()


def test_unknown_layout_falls_back_to_nbformat_style(tmp_path):
    nb = json.loads(make_nb([cell("code", ["g = tf.gradients(y, x)\n"])]))
    f = tmp_path / "nb.ipynb"
    f.write_text(json.dumps(nb, indent=3))
    run_cli(f)
    assert json.loads(f.read_text())["cells"][0]["source"] == ["g = tape_gradients(y, x)\n"]


@pytest.mark.parametrize("spoil", [
    lambda t: t.replace('"nbformat": 4', '"nbformat": 4, "nbformat": 4', 1),  # a duplicate key
    lambda t: t.replace('"nbformat_minor": 5', '"nbformat_minor": 5, "big": 1e400', 1),  # Infinity once written
])
def test_an_unusual_layout_that_cannot_be_written_back_without_loss_is_left_alone(tmp_path, spoil):
    """Found by an adversarial run: the fallback re-serialised it, dropping a key or writing Infinity."""
    text = spoil(json.dumps(json.loads(make_nb([cell("code", ["g = tf.gradients(y, x)\n"])])), indent=3))
    f = tmp_path / "nb.ipynb"
    f.write_text(text)
    r = run_cli(f)
    assert f.read_text() == text and r.exit_code == 123 and "without loss" in r.output
