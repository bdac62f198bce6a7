"""--annotate: TODO comments above manual sites, placed safely and never doubled."""
from __future__ import annotations

from migrator.annotate import annotate_manual_sites
from migrator.model import MANUAL, MIGRATED, Site


def manual(line, code="TFG120", reason=""):
    return Site("tf_gradients", code, line, 1, MANUAL, reason)


def test_comment_goes_above_the_statement_with_its_indentation():
    text = "def f(x):\n    y = g(\n        tf.gradients(a, b))\n    return y\n"
    out = annotate_manual_sites(text, [manual(3, reason="ys is elsewhere")], None)
    assert out == ("def f(x):\n    # TODO(tfgradmigrate): TFG120 ys is elsewhere\n    y = g(\n"
                   "        tf.gradients(a, b))\n    return y\n")


def test_reason_defaults_to_the_code_title_and_is_one_line():
    out = annotate_manual_sites("x = tf.gradients(a, b)\n", [manual(1, "TFG124", "first\nsecond")], None)
    assert out.splitlines()[0] == "# TODO(tfgradmigrate): TFG124 first second"
    out = annotate_manual_sites("x = tf.gradients(a, b)\n", [manual(1, "TFG124")], None)
    assert out.splitlines()[0] == "# TODO(tfgradmigrate): TFG124 sources are not plain names or attributes"


def test_idempotent_and_several_codes_on_one_line():
    text = "x = tf.gradients(a, b)\n"
    sites = [manual(1, "TFG120"), manual(1, "TFG124"), manual(1, "TFG120")]
    once = annotate_manual_sites(text, sites, None)
    assert once.count("TFG120") == 1 and once.count("TFG124") == 1
    # a second run sees the site one line lower (below the comments)
    again = annotate_manual_sites(once, [manual(3, "TFG120"), manual(3, "TFG124")], None)
    assert again == once


def test_migrated_sites_and_strings_are_left_alone():
    text = 's = """\ntf.gradients(a, b)\n"""\n'
    out = annotate_manual_sites(text, [manual(2)], None)
    assert out == '# TODO(tfgradmigrate): TFG120 ys is not computed in the same block as the tf.gradients call\n' + text
    assert annotate_manual_sites(text, [Site("tf_gradients", "TFG003", 2, 1, MIGRATED)], None) == text


def test_back_map_locates_sites_in_rewritten_text_and_crlf_is_kept():
    text = "import x\r\nadded = 1\r\ny = tf.gradients(a, b)\r\n"
    out = annotate_manual_sites(text, [manual(2)], {1: 1, 2: 1, 3: 2})
    assert out == "import x\r\nadded = 1\r\n# TODO(tfgradmigrate): TFG120 " \
                  "ys is not computed in the same block as the tf.gradients call\r\ny = tf.gradients(a, b)\r\n"


def test_unknown_lines_are_ignored():
    assert annotate_manual_sites("x = 1\n", [manual(40)], None) == "x = 1\n"


def test_comments_stay_under_100_characters_and_keep_the_first_clause():
    long = ("`loss` is a parameter of `train_step`: the caller built it; open a tf.GradientTape where "
            "`loss` is computed (in the caller of `train_step`), watch the sources there")
    out = annotate_manual_sites("    x = tf.gradients(loss, w)\n", [manual(1, reason=long)], None)
    first, fix, stmt = (ln.strip() for ln in out.splitlines())
    assert first == "# TODO(tfgradmigrate): TFG120 `loss` is a parameter of `train_step`: the caller built it"
    assert fix.startswith("# TODO(tfgradmigrate): TFG120 open a tf.GradientTape where `loss` is computed")
    assert len(fix) < 100 and fix.endswith(" ...") and stmt.startswith("x = tf.gradients")
    assert annotate_manual_sites(out, [manual(3, reason=long)], None) == out  # idempotent
    words = "word " * 60
    out = annotate_manual_sites("x = tf.gradients(a, b)\n", [manual(1, reason=words)], None)
    comment = out.splitlines()[0]
    assert len(comment) < 100 and comment.endswith(" ...") and comment.startswith("# TODO(tfgradmigrate): TFG120 word")
