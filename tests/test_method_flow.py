"""Proofs about methods from the project's value flow (migrator/object_flow.py,
migrator/_plugins/_grad_methods.py): a tape in a method whose sources are parameters is
right when no call of the method passes one source computed from another, and nothing the
taped calls read from ``self`` or module globals holds a value computed from the sources.

Each variant below changes one thing in a PINN-style class that migrates, and must be
refused (left byte-identical, reported manual)."""
from __future__ import annotations

import ast

import pytest

from migrator import runner
from migrator.model import MANUAL, MIGRATED
from migrator.object_flow import ObjectFlow
from migrator.pipeline import Options
from project_files import write

PINN = """\
import tensorflow as tf


class PINN:
    def __init__(self, x, t, layers):
        self.weights, self.biases = self.initialize_NN(layers)
        self.x_tf = tf.constant(x)
        self.t_tf = tf.constant(t)
        self.u_pred = self.net_u(self.x_tf, self.t_tf)
        self.f_pred = self.net_f(self.x_tf, self.t_tf)
        #INIT

    def initialize_NN(self, layers):
        weights, biases = [], []
        for l in range(len(layers) - 1):
            weights.append(tf.Variable(tf.ones([layers[l], layers[l + 1]])))
            biases.append(tf.Variable(tf.zeros([1, layers[l + 1]])))
        return weights, biases

    def neural_net(self, X, weights, biases):
        H = X
        for l in range(len(weights) - 1):
            H = tf.tanh(tf.matmul(H, weights[l]) + biases[l])
        return tf.matmul(H, weights[-1]) + biases[-1]

    def net_u(self, x, t):
        return self.neural_net(tf.concat([x, t], 1), self.weights, self.biases)  #NET_U

    def net_f(self, x, t):
        u = self.net_u(x, t)
        u_t = tf.gradients(u, t)[0]
        u_x = tf.gradients(u, x)[0]
        return u_t + u * u_x
#MODULE
"""


def run(tmp_path, init="", net_u=None, module="", other=None):
    (tmp_path / "pyproject.toml").write_text("")
    src = PINN.replace("#INIT", init)
    if net_u is not None:
        src = src.replace("return self.neural_net(tf.concat([x, t], 1), self.weights, self.biases)  #NET_U", net_u)
    path = write(tmp_path, "pinn.py", src.replace("#MODULE", module))
    if other is not None:
        write(tmp_path, "other.py", other)
    opts = runner.RunOptions(jobs=1, mode=runner.CHECK, options=Options())
    (result,) = runner.run([path], opts).results
    return result.sites


def test_the_plain_class_migrates_with_the_flow_as_its_proof(tmp_path):
    sites = run(tmp_path)
    assert [s.status for s in sites] == [MIGRATED, MIGRATED]
    proof = " ".join(sites[0].proof)
    assert "every call of `.net_f(...)` in the project" in proof
    assert "`net_u` (a method of this class, overridden in no subclass in the project)" in proof


