"""Tape proofs that need the project around a file: callers, imports, patches, notebooks."""
from __future__ import annotations

import json
import os
import textwrap

import pytest

from migrator import runner
from migrator.model import MANUAL, MIGRATED
from migrator.notebook import migrate_notebook
from migrator.pipeline import Options, RunIndex
from project_files import write


def run(paths, unsafe=False):
    opts = runner.RunOptions(jobs=1, mode=runner.CHECK, options=Options(unsafe_fixes=unsafe))
    return {os.path.basename(r.path): r for r in runner.run(paths, opts).results}


GRAD_USER = """\
    import tensorflow as tf

    x = tf.constant([1.0, 2.0])
    y = tf.reduce_sum(x * x)
    g = tf.gradients(y, x)
    """


def test_a_patch_in_a_module_outside_the_run_keeps_every_call(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    write(tmp_path, "pkg/patch.py", """\
        import tensorflow as tf
        import memory_saving_gradients
        tf.__dict__["gradients"] = memory_saving_gradients.gradients_memory
        """)
    user = write(tmp_path, "pkg/train.py", GRAD_USER)
    write(tmp_path, "pkg/main.py", "import patch\nimport train\n")  # loaded together
    (site,) = run([user])["train.py"].sites
    assert (site.status, site.code) == (MANUAL, "TFG131") and "patch.py:3" in site.reason


@pytest.mark.parametrize("patch", ["gu._GradientsHelper = mine\n", "setattr(gu, '_GradientsHelper', mine)\n",
                                   "vars(gu)['_GradientsHelper'] = mine\n"])
def test_replacing_the_helper_tf_gradients_runs_is_a_patch(tmp_path, patch):
    """`gradients_util._GradientsHelper = mine` changes what tf.gradients computes, which a tape
    would bypass (an adversarial run)."""
    (tmp_path / "pyproject.toml").write_text("")
    write(tmp_path, "pkg/patch.py", "from tensorflow.python.ops import gradients_util as gu\n"
                                    "_orig = gu._GradientsHelper\n\n\ndef mine(*a, **k):\n"
                                    "    return [g * 2.0 for g in _orig(*a, **k)]\n\n\n" + patch)
    user = write(tmp_path, "pkg/train.py", GRAD_USER)
    write(tmp_path, "pkg/main.py", "import patch\nimport train\n")
    (site,) = run([user])["train.py"].sites
    assert (site.status, site.code) == (MANUAL, "TFG131") and "patch.py:9" in site.reason


def test_an_override_in_an_imported_module_outside_the_run_is_read_from_disk(tmp_path):
    (tmp_path / ".git").mkdir()
    write(tmp_path, "nets/layers.py", """\
        import tensorflow as tf

        def binarize(x):
            with tf.get_default_graph().gradient_override_map({"Sign": "Identity"}):
                return tf.sign(x)
        """)
    write(tmp_path, "nets/__init__.py", "")
    user = write(tmp_path, "train.py", """\
        import tensorflow as tf
        from nets.layers import binarize

        x = tf.constant([1.0, -2.0])
        y = tf.reduce_sum(binarize(x) * x)
        g = tf.gradients(y, x)
        """)
    (site,) = run([user])["train.py"].sites
    assert (site.status, site.code) == (MANUAL, "TFG122") and "layers.py" in site.reason
    # in the same run, the override is migrated first and the tape is then right
    res = run([str(tmp_path / "nets" / "layers.py"), user])
    assert [s.status for s in res["train.py"].sites] == [MIGRATED]


def test_a_caller_inside_an_override_block_refuses_the_tape(tmp_path):
    lib = write(tmp_path, "saliency.py", """\
        import tensorflow as tf

        def saliency(x):
            y = tf.reduce_sum(tf.nn.relu(x * 2.0))
            return tf.gradients(y, x)[0]
        """)
    write(tmp_path, "main.py", """\
        import tensorflow as tf
        from saliency import saliency

        G = tf.get_default_graph()
        with G.gradient_override_map({"Relu": "GuidedRelu"}):
            s = saliency(tf.constant([1.0, -1.0]))
        """)
    (site,) = run([lib])["saliency.py"].sites
    assert (site.status, site.code) == (MANUAL, "TFG122") and "main.py:5" in site.reason


def test_callers_in_other_files_prove_or_refute_a_parameter(tmp_path):
    lib = write(tmp_path, "attack.py", """\
        import tensorflow as tf

        def step(x, target):
            loss = tf.reduce_sum(tf.square(tf.tanh(x) - target))
            return tf.gradients(loss, x)[0]
        """)
    good = write(tmp_path, "good.py", """\
        import tensorflow as tf
        import attack

        t = tf.constant([0.5, 0.5])
        d = attack.step(tf.constant([1.0, 2.0]), t)
        """)
    (site,) = run([lib, good])["attack.py"].sites
    assert site.status == MIGRATED and any("`target` cannot depend on `x`" in p for p in site.proof)
    write(tmp_path, "bad.py", """\
        import tensorflow as tf
        from attack import step as attack_step

        x = tf.constant([1.0, 2.0])
        d = attack_step(x, x * 0.5)
        """)
    (site,) = run([lib, good], unsafe=True)["attack.py"].sites
    assert (site.status, site.code) == (MANUAL, "TFG130") and "bad.py:5" in site.reason


def test_an_unsafe_fix_is_reported_with_its_assumption(tmp_path):
    lib = write(tmp_path, "lib.py", """\
        import tensorflow as tf

        def grad(x, w):
            y = tf.reduce_sum(x * w)
            return tf.gradients(y, x)
        """)
    (site,) = run([lib])["lib.py"].sites
    assert (site.status, site.code) == (MANUAL, "TFG129") and "parameter `w` does not depend on `x`" in site.reason
    opts = runner.RunOptions(jobs=1, mode=runner.CHECK, options=Options(unsafe_fixes=True))
    result = runner.run([lib], opts)
    (site,) = result.results[0].sites
    assert site.unsafe and site.assumptions == [
        "parameter `w` does not depend on `x` (no caller of `grad` in the project)"]
    data = json.loads(json.dumps(site.to_json()))
    assert data["assumptions"] == site.assumptions and data["proof"]
    assert result.summary(runner.CHECK)["sites_unsafe"] == 1


def test_a_tape_never_spans_notebook_cells():
    cells = [
        "import tensorflow as tf\nx = tf.constant([1.0, 2.0])\ny = tf.reduce_sum(x * x)\n",
        "g = tf.gradients(y, x)\n",
    ]
    nb = {"cells": [{"cell_type": "code", "source": c, "metadata": {}, "outputs": [], "execution_count": None}
                    for c in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    text = json.dumps(nb, indent=1)
    new, sites = migrate_notebook(text, "nb.ipynb", RunIndex(), Options())
    assert new == text
    assert [(s.status, s.code) for s in sites] == [(MANUAL, "TFG134")]


def test_a_list_the_caller_fills_after_binding_is_not_a_constant(tmp_path):
    lib = write(tmp_path, "lib.py", """\
        import tensorflow as tf

        def input_gradient(endpoints, x):
            loss = tf.reduce_sum(tf.nn.softplus(endpoints[-1])) + tf.reduce_sum(x)
            return tf.gradients(loss, x)[0]


        x = tf.constant([[0.2, -0.7]])
        endpoints = []
        endpoints.append(tf.tanh(x))
        g = input_gradient(endpoints, x)
        """)
    (site,) = run([lib])["lib.py"].sites
    assert (site.status, site.code) == (MANUAL, "TFG129")
    assert "parameter `endpoints` does not depend on `x`" in site.reason


def test_a_register_once_guard_on_the_registry_is_not_a_patch(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    write(tmp_path, "guided.py", """\
        import tensorflow as tf
        from tensorflow.python.framework import ops

        if "GuidedRelu" not in ops._gradient_registry._registry:
            @ops.RegisterGradient("GuidedRelu")
            def _guided_relu(op, grad):
                return tf.where(grad > 0.0, grad, tf.zeros_like(grad))
        """)
    user = write(tmp_path, "train.py", GRAD_USER)
    write(tmp_path, "main.py", "import guided\nimport explain\nimport train\n")  # loaded together
    (site,) = run([user])["train.py"].sites
    assert site.status == MIGRATED
    write(tmp_path, "explain.py", """\
        from tensorflow.python.framework import ops as tf_ops

        def swap(name, fn):
            reg = tf_ops._gradient_registry._registry
            reg[name]["type"] = fn
        """)
    (site,) = run([user])["train.py"].sites
    assert (site.status, site.code) == (MANUAL, "TFG131") and "explain.py:4" in site.reason


SHARED_MODEL = """\
    import tensorflow as tf

    inputs = tf.constant([1.0, 2.0])
    logits = tf.tanh(inputs) * 3.0
    """


def test_project_module_globals_are_not_constants_in_any_spelling(tmp_path):
    """A project module's global may be a tensor built from what the caller passes as the
    source: a tape opened here would miss that path (found by an adversarial run)."""
    (tmp_path / "pyproject.toml").write_text("")
    write(tmp_path, "shared_model.py", SHARED_MODEL)
    write(tmp_path, "gin/__init__.py", "")
    write(tmp_path, "gin/model.py", SHARED_MODEL)
    user = write(tmp_path, "main.py", """\
        import sys
        import tensorflow as tf
        import gin.model as m


        def local_import(x):
            from shared_model import logits
            y = logits * x
            return tf.gradients(y, x)


        def local_module(x):
            import shared_model
            y = shared_model.logits * x
            return tf.gradients(y, x)


        def through_sys_modules(x):
            y = sys.modules["shared_model"].logits * x
            return tf.gradients(y, x)


        def package_named_like_a_library(x):
            y = m.logits * x
            return tf.gradients(y, x)
        """)
    sites = run([user])["main.py"].sites
    assert [s.status for s in sites] == [MANUAL] * 4, [(s.line, s.reason) for s in sites]


def test_registry_changes_in_every_spelling_and_in_notebooks(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    user = write(tmp_path, "train.py", GRAD_USER)
    write(tmp_path, "main.py", "import patch\nimport train\n")  # loaded together
    spellings = [
        "from tensorflow.python.framework.ops import _gradient_registry as R\n"
        "R._registry['Relu']['type'] = lambda op, grad: grad\n",
        "from tensorflow.python.framework import ops\n"
        "getattr(ops, '_gradient_registry')._registry['Relu']['type'] = lambda op, grad: grad\n",
        "from tensorflow.python.framework import ops\n"
        "reg = ops.__dict__['_gradient_registry']\n",
    ]
    for text in spellings:
        write(tmp_path, "patch.py", text)
        (site,) = run([user])["train.py"].sites
        assert (site.status, site.code) == (MANUAL, "TFG131"), text
    os.remove(tmp_path / "patch.py")
    cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
            "source": ["import train\n", "from tensorflow.python.framework import ops\n",
                       "ops._gradient_registry._registry['Identity']['type'] = lambda op, grad: 0.5 * grad\n"]}
    (tmp_path / "explain.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4,
                                                        "nbformat_minor": 5}))
    (site,) = run([user])["train.py"].sites
    assert (site.status, site.code) == (MANUAL, "TFG131") and "explain.ipynb" in site.reason


def test_reading_the_registry_through_its_methods_is_not_a_patch(tmp_path):
    """`ops._gradient_registry.lookup("Relu")` reuses TF's own gradient (a real idiom); only
    replacing the method, or any other spelling, counts as a patch."""
    (tmp_path / "pyproject.toml").write_text("")
    user = write(tmp_path, "train.py", GRAD_USER)
    write(tmp_path, "main.py", "import grads\nimport hook\nimport train\n")  # loaded together
    write(tmp_path, "grads.py", """\
        from tensorflow.python.framework import ops

        relu_gradient = ops._gradient_registry.lookup("Relu")
        known = sorted(ops._gradient_registry.list())
        """)
    (site,) = run([user])["train.py"].sites
    assert site.status == MIGRATED, site.reason
    write(tmp_path, "hook.py", """\
        from tensorflow.python.framework import ops

        def hook(patch):
            ops._gradient_registry.lookup = patch(ops._gradient_registry.lookup)
        """)
    (site,) = run([user])["train.py"].sites
    assert (site.status, site.code) == (MANUAL, "TFG131") and "hook.py:4" in site.reason


def test_a_graph_override_table_written_directly_keeps_every_call(tmp_path):
    """`g._gradient_override_map["Relu"] = "GuidedRelu"` (or a hand-written copy of
    gradient_override_map) overrides TF1 gradients without the context manager; a tape
    ignores it, here or in any file loaded with this one."""
    (tmp_path / "pyproject.toml").write_text("")
    user = write(tmp_path, "train.py", GRAD_USER)
    write(tmp_path, "main.py", "import explain\nimport train\n")  # loaded together
    (site,) = run([user])["train.py"].sites
    assert site.status == MIGRATED
    for word, text in [
        ("_gradient_override_map", """\
            import tensorflow as tf

            def guided():
                tf.get_default_graph()._gradient_override_map["Relu"] = "GuidedRelu"
            """),
        ("_gradient_function_map", """\
            def swap(graph, fn):
                graph._gradient_function_map["Relu"] = fn
            """),
        ("_gradient_op_type", """\
            def tag(t, attr):
                t.op._set_attr("_gradient_op_type", attr)
            """),
    ]:
        write(tmp_path, "explain.py", text)
        (site,) = run([user])["train.py"].sites
        assert (site.status, site.code) == (MANUAL, "TFG131"), word
        assert f"explain.py:4: `{word}`" in site.reason or f"explain.py:2: `{word}`" in site.reason, site.reason


def test_a_caller_inside_a_library_override_context_keeps_the_call(tmp_path):
    """A caller that wraps the function in lucid's `relu_overrides()`, or in a helper of
    its own module that enters gradient_override_map: TF1 applied the override to the ops
    the function makes, a tape opened inside it would not."""
    (tmp_path / "pyproject.toml").write_text("")
    lib = write(tmp_path, "lib.py", """\
        import tensorflow as tf


        def saliency():
            x = tf.constant([1.0, 2.0, -1.0])
            y = tf.nn.relu(x * tf.constant([1.0, -2.0, 3.0]))
            return tf.gradients(tf.reduce_sum(y * y), x)[0]
        """)
    (site,) = run([lib])["lib.py"].sites
    assert site.status == MIGRATED, site.reason
    for body in ["import lucid.optvis.overrides as ov\nfrom lib import saliency\n\n\ndef run():\n"
                 "    with ov.relu_overrides():\n        return saliency()\n",
                 "import tensorflow as tf\nfrom lib import saliency\n\n\ndef guided():\n"
                 "    return tf.get_default_graph().gradient_override_map({'Relu': 'Identity'})\n\n\n"
                 "def run():\n    with guided():\n        return saliency()\n"]:
        (tmp_path / "main.py").write_text(body)
        (site,) = run([lib])["lib.py"].sites
        assert (site.status, site.code) == (MANUAL, "TFG122"), site.reason
        assert "main.py:" in site.reason


def test_a_caller_passing_a_python_number_as_the_source_keeps_the_call(tmp_path):
    """TF1 differentiated a new constant made from 3.0 (None); tape.watch(3.0) raises."""
    (tmp_path / "pyproject.toml").write_text("")
    lib = write(tmp_path, "lib.py", """\
        import tensorflow as tf


        def f(x):
            y = tf.constant([1.0, 2.0]) * x
            return tf.gradients(y, x)


        def probe():
            return f(3.0)
        """)
    (site,) = run([lib])["lib.py"].sites
    assert (site.status, site.code) == (MANUAL, "TFG126"), site.reason



@pytest.mark.parametrize("arg, imports", [
    ("math.pi", "import math\n"),
    ("2 * math.pi", "import math\n"),
    ("float(n)", ""),
    ("np.float32(2.0)", "import numpy as np\n"),
    ("np.ones([2])", "import numpy as np\n"),
    ("-numpy.e", "import numpy\n"),
])
def test_python_and_numpy_values_from_a_caller_in_other_spellings_keep_the_call(tmp_path, arg, imports):
    """Found by an adversarial run: each of these reached tape.watch, which raises for them."""
    (tmp_path / "pyproject.toml").write_text("")
    lib = write(tmp_path, "lib.py", "import tensorflow as tf\n" + imports + textwrap.dedent(f"""\


        def f(x):
            y = tf.constant([1.0, 2.0]) * x
            return tf.gradients(y, x)


        def probe(n):
            return f({arg})
        """))
    (site,) = run([lib])["lib.py"].sites
    assert (site.status, site.code) == (MANUAL, "TFG126"), site.reason


@pytest.mark.parametrize("arg", ["tf.constant(2.0)", "float_tensor", "self.x", "np_helper()"])
def test_tensors_and_unknowns_from_a_caller_still_migrate(tmp_path, arg):
    (tmp_path / "pyproject.toml").write_text("")
    lib = write(tmp_path, "lib.py", "import numpy as np\nimport tensorflow as tf\n" + textwrap.dedent(f"""\


        def f(x):
            y = tf.constant([1.0, 2.0]) * x
            return tf.gradients(y, x)


        def probe(float_tensor, self, np_helper):
            return f({arg})
        """))
    (site,) = run([lib])["lib.py"].sites
    assert site.status == MIGRATED, (site.code, site.reason)


def test_select_gradients_alone_keeps_tapes_away_from_override_maps(tmp_path):
    """Found by an adversarial run: with the overrides rule not selected, its maps stay, and a tape
    would silently ignore them (a straight-through gradient became sign()'s zero gradient)."""
    (tmp_path / "pyproject.toml").write_text("")
    lib = write(tmp_path, "quant.py", """\
        import tensorflow as tf


        def binary(x):
            with tf.get_default_graph().gradient_override_map({"Sign": "Identity"}):
                return tf.sign(x)
        """)
    here = write(tmp_path, "here.py", """\
        import tensorflow as tf


        def f(x):
            with tf.get_default_graph().gradient_override_map({"Sign": "Identity"}):
                y = tf.sign(x)
            return tf.gradients(y, x)
        """)
    user = write(tmp_path, "user.py", """\
        import tensorflow as tf

        import quant


        def g(x):
            y = quant.binary(x)
            return tf.gradients(y, x)
        """)
    opts = runner.RunOptions(jobs=1, mode=runner.CHECK, options=Options(select=frozenset({"gradients"})))
    res = {os.path.basename(r.path): r for r in runner.run([lib, here, user], opts).results}
    assert [(s.status, s.code) for s in res["here.py"].sites] == [(MANUAL, "TFG122")]
    assert [(s.status, s.code) for s in res["user.py"].sites] == [(MANUAL, "TFG122")]


GRAD_YS_PARAM = """\
    import numpy as np
    import tensorflow as tf

    GYS = [[2.0, 3.0]]


    def grads(x, gy):
        y = x * x
        return tf.gradients(y, x, grad_ys={spelled})[0]


    def forward(x, gy):
        return grads(x, gy)
    """


@pytest.mark.parametrize("spelled, call", [
    ("gy", "grads(x, [[2.0, 3.0]])"),
    ("gy", "grads(x, gy=GYS)"),
    ("gy", "grads(x, [np.ones(2).tolist()])"),
    ("gy", "forward(x, [[2.0, 3.0]])"),  # through the caller's own parameter
    ("gy", "grads(x, list(GYS))"),
    ("[gy]", "grads(x, [2.0, 3.0])"),
    ("[gy]", "grads(x, GYS[0])"),
    ("[gy]", "grads(x, np.ones(2).tolist())"),
])
def test_a_caller_passing_a_python_list_into_grad_ys_keeps_the_call(tmp_path, spelled, call):
    """Found by an adversarial run: TF1 made one tensor of ``[2.0, 3.0]``; ``tape.gradient``
    flattens ``output_gradients`` into two numbers and silently reads the first."""
    site = _grad_ys_site(tmp_path, spelled, call)
    assert (site.status, site.code) == (MANUAL, "TFG128") and "use.py:7" in site.reason, site.reason


@pytest.mark.parametrize("spelled, call", [
    ("gy", "grads(x, tf.constant([2.0, 3.0]))"),
    ("gy", "grads(x, [tf.ones([2])])"),
    ("gy", "grads(x, [np.ones(2)])"),
    ("[gy]", "grads(x, tf.ones([2]))"),
    ("[gy]", "grads(x, np.ones(2))"),
])
def test_tensors_and_arrays_from_a_caller_into_grad_ys_still_migrate(tmp_path, spelled, call):
    site = _grad_ys_site(tmp_path, spelled, call)
    assert site.status == MIGRATED, (site.code, site.reason)


def _grad_ys_site(tmp_path, spelled: str, call: str):
    (tmp_path / "pyproject.toml").write_text("")
    lib = write(tmp_path, "lib.py", GRAD_YS_PARAM.format(spelled=spelled))
    use = write(tmp_path, "use.py", f"""\
        import numpy as np
        import tensorflow as tf
        from lib import GYS, forward, grads


        def probe(x):
            return {call}
        """)
    (site,) = run([lib, use])["lib.py"].sites
    return site


@pytest.mark.parametrize("arg, python", [
    ("abs(-3.0)", True),
    ("sum([1.0, 2.0])", True),
    ("max(2.0, n)", False),  # `n` is unknown: may be a tensor, and max may hand it back
    ("abs(tf.constant(-3.0))", False),  # a tensor: Tensor.__abs__
    ("sum([tf.constant(1.0), tf.constant(2.0)])", False),
    ("round(2.5)", True),
    ("len(xs)", True),
])
def test_number_builtins_make_numbers_only_from_numbers(tmp_path, arg, python):
    """``abs`` and ``sum`` of tensors give tensors: refusing them as Python numbers was untrue."""
    (tmp_path / "pyproject.toml").write_text("")
    lib = write(tmp_path, "lib.py", "import tensorflow as tf\n" + textwrap.dedent(f"""\


        def f(x):
            y = tf.constant([1.0, 2.0]) * x
            return tf.gradients(y, x)


        def probe(n, xs):
            return f({arg})
        """))
    (site,) = run([lib])["lib.py"].sites
    if python:
        assert (site.status, site.code) == (MANUAL, "TFG126"), site.reason
    else:
        assert site.status == MIGRATED, (site.code, site.reason)


@pytest.mark.parametrize("value, python", [
    ("sum([1.0, 2.0])", True), ("abs(-2.0)", True), ("max(1.0, 2.0)", True), ("abs(T)", False),
    ("sum([T, T])", False),
])
def test_number_builtins_bound_in_the_function(tmp_path, value, python):
    lib = write(tmp_path, "lib.py", f"""\
        import tensorflow as tf

        T = tf.constant(-2.0)


        def f():
            x = {value}
            y = tf.constant([1.0, 2.0]) * x
            return tf.gradients(y, x)
        """)
    (site,) = run([lib])["lib.py"].sites
    assert (site.status == MANUAL and site.code == "TFG126") == python, (site.code, site.reason)


@pytest.mark.parametrize("helper, python", [
    ("def temperature():\n    return 2.0\n", True),
    ("def temperature():\n    return np.float32(2.0)\n", True),
    ("def temperature(hot=False):\n    if hot:\n        return tf.constant(4.0)\n    return 2.0 * 1.5\n", True),
    ("def temperature():\n    return tf.constant(2.0)\n", False),
    ("def temperature():\n    def inner():\n        return 2.0\n    return tf.constant(inner())\n", False),
])
def test_a_source_bound_to_a_helper_that_returns_a_python_value(tmp_path, helper, python):
    """TF1 differentiated a new constant (None); ``tape.watch(2.0)`` raises (an adversarial run)."""
    lib = write(tmp_path, "lib.py", "import numpy as np\nimport tensorflow as tf\n\n\n" + helper + """

def f():
    a = tf.constant([1.0, 2.0])
    s = temperature()
    y = tf.reduce_sum(a * a * s)
    return tf.gradients(y, [a, s])
""")
    (site,) = run([lib])["lib.py"].sites
    assert (site.status == MANUAL and site.code == "TFG126") == python, (site.code, site.reason)
    if python:
        assert "`temperature()`, which may return a Python or numpy value, at line" in site.reason


PATCHER = """\
    import tensorflow as tf

    g = tf.get_default_graph()
    g._gradient_override_map.update({"Square": "Identity"})
    """

SQUARE_USER = """\
    import tensorflow as tf


    def grad_of_square(x):
        y = tf.square(x)
        return tf.gradients(y, x)[0]
    """


@pytest.mark.parametrize("others, refused", [
    ({}, False),  # a sibling nobody imports with this file: its patch cannot reach it
    ({"main.py": "import patcher\nimport user\n"}, True),  # one script loads both
    ({"main.py": "import patcher\nimport pkg\n", "pkg/__init__.py": "from user import grad_of_square\n"}, True),
    ({"main.py": "import importlib\nm = importlib.import_module('pat' + 'cher')\n"}, True),  # cannot be told
])
def test_a_registry_patch_reaches_only_files_loaded_with_it(tmp_path, others, refused):
    """Found on real code: one guided-backprop script that wrote a graph's override table made
    every tf.gradients of 28 files that never import it manual (TFG131)."""
    (tmp_path / "pyproject.toml").write_text("")
    write(tmp_path, "patcher.py", PATCHER)
    user = write(tmp_path, "user.py", SQUARE_USER)
    for name, text in others.items():
        write(tmp_path, name, text)
    (site,) = run([user])["user.py"].sites
    assert (site.status == MANUAL and site.code == "TFG131") == refused, (site.code, site.reason)


def test_a_registry_patch_in_a_module_this_file_imports_still_refuses(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    write(tmp_path, "patcher.py", PATCHER)
    user = write(tmp_path, "user.py", "import patcher\n" + textwrap.dedent(SQUARE_USER))
    (site,) = run([user])["user.py"].sites
    assert (site.status, site.code) == (MANUAL, "TFG131"), site.reason


_CTOR = ("import tensorflow as tf\n\n\nclass Impl(object):\n    def __init__(self, x, logits, c):\n"
         "        self.x = x\n        self.logits = logits\n"
         "        self.loss = c * tf.reduce_sum(tf.square(self.logits)) + tf.reduce_sum(tf.square(self.x))\n"
         "        self.grad, = tf.gradients(self.loss, self.x)\n\n\n"
         "def build(x, w):\n    return Impl(x, tf.matmul(x, w), 3.0)\n")
_METHOD = ("import tensorflow as tf\n\n\nclass Attack(object):\n    def grad_of(self, x, logits):\n"
           "        loss = tf.reduce_sum(tf.square(logits)) + tf.reduce_sum(x * x)\n"
           "        return tf.gradients(loss, x)[0]\n\n"
           "    def run(self, x, w):\n        return self.grad_of(x, tf.matmul(x, w))\n")


@pytest.mark.parametrize("src, line", [(_CTOR, 13), (_METHOD, 10)], ids=["constructor", "self_method"])
def test_a_visible_method_caller_that_passes_a_dependent_value_refutes_the_unsafe_fix(tmp_path, src, line):
    """Found in real code (cleverhans' LBFGS): a constructor given `model.get_logits(x)` with `x`;
    the --unsafe-fixes tape, opened inside the constructor, dropped the path through the logits."""
    path = write(tmp_path, "attack.py", src)
    for unsafe in (False, True):
        (site,) = run([path], unsafe=unsafe)["attack.py"].sites
        assert site.status == MANUAL and site.code == "TFG130", (unsafe, site.code, site.reason)
        assert f"the caller at attack.py:{line} computes `logits` from `x`" in site.reason


def test_a_method_whose_visible_callers_pass_independent_values_stays_an_assumption(tmp_path):
    src = ("import tensorflow as tf\n\n\nclass Impl(object):\n    def __init__(self, x, logits):\n"
           "        self.x = x\n        self.loss = tf.reduce_sum(logits * self.x)\n"
           "        self.grad, = tf.gradients(self.loss, self.x)\n\n\n"
           "def build(x, w):\n    return Impl(x, tf.constant(2.0) * w)\n")
    path = write(tmp_path, "attack.py", src)
    (site,) = run([path])["attack.py"].sites
    assert site.code == "TFG129" and "callers cannot all be listed" in site.reason
    (site,) = run([path], unsafe=True)["attack.py"].sites
    assert site.status == MIGRATED


def test_a_star_import_that_binds_tf_makes_the_call_someone_elses(tmp_path):
    """`from mylib import *` after `import tensorflow as tf`, mylib defining `class tf` with its own
    `gradients` (an adversarial run: the tape was spelled on mylib's `tf`, AttributeError)."""
    write(tmp_path, "mylib.py", "import tensorflow as _tf\n\n\nclass tf:\n    @staticmethod\n"
                                "    def gradients(ys, xs):\n        return _tf.gradients(ys, xs)\n")
    main = write(tmp_path, "m.py", "import tensorflow as tf\nfrom mylib import *\n\n\ndef f(x):\n"
                                   "    y = x * x * x\n    return tf.gradients(y, x)[0]\n")
    (site,) = run([main])["m.py"].sites
    assert site.code == "TFG128" and "`from mylib import *` (line 2) may bind `tf` to something else" in site.reason


_DCGAN_USER = "import tensorflow as tf\nfrom ops import *\n\n\ndef penalty():\n    x = tf.constant([1.0, -2.0])\n" \
              "    y = lrelu(x) * x * 2.0\n    return tf.gradients(y, x)[0]\n"
_OPS = "import math\nimport tensorflow as tf\nfrom utils import *\n\n\ndef lrelu(x, leak=0.2):\n" \
       "    return tf.maximum(x, leak * x)\n"


@pytest.mark.parametrize("utils", ["import numpy as np\nimport tensorflow as tf\n", "import os\nfrom math import *\n"])
def test_a_star_import_of_a_helper_that_imports_tf_too_leaves_tf_tf(tmp_path, utils):
    """DCGAN-style code: `from ops import *`, ops.py importing TensorFlow as `tf` and star-importing
    utils.py in turn (a fresh corpus: such gradient penalties were refused with a false reason).
    Checked by numbers: TF1 [-0.4, 8.0]... is what the tape gives too (the source is made here)."""
    write(tmp_path, "ops.py", _OPS)
    write(tmp_path, "utils.py", utils)
    main = write(tmp_path, "gan.py", _DCGAN_USER)
    (site,) = run([main])["gan.py"].sites
    assert site.status == MIGRATED


@pytest.mark.parametrize("ops, utils", [
    (_OPS, "class tf:\n    gradients = None\n"),
    (_OPS, None),  # utils.py not found: unknown
    (_OPS, "import numpy as tf\n"),
    (_OPS, "__all__ = ['tf']\ntf = object()\n"),
    (_OPS, "from keras.backend import *\n"),  # a library that may export a `tf`
    ("import tensorflow.compat.v1 as tf\n\n\ndef lrelu(x):\n    return x\n", "x = 1\n"),  # another module
    (_OPS + "import ops as _me\nfrom utils import FAKE\n_me.tf = FAKE\n", "FAKE = 1\n"),
    (_OPS + "import sys as _s\n_s.modules[__name__].tf = 1\n", "x = 1\n"),
    (_OPS + "import importlib\nimportlib.import_module(__name__).tf = 1\n", "x = 1\n"),
    (_OPS + "\n\ndef __getattr__(name):\n    return 1\n", "x = 1\n"),
    (_OPS + "globals()['tf'] = 1\n", "x = 1\n"),
    (_OPS + "import ops as _me\nfrom utils import FAKE\n_me.__dict__.update(tf=FAKE)\n", "FAKE = 1\n"),
])
def test_a_star_import_that_may_rebind_tf_still_refuses(tmp_path, ops, utils):
    """Each from an adversarial run or a plain reading of what `import *` copies."""
    write(tmp_path, "ops.py", ops)
    if utils is not None:
        write(tmp_path, "utils.py", utils)
    main = write(tmp_path, "gan.py", _DCGAN_USER)
    (site,) = run([main])["gan.py"].sites
    assert site.code == "TFG128" and "may bind `tf`" in site.reason


@pytest.mark.parametrize("other", ["import ops\nops.tf = 1\n", "import ops\nsetattr(ops, 'tf', 1)\n",
                                   "import ops\nvars(ops)['tf'] = 1\n"])
def test_another_file_writing_the_star_imported_module_s_tf_refuses(tmp_path, other):
    write(tmp_path, "ops.py", _OPS)
    write(tmp_path, "utils.py", "x = 1\n")
    write(tmp_path, "patcher.py", other)
    main = write(tmp_path, "gan.py", "import patcher\n" + _DCGAN_USER)
    (site,) = run([main])["gan.py"].sites
    assert site.code == "TFG128"


def test_a_package_with_a_submodule_named_tf_may_bind_it(tmp_path):
    write(tmp_path, "pkg/__init__.py", "import tensorflow as tf\nfrom .tf import lrelu\n")
    write(tmp_path, "pkg/tf.py", "def lrelu(x):\n    return x\n")
    main = write(tmp_path, "gan.py", _DCGAN_USER.replace("from ops import *", "from pkg import *"))
    (site,) = run([main])["gan.py"].sites
    assert site.code == "TFG128"


_SHIM_USER = "from .backend import tf\n\n\ndef laplacian(x):\n    y = tf.reduce_sum(tf.sin(x) * x)\n" \
             "    return tf.gradients(y, x)[0]\n"


@pytest.mark.parametrize("backend", [
    "import tensorflow.compat.v1 as tf\n",
    "import tensorflow\ntf = tensorflow.compat.v1\n",
    "from .compat import tf\n",  # re-exported twice
])
def test_tf_re_exported_by_a_project_module_is_tf(tmp_path, backend):
    """deepxde spells every gradient through `from .backend import tf` (unseen real code): the
    calls were neither migrated nor reported.  Checked by numbers by hand: TF1, eager, tf.function."""
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/compat.py", "import tensorflow.compat.v1 as tf\n")
    write(tmp_path, "pkg/backend.py", backend)
    model = write(tmp_path, "pkg/model.py", _SHIM_USER)
    res = run([model])["model.py"]
    (site,) = res.sites
    assert site.status == MIGRATED, site.reason
    runner.run([model], runner.RunOptions(jobs=1))
    out = open(model).read()
    assert "with tf.GradientTape() as tape:" in out and "import tensorflow" not in out


@pytest.mark.parametrize("backend", [
    "try:\n    import tensorflow.compat.v1 as tf\nexcept ImportError:\n    tf = None\n",
    "import tensorflow.compat.v1 as tf\nfrom extras import *\n",
    "import tensorflow.compat.v1 as tf\nimport mylib as tf\n",
    "import tensorflow.compat.v1 as tf\n\n\ndef use_fake():\n    global tf\n    tf = object()\n",
])
def test_a_re_export_that_may_be_something_else_is_not_tf(tmp_path, backend):
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/backend.py", backend)
    model = write(tmp_path, "pkg/model.py", _SHIM_USER)
    (site,) = run([model])["model.py"].sites
    assert site.status == MANUAL and site.code == "TFG128" and "cannot tell" in site.reason


def test_an_override_through_a_re_exported_tf_adds_no_import(tmp_path):
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/backend.py", "import tensorflow.compat.v1 as tf\n")
    ov = write(tmp_path, "pkg/ov.py", "from .backend import tf\n\n\n@tf.RegisterGradient(\"HalfGrad\")\n"
                                      "def _half(op, grad):\n    return grad * 0.5\n\n\ndef f(x):\n"
                                      "    with tf.get_default_graph().gradient_override_map({\"Identity\": "
                                      "\"HalfGrad\"}):\n        y = tf.identity(x)\n    return y * 3.0\n")
    runner.run([ov], runner.RunOptions(jobs=1))
    out = open(ov).read()
    assert "@tf.custom_gradient" in out and "import tensorflow" not in out


@pytest.mark.parametrize("helper", [
    "import sys\nimport tensorflow.compat.v1 as tf\n\n\ndef double(ys, xs):\n    return [2.0 * g for g in tf.gradients(ys, xs)]\n\n\n"
    "sys.modules['m'].grad = double\n",
    "import m\nimport tensorflow.compat.v1 as tf\n\n\ndef double(ys, xs):\n    return [2.0 * g for g in tf.gradients(ys, xs)]\n\n\n"
    "m.grad = double\n",
])
def test_an_alias_another_module_may_rebind_is_no_alias(tmp_path, helper):
    """`grad = tf.gradients` in m, and a module loaded with it rebinds `m.grad` (an adversarial run:
    TF1 gave twice the tape's value)."""
    write(tmp_path, "helper_b08.py", helper)
    main = write(tmp_path, "m.py", "import tensorflow.compat.v1 as tf\ngrad = tf.gradients\nimport helper_b08\n\n\n"
                                   "def f(x):\n    y = x * tf.sin(x)\n    return grad(y, x)[0]\n")
    res = run([main])["m.py"]
    assert not any(s.status == MIGRATED for s in res.sites)


_STAR_ONLY_USER = _DCGAN_USER.replace("import tensorflow as tf\n", "import numpy as np\n")


@pytest.mark.parametrize("ops", [_OPS, _OPS.replace("import tensorflow as tf", "import tensorflow.compat.v1 as tf")])
def test_tf_that_only_a_star_import_binds_is_tf(tmp_path, ops):
    """TobiasLee's text classifiers never import TensorFlow: `tf` comes from `from utils.prepare_data
    import *` alone (a whole-repository corpus: every site was TFG128).  The tape is spelled with
    that `tf` and no import is added.  Checked by numbers: fixtures/grad_tf_only_from_star_import."""
    write(tmp_path, "ops.py", ops)
    write(tmp_path, "utils.py", "x = 1\n")
    main = write(tmp_path, "gan.py", _STAR_ONLY_USER)
    (site,) = run([main])["gan.py"].sites
    assert site.status == MIGRATED
    runner.run([main], runner.RunOptions(jobs=1))
    out = open(main).read()
    assert "with tf.GradientTape() as tape:" in out and "import tensorflow" not in out


@pytest.mark.parametrize("ops, utils, other", [
    (_OPS, "class tf:\n    gradients = None\n", None),
    (_OPS, None, None),  # utils.py not found: unknown
    (_OPS, "import numpy as tf\n", None),
    (_OPS, "from keras.backend import *\n", None),  # a library that may export a `tf`
    (_OPS + "\n\ndef __getattr__(name):\n    return 1\n", "x = 1\n", None),
    (_OPS + "globals()['tf'] = 1\n", "x = 1\n", None),
    (_OPS + "tf = None\n", "x = 1\n", None),
    (_OPS, "x = 1\n", "import gan\ngan.tf = 1\n"),  # another file writes the user's own `tf`
    (_OPS, "x = 1\n", "import ops\nops.tf = 1\n"),
    (_OPS, "x = 1\n", "import gan\nsetattr(gan, 'tf', 1)\n"),
    (_OPS, "x = 1\n", "import gan\nvars(gan)['tf'] = 1\n"),
])
def test_tf_from_a_star_import_that_may_be_something_else_is_refused(tmp_path, ops, utils, other):
    write(tmp_path, "ops.py", ops)
    if utils is not None:
        write(tmp_path, "utils.py", utils)
    if other is not None:
        write(tmp_path, "patcher.py", other)
    main = write(tmp_path, "gan.py", _STAR_ONLY_USER)
    (site,) = run([main])["gan.py"].sites
    assert site.code == "TFG128", site


@pytest.mark.parametrize("user", [
    _STAR_ONLY_USER + "globals()['tf'] = 1\n",
    _STAR_ONLY_USER + "del tf\n",
    _STAR_ONLY_USER + "from mylib import *\n",  # a library's star import: it may export a `tf`
    _STAR_ONLY_USER.replace("def penalty():", "def penalty(tf=None):"),
])
def test_a_user_file_that_may_bind_tf_itself_is_refused(tmp_path, user):
    write(tmp_path, "ops.py", _OPS)
    write(tmp_path, "utils.py", "x = 1\n")
    main = write(tmp_path, "gan.py", user)
    sites = run([main])["gan.py"].sites
    assert [s.code for s in sites] == ["TFG128"], sites


@pytest.mark.parametrize("other, refused", [
    ("import ops\n\n\ndef show(args):\n    for arg in vars(args):\n        print(arg)\n", False),  # PhysNet's train.py
    ("import ops\nprint(sorted(k for k in vars(args)))\n", False),
    ("import ops\nfor k, v in vars(args).items():\n    print(k, v)\n", False),
    ("import ops\nsummary = ops.lrelu(1.0)\nprint(summary.eval())\n", False),  # a tensor's .eval()
    ("import ops\nvars(ops).update(tf=1)\n", True),
    ("import ops\nfill(vars(ops))\n", True),  # handed to code that may write it
    ("import ops\nd = vars(ops)\nd['tf'] = 1\n", True),
    ("import ops\neval('setattr(ops, \"tf\", 1)')\n", True),
    ("import ops\nexec('ops.tf = 1')\n", True),
    ("import ops\nimport importlib\nimportlib.reload(ops)\n", True),
])
def test_reads_of_vars_and_tensor_eval_elsewhere_do_not_block_a_star_import(tmp_path, other, refused):
    """PhysNet's `for arg in vars(args)` and `nn_summary_op.eval()` in train.py made every star
    import of its layers unknown (TFG128): neither can rebind a module's `tf`."""
    write(tmp_path, "ops.py", _OPS)
    write(tmp_path, "utils.py", "x = 1\n")
    write(tmp_path, "train.py", other)
    main = write(tmp_path, "gan.py", "import train\n" + _DCGAN_USER)
    (site,) = run([main])["gan.py"].sites
    assert (site.code == "TFG128") == refused, site


def test_tf_from_a_star_import_of_a_module_outside_the_run_says_so(tmp_path):
    """UGATIT's utils.py was not in the corpus: the reason named parameters and locals."""
    write(tmp_path, "ops.py", _OPS)  # its `from utils import *` finds no utils.py
    main = write(tmp_path, "gan.py", _STAR_ONLY_USER)
    (site,) = run([main])["gan.py"].sites
    assert site.code == "TFG128" and "comes only from star imports (`from ops import *` (line 2))" in site.reason


def test_a_manual_override_elsewhere_is_not_named_by_the_file_s_first_override_line(tmp_path):
    """An unseen corpus: ZOO_attack.py was refused because "dorefa.py:46 enters gradient_override_map
    and was left for manual migration" -- line 46 migrated; the one left manual was line 53."""
    write(tmp_path, "ops.py", """\
        import tensorflow as tf


        def st_round(x):
            with tf.get_default_graph().gradient_override_map({"Round": "Identity"}):
                return tf.round(x)


        def other(x):
            with tf.get_default_graph().gradient_override_map({"Sign": "NotRegistered"}):
                return tf.sign(x)
        """)
    write(tmp_path, "user.py", GRAD_USER)
    write(tmp_path, "main.py", "import ops\nimport user\n")
    paths = [str(tmp_path / n) for n in ("ops.py", "user.py", "main.py")]
    results = run(paths)
    assert [(s.line, s.status) for s in results["ops.py"].sites if s.kind == "override_map"] == \
        [(5, MIGRATED), (10, MANUAL)]
    (site,) = results["user.py"].sites
    assert site.code == "TFG122" and "ops.py:5" not in site.reason, site.reason
    assert "ops.py enters gradient_override_map where an override was left for manual migration" in site.reason


@pytest.mark.parametrize("script, refused", [
    ("import ops\nops.tf = 1\n", False),  # another entry point: never loaded with gan.py
    ("import ops\nprint(eval('ops.%s' % 'tf'))\n", False),  # darts' train.py: eval in another script
    ("import gan\nimport ops\nops.tf = 1\n", True),  # loads gan.py too: it may rebind what gan.py reads
    ("import ops\nops.tf = 1\n__import__('gan')\n", True),  # imports by computed name: anything may load
])
def test_a_script_that_cannot_run_with_the_importer_does_not_block_its_star_import(tmp_path, script, refused):
    """darts' train.py (another entry point) runs `eval(...)`: train_search.py's star import of
    model_search was refused for it.  A module's names are copied where it is loaded; a file never
    loaded with the importer cannot change them (through another star import, still taken to)."""
    write(tmp_path, "ops.py", _OPS.replace("from utils import *\n", ""))
    write(tmp_path, "other_script.py", script)
    main = write(tmp_path, "gan.py", _DCGAN_USER)
    (site,) = run([main])["gan.py"].sites
    assert (site.code == "TFG128") == refused, site


_FAKE = "import tensorflow as _real\n\n\nclass Fake(object):\n    def __getattr__(self, n):\n        return getattr(_real, n)\n"


@pytest.mark.parametrize("files", [
    {"patcher.py": "import ops\nops.__setattr__('tf', 1)\n"},
    {"patcher.py": "import ops\nput = setattr\nput(ops, 'tf', 1)\n"},
    {"patcher.py": "import ops\nlist(map(setattr, [ops], ['tf'], [1]))\n"},
    {"patcher.py": "import functools\nimport ops\nfunctools.partial(setattr, ops, 'tf')(1)\n"},
    {"patcher.py": "import ops\n\n\ndef patch(self):\n    self.tf = 1\n\n\npatch(ops)\n"},
    {"patcher.py": "import builtins\nbuiltins.eval(\"setattr(ops, 'tf', 1)\")\n"},
    {"patcher.py": "import builtins\ngetattr(builtins, 'ex' + 'ec')('import ops; ops.tf = 1')\n"},
    {"patcher.py": "import ops\ngetattr(ops, '__dict__')['tf'] = 1\n"},
    {"patcher.py": "import ops\nvars(ops).get('square').__globals__['tf'] = 1\n"},
    {"patcher.py": "import sys\nsys._getframe(0).f_globals['tf'] = 1\n"},
    {"patcher.py": "import ops\n\n\nclass M(type(ops)):\n    pass\n\n\nops.__class__ = M\n"},
    {"patcher.py": "__builtins__['tf'] = 1\n", "ops.py": "import tensorflow as tf\n__all__ = ['square']\n"},
    {"ops.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import tensorflow as tf\n"},
    {"ops.py": "import tensorflow as tf\nimport builtins\nbuiltins.exec('tf = 1')\n"},
    {"patcher.py": "import sys\nsys.path.insert(0, 'vendor')\n", "vendor/ops.py": "tf = 1\n"},
])
def test_tf_from_a_star_import_rebound_where_no_statement_shows_it_is_refused(tmp_path, files):
    """An adversarial run: 39 programs whose `tf` was a wrapper doubling TF's gradients were
    migrated (TF1 [6, 24, 54], the tape [3, 12, 27])."""
    write(tmp_path, "ops.py", "import tensorflow as tf\n\n\ndef square(x):\n    return x * x\n")
    for name, text in files.items():
        write(tmp_path, name, text + ("\n\ndef square(x):\n    return x * x\n" if name == "ops.py" else ""))
    user = "import patcher\n" if "patcher.py" in files else ""
    main = write(tmp_path, "gan.py", user + "from ops import *\n\n\ndef run():\n    x = tf.constant([1.0, 2.0])\n"
                                           "    y = tf.reduce_sum(square(x) * x)\n    return tf.gradients(y, x)[0]\n")
    (site,) = run([main])["gan.py"].sites
    assert site.code == "TFG128", site


@pytest.mark.parametrize("user", [
    "if False:\n    from ops import *\n",
    "from ops import square\ntry:\n    from ops import *\nexcept ImportError:\n    pass\n",
])
def test_tf_from_a_star_import_that_may_not_run_is_refused(tmp_path, user):
    write(tmp_path, "ops.py", "import tensorflow as tf\n\n\ndef square(x):\n    return x * x\n")
    main = write(tmp_path, "gan.py", user + "\n\ndef run():\n    x = tf.constant([1.0, 2.0])\n"
                                            "    y = tf.reduce_sum(x * x)\n    return tf.gradients(y, x)[0]\n")
    (site,) = run([main])["gan.py"].sites
    assert site.code == "TFG128", site


@pytest.mark.parametrize("extra", [
    "import builtins\nbuiltins.exec('tf = 1')\n",
    "import gan as _me\n_me.__setattr__('tf', 1)\n",
    "import sys\nsys._getframe().f_globals.update(tf=1)\n",
    "globals()['tf'] = 1\n",
])
def test_a_module_that_rebinds_its_own_tf_unseen_is_refused(tmp_path, extra):
    main = write(tmp_path, "gan.py", "import tensorflow as tf\n" + extra + "\n\ndef run():\n"
                 "    x = tf.constant([1.0, 2.0])\n    y = tf.reduce_sum(x * x)\n    return tf.gradients(y, x)[0]\n")
    (site,) = run([main])["gan.py"].sites
    assert site.code == "TFG128" and "may rebind its own names" in site.reason, site


@pytest.mark.parametrize("extra", [
    "print(globals().get('x'))\n",
    "globals().update(helper=len)\n",
    "class C(object):\n    def set(self, k, v):\n        setattr(self, k, v)\n",
    "for k, v in vars(object()).items():\n    print(k, v)\n",
    "\n\ndef show(im, x):\n    print(im.eval({x: 1.0}))\n",  # a tensor's eval (dirt's tests)
])
def test_reading_or_writing_other_names_does_not_refuse(tmp_path, extra):
    main = write(tmp_path, "gan.py", "import tensorflow as tf\n" + extra + "\n\ndef run():\n"
                 "    x = tf.constant([1.0, 2.0])\n    y = tf.reduce_sum(x * x)\n    return tf.gradients(y, x)[0]\n")
    (site,) = run([main])["gan.py"].sites
    assert site.status == MIGRATED, site


def test_a_file_that_never_holds_this_module_does_not_block_its_own_tf(tmp_path):
    """cleverhans' `_ArgsWrapper` runs `vars(args)` on a parameter: it imports no gradient file,
    so it cannot reach `loss.tf` (the own-name check made loss.py:532 manual)."""
    write(tmp_path, "utils.py", "def wrap(args):\n    return vars(args)\n")
    write(tmp_path, "main.py", "import utils\nimport gan\n")
    main = write(tmp_path, "gan.py", "import tensorflow as tf\n\n\ndef run():\n    x = tf.constant([1.0, 2.0])\n"
                                     "    y = tf.reduce_sum(x * x)\n    return tf.gradients(y, x)[0]\n")
    (site,) = run([main])["gan.py"].sites
    assert site.status == MIGRATED, site


@pytest.mark.parametrize("patcher, refused", [
    ("import ops\nops.__setattr__('tf', 1)\n", True),  # an adversarial run: `from ops import tf` then
    ("import ops\nput = setattr\nput(ops, 'tf', 1)\n", True),
    ("import sys\nsys.modules['ops'].tf = 1\n", True),
    ("def f(args):\n    return vars(args)\n", False),  # holds no module
])
def test_tf_re_exported_by_a_module_another_file_rebinds_is_refused(tmp_path, patcher, refused):
    write(tmp_path, "ops.py", "import tensorflow as tf\n")
    write(tmp_path, "patcher.py", patcher)
    main = write(tmp_path, "gan.py", "import patcher\nfrom ops import tf\n\n\ndef run():\n"
                 "    x = tf.constant([1.0, 2.0])\n    y = tf.reduce_sum(x * x)\n    return tf.gradients(y, x)[0]\n")
    (site,) = run([main])["gan.py"].sites
    assert (site.status == MANUAL) == refused, site


@pytest.mark.parametrize("imported, refused", [(True, True), (False, False)])
def test_a_frame_walker_reaches_only_modules_it_is_loaded_with_by_import(tmp_path, imported, refused):
    """A module that walks frames (`sys._getframe().f_back.f_globals`) reaches the modules that
    call it; imported by gan.py it may rebind gan's `tf` (an adversarial run), otherwise it is
    another program in the same folder (an adversarial set's own cases were all refused)."""
    write(tmp_path, "tweaks.py", "import sys\nsys._getframe(1).f_globals['tf'] = 1\n")
    write(tmp_path, "setup.py", "exec(open('version.py').read())\n")  # then anything may load anything
    main = write(tmp_path, "gan.py", ("import tweaks\n" if imported else "") + "import tensorflow as tf\n\n\n"
                 "def run():\n    x = tf.constant([1.0, 2.0])\n    y = tf.reduce_sum(x * x)\n"
                 "    return tf.gradients(y, x)[0]\n")
    (site,) = run([main])["gan.py"].sites
    assert (site.status == MANUAL) == refused, site
