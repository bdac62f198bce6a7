"""[tool.tfgradmigrate] in the nearest pyproject.toml."""
from __future__ import annotations

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


def test_fallback_reader_for_old_pythons_agrees_with_tomllib():
    tomllib = pytest.importorskip("tomllib")
    assert config.parse_tool_table(TABLE)["tool"]["tfgradmigrate"] == tomllib.loads(TABLE)["tool"]["tfgradmigrate"]
    assert config.parse_tool_table("[project]\nname = 'x'\n") == {}
    with pytest.raises(ValueError):
        config.parse_tool_table("[tool.tfgradmigrate]\njobs = [1, 2\n")


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
