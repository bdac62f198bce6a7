"""A target read through an attribute is read where ``tape.gradient`` runs, after the tape closed.

When reading it runs project code (a property, ``__getattr__``, a descriptor), that code builds
the loss outside the tape: the tape then gave None where TF1 gave the gradient (an adversarial
run: ``tf.gradients(m.l2, x)`` with ``l2`` a property, TF1 ``[0.21, 0.65, 0.65]``, the migration
``None``).  Such a target is read into a name inside the tape instead."""
from __future__ import annotations

import pytest

from one_site import site_of

from migrator.model import MIGRATED

_CLASS = {
    "property": "    @property\n    def total(self):\n        return tf.reduce_sum(self.h * self.h)\n",
    "property()": "    def _total(self):\n        return tf.reduce_sum(self.h * self.h)\n\n    total = property(_total)\n",
    "functools": "    @functools.cached_property\n    def total(self):\n        return tf.reduce_sum(self.h * self.h)\n",
    "__getattr__": "    def __getattr__(self, name):\n        return tf.reduce_sum(self.h * self.h)\n",
}


def _src(kind: str) -> str:
    return ("import functools\n\nimport tensorflow as tf\n\n\nclass Energy(object):\n"
            "    def __init__(self, x):\n        self.x = x\n        self.h = tf.tanh(x)\n\n" + _CLASS[kind] + "\n\n"
            "def f():\n    x = tf.constant([0.5, -1.0, 2.0])\n    e = Energy(x * 2.0)\n"
            "    return tf.gradients(e.total, x)[0]\n")


@pytest.mark.parametrize("kind", sorted(_CLASS))
def test_a_target_that_runs_code_when_read_is_read_inside_the_tape(kind):
    out, site, _src_ = site_of(_src(kind))
    assert site.status == MIGRATED, (site.code, site.reason)
    assert "        total = e.total\n    return tape.gradient(total, x)\n" in out, out


def test_a_stored_attribute_is_read_at_the_call_as_before():
    src = _src("property").replace("    @property\n    def total(self):\n        return tf.reduce_sum(self.h * self.h)\n",
                                   "    def grow(self):\n        return 1\n").replace(
        "        self.h = tf.tanh(x)\n", "        self.h = tf.tanh(x)\n        self.total = tf.reduce_sum(self.h)\n")
    out, site, _src_ = site_of(src)
    assert site.status == MIGRATED, (site.code, site.reason)
    assert "tape.gradient(e.total, x)" in out, out


def test_the_hoisted_name_may_equal_an_attribute_the_function_reads():
    # `total = e.total`: an attribute of that name is not a local the new name could shadow
    out, _site, _src_ = site_of(_src("property"))
    assert "total_1" not in out


def test_a_plain_name_target_is_not_read_again_when_the_project_has_attribute_hooks():
    out, site, _src_ = site_of(_src("__getattr__").replace("tf.gradients(e.total, x)", "tf.gradients(e.x, x)").replace(
        "    e = Energy(x * 2.0)\n", "    e = Energy(x * 2.0)\n    y = tf.reduce_sum(e.h)\n").replace(
        "tf.gradients(e.x, x)", "tf.gradients(y, x)"))
    assert site.status == MIGRATED, (site.code, site.reason)
    assert "tape.gradient(y, x)" in out and "target" not in out, out
