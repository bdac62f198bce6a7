"""Soundness rules of the override rewrite (docs/soundness.md, "Overrides -> tf.custom_gradient").

One group per rule: what the source must show, the refusal when it does not
(byte-identical, with a code and a reason that says what to do), and the
assumption --unsafe-fixes takes instead.  The numbers of each rewrite are
checked on the golden fixtures (tests/test_overrides.py); here the decisions.
"""
from __future__ import annotations

import ast
import textwrap

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migrator import runner
from migrator._plugins._override_opproof import Inputs, decide, function_possible, operator_possible
from migrator._plugins._override_tfvalues import DIFFERENTIABLE, PYTHON, TENSOR, UNKNOWN, UNKNOWN_RANK
from migrator.model import MANUAL, MIGRATED
from migrator.optable import function_info
from migrator.pipeline import Options, migrate_text


def migrate(src: str, unsafe: bool = False, path: str = "m.py"):
    return migrate_text(textwrap.dedent(src), path=path, options=Options(unsafe_fixes=unsafe))


def codes(sites):
    return [s.code for s in sites]


def refused(src: str, code: str, unsafe: bool = False):
    """The block stays byte-identical and the site is manual with ``code``."""
    src = textwrap.dedent(src)
    out, sites = migrate_text(src, path="m.py", options=Options(unsafe_fixes=unsafe))
    assert out == src
    manual = [s for s in sites if s.status == MANUAL and s.kind in ("override_map", "py_func_gradient")]
    assert [s.code for s in manual] == [code], [(s.code, s.reason) for s in sites]
    return manual[0]


# -- op types depend on dtype, rank, arity ------------------------------------------


def test_table_variants_matmul_rank_and_concat_length():
    mm = function_info("tensorflow.matmul")
    unknown = function_possible("tensorflow.matmul", mm, Inputs(), {"a", "b"}, False)
    assert decide(unknown, {"MatMul"}, True).kind == "ambiguous"
    rank2 = function_possible("tensorflow.matmul", mm, Inputs(frozenset({"float32"}), frozenset({2})), {"a", "b"}, False)
    assert decide(rank2, {"MatMul"}, True).op_type == "MatMul"
    rank3 = function_possible("tensorflow.matmul", mm, Inputs(None, frozenset({3})), {"a", "b"}, False)
    assert decide(rank3, {"MatMul"}, True).kind == "none"  # BatchMatMulV2: the key is dead
    no_rank = function_possible("tensorflow.matmul", mm, Inputs(None, frozenset({UNKNOWN_RANK})), {"a", "b"}, False)
    assert decide(no_rank, {"BatchMatMulV2"}, True).op_type == "BatchMatMulV2"
    cc = function_info("tensorflow.concat")
    one = function_possible("tensorflow.concat", cc, Inputs(lengths=frozenset({1})), {"values", "axis"}, True)
    assert one.lists == {("Identity",)}
    two = function_possible("tensorflow.concat", cc, Inputs(lengths=frozenset({2})), {"values", "axis"}, True)
    assert two.lists == {("ConcatV2",)}


def test_table_variants_dtype():
    cast = function_info("tensorflow.cast")
    same = function_possible("tensorflow.cast", cast, Inputs(frozenset({"float32"})), {"x", "dtype"}, False, "float32")
    assert same.lists == {()}
    other = function_possible("tensorflow.cast", cast, Inputs(frozenset({"float64"})), {"x", "dtype"}, False, "float32")
    assert decide(other, {"Cast"}, True).op_type == "Cast"
    sign = function_info("tensorflow.sign")
    unknown = function_possible("tensorflow.sign", sign, Inputs(), {"x"}, False)
    assert decide(unknown, {"Sign"}, True).kind == "ambiguous"  # complex64 makes ComplexAbs, Cast, DivNoNan
    ints = function_possible("tensorflow.round", function_info("tensorflow.round"), Inputs(frozenset({"int32"})),
                             {"x"}, False)
    assert not ints.differentiable  # no gradient flows through an int path, in TF1 or TF2
    mul = operator_possible("Multiply", Inputs(frozenset(DIFFERENTIABLE)))
    assert decide(mul, {"Mul", "Cast"}, True).op_type == "Mul"  # bool (Cast, Mul) is not differentiable


@pytest.mark.parametrize("block, code", [
    ("return tf.matmul(x, w)", "TFG111"),
    ("return x @ w", "TFG111"),
    ("return tf.cast(x, tf.float32)", "TFG111"),
    ("return tf.concat(x, 0)", "TFG111"),
])
def test_op_made_depends_on_what_the_source_does_not_show(block, code):
    key = {"tf.matmul": "MatMul", "x @ w": "MatMul", "tf.cast": "Cast", "tf.concat": "ConcatV2"}
    k = next(v for s, v in key.items() if s in block)
    site = refused(f"""
        import tensorflow as tf

        def f(x, w):
            with tf.get_default_graph().gradient_override_map({{"{k}": "Identity"}}):
                {block}
        """, code)
    assert "unsafe-fixes" in site.reason and "assuming" in site.reason


