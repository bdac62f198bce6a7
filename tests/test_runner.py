"""The two-pass runner: overrides first, then the files they may govern."""
from __future__ import annotations

import pytest

from migrator import _plugins, runner
from migrator.model import MANUAL, OVERRIDE_MAP, Site

SEEN: dict[str, set] = {}


class ManualOverrides(_plugins.Plugin):
    """Refuses every override block; records what the index says when each file runs."""

    name = "probe"
    triggers = (b"gradient",)

    def rewrite(self, module, ctx):
        SEEN[ctx.path.rsplit("/", 1)[-1]] = set(ctx.index.unmigrated_override_modules)
        if "gradient_override_map" in ctx.source and "keep" not in ctx.source:
            ctx.sites.append(Site(OVERRIDE_MAP, "TFG101", 1, 1, MANUAL, "probe"))
        return module


@pytest.fixture
def probe_plugin():
    saved, loaded = list(_plugins._PLUGINS), _plugins._LOADED
    _plugins._PLUGINS[:] = [ManualOverrides()]
    _plugins._LOADED = True
    SEEN.clear()
    yield
    _plugins._PLUGINS[:] = saved
    _plugins._LOADED = loaded


@pytest.mark.parametrize("jobs", [1, 2])
def test_override_files_run_first_and_manual_ones_are_recorded(tmp_path, probe_plugin, jobs):
    (tmp_path / "a_user.py").write_text("import z_ops\ng = tf.gradients(y, x)\n")
    (tmp_path / "z_ops.py").write_text("with g.gradient_override_map({'Sign': 'X'}):\n    y = tf.sign(x)\n")
    (tmp_path / "y_fine.py").write_text("# keep\nwith g.gradient_override_map({'Sign': 'X'}):\n    y = tf.sign(x)\n")
    paths = sorted(str(p) for p in tmp_path.iterdir())
    result = runner.run(paths, runner.RunOptions(mode=runner.CHECK, jobs=jobs))
    assert [r.path for r in result.results] == paths  # discovery order kept
    if jobs == 1:  # the probe's record lives in this process only when not forked
        # every file read the whole set, so each ran again knowing it (the override files too:
        # one may hold a gradient call governed by another's override)
        assert all("z_ops" in SEEN[f] and "y_fine" not in SEEN[f] for f in ("a_user.py", "y_fine.py", "z_ops.py"))
    assert [len(r.sites) for r in result.results] == [0, 0, 1]


def test_an_unparsable_override_file_counts_as_unmigrated(tmp_path, probe_plugin):
    (tmp_path / "a_user.py").write_text("g = tf.gradients(y, x)\n")
    (tmp_path / "z_bad.py").write_text("@tf.RegisterGradient('X')\ndef f(op, grad) return grad\n")
    result = runner.run(sorted(str(p) for p in tmp_path.iterdir()), runner.RunOptions(mode=runner.CHECK))
    assert result.results[1].error
    assert "z_bad" in SEEN["a_user.py"]


def test_big_runs_index_in_a_pool_with_the_same_outcome(tmp_path, probe_plugin):
    for i in range(120):
        body = "with g.gradient_override_map({'Sign': 'X'}):\n    y = tf.sign(x)\n" if i % 7 == 0 else "x = 1\n"
        (tmp_path / f"m{i:03}.py").write_text(body)
    (tmp_path / "m999.py").write_bytes(b"\xff gradient_override_map")  # undecodable
    paths = sorted(str(p) for p in tmp_path.iterdir())
    assert len(paths) // 50 >= 2  # big enough for the pooled pass 1
    serial = runner.run(paths, runner.RunOptions(mode=runner.CHECK, jobs=1))
    pooled = runner.run(paths, runner.RunOptions(mode=runner.CHECK, jobs=2))
    as_json = [[r.to_json() for r in res.results] for res in (serial, pooled)]
    assert as_json[0] == as_json[1]
    assert sum(len(r.sites) for r in serial.results) == 18
    assert serial.results[-1].error.startswith(f"{paths[-1]}:1:1: cannot decode")


