"""[tool.tfgradmigrate] in the nearest pyproject.toml."""
from __future__ import annotations

import os

import pytest

from migrator import config

TABLE = """
[project]
name = "x"

[tool.tfgradmigrate]
exclude = [
    "third_party",  # vendored
    "*_pb2.py",
]
jobs = 3
annotate = true
rtol = 1e-4
atol = 0  # an int where a float is expected
select = ["overrides"]

[tool.other]
jobs = "not ours"
"""


def test_nearest_pyproject_wins(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.tfgradmigrate]\njobs = 1\n")
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    assert config.find_pyproject([str(inner)]) == str(tmp_path / "pyproject.toml")
    (tmp_path / "a" / "pyproject.toml").write_text("")
    assert config.find_pyproject([str(inner / "f.py"), str(inner)]) == str(tmp_path / "a" / "pyproject.toml")


def test_load_checks_types(tmp_path):
    p = tmp_path / "pyproject.toml"
    p.write_text(TABLE)
    assert config.load(str(p)) == {"exclude": ["third_party", "*_pb2.py"], "jobs": 3, "annotate": True,
                                   "rtol": 1e-4, "atol": 0.0, "select": ["overrides"]}
    p.write_text("[tool.tfgradmigrate]\nannotate = 1\n")
    with pytest.raises(config.ConfigError, match="annotate must be true or false"):
        config.load(str(p))
    p.write_text("[tool.tfgradmigrate]\njobs = true\n")
    with pytest.raises(config.ConfigError, match="jobs must be an integer"):
        config.load(str(p))


def test_unknown_keys_warn(tmp_path, capsys):
    p = tmp_path / "pyproject.toml"
    p.write_text("[tool.tfgradmigrate]\nfrobnicate = 1\n")
    assert config.load(str(p)) == {}
    assert "unknown key tool.tfgradmigrate.frobnicate" in capsys.readouterr().err


def test_no_file_no_table():
    assert config.load(None) == {}


def test_tomli_reads_what_tomllib_reads_on_old_pythons(tmp_path, monkeypatch):
    """Before 3.11 the file goes to tomli (a dependency there), not to a hand-written subset reader."""
    tomli = pytest.importorskip("tomli")
    monkeypatch.setattr(config, "_toml", lambda: tomli)
    p = tmp_path / "pyproject.toml"
    # inline tables, multi-line strings and dotted keys: beyond any subset reader
    p.write_text(TABLE + '\n[tool.tfgradmigrate.verify]\n"m:f" = { args = [{ shape = [2] }] }\n'
                 'note = """two\nlines"""\n')
    table = config.load(str(p))
    assert table["exclude"] == ["third_party", "*_pb2.py"] and table["atol"] == 0.0
    assert table["verify"] == {"m:f": {"args": [{"shape": [2]}]}, "note": "two\nlines"}
    p.write_text("[tool.tfgradmigrate]\njobs = [1, 2\n")
    with pytest.raises(config.ConfigError, match="invalid TOML"):
        config.load(str(p))


def test_old_pythons_depend_on_tomli():
    import re

    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pyproject.toml")) as fh:
        assert re.search(r"\"tomli>=[\d.]+; python_version < '3.11'\"", fh.read())


def test_config_search_stops_at_the_repository_root(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.tfgradmigrate]\njobs = 1\n")
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / ".git").mkdir()
    assert config.find_pyproject([str(repo / "src")]) is None  # the one above the repository is not ours
    (repo / ".git").rmdir()
    (repo / ".git").write_text("gitdir: elsewhere\n")  # a worktree or submodule marks a root too
    assert config.find_pyproject([str(repo / "src")]) is None
    (repo / "pyproject.toml").write_text("")
    assert config.find_pyproject([str(repo / "src")]) == str(repo / "pyproject.toml")


def test_verify_inputs_table_and_the_verify_switch_share_one_key(tmp_path):
    from migrator import config
    from migrator.verify.inputs import load_config

    pp = tmp_path / "pyproject.toml"
    pp.write_text(
        '[tool.tfgradmigrate]\njobs = 2\n\n[tool.tfgradmigrate.verify]\nenabled = true\n'
        '"layers:quantize" = { args = [{ shape = [2, 3] }, 2] }\n'
    )
    (tmp_path / "layers.py").write_text("def quantize(x, k):\n    return x\n")
    table = config.load(str(pp))
    assert table["jobs"] == 2 and table["verify"]["enabled"] is True
    assert "quantize" in load_config(str(tmp_path / "layers.py"))
    pp.write_text("[tool.tfgradmigrate]\nverify = true\n")
    assert config.load(str(pp))["verify"] == {"enabled": True}


def test_verifier_inputs_without_any_pyproject(tmp_path, monkeypatch):
    from migrator.verify.inputs import load_config

    monkeypatch.setattr("migrator.config.find_pyproject", lambda paths: None)
    (tmp_path / "m.py").write_text("def f(x):\n    return x\n")
    assert load_config(str(tmp_path / "m.py")) == {}
