"""Helpers for tests of one gradient site in a source text: migrate it, and check that it
migrated, or stayed byte-identical and manual with a given code and words in its reason."""
from __future__ import annotations

import textwrap

from migrator.model import MANUAL, MIGRATED
from migrator.pipeline import Options, migrate_text


def site_of(src: str, unsafe: bool = False):
    src = textwrap.dedent(src)
    out, sites = migrate_text(src, options=Options(unsafe_fixes=True)) if unsafe else migrate_text(src)
    assert len(sites) == 1, sites
    return out, sites[0], src


def manual(src: str, code: str, words: str) -> None:
    out, site, src = site_of(src)
    assert out == src and site.status == MANUAL and site.code == code, (site.code, site.reason)
    assert words in site.reason, site.reason


def migrated(src: str) -> str:
    out, site, src = site_of(src)
    assert site.status == MIGRATED, (site.code, site.reason)
    return out
