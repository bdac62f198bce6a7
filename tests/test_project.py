"""migrator.project: facts about code outside the run, read from disk (or pass-1 text)."""
from __future__ import annotations

import ast
import textwrap

from migrator.project import Project, find_root


def write(root, name, text):
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_root_is_the_nearest_folder_with_a_marker(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    sub = tmp_path / "pkg" / "deep"
    sub.mkdir(parents=True)
    f = write(sub, "m.py", "x = 1\n")
    assert find_root([f]) == str(tmp_path)
    bare = tmp_path / "pkg"  # no marker between pkg/deep and tmp_path: still tmp_path
    assert find_root([str(bare)]) == str(tmp_path)


def test_callers_follow_imports_and_aliases(tmp_path):
    lib = write(tmp_path, "lib.py", """\
        def step(variables, x):
            return x

        step([1], 2)
        """)
    write(tmp_path, "a.py", "from lib import step as s\n\ns([3], 4)\n")
    write(tmp_path, "b.py", "import lib as L\n\nL.step([5], 6)\n")
    write(tmp_path, "c.py", "def step(a, b):\n    return a\n\nstep(7, 8)\n")  # another function of that name
    proj = Project(str(tmp_path))
    calls = proj.callers(lib, "step")
    assert sorted((c.path.rsplit("/", 1)[-1], ast.unparse(c.call)) for c in calls) == [
        ("a.py", "s([3], 4)"), ("b.py", "L.step([5], 6)"), ("lib.py", "step([1], 2)")]


def test_a_function_used_as_a_value_has_unknown_callers(tmp_path):
    lib = write(tmp_path, "lib.py", "def step(v, x):\n    return x\n")
    write(tmp_path, "a.py", "from lib import step\n\nfns = [step]\n")
    assert Project(str(tmp_path)).callers(lib, "step") is None


def test_pre_run_text_wins_over_the_file_on_disk(tmp_path):
    lib = write(tmp_path, "lib.py", "def step(v, x):\n    return x\n")
    user = write(tmp_path, "user.py", "print('rewritten already')\n")
    proj = Project(str(tmp_path), {user: "from lib import step\nstep(1, 2)\n"})
    assert [c.path for c in proj.callers(lib, "step")] == [user]


def test_import_closure_reaches_helpers_of_helpers(tmp_path):
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/overrides.py", "import tensorflow as tf\nG = tf.get_default_graph()\n"
                                        "def guided():\n    return G.gradient_override_map({'Relu': 'X'})\n")
    write(tmp_path, "pkg/helpers.py", "from .overrides import guided\n")
    main = write(tmp_path, "main.py", "import numpy as np\nfrom pkg import helpers\n")
    proj = Project(str(tmp_path))
    reach = [p.rsplit("/", 2)[-2:] for p in proj.import_closure(main)]
    assert ["pkg", "helpers.py"] in reach and ["pkg", "overrides.py"] in reach
    over = [p for p in proj.import_closure(main) if proj.override_entries(p)]
    assert [p.rsplit("/", 1)[-1] for p in over] == ["overrides.py"]


def test_gradients_patches_in_every_spelling(tmp_path):
    write(tmp_path, "p1.py", "import tensorflow as tf\ntf.__dict__['gradients'] = f\n")
    write(tmp_path, "p2.py", "import tensorflow as tf\nsetattr(tf, 'gradients', f)\n")
    write(tmp_path, "p3.py", "from tensorflow.python.ops import gradients_impl\ngradients_impl.gradients = f\n")
    write(tmp_path, "p4.py", "import tensorflow as tf\ntf.gradients = f\n")
    write(tmp_path, "p5.py", "import tensorflow as tf\ntf.__dict__.update(gradients=f)\n")
    write(tmp_path, "p6.py", "import tensorflow as tf\nvars(tf)['gradients'] = f\n")
    write(tmp_path, "ok.py", "import tensorflow as tf\ng = tf.gradients(y, x)\nself_gradients = 1\n"
                             "class A:\n    def __init__(self):\n        self.gradients = []\n")
    found = Project(str(tmp_path)).gradients_patches()
    assert sorted(loc.path.rsplit("/", 1)[-1] for loc in found) == ["p1.py", "p2.py", "p3.py", "p4.py", "p5.py", "p6.py"]
