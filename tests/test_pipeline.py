"""The cheap stages in front of libcst: the byte prefilter and the ast confirmation."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from migrator._plugins import plugins
from migrator.pipeline import PREFILTER, RunIndex, has_candidates, line_map, migrate_text


SITE_SPELLINGS = [
    "g = tf.gradients(y, x)",
    "g = tf.compat.v1.gradients (y, x)",
    "fn = tf.gradients",
    "from tensorflow import gradients as grad_fn",
    "from tensorflow.python.ops.parallel_for.gradients import jacobian",
    "from tensorflow.python.ops.parallel_for import gradients as pfor_grads",
    "h = tf.hessians(y, x)",
    "j = pfor_grads.jacobian(y, x)",
    "with g.gradient_override_map({}):",
    "@tf.RegisterGradient('X')",
    "y = tf.py_func(f, [x], tf.float32)",
    "s = K.gradients(loss, w)",
]


@pytest.mark.parametrize("line", SITE_SPELLINGS)
def test_every_site_spelling_passes_the_prefilter(line):
    assert PREFILTER.search(line.encode())


def test_prose_about_gradients_is_filtered_out():
    assert not PREFILTER.search(b'"""Computes the gradients of a loss; see the jacobian docs."""\n')


def test_plugins_are_registered_in_order():
    names = [p.name for p in plugins()]
    assert names.index("overrides") < names.index("gradients")


@pytest.mark.parametrize(
    "src, expected",
    [
        ('"""Compute tf.gradients with gradient_override_map."""\n', False),  # docstring only
        ("# tf.gradients(y, x)\nx = 1\n", False),  # comment only
        ("gradients = compute()\nprint(gradients)\n", False),  # a variable named gradients
        ("g = tf.gradients(y, x)\n", True),
        ("fn = tf.gradients\n", True),  # a reference: reported by the gradients plugin
        ("from tensorflow import gradients as grad_fn\n", True),
        ("from tensorflow.python.ops.parallel_for.gradients import jacobian\n", True),
        ("with g.gradient_override_map({}):\n    pass\n", True),
        ("@tf.RegisterGradient('X')\ndef f(op, grad):\n    return grad\n", False),  # indexed by ast, no site
        ("def broken(:\n", True),  # unparsable: libcst reports it
    ],
)
def test_ast_confirmation(src, expected):
    assert has_candidates(src) is expected


def test_quiet_files_skip_libcst():
    src = '"""Mentions tf.gradients only in a docstring."""\nx = 1\n'
    index = RunIndex()
    index.add_file("q.py", src)
    assert "q.py" in index.quiet_paths
    code = textwrap.dedent(
        f"""
        import sys
        from migrator.pipeline import migrate_text
        assert migrate_text({src!r}) == ({src!r}, [])
        assert "libcst" not in sys.modules, "libcst was imported for a file with no candidate"
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_unchanged_text_is_returned_as_the_same_object():
    src = "import tensorflow as tf\n\nwith tf.GradientTape() as tape:\n    pass\ng = tape.gradient(1, 2)\n"
    out, sites = migrate_text(src)
    assert out is src and sites == []


def test_line_map_ignores_indentation_changes():
    old = "a = 1\nwith x:\n    b = 2\nc = 3\n"
    new = "a = 1\nb = 2\nc = 3\n"
    assert line_map(old, new) == {1: 1, 2: 3, 3: 4}


@pytest.mark.parametrize(
    "src, line, col, words",
    [
        ('import tensorflow as tf\nprint "tf.gradients"\n', 2, 1, "print"),
        ("import tensorflow as tf\ng = tf.gradients(y, x\n", 2, 17, "never closed"),
    ],
)
def test_parse_errors_carry_the_real_position(src, line, col, words):
    from migrator.pipeline import ParseError

    with pytest.raises(ParseError) as info:
        migrate_text(src)
    assert (info.value.line, info.value.col) == (line, col)
    assert words in info.value.message


def test_pass1_walks_only_near_the_words_and_finds_the_same_facts():
    import ast

    from migrator import pipeline as P

    src = (
        "import tensorflow as tf\n"
        "from tensorflow.python.ops.parallel_for import (\n    gradients as pfor)\n"
        "def unrelated(x):\n    return [x for _ in range(3)]\n"
        "@tf.RegisterGradient(\n    'Clip')\n"
        "def _clip(op, grad):\n    return grad\n"
        "def f(x):\n    with tf.get_default_graph().gradient_override_map(\n"
        "            {'Identity': 'Clip'}):\n        return tf.identity(x)\n"
    )
    tree = ast.parse(src)
    full, near = P.scan_tree(tree), P.scan_tree(tree, P.hit_lines(src, P._SCAN_WORDS))
    assert [(r.name, r.line) for r in near.registrations] == \
        [(r.name, r.line) for r in full.registrations] == [("Clip", 6)]
    assert near.mapped_names == full.mapped_names == {"Clip"} and near.has_override_block
    assert P._has_candidates(tree, P.hit_lines(src, P._CANDIDATE_WORDS)) is True
    quiet = "import tensorflow as tf\nx = 'tf.gradients(a, b)'  # a string, not a call\n"
    assert P._has_candidates(ast.parse(quiet), P.hit_lines(quiet, P._CANDIDATE_WORDS)) is False


def test_a_file_libcst_cannot_reproduce_is_reported_not_damaged():
    import pytest

    from migrator.files import FileError

    src = ("import tensorflow as tf\n\nx = tf.constant([1.0])\ny = x * x\ng = tf.gradients(y, x)\n"
           "'''doc'''\n\n\t\t\n")  # libcst loses the blank line before the whitespace-only last line
    with pytest.raises(FileError, match="byte for byte"):
        migrate_text(src, path="m.py")
    quiet = "import tensorflow as tf\n'''doc'''\n\n\t\t\n"
    assert migrate_text(quiet, path="m.py")[0] == quiet  # nothing to rewrite: nothing rendered


def test_the_fast_prefilter_answers_as_the_regex_does():
    """may_have_sites is PREFILTER.search without its cost: same answer on every spelling."""
    import glob

    from migrator.pipeline import PREFILTER, may_have_sites

    samples = [b"tf.gradients(y, x)", b"gradients (y)", b"x.gradients", b"x.gradientsy", b"mygradients(y)",
               b"from a import gradients", b"import x  # gradients", b"from a import b\ngradients", b"hessians",
               b"ahessians", b"jacobian (y", b"jacobians", b"gradient_override_map", b"RegisterGradient",
               b"parallel_for", b"py_func", b"computes gradients of y", b"gradients", b".gradients_x", b""]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    samples += [open(p, "rb").read() for p in glob.glob(os.path.join(root, "**", "*.py"), recursive=True)]
    assert [may_have_sites(d) for d in samples] == [PREFILTER.search(d) is not None for d in samples]
