"""A tiny test-only rewrite plugin, so CLI/file tests do not depend on the real ones.

It rewrites ``tf.gradients(`` to ``tape_gradients(`` (a migrated TFG003 site)
and reports a manual TFG128 site on any line holding ``MANUAL_SITE`` (left
byte-identical).  ``tf.hessians(`` is an unsafe fix: rewritten to
``tape_hessians(`` (TFG005, with an assumption) only under ``--unsafe-fixes``,
else manual.  ``installed()`` swaps it in for every registered plugin
and restores the registry afterwards.
"""
from __future__ import annotations

import contextlib

from migrator import _plugins
from migrator.model import MANUAL, TF_GRADIENTS, Site
from migrator.model import MIGRATED as DONE


class FakeGradients(_plugins.Plugin):
    name = "fake"
    order = 1
    triggers = (b"gradients", b"MANUAL_SITE", b"hessians")

    def rewrite(self, module, ctx):
        import libcst as cst

        code = module.code
        for n, line in enumerate(code.splitlines(), 1):
            if "tf.gradients(" in line:
                ctx.sites.append(Site(TF_GRADIENTS, "TFG003", ctx.original_line(n), line.index("tf.gradients(") + 1, DONE))
            if "MANUAL_SITE" in line:
                ctx.sites.append(Site(TF_GRADIENTS, "TFG128", ctx.original_line(n), 1, MANUAL, "fake manual site"))
            if "tf.hessians(" in line:  # migrated only under --unsafe-fixes, naming its assumption
                if ctx.options.unsafe_fixes:
                    ctx.sites.append(Site(TF_GRADIENTS, "TFG005", ctx.original_line(n), 1, DONE,
                                          proof=["fake: ys is computed in this block"],
                                          assumptions=["fake: `f` creates no op of a mapped type"]))
                else:
                    ctx.sites.append(Site(TF_GRADIENTS, "TFG128", ctx.original_line(n), 1, MANUAL,
                                          "fake: needs --unsafe-fixes"))
        new = code.replace("tf.gradients(", "tape_gradients(")
        if ctx.options.unsafe_fixes:
            new = new.replace("tf.hessians(", "tape_hessians(")
        return module if new == code else cst.parse_module(new)


@contextlib.contextmanager
def installed():
    saved, loaded = list(_plugins._PLUGINS), _plugins._LOADED
    _plugins._PLUGINS[:] = [FakeGradients()]
    _plugins._LOADED = True
    try:
        yield
    finally:
        _plugins._PLUGINS[:] = saved
        _plugins._LOADED = loaded


def run_cli(*args: str):
    """Run the CLI in this process (so the fake plugin is seen); returns click's Result."""
    from click.testing import CliRunner

    from migrator.cli import migrate_command

    return CliRunner().invoke(migrate_command, [str(a) for a in args], catch_exceptions=False)


SAMPLE = "import tensorflow as tf\n\nx = tf.constant(1.0)\ny = x * x\ng = tf.gradients(y, x)\n"
MIGRATED = SAMPLE.replace("tf.gradients(", "tape_gradients(")
#: a file whose only site is a manual one (the fake plugin reports line 4)
MANUAL_SRC = "import tensorflow as tf\n\ndef f(x):\n    return x.gradients()  # MANUAL_SITE: custom gradients\n"
