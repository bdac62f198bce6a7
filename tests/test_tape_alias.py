"""Which name a tape is spelled with when TF is imported only under a guard (a held-out corpus:
TensorMol's `if HAS_TF: import tensorflow as tf` got an unconditional `import tensorflow as tf_1`,
which made the module unimportable without TensorFlow)."""
from __future__ import annotations

import textwrap

import pytest

from migrator.model import MIGRATED
from migrator.pipeline import migrate_text

GUARD = """\
try:
    import tensorflow
    HAS_TF = True
except ImportError:
    HAS_TF = False

if HAS_TF:
    import tensorflow as tf
{extra}

def forces(xyz):
{body}
"""
BODY = "    e = tf.reduce_sum(xyz ** 2)\n    return tf.gradients(e, xyz)[0]\n"


def tape_name(src: str) -> str:
    out, sites = migrate_text(textwrap.dedent(src))
    assert sites and all(s.status == MIGRATED for s in sites), [(s.code, s.reason) for s in sites]
    return out.split(".GradientTape()")[0].rsplit("with ", 1)[1]


def test_a_call_inside_a_function_spells_the_tape_with_the_guarded_import():
    out, _ = migrate_text(GUARD.format(extra="", body=BODY))
    assert "with tf.GradientTape() as tape:" in out and "tf_1" not in out and out.count("import tensorflow") == 2


@pytest.mark.parametrize("extra, body", [
    # a binding that is not TF's: the name may hold something else where the tape runs
    ("else:\n    tf = None\n", BODY),
    # `global tf` rebinding it from a function to something else
    ("\n\ndef load(stub):\n    global tf\n    tf = stub\n", BODY),
    # a local import inside the function: the tape would open before it ran
    ("", "    e = xyz ** 2\n    import tensorflow as tf\n    return tf.gradients(e, xyz)[0]\n"),
])
def test_the_guarded_name_is_not_used_when_it_may_not_be_tf_where_the_tape_opens(extra, body):
    out, sites = migrate_text(GUARD.format(extra=extra, body=body))
    migrated = [s for s in sites if s.status == MIGRATED]
    if migrated:
        assert "with tf.GradientTape()" not in out, out


def test_a_module_level_call_keeps_an_import_of_its_own():
    src = "if True:\n    import tensorflow as tf\n\nx = tf.constant([1.0, 2.0])\ny = tf.reduce_sum(x * x)\n" \
          "g = tf.gradients(y, x)[0]\n"
    out, sites = migrate_text(src)
    assert sites[0].status == MIGRATED
    assert "import tensorflow as tf_1" in out and "with tf_1.GradientTape()" in out
