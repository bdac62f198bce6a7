"""Gradient APIs a project module hands on under another name (``grad = tf.gradients`` in
ops.py, ``from ops import grad`` elsewhere), and names bound both to TF and to something else.

The importing file names no gradient API, so the byte prefilter used to skip it: its call was
neither migrated nor reported.  Names bound to TF and to another module (``import other as tf``
after ``import tensorflow as tf``) were taken for TF's: the tape replaced someone else's call."""
from __future__ import annotations

import os

import pytest

from migrator import runner
from migrator.model import MANUAL, MIGRATED
from migrator.pipeline import Options
from project_files import write

OPS = "import tensorflow as tf\ngrad = tf.gradients\n"
DOUBLE = "def double(ys, xs):\n    import tensorflow as tf\n    return [2 * g for g in tf.gradients(ys, xs)]\n"
CALL = "\n\ndef f(x):\n    y = x * x\n    return {}(y, x)[0]\n"


def run(paths, mode=runner.CHECK):
    opts = runner.RunOptions(jobs=1, mode=mode, options=Options(), keep_text=True)
    return {os.path.relpath(r.path, os.path.dirname(paths[0])): r for r in runner.run(paths, opts).results}


def _project(tmp_path, files: dict) -> list:
    (tmp_path / "pyproject.toml").write_text("")
    return [write(tmp_path, name, text) for name, text in files.items()]


@pytest.mark.parametrize("imports, call", [
    ("from ops import grad", "grad"),
    ("from ops import *", "grad"),
    ("import ops", "ops.grad"),
    ("from ops import grad as g", "g"),
])
def test_a_call_of_a_project_alias_is_read_and_migrated(tmp_path, imports, call):
    ops, main = _project(tmp_path, {"ops.py": OPS, "main.py": f"import tensorflow as tf\n{imports}\n" + CALL.format(call)})
    res = run([main])["main.py"]  # ops.py outside the run: read from disk
    (site,) = res.sites
    assert site.status == MIGRATED and "tape.gradient(y, x)" in res.migrated
    if imports.startswith("from ops import grad"):
        assert "from ops import" not in res.migrated  # its only use is gone
    else:
        assert imports in res.migrated


def test_an_alias_re_exported_through_a_module_that_names_no_api(tmp_path):
    paths = _project(tmp_path, {"utils.py": OPS, "ops.py": "from utils import grad\n",
                                "main.py": "import tensorflow as tf\nfrom ops import grad\n" + CALL.format("grad")})
    (site,) = run(paths)["main.py"].sites
    assert site.status == MIGRATED


def test_an_alias_of_tf_hessians(tmp_path):
    paths = _project(tmp_path, {"ops.py": "import tensorflow as tf\nhess = tf.hessians\n",
                                "main.py": "import tensorflow as tf\nfrom ops import hess\n\n\ndef f(x):\n"
                                           "    x = tf.convert_to_tensor(x)\n    y = tf.reduce_sum(x * x * x)\n"
                                           "    return hess(y, x)[0]\n"})
    (site,) = run(paths)["main.py"].sites
    assert (site.status, site.code) == (MIGRATED, "TFG005")


@pytest.mark.parametrize("files", [
    # another file loaded with main rebinds the alias (`ops.grad = double`, setattr), before or after the import
    {"patch.py": DOUBLE + "import ops\nops.grad = double\n", "run.py": "import patch\nimport main\n"},
    {"patch.py": DOUBLE + "import ops\nsetattr(ops, 'grad', double)\n", "run.py": "import patch\nimport main\n"},
    # ops.py binds it otherwise too
    {"ops.py": "import os\nimport tensorflow as tf\n" + DOUBLE + "grad = tf.gradients\nif os.environ.get('X'):\n"
               "    grad = double\n"},
    {"ops.py": OPS + DOUBLE + "def enable():\n    global grad\n    grad = double\n"},
    {"ops.py": OPS + DOUBLE + "exec('grad = double')\n"},
    # ops.py writes its own module object; a method called through its class with a module as `self`
    {"ops.py": OPS + DOUBLE + "import ops as _me\n_me.grad = double\n"},
    {"plug.py": DOUBLE + "import ops\n\n\nclass Patcher:\n    def apply(self):\n        self.grad = double\n\n\n"
                "Patcher.apply(ops)\n", "run.py": "import plug\nimport main\n"},
    # the module ops.py copies it from is rebound before it does
    {"ops.py": "from utils import grad\n", "utils.py": OPS, "patch.py": DOUBLE + "import utils\nutils.grad = double\n",
     "run.py": "import patch\nimport main\n"},
])
@pytest.mark.parametrize("imports, call", [("from ops import grad", "grad"), ("import ops", "ops.grad"),
                                           ("from ops import *", "grad")])
