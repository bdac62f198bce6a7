"""``with self.test_session() as sess:`` in a ``tf.test.TestCase`` is TF's own context manager: it
makes a graph the default and opens a session, and overrides no gradient.  It was an assumption
(TFG129) at 21 sites of an unseen corpus (edward, tensorflow-forward-ad, zhusuan tests); it is
known where the class is based on ``tf.test.TestCase`` itself and no project code defines or
sets that method."""
from __future__ import annotations

import pytest

from one_site import site_of

from migrator.model import MANUAL, MIGRATED

_SRC = """\
import tensorflow as tf
{extra}

class GradTest({base}):

    def test_first_order(self):
        with {recv}.{method}() as sess:
            x = tf.constant([1.0, 2.0])
            y = 2.0 * x * x
            z = tf.gradients(y, x)[0]
            self.assertAllClose(sess.run(z), [4.0, 8.0])
"""


@pytest.mark.parametrize("method", ["test_session", "session", "cached_session"])
def test_a_test_case_session_overrides_no_gradient(method):
    out, site, _src = site_of(_SRC.format(extra="", base="tf.test.TestCase", recv="self", method=method))
    assert site.status == MIGRATED, (site.code, site.reason)
    assert f"with self.{method}() as sess:\n            x = tf.constant([1.0, 2.0])\n" \
           "            with tf.GradientTape() as tape:\n" in out, out


@pytest.mark.parametrize("extra, base, recv", [
    ("\n\nclass Base(tf.test.TestCase):\n    pass\n", "Base", "self"),  # a project base may redefine it
    ("\n\nclass Base(object):\n    def session(self):\n        return tf.Session()\n", "tf.test.TestCase", "self"),
    ("\n\ntf.test.TestCase.session = lambda self: None\n", "tf.test.TestCase", "self"),
    ("", "object", "self"),
    ("\nhelper = tf.test.TestCase()\n", "tf.test.TestCase", "helper"),
])
def test_a_session_the_source_does_not_show_to_be_tf_s_stays_an_assumption(extra, base, recv):
    out, site, src = site_of(_SRC.format(extra=extra, base=base, recv=recv, method="session"))
    assert site.status == MANUAL and out == src, (site.code, site.reason)
