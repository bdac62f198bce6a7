"""The shipped op-type table (migrator/data/op_types.json) and its loader.

Facts checked by hand against TensorFlow 2.21 (see
shared reference tf_gradient_semantics.md §0 and §2).  The last tests re-trace
a handful of functions with the generator's own tracing code and compare with
the shipped data, so the table cannot silently go stale; they need TensorFlow
and run in a subprocess (the generator switches TF to v1 graph behaviour).
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

from migrator import optable

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAVE_TF = importlib.util.find_spec("tensorflow") is not None

# name -> (op types in creation order, inputs of the first op, direct)
SINGLE = {
    "tensorflow.sign": ("Sign", ["x"]),
    "tensorflow.math.sign": ("Sign", ["x"]),
    "tensorflow.round": ("Round", ["x"]),
    "tensorflow.math.round": ("Round", ["x"]),
    "tensorflow.floor": ("Floor", ["x"]),
    "tensorflow.math.floor": ("Floor", ["x"]),
    "tensorflow.ceil": ("Ceil", ["x"]),
    "tensorflow.math.ceil": ("Ceil", ["x"]),
    "tensorflow.identity": ("Identity", ["input"]),
    "tensorflow.nn.relu": ("Relu", ["features"]),
    "tensorflow.nn.relu6": ("Relu6", ["features"]),
    "tensorflow.nn.leaky_relu": ("LeakyRelu", ["features"]),
    "tensorflow.sigmoid": ("Sigmoid", ["x"]),
    "tensorflow.nn.sigmoid": ("Sigmoid", ["x"]),
    "tensorflow.tanh": ("Tanh", ["x"]),
    "tensorflow.nn.tanh": ("Tanh", ["x"]),
    "tensorflow.abs": ("Abs", ["x"]),
    "tensorflow.cast": ("Cast", ["x"]),
    "tensorflow.to_float": ("Cast", ["x"]),
    "tensorflow.square": ("Square", ["x"]),
    "tensorflow.sqrt": ("Sqrt", ["x"]),
    "tensorflow.exp": ("Exp", ["x"]),
    "tensorflow.log": ("Log", ["x"]),
    "tensorflow.matmul": ("MatMul", ["a", "b"]),
    "tensorflow.multiply": ("Mul", ["x", "y"]),
    "tensorflow.add": ("AddV2", ["x", "y"]),
    "tensorflow.subtract": ("Sub", ["x", "y"]),
    "tensorflow.divide": ("RealDiv", ["x", "y"]),
    "tensorflow.div": ("RealDiv", ["x", "y"]),
    "tensorflow.negative": ("Neg", ["x"]),
    "tensorflow.stop_gradient": ("StopGradient", ["input"]),
    "tensorflow.maximum": ("Maximum", ["x", "y"]),
    "tensorflow.minimum": ("Minimum", ["x", "y"]),
    "tensorflow.where": ("Select", ["condition", "x", "y"]),
    "tensorflow.zeros_like": ("ZerosLike", ["tensor"]),
    "tensorflow.shape": ("Shape", ["input"]),
    "tensorflow.floordiv": ("FloorDiv", ["x", "y"]),
    "tensorflow.math.floordiv": ("FloorDiv", ["x", "y"]),
    "tensorflow.floormod": ("FloorMod", ["x", "y"]),
    "tensorflow.pow": ("Pow", ["x", "y"]),
    "tensorflow.nn.conv2d": ("Conv2D", ["input", "filter"]),
    "tensorflow.nn.bias_add": ("BiasAdd", ["value", "bias"]),
    "tensorflow.nn.softmax": ("Softmax", ["logits"]),
    "tensorflow.identity_n": ("IdentityN", ["input[*]"]),
    "tensorflow.py_func": ("PyFunc", ["inp[*]"]),
    "tensorflow.numpy_function": ("PyFunc", ["inp[*]"]),
    "tensorflow.py_function": ("EagerPyFunc", ["inp[*]"]),
}


def test_import_is_cheap_and_tf_free():
    code = textwrap.dedent(
        """
        import sys
        import migrator.optable as o
        assert "tensorflow" not in sys.modules
        assert "libcst" not in sys.modules
        assert o.table.cache_info().currsize == 0, "loaded at import time"
        assert o.op_types("tensorflow.sign") == ["Sign"]
        assert "tensorflow" not in sys.modules
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_version_and_shape():
    t = optable.table()
    assert optable.tf_version() == t["tensorflow_version"]
    assert t["tensorflow_version"].count(".") == 2
    assert set(t) >= {"functions", "operators", "op_defaults", "op_arity", "tensorflow_version"}
    assert len(t["functions"]) > 400
    assert os.path.getsize(optable._PATH) < 1_000_000


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_single_op_functions(name):
    op_type, inputs = SINGLE[name]
    info = optable.function_info(name)
    assert info is not None, name
    assert [o["type"] for o in info["ops"]] == [op_type]
    assert info["ops"][0]["inputs"] == inputs
    assert info["direct"] is True
    assert info["ops"][0]["num_outputs"] >= 1
    # every op input that maps to a parameter names a real parameter
    for label in inputs:
        assert label.split("[")[0] in info["params"]