def test_dead_override_needs_the_same_proof():
    # {"MatMul": ...} around `a @ b` of unknown rank: neither provably dead nor live
    refused("""
        import tensorflow as tf

        def f(a, b):
            with tf.get_default_graph().gradient_override_map({"MatMul": "Identity"}):
                return a @ b
        """, "TFG111")
    out, sites = migrate("""
        import tensorflow as tf

        def f():
            a = tf.placeholder(tf.float32, [None, 2, 3])
            b = tf.placeholder(tf.float32, [None, 3, 2])
            with tf.get_default_graph().gradient_override_map({"MatMul": "Identity"}):
                return a @ b
        """)
    (site,) = sites
    assert site.code == "TFG007" and "gradient_override_map" not in out
    assert any("BatchMatMulV2" in p for p in site.proof)


LAYERS = """\
import tensorflow as tf


@tf.RegisterGradient("HalfGrad")
def _half(op, grad):
    return [0.5 * tf.matmul(grad, op.inputs[1], transpose_b=True), tf.zeros_like(op.inputs[1])]


def dense(x, w):
    with tf.get_default_graph().gradient_override_map({"MatMul": "HalfGrad"}):
        return tf.matmul(x, w)
"""


def test_rank_and_dtype_come_from_callers_in_other_files(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    layers = tmp_path / "layers.py"
    layers.write_text(LAYERS)
    (tmp_path / "model.py").write_text("import tensorflow as tf\nfrom layers import dense\n\n"
                                       "x = tf.placeholder(tf.float32, [None, 4])\nw = tf.Variable(tf.zeros([4, 2]))\n"
                                       "y = dense(x, w)\n")
    res = runner.run([str(layers)], runner.RunOptions(jobs=1, mode="check"))
    # the ranks come from the project's callers only: an importer elsewhere may pass rank 3
    # (BatchMatMulV2, which TF1 did not override), so it is an unsafe fix (found by an adversarial run)
    (site,) = res.results[0].sites
    assert site.code == "TFG111" and "another rank" in site.reason
    res = runner.run([str(layers)], runner.RunOptions(jobs=1, mode="check", options=Options(unsafe_fixes=True)))
    sites = {s.code: s for s in res.results[0].sites}
    assert sites["TFG001"].status == MIGRATED and sites["TFG001"].assumptions
    assert any("static rank 2" in p and "float32" in p for p in sites["TFG001"].proof)
    # another caller passes tensors of unknown rank: BatchMatMulV2 there, so no proof
    layers.write_text(LAYERS)
    (tmp_path / "other.py").write_text("import tensorflow as tf\nfrom layers import dense\n\n"
                                       "z = dense(tf.placeholder(tf.float32), tf.placeholder(tf.float32))\n")
    res = runner.run([str(layers)], runner.RunOptions(jobs=1))
    assert [s.code for s in res.results[0].sites] == ["TFG111"]
    assert layers.read_text() == LAYERS


def test_python_arithmetic_is_not_an_op():
    out, sites = migrate("""
        import tensorflow as tf

        def f(x, bits):
            with tf.get_default_graph().gradient_override_map({"Round": "Identity", "Mul": "Identity"}):
                n = 2.0 * 3.0
                return tf.round(x * n)
        """)
    # `2.0 * 3.0` is Python; `x * n` may be Python too (x is unknown): no claim either way
    assert codes(sites) == ["TFG111"] and out.count("gradient_override_map") == 1


# -- literal and numpy operands keep TF1's dtype ------------------------------------


def test_literal_operand_stays_in_the_wrapper_and_is_converted_once():
    out, _ = migrate("""
        import numpy as np
        import tensorflow as tf

        @tf.RegisterGradient("G")
        def _g(op, grad):
            x, y = op.inputs
            return grad * y, tf.reduce_sum(grad * x)

        def f(x):
            with tf.get_default_graph().gradient_override_map({"Mul": "G"}):
                return x * np.float64(0.5)

        if __name__ == "__main__":
            f(tf.placeholder(tf.float32, [None]))
        """)
    assert "def mul_with_g(x):" in out  # one parameter: the tensor
    assert "x1 = tf.convert_to_tensor(np.float64(0.5), dtype=x.dtype)" in out
    assert "return x * x1, lambda grad: _g(x, x1, grad)[0]" in out
    assert out.count("np.float64(0.5)") == 1


def test_operand_of_unknown_kind_is_converted_at_the_call_site():
    out, _ = migrate("""
        import tensorflow as tf

        def f(x, s):
            with tf.get_default_graph().gradient_override_map({"Mul": "Add"}):
                return x * s

        if __name__ == "__main__":
            f(tf.constant([1.0]), 3)
            f(tf.constant([1.0]), tf.constant(2.0))
        """)
    assert "mul_add_gradient(x, tf.convert_to_tensor(s, dtype=x.dtype))" in out


# -- op.get_attr ----------------------------------------------------------------


GET_ATTR = """
import tensorflow as tf

@tf.RegisterGradient("Leaky")
def _leaky(op, grad):
    return grad * op.get_attr("alpha")

def f(x, a):
    with tf.get_default_graph().gradient_override_map({{"LeakyRelu": "Leaky"}}):
        return tf.nn.leaky_relu({args})
"""


@pytest.mark.parametrize("args, expect", [
    ("x, 0.3", "return grad * 0.3"),
    ("x", "return grad * 0.2"),  # the function's default
    ("features=x, alpha=0.1", "return grad * 0.1"),
])
def test_get_attr_from_any_argument_form(args, expect):
    out, sites = migrate(GET_ATTR.format(args=args))
    assert expect in out, out


def test_computed_attribute_is_evaluated_where_the_op_is_made():
    out, _ = migrate(GET_ATTR.format(args="x, a * 2.0"))
    assert "def _leaky(alpha, grad):" in out
    assert "alpha = a * 2.0  # evaluated once, where TF1 made the op" in out
    assert "tf.nn.leaky_relu(features, alpha)" in out
    # never pasted into the module-level helper, where `a` does not exist
    helper = out.split("def _leaky")[1].split("\n\n")[0]
    assert "a * 2.0" not in helper


def test_unknown_attribute_is_refused():
    refused("""
        import tensorflow as tf

        @tf.RegisterGradient("G")
        def _g(op, grad):
            return grad * op.get_attr("no_such_attr")

        def f(x):
            with tf.get_default_graph().gradient_override_map({"Identity": "G"}):
                return tf.identity(x)
        """, "TFG105")


# -- maps ---------------------------------------------------------------------------


@pytest.mark.parametrize("change", [
    'm.update(extra)',
    'if flag:\n                m["Floor"] = "Identity"',
    'for k in keys:\n                m[k] = "Identity"',
    'helper(m)',
    'm2 = m',
    'del m["Round"]',
])
def test_a_map_changed_after_its_literal_is_refused(change):
    site = refused(f"""
        import tensorflow as tf

        def f(x, flag, keys, extra, helper):
            m = {{"Round": "Identity"}}
            {change}
            with tf.get_default_graph().gradient_override_map(m):
                return tf.round(x) + tf.floor(x)
        """, "TFG103")
    assert "`m`" in site.reason


def test_a_module_level_map_changed_by_another_file_is_refused(tmp_path):
    (tmp_path / "q.py").write_text('import tensorflow as tf\n\nSTE = {"Round": "Identity"}\n\n\ndef f(x):\n'
                                   '    with tf.get_default_graph().gradient_override_map(STE):\n'
                                   '        return tf.round(x)\n')
    (tmp_path / "main.py").write_text('import q\n\nq.STE["Round"] = "Neg"\n')
    res = runner.run([str(tmp_path / "q.py")], runner.RunOptions(jobs=1))
    (site,) = res.results[0].sites
    assert site.code == "TFG103" and "main.py:3" in site.reason


# -- the graph must be the graph -----------------------------------------------------


def test_module_graph_refused_when_a_caller_switches_graphs(tmp_path):
    (tmp_path / "q.py").write_text('import tensorflow as tf\n\nG = tf.get_default_graph()\n\n\ndef f(x):\n'
                                   '    with G.gradient_override_map({"Round": "Identity"}):\n'
                                   '        return tf.round(x)\n')
    (tmp_path / "train.py").write_text('import tensorflow as tf\n\nimport q\n\nwith tf.Graph().as_default():\n'
                                       '    y = q.f(tf.placeholder(tf.float32))\n')
    res = runner.run([str(tmp_path / "q.py")], runner.RunOptions(jobs=1))
    (site,) = res.results[0].sites
    assert site.code == "TFG116" and "train.py:5" in site.reason
    res = runner.run([str(tmp_path / "q.py")], runner.RunOptions(jobs=1, options=Options(unsafe_fixes=True)))
    (site,) = res.results[0].sites
    assert site.status == MIGRATED and site.assumptions == ["`G` is the default graph whenever the block runs"]


def test_a_module_graph_that_another_module_imports_is_kept(tmp_path):
    (tmp_path / "q.py").write_text('import tensorflow as tf\n\nG = tf.get_default_graph()\n\n\ndef f(x):\n'
                                   '    with G.gradient_override_map({"Round": "Identity"}):\n'
                                   '        return tf.round(x)\n')
    (tmp_path / "user.py").write_text('from q import G\n\nprint(G)\n')
    runner.run([str(tmp_path / "q.py")], runner.RunOptions(jobs=1))
    text = (tmp_path / "q.py").read_text()
    assert "G = tf.get_default_graph()" in text and "gradient_override_map" not in text


@pytest.mark.parametrize("setup, graph", [
    ("g = sess.graph", "g"),
    ("pass", "x.graph"),
])
def test_a_graph_that_may_not_be_the_default_is_refused(setup, graph):
    refused(f"""
        import tensorflow as tf

        def f(x, sess):
            {setup}
            with {graph}.gradient_override_map({{"Round": "Identity"}}):
                return tf.round(x)
        """, "TFG116")


def test_graph_bound_in_the_function_after_another_default_graph_is_entered():
    refused("""
        import tensorflow as tf

        def f(x):
            g = tf.get_default_graph()
            with tf.Graph().as_default():
                with g.gradient_override_map({"Round": "Identity"}):
                    return tf.round(x)
        """, "TFG116")


# -- identity ---------------------------------------------------------------------------


@pytest.mark.parametrize("use", [
    "y.op.inputs[0]",
    "y.op.type",
    "y.name",
    "tf.get_default_graph().get_tensor_by_name('r:0')",
])
def test_reading_the_wrapped_op_is_refused(use):
    refused(f"""
        import tensorflow as tf

        def f(x):
            with tf.get_default_graph().gradient_override_map({{"Round": "Identity"}}):
                y = tf.round(x, name="r")
            print({use})
            return y
        """, "TFG115")


# -- registrations -----------------------------------------------------------------------


def test_registration_named_by_a_file_outside_the_run_stays(tmp_path):
    (tmp_path / "grads.py").write_text('import tensorflow as tf\n\n\n@tf.RegisterGradient("G")\ndef _g(op, grad):\n'
                                       '    return 2.0 * grad\n\n\ndef f(x):\n'
                                       '    with tf.get_default_graph().gradient_override_map({"Identity": "G"}):\n'
                                       '        return tf.identity(x)\n')
    (tmp_path / "other.py").write_text('M = {"Relu": "G"}\n')  # not in the run
    res = runner.run([str(tmp_path / "grads.py")], runner.RunOptions(jobs=1))
    (site,) = res.results[0].sites
    assert site.code == "TFG112" and "other.py:1" in site.reason


def test_registered_function_imported_elsewhere_keeps_its_signature(tmp_path):
    (tmp_path / "grads.py").write_text('import tensorflow as tf\n\n\n@tf.RegisterGradient("G")\ndef _g(op, grad):\n'
                                       '    return 2.0 * grad\n\n\ndef f(x):\n'
                                       '    with tf.get_default_graph().gradient_override_map({"Identity": "G"}):\n'
                                       '        return tf.identity(x)\n')
    (tmp_path / "other.py").write_text('from grads import _g\n')
    res = runner.run([str(tmp_path / "grads.py")], runner.RunOptions(jobs=1))
    (site,) = res.results[0].sites
    assert site.code == "TFG113" and "is imported by another file (other.py:1)" in site.reason


@pytest.mark.parametrize("other, why", [
    ("from grads import *\n", "other.py:1 star-imports this module"),
    ("print _g\n", "other.py names it and cannot be parsed"),  # Python 2
])
def test_a_registered_function_another_file_may_use_says_which_file(tmp_path, other, why):
    """It may be used (not "is imported"), and the reason names the file that keeps the
    migrator from telling (a Python 2 file in WAGE was reported as an importer)."""
    (tmp_path / "grads.py").write_text('import tensorflow as tf\n\n\n@tf.RegisterGradient("G")\ndef _g(op, grad):\n'
                                       '    return 2.0 * grad\n\n\ndef f(x):\n'
                                       '    with tf.get_default_graph().gradient_override_map({"Identity": "G"}):\n'
                                       '        return tf.identity(x)\n')
    (tmp_path / "other.py").write_text(other)
    res = runner.run([str(tmp_path / "grads.py")], runner.RunOptions(jobs=1))
    (site,) = res.results[0].sites
    assert site.code == "TFG113" and f"`_g` may be used by another file ({why})" in site.reason


def test_default_arguments_survive_and_are_not_passed_upstream():
    out, _ = migrate("""
        import tensorflow as tf

        @tf.RegisterGradient("G")
        def _g(op, grad, scale=3.0, *, bias=0.0):
            return scale * grad + bias * op.inputs[0]

        def f(x):
            with tf.get_default_graph().gradient_override_map({"Identity": "G"}):
                return tf.identity(x)
        """)
    assert "def _g(input, grad, scale=3.0, *, bias=0.0):" in out or "def _g(x, grad, scale=3.0, *, bias=0.0):" in out
    assert "lambda grad: _g(" in out and "scale" not in out.split("lambda grad:")[1].split("\n")[0]


def test_a_registration_that_runs_after_the_block_is_refused():
    refused("""
        import tensorflow as tf

        def f(x, first):
            if first:
                @tf.RegisterGradient("G")
                def _g(op, grad):
                    return 2.0 * grad
            with tf.get_default_graph().gradient_override_map({"Identity": "G"}):
                return tf.identity(x)
        """, "TFG114")


# -- the gradient function runs eagerly: TF2 code ----------------------------------------


@pytest.mark.parametrize("body, expect", [
    ("d = tf.py_func(np.sign, [x], [tf.float32])[0]", "d = tf.numpy_function(np.sign, [x], tf.float32)"),
    ("d = tf.py_func(np.sign, [x], [tf.float32])", "d = [tf.numpy_function(np.sign, [x], tf.float32)]"),
    ("d = tf.py_func(np.sign, [x], tf.float32)", "d = tf.numpy_function(np.sign, [x], tf.float32)"),
    ("d = tf.py_func(np.sign, [x], TOUT)[0]", "d = tf.numpy_function(np.sign, [x], TOUT[0])"),
    ("d = tf.floordiv(x, 2.0)", "d = tf.math.floordiv(x, 2.0)"),
])
def test_gradient_body_is_made_tf2_code(body, expect):
    out, sites = migrate(f"""
        import numpy as np
        import tensorflow as tf

        TOUT = [tf.float32]

        @tf.RegisterGradient("G")
        def _g(op, grad):
            x = op.inputs[0]
            {body}
            return grad

        def f(x):
            with tf.get_default_graph().gradient_override_map({{"Identity": "G"}}):
                return tf.identity(x)
        """)
    assert expect in out, out
    assert "tf.py_func" not in out and "tf.floordiv" not in out


@pytest.mark.parametrize("body", [
    "tf.Print(grad, [grad])",
    "grad.set_shape([3])",
    "tf.get_default_graph()",
    "grad.eval()",
    "tf.py_func(np.sign, [grad], TYPES[k])",
    "tf.placeholder(tf.float32)",
    "helper(grad)",  # a same-module function with TF1-only code runs eagerly too
])
def test_gradient_body_that_changes_meaning_eagerly_is_refused(body):
    refused(f"""
        import numpy as np
        import tensorflow as tf

        def helper(g):
            return tf.Print(g, [g])

        @tf.RegisterGradient("G")
        def _g(op, grad, k=0):
            {body}
            return grad

        def f(x):
            with tf.get_default_graph().gradient_override_map({{"Identity": "G"}}):
                return tf.identity(x)
        """, "TFG117")


# -- proofs and unsafe fixes ----------------------------------------------------------------


def test_every_migrated_site_carries_its_proof():
    _, sites = migrate("""
        import tensorflow as tf

        @tf.RegisterGradient("QuantizeGrad")
        def _q(op, grad):
            return tf.where(tf.abs(op.inputs[0]) <= 1.0, grad, tf.zeros_like(grad))

        def f():
            x = tf.placeholder(tf.float32, [None, 3])
            with tf.get_default_graph().gradient_override_map({"Sign": "QuantizeGrad"}):
                return tf.sign(x)
        """)
    by = {s.code: s for s in sites}
    proof = " | ".join(by["TFG001"].proof)
    assert "`Sign` made by `tf.sign` (float32 inputs, static rank 2; op table entry tensorflow.sign)" in proof
    assert "map is a dict literal at line 10" in proof
    assert "registration 'QuantizeGrad' is used by no other file" in proof
    assert by["TFG001"].assumptions == [] and by["TFG002"].proof


# -- properties over generated blocks -------------------------------------------------------

_OPERANDS = {"param": "x", "float_placeholder": "p", "literal": "2.0", "int_literal": "3", "numpy": "np.float32(0.5)"}
_EXPRS = ["{a} * {b}", "{a} @ {b}", "tf.matmul({a}, {b})", "tf.sign({a})", "tf.round({a})", "tf.cast({a}, tf.float32)",
          "-{a}", "tf.concat([{a}], 0)", "tf.concat([{a}, {b}], 0)", "{a} + {b}"]
_KEYS = ["Mul", "MatMul", "BatchMatMulV2", "Sign", "Round", "Cast", "Neg", "ConcatV2", "Identity", "AddV2"]


@st.composite
def blocks(draw):
    a = draw(st.sampled_from(sorted(_OPERANDS)))
    b = draw(st.sampled_from(sorted(_OPERANDS)))
    expr = draw(st.sampled_from(_EXPRS)).format(a=_OPERANDS[a], b=_OPERANDS[b])
    keys = draw(st.lists(st.sampled_from(_KEYS), min_size=1, max_size=2, unique=True))
    mapping = ", ".join(f'"{k}": "StopGradient"' for k in keys)
    return textwrap.dedent(f"""\
        import numpy as np
        import tensorflow as tf


        def f(x):
            p = tf.placeholder(tf.float32, [None, 2])
            with tf.get_default_graph().gradient_override_map({{{mapping}}}):
                return {expr}
        """)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks())
