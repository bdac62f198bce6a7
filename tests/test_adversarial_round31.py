"""Programs an adversarial round (stop 29) wrote against this stop's rules, each shown wrong by
numbers (TF1 graph vs TF2 eager and tf.function) before its fix.  The programs sit in
tests/adversarial31/; here, what the tool must do with each."""
from __future__ import annotations

import os

import pytest

from migrator.model import MANUAL, MIGRATED
from migrator.pipeline import Options, migrate_text

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "adversarial31")


def _run(name: str, unsafe: bool = False):
    src = open(os.path.join(HERE, name + ".py"), encoding="utf-8").read()
    out, sites = migrate_text(src, "m.py", options=Options(unsafe_fixes=unsafe))
    return src, out, sites


@pytest.mark.parametrize("name, unsafe, why", [
    # the filler adds a tensor made before the tape (from a parameter source): the tape would
    # have been extended over it, and missed it (TF1 cos x + 2x, tape cos x)
    ("p04", False, "after the tape, may fill it"),
    ("p07", True, "after the tape, may fill it"),
    # the filler adds to the *sources* list after the tape watched it: that tensor goes unwatched
    ("p20", False, "after the tape, may fill it"),
    # a target read through a method of a container filled before the tape or in earlier loop turns
    ("p30", False, "changed in place inside the tape"),
    ("p29", False, "changed in place inside the tape"),
    ("p22", False, "changed in place inside the tape"),
    ("p28", False, "changed in place inside the tape"),
    # `[0.0] * n` where a project class assigns `__rmul__` (not by `def`): it may hand back a held list
    ("p33", True, "changed in place inside the tape"),
])
def test_stays_manual(name, unsafe, why):
    src, out, sites = _run(name, unsafe)
    assert out == src and [s.status for s in sites] == [MANUAL], [(s.code, s.reason) for s in sites]
    assert why in sites[0].reason, sites[0].reason


@pytest.mark.parametrize("name", [
    "p10",  # a comment between `@property` and its def
    "p11",  # `Energy.total = property(Energy._total)` at module level
    "p12",  # `prop = property`, then `@prop`
    "p13",  # `total = property (_total)`
    "p14",  # `setattr(Energy, "total", property(...))`
    "p15",  # `__getattr__ = _lookup`
    "p16",  # `def  __getattr__` (two spaces)
])
def test_every_spelling_of_a_property_target_is_read_in_the_tape(name):
    _src, out, sites = _run(name)
    assert [s.status for s in sites] == [MIGRATED], [(s.code, s.reason) for s in sites]
    assert "        total = e.total\n    return tape.gradient(total, x)" in out, out
