"""migrator._cstwalk: the read-only traversal makes libcst's own callbacks, in libcst's order.

Every check runs the same visitor over the same tree twice, once through
libcst's own ``CSTNode.visit`` and once through the installed fast path, and
compares what the visitor saw (node identities, attribute names, and the
children of every node).  The metadata the plugins read (qualified names,
parents, positions, expression contexts) must come out the same too.
"""
from __future__ import annotations

import glob
import importlib.util
import os

import libcst as cst
import pytest
from libcst.metadata import (
    ExpressionContextProvider, MetadataWrapper, ParentNodeProvider, PositionProvider, QualifiedNameProvider,
)

from migrator import _cstwalk

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _corpus(full: bool) -> list[str]:
    files = sorted(glob.glob(os.path.join(ROOT, "fixtures", "*", "before.py")))
    files += [os.path.join(ROOT, "migrator", "_plugins", "gradients.py"), os.path.join(ROOT, "migrator", "_cstwalk.py")]
    if full:
        files += sorted(glob.glob(os.path.join(ROOT, "fixtures", "*", "after.py")))
        # not the migrator's own modules: the TF files below and SAMPLE hold every node kind they hold
        spec = importlib.util.find_spec("tensorflow")
        if spec is not None and spec.submodule_search_locations:  # large real files, every node kind
            ops = os.path.join(list(spec.submodule_search_locations)[0], "python", "ops")
            files += [os.path.join(ops, n) for n in ("math_grad.py", "control_flow_ops.py", "custom_gradient.py",
                                                     "array_ops.py", "nn_ops.py")]
    return [f for f in files if os.path.exists(f)]


SAMPLE = """
import tensorflow as tf
from tensorflow.python.ops import gradients_impl as gi, array_ops
from . import sibling
from .pkg import *

@tf.RegisterGradient("G")
def _g(op, grad, *rest, k=1, **kw):
    return [grad * 2 for _ in range(3) if _], {k: v for k, v in kw.items()}

class C(Base, metaclass=M):
    x: int = 1
    async def f(self, /, a, *, b=lambda q: q + 1):
        async with ctx() as (u, v):
            await g(f"{a!r:>{b}} {u=}", *a, **b)
        try:
            pass
        except (E1, E2) as e:
            raise
        finally:
            del a[1:2, ::3], b.c
        global G
        return (yield from h()) if a else not b
with tf.get_default_graph().gradient_override_map({"Sign": "G"}):
    y = tf.sign(x) @ w; y @= 2; z = -x ** 2 // 3 % 4 << 1 >> 2 & 3 | 4 ^ ~5 if 0 else 1
g = tf.gradients(y, [x], grad_ys=None)[0]; assert g is not None, "msg"
while x < 1 <= y != z in w not in v is u is not t:
    x += 1; break
else:
    continue
match p:
    case [1, *rest] | {"k": v, **kw} | Point(x=0) as q if q:
        pass
print(*[1], sep="", **{})
def outer(n=0):
    def inner():
        nonlocal n
        n -= 1; n |= 2; n ^= 3
    return {**kw, 1: ...}, inner
"""


class _Everything(cst.CSTVisitor):
    """Records every callback, attribute hooks included (so they are all made)."""

    def __init__(self) -> None:
        self.seen: list = []

    def on_visit(self, node):
        self.seen.append(("visit", id(node), [id(c) for c in node.children]))
        return not isinstance(node, cst.Lambda)  # a pruned subtree must stay pruned

    def on_leave(self, node):
        self.seen.append(("leave", id(node)))

    def on_visit_attribute(self, node, attribute):
        self.seen.append(("visit_attribute", id(node), attribute))

    def on_leave_attribute(self, node, attribute):
        self.seen.append(("leave_attribute", id(node), attribute))


class _Typed(cst.CSTVisitor):
    """The ordinary style: visit_<Node> / leave_<Node> / one attribute hook."""

    def __init__(self) -> None:
        self.seen: list = []

    def visit_Call(self, node):
        self.seen.append(("call", id(node)))

    def leave_Name(self, node):
        self.seen.append(("name", node.value))

    def visit_FunctionDef(self, node):
        self.seen.append(("def", node.name.value))
        node.params.visit(self)  # nested visits, as libcst's scope visitor makes them
        return False

    def visit_Attribute_attr(self, node):
        self.seen.append(("attr", node.attr.value))


class _NoHooks(cst.CSTVisitor):
    def __init__(self) -> None:
        self.seen: list = []

    def visit_Name(self, node):
        self.seen.append(node.value)


def _both(module: cst.Module, make) -> tuple:
    out = []
    for fast in (False, True):
        (_cstwalk.install if fast else _cstwalk.uninstall)()
        try:
            v = make()
            assert module.visit(v) is module
            out.append(v.seen)
        finally:
            _cstwalk.install()
    return tuple(out)


@pytest.fixture(autouse=True)
def _restore():
    was = _cstwalk.installed()
    yield
    (_cstwalk.install if was else _cstwalk.uninstall)()


def _modules(full: bool = False):
    yield "sample", cst.parse_module(SAMPLE)
    for path in _corpus(full):
        with open(path, encoding="utf-8") as fh:
            yield os.path.relpath(path, ROOT), cst.parse_module(fh.read())


def test_the_corpus_is_real():
    assert len(_corpus(False)) >= 40


@pytest.mark.parametrize("visitor", [_Everything, _Typed, _NoHooks])
def test_same_callbacks_in_the_same_order_as_libcst(visitor):
    for name, module in _modules():
        slow, fast = _both(module, visitor)
        assert slow, name
        assert slow == fast, name


