"""The shipped table of TF functions that may hand back an argument (migrator/data/pass_through.json).

A gradient source bound to such a call is no new tensor: ``tf.image.central_crop(h, 1.0)`` is
``h``, so a target computed from ``h`` before that line depends on the source, and a tape opened
at the source's line misses it (an adversarial run: TF1 gave [6, 12, 18, 24], the migration
[3, 6, 9, 12]).  The table is made by tools/gen_pass_through.py from TensorFlow's own source; the
last test regenerates it and needs TensorFlow, the others do not.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

from migrator._plugins._grad_values import may_return_input, pass_through
from migrator.model import MANUAL, MIGRATED
from migrator.pipeline import migrate_text

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(REPO, "migrator", "data", "pass_through.json")
HAVE_TF = importlib.util.find_spec("tensorflow") is not None

#: hand back an argument itself for some inputs (checked against TensorFlow 2.21)
PASS_THROUGH = [
    "tensorflow.image.central_crop",        # central_fraction == 1.0
    "tensorflow.keras.activations.linear",  # `return x`
    "tensorflow.image.resize_images",       # tf.compat.v1 name; an image of that size already
    "tensorflow.image.resize",
    "tensorflow.cast",                      # to its own dtype
    "tensorflow.convert_to_tensor",         # of a tensor
    "tensorflow.math.round",                # of an integer tensor
    "tensorflow.math.polyval",              # of one coefficient
    "tensorflow.add_n",                     # of one tensor
    "tensorflow.nn.dropout",                # that drops nothing
]
#: always make a new tensor
FRESH = [
    "tensorflow.identity", "tensorflow.nn.relu", "tensorflow.matmul", "tensorflow.reshape", "tensorflow.reduce_sum",
    "tensorflow.sin", "tensorflow.random.normal", "tensorflow.constant", "tensorflow.placeholder",
    "tensorflow.stop_gradient", "tensorflow.concat", "tensorflow.gradients", "tensorflow.zeros_like",
    "tensorflow.nn.sigmoid", "tensorflow.square", "tensorflow.multiply",
]


def _data() -> dict:
    with open(TABLE, encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.parametrize("name", PASS_THROUGH)
def test_functions_that_may_hand_back_an_argument_are_listed(name):
    assert name in pass_through()
    assert may_return_input(name)


@pytest.mark.parametrize("name", FRESH)
def test_functions_that_always_make_a_new_tensor_are_not(name):
    assert name not in pass_through()
    assert not may_return_input(name)


def test_table_shape():
    data = _data()
    assert set(data) == {"tensorflow_version", "pass_through"}
    names = data["pass_through"]
    assert names == sorted(set(names)), "sorted, no duplicates"
    assert all(n.startswith("tensorflow.") and ".compat." not in n for n in names), "normalised names"
    assert 100 < len(names) < 1000


def test_the_hand_kept_names_still_count():
    """``_MAY_RETURN_INPUT`` (found by adversarial runs) is kept: the union decides."""
    assert may_return_input("tensorflow.keras.backend.in_train_phase")  # Keras 2 only: not in the table
    assert not may_return_input(None)


def test_loading_is_lazy_and_tf_free():
    code = textwrap.dedent(
        """
        import sys
        import migrator._plugins._grad_values as v
        assert v.pass_through.cache_info().currsize == 0, "loaded at import time"
        assert v.may_return_input("tensorflow.image.central_crop")
        assert "tensorflow" not in sys.modules
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# -- end to end ------------------------------------------------------------------------------------


def _source_bound_to(call: str) -> str:
    return textwrap.dedent(f"""\
        import tensorflow as tf

        h = tf.constant([[[1.0], [2.0]], [[3.0], [4.0]]])
        z = h * 3.0
        x = {call}
        y = tf.reduce_sum(x * z)
        g = tf.gradients(y, x)[0]
        """)


@pytest.mark.parametrize("call", [
    "tf.image.central_crop(h, 1.0)",
    "tf.keras.activations.linear(h)",
    "tf.compat.v1.image.resize_images(h, [2, 2])",
])
def test_a_source_that_may_be_an_earlier_tensor_is_left_manual(call):
    """The adversarial case: `x` is `h`, which `z` read before the tape could open at `x`."""
    src = _source_bound_to(call)
    out, sites = migrate_text(src)
    assert [s.status for s in sites] == [MANUAL], [(s.code, s.reason) for s in sites]
    assert out == src


def test_a_source_made_by_a_new_op_still_migrates():
    out, sites = migrate_text(_source_bound_to("tf.sin(h)"))
    assert [s.status for s in sites] == [MIGRATED]
    assert "    x = tf.sin(h)\n    tape.watch(x)\n" in out


@pytest.mark.parametrize("call, status", [("tf.image.central_crop(h, 1.0)", MANUAL), ("tf.sin(h)", MIGRATED)])
def test_a_parameter_passed_through_is_no_new_source(tmp_path, call, status):
    """Inside a function: a caller's `h * h` may depend on `x` when `x` is the caller's `h`."""
    from migrator import runner

    (tmp_path / "pyproject.toml").write_text("")
    lib = tmp_path / "helper.py"
    lib.write_text(textwrap.dedent(f"""\
        import tensorflow as tf


        def grad_via(h, z):
            x = {call}
            y = x * 3.0 + z
            return tf.gradients(y, x)[0]
        """))
    (tmp_path / "caller.py").write_text("from helper import grad_via\n\n\ndef go(h):\n    return grad_via(h, h * h)\n")
    (site,) = runner.run([str(lib)], runner.RunOptions(jobs=1)).results[0].sites
    assert site.status == status, (site.code, site.reason)


# -- regenerating ----------------------------------------------------------------------------------


@pytest.mark.slow  # imports TensorFlow and reads the source of every public function
@pytest.mark.skipif(not HAVE_TF, reason="needs TensorFlow")
def test_shipped_table_matches_a_fresh_analysis(tmp_path):
    """Regenerate with tools/gen_pass_through.py; it must equal the shipped data
    (run `python tools/gen_pass_through.py` after a TF or Keras upgrade)."""
    out_path = tmp_path / "pass_through.json"
    out = subprocess.run([sys.executable, os.path.join("tools", "gen_pass_through.py"), "--out", str(out_path)],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    fresh = json.loads(out_path.read_text())
    shipped = _data()
    if fresh["tensorflow_version"] != shipped["tensorflow_version"]:
        pytest.skip(f"table made with TF {shipped['tensorflow_version']}, installed {fresh['tensorflow_version']}")
    assert fresh == shipped
    with open(TABLE, encoding="utf-8") as f:
        assert out_path.read_text() == f.read(), "same bytes: deterministic output"
