"""docs/codes.md is generated from migrator/codes.py and must not go stale.

Regenerate with:  python -c "from migrator.reports import codes_markdown; open('docs/codes.md','w').write(codes_markdown())"
"""
from __future__ import annotations

import os
import re

from migrator.codes import CODES
from migrator.reports import codes_markdown

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_codes_md_is_up_to_date():
    with open(os.path.join(ROOT, "docs", "codes.md"), encoding="utf-8") as fh:
        assert fh.read() == codes_markdown(), "docs/codes.md is stale: regenerate it (see this test's docstring)"


def test_every_code_has_a_section_and_the_codes_are_well_formed():
    md = codes_markdown()
    assert re.findall(r"^## (TFG\d{3})$", md, re.M) == list(CODES)
    assert all(re.fullmatch(r"TFG\d{3}", c) for c in CODES)