_MIGRATES = "import tensorflow as tf\n\n\ndef binarize(x):\n    g = tf.get_default_graph()\n" \
            "    with g.gradient_override_map({'Sign': 'Identity'}):\n        return tf.sign(tf.cast(x, tf.float32))\n"
_STAYS = "import tensorflow as tf\n\n\ndef binarize(x, g):\n" \
         "    with g.gradient_override_map({'Sign': NAMES[0]}):\n        return tf.sign(x)\n"
_USER = "import tensorflow as tf\nimport {mod}\n\n\ndef grad():\n    x = tf.constant([1.0, -2.0])\n    y = {mod}.binarize(x * 2.0)\n" \
        "    return tf.gradients(y, x)[0]\n"


@pytest.mark.parametrize("override", [_MIGRATES, _STAYS], ids=["migrated", "manual"])
def test_the_second_half_running_ahead_gives_what_one_job_gives(tmp_path, override):
    """Files run on a guess and again where it was wrong: the outcome must not depend on -j."""
    (tmp_path / "zz_ops.py").write_text(override)
    for i in range(3):
        (tmp_path / f"user{i}.py").write_text(_USER.format(mod="zz_ops"))
    (tmp_path / "alone.py").write_text("import tensorflow as tf\n\n\ndef f(x):\n    y = x * x\n"
                                       "    return tf.gradients(y, x)[0]\n")
    paths = sorted(str(p) for p in tmp_path.iterdir())
    runs = [runner.run(paths, runner.RunOptions(mode=runner.CHECK, jobs=j)) for j in (1, 2)]
    as_json = [[r.to_json() for r in res.results] for res in runs]
    assert as_json[0] == as_json[1]
    ops, users = runs[1].results[-1], runs[1].results[1:-1]
    assert [s.migrated for s in ops.sites] == ([True] if override is _MIGRATES else [False])
    codes = {s.code for r in users for s in r.sites}
    assert codes == ({"TFG003"} if override is _MIGRATES else {"TFG122"})  # the users read the outcome


def test_what_a_file_asks_about_decides_whether_it_runs_again():
    from migrator.pipeline import ASKED_ALL, RunIndex

    index = RunIndex(manual_override_modules={"a"})
    index.asked = set()
    assert index.left_manual(["a", "b"]) == {"a"} and index.asked == {"a", "b"}
    assert index.unmigrated_override_modules == {"a"} and ASKED_ALL in index.asked  # read whole
    wrong = runner._guessed_wrong
    assert not wrong(frozenset({"b"}), frozenset({"a"}), frozenset({"a", "c"}))  # not asked about c
    assert wrong(frozenset({"c"}), frozenset({"a"}), frozenset({"a", "c"}))
    assert wrong(frozenset({ASKED_ALL}), frozenset({"a"}), frozenset())
    assert not wrong(frozenset({ASKED_ALL}), frozenset({"a"}), frozenset({"a"}))


_MAIN_OVER_MANUAL = "import tensorflow as tf\nfrom A import f\n{extra}\n\ndef g():\n    x = tf.constant([1.0, 2.0])\n" \
                    "    y = f(x) * x\n    return tf.gradients(y, x)[0]\n"
_A_MANUAL = "import tensorflow as tf\n\n\ndef f(x, g):\n    with g.gradient_override_map({'Identity': NAMES[0]}):\n" \
            "        return tf.identity(x)\n"