@pytest.mark.slow
def test_same_callbacks_on_large_real_files():
    for name, module in _modules(full=True):
        for visitor in (_Everything, _Typed):
            slow, fast = _both(module, visitor)
            assert slow == fast, name


def test_only_attribute_hooks_that_exist_are_skipped():
    assert _cstwalk._has_attribute_hooks(_Typed())  # visit_Attribute_attr
    assert _cstwalk._has_attribute_hooks(_Everything())  # overrides on_visit_attribute
    assert not _cstwalk._has_attribute_hooks(_NoHooks())  # libcst's empty stubs only
    from libcst.metadata.scope_provider import ScopeVisitor

    assert _cstwalk._has_attribute_hooks(ScopeVisitor.__new__(ScopeVisitor))  # visit_ClassDef_bases


def _metadata(module: cst.Module) -> dict:
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    out = {}
    for provider in (QualifiedNameProvider, ParentNodeProvider, PositionProvider, ExpressionContextProvider):
        resolved = wrapper.resolve(provider)
        table = {}
        for node, value in resolved.items():
            value = value() if callable(value) else value
            if provider is QualifiedNameProvider:
                value = sorted((q.name, str(q.source)) for q in value)
            elif provider is ParentNodeProvider:
                value = id(value)
            elif provider is PositionProvider:
                value = (value.start.line, value.start.column, value.end.line, value.end.column)
            table[id(node)] = value
        out[provider.__name__] = table
    return out


@pytest.mark.slow  # every provider over the real corpus, twice (about 10 s)
def test_metadata_is_the_same():
    for name, module in _modules():
        _cstwalk.uninstall()
        slow = _metadata(module)
        _cstwalk.install()
        fast = _metadata(module)
        for provider in slow:
            assert slow[provider] == fast[provider], (name, provider)


def test_transformers_still_rebuild():
    class Rename(cst.CSTTransformer):
        def leave_Name(self, original, updated):
            return updated.with_changes(value="y") if original.value == "x" else updated

    _cstwalk.install()
    module = cst.parse_module("x = x + 1\n")
    assert module.visit(Rename()).code == "y = y + 1\n"
    assert module.code == "x = x + 1\n"


def test_every_node_class_of_libcst_has_a_plan_or_keeps_libcsts_path():
    from libcst._nodes.base import CSTNode

    classes, todo = set(), [CSTNode]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in classes:
                classes.add(sub)
                todo.append(sub)
    planned = {c for c in classes if _cstwalk._plan_for(c) is not None}
    assert len(planned) >= 0.9 * len({c for c in classes if "_visit_and_replace_children" not in
                                      getattr(c, "__abstractmethods__", ())})
    for name in ("Call", "Name", "Attribute", "FunctionDef", "Module", "Comma", "SimpleWhitespace"):
        assert _cstwalk._plan_for(getattr(cst, name)) is not None, name


def test_migrate_text_leaves_libcst_as_it_found_it():
    """The fast path is scoped to a file's analysis: a library user's own visitors afterwards
    get libcst's traversal back."""
    from migrator.pipeline import migrate_text

    _cstwalk.uninstall()
    src = "import tensorflow as tf\nx = tf.constant(1.0)\ny = x * x\ng = tf.gradients(y, x)\n"
    out, sites = migrate_text(src, "t.py")
    assert sites and "GradientTape" in out
    assert not _cstwalk.installed()


def test_lazy_qualified_names_are_libcsts():
    """The plugins' LazyQualifiedNameProvider (names asked of each node's scope on first
    use) gives every node the names libcst's QualifiedNameProvider gives it, plus, for a
    module-level name bound only to TF, the TF names it stands for."""
    from migrator.tfnames import MIXED, LazyQualifiedNameProvider, normalize

    files = _corpus(full=False)
    for path in files[::4] + files[-2:]:  # a quarter of the fixtures, and two modules of our own
        with open(path, encoding="utf-8") as fh:
            module = cst.parse_module(fh.read())
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        lazy = wrapper.resolve(LazyQualifiedNameProvider)
        checked = 0
        for node, value in wrapper.resolve(QualifiedNameProvider).items():
            value = value() if callable(value) else value
            got = set(lazy.get(node, set()))
            assert set(value) <= got, (path, type(node).__name__)
            # and only TF names a module-level alias stands for (`tf1 = tf.compat.v1`), or the mark of
            # a name bound to something else too (a walrus anywhere binds it for the module)
            assert all(normalize(q.name) or q == MIXED for q in got - set(value)), (path, got - set(value))
            checked += bool(value)
        assert checked or "gradient" not in module.code, path


def test_lazy_qualified_names_follow_module_level_tf_aliases():
    from migrator.tfnames import LazyQualifiedNameProvider

    src = ("import tensorflow as tf\nimport other\ntf1 = tf.compat.v1\nbad = tf.nn\nbad = other\n\n"
           "def f(x):\n    tf1 = other\n    return tf1.gradients(x, x)\n\n\ny = tf1.gradients\nz = bad.relu\n")
    module = cst.parse_module(src)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    lazy = wrapper.resolve(LazyQualifiedNameProvider)
    stmt_y = module.body[-2].body[0].value  # y = tf1.gradients
    assert "tensorflow.compat.v1.gradients" in {q.name for q in lazy.get(stmt_y, set())}
    stmt_z = module.body[-1].body[0].value  # bound to tf.nn and to another module: no alias
    assert not any(q.name.startswith("tensorflow") for q in lazy.get(stmt_z, set()))
    inner = module.body[5].body.body[1].body[0].value.func  # the function's own tf1
    assert not any(q.name.startswith("tensorflow") for q in lazy.get(inner, set()))
