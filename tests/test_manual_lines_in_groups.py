"""A tape may not enclose a line left for manual migration.  When several calls share a tape, only
the calls whose own tape would enclose that line are refused; the others are planned again
without them (zhusuan's tests: a late call's tape, joined with four earlier ones, spanned a
manual line, and all five were refused)."""
from __future__ import annotations

from migrator.model import MANUAL, MIGRATED
from migrator.pipeline import migrate_text

_SRC = """\
import tensorflow as tf


def f(x0):
    mean = tf.ones([3]) * x0
    y = tf.sin(mean)
    g1 = tf.gradients(y, mean)[0]
    g2 = tf.gradients(y, mean, stop_gradients=[y])
    z = tf.cos(mean)
    g3 = tf.gradients(z, mean)[0]
    return g1, g2, g3
"""


def test_only_the_call_whose_own_tape_encloses_a_manual_line_is_refused():
    out, sites = migrate_text(_SRC)
    by_line = {s.line: s for s in sites}
    assert by_line[7].status == MIGRATED, (by_line[7].code, by_line[7].reason)
    assert by_line[8].status == MANUAL and by_line[8].code == "TFG123"
    assert by_line[10].status == MANUAL and by_line[10].code == "TFG128"
    assert "enclose line 8" in by_line[10].reason
    assert "    g1 = tape.gradient(y, mean)\n    g2 = tf.gradients(y, mean, stop_gradients=[y])\n" in out, out