@pytest.mark.parametrize("extra", ["", "# gradient_override_map", "# RegisterGradient"])
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_file_of_the_first_half_learns_what_stayed_manual_in_another(tmp_path, extra, jobs):
    """A comment naming gradient_override_map put main.py in the first half, which ran knowing
    nothing, and its tape ignored A's manual override (an adversarial run: TF1 [4, 8], [2, 4])."""
    (tmp_path / "A.py").write_text(_A_MANUAL)
    main = tmp_path / "main.py"
    main.write_text(_MAIN_OVER_MANUAL.format(extra=extra))
    before = main.read_text()
    res = runner.run(sorted(str(p) for p in tmp_path.iterdir()), runner.RunOptions(mode=runner.WRITE, jobs=jobs))
    assert main.read_text() == before
    assert [s.code for s in res.results[1].sites] == ["TFG122"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_file_rewritten_in_place_is_written_once_knowing_what_stayed_manual(tmp_path, jobs):
    """-j 2 wrote main.py while it ran on a guess, then read its own rewrite (an adversarial run:
    an unparsable override module; `--select gradients` with an aliased map)."""
    (tmp_path / "ov.py").write_text("import tensorflow as tf\ndef f(x:\n  with g.gradient_override_map({}):\n")
    main = tmp_path / "main.py"
    main.write_text(_MAIN_OVER_MANUAL.format(extra="").replace("from A import f", "from ov import f"))
    before = main.read_text()
    res = runner.run(sorted(str(p) for p in tmp_path.iterdir()), runner.RunOptions(mode=runner.WRITE, jobs=jobs))
    assert main.read_text() == before and [s.code for s in res.results[0].sites] == ["TFG122"]


def test_an_override_map_entered_through_an_alias_is_an_override(tmp_path):
    """`om = g.gradient_override_map`, then `with om({...}):` made no site, so its importers
    were migrated and the tape ignored the override (an adversarial run: TF1 [4, 8], [2, 4])."""
    (tmp_path / "A.py").write_text(
        "import tensorflow as tf\n\n\n@tf.RegisterGradient('Triple')\ndef _triple(op, grad):\n    return grad * 3.0\n\n\n"
        "def f(x):\n    om = tf.get_default_graph().gradient_override_map\n    with om({'Identity': 'Triple'}):\n"
        "        return tf.identity(x)\n")
    (tmp_path / "main.py").write_text(_MAIN_OVER_MANUAL.format(extra=""))
    res = runner.run(sorted(str(p) for p in tmp_path.iterdir()), runner.RunOptions(mode=runner.CHECK))
    assert "TFG110" in [s.code for s in res.results[0].sites]
    assert [s.code for s in res.results[1].sites] == ["TFG122"]


def test_an_api_spelled_with_fullwidth_letters_is_an_error_not_a_miss(tmp_path):
    """Python reads `tf.ｇradient_override_map` as gradient_override_map (NFKC); the migrator
    did not, and migrated the tf.gradients under it (an adversarial run: TF1 [4, 8], [2, 4])."""
    src = ("import tensorflow as tf\n\n\n@tf.\uff32egisterGradient('T')\ndef _t(op, grad):\n    return grad * 3.0\n\n\n"
           "def g():\n    x = tf.constant([1.0, 2.0])\n    with tf.get_default_graph().\uff47radient_override_map("
           "{'Identity': 'T'}):\n        y = tf.identity(x) * x\n    return tf.gradients(y, x)[0]\n")
    path = tmp_path / "m.py"
    path.write_text(src, encoding="utf-8")
    (res,) = runner.run([str(path)], runner.RunOptions(mode=runner.WRITE)).results
    assert "compatibility characters" in res.error and path.read_text(encoding="utf-8") == src


def test_files_that_cannot_run_with_an_override_are_not_run_twice(tmp_path, monkeypatch):
    """Overrides that migrate, and gradient files that import none of them: in a pool the files
    run once (the synthetic bench tree ran its second half twice: -j 2 was as slow as -j 1)."""
    for i in range(3):
        (tmp_path / f"ops{i}.py").write_text(_MIGRATES)
    for i in range(4):
        (tmp_path / f"user{i}.py").write_text("import tensorflow as tf\n\n\ndef f(x):\n    y = x * x * x\n"
                                               "    return tf.gradients(y, x)[0]\n")
    sizes = []
    real = runner._Workers._run

    def counted(self, work, progress):
        sizes.append(len(work))
        return real(self, work, progress)

    monkeypatch.setattr(runner._Workers, "_run", counted)
    paths = sorted(str(p) for p in tmp_path.iterdir())
    res = runner.run(paths, runner.RunOptions(mode=runner.CHECK, jobs=2))
    assert sizes == [7, 0], sizes  # every file once, on a guess; none again
    assert all(s.migrated for r in res.results for s in r.sites)