def test_generated_blocks_refuse_byte_identical_or_migrate_with_proof(src):
    out, sites = migrate_text(src, path="m.py")
    ast.parse(out)
    manual = [s for s in sites if s.status == MANUAL]
    if manual:
        assert out == src
        for s in manual:
            assert s.reason and s.code.startswith("TFG1")
    else:
        assert all(s.proof for s in sites) and not any(s.assumptions for s in sites)
        assert migrate_text(out, path="m.py")[0] == out
    # an unknown-rank matmul is never called MatMul (or dead) by default
    if ("@" in src or "tf.matmul" in src) and "x" in src.split("return")[1] and '"MatMul"' in src:
        assert manual
    unsafe_out, unsafe_sites = migrate_text(src, path="m.py", options=Options(unsafe_fixes=True))
    took = [s for s in unsafe_sites if s.assumptions]
    if took:  # an assumption is taken only where the default run refused for that reason
        assert any(s.code in ("TFG111", "TFG116") for s in manual)
        assert all(s.status == MIGRATED for s in took)


def test_value_inference_joins_every_binding():
    from migrator._plugins._override_find import find_sites
    from migrator._plugins._override_values import Values
    from migrator.project import Project

    src = textwrap.dedent("""\
        import tensorflow as tf

        def f(x):
            with tf.get_default_graph().gradient_override_map({"Sign": "Identity"}):
                pass
            y = tf.cast(x, tf.float64)
            y = tf.tanh(y)
            z = tf.constant([[1, 2], [3, 4]])
            n = float(2 ** 3)
            return y, z, n, x
        """)
    found = find_sites(cst.parse_module(src))
    scope = next(s for d, s in found.col.scope_of_def.items() if d.name.value == "f")
    vals = Values(found, "/nowhere/m.py", Project(None, {"/nowhere/m.py": src}))
    y, z, n, x = (vals.name(k, scope, 0) for k in "yznx")
    assert (y.kind, y.dtypes) == (TENSOR, frozenset({"float64"}))
    assert (z.kind, z.dtypes, z.ranks) == (TENSOR, frozenset({"int32"}), frozenset({2}))
    assert n.kind == PYTHON
    assert x.kind == UNKNOWN  # no caller: a tensor, a number, anything


