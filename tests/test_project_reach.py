"""What may write a module's names where no statement shows it (``project_reach``), and what
may bind them other than by a statement (``project_tf.dynamic_bindings``): keys of a mapping
deleted or compared are neither (a held-out corpus: scipy's ``loadmat`` dicts hold a
``'__globals__'`` key, and ``del mat['__globals__']`` made 17 sites a false TFG128)."""
from __future__ import annotations

import ast

import pytest

from migrator.project_reach import namespace_reach
from migrator.project_tf import dynamic_bindings


@pytest.mark.parametrize("src", [
    "mat = load()\ndel mat['__globals__']\n",
    "mat = load()\nkeys = [k for k in mat if k not in ('__header__', '__version__', '__globals__')]\n",
    "if name == '__dict__':\n    pass\n",
])
def test_mapping_keys_deleted_or_compared_reach_nothing(src):
    assert namespace_reach(ast.parse(src)) is None
    assert not dynamic_bindings(ast.parse(src), stars=False)


@pytest.mark.parametrize("src", [
    "getattr(f, '__globals__')['tf'] = g\n",
    "d = dict(members(f))\nd['__globals__']['tf'] = g\n",
    "attr = '__dict__'\n",
])
def test_the_same_strings_used_otherwise_still_reach(src):
    assert namespace_reach(ast.parse(src)) is not None


@pytest.mark.parametrize("src, dynamic", [
    ("del tf\n", True),
    ("del ops.tf\n", True),
    ("del mat['tf']\n", False),
    ("del globals()['tf']\n", True),
])
def test_only_deleting_a_name_or_an_attribute_unbinds_one(src, dynamic):
    assert dynamic_bindings(ast.parse(src), stars=False) is dynamic


@pytest.mark.parametrize("src", [
    "if getattr(ops, '__dict__').update(grad=f) is None:\n    pass\n",  # a write inside a test
    "del getattr(m, '__dict__')['tf']\n",
    "x = d[getattr(m, '__dict__')] == 1\n",
])
def test_a_reaching_string_nested_in_a_test_or_a_deletion_still_reaches(src):
    """Only a compared operand or a deleted key is inert (an adversarial run hid
    `getattr(ops, "__dict__").update(grad=f)` inside an `if ... is None`)."""
    assert namespace_reach(ast.parse(src)) is not None


def test_deleting_a_key_of_something_other_than_a_name_may_unbind():
    assert dynamic_bindings(ast.parse("del getattr(m, 'x')['tf']\n"), stars=False)
