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
        assert SEEN["z_ops.py"] == set() and SEEN["y_fine.py"] == set()
        assert "z_ops" in SEEN["a_user.py"] and "y_fine" not in SEEN["a_user.py"]
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
