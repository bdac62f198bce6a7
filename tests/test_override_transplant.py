"""A gradient registered in another project file, copied into the file whose map names it.

The copy is made only when it computes what the registered function computed: every global
name it reads means the same in both modules, the registration is the only one and has run.
Each refusal below was an adversarial shape; each names why in the TFG106 reason."""
from __future__ import annotations

import os

import pytest

from migrator import runner
from migrator.model import MANUAL, MIGRATED
from migrator.pipeline import Options
from project_files import write

GRADS = 'import tensorflow as tf\n{extra}\n\n@tf.RegisterGradient("MyGrad")\ndef _my_grad(op, grad):\n{body}\n'
BODY = "    return grad * tf.cast(tf.abs(op.inputs[0]) <= 1.0, grad.dtype)"
MAIN = ('import tensorflow as tf\n{extra}\nimport grads  # noqa: F401\n\n\ndef f(x):\n    x = tf.cast(x, tf.float32)\n'
        '    with tf.get_default_graph().gradient_override_map({{"Sign": "MyGrad"}}):\n        return tf.sign(x)\n')


def run(tmp_path, files: dict, only_main: bool = False):
    (tmp_path / "pyproject.toml").write_text("")
    paths = [write(tmp_path, name, text) for name, text in files.items()]
    run_paths = [p for p in paths if p.endswith("main.py")] if only_main else paths
    res = runner.run(run_paths, runner.RunOptions(jobs=1, mode=runner.CHECK, options=Options(), keep_text=True))
    return {os.path.relpath(r.path, str(tmp_path)): r for r in res.results}


def _files(extra="", body=BODY, main_extra="", main=None, **more):
    return {"grads.py": GRADS.format(extra=extra, body=body), "main.py": main or MAIN.format(extra=main_extra), **more}


@pytest.mark.parametrize("only_main", [False, True], ids=["same run", "registering file outside the run"])
def test_the_registered_function_is_copied_and_its_file_kept(tmp_path, only_main):
    files = _files()
    res = run(tmp_path, files, only_main)
    main = res["main.py"]
    (site,) = main.sites
    assert (site.status, site.code) == (MIGRATED, "TFG001")
    assert "def _my_grad(x, grad):" in main.migrated and "RegisterGradient" not in main.migrated
    assert main.migrated.index("def _my_grad") < main.migrated.index("def f(")  # placed after the imports
    assert any("copied here as `_my_grad`" in p for p in site.proof)
    assert "grads.py" not in res or not res["grads.py"].changed
    assert (tmp_path / "grads.py").read_text() == files["grads.py"]