def test_override_modules_import_each_other_without_cycles_and_stay_small():
    import glob
    import os

    root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "migrator", "_plugins")
    files = glob.glob(os.path.join(root, "_override_*.py")) + glob.glob(os.path.join(root, "_grad*.py")) + [
        os.path.join(root, "overrides.py")]
    names = {os.path.basename(f)[:-3] for f in files}
    deps = {}
    for f in files:
        text = open(f, encoding="utf-8").read()
        assert text.count("\n") <= 500, f
        tree = ast.parse(text)
        deps[os.path.basename(f)[:-3]] = {
            n.module.rsplit(".", 1)[-1] for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and n.module and n.module.rsplit(".", 1)[-1] in names}

    def visit(mod, path):
        for d in deps[mod]:
            assert d not in path, " -> ".join(path + [d])
            visit(d, path + [d])

    for mod in deps:
        visit(mod, [mod])


def test_the_graph_of_an_enclosing_session_is_the_default_graph():
    out, sites = migrate("""
        import tensorflow as tf

        def f(x):
            with tf.Session() as sess:
                with sess.graph.gradient_override_map({"Round": "Identity"}):
                    y = tf.round(x)
                return sess.run(y)
        """)
    (site,) = sites
    assert site.status == MIGRATED and "`sess` is a session on the default graph" in " ".join(site.proof)
    refused("""
        import tensorflow as tf

        def f(x, g):
            with tf.Session(graph=g) as sess:
                with sess.graph.gradient_override_map({"Round": "Identity"}):
                    return tf.round(x)
        """, "TFG116")