def test_an_alias_that_may_be_something_else_is_never_migrated(tmp_path, files, imports, call):
    files = {"ops.py": OPS, **files, "main.py": f"import tensorflow as tf\n{imports}\n" + CALL.format(call)}
    paths = _project(tmp_path, files)
    res = run(paths)["main.py"]
    assert not res.changed and all(s.status == MANUAL for s in res.sites)


def test_a_module_found_twice_is_not_read(tmp_path):
    """``from ops import grad`` in pkg/main.py: Python 3 finds the root's ops.py when the program
    starts there, the index the one beside main.py."""
    paths = _project(tmp_path, {"ops.py": DOUBLE + "grad = double\n", "pkg/__init__.py": "", "pkg/ops.py": OPS,
                                "pkg/main.py": "import tensorflow as tf\nfrom ops import grad\n" + CALL.format("grad"),
                                "main.py": "import pkg.main\n"})
    assert not run(paths)[os.path.join("pkg", "main.py")].changed


@pytest.mark.parametrize("main, name", [
    ("import tensorflow as tf\nimport other as tf\n" + CALL.format("tf.gradients"), "tf"),
    ("import tensorflow as tf\nimport other\ntf = other.make()\n" + CALL.format("tf.gradients"), "tf"),
    ("import tensorflow as tf\nfrom ops import grad\nfrom other import grad\n" + CALL.format("grad"), "grad"),
    ("import tensorflow as tf\nfrom tensorflow import gradients\nfrom other import gradients\n"
     + CALL.format("gradients"), "gradients"),
    ("import tensorflow as tf\nimport ops\nimport other as ops\n" + CALL.format("ops.grad"), "ops.grad"),
    # a walrus in a comprehension binds the module's name (libcst files it under the comprehension)
    ("import tensorflow as tf\nimport other\n_ = [(tf := other) for _i in range(1)]\n" + CALL.format("tf.gradients"),
     "tf"),
    # a capture pattern binds too, and libcst records none
    ("import tensorflow as tf\nimport other\nmatch other:\n    case tf:\n        pass\n" + CALL.format("tf.gradients"),
     "tf"),
])
def test_a_name_bound_to_tf_and_to_something_else_is_reported(tmp_path, main, name):
    other = "def gradients(ys, xs):\n    return [2.0]\n\n\ndef grad(ys, xs):\n    return [2.0]\n\n\ndef make():\n" \
            "    return None\n"
    paths = _project(tmp_path, {"ops.py": OPS, "other.py": other, "main.py": main})
    res = run(paths)["main.py"]
    (site,) = res.sites
    assert not res.changed and (site.status, site.code) == (MANUAL, "TFG128") and f"`{name}`" in site.reason


def test_files_calling_no_alias_are_not_read(tmp_path):
    """The rescue reads only files that import an exporting module and spell one of its aliases."""
    paths = _project(tmp_path, {"ops.py": OPS, "other.py": "import ops\nx = 1\n", "plain.py": "grad = 2\n",
                                "user.py": "import ops\nf = ops.grad\n"})
    res = run(paths)
    assert not res["other.py"].sites and not res["plain.py"].sites
    index = runner.RunIndex(root=str(tmp_path))
    assert runner._alias_importers(index, paths[1:3]) == []  # no alias spelled; no exporter imported
    assert runner._alias_importers(index, [paths[3]]) == [paths[3]]