def test_spellings_normalise():
    assert optable.op_types("tf.compat.v1.floordiv") == ["FloorDiv"]
    assert optable.op_types("tensorflow.compat.v1.py_func") == ["PyFunc"]
    assert optable.op_types("tf.sign") == ["Sign"]
    assert optable.op_types("tensorflow.no_such_function") is None
    assert optable.function_info("tensorflow.no_such_function") is None


def test_clip_by_value_is_two_ops():
    info = optable.function_info("tensorflow.clip_by_value")
    assert [o["type"] for o in info["ops"]] == ["Minimum", "Maximum"]
    assert info["ops"][0]["inputs"] == ["t", "clip_value_max"]
    assert info["ops"][1]["inputs"] == [None, "clip_value_min"]
    assert info["direct"] is False
    assert info["params"][:3] == ["t", "clip_value_min", "clip_value_max"]


@pytest.mark.parametrize("name,op", [("reduce_mean", "Mean"), ("reduce_sum", "Sum"),
                                     ("reduce_max", "Max"), ("reduce_min", "Min")])
def test_reductions(name, op):
    info = optable.function_info("tensorflow." + name)
    assert optable.op_types("tensorflow." + name) == [op]
    assert info["ops"][0]["inputs"] == ["input_tensor", None]  # axis is a constant
    assert info["single_op"] is True and info["direct"] is False
    # TF1 signature first (keep_dims, reduction_indices), TF2 one under "v2"
    assert "keep_dims" in info["params"]
    assert optable.function_info("tensorflow." + name, api="v2")["params"] == [
        "input_tensor", "axis", "keepdims", "name"]


def test_v1_v2_differences():
    assert optable.op_types("tensorflow.where") == ["Select"]
    assert optable.op_types("tensorflow.where", api="v2") == ["SelectV2"]
    # v1 conv2d has filter (and the filters alias); v2 has filters
    v1 = optable.function_info("tensorflow.nn.conv2d")
    v2 = optable.function_info("tensorflow.nn.conv2d", api="v2")
    assert v1["params"][:2] == ["input", "filter"]
    assert v2["params"][:2] == ["input", "filters"]
    assert v2["ops"][0]["inputs"] == ["input", "filters"]
    # ones_like: TF1 builds Shape+Fill for an unknown shape, TF2 OnesLike
    assert optable.op_types("tensorflow.ones_like") == ["Shape", "Fill"]
    assert optable.op_types("tensorflow.ones_like", api="v2") == ["OnesLike"]


def test_shape_manipulation():
    assert optable.op_types("tensorflow.reshape") == ["Reshape"]
    assert optable.function_info("tensorflow.reshape")["ops"][0]["inputs"] == ["tensor", None]
    assert optable.op_types("tensorflow.transpose") == ["Transpose"]
    assert optable.op_types("tensorflow.concat") == ["ConcatV2"]
    assert optable.function_info("tensorflow.concat")["ops"][0]["inputs"] == ["values[*]", None]
    split = optable.function_info("tensorflow.split")["ops"][0]
    assert split["type"] == "Split" and split["inputs"] == [None, "value"]
    assert split["num_outputs"] == 2
    # tf.shape folds to a constant for a fully known shape
    assert optable.function_info("tensorflow.shape")["static_shape_ops"] == []
    assert optable.function_info("tensorflow.zeros_like")["static_shape_ops"] == []


def test_py_func_family():
    for name in ("tensorflow.py_func", "tensorflow.numpy_function"):
        info = optable.function_info(name)
        assert info["params"][:4] == ["func", "inp", "Tout", "stateful"]
        assert [o["type"] for o in info["arg_variants"]["stateful=False"]] == ["PyFuncStateless"]
        assert optable.possible_op_types(name) == ["PyFunc", "PyFuncStateless"]
    assert optable.function_info("tensorflow.py_function")["params"][:3] == ["func", "inp", "Tout"]
    assert "tensorflow.py_func" in optable.functions_creating("PyFunc")
    assert "tensorflow.py_function" in optable.functions_creating("EagerPyFunc")