def test_a_block_refused_while_its_wrapper_is_written_keeps_its_registration():
    """Found by an adversarial run: the refusal came after the plan had removed the registration."""
    src = textwrap.dedent('''\
        import tensorflow as tf


        @tf.RegisterGradient("MaxScaled")
        def _max_scaled(op, grad):
            a, b = op.inputs
            return tf.reduce_sum(grad * a), grad * b * 3.0


        def f(x):
            t = tf.identity(x)
            with tf.get_default_graph().gradient_override_map({"Maximum": "MaxScaled"}):
                return tf.maximum(0.25, t)
        ''')
    out, sites = migrate_text(src, path="m.py", options=Options())
    assert out == src
    assert [(s.kind, s.status) for s in sites] == [("override_map", MANUAL)], [(s.code, s.reason) for s in sites]


@pytest.mark.parametrize("call", ["tf.identity([t, t * 2.0])", "tf.nn.relu((t, t * 2.0))", "tf.identity(pair)"])
def test_a_list_of_tensors_as_one_input_refuses(call):
    """TF1 packed the list first; the wrapper would take it as a list, which custom_gradient flattens."""
    site = refused(f"""\
        import tensorflow as tf


        @tf.RegisterGradient("G")
        def _g(op, grad):
            return grad * 3.0


        def f(x):
            t = tf.identity(x)
            pair = [t, t * 2.0]
            with tf.get_default_graph().gradient_override_map({{"Identity": "G", "Relu": "G"}}):
                return {call}
        """, "TFG108")
    assert "Pack" in site.reason


