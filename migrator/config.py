"""``[tool.tfgradmigrate]`` in the nearest ``pyproject.toml``.

On Python 3.11+ the file is read with :mod:`tomllib`; on 3.9/3.10 a small
reader handles the subset a tool table needs (strings, numbers, booleans and
arrays of those).  Command-line flags override every key.
"""
from __future__ import annotations

import ast
import os
import re
import sys
from typing import Any, Iterable, Optional

#: key -> (type, help); the README and docs/cli.md list the same keys
KEYS: dict[str, tuple[type, str]] = {
    "exclude": (list, "extra exclude globs, added to --exclude"),
    "default-excludes": (bool, "set false to walk .venv, build, ... too"),
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


class ConfigError(Exception):
    pass


def find_pyproject(paths: Iterable[str]) -> Optional[str]:
    """The pyproject.toml nearest to the common parent of ``paths`` (or cwd)."""
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


def _parse(text: str) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ValueError(str(e)) from None
    return parse_tool_table(text)


_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_.\"-]+)\s*=\s*(.*)$")


def parse_tool_table(text: str) -> dict:
    """Minimal reader for Python < 3.11: only ``[tool.tfgradmigrate]`` is read."""
    table: dict[str, Any] = {}
    inside = False
    pending = ""
    key = ""
    for lineno, line in enumerate(text.splitlines(), 1):
        if pending:
            pending += " " + _strip_comment(line)
            if _balanced(pending):
                table[key] = _value(pending, lineno)
                pending = ""
            continue
        header = _HEADER.match(line)
        if header:
            inside = header.group(1).replace(" ", "") == "tool.tfgradmigrate"
            continue
        if not inside or not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _KEY.match(line)
        if not m:
            raise ValueError(f"line {lineno}: cannot read {line.strip()!r}")
        key, rest = m.group(1).strip('"'), _strip_comment(m.group(2))
        if _balanced(rest):
            table[key] = _value(rest, lineno)
        else:
            pending = rest
    if pending:
        raise ValueError(f"unterminated array for {key}")
    return {"tool": {"tfgradmigrate": table}} if table else {}


def _strip_comment(s: str) -> str:
    out, quote = [], None
    for ch in s:
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            break
        out.append(ch)
    return "".join(out).strip()


def _balanced(s: str) -> bool:
    return s.count("[") == s.count("]")


def _value(s: str, lineno: int) -> Any:
    s = s.strip()
    if s in ("true", "false"):
        return s == "true"
    s = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", s))
    try:
        return ast.literal_eval(s)
    except (ValueError, SyntaxError):
        raise ValueError(f"line {lineno}: unsupported value {s!r}") from None
