"""Generated names: free in the function that gets them, reused across functions."""
from __future__ import annotations

import textwrap

import libcst as cst

from migrator.naming import NameAllocator
from migrator.pipeline import migrate_text


def _functions(module: cst.Module) -> dict:
    return {n.name.value: n for n in module.body if isinstance(n, cst.FunctionDef)}


def test_a_local_name_is_free_in_its_function_only():
    module = cst.parse_module(textwrap.dedent("""\
        loss_sum = 1.0

        def f():
            def inner():
                return loss_sum
            return inner

        def g():
            return 2
        """))
    names = NameAllocator(module)
    fs = _functions(module)
    assert names.fresh_in("loss_sum", fs["f"]) == "loss_sum_1"  # a nested function reads the global
    assert names.fresh_in("loss_sum", fs["g"]) == "loss_sum"  # g reads no `loss_sum`: nothing to shadow
    assert names.fresh_in("loss_sum", fs["g"]) == "loss_sum_1"  # given out in g already
    assert names.fresh("loss_sum_1") == "loss_sum_1_1"  # module level avoids every local given out


def test_a_module_level_name_is_never_reused_for_a_local():
    module = cst.parse_module("def f():\n    return 1\n")
    names = NameAllocator(module)
    assert names.fresh("helper") == "helper"
    assert names.fresh_in("helper", _functions(module)["f"]) == "helper_1"


def test_two_functions_each_hoist_the_same_readable_name():
    src = textwrap.dedent("""\
        import tensorflow as tf


        def f(x):
            w = tf.ones([2, 3])
            y = tf.matmul(x, w)
            return tf.gradients(tf.reduce_sum(y), x)


        def g(x):
            w = tf.ones([2, 3])
            y = tf.matmul(x, w)
            return tf.gradients(tf.reduce_sum(y), x)
        """)
    out, _sites = migrate_text(src, "m.py")
    assert out.count("y_sum = tf.reduce_sum(y)") == 2 and "y_sum_1" not in out, out