@pytest.mark.parametrize("files, why", [
    (_files(extra="SCALE = 2.0", body="    return SCALE * grad"), "reads `SCALE`"),
    (_files(body="    return tf.where(op.inputs[0] > 0, grad, tf.zeros_like(grad))",
            main=MAIN.format(extra="").replace("import tensorflow as tf", "import tensorflow.compat.v1 as tf")),
     "reads `tf`"),
    (_files(body="    return abs(grad)", main_extra="\n\ndef abs(v):\n    return 2 * v\n"), "reads `abs`"),
    (_files(body='    return grad * (2.0 if __name__ == "grads" else 1.0)'), "reads `__name__`"),
    (_files(**{"grads2.py": GRADS.format(extra="", body=BODY)}), "registered 2 times"),
    (_files(main=MAIN.format(extra="").replace("import grads  # noqa: F401\n", "")), "does not import"),
    ({**_files(), "grads.py": GRADS.format(extra="", body=BODY) + "tf = None\n"}, "reads `tf`"),
    (_files(extra='exec("x = 1")'), "may rebind module names"),
    (_files(body="    return abs(grad)", main_extra="from helpers import *",
            **{"helpers.py": "def abs(v):\n    return 2 * v\n"}), "star import"),
    (_files(main_extra="\n\ndef _my_grad():\n    return 1\n"), "already uses the name"),
    (_files(extra="COUNT = 0", body="    global COUNT\n    COUNT += 1\n    return grad"), "declares a global"),
    ({**_files(), "grads.py": GRADS.format(extra="", body=BODY) + '\n\ndef g(x):\n    with tf.get_default_graph()'
      '.gradient_override_map({"Sign": "MyGrad"}):\n        return tf.sign(x)\n'}, "names 'MyGrad' elsewhere"),
    ({**_files(), "grads.py": 'import tensorflow as tf\nSCALE = 2.0\n\n\n@tf.RegisterGradient("MyGrad")\n'
      "def _my_grad(op, grad, s=SCALE):\n    return s * grad\n"}, "computed defaults"),
    (_files(**{"other.py": 'import tensorflow as tf\nNAME = "My" + "Grad"\n\n\ndef _g(op, grad):\n    return 3 * grad'
                           "\n\n\ntf.RegisterGradient(NAME)(_g)\n"}), "name built at run time"),
    (_files(**{"patch.py": "import grads\ngrads.tf = None\n", "run.py": "import patch\nimport main\n"}),
     "may rebind module names"),
    # an adversarial run on this rule: compat.v1 and compat.v2 names normalise alike, but differ
    ({"grads.py": 'import tensorflow as tf\nfrom tensorflow.compat.v2 import where\n\n\n@tf.RegisterGradient("MyGrad")\n'
                  "def _my_grad(op, grad):\n    return where(op.inputs[0] > 0, grad, 0 * grad)\n",
      "main.py": MAIN.format(extra="from tensorflow.compat.v1 import where")}, "reads `where`"),
    # the registering file changes the function object (`__defaults__`) after the def
    ({**_files(), "grads.py": GRADS.format(extra="", body=BODY) + "_my_grad.__defaults__ = ()\n"}, "also used"),
    # another file reaches the registry by the name
    (_files(**{"tweak.py": "from tensorflow.python.framework import ops\n"
                           "ops._gradient_registry._registry['MyGrad'].update(type=None)\n"}), "registry lookup"),
    # another file reaches the registry without naming the gradient (a second adversarial run)
    (_files(**{"tweak.py": "from tensorflow.python.framework import ops\n"
                           "for k, v in list(ops._gradient_registry._registry.items()):\n"
                           "    v['type'].__defaults__ = (3.0,)\n", "run.py": "import tweak\nimport main\n"}), "registry"),
    # text the user file's encoding may not hold
    ({**_files(), "grads.py": GRADS.format(extra="# \u2192 a comment", body=BODY)}, "not ASCII"),
])
def test_a_copy_that_may_compute_something_else_is_refused_with_the_reason(tmp_path, files, why):
    main = run(tmp_path, files)["main.py"]
    (site,) = main.sites
    assert not main.changed and (site.status, site.code) == (MANUAL, "TFG106"), site.reason
    assert why in site.reason, site.reason


def test_a_copy_whose_block_stays_manual_is_dropped_and_the_others_kept(tmp_path):
    """The `Sign` block is manual for its own reason (the input may be complex); the Relu block
    still gets its copy, and the reason of the manual one says what stops it."""
    grads = GRADS.format(extra="", body=BODY) + '\n\n@tf.RegisterGradient("Guided")\ndef _guided(op, grad):\n' \
        "    return tf.where(op.outputs[0] > 0.0, grad, tf.zeros_like(grad))\n"
    main = ('import tensorflow as tf\nimport grads  # noqa: F401\n\n\ndef f(x):\n'
            '    with tf.get_default_graph().gradient_override_map({"Sign": "MyGrad"}):\n        return tf.sign(x)\n'
            '\n\ndef h(x):\n    x = tf.cast(x, tf.float32)\n'
            '    with tf.get_default_graph().gradient_override_map({"Relu": "Guided"}):\n        return tf.nn.relu(x)\n')
    res = run(tmp_path, {"grads.py": grads, "main.py": main})["main.py"]
    sites = {s.line: s for s in res.sites}
    assert sites[6].status == MANUAL and "TFG111" in sites[6].reason
    assert sites[12].status == MIGRATED and "def _guided(y, grad):" in res.migrated and "_my_grad" not in res.migrated


def test_the_tf_import_must_come_before_the_copy(tmp_path):
    """The wrappers' `@tf.custom_gradient` runs at import: TF must be imported above them."""
    main = ('"""doc"""\nimport grads  # noqa: F401\nX = 1\nimport tensorflow as tf\n\n\ndef f(x):\n'
            '    x = tf.cast(x, tf.float32)\n'
            '    with tf.get_default_graph().gradient_override_map({"Sign": "MyGrad"}):\n        return tf.sign(x)\n')
    res = run(tmp_path, _files(main=main))["main.py"]
    (site,) = res.sites
    assert site.status == MANUAL and "leading imports" in site.reason
