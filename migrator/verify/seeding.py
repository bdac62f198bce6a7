"""Same random numbers on both sides (child process only).

Graph mode and eager mode draw the same values from a random op when the
global/graph seed *and* the op seed are fixed.  The harness fixes the global
seed; this module gives every random op created without an explicit seed
the op seed ``base + n``, where ``n`` counts the random ops created so far.
Both sides create their random ops in the same order, so they draw the same
numbers.  Probes reset the counter, so the eager and the ``tf.function`` runs
of a probe draw the same numbers as the original.
"""
from __future__ import annotations

import inspect

_FUNCS = ("random_uniform", "random_normal", "truncated_normal", "random_gamma", "random_poisson_v2",
          "random_shuffle", "multinomial", "categorical")


class Seeder:
    def __init__(self):
        self.next_seed = 1

    def reset(self, base: int) -> None:
        self.next_seed = base

    def install(self) -> None:
        from tensorflow.python.ops import random_ops

        replacements = {}
        for name in _FUNCS:
            fn = getattr(random_ops, name, None)
            if fn is None:
                continue
            try:
                params = list(inspect.signature(fn).parameters)
            except (TypeError, ValueError):
                continue
            if "seed" not in params:
                continue
            replacements[id(fn)] = (fn, self._wrap(fn, params.index("seed")))
        from migrator.verify.record import rebind_everywhere

        rebind_everywhere(replacements, ("tensorflow",))

    def _wrap(self, fn, seed_pos: int):
        seeder = self

        def wrapper(*args, **kwargs):
            if len(args) <= seed_pos and kwargs.get("seed") is None:
                kwargs["seed"] = seeder.next_seed
                seeder.next_seed += 1
            return fn(*args, **kwargs)

        wrapper.__wrapped__ = fn
        wrapper.__name__ = getattr(fn, "__name__", "wrapper")
        wrapper.__doc__ = getattr(fn, "__doc__", None)
        return wrapper


SEEDER = Seeder()