REFUSED = {
    "a cached tensor read back": dict(
        init="self.scale = self.x_tf * self.t_tf",
        net_u="return self.neural_net(tf.concat([x, t], 1), self.weights, self.biases) * self.scale"),
    "a weight list filled with a tensor of a source": dict(init="self.weights.append(self.x_tf * self.t_tf)"),
    "the same list through an alias": dict(init="ws = self.weights\n        ws[0] = tf.matmul(self.x_tf * self.t_tf, ws[0][:1])"),
    "a source added with +=": dict(init="self.biases += [self.t_tf * self.x_tf]"),
    "a helper that may store one argument in another": dict(init="stash(self.weights, self.x_tf * self.t_tf)",
                                                            module="\n\ndef stash(a, b):\n    a.append(b)\n"),
    "an unknown helper": dict(init="import helpers\n        helpers.stash(self.weights, self.x_tf * self.t_tf)"),
    "the method used as a value": dict(init="self.fn = self.net_f"),
    "the method named in a string": dict(init="self.fn = getattr(self, 'net_f')"),
    "an attribute set by a computed name": dict(init="setattr(self, 'w' + 'eights', [self.x_tf * self.t_tf])"),
    "a subclass overriding the taped call": dict(
        module="\n\nclass Cached(PINN):\n    def net_u(self, x, t):\n        return self.u_pred\n"),
    "a module global computed from a source": dict(
        module="\n\nmodel = PINN([[1.0]], [[2.0]], [2, 1])\nSHIFT = model.x_tf * model.t_tf\n",
        net_u="return self.neural_net(tf.concat([x, t], 1), self.weights, self.biases) + SHIFT"),
    "a property returning a cached tensor": dict(
        init="self._c = self.t_tf * self.x_tf",
        module="\n\n    @property\n    def c(self):\n        return self._c\n",
        net_u="return self.neural_net(tf.concat([x, t], 1), self.weights, self.biases) * self.c"),
    "a tensor kept in a graph collection": dict(
        init="tf.add_to_collection('c', self.x_tf * self.t_tf)",
        net_u="return self.neural_net(tf.concat([x, t], 1), self.weights, self.biases) * tf.get_collection('c')[0]"),
    "getattr itself passed around": dict(
        init="fetch = getattr\n        self.g = self.net_f(fetch(self, 't_tf') * 2.0, self.t_tf)"),
    "a cached tensor read by getattr with its name": dict(
        init="self.cache = self.x_tf * self.t_tf",
        net_u="return self.neural_net(tf.concat([x, t], 1), self.weights, self.biases) + getattr(self, 'cache')"),
    "a project object's method on a local": dict(
        init="self.box = Box()\n        self.box.v = self.x_tf * self.t_tf",
        net_u="b = self.box\n        return self.neural_net(tf.concat([x, t], 1), self.weights, self.biases) + b.get()",
        module="\n\nclass Box:\n    def get(self):\n        return self.v\n"),
    "a protocol method": dict(
        init="self.box = Box(self.x_tf * self.t_tf)",
        net_u="return self.neural_net(tf.concat([x, t], 1), self.weights, self.biases) + self.box[0]",
        module="\n\nclass Box:\n    def __init__(self, v):\n        self.v = v\n\n"
               "    def __getitem__(self, i):\n        return self.v\n"),
    "a method replaced by an assignment to the class": dict(
        init="self.cache = self.x_tf * self.t_tf",
        module="\n\nPINN.net_u = lambda s, x, t: s.cache\n"),
    "a method replaced by a lambda in a subclass": dict(
        init="self.cache = self.x_tf * self.t_tf",
        module="\n\nclass Sub(PINN):\n    net_u = lambda s, x, t: s.cache\n"),
    "an unbound call through the class": dict(module="\n\nPINN.net_f(object(), [[1.0]], [[1.0]])\n"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_path_the_flow_cannot_rule_out_is_refused(tmp_path, name):
    sites = run(tmp_path, **REFUSED[name])
    assert sites and all(s.status == MANUAL for s in sites), [(s.status, s.reason) for s in sites]
    assert open(tmp_path / "pinn.py").read().count("tf.gradients(") == 2


def test_a_caller_passing_one_source_computed_from_the_other_refuses_the_gradients(tmp_path):
    # `t` is computed from `x`: d/dx misses the path through `t`.  d/dt would still be right,
    # but the flow cannot tell `x * 2.0` from `tf.convert_to_tensor(x)`, which *is* `x`
    u_t, u_x = run(tmp_path, init="self.g = self.net_f(self.x_tf, self.x_tf * 2.0)")
    assert (u_t.status, u_x.status) == (MANUAL, MANUAL)
    assert "parameter `t` does not depend on `x`" in u_x.reason


def test_a_source_passed_through_a_call_that_returns_it_is_that_source(tmp_path):
    # `tf.convert_to_tensor(t)` is `t`: `x = t * 2` does depend on the source of d/dt
    sites = run(tmp_path, init="self.h = self.net_f(self.t_tf * 2.0, tf.convert_to_tensor(self.t_tf))")
    assert sites[0].status == MANUAL


def test_a_caller_in_another_file_is_a_caller(tmp_path):
    other = "import tensorflow as tf\nfrom pinn import PINN\n\nm = PINN([[1.0]], [[2.0]], [2, 1])\n" \
            "f = m.net_f(m.x_tf, m.x_tf + 1.0)\n"
    assert [s.status for s in run(tmp_path, other=other)] == [MANUAL, MANUAL]
    harmless = "import tensorflow as tf\nfrom pinn import PINN\n\nm = PINN([[1.0]], [[2.0]], [2, 1])\n" \
               "f = m.net_f(tf.constant([[0.5]]), tf.constant([[0.25]]))\n"
    assert all(s.status == MIGRATED for s in run(tmp_path, other=harmless))


def _flow(src: str) -> tuple[ObjectFlow, ast.Module]:
    tree = ast.parse(src)
    flow = ObjectFlow()
    flow.add_file("m.py", tree)
    flow.add_edges("m.py", tree)
    flow.finish()
    return flow, tree


def test_flow_keeps_siblings_apart_and_follows_aliases():
    flow, _ = _flow("import tensorflow as tf\na = make()\nb = make()\nfeed = {a: x, b: y}\nsess = tf.Session()\nr = sess.run(z, feed)\n"
                    "both = tf.concat([a, b], 1)\n")
    assert flow.clean([("global", "b")], [("global", "a")])  # keys, items only read: never one object
    assert flow.clean([("global", "y")], [("global", "x")])
    assert not flow.clean([("global", "both")], [("global", "a")])
    flow, _ = _flow("a = make()\nb = make()\nc = [a]\nd = c\nd.append(b)\n")
    assert not flow.clean([("global", "c")], [("global", "b")])  # `d` is `c`: filling one fills the other
    assert not flow.clean([("global", "a")], [("global", "b")])  # ... and `a` is in that list: `d[0]` may be `b`
    flow, _ = _flow("ws = [w0]\nw = ws[0]\nw.append(src)\nout = ws\n")
    assert not flow.clean([("global", "w0")], [("global", "src")])  # filled through an item taken out


@pytest.mark.parametrize("src", ["exec('x = 1')\n", "vars(obj)['w'] = v\n", "obj.__dict__['w'] = v\n",
                                 "getattr(obj, name).append(v)\n", "setattr(obj, 'w', 1)\n",
                                 "globals()['w'] = v\n", "d = vars(obj)\nd['w'] = v\n",
                                 "d = {}\nd['w'] = v\nd = locals()\n"])
def test_writes_by_computed_names_make_the_flow_unusable(src):
    assert _flow(src)[0].dynamic


@pytest.mark.parametrize("src", ["print(vars(args))\n", "hasattr(obj, 'w')\n", "f = getattr(ax, 'set_' + d)\n",
                                 "cfg = locals().copy()\n", "getattr(tf.nn, kind)(x)\n"])
def test_reads_by_computed_names_keep_the_flow(src):
    flow, _ = _flow("import tensorflow as tf\n" + src)
    assert not flow.dynamic


def test_a_caller_passing_a_python_number_is_refused_not_watched(tmp_path):
    # TF1 differentiated a new constant made from 0.5 (None); `tape.watch(0.5)` raises
    sites = run(tmp_path, init="self.g = self.net_f(self.x_tf, 0.5)")
    assert sites[0].status == MANUAL and sites[0].code == "TFG126"


def test_a_flow_path_between_sources_is_named_in_the_reason(tmp_path):
    _u_t, u_x = run(tmp_path, init="self.g = self.net_f(self.x_tf, self.x_tf * 2.0)")
    assert "the project's calls of `.net_f(...)` (pinn.py:10, pinn.py:11) may pass it a value computed from a " \
           "source" in u_x.reason


def test_a_session_hands_back_values_no_gradient_runs_through():
    # `u = sess.run(...)` is NumPy: plotting it beside the training data taints nothing
    src = ("import tensorflow as tf\nimport matplotlib.pyplot as plt\nsess = tf.Session()\n"
           "u = sess.run(model.u_pred, {model.x_tf: X})\nfig, ax = plt.subplots()\nax.plot(X, u)\n")
    flow, _ = _flow(src)
    assert flow.clean([("global", "X")], [("attr", "u_pred")])
    unknown = src.replace("sess = tf.Session()\n", "")  # a `run` of an object of unknown type may return anything
    flow, _ = _flow(unknown)
    assert not flow.clean([("global", "u")], [("attr", "u_pred")])


def test_same_named_classes_in_other_scripts_do_not_override(tmp_path):
    other = PINN.replace("#INIT", "").replace("#MODULE", "").replace(
        "return self.neural_net(tf.concat([x, t], 1), self.weights, self.biases)  #NET_U", "return self.u_pred")
    sites = run(tmp_path, other=other)  # another script's class PINN, not a subclass of this one
    assert [s.status for s in sites] == [MIGRATED, MIGRATED]
    sub = "from pinn import PINN\n\n\nclass Cached(PINN):\n    def net_u(self, x, t):\n        return self.u_pred\n"
    assert all(s.status == MANUAL for s in run(tmp_path, other=sub))


def test_a_subclass_through_an_import_alias_may_override(tmp_path):
    sub = "from pinn import PINN as Base\n\n\nclass Cached(Base):\n    def net_u(self, x, t):\n        return self.u_pred\n"
    assert all(s.status == MANUAL for s in run(tmp_path, other=sub))


def test_a_method_called_by_a_computed_name_may_get_its_arguments(tmp_path):
    # `getattr(self, "net_" + kind)(x, x * 2)` may be `net_f`: its parameters are not independent
    sites = run(tmp_path, init="kind = 'f'\n        self.g = getattr(self, 'net_' + kind)(self.x_tf, self.x_tf * 2.0)")
    assert sites[1].status == MANUAL
    # a library object's attribute by computed name calls no project method
    sites = run(tmp_path, module="\n\ndef limits(ax, dim, lims):\n    getattr(ax, 'set_' + dim + 'lim')(lims)\n")
    assert [s.status for s in sites] == [MIGRATED, MIGRATED]


def test_a_conditional_def_in_the_class_body_is_a_replacement(tmp_path):
    src = PINN.replace("#INIT", "self.cache = self.x_tf * self.t_tf").replace("#MODULE", "").replace(
        "    def net_f(self, x, t):", "    if True:\n        def net_u(self, x, t):\n            return self.cache\n\n"
        "    def net_f(self, x, t):")
    (tmp_path / "pyproject.toml").write_text("")
    path = write(tmp_path, "pinn.py", src)
    (result,) = runner.run([path], runner.RunOptions(jobs=1, mode=runner.CHECK, options=Options())).results
    assert all(s.status == MANUAL for s in result.sites)


@pytest.mark.parametrize("spelling", ["from cfg import T as TT\nX = TT * 2.0\n",
                                      "def make_x():\n    from cfg import T\n    return T * 2.0\n\n\nX = make_x()\n"])
def test_an_import_alias_is_the_same_global(tmp_path, spelling):
    write(tmp_path, "cfg.py", "import tensorflow as tf\nT = tf.constant([[1.0]])\n")
    write(tmp_path, "helper.py", "import tensorflow as tf\n" + spelling)
    main = "from cfg import T\nfrom helper import X\n\nm = PINN([[1.0]], [[2.0]], [2, 1])\nf = m.net_f(X, T)\n"
    sites = run(tmp_path, module="\n\n" + main)
    assert sites[0].status == MANUAL  # d/dt misses the path through `x = 2 t`


X_FROM_T = {
    "a tensor found by name": dict(
        init="self.x2 = tf.get_default_graph().get_tensor_by_name(self.t_tf.name) * 2.0\n"
             "        self.g = self.net_f(self.x2, self.t_tf)"),
    "a variable found in the variable list": dict(
        init="self.x2 = tf.trainable_variables()[-1] * 2.0\n        self.g = self.net_f(self.x2, self.weights[-1])"),
}


@pytest.mark.parametrize("name", sorted(X_FROM_T))
def test_x_made_from_t_by_a_lookup_refuses_d_dt(tmp_path, name):
    u_t, _u_x = run(tmp_path, **X_FROM_T[name])
    assert u_t.status == MANUAL  # d/dt misses the path through `x`; d/dx is right either way


def test_getattr_in_the_tape_reads_that_attribute(tmp_path):
    src = PINN.replace("#INIT", "self.cache = self.x_tf * self.t_tf").replace("#MODULE", "").replace(
        "        u = self.net_u(x, t)\n", "        u = self.net_u(x, t) + getattr(self, 'cache')\n")
    (tmp_path / "pyproject.toml").write_text("")
    path = write(tmp_path, "pinn.py", src)
    (result,) = runner.run([path], runner.RunOptions(jobs=1, mode=runner.CHECK, options=Options())).results
    assert all(s.status == MANUAL for s in result.sites)
    assert "getattr(self, 'cache')" in result.sites[0].reason


def test_a_module_function_the_taped_method_calls_is_followed(tmp_path):
    # DeepHPMs: `u = neural_net(H, self.weights, self.biases)`, a module-level function
    helper = "\n\ndef mlp(X, weights, biases):\n    H = X\n    for W, b in zip(weights[:-1], biases[:-1]):\n" \
             "        H = tf.tanh(tf.matmul(H, W) + b)\n    return tf.matmul(H, weights[-1]) + biases[-1]\n"
    net_u = "return mlp(tf.concat([x, t], 1), self.weights, self.biases)"
    assert [s.status for s in run(tmp_path, net_u=net_u, module=helper)] == [MIGRATED, MIGRATED]
    cached = helper.replace("    return tf.matmul(H, weights[-1]) + biases[-1]\n",
                            "    return tf.matmul(H, weights[-1]) + biases[-1] + CACHE[0]\n") + "\n\nCACHE = []\n"
    poisoned = "CACHE.append(self.x_tf * self.t_tf)"
    assert all(s.status == MANUAL for s in run(tmp_path, init=poisoned, net_u=net_u, module=cached))


def test_a_base_constructor_reached_through_super_gets_its_arguments(tmp_path):
    # the base stores what `super().__init__(...)` passes it: `self.cache` is computed from the sources
    module = "\n\nclass Base:\n    def __init__(self, v):\n        self.cache = v * 2.0\n"
    net_u = "return self.neural_net(tf.concat([x, t], 1), self.weights, self.biases) + self.cache"
    sites = run(tmp_path, init="super().__init__(self.x_tf * self.t_tf)", net_u=net_u, module=module)
    assert all(s.status == MANUAL for s in sites)


NET_U_PLUS = "return self.neural_net(tf.concat([x, t], 1), self.weights, self.biases) + "
#: the second adversarial run: a tensor of both sources hidden where the model lost it
HIDDEN = {
    "an unbound method through type()": dict(
        init="self.buf = []\n        type(self.buf).append(self.buf, self.x_tf * self.t_tf)", net_u=NET_U_PLUS + "self.buf[0]"),
    "min() hands back the list it was given": dict(
        init="self.buf = []\n        min([self.buf], key=len).append(self.x_tf * self.t_tf)", net_u=NET_U_PLUS + "self.buf[0]"),
    "a lambda map calls with the list": dict(
        init="self.buf = []\n        v = self.x_tf * self.t_tf\n        list(map(lambda l: l.append(v), [self.buf]))",
        net_u=NET_U_PLUS + "self.buf[0]"),
    "a bound append handed to map": dict(
        init="self.buf = []\n        list(map(self.buf.append, [self.x_tf * self.t_tf]))", net_u=NET_U_PLUS + "self.buf[0]"),
    "np.copyto fills an object array": dict(
        init="import numpy as np\n        self.store = np.empty(1, dtype=object)\n        tmp = np.empty(1, dtype=object)\n"
             "        tmp[0] = self.x_tf * self.t_tf\n        np.copyto(self.store, tmp)",
        net_u=NET_U_PLUS + "self.store[0]"),
    "t.consumers() in net_u": dict(net_u="u = self.neural_net(tf.concat([x, t], 1), self.weights, self.biases)\n"
                                        "        return u + t.consumers()[0].outputs[0]"),
    "a value carried by an exception": dict(
        init="try:\n            raise ValueError(self.x_tf * self.t_tf)\n        except ValueError as e:\n"
             "            self.cache = e.args[0]", net_u=NET_U_PLUS + "self.cache"),
    "a generator fed by send": dict(
        init="self.box = []\n        g = self.keep(self.box)\n        next(g)\n        g.send(self.x_tf * self.t_tf)",
        net_u=NET_U_PLUS + "self.box[0]",
        module="\n\n    def keep(self, box):\n        while True:\n            v = yield\n            box.append(v)\n"),
    "a mixin earlier in a subclass's MRO": dict(
        init="self.cache = self.x_tf * self.t_tf",
        module="\n\nclass Mixin:\n    def net_u(self, x, t):\n        return self.cache\n\n\nclass Sub(Mixin, PINN):\n    pass\n"),
    "a metaclass": dict(module="\n\nclass Meta(type):\n    pass\n\n\nclass Other(metaclass=Meta):\n    pass\n"),
    "a project class named Session": dict(
        init="self.runner = Session()\n        self.cache = self.runner.run(self.x_tf * self.t_tf)",
        net_u=NET_U_PLUS + "self.cache",
        module="\n\nclass Session:\n    def run(self, v):\n        return v\n"),
    "a mutable default kept between calls": dict(
        signature="    def net_u(self, x, t, _seen=[]):", init="self.cache = self.x_tf * self.t_tf",
        net_u="_seen.append(self.cache)\n        return " + NET_U_PLUS.split("return ")[1] + "_seen[0]"),
    "a comprehension variable named like a global": dict(
        net_u="k = [CACHE for CACHE in [0.5]][0]\n        return " + NET_U_PLUS.split("return ")[1] + "CACHE * k",
        module="\n\nCACHE = None\n\n\ndef poison(m):\n    global CACHE\n    CACHE = m.x_tf * m.t_tf\n\n\n"
               "poison(PINN([[1.0]], [[2.0]], [2, 1]))\n"),
    "a module reached through sys.modules": dict(
        init="import sys\n        mod = sys.modules[__name__]\n        mod.CACHE = self.x_tf * self.t_tf",
        net_u=NET_U_PLUS + "CACHE", module="\n\nCACHE = 0.0\n"),
    "keyword arguments kept as attributes": dict(
        init="import argparse\n        self.buf = []\n        argparse.Namespace(box=self.buf).box.append(self.x_tf * self.t_tf)",
        net_u=NET_U_PLUS + "self.buf[0]"),
    "np rebound in the module": dict(
        init="self.cache = self.x_tf * self.t_tf",
        net_u="return np.scale(self, self.neural_net(tf.concat([x, t], 1), self.weights, self.biases))",
        module="\n\nimport numpy as np\n\n\nclass _Shim:\n    def scale(self, m, u):\n        return u + m.cache\n\n\n"
               "np = _Shim()\n"),
}


@pytest.mark.parametrize("name", sorted(HIDDEN))
def test_a_tensor_hidden_from_the_flow_is_refused(tmp_path, name):
    kw = HIDDEN[name]
    src = PINN.replace("    def net_u(self, x, t):", kw.get("signature", "    def net_u(self, x, t):"))
    src = src.replace("#INIT", kw.get("init", "")).replace("#MODULE", kw.get("module", ""))
    if "net_u" in kw:
        src = src.replace("return self.neural_net(tf.concat([x, t], 1), self.weights, self.biases)  #NET_U", kw["net_u"])
    (tmp_path / "pyproject.toml").write_text("")
    path = write(tmp_path, "pinn.py", src)
    (result,) = runner.run([path], runner.RunOptions(jobs=1, mode=runner.CHECK, options=Options())).results
    assert result.sites and all(s.status == MANUAL for s in result.sites), [
        (s.status, s.reason[:120]) for s in result.sites]


EWC = """\
import tensorflow as tf


class Net:
    def __init__(self, x):
        self.w = tf.Variable(tf.ones([4, 3]))
        self.thetas = [self.w]
        self.out = tf.reduce_sum(tf.matmul(x, self.w), 0)

    def grads(self):
        return tf.gradients(tf.math.log(self.out[0]), {sources})
"""


@pytest.mark.parametrize("sources", ["self.thetas", "[self.w]", "self.thetas[:]"])
def test_sources_held_in_a_list_are_its_items(tmp_path, sources):
    """`self.thetas = [self.w]`, and `self.out` made from `self.w`: TF1 differentiated through
    `self.out`, a tape in `grads` sees none of it (a held-out EWC shape got None for every source)."""
    (tmp_path / "pyproject.toml").write_text("")
    path = write(tmp_path, "net.py", EWC.format(sources=sources))
    res = runner.run([path], runner.RunOptions(jobs=1, mode=runner.CHECK, options=Options()))
    (site,) = res.results[0].sites
    assert site.status == MANUAL and site.code in ("TFG120", "TFG124", "TFG130"), site.reason
    if site.code == "TFG120":  # the method that computes it from the sources is named
        assert "`self.out` is computed from the sources in `__init__`" in site.reason, site.reason