def test_a_registration_after_the_block_refuses_with_a_reason():
    """Found by an adversarial run: it was an internal error."""
    site = refused("""\
        import tensorflow as tf


        def f(x):
            with tf.get_default_graph().gradient_override_map({"Identity": "LateG"}):
                return tf.identity(x)


        @tf.RegisterGradient("LateG")
        def _late(op, grad):
            return grad * 2.0
        """, "TFG114")
    assert "comes after the block" in site.reason


def test_the_wrapper_spells_a_renamed_tf1_function_as_tf2_does():
    """The wrapper is new code that runs eagerly in TF2: `tf.floordiv` is `tf.math.floordiv` there."""
    out, sites = migrate("""\
        import tensorflow as tf


        @tf.RegisterGradient("FloorDivSte")
        def _floordiv_ste(op, grad):
            return grad, None


        def f(x, y):
            with tf.get_default_graph().gradient_override_map({"FloorDiv": "FloorDivSte"}):
                return tf.floordiv(x, y)
        """)
    assert "tf.math.floordiv(" in out and "tf.floordiv(" not in out, out


@pytest.mark.parametrize("graph", ["K.get_session().graph", "tf.Session().graph", "sess.graph"])
def test_a_session_graph_handle_goes_with_its_override_under_unsafe_fixes(graph):
    """Found on real code (a gradient-reversal layer): `g = K.get_session().graph` stayed after the
    rewrite, and TF2 Keras has no get_session, so the migrated layer could not run at all."""
    src = textwrap.dedent(f"""\
        import tensorflow as tf
        from keras import backend as K


        def reverse(x, sess):
            @tf.RegisterGradient("RevGrad")
            def _rev(op, grad):
                return [-0.5 * grad]

            g = {graph}
            with g.gradient_override_map({{"Identity": "RevGrad"}}):
                y = tf.identity(x)
            return y * 2.0
        """)
    out, sites = migrate_text(src, "m.py", options=Options(unsafe_fixes=True))
    assert [s.status for s in sites] == [MIGRATED] * 2 and "g = " not in out and ".graph" not in out, out


def test_nested_registrations_of_the_same_name_in_two_functions_are_separate():
    """A def nested in one function is not used by another function's def of the same name."""
    body = """
        def {f}(x):
            @tf.RegisterGradient("{op}")
            def _rev(op, grad):
                return [-0.5 * grad]

            with tf.get_default_graph().gradient_override_map({{"Identity": "{op}"}}):
                return tf.identity(x)
        """
    src = "import tensorflow as tf\n" + textwrap.dedent(body.format(f="f", op="RevA")) + \
        textwrap.dedent(body.format(f="g", op="RevB"))
    out, sites = migrate_text(src, "m.py")
    assert [s.status for s in sites] == [MIGRATED] * 4, [(s.code, s.reason) for s in sites]


# -- an adversarial run on the override rewrites (each gave other gradients once migrated) --

