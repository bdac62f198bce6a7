"""Calls of the project's methods that store nothing do not write program state (a held-out
corpus: XPINN's second to seventh sub-networks were refused, because calling the first
sub-network "may have changed" what the second reads). Every variant that stores something
keeps the old, conservative plan: block 2's tape encloses block 1."""
from __future__ import annotations

import os

import pytest

from migrator.model import MIGRATED
from migrator.pipeline import migrate_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "fixtures", "grad_method_subnets_store_nothing", "before.py")
PLAIN = "    def net_u1(self, x, y):\n        return self.net(tf.concat([x, y], 1), self.w1)\n"


def variant(store: str, extra: str = "") -> str:
    src = open(FIXTURE, encoding="utf-8").read()
    assert PLAIN in src
    body = f"    def net_u1(self, x, y):\n        out = self.net(tf.concat([x, y], 1), self.w1)\n        {store}\n" \
           "        return out\n" + extra
    return src.replace(PLAIN, body).replace("        self.w2 = [", "        self.cache = []\n        self.w2 = [")


def plans(src: str) -> tuple[str, list]:
    out, sites = migrate_text(src)
    return out, [s.status for s in sites]


def test_methods_that_store_nothing_give_each_block_a_tape_of_its_own():
    out, statuses = plans(open(FIXTURE, encoding="utf-8").read())
    assert statuses == [MIGRATED] * 4
    assert "outer_tape_2" not in out and out.count("with tf.GradientTape() as outer_tape:") == 2, out


@pytest.mark.parametrize("store, extra", [
    ("self.last = out", ""),
    ("self.cache.append(out)", ""),
    ("setattr(self, 'last', out)", ""),
    ("tf.add_to_collection('outs', out)", ""),
    ("tf.losses.add_loss(tf.reduce_sum(out))", ""),
    ("self.keep(out)", "\n    def keep(self, t):\n        self.kept = t\n"),
    ("remember(out)", ""),  # a module function that stores a global
    ("out = out + self.offset(out)", "\n    def offset(self, t, seen=[]):\n        seen.append(t)\n"
                                     "        return 0.0 * t\n"),
])
def test_a_method_that_stores_something_keeps_block_two_s_tape_around_block_one(store, extra):
    src = variant(store, extra)
    if "remember(" in store:
        src = src.replace("class XPINN(object):", "KEPT = []\n\n\ndef remember(t):\n    KEPT.append(t)\n\n\n"
                                                  "class XPINN(object):")
    out, statuses = plans(src)
    assert "GradientTape()" not in out.split("# Sub-Net2")[1], out  # no tape of block 2's own


@pytest.mark.parametrize("store", [
    "max([out], key=self.cache.append)",  # a builtin that runs what it is handed
    "tf.nest.map_structure(self.cache.append, [out])",  # so does a TF function
])
def test_a_call_that_runs_a_changing_function_it_is_handed_stores_something(store):
    out, statuses = plans(variant(store))
    assert "GradientTape()" not in out.split("# Sub-Net2")[1], out  # no tape of block 2's own


def test_a_reading_method_name_on_the_project_s_own_module_is_not_taken_on_trust(tmp_path):
    """`store.get(out)` where the project's `store.get` appends its argument, and block 2 reads
    `store.ITEMS[-1]` (an adversarial run: with x1 and y2 the same tensor, TF1 differentiated
    through block 1, and block 2's own tape missed that path)."""
    from project_files import write

    from migrator import runner

    write(tmp_path, "store.py", "ITEMS = []\n\n\ndef get(v):\n    ITEMS.append(v)\n    return v\n")
    src = "import store\n" + variant("store.get(out)").replace(
        "    def net_u2(self, x, y):\n        return self.net(tf.concat([x, y], 1), self.w2)\n",
        "    def net_u2(self, x, y):\n        return self.net(tf.concat([x, y], 1), self.w2) + store.ITEMS[-1]\n")
    assert "store.ITEMS[-1]" in src
    main = write(tmp_path, "main.py", src)
    runner.run([main, str(tmp_path / "store.py")], runner.RunOptions(jobs=1))
    out = open(main, encoding="utf-8").read()
    assert "GradientTape()" not in out.split("# Sub-Net2")[1], out  # no tape of block 2's own