def test_random_uniform():
    for name in ("tensorflow.random_uniform", "tensorflow.random.uniform"):
        info = optable.function_info(name)
        assert optable.op_types(name) == ["RandomUniform"]  # default minval=0, maxval=1
        assert info["params"][:3] == ["shape", "minval", "maxval"]
        ranged = info["arg_variants"]["minval=-1.0,maxval=1.0"]
        assert [o["type"] for o in ranged] == ["RandomUniform", "Sub", "Mul", "AddV2"]


def test_zero_op_functions():
    assert optable.makes_no_ops("tensorflow.zeros")
    assert optable.makes_no_ops("tf.no_op")
    assert not optable.makes_no_ops("tensorflow.sign")


OPERATORS = {
    "Multiply": ("Mul", ["left", "right"]),
    "Add": ("AddV2", ["left", "right"]),
    "Subtract": ("Sub", ["left", "right"]),
    "Divide": ("RealDiv", ["left", "right"]),
    "FloorDivide": ("FloorDiv", ["left", "right"]),
    "Modulo": ("FloorMod", ["left", "right"]),
    "Power": ("Pow", ["left", "right"]),
    "MatrixMultiply": ("MatMul", ["left", "right"]),
    "Minus": ("Neg", ["operand"]),
    "abs": ("Abs", ["operand"]),
    "GreaterThan": ("Greater", ["left", "right"]),
    "GreaterThanEqual": ("GreaterEqual", ["left", "right"]),
    "LessThan": ("Less", ["left", "right"]),
    "LessThanEqual": ("LessEqual", ["left", "right"]),
    "Subscript": ("StridedSlice", ["value", None, None, None]),
    "MultiplyAssign": ("Mul", ["left", "right"]),
}


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_operators(name):
    op, inputs = OPERATORS[name]
    info = optable.operator_info(name)
    assert info["type"] == op
    assert info["inputs"] == inputs


def test_bitwise_and_equality_operators():
    assert optable.operator_info("BitAnd")["by_dtype"] == {"bool": ["LogicalAnd"], "int32": ["BitwiseAnd"]}
    assert optable.operator_info("BitOr")["by_dtype"]["bool"] == ["LogicalOr"]
    assert optable.operator_info("BitInvert")["by_dtype"]["bool"] == ["LogicalNot"]
    # TF1 graph semantics: == on tensors is Python identity, no op
    eq = optable.operator_info("Equal")
    assert eq["type"] is None and eq["python"] == "bool"
    assert eq["v2_type"] == "Equal"  # elementwise in TF2 eager / tf.function
    assert optable.operator_info("NoSuchOperator") is None


def test_op_defaults_and_arity():
    assert optable.op_default("LeakyRelu", "alpha") == pytest.approx(0.2)
    assert optable.op_default("LeakyRelu", "alpha") == 0.2  # float32 shortest repr
    assert optable.op_default("Conv2D", "data_format") == "NHWC"
    assert optable.op_default("MatMul", "transpose_a") is False
    assert optable.op_default("Sign", "alpha", None) is None
    with pytest.raises(KeyError):
        optable.op_default("Sign", "alpha")
    assert optable.arity("Sign") == (1, 1)
    assert optable.arity("Maximum") == (2, 1)
    assert optable.arity("Minimum") == (2, 1)
    assert optable.arity("Split") == (2, -1)
    assert optable.arity("IdentityN") == (-1, -1)
    assert optable.arity("PyFunc") == (-1, -1)
    assert optable.arity("NoSuchOp") is None
    # every recorded op type has an arity
    t = optable.table()
    for entry in t["functions"].values():
        for op in entry["ops"]:
            assert op["type"] in t["op_arity"]


def test_table_is_sorted_and_deterministic_text():
    with open(optable._PATH, encoding="utf-8") as f:
        text = f.read()
    data = json.loads(text)
    assert json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True) + "\n" == text


# ------------------------------------------------------------ stale check

