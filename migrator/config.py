"""``[tool.tfgradmigrate]`` in the nearest ``pyproject.toml``.

The file is read with :mod:`tomllib` (Python 3.11+) or ``tomli`` (before).
The search goes up from the paths given and stops at the repository root (a
folder holding ``.git`` or ``.hg``), as black's does, so a pyproject.toml
above the repository is never read.  Command-line flags override every key.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Iterable, Optional

#: key -> (type, help); the README and docs/cli.md list the same keys
KEYS: dict[str, tuple[type, str]] = {
    "exclude": (list, "extra exclude globs, added to --exclude"),
    "default-excludes": (bool, "set false to walk .venv, build, ... too"),
    "respect-gitignore": (bool, "set false to walk what .gitignore ignores too"),
    "force-exclude": (bool, "apply the excludes to files named on the command line too"),
    "jobs": (int, "worker processes (default: number of CPUs)"),
    "annotate": (bool, "add TODO comments above manual sites"),
    "unsafe-fixes": (bool, "also apply rewrites that hold only under a stated assumption"),
    "select": (list, "rewrite plugins to run (default: all)"),
    "max-file-size": (int, "files larger than this many bytes are reported, not read"),
    # a bool turns --verify on; a table ([tool.tfgradmigrate.verify]) gives the
    # verifier's inputs by "module:function" (and `enabled = true` turns --verify on)
    "verify": (dict, "verify every migrated site (true), or the verifier's inputs table"),
    "rtol": (float, "verifier relative tolerance"),
    "atol": (float, "verifier absolute tolerance"),
    "timeout": (float, "verifier timeout per file, seconds"),
}


#: a folder holding one of these is a repository root: the search for pyproject.toml stops there
REPOSITORY_MARKERS = (".git", ".hg")


class ConfigError(Exception):
    pass


def find_pyproject(paths: Iterable[str]) -> Optional[str]:
    """The pyproject.toml nearest to the common parent of ``paths`` (or cwd), inside its repository."""
    absolute = [os.path.abspath(p) for p in paths] or [os.getcwd()]
    try:
        start = os.path.commonpath(absolute)
    except ValueError:
        start = os.getcwd()
    if not os.path.isdir(start):
        start = os.path.dirname(start)
    while True:
        candidate = os.path.join(start, "pyproject.toml")
        if os.path.isfile(candidate):
            return candidate
        if any(os.path.exists(os.path.join(start, marker)) for marker in REPOSITORY_MARKERS):
            return None
        parent = os.path.dirname(start)
        if parent == start:
            return None
        start = parent


def load(path: Optional[str]) -> dict[str, Any]:
    """The checked ``[tool.tfgradmigrate]`` table of ``path`` ({} when absent)."""
    if path is None:
        return {}
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
        data = _parse(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    table = data.get("tool", {}).get("tfgradmigrate", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.tfgradmigrate] must be a table")
    return check(table, path)


def check(table: dict, where: str) -> dict[str, Any]:
    out = {}
    for key, value in table.items():
        if key not in KEYS:
            print(f"{where}: warning: unknown key tool.tfgradmigrate.{key} ignored", file=sys.stderr)
            continue
        want = KEYS[key][0]
        if key == "verify" and isinstance(value, bool):
            value = {"enabled": value}
        if want is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        ok = isinstance(value, want) and not (want is int and isinstance(value, bool))
        if ok and want is list:
            ok = all(isinstance(v, str) for v in value)
        if not ok:
            raise ConfigError(f"{where}: tool.tfgradmigrate.{key} must be {_type_name(want)}, not {value!r}")
        out[key] = value
    return out


def _type_name(t: type) -> str:
    return {list: "a list of strings", bool: "true or false", int: "an integer", float: "a number",
            dict: "true, false or a table"}[t]


def _toml():
    """The TOML reader: :mod:`tomllib` on Python 3.11+, the ``tomli`` package it came from before."""
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    import tomli

    return tomli


def _parse(text: str) -> dict:
    toml = _toml()
    try:
        return toml.loads(text)
    except toml.TOMLDecodeError as e:
        raise ValueError(str(e)) from None