_ADVERSARIAL_BLOCKS = {
    'o10_sorted_key': 'import tensorflow as tf\n\nmade = []\n\n\ndef key(t):\n    made.append(tf.sign(t))\n    return 0\n\n\ndef f(x):\n    real = tf.cast(x, tf.float32)\n    g = tf.get_default_graph()\n    with g.gradient_override_map({"Sign": "Identity"}):\n        a = tf.sign(real)\n        sorted([real], key=key)\n    return a + 3.0 * made[0]\n',
    'o24_atrous_rate2': 'import tensorflow as tf\n\n\n@tf.RegisterGradient("BatchCountGrad")\ndef _batch_count_grad(op, grad):\n    x, w = op.inputs\n    n = tf.cast(tf.shape(x)[0], tf.float32)\n    return [tf.ones_like(x) * n, tf.zeros_like(w)]\n\n\ndef f(x, w):\n    with tf.get_default_graph().gradient_override_map({"Conv2D": "BatchCountGrad"}):\n        return tf.nn.atrous_conv2d(x, w, 2, "SAME")\n',
    'o27_convert_image_same_cast': 'import tensorflow as tf\n\n\n@tf.RegisterGradient("TripleCastGrad")\ndef _triple_cast_grad(op, grad):\n    return 3.0 * tf.cast(grad, op.inputs[0].dtype)\n\n\ndef f(x):\n    with tf.get_default_graph().gradient_override_map({"Cast": "TripleCastGrad"}):\n        return tf.image.convert_image_dtype(x, tf.float32)\n',
    'o31_gather_nd_batch': 'import tensorflow as tf\n\n\n@tf.RegisterGradient("GatherNdTwice")\ndef _gather_nd_twice(op, grad):\n    params, idx = op.inputs\n    return [2.0 * tf.scatter_nd(idx, grad, tf.shape(params, out_type=idx.dtype)), None]\n\n\ndef f(p):\n    with tf.get_default_graph().gradient_override_map({"GatherNd": "GatherNdTwice"}):\n        return tf.gather_nd(p, [[0], [2]], batch_dims=1)\n',
    'o35_genexp_unpack': 'import tensorflow as tf\n\n\ndef f(x):\n    real = tf.cast(x, tf.float32)\n    pair = (tf.sign(t) for t in (real, 2.0 * real))\n    g = tf.get_default_graph()\n    with g.gradient_override_map({"Sign": "Identity"}):\n        a = tf.sign(real)\n        b, c = pair\n    return a + 3.0 * b + c\n',
    'o37_custom_append': 'import tensorflow as tf\n\n\nclass Collector(object):\n    def __init__(self):\n        self.items = []\n\n    def append(self, t):\n        self.items.append(tf.sign(t))\n\n\ndef f(x):\n    real = tf.cast(x, tf.float32)\n    col = Collector()\n    g = tf.get_default_graph()\n    with g.gradient_override_map({"Sign": "Identity"}):\n        a = tf.sign(real)\n        col.append(real)\n    return a + 3.0 * col.items[0]\n',
    'o42_str_dunder': 'import tensorflow as tf\n\n\nclass Layer(object):\n    def __init__(self, x):\n        self.x = x\n        self.out = None\n\n    def __len__(self):\n        self.out = tf.sign(self.x)\n        return 1\n\n\ndef f(x):\n    real = tf.cast(x, tf.float32)\n    layer = Layer(real)\n    g = tf.get_default_graph()\n    with g.gradient_override_map({"Sign": "Identity"}):\n        a = tf.sign(real)\n        n = len(layer)\n    return a + 3.0 * layer.out * n\n',
    'o47_resource_read': 'import tensorflow as tf\n\n\n@tf.RegisterGradient("NegGrad")\ndef _neg_grad(op, grad):\n    return -grad\n\n\ndef build():\n    w = tf.get_variable("w", initializer=tf.constant([1.0, -2.0, 0.5]), use_resource=True)\n    with tf.get_default_graph().gradient_override_map({"ReadVariableOp": "NegGrad", "Sign": "Identity"}):\n        y = tf.sign(w) + w * 2.0\n    return w, y\n',
    'o54_maxpool_v2_rank5': 'import tensorflow as tf\n\n\n@tf.RegisterGradient("PoolOnes")\ndef _pool_ones(op, grad):\n    return 7.0 * tf.ones_like(op.inputs[0])\n\n\ndef _pool(x):\n    with tf.get_default_graph().gradient_override_map({"MaxPool": "PoolOnes"}):\n        return tf.nn.max_pool_v2(x, 2, 2, "SAME")\n',
    'a19_pyfunc_tout_module_constant': 'import numpy as np\nimport tensorflow as tf\n\nTOUT = [tf.float32, tf.int32]\n\n\ndef _np_sq_count(a):\n    return a * a, np.int32(a.size)\n\n\n@tf.RegisterGradient("SqCountGrad")\ndef _sq_count_grad(op, gy, gn):\n    return gy * 2.0 * op.inputs[0] if gn is None else gy * 0.0 + 100.0\n\n\ndef f(x):\n    with tf.get_default_graph().gradient_override_map({"PyFunc": "SqCountGrad"}):\n        y, n = tf.py_func(_np_sq_count, [x], TOUT)\n    return y, n\n',
    'o58_pyfunc_int_output': 'import numpy as np\nimport tensorflow as tf\n\n\ndef py_func(func, inp, Tout, stateful=True, name=None, grad=None):\n    rnd_name = "PyFuncGrad" + str(np.random.randint(0, 1e8))\n    tf.RegisterGradient(rnd_name)(grad)\n    g = tf.get_default_graph()\n    with g.gradient_override_map({"PyFunc": rnd_name}):\n        return tf.py_func(func, inp, Tout, stateful=stateful, name=name)\n\n\ndef _np_f(a):\n    return (a * 2).astype(np.float32), np.argmax(a).astype(np.int32)\n\n\ndef _f_grad(op, g1, g2):\n    extra = 100.0 if g2 is None else 0.0\n    return g1 * 2.0 + extra\n\n\ndef f(x):\n    a, i = py_func(_np_f, [x], [tf.float32, tf.int32], grad=_f_grad)\n    a.set_shape(x.get_shape())\n    return a, i\n',
    'o62_getitem_dunder': 'import tensorflow as tf\n\n\nclass LazySigns(object):\n    def __init__(self, t):\n        self.t = t\n\n    def __getitem__(self, k):\n        return tf.sign(self.t * float(k + 1))\n\n\ndef f(x):\n    real = tf.cast(x, tf.float32)\n    signs = LazySigns(real)\n    g = tf.get_default_graph()\n    with g.gradient_override_map({"Sign": "Identity"}):\n        a = tf.sign(real)\n        b = signs[0]\n    return a + 3.0 * b\n',
    'o36_getattr_property': 'import tensorflow as tf\n\n\nclass Binarizer(object):\n    def __init__(self, x):\n        self.x = x\n\n    @property\n    def out(self):\n        return tf.sign(self.x)\n\n\ndef f(x):\n    real = tf.cast(x, tf.float32)\n    b = Binarizer(real)\n    g = tf.get_default_graph()\n    with g.gradient_override_map({"Sign": "Identity"}):\n        a = tf.sign(real)\n        c = getattr(b, "out")\n    return a + 3.0 * c\n',
}