RETRACE = [
    "tensorflow.sign", "tensorflow.nn.relu", "tensorflow.clip_by_value",
    "tensorflow.reduce_mean", "tensorflow.py_func", "tensorflow.concat",
    "tensorflow.where", "tensorflow.nn.leaky_relu", "tensorflow.random_uniform",
    "tensorflow.identity_n", "tensorflow.nn.conv2d", "tensorflow.shape",
]


@pytest.mark.slow  # traces every op with TensorFlow
@pytest.mark.skipif(not HAVE_TF, reason="needs TensorFlow")
def test_shipped_table_matches_fresh_trace():
    """Re-trace with tools/gen_op_table.py's own code; must equal the shipped data
    (regenerate with `python tools/gen_op_table.py` after a TF upgrade)."""
    code = textwrap.dedent(
        f"""
        import json, sys
        sys.path.insert(0, "tools")
        import gen_op_table as g
        table = g.build_table({RETRACE!r})
        print("@@" + json.dumps(table, sort_keys=True))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    fresh = json.loads(out.stdout.split("@@", 1)[1])
    shipped = optable.table()
    if fresh["tensorflow_version"] != shipped["tensorflow_version"]:
        pytest.skip(f"table made with TF {shipped['tensorflow_version']}, installed {fresh['tensorflow_version']}")
    for name in RETRACE:
        assert fresh["functions"][name] == shipped["functions"][name], name
    assert fresh["operators"] == shipped["operators"]
    for op_type, a in fresh["op_arity"].items():
        assert shipped["op_arity"][op_type] == a
        assert shipped["op_defaults"].get(op_type) == fresh["op_defaults"].get(op_type)


def test_argument_variants():
    # casting to the input's own dtype makes no op: {"Cast": ...} would match nothing
    assert optable.function_info("tensorflow.cast")["arg_variants"]["dtype=input dtype"] == []
    where1 = optable.function_info("tensorflow.where")["arg_variants"]["x=None,y=None"]
    assert [o["type"] for o in where1] == ["Where"]
    assert optable.possible_op_types("tensorflow.where") == ["Select", "SelectV2", "Where"]
    clip = optable.function_info("tensorflow.clip_by_value")["arg_variants"]
    assert [o["inputs"] for o in clip["clip_value_min=-1.0,clip_value_max=1.0"]] == [["t", None], [None, None]]


# -- variants (op_variants.json) and TF1/TF2 names (tf_api.json) ---------------------------


def test_variants_record_what_changes_the_op():
    assert optable.function_variants("tensorflow.matmul")["rank"] == {
        "3": ["BatchMatMulV2"], "4": ["BatchMatMulV2"], "unknown": ["BatchMatMulV2"]}
    assert optable.function_variants("tensorflow.concat")["list_len"] == {"1": ["Identity"]}
    assert optable.function_variants("tensorflow.sign")["dtype"]["complex64"] == ["ComplexAbs", "Cast", "DivNoNan"]
    assert optable.function_variants("tensorflow.round")["dtype"]["int32"] == []
    assert "dtype:complex64" in optable.function_variants("tensorflow.nn.relu")["failed"]
    assert optable.function_variants("tensorflow.identity") == {}  # the same op whatever it gets
    assert optable.operator_variants("MatrixMultiply")["rank"]["3"] == ["BatchMatMulV2"]
    assert optable.operator_variants("Multiply")["ops"] == ["Mul"]
    assert optable.param_defaults("tensorflow.nn.leaky_relu")["alpha"] == 0.2
    assert optable.op_attrs("LeakyRelu") == {"attrs": ["T", "alpha"], "input_type_attrs": ["T"]}


def test_tf2_status_of_tf1_names():
    assert optable.tf2_status("tensorflow.sign") == ("same", None)
    assert optable.tf2_status("tensorflow.compat.v1.floordiv") == ("renamed", "tensorflow.math.floordiv")
    assert optable.tf2_status("tensorflow.py_func") == ("v1_only", None)
    assert optable.tf2_status("tensorflow.where") == ("differs", None)


@pytest.mark.slow  # traces every op with TensorFlow
@pytest.mark.skipif(not HAVE_TF, reason="needs TensorFlow")
def test_shipped_variants_match_a_fresh_trace():
    code = textwrap.dedent("""
        import json, sys
        sys.path.insert(0, "tools")
        import gen_op_variants
        data = gen_op_variants.build(["tensorflow.matmul", "tensorflow.concat", "tensorflow.cast"])
        shipped = json.load(open("migrator/data/op_variants.json"))
        for name, entry in data["functions"].items():
            assert shipped["functions"][name] == entry, name
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("ok")
