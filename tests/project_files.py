"""Writing small projects for the tests: one dedented file at a path under a root."""
from __future__ import annotations

import textwrap


def write(root, name, text):
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return str(path)