@pytest.mark.parametrize("name", sorted(_ADVERSARIAL_BLOCKS))
def test_blocks_that_run_code_or_make_ops_the_source_does_not_show_stay_manual(name):
    """Property reads, protocol methods, key callbacks, lazy iterators, a project class's
    `append`; ops that depend on an untraced argument, rank or dtype; implicit ReadVariableOp;
    literal indices of their own dtype; a non-float py_func output (TF1 passed None)."""
    src = _ADVERSARIAL_BLOCKS[name]
    out, sites = migrate_text(src, path="m.py")
    assert out == src, name
    assert any(s.status == MANUAL for s in sites)


def test_where_makes_select_only_when_x_and_y_cannot_be_none():
    # `tf.where(c)` makes Where and `tf.where(c, x, y)` Select; a parameter may be None, a tensor may not
    refused("""
        import tensorflow as tf

        def f(c, x, y):
            with tf.get_default_graph().gradient_override_map({"Select": "Identity"}):
                return tf.where(c, x, y)
        """, "TFG111")
    out, sites = migrate("""
        import tensorflow as tf

        @tf.RegisterGradient("Halve")
        def _halve(op, grad):
            return [None, grad / 2.0, grad / 2.0]

        def f(c, x):
            with tf.get_default_graph().gradient_override_map({"Select": "Halve"}):
                return tf.where(c, tf.tanh(x), tf.zeros_like(x))
        """)
    assert {s.status for s in sites} == {MIGRATED} and "compat.v1.where(condition, x, y)" in out
    out, sites = migrate("""
        import tensorflow as tf

        def f(x):
            with tf.get_default_graph().gradient_override_map({"Select": "Identity"}):
                return tf.where(x > 0.0)
        """)
    (site,) = sites
    assert site.code == "TFG007" and "gradient_override_map" not in out


def test_function_possible_reads_none_defaults():
    info = function_info("tensorflow.where")
    both = Inputs()
    alone = function_possible("tensorflow.where", info, both, set(), False)
    assert alone.primary == ("Where",) and not alone.differentiable  # a bool condition: no gradient
    given = function_possible("tensorflow.where", info, both, {"condition", "x", "y"}, False)
    assert given.lists == {("Select",), ("Where",)}
    shown = function_possible("tensorflow.where", info, both, {"condition", "x", "y"}, False,
                              not_none=frozenset({"x", "y"}))
    assert shown.lists == {("Select",)}


def test_a_where_of_a_condition_alone_under_a_where_key_is_dead():
    # `tf.where(c)` under {"Where": ...} crashed the migrator (StopIteration: adversarial run)
    out, sites = migrate("""
        import tensorflow as tf

        @tf.RegisterGradient("G7")
        def _g(op, grad):
            return [None]

        def f(x):
            with tf.get_default_graph().gradient_override_map({"Where": "G7"}):
                return tf.where(x > 0.0)
        """)
    assert {s.code for s in sites} >= {"TFG007"} and "gradient_override_map" not in out


def test_a_maybe_python_value_of_tf_where_is_not_converted_to_the_condition_s_dtype():
    # `tf.where(keep, x * x, ...)` became `convert_to_tensor(x * x, dtype=keep.dtype)`: bool (adversarial run)
    out, sites = migrate("""
        import tensorflow as tf

        @tf.RegisterGradient("S7")
        def _g(op, grad):
            return [None, 2.0 * grad, 3.0 * grad]

        def f(x):
            keep = x > 0.0
            with tf.get_default_graph().gradient_override_map({"Select": "S7"}):
                return tf.where(keep, x * x, tf.zeros_like(x) + 0.5)
        """)
    assert "keep.dtype" not in out
